// v15 warp specialization: one producer warpgroup that only issues TMA copies and two consumer
// warpgroups that only multiply, registers moved from the first to the others (setmaxnreg), 128×256
// tiles, CTA pairs (clusters) that share each B tile through TMA multicast, and an L2-aware tile order.
//
// C (M×N) = A (M×K) · B (K×N), fp16 or bf16 in, fp32 accumulation, C row-major in the input type; or (INPUT
// = E4M3, v19) fp8 e4m3 in, C = s_A·s_B·(A·B) in bf16, `scales` = (s_A, s_B), or (`rowwise`) s_A's M values then
// s_B's N: C_ij = s_A[i]·s_B[j]·(A·B)_ij. A is row-major, or (A_T) the
// transpose of a row-major K×M matrix; B row-major, or (B_T) that of an N×K one (fp8: A_T = 0, B_T = 1 only).
// A batch of `products` matrices: every map is 3-D (column, row, matrix), and an operand shared by the
// batch is a batch of one read at matrix index 0 (a_step, b_step: 0 for it, else 1).
// Kernels warp_specialized (CLUSTER_M = 2) and warp_specialized_unclustered (CLUSTER_M = 1), templates <INPUT, BN,
// STAGES, CLUSTER_M, GROUP_M, STREAM_K, BM, SPLIT_K, CONSUMERS_N, SWAP_AB, A_T, B_T, Epilogue, Groups>,
// INPUT 0 fp16, 1 bf16, 2 e4m3; tile 128×BN×BK, BK = 64 (128 for fp8: a 128-byte row either way), BN = 256, or
// 128 or 64 for products too small to give every SM a 128×256 tile; or BM = 64 (BN ≤ 128) for products of few
// rows: one consumer warpgroup, two CTAs per SM; or BM = 64 with CONSUMERS_N = 2 consumers side by side, each
// 64 × BN / 2 (one CTA per SM: two warpgroups issue wgmma for one short tile). Launch: 128 + 2·BM·CONSUMERS_N
// threads (a producer warpgroup and BM / 64 · CONSUMERS_N consumers), grid = CLUSTER_M × the clusters that fit
// at once (at most one per cluster tile, or SPLIT_K), persistent. Dynamic shared memory: STAGES × (BM / 8 KB + BN / 8 KB) of
// tiles + 16 KB per consumer for C + 1 KB. With STREAM_K, `partials` holds BM × BN floats per CTA of the grid and
// `flags` BM / 64 zeroed ints per CTA (left zeroed); with SPLIT_K > 1, SPLIT_K × BM × BN floats and BM / 64
// zeroed ints (left zeroed) per CTA tile. `timeline`:
// null, or TIMELINE_SLOTS stamps per CTA (see Timeline; `python -m implementations.tools.timeline` reads
// them). `Epilogue` (default NoEpilogue: none) is what a consumer does to its accumulators before it stores
// them (v17 instantiates this kernel with a bias and activations); `bias`: null, or N elements of C's type
// when the epilogue adds one. `Groups` (default NoGroups: none, compiled to nothing) maps the tiles to ragged
// groups of A's rows instead of `products` matrices (v18 instantiates it); `offsets`: null, or the groups'
// end rows; `scales`: null, or fp8's (see above). Needs sm_90a.
//
// What changed since v14, and why each one pays:
//   - Roles. In v14 the thread that issues the copies is also a consumer: while it waits for a slot to
//     empty, its warpgroup cannot multiply. Here warpgroup 0 only produces (one thread issues, the rest
//     idle) and keeps the ring full across tile boundaries, so the consumers' epilogue (rounding and
//     storing C) overlaps the next tile's copies.
//   - Registers. Each consumer thread holds 128 accumulators, so each consumer warpgroup owns a 64×256
//     block (m64n256k16: B read once per 64 rows of A instead of per 64×128, half v14's shared-memory
//     traffic per flop). BN = 128 or 64 narrows it. setmaxnreg lets the producer give registers back
//     (down to 40) and the consumers take them (up to 232), the pattern of CUTLASS's kernels; this
//     kernel's consumers happen to fit in the 168 a thread gets at launch, and where they would not,
//     ptxas did not let wgmma use the extra registers (docs/notes/v15.md).
//   - Clusters. The two CTAs of a cluster compute vertically adjacent tiles, which need the same B tile:
//     each loads half of it and the copy engine multicasts it into both CTAs' shared memory (and signals
//     both `full` barriers); v18 puts them side by side along N where a group's last tile row is alone,
//     and they share A's tile the same way. A slot may be refilled only when the consumers of *both* CTAs
//     are done with it, so each consumer warpgroup arrives on the `empty` barrier of every CTA in the
//     cluster (at CTA scope: see mbar_arrive_cluster in hopper.cuh for what cluster scope cost).
//   - Layouts. wgmma reads a 16-bit operand from shared memory either K-major or M/N-major (its
//     transpose bits), and TMA copies boxes of whatever matrix is stored, so a transposed operand costs
//     nothing: its tile is copied as boxes of the stored matrix (64 columns of it, 128 bytes, per box)
//     and described to wgmma the other way round. A K-major tile's 8-row groups are 1024 bytes apart and
//     a k-step moves 32 bytes along its rows; an M/N-major tile's k-step moves 16 rows (2048 bytes), and
//     its 64-wide boxes are 8 KB apart.
//   - Descriptors. Each wgmma takes two 64-bit shared-memory descriptors. They are computed once, for
//     slot 0, and per slot and k-step only the address field (bits 0-13, address / 16) is added to; with
//     the warpgroup index made warp-uniform (__shfl_sync) that is a few adds on the uniform datapath
//     (rebuilt from addresses every k-step, with an index not known to be uniform, they would go
//     through vector registers and back).
//   - Tile order. Clusters walk the tiles GROUP_M cluster rows at a time, column by column (v11's idea),
//     so the A and B panels in use stay in the 50 MB L2; and every other round of G tiles (G clusters)
//     walks k downwards, so that a round begins on the k-slices its panels shared with the round before
//     were read last, the likeliest to be still in L2.
//   - Stream-K (STREAM_K = 1), a search candidate. A persistent grid of G clusters takes the tiles G at
//     a time, and when their number T is not a multiple of G the last round leaves clusters idle:
//     8192³ in 128×256 tiles is 1024 cluster tiles, 15.5 rounds of 66, so every cluster pays for 16.
//     Here the last round's k-blocks are dealt out evenly instead (see Schedule); a tile cut between
//     clusters is finished by its head, which waits for the others' fp32 partial sums (in `partials`,
//     announced by a flag) and adds them. Each partial costs its writer 128 KB of stores and its reader
//     128 KB of loads, and runs that cross tiles scatter the clusters over k, so L2 misses more: it
//     pays where the last round is nearly empty, not where it is nearly full; the search decides.
//   - Split-K (SPLIT_K = S > 1), the search's candidates for products of fewer tiles than SMs (decode):
//     each tile's k-blocks are cut into S slices, one slice per cluster in turn, and the last slice of a
//     tile to finish adds the others' fp32 partial sums, in slice order, before the epilogue (see
//     split_k_fixup: Triton's split_k_kernel in v15_warp_specialized.py does the same). Nobody waits:
//     the last to arrive finds every other partial written.
//   - Epilogue. Each consumer warpgroup writes its 64×BN block of C, rounded, into a swizzled 16 KB
//     staging buffer 128 columns at a time (stmatrix: 16 bytes per lane per instruction), and one
//     thread hands each part to TMA (a bulk tensor store that clips at the matrix edges); the
//     warpgroup goes on to its next tile while the copy engine writes. When C's rows are not 16-byte
//     aligned (N % 8 != 0) TMA cannot write C, and the accumulators are stored straight from registers
//     as in v14.
//   - Swapped operands (SWAP_AB), for products of a few rows (decode): wgmma's M is 64, so a 16-row A
//     would waste three quarters of every multiply. The launcher hands the kernel Cᵀ = Bᵀ·Aᵀ instead (maps of
//     the same stored matrices, with M and N exchanged and each operand's transpose flag flipped): B's columns
//     run along wgmma's 64 rows, and A's few rows along its N, as narrow as 8 (BN = 8, 16 or 32, one box of
//     BN rows of the K-major A). The consumer writes its block back transposed (store_transposed_*), into C
//     itself, after v17's epilogue, whose bias then runs along the block's rows (apply_epilogue_transposed).
//     This swapped A' must be K-major: A row-major, C = A·B or A·Bᵀ. fp8 (v19, nt) swaps too, its per-row
//     scales read across (apply_scales).
#include "hopper.cuh"

