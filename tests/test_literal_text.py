"""User text (variant names, origins, revisions, error messages) prints literally in the terminal:
rich reads `[...]` as markup and `:new:` as an emoji unless told not to."""
import dataclasses

import pytest

from compare import pipeline
from compare.render import terminal
from tests.fixed_report import fixed_report

ODD = ("git:new:variants/a.py::fwd", "[bold]not bold[/bold] :smile:", "IndexError: [/x] index 3 of [0, 1]")


def test_every_user_string_prints_as_written(capsys):
    report = fixed_report()
    a, b, c = report.variants
    variants = (dataclasses.replace(a, origin=ODD[0], why=ODD[1]), b,
                dataclasses.replace(c, status="failed", error=ODD[2]))
    terminal.render(dataclasses.replace(report, variants=variants, skipped=(f"ir: {ODD[1]}",)))
    out = capsys.readouterr().out
    unfolded = "".join(out.split())   # table cells may wrap; compare without whitespace
    for text in ODD:
        assert "".join(text.split()) in unfolded, text
    assert "\N{SMILING FACE WITH SMILING EYES}" not in out and "\N{SQUARED NEW}" not in out


@pytest.mark.parametrize("dtype, first", [(" float16, float32 ,float16", "float16"), ("all", "float32"),
                                          ("float32,float16", "float32")])
def test_the_ir_gets_one_dtype_whatever_the_dtype_list(dtype, first, monkeypatch):
    """Several dtypes used to reach the IR step as one comma-joined string (a KeyError after all the numerics)."""
    from compare import ir
    from compare.backend import configure
    from variants import registry
    seen = []
    monkeypatch.setattr(ir, "run", lambda family, variants, shape, dtype, *a, **k: seen.append(dtype) or "section")
    request = pipeline.Request(variants=("explicit_offset", "flat"), shape="2,8,2,16", dtype=dtype, checks=("ir",))
    report = pipeline.run(request, registry(), configure("auto"))
    assert seen == [first] and report.ir == "section"
    assert any(s.startswith("ir: ") and f"shown for {first}" in s for s in report.skipped)
