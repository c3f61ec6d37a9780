"""v15 tile probe (issue 4): chosen v15 CUDA C candidates, in or outside its search, beside cuBLAS.

    python scripts/v15_tile_probe.py [--sizes 4096,8192,2304x2048x16384] [--dtypes bf16,fp16] [--rounds 5]
                                     [--tiles "whole tiles=256,4,2,8,0;stream-K=256,4,2,8,1"]
                                     [--l2-promotions 256,128,0]

For each size (n for n³, or MxNxK) and dtype, in --rounds interleaved rounds: cuBLAS and each tile
(label=BN,STAGES,CLUSTER_M,GROUP_M,STREAM_K; tiles outside v15's search are compiled for this run). Each
time is a do_bench median (L2 flushed between calls); printed per round and as the median over rounds,
as % of cuBLAS in the same round, with each kernel's normwise error, how many clusters fit at once and,
with STREAM_K, how the schedule deals the product out.
"""

import argparse

import torch
import triton
from _probe import check_then_time, parse_size

from implementations import v15_warp_specialized as v15
from implementations.core.check import PRECISIONS, make_inputs, reference
from implementations.core.cuda_c import CudaSource

DEFAULT_TILES = "whole tiles=256,4,2,8,0;stream-K=256,4,2,8,1"


def schedule(M: int, N: int, K: int, tile: v15.Tile, clusters: int) -> str:
    """How the kernel's Schedule deals this product out, in words."""
    tiles = v15.cluster_tiles(M, N, tile)
    k_tiles = triton.cdiv(K, v15.BK)
    clusters = min(clusters, tiles)
    rest = tiles % clusters
    return (f"{tiles} cluster tiles on {clusters} clusters: {tiles // clusters} whole rounds, then "
            f"{rest} tiles × {k_tiles} k-blocks = {rest * k_tiles / clusters:.1f} k-blocks per cluster")


def probe(shape: tuple[int, int, int], dtype: str, rounds: int, tiles: dict[str, v15.Tile],
          promotions: list[int]) -> None:
    precision = PRECISIONS[dtype]
    M, N, K = shape
    a, b = make_inputs(M, N, K, precision, "cuda", seed=5)
    ref = reference(a, b)
    c = torch.empty(M, N, device="cuda", dtype=a.dtype)
    runs = {"cuBLAS": lambda: torch.matmul(a, b, out=c)}
    for label, tile in tiles.items():
        for promotion in promotions:
            run_label = label if promotions == [256] else f"{label}, L2 promotion {promotion} B"
            runs[run_label] = v15.launch_tile(a, b, c, tile, l2_promotion=promotion)
        clusters = v15.resident_clusters(tile.kernel(a.dtype), a.device, tile.CLUSTER_M, v15.shared_bytes(tile))
        how = f"; {schedule(M, N, K, tile, clusters)}" if tile.STREAM_K else ""
        print(f"{M}x{N}x{K} {dtype}, {label} ({tile}): {clusters} clusters of {tile.CLUSTER_M} fit{how}", flush=True)
    check_then_time(runs, c, ref, precision.bound(K), rounds)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="4096,8192")
    parser.add_argument("--dtypes", default="bf16,fp16")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tiles", default=DEFAULT_TILES, help="label=BN,STAGES,CLUSTER_M,GROUP_M,STREAM_K;...")
    parser.add_argument("--l2-promotions", default="256",
                        help="comma-separated: each tile with A's and B's tensor maps at each of these L2 "
                             "promotions (0, 64, 128 or 256 bytes)")
    args = parser.parse_args()
    tiles = {label: v15.Tile(*map(int, fields.split(",")))
             for label, fields in (item.split("=") for item in args.tiles.split(";"))}
    extra = [t.kernel(d) for d in v15.IS_BF16 for t in tiles.values() if t.kernel(d) not in v15.KERNELS.kernels]
    if extra:  # launch_candidate and resident_clusters look the kernels up in v15.KERNELS
        v15.KERNELS = CudaSource(v15.__name__, [*v15.KERNELS.kernels, *extra], arch=v15.KERNELS.arch)
    print(torch.cuda.get_device_name(), "triton", triton.__version__, flush=True)
    for size in args.sizes.split(","):
        for dtype in args.dtypes.split(","):
            probe(parse_size(size), dtype, args.rounds, tiles, [int(p) for p in args.l2_promotions.split(",")])


if __name__ == "__main__":
    main()