constexpr int V15_E4M3 = 2;  // INPUT: fp8 operands (0: fp16, 1: bf16)
constexpr int V15_ROW_BYTES = 128;  // a tile's rows along k: 64 16-bit or 128 fp8 elements, one swizzle row
constexpr int V15_BOX_BYTES = 64 * V15_ROW_BYTES;  // one box of 64 such rows of A or B: 8 KB
constexpr int V15_C_STAGE_BYTES = 2 * STAGE_BOX_BYTES;  // per consumer: 16 KB

// A consumer warpgroup's 64×BN block of C (accumulators d, rows from row0, columns from col0 of matrix
// `product`) through its staging buffer and TMA, 128 columns (two 64-column boxes) at a time, or BN = 64
// in one box. stmatrix writes two 8-column blocks of a warp's 16 rows per instruction: lane l addresses
// row 8·((l / 8) % 2) + l % 8 of column block l / 16.
template <int IS_BF16, int BN>
__device__ __forceinline__ void store_via_tma(const float (&d)[BN / 2], unsigned char* stage, const TmaDescriptor* c_map,
                                              int row0, int col0, int product, unsigned barrier_id) {
    constexpr int COLS = BN < 128 ? BN : 128;  // per round
    const int lane = threadIdx.x % 32, row = 16 * (threadIdx.x % 128 / 32) + 8 * (lane / 8 % 2) + lane % 8;
    auto fill = [&](int half) {
#pragma unroll
        for (int j = 16 * half; j < 16 * half + COLS / 8; j += 2) {
            const int byte = 16 * (j + lane / 16) - 256 * half;
            stmatrix_x4(stage + stage_offset(row, byte), pack2<IS_BF16>(d[4 * j], d[4 * j + 1]),
                        pack2<IS_BF16>(d[4 * j + 2], d[4 * j + 3]), pack2<IS_BF16>(d[4 * j + 4], d[4 * j + 5]),
                        pack2<IS_BF16>(d[4 * j + 6], d[4 * j + 7]));
        }
    };
    auto origin = [&](int half, int box) { return make_int3(col0 + 128 * half + 64 * box, row0, product); };
    store_through_stage<BN / COLS, COLS / 64>(stage, c_map, barrier_id, fill, origin);
}

// SWAP_AB: the consumer's 64 × WBN block is of Cᵀ: its rows are C's columns n0.., its columns C's rows m0...
// Each element goes to C's place in the staging buffer (WBN rows of C, 64 columns: one box of 128-byte rows,
// swizzled as TMA reads it), and one TMA store writes the box, clipped at C's edges.
template <int IS_BF16, int R>
__device__ __forceinline__ void store_transposed_via_tma(const float (&d)[R], unsigned char* stage,
                                                         const TmaDescriptor* c_map, int n0, int m0, int product,
                                                         unsigned barrier_id) {
    const int t = threadIdx.x % 128, row = 16 * (t / 32) + (t % 32) / 4, col = 2 * (t % 4);
    auto fill = [&](int) {
#pragma unroll
        for (int j = 0; j < R / 4; ++j) {
#pragma unroll
            for (int half = 0; half < 2; ++half) {  // the fragment's rows row and row + 8: C's columns
                const unsigned two = pack2<IS_BF16>(d[4 * j + 2 * half], d[4 * j + 2 * half + 1]);
                const int n = row + 8 * half, m = col + 8 * j;
                *reinterpret_cast<unsigned short*>(stage + stage_offset(m, 2 * n)) = two & 0xFFFF;
                *reinterpret_cast<unsigned short*>(stage + stage_offset(m + 1, 2 * n)) = two >> 16;
            }
        }
    };
    store_through_stage<1, 1>(stage, c_map, barrier_id, fill, [&](int, int) { return make_int3(n0, m0, product); });
}

