"""Every v15 Triton configuration the search could be given at the few-tile shapes (the persistent ones and
split-K over tile sizes, slice counts and ring depths), and the CUDA C candidates at a ragged and an aligned
large shape with each L2 promotion of their tensor maps, all timed in CUDA graphs against cuBLAS; each
output checked. What chose v15's SPLIT_K_CONFIGS, and what ruled out L2 promotion as the cause of the
Triton kernel's loss at ragged shapes (docs/notes/v15.md). Needs an H100 or H200; about three minutes.

    python scripts/small_probe.py --json out/small_probe.json

With --sizes, the candidates v15's searches would be given at those shapes (and --batch), plus tiles and
configs that are not candidates (--cuda, --triton), each timed both ways, events (L2 flushed, launch
included) and in a CUDA graph, against cuBLAS timed the same ways:

    python scripts/small_probe.py --sizes 1024,128x4096x4096 --cuda "128,4,2,8,0,64" --triton "64,128,64,4,4"

With --rung 11, the same for fp32 (TF32 off): v11's candidates, and tiles given as BM,BN,BK,WM,WN,STAGES,GROUP_M
and, for CUDA C, optionally C_STORE (--cuda; in --triton a Gluon tile, where five numbers are a `tl.dot` config
BLOCK_M,BLOCK_N,BLOCK_K,warps,stages):

    python scripts/small_probe.py --rung 11 --sizes 1000x1100x1028 --cuda "80,128,8,80,32,4,8"

With --rung 19, v19's fp8 candidates (nt, per-tensor scales) against torch._scaled_mm, plus --cuda tiles and
--triton configs as v15's; --swapped no or only leaves out the swapped ones (Cᵀ = Bᵀ·Aᵀ) or times them alone:

    python scripts/small_probe.py --rung 19 --swapped only --sizes 16x4096x4096 --cuda "16,12,1,8,0,64,1,1,1"

With --cluster-policy, the CUDA C pairs (CLUSTER_M = 2) with that placement preference for their clusters, to set
beside a run without it (a launch's placement decides how much of what neighbouring tiles share the L2 reads once:
docs/notes/v15.md, "One-CTA clusters"):

    python scripts/small_probe.py --sizes 3000x5000x7000,4096 --cluster-policy load-balancing

With --pad-copies, the copy that pads a B of each --sizes shape (K×N) to a 128-byte row pitch, torch's
strided copy against v14's copy_rows kernel, each timed with events:

    python scripts/small_probe.py --pad-copies --sizes 3000x5000x7000

With --layout-copies, the copy of a B of each --sizes shape (K×N, and --batch) into the other storage order and
back, in fp32, bf16 and fp8: torch's `copy_` against core/relayout's CUDA C copy and its Triton one at several
tiles, and a plain copy in the same storage order, each timed with events:

    python scripts/small_probe.py --layout-copies --sizes 4096,512 --batch 64

With --profile, each of those runs once, untimed, inside the NVTX ranges that scripts/ncu_sections.sh --probe
hands Nsight Compute.
"""

import argparse
import functools
import itertools
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from triton.testing import do_bench, do_bench_cudagraph  # noqa: E402

from implementations import v11_autotuned as v11  # noqa: E402
from implementations import v14_wgmma_tma as v14  # noqa: E402
from implementations import v15_warp_specialized as v15  # noqa: E402
from implementations import v19_fp8 as v19  # noqa: E402
from implementations.core.bench import scaled_mm_prepare  # noqa: E402
from implementations.core.check import LAYOUTS, PRECISIONS, check, make_inputs, make_scales  # noqa: E402
from implementations.core.cuda_c import function_pointer  # noqa: E402
from implementations.core.env import set_cublas_math  # noqa: E402
from implementations.core.tasks import parse_sizes  # noqa: E402
from implementations.tools.profile import RANGE, launch_range  # noqa: E402

FEW_TILES = [(16, 4096, 4096), (128, 8192, 8192), (1024, 1024, 1024), (512, 512, 512), (256, 256, 256),
             (64, 8192, 8192), (16, 14336, 4096)]
LARGE = [(3000, 5000, 7000), (3072, 5120, 7168)]
PROFILE, LAUNCHES = False, 0  # --profile; the launches profiled so far
CLUSTER_POLICY = None  # --cluster-policy


