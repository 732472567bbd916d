"""How a variant's failed run is classified (compare/checks/failures.py) and said: a kernel the interpreter
cannot run, an op raising in its own module, an op whose backward cannot run, each in one headline line;
a failed side never fixes anything; honest variants are judged as before."""
from __future__ import annotations

import json
from pathlib import Path

import main
from compare.model.headline import headline
from compare.model.problems import lists
from compare.model.results import Failure, NumericsCase, NumericsSection, OutputError, VariantNumerics, from_dict
from tests.byok_repo import TINY
from tests.fixed_report import fixed_report
from tests.group_norm_text import GROUP_ROW, IMPORTS, TWO_PASS_STATISTICS, forward_def

# a group-norm forward with the family launcher's parameters, standalone (a loaded file imports no kernel-ab)
KERNEL = (IMPORTS + "\n\n" + TWO_PASS_STATISTICS + "\n\n" + forward_def("forward") + GROUP_ROW + "{cast}" + """\
    mean, rstd = group_statistics(X_ptr, hidden_size, eps, BLOCK_SIZE)
    per_channel = hidden_size // channels_per_group
    for start in tl.range(0, hidden_size, BLOCK_SIZE):
        offsets = start + tl.arange(0, BLOCK_SIZE)
        mask = offsets < hidden_size
        channel = g * channels_per_group + offsets // per_channel
        w = tl.load(W_ptr + channel, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(B_ptr + channel, mask=mask, other=0.0).to(tl.float32)
        x = tl.load(X_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        tl.store(Y_ptr + offsets, (x - mean) * rstd * w + b, mask=mask)
    tl.store(Mean_ptr + n * Mean_row_stride + g * Mean_col_stride, mean)
    tl.store(RSTD_ptr + n * RSTD_row_stride + g * RSTD_col_stride, rstd)
""")


def _kernel(tmp_path: Path, name: str, cast: bool) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(KERNEL.replace("{cast}", "    eps = eps.to(tl.float32)\n" if cast else ""))
    return path


def _compare(tmp_path: Path, *args: str):
    out = tmp_path / "r.json"
    code = main.main(["compare", *args, *TINY, "--json", str(out)])
    assert code == 0
    data = json.loads(out.read_text())
    return data, from_dict(data)


def _lines(report) -> list[str]:
    return [line.text for pair in headline(report).pairs for line in pair.lines]


def _results(report, name: str) -> list[VariantNumerics]:
    return [v for c in report.numerics.cases for v in c.variants if v.variant == name]


def test_a_scalar_cast_the_interpreter_cannot_run_is_one_line_and_fixes_nothing(tmp_path):
    data, report = _compare(tmp_path, "pointer_mutation", "--variant", f"cast={_kernel(tmp_path, 'cast', True)}::forward",
                            "--inputs", "normal,large_mean,huge")
    failed = _results(report, "cast")
    assert failed and {v.failure for v in failed} == {Failure.INTERPRETER}
    assert all(v["failure"] == "interpreter" for c in data["numerics"]["cases"] for v in c["variants"]
               if v["variant"] == "cast")   # report.json says the kind next to the error's text
    lines = _lines(report)
    said = [t for t in lines if "not runnable on Triton's CPU interpreter" in t]
    assert len(said) == 1 and "its numerics need a GPU" in said[0] and "AttributeError" in said[0]
    assert lists(report).alone   # the baseline has problems there (NaN): a crashed side would have "fixed" them
    assert not any("fixes" in t or "new problems" in t for t in lines)
    assert not headline(report).shared   # no "shared by every variant" group per input kind


def _err(nan: int) -> OutputError:
    return OutputError("y", "float32", 64, 0.0, 0.0, 0.0, nan, 1.3e-6, 1e-5, nan, 0, nan, 0)


def _nan_against_failed(kind: Failure):
    """A (the baseline) has NaN where the reference is finite on large_mean inputs; B failed with `kind`
    on every case."""
    cases = tuple(NumericsCase("N2 C8 G2 S256", "float32", k, (0,), (
        VariantNumerics("A", "fail" if nan else "pass", ("y: NaN",) if nan else (), (_err(nan),)),
        VariantNumerics("B", "error", ("AttributeError: boom",), failure=kind)), ())
        for k, nan in (("normal", 0), ("large_mean", 8)))
    base = fixed_report()
    return base.__class__(**{**base.__dict__, "numerics": NumericsSection("cpu", "", cases), "timing": None})


