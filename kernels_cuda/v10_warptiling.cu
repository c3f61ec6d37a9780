// v10 warptiling: block tile -> warp tiles -> per-lane 4×4 sub-tiles, over a STAGES-deep cp.async
// pipeline.
//
// C (M×N) = A (M×K) · B (K×N), fp32, all row-major. Launch: block (BM/WM)·(BN/WN)·32 threads,
// grid (ceil(N/BN), ceil(M/BM)). Template <BM, BN, BK, WM, WN, STAGES>; needs sm_80+ (cp.async).
// The block's BM×BN tile is split into WM×WN warp tiles. A warp walks its tile in (WM/16)×(WN/32)
// sub-tiles of 16×32; in each, its 32 lanes form a 4×8 grid and lane (lr, lc) owns the 4×4 outputs
// at rows 4·lr.., columns 4·lc... So a lane holds (WM/16)·(WN/32)·16 accumulators, per k it reads WM/16
// + WN/32 float4 from shared memory, and in each read the 8 lanes served together touch either one
// address (A: broadcast) or 32 consecutive floats (B): conflict-free by construction, where v08
// needed interleaving by hand. Warp tiles also keep a warp's reads inside a small part of the tiles,
// and, with the pipeline STAGES deep, the copies of STAGES - 1 tiles are in flight during the FMAs.
// `warptile_block` computes one block tile; v11 reuses it with another block order and a search
// over the template parameters.
#include "common.cuh"

template <int BM, int BN, int BK, int WM, int WN, int STAGES>
__device__ __forceinline__ void warptile_block(const float* __restrict__ a, const float* __restrict__ b,
                                               float* __restrict__ c, int M, int N, int K, int aligned,
                                               int block_row, int block_col) {
    constexpr int THREADS = (BM / WM) * (BN / WN) * 32;
    constexpr int M_ITER = WM / 16, N_ITER = WN / 32;  // 16×32 sub-tiles per warp tile
    static_assert(BM % WM == 0 && BN % WN == 0 && WM % 16 == 0 && WN % 32 == 0, "tiles nest");
    static_assert(BK % 8 == 0 && STAGES >= 2, "A copies cover 8 k per row; a pipeline has two buffers");
    constexpr int PAD = 4;  // as v08: conflict-free transposed copies of A
    __shared__ __align__(16) float a_tile[STAGES][BK][BM + PAD];
    __shared__ __align__(16) float b_tile[STAGES][BK][BN];

    // ---- 2. map this thread to its warp's tile and its lane's 4×4 sub-tiles ----
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int warp_row = (warp / (BN / WN)) * WM, warp_col = (warp % (BN / WN)) * WN;
    const int lane_row = (lane / 8) * 4, lane_col = (lane % 8) * 4;

    auto load_tile = [&](int stage, int k0) {  // as v09: start the copies, do not wait for them
        for (int e = tid; e < BM * BK; e += THREADS) {
            const int k = (e / (8 * BM)) * 8 + e % 8, r = (e / 8) % BM;
            const bool valid = block_row + r < M && k0 + k < K;
            cp_async4(&a_tile[stage][k][r], valid ? a + (block_row + r) * K + k0 + k : a, valid);
        }
        for (int e = tid; e < BK * BN / 4; e += THREADS) {
            const int k = e / (BN / 4), col = (e % (BN / 4)) * 4;
            const int row = k0 + k, gcol = block_col + col;
            if (aligned) {
                const bool valid = row < K && gcol < N;
                cp_async16(&b_tile[stage][k][col], valid ? b + row * N + gcol : b, valid);
            } else {
                for (int q = 0; q < 4; ++q) {
                    const bool valid = row < K && gcol + q < N;
                    cp_async4(&b_tile[stage][k][col + q], valid ? b + row * N + gcol + q : b, valid);
                }
            }
        }
    };

    float acc[M_ITER * 4][N_ITER * 4] = {};
    float a_reg[M_ITER * 4], b_reg[N_ITER * 4];
    const int k_tiles = (K + BK - 1) / BK;
    // ---- 3. prologue: start copying the first STAGES - 1 tiles ----
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < k_tiles) load_tile(s, s * BK);
        cp_async_commit();  // one group per tile, empty or not, so that the wait below counts tiles
    }
    // ---- 4. march along K: wait for tile kt, start tile kt+STAGES-1, multiply tile kt ----
    for (int kt = 0; kt < k_tiles; ++kt) {
        cp_async_wait<STAGES - 2>();  // this thread's copies of tile kt have landed
        __syncthreads();              // everyone's have, and the buffer of tile kt-1 is free
        const int next = kt + STAGES - 1;
        if (next < k_tiles) load_tile(next % STAGES, next * BK);
        cp_async_commit();
        const int s = kt % STAGES;

        // ---- 5. multiply: per k, M_ITER + N_ITER float4 reads feed a (4·M_ITER)×(4·N_ITER) outer product ----
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int mi = 0; mi < M_ITER; ++mi)
                unpack4(lds4(&a_tile[s][k][warp_row + mi * 16 + lane_row]), &a_reg[mi * 4]);
#pragma unroll
            for (int ni = 0; ni < N_ITER; ++ni)
                unpack4(lds4(&b_tile[s][k][warp_col + ni * 32 + lane_col]), &b_reg[ni * 4]);
#pragma unroll
            for (int i = 0; i < M_ITER * 4; ++i)
#pragma unroll
                for (int j = 0; j < N_ITER * 4; ++j) acc[i][j] += a_reg[i] * b_reg[j];
        }
    }

    // ---- 6. write back, a float4 at a time ----
#pragma unroll
    for (int mi = 0; mi < M_ITER; ++mi)
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int ni = 0; ni < N_ITER; ++ni) {
                const float* v = &acc[mi * 4 + i][ni * 4];
                store4(c, block_row + warp_row + mi * 16 + lane_row + i, block_col + warp_col + ni * 32 + lane_col,
                       M, N, aligned, make_float4(v[0], v[1], v[2], v[3]));
            }
}

template <int BM, int BN, int BK, int WM, int WN, int STAGES>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32)
    warptiling(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int M, int N,
               int K, int aligned) {
    // ---- 1. map this block to a BM×BN tile of C, in row-major block order ----
    warptile_block<BM, BN, BK, WM, WN, STAGES>(a, b, c, M, N, K, aligned, blockIdx.y * BM, blockIdx.x * BN);
}
