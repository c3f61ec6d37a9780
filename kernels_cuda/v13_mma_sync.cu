// v13 mma.sync: the tensor cores through PTX, as cuBLAS and CUTLASS drive them on Ampere, with
// ldmatrix, a STAGES-deep cp.async pipeline, XOR-swizzled shared memory and a grouped block order.
//
// C (M×N) = A (M×K) · B (K×N), all row-major, fp32 accumulation. Two kernels, one structure:
//   mma_sync<IS_BF16, ...>  fp16/bf16 in and out (elements as unsigned short), mma m16n8k16;
//   mma_sync_tf32<...>      fp32 in and out, operands rounded to tf32 (cvt.rna), mma m16n8k8.
// Template <..., BM, BN, BK, WM, WN, STAGES, GROUP_M>. Launch: (BM/WM)·(BN/WN)·32 threads, a 1-D grid
// of ceil(M/BM)·ceil(N/BN) blocks in v11's grouped order. Needs sm_80+.
//
// What WMMA (v12) hid, and what this rung does by hand:
//   - Fragments have a documented layout here: in m16n8k16, lane l holds A elements at rows l/4 and
//     l/4 + 8, columns 2·(l%4).. and + 8; B at rows 2·(l%4).., column l/4; C at rows l/4, l/4 + 8 and
//     columns 2·(l%4), + 1. So the epilogue stores C straight from registers.
//   - ldmatrix loads those fragments from shared memory in one instruction per four 8×8 blocks (each
//     lane supplies one row address); its .trans form transposes B's row-major 8×8 blocks on the way.
//   - Bank conflicts: ldmatrix reads eight 16-byte rows at once; rows of a 32-element A tile are 64
//     bytes apart, so rows 0, 2, 4, 6 would share banks, and rows of B (256 bytes apart) all would. The
//     16-byte chunk index is XORed with bits of the row (A: (row/2)%4, B: row%8), which puts the eight
//     rows of every ldmatrix in eight different bank groups and keeps cp.async's 16-byte chunks whole.
//     The tf32 kernel reads single floats and swizzles 4-float chunks the same way.
//   - Pipelining: STAGES - 1 tiles are in flight (cp.async) while one is multiplied; one barrier per tile.
#include "common.cuh"
#include "half.cuh"

// ---- the shared skeleton: tile copies and the pipeline (the grouped order is common.cuh's grouped_tile) ----

// One 16-byte chunk (ELEMS elements) of row `row` at column `col` into shared memory: cp.async when
// the rows are 16-byte aligned (then a chunk is wholly inside the matrix or wholly outside, zero-filled),
// else element by element with plain loads and stores (zeros outside).
template <typename E, int ELEMS>
__device__ __forceinline__ void copy_chunk(E* dst, const E* __restrict__ src, int row, int col, int rows, int cols,
                                           int aligned) {
    if (aligned) {
        const bool valid = row < rows && col < cols;
        cp_async16(dst, valid ? src + row * cols + col : src, valid);
        return;
    }
#pragma unroll
    for (int q = 0; q < ELEMS; ++q) dst[q] = (row < rows && col + q < cols) ? src[row * cols + col + q] : E(0);
}

// The pipeline's prologue: the first STAGES - 1 tiles (k0 = 0, BK, ...) in flight, one commit group each.
template <int STAGES, int BK, typename LoadTile>
__device__ __forceinline__ void start_pipeline(const LoadTile& load_tile, int k_tiles) {
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < k_tiles) load_tile(s, s * BK);
        cp_async_commit();
    }
}

// Before multiplying tile kt: wait for it, then refill the slot every warp has finished with (one barrier
// per tile).
template <int STAGES, int BK, typename LoadTile>
__device__ __forceinline__ void advance_pipeline(const LoadTile& load_tile, int kt, int k_tiles) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    if (kt + STAGES - 1 < k_tiles) load_tile((kt + STAGES - 1) % STAGES, (kt + STAGES - 1) * BK);
    cp_async_commit();
}

// ---- fp16 / bf16: mma.m16n8k16 ----

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const void* row_address) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(static_cast<unsigned>(__cvta_generic_to_shared(row_address))));
}

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const void* row_address) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(static_cast<unsigned>(__cvta_generic_to_shared(row_address))));
}

template <int IS_BF16>
__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    if constexpr (IS_BF16) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                     "{%0, %1, %2, %3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    } else {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                     "{%0, %1, %2, %3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
}

// Swizzled element offsets of 16-byte chunk `chunk` (8 elements) in row `row` of the tiles.
__device__ __forceinline__ int a_offset16(int row, int chunk) { return row * 32 + ((chunk ^ ((row >> 1) & 3)) << 3); }
template <int BN>
__device__ __forceinline__ int b_offset16(int row, int chunk) { return row * BN + ((chunk ^ (row & 7)) << 3); }

