"""Progress piped (CI, logs): each line says the time so far and the units done, cut to COLUMNS (default 80)."""
import re

import pytest

from compare.runtime import progress


@pytest.mark.parametrize("columns, width", [(None, 80), ("60", 60), ("200", 200)])
def test_piped_progress_lines_are_never_wider_than_columns(monkeypatch, capsys, columns, width):
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    long = "pointer_mutation_tlrange: backward N16 C320 G32 S64x64 bfloat16 large_mean seed 12345 " * 2
    with progress.reporter(21) as step:
        step(long)
        step.advance()
        step("torch: forward")
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and all(len(line) <= width for line in lines), lines
    assert re.match(r"\[\s*[\d.]+s 0/21\] pointer_mutation_tlrange: backward", lines[0])
    assert lines[0].endswith("...") == (width < 200)   # cut, and said to be, only where it does not fit
    assert re.match(r"\[\s*[\d.]+s 1/21, ~\d+ s left\] torch: forward$", lines[1])


@pytest.mark.parametrize("columns, time_left_kept", [("80", True), ("20", False)])
def test_a_cut_line_shortens_the_text_and_keeps_the_count(monkeypatch, capsys, columns, time_left_kept):
    """--jobs says each task's end by its long key: cut to the width, the count k/N stays whole."""
    monkeypatch.setenv("COLUMNS", columns)
    key = "done: numerics backward float32 large_mean N16 C320 G32 S64x64 seeds 1234,5678"
    with progress.reporter(120) as step:
        for _ in range(117):
            step.advance()
        step(key)
    line = capsys.readouterr().err.splitlines()[-1]
    assert len(line) <= int(columns), line
    assert re.match(r"\[\s*[\d.]+s 117/120(, ~\d+ s left)?\] ", line), line
    text = line.split("] ", 1)[1]
    assert text.endswith("...") and key.startswith(text.removesuffix("...")), text
    assert ("s left]" in line) == time_left_kept   # the time left goes before the text where the line is narrow


def test_after_new_pace_the_time_left_is_said_at_the_pace_of_the_units_done_since(monkeypatch, capsys):
    """Ten numerics cases of 1 s, then timing units of 20 s: the time left is the timing's, not the cases'."""
    monkeypatch.setenv("COLUMNS", "80")
    now = [100.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: now[0])
    with progress.reporter(14) as step:
        for _ in range(10):
            now[0] += 1.0
            step.advance()
        step("numerics done")
        step.new_pace()
        step("timing float32")
        now[0] += 20.0
        step.advance()
        step("timing bfloat16")
    lines = capsys.readouterr().err.splitlines()
    assert "~4 s left] numerics done" in lines[0], lines   # 4 units at 1 s each
    assert re.match(r"\[\s*10\.0s 10/14\] timing float32$", lines[1]), lines   # no unit of the new pace done yet
    assert "~60 s left] timing bfloat16" in lines[2], lines   # 3 units at 20 s each


def test_the_compiled_code_begun_after_the_timing_is_said_at_a_pace_of_its_own(monkeypatch):
    """On a GPU the IR runs after the timing (its Ready): its one unit begins a new pace before it compiles."""
    from types import SimpleNamespace

    from compare.checks.check import Findings
    from compare.comparison import ir_check
    said = []

    class Spy(progress.Step):
        def new_pace(self):
            said.append("new pace")

        def advance(self):
            said.append("advanced")
    monkeypatch.setattr(ir_check, "_ir", lambda plan, backend, step, cache=None: said.append("compiled") or Findings())
    plan = SimpleNamespace(directions=("forward",), variants=())
    ready = ir_check.IRCheck().begin(plan, SimpleNamespace(gpu=True), Spy())
    assert said == []   # nothing runs when it is begun: the timing comes first
    ready.result()
    assert said == ["new pace", "compiled", "advanced"]
