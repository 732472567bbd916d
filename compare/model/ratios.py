"""Timing ratios (median of a variant over the baseline's) as text. Near 1 a percentage reads well; far
from it one does not: a 33.6x speed-up is -97.0% and a 2.4x slow-down +140%, so beyond 2x either way
the ratio reads as a multiple ("33.6× faster", "2.4× slower")."""
from __future__ import annotations

MULTIPLE = 2.0   # beyond this factor either way, a multiple


def _multiple(x: float) -> tuple[float, str] | None:
    """(factor, word) when `x` is beyond MULTIPLE either way, else None (a percentage)."""
    if x >= MULTIPLE:
        return x, "slower"
    if 0 < x <= 1 / MULTIPLE:
        return 1 / x, "faster"
    return None


def ratio_text(x: float, digits: int = 1) -> str:
    """'+3.0%' near 1 (`digits` after the point), '33.6× faster' / '2.4× slower' beyond 2x."""
    m = _multiple(x)
    return f"{(x - 1) * 100:+.{digits}f}%" if m is None else f"{m[0]:.1f}× {m[1]}"


def _pair(lo: float, hi: float, digits: int) -> tuple[str, str, str]:
    """The two ends' texts, and the word they share when both are multiples the same way ("" if not),
    the smaller multiple first."""
    a, b = _multiple(lo), _multiple(hi)
    if a is not None and b is not None and a[1] == b[1]:
        small, large = sorted((a[0], b[0]))
        return f"{small:.1f}×", f"{large:.1f}×", a[1]
    return ratio_text(lo, digits), ratio_text(hi, digits), ""


def ratio_span(lo: float, hi: float, digits: int = 1) -> str:
    """The range of ratios lo..hi: '+1.0% to +3.0%', '20.1× to 33.6× faster', one text when both read the same."""
    a, b, word = _pair(lo, hi, digits)
    if a == b:
        return f"{a} {word}" if word else a
    return f"{a} to {b} {word}" if word else f"{a} to {b}"


def ratio_interval(lo: float, hi: float, digits: int = 2) -> str:
    """A confidence interval of a ratio: '[-1.00%, +3.00%]', '[33.1×, 34.0×] faster'."""
    a, b, word = _pair(lo, hi, digits)
    return f"[{a}, {b}] {word}" if word else f"[{a}, {b}]"
