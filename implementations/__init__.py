"""triton-vs-cuda: every matrix-multiplication rung in raw CUDA C (through CuPy) and in Triton.

    from implementations import select
    v03 = select("smem_tiling")[0]
    c = v03.matmul("cuda", a, b, TILE=16)     # or "triton"

Without a CUDA device the Triton kernels can only run in Triton's interpreter, on CPU tensors: importing
this package then sets TRITON_INTERPRET=1 unless it is already set. Triton reads it when `triton` itself is
first imported (its own library of @triton.jit functions is built then), so that import must not come first:
import this package before triton, or set the variable yourself.
"""

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

# the interpreter is chosen before anything imports triton
from .core.registry import LANGS, Variant, all_variants, config_label, select  # noqa: E402

__all__ = ["LANGS", "Variant", "all_variants", "config_label", "select"]
