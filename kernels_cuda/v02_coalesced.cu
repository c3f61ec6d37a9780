// v02 coalesced: v01 with the thread mapping swapped, threadIdx.x walking the COLUMNS of C.
//
// C (M×N) = A (M×K) · B (K×N), fp32, all row-major. Launch: block (32, 32), grid (ceil(N/32), ceil(M/32)).
// A warp now holds 32 consecutive columns of one row: at each k it reads 32 consecutive floats of
// B's row k (one 128-byte transaction) and one A[row][k] for all lanes (a broadcast). Same
// arithmetic, same number of loads as v01; only which addresses a warp touches together changed.

extern "C" __global__ void coalesced(const float* __restrict__ a, const float* __restrict__ b,
                                     float* __restrict__ c, int M, int N, int K) {
    // ---- 1. map this thread to one element of C: threadIdx.x walks the columns ----
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;

    // ---- 2. dot product straight from global memory, one k at a time ----
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
        acc += a[row * K + k] * b[k * N + col];
    }

    // ---- 3. write back ----
    c[row * N + col] = acc;
}
