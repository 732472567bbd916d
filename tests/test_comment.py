"""The pull-request comment: the answer in its first 25 lines (each check's verdict, every shared NaN named),
under 8,000 characters for one op, short headings and no empty label line; no table wider than GitHub's
column (markdown.ROW_ROOM: each column at its longest cell, text past WRAP counted at WRAP as it wraps, plus 3
of padding), a wide table split into parts of its columns that each keep the columns naming a row, and the
"Cut" note only where the cut parts are written nowhere else."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from compare.model import glance
from compare.model.headline import headline
from compare.model.problems import lists
from compare.model.replay import Agreement, ReplayedCall, ReplayedOp, ReplayVerdict, Side, TensorDiff
from compare.model.states import ProblemKind
from compare.command_line import output_files as files
from compare.render import json_report, markdown
from compare.render.table import Table
from compare.review import render as review_render, replay_render
from compare.review.kernels import Changes
from tests.fixed_report import fixed_report

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "reports" / "seed_pair" / "report.json"
ONE_OP = ROOT / "reports" / "numerics_seed_pair" / "report.json"   # the H200's, NaN shared on five input kinds
SEVEN = ROOT / "reports" / "roofline_group_norm" / "forward_image_float32" / "report.json"   # a wide Variants table
BUNDLE = Path(os.environ.get("KERNEL_AB_CORPUS") or ROOT.parent / "shared" / "corpus") / "liger-kernel-prs.bundle"
TOP = 25                                                  # lines a reviewer reads before opening anything
LABEL_ONLY = re.compile(r"^[-*>\s]*[A-Za-z][\w .]*:\s*$")   # "specialization:" and nothing after it


def assert_readable(text: str, reports, ops: int = 1) -> None:
    """The comment holds each report's answer in its first lines (every check's verdict), names every NaN
    the variants share, stays under 8,000 characters an op, and has no long heading or empty label."""
    top = "\n".join(text.splitlines()[:TOP])
    for report in reports:
        for row in glance.rows(report):
            assert re.search(rf"\| \S+ {re.escape(row.check)} +\| {re.escape(row.verdict)} +\|", top), (row, top)
        for p in lists(report).shared:
            if p.kind == ProblemKind.NONFINITE:
                assert any("NaN" in line and p.input_kind in line for line in text.splitlines()), p
    assert len(text) < 8000 * ops, len(text)
    assert max(len(line) for line in text.splitlines() if line.startswith("#")) <= 100
    assert not [line for line in text.splitlines() if LABEL_ONLY.match(line)]


def _tables(text: str) -> list[list[list[str]]]:
    """Every GitHub table of `text` as rows of cells (the separator row left out)."""
    found, rows = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            if not set(line) <= set("|-: "):
                rows.append([c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]])
        elif rows:
            found.append(rows)
            rows = []
    return found


def _width(rows) -> int:
    return sum(markdown._room(column) for column in zip(*rows))


def test_no_table_of_the_whole_seed_report_is_wider_than_githubs_column():
    whole = markdown.full(json_report.load(SEED.read_text()))
    tables = _tables(whole)
    assert len(tables) > 100 and max(_width(t) for t in tables) <= markdown.ROW_ROOM
    assert any(" (2 of " in line for line in whole.splitlines() if line.startswith("#### "))   # some were split


def test_a_wide_table_is_split_by_columns_each_part_keeping_the_columns_that_name_a_row():
    headers = ("A", "B", "output", *(f"measure {i}" for i in range(12)))
    rows = tuple(("pointer_mutation", "explicit_offset", out, *(f"{i}.25e-06" for i in range(12))) for out in "xy")
    parts = markdown.narrow(Table("Bitwise", headers, rows, notes=("a note",)))
    assert len(parts) >= 2 and [p.title for p in parts][-1] == f"Bitwise ({len(parts)} of {len(parts)})"
    for part in parts:
        assert part.headers[:3] == ("A", "B", "output")   # A alone does not tell the two rows apart
        assert _width([part.headers, *part.rows]) <= markdown.ROW_ROOM
    assert [h for p in parts for h in p.headers[3:]] == list(headers[3:])   # every column once, in order
    assert [p.notes for p in parts] == [()] * (len(parts) - 1) + [("a note",)]
    narrow = Table("t", ("a", "b"), (("1", "2"),))
    assert markdown.narrow(narrow) == [narrow]


def test_the_comment_opens_with_the_glance_table():
    text = markdown.render(json_report.load(SEED.read_text()))
    first = _tables(text)[0]
    assert first[0] == ["check", "verdict", "how much", "where"]
    assert first[3] == ["⚠️ timing forward", "slower", "+1.6% to +2.7%", "6 of 7 shapes"]
    assert text.index("| check ") < text.index("- ✅ numerics: forward: identical bits in all 12 cases")


def test_the_cut_note_only_where_the_cut_parts_are_written_nowhere_else(tmp_path):
    report = json_report.load(SEED.read_text())
    alone = markdown.render(report)
    with_full = markdown.render(report, full_written=True)
    assert "**Cut:**" in alone and "`--out` writes them all" in alone
    assert "**Cut:**" not in with_full and "`--out` writes them all" not in with_full
    assert "are left out of this comment: report-full.md, written with this comment, holds them" in with_full
    lines, failed = files.write(report, markdown_path=tmp_path / "alone.md", out=tmp_path / "out")
    assert failed == 0
    assert (tmp_path / "out" / "report.md").read_text() == with_full
    assert (tmp_path / "alone.md").read_text() == with_full   # --out wrote report-full.md with it
    files.write(report, markdown_path=tmp_path / "only.md")
    assert (tmp_path / "only.md").read_text() == alone
    whole = markdown.full(fixed_report())
    small = markdown.render(fixed_report(), limit=len(whole))
    assert small == whole and "**Cut:**" not in small and "left out" not in small   # nothing cut, nothing said


def test_one_ops_comment_holds_the_answer_at_its_top_and_names_each_shared_nan():
    report = json_report.load(ONE_OP.read_text())
    assert any(p.kind == ProblemKind.NONFINITE for p in lists(report).shared)   # what would be folded away
    text = markdown.render(report, full_written=True)
    assert_readable(text, [report])
    top = text.splitlines()[:TOP]
    said = [line.removeprefix("- ") for line in top if line.startswith("- ")]
    assert [line.text for line in headline(report).pairs[0].lines] == [s.split(" ", 1)[1] for s in said[:3]]
    assert "<summary><b>Numerics</b>" in text and "problem group" not in text


def test_the_compiled_code_on_top_is_in_plain_words_and_the_folded_details_keep_the_op_names():
    """A reviewer reads loops by what they count over and instructions by kind, the stages by what they are; the
    stages' short names and the instructions' own names are under the folds (report-full.md: none cut)."""
    report = json_report.load(ONE_OP.read_text())
    top = markdown.render(report, full_written=True).splitlines()[:TOP]
    [said] = [line for line in top if "compiled code: " in line]
    assert ("the innermost loop over `start` (loop 2.1, inside the loop over `channel`): 2 more pointer additions in "
            "Triton's IR") in said, said
    assert "from one iteration to the next" in said and "in the machine code" in said, said
    for term in ("TTIR", "TTGIR", "LLIR", "SASS", "tt.addptr", "IADD3", "(for start)", "instruction count changes"):
        assert not any(term in line for line in top), term
    assert "innermost loop 2.1 (for start), instruction count changes: TTIR tt.addptr +2" in markdown.full(report)


def _folds(text: str) -> dict[str, str]:
    """The top-level folds of a report's details (variants, each section), by title."""
    return {fold.split("</b>", 1)[0]: fold for fold in text.split("<details><summary><b>")[1:]}