template <int IS_BF16, int BM, int BN, int BK, int WM, int WN, int STAGES, int GROUP_M>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32)
    mma_sync(const unsigned short* __restrict__ a, const unsigned short* __restrict__ b, unsigned short* __restrict__ c,
             int M, int N, int K, int aligned) {
    constexpr int THREADS = (BM / WM) * (BN / WN) * 32, FM = WM / 16, FN = WN / 8;
    static_assert(BK == 32 && BN % 64 == 0 && WM % 16 == 0 && WN % 16 == 0, "the swizzles assume 32-wide A rows");
    static_assert((BM * BK / 8) % THREADS == 0 && (BK * BN / 8) % THREADS == 0, "whole copy passes");
    __shared__ __align__(128) unsigned short a_tiles[STAGES][BM * BK];
    __shared__ __align__(128) unsigned short b_tiles[STAGES][BK * BN];

    // ---- 1. map this block to a tile of C (grouped order) and this warp to a WM×WN block of it ----
    int block_row, block_col;
    grouped_tile(blockIdx.x, (M + BM - 1) / BM, (N + BN - 1) / BN, GROUP_M, block_row, block_col);
    block_row *= BM;
    block_col *= BN;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int warp_row = (warp / (BN / WN)) * WM, warp_col = (warp % (BN / WN)) * WN;

    // ---- 2. stage A and B tiles: 16-byte chunks into their swizzled places, STAGES - 1 tiles ahead ----
    auto load_tile = [&](int stage, int k0) {
#pragma unroll
        for (int i = threadIdx.x; i < BM * BK / 8; i += THREADS) {
            const int r = i / (BK / 8), ch = i % (BK / 8);
            copy_chunk<unsigned short, 8>(&a_tiles[stage][a_offset16(r, ch)], a, block_row + r, k0 + ch * 8, M, K, aligned);
        }
#pragma unroll
        for (int i = threadIdx.x; i < BK * BN / 8; i += THREADS) {
            const int r = i / (BN / 8), ch = i % (BN / 8);
            copy_chunk<unsigned short, 8>(&b_tiles[stage][b_offset16<BN>(r, ch)], b, k0 + r, block_col + ch * 8, K, N,
                                          aligned);
        }
    };
    const int k_tiles = (K + BK - 1) / BK;
    start_pipeline<STAGES, BK>(load_tile, k_tiles);

    float acc[FM][FN][4] = {};
    for (int kt = 0; kt < k_tiles; ++kt) {
        advance_pipeline<STAGES, BK>(load_tile, kt, k_tiles);
        const unsigned short* a_tile = a_tiles[kt % STAGES];
        const unsigned short* b_tile = b_tiles[kt % STAGES];
        // ---- 3. multiply: per 16-deep step, ldmatrix the fragments and issue FM·FN mma ----
#pragma unroll
        for (int ks = 0; ks < BK / 16; ++ks) {
            unsigned a_frag[FM][4], b_frag[FN / 2][4];
#pragma unroll
            for (int i = 0; i < FM; ++i)  // lane l: row l%16 of the 16×16 block, k half l/16
                ldmatrix_x4(a_frag[i], &a_tile[a_offset16(warp_row + 16 * i + lane % 16, 2 * ks + lane / 16)]);
#pragma unroll
            for (int j = 0; j < FN / 2; ++j)  // lane l: k row l%16, 8-column block l/16 of a 16-column pair
                ldmatrix_x4_trans(b_frag[j], &b_tile[b_offset16<BN>(16 * ks + lane % 16, (warp_col + 16 * j) / 8 + lane / 16)]);
#pragma unroll
            for (int i = 0; i < FM; ++i)
#pragma unroll
                for (int j = 0; j < FN; ++j)
                    mma_16816<IS_BF16>(acc[i][j], a_frag[i], b_frag[j / 2][2 * (j % 2)], b_frag[j / 2][2 * (j % 2) + 1]);
        }
    }
    cp_async_wait<0>();

    // ---- 4. write back straight from the accumulator fragments, rounded and masked ----
    const int row = block_row + warp_row + lane / 4, col = block_col + warp_col + 2 * (lane % 4);
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) {
            store_pair<IS_BF16>(c, M, N, row + 16 * i, col + 8 * j, acc[i][j][0], acc[i][j][1]);
            store_pair<IS_BF16>(c, M, N, row + 16 * i + 8, col + 8 * j, acc[i][j][2], acc[i][j][3]);
        }
}

// ---- tf32: mma.m16n8k8 on fp32 operands rounded to tf32 ----

