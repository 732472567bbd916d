"""Every registered variant of every family, against its family's default baseline, through numerics,
backward and IR on the CPU, on the smallest shape of the family's --shape form: no registered variant
may crash a check. Families and variants are discovered (variants.registry()), never listed here."""
import dataclasses
import re

import pytest

from compare.checks import ir
from compare.comparison import pipeline
from compare.runtime.backend import configure
from compare.render import markdown
from variants import registry

BACKEND = configure("auto")
REG = registry()
CHECKS = ("numerics", "backward", "ir")
PAIRS = [(f.name, v.name) for f in REG.families.values() for v in REG.variants(f.name)]
# the expectations are the CPU's (interpreter, offline compiles); on the H200 pointer_mutation's float32 rstd
# of a one-value group is 31 off (E[x^2] - E[x]^2 cancels), a kernel's result the GPU tests speak for
pytestmark = [pytest.mark.skipif(BACKEND.gpu, reason="the CPU's check of every variant; tests/test_gpu.py is the GPU's"),
              pytest.mark.slow]   # two minutes on 2 cores: .ci/run runs it


def smallest_shape(family) -> str:
    """The example of the family's --shape form (its shape_help) with every number 1."""
    example = re.search(r"(?:for example|e\.g\.)\s+([^\s)]+)", family.shape_help)
    assert example, f"family {family.name}: its shape_help gives no example of the --shape form"
    return re.sub(r"\d+(?:\.\d+)?", "1", example.group(1))


@pytest.fixture(scope="module")
def ir_cache():
    """One compile cache for the module, filled per family by one IR run of all its variants (a compile
    worker per pass, not one per pair)."""
    cache, warm = ir.CompileCache(), set()

    def for_family(family):
        if family.name not in warm:
            baseline = family.default_pair[0]
            names = (baseline, *(v.name for v in REG.variants(family.name) if v.name != baseline))
            request = pipeline.Request(names, family=family.name, shape=smallest_shape(family), checks=("ir",))
            pipeline.run(request, REG, BACKEND, ir_cache=cache)
            warm.add(family.name)
        return cache
    return for_family


def compare_with_baseline(family, name: str, cache):
    """`compare BASELINE NAME --check numerics,backward,ir` (the baseline against the family's second
    default variant), float32, normal inputs, one trial."""
    baseline, second = family.default_pair
    request = pipeline.Request((baseline, second if name == baseline else name), family=family.name,
                               shape=smallest_shape(family), trials=1, inputs="normal", checks=CHECKS)
    return pipeline.run(request, REG, BACKEND, ir_cache=cache)


def assert_numerics(report, family) -> None:
    """Our kernels pass; a variant needing a GPU, or refusing the shape with NotForThisShape, says so;
    torch's eager kernels are not ours (on a one-value group their float32 result is ~1e-5 off, and
    kernel-ab rightly says fail); nothing is an error."""
    assert {c.direction for c in report.numerics.cases} == ({"forward", "backward"} if family.grads else {"forward"})
    for case in report.numerics.cases:
        assert (case.dtype, case.input_kind, case.seeds) == ("float32", "normal", (0,))
        for result in case.variants:
            v = REG.get(result.variant, family.name)
            where = (case.direction, v.name, result.status, result.reasons)
            if v.needs_gpu:
                assert result.status == "not_run" and result.reasons == ("needs a GPU; this run has none",), where
            elif result.status == "not_run":
                assert result.reasons[0].startswith("not for this shape: "), where
            elif v.kind == "torch" and result.status == "fail":
                assert all("beyond rtol" in r for r in result.reasons), where
            else:
                assert result.status == "pass", where


def assert_ir(report, family, name: str) -> None:
    """Per pass: a section where the variant's kernel compiled, or a skipped line saying the two variants
    run the same kernel; a variant that is no Triton kernel is named as such in every section's note."""
    sections = {s.kernel: s for s in (report.ir, *report.ir_kernels) if s is not None}
    assert sections, report.skipped
    assert not [s for s in report.skipped if "failed" in s.why], report.skipped
    partner = next(v.name for v in report.variants if v.name != name)   # the baseline, or the baseline's second
    variant, other = REG.get(name, family.name), REG.get(partner, family.name)
    for section in sections.values():
        assert all(row.status == "ok" for row in section.variants), [(r.variant, r.error) for r in section.variants]
    if variant.kind not in ("triton", "op"):
        assert all(re.search(rf"not Triton kernels, no IR: .*\b{name}\b", s.note) for s in sections.values())
        return
    if variant.kind == "op":
        assert any(row.variant.startswith(f"{name}:") for row in sections["forward"].variants), sections["forward"]
        return
    for kernel in ("forward", "backward") if family.grads else ("forward",):
        if other.kind != "triton":   # a lone Triton variant: compiled where it brings its own kernel
            compiled = kernel in variant.own_kernels
        else:
            compiled = ir.kernel_of(family, variant, kernel) != ir.kernel_of(family, other, kernel)
            same = f"ir {kernel}: every variant runs the same {kernel} kernel"
            assert any(str(s).startswith(same) for s in report.skipped) != compiled, (kernel, report.skipped)
        assert (kernel in sections) == compiled, kernel
        if compiled:
            both = {name, partner} if other.kind == "triton" else {name}
            assert {row.variant for row in sections[kernel].variants} >= both, kernel


@pytest.mark.parametrize("family_name, name", PAIRS, ids=[f"{f}-{v}" for f, v in PAIRS])
def test_every_registered_variant_runs_every_check_against_its_familys_baseline(family_name, name, ir_cache):
    family = REG.family(family_name)
    report = compare_with_baseline(family, name, ir_cache(family))
    assert report.baseline == family.default_pair[0]
    assert name in {v.name for v in report.variants if v.status != "failed"}
    assert_numerics(report, family)
    assert_ir(report, family, name)
    assert markdown.render(report).startswith(f"## kernel-ab: {family_name}, preset `custom`")


def test_a_backward_launcher_the_worker_cannot_import_fails_that_variant_alone(ir_cache):
    family = REG.family("group_norm")
    cache = ir_cache(family)
    own = REG.get("single_read_coop", family.name)
    lost = dataclasses.replace(own, name="lost", backward_launcher=lambda *args: own.backward_launcher(*args))
    shape = family.parse_shape(smallest_shape(family)).shapes[0]
    baseline = REG.get(family.default_pair[0], family.name)
    section = ir.run(family, [baseline, lost, own], shape, "float32", cache=cache, kernel="backward", stages=("ttir",))
    rows = {row.variant: row for row in section.variants}
    assert rows[baseline.name].status == rows["single_read_coop"].status == "ok"
    assert rows["lost"].status == "failed"
    assert "nor a module-level function the compile worker can import again" in rows["lost"].error
    assert [p.b for p in section.pairs] == ["single_read_coop"]