def split_k_configs():
    """Split-K over 64- and 128-row tiles of 64 to 256 columns, 2 to 8 slices, 4 or 6 stages (those that fit)."""
    return [v15.tma_config(bm, bn, 64, 4 if bm * bn <= 64 * 128 else 8, stages, SPLIT_K=split)
            for bm, bn, split, stages in itertools.product((64, 128), (64, 128, 256), (2, 3, 4, 6, 8), (4, 6))
            if not (bm == 128 and bn == 256 and (stages == 6 or split > 4))]


def graph_us(fn):
    return 1000 * do_bench_cudagraph(fn, rep=30)


def events_us(fn):
    return 1000 * do_bench(fn, warmup=10, rep=50)


def profiled(label, call):
    """--profile: `call` once more inside the NVTX ranges Nsight Compute is told to profile (as the profile
    child's, implementations/tools/profile.py), its launch named on stdout."""
    global LAUNCHES
    with torch.cuda.nvtx.range(RANGE), torch.cuda.nvtx.range(launch_range(LAUNCHES)):
        call()
        torch.cuda.synchronize()
    print(f"profiled {LAUNCHES}: {label}", flush=True)
    LAUNCHES += 1


def prefer_cluster_policy(kernel, policy: str) -> None:
    """--cluster-policy: the cluster scheduler's placement preference for this CuPy kernel's function
    (cuFuncSetAttribute; the driver may ignore it), for every launch after."""
    import cupy
    from cuda.bindings import driver

    value = {"spread": driver.CUclusterSchedulingPolicy.CU_CLUSTER_SCHEDULING_POLICY_SPREAD,
             "load-balancing": driver.CUclusterSchedulingPolicy.CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING}[policy]
    attribute = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE
    cupy.cuda.driver.funcSetAttribute(function_pointer(kernel), int(attribute), int(value))


def probe(label, shape, prepare, out, batch=0, timers=(("graph", graph_us),), dtype="bf16", layout="nn"):
    """Time (each of `timers`) and check every run `prepare(a, b, c)` binds, print the fastest twelve by the
    first timer, keep all in `out`; with --profile, run each once for Nsight Compute instead of timing it. fp8:
    `prepare(a, b, c, scales=...)` with per-tensor scales, C in bf16, against torch._scaled_mm."""
    precision = PRECISIONS[dtype]
    timers = () if PROFILE else timers
    a, b = make_inputs(*shape, precision, "cuda", 1, layout=layout, batch=batch)
    scales = make_scales(precision, "cuda", 1, shape[0], shape[1])
    c = torch.empty(*a.shape[:-1], shape[1], device="cuda", dtype=torch.bfloat16 if scales is not None else a.dtype)
    refresh, runs = prepare(a, b, c) if scales is None else prepare(a, b, c, scales=scales)
    baseline = (lambda: torch.matmul(a, b)) if scales is None else scaled_mm_prepare(a, b, "none", scales).run
    results = {}
    for cand, run in runs.items():
        def call(run=run):
            refresh()
            return run()
        try:
            kernel = call()
            if CLUSTER_POLICY and getattr(cand, "CLUSTER_M", 1) > 1:
                prefer_cluster_policy(kernel, CLUSTER_POLICY)
            right = check(c, a, b, precision, scales=scales).ok
            if PROFILE:
                profiled(f"{label} {shape} {cand} {'ok' if right else 'WRONG'}", call)
            results[str(cand)] = ([timer(call) for _, timer in timers], right)
        except Exception as exc:  # a configuration that does not fit (shared memory) is reported, not fatal
            results[str(cand)] = (None, str(exc).splitlines()[0][:100])
    cublas = [timer(baseline) for _, timer in timers]
    if PROFILE:
        baseline()
        profiled(f"cublas {shape}", baseline)
        return
    names = " / ".join(name for name, _ in timers)
    print(f"== {label} {f'{batch}×' if batch else ''}{shape}: cuBLAS {names} "
          + " / ".join(f"{us:.2f}" for us in cublas) + " µs", flush=True)
    ranked = sorted((r for r in results.items() if r[1][0]), key=lambda r: r[1][0][0])
    for cand, (times, right) in ranked[:12]:
        cells = "  ".join(f"{us:8.2f} µs {100 * base / us:5.1f}%" for us, base in zip(times, cublas))
        print(f"   {cells} {'ok' if right is True else 'WRONG'}  {cand}", flush=True)
    key = f"{label} {f'{batch}x' if batch else ''}{shape}{'' if layout == 'nn' else ' ' + layout}"
    out[key] = {"timers": names, "cublas_us": cublas, "runs": results}


