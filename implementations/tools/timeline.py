"""Where v15 CUDA C's time goes, CTA by CTA: the kernel's own stamps, read back after each launch.

    python -m implementations.tools.timeline [--size 4096] [--batch B] [--dtype bf16] [--tile 256,4,2,8,0] [--launches 5]
        [--save F.npz]
    python -m implementations.tools.timeline --groups ramp [--tile 256,4,2,8,0]    (v18's grouped kernel)
    python -m implementations.tools.timeline --analyse F.npz [F.npz ...]     (no GPU: saved stamps)

Each CTA's first consumer thread stamps its SM, the global timer (ns, one clock for all SMs) and the SM's
cycle counter when it starts and ends, and the cycle counter as it finishes the multiplies of each of its
first 11 tiles (kernels_cuda/v15_warp_specialized.cu, Timeline). Each launch follows an L2 flush, as in
the benchmarks. Per launch it prints:
- span: first start to last end (the kernel's time, less the launch and the stores still in flight);
- start skew: first to last CTA start;
- the tiles each CTA took (from the schedule), and for the CTAs that took the most, when they ended:
  earliest, median, last (a static schedule ends with its slowest CTA; a dynamic one could give an early
  CTA the last tiles);
- cycles per tile: the first (it waits for the ring to fill from DRAM) and the others, mean and spread
  over CTAs, the SM clock each CTA saw, and the mean tile of each round (with --groups: which groups
  the round's tiles belong to);
- what a dynamic schedule could save at most: the last end less the median end of the CTAs that took
  the most tiles;
- from the end of the last tile's multiplies to the end: its epilogue, until its stores have read the staging
  buffer.
--analyse reads saved launches and asks whether a dynamic schedule would pay: whether a CTA's cycles per
tile are its own (correlated from launch to launch, which a schedule could exploit) or chance, and, drawing
tile times from the measured ones, the mean end of the static schedule against a greedy dynamic one (each
tile after the first round to the cluster that frees first).
"""

import argparse
import statistics

import numpy as np
import torch
import triton

from .. import v15_warp_specialized as v15
from .. import v18_grouped as v18
from ..core.check import PRECISIONS, ROUTINGS, compare, make_inputs, make_offsets, parse_groups, poison, reference
from ..core.tasks import non_negative, parse_sizes, positive

SM, START_NS, START_CLK, END_NS, END_CLK, TILES = range(6)


def cycles_per_tile(stamps: np.ndarray) -> np.ndarray:
    """Cycles from each CTA's start to its first tile's end, then from each tile's end to the next's (the
    last axis: TIMELINE_TILES; zeros and negatives past the tiles a CTA took)."""
    marks = np.concatenate([stamps[..., START_CLK:START_CLK + 1], stamps[..., TILES:]], axis=-1)
    return np.diff(marks.astype(np.float64), axis=-1)


