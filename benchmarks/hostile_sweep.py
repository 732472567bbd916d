"""The hostile sweep: hundreds of real `python3 main.py ...` invocations that try to break kernel-ab, each
judged against what it must do (benchmarks/hostile_cases.py) and classified (hostile_classify.py); how to
run it: benchmarks/README.md. Each case runs in a process group, scratch folder and TMPDIR of its own; a
marker in its environment finds every process it left. Exit 0 only when every case met its expectation."""
from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import hostile_cases as hc  # noqa: E402
from benchmarks import hostile_variants as hv  # noqa: E402
from benchmarks.hostile_classify import classify, primary  # noqa: E402
from benchmarks.hostile_report import write_reports  # noqa: E402

MARKER = "KERNEL_AB_SWEEP_CASE"
# the tool's own variables: a case must start as a user's command does, under the supervisor
TOOL_ENV = ("KERNEL_AB_ISOLATE", "KERNEL_AB_STATUS_FILE", "KERNEL_AB_RUN_TOKEN", "KERNEL_AB_EXCLUDED",
            "KERNEL_AB_NO_TIMING", "KERNEL_AB_PROG")
# a registered forward kernel per family: which of the launcher's parameters are tl.constexpr
REFERENCE_KERNELS = {"group_norm": "variants.group_norm.pointer_mutation:group_norm_forward",
                     "layer_norm": "variants.layer_norm.forward:layer_norm_forward",
                     "rms_norm": "variants.rms_norm.pointer_mutation:rms_norm_forward"}
_RUNNING: set[int] = set()      # process groups of the cases running now (killed if the sweep is stopped)
_LOCK = threading.Lock()


