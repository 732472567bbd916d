"""Outputs never destroy: a path holding a file kernel-ab did not write is refused before any work (unless
--force), two outputs naming one file, empty paths and paths that are no regular file are refused, and
every file is written atomically, so a failed write leaves the old file as it was."""
import errno
import json
import os
from pathlib import Path

import pytest

import main
from compare.command_line import usage
from compare.command_line import output_files as files
from compare.render import json_report, markdown
from compare.model.results import MARKER_KEY
from compare.runtime.exit_codes import ExitCode
from tests.extras import need
from tests.fixed_report import fixed_report

TINY = ["compare", "--shape", "2,8,2,4", "--check", "numerics", "--trials", "1", "--inputs", "normal", "--quiet"]


def _foreign(tmp: Path) -> dict[str, Path]:
    """Files kernel-ab did not write, one of each kind it might be pointed at by mistake."""
    made = {"README.md": "# my project\n", "source.py": "print('hi')\n", "data.json": '{"a": 1}\n',
            "list.json": "[1, 2]\n", "empty.json": "[]\n", "other_marker.json": json.dumps({MARKER_KEY: "notes"})}
    for name, text in made.items():
        (tmp / name).write_text(text)
    return {name: tmp / name for name in made}


def _refused(argv, capsys, monkeypatch) -> str:
    """The one error line of a command that must stop before any work."""
    def no_work(*_a, **_k):
        raise AssertionError("work started")
    monkeypatch.setattr("compare.comparison.pipeline.run", no_work)
    assert main.main(argv, prog="main.py") == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err.strip()


@pytest.mark.parametrize("flag, name", [("--json", "README.md"), ("--json", "source.py"), ("--markdown", "data.json"),
                                        ("--json", "list.json"), ("--json", "empty.json"),
                                        ("--markdown", "other_marker.json")])
def test_a_file_kernel_ab_did_not_write_is_refused_and_kept(flag, name, tmp_path, capsys, monkeypatch):
    path = _foreign(tmp_path)[name]
    before = path.read_bytes()
    line = _refused([*TINY, flag, str(path)], capsys, monkeypatch)
    assert f"{path} holds a file kernel-ab did not write" in line and "--force" in line
    assert path.read_bytes() == before


@pytest.mark.parametrize("name", ["report.md", "report-full.md"])
def test_a_foreign_file_in_the_out_folder_is_refused(name, tmp_path, capsys, monkeypatch):
    (tmp_path / name).write_text("my notes\n")
    line = _refused([*TINY, "--out", str(tmp_path)], capsys, monkeypatch)
    assert f"--out {tmp_path}: {tmp_path / name} holds a file kernel-ab did not write" in line
    assert (tmp_path / name).read_text() == "my notes\n"


def test_force_allows_a_foreign_file_but_nothing_else(tmp_path):
    paths = _foreign(tmp_path)
    usage.outputs(str(paths["README.md"]), None, None, force=True)
    with pytest.raises(usage.UsageError, match="both write"):
        usage.outputs(str(paths["README.md"]), str(paths["README.md"]), None, force=True)
    with pytest.raises(usage.UsageError, match="is a character device, not a regular file"):
        usage.outputs("/dev/full", None, None, force=True)


def test_two_outputs_naming_one_file_are_refused(tmp_path):
    (tmp_path / "r").mkdir()
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "r" / "report.json")
    cases = [((str(tmp_path / "x"), str(tmp_path / "x"), None), "--json and --markdown both write"),
             ((str(tmp_path / "r" / "report.json"), None, str(tmp_path / "r")), "--json and --out"),
             ((None, str(tmp_path / "r" / ".." / "r" / "report.md"), str(tmp_path / "r")), "--markdown and --out"),
             ((str(link), None, str(tmp_path / "r")), "--json and --out"),
             ((str(tmp_path / "q"), None, str(tmp_path / "q" / "sub")), "needs a folder")]
    for (json_path, md_path, out), expected in cases:
        with pytest.raises(usage.UsageError, match=expected):
            usage.outputs(json_path, md_path, out)


def test_hard_links_to_one_file_are_one_file(tmp_path):
    files.write(fixed_report(), json_path=tmp_path / "a.json")
    os.link(tmp_path / "a.json", tmp_path / "b.json")
    with pytest.raises(usage.UsageError, match="both write"):
        usage.outputs(str(tmp_path / "a.json"), str(tmp_path / "b.json"), None)


@pytest.mark.parametrize("flag, what", [("--json", "a file name"), ("--markdown", "a file name"), ("--out", "a folder")])
def test_an_empty_path_is_refused(flag, what, capsys, monkeypatch):
    assert _refused([*TINY, flag, ""], capsys, monkeypatch).endswith(f"{flag} is empty; give {what}")