def summarise(stamps: np.ndarray, taken: np.ndarray) -> dict:
    """One launch's stamps (CTAs × TIMELINE_SLOTS) and the tiles each CTA took -> the figures the docstring
    lists (cycles per tile from the first TIMELINE_TILES only). CTAs that took no tile (a grouped grid sized for
    more tiles than the groups have) are left out."""
    stamps, taken = stamps[taken > 0], taken[taken > 0]
    start, end = stamps[:, START_NS], stamps[:, END_NS]
    tiles = stamps[:, TILES:]
    most = taken.max()
    busiest = taken == most
    t0 = start.min()
    ends = (end[busiest] - t0) / 1e3
    ghz = (stamps[:, END_CLK] - stamps[:, START_CLK]) / (end - start)
    durations = cycles_per_tile(stamps)
    first = durations[:, 0]
    stamped = np.minimum(taken, tiles.shape[1])
    later = np.concatenate([durations[i, 1:stamped[i]] for i in range(len(stamps))])
    whole = taken <= tiles.shape[1]  # CTAs whose every tile is stamped: the rest of their time is the epilogue
    last = tiles[np.arange(len(stamps)), stamped - 1]
    epilogue = (stamps[whole, END_CLK] - last[whole]).astype(np.float64)
    rounds = [durations[stamped > r, r] for r in range(int(stamped.max()))]
    return {
        "span_us": (end.max() - t0) / 1e3,
        "skew_us": (start.max() - t0) / 1e3,
        "tiles": dict(zip(*np.unique(taken, return_counts=True))),
        "end_first_us": ends.min(), "end_median_us": float(np.median(ends)), "end_last_us": ends.max(),
        "first_tile_kcyc": (first.mean() / 1e3, first.min() / 1e3, first.max() / 1e3),
        "tile_kcyc": (later.mean() / 1e3, later.min() / 1e3, later.max() / 1e3) if later.size else None,
        "epilogue_kcyc": ((epilogue.mean() / 1e3, epilogue.min() / 1e3, epilogue.max() / 1e3) if epilogue.size
                          else None),
        "ghz": (ghz.mean(), ghz.min(), ghz.max()),
        "round_kcyc": [r.mean() / 1e3 for r in rounds],
        "dynamic_saves_at_most_us": ends.max() - float(np.median(ends)),
    }


