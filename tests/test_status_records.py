"""The run's status file read back (compare/runtime/status_records.py): the launch a process ended in is the one
whose record says the error that ended it, else its last launch record; records without the run's token (a
variant's forgeries) count for nothing, and a byte offset reads only what came after it."""
import json

from compare.runtime import status_records


def _file(tmp_path, records: list[dict]):
    path = tmp_path / "status"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def test_a_forged_record_counts_for_nothing_and_an_error_says_who_ended_the_process(tmp_path):
    path = _file(tmp_path, [{"variants": ["a", "b"], "what": "rounds", "token": "t"},
                            {"variants": ["b"], "what": "capture", "token": "t"},
                            {"variants": ["a"], "what": "forged"}])
    assert status_records.last_launch(status_records.read(path, "t")) == status_records.Launch(("b",), "capture")
    assert status_records.last_launch(status_records.read(path)).names == ("a",)   # no token: every record counts
    path = _file(tmp_path, [{"variants": ["b"], "what": "warm-up", "error": "poisoned the CUDA context (x)",
                             "failure": "", "token": "t"},
                            {"variants": [], "what": "", "token": "t"}])   # its launch closed as the error unwound
    assert status_records.last_launch(status_records.read(path, "t")) == status_records.Launch(
        ("b",), "warm-up", "poisoned the CUDA context (x)")


def test_records_are_read_from_an_offset_and_a_process_that_wrote_none_names_nobody(tmp_path):
    first = json.dumps({"variants": ["a"], "what": "before", "token": "t"}) + "\n"
    path = _file(tmp_path, [{"variants": ["a"], "what": "before", "token": "t"},
                            {"variants": ["c"], "what": "after", "token": "t"}])
    assert status_records.last_launch(status_records.read(path, "t", since=len(first))).names == ("c",)
    assert status_records.last_launch(status_records.read(path, "t", since=len(first) * 2 + 40)) is None
    assert status_records.read(str(tmp_path / "none"), "t") == []