def test_a_failed_side_never_fixes_the_problems_of_the_other():
    for kind in (Failure.CRASH, Failure.INTERPRETER, Failure.LIBRARY):
        report = _nan_against_failed(kind)
        found = lists(report)
        assert not found.fixed["B"], kind
        assert not any("fixes" in t for t in _lines(report)), kind
    crash = lists(_nan_against_failed(Failure.CRASH))
    assert {p.kind for p in crash.introduced["B"]} == {"crashed"}   # its own crash still is a new problem


def test_an_op_raising_in_its_own_module_is_one_library_line_naming_the_file(tmp_path):
    lib = tmp_path / "brokenlib.py"
    lib.write_text("def _helper(x):\n    raise KeyError('no such table')\n\n\n"
                   "def op(X, W, B, num_channels, num_groups, eps):\n    return _helper(X)\n")
    _, report = _compare(tmp_path, "pointer_mutation", "--variant", f"lib={lib}::op")
    failed = _results(report, "lib")
    assert failed and {v.failure for v in failed} == {Failure.LIBRARY}
    said = [t for t in _lines(report) if "the library's own code failed" in t]
    assert len(said) == 1 and "KeyError" in said[0] and "(at brokenlib.py:2)" in said[0]
    assert not headline(report).shared


def test_an_op_whose_result_has_no_gradient_cannot_be_called_for_the_backward_in_one_line(tmp_path):
    lib = tmp_path / "fwdonly.py"
    lib.write_text("import torch\n\n\ndef op(X, W, B, num_channels, num_groups, eps):\n"
                   "    y = torch.nn.functional.group_norm(X.detach(), num_groups, W.detach(), B.detach(), eps)\n"
                   "    return y, X\n")
    _, report = _compare(tmp_path, "pointer_mutation", "--variant", f"fwd={lib}::op(X, W, B, num_channels, num_groups, eps)[0]", "--check", "backward")
    backward = [v for c in report.numerics.cases if c.direction == "backward" for v in c.variants if v.variant == "fwd"]
    forward = [v for c in report.numerics.cases if c.direction == "forward" for v in c.variants if v.variant == "fwd"]
    assert backward and {v.failure for v in backward} == {Failure.CALL}
    assert forward and all(v.produced for v in forward)   # its forward is compared as usual
    said = [t for t in _lines(report) if "could not be called as the family calls it" in t]
    assert len(said) == 1 and said[0].startswith("numerics: backward: fwd: ")
    assert not any("backward" in line or "crashed" in line for line in headline(report).shared)


def test_honest_variants_have_no_failure_and_a_planted_fault_is_still_a_new_problem(tmp_path):
    honest = _kernel(tmp_path, "honest", False)
    short = tmp_path / "short.py"
    short.write_text(honest.read_text().replace("tl.store(Y_ptr + offsets, (x - mean) * rstd * w + b, mask=mask)",
                                                "tl.store(Y_ptr + offsets, (x - mean) * rstd * w + b, mask=mask & (offsets > 0))"))
    assert short.read_text() != honest.read_text()
    _, report = _compare(tmp_path, "pointer_mutation", "--variant", f"honest={honest}::forward",
                         "--variant", f"short={short}::forward")
    assert all(v.failure == Failure.NONE and v.status != "error" for c in report.numerics.cases for v in c.variants)
    by_pair = {pair.variant: " ".join(line.text for line in pair.lines) for pair in headline(report).pairs}
    assert "new problems" in by_pair["short"] and "never written" in by_pair["short"]
    assert "new problems" not in by_pair["honest"] and "not run" not in by_pair["honest"]


def _raised(call) -> BaseException:
    try:
        call()
    except Exception as exc:   # the exception is what the test classifies
        return exc
    raise AssertionError("the call did not raise")


def test_a_type_error_of_the_call_itself_is_a_call_failure_and_one_inside_the_library_is_not(tmp_path):
    from compare.checks.failures import classify
    from variants.ops import MappedOp
    from variants.spec import CallMap
    lib = tmp_path / "typed.py"
    lib.write_text("def one(x):\n    return x\n\n\ndef inner(x, y):\n    return len(x) + y\n")
    namespace: dict = {}
    exec(compile(lib.read_text(), str(lib), "exec"), namespace)
    roots = (str(tmp_path),)
    binding = _raised(lambda: MappedOp(namespace["one"], CallMap(("X", "W")))(1, 2))   # too many arguments
    inside = _raised(lambda: MappedOp(namespace["inner"], CallMap(("X", "W")))(1, 2))  # len(int) in its code
    assert isinstance(binding, TypeError) and isinstance(inside, TypeError)
    assert classify(binding, roots, interpreted=True).kind == Failure.CALL
    found = classify(inside, roots, interpreted=True)
    assert found.kind == Failure.LIBRARY and found.at == "typed.py:6"
    assert classify(ValueError("x"), roots, interpreted=True).kind == Failure.CRASH
