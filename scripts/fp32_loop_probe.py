"""v11 CUDA C tiles from the working tree beside the same tiles built from other copies of the sources,
and cuBLAS (GPU only).

    git archive <rev> kernels_cuda | tar -x -C build/baseline
    python scripts/fp32_loop_probe.py [--sources base=build/baseline/kernels_cuda;...] [--sizes 4096,1000x1100x1028]
                                      [--rounds 3] [--tiles "128,256,8,64,64,3,16;128,128,8,32,64,3,8"]

fp32 with TF32 off. For each size (n for n³, or MxNxK), in --rounds interleaved rounds: cuBLAS, each
tile (BM,BN,BK,WM,WN,STAGES,GROUP_M) from the working tree's v11 and from each --sources directory (a
kernels_cuda/ of another revision or an experiment; kernels without the ALIGNED template parameter
take the `aligned` flag as a trailing int argument, as before it). Times are do_bench medians (L2
flushed between calls), printed per round and as the median over rounds as % of cuBLAS in the same
round, with each kernel's registers and normwise error against a float64 reference.
"""

import argparse
import statistics
from pathlib import Path

import numpy as np
import torch
import triton
from triton.testing import do_bench

from implementations import v11_autotuned as v11
from implementations._check import PRECISIONS, compare, make_inputs, poison, reference
from implementations._cuda import COMPILE_OPTIONS, _cupy_stream, _kernel_arg, cpp_bool, cupy, rows_aligned
from implementations._env import set_fp32_matmul

DEFAULT_TILES = "128,256,8,64,64,3,16;128,128,8,32,64,3,8"


def source_run(directory: Path, a, b, c, tile: v11.Tile):
    """The tile compiled from another copy of the sources, bound to these operands."""
    cp = cupy()
    code = (directory / "v11_autotuned.cu").read_text()
    aligned = rows_aligned(a, b, c)
    templated = "bool ALIGNED" in code
    name = f"autotuned<{','.join(map(str, tile))}{f',{cpp_bool(aligned)}' if templated else ''}>"
    options = tuple(o for o in COMPILE_OPTIONS if not o.startswith("-I")) + (f"-I{directory}",)
    module = cp.RawModule(code=code, options=options, name_expressions=[name])
    kernel = module.get_function(name)
    M, K = a.shape
    N = b.shape[1]
    grid = tile.grid(M, N)
    flag = () if templated else (aligned,)
    args = tuple(_kernel_arg(x) for x in (a, b, c, np.int32(M), np.int32(N), np.int32(K), *flag))

    def run():
        with _cupy_stream(cp, torch.cuda.current_stream()):
            kernel(grid, (tile.threads,), args)
        return kernel

    return run


def probe(shape, rounds: int, tiles: list[v11.Tile], sources: dict[str, Path]) -> None:
    precision = PRECISIONS["fp32"]
    M, N, K = shape
    a, b = make_inputs(M, N, K, precision, "cuda", seed=5)
    ref = reference(a, b)
    c = torch.empty(M, N, device="cuda")
    runs = {"cuBLAS": lambda: torch.matmul(a, b, out=c)}
    for tile in tiles:
        label = "-".join(map(str, tile))
        runs[f"{label} tree"] = v11.launch_candidate(a, b, c, tile)
        for name, directory in sources.items():
            runs[f"{label} {name}"] = source_run(directory, a, b, c, tile)
    print(f"{M}x{N}x{K} fp32, rows aligned: {bool(rows_aligned(a, b, c))}", flush=True)
    for label, run in runs.items():
        poison(c)
        kernel = run()
        regs = f"regs {kernel.num_regs:3d} local {kernel.local_size_bytes} B" if hasattr(kernel, "num_regs") else ""
        print(f"  {label:32} err {compare(c, ref, precision.bound(K)).error:.2e} {regs}", flush=True)
    ratios = {label: [] for label in runs if label != "cuBLAS"}
    for r in range(rounds):
        order = list(runs.items()) if r % 2 == 0 else list(reversed(runs.items()))
        ms = {label: do_bench(run, warmup=25, rep=200) for label, run in order}
        for label in ratios:
            ratios[label].append(ms["cuBLAS"] / ms[label])
        print(f"  round {r}: " + ", ".join(f"{label} {ms[label]:.4f} ms" for label in runs), flush=True)
    for label, values in ratios.items() if rounds else ():
        print(f"  {label:32} {statistics.median(values):7.1%} of cuBLAS (median of {rounds}; "
              f"{min(values):.1%}-{max(values):.1%})", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sources", default="", help="label=DIR;...: kernels_cuda/ directories to compare with")
    parser.add_argument("--sizes", default="4096")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tiles", default=DEFAULT_TILES, help="BM,BN,BK,WM,WN,STAGES,GROUP_M;...")
    args = parser.parse_args()
    tiles = [v11.Tile(*map(int, item.split(","))) for item in args.tiles.split(";")]
    sources = {label: Path(d) for label, d in (item.split("=") for item in args.sources.split(";") if item)}
    unknown = [str(t) for t in tiles if t not in v11.CUDA_CANDIDATES]
    if unknown:
        parser.error(f"not among v11's CUDA candidates: {'; '.join(unknown)}")
    print(torch.cuda.get_device_name(), "triton", triton.__version__, set_fp32_matmul(tf32=False), flush=True)
    for size in args.sizes.split(","):
        shape = tuple(map(int, size.split("x"))) if "x" in size else (int(size),) * 3
        probe(shape, args.rounds, tiles, sources)


if __name__ == "__main__":
    main()
