"""What a recording's manifest and a play's unloadable.json (compare/runtime/replay_worker.py) say, as the
review's records: the notes on what the recording could not do, and the imports that raised, typed, with the
ops they kept from being recorded or played."""
from __future__ import annotations

import re
from pathlib import Path

from compare.model.replay import CallFailure, ImportFailure, Pass, Side
from compare.review.replay_process import read_json


def notes(found: dict, code: int | None, tail: str, by_budget: bool, limit_s: float, named: bool = False):
    """The recording's notes of no op's own, then how its process ended (`code` None: stopped at `limit_s`, its
    own limit or, `by_budget`, its share of the review's time budget), unless it ended in a test that is
    named (`named`: left_out's note says it)."""
    for m in found.get("missing", []):
        yield f"the library's tests need package {m['package']!r}, which this environment lacks" + \
            (f" (imported at {m['where']})" if m["where"] else "")
    yield from found.get("notes", [])
    if named:
        return
    if by_budget:
        yield (f"the recording was stopped at its share of the review's time budget ({limit_s:.0f} s; the rest "
               "was kept for the plays; its calls kept)")
    elif code is None:
        yield f"the recording ran past its {limit_s:.0f} s limit and was stopped (its calls kept)"
    elif code != 0:
        yield f"the recording process ended with exit code {code}" + (f": {tail}" if tail else "")


def left_out(found: dict, ended) -> list[str]:
    """A note for each test that ended the recording process (`ended`: replay_process.Ended), left out of its next
    start: the op whose call it was in, where it was in one (the call stays: its replay says what it does)."""
    said = []
    for e in ended:
        what = f"the test {e.what} ended the recording process ({e.how})"
        again = "the other tests were recorded again without it"
        inside = [c["op"] for c in found.get("calls", []) if c["test"] == e.what and "result" not in c
                  and "raised" not in c]
        said.append(f"{inside[-1]}: {what} in a call of it, kept; {again}" if inside else f"{what}; {again}")
    return said


def no_call_why(found: dict, tests) -> str:
    """Why the tests of an op (its test files, `tests`) recorded no call of it, where they ran: how many failed
    (the first failure: what raised, and where), were skipped or passed; "" where none of them ran."""
    counts = [c for c in (found.get("outcomes", {}).get(t) for t in tests) if c]
    failed, skipped, passed = (sum(c.get(k, 0) for c in counts) for k in ("failed", "skipped", "passed"))
    if not failed + skipped + passed:
        return ""
    first = next((c["first"] for c in counts if "first" in c), None)
    said = [f"{failed} failed" + (f", the first: {first['error']}" + (f" (raised at {first['where']})" if first["where"] else "")
                                  if first else ""), f"{skipped} skipped", f"{passed} passed"]
    how = "; ".join(s for s, n in zip(said, (failed, skipped, passed)) if n)
    return f"no test of {', '.join(tests)} called it ({how})"


def own(said: list[str], op: str) -> list[str]:
    """The recording's notes that concern `op` (module:name): its own (they start with its name) and those of
    no op."""
    ops_said = [n for n in said if re.match(r"^[\w.]+:[\w.]+: ", n)]
    return [n.removeprefix(f"{op}: ") for n in said if n not in ops_said or n.startswith(f"{op}: ")]


def not_imported(found: dict, side: Side, op: str, module: str, tests: list[str]) -> tuple[ImportFailure, ...]:
    """The imports that raised at `side` while `op` (module:name, in `module`) was recorded there: one that kept
    it from being wrapped (its module's, or a package's above it), and those of its test files (`tests`)."""
    return tuple(ImportFailure(side, e["error"], module if op in e["ops"] else "", e["test"], e["raised_in"])
                 for e in found.get("unimportable", []) if op in e["ops"] or e["test"] and e["test"] in tests)


def unloadable(folder: Path, side: Side) -> dict[str, CallFailure]:
    """op (module:name) -> how loading it failed at `side`, said for each of its calls there."""
    said = {}
    for op, what in read_json(folder / "unloadable.json").items():
        record = what.get("import")
        said[op] = CallFailure(side, Pass.IMPORT, what.get("lookup", "") if record is None else record["error"] + (
            f" (raised in {record['raised_in']})" if record["raised_in"] else ""))
    return said
