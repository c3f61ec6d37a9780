// Hopper (sm_90a) building blocks shared by v14-v16, each a thin wrapper over one PTX instruction:
// the TMA copy engine (cp.async.bulk.tensor), mbarriers that count arrivals and bytes, wgmma (a
// warpgroup's asynchronous matrix multiply reading its operands from shared memory through
// descriptors), setmaxnreg, and the cluster primitives for TMA multicast. 16-bit elements (fp16 or
// bf16) are held as unsigned short and tf32 ones as unsigned: nothing here needs cuda_fp16.h, so NVRTC
// compiles it with no CUDA headers at all.
#pragma once
#include "common.cuh"
#include "half.cuh"

typedef unsigned long long u64;

// The driver's CUtensorMap (built on the host by cuTensorMapEncodeTiled), opaque to the kernel. It is
// passed by value as a __grid_constant__ parameter, so the TMA unit reads it from parameter space.
struct alignas(64) TmaDescriptor {
    u64 words[16];
};

__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// ---- mbarriers: a phase completes when `count` threads arrived and the expected bytes landed ----

__device__ __forceinline__ void mbar_init(u64* bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count));
}

// Makes the initialised barriers visible to the async proxy (TMA) and to the other CTAs of the cluster.
__device__ __forceinline__ void fence_barrier_init() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }

// One arrival that also announces `bytes` of TMA traffic this phase must wait for.
__device__ __forceinline__ void mbar_expect_tx(u64* bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}

__device__ __forceinline__ void mbar_arrive(u64* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}

// An arrival on the barrier at the same offset in CTA `cta` of this cluster (possibly this CTA).
// Release at CTA scope (the default), as CUTLASS's cluster barrier does: what the arrival must order
// are the consumers' wgmma reads, already complete at wgmma.wait_group. `.release.cluster` compiles to
// MEMBAR.ALL.GPU before every arrival, which costs the cluster candidates dearly (docs/notes/v15.md).
__device__ __forceinline__ void mbar_arrive_cluster(u64* bar, unsigned cta) {
    asm volatile(
        "{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, %0, %1;\n"
        "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(smem_addr(bar)), "r"(cta)
        : "memory");
}

// Spin until the phase with this parity (0 for the first completion, then 1, 0, ...) has completed.
__device__ __forceinline__ void mbar_wait(u64* bar, unsigned parity) {
    asm volatile(
        "{\n.reg .pred done;\nWAIT:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n@!done bra WAIT;\n}\n" ::"r"(smem_addr(bar)),
        "r"(parity)
        : "memory");
}

// ---- TMA: one box of a 2-D tensor into shared memory, completing `bytes` on an mbarrier ----
// Coordinates are elements, innermost first; parts of the box outside the tensor are filled with zeros.

__device__ __forceinline__ void tma_load_2d(void* dst, const TmaDescriptor* desc, u64* bar, int inner, int outer) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"(
            smem_addr(dst)),
        "l"(desc), "r"(smem_addr(bar)), "r"(inner), "r"(outer)
        : "memory");
}

// A box of matrix `matrix` of a 3-D tensor (a batch of matrices; coordinates column, row, matrix): rows
// and columns outside that matrix read as zeros, never the next matrix's.
__device__ __forceinline__ void tma_load_3d(void* dst, const TmaDescriptor* desc, u64* bar, int inner, int outer,
                                            int matrix) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];\n" ::"r"(
            smem_addr(dst)),
        "l"(desc), "r"(smem_addr(bar)), "r"(inner), "r"(outer), "r"(matrix)
        : "memory");
}

// The same box written to the same offset in every CTA of `cta_mask`, each CTA's barrier signalled.
__device__ __forceinline__ void tma_load_3d_multicast(void* dst, const TmaDescriptor* desc, u64* bar, int inner,
                                                      int outer, int matrix, unsigned short cta_mask) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
        " [%0], [%1, {%3, %4, %5}], [%2], %6;\n" ::"r"(smem_addr(dst)),
        "l"(desc), "r"(smem_addr(bar)), "r"(inner), "r"(outer), "r"(matrix), "h"(cta_mask)
        : "memory");
}

// ---- TMA stores: a box of shared memory into the matrix, clipped at its edges ----

