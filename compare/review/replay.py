"""Any op, no family: a changed op's calls recorded from the library's own tests (those naming it, its
module or a public wrapper of it) at HEAD (at BASE for an op only BASE has), then each call run at both
revisions from fresh copies of the same inputs, every output, input written into and input gradient
compared (compare/checks/replay_diff.py). Each side runs in a process of its own over its own whole tree
(compare/runtime/replay_worker.py), within its share of what the review's time budget leaves (`share`)."""
from __future__ import annotations

import ast
import dataclasses
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

from compare.model.line import plural
from compare.model.replay import CallFailure, Pass, ReplayedCall, ReplayedOp, Side
from compare.review import replay_process, replay_recording
from compare.review.budget import labels
from compare.review.members import module_name
from compare.review.revisions import Repository, Role, role
from compare.model import scratch

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
    what: tuple = ()                    # compare.review.ops_changed.What: what changed in it (the review's order)


@dataclasses.dataclass(frozen=True)
class _Ran:
    code: int | None                    # None: stopped at its limit
    tail: str                           # the end of what it printed
    by_budget: bool = False             # the limit was the review's time budget's share, not the process's own
    limit_s: float = 0.0                # the limit it ran under
    left_out: tuple[replay_process.Ended, ...] = ()   # the tests that ended it, each left out of its next start
    named: bool = False                 # its last process's end is one of `left_out` (that note says it)


def replayable(found, unmapped) -> list[OpToReplay]:
    """The changed ops among `unmapped` (no family compares them) that exist at BASE: those to replay."""
    from compare.review.mapping import op_key
    left = {u.kernel for u in unmapped}
    kept = [c for c in found.ops if op_key(c) in left and c.base_op is not None]
    return [OpToReplay(op_key(c), label, c.path, c.module, c.op.name, what=c.what)
            for c, label in zip(kept, labels([(c.module, c.op.name) for c in kept]))]


def _words(op: OpToReplay) -> list[tuple[str, int]]:
    """What a test that reaches `op` names, with how strongly it points at it."""
    return [(op.name.split(".")[0], 3), (op.module, 3), (op.module.rsplit(".", 1)[-1], 1)]


def tests_for(repo: Repository, files: dict[str, str], op: OpToReplay, wrappers: dict[str, int]) -> list[str]:
    """The library's test files that reach `op`, the most pointed first: those naming it or a public wrapper
    of it (`wrappers`: name -> steps from the op; a near one points as the op's own name does, a far one less),
    more if named after its module; those pointing about as much as the most pointed one."""
    tests = [p for p in files if p.endswith(".py") and role(p) == Role.TEST and Path(p).name.startswith("test")]
    texts = repo.read([files[p] for p in tests])
    words = _words(op) + [(w, 3 if steps <= 2 else 2) for w, steps in wrappers.items()]
    scored = []
    for p in tests:
        text = texts.get(files[p], "")
        named = [weight for word, weight in words if re.search(rf"\b{re.escape(word)}\b", text)]
        # its most pointed name, not their sum: a test of whole models names many far wrappers at once
        score = max(named, default=0) + 2 * (op.module.rsplit(".", 1)[-1] in Path(p).stem)
        if score >= 3:
            scored.append((-score, -len(named), p))
    best = min(scored, default=(0,))[0]
    # the most pointed alone: a test that merely uses the op inside a model or a patch runs long for no new call
    return [p for score, _, p in sorted(scored)[:MAX_TEST_FILES] if score <= best + 1]


def wrappers_of(repo: Repository, files: dict[str, str], op: OpToReplay, depth: int = 3) -> dict[str, int]:
    """Public functions and classes of the library whose code names the op or, up to `depth` steps, a wrapper
    of it (a module class calling a function calling `GatedFunction.apply`, in the op's module or
    another), each with its steps from the op: tests reach the op through them. At most 20."""
    lib = [p for p in files if p.endswith(".py") and role(p) == Role.LIBRARY]
    texts = repo.read([files[p] for p in lib])
    trees: dict[str, ast.Module | None] = {}
    named, found = {op.name.split(".")[0]}, {}
    for steps in range(1, depth + 1):
        new = [name for p in lib for name in _naming(p, texts.get(files[p], ""), named, trees) if name not in named]
        if not new:
            break
        found.update((name, steps) for name in new if name not in found)
        named |= set(new)
    return dict(list(found.items())[:20])


