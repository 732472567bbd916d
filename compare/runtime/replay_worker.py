"""`python replay_worker.py record|play REQUEST.json`: record an op's calls from a library's tests (pytest in
this process, each op wrapped: a call of a new signature kept until each op has its calls or the byte
budget is spent; the manifest rewritten after each, so a process stopped at its limit leaves what it found),
or play recorded calls at one revision (fresh inputs, then the backward from a seeded upstream gradient).
Both run a reviewed library's code: never in kernel-ab's own process."""
from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback
from pathlib import Path
from typing import NamedTuple


def _first_line(exc: BaseException) -> str:
    from compare.runtime.library_imports import first_line
    return first_line(exc)


class Recorder:
    """Wraps each op; keeps its calls of new signatures until the budget is spent."""

    def __init__(self, request: dict):
        self.out, self.calls, self.budget = Path(request["out"]), request["calls"], request["bytes"]
        self.per_dtypes = request["per_dtypes"]   # calls kept per combination of argument dtypes
        self.root = request.get("rootdir", ".")
        # unimportable: each import that raised (library_imports.failure()'s record) with the ops it kept from
        # being wrapped (`ops`) or the test file whose collection it stopped (`test`)
        # done: the tests that ended (a recording started again after a test ended its process runs the others)
        # outcomes: test file -> how many of its tests passed, failed, were skipped, and its first failure
        self.manifest = {"calls": [], "notes": [], "missing": [], "unimportable": [], "tests_run": 0, "done": [],
                         "outcomes": {}}
        self.failures: dict[int, dict] = {}   # id of an import's record -> its entry in `unimportable`
        self.seen: dict[str, set] = {}
        self.kinds: dict[str, dict] = {}
        self.spent, self.depth = 0, 0
        if request.get("resume"):   # again after a test ended the process: what it had recorded is kept
            self._resume(json.loads((self.out / "manifest.json").read_text()))

    def _resume(self, earlier: dict) -> None:
        # the imports that raised are found again (the ops installed, the test files collected, anew)
        self.manifest.update({k: earlier[k] for k in ("calls", "notes", "missing", "tests_run", "done", "outcomes")})
        for call in self.manifest["calls"]:
            self.seen.setdefault(call["op"], set()).add(call["signature"])
            kinds = self.kinds.setdefault(call["op"], {})
            kinds[tuple(call["dtypes"])] = kinds.get(tuple(call["dtypes"]), 0) + 1
            self.spent += call["bytes"]

    def full(self, op: str) -> bool:
        return len(self.seen.get(op, ())) >= self.calls

    def write(self) -> None:
        path = self.out / "manifest.json"
        path.with_suffix(".tmp").write_text(json.dumps(self.manifest, indent=1))
        path.with_suffix(".tmp").replace(path)

    def outcome(self, report) -> None:
        """A test's outcome counted for its file (its call's, or a setup's that did not pass), with the file's
        first failure: what raised, and where (a test that fails before it calls an op says why it made none)."""
        if report.when != "call" and (report.when != "setup" or report.passed):
            return
        file, _, _ = report.nodeid.partition("::")
        counts = self.manifest["outcomes"].setdefault(file, {"passed": 0, "failed": 0, "skipped": 0})
        counts[report.outcome] = counts.get(report.outcome, 0) + 1
        crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
        if report.failed and "first" not in counts and crash is not None:
            where = f"{_within(crash.path, self.root)}:{crash.lineno}" if crash.path else ""
            error = (crash.message.splitlines() or [""])[0][:300]
            counts["first"] = {"test": report.nodeid, "error": error, "where": where}

    def note(self, text: str) -> None:
        if text not in self.manifest["notes"]:
            self.manifest["notes"].append(text)
            self.write()

    def wrap(self, op: str, fn):
        def recorded(*args, **kwargs):
            kept = None
            if self.depth == 0 and not self.full(op):
                self.depth += 1
                try:
                    kept = self.keep(op, fn, args, kwargs)
                finally:
                    self.depth -= 1
            try:
                result = fn(*args, **kwargs)
            except Exception as exc:
                if kept is not None:   # the call stays recorded; the family made of it cannot time it
                    self.manifest["calls"][kept[0]]["raised"] = _first_line(exc)
                    self.write()
                raise
            if kept is not None:
                self.returned(*kept, result)
            return result
        return recorded

    def returned(self, index: int, tensors: list, result) -> None:
        """What a kept call returned and which of its tensors its graph gives a gradient (the recorded family
        times it from these: variants/recorded.py); once every op has its calls, the process ends."""
        from compare.runtime import call_capture as cc
        entry = self.manifest["calls"][index]
        try:
            entry["result"] = cc.result_form(result)
            entry["reached"] = cc.reached(list(cc.named_outputs(result).values()), tensors)
        except Exception as exc:  # noqa: BLE001 - an odd result is not the test's failure; the call stays recorded
            self.note(f"{entry['op']}: what call {index} returned could not be read: {_first_line(exc)}")
        self.write()
        if all(self.full(o) for o in self.ops):
            sys.stdout.flush()
            os._exit(0)   # every op has its calls: the rest of the tests would add nothing

    def keep(self, op: str, fn, args: tuple, kwargs: dict) -> tuple[int, list] | None:
        """(the call's index, its argument tensors) when it is kept."""
        import torch
        from compare.runtime import call_capture as cc
        names = cc.parameter_names(fn, len(args))
        sig = cc.signature(names, args, kwargs)
        dtypes = cc.dtypes(args, kwargs)
        kinds = self.kinds.setdefault(op, {})
        if sig in self.seen.setdefault(op, set()) or kinds.get(dtypes, 0) >= self.per_dtypes:
            return None   # another signature of dtypes already kept twice adds less than the next dtype will
        tensors: list = []
        try:
            packed = cc.pack((tuple(args), dict(kwargs)), tensors, {}, "the arguments")
        except cc.Unrecordable as exc:
            self.note(f"{op}: a call not recorded: {exc}")
            return None
        kept = [cc.keep(t) for t in tensors]
        size = sum(v.numel() * v.element_size() for v, _ in kept)
        if self.spent + size > self.budget:
            self.note(f"{op}: a call of {size:,} bytes not recorded: the recording's budget of {self.budget:,} bytes is spent")
            return None
        self.seen[op].add(sig)
        kinds[dtypes] = kinds.get(dtypes, 0) + 1
        self.spent += size
        index = len(self.manifest["calls"])
        torch.save({"args": packed, "tensors": [v for v, _ in kept], "meta": [m.__dict__ for _, m in kept],
                    "names": names}, self.out / f"call_{index}.pt")
        test = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0]
        self.manifest["calls"].append({"op": op, "file": f"call_{index}.pt", "signature": sig, "test": test,
                                       "bytes": size, "keywords": list(kwargs), "dtypes": list(dtypes)})
        self.write()
        return index, tensors

    def install(self, ops: list[dict]) -> None:
        """Each op wrapped where it is defined, and where modules already imported hold it by name."""
        from compare.runtime.library_imports import ImportFailed, Imports
        imports, self.ops = Imports(), []
        for spec in ops:
            key = f"{spec['module']}:{spec['name']}"
            try:
                owner, attribute, fn = imports.resolve(spec["module"], spec["name"])
            except ImportFailed as failed:
                self.unimportable(failed.record, failed.__cause__, op=key)
                continue
            except Exception as exc:  # noqa: BLE001 - the library's own lookup, whatever it raises
                self.note(f"{key}: could not be found in its module: {_first_line(exc)}")
                continue
            wrapped = self.wrap(key, fn)
            setattr(owner, attribute, staticmethod(wrapped) if isinstance(owner, type) else wrapped)
            top = spec["module"].split(".")[0]
            for name, module in list(sys.modules.items()):
                if name.split(".")[0] == top and module is not owner:
                    for attr, value in list(vars(module).items()):
                        if _same_callable(value, fn):   # `sigmoid = SigmoidFunction.apply` at module level
                            setattr(module, attr, wrapped)
            self.ops.append(key)

    def unimportable(self, record: dict, exc: BaseException | None, op: str = "", test: str = "") -> None:
        """An import that raised (`record`: library_imports.failure()'s, `exc` where it was raised here) kept
        `op` from being wrapped, or stopped the collection of the test file `test`."""
        if isinstance(exc, ModuleNotFoundError) and exc.name:
            self.missing(exc)
        if id(record) not in self.failures:
            self.failures[id(record)] = {**record, "ops": [], "test": test}
            self.manifest["unimportable"].append(self.failures[id(record)])
        if op:
            self.failures[id(record)]["ops"].append(op)
        self.write()

    def missing(self, exc: ModuleNotFoundError) -> None:
        """A package the library's code or tests import that this environment lacks, with the file importing it."""
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if "importlib" not in f.filename]
        where = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else ""
        entry = {"package": exc.name.split(".")[0], "where": where}
        if entry not in self.manifest["missing"]:
            self.manifest["missing"].append(entry)
            self.write()


