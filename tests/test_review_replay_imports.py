"""A library whose package raises on import at one side: every changed op under it says that import failed
there, with the module that raised, typed from what the recorder or the player saw (never read from text), not
"no call recorded". Python keeps the submodules a failed package import ran: the second op must not be taken
from them."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from compare.model.replay import ImportFailure, Pass, ReplayVerdict, Side
from tests import replay_library

OPS = '''\
import torch
import triton
import triton.language as tl


@triton.jit
def _double_kernel(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs, mask=offs < n) * {double}, mask=offs < n)


@triton.jit
def _halve_kernel(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs, mask=offs < n) * {halve}, mask=offs < n)


def double(x):
    y = torch.empty_like(x)
    _double_kernel[(triton.cdiv(x.numel(), 64),)](x, y, x.numel(), BLOCK=64)
    return y


def halve(x):
    y = torch.empty_like(x)
    _halve_kernel[(triton.cdiv(x.numel(), 64),)](x, y, x.numel(), BLOCK=64)
    return y
'''
TESTS = '''\
import torch
from brokelib.ops import double, halve


def test_double():
    assert double(torch.ones(100)).sum() > 0


def test_halve():
    assert halve(torch.ones(100)).sum() > 0
'''
# the package imports its ops, then a module that raises at one side: the ops' module runs and stays behind
PACKAGE = "from brokelib import ops\nfrom brokelib import extra\n"
BROKEN = 'raise RuntimeError("extra cannot load here")\n'


def _library(top: Path, broken_at: Side) -> Path:
    sides = {}
    for side, (double, halve) in {Side.BASE: ("2.0", "0.5"), Side.HEAD: ("(1.0 + 1.0)", "(1.0 / 2.0)")}.items():
        sides[side.value] = {"brokelib/__init__.py": PACKAGE, "brokelib/ops.py": OPS.format(double=double, halve=halve),
                             "brokelib/extra.py": BROKEN if side == broken_at else "VALUE = 1\n",
                             "tests/test_ops.py": TESTS}
    return replay_library.commit(top, sides)


@pytest.fixture
def broken(tmp_path):
    """brokelib at HEAD on sys.path, taken out of sys.modules after."""
    top = _library(tmp_path / "lib", Side.HEAD)
    sys.path.insert(0, str(top))
    yield top
    sys.path.remove(str(top))
    for name in [m for m in sys.modules if m.split(".")[0] == "brokelib"]:
        del sys.modules[name]


def test_an_op_under_a_package_whose_import_raised_is_not_taken_from_what_that_import_left(broken):
    import importlib
    from compare.runtime.library_imports import ImportFailed, Imports
    imports = Imports()
    with pytest.raises(ImportFailed) as first:
        imports.resolve("brokelib.ops", "double")
    assert {k: first.value.record[k] for k in ("module", "raised_in", "chain", "error")} == {
        "module": "brokelib.ops", "raised_in": "brokelib.extra", "chain": ["brokelib", "brokelib.extra"],
        "error": "RuntimeError: extra cannot load here"}
    assert importlib.import_module("brokelib.ops").halve   # the trap: Python hands out the half-imported module
    with pytest.raises(ImportFailed) as second:
        imports.resolve("brokelib.ops", "halve")
    assert second.value.record is first.value.record
    assert imports.resolve("json", "dumps")[2] is json.dumps   # another package is imported as ever


def test_both_ops_of_the_module_name_the_import_that_raised_and_its_side(broken, tmp_path):
    from compare.model.replay import ReplayedOp
    from compare.review.replay_recording import not_imported
    from compare.review.replay_render import not_replayed, summary
    from compare.runtime.replay_worker import Recorder
    recorder = Recorder({"out": str(tmp_path), "calls": 6, "per_dtypes": 2, "bytes": 1 << 20})
    recorder.install([{"module": "brokelib.ops", "name": name} for name in ("double", "halve")])
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert recorder.ops == [] and manifest["notes"] == []
    [entry] = manifest["unimportable"]
    assert entry["ops"] == ["brokelib.ops:double", "brokelib.ops:halve"] and entry["test"] == ""
    ops = []
    for name in ("double", "halve"):
        failed = not_imported(manifest, Side.HEAD, f"brokelib.ops:{name}", "brokelib.ops", ["tests/test_ops.py"])
        assert failed == (ImportFailure(Side.HEAD, "RuntimeError: extra cannot load here", "brokelib.ops", "",
                                        "brokelib.extra"),)
        op = ReplayedOp.made(op=f"brokelib.ops:{name}", label=name, tests=(), recorded_at=Side.HEAD, calls=(),
                             not_imported=failed)
        assert op.verdict == ReplayVerdict.NOT_IMPORTED
        assert summary(op)[1] == f"{name}: changed, not compared: no family fits it, and no call of it could " \
            "be recorded: at HEAD its module brokelib.ops could not be imported (brokelib.extra raised): " \
            "RuntimeError: extra cannot load here"
        ops.append(op)
    # the review says it once for both, and apart for an op another failure kept out
    other = ReplayedOp.made(op="other.ops:triple", label="triple", tests=(), recorded_at=Side.HEAD, calls=(),
                            not_imported=(ImportFailure(Side.HEAD, "ImportError: no triple", "other.ops"),))
    assert [line for _, line in not_replayed([ops[0], other, ops[1]], lambda op: "")] == [
        "2 ops (double, halve): changed, not compared: no family fits them, and no call of them could be recorded: "
        "at HEAD their module brokelib.ops could not be imported (brokelib.extra raised): RuntimeError: extra "
        "cannot load here", summary(other)[1]]


@pytest.mark.slow
@pytest.mark.parametrize("broken_at", [Side.HEAD, Side.BASE])
def test_a_review_says_for_every_changed_op_which_import_raised_and_at_which_side(tmp_path, broken_at):
    top = _library(tmp_path / "lib", broken_at)
    out = tmp_path / "review.json"
    r = subprocess.run([sys.executable, "main.py", "review", "HEAD~1", "HEAD", "--repo", str(top), "--quiet",
                        "--json", str(out)], capture_output=True, text=True, timeout=600,
                       cwd=Path(__file__).resolve().parents[1])
    ops = {op["label"]: op for op in json.loads(out.read_text())["replayed"]}
    said = " ".join(r.stdout.split())
    assert sorted(ops) == ["double", "halve"] and "no call recorded" not in said, r.stdout + r.stderr
    for label, op in ops.items():
        if broken_at == Side.HEAD:   # where the calls are recorded: none could be
            assert op["verdict"] == ReplayVerdict.NOT_IMPORTED.value and op["calls"] == []
            assert op["not_imported"] == [{"side": "HEAD", "error": "RuntimeError: extra cannot load here",
                                           "module": "brokelib.ops", "test": "", "raised_in": "brokelib.extra"}]
            assert "2 ops (double, halve): changed, not compared: no family fits them, and no call of them could " \
                   "be recorded: at HEAD their module brokelib.ops could not be imported (brokelib.extra raised): " \
                   "RuntimeError: extra cannot load here" in said
        else:   # recorded at HEAD, played at both: BASE cannot load it
            assert op["verdict"] == ReplayVerdict.BASE_FAILS.value and op["calls"]
            assert {json.dumps(f) for c in op["calls"] for f in c["failures"]} == {json.dumps(
                {"side": "BASE", "stage": Pass.IMPORT.value,
                 "error": "RuntimeError: extra cannot load here (raised in brokelib.extra)"})}
            assert f"{label}: replayed (no family fits it), 1 call recorded from tests/test_ops.py: its import " \
                   "raises at BASE: RuntimeError: extra cannot load here (raised in brokelib.extra)" in said


@pytest.mark.slow
def test_a_test_file_that_cannot_be_imported_is_named_by_its_op_and_stops_no_other_tests(tmp_path):
    """`scale`'s only test file imports a module that raises; `shift`'s runs and records its call."""
    from compare.review.replay_recording import not_imported
    from compare.review.replay_process import WORKER
    replay_library.commit(tmp_path, {"only": {
        "lib2/__init__.py": "", "lib2/ops.py": "def scale(x):\n    return x * 2\n\n\ndef shift(x):\n    return x + 1\n",
        "lib2/bad.py": BROKEN, "tests/test_scale.py": "import lib2.bad\n\n\ndef test_scale():\n    pass\n",
        "tests/test_shift.py": "from lib2.ops import shift\n\n\ndef test_shift():\n    assert shift(1) == 2\n"}})
    (tmp_path / "out").mkdir()
    (tmp_path / "request.json").write_text(json.dumps({
        "roots": [str(tmp_path)], "rootdir": str(tmp_path), "out": str(tmp_path / "out"), "device": "cpu",
        "ops": [{"module": "lib2.ops", "name": name} for name in ("scale", "shift")], "calls": 6, "per_dtypes": 2,
        "tests": ["tests/test_scale.py", "tests/test_shift.py"], "bytes": 1 << 20}))
    subprocess.run([sys.executable, str(WORKER), "record", str(tmp_path / "request.json")], capture_output=True,
                   timeout=300, cwd=tmp_path, check=True)
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert [c["op"] for c in manifest["calls"]] == ["lib2.ops:shift"]
    assert not_imported(manifest, Side.HEAD, "lib2.ops:scale", "lib2.ops", ["tests/test_scale.py"]) == (
        ImportFailure(Side.HEAD, "RuntimeError: extra cannot load here", "", "tests/test_scale.py", "lib2.bad"),)
    assert not_imported(manifest, Side.HEAD, "lib2.ops:shift", "lib2.ops", ["tests/test_shift.py"]) == ()
