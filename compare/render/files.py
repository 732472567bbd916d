"""`--out DIR`: the report as files: report.md, report.json, benchmark_rows.json (when timed) and plots."""
from __future__ import annotations

import json
from pathlib import Path

from compare.render import benchmark_rows, json_report, markdown, plots
from compare.results import Report


def write(report: Report, folder: Path) -> list[str]:
    """Write every file; returns one line per file (or per thing not written, with why)."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    (folder / "report.md").write_text(markdown.render(report))
    (folder / "report.json").write_text(json_report.render(report))
    lines += [f"wrote {folder / 'report.md'}", f"wrote {folder / 'report.json'}"]
    rows = benchmark_rows.rows(report)
    if rows:
        (folder / "benchmark_rows.json").write_text(json.dumps(rows, indent=2) + "\n")
        lines.append(f"wrote {folder / 'benchmark_rows.json'} (the seed's benchmark format)")
    if report.timing is not None:
        if plots.available():
            lines += [f"wrote {p}" for p in plots.write(report, folder)]
        else:
            lines.append("plots not written: matplotlib is not installed (pip install 'kernel-ab[plot]')")
    return lines