def tile_cycles(stamps: np.ndarray, taken: np.ndarray, cluster: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(first, later, per_cta) for launches × CTAs × slots: each cluster's first tile and later tiles in
    cycles (its slowest CTA's: a cluster's CTAs wait for each other's share of B), and each CTA's mean
    later tile per launch."""
    cycles = cycles_per_tile(stamps)
    stamped = np.minimum(taken, cycles.shape[2])
    per_cta = np.array([[cycles[launch, cta, 1:stamped[cta]].mean() for cta in range(cycles.shape[1])]
                        for launch in range(cycles.shape[0])])
    launches, ctas, slots = cycles.shape
    clusters = cycles.reshape(launches, ctas // cluster, cluster, slots).max(axis=2)
    first = clusters[:, :, 0].ravel()
    later = np.concatenate([clusters[:, g, 1:stamped[cluster * g]].ravel() for g in range(clusters.shape[1])])
    return first, later, per_cta


def simulate(first: np.ndarray, later: np.ndarray, tiles: int, clusters: int, trials: int = 2000,
             seed: int = 0) -> tuple[float, float]:
    """Mean end in cycles of the static schedule (cluster g takes tiles g, g + G, ...) and of a greedy
    dynamic one, tile times drawn from the measured first and later tiles."""
    rng = np.random.default_rng(seed)
    static, dynamic = [], []
    counts = np.array([len(range(g, tiles, clusters)) for g in range(clusters)])
    for _ in range(trials):
        starts = rng.choice(first, clusters)
        static.append(max(starts[g] + rng.choice(later, counts[g] - 1).sum() for g in range(clusters)))
        free = rng.choice(first, clusters)
        for _ in range(tiles - clusters):
            free[np.argmin(free)] += rng.choice(later)
        dynamic.append(free.max())
    return float(np.mean(static)), float(np.mean(dynamic))


def analyse(path: str) -> None:
    saved = np.load(path)
    stamps, taken = saved["stamps"], saved["taken"]
    cluster = int(v15.Tile(*map(int, saved["tile"])).CLUSTER_M)
    first, later, per_cta = tile_cycles(stamps, taken, cluster)
    launches = len(stamps)
    corr = [np.corrcoef(per_cta[i], per_cta[j])[0, 1] for i in range(launches) for j in range(i + 1, launches)]
    mean = per_cta.mean(axis=0)
    static, dynamic = simulate(first, later, int(taken[::cluster].sum()), len(taken) // cluster)
    shape, tile = "x".join(map(str, saved["shape"])), ",".join(map(str, saved["tile"]))
    print(f"{path}: {shape}, tile {tile}, {launches} launches\n"
          f"  a CTA's mean later tile against the same CTA's in another launch: correlation "
          f"{np.median(corr):+.2f} (median over pairs of launches); CTAs' means over the launches "
          f"{mean.min() / 1e3:.1f}-{mean.max() / 1e3:.1f} K cycles, single tiles {later.min() / 1e3:.1f}-"
          f"{later.max() / 1e3:.1f} K\n"
          f"  static schedule {static / 1e3:.1f} K cycles, greedy dynamic {dynamic / 1e3:.1f} K: "
          f"{1 - dynamic / static:.2%} less", flush=True)


def report(label: str, s: dict) -> None:
    tiles = ", ".join(f"{n} CTAs took {t}" for t, n in sorted(s["tiles"].items()))
    f, t, g = s["first_tile_kcyc"], s["tile_kcyc"], s["ghz"]
    later = f"; later tiles {t[0]:.1f} K cycles ({t[1]:.1f}-{t[2]:.1f})" if t else ""
    e = s["epilogue_kcyc"]
    later += f"; the last tile's multiplies to the end {e[0]:.1f} K cycles ({e[1]:.1f}-{e[2]:.1f})" if e else ""
    print(f"  {label}: span {s['span_us']:.1f} µs, start skew {s['skew_us']:.2f} µs; {tiles}\n"
          f"    the busiest CTAs ended at {s['end_first_us']:.1f} / {s['end_median_us']:.1f} / "
          f"{s['end_last_us']:.1f} µs (earliest / median / last): a dynamic schedule could save at most "
          f"{s['dynamic_saves_at_most_us']:.2f} µs\n"
          f"    first tile {f[0]:.1f} K cycles ({f[1]:.1f}-{f[2]:.1f}){later}; SM clock {g[0]:.3f} GHz "
          f"({g[1]:.3f}-{g[2]:.3f})\n"
          f"    mean tile by round (K cycles): {', '.join(f'{k:.1f}' for k in s['round_kcyc'])}", flush=True)


def round_groups(groups: tuple[int, ...], N: int, tile: v15.Tile, clusters: int) -> list[str]:
    """For each round of `clusters` cluster tiles (the schedule's, whole tiles), the groups its tiles belong to."""
    owner = [g for g, rows in enumerate(groups) for _ in range(v18.cluster_tiles(N, (rows,), tile))]
    return [f"{min(owner[r:r + clusters])}-{max(owner[r:r + clusters])}" for r in range(0, len(owner), clusters)]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", help="n for n³, or MxNxK (default: 4096, or the routing's with --groups)")
    parser.add_argument("--groups", help="v18's grouped product instead, its groups as compare.py's --groups "
                                         "(a routing: ramp, mixtral; a group count; the rows of each group)")
    parser.add_argument("--batch", type=non_negative(int), default=0,
                        help="a batch of this many products of --size in one launch")
    parser.add_argument("--dtype", default="bf16", choices=["bf16", "fp16"])
    parser.add_argument("--tile", default="256,4,2,8,0",
                        help="BN,STAGES,CLUSTER_M,GROUP_M,STREAM_K[,BM,SPLIT_K,CONSUMERS_N] (a candidate)")
    parser.add_argument("--launches", type=positive(int), default=5)
    parser.add_argument("--save", help="also write every launch's raw stamps to this .npz")
    parser.add_argument("--analyse", nargs="+", metavar="NPZ", help="analyse saved stamps instead (no GPU)")
    args = parser.parse_args()
    if args.analyse:
        for path in args.analyse:
            analyse(path)
        return
    spec = parse_groups(args.groups) if args.groups else None
    module = v18 if spec else v15
    tile = v15.Tile(*map(int, args.tile.split(",")))
    whole = module.CUDA_CANDIDATES + (() if spec else v15.CUDA_UNPAIRED_CANDIDATES)
    if tile not in whole:
        parser.error(f"--tile must be one of {module.__name__}'s candidates: {', '.join(map(str, whole))}")
    if spec and args.batch:
        parser.error("--batch and --groups: one or the other")
    if args.batch < 0:
        parser.error("--batch: a number of products, 1 or more (0, the default: one product, no batch)")
    if tile.STREAM_K or tile.SPLIT_K > 1:
        parser.error("the timeline's per-CTA tile counts assume whole tiles (STREAM_K=0, SPLIT_K=1)")
    size = args.size or ("x".join(map(str, ROUTINGS[spec.routing].shape)) if spec and spec.routing else "4096")
    (M, N, K), = parse_sizes(size)
    groups = spec.split(M) if spec else ()
    precision = PRECISIONS[args.dtype]
    a, b = make_inputs(M, N, K, precision, "cuda", seed=5, batch=args.batch, groups=groups)
    products = max(args.batch, 1)
    c = torch.empty(*a.shape[:-2], M, N, device="cuda", dtype=a.dtype)
    kernel = tile.kernel(a.dtype, "nn", "NoEpilogue", "Groups" if groups else "NoGroups")
    fit = v15.resident_clusters(module.KERNELS, kernel, a.device, tile.CLUSTER_M, v15.shared_bytes(tile),
                                tile.threads)
    clusters = min(fit, v15.most_clusters(M, N, len(groups) or products, tile, bool(groups)))  # the grid, as launched
    # the cluster tiles, as the kernel counts them
    total = v18.cluster_tiles(N, groups, tile) if groups else products * v15.cluster_tiles(M, N, tile)
    timeline = torch.zeros(clusters * tile.CLUSTER_M * v15.TIMELINE_SLOTS, device="cuda", dtype=torch.int64)
    if groups:
        refresh, runs = v18.prepare_cuda(a, b, c, (tile,), make_offsets(groups, "cuda"), timeline=timeline)
    else:
        refresh, runs = v15.prepare_cuda(a, b, c, (tile,), timeline=timeline)
    poison(c)
    refresh()
    runs[tile]()
    error = compare(c, reference(a, b, groups=groups), precision.bound(K)).error
    print(f"{torch.cuda.get_device_name()} triton {triton.__version__}; {f'{args.batch}×' if args.batch else ''}"
          f"{M}x{N}x{K} {args.dtype}"
          f"{f' G={len(groups)} {groups}' if groups else ''}, {tile}: {clusters} clusters of {tile.CLUSTER_M}; "
          f"err {error:.2e}", flush=True)
    if groups:
        print(f"  groups of each round's tiles: {', '.join(round_groups(groups, N, tile, clusters))}", flush=True)
    # Cluster g takes cluster tiles g, g + G, ... (G clusters): the kernel's Schedule for whole tiles.
    taken = np.array([len(range(cta // tile.CLUSTER_M, total, clusters)) for cta in range(clusters * tile.CLUSTER_M)])
    cache = torch.empty(256 * 1024 * 1024 // 4, device="cuda", dtype=torch.int32)  # larger than the L2
    summaries, raw = [], []
    for launch in range(args.launches):
        cache.zero_()
        timeline.zero_()
        refresh()
        runs[tile]()
        torch.cuda.synchronize()
        raw.append(timeline.view(-1, v15.TIMELINE_SLOTS).cpu().numpy())
        summaries.append(summarise(raw[-1], taken))
        report(f"launch {launch}", summaries[-1])
    if args.save:
        np.savez_compressed(args.save, stamps=np.stack(raw), taken=taken, shape=(M, N, K), tile=tuple(tile))
    if len(summaries) > 1:
        print(f"  median over {len(summaries)} launches: span "
              f"{statistics.median(s['span_us'] for s in summaries):.1f} µs, a dynamic schedule could save at most "
              f"{statistics.median(s['dynamic_saves_at_most_us'] for s in summaries):.2f} µs", flush=True)


if __name__ == "__main__":
    main()
