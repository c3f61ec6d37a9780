// v16 wgmma tf32: fp32 matrices on Hopper's tensor cores, rounded to tf32, at wgmma speed.
//
// C (M×N) = A (M×K) · B (K×N), fp32 in and out, products of tf32-rounded operands accumulated in fp32, C
// row-major. A_T: A is the transpose of a row-major K×M matrix (else row-major M×K); B_T: B is that of a
// row-major N×K (else row-major K×N). Layouts nn, nt and tt; not tn (see below). A batch of `products`
// matrices: every map is 3-D (column, row, matrix), and an operand shared by the batch is a batch of one
// read at matrix index 0 (a_step, b_step: 0 for it, else 1).
// Template <BS, STAGES, GROUP_M, A_T, B_T>; tile BM×BN×BK = BS×128×32 (nn, nt) or 128×BS×32 (tt), BS =
// 256, or 128 or 64 for products too small to give every SM a wide tile. Launch: 384 threads (a producer
// warpgroup and two consumer warpgroups, as v15), grid = min(SMs, tiles of every product), persistent.
// Dynamic shared memory: STAGES × (BS / 8 + 16) KB of tiles + 32 KB for C + 1 KB. Needs sm_90a.
//
// The obstacle, and the way round it:
//   - wgmma reads a 32-bit operand from shared memory only K-major (the transpose bits exist for 16-bit
//     types alone), but its *first* operand may come from registers, loaded in any layout. So the
//     operand whose stored rows are K goes to wgmma from shared memory (S: BS wide, wgmma's n) and the
//     other is read into registers (R: 128 wide, 64 rows per consumer warpgroup, wgmma's m):
//       nn: S = Aᵀ (A's rows are K), R = Bᵀ, read from B's N-major tile: the accumulators hold Cᵀ = Bᵀ·Aᵀ;
//       nt: the same, Bᵀ read from B's K-major tile (the stored N×K's rows);
//       tt: S = B (the stored N×K's rows are K), R = A, read from A's M-major tile: they hold C = A·B;
//       tn: neither operand is K-major as stored; the caller copies one (the shared layer makes it nn).
//     Copying a B of nn to K-major instead would move 2·K·N·4 bytes more per call.
//   - Each consumer thread reads its R fragment from the swizzled tile with four scalar loads per k8
//     step and rounds it (cvt.rna, as v13 and cuBLAS do); the S tile goes to wgmma straight from shared
//     memory (the tensor core truncates it to tf32).
//   - wgmma reads a register operand until the wait_group that retires it, so the four k8 steps of a
//     k-block have four fragment sets and a group each; with two groups in flight, a set is loaded again
//     (for the next k-block) only after the wait that retired its wgmma.
//   - Boxes: a TMA box row is 32 floats (128 bytes, the swizzle's width): of k for a matrix stored with
//     rows of K (64 rows per box; BS / 64 boxes make S, two make a K-major R), else of M or N (32 k rows
//     per box; four make an M/N-major R). The maps do not depend on BS.
//   - Epilogue: thread t's accumulators are rows 16·(t/32) + (t%32)/4 (+8) and columns 8j + 2·(t%4) (+1) of
//     the warpgroup's 64×BS block: of Cᵀ (nn, nt: stored transposed) or of C (tt). They go through v15's
//     swizzled staging buffer, 64 columns of the block per round, and TMA stores C from there. When C's
//     rows are not 16-byte aligned (N % 4 != 0) they are stored from registers instead.
// Everything else is v15's: roles, setmaxnreg, the full/empty ring, the grouped persistent order over every
// product's tiles.
#include "hopper.cuh"

constexpr int V16_BR = 128, V16_BK = 32;  // R's width (two consumer warpgroups × 64 rows); BK: one 128-byte row
constexpr int V16_R_BYTES = V16_BR * V16_BK * 4;                                 // 16 KB
constexpr int V16_K_BOX_BYTES = 64 * V16_BK * 4, V16_MN_BOX_FLOATS = V16_BK * 32;  // 8 KB; 4 KB

