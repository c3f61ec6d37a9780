"""v18 grouped GEMM: G products of different M in one persistent launch (mixture-of-experts).

The idea. A mixture-of-experts layer routes each token to a few of G experts; sorted by expert, A's rows
come in G ragged groups (offsets: each group's end row, as torch._grouped_mm takes them), and group g is
multiplied by expert g's own weights: C[offs[g-1]:offs[g]] = A[offs[g-1]:offs[g]] @ B[g]. A loop of G
matmuls pays G launches, and each small group leaves SMs idle at its tail; padding every group to a
common M computes rows that do not exist. Here one persistent grid walks every group's tiles end to end:
v15's scheduler and kernel, only the map from a tile number to (group, tile row, tile column) is new,
read from the offsets on the device (the launch needs no host sync). A's rows are read across a group's end
(the next group's rows are computed, never stored); B is a 3-D map or descriptor indexed by the group; the
one tile of a group that crosses its end is stored row-masked (in CUDA C the others by TMA).

CUDA C and Triton side by side:

| concept | CUDA C (kernels_cuda/v18_grouped.cu, on v15's kernel) | Triton (below) |
|---|---|---|
| the kernel | v15's, its `Groups` template parameter set | a persistent kernel of v14's parts |
| groups' tiles | laid end to end, dealt out by v15's `Schedule` | laid end to end, `tl.range` over them |
| tile -> group | a cursor per thread, walking the groups once | first tiles of the groups (`tl.cumsum`), |
|  | (each thread's tiles come in increasing order) | the last at or before the tile (`tl.sum`) |
| all tiles | a warp-wide sum over the groups (`__shfl_xor_sync`) | `tl.sum` of the tiles per group |
| A across a group's end | 2-D tensor map, rows past the group not stored | 2-D descriptor, the same |
| B per group | 3-D tensor map, the group as matrix index | 3-D descriptor (v14's `operand_box`) |
| straddling tile | `store_accumulators` masked at the group's end | `tl.store` masked at the group's end |
| interior tiles | stmatrix + TMA store (v15's) | `tl.store` masked the same way (see phase 4) |
| empty group | no tiles | no tiles |
| the last, partial round | v15's stream-K: its k-blocks dealt out, | the same after the persistent loop: each |
|  | a tile's head adds the others' partials | piece counts itself, the last to finish adds |

What Triton does for you: as in v14 and v15, the pipeline, descriptors and wgmma; the group lookup is a
few vector lines over G (padded to a power of two) instead of a cursor, and the compiler hoists the
table out of the tile loop. Left out, as in v15's Triton side: warp specialization and clusters.

Constraints: fp16/bf16 on sm_90a. A row-major (MoE tokens), B per group row-major (G×K×N) or a transposed
view of G stored N×K matrices (nn.Linear's weights): both read in place; other layouts copy A. Offsets:
int32, non-decreasing, the last = A's rows (checked on the host when the run is prepared; the kernels
clamp every group to A's rows besides). A plain product is one group; a batch runs matrix by matrix. The
Triton side looks every tile's group up in vectors of G padded to a power of two: meant for the tens to
hundreds of experts of MoE layers, not thousands of groups.

What it should reach: above torch._grouped_mm (CUTLASS's grouped kernel for bf16) on MoE shapes, and
above the loop of cuBLAS calls even when a CUDA graph removes the loop's launch cost.

Its story (design choices, measurements): docs/notes/v18.md.
"""


import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from .core.cuda_c import CudaSource, check_grid
from .core.registry import Variant
from .core.search import Search
from .core.triton_util import block_of, describe_config, prebound
from .v11_autotuned import grouped_tile
from .v14_wgmma_tma import IS_BF16, operand_box, sm_count, tma_views, zero_product
from .v15_warp_specialized import TRITON_CONFIGS as V15_TRITON_CONFIGS
from .v15_warp_specialized import Tile, launch_candidates, tma_config, tma_problem

LAYOUTS = ("nn", "nt")  # tokens row-major; the experts' weights K×N or N×K (transposed views)
CUDA_CANDIDATES = (
    Tile(256, 4, 2, 8),
    Tile(256, 4, 2, 8, 1),  # the last, partial round of tiles dealt out by k-blocks (stream-K): the groups' tail
    Tile(256, 4, 1, 8),  # no cluster: a group of odd tile rows leaves no half-empty cluster tile
    Tile(128, 6, 2, 8),
    Tile(128, 6, 1, 8),
    Tile(128, 3, 1, 8, 0, 64),  # 64-row tiles: groups of few rows waste less past their ends
    Tile(64, 5, 1, 8, 0, 64),
)
TRITON_CONFIGS = V15_TRITON_CONFIGS + (  # and the last, partial round of tiles dealt out by k-blocks (stream-K)
    tma_config(128, 256, 64, 8, 3, FLATTEN=True, STREAM_K=True),
    tma_config(128, 256, 64, 8, 4, FLATTEN=True, STREAM_K=True),
)
KERNELS = CudaSource(__name__, [t.kernel(d, lay, "NoEpilogue", "Groups") for d in IS_BF16 for lay in LAYOUTS
                                for t in CUDA_CANDIDATES], arch="sm_90a")


