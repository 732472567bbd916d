"""What the process that started this one told it at the start (the run's context, read at the process
boundary): where it writes its status records and the token they carry, the variants to report as failed
and not run, why timing is left out, when the command's first run started. A supervisor, a task runner and a
timing process set these in the environment of the process they start; read here, and nowhere else."""
from __future__ import annotations

import json
import os
from typing import NamedTuple

from compare.model.reruns import Culprit

STATUS_ENV = "KERNEL_AB_STATUS_FILE"     # set in the child: where it says what it is running
TOKEN_ENV = "KERNEL_AB_RUN_TOKEN"        # set in the child: the run's token, which every record it writes carries
EXCLUDED_ENV = "KERNEL_AB_EXCLUDED"      # set in the child: [[variant, reason, kind], ...] to report as failed
NO_TIMING_ENV = "KERNEL_AB_NO_TIMING"    # set in the child: why timing is left out
STARTED_ENV = "KERNEL_AB_STARTED"        # set in the child: when the supervisor started the first run (time.time())

# where this process writes its records and the token they carry: read once from the environment, then
# dropped from it, so that no variant redirects the records or reads the token there (`channel`)
_CHANNEL: dict[str, str | None] = {}


def set_channel(status: str | None, token: str | None) -> None:
    """Where this process writes its records from now on (a timing process, told once it has loaded)."""
    _CHANNEL.update(status=status or None, token=token or None)


def supervised() -> bool:
    """Whether a supervisor (or a task runner) reads this process's records."""
    return bool(channel().status)


class Channel(NamedTuple):
    """Where this process writes its records ("": nowhere, unsupervised) and the token they carry."""

    status: str
    token: str


def channel() -> Channel:
    """This process's status file and token, for a process it hands them to (out of os.environ from the first call)."""
    if not _CHANNEL:
        _CHANNEL.update(status=os.environ.pop(STATUS_ENV, None), token=os.environ.pop(TOKEN_ENV, None))
    return Channel(_CHANNEL["status"] or "", _CHANNEL["token"] or "")


def culprits() -> list[Culprit]:
    """The variants a supervisor asked this child to report as failed, not run, each with why and the failure
    kind it gave ("" a crash)."""
    try:
        return [Culprit(str(e[0]), str(e[1]), str(e[2]) if len(e) > 2 else "")
                for e in json.loads(os.environ.get(EXCLUDED_ENV) or "[]")]
    except (ValueError, TypeError, IndexError):
        return []


def run_started() -> float | None:
    """When the supervisor started this command's first run (a rerun keeps the first's clock); None unsupervised."""
    try:
        return float(os.environ[STARTED_ENV])
    except (KeyError, ValueError):
        return None


def timing_left_out() -> str:
    return os.environ.get(NO_TIMING_ENV, "")
