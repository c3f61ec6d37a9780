// v12 WMMA: the first tensor-core rung, through CUDA C++'s warp-level matrix API (nvcuda::wmma).
//
// C (M×N) = A (M×K) · B (K×N), fp16 or bf16 in (T = __half or __nv_bfloat16), fp32 accumulation, C in
// T; all row-major. Template <T, BM, BN, BK, WM, WN>. Launch: block (BM/WM)·(BN/WN)·32 threads, grid
// (ceil(N/BN), ceil(M/BM)). Needs sm_80+ (bf16 fragments).
// The structure is v03's: stage an A and a B tile in shared memory, __syncthreads(), multiply,
// __syncthreads(). What changed is the multiply: each warp owns a WM×WN block of C held as
// (WM/16)·(WN/16) accumulator *fragments*, and one wmma::mma_sync is a whole 16×16×16 product on the
// tensor cores (4096 multiply-adds: 4096 FFMA instructions on CUDA cores). Which thread holds which
// element of a fragment is unspecified, so the epilogue cannot index it: each warp stores its fragment
// to shared memory, then reads it back by element, rounds to T and writes C with edge masks.
// Copies: 16-byte chunks (8 elements) when the rows are 16-byte aligned, else element by element.
// The shared-memory rows are padded by 8 elements so that load_matrix_sync's rows fall in different banks.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

using namespace nvcuda;

template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

// Eight consecutive elements of row `row` from column `col` into shared memory, zeros outside the matrix.
template <typename T>
__device__ __forceinline__ void copy8(T* dst, const T* __restrict__ src, int row, int col, int rows, int cols,
                                      int aligned) {
    if (aligned && row < rows && col + 7 < cols) {
        *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src + row * cols + col);
        return;
    }
#pragma unroll
    for (int q = 0; q < 8; ++q) dst[q] = (row < rows && col + q < cols) ? src[row * cols + col + q] : from_float<T>(0.0f);
}

template <typename T, int BM, int BN, int BK, int WM, int WN>
__global__ void wmma_gemm(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M, int N, int K,
                          int aligned) {
    constexpr int THREADS = (BM / WM) * (BN / WN) * 32, PAD = 8;
    constexpr int FM = WM / 16, FN = WN / 16;  // fragments per warp
    static_assert(BM % WM == 0 && BN % WN == 0 && WM % 16 == 0 && WN % 16 == 0 && BK % 16 == 0, "tiles nest");
    static_assert((BM * BK / 8) % THREADS == 0 && (BK * BN / 8) % THREADS == 0, "whole copy passes");
    __shared__ __align__(32) T a_tile[BM][BK + PAD];
    __shared__ __align__(32) T b_tile[BK][BN + PAD];
    __shared__ __align__(32) float staging[THREADS / 32][16][16];

    // ---- 1. map this block to a BM×BN tile of C, and this warp to a WM×WN block of it ----
    const int block_row = blockIdx.y * BM, block_col = blockIdx.x * BN;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int warp_row = (warp / (BN / WN)) * WM, warp_col = (warp % (BN / WN)) * WN;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FM][FN];
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    for (int k0 = 0; k0 < K; k0 += BK) {
        // ---- 2. stage A and B tiles in shared memory, 8 elements per copy ----
        for (int chunk = threadIdx.x; chunk < BM * BK / 8; chunk += THREADS) {
            const int r = chunk / (BK / 8), kc = (chunk % (BK / 8)) * 8;
            copy8(&a_tile[r][kc], a, block_row + r, k0 + kc, M, K, aligned);
        }
        for (int chunk = threadIdx.x; chunk < BK * BN / 8; chunk += THREADS) {
            const int r = chunk / (BN / 8), nc = (chunk % (BN / 8)) * 8;
            copy8(&b_tile[r][nc], b, k0 + r, block_col + nc, K, N, aligned);
        }
        __syncthreads();
        // ---- 3. multiply: per 16-deep step, load this warp's fragments and issue FM·FN tensor-core products ----
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a_frag[FM];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> b_frag[FN];
#pragma unroll
            for (int i = 0; i < FM; ++i) wmma::load_matrix_sync(a_frag[i], &a_tile[warp_row + 16 * i][kk], BK + PAD);
#pragma unroll
            for (int j = 0; j < FN; ++j) wmma::load_matrix_sync(b_frag[j], &b_tile[kk][warp_col + 16 * j], BN + PAD);
#pragma unroll
            for (int i = 0; i < FM; ++i)
#pragma unroll
                for (int j = 0; j < FN; ++j) wmma::mma_sync(acc[i][j], a_frag[i], b_frag[j], acc[i][j]);
        }
        __syncthreads();  // the next copies overwrite the tiles
    }

    // ---- 4. write back: fragment -> this warp's staging square -> rounded, masked elements of C ----
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) {
            wmma::store_matrix_sync(&staging[warp][0][0], acc[i][j], 16, wmma::mem_row_major);
            __syncwarp();
            for (int e = lane; e < 256; e += 32) {
                const int row = block_row + warp_row + 16 * i + e / 16, col = block_col + warp_col + 16 * j + e % 16;
                if (row < M && col < N) c[row * N + col] = from_float<T>(staging[warp][e / 16][e % 16]);
            }
            __syncwarp();
        }
}
