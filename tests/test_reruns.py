"""Run again without the culprit (compare/model/reruns.py): the one loop the supervisor, a distributed run and a
dtype's timing processes leave out what ended a run by."""
from compare.model.reruns import MAX_RERUNS, Blamed, Culprit, Ending, Ran, run_excluding


def _blaming(crashing: list[str]):
    """An attempt that `crashing[i]` ends while it runs with i culprits left out, and that otherwise reports
    whom it ran without; and the list of what each run was without."""
    seen: list[tuple[str, ...]] = []

    def attempt(culprits: tuple[Culprit, ...]):
        without = tuple(c.name for c in culprits)
        seen.append(without)
        if len(culprits) < len(crashing):
            name = crashing[len(culprits)]
            return Blamed(Culprit(name, f"crashed run {len(culprits) + 1}"), name, f"gave up on {name}")
        return Ran(f"report without {', '.join(without) or 'none'}")
    return attempt, seen


def test_a_culprit_is_left_out_and_the_run_done_again():
    attempt, seen = _blaming(["bad"])
    reruns = run_excluding(attempt)
    assert reruns.ending is Ending.RAN and reruns.result == "report without bad"
    assert seen == [(), ("bad",)]
    assert reruns.culprits == (Culprit("bad", "crashed run 1"),) and reruns.last is None


def test_a_run_with_nothing_to_blame_runs_once():
    attempt, seen = _blaming([])
    assert run_excluding(attempt).result == "report without none" and seen == [()]


def test_runs_naming_new_culprits_stop_after_max_reruns():
    names = [f"v{i}" for i in range(MAX_RERUNS + 5)]
    attempt, seen = _blaming(names)
    reruns = run_excluding(attempt)
    assert len(seen) == MAX_RERUNS + 1   # the first run and one rerun per culprit left out
    assert reruns.ending is Ending.TOO_MANY
    assert [c.name for c in reruns.culprits] == names[:MAX_RERUNS]
    assert reruns.last == Culprit(names[MAX_RERUNS], f"crashed run {MAX_RERUNS + 1}")
    assert reruns.result == f"gave up on {names[MAX_RERUNS]}"   # the last run's `otherwise`


def test_the_limit_is_the_callers():
    attempt, seen = _blaming(["a", "b", "c", "d"])
    reruns = run_excluding(attempt, max_reruns=3)
    assert reruns.ending is Ending.TOO_MANY and len(seen) == 4 and reruns.last.name == "d"
    attempt, seen = _blaming(["a", "b", "c"])
    assert run_excluding(attempt, max_reruns=3).result == "report without a, b, c"


def test_a_culprit_named_again_ends_the_reruns():
    attempt, seen = _blaming(["a", "b", "a", "c"])
    reruns = run_excluding(attempt)
    assert reruns.ending is Ending.NAMED_AGAIN
    assert seen == [(), ("a",), ("a", "b")]   # no run without "a" twice
    assert [c.name for c in reruns.culprits] == ["a", "b"] and reruns.last.name == "a"
    assert reruns.result == "gave up on a"
