"""A worker process's kept values (compare/runtime/process_keep.py): made once per key, ended at release in the
reverse order of making, and made afresh after it; a context manager entered once and exited at release."""
import contextlib

from compare.runtime import process_keep


def test_a_value_is_made_once_per_key_and_ended_last_made_first():
    made, ended = [], []
    try:
        first = process_keep.kept(("t", 1), lambda: made.append(1) or "one", ended.append)
        again = process_keep.kept(("t", 1), lambda: made.append(2) or "other", ended.append)
        process_keep.kept(("t", 2), lambda: made.append(3) or "two", ended.append)
        assert (first, again, made) == ("one", "one", [1, 3])
    finally:
        process_keep.release()
    assert ended == ["two", "one"]
    try:
        assert process_keep.kept(("t", 1), lambda: "made again") == "made again"
    finally:
        process_keep.release()


def test_a_context_manager_is_entered_once_and_exited_at_release():
    seen = []

    @contextlib.contextmanager
    def loaded():
        seen.append("enter")
        yield "plan"
        seen.append("exit")
    try:
        assert process_keep.entered("request", loaded) == process_keep.entered("request", loaded) == "plan"
        assert seen == ["enter"]
    finally:
        process_keep.release()
    assert seen == ["enter", "exit"]
