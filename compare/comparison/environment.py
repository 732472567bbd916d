"""Provenance: what machine, software and command a report came from."""
from __future__ import annotations

import datetime
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path

from compare.runtime.backend import Backend
from compare.runtime.version import version
from compare.model.results import Environment

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def git_state(path: Path = PROJECT_ROOT) -> tuple[str, bool]:
    """(commit, dirty) of the git checkout at `path`. A copy of the tree (as sent to a GPU machine) is told
    its commit by KERNEL_AB_GIT_COMMIT (and KERNEL_AB_GIT_DIRTY=1), which wins over whatever .git the copy
    carries: such a copy may hold a stale .git from another commit. Else ("", False)."""
    commit = os.environ.get("KERNEL_AB_GIT_COMMIT", "")
    if commit:
        return commit, os.environ.get("KERNEL_AB_GIT_DIRTY") == "1"
    if (path / "COMMIT").is_file():   # an installed wheel: the commit it was built from (setup.py), never the
        from compare.runtime.version import commit as built   # commit of a repository the venv lies in
        return built(path, full=True), False
    try:
        head = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=10)
        if head.returncode == 0:
            status = subprocess.run(["git", "-C", str(path), "status", "--porcelain", "--untracked-files=no"],
                                    capture_output=True, text=True, timeout=10).stdout.strip()
            return head.stdout.strip(), bool(status)
    except (OSError, subprocess.SubprocessError):
        pass
    return "", False


def _nvidia_smi(query: str) -> str:
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else ""


def _as_typed(argv: list[str]) -> list[str]:
    """The command as the user typed it: `kernel-ab ...` for the console command, else `python main.py ...`."""
    if argv and os.path.basename(argv[0]) == "kernel-ab":
        return ["kernel-ab", *argv[1:]]
    return ["python", *argv]


def collect(backend: Backend, argv: list[str] | None = None) -> Environment:
    import torch
    import triton
    commit, dirty = git_state()
    gpu_name, count, driver, cuda, clocks = "", 0, "", "", ""
    if backend.gpu:
        gpu_name = torch.cuda.get_device_name()
        count = torch.cuda.device_count()
        cuda = torch.version.cuda or ""
        driver = _nvidia_smi("driver_version")
        clocks = _nvidia_smi("clocks.sm,clocks.max.sm,clocks.mem")
        if clocks:
            clocks = "sm, max sm, mem: " + clocks
    argv = sys.argv if argv is None else argv
    return Environment(
        device=backend.device if backend.gpu else "cpu (Triton interpreter)",
        gpu_name=gpu_name, gpu_count=count, driver=driver, cuda=cuda,
        torch=torch.__version__, triton=triton.__version__, python=platform.python_version(),
        platform=platform.platform(), clocks=clocks, git_commit=commit, git_dirty=dirty,
        command=" ".join(shlex.quote(a) for a in _as_typed(argv)),
        time_utc=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        kernel_ab_version=version(),
    )
