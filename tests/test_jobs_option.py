"""--jobs alone (or --jobs auto) starts one worker process per core this process may use, and says so; a
count over the cores is said to be slower; a word that is no count is one line, exit 2."""
import argparse
import os

import pytest

import main
from compare.command_line import distributed_options
from compare.model.errors import UsageError


def _options(*argv: str) -> distributed_options.DistributedOptions:
    parser = argparse.ArgumentParser()
    distributed_options.add_options(parser)
    return distributed_options.from_args(parser.parse_args(list(argv)))


def test_jobs_alone_or_auto_is_one_worker_per_core_of_this_process():
    cores = len(os.sched_getaffinity(0))
    for argv in (["--jobs"], ["--jobs", "auto"], ["--jobs", "AUTO"]):
        o = _options(*argv)
        assert (o.jobs, o.auto) == (cores, True)
        assert distributed_options.workers_line(o) == f"--jobs: {cores} worker process{'es' if cores > 1 else ''}, one per core here"
    assert (_options("--jobs", "3").jobs, _options().jobs) == (3, None)


def test_more_jobs_than_cores_is_said_to_share_them(monkeypatch):
    monkeypatch.setattr(distributed_options, "cores", lambda: 2)
    assert distributed_options.workers_line(_options("--jobs", "4")) == (
        "--jobs: 4 worker processes, more than the 2 cores here: they share them, which is slower than --jobs 2 "
        "(--jobs alone takes one per core)")
    assert distributed_options.workers_line(_options("--jobs", "2")) == "--jobs: 2 worker processes"


@pytest.mark.parametrize("argv, says", [
    (["--jobs", "flat"], "--jobs flat: give a worker count or auto (--jobs alone takes the next word: put it after "
                         "the variants' names)"),
    (["--jobs", "0"], "--jobs"),
])
def test_a_jobs_value_that_is_no_count_is_refused(argv, says):
    with pytest.raises(UsageError) as got:
        _options(*argv)
    assert str(got.value).startswith(says)


def test_the_command_line_takes_jobs_alone_before_another_option(capsys):
    assert main.main(["compare", "--jobs", "--dry-run", "--shape", "2,8,2,4", "--check", "numerics"]) == 0
    plan = capsys.readouterr().out
    cores = len(os.sched_getaffinity(0))
    assert f"on {cores} worker process{'es' if cores > 1 else ''} on this machine" in plan.splitlines()[0]