def _same_callable(value, fn) -> bool:
    """`value` is `fn`: the same object, or (an autograd Function's apply, made anew at each access) the same
    method of the same class."""
    if value is fn:
        return True
    func, owner = getattr(fn, "__func__", None), getattr(fn, "__self__", None)
    return func is not None and getattr(value, "__func__", None) is func and getattr(value, "__self__", None) is owner


def _within(path: str, root: str) -> str:
    """`path` from the tree's root where it is inside it (a file of the library), else as it is."""
    try:
        return str(Path(path).resolve().relative_to(Path(root).resolve()))
    except ValueError:
        return path


class _Plugin:
    """pytest hooks: collection errors read from the exception itself, tests counted."""

    def __init__(self, recorder: Recorder):
        self.recorder = recorder

    def pytest_exception_interact(self, node, call, report):
        import pytest
        from compare.runtime.library_imports import failure
        exc = call.excinfo.value if call.excinfo is not None else None
        if isinstance(exc, pytest.Collector.CollectError) and exc.__cause__ is not None:
            exc = exc.__cause__   # pytest's words for an import or syntax error; the error itself is its cause
        if report.when == "collect" and isinstance(node, pytest.Module) and exc is not None:
            self.recorder.unimportable(failure("", exc), exc, test=node.nodeid)
        elif isinstance(exc, ModuleNotFoundError) and exc.name:
            self.recorder.missing(exc)
        elif report.when == "collect" and exc is not None:
            self.recorder.note(f"{node.nodeid}: could not be collected: {_first_line(exc)}")

    def pytest_runtest_logstart(self, nodeid, location):
        from compare.runtime.replay_play import running
        running(self.recorder.out, nodeid)

    def pytest_runtest_logfinish(self, nodeid, location):
        from compare.runtime.replay_play import running
        running(self.recorder.out, "")
        self.recorder.manifest["done"].append(nodeid)
        self.recorder.write()

    def pytest_runtest_logreport(self, report):
        if report.when == "call":
            self.recorder.manifest["tests_run"] += 1
        self.recorder.outcome(report)


