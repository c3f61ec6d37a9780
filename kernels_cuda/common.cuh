// Small helpers shared by the fp32 rungs from v07 on: four-float loads and stores that take the
// vector path (one 16-byte access) when they can and fall back to checked scalar accesses at ragged
// edges, and the PTX wrappers for cp.async (sm_80+).
#pragma once

// `aligned`: every row of the matrix starts on a 16-byte boundary (the launcher checks that the
// leading dimension is a multiple of 4 and the base pointer is 16-byte aligned). Then a 4-float chunk
// that starts inside a row either lies inside it or starts at or past its end.
__device__ __forceinline__ float4 load4(const float* __restrict__ p, int row, int col, int rows, int cols,
                                        bool aligned) {
    if (aligned && row < rows && col + 3 < cols) {
        return *reinterpret_cast<const float4*>(p + row * cols + col);
    }
    float v[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        v[q] = (row < rows && col + q < cols) ? p[row * cols + col + q] : 0.0f;
    }
    return make_float4(v[0], v[1], v[2], v[3]);
}

__device__ __forceinline__ void store4(float* __restrict__ p, int row, int col, int rows, int cols,
                                       bool aligned, float4 v) {
    if (aligned && row < rows && col + 3 < cols) {
        *reinterpret_cast<float4*>(p + row * cols + col) = v;
        return;
    }
    const float w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        if (row < rows && col + q < cols) p[row * cols + col + q] = w[q];
    }
}

// One 16-byte shared-memory read (LDS.128), and its four floats into consecutive registers.
__device__ __forceinline__ float4 lds4(const float* smem) { return *reinterpret_cast<const float4*>(smem); }

__device__ __forceinline__ void unpack4(float4 v, float* r) {
    r[0] = v.x;
    r[1] = v.y;
    r[2] = v.z;
    r[3] = v.w;
}

// cp.async copies global -> shared without passing through registers; the copy runs in the
// background until cp_async_wait. src_bytes < size fills the rest of the destination with zeros, so
// src_bytes = 0 is how a tile is zero-padded past the edge of a matrix (nothing is read from src).
__device__ __forceinline__ void cp_async4(float* smem, const float* gmem, bool valid) {
    const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(gmem), "r"(valid ? 4 : 0));
}

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool valid) {
    const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem), "r"(valid ? 16 : 0));
}

// Closes the group of copies this thread issued since the last commit.
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

// Waits until at most `pending` of this thread's committed groups are still in flight. Other threads'
// copies are not covered: a __syncthreads() after it makes the whole tile visible to the block.
template <int pending>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(pending)); }

// An fp32 value rounded to tf32 (10 explicit mantissa bits, to nearest, ties away from zero), as the
// tensor cores' tf32 instructions take it; cuBLAS rounds the same way.
__device__ __forceinline__ unsigned to_tf32(float x) {
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
    return r;
}

// Tile t -> (tile row, tile column) in grouped order: group_m tile rows at a time, column by column, so
// the blocks in flight share a few panels of A and B, which stay in L2 (v11's idea). t is blockIdx.x,
// or a persistent block's current tile.
__device__ __forceinline__ void grouped_tile(int t, int rows, int cols, int group_m, int& row, int& col) {
    const int per_group = group_m * cols, first = (t / per_group) * group_m;
    const int height = min(rows - first, group_m), in_group = t % per_group;  // the last group may be shorter
    row = first + in_group % height;
    col = in_group / height;
}