def one_group(a: torch.Tensor, b: torch.Tensor, offsets: torch.Tensor | None):
    """(B as G matrices, offsets): a plain product is one group of all of A's rows."""
    if offsets is not None:
        return b, offsets
    return b.unsqueeze(0), torch.tensor([a.shape[0]], dtype=torch.int32, device=a.device)


# ---- CUDA C launcher: v15's candidates, their tiles mapped to the groups ------------------------------------


def prepare_cuda(a, b, c, tiles=CUDA_CANDIDATES, offsets=None, clusters: int | None = None,
                 timeline: torch.Tensor | None = None):
    """(refresh, {tile: launch}) for these candidates on one problem's tensor maps (v15's tma_problem: A 2-D,
    B 3-D, C 2-D), the G groups passed as v15's `products`; `clusters`: a smaller grid (the tests reach
    stream-K's schedule with it); `timeline`: v15's per-CTA stamps (python -m implementations.tools.timeline)."""
    b, offsets = one_group(a, b, offsets)
    problem, refresh = tma_problem(a, b, c)
    problem = problem._replace(products=b.shape[0])
    return refresh, launch_candidates(problem, c, tiles, source=KERNELS, offsets=offsets, clusters=clusters,
                                      timeline=timeline)


def cluster_tiles(N: int, groups: tuple[int, ...], tile: Tile) -> int:
    """How many cluster tiles the groups' rows take (each group's from its first row), as the kernel counts them: a
    group's tile rows CLUSTER_M at a time (CTAs stacked along M), and each row left over alone, its CTAs side by side
    along N."""
    tiles_n = triton.cdiv(N, tile.BN)
    across = triton.cdiv(tiles_n, tile.CLUSTER_M)
    return sum(r // tile.CLUSTER_M * tiles_n + r % tile.CLUSTER_M * across
               for r in (triton.cdiv(rows, tile.BM) for rows in groups))


CUDA_SEARCH = Search(__name__, "cuda", CUDA_CANDIDATES, prepare_cuda, tile=lambda tile: (tile.BM, tile.BN))


def grouped_cuda(a, b, c, offsets=None):
    if a.shape[-1] == 0:
        return zero_product(c)
    return CUDA_SEARCH.tuned(a, b, c, offsets=offsets)


# ---- Triton kernel and launcher -------------------------------------------------------------------------


@triton.jit
def store_rows(c_ptr, out, row, col, row_end, N, stride_cm, stride_cn, BLOCK_M: tl.constexpr,
               BLOCK_N: tl.constexpr):
    """A tile of C from registers, rows below row_end (its group's end) and columns below N only."""
    offs_m = row + tl.arange(0, BLOCK_M)
    offs_n = col + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + offs_m[:, None].to(tl.int64) * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, out, mask=(offs_m[:, None] < row_end) & (offs_n[None, :] < N))


@triton.jit
def locate(tile, firsts, offsets_ptr, M, grid_n, BLOCK_M: tl.constexpr, GROUP_M: tl.constexpr):
    """A tile's group (the last whose first tile is at or before it), its first row, its tile column and the end of
    its group's rows (clamped to A's)."""
    group = tl.sum((firsts <= tile).to(tl.int32), 0) - 1
    first = tl.max(tl.where(firsts <= tile, firsts, 0), 0)
    row_start = tl.minimum(tl.maximum(tl.load(offsets_ptr + group - 1, mask=group > 0, other=0), 0), M)
    row_end = tl.maximum(tl.minimum(tl.load(offsets_ptr + group), M), row_start)
    pid_m, pid_n = grouped_tile(tile - first, tl.cdiv(row_end - row_start, BLOCK_M), grid_n, GROUP_M)
    return group, row_start + pid_m * BLOCK_M, pid_n, row_end


@triton.jit
def multiply(a_desc, b_desc, group, row, pid_n, kb0, kb1, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
             BLOCK_K: tl.constexpr, B_T: tl.constexpr):
    """A tile's k-blocks [kb0, kb1), summed in fp32: phases 2 and 3 of the kernel."""
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kb in range(kb0, kb1):
        a = a_desc.load([row, kb * BLOCK_K])
        b = operand_box(b_desc, group, kb * BLOCK_K, pid_n * BLOCK_N, BLOCK_K, BLOCK_N, B_T, True)
        acc = tl.dot(a, b, acc)
    return acc


