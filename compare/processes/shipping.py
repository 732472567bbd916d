"""The --variant sources a Dask worker needs, shipped with the tasks (a cluster's workers are not
assumed to hold the repository): what a git revision's file needs (variants/git_tree.py), a file's package.
On the worker the trees are unpacked once; a revision's tree becomes a one-commit repository of the
same files, so the variant loads exactly as a git: spec loads here (variants/external.py)."""
from __future__ import annotations

import dataclasses
import io
import json
import os
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import NamedTuple

from compare.model.errors import UsageError
from compare.model import scratch

MAX_BYTES = 64 << 20


def _git(repo, *args: str, check: bool = False) -> subprocess.CompletedProcess:
    env = {**os.environ, "GIT_AUTHOR_NAME": "kernel-ab", "GIT_AUTHOR_EMAIL": "kernel-ab@localhost",
           "GIT_COMMITTER_NAME": "kernel-ab", "GIT_COMMITTER_EMAIL": "kernel-ab@localhost"}   # its commits'
    return subprocess.run(["git", "-C", str(repo), *args], env=env, capture_output=True, check=check)


def _tar_of(folder: Path, only: Path | None = None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(str(only or folder), arcname=str((only or folder).relative_to(folder)),
                filter=lambda info: None if "__pycache__" in info.name or "/." in f"/{info.name}" else info)
    return buf.getvalue()


def bundle(request_text: str) -> dict:
    """{"request": the request JSON, "trees": [(spec as the JSON holds it, "git"/"file", tar bytes, relative path)]}."""
    from variants.git_tree import TreeError, needed_paths
    from variants.isolation import _package_root
    from variants.spec import of
    request = json.loads(request_text)
    trees = []
    for given in request["external"]:
        spec = of(given)
        if spec.rev is not None:
            top = _git(request["repo"], "rev-parse", "--show-toplevel").stdout.decode().strip()
            commit = _git(top, "rev-parse", "--verify", f"{spec.rev}^{{commit}}").stdout.decode().strip()
            try:
                paths = needed_paths(Path(top), commit, spec.path, spec.rev)
            except TreeError as exc:
                raise UsageError(f"--variant {spec.name}: {exc}") from None
            data = _git(top, "archive", "--format=tar.gz", commit, "--", *paths).stdout
            trees.append((given, "git", data, spec.path))
        else:
            file = Path(spec.path).resolve()
            root, module = _package_root(file)
            package = root / module.split(".")[0] if "." in module else file
            data = _tar_of(root, package)
            trees.append((given, "file", data, str(file.relative_to(root))))
        if sum(len(t[2]) for t in trees) > MAX_BYTES:
            raise UsageError(f"--variant {spec.name}: its sources are over {MAX_BYTES >> 20} MB, too much to ship "
                             "to the cluster's workers; use --jobs on this machine")
    return {"request": request_text, "trees": trees}


def unpacked(sources: dict, key: str) -> str:
    """On the worker: the request JSON whose specs load the shipped trees (unpacked once per `key`, removed
    when the worker ends: compare/runtime/process_keep.py)."""
    from compare.runtime import process_keep
    return process_keep.kept(("shipped", key), lambda: _unpacked_once(sources), _remove).request


class _Shipped(NamedTuple):
    home: Path      # the folder the trees are unpacked into
    request: str    # the request JSON whose specs load them


def _unpacked_once(sources: dict) -> _Shipped:
    home = Path(tempfile.mkdtemp(prefix="kernel-ab-shipped-", dir=scratch.folder()))
    try:
        return _Shipped(home, _unpack(sources, home))
    except BaseException:
        _remove(_Shipped(home, ""))
        raise


def _unpack(sources: dict, home: Path) -> str:
    """The request JSON whose specs load `sources`' trees, unpacked into `home`."""
    from variants.spec import Spec, of
    request = json.loads(sources["request"])
    specs = []
    for n, (given, kind, data, rel) in enumerate(sources["trees"]):
        dest = home / str(n)
        dest.mkdir()
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            tar.extractall(dest, filter="data") if hasattr(tarfile, "data_filter") else tar.extractall(dest)
        spec = of(given)
        if kind == "git":   # one repository holds every shipped revision, one commit each
            repo = home / "repo"
            if not repo.is_dir():
                repo.mkdir()
                _git(repo, "init", "-q", check=True)
            _git(repo, f"--work-tree={dest}", "add", "-A", check=True)
            _git(repo, f"--work-tree={dest}", "commit", "-q", "--allow-empty", "--no-verify", "-m", "shipped",
                 check=True)
            commit = _git(repo, "rev-parse", "HEAD").stdout.decode().strip()
            specs.append(Spec.made(spec.name, rel, spec.function, commit, spec.call))
            request["repo"] = str(repo)
        else:
            specs.append(Spec.made(spec.name, str(dest / rel), spec.function, None, spec.call))
    request["external"] = [dataclasses.asdict(s) for s in specs]
    return json.dumps(request)


def _remove(shipped: _Shipped) -> None:
    import shutil
    shutil.rmtree(shipped.home, ignore_errors=True)
