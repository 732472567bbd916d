"""Ctrl-C during a comparison keeps what was finished: the run, sent SIGINT as a terminal sends it (to the
command the user started: the supervisor, which passes it on), writes its report of the cases done, says
so in one line and in the report, and exits 130; in one process and with --jobs, whose progress says each
task's end."""
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# 12 cases (6 input kinds, forward and backward) of about half a second each on the interpreter
RUN = ["compare", "--shape", "2,32,4,256", "--trials", "2", "--check", "numerics", "--check", "backward",
       "--inputs", "all"]


def _interrupted(tmp_path, *more: str, after: int) -> tuple[int, dict, str, list[str]]:
    """Run RUN, its piped progress lines cut to 80 columns, SIGINT once `after` units are done by those lines;
    (exit code, the JSON, stderr, the progress lines seen before the signal)."""
    out = tmp_path / "r.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "80"}
    proc = subprocess.Popen([sys.executable, str(ROOT / "main.py"), *RUN, *more, "--json", str(out)], cwd=tmp_path,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = []
    for line in proc.stderr:
        seen.append(line)
        done = re.match(r"\[\s*[\d.]+s (\d+)/(\d+)", line)
        if done and int(done.group(1)) >= after:
            proc.send_signal(signal.SIGINT)
            break
    rest = proc.stderr.read()
    proc.wait(timeout=60)
    proc.stdout.close()
    proc.stderr.close()
    assert out.exists(), rest
    return proc.returncode, json.loads(out.read_text()), rest, seen


def _cases(data) -> list[str]:
    return [f"{c['direction']} {c['input_kind']}" for c in data["numerics"]["cases"]]


def test_ctrl_c_writes_the_report_of_the_cases_done_and_exits_130(tmp_path):
    started = time.monotonic()
    code, data, err, seen = _interrupted(tmp_path, "--check", "ir", "--out", "o", after=2)   # a unit: a case
    assert code == 130, err
    cases = _cases(data)
    assert 2 <= len(cases) < 12 and cases[:2] == ["forward normal", "forward large_mean"]
    assert all(len(c["variants"]) == 3 for c in data["numerics"]["cases"])   # whole cases only
    # the report counts as the progress did (12 cases and the compiled code), and says what never ran
    assert re.match(r"\[\s*[\d.]+s 2/13", seen[-1]), seen[-1]
    stop = data["interrupted"]
    assert stop == {"stop": "interrupted (Ctrl-C)", "done": len(cases), "planned": 12, "steps": 13,
                    "not_run": (["backward"] if len(cases) <= 6 else []) + ["ir"]}
    assert {"check": "ir", "why": "interrupted before it ran", "part": "", "interrupted": True} in data["skipped"]
    rows = {(v["check"], v["verdict"]) for v in data["verdicts"]}   # each row asked for is kept, and says why
    assert ("compiled code", "not compared") in rows and ("timing", "not measured") in rows
    assert len(cases) > 6 or ("backward", "not run") in rows
    assert "kernel-ab: interrupted (Ctrl-C); the report holds what was finished before it" in err
    assert time.monotonic() - started < 60
    _says_it_in_markdown(tmp_path / "o", len(cases))


def _says_it_in_markdown(out: Path, done: int) -> None:
    """The comment and report-full.md say how far the run got, both counts told apart, before any verdict, and
    keep each row asked for; a pass a stop kept from starting has its line under the glance as well."""
    said = (f"interrupted (Ctrl-C) after {done} of 12 cases (progress counted 13 steps: the 12 cases and 1 more "
            f"for the other checks): {'backward and ' if done <= 6 else ''}compiled code not run")
    for name in ("report.md", "report-full.md"):
        text = (out / name).read_text()
        assert f"> ⚠️ **{said}**" in text, text[:1500]
        assert text.index(said) < text.index("| check ")
        rows = {line.split("|")[1].strip()[2:].strip(): line.split("|")[2].strip() for line in text.splitlines()
                if line.startswith("| ") and line.split("|")[1].strip()[:1] in "✅⏭️❌⚠ℹ"}
        assert rows["timing"] == "not measured" and rows["compiled code"] == "not compared", rows
        assert rows["numerics"] != "not run" and (done > 6 or rows["backward"] == "not run"), rows
        assert done > 6 or "- ⏭️ backward: not run (interrupted before it ran)" in text


@pytest.mark.slow   # two worker processes start (about 4 s each here)
def test_ctrl_c_with_jobs_keeps_every_task_that_answered(tmp_path):
    """At 80 columns each task's end is one line of at most 80: its count of the 12 tasks whole, its key cut
    where the line would not fit."""
    code, data, err, seen = _interrupted(tmp_path, "--jobs", "2", after=3)
    assert code == 130, err
    assert seen[0].startswith("kernel-ab: --jobs: 2 worker processes")
    progress = [line.rstrip("\n") for line in seen[1:]]
    assert all(len(line) <= 80 for line in progress), max(progress, key=len)
    counts = [int(re.match(r"\[\s*[\d.]+s (\d+)/12[],]", line).group(1)) for line in progress]
    assert counts == list(range(1, len(progress) + 1)), progress
    answered = [re.search(r"\] done: numerics (\w+) float32 (\w+) ", line).groups() for line in progress]
    cases = _cases(data)
    assert len(answered) >= 3 and {" ".join(a) for a in answered} <= set(cases) and len(cases) < 12, (answered, cases)


def test_a_stop_while_the_files_are_written_leaves_no_half_write_and_names_what_came_out(tmp_path, monkeypatch,
                                                                                         capsys):
    """SIGINT just as report.md is put in place (a stop put off until that file's write ends: no temporary
    file, no file written but said unwritten): exit 130, and the line names the files that came out, never
    'no report'. In one process (main.main), as the supervised child runs it."""
    import main
    from compare.command_line import output_files as files
    put = files._put

    def put_then_stop(tmp, target):
        put(tmp, target)
        if target.name == files.REPORT_MD:
            os.kill(os.getpid(), signal.SIGINT)   # as Ctrl-C would, report.md in place, its write not yet returned
    monkeypatch.setattr(files, "_put", put_then_stop)
    out = tmp_path / "out"
    code = main.main(["compare", "--shape", "2,8,2,4", "--trials", "1", "--inputs", "normal", "--check", "numerics",
                      "--quiet", "--out", str(out)])
    err = capsys.readouterr().err.splitlines()
    assert code == 130
    names = [files.REPORT_MD, files.FULL_MD, files.REPORT_JSON]
    came = [str(out / n) for n in names if (out / n).exists()]
    assert sorted(p.name for p in out.iterdir()) == sorted(Path(p).name for p in came)   # nothing temporary
    assert came[:1] == [str(out / files.REPORT_MD)] and files.ours(out / files.REPORT_MD)
    said = (f"the report was written ({', '.join(came)})" if len(came) == len(names) else
            f"wrote {', '.join(came)}; not written: {', '.join(str(out / n) for n in names[len(came):])}")
    assert err[-1] == f"kernel-ab: interrupted (Ctrl-C); {said}", err


def test_a_stops_line_says_which_outputs_came_out():
    from compare.runtime import written
    written.start()
    assert written.after_stop() == "no report"
    written.planned(["o/report.md", "o/report-full.md", "o/report.json"])
    assert written.after_stop() == "no report"
    written.wrote("o/report.md")
    assert written.after_stop() == "wrote o/report.md; not written: o/report-full.md, o/report.json"
    written.wrote("o/report-full.md")
    written.wrote("o/report.json")
    assert written.after_stop() == "the report was written (o/report.md, o/report-full.md, o/report.json)"
    written.start()
