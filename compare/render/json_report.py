"""The JSON report: the headline first (derived, for readers of the file; ignored on load), then the
result model as data, with its schema version."""
from __future__ import annotations

import json

from compare.headline import headline
from compare.results import Report, _encode, from_dict, to_dict


def render(report: Report) -> str:
    return json.dumps({"headline": _encode(headline(report)), **to_dict(report)}, indent=2, allow_nan=False) + "\n"


def load(text: str) -> Report:
    return from_dict(json.loads(text))
