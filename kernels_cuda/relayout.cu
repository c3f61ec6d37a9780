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

// The V elements at `at` as one word, element q in bits 8·sizeof(T)·q up: one 4-byte access where `whole`,
// else the first n (those inside the matrix) one at a time, the rest 0.
template <typename T>
__device__ __forceinline__ unsigned read_chunk(const T* at, int n, bool whole) {
    constexpr int V = 4 / sizeof(T);
    if (whole) return *reinterpret_cast<const unsigned*>(at);
    unsigned word = 0;
    for (int q = 0; q < V && q < n; ++q) word |= unsigned(at[q]) << (8 * sizeof(T) * q);
    return word;
}

template <typename T>
__device__ __forceinline__ void write_chunk(T* at, unsigned word, int n, bool whole) {
    constexpr int V = 4 / sizeof(T);
    if (whole) {
        *reinterpret_cast<unsigned*>(at) = word;
        return;
    }
    for (int q = 0; q < V && q < n; ++q) at[q] = T(word >> (8 * sizeof(T) * q));
}

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
    // inside the matrix, with rows that start on a word: every access a word. The loops below are written
    // twice, for this case and the ragged edge, so that each is unrolled with its TILE / ROWS loads in flight.
    const bool whole_c = words && c0 + TILE <= cols, whole_r = words && r0 + TILE <= rows;

    for (long long p = blockIdx.y; p < products; p += gridDim.y) {
        const T* s = src + p * src_step + (r0 + threadIdx.y) * src_pitch + c0 + V * x;
        T* d = dst + p * dst_step + (c0 + threadIdx.y) * dst_pitch + r0 + V * x;
        // ---- 2. read the tile a row at a time: a warp on 32 consecutive words of src ----
        if (whole_c && whole_r) {
#pragma unroll
            for (int y = 0; y < TILE / ROWS; ++y) {
                const int i = threadIdx.y + y * ROWS;
                tile[i][x ^ (i / V % LANES)] = read_chunk(s + y * ROWS * src_pitch, V, true);
            }
        } else {
#pragma unroll
            for (int y = 0; y < TILE / ROWS; ++y) {
                const int i = threadIdx.y + y * ROWS;
                tile[i][x ^ (i / V % LANES)] =
                    r0 + i < rows ? read_chunk(s + y * ROWS * src_pitch, cols - c0 - V * x, whole_c) : 0u;
            }
        }
        __syncthreads();
        // ---- 3. write it a column at a time: lane x packs rows V·x .. V·x + V - 1 into one word of dst ----
        const T* stored = reinterpret_cast<const T*>(&tile[0][0]);
#pragma unroll
        for (int y = 0; y < TILE / ROWS; ++y) {
            const int j = threadIdx.y + y * ROWS;
            unsigned word = 0;
#pragma unroll
            for (int q = 0; q < V; ++q)
                word |= unsigned(stored[((V * x + q) * LANES + (j / V ^ x)) * V + j % V]) << (8 * sizeof(T) * q);
            if (c0 + j < cols) write_chunk(d + y * ROWS * dst_pitch, word, rows - r0 - V * x, whole_r);
        }
        __syncthreads();  // the next product's reads overwrite the tile
    }
}
