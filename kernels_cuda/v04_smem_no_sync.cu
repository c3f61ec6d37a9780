// v04 tiling without __syncthreads(): v03 with both barriers removed. BROKEN ON PURPOSE.
//
// C (M×N) = A (M×K) · B (K×N), fp32, all row-major. Launch as v03: block (TILE, TILE),
// grid (ceil(N/TILE), ceil(M/TILE)).
// A block is TILE²/32 warps that the SM schedules independently. Without the first barrier a warp can
// read b_tile[k][tx] before warp k has written it; without the second, a warp that finished step k0
// overwrites the tiles for k0 + TILE while slower warps still multiply step k0. Both are data races:
// the result depends on timing and is wrong on a GPU. (Within one warp of TILE = 32 the row a_tile[ty][*]
// is written by the warp itself, so the A side often survives; the B side never does.)

template <int TILE>
__global__ void smem_no_sync(const float* __restrict__ a, const float* __restrict__ b,
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
        // ---- 3. stage the A and B tiles in shared memory: NO barrier after the stores ----
        a_tile[ty][tx] = (row < M && k0 + tx < K) ? a[row * K + k0 + tx] : 0.0f;
        b_tile[ty][tx] = (k0 + ty < K && col < N) ? b[(k0 + ty) * N + col] : 0.0f;

        // ---- 4. multiply the tiles out of shared memory: NO barrier before the next overwrite ----
        for (int k = 0; k < TILE; ++k) {
            acc += a_tile[ty][k] * b_tile[k][tx];
        }
    }

    // ---- 5. write back ----
    if (row < M && col < N) {
        c[row * N + col] = acc;
    }
}