__device__ __forceinline__ void mma_1688_tf32(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Swizzled element offsets: 4-float chunks XORed with row bits, as the 16-bit tiles' 8-element chunks.
__device__ __forceinline__ int a_offset32(int row, int k) { return row * 16 + (k ^ (((row >> 1) & 3) << 2)); }
template <int BN>
__device__ __forceinline__ int b_offset32(int row, int col) { return row * BN + (col ^ ((row & 3) << 3)); }

__device__ __forceinline__ void store_pair_f32(float* c, int M, int N, int row, int col, float lo, float hi) {
    if (row >= M || col >= N) return;
    float* p = c + row * N + col;
    if (col + 1 < N && N % 2 == 0) {
        *reinterpret_cast<float2*>(p) = make_float2(lo, hi);
    } else {
        p[0] = lo;
        if (col + 1 < N) p[1] = hi;
    }
}

template <int BM, int BN, int BK, int WM, int WN, int STAGES, int GROUP_M>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32)
    mma_sync_tf32(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int M, int N, int K,
                  int aligned) {
    constexpr int THREADS = (BM / WM) * (BN / WN) * 32, FM = WM / 16, FN = WN / 8;
    static_assert(BK == 16 && BN % 32 == 0 && WM % 16 == 0 && WN % 8 == 0, "the swizzles assume 16-wide A rows");
    static_assert((BM * BK / 4) % THREADS == 0 && (BK * BN / 4) % THREADS == 0, "whole copy passes");
    __shared__ __align__(128) float a_tiles[STAGES][BM * BK];
    __shared__ __align__(128) float b_tiles[STAGES][BK * BN];

    // ---- 1. map this block to a tile of C (grouped order) and this warp to a WM×WN block of it ----
    int block_row, block_col;
    grouped_tile(blockIdx.x, (M + BM - 1) / BM, (N + BN - 1) / BN, GROUP_M, block_row, block_col);
    block_row *= BM;
    block_col *= BN;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int warp_row = (warp / (BN / WN)) * WM, warp_col = (warp % (BN / WN)) * WN;

    // ---- 2. stage A and B tiles: 4-float chunks into their swizzled places, STAGES - 1 tiles ahead ----
    auto load_tile = [&](int stage, int k0) {
#pragma unroll
        for (int i = threadIdx.x; i < BM * BK / 4; i += THREADS) {
            const int r = i / (BK / 4), k = (i % (BK / 4)) * 4;
            copy_chunk<float, 4>(&a_tiles[stage][a_offset32(r, k)], a, block_row + r, k0 + k, M, K, aligned);
        }
#pragma unroll
        for (int i = threadIdx.x; i < BK * BN / 4; i += THREADS) {
            const int r = i / (BN / 4), n = (i % (BN / 4)) * 4;
            copy_chunk<float, 4>(&b_tiles[stage][b_offset32<BN>(r, n)], b, k0 + r, block_col + n, K, N, aligned);
        }
    };
    const int k_tiles = (K + BK - 1) / BK;
    start_pipeline<STAGES, BK>(load_tile, k_tiles);

    float acc[FM][FN][4] = {};
    for (int kt = 0; kt < k_tiles; ++kt) {
        advance_pipeline<STAGES, BK>(load_tile, kt, k_tiles);
        const float* a_tile = a_tiles[kt % STAGES];
        const float* b_tile = b_tiles[kt % STAGES];
        // ---- 3. multiply: per 8-deep step, load the fragments float by float (no 32-bit ldmatrix.trans), round, mma ----
#pragma unroll
        for (int ks = 0; ks < BK / 8; ++ks) {
            unsigned a_frag[FM][4], b_frag[FN][2];
#pragma unroll
            for (int i = 0; i < FM; ++i) {
                const int r = warp_row + 16 * i + g, k = 8 * ks + t;
                a_frag[i][0] = to_tf32(a_tile[a_offset32(r, k)]);
                a_frag[i][1] = to_tf32(a_tile[a_offset32(r + 8, k)]);
                a_frag[i][2] = to_tf32(a_tile[a_offset32(r, k + 4)]);
                a_frag[i][3] = to_tf32(a_tile[a_offset32(r + 8, k + 4)]);
            }
#pragma unroll
            for (int j = 0; j < FN; ++j) {
                const int k = 8 * ks + t, n = warp_col + 8 * j + g;
                b_frag[j][0] = to_tf32(b_tile[b_offset32<BN>(k, n)]);
                b_frag[j][1] = to_tf32(b_tile[b_offset32<BN>(k + 4, n)]);
            }
#pragma unroll
            for (int i = 0; i < FM; ++i)
#pragma unroll
                for (int j = 0; j < FN; ++j) mma_1688_tf32(acc[i][j], a_frag[i], b_frag[j][0], b_frag[j][1]);
        }
    }
    cp_async_wait<0>();

    // ---- 4. write back straight from the accumulator fragments, masked ----
    const int row = block_row + warp_row + g, col = block_col + warp_col + 2 * t;
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) {
            store_pair_f32(c, M, N, row + 16 * i, col + 8 * j, acc[i][j][0], acc[i][j][1]);
            store_pair_f32(c, M, N, row + 16 * i + 8, col + 8 * j, acc[i][j][2], acc[i][j][3]);
        }
}
