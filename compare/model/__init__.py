"""The one result model: results, problems, verdicts, headline and gates."""
