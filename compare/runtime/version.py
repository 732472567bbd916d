"""`kernel-ab --version`: the version from the package metadata (an install) or the checkout's pyproject.toml,
and the commit: of the checkout kernel-ab runs from, or the one an installed wheel was built from (its
kernel_ab/COMMIT, written by setup.py); "commit unknown" where neither is known. Stdlib only."""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

DISTRIBUTION = "kernel-ab"
SHORT = 7   # a short commit's digits, as `git rev-parse --short` gives them in a small repository
# the folder main.py sits in: a checkout's root, or the installed package kernel_ab
TOP = Path(__file__).resolve().parents[2]


def version(top: Path = TOP) -> str:
    """A checkout's own pyproject.toml wins over the metadata: an editable install may name another tree."""
    pyproject = top / "pyproject.toml"
    if pyproject.is_file():
        found = re.search(r'^version\s*=\s*"([^"]+)"', pyproject.read_text(), re.M)
        if found:
            return found.group(1)
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "unknown"


def commit(top: Path = TOP, full: bool = False) -> str:
    """The short (`full`: whole) commit of the git checkout whose root is `top`, else the one recorded at build
    time ('' when neither: a wheel in a venv inside some repository must not report that repository's commit)."""
    built = top / "COMMIT"
    if built.is_file():
        sha = built.read_text().strip()
        return sha if full else sha[:SHORT]
    try:
        root = subprocess.run(["git", "-C", str(top), "rev-parse", "--show-toplevel"], capture_output=True,
                              text=True, timeout=10)
        if root.returncode != 0 or Path(root.stdout.strip()).resolve() != top.resolve():
            return ""
        head = subprocess.run(["git", "-C", str(top), "rev-parse", *([] if full else [f"--short={SHORT}"]), "HEAD"],
                              capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    return head.stdout.strip() if head.returncode == 0 else ""


def line(top: Path = TOP) -> str:
    sha = commit(top)
    return f"kernel-ab {version(top)} ({f'commit {sha}' if sha else 'commit unknown'})"


class VersionAction(argparse.Action):
    """--version: the line, worked out only when asked for (it runs git), then exit 0 with no command."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(line())
        parser.exit(0)