def _naming(path: str, text: str, names: set[str], trees: dict) -> list[str]:
    """The public top-level functions and classes of `text` whose code names one of `names`."""
    if not any(re.search(rf"\b{re.escape(n)}\b", text) for n in names):
        return []
    if path not in trees:
        try:
            trees[path] = ast.parse(text)
        except (SyntaxError, ValueError):
            trees[path] = None
    tree = trees[path]
    return [] if tree is None else [
        node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))
        and not node.name.startswith("_") and node.name not in names
        and any(isinstance(n, ast.Name) and n.id in names or isinstance(n, ast.Attribute) and n.attr in names
                for n in ast.walk(node))]


def roots(files: dict[str, str], path: str, folder: Path) -> list[str]:
    """The import roots of a tree: the folder holding the op's top package (`src/`), and the tree's top."""
    depth = module_name(path, files).count(".") + 1
    package_root = Path(path).parents[depth - 1] if depth <= len(Path(path).parents) else Path(".")
    return list(dict.fromkeys([str(folder / package_root), str(folder)]))


class Replayer:
    """One review's replays: each revision's whole tree materialized once; the ops recorded in one process per
    side they are recorded at, then every recorded call played in one process per revision, both at once."""

    def __init__(self, repo: Repository, base: str, head: str, device: str, limits: Limits | None = None,
                 budget=None, say=None):
        self.repo, self.device, self.budget = repo, device, budget   # budget: compare.review.budget.Budget
        self.say = say or (lambda text: None)   # progress, a line each
        self.processes_left = 0
        self.limits = limits or (GPU_LIMITS if device == "cuda" else Limits())
        self.commits = {Side.BASE: base, Side.HEAD: head}
        self.files = {s: repo.files(c) for s, c in self.commits.items()}
        self.work = Path(tempfile.mkdtemp(prefix="kernel-ab-replay-", dir=scratch.folder()))
        self.trees: dict[Side, Path] = {}
        self.recordings: dict[str, Path] = {}   # op key -> the folder its calls were recorded into

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
        groups = {at: [op for op in ops if (Side.BASE if op.only_at_base else Side.HEAD) == at] for at in Side}
        # a recording, then the plays at both revisions side by side: two shares of the budget per group
        self.processes_left = 2 * sum(1 for group in groups.values() if group)
        for at, group in groups.items():
            if group:
                found.update(self._replay_group(at, group))
        return [found[op.key] for op in ops]

    def _replay_group(self, at: Side, ops: list[OpToReplay]) -> dict[str, ReplayedOp]:
        files = self.files[at]
        tests = {op.key: tests_for(self.repo, files, op, wrappers_of(self.repo, files, op)) for op in ops}
        recording = self.work / f"recorded-at-{at.value.lower()}"
        recording.mkdir()
        self.recordings.update({op.key: recording for op in ops})
        wanted = [op for op in ops if tests[op.key]]
        started, waiting = time.monotonic(), self._start_plays(wanted, recording) if wanted else {}
        try:
            ran = self._record(at, wanted, sorted({t for op in wanted for t in tests[op.key]}), recording)
            manifest = replay_process.read_json(recording / "manifest.json")
            self.say(f"recorded {plural(len(manifest.get('calls', [])), 'call')} from "
                     f"{plural(manifest.get('tests_run', 0), 'test')} "
                     f"at {at.value} in {time.monotonic() - started:.0f} s")
            calls = {op.key: [c for c in manifest.get("calls", []) if c["op"] == f"{op.module}:{op.name}"]
                     for op in ops}
            played = self._play(waiting, [op for op in wanted if calls[op.key]], calls) \
                if any(calls.values()) else {}
        finally:   # plays not needed (no call), or stopped: ended with the replay
            for _, process in waiting.values():
                if process.proc.poll() is None:
                    os.killpg(process.proc.pid, 9)
                    process.proc.wait()
        shared = [*replay_recording.left_out(manifest, ran.left_out),
                  *replay_recording.notes(manifest, ran.code, ran.tail, ran.by_budget, ran.limit_s, ran.named)]
        if not played:
            self.processes_left = max(self.processes_left - 1, 0)   # no play: its share goes to those after
        done = {}
        for op in ops:
            name = f"{op.module}:{op.name}"
            notes = [*op.notes, *replay_recording.own(shared, name)]
            recorded = calls[op.key]
            if not tests[op.key]:
                notes.append("no test of the library names it or a wrapper of it")
            elif not recorded and (why := replay_recording.no_call_why(manifest, tests[op.key])):
                notes.append(why)
            made = dict(op=op.key, label=op.label, recorded_at=at, tests=tuple(dict.fromkeys(
                c["test"].split("::")[0] for c in recorded if c["test"])) or tuple(tests[op.key]))
            if recorded:
                notes += [n for side in Side for n in played[side].notes.get(name, [])]
            compared = [_compared(i, c, played) for i, c in enumerate(recorded)]
            done[op.key] = ReplayedOp.made(**made, calls=tuple(c for c in compared if c is not None),
                                           notes=tuple(dict.fromkeys(notes)), stopped=None in compared or (
                                               ran.by_budget and op in wanted and not recorded),
                                           not_imported=replay_recording.not_imported(manifest, at, name, op.module,
                                                                                      tests[op.key]))
        return done

    def _limit(self, own: float) -> tuple[float, bool]:
        self.processes_left = max(self.processes_left - 1, 0)
        return (own, False) if self.budget is None else share(own, self.budget.left(), self.processes_left + 1)

    def _request(self, side: Side, op: OpToReplay, out: Path) -> dict:
        tree = self.tree(side)
        return {"roots": roots(self.files[side], op.path, tree), "rootdir": str(tree), "out": str(out),
                "device": self.device}

    def _record(self, side: Side, ops: list[OpToReplay], tests: list[str], out: Path) -> _Ran:
        limit, by_budget = self._limit(self.limits.record_s)
        if not ops:
            return _Ran(0, "", limit_s=limit)
        request = {**self._request(side, ops[0], out), "ops": [{"module": op.module, "name": op.name} for op in ops],
                   "tests": tests, "calls": self.limits.calls, "per_dtypes": self.limits.per_dtypes,
                   "bytes": self.limits.bytes}
        ran, left_out = replay_process.record(request, out, limit, self.limits.record_s * replay_process.HUNG_SHARE,
                                              self.say)
        named = replay_process.ended_in(ran, out / replay_process.MARKER) is not None
        return _Ran(ran.code, ran.tail, by_budget and ran.code is None and not named, limit, left_out, named)

    def _start_plays(self, ops: list[OpToReplay], recording: Path) -> dict:
        """Each revision's play process started beside the recording: it imports torch, the op's library and
        the device while the tests run, then waits for its calls (`go.json`)."""
        started = {}
        for side in Side:
            out = recording / f"played-{side.value.lower()}"
            out.mkdir()
            request = {**self._request(side, ops[0], out), "recording": str(recording), "seed": 0,
                       "again": side == Side.BASE, "go": str(out / "go.json"),
                       "ops": [{"module": op.module, "name": op.name} for op in ops]}
            started[side] = (out, replay_process.start("play", request, out))
        return started

    def _play(self, waiting: dict, ops: list[OpToReplay], calls: dict) -> dict[Side, "_Played"]:
        """What each call gave at each revision, both played at once (each side its own process: the plays
        check numbers, not time), and notes on what the replay could not do, by op."""
        limit, by_budget = self._limit(self.limits.play_s)
        started, by = time.monotonic(), time.monotonic() + limit
        files = {op.key: [c["file"] for c in calls[op.key]] for op in ops}   # the recorded files, as the play is told
        go = {"ops": [{"module": op.module, "name": op.name, "calls": files[op.key]} for op in ops]}
        for out, _ in waiting.values():
            replay_process.write_go(out, go)
        hung_s = self.limits.play_s * replay_process.HUNG_SHARE
        ended = {side: (out, replay_process.play(proc, out, go, by, hung_s)) for side, (out, proc) in waiting.items()}
        self.say(f"played them at {' and '.join(s.value for s in Side)}, side by side, in "
                 f"{time.monotonic() - started:.0f} s")
        every = {c.replace("call_", "played_") for op in ops for c in files[op.key]}
        return {side: self._played(side, ops, out, *result, by_budget, every) for side, (out, result) in ended.items()}

    def _played(self, side: Side, ops: list[OpToReplay], out: Path, ran: replay_process.Ran, culprits: dict,
                by_budget: bool, every: set) -> "_Played":
        """What `side`'s play left; a process end no call is named for (`culprits`: those named) said for every op."""
        notes: dict = {}
        code, tail = ran.code, ran.tail
        if (code is None or code != 0) and replay_process.ended_in(ran, out / replay_process.MARKER) is None:
            # an end after every call was played and kept (a thread or finalizer at exit) costs no result
            after = " after every call was played (as it exited)" if code is not None and every and all(
                (out / name).is_file() for name in every) else ""
            said = "was stopped when the review's time budget ran out" if by_budget and code is None else \
                f"ran past its {self.limits.play_s:.0f} s limit and was stopped" if code is None else \
                f"ended with exit code {code}{after}{': ' + tail if tail else ''}"
            for op in ops:
                notes.setdefault(f"{op.module}:{op.name}", []).append(f"at {side.value} the replaying process {said}")
        return _Played(out, notes, by_budget and code is None and ran.hung is None,
                       replay_recording.unloadable(out, side), culprits)


