"""Any op, no family: a changed op's calls recorded from the library's own tests (those naming it, its
module or a public wrapper of it) at HEAD (at BASE for an op only BASE has), then each call run at both
revisions from fresh copies of the same inputs, every output, input written into and input gradient
compared (compare/checks/replay_diff.py). Each side runs in a process of its own over its own whole tree
(compare/runtime/replay_worker.py)."""
from __future__ import annotations

import ast
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from compare.model.replay import CallFailure, Pass, ReplayedCall, ReplayedOp, Side
from compare.review.members import module_name
from compare.review.revisions import Repository
from compare.review.sources import Role, role
from compare.model import scratch

WORKER = Path(__file__).resolve().parents[1] / "runtime" / "replay_worker.py"
MAX_TEST_FILES = 3


@dataclasses.dataclass(frozen=True)
class Limits:
    calls: int = 6                      # distinct signatures kept per op
    per_dtypes: int = 2                 # of them, per combination of argument dtypes
    bytes: int = 256 << 20              # of tensors kept, per recording
    record_s: float = 240.0             # the recording process's time limit (its calls kept when it is reached)
    play_s: float = 240.0               # each side's replaying process's


# compiled kernels run a test file in seconds where the interpreter takes minutes: a review's minute on a GPU
GPU_LIMITS = Limits(record_s=75.0, play_s=150.0)


@dataclasses.dataclass(frozen=True)
class OpToReplay:
    key: str                            # as the mapping names it (compare/review/mapping.op_key)
    label: str
    path: str                           # the op's file
    module: str
    name: str                           # `f` or `Cls.apply`
    only_at_base: bool = False
    notes: tuple[str, ...] = ()         # why it is replayed rather than compared in a family, if it was matched


def replayable(found, unmapped) -> list[OpToReplay]:
    """The changed ops among `unmapped` (no family compares them) that exist at BASE: those to replay."""
    from compare.review.mapping import op_key
    left = {u.kernel for u in unmapped}
    ops, labels = [], set()
    for c in found.ops:
        key = op_key(c)
        if key not in left or c.base_op is None:
            continue
        label = c.op.name.removesuffix(".apply")
        label = label if label not in labels else f"{c.module}.{label}"
        labels.add(label)
        ops.append(OpToReplay(key, label, c.path, c.module, c.op.name))
    return ops


def _words(op: OpToReplay) -> list[tuple[str, int]]:
    """What a test that reaches `op` names, with how strongly it points at it."""
    return [(op.name.split(".")[0], 3), (op.module, 3), (op.module.rsplit(".", 1)[-1], 1)]


def tests_for(repo: Repository, files: dict[str, str], op: OpToReplay, wrappers: list[str]) -> list[str]:
    """The library's test files that reach `op`, the most pointed first: those naming it or a public wrapper
    of it in an import or a call, then those named after its module."""
    tests = [p for p in files if p.endswith(".py") and role(p) == Role.TEST and Path(p).name.startswith("test")]
    texts = repo.read([files[p] for p in tests])
    words = _words(op) + [(w, 2) for w in wrappers]
    scored = []
    for p in tests:
        text = texts.get(files[p], "")
        score = sum(weight for word, weight in words if re.search(rf"\b{re.escape(word)}\b", text))
        score += 2 * (op.module.rsplit(".", 1)[-1] in Path(p).stem)
        if score >= 3:
            scored.append((-score, p))
    return [p for _, p in sorted(scored)[:MAX_TEST_FILES]]


def wrappers_of(repo: Repository, files: dict[str, str], op: OpToReplay) -> list[str]:
    """Public functions and classes of the library's other modules whose code names the op (`LigerPolyNorm`
    around `LigerPolyNormFunction`): tests reach the op through them."""
    top = op.name.split(".")[0]
    lib = [p for p in files if p.endswith(".py") and role(p) == Role.LIBRARY and p != op.path]
    texts = repo.read([files[p] for p in lib])
    found = []
    for p in lib:
        text = texts.get(files[p], "")
        if not re.search(rf"\b{re.escape(top)}\b", text):
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        found += [node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))
                  and not node.name.startswith("_") and any(isinstance(n, ast.Name) and n.id == top or
                                                            isinstance(n, ast.Attribute) and n.attr == top
                                                            for n in ast.walk(node))]
    return list(dict.fromkeys(found))[:20]


