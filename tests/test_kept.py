"""Each verdict of a report is decided once (compare/model/kept.py): one `compare --out` decides the problem
lists, the compiled-code verdicts, the headline and the glance once each, though the gates, the terminal, the
comment, the full Markdown and the JSON all read them; one review decides its op's once too (each of the four
was decided four times over the copies it showed); a changed report decides anew."""
import dataclasses

import main
from compare.model import gates, glance, headline, problems, same_code
from tests.fixed_report import fixed_report

DECIDERS = ((headline, "_headline"), (headline, "_verdicts"), (problems, "_lists"), (same_code, "_same_code"),
            (glance, "_rows"))


def _counted(monkeypatch) -> dict[str, int]:
    counts = {name: 0 for _, name in DECIDERS}
    for module, name in DECIDERS:
        def counted(*args, _real=getattr(module, name), _name=name):
            counts[_name] += 1
            return _real(*args)
        monkeypatch.setattr(module, name, counted)
    return counts


def test_one_compare_with_a_gate_and_every_file_decides_each_verdict_once(tmp_path, monkeypatch, capsys):
    counts = _counted(monkeypatch)
    code = main.main(["compare", "--shape", "2,8,2,4", "--check", "numerics", "--check", "ir", "--trials", "1",
                      "--inputs", "normal", "--quiet", "--fail-on-numerics", "--out", str(tmp_path)], prog="kernel-ab")
    assert code == 0, capsys.readouterr().err
    assert {"report.json", "report.md", "report-full.md"} <= {p.name for p in tmp_path.iterdir()}
    assert "gate --fail-on-numerics: passed" in (tmp_path / "report.md").read_text()
    assert "compiled code" in (tmp_path / "report.md").read_text()
    assert counts == {"_headline": 1, "_verdicts": 1, "_lists": 1, "_same_code": 1, "_rows": 1}   # one pair


def test_a_report_changed_decides_anew_and_its_gates_keep_what_was_decided(monkeypatch):
    counts = _counted(monkeypatch)
    report = fixed_report(failing=True)
    first = headline.headline(report)
    assert headline.headline(report) is first and glance.rows(report) == glance.rows(report)
    once = {"_headline": 1, "_verdicts": 1, "_lists": 1, "_same_code": 2, "_rows": 1}   # two pairs: A against B and inductor
    assert counts == once
    judged = gates.decided(report, fail_on_numerics=True)   # the gate reads the headline: nothing decided again
    assert judged.gates[0].fails and headline.headline(judged) is first and glance.rows(judged)
    assert counts == once
    fixed = dataclasses.replace(report, numerics=fixed_report().numerics)
    assert headline.headline(fixed).pairs[0].problems_introduced == () != first.pairs[0].problems_introduced
    assert counts["_headline"] == 2 and counts["_lists"] == 2


def test_one_review_decides_each_verdict_of_its_op_once_though_the_terminal_comment_and_json_read_them(
        tmp_path, monkeypatch, capsys):
    from tests.review_repo import make_repo
    repo = make_repo(tmp_path, True)
    counts = _counted(monkeypatch)
    code = main.main(["review", "--repo", str(repo), "v1", "v2", "--fail-on-numerics", "--json",
                      str(tmp_path / "r.json"), "--markdown", str(tmp_path / "r.md"), "--shape", "4,64", "--check",
                      "numerics", "--check", "ir", "--trials", "1", "--inputs", "normal"], prog="kernel-ab")
    assert code == 0, capsys.readouterr().err
    assert "review: " in capsys.readouterr().out and "gate --fail-on-numerics: passed" in (tmp_path / "r.md").read_text()
    assert counts == {"_headline": 1, "_verdicts": 1, "_lists": 1, "_same_code": 1, "_rows": 1}   # one op, one pair
