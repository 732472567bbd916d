"""Exit-code gates: they trip on what they promise and on nothing else."""
import dataclasses
from types import SimpleNamespace

from compare.model import gates
from compare.model.results import Gate
from compare.model.skips import Skip
from tests.fixed_report import fixed_report as _fixed_report, without


def fixed_report(**kw):
    """The fixed report without inductor, which it names but could not run (no GPU): a gate on it is
    not judged (test_a_named_variant_that_ran_nowhere_leaves_the_numerics_gate_unjudged)."""
    return without(_fixed_report(**kw), "inductor")


def test_no_gate_asked_means_no_failure():
    assert gates.failures(fixed_report(failing=True, slower_ratio=1.5)) == []


def test_fail_on_numerics_trips_on_a_problem_only_the_variant_has():
    assert gates.failures(fixed_report(), fail_on_numerics=True) == []
    broken = gates.failures(fixed_report(failing=True), fail_on_numerics=True)
    assert broken == ["numerics: B has a problem A has not: normal inputs, float32: never written in forward y"]


def test_fail_on_numerics_ignores_a_problem_the_baseline_shares():
    report = fixed_report(failing=True, baseline_failing=True)
    assert gates.failures(report, fail_on_numerics=True) == []
    # the shared problem is listed once, under the headline, as shared
    from compare.model.headline import headline
    head = headline(report)
    assert head.shared == ("normal inputs, float32: never written in forward y",)
    assert head.pairs[0].introduced == ()


def test_fail_on_numerics_ignores_what_only_the_baseline_has():
    assert gates.failures(fixed_report(baseline_failing=True), fail_on_numerics=True) == []


def test_fail_on_numerics_with_one_variant_judges_its_own_problems():
    report = fixed_report(baseline_failing=True)
    only_a = dataclasses.replace(report, variants=report.variants[:1])
    assert gates.failures(only_a, fail_on_numerics=True) == [
        "numerics: A: normal inputs, float32: never written in forward y"]


def test_fail_if_slower_acts_only_on_significant_verdicts_over_the_limit():
    assert gates.failures(fixed_report(slower_ratio=1.03), fail_if_slower_pct=5) == []
    assert len(gates.failures(fixed_report(slower_ratio=1.03), fail_if_slower_pct=2)) == 1
    # inside the noise band: the verdict is "no difference", so even a 0% limit does not trip
    assert gates.failures(fixed_report(slower_ratio=1.005), fail_if_slower_pct=0) == []


def _backward_report(spread_max_abs: float):
    """A and B alike except dW, whose bits differ by 3e-7; A run twice differs from itself by `spread_max_abs`.
    The accuracy verdict (which sees one draw of each) says B lost on dW."""
    from compare.model.results import NumericsCase, OutputError, PairBitwise, PairVerdict, RunSpread, VariantNumerics
    report = fixed_report()

    def err(o, beyond=0):
        return OutputError(o, "float32", 64, 1e-6, 1e-7, 3.0, beyond, 1.3e-6, 1e-5, 0, 0, 0, 0, 2.0)
    a = VariantNumerics("A", "pass", (), (err("dx"), err("dW")), (RunSpread("dW", 64, 5, spread_max_abs),))
    b = VariantNumerics("B", "fail", ("dW: 1 of 64 elements beyond",), (err("dx"), err("dW", beyond=1)))
    case = NumericsCase("N2 C8 G2 S256", "float32", "normal", (0,), (a, b),
                        (PairBitwise("A", "B", "dx", 64, 0), PairBitwise("A", "B", "dW", 64, 7, (3,), 3e-7, 5,
                                                                         spread_max_abs)),
                        "backward", (PairVerdict("A", "B", "less accurate", "B worse", ("dW: max abs 3e-6 against 1e-6",),
                                                 ("dW",)),))
    numerics = dataclasses.replace(report.numerics, cases=report.numerics.cases + (case,))
    return dataclasses.replace(report, numerics=numerics)


def test_a_difference_within_the_baselines_run_to_run_spread_is_not_introduced():
    from compare.model.headline import headline
    report = _backward_report(spread_max_abs=2e-7)
    line = headline(report).pairs[0].lines[0]
    assert "backward: dx identical bits, dW differ only within A's run-to-run spread" in line.text
    assert "LESS" not in line.text and "new problems" not in line.text
    assert gates.failures(report, fail_on_numerics=True) == []


def test_a_difference_beyond_the_baselines_run_to_run_spread_is_judged():
    from compare.model.headline import headline
    report = _backward_report(spread_max_abs=1e-8)
    line = headline(report).pairs[0].lines[0]
    assert line.text.startswith("numerics: LESS ACCURATE than A in backward float32 normal (dW: max abs")
    assert len(gates.failures(report, fail_on_numerics=True)) == 2   # less accurate, and beyond tolerance


_NO_GPU_HERE = Skip("timing", "needs a CUDA GPU (none here)", short="needs a CUDA GPU")


