"""The recording and replaying processes of a review (compare/runtime/replay_worker.py), each in a session of its
own under a time limit. A library's test or recorded call that ends its process (an exit, a signal, a hang) is
that test's or call's end alone: the process is started again without it, what it did before kept, so that one
op never takes the others' calls down with it."""
from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from compare.runtime.exit_codes import signal_name
from compare.runtime.replay_play import MARKER   # the worker's: what it runs now

WORKER = Path(__file__).resolve().parents[1] / "runtime" / "replay_worker.py"
# a test or call running longer than this part of its process's own limit (Limits, not its share of a review's
# budget: a tight budget stops the process as it always did) is taken for a hang
HUNG_SHARE = 0.5
AGAIN_AT_MOST = 3   # how often a process is started again without what ended it


@dataclasses.dataclass(frozen=True)
class Ended:
    """What a process ended in: the test or the recorded call running (`what`: a pytest node id, a call's file;
    "" outside any), its pass (`stage`, a call's), and how it ended (`how`)."""

    what: str
    how: str
    stage: str = ""


@dataclasses.dataclass(frozen=True)
class Ran:
    """How a process ended: its exit code (None: stopped at its limit), the end of what it printed, and what it
    ended in, where it hung (`hung`) or ended with a non-zero code."""

    code: int | None
    tail: str
    hung: Ended | None = None


@dataclasses.dataclass(frozen=True)
class Started:
    """A recording or play process, and its log: what it printed starts at `since` (its earlier starts' before)."""

    proc: subprocess.Popen
    log: Path
    since: int = 0


def start(mode: str, request: dict, work: Path) -> Started:
    ask = work / f"{mode}-request.json"
    ask.write_text(json.dumps(request))
    log = work / f"{mode}.log"
    (work / MARKER).unlink(missing_ok=True)   # what an earlier process ended in is not this one's
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    with log.open("a") as sink:
        since = sink.tell()
        proc = subprocess.Popen([sys.executable, str(WORKER), mode, str(ask)], stdout=sink, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env, cwd=request["rootdir"], start_new_session=True)
    return Started(proc, log, since)


def finish(started: Started, by: float, marker: Path | None = None,
           hung_s: float = 0.0) -> Ran:
    """`started` once it ends, or stopped at the monotonic time `by`, or where `marker` (a JSON file the worker
    writes: {"what", "since", ...}) says one test or call has run over `hung_s`."""
    proc = started.proc
    while True:
        left = by - time.monotonic()
        try:
            code = proc.wait(timeout=max(min(left, 0.5 if marker else left), 0.0))
            return Ran(code, _tail(started))
        except subprocess.TimeoutExpired:
            pass
        running = read_json(marker)
        hung = marker is not None and running.get("since") and time.time() - running["since"] > hung_s
        if hung or left <= 0:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            ended = Ended(running["what"], f"ran past {hung_s:.0f} s and was stopped", running.get("stage", "")) \
                if hung else None
            return Ran(None, _tail(started), ended)


def read_json(path: Path | None) -> dict:
    """What a JSON file the worker writes (a marker, a manifest) holds; {} where there is none, or not yet whole."""
    try:
        return json.loads(path.read_text()) if path is not None else {}
    except (OSError, ValueError):
        return {}


def ended_in(ran: Ran, marker: Path) -> Ended | None:
    """What the process `ran` ended in, by its marker, where a test or call ended it (None: it ended well, was
    stopped at its limit, or ended outside any)."""
    if ran.hung is not None:
        return ran.hung
    running = read_json(marker)
    if ran.code in (0, None) or not running.get("what"):
        return None
    how = f"exit code {ran.code}" if ran.code > 0 else f"{signal_name(-ran.code)}"
    return Ended(running["what"], how, running.get("stage", ""))


def record(request: dict, out: Path, limit: float, hung_s: float,
           say=lambda line: None) -> tuple[Ran, tuple[Ended, ...]]:
    """The recording, started again without each test that ended it (its calls so far kept: `resume`), at most
    AGAIN_AT_MOST times within `limit` seconds in all: how its last process ended, and the tests left out."""
    if limit <= 0:
        return Ran(None, ""), ()
    by, marker, left_out = time.monotonic() + limit, out / MARKER, []
    while True:
        ran = finish(start("record", request, out), by, marker, hung_s)
        ended = ended_in(ran, marker)
        if ended is None:
            return ran, tuple(left_out)
        left_out.append(ended)
        if len(left_out) > AGAIN_AT_MOST or by - time.monotonic() < 1.0:
            return ran, tuple(left_out)
        say(f"the test {ended.what} ended the recording process ({ended.how}); recording the others again without it")
        done = read_json(out / "manifest.json").get("done", [])
        request = {**request, "resume": True, "deselect": [*done, *[e.what for e in left_out]]}


def _tail(started: Started) -> str:
    """The last lines this process printed (not an earlier start's, in the same log)."""
    with started.log.open("rb") as log:
        log.seek(started.since)
        text = log.read().decode(errors="replace")
    tail = [ln for ln in text.splitlines() if ln.strip()][-3:]
    return " | ".join(tail)[-400:]


def write_go(out: Path, go: dict) -> None:
    """Hands a play process its calls ({"ops": [{"module", "name", "calls": [file, ...]}, ...]})."""
    (out / "go.tmp").write_text(json.dumps(go))
    (out / "go.tmp").replace(out / "go.json")


def play(started: Started, out: Path, go: dict, by: float, hung_s: float) -> tuple[Ran, dict]:
    """One side's play of `go`, started again after each call that ended its process with the calls after it
    not yet played, at most AGAIN_AT_MOST times, until the monotonic time `by`: how its last process ended, and
    the calls that ended one (file -> Ended)."""
    marker, culprits = out / MARKER, {}
    while True:
        ran = finish(started, by, marker, hung_s)
        ended = ended_in(ran, marker)
        if ended is None:
            return ran, culprits
        culprits[ended.what] = ended
        rest = _after(go, ended.what, out)
        if not any(op["calls"] for op in rest["ops"]) or len(culprits) > AGAIN_AT_MOST or by - time.monotonic() < 1:
            return ran, culprits
        write_go(out, rest)
        started = start("play", json.loads((out / "play-request.json").read_text()), out)


def _after(go: dict, culprit: str, out: Path) -> dict:
    """`go` less `culprit`, the calls before it and every call already played."""
    files = [f for op in go["ops"] for f in op["calls"]]
    after = set(files[files.index(culprit) + 1:] if culprit in files else files)
    left = {f for f in after if not (out / f.replace("call_", "played_")).is_file()}
    return {"ops": [{**op, "calls": [f for f in op["calls"] if f in left]} for op in go["ops"]]}