def _said(text: str) -> set[str]:
    """The lines of `text`, each legend (<sub>, a line of a few) taken apart into its lines."""
    return {item for line in text.splitlines()
            for item in (line.removeprefix("<sub>").removesuffix("</sub>").split("<br>") if line.startswith("<sub>")
                         else [line])}


@pytest.mark.parametrize("path, full_written", [(ONE_OP, False), (SEVEN, False), (SEVEN, True)],
                         ids=["one pair, 600,000 characters whole", "seven variants", "seven, report-full.md written"])
def test_the_details_fit_any_room_above_their_folds_and_each_cut_fold_says_where_the_rest_is(path, full_written):
    """Cut only: each fold keeps what fits of it (no line that the whole lacks) and says where the rest is."""
    report = json_report.load(path.read_text())
    whole = markdown.details(report)
    floor = len(markdown.details(report, 0, full_written))   # each fold holding its note alone
    where = markdown.FULL_WRITTEN if full_written else markdown.CUT_WHERE
    top = min(len(whole) - 1, 2 * markdown.COMMENT_LIMIT)
    for room in sorted({floor + (top - floor) * k // 3 for k in range(4)}):
        text = markdown.details(report, room, full_written)
        assert len(text) <= room, (room, len(text))
        assert {line for line in _said(text) if where not in line} <= _said(whole)
        cut, uncut = _folds(text), _folds(whole)
        assert cut.keys() == uncut.keys()
        assert [t for t in cut if (where in cut[t]) != (cut[t] != uncut[t])] == [], room


@pytest.mark.parametrize("ops, full_written", [(1, False), (2, True)])
def test_a_reviews_comment_of_a_large_report_keeps_the_answer_on_top_and_the_bound_per_op(ops, full_written):
    """The review's own lines and each op's answer are never cut; its details share what they leave."""
    report = json_report.load(ONE_OP.read_text())
    target = SimpleNamespace(module="lib.ops", callable="Norm.apply", family=report.family, what=(),
                             how="matched by parameter names: " + ", ".join(f"argument_{i}" for i in range(40)))
    compared = tuple(SimpleNamespace(target=target, label=f"Norm{i}", report=report, error="", needs=(),
                                     stopped=False) for i in range(ops))
    review = review_render.Review("v1", "v2", "a" * 40, "b" * 40, Changes(), compared, ())
    text = review_render.markdown(review, full_written)
    assert_readable(text, [report], ops)
    assert text.count("### `Norm") == ops and len(text) > markdown.COMMENT_LIMIT * 0.9


def test_a_replayed_ops_calls_are_folded_and_cut_to_its_room():
    tensor = TensorDiff("grad x", "bfloat16", (188, 31), Agreement.BEYOND, 26, 5, 4.6e-05, 39, (182, 4), -0.0028,
                        -0.0027, 3)
    calls = tuple(ReplayedCall(i, "x: bfloat16[188, 31] grad, " + ", ".join(f"option_{k}=None" for k in range(20)),
                               f"tests/test_op.py::test_correctness[{'-'.join('x' * 20)}-{i}]", (tensor,) * 3)
                  for i in range(6))
    op = ReplayedOp("lib.ops:Fused", "Fused", ("tests/test_op.py",), Side.BASE, calls, (), ReplayVerdict.BEYOND)
    whole, cut = replay_render.markdown(op), replay_render.markdown(op, room=2500)
    rows = [line for line in cut if line.startswith("| ") and line[2].isdigit()]
    assert 0 < len(rows) < 6 and sum(map(len, rows)) <= 2500
    assert f"{6 - len(rows)} more calls left out to keep this comment short: the review's --json holds every call" in cut
    assert len([line for line in whole if line.startswith("| ") and line[2].isdigit()]) == 6
    assert cut[0] == "### `Fused`" and "<details><summary>The 6 calls replayed, BASE against HEAD</summary>" in cut


@pytest.mark.slow
def test_the_seed_pairs_report_md_on_the_cpu_is_readable(tmp_path):
    """`compare --out DIR` as the README runs it, on the CPU interpreter."""
    r = subprocess.run([sys.executable, "main.py", "compare", "--out", str(tmp_path), "--quiet"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    report = json_report.load((tmp_path / "report.json").read_text())
    assert_readable((tmp_path / "report.md").read_text(), [report])


@pytest.mark.slow
@pytest.mark.skipif(not BUNDLE.is_file(), reason=f"the Liger-Kernel corpus is absent ({BUNDLE})")
def test_a_review_of_the_corpus_is_readable(tmp_path):
    """`review gn999_base gn999_head --markdown F` on the corpus: the op's answer on top, its details folded."""
    liger = tmp_path / "liger"
    subprocess.run(["git", "clone", "-q", str(BUNDLE), str(liger)], check=True, capture_output=True)
    out = tmp_path / "review"
    r = subprocess.run([sys.executable, "main.py", "review", "gn999_base", "gn999_head", "--repo", str(liger),
                        "--markdown", f"{out}.md", "--json", f"{out}.json", "--quiet"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    [compared] = json.loads(Path(f"{out}.json").read_text())["compared"]
    report = json_report.load(json.dumps(compared["report"]))
    text = Path(f"{out}.md").read_text()
    assert_readable(text, [report])
    lines = text.splitlines()
    assert lines[lines.index("### `LigerGroupNormFunction`") + 2].startswith(
        "`liger_kernel.ops.group_norm:LigerGroupNormFunction.apply` in family group_norm: matched by")
    assert "- NaN where the reference is finite in forward y and backward dx, dW: large_mean, all_equal and huge " \
           "inputs (float32)" in lines
