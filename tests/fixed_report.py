"""A fixed result model, with every section filled, for renderer and gate tests."""
import io

from rich.console import Console

from compare.render import terminal
from compare.model.results import (Environment, NumericsCase, NumericsSection, OutputError, PairBitwise, PairVerdict, Report,
                             ShapeParams, TimingCase, TimingComparison, TimingSection, TimingVariant,
                             VariantInfo, VariantNumerics)


def _err(name, max_abs, beyond=0, unwritten=0):
    return OutputError(name, "float32", 4096, max_abs, max_abs / 10, 12.0, beyond, 1.3e-6, 1e-5, 0, 0, 0, unwritten, 3.5)


def _timed(name, median, samples=(0.1, 0.11)):
    return TimingVariant(name, "ok", "", samples, 2, 1, median * 0.99, median, median * 1.01, 1 << 20,
                         400_000_000, 400_000_000 / (median * 1e-3) / 1e9, 0.5)


def fixed_report(slower_ratio: float = 1.03, failing: bool = False, baseline_failing: bool = False) -> Report:
    """`failing`: B leaves 32 elements of y unwritten; `baseline_failing`: A does too."""
    b_status = ("fail", ("y: 32 of 4096 elements never written",)) if failing else ("pass", ())
    a_status = ("fail", ("y: 32 of 4096 elements never written",)) if baseline_failing else ("pass", ())
    case = NumericsCase(
        "N2 C8 G2 S256", "float32", "normal", (0, 1),
        (VariantNumerics("A", a_status[0], a_status[1],
                         (_err("y", 1e-6, unwritten=32 if baseline_failing else 0), _err("mean", 1e-8),
                          _err("rstd", 1e-7))),
         VariantNumerics("B", b_status[0], b_status[1],
                         (_err("y", 2e-6, unwritten=32 if failing else 0), _err("mean", 1e-8), _err("rstd", 1e-7))),
         VariantNumerics("inductor", "not_run", ("needs a GPU; this run has none",))),
        (PairBitwise("A", "B", "y", 8192, 5, (0, 1, 7), 2e-6), PairBitwise("A", "B", "mean", 8, 0),
         PairBitwise("A", "B", "rstd", 8, 0)),
        verdicts=(PairVerdict("A", "B", "as accurate", "error within factor"),))
    timing = TimingSection(
        "NVIDIA H200", 4300.0, 0.01, 0.95, "interleaved rounds",
        (TimingCase("N2 C8 G2 S256", "forward", False, 1.5, (_timed("A", 0.2), _timed("B", 0.2 * slower_ratio)),
                    (TimingComparison("B", "slower" if slower_ratio > 1.01 else "no difference beyond noise",
                                      baseline="A", ratio=slower_ratio, ci_low=slower_ratio - 0.004,
                                      ci_high=slower_ratio + 0.004, p_value=0.0001, rounds=60, margin=0.01,
                                      basis="noise band"),),
                    control=TimingComparison("A again", "no difference beyond noise", baseline="A", ratio=1.001,
                                             ci_low=0.998, ci_high=1.004, p_value=0.4, rounds=60, margin=0.01,
                                             basis="noise band"), placements=3),),
        (("inductor", 2.5),))
    return Report(
        family="group_norm", preset="default", dtype="float32", baseline="A",
        variants=(VariantInfo("A", "group_norm", "triton", "the old kernel", "variants/a.py"),
                  VariantInfo("B", "group_norm", "triton", "the new kernel", "variants/b.py"),
                  VariantInfo("inductor", "group_norm", "inductor", "torch.compile", "torch.compile")),
        environment=Environment(device="cuda", gpu_name="NVIDIA H200", gpu_count=1, driver="580.159.04",
                                cuda="13.0", torch="2.11.0", triton="3.6.0", python="3.12.3", platform="Linux",
                                clocks="sm, max sm, mem: 1980 MHz, 1980 MHz, 3201 MHz", git_commit="0123456789abcdef",
                                git_dirty=False, command="python main.py compare A B", time_utc="2026-11-29 12:00:00 UTC"),
        shapes=("N2 C8 G2 S256",), x_name="channels", x_values=(8.0,),
        shape_params=(ShapeParams({"batch": 2, "channels": 8, "eps": 1e-06, "num_groups": 2, "spatial": [256]}),),
        numerics=NumericsSection("cuda", "compiled Triton kernels on NVIDIA H200", (case,)),
        timing=timing,
    )


