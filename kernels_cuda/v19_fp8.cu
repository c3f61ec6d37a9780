// v19 fp8: v15's warp-specialized kernel on e4m3 operands, INPUT = 2 (V15_E4M3). Nothing here but the
// instantiations the launcher names: warp_specialized<2, BN, STAGES, CLUSTER_M, GROUP_M, STREAM_K, BM,
// SPLIT_K, CONSUMERS_N, 0, 0, 1> (CLUSTER_M = 1: warp_specialized_unclustered; SWAP_AB 0; nt: A row-major
// M×K, B the transpose of a row-major N×K, both K-major).
//
// C (M×N) = A (M×K) · B (K×N) in e4m3, times s_A·s_B, written in bf16; `scales` = (s_A, s_B) in device
// memory (fp32), or (`rowwise`) a scale per row of A and column of B: s_A's M values, then s_B's N.
// What changes from the 16-bit kernel, all of it in v15_warp_specialized.cu under INPUT == V15_E4M3:
//   - a tile's row along k is still 128 bytes, now 128 elements: BK = 128, the boxes 128 × 64, the shared
//     memory, the swizzle and the descriptors byte for byte the same as for bf16;
//   - a k-step is still 32 bytes: wgmma m64nNk32.f32.e4m3.e4m3 instead of m64nNk16, four per k-block;
//   - fp8 wgmma has no transpose bits: both operands must be K-major in shared memory, so the kernel reads
//     nt only (the shared layer copies other layouts into it);
//   - the consumers multiply the accumulators by s_A·s_B (read once per launch), or by s_A of each row times
//     s_B of each column (read once per tile), before rounding to bf16.
// Everything else (roles, clusters, stream-K, split-K, the epilogue's stmatrix + TMA store) is v15's.
// Needs sm_90a.
#include "v15_warp_specialized.cu"
