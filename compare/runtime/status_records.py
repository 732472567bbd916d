"""The run's status file read back: one JSON record a line, written by each process of the run with the run's
token (compare/runtime/supervisor.py) and read by the supervisor (compare/processes/supervision.py) and by a
process whose timing process ended (compare/comparison/timing_run.py). Standard library only."""
from __future__ import annotations

import dataclasses
import json
import time


def read(path: str, token: str | None = None, since: int = 0) -> list[dict]:
    """The status file's records from byte `since`; with `token`, a record without it (not the run's own: a
    variant wrote it) comes back as {"forged": the record, "after": the last launch record before it}."""
    try:
        with open(path, encoding="utf-8") as f:
            f.seek(since)
            lines = [json.loads(line) for line in f.read().splitlines() if line.strip()]
    except (OSError, ValueError):
        return []
    if token is None:
        return lines
    out, launch = [], {}
    for r in lines:
        if not isinstance(r, dict) or r.get("token") != token:
            out.append({"forged": r, "after": launch})
        else:
            out.append(r)
            if "variants" in r:
                launch = r
    return out


def hung(records: list[dict]) -> dict:
    """The last of `records` where it is a launch past its limit (--variant-timeout), else {}. Forged records
    count for nothing."""
    own = [r for r in records if "forged" not in r]
    last = own[-1] if own else {}
    late = last.get("variants") and "since" in last and time.time() - last["since"] > last.get("limit", 1e18)
    return last if late else {}


def ended_in(records: list[dict], poisoned: bool) -> dict:
    """The launch record a process ended in: the last naming variants or, `poisoned` (POISONED_EXIT), the last
    saying the error that poisoned it; {} without one. Forged records count for nothing."""
    own = [r for r in records if "forged" not in r]
    last = next((r for r in reversed(own) if "variants" in r), {})
    return next((r for r in reversed(own) if r.get("error")), last) if poisoned else last


@dataclasses.dataclass(frozen=True)
class Launch:
    """What a process said it was running when it wrote its last launch record: the variants (none: no launch
    ran), the launch, and the device error or change that ended it where it said one (`failure`: its kind)."""

    names: tuple[str, ...]
    what: str = ""
    error: str = ""
    failure: str = ""


def last_launch(records: list[dict]) -> Launch | None:
    """Of `records` (`read`), the launch the process ended in: the one whose record says the error that ended it,
    else the last launch record (one naming none: it ended between launches); None without one. Forged
    records (without the run's token) count for nothing."""
    own = [r for r in records if "forged" not in r and isinstance(r.get("variants"), list)]
    said = next((r for r in reversed(own) if r.get("error")), None) or (own[-1] if own else None)
    if said is None:
        return None
    return Launch(tuple(str(n) for n in said["variants"]), str(said.get("what", "")), str(said.get("error", "")),
                  str(said.get("failure", "")))
