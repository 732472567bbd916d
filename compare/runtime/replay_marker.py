"""What a recording or replaying process (compare/runtime/replay_worker.py) runs now, in a file beside its output:
one that ends in a test or a call is named for it (compare/review/replay_process.py reads it)."""
from __future__ import annotations

import json
import time
from pathlib import Path

MARKER = "running.json"


def running(out: Path, what: str, stage: str = "") -> None:
    """This process runs `what` (a test's node id, a call's file; "" nothing), in its `stage` (a call's pass)."""
    marker = out / MARKER
    marker.with_suffix(".tmp").write_text(json.dumps({"what": what, "since": time.time() if what else 0,
                                                      "stage": stage}))
    marker.with_suffix(".tmp").replace(marker)
