// v08 bank-conflict-free shared memory: v07 with its two bank conflicts removed.
//
// C (M×N) = A (M×K) · B (K×N), fp32, all row-major. Launch as v07 (and `aligned` as there: float4
// accesses where K and N allow them). Template <BM, BN, BK, TM, TN>.
// Shared memory has 32 banks of 4 bytes; when the lanes of a warp touch different addresses in one bank
// in the same instruction, the accesses are serialised (a 16-byte access is served 8 lanes at a time,
// so there it is 8 lanes that must not collide).
// - Stores of A's transposed tile: v07 has two lanes write a_tile[k][r] and a_tile[k + 4][r], BM = 128
//   floats apart: the same bank, a 2-way conflict on every store. Padding each row to BM + 4 floats
//   moves row k + 4 by 16 banks: the 32 lanes hit 32 banks.
// - Reads of B: in v07 lane t reads b_tile[k][8t .. 8t+7] as two float4, so 8 lanes span 64 floats and
//   lanes t and t+4 share banks: 2-way. Here a thread's TN columns are TN/4 float4 chunks BN·4/TN apart
//   (lane t reads [4t .. 4t+3] and [BN/2 + 4t ..]), so 8 lanes read 32 consecutive floats.
// The evidence: Nsight Compute's shared-memory bank-conflict counters for v07 and v08 (docs/notes/v08.md).
#include "common.cuh"

template <int BM, int BN, int BK, int TM, int TN>
__global__ void bank_conflicts(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                          int M, int N, int K, int aligned) {
    constexpr int THREADS = BM * BN / (TM * TN);
    static_assert(BK % 4 == 0 && BN % 4 == 0 && TM % 4 == 0 && TN % 4 == 0, "whole float4 chunks");
    constexpr int PAD = 4;  // floats: keeps rows 16-byte aligned and shifts row k + 4 by 16 banks
    constexpr int CHUNK_STRIDE = BN * 4 / TN;  // columns between a thread's float4 chunks of B and C
    __shared__ __align__(16) float a_tile[BK][BM + PAD];  // transposed: a_tile[k][m] = A[m][k]
    __shared__ __align__(16) float b_tile[BK][BN];

    // ---- 1. map this thread to TM rows × TN/4 interleaved float4 columns, its block to one BM×BN tile ----
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

        // ---- 4. multiply: conflict-free float4 reads of TM + TN values feed TM·TN FMAs ----
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int i = 0; i < TM; i += 4) unpack4(lds4(&a_tile[k][thread_row * TM + i]), &a_reg[i]);
#pragma unroll
            for (int j = 0; j < TN; j += 4)
                unpack4(lds4(&b_tile[k][(j / 4) * CHUNK_STRIDE + thread_col * 4]), &b_reg[j]);
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
            const int col = block_col + (j / 4) * CHUNK_STRIDE + thread_col * 4;
            store4(c, block_row + thread_row * TM + i, col, M, N, aligned,
                   make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]));
        }
    }
}