def test_a_gate_without_its_evidence_fails_and_says_why():
    report = fixed_report(slower_ratio=1.0)
    no_timing = dataclasses.replace(report, timing=None, skipped=(Skip("timing", "needs a CUDA GPU and this run has none"),))
    assert gates.failures(no_timing, fail_if_slower_pct=2) == [
        "--fail-if-slower could not be judged: timing was not measured (needs a CUDA GPU and this run has none)"]
    assert gates.failures(dataclasses.replace(report, numerics=None), fail_on_numerics=True) == [
        "--fail-on-numerics could not be judged: no numerics were run"]
    assert gates.failures(report, fail_if_slower_pct=2, fail_on_numerics=True) == []


def test_the_timing_gate_names_the_short_reason_its_skip_carries_and_reads_no_sentence_back():
    from compare.comparison.timing_check import NO_GPU, TimingCheck
    from compare.model.results import from_dict, to_dict
    cpu = SimpleNamespace(gpu=False)
    (skip,) = TimingCheck().collect(None, cpu, None, None).skipped
    assert skip.why == NO_GPU and NO_GPU.startswith(skip.short + " (")
    no_timing = dataclasses.replace(fixed_report(), timing=None, skipped=(skip,))
    said = ["--fail-if-slower could not be judged: timing was not measured (needs a CUDA GPU and this run has none)"]
    assert gates.failures(no_timing, fail_if_slower_pct=2) == said
    assert "short" not in to_dict(no_timing)["skipped"][0]   # the report's JSON is as it was
    assert from_dict(to_dict(no_timing)) == no_timing
    # a reason with no short form is said whole, its parenthesis and all; the first short form ends the line
    whole = Skip("timing", "its process ended (exit code 1)", "float16")
    both = dataclasses.replace(no_timing, skipped=(whole, dataclasses.replace(skip, part="float32"), whole))
    assert gates.failures(both, fail_if_slower_pct=2) == [
        "--fail-if-slower could not be judged: timing was not measured (float16: its process ended (exit code 1); "
        "float32: needs a CUDA GPU and this run has none)"]


def test_each_gate_asked_for_is_recorded_with_its_threshold_outcome_and_lines():
    decided = gates.decide(fixed_report(slower_ratio=1.03), fail_on_numerics=True, fail_if_slower_pct=2)
    assert decided == (
        Gate("--fail-on-numerics", None, "passed", ("no numerics problem introduced against A in 1 case",)),
        Gate("--fail-if-slower", 2, "failed",
             ("timing: B is 3.00% slower than A on N2 C8 G2 S256 forward (limit 2%)",)))
    assert [g.fails for g in decided] == [False, True]
    assert gates.decide(fixed_report()) == ()


def test_an_unjudged_gate_fails_unless_accepted():
    no_timing = dataclasses.replace(fixed_report(), timing=None, skipped=(_NO_GPU_HERE,))
    strict, = gates.decide(no_timing, fail_if_slower_pct=2)
    lenient, = gates.decide(no_timing, fail_if_slower_pct=2, accept_unjudged=True)
    assert strict.outcome == lenient.outcome == "not judged" and strict.lines == lenient.lines
    assert strict.fails and not lenient.fails and lenient.accepted
    assert gates.failures(no_timing, fail_if_slower_pct=2, accept_unjudged=True) == []
    # accepting the unjudged never lets a failed gate pass
    assert gates.failures(fixed_report(failing=True), fail_on_numerics=True, accept_unjudged=True)


def test_a_named_variant_that_ran_nowhere_leaves_the_numerics_gate_unjudged():
    gate, = gates.decide(_fixed_report(), fail_on_numerics=True)   # inductor: needs a GPU
    assert gate.outcome == "not judged" and gate.fails
    assert gate.lines == ("inductor ran in no numerics case (needs a GPU; this run has none)",)
    # what failed is said before what could not be judged
    assert gates.decide(_fixed_report(failing=True), fail_on_numerics=True)[0].outcome == "failed"


def test_a_timing_gate_with_no_shape_compared_for_a_variant_is_unjudged():
    report = fixed_report(slower_ratio=1.5)
    case = report.timing.cases[0]
    untimed = dataclasses.replace(case, comparisons=(dataclasses.replace(case.comparisons[0], verdict="n/a",
                                                                         reason="B failed"),))
    gate, = gates.decide(dataclasses.replace(report, timing=dataclasses.replace(report.timing, cases=(untimed,))),
                         fail_if_slower_pct=2)
    assert gate.outcome == "not judged"
    assert gate.lines == ("B was compared on no shape (N2 C8 G2 S256 forward: B failed)",)


def test_every_renderer_lists_the_gates_and_json_keeps_them():
    from compare.render import json_report, markdown, terminal
    import io
    from rich.console import Console
    report = dataclasses.replace(fixed_report(), timing=None, skipped=(_NO_GPU_HERE,))
    report = dataclasses.replace(report, gates=gates.decide(report, fail_on_numerics=True, fail_if_slower_pct=2))
    said = "gate --fail-if-slower 2: could not be judged, so it fails (--accept-unjudged would let it pass): " \
           "timing was not measured (needs a CUDA GPU)"
    buf = io.StringIO()
    terminal.render(report, Console(file=buf, width=400), verbose=True)
    text = buf.getvalue()
    assert f"FAIL {said}" in text and "OK   gate --fail-on-numerics: passed" in text
    assert text.index(said) < text.index("Variants")        # with the headline, before any detail
    md = markdown.render(report)
    assert f"- ❌ {said}" in md and md.index("**Gates**") < md.index("#### Variants")
    assert json_report.load(json_report.render(report)).gates == report.gates