@triton.jit
def sk_start(p, units, programs):
    """The first of the stream-K units (k-blocks of the last round's tiles) that program p takes."""
    return (units.to(tl.int64) * p // programs).to(tl.int32)


@triton.jit
def grouped_persistent_kernel(
    a_desc, b_desc, c_ptr, offsets_ptr, partials_ptr, counts_ptr, G, M, N, K, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    FLATTEN: tl.constexpr, G_PAD: tl.constexpr, B_T: tl.constexpr = False, STREAM_K: tl.constexpr = False,
):
    # ---- 1. every group's tiles laid end to end (an empty group has none), walked by the persistent programs;
    #         with STREAM_K the last, partial round of them is left to stream-K, below. Groups are clamped to A's
    #         rows ----
    groups = tl.arange(0, G_PAD)
    ends = tl.minimum(tl.maximum(tl.load(offsets_ptr + groups, mask=groups < G, other=0), 0), M)
    starts = tl.minimum(tl.maximum(tl.load(offsets_ptr + groups - 1, mask=(groups > 0) & (groups < G), other=0), 0), M)
    grid_n = tl.cdiv(N, BLOCK_N)
    tiles = tl.cdiv(tl.maximum(ends - starts, 0), BLOCK_M) * grid_n
    firsts = tl.cumsum(tiles, 0) - tiles
    all_tiles = tl.sum(tiles, 0)
    whole_tiles = all_tiles - all_tiles % tl.num_programs(0) if STREAM_K else all_tiles
    k_tiles = tl.cdiv(K, BLOCK_K)
    for tile in tl.range(tl.program_id(0), whole_tiles, tl.num_programs(0), flatten=FLATTEN):
        group, row, pid_n, row_end = locate(tile, firsts, offsets_ptr, M, grid_n, BLOCK_M, GROUP_M)
        # ---- 2. TMA, k-block by k-block: A's box of the tile's rows (past the group's end: the next group's rows,
        #         computed and never stored; past A: zeros), B's box of the group's matrix ----
        # ---- 3. multiply (wgmma on Hopper): both in `multiply` ----
        acc = multiply(a_desc, b_desc, group, row, pid_n, 0, k_tiles, BLOCK_M, BLOCK_N, BLOCK_K, B_T)
        # ---- 4. write back, rounded to C's type, rows below the group's end only (the tile that crosses into the
        #         next group must not write there). No TMA store beside it: Triton 3.6 cannot flatten the loop
        #         around a branch between the two, and both ways of storing at once overflow shared memory ----
        store_rows(c_ptr, acc.to(c_ptr.dtype.element_ty), row, pid_n * BLOCK_N, row_end, N, stride_cm, stride_cn,
                   BLOCK_M, BLOCK_N)
    if STREAM_K:
        # ---- stream-K: the last round's k-blocks laid end to end ("units"), program p taking the run
        #         [start(p), start(p + 1)). A run is shorter than a tile, so it holds pieces of at most two tiles,
        #         its first (slot 0) and its second (slot 1). Every piece leaves its fp32 partial sum in its
        #         slot and counts itself on its tile's counter (release: the partial is visible before the
        #         count); the tile's last piece to finish adds all of them in program order (the same sum
        #         whichever finishes last), writes C and sets the counter back to 0 for the next launch ----
        programs = tl.num_programs(0)
        units = (all_tiles - whole_tiles) * k_tiles
        in_tile = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
        begin = sk_start(tl.program_id(0), units, programs)
        end = sk_start(tl.program_id(0) + 1, units, programs)
        u = begin
        while u < end:
            tile = whole_tiles + u // k_tiles
            kb0 = u % k_tiles
            kb1 = tl.minimum(k_tiles, kb0 + end - u)
            group, row, pid_n, row_end = locate(tile, firsts, offsets_ptr, M, grid_n, BLOCK_M, GROUP_M)
            acc = multiply(a_desc, b_desc, group, row, pid_n, kb0, kb1, BLOCK_M, BLOCK_N, BLOCK_K, B_T)
            slot = 2 * tl.program_id(0) + (u > begin).to(tl.int32)
            tl.store(partials_ptr + slot.to(tl.int64) * BLOCK_M * BLOCK_N + in_tile, acc)
            # the programs whose runs hold this tile's first and last units, and how many of them hold any
            tile_first = u - kb0
            p_first = ((tile_first + 1).to(tl.int64) * programs - 1) // units
            p_last = ((tile_first + k_tiles).to(tl.int64) * programs - 1) // units
            pieces = 0
            for p in range(p_first, p_last + 1):
                pieces += (sk_start(p + 1, units, programs) > sk_start(p, units, programs)).to(tl.int32)
            tl.debug_barrier()  # every thread's part of the partial is written before the count
            if tl.atomic_add(counts_ptr + tile - whole_tiles, 1, sem="acq_rel", scope="gpu") == pieces - 1:
                total = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
                for p in range(p_first, p_last + 1):
                    p_begin = sk_start(p, units, programs)
                    if sk_start(p + 1, units, programs) > p_begin:
                        other = 2 * p + (p_begin < tile_first).to(tl.int32)
                        total += tl.load(partials_ptr + other.to(tl.int64) * BLOCK_M * BLOCK_N + in_tile,
                                         cache_modifier=".cg")
                store_rows(c_ptr, total.to(c_ptr.dtype.element_ty), row, pid_n * BLOCK_N, row_end, N, stride_cm,
                           stride_cn, BLOCK_M, BLOCK_N)
                tl.store(counts_ptr + tile - whole_tiles, 0)
            u += kb1 - kb0


def programs(device: torch.device, M: int, N: int, G: int, BLOCK_M: int, BLOCK_N: int) -> int:
    """One program per SM, at most as many as M rows in G groups can have tiles (each group's last tile row may
    be partly empty), so that the launch needs no group sizes from the device; on the CPU, where the interpreter
    runs, that many."""
    tiles = (triton.cdiv(M, BLOCK_M) + G) * triton.cdiv(N, BLOCK_N)
    return min(sm_count(device), tiles) if device.type == "cuda" else tiles


def prepare_triton(a, b, c, configs, offsets=None, grid: int | None = None):
    """(refresh, {config: launch}) sharing one set of TMA-ready operands, each config with its own boxes; `grid`:
    fewer programs (the tests reach stream-K's schedule with it)."""
    b, offsets = one_group(a, b, offsets)
    a_t, b_t, layout, refresh = tma_views(a, b)  # A 2-D, B 3-D, each padded to a 16-byte row pitch where it is not
    M, N, K, G = c.shape[0], c.shape[1], a.shape[1], b.shape[0]
    launches = {}
    for config in configs:
        kw = config.kwargs
        a_desc = TensorDescriptor.from_tensor(a_t, [kw["BLOCK_M"], kw["BLOCK_K"]])
        box = [1, kw["BLOCK_N"], kw["BLOCK_K"]] if layout.get("B_T") else [1, kw["BLOCK_K"], kw["BLOCK_N"]]
        b_desc = TensorDescriptor.from_tensor(b_t, box)
        size = programs(c.device, M, N, G, kw["BLOCK_M"], kw["BLOCK_N"])
        size = (size if grid is None else min(grid, size),)
        check_grid(size)
        # stream-K's workspace: two tiles of fp32 partial sums per program, a counter per tile of the last round
        # (fewer than the programs; zeroed, and left zeroed by each launch)
        partials = torch.empty(2 * size[0] * kw["BLOCK_M"] * kw["BLOCK_N"] if kw.get("STREAM_K") else 1,
                               device=c.device, dtype=torch.float32)
        counts = torch.zeros(size[0], device=c.device, dtype=torch.int32)
        launch = prebound(grouped_persistent_kernel, size, a_desc, b_desc, c, offsets, partials, counts, G, M, N, K,
                          c.stride(0), c.stride(1), G_PAD=triton.next_power_of_2(G), num_warps=config.num_warps,
                          num_stages=config.num_stages, **kw, **layout)
        launch.counts = counts  # the tests check that every launch leaves them zeroed
        launches[config] = launch
    return refresh, launches


TRITON_SEARCH = Search(__name__, "triton", TRITON_CONFIGS, prepare_triton, tile=block_of, describe=describe_config,
                       reference=("unflattened", TRITON_CONFIGS[2]))


def grouped_triton(a, b, c, offsets=None):
    if a.shape[-1] == 0:
        return zero_product(c)
    return TRITON_SEARCH.tuned(a, b, c, offsets=offsets)


VARIANT = Variant(
    __name__,
    title="grouped GEMM (mixture-of-experts)",
    dtypes=("fp16", "bf16"),
    cuda=grouped_cuda,
    triton=grouped_triton,
    cuda_source=KERNELS,
    min_cc=(9, 0),
    searches=(CUDA_SEARCH, TRITON_SEARCH),
    layouts={"cuda": LAYOUTS, "triton": LAYOUTS},
    grouped=("cuda", "triton"),
)