// The same block from registers, where TMA cannot write C (its rows not 16-byte aligned): C is M_c × N_c.
template <int IS_BF16, int R>
__device__ __forceinline__ void store_transposed_accumulators(const float (&d)[R], unsigned short* c, int M_c, int N_c,
                                                              int n0, int m0) {
    const int t = threadIdx.x % 128, row = n0 + 16 * (t / 32) + (t % 32) / 4, col = m0 + 2 * (t % 4);
#pragma unroll
    for (int j = 0; j < R / 4; ++j) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int n = row + 8 * (e / 2), m = col + 8 * j + e % 2;
            if (m < M_c && n < N_c)
                c[static_cast<long long>(m) * N_c + n] = static_cast<unsigned short>(pack2<IS_BF16>(d[4 * j + e], 0.0f));
        }
    }
}

// The epilogue hook: what a consumer warpgroup does to its accumulators, in registers, before either store
// path writes them. An epilogue is a type with BIAS (add bias[column] first) and apply(x) (then this, to
// every element); the default does nothing, and compiles to nothing.
struct NoEpilogue {
    static constexpr bool BIAS = false;
    __device__ static float apply(float x) { return x; }
};

// The accumulator fragment (see store_accumulators): thread t holds columns col0 + 8j + 2·(t % 4) and the
// next, each in two rows, and needs the bias of its columns (a row vector: the same for every row) once per tile.
// Read straight from global memory, each thread's R / 4 loads were each followed by the conversion that needed
// them (ptxas kept the edge tests as branches), so the warpgroup waited out one load latency per column block.
// Instead the warpgroup stages the block's bias in its C staging buffer, free between stores: each thread loads
// one pair (one 4-byte load where the bias allows it), one wait in all, then every thread reads its pairs from
// shared memory (four addresses a warp: broadcasts). The next fill of the buffer with C begins at a barrier.
template <typename Epilogue, int IS_BF16, int R>
__device__ __forceinline__ void apply_epilogue(float (&d)[R], const unsigned short* __restrict__ bias, int N,
                                               int col0, unsigned char* stage, unsigned barrier_id) {
    if constexpr (Epilogue::BIAS) {
        unsigned* pairs = reinterpret_cast<unsigned*>(stage);  // pair i: columns col0 + 2i and the next
        const int t = threadIdx.x % 128;
        const bool aligned = (reinterpret_cast<u64>(bias) & 3) == 0;
        if (t == 0) bulk_wait_read<0>();  // the last store through the buffer has read it
        named_barrier(barrier_id, 128);
        for (int i = t; i < R; i += 128) {  // R pairs: the block's 2·R columns
            const int n = col0 + 2 * i;
            unsigned two = 0;
            if (n + 1 < N && aligned) {
                two = *reinterpret_cast<const unsigned*>(bias + n);
            } else if (n < N) {
                two = bias[n] | (n + 1 < N ? static_cast<unsigned>(bias[n + 1]) << 16 : 0u);
            }
            pairs[i] = two;
        }
        named_barrier(barrier_id, 128);
#pragma unroll
        for (int j = 0; j < R / 4; ++j) {
            const unsigned two = pairs[4 * j + t % 4];
            const float lo = to_float<IS_BF16>(static_cast<unsigned short>(two & 0xFFFF));
            const float hi = to_float<IS_BF16>(static_cast<unsigned short>(two >> 16));
            d[4 * j] += lo, d[4 * j + 1] += hi, d[4 * j + 2] += lo, d[4 * j + 3] += hi;
        }
    }
#pragma unroll
    for (int i = 0; i < R; ++i) d[i] = Epilogue::apply(d[i]);
}

// SWAP_AB: the block is of Cᵀ, so C's bias (one per column of C) runs along its rows. Thread t holds two of
// them (store_transposed_via_tma: rows row and row + 8, in d[4j], d[4j + 1] and d[4j + 2], d[4j + 3]), so it
// reads two elements once per tile: two loads in flight together, nothing to stage.
template <typename Epilogue, int IS_BF16, int R>
__device__ __forceinline__ void apply_epilogue_transposed(float (&d)[R], const unsigned short* __restrict__ bias,
                                                          int rows, int row0) {
    if constexpr (Epilogue::BIAS) {
        const int t = threadIdx.x % 128, row = row0 + 16 * (t / 32) + (t % 32) / 4;
        const float top = row < rows ? to_float<IS_BF16>(bias[row]) : 0.0f;
        const float bottom = row + 8 < rows ? to_float<IS_BF16>(bias[row + 8]) : 0.0f;
#pragma unroll
        for (int j = 0; j < R / 4; ++j) {
            d[4 * j] += top, d[4 * j + 1] += top, d[4 * j + 2] += bottom, d[4 * j + 3] += bottom;
        }
    }
#pragma unroll
    for (int i = 0; i < R; ++i) d[i] = Epilogue::apply(d[i]);
}

// fp8's scales (v19): × s_A·s_B, read once per launch (`scale`), or, where `rows` is given (the block's rows'
// scales, M of them, and its columns', N), × the thread's two rows' times its columns' (the fragment above), read
// once per tile. Unswapped these are s_A and s_B, laid end to end; a swapped block is of Cᵀ, its rows C's columns,
// so `rows` is s_B and `columns` s_A. A warp needs every one of the block's 2·R columns: lane l loads columns l,
// l + 32, ... (coalesced, all in flight) and each thread takes its two of each 8 from the lane that holds them, so
// only 2·R / 32 registers (one for the narrow swapped blocks) hold them.
template <int R>
__device__ __forceinline__ void apply_scales(float (&d)[R], float scale, const float* __restrict__ rows,
                                             const float* __restrict__ columns, int M, int N, int row0, int col0) {
    if (rows == nullptr) {
#pragma unroll
        for (int i = 0; i < R; ++i) d[i] *= scale;
        return;
    }
    constexpr int LOADS = (2 * R + 31) / 32;
    const int t = threadIdx.x % 128, lane = t % 32, row = row0 + 16 * (t / 32) + lane / 4, pair = 2 * (t % 4);
    float held[LOADS];
#pragma unroll
    for (int i = 0; i < LOADS; ++i) {
        const int n = col0 + lane + 32 * i;
        held[i] = n < N ? columns[n] : 0.0f;
    }
    const float top = row < M ? rows[row] : 0.0f, bottom = row + 8 < M ? rows[row + 8] : 0.0f;  // past M: unstored
#pragma unroll
    for (int j = 0; j < R / 4; ++j) {  // columns 8j + pair and the next: lanes 8 (j % 4) + pair (+ 1), load j / 4
        const float lo = __shfl_sync(0xffffffff, held[j / 4], 8 * (j % 4) + pair);
        const float hi = __shfl_sync(0xffffffff, held[j / 4], 8 * (j % 4) + pair + 1);
        d[4 * j] *= top * lo, d[4 * j + 1] *= top * hi, d[4 * j + 2] *= bottom * lo, d[4 * j + 3] *= bottom * hi;
    }
}