def triton_config(bm, bn, bk, warps, stages, split_k=1, swap_ab=0, tma=1):
    """A persistent (flattened) config, or a split-K one in `split_k` slices, or (swap_ab) split-K's kernel on
    Cᵀ = Bᵀ·Aᵀ in `split_k` slices (one: unsplit), or (tma=0) v11's pointer kernel, a program per tile."""
    if not tma:
        return v15.tma_config(bm, bn, bk, warps, stages, TMA=False)
    if swap_ab:
        return v15.tma_config(bm, bn, bk, warps, stages, SPLIT_K=split_k, SWAP_AB=True)
    knobs = {"SPLIT_K": split_k} if split_k > 1 else {"FLATTEN": True}
    return v15.tma_config(bm, bn, bk, warps, stages, **knobs)


def probe_sizes(args, out):
    """--sizes: at each shape the candidates v15's searches would be given, plus --cuda and --triton."""
    extra_tiles = [v15.Tile(*map(int, t.split(","))) for t in args.cuda.split()]
    extra_configs = [triton_config(*map(int, t.split(","))) for t in args.triton.split()]
    tiles = v15.CUDA_SEARCH.candidates + tuple(extra_tiles)
    source = v15.CudaSource(v15.__name__, [t.kernel(d, t.kernel_layout("nn")) for d in v15.IS_BF16 for t in tiles],
                            arch="sm_90a")
    timers = (("events", events_us), ("graph", graph_us))

    def prepare_cuda(a, b, c, source=source):
        return v15.prepare_cuda(a, b, c, v15.cuda_candidates(a, b, c) + tuple(extra_tiles), source=source)

    against = args.against and v15.CudaSource(v15.__name__, source.kernels, arch="sm_90a",
                                              directory=args.against.resolve())

    def prepare_triton(a, b, c):
        return v15.prepare_triton(a, b, c, v15.triton_candidates(a, b, c) + tuple(extra_configs))

    for shape in args.sizes:
        probe("cuda", shape, prepare_cuda, out, args.batch, timers)
        if against:
            probe(f"cuda from {args.against}", shape, functools.partial(prepare_cuda, source=against), out, args.batch,
                  timers)
        probe("triton", shape, prepare_triton, out, args.batch, timers)


def probe_sizes_fp32(args, out):
    """--rung 11 --sizes: at each shape v11's candidates in both languages, plus --cuda and --triton."""
    extra_tiles = [v11.Tile(*map(int, t.split(","))) for t in args.cuda.split()]
    numbers = [tuple(map(int, t.split(","))) for t in args.triton.split()]
    extra_triton = [v11.Tile(*n) if len(n) == len(v11.Tile._fields) - 1 else v11._config(*n) for n in numbers]
    tiles = [t for t in v11.CUDA_SEARCH.candidates + tuple(extra_tiles) if t.reads(args.layout)]
    source = v11.CudaSource(v11.__name__, [t.kernel(aligned, args.layout, batched) for aligned in (True, False)
                                           for batched in (False, True) for t in tiles])
    timers = (("events", events_us), ("graph", graph_us))

    def prepare(launch, candidates):
        return lambda a, b, c: (lambda: None, {cand: launch(a, b, c, cand) for cand in candidates})

    cuda = prepare(lambda a, b, c, tile: v11.launch_candidate(a, b, c, tile, source=source), tiles)
    triton = prepare(v11.launch_triton_candidate, v11.TRITON_SEARCH.candidates + tuple(extra_triton))
    set_cublas_math(tf32=False)
    for shape in args.sizes:
        probe("cuda", shape, cuda, out, args.batch, timers, dtype="fp32", layout=args.layout)
        probe("triton", shape, triton, out, args.batch, timers, dtype="fp32", layout=args.layout)


def probe_pad_copies(args, out):
    """--pad-copies: B (K×N, bf16) copied to a 128-byte row pitch by torch and by copy_rows."""
    for M, N, K in args.sizes:
        b = torch.randn(K, N, device="cuda").bfloat16()
        padded, copy = v14.padded_rows(b, v15.B_PITCH)
        view = padded[:, :N]
        gb = 2 * b.numel() * b.element_size() / 1e9
        times = {"torch": events_us(lambda: view.copy_(b)), "copy_rows": events_us(copy)}
        assert torch.equal(view, b)
        print(f"== B {K}x{N} to a {v15.B_PITCH}-byte pitch: " + ", ".join(
            f"{name} {us:.1f} µs ({gb / us * 1e3:.2f} TB/s)" for name, us in times.items()), flush=True)
        out[f"pad copy {K}x{N}"] = times


