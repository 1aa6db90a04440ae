"""Shared test setup: Hypothesis profiles and the array backends the suite runs on.

Profiles: "ci" (the default: derandomized, no deadline, few examples) and "dev" (many examples);
choose with HYPOTHESIS_PROFILE=dev.

Tests that take the `xp_backend` fixture run twice: on NumPy, and on array_api_strict on a
non-default device, which fails on any NumPy-only call or accidental host conversion in an op, as
CuPy would.
"""

import os

import pytest
from hypothesis import HealthCheck, settings

from tinyattn import backend

settings.register_profile(
    "ci",
    max_examples=15,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
    print_blob=True,
)
settings.register_profile(
    "dev", max_examples=300, deadline=None, print_blob=True,
    # the backend fixture sets up once per test, not per example, which is what we want
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(params=["numpy", "array_api_strict"])
def xp_backend(request):
    """Run the test on NumPy and again on array_api_strict (a stand-in for a GPU array library)."""
    backend.use_array_api_strict(request.param == "array_api_strict")
    yield request.param
    backend.use_array_api_strict(False)


@pytest.fixture(scope="session")
def torch():
    """Real PyTorch for parity tests; the test is skipped where it is not installed."""
    return pytest.importorskip("torch")
