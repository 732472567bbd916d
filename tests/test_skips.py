"""compare/model/skips.py: what a report does not hold, read by check, never by the words of its line."""
from compare.model.skips import NOT_ASKED, Skip, why_not_run

SKIPPED = (Skip("timing", "its process ended with exit code 1", "float32"),
           Skip("timing", "family swiglu has no backward pass", "backward, full"),
           Skip("ir", "none of the variants is a Triton kernel"),
           Skip("numerics", "timing: interrupted after 2 of 12 cases"))


def test_why_a_check_did_not_run_gives_each_of_its_skips_part_first():
    assert why_not_run(SKIPPED, "timing") == ("float32: its process ended with exit code 1; "
                                              "backward, full: family swiglu has no backward pass")
    assert why_not_run(SKIPPED, "ir") == "none of the variants is a Triton kernel"


def test_a_check_is_told_by_its_record_not_by_a_reason_that_names_another():
    # the numerics skip's reason starts with "timing:"; it is not timing's
    assert why_not_run(SKIPPED[3:], "timing") == NOT_ASKED
    assert why_not_run(SKIPPED, "backward") == NOT_ASKED


def test_a_skip_reads_as_the_line_a_report_shows():
    assert [str(s) for s in SKIPPED[:3]] == ["timing float32: its process ended with exit code 1",
                                             "timing backward, full: family swiglu has no backward pass",
                                             "ir: none of the variants is a Triton kernel"]
