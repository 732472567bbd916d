"""What each older schema version of report.json lacks, and how `results.from_dict` brings it up to date.

Each migration takes the JSON form of one version (a plain dict, which it may change in place: the
caller passes a copy) and returns the next version's."""
from __future__ import annotations

import json


def _migrate_v1(data: dict) -> dict:
    """Schema 1 -> 2: a yes/no verdict becomes "as accurate" or "less accurate" (schema 1 had no
    "more accurate"); the outputs lost are the ones its detail lines name."""
    for case in (data.get("numerics") or {}).get("cases", ()):
        for v in case.get("verdicts", ()):
            if "as_accurate" in v:
                yes = v.pop("as_accurate")
                v["accuracy"] = "as accurate" if yes else "less accurate"
                if not yes:
                    v["basis"] = "B worse"
                    v["lost"] = list(dict.fromkeys(d.split(":", 1)[0] for d in v.get("detail", ())))
    data["schema_version"] = 2
    return data


def _skip(line: str) -> dict:
    head, _, why = line.partition(": ")
    check, _, part = head.partition(" ")
    return {"check": check, "why": why, "part": part}


def _migrate_v2(data: dict) -> dict:
    """Schema 2 -> 3: each skipped line ("CHECK: why", "CHECK PART: why") becomes a record."""
    lines = data.get("skipped", [])
    if isinstance(lines, list):   # what is not a list of lines is left for the loader to name
        data["skipped"] = [_skip(line) if isinstance(line, str) else line for line in lines]
    data["schema_version"] = 3
    return data


def _migrate_v3(data: dict) -> dict:
    """Schema 3 -> 4: each shape's parameters, held as their JSON text, become a JSON object; the kernel-ab version
    (environment), the interruption and a skip's `interrupted` are new, and absent means unknown or none."""
    params = data.get("shape_params", [])
    if isinstance(params, list):   # what is not JSON text of an object is left for the loader to name
        data["shape_params"] = [_object(p) for p in params]
    data["schema_version"] = 4
    return data


def _object(text):
    if not isinstance(text, str):
        return text
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, dict) else text


MIGRATIONS = {1: _migrate_v1, 2: _migrate_v2, 3: _migrate_v3}   # version -> the migration to the next
