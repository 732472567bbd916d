"""Fixtures shared by the test modules: `clock`, the simulated device of tests/simulated_device.py."""
from tests.simulated_device import clock  # noqa: F401 (a pytest fixture, found here by name)
