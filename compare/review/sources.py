"""What a file of the reviewed repository is to a review: the library's code, its tests or its benchmarks.

Tests and benchmark scripts are where calls of an op come from, never ops themselves: a pull request that
adds a test function reaching a kernel has not added an op. A file is a test or a benchmark by where it
lies (a folder named so, anywhere in its path) or by its name (pytest's `test_*.py`, `*_test.py`,
`conftest.py`; `benchmark_*.py`, `bench_*.py`).
"""
from __future__ import annotations

import enum
from pathlib import PurePosixPath


class Role(str, enum.Enum):
    LIBRARY = "library"
    TEST = "test"
    BENCHMARK = "benchmark"


_TEST_FOLDERS = frozenset({"test", "tests"})
_BENCHMARK_FOLDERS = frozenset({"benchmark", "benchmarks", "bench", "benches"})


def role(path: str) -> Role:
    """`path` (from the repository's top level) as the review sees it."""
    p = PurePosixPath(path)
    folders = {part.lower() for part in p.parts[:-1]}
    name = p.name.lower()
    if folders & _TEST_FOLDERS or name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py":
        return Role.TEST
    if folders & _BENCHMARK_FOLDERS or name.startswith(("benchmark_", "bench_")):
        return Role.BENCHMARK
    return Role.LIBRARY


def library(paths: list[str]) -> list[str]:
    """The paths among `paths` that are the library's own code."""
    return [p for p in paths if role(p) == Role.LIBRARY]
