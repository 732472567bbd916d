"""The section of each check outside the built-in four (compare/model/check_sections.py) as the text renderers
draw sections: its verdict lines, then a row per variant and case saying whether the property holds."""
from __future__ import annotations

from compare.model.check_sections import CheckSection
from compare.render.table import Section, Table

_HOLDS = {True: "yes", False: "NO", None: "not run"}


def section(found: CheckSection) -> Section:
    lines = tuple((v.outcome.level, f"{found.check}: {v.variant} against {v.baseline}: {v.outcome.value}"
                   + (f" in {v.amount} ({v.where})" if v.amount else f" ({v.where})")) for v in found.verdicts)
    rows = tuple((r.variant, r.case, _HOLDS[r.holds], r.detail or "-") for r in found.rows)
    return Section(found.title, found.intro, (Table(found.title, ("variant", "case", found.check, "detail"), rows,
                                                    found.legend),), lines)