def roots(files: dict[str, str], path: str, folder: Path) -> list[str]:
    """The import roots of a tree: the folder holding the op's top package (`src/`), and the tree's top."""
    depth = module_name(path, files).count(".") + 1
    package_root = Path(path).parents[depth - 1] if depth <= len(Path(path).parents) else Path(".")
    return list(dict.fromkeys([str(folder / package_root), str(folder)]))


def _run(mode: str, request: dict, work: Path, limit: float) -> tuple[int | None, str]:
    """(exit code, or None if stopped at the limit; the tail of what it printed)."""
    ask = work / f"{mode}-request.json"
    ask.write_text(json.dumps(request))
    log = work / f"{mode}.log"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    with log.open("w") as sink:
        proc = subprocess.Popen([sys.executable, str(WORKER), mode, str(ask)], stdout=sink, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env, cwd=request["rootdir"], start_new_session=True)
        try:
            code = proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
            code = None
    tail = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()][-3:]
    return code, " | ".join(tail)[-400:]


class Replayer:
    """One review's replays: each revision's whole tree materialized once; the ops recorded in one process per
    side they are recorded at, then every recorded call played in one process per revision."""

    def __init__(self, repo: Repository, base: str, head: str, device: str, limits: Limits | None = None):
        self.repo, self.device = repo, device
        self.limits = limits or (GPU_LIMITS if device == "cuda" else Limits())
        self.commits = {Side.BASE: base, Side.HEAD: head}
        self.files = {s: repo.files(c) for s, c in self.commits.items()}
        self.work = Path(tempfile.mkdtemp(prefix="kernel-ab-replay-", dir=scratch.folder()))
        self.trees: dict[Side, Path] = {}

    def close(self) -> None:
        shutil.rmtree(self.work, ignore_errors=True)

    def tree(self, side: Side) -> Path:
        if side not in self.trees:
            from variants.git_tree import materialize
            folder = self.work / side.value.lower()
            folder.mkdir()
            materialize(self.repo.top, self.commits[side], (), folder, f"{side.value} ({self.commits[side][:7]})")
            self.trees[side] = folder
        return self.trees[side]

    def replay(self, ops: list[OpToReplay]) -> list[ReplayedOp]:
        """Each of `ops` recorded from its tests and played at both revisions, in the order given."""
        found: dict[str, ReplayedOp] = {}
        for at in Side:
            group = [op for op in ops if (Side.BASE if op.only_at_base else Side.HEAD) == at]
            if group:
                found.update(self._replay_group(at, group))
        return [found[op.key] for op in ops]

    def _replay_group(self, at: Side, ops: list[OpToReplay]) -> dict[str, ReplayedOp]:
        files = self.files[at]
        tests = {op.key: tests_for(self.repo, files, op, wrappers_of(self.repo, files, op)) for op in ops}
        recording = self.work / f"recorded-at-{at.value.lower()}"
        recording.mkdir()
        wanted = [op for op in ops if tests[op.key]]
        code, tail = self._record(at, wanted, sorted({t for op in wanted for t in tests[op.key]}), recording)
        manifest = _manifest(recording)
        shared = list(_recording_notes(manifest, code, tail, self.limits))
        calls = {op.key: [c for c in manifest.get("calls", []) if c["op"] == f"{op.module}:{op.name}"] for op in ops}
        played = {side: self._play(side, [op for op in wanted if calls[op.key]], calls, recording) for side in Side} \
            if any(calls.values()) else {}
        done = {}
        for op in ops:
            notes = [*op.notes, *_own(shared, op)]
            if not tests[op.key]:
                notes.append("no test of the library names it or a wrapper of it")
            recorded = calls[op.key]
            made = dict(op=op.key, label=op.label, recorded_at=at, tests=tuple(dict.fromkeys(
                c["test"].split("::")[0] for c in recorded if c["test"])) or tuple(tests[op.key]))
            if recorded:
                notes += [n for side in Side for n in played[side][1].get(f"{op.module}:{op.name}", [])]
            done[op.key] = ReplayedOp.made(**made, calls=tuple(_compared(i, c, played) for i, c in enumerate(recorded)),
                                           notes=tuple(dict.fromkeys(notes)))
        return done

    def _request(self, side: Side, op: OpToReplay, out: Path) -> dict:
        tree = self.tree(side)
        return {"roots": roots(self.files[side], op.path, tree), "rootdir": str(tree), "out": str(out),
                "device": self.device}

    def _record(self, side: Side, ops: list[OpToReplay], tests: list[str], out: Path) -> tuple[int | None, str]:
        if not ops:
            return 0, ""
        request = {**self._request(side, ops[0], out), "ops": [{"module": op.module, "name": op.name} for op in ops],
                   "tests": tests, "calls": self.limits.calls, "per_dtypes": self.limits.per_dtypes,
                   "bytes": self.limits.bytes}
        return _run("record", request, out, self.limits.record_s)

    def _play(self, side: Side, ops: list[OpToReplay], calls: dict, recording: Path) -> tuple[Path, dict]:
        """(the folder of what each call gave at `side`, {op: notes on what the replay could not do})."""
        out = recording / f"played-{side.value.lower()}"
        out.mkdir()
        request = {**self._request(side, ops[0], out), "recording": str(recording), "seed": 0, "again": side == Side.BASE,
                   "ops": [{"module": op.module, "name": op.name, "calls": [c["file"] for c in calls[op.key]]}
                           for op in ops]}
        code, tail = _run("play", request, out, self.limits.play_s)
        try:
            unloadable = json.loads((out / "unloadable.json").read_text())
        except (OSError, ValueError):
            unloadable = {}
        notes = {key: [f"at {side.value} the op could not be loaded: {why}"] for key, why in unloadable.items()}
        if code is None or code != 0:
            said = f"ran past its {self.limits.play_s:.0f} s limit and was stopped" if code is None else \
                f"ended with exit code {code}: {tail}"
            for op in ops:
                notes.setdefault(f"{op.module}:{op.name}", []).append(f"at {side.value} the replaying process {said}")
        return out, notes


