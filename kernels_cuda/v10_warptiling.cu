// v10 warptiling: block tile -> warp tiles -> per-lane 4×4 sub-tiles, over a STAGES-deep cp.async
// pipeline.
//
// C (M×N) = A (M×K) · B (K×N), fp32, all row-major. Launch: block (BM/WM)·(BN/WN)·32 threads,
// grid (ceil(N/BN), ceil(M/BM)). Template <BM, BN, BK, WM, WN, STAGES, ALIGNED>; needs sm_80+
// (cp.async). ALIGNED: every row of A, B and C starts on a 16-byte boundary (the launcher checks).
// The block's BM×BN tile is split into WM×WN warp tiles. A warp walks its tile in (WM/16)×(WN/32)
// sub-tiles of 16×32; in each, its 32 lanes form a 4×8 grid and lane (lr, lc) owns the 4×4 outputs
// at rows 4·lr.., columns 4·lc... So a lane holds (WM/16)·(WN/32)·16 accumulators, per k it reads WM/16
// + WN/32 float4 from shared memory, and in each read the 8 lanes served together touch either one
// address (A: broadcast) or 32 consecutive floats (B): conflict-free by construction, where v08
// needed interleaving by hand. Warp tiles also keep a warp's reads inside a small part of the tiles,
// and, with the pipeline STAGES deep, the copies of STAGES - 1 tiles are in flight during the FMAs.
// The body of the k-loop has no branch: ptxas schedules instructions within a basic block, so a
// branch there (a tile past K, or aligned rows tested at run time) would cut the body in pieces and
// leave the copies' address arithmetic as a serial prologue with no FMAs to hide its latencies.
// Hence ALIGNED is a template parameter and a tile past K is issued as zero-filling copies.
// `warptile_block` computes one block tile; v11 reuses it with another block order, a search over the
// template parameters, and its A_T / B_T parameters (transposed operands read in place; v10 is NN).
#include "common.cuh"

// The blocks per SM a tile is built for, declared to ptxas in __launch_bounds__: two for tiles up to
// 128×128 with an 8-deep k step (one block's FMAs run while the other waits at its barrier), else
// one: larger tiles hold 128 accumulators per thread, and a 16-deep step's unrolled fragment reads
// need more than the 128 registers two blocks of 256 threads leave (it spills on sm_80). ptxas
// schedules the loop differently once it is told (the same instructions, in another order).
template <int BM, int BN, int BK>
__host__ __device__ constexpr int blocks_per_sm() {
    return BM * BN <= 128 * 128 && BK == 8 ? 2 : 1;
}

// How a row-major C is stored (v11 searches it; step 6). Which registers ptxas gives the accumulators follows from
// it, and with them the k-loop's schedule: a float4 store asks each row of four in an aligned register quad.
constexpr int C_FLOAT4 = 0;  // float4s of the accumulators
constexpr int C_FLOATS = 1;  // one float at a time: four times the store instructions, any registers
constexpr int C_FLOAT4_OF_SUMS = 2;  // float4s of acc + 0.0f (not an identity, -0 + 0 = +0: the sums are new values)

// A_T: A arrives as the transpose of a row-major K×M matrix (a[k·M + m]), read in place; B_T: B as that
// of a row-major N×K one (b[n·K + k]). C_T: C is stored transposed, as a row-major N×M matrix (v11 computes
// a tt product as Cᵀ = Bᵀ·Aᵀ, whose operands are its stored matrices as given). ALIGNED: the rows of the
// stored C and of the W-major operands start on 16-byte boundaries (B's rows as given, A's stored rows of M
// when A_T). C_STORE: one of the above (not with C_T, which chooses its own). Tiles past the 48 KB a kernel may
// declare statically live in dynamic shared memory, which the launcher sizes (v11's `Tile.shared_mem`).
template <int BM, int BN, int BK, int WM, int WN, int STAGES, bool ALIGNED, bool A_T = false, bool B_T = false,
          bool C_T = false, int C_STORE = C_FLOAT4>
