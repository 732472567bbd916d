"""The JSON report: the headline first (derived, for readers of the file; ignored on load), the marker
that says kernel-ab wrote the file (compare/render/files.py replaces only files of its own), then the
result model as data, with its schema version."""
from __future__ import annotations

import json

from compare.model.headline import headline
from compare.model.jsonform import encode as _encode
from compare.model.results import MARKER, MARKER_KEY, Report, from_dict, to_dict


def as_data(report: Report) -> dict:
    """The report as the JSON file holds it: the headline, the marker, the result model."""
    return {"headline": _encode(headline(report)), MARKER_KEY: MARKER, **to_dict(report)}


def render(report: Report) -> str:
    return json.dumps(as_data(report), indent=2, allow_nan=False) + "\n"


def load(text: str) -> Report:
    return from_dict(json.loads(text))