// The groups hook: v18's Groups (v18_grouped.cu) lays ragged groups of A's rows end to end, each with its own
// matrix of B, and tells the kernel a tile's group (as its product), the group's first row, the rows of C
// below which it may write, and whether the cluster's CTAs lie side by side along N (sharing A's tile). The
// default has none: the tile map below is v15's, and every use folds away.
template <int BM, int BN, int CLUSTER_M, int GROUP_M>
struct NoGroups {
    static constexpr bool ON = false;
    __device__ NoGroups(int, int, int, const int*) {}
    __device__ int count() const { return 0; }
    __device__ void locate(int, unsigned, int&, int&, int&) {}
    __device__ int first_row() const { return 0; }
    __device__ int row_end() const { return 0; }
    __device__ bool along_n() const { return false; }
};

// A flag in global memory between CTAs: the release orders the warpgroup's earlier writes (through the
// named barrier before it) before the flag; the acquire orders the flag before the reads after it.
__device__ __forceinline__ void flag_release(int* flag) {
    asm volatile("st.release.gpu.global.s32 [%0], 1;\n" ::"l"(flag) : "memory");
}

__device__ __forceinline__ int flag_acquire(const int* flag) {
    int value;
    asm volatile("ld.acquire.gpu.global.s32 %0, [%1];\n" : "=r"(value) : "l"(flag) : "memory");
    return value;
}

// A consumer warpgroup's partial sums in slot `part` (R / 4 float4s per thread), thread t's float4 j at
// j·128 + t (coalesced, in the accumulators' own order: the adding warpgroup holds the same fragment),
// then the slot's flag raised.
template <int R>
__device__ __forceinline__ void save_partial(const float (&d)[R], float4* partials, int* flags, int part,
                                             unsigned barrier_id) {
    float4* slot = partials + part * (R / 4) * 128;
    int* flag = flags + part;
    const int t = threadIdx.x % 128;
#pragma unroll
    for (int j = 0; j < R / 4; ++j)
        __stcg(slot + j * 128 + t, make_float4(d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3]));
    named_barrier(barrier_id, 128);
    if (t == 0) flag_release(flag);
}

// Wait for a slot's flag, add its partial sums (read from L2: another SM wrote them), and lower the
// flag for the next launch (each slot is written and read once per launch).
template <int R>
__device__ __forceinline__ void add_partial(float (&d)[R], const float4* partials, int* flags, int part,
                                            unsigned barrier_id) {
    const float4* slot = partials + part * (R / 4) * 128;
    int* flag = flags + part;
    const int t = threadIdx.x % 128;
    if (t == 0) {
        while (flag_acquire(flag) == 0) {
        }
        *flag = 0;
    }
    named_barrier(barrier_id, 128);
#pragma unroll
    for (int j = 0; j < R / 4; ++j) {
        const float4 p = __ldcg(slot + j * 128 + t);
        d[4 * j] += p.x, d[4 * j + 1] += p.y, d[4 * j + 2] += p.z, d[4 * j + 3] += p.w;
    }
}

// Adds 1 to a split-K counter (acquire and release, GPU scope): returns the count before.
__device__ __forceinline__ int count_acq_rel(int* counter) {
    int before;
    asm volatile("atom.acq_rel.gpu.global.add.s32 %0, [%1], 1;\n" : "=r"(before) : "l"(counter) : "memory");
    return before;
}

// Split-K's fix-up, as Triton's split_k_kernel does it: a consumer warpgroup's partial sums of `slice` go to
// their own place in `partials` (block b's SPLIT slices, one after another), the block's counter counts the
// slices done (acq_rel: the partial is visible before the count, and the last one sees every other's), and
// the last slice to count adds all of them, in slice order (the same sum whichever finishes last) and sets
// the counter back to 0 for the next launch. Returns whether this warpgroup holds the block's sum to store.
template <int SPLIT, int R>
__device__ __forceinline__ bool split_k_fixup(float (&d)[R], float4* partials, int* counts, int block, int slice,
                                              int rows, unsigned barrier_id, int* ticket) {
    const int t = threadIdx.x % 128;
    // A thread whose rows (see store_accumulators) lie past the block's `rows` inside C neither writes nor reads a
    // partial: at decode (16 rows of a 64-row block) that is three quarters of the traffic.
    const bool inside = 16 * (t / 32) + (t % 32) / 4 < rows;
    float4* all = partials + static_cast<long long>(block) * SPLIT * (R / 4) * 128;
    if (inside) {
#pragma unroll
        for (int j = 0; j < R / 4; ++j)
            __stcg(all + (slice * (R / 4) + j) * 128 + t,
                   make_float4(d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3]));
    }
    named_barrier(barrier_id, 128);
    if (t == 0) *ticket = count_acq_rel(counts + block);
    named_barrier(barrier_id, 128);
    if (*ticket != SPLIT - 1) return false;
    // A slice at a time, all of its loads in flight at once: one L2 round trip per slice, not one per float4
    // and slice, which would dominate a decode-sized kernel. The sum's order stays slice 0, 1, ...
#pragma unroll 1
    for (int s = 0; s < SPLIT && inside; ++s) {
        float4 p[R / 4];
#pragma unroll
        for (int j = 0; j < R / 4; ++j) p[j] = __ldcg(all + (s * (R / 4) + j) * 128 + t);
#pragma unroll
        for (int j = 0; j < R / 4; ++j) {
            if (s == 0) {
                d[4 * j] = p[j].x, d[4 * j + 1] = p[j].y, d[4 * j + 2] = p[j].z, d[4 * j + 3] = p[j].w;
            } else {
                d[4 * j] += p[j].x, d[4 * j + 1] += p[j].y, d[4 * j + 2] += p[j].z, d[4 * j + 3] += p[j].w;
            }
        }
    }
    if (t == 0) counts[block] = 0;
    return true;
}

