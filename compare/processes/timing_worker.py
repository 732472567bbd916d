"""A process that times one dtype's cases (compare/comparison/timing_run.py starts it): `timing_worker
REQUEST.json SECTION.json [READY_FD [LIMIT_S]]` (LIMIT_S: the run's --variant-timeout) loads the variants
again, times them on the GPU, writes the TimingSection. With READY_FD it says "ready" there once loaded, then
times only after a line on stdin ({"status": the status file, "copy_gbs": an earlier measure or 0}); it ends
untimed if stdin ends first. Its launches write to the status file, so a supervisor sees them."""
from __future__ import annotations

import sys


def main(request_path: str, section_path: str, ready_fd: str = "", limit_s: str = "") -> int:
    import json
    import os
    from pathlib import Path

    from compare.comparison import pipeline, plan, timing_run

    from compare.runtime import supervisor
    from compare.runtime.backend import configure
    from compare.checks.timing import TimingConfig
    from variants import registry
    if limit_s:
        supervisor.set_limit(float(limit_s))
    backend = configure("cuda")
    request = timing_run.request_from_json(Path(request_path).read_text(), plan.Request, TimingConfig)
    # a process of its own: the variants are loaded again, so the request is planned again here
    with pipeline.planned(request, registry(), excluded=supervisor.excluded()) as (planned, _):
        copy_gbs = 0.0
        if ready_fd:
            with os.fdopen(int(ready_fd), "wb") as ready:
                ready.write(b"ready")
            go = sys.stdin.readline()
            if not go:
                return 1
            told = json.loads(go)
            supervisor.set_channel(told["status"], told.get("token"))
            copy_gbs = told.get("copy_gbs", 0.0)
        section = timing_run.run_timing(planned, pipeline.Step(), copy_gbs)
    timing_run.write_section(section, section_path)
    return 0 if backend.gpu else 1


if __name__ == "__main__":
    from pathlib import Path
    sys.path[0] = str(Path(__file__).resolve().parents[2])   # kernel-ab's folder, not compare/ itself
    sys.exit(main(*sys.argv[1:]))
