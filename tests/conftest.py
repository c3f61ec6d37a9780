"""Shared test set-up: Triton's interpreter on CPU-only machines, `gpu` tests skipped there."""

import os

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
