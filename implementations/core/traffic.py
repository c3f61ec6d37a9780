"""The global-memory traffic a rung must move, from its block tile: the roofline's x axis.

A block (program) that computes a BM×BN tile of C reads BM rows of A and BN columns of B, all K long,
and writes its tile once. Over the whole grid, A is read once per block column and B once per block
row:

    bytes = in_bytes·(M·K·⌈N/BN⌉ + K·N·⌈M/BM⌉) + out_bytes·M·N

The naive rungs reuse nothing on chip (a 1×1 tile): 2·M·N·K loads, 0.25 flop per byte in fp32.
Tiling by TILE divides the loads by TILE. This is what the kernel asks of global memory; what
reaches DRAM is less when the L2 cache serves repeats (`compare.py --ncu` measures it beside this).
"""

from __future__ import annotations

from collections.abc import Mapping

import triton


def predicted_bytes(M: int, N: int, K: int, tile: tuple[int, int], in_bytes: int, out_bytes: int) -> int:
    BM, BN = tile
    return in_bytes * (M * K * triton.cdiv(N, BN) + K * N * triton.cdiv(M, BM)) + out_bytes * M * N


def intensity(M: int, N: int, K: int, tile: tuple[int, int], in_bytes: int, out_bytes: int) -> float:
    """Arithmetic intensity in flop per byte of global traffic."""
    return 2.0 * M * N * K / predicted_bytes(M, N, K, tile, in_bytes, out_bytes)


def run_tile(variant, config: Mapping[str, int], run) -> tuple[int, int] | None:
    """The BM×BN tile a prepared run computes with; None when nothing says (cuBLAS, an undeclared rung).

    In order: the tile an autotuned run chose (known after its first call), the config's BM/BN or
    TILE, the tile the rung declares.
    """
    chosen = getattr(run, "tile", None)
    if callable(chosen):
        return chosen()
    if "BM" in config and "BN" in config:
        return config["BM"], config["BN"]
    if "TILE" in config:
        return config["TILE"], config["TILE"]
    return None if variant is None else variant.tile
