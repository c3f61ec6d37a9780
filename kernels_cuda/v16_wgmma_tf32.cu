// v16 wgmma tf32: fp32 matrices on Hopper's tensor cores, rounded to tf32, at wgmma speed.
//
// C (M×N) = A (M×K) · B (K×N), fp32 in and out, products of tf32-rounded operands accumulated in fp32;
// all row-major. Template <STAGES, GROUP_M>; tile BM×BN×BK = 256×128×32. Launch: 384 threads (a
// producer warpgroup and two consumer warpgroups, as v15), grid = min(SMs, tiles), persistent.
// Dynamic shared memory: STAGES × 48 KB of tiles + 32 KB for C + 1 KB. Needs sm_90a.
//
// The obstacle, and the way round it:
//   - wgmma reads a 32-bit operand from shared memory only K-major (the transpose bits exist for 16-bit
//     types alone). A row-major A is K-major; a row-major B is N-major, so C = A·B cannot take B from
//     shared memory as v14/v15 do. Copying Bᵀ first would move 2·K·N·4 bytes more per call.
//   - So the kernel computes Cᵀ = Bᵀ·Aᵀ instead. wgmma's first operand (64 rows of Bᵀ, i.e. 64 columns
//     of B) comes from registers, where any layout can be loaded; its second (Aᵀ, 8×256 per step) must
//     be K-major, and A's rows are exactly that. Each consumer thread reads its Bᵀ fragment from the
//     swizzled B tile with four scalar loads per k8 step and rounds it (cvt.rna, as v13 and cuBLAS do);
//     the A tile goes to wgmma straight from shared memory (the tensor core truncates it to tf32).
//   - The accumulators hold Cᵀ: thread t has Cᵀ rows (C columns) n, n + 8 and Cᵀ columns (C rows)
//     m, m + 1, ... . The epilogue transposes them on the way into v15's swizzled staging buffer (64
//     rows of C × 64 columns per round, four rounds per consumer) and TMA stores C from there. When C's
//     rows are not 16-byte aligned (N % 4 != 0) they are stored from registers instead: eight
//     consecutive lanes write eight consecutive floats of one C row, every 32-byte sector whole.
// Everything else is v15's: roles, setmaxnreg, the full/empty ring, the grouped persistent order.
#include "hopper.cuh"

constexpr int V16_BM = 256, V16_BN = 128, V16_BK = 32;               // BK: 32 floats, one 128-byte swizzle row
constexpr int V16_A_BYTES = V16_BM * V16_BK * 4, V16_B_BYTES = V16_BK * V16_BN * 4;  // 32 KB, 16 KB
constexpr int V16_B_BOX_FLOATS = V16_BK * 32;                         // one 32-column box of B: 4 KB

// Element (k, n) of a B tile stored as 32-column TMA boxes with the 128-byte swizzle: box n/32, row k,
// 16-byte chunk (n%32)/4 XOR k%8. A warp's fragment load then has two lanes per bank (2-way conflict).
__device__ __forceinline__ int b_offset(int k, int n) {
    return (n / 32) * V16_B_BOX_FLOATS + k * 32 + ((((n % 32) / 4) ^ (k % 8)) * 4) + n % 4;
}

constexpr int V16_C_STAGE_BYTES = 2 * STAGE_BOX_BYTES;  // per consumer: 16 KB

// A consumer warpgroup's Cᵀ block (64 columns n of C × 256 rows m) through its staging buffer and TMA,
// 64 rows of C at a time, transposed on the way in: element (m, n) of a round is byte 4n of row m.
__device__ __forceinline__ void store_transposed_via_tma(const float (&d)[128], unsigned char* stage,
                                                         const TmaDescriptor* c_map, int row0, int col0,
                                                         unsigned barrier_id) {
    const int t = threadIdx.x % 128, n = 16 * (t / 32) + (t % 32) / 4, k = t % 4;
    auto fill = [&](int round) {
#pragma unroll
        for (int j = 8 * round; j < 8 * round + 8; ++j) {
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const int m = 8 * (j % 8) + 2 * k + q % 2;
                *reinterpret_cast<float*>(stage + stage_offset(m, 4 * (n + 8 * (q / 2)))) = d[4 * j + q];
            }
        }
    };
    store_through_stage<4>(stage, c_map, barrier_id, fill,
                           [&](int round, int box) { return make_int3(col0 + 32 * box, row0 + 64 * round, 0); });
}