// Generic-proxy writes to shared memory (st.shared) made visible to the async proxy (a TMA store).
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// Into matrix `matrix` of a 3-D C (a 2-D C is passed as a batch of one).
__device__ __forceinline__ void tma_store_3d(const TmaDescriptor* desc, const void* src, int inner, int outer,
                                             int matrix) {
    asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];\n" ::"l"(desc),
                 "r"(smem_addr(src)), "r"(inner), "r"(outer), "r"(matrix)
                 : "memory");
}

__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }

// Wait until at most `pending` committed store groups of this thread still read shared memory.
template <int pending>
__device__ __forceinline__ void bulk_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(pending) : "memory");
}

// A barrier for the `threads` threads (whole warps) that use barrier `id` (1-15; 0 is __syncthreads).
__device__ __forceinline__ void named_barrier(unsigned id, unsigned threads) {
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// Four 8×8 matrices of 16-bit elements from a warp's registers into shared memory, ldmatrix's inverse:
// lane l gives the address of row l % 8 of matrix l / 8, and register k holds two adjacent elements of
// row (lane / 4) of matrix k, which is how an mma or wgmma accumulator fragment lays out each 8×8 block.
// One instruction stores 16 bytes per lane, where st.shared of packed pairs stores 4.
__device__ __forceinline__ void stmatrix_x4(void* p, unsigned r0, unsigned r1, unsigned r2, unsigned r3) {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(smem_addr(p)), "r"(r0),
                 "r"(r1), "r"(r2), "r"(r3)
                 : "memory");
}

// ---- a consumer warpgroup's block of C through shared memory and TMA stores (v15, v16) ----

// Its 16 KB staging buffer holds two TMA boxes of 64 rows × 128 bytes, side by side: a 64-row slab
// 256 bytes wide. Byte b of row r sits in box b / 128, 16-byte chunk (b % 128) / 16 XOR r % 8: TMA's
// 128-byte swizzle, which also spreads a warp's writes of one column over the 32 banks.
constexpr int STAGE_BOX_BYTES = 64 * 128;

__device__ __forceinline__ int stage_offset(int row, int byte) {
    return (byte / 128) * STAGE_BOX_BYTES + row * 128 + ((((byte % 128) / 16) ^ (row % 8)) * 16) + byte % 16;
}

// ROUNDS times: fill(round) writes the buffer, then one thread stores boxes b < BOXES (one or both
// halves of the buffer) at origin(round, b) (an int3: column, row, matrix of C), clipped at the matrix edges.
// Before a round writes the buffer, the previous store must have read it; after the last round's
// stores are issued the warpgroup goes on while TMA writes. barrier_id: a named barrier used by this
// warpgroup's 128 threads only.
template <int ROUNDS, int BOXES = 2, typename Fill, typename Origin>
__device__ __forceinline__ void store_through_stage(unsigned char* stage, const TmaDescriptor* c_map,
                                                    unsigned barrier_id, Fill fill, Origin origin) {
    const bool issuer = threadIdx.x % 128 == 0;
#pragma unroll
    for (int round = 0; round < ROUNDS; ++round) {
        if (issuer) bulk_wait_read<0>();
        named_barrier(barrier_id, 128);
        fill(round);
        fence_proxy_async();
        named_barrier(barrier_id, 128);
        if (issuer) {
#pragma unroll
            for (int box = 0; box < BOXES; ++box) {
                const int3 at = origin(round, box);
                tma_store_3d(c_map, stage + box * STAGE_BOX_BYTES, at.x, at.y, at.z);
            }
            bulk_commit();
        }
    }
}

// ---- clusters ----

__device__ __forceinline__ unsigned cluster_rank() {
    unsigned rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
    return rank;
}

// Every thread of every CTA in the cluster arrives and waits (release/acquire: shared-memory writes
// before it are visible to the cluster after it). Not `.aligned`: the threads of a warp may reach it at
// different times (the producer warp's copy-issuing thread arrives last).
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}

// ---- registers per thread, moved between warpgroups (the kernel needs __launch_bounds__(threads, 1)) ----

template <int REGS>
__device__ __forceinline__ void setmaxnreg_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGS)); }

template <int REGS>
__device__ __forceinline__ void setmaxnreg_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGS)); }

// ---- wgmma ----