// Element (k, r) of an R tile (r: a column of B in nn and nt, a row of A in tt), as TMA wrote it with the
// 128-byte swizzle. M/N-major (nn, tt): 32-wide boxes, row k, 16-byte chunk (r%32)/4 XOR k%8: a warp's
// fragment load has two lanes per bank (2-way conflict). K-major (nt): row r, chunk k/4 XOR r%8: the
// eight rows of a load land in eight different chunks (conflict-free).
template <bool K_MAJOR>
__device__ __forceinline__ int r_offset(int k, int r) {
    if constexpr (K_MAJOR) {
        return r * V16_BK + (((k / 4) ^ (r % 8)) * 4) + k % 4;
    } else {
        return (r / 32) * V16_MN_BOX_FLOATS + k * 32 + ((((r % 32) / 4) ^ (k % 8)) * 4) + r % 4;
    }
}

constexpr int V16_C_STAGE_BYTES = 2 * STAGE_BOX_BYTES;  // per consumer: 16 KB

// A consumer warpgroup's 64×(2·R) accumulator block through its staging buffer and TMA, 64 block columns
// (two 32-column boxes of C) per round. TRANSPOSED: the block is Cᵀ, so a round is 64 rows of C, all
// 64 columns from col0, and element (i, j) of the block is byte 4i of C row j; else it is C, a round is
// 64 columns of C, and a thread writes its two adjacent columns as one 8-byte store.
template <bool TRANSPOSED, int R>
__device__ __forceinline__ void store_via_tma(const float (&d)[R], unsigned char* stage, const TmaDescriptor* c_map,
                                              int row0, int col0, int product, unsigned barrier_id) {
    const int t = threadIdx.x % 128, i = 16 * (t / 32) + (t % 32) / 4, k = t % 4;
    auto fill = [&](int round) {
#pragma unroll
        for (int j = 8 * round; j < 8 * round + 8; ++j) {
            const int col = 8 * (j % 8) + 2 * k;  // within the round's 64 block columns
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const float x = d[4 * j + 2 * h], y = d[4 * j + 2 * h + 1];
                if constexpr (TRANSPOSED) {
                    *reinterpret_cast<float*>(stage + stage_offset(col, 4 * (i + 8 * h))) = x;
                    *reinterpret_cast<float*>(stage + stage_offset(col + 1, 4 * (i + 8 * h))) = y;
                } else {
                    *reinterpret_cast<float2*>(stage + stage_offset(i + 8 * h, 4 * col)) = make_float2(x, y);
                }
            }
        }
    };
    store_through_stage<R / 32>(stage, c_map, barrier_id, fill, [&](int round, int box) {
        return TRANSPOSED ? make_int3(col0 + 32 * box, row0 + 64 * round, product)
                          : make_int3(col0 + 64 * round + 32 * box, row0, product);
    });
}

// The same block straight from registers into a matrix c (M×N), when TMA cannot write C: element (i, j)
// goes to C's (row0 + i, col0 + j), or TRANSPOSED to (row0 + j, col0 + i); eight consecutive lanes write
// eight consecutive floats of one C row either way, every 32-byte sector whole.
template <bool TRANSPOSED, int R>
__device__ __forceinline__ void store_from_registers(const float (&d)[R], float* c, int M, int N, int row0,
                                                     int col0) {
    const int t = threadIdx.x % 128, i0 = 16 * (t / 32) + (t % 32) / 4, j0 = 2 * (t % 4);
#pragma unroll
    for (int j = 0; j < R / 4; ++j) {
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            const int i = i0 + 8 * (q / 2), jj = j0 + 8 * j + q % 2;
            const int r = row0 + (TRANSPOSED ? jj : i), cc = col0 + (TRANSPOSED ? i : jj);
            if (r < M && cc < N) c[static_cast<long long>(r) * N + cc] = d[4 * j + q];
        }
    }
}

