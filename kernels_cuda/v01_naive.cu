// v01 naive: one thread per element of C, threadIdx.x walking the ROWS of C (uncoalesced on purpose).
//
// C (M×N) = A (M×K) · B (K×N), fp32, all row-major. Launch: block (32, 32), grid (ceil(M/32), ceil(N/32)).
// The 32 threads of a warp share threadIdx.y, so they share one column of C and hold 32 consecutive
// rows: at each k they read A[row][k] from 32 rows K floats apart (32 separate memory transactions)
// and all read the same B[k][col] (one broadcast). Compare v02, which only swaps the two mappings.

extern "C" __global__ void naive(const float* __restrict__ a, const float* __restrict__ b,
                                 float* __restrict__ c, int M, int N, int K) {
    // ---- 1. map this thread to one element of C: threadIdx.x walks the rows ----
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    const int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;

    // ---- 2. dot product straight from global memory, one k at a time ----
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
        acc += a[row * K + k] * b[k * N + col];
    }

    // ---- 3. write back ----
    c[row * N + col] = acc;
}
