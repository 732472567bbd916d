"""Choose the backend before any test imports Triton: compiled on a GPU, else Triton's interpreter."""
import pytest

from compare.runtime.backend import configure

BACKEND = configure("auto")


def pytest_collection_modifyitems(config, items):
    if BACKEND.gpu:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU; this machine has none (run it on the device machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