template <int STAGES, int GROUP_M>
__global__ void __launch_bounds__(384, 1)
    wgmma_tf32(const __grid_constant__ TmaDescriptor a_map, const __grid_constant__ TmaDescriptor b_map,
               const __grid_constant__ TmaDescriptor c_map, float* __restrict__ c, int M, int N, int K, int c_by_tma) {
    constexpr int BM = V16_BM, BN = V16_BN, BK = V16_BK;
    // ---- 1. carve shared memory: STAGES A tiles, STAGES B tiles, two C staging buffers (1024-byte aligned
    //         for the swizzle), barriers ----
    extern __shared__ unsigned char smem_raw[];
    // Aligned by an offset, not through an integer, so that the compiler still knows the fragment loads
    // read shared memory (LDS rather than generic loads).
    unsigned char* smem = smem_raw + ((1024 - (smem_addr(smem_raw) & 1023)) & 1023);
    unsigned char* a_tiles = smem;
    float* b_tiles = reinterpret_cast<float*>(smem + STAGES * V16_A_BYTES);
    unsigned char* c_stages = smem + STAGES * (V16_A_BYTES + V16_B_BYTES);
    u64* full = reinterpret_cast<u64*>(c_stages + 2 * V16_C_STAGE_BYTES);
    u64* empty = full + STAGES;

    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, k_tiles = (K + BK - 1) / BK;
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
            int loads = 0;
            for (int t = blockIdx.x; t < tiles_m * tiles_n; t += gridDim.x) {
                int tile_m, tile_n;
                grouped_tile(t, tiles_m, tiles_n, GROUP_M, tile_m, tile_n);
                for (int kb = 0; kb < k_tiles; ++kb, ++loads) {
                    const int s = loads % STAGES, k0 = kb * BK;
                    if (loads >= STAGES) mbar_wait(&empty[s], (loads / STAGES - 1) & 1);
                    mbar_expect_tx(&full[s], V16_A_BYTES + V16_B_BYTES);
                    tma_load_2d(a_tiles + s * V16_A_BYTES, &a_map, &full[s], k0, tile_m * BM);
                    float* b_tile = b_tiles + s * (V16_B_BYTES / 4);
                    for (int box = 0; box < BN / 32; ++box)
                        tma_load_2d(b_tile + box * V16_B_BOX_FLOATS, &b_map, &full[s], tile_n * BN + box * 32, k0);
                }
            }
        }
    } else {
        // The consumer warpgroups: warpgroup 1 owns columns 0-63 of the C tile (rows of Cᵀ), 2 owns 64-127.
        setmaxnreg_inc<232>();
        float d[128] = {};
        const int t = threadIdx.x % 128;
        const int n = (warpgroup - 1) * 64 + 16 * (t / 32) + (t % 32) / 4, k = t % 4;  // this thread's Bᵀ element
        int it = 0;  // k-blocks consumed: slot it % STAGES, phase (it / STAGES) & 1
        for (int tile = blockIdx.x; tile < tiles_m * tiles_n; tile += gridDim.x) {
            int tile_m, tile_n;
            grouped_tile(tile, tiles_m, tiles_n, GROUP_M, tile_m, tile_n);
            for (int kb = 0; kb < k_tiles; ++kb, ++it) {
                const int s = it % STAGES;
                mbar_wait(&full[s], (it / STAGES) & 1);
                // ---- 3. Bᵀ fragments into registers (rounded to tf32), then multiply with A from shared memory ----
                const float* b_tile = b_tiles + s * (V16_B_BYTES / 4);
                unsigned frag[BK / 8][4];
#pragma unroll
                for (int kk = 0; kk < BK / 8; ++kk) {
                    frag[kk][0] = to_tf32(b_tile[b_offset(8 * kk + k, n)]);
                    frag[kk][1] = to_tf32(b_tile[b_offset(8 * kk + k, n + 8)]);
                    frag[kk][2] = to_tf32(b_tile[b_offset(8 * kk + k + 4, n)]);
                    frag[kk][3] = to_tf32(b_tile[b_offset(8 * kk + k + 4, n + 8)]);
                }
                const unsigned char* a_tile = a_tiles + s * V16_A_BYTES;
                wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 8; ++kk) {
                    wgmma_m64n256k8_tf32(d, frag[kk], smem_desc(a_tile + kk * 32, 16, 1024), kb > 0 || kk > 0);
                }
                wgmma_commit();
                // Unlike v15, wait for this k-block's wgmmas before going on: they read `frag` from registers
                // until they finish, and the compiler, which sees only the issue, would load the next k-block's
                // fragments into the same registers. The other consumer warpgroup's wgmmas keep the tensor
                // cores busy meanwhile.
                wgmma_wait<0>();
                if (t == 0) mbar_arrive(&empty[s]);
            }
            fence_accumulators(d);
            // ---- 4. write back, transposed: d holds Cᵀ (rows n, n + 8; columns m, m + 1 per 8-column block) ----
            if (c_by_tma) {
                store_transposed_via_tma(d, c_stages + (warpgroup - 1) * V16_C_STAGE_BYTES, &c_map, tile_m * BM,
                                         tile_n * BN + (warpgroup - 1) * 64, warpgroup);
            } else {
                const int col = tile_n * BN + n, row = tile_m * BM + 2 * k;
#pragma unroll
                for (int j = 0; j < 32; ++j) {
#pragma unroll
                    for (int q = 0; q < 4; ++q) {
                        const int r = row + 8 * j + q % 2, cc = col + 8 * (q / 2);
                        if (r < M && cc < N) c[static_cast<long long>(r) * N + cc] = d[4 * j + q];
                    }
                }
            }
        }
        if (t == 0) bulk_wait_read<0>();  // the staging buffer must outlive the last store's read
    }
}