def without(report: Report, name: str) -> Report:
    """`report` as if variant `name` had never been asked for."""
    import dataclasses
    cases = tuple(dataclasses.replace(c, variants=tuple(v for v in c.variants if v.variant != name),
                                      pairs=tuple(p for p in c.pairs if name not in (p.a, p.b)),
                                      verdicts=tuple(v for v in c.verdicts if name not in (v.a, v.b)))
                  for c in report.numerics.cases)
    return dataclasses.replace(report, variants=tuple(v for v in report.variants if v.name != name),
                               numerics=dataclasses.replace(report.numerics, cases=cases))


def with_copy_of_baseline(report: Report, name: str = "C") -> Report:
    """`report` with a third variant `name` whose results are the baseline A's, bit for bit."""
    import dataclasses
    info = dataclasses.replace(report.variants[0], name=name, why="A again", origin="variants/c.py")
    cases = []
    for c in report.numerics.cases:
        a = next(v for v in c.variants if v.variant == "A")
        same = tuple(PairBitwise("A", name, p.output, p.numel, 0) for p in c.pairs if p.a == "A" and p.b == "B")
        cases.append(dataclasses.replace(c, variants=c.variants + (dataclasses.replace(a, variant=name),),
                                         pairs=c.pairs + same))
    return dataclasses.replace(report, variants=report.variants + (info,),
                               numerics=dataclasses.replace(report.numerics, cases=tuple(cases)))


def tolerance_report(torch_misses_dw: bool) -> Report:
    """A float32 backward case judged against torch: A and B miss the tolerance on dW (a sum over the
    batch), B on dx too; torch, the yardstick, misses it on dW when `torch_misses_dw`. No verdict says
    anyone is less accurate than anyone."""
    import dataclasses

    def err(o, beyond):
        return OutputError(o, "float32", 4096, 3e-5, 1e-6, 40.0, beyond, 1.3e-6, 1e-5, 0, 0, 0, 0, 30.0)
    miss = ("dW: elements beyond rtol 1.3e-06 / atol 1e-05",)
    a = VariantNumerics("A", "fail", miss, (err("dx", 0), err("dW", 800)))
    b = VariantNumerics("B", "fail", miss + ("dx: elements beyond",), (err("dx", 3), err("dW", 850)))
    t = VariantNumerics("torch", "fail" if torch_misses_dw else "pass", miss if torch_misses_dw else (),
                        (err("dx", 0), err("dW", 900 if torch_misses_dw else 0)))
    as_good = "as accurate", "error within factor"
    case = NumericsCase("N2 C8 G2 S256", "float32", "normal", (0,), (a, b, t),
                        (PairBitwise("A", "B", "dx", 4096, 10, (0,), 1e-6),
                         PairBitwise("A", "B", "dW", 8, 8, (0,), 1e-6)),
                        "backward", (PairVerdict("A", "B", *as_good), PairVerdict("torch", "A", *as_good),
                                     PairVerdict("torch", "B", *as_good)), reference="torch")
    report = without(fixed_report(), "inductor")
    return dataclasses.replace(report, numerics=dataclasses.replace(report.numerics, cases=(case,),
                                                                    added_reference="torch"))


def terminal_text(report: Report, width: int = 200, verbose: bool = True) -> str:
    """The terminal report as plain text at `width` columns (`verbose`: every section, as --verbose)."""
    buf = io.StringIO()
    terminal.render(report, Console(file=buf, width=width, emoji=False, highlight=False), verbose=verbose)
    return buf.getvalue()
