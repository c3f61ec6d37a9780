// Helpers for the 16-bit tensor-core rungs (v13-v15): fp16 and bf16 elements held as unsigned short,
// converted with PTX, so that NVRTC needs no CUDA headers for them.
#pragma once

// Two floats rounded to one packed pair (lo in the low half: the lower column).
template <int IS_BF16>
__device__ __forceinline__ unsigned pack2(float lo, float hi) {
    unsigned r;
    if constexpr (IS_BF16) {
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
    } else {
        asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
    }
    return r;
}

// One element as a float (bf16 is the upper half of an fp32).
template <int IS_BF16>
__device__ __forceinline__ float to_float(unsigned short x) {
    if constexpr (IS_BF16) {
        return __uint_as_float(static_cast<unsigned>(x) << 16);
    } else {
        float r;
        asm("cvt.f32.f16 %0, %1;\n" : "=f"(r) : "h"(x));
        return r;
    }
}

// C[row][col], C[row][col + 1] from one accumulator pair, masked at the edges; one 4-byte store when
// both are inside and the pair is 4-byte aligned (N even).
template <int IS_BF16>
__device__ __forceinline__ void store_pair(unsigned short* c, int M, int N, int row, int col, float lo, float hi) {
    if (row >= M || col >= N) return;
    const unsigned packed = pack2<IS_BF16>(lo, hi);
    unsigned short* p = c + static_cast<long long>(row) * N + col;
    if (col + 1 < N && N % 2 == 0) {
        *reinterpret_cast<unsigned*>(p) = packed;
    } else {
        p[0] = static_cast<unsigned short>(packed & 0xFFFF);
        if (col + 1 < N) p[1] = static_cast<unsigned short>(packed >> 16);
    }
}

