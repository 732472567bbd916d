"""Where kernel-ab makes its temporary trees: in a folder of the run's own where a supervisor gave one
(SCRATCH_ENV; it empties the folder after each child process however that ended: a variant's exit, crash or
hang leaves none of them behind), else where the system keeps temporary files. Here, beneath every layer
that makes a tree (variants' git trees, the checks' and the review's folders) and the supervisor."""
from __future__ import annotations

import os

SCRATCH_ENV = "KERNEL_AB_SCRATCH"


def folder() -> str | None:
    """The run's scratch folder, or None (tempfile's default) where there is none."""
    path = os.environ.get(SCRATCH_ENV, "")
    return path if path and os.path.isdir(path) else None
