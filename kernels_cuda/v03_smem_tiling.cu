// v03 shared-memory tiling: a block of TILE×TILE threads computes one TILE×TILE tile of C, staging
// one TILE×TILE tile of A and one of B in shared memory per step along K.
//
// C (M×N) = A (M×K) · B (K×N), fp32, all row-major. Launch: block (TILE, TILE),
// grid (ceil(N/TILE), ceil(M/TILE)). TILE is a template parameter (8, 16 or 32: TILE² threads per
// block, and CUDA allows at most 1024, so 64 cannot launch).
// Each element of A and B is read from global memory ceil(N/TILE) resp. ceil(M/TILE) times instead of
// N resp. M times: 2·M·N·K/TILE loads in all, against 2·M·N·K for v01/v02.

template <int TILE>
__global__ void smem_tiling(const float* __restrict__ a, const float* __restrict__ b,
                            float* __restrict__ c, int M, int N, int K) {
    __shared__ float a_tile[TILE][TILE];
    __shared__ float b_tile[TILE][TILE];

    // ---- 1. map this thread to one element of C, its block to one TILE×TILE tile ----
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;
    const int col = blockIdx.x * TILE + tx;

    float acc = 0.0f;
    // ---- 2. march along K one tile at a time ----
    for (int k0 = 0; k0 < K; k0 += TILE) {
        // ---- 3. stage the A and B tiles in shared memory (zeros past the edges of the matrices) ----
        // Consecutive tx read consecutive addresses of one row of A and one row of B: coalesced.
        a_tile[ty][tx] = (row < M && k0 + tx < K) ? a[row * K + k0 + tx] : 0.0f;
        b_tile[ty][tx] = (k0 + ty < K && col < N) ? b[(k0 + ty) * N + col] : 0.0f;
        __syncthreads();  // every element of both tiles is written before any thread reads them

        // ---- 4. multiply the tiles out of shared memory ----
        for (int k = 0; k < TILE; ++k) {
            acc += a_tile[ty][k] * b_tile[k][tx];
        }
        __syncthreads();  // every thread is done reading before the next step overwrites the tiles
    }

    // ---- 5. write back ----
    if (row < M && col < N) {
        c[row * N + col] = acc;
    }
}