def test_compare_records_the_gates_in_its_report_and_exits_by_them(tmp_path, capsys):
    """On the CPU nothing is timed: --fail-if-slower could not be judged, the report says so, exit 1."""
    import json
    import main
    out = tmp_path / "report.json"
    code = main.main(["compare", "pointer_mutation", "explicit_offset", "--shape", "2,8,2,16", "--trials", "1",
                      "--inputs", "normal", "--check", "numerics", "--quiet", "--json", str(out),
                      "--fail-on-numerics", "--fail-if-slower", "2"])
    stdout, stderr = capsys.readouterr()
    recorded = {g["name"]: g for g in json.loads(out.read_text())["gates"]}
    assert recorded["--fail-on-numerics"]["outcome"] == "passed"
    assert recorded["--fail-if-slower"]["outcome"] == "not judged" and recorded["--fail-if-slower"]["threshold"] == 2
    assert code == 1
    assert "kernel-ab: gate failed: --fail-if-slower could not be judged: timing was not measured" in stderr
    assert "gate --fail-if-slower 2: could not be judged, so it fails" in stdout
    assert "gate --fail-on-numerics: passed" in stdout


def _compare(capsys, tmp_path, *more):
    import main
    code = main.main(["compare", "torch", "pointer_mutation", "--shape", "2,8,2,16", "--trials", "1", "--inputs",
                      "large_mean,all_equal", "--check", "numerics", "--quiet", *more], prog="kernel-ab")
    return code, *capsys.readouterr()


def test_a_failed_gate_is_one_summary_printed_once_naming_what_where_and_the_report(tmp_path, capsys):
    code, out, err = _compare(capsys, tmp_path, "--fail-on-numerics", "--out", str(tmp_path / "r"))
    assert code == 1
    said = [line for line in out.splitlines() if "--fail-on-numerics" in line]
    assert len(said) == 1 and said[0].startswith("FAIL gate --fail-on-numerics: FAILED: ")   # counted, not listed
    n = int(said[0].split(": ")[-1].split()[0])
    summary = [line for line in err.splitlines() if line.startswith("kernel-ab: gate")]
    assert len(summary) == 1 and n > 1, err
    assert summary[0].startswith("kernel-ab: gate failed: --fail-on-numerics: numerics: pointer_mutation ")
    assert f"(and {n - 1} more); every reason: {tmp_path / 'r'}/report.md" in summary[0]
    assert "large_mean" in summary[0] or "all_equal" in summary[0]   # where: the case of the first reason


def test_a_gate_this_machine_cannot_judge_is_said_before_the_work(tmp_path, capsys):
    code, out, err = _compare(capsys, tmp_path, "--fail-if-slower", "2", "--device", "cpu")
    assert code == 1
    first = err.splitlines()[0]
    assert first == ("kernel-ab: warning: --fail-if-slower 2 cannot be judged: timing is not among the checks; "
                     "the run fails on it unless --accept-unjudged is given")
    assert err.count("kernel-ab: warning:") == 1


def test_without_a_gpu_the_timing_gate_is_said_unjudgeable_and_accepted_if_asked():
    from types import SimpleNamespace
    from compare.command_line.outcome import unjudgeable
    plan = SimpleNamespace(checks=("numerics", "timing"), directions=("forward",))
    cpu, gpu = SimpleNamespace(gpu=False), SimpleNamespace(gpu=True)
    options = SimpleNamespace(fail_if_slower=2.0, fail_on_numerics=True, accept_unjudged=True)
    assert unjudgeable(plan, cpu, options) == ["--fail-if-slower 2 cannot be judged: timing needs a CUDA GPU and "
                                               "there is none here; it is reported as not judged"]
    assert unjudgeable(plan, gpu, options) == []
    assert unjudgeable(SimpleNamespace(checks=("timing",), directions=()), gpu, options) == [
        "--fail-on-numerics cannot be judged: no numerics check is asked for; it is reported as not judged"]


def test_a_variant_whose_run_ended_its_process_is_said_so_by_the_numerics_gate_not_as_unloaded():
    from compare.model.results import LoadStatus
    from compare.model.states import Failure
    report = fixed_report()
    ended = "ended the process (exit code 1, no report) while running numerics forward"
    crashed = dataclasses.replace(report.variants[-1], status=LoadStatus.FAILED, failure=Failure.CRASH, error=ended)
    unloaded = dataclasses.replace(crashed, failure=Failure.LOAD, error="import of b.py failed: SyntaxError")
    for variant, said in [(crashed, f"variant {crashed.name} {ended}"),
                          (unloaded, f"variant {crashed.name} could not be loaded")]:
        gate, = gates.decide(dataclasses.replace(report, variants=report.variants[:-1] + (variant,)),
                             fail_on_numerics=True)
        assert gate.fails and said in gate.lines, gate.lines
