"""triton-vs-cuda: every matrix-multiplication rung in raw CUDA C (through CuPy) and in Triton.

    from implementations import select
    v03 = select("smem_tiling")[0]
    c = v03.matmul("cuda", a, b, TILE=16)     # or "triton"

Set TRITON_INTERPRET=1 before this import to run the Triton kernels on the CPU.
"""

from .core.registry import LANGS, Variant, all_variants, config_label, select

__all__ = ["LANGS", "Variant", "all_variants", "config_label", "select"]
