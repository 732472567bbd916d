"""What kernel-ab waits on outside itself has a time limit (variants/waiting.py): a --family-path package whose
import blocks is one line and exit 2, soon (a --variant file's: that variant failed, within --variant-timeout);
`report` and `pairwise` refuse a FIFO or a device at once. An output written at the end never replaces a file
that appeared at its path, or changed, during the run (compare/command_line/output_files.py): the report is kept beside it,
the line says where, exit 74."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import main
from compare.command_line import output_files as files
from compare.render import json_report
from compare.runtime.exit_codes import ExitCode
from tests.fixed_report import fixed_report

ROOT = Path(__file__).resolve().parent.parent


def _run(*argv: str, cwd: Path, limit: str = "1") -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KERNEL_AB_WAIT_LIMIT": limit}
    return subprocess.run([sys.executable, str(ROOT / "main.py"), *argv], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=120)


def test_a_family_package_whose_import_blocks_is_one_line_within_the_limit(tmp_path):
    (tmp_path / "fams" / "blocky").mkdir(parents=True)
    (tmp_path / "fams" / "blocky" / "__init__.py").write_text("import time\ntime.sleep(600)\n")
    started = time.monotonic()
    r = _run("list", "--family-path", str(tmp_path / "fams"), cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == "", r.stderr
    assert r.stderr.splitlines() == [
        f"kernel-ab: error: the import of family package blocky (--family-path {tmp_path / 'fams'}) did not finish "
        "within 1 s (does its module code wait on something: a lock, input, the network?); KERNEL_AB_WAIT_LIMIT=SECONDS"
        " gives it longer"]
    assert time.monotonic() - started < 60


@pytest.mark.parametrize("command", [("report",), ("pairwise", "b", "a")])
def test_report_and_pairwise_refuse_a_fifo_at_once(tmp_path, command):
    """Refused before it is opened (no wait on a writer that never comes): one line, exit 2."""
    fifo = tmp_path / "report.json"
    os.mkfifo(fifo)
    r = _run(command[0], str(fifo), *command[1:], cwd=tmp_path, limit="600")   # no limit reached: none waited on
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.splitlines() == [f"kernel-ab: error: {fifo} is not a regular file (a FIFO, a device or a "
                                     "socket); give a report.json"]


def test_report_and_pairwise_refuse_a_device(capsys):
    for argv in (["report", os.devnull], ["pairwise", os.devnull, "b", "a"]):
        assert main.main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [f"kernel-ab: error: {os.devnull} is not a regular file (a FIFO, a device or a socket); "
                       "give a report.json"]


def test_a_file_that_appears_at_an_output_path_during_the_run_is_left_as_it_is(tmp_path):
    report = fixed_report()
    appeared, changed = tmp_path / "r.json", tmp_path / "out" / "report.md"
    changed.parent.mkdir()
    changed.write_text(files.comment(report, tmp_path / "x.json"))   # kernel-ab's, from an earlier run
    files.note_start(appeared)
    files.note_start(changed)
    appeared.write_text("mine\n")   # the user's, made while the run goes
    changed.write_text("edited\n")
    lines, failed = files.write(report, json_path=appeared, markdown_path=changed)
    assert failed == 2 and appeared.read_text() == "mine\n" and changed.read_text() == "edited\n"
    assert lines == [f"kernel-ab: error: {appeared} appeared or changed during the run; kernel-ab does not write "
                     f"over it; this file is {appeared}.kernel-ab-1 instead",
                     f"kernel-ab: error: {changed} appeared or changed during the run; kernel-ab does not write "
                     f"over it; this file is {changed}.kernel-ab-1 instead"]
    assert json_report.load(Path(f"{appeared}.kernel-ab-1").read_text()) == report
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []   # no temporary file left


def test_a_command_that_begins_forgets_what_the_last_one_saw_at_its_outputs(tmp_path):
    """In one process (a test's, or a program calling main.main twice) what the first command saw at a path is
    no rule for the next: a file changed between the two is replaced by the next one's write as it is."""
    from compare.runtime import written
    path = tmp_path / "r.json"
    path.write_text("an earlier report\n")
    written.start()
    files.note_start(path)   # the first command's check
    written.start()          # the next command begins; it checked nothing at this path
    path.write_text("changed between the commands\n")
    files.write_atomic(path, b"the next report\n")
    assert path.read_text() == "the next report\n"


def test_compare_keeps_its_report_beside_a_file_made_at_its_json_path_while_it_ran(tmp_path, monkeypatch, capsys):
    from compare.comparison import pipeline
    target = tmp_path / "r.json"
    original = pipeline.execute

    def execute(*args, **kwargs):
        report = original(*args, **kwargs)
        target.write_text("someone else's\n")
        return report
    monkeypatch.setattr(pipeline, "execute", execute)
    code = main.main(["compare", "--shape", "2,8,2,4", "--trials", "1", "--inputs", "normal", "--check", "numerics",
                      "--quiet", "--json", str(target)])
    err = capsys.readouterr().err
    assert code == ExitCode.WRITE_FAILED and target.read_text() == "someone else's\n"
    assert json.loads(Path(f"{target}.kernel-ab-1").read_text())["baseline"] == "pointer_mutation"
    assert f"this file is {target}.kernel-ab-1 instead" in err
    # a run whose path holds its own earlier report replaces it
    monkeypatch.setattr(pipeline, "execute", original)
    target.unlink()
    assert main.main(["compare", "--shape", "2,8,2,4", "--trials", "1", "--inputs", "normal", "--check",
                      "numerics", "--quiet", "--json", str(target)]) == 0
    first = target.stat().st_ino
    assert main.main(["compare", "--shape", "2,8,2,4", "--trials", "1", "--inputs", "normal", "--check",
                      "numerics", "--quiet", "--json", str(target)]) == 0
    assert target.stat().st_ino != first and json.loads(target.read_text())["baseline"] == "pointer_mutation"


def test_a_variant_file_whose_import_blocks_is_that_variants_failure_within_the_timeout(tmp_path):
    """Bounded like a launch (--variant-timeout), not like a family package (bad input): the variant is failed
    in one line naming it, and the others' report comes out; no gate was asked for, so exit 0."""
    (tmp_path / "blocky.py").write_text("import time\ntime.sleep(600)\n\ndef op(X, W, B, C, G, eps):\n    return X\n")
    out = tmp_path / "r.json"
    started = time.monotonic()
    r = _run("compare", "torch", "--variant", f"bad={tmp_path / 'blocky.py'}::op", "--shape", "1,2,1,4", "--check",
             "numerics", "--inputs", "normal", "--trials", "1", "--quiet", "--variant-timeout", "2", "--json",
             str(out), cwd=tmp_path, limit="600")
    assert r.returncode == 0, r.stderr
    said = [line for line in r.stderr.splitlines() if "bad" in line]
    assert said == [f"kernel-ab: variant bad did not return within 2 s (--variant-timeout) and was stopped while "
                    f"running import of {tmp_path / 'blocky.py'}; running again without it"], r.stderr
    report = json.loads(out.read_text())
    status = {v["name"]: (v["status"], v["error"]) for v in report["variants"]}
    assert status == {"torch": ("ok", ""), "bad": ("failed", said[0].split("variant bad ")[1].split("; running")[0])}
    assert [v["status"] for c in report["numerics"]["cases"] for v in c["variants"]] == ["pass"]
    assert time.monotonic() - started < 60
