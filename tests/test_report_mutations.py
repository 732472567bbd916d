"""report.json robustness: every single-field type mutation of a report (one field of each kind, at
every place in the model) is refused by `report` in one line naming the field, exit code 2, no
traceback; so are values of the right type that no renderer expects (an unknown IR stage)."""
import copy
import json
import re
from pathlib import Path

import pytest

from compare.model.results import DERIVED

import main

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden" / "report.json"        # numerics and timing
WITH_IR = ROOT / "reports" / "seed_pair" / "report.json"   # its IR section


def _trim(value, keep=2):
    """The same structure with every list cut to `keep` items (the mutations need each kind of place once)."""
    if isinstance(value, dict):
        return {k: _trim(v, keep) for k, v in value.items()}
    if isinstance(value, list):
        return [_trim(v, keep) for v in value[:keep]]
    return value


def base_report() -> dict:
    data = json.loads(GOLDEN.read_text())
    ir = _trim(json.loads(WITH_IR.read_text())["ir"])
    ir["pairs"] = [p for p in ir["pairs"] if p["a"] == ir["variants"][0]["variant"]][:1] or ir["pairs"][:0]
    first = [v["stages"][0]["loops"][0] for v in ir["variants"][:2]]   # the seed report predates loop matches
    first[0]["trip"] = "0 to a12 step 1024"
    ir["pairs"][0]["loops"] = [{"stage": ir["variants"][0]["stages"][0]["stage"], "a": [first[0]["path"]],
                                "b": [first[1]["path"]], "status": "matched", "score": 1.0}]
    data["ir"] = ir
    return data


def _places(value, path=()):
    """(path, value) of every node, one per distinct place (list indices beyond the first dropped)."""
    yield path, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _places(v, path + (k,))
    elif isinstance(value, list) and value:
        yield from _places(value[0], path + (0,))


def _wrong_type(value):
    if isinstance(value, bool):
        return "yes"
    if isinstance(value, (int, float)):
        return "seven"
    if isinstance(value, str):
        return 7 if value not in ("NaN", "Infinity", "-Infinity") else []
    if isinstance(value, list):
        return {"not": "a list"}
    if isinstance(value, dict):
        return ["not", "an object"]
    return {"not": "null"}


def _set(data, path, value):
    out = copy.deepcopy(data)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return out


def _report(data, tmp_path, capsys):
    file = tmp_path / "report.json"
    file.write_text(json.dumps(data))
    rc = main.main(["report", str(file), "--verbose"], prog="main.py")   # every section: every renderer reads it
    return rc, *capsys.readouterr()


def test_the_unmutated_report_renders(tmp_path, capsys):
    rc, out, err = _report(base_report(), tmp_path, capsys)
    assert rc == 0, err
    assert "Compiled code" in out or "IR" in out


def test_every_single_field_type_mutation_is_one_line_and_exit_2(tmp_path, capsys):
    data = base_report()
    # the headline and the verdicts are derived from the rest and recomputed on load: their copy in the file is not
    # read (below); a shape's parameters are its family's own (Shape.as_dict), of whatever types the family gives
    places = [(p, v) for p, v in _places(data) if p and p != ("schema_version",) and p[0] not in DERIVED
              and not (p[0] == "shape_params" and len(p) > 2)]
    assert len(places) > 150   # every kind of field, numerics, timing and IR included
    failures = []
    for path, value in places:
        rc, out, err = _report(_set(data, path, _wrong_type(value)), tmp_path, capsys)
        lines = err.strip().splitlines()
        named = re.sub(r"\[\d+\]", "", ".".join(map(str, path)).replace(".0", "")).split(".")[-1]
        if not (rc == 2 and len(lines) == 1 and "Traceback" not in err and named in lines[0]):
            failures.append(f"{'.'.join(map(str, path))}: rc {rc}: {err.strip()[:300]!r}")
    assert not failures, f"{len(failures)} of {len(places)} mutations:\n" + "\n".join(failures[:20])


def test_the_headline_in_the_file_is_derived_and_not_read(tmp_path, capsys):
    data = base_report()
    _, expected, _ = _report(data, tmp_path, capsys)
    rc, out, err = _report(_set(data, ("headline",), ["not", "an object"]), tmp_path, capsys)
    assert rc == 0 and out == expected, err


@pytest.mark.parametrize("path, value, expected", [
    (("environment", "git_commit"), None, "field report.environment.git_commit: expected a string, got null"),
    (("variants", 0, "name"), 5, "field report.variants[0].name: expected a string, got an integer"),
    (("numerics", "cases", 0, "variants", 0, "outputs", 0, "numel"), 1.5, "expected an integer, got a number"),
    (("timing", "cases", 0, "variants", 0, "samples_ms"), "fast", "expected a list, got a string"),
])
def test_the_line_names_the_field_and_what_it_should_be(path, value, expected, tmp_path, capsys):
    rc, _, err = _report(_set(base_report(), path, value), tmp_path, capsys)
    assert rc == 2 and expected in err and len(err.strip().splitlines()) == 1


def test_a_value_no_renderer_expects_is_one_line_and_exit_2(tmp_path, capsys):
    data = base_report()
    data["ir"]["stages"] = ["bogus"]
    rc, _, err = _report(data, tmp_path, capsys)
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "is not a report this version can render" in err or "bogus" in err
