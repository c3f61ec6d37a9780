// relayout: an operand copied into the other storage order (row-major <-> a transposed view), for a rung
// that does not read the layout it was given in place. The copy runs inside the rung's timed call, so it is
// written for bandwidth: read along the source's rows, write along the destination's, and turn the tile
// around in shared memory in between.
//
// dst[p][c][r] = src[p][r][c] for r < rows, c < cols: src's rows hold `cols` contiguous elements, `src_pitch`
// apart; dst's rows hold `rows` contiguous elements, `dst_pitch` apart; matrix p of the batch starts at
// src + p·src_step and dst + p·dst_step (src_step 0: one matrix for all). T: an unsigned integer as wide as
// the element (the copy moves bits). TILE: a multiple of 32. Launch: block (32, ROWS), grid
// (ceil(rows/TILE)·ceil(cols/TILE), min(products, 65535)); a block walks the products y, y + gridDim.y, ...
// for the same tile.

constexpr int LANES = 32;  // threads along a row: a warp reads (or writes) 32 consecutive elements at a time
constexpr int ROWS = 8;    // warps per block, each on every ROWS-th row of the tile

template <typename T, int TILE>
__global__ void __launch_bounds__(LANES* ROWS)
    transpose_tiles(const T* __restrict__ src, T* __restrict__ dst, int rows, int cols, long long src_pitch,
                    long long dst_pitch, long long src_step, long long dst_step, int products) {
    // one padding element per row: the tile's column reads (step 3) then fall in distinct banks for
    // every element width used here (1, 2 and 4 bytes)
    __shared__ T tile[TILE][TILE + 1];

    // ---- 1. map this block to a TILE×TILE tile of src, and to the same elements of dst ----
    const int tiles_c = (cols + TILE - 1) / TILE;
    const int r0 = blockIdx.x / tiles_c * TILE, c0 = blockIdx.x % tiles_c * TILE;

    for (long long p = blockIdx.y; p < products; p += gridDim.y) {
        const T* s = src + p * src_step;
        T* d = dst + p * dst_step;
        // ---- 2. read the tile a row at a time: a warp on consecutive elements of src ----
#pragma unroll
        for (int y = 0; y < TILE / ROWS; ++y) {
#pragma unroll
            for (int x = 0; x < TILE / LANES; ++x) {
                const int i = threadIdx.y + y * ROWS, j = threadIdx.x + x * LANES;
                if (r0 + i < rows && c0 + j < cols) tile[i][j] = s[(r0 + i) * src_pitch + c0 + j];
            }
        }
        __syncthreads();
        // ---- 3. write it a column at a time: a warp on consecutive elements of dst ----
#pragma unroll
        for (int y = 0; y < TILE / ROWS; ++y) {
#pragma unroll
            for (int x = 0; x < TILE / LANES; ++x) {
                const int i = threadIdx.y + y * ROWS, j = threadIdx.x + x * LANES;
                if (c0 + i < cols && r0 + j < rows) d[(c0 + i) * dst_pitch + r0 + j] = tile[j][i];
            }
        }
        __syncthreads();  // the next product's reads overwrite the tile
    }
}
