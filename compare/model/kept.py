"""What is decided from a report is decided once per report: each record (the problem lists, the compiled-code
verdicts, the pairs' verdicts, the headline, the glance) is made the first time it is asked for and kept on the report
it was decided from, where the headline, the glance, the gates and every renderer read it. A report changed by
dataclasses.replace is a new report and decides anew, unless `carried` says what changed feeds none of the records it
carries (the gates, decided from them; timing verdicts settled on the code), or `shared` that it feeds none at all."""
from __future__ import annotations

from typing import Any, Callable, TypeVar

T = TypeVar("T")

_KEPT = "_kept"   # the instance attribute that holds them: no field, so JSON, equality and replace never see it


def kept(report: Any, kind: type, decide: Callable[[], T]) -> T:
    """The report's record named by `kind` (its type, or its items' type): `decide()` the first time it is
    asked for, the same record after."""
    records = vars(report).setdefault(_KEPT, {})
    if kind not in records:
        records[kind] = decide()
    return records[kind]


def carried(before: Any, after: Any, kinds: tuple[type, ...] | None = None) -> Any:
    """`after`, made from `before` by a change that feeds none of `kinds` (None: of any record), with the
    records of those kinds already decided on `before`."""
    records = vars(before).get(_KEPT, {})
    vars(after).setdefault(_KEPT, {}).update({k: v for k, v in records.items() if kinds is None or k in kinds})
    return after


def shared(before: Any, after: Any) -> Any:
    """`after`, made from `before` by a change that feeds no record: the two keep one set of records, each
    decided once on whichever is asked first."""
    vars(after)[_KEPT] = vars(before).setdefault(_KEPT, {})
    return after