def _own(notes: list[str], op: OpToReplay) -> list[str]:
    """The recording's notes that concern `op`: its own (they start with its name) and those of no op."""
    ops_said = [n for n in notes if re.match(r"^[\w.]+:[\w.]+: ", n)]
    return [n for n in notes if n not in ops_said or n.startswith(f"{op.module}:{op.name}: ")]


def _manifest(folder: Path) -> dict:
    try:
        return json.loads((folder / "manifest.json").read_text())
    except (OSError, ValueError):
        return {}


def _recording_notes(manifest: dict, code: int | None, tail: str, limits: Limits):
    for m in manifest.get("missing", []):
        yield f"the library's tests need package {m['package']!r}, which this environment lacks" + \
            (f" (imported at {m['where']})" if m["where"] else "")
    yield from manifest.get("notes", [])
    if code is None:
        yield f"the recording ran past its {limits.record_s:.0f} s limit and was stopped (its calls kept)"
    elif code != 0:
        yield f"the recording process ended with exit code {code}: {tail}"


def _compared(index: int, call: dict, played: dict) -> ReplayedCall:
    import torch
    from compare.checks.replay_diff import compare_named
    results, failures = {}, []
    for side, (folder, _) in played.items():
        path = folder / call["file"].replace("call_", "played_")
        if not path.is_file():
            failures.append(CallFailure(side, Pass.FORWARD, "the replaying process ended before this call"))
            continue
        results[side] = torch.load(path, weights_only=False)
        if results[side]["failure"]:
            f = results[side]["failure"]
            failures.append(CallFailure(side, Pass(f["stage"]), f["error"]))
    tensors = ()
    if len(results) == 2 and not failures:
        b, h = results[Side.BASE], results[Side.HEAD]
        tensors = compare_named({**b["outputs"], **b["grads"]}, {**h["outputs"], **h["grads"]},
                                _spread(played[Side.BASE][0], call["file"], b))
    return ReplayedCall(index, call["signature"], call["test"], tensors, tuple(failures))


def _spread(folder: Path, file: str, first: dict) -> dict:
    """What the call gave when run a second time at BASE ({} where it was not, or failed)."""
    import torch
    path = folder / file.replace("call_", "again_")
    again = torch.load(path, weights_only=False) if path.is_file() else {"failure": "absent"}
    return {} if again["failure"] else {**again["outputs"], **again["grads"]}
