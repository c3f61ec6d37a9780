// v17 fused epilogue: v15's warp-specialized kernel, instantiated with an epilogue that its consumer
// warpgroups apply to the fp32 accumulators in registers, before either store path writes C. C is
// written once and never read back: the bias add and the activation cost a few instructions per element.
//
// C (M×N) = A (M×K) · B (K×N), then C = act(C + bias): bias is a vector of N elements (one per column,
// C's type), act is nothing, ReLU or GELU (torch's tanh form). Everything else (layouts, batches, tiles,
// launch, shared memory) is v15's: see v15_warp_specialized.cu. The launcher names the instantiations,
// warp_specialized<..., Epilogue> (or warp_specialized_unclustered<...>), with Epilogue one of the types below.
// Needs sm_90a.
//
// An epilogue is a type with BIAS (add bias[column] first) and apply(x) (then this, to every element);
// v15's apply_epilogue hook stages the tile's bias in shared memory once per tile, adds to each accumulator
// its column's, and calls apply on all of them. The types are stateless, so the compiler sees the whole
// epilogue inline.
#include "v15_warp_specialized.cu"

struct Bias {
    static constexpr bool BIAS = true;
    __device__ static float apply(float x) { return x; }
};

struct BiasRelu {
    static constexpr bool BIAS = true;
    __device__ static float apply(float x) { return fmaxf(x, 0.0f); }
};

// torch's tanh form, 0.5·x·(1 + tanh(t)) with t = √(2/π)·(x + 0.044715·x³), written as x·sigmoid(2t): one
// exp (ex2.approx) and one approximate division, no tanh. Far below zero exp(-2t) overflows to infinity and
// x / inf is the limit, -0; far above it exp(-2t) is 0 and the result is x.
struct BiasGelu {
    static constexpr bool BIAS = true;
    __device__ static float apply(float x) {
        return __fdividef(x, 1.0f + __expf(-1.5957691216057308f * (x + 0.044715f * x * x * x)));
    }
};
