"""The JSON report: the headline and the glance's verdicts as data first (derived, for readers of the file;
ignored on load: compare/model/results.py DERIVED), the marker that says kernel-ab wrote the file
(compare/command_line/output_files.py replaces only files of its own), then the result model as data, with its schema
version."""
from __future__ import annotations

import json

from compare.model.glance import rows
from compare.model.headline import headline
from compare.model.jsonform import encode as _encode
from compare.model.results import MARKER, MARKER_KEY, Report, from_dict, to_dict


def as_data(report: Report) -> dict:
    """The report as the JSON file holds it: the headline, the verdicts (a record per variant and check: verdict,
    how much, where, level), the marker, the result model."""
    return {"headline": _encode(headline(report)), "verdicts": _encode(rows(report)), MARKER_KEY: MARKER,
            **to_dict(report)}


def render(report: Report) -> str:
    return json.dumps(as_data(report), indent=2, allow_nan=False) + "\n"


def load(text: str) -> Report:
    return from_dict(json.loads(text))
