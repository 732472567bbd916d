"""The JSON report: the result model as data, with its schema version."""
from __future__ import annotations

import json

from compare.results import Report, from_dict, to_dict


def render(report: Report) -> str:
    return json.dumps(to_dict(report), indent=2, allow_nan=False) + "\n"


def load(text: str) -> Report:
    return from_dict(json.loads(text))