// A shared-memory matrix descriptor for a tile written by TMA with 128-byte swizzling: start address,
// leading and stride byte offsets (what they step over depends on the operand's major-ness: see the
// callers), swizzle mode 1 = 128 bytes in bits 62-63. The tile must start 1024-byte aligned.
__device__ __forceinline__ u64 smem_desc(const void* p, unsigned leading_bytes, unsigned stride_bytes) {
    return static_cast<u64>((smem_addr(p) & 0x3FFFF) >> 4) | static_cast<u64>(leading_bytes >> 4) << 16 |
           static_cast<u64>(stride_bytes >> 4) << 32 | 1ull << 62;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }

// Wait until at most `pending` committed wgmma groups of this warpgroup are still running.
template <int pending>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(pending) : "memory"); }

// Keeps the compiler from moving accumulator reads or writes across a wgmma fence or wait: it does not
// know that the asynchronous instruction owns these registers until the wait.
template <int R>
__device__ __forceinline__ void fence_accumulators(float (&d)[R]) {
#pragma unroll
    for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

#define TVC_ACC4(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define TVC_ACC8(i) \
    "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define TVC_ACC16 TVC_ACC8(0), TVC_ACC8(8)
#define TVC_ACC32 TVC_ACC8(0), TVC_ACC8(8), TVC_ACC8(16), TVC_ACC8(24)
#define TVC_ACC64 TVC_ACC32, TVC_ACC8(32), TVC_ACC8(40), TVC_ACC8(48), TVC_ACC8(56)
#define TVC_ACC128                                                                                               \
    TVC_ACC64, TVC_ACC8(64), TVC_ACC8(72), TVC_ACC8(80), TVC_ACC8(88), TVC_ACC8(96), TVC_ACC8(104), TVC_ACC8(112), \
        TVC_ACC8(120)
#define TVC_REGS4 "{%0, %1, %2, %3}"
#define TVC_REGS8 "{%0, %1, %2, %3, %4, %5, %6, %7}"
#define TVC_REGS16 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}"
#define TVC_REGS32                                                                          \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "               \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define TVC_REGS64                                                                          \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "               \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "      \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "      \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define TVC_REGS128                                                                                  \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                        \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "               \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "               \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "               \
    "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "               \
    "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "               \
    "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "   \
    "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"
// D (64×N, fp32 registers) += A (64×16) · B (16×N), both in shared memory. TRANS_A, TRANS_B: the
// operands' major order (wgmma's imm-trans-a/b, which 16-bit types alone have): 0 = K-major, 1 = M- or
// N-major. `accumulate` = 0 makes it D = A·B (the first step of a tile).
#define TVC_WGMMA(SHAPE, TYPE, REGS, A, B, ACC, TA, TB)                                                    \
    "{\n.reg .pred acc;\nsetp.ne.b32 acc, " ACC ", 0;\nwgmma.mma_async.sync.aligned." SHAPE ".f32." TYPE "." TYPE \
    " " REGS ", " A ", " B ", acc, 1, 1, " TA ", " TB ";\n}\n"

// wgmma_m64n{8,16,32,64,128,256}k16<IS_BF16, TRANS_A, TRANS_B>(d, a, b, accumulate): R accumulators per thread
// (REGS and ACC list them as asm operands), and A, B, ACCUMULATE, TA, TB the operand numbers that follow.
#define TVC_WGMMA_SHAPE(N, R, REGS, ACC, A, B, ACCUMULATE, TA, TB)                                             \
    template <int IS_BF16, int TRANS_A = 0, int TRANS_B = 1>                                                   \
    __device__ __forceinline__ void wgmma_m64n##N##k16(float (&d)[R], u64 a, u64 b, int accumulate) {          \
        if constexpr (IS_BF16) {                                                                               \
            asm volatile(TVC_WGMMA("m64n" #N "k16", "bf16", REGS, A, B, ACCUMULATE, TA, TB)                    \
                         : ACC : "l"(a), "l"(b), "r"(accumulate), "n"(TRANS_A), "n"(TRANS_B));                 \
        } else {                                                                                               \
            asm volatile(TVC_WGMMA("m64n" #N "k16", "f16", REGS, A, B, ACCUMULATE, TA, TB)                     \
                         : ACC : "l"(a), "l"(b), "r"(accumulate), "n"(TRANS_A), "n"(TRANS_B));                 \
        }                                                                                                      \
    }
TVC_WGMMA_SHAPE(8, 4, TVC_REGS4, TVC_ACC4(0), "%4", "%5", "%6", "%7", "%8")
TVC_WGMMA_SHAPE(16, 8, TVC_REGS8, TVC_ACC8(0), "%8", "%9", "%10", "%11", "%12")
TVC_WGMMA_SHAPE(32, 16, TVC_REGS16, TVC_ACC16, "%16", "%17", "%18", "%19", "%20")
TVC_WGMMA_SHAPE(64, 32, TVC_REGS32, TVC_ACC32, "%32", "%33", "%34", "%35", "%36")
TVC_WGMMA_SHAPE(128, 64, TVC_REGS64, TVC_ACC64, "%64", "%65", "%66", "%67", "%68")
TVC_WGMMA_SHAPE(256, 128, TVC_REGS128, TVC_ACC128, "%128", "%129", "%130", "%131", "%132")

// Any of the shapes, by the accumulator count R = N / 2: 128 registers are m64n256k16, 64 m64n128k16, ... 4
// m64n8k16 (the narrow ones: v15's swapped products of a few rows).
template <int IS_BF16, int R, int TRANS_A = 0, int TRANS_B = 1>
__device__ __forceinline__ void wgmma_m64nk16(float (&d)[R], u64 a, u64 b, int accumulate) {
    static_assert(R == 128 || R == 64 || R == 32 || R == 16 || R == 8 || R == 4, "m64nNk16, N = 8 · 2^i up to 256");
    if constexpr (R == 128) {
        wgmma_m64n256k16<IS_BF16, TRANS_A, TRANS_B>(d, a, b, accumulate);
    } else if constexpr (R == 64) {
        wgmma_m64n128k16<IS_BF16, TRANS_A, TRANS_B>(d, a, b, accumulate);
    } else if constexpr (R == 32) {
        wgmma_m64n64k16<IS_BF16, TRANS_A, TRANS_B>(d, a, b, accumulate);
    } else if constexpr (R == 16) {
        wgmma_m64n32k16<IS_BF16, TRANS_A, TRANS_B>(d, a, b, accumulate);
    } else if constexpr (R == 8) {
        wgmma_m64n16k16<IS_BF16, TRANS_A, TRANS_B>(d, a, b, accumulate);
    } else {
        wgmma_m64n8k16<IS_BF16, TRANS_A, TRANS_B>(d, a, b, accumulate);
    }
}

// D (64×N, fp32) += A (64×32, fp8 e4m3) · B (32×N, e4m3), both in shared memory and K-major: fp8 wgmma has
// no transpose immediates. A k32 step reads 32 bytes of each operand's rows, as a 16-bit k16 step does. The
// tensor core adds each step's products to D keeping about 14 bits of them (fast accumulation).
#define TVC_WGMMA_E4M3(N, R, REGS, ACC, A, B, ACCUMULATE)                                                        \
    __device__ __forceinline__ void wgmma_m64n##N##k32_e4m3(float (&d)[R], u64 a, u64 b, int accumulate) {      \
        asm volatile("{\n.reg .pred acc;\nsetp.ne.b32 acc, " ACCUMULATE ", 0;\n"                                  \
                     "wgmma.mma_async.sync.aligned.m64n" #N "k32.f32.e4m3.e4m3 " REGS ", " A ", " B ", acc, 1, 1;\n}\n" \
                     : ACC : "l"(a), "l"(b), "r"(accumulate));                                                  \
    }
TVC_WGMMA_E4M3(8, 4, TVC_REGS4, TVC_ACC4(0), "%4", "%5", "%6")
TVC_WGMMA_E4M3(16, 8, TVC_REGS8, TVC_ACC8(0), "%8", "%9", "%10")
TVC_WGMMA_E4M3(32, 16, TVC_REGS16, TVC_ACC16, "%16", "%17", "%18")
TVC_WGMMA_E4M3(64, 32, TVC_REGS32, TVC_ACC32, "%32", "%33", "%34")
TVC_WGMMA_E4M3(128, 64, TVC_REGS64, TVC_ACC64, "%64", "%65", "%66")
TVC_WGMMA_E4M3(256, 128, TVC_REGS128, TVC_ACC128, "%128", "%129", "%130")

// Any of them, by the accumulator count R = N / 2: 128 registers are m64n256k32, ... 4 m64n8k32 (the narrow ones:
// swapped products of a few rows).
template <int R>
__device__ __forceinline__ void wgmma_m64nk32_e4m3(float (&d)[R], u64 a, u64 b, int accumulate) {
    static_assert(R == 128 || R == 64 || R == 32 || R == 16 || R == 8 || R == 4, "m64nNk32, N = 8 · 2^i up to 256");
    if constexpr (R == 128) {
        wgmma_m64n256k32_e4m3(d, a, b, accumulate);
    } else if constexpr (R == 64) {
        wgmma_m64n128k32_e4m3(d, a, b, accumulate);
    } else if constexpr (R == 32) {
        wgmma_m64n64k32_e4m3(d, a, b, accumulate);
    } else if constexpr (R == 16) {
        wgmma_m64n32k32_e4m3(d, a, b, accumulate);
    } else if constexpr (R == 8) {
        wgmma_m64n16k32_e4m3(d, a, b, accumulate);
    } else {
        wgmma_m64n8k32_e4m3(d, a, b, accumulate);
    }
}

// D (64×N, fp32) += A (64×8, tf32, from registers) · B (8×N, tf32, K-major in shared memory), N = 256, 128 or
// 64. tf32 wgmma reads a shared-memory operand K-major only (the transpose immediates exist for 16-bit
// types alone); an operand in registers has no such restriction. Thread t of the warpgroup holds A at
// rows 16·(t/32) + (t%32)/4 (+8: a1, a3) and columns t%4 (+4: a2, a3), as mma.m16n8k8 does per warp.
#define TVC_WGMMA_TF32(N, R, REGS, ACC, A0, A1, A2, A3, B, ACCUMULATE)                                         \
    __device__ __forceinline__ void wgmma_m64n##N##k8_tf32(float (&d)[R], const unsigned (&a)[4], u64 b,        \
                                                           int accumulate) {                                    \
        asm volatile("{\n.reg .pred acc;\nsetp.ne.b32 acc, " ACCUMULATE ", 0;\n"                                \
                     "wgmma.mma_async.sync.aligned.m64n" #N "k8.f32.tf32.tf32 " REGS ", {" A0 ", " A1 ", " A2     \
                     ", " A3 "}, " B ", acc, 1, 1;\n}\n"                                                        \
                     : ACC : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));             \
    }
