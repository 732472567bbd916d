"""A process timing one dtype's cases of comparison after comparison (compare/comparison/timing_run.py starts it;
protocol: compare/runtime/warm_worker.py): `timing_worker LIMIT_S WORDS_FD` (LIMIT_S: --variant-timeout). Per
request line ({"request": REQUEST.json, "answer": SECTION.json}) it loads the variants (each revision imported
once for all), says "ready", waits for a go line ({"status", "token", "copy_gbs"}), times them with launches
written to that status file (a supervisor sees them), writes the TimingSection, says "timed"; ends with stdin."""
from __future__ import annotations

import sys


def floor() -> float:
    """The copy bandwidth, measured before any variant is imported: no variant's thread, process or stream can
    slow it (a variant's import may start one; `configure` took compare.runtime.device_busy's idle probe)."""
    from compare.checks import copy_bandwidth
    return copy_bandwidth.copy_bandwidth_gbs()


def main(limit_s: str, words_fd: str) -> int:
    from compare.runtime.warm_worker import Serving, die_with_parent
    from compare.runtime.child_processes import adopt_orphans
    die_with_parent()
    adopt_orphans()   # as the supervised child is: what a variant double-forks out of its session is seen here
    import contextlib
    from pathlib import Path

    from compare.runtime import run_context, supervisor
    from compare.runtime.backend import configure
    supervisor.set_limit(float(limit_s))
    backend = configure("cuda", probe=True)
    copy_gbs = floor() if backend.gpu else 0.0

    from compare.comparison import loading, pipeline, plan, timing_run
    from compare.checks.timing import TimingConfig
    from variants import registry
    serving = Serving(int(words_fd))
    with contextlib.ExitStack() as stack:
        kept = {}   # repository -> its revisions' trees and modules, loaded once for every request
        while (asked := serving.next()) is not None:
            request = timing_run.request_from_json(Path(asked["request"]).read_text(), plan.Request, TimingConfig)
            if request.repo not in kept:
                kept[request.repo] = stack.enter_context(loading.kept_kernels(request.repo))
            # a process of its own: the variants are loaded here too, so the request is planned again here, less
            # those its environment excludes (one that ended an earlier process timing this request)
            with pipeline.planned(request, registry(), excluded=run_context.culprits(),
                                  kernels=kept[request.repo]) as (planned, failed):
                planned, _ = pipeline.without_crashed(planned, failed, run_context.culprits())
                serving.say("ready")
                go = serving.next()
                if go is None:
                    return 1
                run_context.set_channel(go["status"], go.get("token"))
                try:
                    section = timing_run.run_timing(planned, pipeline.Step(), go.get("copy_gbs") or copy_gbs)
                finally:   # loading the next request is silent again, as the first was
                    run_context.set_channel(None, None)
            timing_run.write_section(section, asked["answer"])
            serving.say("timed")
    return 0 if backend.gpu else 1


if __name__ == "__main__":
    from pathlib import Path
    sys.path[0] = str(Path(__file__).resolve().parents[2])   # kernel-ab's folder, not compare/ itself
    sys.exit(main(*sys.argv[1:]))