def probe_layout_copies(args, out):
    """--layout-copies: B (K×N) into the other storage order and back, torch's copy_ against core/relayout's copies
    in each language, the Triton one at its tile and others; "plain" is torch copying B into its own storage
    order, the bandwidth a transpose can at best reach."""
    from unittest import mock

    from implementations.core import relayout
    from implementations.core.registry import stored_as

    triton_tiles = ((32, 4), (64, 4), (64, 8), (128, 8))
    for (M, N, K), dtype in itertools.product(args.sizes, (torch.float32, torch.bfloat16, torch.float8_e4m3fn)):
        shape = (args.batch, K, N) if args.batch else (K, N)
        stored_b = torch.randn(shape, device="cuda").to(dtype)
        for src in (stored_b, stored_b.mT.contiguous().mT):  # row-major, then a transposed view
            dst = stored_as(src, "t" if src.is_contiguous() else "n")
            same = torch.empty_like(src)
            copies = {"plain": lambda: same.copy_(src), "torch": lambda: dst.copy_(src),
                      "cuda": relayout.bind("cuda", dst, src)}
            for tile, warps in triton_tiles:
                with mock.patch.object(relayout, "TRITON_TILE", tile), mock.patch.object(relayout, "TRITON_WARPS", warps):
                    copies[f"triton {tile} w{warps}"] = relayout.bind("triton", dst, src)
            gb = 2 * src.numel() * src.element_size() / 1e9
            as_bits = relayout.BITS[src.element_size()][0]
            times = {}
            for name, copy in copies.items():
                target = same if name == "plain" else dst
                target.view(as_bits).fill_(-1)
                copy()
                torch.cuda.synchronize()
                assert torch.equal(target.view(as_bits), src.view(as_bits)), name
                times[name] = events_us(copy)
            what = f"{'×'.join(map(str, shape))} {str(dtype).removeprefix('torch.')} " + (
                "row-major to a transposed view" if src.is_contiguous() else "a transposed view to row-major")
            print(f"== {what}: " + ", ".join(f"{name} {us:.1f} µs ({gb / us * 1e3:.2f} TB/s)"
                                             for name, us in times.items()), flush=True)
            out[f"layout copy {what}"] = times


def probe_sizes_fp8(args, out):
    """--rung 19 --sizes: v19's candidates in both languages, the swapped ones among them for a few rows, nt, with
    per-tensor scales, plus --cuda and --triton; --swapped no/only leaves the swapped ones out or takes only them."""
    cuda = (v19.CUDA_CANDIDATES + v19.CUDA_SPLIT_CANDIDATES + v19.CUDA_SWAP_CANDIDATES
            + tuple(v15.Tile(*map(int, t.split(","))) for t in args.cuda.split()))
    triton = (v19.TRITON_CONFIGS + v19.SPLIT_K_CONFIGS + v19.SWAP_CONFIGS
              + tuple(triton_config(*map(int, t.split(","))) for t in args.triton.split()))
    source = v19.CudaSource(v19.__name__, [t.kernel(v19.FP8, t.kernel_layout("nt")) for t in cuda], arch="sm_90a")

    def prepare_cuda(a, b, c, tiles, scales):
        return v19.prepare_v15_cuda(a, b, c, tiles, source=source, boxes=v19.fp8_boxes, scales=scales)

    timers = (("events", events_us), ("graph", graph_us))
    for shape in args.sizes:
        for label, prepare, candidates in (("cuda", prepare_cuda, cuda), ("triton", v19.prepare_triton, triton)):
            def bind(a, b, c, scales, prepare=prepare, candidates=candidates):
                return prepare(a, b, c, [cand for cand in candidates if kept(cand, args.swapped)],
                               scales=scales)
            probe(f"{label} swapped {args.swapped}", shape, bind, out, args.batch, timers, dtype="fp8", layout="nt")


def kept(candidate, swapped: str) -> bool:
    """--swapped: every candidate ("all"), none of the swapped ones ("no"), or only those ("only")."""
    is_swapped = bool(candidate.SWAP_AB if isinstance(candidate, v15.Tile) else candidate.kwargs.get("SWAP_AB"))
    return swapped == "all" or is_swapped == (swapped == "only")


