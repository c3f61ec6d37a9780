// v05 1D register blocking: each thread computes a column of TM outputs, so one value loaded from
// shared memory feeds TM multiply-adds instead of one.
//
// C (M×N) = A (M×K) · B (K×N), fp32, all row-major. Launch: block (BM·BN/TM) threads,
// grid (ceil(N/BN), ceil(M/BM)). Template <BM, BN, BK, TM>: a block computes a BM×BN tile of C,
// stepping along K BK at a time; thread t computes rows (t / BN)·TM .. +TM-1 of column t % BN.
// Per step each thread loads one B value and TM A values (broadcast: the warp shares its rows) for
// TM FMAs: about half the shared-memory loads per FMA of v03.

template <int BM, int BN, int BK, int TM>
__global__ void blocktiling_1d(const float* __restrict__ a, const float* __restrict__ b,
                               float* __restrict__ c, int M, int N, int K) {
    constexpr int THREADS = BM * BN / TM;
    static_assert(BM % TM == 0, "a thread's column of TM outputs lies inside the tile");
    __shared__ float a_tile[BM][BK];
    __shared__ float b_tile[BK][BN];

    // ---- 1. map this thread to a column of TM outputs, its block to one BM×BN tile ----
    const int tid = threadIdx.x;
    const int thread_col = tid % BN;  // consecutive threads, consecutive columns: coalesced B and C
    const int thread_row = tid / BN;  // the warp's threads share it, so their A reads broadcast
    const int block_row = blockIdx.y * BM, block_col = blockIdx.x * BN;

    float acc[TM] = {};
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

        // ---- 4. multiply: one B value in a register feeds TM FMAs ----
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            const float b_val = b_tile[k][thread_col];
#pragma unroll
            for (int i = 0; i < TM; ++i) {
                acc[i] += a_tile[thread_row * TM + i][k] * b_val;
            }
        }
        __syncthreads();  // everyone is done reading before the next step overwrites the tiles
    }

    // ---- 5. write back ----
    const int col = block_col + thread_col;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = block_row + thread_row * TM + i;
        if (row < M && col < N) {
            c[row * N + col] = acc[i];
        }
    }
}
