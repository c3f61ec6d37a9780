// v06 2D register blocking: each thread computes a TM×TN block of C in registers, so per step along k
// it loads TM + TN values from shared memory for TM·TN multiply-adds.
//
// C (M×N) = A (M×K) · B (K×N), fp32, all row-major. Launch: block (BM·BN/(TM·TN)) threads,
// grid (ceil(N/BN), ceil(M/BM)). Template <BM, BN, BK, TM, TN>; with 128, 128, 8, 8, 8: 256 threads,
// 64 accumulators each, 16 shared-memory loads per 64 FMAs (v05: 9 per 8).

template <int BM, int BN, int BK, int TM, int TN>
__global__ void blocktiling_2d(const float* __restrict__ a, const float* __restrict__ b,
                               float* __restrict__ c, int M, int N, int K) {
    constexpr int THREADS = BM * BN / (TM * TN);
    static_assert(BM % TM == 0 && BN % TN == 0, "thread tiles cover the block tile exactly");
    __shared__ float a_tile[BM][BK];
    __shared__ float b_tile[BK][BN];

    // ---- 1. map this thread to a TM×TN block of outputs, its block to one BM×BN tile ----
    const int tid = threadIdx.x;
    const int thread_col = tid % (BN / TN), thread_row = tid / (BN / TN);
    const int block_row = blockIdx.y * BM, block_col = blockIdx.x * BN;

    float acc[TM][TN] = {};
    float a_reg[TM], b_reg[TN];
    // ---- 2. march along K one BK-wide tile at a time ----
    for (int k0 = 0; k0 < K; k0 += BK) {
        // ---- 3. stage the A and B tiles in shared memory (zeros past the edges of the matrices) ----
        for (int i = tid; i < BM * BK; i += THREADS) {
            const int r = i / BK, k = i % BK;
            a_tile[r][k] = (block_row + r < M && k0 + k < K) ? a[(block_row + r) * K + k0 + k] : 0.0f;
        }
        for (int i = tid; i < BK * BN; i += THREADS) {
            const int k = i / BN, col = i % BN;
            b_tile[k][col] = (k0 + k < K && block_col + col < N) ? b[(k0 + k) * N + block_col + col] : 0.0f;
        }
        __syncthreads();  // the tiles are complete before anyone multiplies

        // ---- 4. multiply: TM + TN values in registers feed TM·TN FMAs (an outer product) ----
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int i = 0; i < TM; ++i) a_reg[i] = a_tile[thread_row * TM + i][k];
#pragma unroll
            for (int j = 0; j < TN; ++j) b_reg[j] = b_tile[k][thread_col * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += a_reg[i] * b_reg[j];
        }
        __syncthreads();  // everyone is done reading before the next step overwrites the tiles
    }

    // ---- 5. write back ----
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = block_row + thread_row * TM + i;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int col = block_col + thread_col * TN + j;
            if (row < M && col < N) {
                c[row * N + col] = acc[i][j];
            }
        }
    }
}