// A cluster's work, in order: whole tiles t = cluster, cluster + G, ... below dp_tiles (G = clusters),
// then, with STREAM_K, its share of the last round's R = T % G tiles (stream-K): their k-blocks
// ("units") laid end to end, each cluster taking the contiguous run [start(cluster), start(cluster + 1)).
// A run that starts inside a tile leaves partial sums for the tile's head (the run holding k-block 0),
// so each cluster writes at most one partial: its slot is the cluster's own. With a split of S > 1
// (split-K) the work is instead every tile's S slices of ceil(k_tiles / S) k-blocks (the last ones may
// be short or empty), slice p % S of tile p / S for p = cluster, cluster + G, ... k-blocks here are places
// in a tile's walk over k; only the producer maps them to k (downwards in every other round).
struct Schedule {
    int cluster, clusters, k_tiles, dp_tiles, split, per_slice;
    long long sk_units;

    __device__ Schedule(int cluster_, int clusters_, int cluster_tiles, int k_tiles_, bool stream_k, int split_)
        : cluster(cluster_), clusters(clusters_), k_tiles(k_tiles_), split(split_),
          per_slice((k_tiles_ + split_ - 1) / split_) {
        const int rest = stream_k ? cluster_tiles % clusters : 0;
        dp_tiles = cluster_tiles - rest;
        sk_units = static_cast<long long>(rest) * k_tiles;
    }

    __device__ long long start(int c) const { return sk_units * c / clusters; }

    __device__ int slice_of(int kb0) const { return kb0 / per_slice; }

    // visit(t, kb0, kb1): cluster tile t, its k-blocks [kb0, kb1).
    template <typename Visit>
    __device__ __forceinline__ void for_each(Visit visit) const {
        if (split > 1) {
            for (long long p = cluster; p < static_cast<long long>(dp_tiles) * split; p += clusters) {
                const int kb0 = static_cast<int>(p % split) * per_slice;
                visit(static_cast<int>(p / split), kb0, max(kb0, min(kb0 + per_slice, k_tiles)));
            }
            return;
        }
        for (int t = cluster; t < dp_tiles; t += clusters) visit(t, 0, k_tiles);
        for (long long u = start(cluster), end = start(cluster + 1); u < end;) {
            const int t = dp_tiles + static_cast<int>(u / k_tiles), kb0 = static_cast<int>(u % k_tiles);
            const int kb1 = static_cast<int>(min(static_cast<long long>(k_tiles), kb0 + (end - u)));
            visit(t, kb0, kb1);
            u += kb1 - kb0;
        }
    }
};

// Where a CTA's time goes, for `python -m implementations.tools.timeline`: its SM, then the global timer
// (ns, comparable across SMs) and the SM's cycle counter when its first consumer warpgroup starts and
// ends, and the cycle counter as it finishes the multiplies of each of its first TIMELINE_TILES runs of
// k-blocks. Written by one thread (the first consumer warpgroup's first), only when `stamps` is not
// null: a few stores per CTA.
constexpr int TIMELINE_TILES = 11, TIMELINE_SLOTS = 5 + TIMELINE_TILES;

struct Timeline {
    unsigned long long* stamps;
    int tiles = 0;

    __device__ static unsigned long long global_ns() {
        unsigned long long t;
        asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t));
        return t;
    }

    __device__ explicit Timeline(unsigned long long* all)
        : stamps(all && threadIdx.x == 128 ? all + blockIdx.x * TIMELINE_SLOTS : nullptr) {
        if (!stamps) return;
        unsigned sm;
        asm volatile("mov.u32 %0, %%smid;\n" : "=r"(sm));
        stamps[0] = sm, stamps[1] = global_ns(), stamps[2] = clock64();
    }
    __device__ void tile_done() {
        if (stamps && tiles < TIMELINE_TILES) stamps[5 + tiles++] = clock64();
    }
    __device__ void end() {
        if (stamps) stamps[3] = global_ns(), stamps[4] = clock64();
    }
};

// One k-step of wgmma (32 bytes of each operand's rows): k16 of 16-bit operands (either major order), k32 of fp8.
template <int INPUT, int R, int TRANS_A, int TRANS_B>
__device__ __forceinline__ void wgmma_k_step(float (&d)[R], u64 a, u64 b, int accumulate) {
    if constexpr (INPUT == V15_E4M3) {
        wgmma_m64nk32_e4m3(d, a, b, accumulate);
    } else {
        wgmma_m64nk16<INPUT, R, TRANS_A, TRANS_B>(d, a, b, accumulate);
    }
}

// The kernel's body; the two kernels below launch it (the maps are their __grid_constant__ parameters).
template <int INPUT, int BN, int STAGES, int CLUSTER_M, int GROUP_M, int STREAM_K, int BM, int SPLIT_K,
          int CONSUMERS_N, int SWAP_AB, int A_T, int B_T, typename Epilogue,
          template <int, int, int, int> class Groups>
