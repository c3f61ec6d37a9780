// v09 double buffering with cp.async: while the block multiplies tile k out of one shared-memory
// buffer, the copies of tile k+1 into the other buffer are already in flight.
//
// C (M×N) = A (M×K) · B (K×N), fp32, all row-major. Launch as v08 (`aligned` as there). Template
// <BM, BN, BK, TM, TN>; needs sm_80+ (cp.async).
// In v08 a thread loads into registers, waits for the data, stores it to shared memory, syncs, and only
// then multiplies: the load latency (hundreds of cycles) is paid every step, hidden only by other
// blocks on the SM. Here cp.async copies global -> shared in the background, without registers:
// tile k+1 is requested before tile k is multiplied, so its latency overlaps the FMAs. Two buffers,
// one barrier per step (the one before reading tile k also guarantees that everyone has finished
// multiplying the buffer that the copies of the next step overwrite).
// cp.async cannot transpose a 16-byte chunk, so A's tile is copied 4 bytes per element into its
// transposed place; B's rows go 16 bytes at a time when `aligned`. Zero padding at ragged edges is
// cp.async's own zero fill (src-size 0).
#include "common.cuh"

// __launch_bounds__(threads, 2): at most 128 registers per thread, so that two blocks fit on an SM
// (unbounded, ptxas takes more and only one fits).
template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__(BM * BN / (TM * TN), 2)
    double_buffering(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int M, int N,
                     int K, int aligned) {
    constexpr int THREADS = BM * BN / (TM * TN);
    constexpr int STAGES = 2;
    static_assert(BK % 8 == 0 && BN % 4 == 0 && TM % 4 == 0 && TN % 4 == 0, "whole chunks");
    constexpr int PAD = 4;
    constexpr int CHUNK_STRIDE = BN * 4 / TN;
    __shared__ __align__(16) float a_tile[STAGES][BK][BM + PAD];  // transposed, padded as in v08
    __shared__ __align__(16) float b_tile[STAGES][BK][BN];

    // ---- 1. map this thread to TM rows × TN/4 interleaved float4 columns, its block to one BM×BN tile ----
    const int tid = threadIdx.x;
    const int thread_col = tid % (BN / TN), thread_row = tid / (BN / TN);
    const int block_row = blockIdx.y * BM, block_col = blockIdx.x * BN;

    // Start (not wait for) the copies of the tile at k0 into buffer `stage`.
    auto load_tile = [&](int stage, int k0) {
        // A: a warp's 32 copies cover 8 k of 4 rows: whole 32-byte sectors of A, and in the padded
        // tile (row length ≡ 4 banks) the 32 destinations fall in 32 different banks.
        for (int e = tid; e < BM * BK; e += THREADS) {
            const int k = (e / (8 * BM)) * 8 + e % 8, r = (e / 8) % BM;
            const bool valid = block_row + r < M && k0 + k < K;
            cp_async4(&a_tile[stage][k][r], valid ? a + (block_row + r) * K + k0 + k : a, valid);
        }
        for (int e = tid; e < BK * BN / 4; e += THREADS) {
            const int k = e / (BN / 4), col = (e % (BN / 4)) * 4;
            const int row = k0 + k, gcol = block_col + col;
            if (aligned) {  // a whole chunk lies inside B or past its edge
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

    float acc[TM][TN] = {};
    float a_reg[TM], b_reg[TN];
    const int k_tiles = (K + BK - 1) / BK;
    // ---- 2. prologue: start copying the first tile ----
    load_tile(0, 0);
    cp_async_commit();
    // ---- 3. march along K: wait for tile kt, start tile kt+1 into the other buffer, multiply tile kt ----
    for (int kt = 0; kt < k_tiles; ++kt) {
        cp_async_wait<0>();  // this thread's copies of tile kt have landed
        __syncthreads();     // everyone's have, and everyone has finished multiplying tile kt-1
        if (kt + 1 < k_tiles) load_tile((kt + 1) % STAGES, (kt + 1) * BK);
        cp_async_commit();
        const int s = kt % STAGES;

        // ---- 4. multiply tile kt (conflict-free float4 reads, as v08) while tile kt+1 lands ----
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int i = 0; i < TM; i += 4) unpack4(lds4(&a_tile[s][k][thread_row * TM + i]), &a_reg[i]);
#pragma unroll
            for (int j = 0; j < TN; j += 4)
                unpack4(lds4(&b_tile[s][k][(j / 4) * CHUNK_STRIDE + thread_col * 4]), &b_reg[j]);
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += a_reg[i] * b_reg[j];
        }
    }

    // ---- 5. write back, a float4 at a time ----
#pragma unroll
    for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; j += 4) {
            const int col = block_col + (j / 4) * CHUNK_STRIDE + thread_col * 4;
            store4(c, block_row + thread_row * TM + i, col, M, N, aligned,
                   make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]));
        }
    }
}
