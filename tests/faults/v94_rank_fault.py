"""A kernel that goes wrong on one rank of a distributed run only, as TVC_RANK_FAULT says: "error" (its
launcher refuses the operands, as bad input on one rank would), "hang" (its launch never returns) or
"wrong" (it leaves its rows unwritten). On every other rank, and on rank 1 without the variable, it is
v01's Triton kernel."""

import os
import time

from implementations.core.registry import Variant
from implementations.v01_naive import naive_triton

FAULTY_RANK = 1


def faulty(launcher):
    def launch(a, b, c):
        run = launcher(a, b, c)
        fault = os.environ.get("TVC_RANK_FAULT", "") if os.environ.get("RANK") == str(FAULTY_RANK) else ""
        if fault == "error":
            raise ValueError(f"rank {FAULTY_RANK} refuses its operands (TVC_RANK_FAULT=error)")
        if fault == "hang":
            return lambda: time.sleep(3600)
        if fault == "wrong":
            return lambda: None
        return run

    return launch


VARIANT = Variant(__name__, title="fails on one rank", dtypes=("fp32",), cuda=None, triton=faulty(naive_triton),
                  cuda_source=None)