__device__ __forceinline__ void warp_specialized_body(
    const TmaDescriptor& a_map, const TmaDescriptor& b_map, const TmaDescriptor& c_map, unsigned short* __restrict__ c,
    int M, int N, int K, int products, int a_step, int b_step, int c_by_tma, float4* __restrict__ partials,
    int* __restrict__ flags, unsigned long long* __restrict__ timeline, const unsigned short* __restrict__ bias,
    const int* __restrict__ offsets, const float* __restrict__ scales, int rowwise) {
    constexpr int WBN = BN / CONSUMERS_N;  // a consumer warpgroup's columns
    static_assert(WBN == 256 || WBN == 128 || WBN == 64 || (SWAP_AB && (WBN == 32 || WBN == 16 || WBN == 8)),
                  "a consumer warpgroup's block is m64n256, m64n128 or m64n64, or swapped as narrow as m64n8");
    static_assert(CONSUMERS_N == 1 || (CONSUMERS_N == 2 && BM == 64 && SPLIT_K == 1 && !STREAM_K),
                  "two consumers side by side share a 64-row tile that is neither split nor streamed along k");
    static_assert(BM == 128 || CONSUMERS_N == 2 || BN <= 128, "two CTAs per SM leave 128 registers a thread");
    static_assert(SPLIT_K >= 1 && (SPLIT_K == 1 || !STREAM_K), "a tile is cut by stream-K or split-K, not both");
    static_assert(INPUT != V15_E4M3 || (!A_T && B_T), "fp8 wgmma reads both operands K-major: nt only");
    static_assert(!SWAP_AB || (B_T && CONSUMERS_N == 1),
                  "a swapped product reads a K-major A' (one box of BN rows) and stores Cᵀ");
    constexpr bool FP8 = INPUT == V15_E4M3;
    constexpr int IS_BF16 = INPUT != 0;  // C's type: fp16 for fp16, bf16 for bf16 and fp8
    constexpr int BK = FP8 ? 128 : 64, K_STEPS = V15_ROW_BYTES / 32, CONSUMERS = BM / 64 * CONSUMERS_N;
    constexpr int A_BOXES = BM / 64, B_BOXES = BN < 64 ? 1 : BN / 64;  // BN < 64: one box of BN rows (SWAP_AB)
    constexpr int A_BYTES = BM * V15_ROW_BYTES, B_BYTES = BN * V15_ROW_BYTES;
    // ---- 1. carve shared memory: STAGES A tiles, STAGES B tiles, a C staging buffer per consumer (1024-byte
    //         aligned for the swizzle), barriers ----
    extern __shared__ unsigned char smem_raw[];
    unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<u64>(smem_raw) + 1023) & ~u64(1023));
    unsigned char* a_tiles = smem;
    unsigned char* b_tiles = smem + STAGES * A_BYTES;
    unsigned char* c_stages = b_tiles + STAGES * B_BYTES;
    u64* full = reinterpret_cast<u64*>(c_stages + CONSUMERS * V15_C_STAGE_BYTES);
    u64* empty = full + STAGES;
    __shared__ int tickets[CONSUMERS];  // split-K: each consumer warpgroup's count, from its first thread to all

    const unsigned rank = CLUSTER_M > 1 ? cluster_rank() : 0;
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, k_tiles = (K + BK - 1) / BK;
    const int cluster_rows = (tiles_m + CLUSTER_M - 1) / CLUSTER_M, product_tiles = cluster_rows * tiles_n;
    // Each thread keeps its own groups: v18's walks them as the thread's tiles go by.
    Groups<BM, BN, CLUSTER_M, GROUP_M> groups(M, N, products, offsets);
    constexpr bool GROUPED = Groups<BM, BN, CLUSTER_M, GROUP_M>::ON;
    static_assert(!SWAP_AB || !GROUPED, "ragged groups of A's rows are not swapped");
    const int cluster_tiles = GROUPED ? groups.count() : product_tiles * products;
    const int cluster = blockIdx.x / CLUSTER_M, clusters = gridDim.x / CLUSTER_M;
    const Schedule schedule(cluster, clusters, cluster_tiles, k_tiles, STREAM_K != 0, SPLIT_K);
    // Cluster tile t -> its product (v18: its group) and this CTA's (tile row, tile column) in it: one product
    // after another, GROUP_M cluster rows at a time, column by column.
    auto tile_of = [&](int t, int& product, int& tile_m, int& tile_n) {
        if constexpr (GROUPED) {
            groups.locate(t, rank, product, tile_m, tile_n);
        } else {
            product = t / product_tiles;
            grouped_tile(t % product_tiles, cluster_rows, tiles_n, GROUP_M, tile_m, tile_n);
            tile_m = tile_m * CLUSTER_M + rank;  // past M when tiles_m is odd: TMA reads zeros, stores are masked
        }
    };

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);               // this CTA's producer: expect_tx (+ the bytes of A and all of B)
            mbar_init(&empty[s], CONSUMERS * CLUSTER_M);  // each consumer warpgroup of each CTA in the cluster
        }
        fence_barrier_init();
    }
    // The peer's barriers must be initialised before anyone multicasts into it or arrives on them.
    if constexpr (CLUSTER_M > 1) cluster_sync(); else __syncthreads();

    const int warpgroup = __shfl_sync(0xffffffff, threadIdx.x / 128, 0);  // uniform, and the compiler knows it
    if (warpgroup == 0) {
        // ---- 2. the producer warpgroup: give registers back (to two consumers); one thread keeps the ring full ----
        if constexpr (CONSUMERS == 2) setmaxnreg_dec<GROUPED ? 56 : 40>();  // v18's producer walks the groups too
        if (threadIdx.x == 0) {
            int loads = 0;
            schedule.for_each([&](int t, int kb0, int kb1) {
                int product, tile_m, tile_n;
                tile_of(t, product, tile_m, tile_n);
                const int a_matrix = product * a_step, b_matrix = product * b_step;
                const bool along_n = groups.along_n();
                for (int kb = kb0; kb < kb1; ++kb, ++loads) {
                    // Every other round of tiles walks k downwards: it starts on the k-slices of the panels it
                    // shares with the round before that were read last, the likeliest still in L2.
                    const int k_block = (t / schedule.clusters) % 2 ? k_tiles - 1 - kb : kb;
                    const int s = loads % STAGES, k0 = k_block * BK;
                    if (loads >= STAGES) mbar_wait(&empty[s], (loads / STAGES - 1) & 1);
                    mbar_expect_tx(&full[s], A_BYTES + B_BYTES);
                    // A: BM / 64 boxes of 64 × 64, each 64 rows of A (or, A_T, 64 columns of the stored K×M);
                    // B: BN / 64, each 64 columns of B (or, B_T, 64 rows of the stored N×K)
                    // The operand the cluster's CTAs share (B's tile, or A's where v18 puts them side by side
                    // along N): each CTA loads boxes rank, rank + CLUSTER_M, ... into every CTA of the cluster.
                    // Two branches, each with its loops' strides known at compile time: loops whose stride was
                    // picked at run time slowed the clustered tile down (docs/notes/v18.md).
                    auto load = [&](unsigned char* tile, const TmaDescriptor* map, int2 at, int matrix, bool shared) {
                        if (shared) {
                            tma_load_3d_multicast(tile, map, &full[s], at.x, at.y, matrix, (1 << CLUSTER_M) - 1);
                        } else {
                            tma_load_3d(tile, map, &full[s], at.x, at.y, matrix);
                        }
                    };
                    auto load_a = [&](int box, bool shared) {
                        const int m = groups.first_row() + tile_m * BM + box * 64;
                        load(a_tiles + s * A_BYTES + box * V15_BOX_BYTES, &a_map,
                             A_T ? make_int2(m, k0) : make_int2(k0, m), a_matrix, shared);
                    };
                    auto load_b = [&](int box, bool shared) {
                        const int n = tile_n * BN + box * 64;
                        load(b_tiles + s * B_BYTES + box * V15_BOX_BYTES, &b_map,
                             B_T ? make_int2(k0, n) : make_int2(n, k0), b_matrix, shared);
                    };
                    if (CLUSTER_M > 1 && along_n) {
                        for (int box = rank; box < A_BOXES; box += CLUSTER_M) load_a(box, true);
                        for (int box = 0; box < B_BOXES; ++box) load_b(box, false);
                    } else {
                        for (int box = 0; box < A_BOXES; ++box) load_a(box, false);
                        for (int box = CLUSTER_M > 1 ? rank : 0; box < B_BOXES; box += CLUSTER_M)
                            load_b(box, CLUSTER_M > 1);
                    }
                }
            });
        }
    } else {
        // The consumer warpgroups: take the registers; warpgroup 1 owns rows 0-63 of the tile, 2 rows 64-127
        // (CONSUMERS_N = 2: columns 0 to WBN - 1 and WBN to BN - 1 of its 64 rows).
        if constexpr (CONSUMERS == 2) setmaxnreg_inc<GROUPED ? 224 : 232>();  // 128 · 56 + 256 · 224 ≤ 64 K registers
        const int rows_of = (warpgroup - 1) / CONSUMERS_N, cols_of = (warpgroup - 1) % CONSUMERS_N;
        float d[WBN / 2] = {};
        const float scale = FP8 && !rowwise ? scales[0] * scales[1] : 1.0f;  // s_A·s_B, read once
        // Slot 0's descriptors; slot s and k-step kk only move the start address (shared memory < 256 KB:
        // the 14-bit address field cannot carry into the next). This warpgroup's 64 rows of A are the first
        // or second 8 KB of the tile either way: 64 K-major rows of 128 bytes, or one 64-row box (A_T); its
        // WBN columns of B start WBN / 64 boxes in, in either layout.
        // K-major: leading offset unused, 8-row groups 1024 bytes apart; M/N-major: 64-wide boxes 8 KB
        // apart, 8 k-rows 1024 bytes apart.
        const u64 a_desc0 = smem_desc(a_tiles + rows_of * V15_BOX_BYTES, A_T ? V15_BOX_BYTES : 16, 1024);
        const u64 b_desc0 = smem_desc(b_tiles + cols_of * (WBN / 64) * V15_BOX_BYTES, B_T ? 16 : V15_BOX_BYTES, 1024);
        // A k-step (16 k; fp8: 32): 32 bytes along a K-major tile's rows, 16 rows (2048 bytes) down an M/N-major one.
        constexpr int A_STEP = (A_T ? 16 * 128 : 32) / 16, B_STEP = (B_T ? 32 : 16 * 128) / 16;
        int it = 0;  // k-blocks consumed: slot it % STAGES, phase (it / STAGES) & 1
        Timeline trace(timeline);
        auto release = [&](int s) {  // one arrival per CTA of the cluster, from lanes 0.. in parallel
            const unsigned lane = threadIdx.x % 128;
            if constexpr (CLUSTER_M > 1) {
                if (lane < CLUSTER_M) mbar_arrive_cluster(&empty[s], lane);
            } else if (lane == 0) {
                mbar_arrive(&empty[s]);
            }
        };
        schedule.for_each([&](int t, int kb0, int kb1) {
            int product, tile_m, tile_n;
            tile_of(t, product, tile_m, tile_n);
            for (int kb = kb0; kb < kb1; ++kb, ++it) {
                const int s = it % STAGES;
                mbar_wait(&full[s], (it / STAGES) & 1);
                // ---- 3. multiply: as v14, with n = BN (BN / 64 B boxes of 64 columns, 8 KB apart); a k-step is 32
                //         bytes: 16 k of 16-bit operands, 32 of fp8 ----
                const u64 a_desc = a_desc0 + s * (A_BYTES / 16), b_desc = b_desc0 + s * (B_BYTES / 16);
                wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < K_STEPS; ++kk) {
                    wgmma_k_step<INPUT, WBN / 2, A_T, 1 - B_T>(d, a_desc + kk * A_STEP, b_desc + kk * B_STEP,
                                                              kb > kb0 || kk > 0);
                }
                wgmma_commit();
                // Release the previous k-block's slot, in every CTA of the cluster.
                wgmma_wait<1>();
                if (kb > kb0) release((it - 1) % STAGES);
            }
            if (SPLIT_K == 1 || kb1 > kb0) {
                wgmma_wait<0>();
                fence_accumulators(d);
                release((it - 1) % STAGES);
            } else {  // an empty slice of k (split-K): its partial is zeros
#pragma unroll
                for (int i = 0; i < WBN / 2; ++i) d[i] = 0.0f;
            }
            trace.tile_done();
            // ---- stream-K: a run that starts inside a tile leaves its partial sums; the tile's head, the
            //      last piece of its cluster's run, adds those of the runs after it ----
            if constexpr (STREAM_K) {
                auto part = [&](int slot) { return (slot * CLUSTER_M + rank) * CONSUMERS + warpgroup - 1; };
                if (kb0 > 0) {
                    save_partial(d, partials, flags, part(cluster), warpgroup);
                    return;
                }
                const long long tile_end = static_cast<long long>(t - schedule.dp_tiles + 1) * k_tiles;
                long long begin = schedule.start(cluster + 1);  // the next cluster's run: [begin, end)
                for (int other = cluster + 1; kb1 < k_tiles && begin < tile_end; ++other) {
                    const long long end = schedule.start(other + 1);
                    if (end > begin) add_partial(d, partials, flags, part(other), warpgroup);  // empty runs left none
                    begin = end;
                }
            }
            // ---- split-K: every slice leaves its partial sums; the tile's last slice to finish adds them ----
            if constexpr (SPLIT_K > 1) {
                const int block = (t * CLUSTER_M + rank) * CONSUMERS + warpgroup - 1;  // this warpgroup's 64×BN
                const int rows = M - (groups.first_row() + tile_m * BM + rows_of * 64);
                if (!split_k_fixup<SPLIT_K>(d, partials, flags, block, schedule.slice_of(kb0), rows, warpgroup,
                                            &tickets[warpgroup - 1]))
                    return;
            }
            // ---- 4. the epilogue in registers (fp8's scales; v17's bias and activation; none here), then write
            //         back, while the producer already fills the ring with the next tile ----
            const int row0 = groups.first_row() + tile_m * BM + rows_of * 64, col0 = tile_n * BN + cols_of * WBN;
            if constexpr (FP8) {  // per row: s_A's values then s_B's, C's M and N (swapped: this kernel's N and M)
                const float* rows = rowwise ? (SWAP_AB ? scales + N : scales) : nullptr;
                apply_scales(d, scale, rows, SWAP_AB ? scales : scales + M, M, N, row0, col0);
            }
            if constexpr (SWAP_AB) {
                apply_epilogue_transposed<Epilogue, IS_BF16>(d, bias, M, row0);
            } else {
                apply_epilogue<Epilogue, IS_BF16>(d, bias, N, col0, c_stages + (warpgroup - 1) * V15_C_STAGE_BYTES,
                                                  warpgroup);
            }
            // v18: C is one matrix, and a block that crosses its group's end (into the next group's rows) is stored
            // from registers, masked at the group's end: TMA clips a store at the matrix's edge only.
            const int matrix = GROUPED ? 0 : product, row_end = GROUPED ? groups.row_end() : M;
            if constexpr (SWAP_AB) {  // C is N × M here, this block's rows its columns
                if (c_by_tma) {
                    store_transposed_via_tma<IS_BF16>(d, c_stages + (warpgroup - 1) * V15_C_STAGE_BYTES, &c_map, row0,
                                                      col0, matrix, warpgroup);
                } else {
                    store_transposed_accumulators<IS_BF16>(d, c + static_cast<long long>(matrix) * M * N, N, M, row0,
                                                           col0);
                }
            } else if (c_by_tma && (!GROUPED || row_end == M || row0 + 64 <= row_end)) {
                store_via_tma<IS_BF16, WBN>(d, c_stages + (warpgroup - 1) * V15_C_STAGE_BYTES, &c_map, row0, col0,
                                            matrix, warpgroup);
            } else {
                store_accumulators<IS_BF16>(d, c + static_cast<long long>(matrix) * M * N, row_end, N, row0, col0);
            }
        });
        if (threadIdx.x % 128 == 0) bulk_wait_read<0>();  // the staging buffer must outlive the last store's read
        trace.end();
    }
    // No CTA may exit while its peer can still multicast into it or arrive on its barriers.
    if constexpr (CLUSTER_M > 1) cluster_sync();
}

