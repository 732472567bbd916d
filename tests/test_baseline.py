"""compare/command_line/baseline.py: `compare --baseline SAVED.json` on the CPU. A saved run of the same code
gives the same errors and no timing verdict (the CPU times nothing); a saved run from another setup is said
to be one; a saved run that can share no case is refused in one line before any work (exit 2)."""
import json

import pytest

import main

RUN = ["compare", "pointer_mutation", "explicit_offset", "--shape", "2,8,2,16", "--check", "numerics",
       "--inputs", "normal", "--trials", "1", "--quiet"]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = tmp_path_factory.mktemp("saved") / "report.json"
    assert main.main([*RUN, "--json", str(path)]) == 0
    return path


def test_a_saved_run_of_the_same_code_has_the_same_errors_and_no_timing_verdict(saved, capsys):
    capsys.readouterr()
    assert main.main([*RUN, "--baseline", str(saved)]) == 0
    out = capsys.readouterr().out
    below = " ".join(out[out.index("Against the saved run (group_norm)"):].split())   # lines wrap at the width
    assert "numerics (case and variant): same errors against the reference in 3 of 3" in below
    assert "timing: in neither run" in below and "slower" not in below and "faster" not in below
    assert "two runs on one setup" in below and f"saved {saved}: cpu (Triton interpreter)" in below


def test_a_saved_run_from_a_gpu_machine_is_another_setup(saved, tmp_path, capsys):
    data = json.loads(saved.read_text())
    data["environment"].update(device="cuda", gpu_name="NVIDIA H200", driver="580.159.04")
    other = tmp_path / "gpu.json"
    other.write_text(json.dumps(data))
    capsys.readouterr()
    assert main.main([*RUN, "--baseline", str(other)]) == 0
    out = " ".join(capsys.readouterr().out.split())   # as one line: the caveat wraps at the terminal's width
    assert ("two setups: the setups differ (device cuda -> cpu (Triton interpreter); gpu_name NVIDIA H200 -> -; "
            "driver 580.159.04 -> -): a difference may be the setup's, not the code's") in out


@pytest.mark.parametrize("argv, said", [
    (["--family", "layer_norm", "--shape", "4,64"], "is a run of family group_norm, this run of layer_norm"),
    (["--shape", "2,8,2,32"], "shares no case with this run: it has shapes N2 C8 G2 S16 in float32"),
])
def test_a_saved_run_sharing_no_case_is_refused_before_any_work(saved, capsys, argv, said):
    run = [a for a in RUN if a not in ("pointer_mutation", "explicit_offset", "2,8,2,16", "--shape")]
    capsys.readouterr()
    assert main.main([*run, *argv, "--baseline", str(saved)]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert captured.out == "" and len(err) == 1 and said in err[0], err


def test_a_baseline_that_is_not_a_report_is_one_line_before_any_work(tmp_path, capsys):
    (tmp_path / "notes.json").write_text('{"hello": 1}')
    for path, said in ((tmp_path / "missing.json", "does not exist"), (tmp_path / "notes.json", "not a kernel-ab report")):
        assert main.main([*RUN, "--baseline", str(path)]) == 2
        captured = capsys.readouterr()
        err = captured.err.strip().splitlines()
        assert captured.out == "" and len(err) == 1 and "argument --baseline: " in err[0] and said in err[0], err
