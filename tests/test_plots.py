"""Plots of a timed report (matplotlib is an optional extra; these skip, saying so, without it)."""
import dataclasses

from compare.model.results import ShapeParams
from compare.command_line import output_files as files
from compare.render import plots
from tests.extras import need
from tests.fixed_report import fixed_report

need("matplotlib")


def test_one_png_per_timed_mode_tagged_as_kernel_abs():
    made = plots.pngs(fixed_report())
    assert [name for name, _ in made] == ["timing_forward.png"]
    assert made[0][1][:8] == b"\x89PNG\r\n\x1a\n" and b"tEXtSoftware\x00kernel-ab" in made[0][1]


def test_out_folder_holds_every_file(tmp_path):
    lines, unwritten = files.write(fixed_report(), out=tmp_path)
    assert unwritten == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["benchmark_rows.json", "report-full.md", "report.json",
                                                         "report.md", "timing_forward.png"]
    assert len(lines) == 5


def _flagged(report, reads_twice: bool):
    params = dict(report.shape_params[0].values, reads_x_twice=reads_twice)
    return dataclasses.replace(report, shape_params=(ShapeParams(params),))


def test_roofline_panel_data_is_each_variants_share_of_copy_bandwidth():
    report = fixed_report()
    series, capped = plots.roofline(report, report.timing.cases)
    expected = {v.variant: [(8.0, 100 * v.fraction_of_copy)] for v in report.timing.cases[0].variants}
    assert series == expected and all(0 < pct for pts in series.values() for _, pct in pts)
    assert capped == []   # no shape parameter says reads_x_twice: no 2/3 cap


def test_roofline_cap_marks_only_shapes_that_read_x_twice():
    twice = _flagged(fixed_report(), True)
    assert plots.roofline(twice, twice.timing.cases)[1] == [8.0]
    assert plots.roofline(_flagged(fixed_report(), False), twice.timing.cases)[1] == []
    assert [name for name, _ in plots.pngs(twice)] == ["timing_forward.png"]


def test_the_relative_panel_leaves_out_a_variant_far_off_unless_every_one_is():
    """One variant 3x slower would flatten the others to a line, so it is left out (and named); when every
    compared variant is that far off, leaving all out would draw an empty panel, so all are drawn."""
    near = fixed_report(slower_ratio=1.03)
    assert plots.relative_panel(near.timing.cases, ["A", "B"]) == (["B"], "")
    far = fixed_report(slower_ratio=3.0)
    shown, title = plots.relative_panel(far.timing.cases, ["A", "B"])
    assert shown == ["B"] and "all drawn" in title
    mixed = dataclasses.replace(far.timing.cases[0], comparisons=far.timing.cases[0].comparisons + (
        dataclasses.replace(near.timing.cases[0].comparisons[0], variant="C"),))
    assert plots.relative_panel([mixed], ["A", "B", "C"]) == (["C"], "beyond ±50% somewhere, so left out here: B")


def test_every_variant_is_named_once_in_a_legend_under_the_panels_not_over_their_points():
    import matplotlib.pyplot as plt
    report = _flagged(fixed_report(), True)
    fig = plots.figure(report, "forward", report.timing.cases[0].dtype)
    names = [v.variant for v in report.timing.cases[0].variants]
    (shared,) = fig.legends
    assert [t.get_text() for t in shared.get_texts()] == names
    inside = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    assert not set(inside) & set(names)
    assert any("noise band" in t for t in inside) and any("2/3 cap" in t for t in inside)
    plt.close(fig)


def test_the_roofline_panel_shows_shares_above_110_percent():
    import matplotlib.pyplot as plt
    report = fixed_report()
    case = report.timing.cases[0]
    fast = dataclasses.replace(case, variants=tuple(dataclasses.replace(v, fraction_of_copy=1.3) for v in case.variants))
    report = dataclasses.replace(report, timing=dataclasses.replace(report.timing, cases=(fast,)))
    fig = plots.figure(report, "forward", case.dtype)
    roof = fig.axes[2]
    assert roof.get_ylim()[1] >= 130
    plt.close(fig)


def test_each_shape_is_a_tick_labelled_with_its_own_value():
    import matplotlib.pyplot as plt
    report = fixed_report()
    fig = plots.figure(report, "forward", report.timing.cases[0].dtype)
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert labels == [f"{x:,.0f}" for x in sorted(set(report.x_values))]
    plt.close(fig)