__device__ __forceinline__ void warptile_block(const float* __restrict__ a, const float* __restrict__ b,
                                               float* __restrict__ c, int M, int N, int K,
                                               int block_row, int block_col) {
    constexpr int THREADS = (BM / WM) * (BN / WN) * 32;
    constexpr int M_ITER = WM / 16, N_ITER = WN / 32;  // 16×32 sub-tiles per warp tile
    static_assert(BM % WM == 0 && BN % WN == 0 && WM % 16 == 0 && WN % 32 == 0 && STAGES >= 2, "tiles nest");
    static_assert(C_STORE >= C_FLOAT4 && C_STORE <= C_FLOAT4_OF_SUMS && (!C_T || C_STORE == C_FLOAT4), "a C_STORE");
    // a K-major operand's tile is padded: conflict-free transposed copies (load_tile)
    constexpr int A_PAD = A_T ? 0 : 4, B_PAD = B_T ? 4 : 0;
    constexpr int A_FLOATS = STAGES * BK * (BM + A_PAD), B_FLOATS = STAGES * BK * (BN + B_PAD);
    float (*a_tile)[BK][BM + A_PAD];
    float (*b_tile)[BK][BN + B_PAD];
    if constexpr ((A_FLOATS + B_FLOATS) * sizeof(float) > 48 * 1024) {
        extern __shared__ __align__(16) float dynamic_tiles[];
        a_tile = reinterpret_cast<float (*)[BK][BM + A_PAD]>(dynamic_tiles);
        b_tile = reinterpret_cast<float (*)[BK][BN + B_PAD]>(dynamic_tiles + A_FLOATS);
    } else {
        __shared__ __align__(16) float a_static[STAGES][BK][BM + A_PAD];
        __shared__ __align__(16) float b_static[STAGES][BK][BN + B_PAD];
        a_tile = a_static;
        b_tile = b_static;
    }

    // ---- 2. map this thread to its warp's tile, its lane's 4×4 sub-tiles, and its copies ----
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int warp_row = (warp / (BN / WN)) * WM, warp_col = (warp % (BN / WN)) * WN;
    const int lane_row = (lane / 8) * 4, lane_col = (lane % 8) * 4;
    // its first element of each slice, (w, k) in the tile, w being m for A and n for B (see load_tile)
    constexpr int A_ALONG = A_T ? (ALIGNED ? BM / 4 : BM) : 8;  // threads along a stored row of A
    const int a_w = A_T ? (tid % A_ALONG) * (ALIGNED ? 4 : 1) : tid / 8, a_k = A_T ? tid / A_ALONG : tid % 8;
    const int b_k = B_T ? tid % 8 : tid / (BN / 4), b_w = B_T ? tid / 8 : (tid % (BN / 4)) * 4;
    // ... and in the matrix: + k0 per tile (K-major), + k0 times the stored row (W-major)
    const float* a_src = A_T ? a + a_k * M + block_row + a_w : a + (block_row + a_w) * K + a_k;
    const float* b_src = B_T ? b + (block_col + b_w) * K + b_k : b + b_k * N + block_col + b_w;

    // Start the copies of the tile at k0 and do not wait. What lies past the matrix is zero-filled, and all
    // of a tile that is not `live` (past K), reading nothing: cheaper than a branch around it. Which index
    // of an operand is contiguous in memory decides its copy:
    // - K-major (A as given, B transposed: k runs along the stored rows): 4-byte copies, stored transposed,
    //   in passes of THREADS/8 w × 8 k. A warp copies 4 w × 8 k: whole 32-byte sectors of the operand and,
    //   in the tile padded by 4 floats a row (as v08), 32 different banks.
    // - W-major (B as given, A transposed: n or m runs along them): a 16-byte chunk per thread straight
    //   into the tile, in passes of THREADS/(W/4) k × W (a quarter-warp's 8 chunks: 32 consecutive floats
    //   of one row, no conflict). Rows not ALIGNED: B's chunks go as four 4-byte copies, and a transposed
    //   A's as a float per thread, a warp along 32 consecutive floats of a row (four copies per chunk and
    //   their four edge tests spill in the 128×128 tiles built for two blocks per SM).
    // (Written out here, not as a function per case, so that v10's own kernel compiles as it is: docs/notes/v11.md.)
    auto load_tile = [&](int stage, int k0, bool live) {
        constexpr int B_ALONG = B_T ? 8 : BN / 4;
        constexpr int A_STEP = THREADS / A_ALONG, B_STEP = THREADS / B_ALONG;  // k (W-major) or w (K-major) a pass
        static_assert(THREADS % A_ALONG == 0 && (A_T ? BK % A_STEP : BM % A_STEP + BK % 8) == 0, "whole passes of A");
        static_assert(THREADS % B_ALONG == 0 && (B_T ? BN % B_STEP + BK % 8 : BK % B_STEP) == 0, "whole passes of B");
        if constexpr (A_T) {
#pragma unroll
            for (int p = 0; p < BK / A_STEP; ++p) {
                const int k = a_k + p * A_STEP, row = k0 + k;
                const float* src = a_src + (k0 + p * A_STEP) * M;
                const bool valid = live && row < K && block_row + a_w < M;  // a chunk: inside A or past its edge
                if (ALIGNED) {
                    cp_async16(&a_tile[stage][k][a_w], valid ? src : a, valid);
                } else {
                    cp_async4(&a_tile[stage][k][a_w], valid ? src : a, valid);
                }
            }
        } else {
#pragma unroll
            for (int p = 0; p < BM / A_STEP; ++p)
#pragma unroll
                for (int ch = 0; ch < BK / 8; ++ch) {
                    const int r = a_w + p * A_STEP, k = ch * 8 + a_k;
                    const bool valid = live && block_row + r < M && k0 + k < K;
                    cp_async4(&a_tile[stage][k][r], valid ? a_src + p * A_STEP * K + k0 + ch * 8 : a, valid);
                }
        }
        if constexpr (B_T) {
#pragma unroll
            for (int p = 0; p < BN / B_STEP; ++p)
#pragma unroll
                for (int ch = 0; ch < BK / 8; ++ch) {
                    const int r = b_w + p * B_STEP, k = ch * 8 + b_k;
                    const bool valid = live && block_col + r < N && k0 + k < K;
                    cp_async4(&b_tile[stage][k][r], valid ? b_src + p * B_STEP * K + k0 + ch * 8 : b, valid);
                }
        } else {
#pragma unroll
            for (int p = 0; p < BK / B_STEP; ++p) {
                const int k = b_k + p * B_STEP, row = k0 + k;
                const float* src = b_src + (k0 + p * B_STEP) * N;
                if (ALIGNED) {  // a whole chunk lies inside B or past its edge
                    const bool valid = live && row < K && block_col + b_w < N;
                    cp_async16(&b_tile[stage][k][b_w], valid ? src : b, valid);
                } else {
                    for (int q = 0; q < 4; ++q) {
                        const bool valid = live && row < K && block_col + b_w + q < N;
                        cp_async4(&b_tile[stage][k][b_w + q], valid ? src + q : b, valid);
                    }
                }
            }
        }
    };

    // Fragments are double-buffered too: the reads for step k+1 are issued before the FMAs of step k.
    float acc[M_ITER * 4][N_ITER * 4] = {};
    float a_frag[2][M_ITER * 4], b_frag[2][N_ITER * 4];
    auto load_frags = [&](int stage, int k, int buf) {
#pragma unroll
        for (int mi = 0; mi < M_ITER; ++mi)
            unpack4(lds4(&a_tile[stage][k][warp_row + mi * 16 + lane_row]), &a_frag[buf][mi * 4]);
#pragma unroll
        for (int ni = 0; ni < N_ITER; ++ni)
            unpack4(lds4(&b_tile[stage][k][warp_col + ni * 32 + lane_col]), &b_frag[buf][ni * 4]);
    };

    const int k_tiles = (K + BK - 1) / BK;
    // ---- 3. prologue: start copying the first STAGES - 1 tiles, wait for the first, read its first fragments ----
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        load_tile(s, s * BK, s < k_tiles);
        cp_async_commit();  // one group per tile, empty or not, so that the waits count tiles
    }
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    load_frags(0, 0, 0);
    int read_stage = 0, write_stage = STAGES - 1;

    // ---- 4. march along K: per tile, start tile kt+STAGES-1; before its last step, wait for tile kt+1 ----
    for (int kt = 0; kt < k_tiles; ++kt) {
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            if (k == BK - 1) {
                cp_async_wait<STAGES - 2>();  // this thread's copies of tile kt+1 have landed
                __syncthreads();  // everyone's have, and everyone has read its last fragments of tile kt
                read_stage = read_stage + 1 == STAGES ? 0 : read_stage + 1;
            }
            load_frags(read_stage, (k + 1) % BK, (k + 1) % 2);  // step k+1 (tile kt+1's first at k = BK-1)
            if (k == 0) {  // the stage of tile kt-1, free since the barrier before this tile's last step
                load_tile(write_stage, (kt + STAGES - 1) * BK, kt + STAGES - 1 < k_tiles);
                cp_async_commit();
                write_stage = write_stage + 1 == STAGES ? 0 : write_stage + 1;
            }

            // ---- 5. multiply: a (4·M_ITER)×(4·N_ITER) outer product per k, from registers ----
#pragma unroll
            for (int i = 0; i < M_ITER * 4; ++i)
#pragma unroll
                for (int j = 0; j < N_ITER * 4; ++j) acc[i][j] += a_frag[k % 2][i] * b_frag[k % 2][j];
        }
    }

    // ---- 6. write back, along a row of C, as C_STORE asks (a warp's float4 store covers 4 rows × 128 bytes), or
    // (C_T) down a column. There a float4 would read the accumulators by columns, and ptxas schedules the
    // k-loop worse for it (docs/notes/v11.md): where a block has the SM's registers to itself, C_T stores one
    // float at a time in the accumulators' row order; with two blocks per SM (128 registers a thread) that
    // order spills, and C_T stores float4s down the column (a warp's store covers 8 rows × 64 bytes) ----
    const int row0 = block_row + warp_row + lane_row, col0 = block_col + warp_col + lane_col;
    if constexpr (C_T && blocks_per_sm<BM, BN, BK>() == 1) {
#pragma unroll
        for (int mi = 0; mi < M_ITER; ++mi)
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int ni = 0; ni < N_ITER; ++ni)
#pragma unroll
                    for (int j = 0; j < 4; ++j) {
                        const int row = row0 + mi * 16 + i, col = col0 + ni * 32 + j;
                        if (row < M && col < N) c[col * M + row] = acc[mi * 4 + i][ni * 4 + j];
                    }
    } else if constexpr (C_T) {
        // mi innermost: its steps are 16 floats along the stored row, offsets of one address
#pragma unroll
        for (int ni = 0; ni < N_ITER; ++ni)
#pragma unroll
            for (int j = 0; j < 4; ++j)
#pragma unroll
                for (int mi = 0; mi < M_ITER; ++mi) {
                    const int col = ni * 4 + j;
                    store4(c, col0 + ni * 32 + j, row0 + mi * 16, N, M, ALIGNED,
                           make_float4(acc[mi * 4][col], acc[mi * 4 + 1][col], acc[mi * 4 + 2][col], acc[mi * 4 + 3][col]));
                }
    } else {
#pragma unroll
        for (int mi = 0; mi < M_ITER; ++mi)
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int ni = 0; ni < N_ITER; ++ni) {
                    const float* v = &acc[mi * 4 + i][ni * 4];
                    const int row = row0 + mi * 16 + i, col = col0 + ni * 32;
                    if constexpr (C_STORE == C_FLOATS) {
#pragma unroll
                        for (int j = 0; j < 4; ++j)
                            if (row < M && col + j < N) c[row * N + col + j] = v[j];
                    } else if constexpr (C_STORE == C_FLOAT4_OF_SUMS) {
                        store4(c, row, col, M, N, ALIGNED, make_float4(__fadd_rn(v[0], 0.0f), __fadd_rn(v[1], 0.0f),
                                                                      __fadd_rn(v[2], 0.0f), __fadd_rn(v[3], 0.0f)));
                    } else {
                        store4(c, row, col, M, N, ALIGNED, make_float4(v[0], v[1], v[2], v[3]));
                    }
                }
    }
}

template <int BM, int BN, int BK, int WM, int WN, int STAGES, bool ALIGNED>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, blocks_per_sm<BM, BN, BK>())
    warptiling(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int M, int N,
               int K) {
    // ---- 1. map this block to a BM×BN tile of C, in row-major block order ----
    warptile_block<BM, BN, BK, WM, WN, STAGES, ALIGNED>(a, b, c, M, N, K, blockIdx.y * BM, blockIdx.x * BN);
}
