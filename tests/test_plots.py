"""Plots of a timed report (matplotlib is an optional extra; these skip, saying so, without it)."""
import pytest

from compare.render import files, plots
from tests.fixed_report import fixed_report

pytest.importorskip("matplotlib", reason="matplotlib is not installed (pip install 'kernel-ab[plot]')")


def test_one_png_per_timed_mode(tmp_path):
    written = plots.write(fixed_report(), tmp_path)
    assert [p.name for p in written] == ["timing_forward.png"]
    assert written[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_out_folder_holds_every_file(tmp_path):
    lines = files.write(fixed_report(), tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["benchmark_rows.json", "report.json", "report.md",
                                                         "timing_forward.png"]
    assert len(lines) == 4