template <int BS, int STAGES, int GROUP_M, int A_T, int B_T>
__global__ void __launch_bounds__(384, 1)
    wgmma_tf32(const __grid_constant__ TmaDescriptor a_map, const __grid_constant__ TmaDescriptor b_map,
               const __grid_constant__ TmaDescriptor c_map, float* __restrict__ c, int M, int N, int K, int products,
               int a_step, int b_step, int c_by_tma) {
    static_assert(BS == 256 || BS == 128 || BS == 64, "wgmma's n: m64n256k8, m64n128k8 or m64n64k8");
    static_assert(B_T || !A_T, "tn: neither operand is K-major as stored (copy one first)");
    // The roles (see the top): nn, nt: S = A, R = B, the accumulators hold Cᵀ; tt: S = B, R = A, they hold C.
    constexpr bool TRANSPOSED = !A_T, R_K_MAJOR = B_T && !A_T;
    constexpr int BM = A_T ? V16_BR : BS, BN = A_T ? BS : V16_BR, BK = V16_BK;
    constexpr int S_BOXES = BS / 64, S_BYTES = BS * BK * 4;
    // ---- 1. carve shared memory: STAGES S tiles, STAGES R tiles, two C staging buffers (1024-byte aligned
    //         for the swizzle), barriers ----
    extern __shared__ unsigned char smem_raw[];
    // Aligned by an offset, not through an integer, so that the compiler still knows the fragment loads
    // read shared memory (LDS rather than generic loads).
    unsigned char* smem = smem_raw + ((1024 - (smem_addr(smem_raw) & 1023)) & 1023);
    unsigned char* s_tiles = smem;
    float* r_tiles = reinterpret_cast<float*>(smem + STAGES * S_BYTES);
    unsigned char* c_stages = smem + STAGES * (S_BYTES + V16_R_BYTES);
    u64* full = reinterpret_cast<u64*>(c_stages + 2 * V16_C_STAGE_BYTES);
    u64* empty = full + STAGES;

    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, k_tiles = (K + BK - 1) / BK;
    const int product_tiles = tiles_m * tiles_n;
    // Tile t -> its product and (tile row, tile column) in it: one product after another, each in grouped order.
    auto tile_of = [&](int t, int& product, int& tile_m, int& tile_n) {
        product = t / product_tiles;
        grouped_tile(t % product_tiles, tiles_m, tiles_n, GROUP_M, tile_m, tile_n);
    };
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);   // the producer's expect_tx
            mbar_init(&empty[s], 2);  // each consumer warpgroup
        }
        fence_barrier_init();
    }
    __syncthreads();

    const int warpgroup = threadIdx.x / 128;
    if (warpgroup == 0) {
        // ---- 2. the producer warpgroup: give registers back; one thread keeps the ring full ----
        setmaxnreg_dec<40>();
        if (threadIdx.x == 0) {
            const TmaDescriptor* s_map = A_T ? &b_map : &a_map;
            const TmaDescriptor* r_map = A_T ? &a_map : &b_map;
            int loads = 0;
            for (int t = blockIdx.x; t < product_tiles * products; t += gridDim.x) {
                int product, tile_m, tile_n;
                tile_of(t, product, tile_m, tile_n);
                // where this tile's S and R start in their operands, and in which matrix of the batch
                const int s0 = A_T ? tile_n * BN : tile_m * BM, r0 = A_T ? tile_m * BM : tile_n * BN;
                const int s_matrix = product * (A_T ? b_step : a_step), r_matrix = product * (A_T ? a_step : b_step);
                for (int kb = 0; kb < k_tiles; ++kb, ++loads) {
                    const int s = loads % STAGES, k0 = kb * BK;
                    if (loads >= STAGES) mbar_wait(&empty[s], (loads / STAGES - 1) & 1);
                    mbar_expect_tx(&full[s], S_BYTES + V16_R_BYTES);
                    // S: BS / 64 boxes of 64 stored rows (of A in nn and nt, of the N×K B in tt) × 32 k
                    unsigned char* s_tile = s_tiles + s * S_BYTES;
                    for (int box = 0; box < S_BOXES; ++box)
                        tma_load_3d(s_tile + box * V16_K_BOX_BYTES, s_map, &full[s], k0, s0 + 64 * box, s_matrix);
                    // R: two boxes of 64 stored rows × 32 k (nt: the N×K B), or four of 32 k rows × 32 columns
                    // of the stored K×N B (nn) or K×M A (tt)
                    float* r_tile = r_tiles + s * (V16_R_BYTES / 4);
                    if constexpr (R_K_MAJOR) {
                        for (int box = 0; box < 2; ++box)
                            tma_load_3d(r_tile + box * (V16_K_BOX_BYTES / 4), r_map, &full[s], k0, r0 + 64 * box,
                                        r_matrix);
                    } else {
                        for (int box = 0; box < 4; ++box)
                            tma_load_3d(r_tile + box * V16_MN_BOX_FLOATS, r_map, &full[s], r0 + 32 * box, k0,
                                        r_matrix);
                    }
                }
            }
        }
    } else {
        // The consumer warpgroups: warpgroup 1 owns R rows 0-63 of the tile, 2 owns 64-127.
        setmaxnreg_inc<232>();
        float d[BS / 2] = {};
        const int t = threadIdx.x % 128;
        const int r = (warpgroup - 1) * 64 + 16 * (t / 32) + (t % 32) / 4, k = t % 4;  // this thread's R element
        // R fragments, one set per k8 step of a k-block, rounded to tf32: set kk is loaded while the wgmmas of
        // the two steps before it run, and stays untouched until the wait that retires its own wgmma.
        unsigned frag[BK / 8][4];
        auto load_frag = [&](int kk, const float* r_tile) {
            frag[kk][0] = to_tf32(r_tile[r_offset<R_K_MAJOR>(8 * kk + k, r)]);
            frag[kk][1] = to_tf32(r_tile[r_offset<R_K_MAJOR>(8 * kk + k, r + 8)]);
            frag[kk][2] = to_tf32(r_tile[r_offset<R_K_MAJOR>(8 * kk + k + 4, r)]);
            frag[kk][3] = to_tf32(r_tile[r_offset<R_K_MAJOR>(8 * kk + k + 4, r + 8)]);
        };
        int it = 0;  // k-blocks consumed: slot it % STAGES, phase (it / STAGES) & 1
        for (int tile = blockIdx.x; tile < product_tiles * products; tile += gridDim.x) {
            int product, tile_m, tile_n;
            tile_of(tile, product, tile_m, tile_n);
            mbar_wait(&full[it % STAGES], (it / STAGES) & 1);
            load_frag(0, r_tiles + (it % STAGES) * (V16_R_BYTES / 4));
            for (int kb = 0; kb < k_tiles; ++kb, ++it) {
                const int s = it % STAGES, next = (it + 1) % STAGES;
                const float* r_tile = r_tiles + s * (V16_R_BYTES / 4);
                const unsigned char* s_tile = s_tiles + s * S_BYTES;
                // ---- 3. one wgmma per k8 step (R from registers, S from shared memory), each its own group; the
                //         next step's fragments are read under the two groups in flight ----
#pragma unroll
                for (int kk = 0; kk < BK / 8; ++kk) {
                    if (kk + 1 < BK / 8) {
                        load_frag(kk + 1, r_tile);
                    } else if (kb + 1 < k_tiles) {
                        mbar_wait(&full[next], ((it + 1) / STAGES) & 1);
                        load_frag(0, r_tiles + next * (V16_R_BYTES / 4));
                    }
                    wgmma_fence();
                    wgmma_m64nk8_tf32(d, frag[kk], smem_desc(s_tile + kk * 32, 16, 1024), kb > 0 || kk > 0);
                    wgmma_commit();
                    wgmma_wait<2>();
                    // the previous k-block's last wgmma has just retired: its slot goes back to the producer
                    if (kk == 1 && kb > 0 && t == 0) mbar_arrive(&empty[(it + STAGES - 1) % STAGES]);
                }
            }
            wgmma_wait<0>();
            if (t == 0) mbar_arrive(&empty[(it + STAGES - 1) % STAGES]);
            fence_accumulators(d);
            // ---- 4. write back its 64 R rows × BS: C's columns (Cᵀ, stored transposed) or rows (tt) ----
            const int row0 = tile_m * BM + (TRANSPOSED ? 0 : (warpgroup - 1) * 64);
            const int col0 = tile_n * BN + (TRANSPOSED ? (warpgroup - 1) * 64 : 0);
            if (c_by_tma) {
                store_via_tma<TRANSPOSED>(d, c_stages + (warpgroup - 1) * V16_C_STAGE_BYTES, &c_map, row0, col0,
                                          product, warpgroup);
            } else {
                store_from_registers<TRANSPOSED>(d, c + static_cast<long long>(product) * M * N, M, N, row0, col0);
            }
        }
        if (t == 0) bulk_wait_read<0>();  // the staging buffer must outlive the last store's read
    }
}
