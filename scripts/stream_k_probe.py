"""Stream-K tail probe (issue 4): v15's CUDA C tile with and without the stream-K tail, beside cuBLAS.

    python scripts/stream_k_probe.py [--sizes 4096,8192] [--dtypes bf16,fp16] [--rounds 5]

For each size and dtype, in --rounds interleaved rounds: cuBLAS, v15's 128×256 cluster candidate
dealing out whole tiles, and the same with its last, partial round dealt out by k-blocks. Each
time is a do_bench median (L2 flushed between calls); printed per round and as the median over rounds,
as % of cuBLAS in the same round, with each kernel's normwise error and how the schedule splits.
"""

import argparse
import statistics

import torch
import triton
from triton.testing import do_bench

from implementations import v15_warp_specialized as v15
from implementations._check import PRECISIONS, compare, make_inputs, poison, reference

TILES = {"whole tiles": v15.Tile(256, 4, 2, 8), "stream-K": v15.Tile(256, 4, 2, 8, 1)}


def schedule(M: int, N: int, K: int, tile: v15.Tile, clusters: int) -> str:
    """How the kernel's Schedule deals this product out, in words."""
    cluster_tiles = triton.cdiv(triton.cdiv(M, v15.BM), tile.CLUSTER_M) * triton.cdiv(N, tile.BN)
    k_tiles = triton.cdiv(K, v15.BK)
    clusters = min(clusters, cluster_tiles)
    rest = cluster_tiles % clusters
    return (f"{cluster_tiles} cluster tiles on {clusters} clusters: {cluster_tiles // clusters} whole rounds, then "
            f"{rest} tiles × {k_tiles} k-blocks = {rest * k_tiles / clusters:.1f} k-blocks per cluster")


def probe(n: int, dtype: str, rounds: int) -> None:
    precision = PRECISIONS[dtype]
    a, b = make_inputs(n, n, n, precision, "cuda", seed=5)
    ref = reference(a, b)
    c = torch.empty(n, n, device="cuda", dtype=a.dtype)
    runs = {"cuBLAS": lambda: torch.matmul(a, b, out=c)}
    for label, tile in TILES.items():
        runs[label] = v15.launch_tile(a, b, c, tile)
    smem = 4 * (v15.BM * v15.BK + v15.BK * 256) * 2 + v15.C_STAGE_BYTES + v15.BARRIER_BYTES
    for label, tile in TILES.items():
        if tile.STREAM_K:
            clusters = v15.resident_clusters(tile.kernel(a.dtype), a.device, tile.CLUSTER_M, smem)
            print(f"{n}³ {dtype}, {label}: {schedule(n, n, n, tile, clusters)}", flush=True)
    for label, run in runs.items():
        poison(c)
        run()
        print(f"  {label:17} err {compare(c, ref, precision.bound(n)).error:.2e}", flush=True)
    ratios = {label: [] for label in runs if label != "cuBLAS"}
    for r in range(rounds):
        ms = {label: do_bench(run, warmup=25, rep=200) for label, run in runs.items()}
        for label in ratios:
            ratios[label].append(ms["cuBLAS"] / ms[label])
        print(f"  round {r}: " + ", ".join(f"{label} {t:.4f} ms" for label, t in ms.items()), flush=True)
    for label, values in ratios.items() if rounds else ():
        print(f"  {label:17} {statistics.median(values):7.1%} of cuBLAS (median of {rounds}; "
              f"{min(values):.1%}-{max(values):.1%})", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="4096,8192")
    parser.add_argument("--dtypes", default="bf16,fp16")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(torch.cuda.get_device_name(), "triton", triton.__version__, flush=True)
    for n in map(int, args.sizes.split(",")):
        for dtype in args.dtypes.split(","):
            probe(n, dtype, args.rounds)


if __name__ == "__main__":
    main()