def record(request: dict) -> int:
    """The ops' calls recorded from the library's tests (`tests`), or from a Python `command`: the command's
    own exit code, or 0 after the tests, however they ended (a test that fails still leaves its calls, and
    what was recorded, not pytest's outcome, says how the recording went)."""
    import pytest
    recorder = Recorder(request)
    recorder.write()
    recorder.install(request["ops"])
    if not recorder.ops:
        return 0
    _seeded()
    if request.get("command"):
        code = run_command(request["command"], _Plugin(recorder))
        recorder.write()
        return code
    # a test file that cannot be imported stops only its own tests (its ops say so: `unimportable`), not the others'
    args = [*request["tests"], "-q", "-p", "no:cacheprovider", "-o", "addopts=", "--rootdir", request["rootdir"],
            "-W", "ignore", "--continue-on-collection-errors",
            *[f"--deselect={n}" for n in request.get("deselect", [])]]   # run, or the test that ended the process
    pytest.main(args, plugins=[_Plugin(recorder)])
    recorder.write()
    return 0


def _seeded() -> None:
    """A library's unseeded tests draw the same inputs in every recording: two reviews of one change replay the
    same calls on the same values, and their numbers agree."""
    import random

    import torch
    random.seed(0)
    torch.manual_seed(0)
    with contextlib.suppress(ImportError):
        import numpy
        numpy.random.seed(0)


class CommandForm(NamedTuple):
    """How a Python command runs: ("pytest", "", ARGS), ("module", MODULE, ARGS) or ("file", FILE, ARGS)."""

    how: str
    what: str
    args: list[str]


def command_form(argv: list[str]) -> CommandForm:
    """How the Python command `argv` runs; ValueError, one line, for any other command."""
    words = list(argv)
    if words and Path(words[0]).name.startswith("python"):
        words = words[1:]
        if words[:1] == ["-m"] and len(words) > 1:
            return CommandForm("pytest", "", words[2:]) if words[1] == "pytest" else \
                CommandForm("module", words[1], words[2:])
    elif words and Path(words[0]).name in ("pytest", "py.test"):
        return CommandForm("pytest", "", words[1:])
    if words and words[0].endswith(".py"):   # the file itself, or after `python3`
        return CommandForm("file", words[0], words[1:])
    raise ValueError(f"the command {' '.join(argv) or '(none)'!r} is not a Python program kernel-ab can record "
                     "in its own process: give `pytest ARGS`, `python3 FILE.py ARGS` or `python3 -m MODULE ARGS`")


def run_command(argv: list[str], plugin) -> int:
    """The command run in this process, as its interpreter would (sys.argv set, run as __main__)."""
    import runpy
    how, what, args = command_form(argv)
    if how == "pytest":
        import pytest
        return int(pytest.main(args, plugins=[plugin]))
    sys.argv = [what, *args]
    try:
        if how == "module":
            runpy.run_module(what, run_name="__main__", alter_sys=True)
        else:
            sys.path.insert(0, str(Path(what).resolve().parent))
            runpy.run_path(what, run_name="__main__")
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0


def main(argv: list[str]) -> int:
    mode, request = argv[0], json.loads(Path(argv[1]).read_text())
    from compare.runtime.backend import configure
    configure(request["device"])
    sys.path[:0] = request["roots"]
    os.chdir(request["rootdir"])
    if mode == "record":
        return record(request)
    from compare.runtime.replay_play import play
    return play(request)


if __name__ == "__main__":
    _home = str(Path(__file__).resolve().parents[2])   # kernel-ab's folder, for its own names only
    sys.path[0] = _home
    import kernel_ab  # noqa: F401  the finder that resolves compare/variants/main to kernel-ab's files
    sys.path.remove(_home)
    sys.exit(main(sys.argv[1:]))
