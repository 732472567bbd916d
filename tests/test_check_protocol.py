"""A check added through the check protocol alone (compare/checks/check.py), defined and registered here with no
edit to compare/: "every forward output is finite". It runs in the pipeline like the built-in checks and is seen
in the terminal's glance, the Markdown, the JSON and its gate (Options.fail_on)."""
import dataclasses
import json
import math

import torch

from compare.checks.check import Case, Check, Findings
from compare.command_line import outcome
from compare.comparison import pipeline, plan
from compare.model.check_sections import CheckRow, Outcome, judged
from compare.model.vocabulary import CHECKS
from compare.render import json_report
from compare.runtime.backend import configure
from tests.fake_family import Scale
from variants import registry
from variants.variant import Variant

BACKEND = configure("auto")


class Finite(Check):
    """Every element of every forward output is finite: a case per dtype and shape, every variant on its inputs."""

    name, result_type = "finite", tuple[CheckRow, ...]

    def cases(self, the_plan, backend):
        return tuple(Case(self.name, f"{d} {s.label}", the_plan.family.name, i, d, "normal", (the_plan.request.seed,))
                     for d in the_plan.dtype_names for i, s in enumerate(the_plan.preset.shapes))

    def run(self, case, the_plan, backend, step):
        family, shape = the_plan.family, the_plan.preset.shapes[case.shape]
        rows = []
        for v in the_plan.variants:
            inputs = family.make_inputs(shape, family.dtypes[case.dtype], backend.device, case.seeds[0], case.input_kind)
            outputs = family.alloc_outputs(shape, family.dtypes[case.dtype], backend.device)
            v.run(inputs, outputs, shape)
            bad = sum(int((~torch.isfinite(t)).sum()) for t in outputs.values())
            rows.append(CheckRow(v.name, case.key, bad == 0, f"{bad} not finite" if bad else ""))
        return tuple(rows)

    def collect(self, the_plan, backend, step, results):
        rows = tuple(r for rows in results.all() for r in rows)
        return Findings(sections=(judged(self.name, "Finite outputs", rows, the_plan.variants[0].name,
                                         legend=("finite: every element of every forward output is finite",)),))


def _overflows(inputs, outputs, shape):
    outputs["y"].copy_(inputs.x * inputs.weight)
    outputs["y"][0, 0] = math.inf


class WithOverflow(Scale):
    """The tests' fake family, with a variant that writes an infinity."""

    def variants(self):
        return super().variants() + [Variant("overflows", self.name, "y with an infinity", "torch", _overflows)]


def _report(tmp_path, capsys, names):
    request = plan.Request(variants=names, family="fake_scale", checks=("finite",))
    options = plan.Options(json=str(tmp_path / "r.json"), markdown=str(tmp_path / "r.md"), fail_on=("finite",))
    the_plan = plan.build(request, registry(extra=(WithOverflow(),)), options, extra_checks=(Finite(),))
    code = outcome.finish(pipeline.execute(the_plan, BACKEND), options, None)
    return code, capsys.readouterr().out, (tmp_path / "r.md").read_text(), (tmp_path / "r.json").read_text()


def test_a_check_added_through_the_protocol_is_in_every_output_and_its_gate(tmp_path, capsys):
    assert "finite" not in CHECKS
    code, terminal, md, text = _report(tmp_path, capsys, ("mine", "torch", "overflows"))
    saved = json.loads(text)
    (section,) = saved["checks"]
    assert [(v["variant"], v["outcome"]) for v in section["verdicts"]] == [("torch", "holds"), ("overflows", "introduced")]
    assert json_report.load(text).checks[0].verdicts[1].outcome == Outcome.INTRODUCED
    glance = [line.split() for line in terminal.splitlines() if line.strip().startswith(("OK", "FAIL"))]
    assert ["OK", "finite", "holds", "1", "of", "1", "case", "every", "case"] in glance
    assert ["FAIL", "finite", "introduced", "1", "of", "1", "case", "float32", "R5", "H24"] in glance
    assert "gate --fail-on finite: FAILED" in terminal and code == 1
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in md.splitlines() if line.startswith("|")]
    assert ["❌ finite", "introduced", "1 of 1 case", "float32 R5 H24"] in rows
    assert "<details><summary><b>Finite outputs</b>" in md and ["overflows", "float32 R5 H24", "NO", "1 not finite"] in rows
    (gate,) = saved["gates"]
    assert gate["outcome"] == "failed" and "overflows fails where mine holds" in gate["lines"][0]


def test_its_gate_passes_where_no_variant_introduces_a_failure_and_a_saved_report_without_it_is_unchanged(
        tmp_path, capsys):
    code, terminal, _, text = _report(tmp_path, capsys, ("mine", "torch"))
    assert code == 0 and "gate --fail-on finite: passed" in terminal
    report = json_report.load(text)
    assert "checks" not in json.loads(json_report.render(dataclasses.replace(report, checks=())))


def test_findings_joined_keep_the_first_ir_section_and_every_further_kernel_in_order():
    from compare.model.results import IRSection
    from compare.model.skips import Skip

    def section(kernel):
        return IRSection("offline", "sm_90", "S", "float32", "", "", ("ttir",), (), (), kernel=kernel)
    forward, backward = section("forward"), section("backward")
    ir = Findings(ir=forward, ir_kernels=(backward,), skipped=(Skip("ir", "one dtype"),))
    joined = Findings(skipped=(Skip("timing", "no GPU"),)) + ir + Findings(skipped=(Skip("finite", "none"),))
    assert joined.ir is forward and joined.ir_kernels == (backward,)
    assert [s.check for s in joined.skipped] == ["timing", "ir", "finite"]
    assert (Findings() + Findings()).ir is None


def test_every_check_word_is_answered_by_one_built_in_check_named_by_its_word():
    from compare.model.vocabulary import BACKWARD, IR, NUMERICS, TIMING
    runs = plan.build(plan.Request(), registry()).runs
    assert sorted(w for c in runs for w in c.answers) == sorted(CHECKS) == sorted((NUMERICS, BACKWARD, TIMING, IR))
    assert [c.name for c in runs] == [NUMERICS, TIMING, IR]
