"""The command line: bad input is one line and exit 2; list and compare work end to end."""
import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import main
from tests.sampled import sampled

ROOT = Path(__file__).resolve().parent.parent


def cli(*args, timeout=300):
    return subprocess.run([sys.executable, "main.py", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.parametrize("args, expected", sampled([
    (["compare", "nosuch"], "unknown variant 'nosuch'; known variants: pointer_mutation, explicit_offset"),
    (["compare", "--preset", "huge"], "unknown preset 'huge'"),
    (["compare", "--dtype", "float8"], "unknown dtype 'float8'; known dtypes: float32, float16, bfloat16"),
    (["compare", "--check", "vibes"], "unknown check 'vibes'"),
    (["compare", "--inputs", "normal,spiky"], "unknown input kind 'spiky'; known input kinds: normal, large_mean"),
    (["compare", "--dtype", "float32,float8"], "unknown dtype 'float8'"),
    (["compare", "--shape", "2,30,4,16"], "channels (30) must be divisible by num_groups (4)"),
    (["compare", "--shape", "2,30"], "is not BATCH,CHANNELS,GROUPS,SPATIAL"),
    (["compare", "--shape", "2,8,2,16", "--preset", "seed"], "not both"),
    (["compare", "--trials", "0"], "--trials must be at least 1"),
    (["compare", "flat", "flat"], "named twice"),
    (["frobnicate"], "invalid choice"),
    (["compare", "--modes", "sideways"], "unknown mode 'sideways'"),
    (["compare", "--fail-if-slower", "-1"], "--fail-if-slower takes a percentage >= 0"),
    (["report", "no/such/report.json"], "does not exist"),
    (["report", "README.md"], "is not JSON"),
], fast=6, several=True))
def test_bad_input_is_one_line_and_exit_2(args, expected):
    r = cli(*args)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert expected in lines[0]
    assert "Traceback" not in r.stderr and r.stdout == ""


def test_list_names_every_variant_and_preset():
    r = cli("list")
    assert r.returncode == 0, r.stderr
    for name in ("pointer_mutation", "explicit_offset", "explicit_offset_range", "pointer_mutation_tlrange",
                 "flat", "torch", "inductor", "default", "seed", "edge", "image"):
        assert name in r.stdout


def test_compare_writes_terminal_and_json(tmp_path):
    out = tmp_path / "r.json"
    r = cli("compare", "explicit_offset", "flat", "--shape", "2,8,2,4x4", "--trials", "1", "--json", str(out),
            "--inputs", "normal", "--check", "numerics", "--verbose")
    assert r.returncode == 0, r.stderr
    assert "numerics: flat introduced no problem against explicit_offset" in r.stdout   # the section, --verbose
    data = json.loads(out.read_text())
    assert data["baseline"] == "explicit_offset"
    # torch joins, unnamed, as the accuracy reference point
    assert [v["variant"] for v in data["numerics"]["cases"][0]["variants"]] == ["explicit_offset", "flat", "torch"]
    assert data["numerics"]["added_reference"] == "torch"
    assert [c["direction"] for c in data["numerics"]["cases"]] == ["forward"]


@pytest.mark.slow
def test_out_writes_files_and_report_rerenders_the_same_markdown(tmp_path, capsys):
    out = tmp_path / "out"
    r = cli("compare", "pointer_mutation", "explicit_offset", "--shape", "2,8,2,16", "--trials", "1",
            "--inputs", "normal", "--out", str(out), "--fail-on-numerics")
    assert r.returncode == 0, r.stderr
    written = {p.name for p in out.iterdir()}
    if torch.cuda.is_available():   # timed: the seed-format rows come too
        assert {"report.json", "report.md", "report-full.md", "benchmark_rows.json"} <= written
    else:
        assert written == {"report.json", "report.md", "report-full.md"}
        # said whole once, in the headline (the glance names its first clause)
        assert (out / "report.md").read_text().count("needs a CUDA GPU and this run has none (") == 1
    again = cli("report", str(out / "report.json"), "--format", "markdown")
    assert again.returncode == 0, again.stderr
    assert again.stdout == (out / "report.md").read_text()
    assert main.main(["report", str(out / "report.json"), "--format", "markdown-full"], prog="main.py") == 0
    assert capsys.readouterr().out == (out / "report-full.md").read_text()
    term = cli("report", str(out / "report.json"), "--verbose")
    assert term.returncode == 0 and "numerics: explicit_offset introduced no problem against" in term.stdout


def test_fail_on_numerics_exits_1_when_a_named_variant_fails():
    # the one-pass variance of both seed kernels gives NaN on a large mean (a real failure, see reports/)
    r = cli("compare", "pointer_mutation", "--shape", "2,8,2,16", "--trials", "1", "--inputs", "large_mean",
            "--check", "numerics", "--fail-on-numerics", "--quiet")
    assert r.returncode == 1, r.stderr
    gates = [line for line in r.stderr.splitlines() if line.startswith("kernel-ab: gate failed")]
    assert gates and all("pointer_mutation" in line for line in gates)   # torch, the reference point, is not gated


def test_a_reader_that_leaves_early_ends_the_command_quietly_with_141():
    """`kernel-ab list | head -1` once head has exited: every write meets a closed pipe. No traceback,
    SIGPIPE's exit code."""
    import os
    read_end, write_end = os.pipe()
    os.close(read_end)           # the reader is gone before the first line
    proc = subprocess.run([sys.executable, "main.py", "list"], cwd=ROOT, stdout=write_end,
                          stderr=subprocess.PIPE, text=True, timeout=60)
    os.close(write_end)
    assert proc.returncode == 141
    assert proc.stderr == ""


def test_json_dash_writes_the_report_to_standard_output_and_the_screen_to_standard_error(tmp_path, monkeypatch,
                                                                                         capsys):
    from compare.runtime.version import version
    monkeypatch.chdir(tmp_path)
    code = main.main(["compare", "--shape", "2,8,2,16", "--trials", "1", "--inputs", "normal", "--check", "numerics",
                      "--json", "-", "-q"], prog="kernel-ab")
    out, err = capsys.readouterr()
    assert code == 0 and list(tmp_path.iterdir()) == []   # no file named '-'
    data = json.loads(out)   # standard output is the JSON, whole
    assert data["schema_version"] == 4 and data["environment"]["kernel_ab_version"] == version()
    assert data["shape_params"] == [{"batch": 2, "channels": 8, "num_groups": 2, "spatial": [16], "eps": 1e-06,
                                     "reads_x_twice": False}]
    assert {"variant": "explicit_offset", "check": "numerics", "verdict": "identical bits", "amount": "1 of 1 case",
            "where": "every case", "level": "ok", "against": "pointer_mutation"} in data["verdicts"]
    assert "explicit_offset against pointer_mutation (baseline):" in err


def test_short_version_quiet_and_verbose_options(capsys):
    assert main.main(["-V"], prog="kernel-ab") == 0
    assert capsys.readouterr().out.startswith("kernel-ab 0.")
    args = main._parser("kernel-ab").parse_args(["compare", "-q", "-v"])
    assert args.quiet and args.verbose
    assert main._parser("kernel-ab").parse_args(["report", "r.json", "-v"]).verbose


def _commands() -> list[str]:
    """Every command the parser has, read from it: a command added later is checked without naming it here."""
    return list(next(a for a in main._parser("kernel-ab")._actions if isinstance(a, argparse._SubParsersAction)).choices)


def test_every_command_is_checked_for_its_examples():
    assert {"list", "compare", "ir", "review", "report", "pairwise", "record", "diff"} <= set(_commands())


@pytest.mark.parametrize("command", _commands())
def test_each_commands_help_names_the_installed_command_with_two_examples(command, capsys):
    assert main.main([command, "--help"], prog="kernel-ab") == 0
    text = capsys.readouterr().out
    examples = text.split("\nexamples:\n")[1].splitlines()
    assert len([line for line in examples if f"{line} ".startswith(f"  kernel-ab {command} ")]) == 2
    assert all(len(line) <= 80 for line in examples), examples   # an 80-column terminal
    assert "main.py" not in text


def test_list_fits_80_columns(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "80")
    assert main.main(["list"], prog="kernel-ab") == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) > 50 and max(len(line) for line in lines) <= 80
