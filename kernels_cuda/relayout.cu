// relayout: an operand copied into the other storage order (row-major <-> a transposed view), for a rung
// that does not read the layout it was given in place. The copy runs inside the rung's timed call, so it is
// written for bandwidth: read along the source's rows, write along the destination's, and turn the tile
// around in shared memory in between, a 4-byte word per thread and access whatever the element's width.
//
// dst[p][c][r] = src[p][r][c] for r < rows, c < cols: src's rows hold `cols` contiguous elements, `src_pitch`
// apart; dst's rows hold `rows` contiguous elements, `dst_pitch` apart; matrix p of the batch starts at
// src + p·src_step and dst + p·dst_step (src_step 0: one matrix for all). T: an unsigned integer as wide as
// the element (the copy moves bits); a word holds V = 4 / sizeof(T) of them, and a tile is TILE = 32·V
// elements square (a warp's 32 words along a row). `words`: both pointers 4-byte aligned and the pitches
// and steps multiples of V, so that every V-element chunk inside the matrix is one aligned word; otherwise,
// and at a ragged edge, a thread moves its chunk an element at a time. Launch: block (32, ROWS), grid
// (ceil(rows/TILE)·ceil(cols/TILE), min(products, 65535)); a block walks the products y, y + gridDim.y, ...

constexpr int LANES = 32;  // threads along a row: a warp reads (or writes) 32 consecutive words at a time
constexpr int ROWS = 8;    // warps per block, each on every ROWS-th row of the tile

template <typename T>
__global__ void __launch_bounds__(LANES* ROWS)
    transpose_tiles(const T* __restrict__ src, T* __restrict__ dst, int rows, int cols, long long src_pitch,
                    long long dst_pitch, long long src_step, long long dst_step, int products, int words) {
    constexpr int V = 4 / sizeof(T), TILE = LANES * V;
    // Element (i, j) of the tile sits in word j / V of row i, moved to word (j / V) ^ (i / V % 32): a row's
    // 32 words still fill 32 banks when stored (step 2), and in step 3, where lane x gathers rows V·x ..
    // V·x + V - 1 of one column, lane x's word is (j / V) ^ x, again 32 banks.
    __shared__ unsigned tile[TILE][LANES];
    const int x = threadIdx.x;

    // ---- 1. map this block to a TILE×TILE tile of src, and to the same elements of dst ----
    const int tiles_c = (cols + TILE - 1) / TILE;
    const int r0 = blockIdx.x / tiles_c * TILE, c0 = blockIdx.x % tiles_c * TILE;

    for (long long p = blockIdx.y; p < products; p += gridDim.y) {
        const T* s = src + p * src_step;
        T* d = dst + p * dst_step;
        // ---- 2. read the tile a row at a time: a warp on 32 consecutive words of src ----
#pragma unroll 4
        for (int i = threadIdx.y; i < TILE; i += ROWS) {
            const int c = c0 + V * x;
            const T* from = s + (r0 + i) * src_pitch + c;
            unsigned word = 0;
            if (r0 + i < rows) {
                if (words && c + V <= cols) {
                    word = *reinterpret_cast<const unsigned*>(from);
                } else {
                    for (int q = 0; q < V && c + q < cols; ++q) word |= unsigned(from[q]) << (8 * sizeof(T) * q);
                }
            }
            tile[i][x ^ (i / V % LANES)] = word;
        }
        __syncthreads();
        // ---- 3. write it a column at a time: lane x packs rows V·x .. V·x + V - 1 into one word of dst ----
#pragma unroll 4
        for (int j = threadIdx.y; j < TILE; j += ROWS) {
            const T* column = reinterpret_cast<const T*>(&tile[0][0]) + j % V;
            unsigned word = 0;
#pragma unroll
            for (int q = 0; q < V; ++q)
                word |= unsigned(column[((V * x + q) * LANES + (j / V ^ x)) * V]) << (8 * sizeof(T) * q);
            const int r = r0 + V * x;
            T* to = d + (c0 + j) * dst_pitch + r;
            if (c0 + j < cols) {
                if (words && r + V <= rows) {
                    *reinterpret_cast<unsigned*>(to) = word;
                } else {
                    for (int q = 0; q < V && r + q < rows; ++q) to[q] = T(word >> (8 * sizeof(T) * q));
                }
            }
        }
        __syncthreads();  // the next product's reads overwrite the tile
    }
}
