"""User text (variant names, origins, revisions, error messages) prints literally in the terminal:
rich reads `[...]` as markup and `:new:` as an emoji unless told not to."""
import dataclasses

from compare.render import terminal
from compare.model.skips import Skip
from tests.fixed_report import fixed_report

ODD = ("git:new:variants/a.py::fwd", "[bold]not bold[/bold] :smile:", "IndexError: [/x] index 3 of [0, 1]")


def test_every_user_string_prints_as_written(capsys):
    report = fixed_report()
    a, b, c = report.variants
    variants = (dataclasses.replace(a, origin=ODD[0], why=ODD[1]), b,
                dataclasses.replace(c, status="failed", error=ODD[2]))
    terminal.render(dataclasses.replace(report, variants=variants, skipped=(Skip("ir", ODD[1]),)), verbose=True)
    out = capsys.readouterr().out
    unfolded = "".join(out.split())   # table cells may wrap; compare without whitespace
    for text in ODD:
        assert "".join(text.split()) in unfolded, text
    assert "\N{SMILING FACE WITH SMILING EYES}" not in out and "\N{SQUARED NEW}" not in out