def test_a_path_that_is_no_regular_file_is_refused(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(usage.UsageError, match="is a pipe, not a regular file"):
        usage.outputs(str(fifo), None, None)
    (tmp_path / "out" / "report.json").mkdir(parents=True)
    with pytest.raises(usage.UsageError, match="report.json is a folder, not a regular file"):
        usage.outputs(None, None, str(tmp_path / "out"), force=True)


def test_kernel_abs_own_files_are_recognized_old_and_new(tmp_path):
    lines, failed = files.write(fixed_report(), json_path=tmp_path / "r.json", markdown_path=tmp_path / "r.md",
                                out=tmp_path / "out")
    assert failed == 0 and lines[0] == f"wrote {tmp_path / 'r.json'}"
    written = [tmp_path / "r.json", tmp_path / "r.md", *sorted((tmp_path / "out").iterdir())]
    assert {p.name for p in written} >= {"report.md", "report.json", "benchmark_rows.json"}
    assert all(files.ours(p) for p in written)
    old = json.loads((tmp_path / "r.json").read_text())   # written before the marker existed
    del old[MARKER_KEY]
    (tmp_path / "old.json").write_text(json.dumps(old))
    assert files.ours(tmp_path / "old.json")
    assert not any(files.ours(p) for p in _foreign(tmp_path).values())
    usage.outputs(str(tmp_path / "old.json"), str(tmp_path / "r.md"), str(tmp_path / "out"), modes=("forward",))


def test_a_matplotlib_plot_counts_as_ours_only_next_to_a_report_of_ours(tmp_path):
    matplotlib = need("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig = plt.figure()
    for folder in (tmp_path / "ours", tmp_path / "theirs"):
        folder.mkdir()
        fig.savefig(folder / "timing_forward.png")   # Matplotlib's own Software tag, as plots had before the tag
    plt.close(fig)
    (tmp_path / "ours" / "report.json").write_text(json_report.render(fixed_report()))
    assert files.ours(tmp_path / "ours" / "timing_forward.png")
    assert not files.ours(tmp_path / "theirs" / "timing_forward.png")
    with pytest.raises(usage.UsageError, match="timing_forward.png holds a file kernel-ab did not write"):
        usage.outputs(None, None, str(tmp_path / "theirs"), modes=("forward",))
    usage.outputs(None, None, str(tmp_path / "theirs"), modes=("backward",))   # a plot this run does not write


@pytest.mark.parametrize("failing", ["replace", "fsync"])
def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(failing, tmp_path, monkeypatch):
    old = json_report.render(fixed_report(failing=True))
    (tmp_path / "r.json").write_text(old)
    os.chmod(tmp_path / "r.json", 0o640)

    def disk_full(*_args):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, failing, disk_full)
    lines, failed = files.write(fixed_report(), json_path=tmp_path / "r.json", markdown_path=tmp_path / "r.md")
    monkeypatch.undo()
    assert failed == 2 and lines[0] == (f"kernel-ab: error: could not write {tmp_path / 'r.json'} (No space left on "
                                        "device); a file that was there is left as it was")
    assert (tmp_path / "r.json").read_text() == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]
    files.write(fixed_report(), json_path=tmp_path / "r.json")   # a write that succeeds keeps the permissions
    assert (tmp_path / "r.json").read_text() == json_report.render(fixed_report())
    assert (tmp_path / "r.json").stat().st_mode & 0o777 == 0o640


def test_a_run_whose_write_fails_says_so_in_one_line_and_exits_74(tmp_path, capsys, monkeypatch):
    old_md = markdown.render(fixed_report())   # a report of ours: replaced without --force
    (tmp_path / "r.md").write_text(old_md)
    real_replace, real_link = os.replace, os.link

    def full_for_json(real):   # the file's last step (a new file is linked into place, an old one replaced)
        def step(src, dst):
            if str(dst).endswith(".json"):
                raise OSError(errno.ENOSPC, "No space left on device")
            real(src, dst)
        return step
    monkeypatch.setattr(os, "replace", full_for_json(real_replace))
    monkeypatch.setattr(os, "link", full_for_json(real_link))
    rc = main.main([*TINY, "--json", str(tmp_path / "r.json"), "--markdown", str(tmp_path / "r.md")], prog="main.py")
    out, err = capsys.readouterr()
    assert rc == ExitCode.WRITE_FAILED == 74
    assert "check" in out.splitlines()[3].split()   # the terminal report (its glance) came first
    errors = [line for line in err.splitlines() if line.startswith("kernel-ab: error:")]
    assert errors == [f"kernel-ab: error: could not write {tmp_path / 'r.json'} (No space left on device); "
                      "a file that was there is left as it was"]
    assert f"wrote {tmp_path / 'r.md'}" in err and (tmp_path / "r.md").read_text() != old_md
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.md"]


@pytest.mark.parametrize("argv", [["compare", "--json", "{long}.json"], ["compare", "--out", "{long}/out"],
                                  ["review", "HEAD", "HEAD", "--out", "{long}/out"]])
def test_a_path_the_file_system_refuses_is_one_line_and_exit_2(argv, tmp_path, capsys, monkeypatch):
    long = str(tmp_path / ("n" * 300))   # over the 255 bytes a file name may take
    monkeypatch.setattr("compare.review.command._compare", lambda *a, **k: (_ for _ in ()).throw(AssertionError))
    said = _refused([a.format(long=long) for a in argv], capsys, monkeypatch)
    assert said.startswith("kernel-ab: error: an output path cannot be used: ") and "name too long" in said
