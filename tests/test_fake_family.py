"""A family defined in the tests (tests/fake_family.py) runs through every check: compare/ needs nothing
family-specific. And compare/ names no family."""
import re
from pathlib import Path

import pytest

from compare.comparison import pipeline, plan
from compare.runtime.backend import configure
from compare.render import json_report, markdown
from compare.model.results import from_dict, to_dict
from tests.fake_family import FAKE
from variants import registry

BACKEND = configure("auto")
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def report():
    reg = registry(extra=(FAKE,))
    request = pipeline.Request(variants=(), family="fake_scale", trials=2, inputs="all")
    return pipeline.run(request, reg, BACKEND)


def test_every_check_runs_on_a_family_compare_has_never_heard_of(report):
    assert report.family == "fake_scale" and report.baseline == "mine"
    directions = {c.direction for c in report.numerics.cases}
    assert directions == {"forward", "backward"}
    assert {c.input_kind for c in report.numerics.cases} == {"normal", "all_equal"}
    for case in report.numerics.cases:
        outputs = {"forward": {"y"}, "backward": {"dx", "dW"}}[case.direction]
        for v in case.variants:
            assert v.status == "pass", (case.direction, case.input_kind, v.variant, v.reasons)
            assert {e.output for e in v.outputs} == outputs
    assert [v.variant for v in report.ir.variants] == ["mine"] and report.ir.variants[0].status == "ok", report.ir
    assert "n_cols:i32" in report.ir.specialization and "BLOCK=32" in report.ir.specialization
    if not BACKEND.gpu:
        assert any(str(s).startswith("timing: needs a CUDA GPU") for s in report.skipped)
    assert {v.name: v.kernels for v in report.variants} == {"mine": ("forward",), "torch": ()}


def test_the_report_renders_and_round_trips(report):
    assert from_dict(to_dict(report)) == report
    text = markdown.render(from_dict(to_dict(report)))
    assert "fake_scale" in text and "forward (own), backward (shared)" in text
    assert json_report.load(json_report.render(report)) == report


def test_an_input_kind_the_family_does_not_draw_is_refused_in_one_line():
    reg = registry(extra=(FAKE,))
    request = pipeline.Request(variants=(), family="fake_scale", inputs="normal,tiny")
    with pytest.raises(pipeline.UsageError) as e:
        plan.build(request, reg)
    assert str(e.value) == ("unknown input kind 'tiny'; known input kinds: normal, all_equal "
                            "(of family fake_scale; or all: --inputs takes a comma list)")
    with pytest.raises(ValueError, match="family fake_scale has no input kind 'tiny'"):
        FAKE.make_inputs(FAKE.presets["default"].shapes[0], FAKE.dtypes["float32"], "cpu", 0, "tiny")


def test_compare_names_no_family():
    """compare/ reaches every family through the protocol (variants/family.py), never by name."""
    families = [p.name for p in (ROOT / "variants").iterdir() if (p / "__init__.py").is_file()]
    assert "group_norm" in families
    pattern = re.compile("|".join(families + ["num_groups", "channels_per_group", r"\bmean, rstd\b"]))
    found = [f"{f.relative_to(ROOT)}:{n}" for f in (ROOT / "compare").rglob("*.py")
             for n, line in enumerate(f.read_text().splitlines(), 1) if pattern.search(line)]
    assert found == []
