"""CPU stand-in for a hanging kernel: its Triton launcher never returns."""

import time

from implementations.core.registry import Variant
from implementations.v01_naive import naive_triton


def fake_hang_triton(a, b, c):
    naive_triton(a, b, c)  # a real Triton launcher is bound (so CPU tensors go to the interpreter), never run

    def run():
        while True:
            time.sleep(1)

    return run


VARIANT = Variant(__name__, title="never returns", dtypes=("fp32",), cuda=None, triton=fake_hang_triton,
                  cuda_source=None)