@dataclasses.dataclass(frozen=True)
class _Played:
    folder: Path                        # what each call gave at one side
    notes: dict                         # op -> what the replay could not do
    by_budget: bool = False             # the review's time budget stopped the process
    unloadable: dict = dataclasses.field(default_factory=dict)   # op -> how loading it failed there
    ended: dict = dataclasses.field(default_factory=dict)        # call file -> how it ended its process (Ended)


def share(own: float, left: float, processes: int) -> tuple[float, bool]:
    """(a process's time limit, whether the time budget set it): its `own`, or, where less, its share of the
    seconds the review's budget has `left` among the `processes` still to run (this one included)."""
    part = left / max(processes, 1)
    return (own, False) if part >= own else (max(part, 0.0), True)


def _compared(index: int, call: dict, played: dict) -> ReplayedCall | None:
    """The call at both sides; None where the time budget stopped a side before it (not a failure of either)."""
    import torch
    from compare.checks.replay_diff import compare_named
    results, failures = {}, []
    for side, ran in played.items():
        path = ran.folder / call["file"].replace("call_", "played_")
        if call["file"] in ran.ended:
            ended = ran.ended[call["file"]]
            failures.append(CallFailure(side, Pass(ended.stage or Pass.FORWARD.value), ended.how, ended_process=True))
            continue
        if not path.is_file():
            if call["op"] in ran.unloadable:
                failures.append(ran.unloadable[call["op"]])
                continue
            if ran.by_budget:
                return None
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
                                _spread(played[Side.BASE].folder, call["file"], b))
    return ReplayedCall(index, call["signature"], call["test"], tensors, tuple(failures))


def _spread(folder: Path, file: str, first: dict) -> dict:
    """What the call gave when run a second time at BASE ({} where it was not, or failed)."""
    import torch
    path = folder / file.replace("call_", "again_")
    again = torch.load(path, weights_only=False) if path.is_file() else {"failure": "absent"}
    return {} if again["failure"] else {**again["outputs"], **again["grads"]}
