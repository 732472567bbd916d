"""Sweeps the README's test command samples and CI runs whole: every value after the first `fast` is marked
`slow` (minutes on the 2-core machine, run by .ci/run), so each sweep keeps a case in the quick suite."""
import pytest


def sampled(values, fast: int = 1, several: bool = False) -> list:
    """`values` as pytest parameters, those after the first `fast` marked slow (`several`: each value a tuple
    of several arguments)."""
    return [v if i < fast else pytest.param(*(v if several else (v,)), marks=pytest.mark.slow)
            for i, v in enumerate(values)]
