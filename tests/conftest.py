"""Shared test set-up: Triton's interpreter on CPU-only machines, `gpu` tests skipped there."""

import os
import sys
from pathlib import Path

import pytest
import torch

GPU = torch.cuda.is_available()
if not GPU:
    # Must precede the first import of the kernel modules: Triton reads it when they are decorated.
    os.environ.setdefault("TRITON_INTERPRET", "1")
# A tuned rung's first call would time every candidate of its search: the tests take the first one
# instead, and check every candidate on its own (tests/ladder/test_searches.py, which also times one
# real search per rung and language).
os.environ.setdefault("TVC_SEARCH", "first")


@pytest.fixture(autouse=True, scope="session")
def tuning_cache_dir(tmp_path_factory):
    """The tuning cache of a session of tests (each pytest-xdist worker has its own): never the user's."""
    from implementations.core import tuning_cache

    os.environ[tuning_cache.DIR_VARIABLE] = str(tmp_path_factory.mktemp("tuning_cache"))
    return Path(os.environ[tuning_cache.DIR_VARIABLE])


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    """A test that leaves the CUDA context unusable (an illegal address, a trap) fails, and this test process
    ends with it: under pytest-xdist a fresh worker takes the tests after it, instead of each failing in turn."""
    if GPU:
        from implementations.core.isolation import context_lost

        lost = context_lost()
        if lost:
            sys.stderr.write(f"\n{item.nodeid} left the CUDA context unusable ({lost}); this test process ends\n")
            sys.stderr.flush()
            os._exit(3)


def pytest_collection_modifyitems(config, items):
    if GPU:
        return
    skip = pytest.mark.skip(reason="needs a CUDA device; none was found")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def device():
    """Where Triton kernels run: the GPU if there is one, else the CPU through the interpreter."""
    return torch.device("cuda") if GPU else torch.device("cpu")