#define V15_PARAMETERS                                                                                              \
    const __grid_constant__ TmaDescriptor a_map, const __grid_constant__ TmaDescriptor b_map,                        \
        const __grid_constant__ TmaDescriptor c_map, unsigned short *__restrict__ c, int M, int N, int K, int products, \
        int a_step, int b_step, int c_by_tma, float4 *__restrict__ partials, int *__restrict__ flags,                 \
        unsigned long long *__restrict__ timeline, const unsigned short *__restrict__ bias,                           \
        const int *__restrict__ offsets, const float *__restrict__ scales, int rowwise
#define V15_BODY                                                                                                   \
    warp_specialized_body<INPUT, BN, STAGES, CLUSTER_M, GROUP_M, STREAM_K, BM, SPLIT_K, CONSUMERS_N, SWAP_AB, A_T, B_T, \
                          Epilogue, Groups>(a_map, b_map, c_map, c, M, N, K, products, a_step, b_step, c_by_tma,       \
                                            partials, flags, timeline, bias, offsets, scales, rowwise)

// CTA pairs (CLUSTER_M = 2): a cluster launch, the pairs placed by the cluster scheduler.
template <int INPUT, int BN, int STAGES, int CLUSTER_M, int GROUP_M, int STREAM_K, int BM, int SPLIT_K,
          int CONSUMERS_N, int SWAP_AB, int A_T, int B_T, typename Epilogue = NoEpilogue,
          template <int, int, int, int> class Groups = NoGroups>
