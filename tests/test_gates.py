"""Exit-code gates: they trip on what they promise and on nothing else."""
from compare import gates
from tests.fixed_report import fixed_report


def test_no_gate_asked_means_no_failure():
    assert gates.failures(fixed_report(failing=True, slower_ratio=1.5)) == []


def test_fail_on_numerics():
    assert gates.failures(fixed_report(), fail_on_numerics=True) == []
    broken = gates.failures(fixed_report(failing=True), fail_on_numerics=True)
    assert broken == ["numerics: B fail on N2 C8 G2 S256 float32 normal forward"]


def test_fail_if_slower_acts_only_on_significant_verdicts_over_the_limit():
    assert gates.failures(fixed_report(slower_ratio=1.03), fail_if_slower_pct=5) == []
    assert len(gates.failures(fixed_report(slower_ratio=1.03), fail_if_slower_pct=2)) == 1
    # inside the noise band: the verdict is "no difference", so even a 0% limit does not trip
    assert gates.failures(fixed_report(slower_ratio=1.005), fail_if_slower_pct=0) == []
