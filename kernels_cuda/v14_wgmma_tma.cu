// v14 wgmma + TMA: Hopper's copy engine fills a STAGES-deep ring of shared-memory tiles, each slot
// guarded by two mbarriers, and two warpgroups multiply out of it with wgmma; a persistent grid.
//
// C (M×N) = A (M×K) · B (K×N), fp16 or bf16 in, fp32 accumulation, C in the input type; all row-major.
// Template <IS_BF16, STAGES>; tile BM×BN×BK = 128×128×64. Launch: 256 threads (two warpgroups), grid
// = min(SMs, tiles) CTAs, each walking tiles blockIdx.x, blockIdx.x + gridDim.x, ... (persistent: the
// prologue of one tile overlaps the end of the previous one, and no CTA is launched twice on an SM).
// Dynamic shared memory: STAGES × 32 KB of tiles + 1 KB for alignment and barriers. Needs sm_90a.
//
// Who does what, per k-block of 64:
//   - thread 0 (the producer, in warpgroup 0) waits until the slot is empty, announces 32 KB on the
//     slot's `full` barrier and issues three TMA copies: the A box (64 k × 128 rows) and two B boxes
//     (64 k × 64 columns). The copy engine computes addresses, clips at the edges (zeros outside the
//     tensor), swizzles into shared memory (128-byte pattern, so wgmma reads it without bank conflicts)
//     and counts the bytes down on the barrier.
//   - both warpgroups wait on `full`, issue 4 wgmma (k = 16 each; warpgroup w owns rows 64w..64w+63 of
//     the tile, 64 fp32 accumulators per thread), and one k-block later, when wgmma.wait_group says
//     those multiplies have read their operands, arrive on the slot's `empty` barrier.
// The tensor map (the tensor's shape, strides, box and swizzle) is built on the host by the driver
// (cuTensorMapEncodeTiled) and passed by value as a __grid_constant__ parameter.
#include "hopper.cuh"

constexpr int V14_BM = 128, V14_BN = 128, V14_BK = 64;
constexpr int V14_A_BYTES = V14_BM * V14_BK * 2, V14_B_BYTES = V14_BK * V14_BN * 2;  // 16 KB each

template <int IS_BF16, int STAGES>
__global__ void __launch_bounds__(256, 1)
    wgmma_tma(const __grid_constant__ TmaDescriptor a_map, const __grid_constant__ TmaDescriptor b_map,
              unsigned short* __restrict__ c, int M, int N, int K) {
    constexpr int BM = V14_BM, BN = V14_BN, BK = V14_BK;
    // ---- 1. carve shared memory: STAGES A tiles, STAGES B tiles (1024-byte aligned for the swizzle), barriers ----
    extern __shared__ unsigned char smem_raw[];
    unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<u64>(smem_raw) + 1023) & ~u64(1023));
    unsigned char* a_tiles = smem;
    unsigned char* b_tiles = smem + STAGES * V14_A_BYTES;
    u64* full = reinterpret_cast<u64*>(b_tiles + STAGES * V14_B_BYTES);
    u64* empty = full + STAGES;

    const int tiles_n = (N + BN - 1) / BN, tiles = ((M + BM - 1) / BM) * tiles_n, k_tiles = (K + BK - 1) / BK;
    const int warpgroup = threadIdx.x / 128;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);   // the producer's expect_tx arrival (+ the bytes)
            mbar_init(&empty[s], 2);  // one arrival per warpgroup
        }
        fence_barrier_init();
    }
    __syncthreads();

    // ---- 2. the producer: thread 0 walks the same tile sequence as the consumers, STAGES - 1 k-blocks ahead ----
    int load_tile = blockIdx.x, load_k = 0, loads = 0;
    auto load_next = [&]() {
        if (load_tile >= tiles) return;
        const int s = loads % STAGES;
        if (loads >= STAGES) mbar_wait(&empty[s], (loads / STAGES - 1) & 1);
        const int row = (load_tile / tiles_n) * BM, col = (load_tile % tiles_n) * BN, k0 = load_k * BK;
        mbar_expect_tx(&full[s], V14_A_BYTES + V14_B_BYTES);
        tma_load_2d(a_tiles + s * V14_A_BYTES, &a_map, &full[s], k0, row);
        tma_load_2d(b_tiles + s * V14_B_BYTES, &b_map, &full[s], col, k0);
        tma_load_2d(b_tiles + s * V14_B_BYTES + V14_B_BYTES / 2, &b_map, &full[s], col + 64, k0);
        ++loads;
        if (++load_k == k_tiles) {
            load_k = 0;
            load_tile += gridDim.x;
        }
    };
    if (threadIdx.x == 0)
        for (int i = 0; i < STAGES - 1; ++i) load_next();

    // The consumers: both warpgroups, tile after tile.
    float d[64] = {};
    int it = 0;  // k-blocks consumed so far by this CTA: slot it % STAGES, phase (it / STAGES) & 1
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        for (int kb = 0; kb < k_tiles; ++kb, ++it) {
            const int s = it % STAGES;
            mbar_wait(&full[s], (it / STAGES) & 1);
            // ---- 3. multiply: A rows 64w.. (K-major, 128-byte rows), B 64 k × 128 columns (N-major, two 64-column boxes) ----
            // A: a k-step of 16 is 32 bytes into each swizzled 128-byte row; 8-row groups 1024 bytes apart.
            // B: a k-step of 16 is 16 rows of 128 bytes; 64-column boxes 8 KB apart, 8-row groups 1024 bytes.
            const unsigned char* a_tile = a_tiles + s * V14_A_BYTES + warpgroup * 64 * 128;
            const unsigned char* b_tile = b_tiles + s * V14_B_BYTES;
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < BK / 16; ++kk) {
                wgmma_m64n128k16<IS_BF16>(d, smem_desc(a_tile + kk * 32, 16, 1024),
                                          smem_desc(b_tile + kk * 16 * 128, V14_B_BYTES / 2, 1024), kb > 0 || kk > 0);
            }
            wgmma_commit();
            // Release: the previous k-block's multiplies are done reading, so its slot can be refilled.
            wgmma_wait<1>();
            if (kb > 0 && threadIdx.x % 128 == 0) mbar_arrive(&empty[(it - 1) % STAGES]);
            if (threadIdx.x == 0) load_next();
        }
        wgmma_wait<0>();
        fence_accumulators(d);
        if (threadIdx.x % 128 == 0) mbar_arrive(&empty[(it - 1) % STAGES]);
        // ---- 4. write back: fp32 accumulators rounded to the output type, masked at the edges ----
        store_accumulators<IS_BF16>(d, c, M, N, (tile / tiles_n) * BM + warpgroup * 64, (tile % tiles_n) * BN);
    }
}
