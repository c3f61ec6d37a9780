"""v11's fp32 tiles against cuBLAS (GPU only): CUDA C tiles from the working tree beside the same tiles
built from other copies of the sources, Gluon tiles, and the Triton autotuned launch.

    git archive <rev> kernels_cuda | tar -x -C build/baseline
    python scripts/fp32_loop_probe.py [--sources base=build/baseline/kernels_cuda;...] [--sizes 4096,1000x1100x1028]
                                      [--rounds 3] [--tiles "128,256,8,64,64,3,16;128,128,8,32,64,3,8"]
                                      [--gluon "128,256,16,64,64,4,8;..."] [--gluon-sources label=FILE;...]
                                      [--triton]

fp32 with TF32 off. For each size (n for n³, or MxNxK), in --rounds interleaved rounds (scripts/_probe.py):
cuBLAS, each CUDA tile (BM,BN,BK,WM,WN,STAGES,GROUP_M) from the working tree's v11 and from each --sources
directory (a kernels_cuda/ of another revision or an experiment; kernels without the ALIGNED template
parameter take the `aligned` flag as a trailing int argument, as before it), each --gluon tile (v11's
Gluon kernel, which need not be among its candidates; with --gluon-knobs, once per set of its other
constexpr parameters), each --gluon tile from each --gluon-sources file (another revision's
implementations/v11_autotuned.py, run with its own default knobs), and with --triton v11's `triton.autotune` launch
(its search runs at the first call). Each line gives the normwise error against a float64 reference
and the kernel's registers.
"""

import argparse
import importlib.util
from pathlib import Path

import numpy as np
import torch
import triton
from _probe import check_then_time, parse_size

from implementations import v11_autotuned as v11
from implementations.core.check import PRECISIONS, make_inputs, reference
from implementations.core.cuda_c import COMPILE_OPTIONS, _cupy_stream, _kernel_arg, cpp_bool, cupy, rows_aligned
from implementations.core.env import set_fp32_matmul

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


def gluon_module(label: str, path: Path):
    """Another revision's v11 module, loaded inside the `implementations` package (it imports relatively;
    its Variant wants a rung module's name)."""
    spec = importlib.util.spec_from_file_location(f"implementations.v11_{label}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def resources(label: str, kernel) -> str:
    if hasattr(kernel, "num_regs"):  # CuPy
        return f"regs {kernel.num_regs:3d} local {kernel.local_size_bytes} B"
    if hasattr(kernel, "n_regs"):  # Triton
        return f"regs {kernel.n_regs:3d} spills {kernel.n_spills} smem {kernel.metadata.shared} B"
    return ""


def probe(shape, rounds: int, tiles: list[v11.Tile], sources: dict[str, Path], gluon: list[v11.Tile],
          gluon_knobs: list[dict], gluon_sources: dict, triton_autotuned: bool) -> None:
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
    for tile in gluon:
        label = f"{'-'.join(map(str, tile))} gluon"
        for knobs in gluon_knobs:
            knob_label = " ".join(f"{k}={v}" for k, v in knobs.items())
            runs[f"{label} {knob_label}".strip()] = v11.launch_gluon(a, b, c, tile, **knobs)
        for name, module in gluon_sources.items():
            runs[f"{label} {name}"] = module.launch_gluon(a, b, c, module.Tile(*tile))
    if triton_autotuned:
        runs["triton autotuned"] = v11.autotuned_triton(a, b, c)
    print(f"{M}x{N}x{K} fp32, rows aligned: {bool(rows_aligned(a, b, c))}", flush=True)
    check_then_time(runs, c, ref, precision.bound(K), rounds, resources)
    if triton_autotuned:
        print(f"  triton autotuned chose: {runs['triton autotuned'].chosen()}", flush=True)


def tile_list(spec: str) -> list[v11.Tile]:
    return [v11.Tile(*map(int, item.split(","))) for item in spec.split(";") if item]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sources", default="", help="label=DIR;...: kernels_cuda/ directories to compare with")
    parser.add_argument("--sizes", default="4096")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tiles", default=DEFAULT_TILES, help="CUDA C: BM,BN,BK,WM,WN,STAGES,GROUP_M;...")
    parser.add_argument("--gluon", default="", help="Gluon: BM,BN,BK,WM,WN,STAGES,GROUP_M;...")
    parser.add_argument("--gluon-knobs", default="", help="KEY=V,KEY=V;...: each --gluon tile with each set "
                        "of the Gluon kernel's other constexprs (v11.GLUON_KNOBS: the defaults)")
    parser.add_argument("--gluon-sources", default="", help="label=FILE;...: v11 modules of other revisions whose "
                        "Gluon kernel runs each --gluon tile too")
    parser.add_argument("--triton", action="store_true", help="v11's triton.autotune launch as well")
    args = parser.parse_args()
    tiles = tile_list(args.tiles)
    sources = {label: Path(d) for label, d in (item.split("=") for item in args.sources.split(";") if item)}
    unknown = [str(t) for t in tiles if t not in v11.CUDA_CANDIDATES]
    if unknown:
        parser.error(f"not among v11's CUDA candidates: {'; '.join(unknown)}")
    knobs = [{k: int(v) for k, v in (kv.split("=") for kv in item.split(","))} for item in args.gluon_knobs.split(";")
             if item] or [{}]
    gluon_sources = {label: gluon_module(label, Path(f)) for label, f in
                     (item.split("=") for item in args.gluon_sources.split(";") if item)}
    print(torch.cuda.get_device_name(), "triton", triton.__version__, set_fp32_matmul(tf32=False), flush=True)
    for size in args.sizes.split(","):
        probe(parse_size(size), args.rounds, tiles, sources, tile_list(args.gluon), knobs, gluon_sources, args.triton)


if __name__ == "__main__":
    main()