TVC_WGMMA_TF32(64, 32, TVC_REGS32, TVC_ACC32, "%32", "%33", "%34", "%35", "%36", "%37")
TVC_WGMMA_TF32(128, 64, TVC_REGS64, TVC_ACC64, "%64", "%65", "%66", "%67", "%68", "%69")
TVC_WGMMA_TF32(256, 128, TVC_REGS128, TVC_ACC128, "%128", "%129", "%130", "%131", "%132", "%133")

// Any of the three, by the accumulator count: 128 registers are m64n256k8, 64 m64n128k8, 32 m64n64k8.
template <int R>
__device__ __forceinline__ void wgmma_m64nk8_tf32(float (&d)[R], const unsigned (&a)[4], u64 b, int accumulate) {
    static_assert(R == 128 || R == 64 || R == 32, "m64n256k8, m64n128k8 or m64n64k8");
    if constexpr (R == 128) {
        wgmma_m64n256k8_tf32(d, a, b, accumulate);
    } else if constexpr (R == 64) {
        wgmma_m64n128k8_tf32(d, a, b, accumulate);
    } else {
        wgmma_m64n64k8_tf32(d, a, b, accumulate);
    }
}

// The accumulator fragment of an m64nN wgmma: thread t of the warpgroup holds, for each 8-column
// block j, rows 16·(t/32) + (t%32)/4 (+8) and columns 8j + 2·(t%4) (+1).
template <int IS_BF16, int R>
__device__ __forceinline__ void store_accumulators(const float (&d)[R], unsigned short* c, int M, int N, int row0,
                                                   int col0) {
    const int t = threadIdx.x % 128;
    const int row = row0 + 16 * (t / 32) + (t % 32) / 4, col = col0 + 2 * (t % 4);
#pragma unroll
    for (int j = 0; j < R / 4; ++j) {
        store_pair<IS_BF16>(c, M, N, row, col + 8 * j, d[4 * j], d[4 * j + 1]);
        store_pair<IS_BF16>(c, M, N, row + 8, col + 8 * j, d[4 * j + 2], d[4 * j + 3]);
    }
}
