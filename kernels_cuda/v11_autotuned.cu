// v11 autotuned: v10's block tile, launched in an L2-friendly block order, with its template parameters
// chosen by measurement for each device and shape (the search lives in implementations/v11_autotuned.py),
// on every layout and on a batch of products in one launch.
//
// C (M×N) = A (M×K) · B (K×N), fp32, C row-major. A_T: A arrives as the transpose of a row-major K×M
// matrix, B_T: B as that of a row-major N×K one; both read in place by v10's `warptile_block` (a K-major
// operand copied 4 bytes at a time into a padded, transposed tile, an M- or N-major one in 16-byte
// chunks). Both (tt): Cᵀ = Bᵀ·Aᵀ is an nn product of the stored matrices, computed with nn's copies in
// tiles of Cᵀ (BM rows along N, BN columns along M) and written down C's columns. Batch: `products`
// products; matrix p of A at a + p·a_step (a_step 0: one A shared by the batch), of B at b + p·b_step, of
// C at c + p·M·N. Launch: block (BM/WM)·(BN/WN)·32 threads, grid (ceil(M/BM)·ceil(N/BN), or for tt
// ceil(N/BM)·ceil(M/BN); min(products, 65535); ceil(products/65535)), and, for tiles past 48 KB of shared
// memory, that much dynamic shared memory (`Tile.shared_mem`). Template <BM, BN, BK, WM, WN, STAGES, GROUP_M,
// C_STORE, ALIGNED, A_T, B_T, BATCHED>; needs sm_80+. C_STORE: how a row-major C is stored (v10's C_FLOAT4,
// C_FLOATS, C_FLOAT4_OF_SUMS; tt stores by columns, its own way). ALIGNED: the rows of C and of the operands
// copied in 16-byte chunks (B unless B_T, A if A_T) start on 16-byte boundaries in every matrix of the batch.
// BATCHED false: one product, compiled without the batch offsets, which would otherwise turn the
// operands' base addresses from kernel parameters into registers inside the k-loop (docs/notes/v11.md).
// Blocks are scheduled roughly in blockIdx order. In row-major order the blocks in flight at one time
// cover a few block rows and *all* block columns, so every column panel of B is streamed from DRAM
// again for each block row. Grouped order walks GROUP_M block rows column by column: the blocks in
// flight share GROUP_M row panels of A and a few column panels of B, which stay in L2.
#include "v10_warptiling.cu"

template <int BM, int BN, int BK, int WM, int WN, int STAGES, int GROUP_M, int C_STORE, bool ALIGNED, bool A_T,
          bool B_T, bool BATCHED>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, blocks_per_sm<BM, BN, BK>())
    autotuned(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int M, int N, int K,
              long long a_step, long long b_step, int products) {
    if constexpr (BATCHED) {
        // the product of a batch this block computes: grid axis y, then z, as a batch may be longer than y's
        // 65535 (a batch stride of 0: one shared operand); 64-bit offsets, as a batch may hold more than 2^31
        // elements (within a matrix, 32-bit indices)
        const long long product = blockIdx.z * static_cast<long long>(gridDim.y) + blockIdx.y;
        if (product >= products) return;  // the last z-slab's spare blocks
        a += product * a_step;
        b += product * b_step;
        c += product * M * N;
    }
    // ---- 1. map this block to a tile of C (tt: of Cᵀ), GROUP_M block rows at a time, column by column ----
    int block_m, block_n;
    if constexpr (A_T && B_T) {  // Cᵀ = Bᵀ·Aᵀ: the stored matrices as given, C written transposed
        grouped_tile(blockIdx.x, (N + BM - 1) / BM, (M + BN - 1) / BN, GROUP_M, block_n, block_m);
        warptile_block<BM, BN, BK, WM, WN, STAGES, ALIGNED, false, false, true>(b, a, c, N, M, K, block_n * BM,
                                                                              block_m * BN);
    } else {
        grouped_tile(blockIdx.x, (M + BM - 1) / BM, (N + BN - 1) / BN, GROUP_M, block_m, block_n);
        warptile_block<BM, BN, BK, WM, WN, STAGES, ALIGNED, A_T, B_T, false, C_STORE>(a, b, c, M, N, K, block_m * BM,
                                                                                   block_n * BN);
    }
}