def tool_features() -> frozenset:
    """The flags `main.py compare --help` lists (a hostile case adds --variant-timeout where it exists)."""
    r = subprocess.run([sys.executable, "main.py", "compare", "--help"], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    return frozenset(re.findall(r"(--[a-z][a-z0-9-]+)", r.stdout))


def kernel_params() -> dict[str, list[tuple[str, bool]]]:
    """Each family's forward-kernel parameters (name, is constexpr), read in a process of their own."""
    code = ("import importlib, inspect, json\nout = {}\nfor family, ref in %r.items():\n"
            "    mod, name = ref.split(':')\n    k = getattr(importlib.import_module(mod), name)\n"
            "    sig = inspect.signature(getattr(k, 'fn', k)).parameters.values()\n"
            "    const = {p.name for p in sig if 'constexpr' in str(p.annotation)}\n"
            "    names = importlib.import_module('variants.' + family).FORWARD_PARAMS\n"
            "    out[family] = [(n, n in const) for n in names]\nprint(json.dumps(out))\n") % REFERENCE_KERNELS
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    if r.returncode:
        raise RuntimeError(f"reading the forward kernels' parameters failed: {r.stderr.strip()[-300:]}")
    return {f: [tuple(p) for p in ps] for f, ps in json.loads(r.stdout).items()}


def make_fixture(folder: Path) -> str:
    """A real kernel-ab report (report.json, report.md) for the cases that overwrite the tool's own
    files; returns an error text, or '' when it is there."""
    argv = hc.quick() + ["--out", str(folder)]
    r = subprocess.run([sys.executable, "main.py", *argv], cwd=ROOT, capture_output=True, text=True, timeout=300)
    if r.returncode or not (folder / "report.json").is_file() or not (folder / "report.md").is_file():
        return f"`main.py {shlex.join(argv)}` exited {r.returncode}: {r.stderr.strip()[-300:]}"
    return ""


def make_files(case: hc.Case, scratch: Path, fixture: Path, params: dict) -> None:
    for rel, spec in case.files.items():
        path = scratch / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        kind = spec[0]
        if kind == "text":
            path.write_text(spec[1])
        elif kind == "symlink":
            os.symlink(spec[1], path)
        elif kind == "fixture":
            if not (fixture / spec[1]).is_file():
                raise RuntimeError(f"no fixture {spec[1]} (the tool's own report could not be made)")
            shutil.copyfile(fixture / spec[1], path)
        elif kind == "op":
            family, act, place, statement, when, returns = spec[1:] + ["", "before", "y"][len(spec) - 4:]
            path.write_text(hv.op_source(family, act, place, statement=statement, when=when, returns=returns))
        elif kind == "kernel":
            path.write_text(hv.kernel_source(spec[1], spec[2], params[spec[1]]))
        else:
            raise ValueError(f"unknown file kind {kind!r}")


def _fingerprint(path: Path) -> dict | None:
    if not os.path.lexists(path):
        return None
    if path.is_dir():
        return {"listing": sorted(str(p.relative_to(path)) for p in path.rglob("*"))}
    st = path.stat()
    return {"sha256": hashlib.sha256(path.read_bytes()).hexdigest(), "inode": st.st_ino, "size": st.st_size}


def _tree(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")} if folder.exists() else set()


def _marked_processes(marker: str) -> list[tuple[int, str]]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if f"{MARKER}={marker}".encode() in (proc / "environ").read_bytes().split(b"\0"):
                cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
                found.append((int(proc.name), cmd[:200]))
        except OSError:
            continue
    return found


def _orphans(marker: str, grace: float = 3.0) -> list[str]:
    """Processes of the case still alive `grace` seconds after it ended; each is then killed."""
    deadline = time.monotonic() + grace
    while True:
        left = _marked_processes(marker)
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    for pid, _ in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return [f"pid {pid}: {cmd}" for pid, cmd in left]


def _report_file(path: Path) -> tuple[dict | None, str]:
    if not path.exists():
        return None, "missing"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        return None, f"not JSON ({exc})"
    if not isinstance(data, dict) or "schema_version" not in data:
        return None, "not a kernel-ab report (no schema_version)"
    return data, ""


def _written_state(path: Path, before: dict | None) -> dict:
    if not path.is_file():
        return {"exists": False}
    after = _fingerprint(path)
    state = {"exists": True, "unchanged": before is not None and after["sha256"] == before.get("sha256"),
             "new_inode": before is None or after["inode"] != before.get("inode")}
    text = path.read_text(errors="replace")
    if path.suffix == ".json":
        data, why = _report_file(path)
        state.update(valid=data is not None, why=why)
    else:
        state.update(valid="kernel-ab" in text[:200] and hc.PRECIOUS not in text, why="no kernel-ab heading")
    return state


def _leftovers(case: hc.Case, scratch: Path, tmp: Path, before: set[str]) -> list[str]:
    left = [f"$TMPDIR/{p}" for p in sorted(_tree(tmp))]
    new = sorted(_tree(scratch) - before - {"tmp"} - {p for p in _tree(scratch) if p.startswith("tmp/")})
    if case.expect in ("usage_error", "refused"):
        return left + new   # a refusal makes nothing
    temp_like = re.compile(r"(^|/)\.|\.tmp|~$|\.partial$|kernel-ab-")
    return left + [p for p in new if temp_like.search(p)]


def _drive(proc: subprocess.Popen, case: hc.Case, start: float, outcome: dict) -> None:
    """Limit the case's memory, send its signal, and wait for it to end, killing its group after its
    timeout; notes in `outcome` whether it timed out or ended before the signal."""
    if case.memory_gib:
        limit = int(case.memory_gib * 2**30)
        resource.prlimit(proc.pid, resource.RLIMIT_AS, (limit, limit))
    clock = start
    if case.signal:
        name, target, delay = case.signal
        time.sleep(max(0.0, start + delay - time.monotonic()))
        if proc.poll() is None:
            (os.killpg if target == "group" else os.kill)(proc.pid, hc.signal_number(name))
            clock = time.monotonic()   # a signalled run has `timeout` seconds from the signal to end
        else:
            outcome["note"] = f"ended before the {name} at {delay} s"
    try:
        proc.wait(timeout=max(1.0, case.timeout - (time.monotonic() - clock)))
        outcome["timed_out"] = False
    except subprocess.TimeoutExpired:
        outcome["timed_out"] = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.wait()


def _changed(case: hc.Case, scratch: Path, watched: dict) -> dict[str, str]:
    """How each protected file differs from its fingerprint before the run (same bytes count as unchanged)."""
    changed = {}
    for rel in case.protect:
        after = _fingerprint(scratch / rel)
        if after != watched[rel] and not (after and watched[rel] and after.get("sha256") == watched[rel].get("sha256")):
            changed[rel] = "removed" if after is None else "bytes changed" if "sha256" in after else "contents changed"
    return changed


def run_case(index: int, case: hc.Case, scratch_root: Path, fixture: Path, params: dict, token: str) -> dict:
    """Run one case for real and gather what it did (the facts classify() judges)."""
    scratch = scratch_root / f"{index:03d}"
    tmp = scratch / "tmp"
    tmp.mkdir(parents=True)
    # the case runs in its scratch folder, so that what it writes where it stands (`--out ''`) lands there,
    # not in the repository; main.py there links to the repository's (Python puts its real folder on sys.path)
    os.symlink(ROOT / "main.py", scratch / "main.py")
    outcome: dict = {"index": index}
    try:
        make_files(case, scratch, fixture, params)
    except Exception as exc:  # noqa: BLE001 - one case's setup must not stop the sweep
        return {**outcome, "setup_error": f"{type(exc).__name__}: {exc}"}
    argv = [a.replace("{s}", str(scratch)) for a in case.argv]
    watched = {p: _fingerprint(scratch / p) for p in case.protect + case.written}
    tree_before = _tree(scratch)
    marker = f"{token}-{index}"
    env = {k: v for k, v in os.environ.items() if k not in TOOL_ENV}
    env.update({"TMPDIR": str(tmp), MARKER: marker})
    out_path, err_path = scratch_root / f"{index:03d}.stdout", scratch_root / f"{index:03d}.stderr"
    start = time.monotonic()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen([sys.executable, "main.py", *argv], cwd=scratch, env=env, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=err, preexec_fn=os.setsid)
        with _LOCK:
            _RUNNING.add(proc.pid)
        try:
            _drive(proc, case, start, outcome)
        finally:
            with _LOCK:
                _RUNNING.discard(proc.pid)
    outcome.update(rc=proc.returncode, seconds=round(time.monotonic() - start, 2),
                   command=f"cd {shlex.quote(str(scratch))} && python3 main.py {shlex.join(argv)}")
    # after a hang the group was killed: what is still alive had left the case's process group
    outcome["orphans"] = _orphans(marker, grace=0.5 if outcome["timed_out"] else 3.0)
    outcome["stdout"] = out_path.read_text(errors="replace")[:4000]
    outcome["stderr"] = err_path.read_text(errors="replace")[:20000]
    outcome["leftovers"] = _leftovers(case, scratch, tmp, tree_before)
    outcome["changed"] = _changed(case, scratch, watched)
    outcome["written"] = {rel: _written_state(scratch / rel, watched[rel]) for rel in case.written}
    if case.expect in ("report", "signal"):
        outcome["report"], outcome["report_error"] = _report_file(scratch / "report.json")
    return outcome


def _describe(index: int, case: hc.Case) -> str:
    extra = f"   [{case.signal[0]} to the {case.signal[1]} at {case.signal[2]} s]" if case.signal else ""
    return f"{index:03d} {case.id}\n    python3 main.py {shlex.join(case.argv)}{extra}"


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    p.add_argument("--list", action="store_true", help="print the invocations without running them")
    p.add_argument("--only", action="append", choices=hc.CATEGORIES, help="run only this category (repeatable)")
    p.add_argument("--match", help="run only the cases whose id this regular expression matches")
    p.add_argument("--limit", type=int, help="run at most this many cases (after --only/--match)")
    p.add_argument("--jobs", type=int, default=2, help="cases run at once (default 2)")
    p.add_argument("--report-dir", type=Path, default=ROOT / "reports" / "hostile_sweep",
                   help="where sweep.md and sweep.json go (default reports/hostile_sweep)")
    p.add_argument("--keep", action="store_true", help="keep the scratch folders (their path is printed)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    features = tool_features()
    cases = list(enumerate(hc.all_cases(features)))
    chosen = [(i, c) for i, c in cases if (not args.only or c.category in args.only)
              and (not args.match or re.search(args.match, c.id))][:args.limit]
    if args.list:
        print("\n".join(_describe(i, c) for i, c in chosen))
        print(f"{len(chosen)} of {len(cases)} invocations")
        return 0
    scratch_root = Path(tempfile.mkdtemp(prefix="hostile-sweep-"))   # not kernel-ab-*: tests look for those
    fixture = scratch_root / "fixture"
    fixture_error = make_fixture(fixture) if any(s[0] == "fixture" for _, c in chosen for s in c.files.values()) else ""
    params = kernel_params() if any(s[0] == "kernel" for _, c in chosen for s in c.files.values()) else {}
    token = f"{os.getpid()}-{int(time.time())}"
    results = []
    started = time.monotonic()
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futures = {pool.submit(run_case, i, c, scratch_root, fixture, params, token): (i, c) for i, c in chosen}
            for n, future in enumerate(concurrent.futures.as_completed(futures), 1):
                i, case = futures[future]
                outcome = future.result()
                if fixture_error and any(s[0] == "fixture" for s in case.files.values()):
                    outcome["setup_error"] = outcome.get("setup_error") or fixture_error
                problems = classify(case, outcome)
                results.append((i, case, outcome, problems))
                print(f"[{n}/{len(chosen)}] {primary(problems):14} {outcome.get('seconds', 0):6.1f} s  {case.id}",
                      flush=True)
    finally:
        with _LOCK:
            for pgid in list(_RUNNING):
                try:
                    os.killpg(pgid, signal.SIGKILL)
                except OSError:
                    pass
        if args.keep:
            print(f"scratch folders kept in {scratch_root}")
        else:
            shutil.rmtree(scratch_root, ignore_errors=True)
    results.sort(key=lambda r: r[0])
    partial = len(chosen) < len(cases)
    md, js = write_reports(args.report_dir, results, features, len(cases), partial, time.monotonic() - started,
                           ["python3", "benchmarks/hostile_sweep.py", *(sys.argv[1:] if argv is None else argv)])
    bad = sum(primary(p) != "ok" for *_, p in results)
    print(f"{len(results) - bad} of {len(results)} cases ok; wrote {md} and {js}")
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
