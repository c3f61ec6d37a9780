// v11 autotuned: v10's block tile, launched in an L2-friendly block order, with its template parameters
// chosen by measurement for each device and shape (the search lives in implementations/v11_autotuned.py).
//
// C (M×N) = A (M×K) · B (K×N), fp32, all row-major. Launch: block (BM/WM)·(BN/WN)·32 threads, a 1-D grid
// of ceil(M/BM)·ceil(N/BN) blocks. Template <BM, BN, BK, WM, WN, STAGES, GROUP_M, ALIGNED>; needs sm_80+.
// Blocks are scheduled roughly in blockIdx order. In row-major order the blocks in flight at one time
// cover a few block rows and *all* block columns, so every column panel of B is streamed from DRAM
// again for each block row. Grouped order walks GROUP_M block rows column by column: the blocks in
// flight share GROUP_M row panels of A and a few column panels of B, which stay in L2.
#include "v10_warptiling.cu"

template <int BM, int BN, int BK, int WM, int WN, int STAGES, int GROUP_M, bool ALIGNED>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, blocks_per_sm<BM, BN, BK>())
    autotuned(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int M, int N, int K) {
    // ---- 1. map this block to a tile of C, GROUP_M block rows at a time, column by column ----
    int block_m, block_n;
    grouped_tile(blockIdx.x, (M + BM - 1) / BM, (N + BN - 1) / BN, GROUP_M, block_m, block_n);
    warptile_block<BM, BN, BK, WM, WN, STAGES, ALIGNED>(a, b, c, M, N, K, block_m * BM, block_n * BN);
}
