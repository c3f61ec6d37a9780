// v18 grouped GEMM (mixture-of-experts): v15's warp-specialized kernel, its tiles mapped to G products of
// different M in one persistent launch. Tokens routed to G experts lie in A grouped by expert, one expert's
// rows after another; each expert has its own weight matrix.
//
// C (M×N) = A (M×K) · B (K×N) group by group: group g is rows offsets[g - 1]:offsets[g] of A and of C
// (offsets[-1] = 0 implied; torch._grouped_mm's offsets, int32, read on the device), and B is G matrices of
// K×N (a 3-D tensor map, the group its matrix index; or, B_T, the transposes of G stored N×K matrices).
// C[rows of g] = A[rows of g] · B[g]; a group of no rows computes nothing. Everything else (tiles, roles,
// clusters, launch, shared memory) is v15's: see v15_warp_specialized.cu. The launcher names the
// instantiations warp_specialized<..., NoEpilogue, Groups> (CLUSTER_M = 1: warp_specialized_unclustered),
// passes G as `products` (a_step 0, b_step 1: one A, a B per group) and the offsets, and launches at most as
// many clusters as M rows in G groups can have cluster tiles, so that it needs no group size on the host.
// Needs sm_90a.
//
// What the groups change, and why nothing else has to:
//   - No padding, no per-group tensor maps. A's 2-D map is read across a group's end: the rows past it
//     belong to the next group (or lie past A, read as zeros) and are computed but never stored. B's 3-D map
//     takes the group as its matrix index, and C's 2-D map stores every block that ends inside its group.
//   - The one block that crosses its group's end (each consumer warpgroup's 64 rows decide alone) is stored
//     from registers, row-masked at the group's end: TMA clips a store only at the matrix's edge.
//   - The tile map. A group of r rows has R = ceil(r / BM) tile rows: R / CLUSTER_M cluster rows of tiles_n
//     cluster tiles (CTAs stacked along M, sharing B's tile), then its R % CLUSTER_M last tile rows with their
//     CTAs side by side along N (sharing A's tile), ceil(tiles_n / CLUSTER_M) cluster tiles each. Stacked along
//     M only, each group of odd tile rows would end in a cluster row half past its end, a row of tiles
//     computed for nothing. The groups' tiles lie end to end, and v15's scheduler (Schedule) deals them out
//     unchanged, so the producer's run-ahead, the alternating k and stream-K (the last, partial round of tiles
//     dealt out by k-blocks: the tail the ragged groups leave) work across group boundaries as within one product.
//   - Finding a tile's group. Every thread's tiles come in increasing order (its cluster's whole tiles, then
//     its stream-K run), so each thread keeps a cursor that walks the groups once per launch: O(G + tiles)
//     per thread, no table in shared memory (the widest candidates leave under 2 KB of it) and no limit on G.
//     The count of all tiles, needed before the first, is a warp-wide sum: each lane takes every 32nd group.
//   - Offsets the host did not check cannot make it write outside C: every group is clamped to rows [0, M).
#include "v15_warp_specialized.cu"

template <int BM, int BN, int CLUSTER_M, int GROUP_M>
struct Groups {
    static constexpr bool ON = true;
    const int* offsets;
    int M, G, tiles_n;
    // The cursor: group g holds rows [start, end) and cluster tiles [first, next): cluster_rows rows of tiles_n
    // stacked along M, then the rest side by side along N; `paired_n`: the last tile located is.
    int g = -1, start = 0, end = 0, first = 0, next = 0, cluster_rows = 0;
    bool paired_n = false;

    __device__ Groups(int M_, int N, int products, const int* offsets_)
        : offsets(offsets_), M(M_), G(products), tiles_n((N + BN - 1) / BN) {}

    __device__ int end_of(int group) const { return min(max(offsets[group], 0), M); }
    __device__ int rows_of(int group) const { return max(end_of(group) - (group ? end_of(group - 1) : 0), 0); }
    __device__ static int tile_rows_of(int rows) { return (rows + BM - 1) / BM; }
    __device__ int per_row_n() const { return (tiles_n + CLUSTER_M - 1) / CLUSTER_M; }  // side by side along N
    __device__ int cluster_tiles_of(int tile_rows) const {
        return tile_rows / CLUSTER_M * tiles_n + tile_rows % CLUSTER_M * per_row_n();
    }

    // Every thread calls it, in full warps (before the warpgroups part ways).
    __device__ int count() const {
        int tiles = 0;
        for (int group = threadIdx.x % 32; group < G; group += 32)
            tiles += cluster_tiles_of(tile_rows_of(rows_of(group)));
#pragma unroll
        for (int lane = 16; lane > 0; lane /= 2) tiles += __shfl_xor_sync(0xffffffff, tiles, lane);
        return tiles;
    }

    // Cluster tile t -> its group (as the kernel's product) and this CTA's tile row (from the group's first row)
    // and column; t never decreases from one call to the next in a thread.
    __device__ void locate(int t, unsigned rank, int& group, int& tile_m, int& tile_n) {
        while (t >= next && g + 1 < G) {
            ++g;
            start = g ? end_of(g - 1) : 0;
            end = max(end_of(g), start);
            const int tile_rows = tile_rows_of(end - start);
            cluster_rows = tile_rows / CLUSTER_M;
            first = next;
            next = first + cluster_tiles_of(tile_rows);
        }
        group = g;
        const int across = first + cluster_rows * tiles_n;
        paired_n = t >= across;
        if (paired_n) {  // past N when tiles_n is not a multiple of CLUSTER_M: TMA reads zeros, nothing stored
            tile_m = cluster_rows * CLUSTER_M + (t - across) / per_row_n();
            tile_n = (t - across) % per_row_n() * CLUSTER_M + rank;
        } else {
            grouped_tile(t - first, cluster_rows, tiles_n, GROUP_M, tile_m, tile_n);
            tile_m = tile_m * CLUSTER_M + rank;
        }
    }
    // Whether the last tile located has its cluster's CTAs side by side along N (they share A's tile, not B's).
    __device__ bool along_n() const { return CLUSTER_M > 1 && paired_n; }
    // The group of the last tile located: its first row, and the end of its rows.
    __device__ int first_row() const { return start; }
    __device__ int row_end() const { return end; }
};
