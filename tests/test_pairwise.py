"""compare/checks/pairwise.py (`main.py pairwise`): verdicts between two non-baseline variants of a timed report."""
import json
import random
from pathlib import Path

import main
from compare.checks import pairwise
from compare.checks.stats import NO_DIFFERENCE

REPORTS = Path(__file__).resolve().parent.parent / "reports"


def _entry(name, level, rounds=30, calls=5, seed=0):
    rng = random.Random(seed)
    samples = [level * (1 + 0.004 * rng.gauss(0, 1)) for _ in range(rounds * calls)]
    return {"variant": name, "status": "ok", "rounds": rounds, "calls_per_round": calls, "samples_ms": samples}


def _report(control_ci=(0.995, 1.005)):
    variants = [_entry("base", 1.2, seed=1), _entry("a", 1.0, seed=2), _entry("a_again", 1.0, seed=3),
                _entry("b", 0.9, seed=4)]
    control = {"ratio": 1.0, "ci_low": control_ci[0], "ci_high": control_ci[1], "p_value": 0.5, "rounds": 30}
    case = {"shape": "N1 C4 G2 S8", "dtype": "float32", "mode": "forward", "variants": variants, "control": control}
    return {"timing": {"noise": 0.01, "confidence": 0.95, "cases": [case]}}


def test_a_consistently_faster_variant_is_faster_and_a_copy_is_not():
    rows = {r["a"]: r for r in pairwise.pairwise(_report(), "b", ["a"])}
    assert rows["a"]["verdict"] == "faster" and 0.88 < rows["a"]["ratio"] < 0.92
    same = pairwise.pairwise(_report(), "a_again", ["a"])[0]
    assert same["verdict"] == NO_DIFFERENCE


def test_a_wide_a_a_control_raises_the_margin():
    """An A/A control reaching 15% from 1 hides a 10% difference, as in the report itself."""
    row = pairwise.pairwise(_report(control_ci=(0.85, 1.15)), "b", ["a"])[0]
    assert row["verdict"] == NO_DIFFERENCE and row["basis"] == "A/A control" and row["margin"] > 0.1


def test_a_variant_missing_from_a_case_is_said_so():
    report = _report()
    extra = json.loads(json.dumps(report["timing"]["cases"][0]))
    extra["variants"] = [v for v in extra["variants"] if v["variant"] != "a"]
    report["timing"]["cases"].append({**extra, "mode": "backward"})
    rows = pairwise.pairwise(report, "b", ["a"])
    assert [r["verdict"] for r in rows] == ["faster", "not timed"]
    assert "| backward | a | - |" in pairwise.render(rows, "b")


def test_the_subcommand_reproduces_a_committed_pairwise_table(capsys):
    folder = REPORTS / "roofline_group_norm" / "forward_image_bfloat16"
    rc = main.main(["pairwise", str(folder / "report.json"), "single_read_coop", "single_read_coop_reread"])
    assert rc == 0 and capsys.readouterr().out == (folder / "pairwise_reread.md").read_text()


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    untimed = tmp_path / "untimed.json"
    untimed.write_text(json.dumps({"timing": None}))
    timed = tmp_path / "timed.json"
    timed.write_text(json.dumps(_report()))
    broken = _report()
    broken["timing"]["cases"][0]["variants"][3]["calls_per_round"] = 0
    (tmp_path / "broken.json").write_text(json.dumps(broken))
    cases = [([str(tmp_path / "missing.json"), "b", "a"], "does not exist"),
             ([str(tmp_path), "b", "a"], "is a folder"),
             ([str(untimed), "b", "a"], "no timed cases"),
             ([str(timed), "b", "inductor"], "inductor not timed"),
             ([str(tmp_path / "broken.json"), "b", "a"], "its timed cases cannot be read")]
    for argv, said in cases:
        assert main.main(["pairwise", *argv]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("kernel-ab: error: ") and said in err[0], err
