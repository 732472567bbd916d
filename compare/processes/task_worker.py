"""A persistent worker process running comparison tasks (tasks.py) one at a time: a task's JSON per line on
stdin, its answer per line on the pipe whose number it is given (compare/runtime/warm_worker.py). Variants stay
loaded between tasks. Every launch writes to the worker's status file, so task_runner.py names the variant that
ended or hung it; a fatal device error is answered, then it exits. With --timing, a timing process
(tasks.prepare), whose failures end it, as the run's would: its coordinator reads the end and the run's status."""
from __future__ import annotations

import os
import sys


def serve(answers, lines, timing: bool = False) -> int:
    from compare.runtime import supervisor
    from compare.model.errors import summarize
    from compare.model.states import Failure
    from compare.model.task_answers import CrashedVariants, TaskAnswer
    from compare.processes.tasks import Relay, Task, execute
    for line in lines:
        if not line.strip():
            continue
        task = Task.from_json(line)
        if timing:   # its coordinator reads how it ended (compare.comparison.timing_run)
            answers.write(TaskAnswer.ok(execute(task, Relay(answers))).as_json() + "\n")
            answers.flush()
            continue
        try:
            answer = TaskAnswer.ok(execute(task), tuple(supervisor.left_behind()))
        except supervisor.ContextPoisoned as exc:
            crash = CrashedVariants(tuple(exc.variant.split(", ")), exc.error, exc.what, Failure(exc.kind))
            answers.write(TaskAnswer.crashed(crash).as_json() + "\n")
            answers.flush()
            return supervisor.POISONED_EXIT
        except Exception as exc:  # noqa: BLE001 - the coordinator says it in one line and ends the run
            answer = TaskAnswer.error(f"{task.key}: {summarize(exc)}")
        answers.write(answer.as_json() + "\n")
        answers.flush()
    from compare.runtime import process_keep
    process_keep.release()   # the --variant trees it materialized go with it
    return 0


def main(*argv: str) -> int:
    """`[--timing LIMIT_S] FD`: serve the tasks on stdin, answering on the pipe FD."""
    from compare.runtime.child_processes import adopt_orphans
    timing = argv[0] == "--timing"
    if timing:
        from compare.runtime.warm_worker import die_with_parent
        die_with_parent()
    else:
        import signal
        signal.signal(signal.SIGINT, signal.SIG_DFL)   # a stop sent to the run's group ends a worker without a
                                                       # word: the run says the one line
    adopt_orphans()   # as the supervised child is: what a variant double-forks out of its session is seen here
    if timing:
        from compare.processes import tasks
        tasks.prepare(float(argv[1]))
    answers = os.fdopen(int(argv[-1]), "w", encoding="utf-8")
    if not timing:
        os.dup2(2, 1)   # a variant's prints go to stderr (a timing process's are dropped, as its output is)
    return serve(answers, sys.stdin, timing)


if __name__ == "__main__":
    from pathlib import Path
    sys.path[0] = str(Path(__file__).resolve().parents[2])   # kernel-ab's folder, not compare/ itself
    sys.exit(main(*sys.argv[1:]))