def probe_split_k_and_promotion(out):
    """Without --sizes: split-K's configs at the few-tile shapes, L2 promotion at the large ones."""
    configs = v15.TRITON_CONFIGS + tuple(split_k_configs())
    for shape in FEW_TILES:
        probe("triton", shape, lambda a, b, c: v15.prepare_triton(a, b, c, configs), out)
    for shape in LARGE:
        for promotion in (256, 128, 0):
            probe(f"cuda promotion {promotion}", shape,
                  lambda a, b, c, p=promotion: v15.prepare_cuda(a, b, c, v15.CUDA_CANDIDATES[:5], l2_promotion=p), out)
        probe("triton", shape, lambda a, b, c: v15.prepare_triton(a, b, c, v15.TRITON_CONFIGS), out)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", type=Path, help="write every time and check here")
    p.add_argument("--sizes", type=parse_sizes, help="probe these shapes instead (N or MxNxK, comma-separated)")
    p.add_argument("--batch", type=int, default=0, help="with --sizes: a batch of this many products")
    p.add_argument("--rung", type=int, choices=(11, 15, 19), default=15,
                   help="with --sizes: v15 in bf16 (default), v11 in fp32 (TF32 off) or v19 in fp8 (nt)")
    p.add_argument("--swapped", choices=("all", "no", "only"), default="all",
                   help="with --rung 19: every candidate, none of the swapped ones, or only those")
    p.add_argument("--layout", choices=LAYOUTS, default="nn",
                   help="with --rung 11: the operands' layout, each read in place (v11's CUDA C nt kernel too)")
    p.add_argument("--cuda", default="", help="with --sizes: CUDA tiles beyond the candidates, space-separated, each "
                   "BN,STAGES,CLUSTER_M,GROUP_M[,STREAM_K,BM,SPLIT_K,CONSUMERS_N,SWAP_AB] (v15, and v19 on fp8) or "
                   "BM,BN,BK,WM,WN,STAGES,GROUP_M[,C_STORE] (v11)")
    p.add_argument("--triton", default="", help="with --sizes: Triton configs beyond the candidates, space-separated, "
                   "each BLOCK_M,BLOCK_N,BLOCK_K,num_warps,num_stages[,SPLIT_K[,SWAP_AB[,TMA]]] (v15: persistent and "
                   "flattened, split-K, swapped, or with TMA 0 v11's pointer kernel; v11: a tl.dot config), or a v11 "
                   "Gluon tile BM,BN,BK,WM,WN,STAGES,GROUP_M")
    p.add_argument("--against", type=Path, metavar="DIR",
                   help="with --sizes (v15): also time the CUDA C tiles compiled from DIR/v15_warp_specialized.cu, "
                   "e.g. an earlier commit's (git show REV:kernels_cuda/v15_warp_specialized.cu), beside the working "
                   "tree's")
    p.add_argument("--c-from-registers", action="store_true",
                   help="with --sizes (v15): the CUDA C kernels store C straight from registers, as where TMA "
                   "cannot write C, instead of staging it for a TMA store")
    p.add_argument("--pad-copies", action="store_true",
                   help="with --sizes: time the copy of each B (K×N) to a 128-byte row pitch, torch's and copy_rows")
    p.add_argument("--layout-copies", action="store_true",
                   help="with --sizes: time the copy of each B (K×N, --batch) into the other storage order, torch's "
                   "and core/relayout's in both languages")
    p.add_argument("--cluster-policy", choices=("spread", "load-balancing"),
                   help="with --sizes (v15, v19): the CUDA C pairs' cluster scheduling policy preference, set on each "
                   "kernel after its first launch (Nsight Compute reports spread without it)")
    p.add_argument("--profile", action="store_true",
                   help="with --sizes: run each candidate (and cuBLAS) once inside the NVTX ranges Nsight Compute "
                   "profiles, untimed: scripts/ncu_sections.sh --probe ...")
    args = p.parse_args()
    global PROFILE, CLUSTER_POLICY
    PROFILE = args.profile
    CLUSTER_POLICY = args.cluster_policy
    if args.c_from_registers:  # the launcher's own fallback, taken for every C
        v15.c_tensor_map = lambda c, box, fallback: (fallback, np.int32(0))
    if not torch.cuda.is_available():
        print("small_probe.py needs a CUDA device (sm_90): it times Hopper kernels", file=sys.stderr)
        return 2
    out = {}
    if args.sizes and args.pad_copies:
        probe_pad_copies(args, out)
    elif args.sizes and args.layout_copies:
        probe_layout_copies(args, out)
    elif args.sizes:
        {11: probe_sizes_fp32, 15: probe_sizes, 19: probe_sizes_fp8}[args.rung](args, out)
    else:
        probe_split_k_and_promotion(out)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
