// v07 vectorized loads: v06 moving 16 bytes per instruction. Global loads of A and B and the stores of
// C are float4; A's tile is stored transposed in shared memory so that a thread's TM values of one k
// are contiguous and also come in as float4 (v06 read them one float at a time, BK floats apart).
//
// C (M×N) = A (M×K) · B (K×N), fp32, all row-major. Launch as v06: block (BM·BN/(TM·TN)) threads,
// grid (ceil(N/BN), ceil(M/BM)). Template <BM, BN, BK, TM, TN>, TM and TN multiples of 4.
// `aligned` (launcher): K and N are multiples of 4 and A, B, C start on 16-byte boundaries, so every
// row of A, B and C starts on a 16-byte boundary and float4 accesses are legal; otherwise (and at
// ragged edges) the same code takes checked scalar accesses (common.cuh).
#include "common.cuh"

template <int BM, int BN, int BK, int TM, int TN>
__global__ void vectorize(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                          int M, int N, int K, int aligned) {
    constexpr int THREADS = BM * BN / (TM * TN);
    static_assert(BK % 4 == 0 && BN % 4 == 0 && TM % 4 == 0 && TN % 4 == 0, "whole float4 chunks");
    __shared__ __align__(16) float a_tile[BK][BM];  // transposed: a_tile[k][m] = A[m][k]
    __shared__ __align__(16) float b_tile[BK][BN];

    // ---- 1. map this thread to a TM×TN block of outputs, its block to one BM×BN tile ----
    const int tid = threadIdx.x;
    const int thread_col = tid % (BN / TN), thread_row = tid / (BN / TN);
    const int block_row = blockIdx.y * BM, block_col = blockIdx.x * BN;

    float acc[TM][TN] = {};
    float a_reg[TM], b_reg[TN];
    // ---- 2. march along K one BK-wide tile at a time ----
    for (int k0 = 0; k0 < K; k0 += BK) {
        // ---- 3. stage the A and B tiles in shared memory (zeros past the edges of the matrices) ----
        for (int i = tid; i < BM * BK / 4; i += THREADS) {  // A: a float4 along k, stored down a column
            const int r = i / (BK / 4), k = (i % (BK / 4)) * 4;
            const float4 v = load4(a, block_row + r, k0 + k, M, K, aligned);
            a_tile[k + 0][r] = v.x;
            a_tile[k + 1][r] = v.y;
            a_tile[k + 2][r] = v.z;
            a_tile[k + 3][r] = v.w;
        }
        for (int i = tid; i < BK * BN / 4; i += THREADS) {  // B: a float4 along n, stored as one
            const int k = i / (BN / 4), col = (i % (BN / 4)) * 4;
            *reinterpret_cast<float4*>(&b_tile[k][col]) = load4(b, k0 + k, block_col + col, K, N, aligned);
        }
        __syncthreads();  // the tiles are complete before anyone multiplies

        // ---- 4. multiply: float4 reads of TM + TN values feed TM·TN FMAs ----
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int i = 0; i < TM; i += 4) unpack4(lds4(&a_tile[k][thread_row * TM + i]), &a_reg[i]);
#pragma unroll
            for (int j = 0; j < TN; j += 4) unpack4(lds4(&b_tile[k][thread_col * TN + j]), &b_reg[j]);
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += a_reg[i] * b_reg[j];
        }
        __syncthreads();  // everyone is done reading before the next step overwrites the tiles
    }

    // ---- 5. write back, a float4 at a time ----
#pragma unroll
    for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; j += 4) {
            store4(c, block_row + thread_row * TM + i, block_col + thread_col * TN + j, M, N, aligned,
                   make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]));
        }
    }
}
