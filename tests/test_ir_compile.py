"""The IR comparison on real compiles (offline for sm_90, no GPU): renamed copies show no difference,
the seed's pair shows its pointer carry, a new loop before the channel loop does not shift which loop
is which, a broken variant is reported while the others come out."""
import dataclasses
import difflib
import importlib.util
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

from compare.checks import ir
from compare.runtime.backend import configure
from compare.checks.ir.compile import CompileCache
from compare.model.headline import headline
from compare.model.pair_code import details
from compare.model.results import VariantInfo, from_dict, to_dict
from tests.fixed_report import fixed_report
from tests.planted import mutant
from tests.test_headline import STATS_IMPORT, TWO_PASS
from variants import registry
from variants.group_norm import FAMILY, PRESETS
import variants.group_norm.explicit_offset as explicit_offset
import variants.group_norm.pointer_mutation as pointer_mutation
from tests.sampled import sampled

BACKEND = configure("auto")
REG = registry()
SHAPE = PRESETS["default"].shapes[0]     # what `main.py compare` and `main.py ir` compile by default
ROOT = Path(__file__).resolve().parent.parent


def renamed_copy(tmp_path: Path, module, name: str):
    """The variant's file copied under another name, its kernel function renamed too."""
    source = inspect.getsource(module)
    assert source.count("def group_norm_forward(") == 1
    path = tmp_path / f"{name}.py"
    path.write_text(source.replace("def group_norm_forward(", f"def {name}_kernel("))
    spec = importlib.util.spec_from_file_location(f"copied_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return FAMILY.triton_variant(name, "a renamed copy", str(path), forward=getattr(mod, f"{name}_kernel"))


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """One worker run for every kernel the tests need; the cache serves the rest."""
    tmp = tmp_path_factory.mktemp("ir")
    copy = renamed_copy(tmp, pointer_mutation, "pm_copy")
    broken = mutant(tmp, explicit_offset, "broken", "w = tl.load(W_ptr + channel)", "w = tl.load(W_ptr + no_such_name)")
    # the statistics with a two-pass variance: one more loop before the channel loop, which is unchanged
    two_pass = mutant(tmp, pointer_mutation, "two_pass", STATS_IMPORT, TWO_PASS, why="two-pass variance")
    chosen = [REG.get("pointer_mutation"), REG.get("explicit_offset"), copy, broken, two_pass]
    cache = CompileCache()
    kernels = [(v.name, v.kernel, v.import_roots) for v in chosen]
    results = {c.variant: c for c in cache.compile(FAMILY, kernels, SHAPE, "float32", "sm_90", launched=False)}
    return {"cache": cache, "copy": copy, "broken": broken, "two_pass": two_pass, "results": results}


def section(compiled, names):
    chosen = [{n: compiled[n] for n in ("copy", "broken", "two_pass")}.get(n) or REG.get(n) for n in names]
    return ir.run(FAMILY, chosen, SHAPE, "float32", cache=compiled["cache"])


def compiled_code_line(s, b: str) -> str:
    """The headline's compiled-code line for `b` against the section's first variant, from a report
    that holds only this section (and through its JSON form, which must say the same)."""
    names = [v.variant for v in s.variants]
    report = dataclasses.replace(fixed_report(), baseline=names[0], numerics=None, timing=None, ir=s,
                                 variants=tuple(VariantInfo(n, "group_norm", "triton", n, n) for n in names))
    line = next(p for p in headline(report).pairs if p.variant == b).lines[-1].text
    again = next(p for p in headline(from_dict(to_dict(report))).pairs if p.variant == b).lines[-1].text
    assert again == line
    return line


def test_renamed_copy_has_an_empty_diff_at_every_stage(compiled):
    s = section(compiled, ["pointer_mutation", "copy"])
    (pair,) = s.pairs
    assert [d.stage for d in pair.stages] == ["ttir", "ttgir", "llir", "ptx", "sass"]
    for d in pair.stages:
        assert d.identical and d.diff == "", (d.stage, d.diff[:500])
        assert d.raw_changed_lines > 0, d.stage      # the raw listings do differ (names, locations)
    a, b = compiled["results"]["pointer_mutation"], compiled["results"]["pm_copy"]
    assert "pm_copy_kernel" in b.stages["ptx"] and "pm_copy_kernel" not in a.stages["ptx"]


def _channel_loop(variant, stage):
    """The loop that holds another loop: the channel loop of the group-norm kernels."""
    st = next(x for x in variant.stages if x.stage == stage)
    (outer,) = [l for l in st.loops if l.depth == 0 and any(m.path.startswith(l.path + ".") for m in st.loops)]
    return outer


def test_pointer_mutation_channel_loop_carries_two_pointers_explicit_offset_none(compiled):
    s = section(compiled, ["pointer_mutation", "explicit_offset"])
    a, b = s.variants
    for stage in ("ttir", "ttgir", "llir"):
        la, lb = _channel_loop(a, stage), _channel_loop(b, stage)
        assert la.carried_pointers == 2, (stage, la.carried)
        assert lb.carried_pointers == 0, (stage, lb.carried)
    assert _channel_loop(a, "ttir").carried[0].type == "!tt.ptr<f32>"


def test_two_pass_statistics_leave_the_channel_loop_matched_to_itself_and_its_pointers_unclaimed(compiled):
    s = section(compiled, ["pointer_mutation", "two_pass"])
    a, b = s.variants
    for stage in ("ttir", "ttgir", "llir", "ptx"):
        la, lb = _channel_loop(a, stage), _channel_loop(b, stage)
        assert (la.path, lb.path) == ("2", "3") and la.carried_pointers == lb.carried_pointers == 2, stage
        assert [(m.a, m.b) for m in s.pairs[0].loops if m.stage == stage and m.status == "matched"][:2] == [
            (("2",), ("3",)), (("2.1",), ("3.1",))], stage
    line = compiled_code_line(s, "two_pass")
    assert "carries" not in line and "over `channel`" not in line, line
    assert "no sure pairing of pointer_mutation's loops with two_pass's, so nothing is claimed of them: " \
           "pointer_mutation has a loop over `start` (loop 1), two_pass a loop over `start` (loop 1) and a loop over " \
           "`start` (loop 2)" in line, line
    assert "no confident match, no pair claimed: pointer_mutation's loop 1 (for start; no pointer carried) against " \
           "two_pass's loops 1 (for start; no pointer carried), 2 (for start; no pointer carried)" in \
           details(s, "pointer_mutation", "two_pass")   # the folded details' words


def test_seed_pair_line_names_pointers_removed_and_address_arithmetic_added_to_the_inner_loop(compiled):
    s = section(compiled, ["pointer_mutation", "explicit_offset"])
    line = compiled_code_line(s, "explicit_offset")
    assert ("the loop over `channel` (loop 2) carries 2 pointers (X_ptr, Y_ptr) from one iteration to the next in "
            "pointer_mutation, none in explicit_offset;") in line, line
    assert ("the innermost loop over `start` (loop 2.1, inside the loop over `channel`): 2 more pointer additions in "
            "Triton's IR") in line, line
    assert "TTIR" not in line and "tt.addptr" not in line, line
    raw = details(s, "pointer_mutation", "explicit_offset")   # what the folded compiled-code section says
    assert ("loop 2 (for channel) carries pointers across iterations: 2 in pointer_mutation (X_ptr, Y_ptr), 0 in "
            "explicit_offset (TTIR, TTGIR, LLIR, PTX)") in raw, raw
    assert "innermost loop 2.1 (for start), instruction count changes: TTIR tt.addptr +2 / " in raw, raw


def test_normalized_ptx_diff_is_at_most_a_tenth_of_the_raw_diff(compiled):
    s = section(compiled, ["pointer_mutation", "explicit_offset"])
    ptx = next(d for d in s.pairs[0].stages if d.stage == "ptx")
    a, b = compiled["results"]["pointer_mutation"], compiled["results"]["explicit_offset"]
    raw = list(difflib.unified_diff(a.stages["ptx"].splitlines(), b.stages["ptx"].splitlines(), lineterm=""))
    assert ptx.raw_diff_lines == len(raw)
    assert 0 < ptx.diff_lines <= len(raw) / 10, (ptx.diff_lines, len(raw))
    assert len(ptx.diff) <= len("\n".join(raw)) / 10      # in characters too


def test_failed_compile_is_reported_and_the_others_come_out(compiled):
    s = section(compiled, ["pointer_mutation", "broken", "explicit_offset"])
    status = {v.variant: v for v in s.variants}
    assert status["broken"].status == "failed"
    assert "no_such_name" in status["broken"].error and len(status["broken"].error.splitlines()) <= 6
    assert status["pointer_mutation"].status == status["explicit_offset"].status == "ok"
    assert [(p.a, p.b) for p in s.pairs] == [("pointer_mutation", "explicit_offset")]
    assert status["explicit_offset"].registers > 0 and status["explicit_offset"].spill_bytes >= 0


def test_section_survives_json_and_is_cut_unless_full(compiled):
    s = section(compiled, ["pointer_mutation", "explicit_offset"])
    assert all(st.listing == "" for v in s.variants for st in v.stages)
    from compare.model.results import IRSection, _decode, _encode
    assert _decode(IRSection, _encode(s)) == s
    full = ir.run(FAMILY, [REG.get("pointer_mutation"), REG.get("explicit_offset")], SHAPE, "float32",
                  full=True, stages=("ptx",), cache=compiled["cache"])
    assert full.stages == ("ptx",) and full.variants[0].stages[0].listing.startswith(".version")


@pytest.mark.parametrize("args, expected", sampled([
    (["ir", "--stage", "asm"], "unknown stage 'asm'; known stages: ttir, ttgir, llir, ptx, sass"),
    (["ir", "--target", "sm_xx"], "unknown target 'sm_xx'"),
    (["compare", "--check", "ir", "--target", "90"], "unknown target '90'"),
], several=True))
def test_ir_bad_input_is_one_line_and_exit_2(args, expected):
    r = subprocess.run([sys.executable, "main.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and expected in r.stderr and "Traceback" not in r.stderr


@pytest.mark.slow
def test_ir_command_end_to_end(tmp_path):
    out, md = tmp_path / "ir.json", tmp_path / "ir.md"
    r = subprocess.run([sys.executable, "main.py", "ir", "pointer_mutation", "explicit_offset", "--shape", "2,8,2,24",
                        "--stage", "ptx", "--json", str(out), "--markdown", str(md), "--quiet"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "ir PTX: pointer_mutation loop 2 carries 2 pointers" in r.stdout
    import json
    report = from_dict(json.loads(out.read_text()))
    assert report.ir.stages == ("ptx",) and report.numerics is None
    text = md.read_text()
    assert "```diff" in text and "<details><summary>PTX: pointer_mutation -> explicit_offset" in text
