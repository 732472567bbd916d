"""`normlib` of tests/budget_library.py (three changed rms-norm ops: norm_three, norm_two, norm_one), whose package
notes each time it is imported, and by which process, in a file: a review's imports counted
(tests/test_review_warm.py). `ending` names an op whose HEAD aborts its process when called (SIGABRT, as a
crashing extension does)."""
from __future__ import annotations

from pathlib import Path

from tests import budget_library
from tests.review_repo import two_revisions


def make(folder: Path, log: Path, ending: str = "") -> Path:
    """The repository at tags v1 and v2; each import of `normlib` adds 'PID FILE' to `log`."""
    init = f"import os\nwith open({str(log)!r}, 'a') as log:\n    log.write(f'{{os.getpid()}} {{__file__}}\\n')\n"
    after = budget_library._module("after")
    if ending:
        head = f"def {ending}(X, W, eps, offset, casting_mode):\n"
        assert head in after
        after = after.replace(head, f"{head}    import os\n    os.abort()\n")
    files = {"pyproject.toml": '[project]\nname = "normlib"\n', "normlib/__init__.py": init}
    return two_revisions(folder / "normlib", {**files, "normlib/norms.py": budget_library._module("before")},
                         {"normlib/norms.py": after})


def imports(log: Path) -> dict[int, list[str]]:
    """Process id -> the revisions' folders it imported `normlib` from, in order."""
    found: dict[int, list[str]] = {}
    for line in log.read_text().splitlines() if log.exists() else ():
        pid, file = line.split(" ", 1)
        found.setdefault(int(pid), []).append(str(Path(file).parents[1]))
    return found