__global__ void __cluster_dims__(CLUSTER_M, 1, 1)
    __launch_bounds__(128 + 2 * BM * CONSUMERS_N, BM == 64 && CONSUMERS_N == 1 && SPLIT_K == 1 ? 2 : 1)
    warp_specialized(V15_PARAMETERS) {
    static_assert(CLUSTER_M > 1, "one CTA per cluster: warp_specialized_unclustered");
    V15_BODY;
}

// One CTA per cluster (CLUSTER_M = 1): a plain launch. Compiled with __cluster_dims__(1, 1, 1) the same kernel
// is a cluster launch of one-CTA clusters, and at DRAM-bound batches, where CTAs side by side read the same
// operand panels, its SMs read far more from L2 and it is slower (docs/notes/v15.md, "One-CTA clusters").
template <int INPUT, int BN, int STAGES, int CLUSTER_M, int GROUP_M, int STREAM_K, int BM, int SPLIT_K,
          int CONSUMERS_N, int SWAP_AB, int A_T, int B_T, typename Epilogue = NoEpilogue,
          template <int, int, int, int> class Groups = NoGroups>
__global__ void __launch_bounds__(128 + 2 * BM * CONSUMERS_N, BM == 64 && CONSUMERS_N == 1 && SPLIT_K == 1 ? 2 : 1)
    warp_specialized_unclustered(V15_PARAMETERS) {
    static_assert(CLUSTER_M == 1, "CTA pairs: warp_specialized");
    V15_BODY;
}
#undef V15_PARAMETERS
#undef V15_BODY
