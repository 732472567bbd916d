"""compare/comparison/pipeline.py: a request to a report. A failing IR step costs its section, not the report; the IR
gets one dtype; a kernel that does not compile on a compiled backend is a failed variant, the rest compared."""
import ast
import dataclasses as dc

import pytest
from triton.compiler.errors import CompilationError

from compare.checks import ir
from compare.model.results import IRSection
from compare.comparison import pipeline
from compare.runtime.backend import Backend, configure
from variants import registry
from compare.model.skips import Skip

BACKEND = configure("auto")


@pytest.mark.parametrize("dtype, first", [(" float16, float32 ,float16", "float16"), ("all", "float32"),
                                          ("float32,float16", "float32")])
def test_the_ir_gets_one_dtype_whatever_the_dtype_list(dtype, first, monkeypatch):
    """The IR step compiles for one dtype, the list's first (`all`: float32), and says so."""
    seen = []
    section = IRSection("offline", "sm_90", "planted", dtype, "", "", (), (), ())   # what the planted step made
    monkeypatch.setattr(ir, "run", lambda family, variants, shape, dtype, *a, **k: seen.append(dtype) or section)
    request = pipeline.Request(variants=("explicit_offset", "flat"), shape="2,8,2,16", dtype=dtype, checks=("ir",))
    report = pipeline.run(request, registry(), BACKEND)
    assert seen == [first] and report.ir.shape == "planted"
    assert any(s.check == "ir" and not s.part and f"shown for {first}" in s.why for s in report.skipped)


def test_an_ir_step_that_raises_costs_its_section_not_the_report(monkeypatch):
    def broken(*args, **kwargs):
        raise KeyError("planted")
    monkeypatch.setattr(ir, "run", broken)
    request = pipeline.Request(("pointer_mutation", "explicit_offset"), shape="1,1,1,1x1", trials=1, inputs="normal",
                               checks=("numerics", "ir"))
    report = pipeline.run(request, registry(), BACKEND)
    assert report.ir is None and [c.direction for c in report.numerics.cases] == ["forward"]
    assert Skip("ir", "the IR step failed: KeyError: 'planted'", "forward") in report.skipped


@pytest.mark.slow
def test_on_compiled_triton_a_kernel_that_does_not_compile_is_reported_failed_and_the_rest_compared():
    """pipeline.run on a compiled backend (faked here: the interpreter's kernels, whose warmup compiles
    nothing, plus one kernel whose compile raises) lists the broken one as failed and compares the rest."""
    src = "def k(X_ptr):\n    y = tl.nosuch(X_ptr)\n"

    class NoCompile:
        def warmup(self, *args, grid, **kwargs):
            raise CompilationError(src, ast.parse(src).body[0].body[0], "AttributeError('nosuch')")

    reg = registry()
    reg = reg.with_variant(dc.replace(reg.get("flat"), name="nocompile", kernel=NoCompile()))
    request = pipeline.Request(("explicit_offset", "nocompile", "flat"), shape="2,8,2,16", trials=1)
    report = pipeline.run(request, reg, Backend("cpu", False, "compiled (faked for the test)"))
    assert [(v.name, v.status) for v in report.variants] == [
        ("explicit_offset", "ok"), ("flat", "ok"), ("nocompile", "failed")]
    assert report.variants[2].error.startswith("does not compile: CompilationError: AttributeError('nosuch')")
    assert [v.variant for v in report.numerics.cases[0].variants] == ["explicit_offset", "flat", "torch"]
    with pytest.raises(pipeline.NothingToCompare):
        pipeline.run(dc.replace(request, variants=("nocompile",)), reg, Backend("cpu", False, "faked"))
