"""v17 fused epilogue: C = act(A @ B + bias), the bias and the activation applied in registers before the store.

The idea. In a model a product rarely comes alone: a linear layer adds its bias, and an activation
(ReLU, GELU) follows. Written as torch code, `F.gelu(a @ b + bias, approximate="tanh")`, each step is a
kernel of its own: the product writes C, the add reads C and writes it back, the activation reads it
and writes it again. Every pass after the product moves 2·M·N·(bytes per element) through DRAM for a
few flops per element. Fused, the epilogue runs on the fp32 accumulators while they are still in
registers, and C is written once: what fusion saves is one read and one write of C per pass, and what
it costs is a few instructions per element and one read of the bias per column block.
The kernels are v15's in both languages, not copies: the CUDA C kernel takes the epilogue as a template
parameter (a type; its default does nothing and compiles to nothing), and v15's Triton kernels (v14's
`tma_persistent_kernel`, v15's `split_k_kernel`) take it as constexpr flags (off by default). The search
is v15's, per epilogue, decode's split and swapped candidates included.

CUDA C and Triton side by side:

| concept | CUDA C (kernels_cuda/v17_fused_epilogue.cu) | Triton (`apply_epilogue`, v14.py) |
|---|---|---|
| the hook | `typename Epilogue` of v15's kernel, default `NoEpilogue` | constexprs `BIAS`, `ACTIVATION` |
| an epilogue | a type: `BIAS`, `apply(x)`; one instantiation each | one compilation per constexpr value |
| where it runs | `apply_epilogue` on the accumulator fragment, | on `acc`, before `acc.to(...)` and either |
|  | before stmatrix + TMA store or the direct stores | `c_desc.store` or `tl.store` |
| the bias | the warpgroup stages the tile's bias in shared | `tl.load(bias_ptr + offs)[None, :]`: |
|  | memory; each thread reads its columns' pairs | a row vector, broadcast over the rows |
| ReLU | `fmaxf(x, 0.0f)` | `tl.maximum(acc, 0.0)` |
| GELU (tanh form) | `__fdividef(x, 1 + __expf(-2t))` = x·sigmoid(2t) | `acc / (1 + tl.exp(-2t))`, the same |
| stream-K, split-K | partial sums added first, the epilogue once per tile | split-K: the last slice, on the sum |
| swapped (Cᵀ) | `apply_epilogue_transposed`: two bias elements | `BIAS_ROWS`: the bias along the block's rows, |
|  | a thread, along the block's rows (C's columns) | `[:, None]` |

What Triton does for you: the bias is a row vector broadcast over a block, and which elements of it a
thread needs follows from the accumulator's layout, which the compiler chose. In CUDA C the epilogue must
know the wgmma accumulator fragment (which columns thread t holds) to read the right bias elements, and
that it may run only after the last partial sums of a stream-K tile were added. The activation itself is
one line in either language.

Constraints: as v15 (fp16/bf16 on sm_90a, every layout and batches in place). The bias is a contiguous
vector of N elements in the operands' dtype, shared by every row (and every matrix of a batch). GELU is
torch's tanh form (`approximate="tanh"`, cuBLASLt's GELU epilogue), not the erf one. K = 0: C = act(bias).

What it should reach: v15's speed with an epilogue, whichever: the few instructions per element run
while the producer already loads the next tile. Against torch, at least cuBLASLt's fused epilogue
(`torch._addmm_activation`), and above the unfused sequence by what its passes over C cost.
"""

import torch

from .core.check import EPILOGUES, LAYOUTS
from .core.cuda_c import CudaSource
from .core.registry import Variant
from .core.search import Search
from .core.triton_util import block_of, describe_config
from .v15_warp_specialized import CUDA_CANDIDATES, IS_BF16, Tile, config_reads, cuda_candidates
from .v15_warp_specialized import CUDA_SEARCH as V15_CUDA_SEARCH
from .v15_warp_specialized import KERNELS as V15_KERNELS
from .v15_warp_specialized import TRITON_SEARCH as V15_TRITON_SEARCH
from .v15_warp_specialized import prepare_cuda as v15_prepare_cuda
from .v15_warp_specialized import prepare_triton as v15_prepare_triton
from .v15_warp_specialized import triton_candidates as v15_triton_candidates

# The C++ type of each epilogue (kernels_cuda/v17_fused_epilogue.cu; none is v15's default, from v15's .cu).
CUDA_EPILOGUES = {"none": "NoEpilogue", "bias": "Bias", "bias+relu": "BiasRelu", "bias+gelu": "BiasGelu"}
KERNELS = CudaSource(__name__, [t.kernel(d, t.kernel_layout(lay), CUDA_EPILOGUES[e])
                                for e in CUDA_EPILOGUES if e != "none" for d in IS_BF16 for lay in LAYOUTS
                                for t in V15_CUDA_SEARCH.candidates if t.reads(lay)], arch="sm_90a")


def no_k(c, epilogue: str, bias):
    """K = 0: A @ B is all zeros, so C is the epilogue of zeros (a tensor map of a zero-width matrix does not exist)."""
    def run():
        c.copy_(EPILOGUES[epilogue].apply(torch.zeros(c.shape, device=c.device), bias))

    return run


# ---- CUDA C launcher: v15's candidates, each instantiated with the epilogue ------------------------------


def prepare_cuda(a, b, c, tiles=CUDA_CANDIDATES, epilogue: str = "none", bias=None):
    """(refresh, {tile: launch}) for these candidates on one problem's tensor maps (v15's), each applying
    `epilogue`."""
    source = V15_KERNELS if epilogue == "none" else KERNELS
    return v15_prepare_cuda(a, b, c, tiles, source=source, epilogue=CUDA_EPILOGUES[epilogue], bias=bias)


CUDA_SEARCH = Search(__name__, "cuda", V15_CUDA_SEARCH.candidates, prepare_cuda, tile=V15_CUDA_SEARCH.tile,
                     reads=Tile.reads)


def fused_epilogue_cuda(a, b, c, epilogue: str = "none", bias=None):
    if a.shape[-1] == 0:
        return no_k(c, epilogue, bias)
    return CUDA_SEARCH.tuned(a, b, c, cuda_candidates(a, b, c), epilogue=epilogue, bias=bias)


# ---- Triton: v15's kernels (v14's persistent one, split-K, swapped), their epilogue flags set ------------


def epilogue_flags(epilogue: str, bias) -> dict:
    """The arguments of v15's Triton kernels that apply `epilogue` (their defaults apply none)."""
    epi = EPILOGUES[epilogue]
    return {"bias_ptr": bias, "BIAS": epi.bias, "ACTIVATION": epi.activation}


def prepare_triton(a, b, c, configs, epilogue: str = "none", bias=None):
    return v15_prepare_triton(a, b, c, configs, flags=epilogue_flags(epilogue, bias))


def with_epilogue(configs) -> tuple:
    """Those of v15's configs whose kernels apply an epilogue: all but v11's (TMA=False)."""
    return tuple(config for config in configs if config.kwargs.get("TMA") is not False)


def triton_candidates(a, b, c) -> tuple:
    return with_epilogue(v15_triton_candidates(a, b, c))


TRITON_SEARCH = Search(__name__, "triton", with_epilogue(V15_TRITON_SEARCH.candidates), prepare_triton,
                       tile=block_of, describe=describe_config, reads=config_reads)


def fused_epilogue_triton(a, b, c, epilogue: str = "none", bias=None):
    if a.shape[-1] == 0:
        return no_k(c, epilogue, bias)
    return TRITON_SEARCH.tuned(a, b, c, triton_candidates(a, b, c), epilogue=epilogue, bias=bias)


VARIANT = Variant(
    __name__,
    title="fused epilogue: bias, ReLU, GELU",
    dtypes=("fp16", "bf16"),
    cuda=fused_epilogue_cuda,
    triton=fused_epilogue_triton,
    cuda_source=KERNELS,
    min_cc=(9, 0),
    searches=(CUDA_SEARCH, TRITON_SEARCH),
    layouts={"cuda": LAYOUTS, "triton": LAYOUTS},  # v15's kernels
    batched=("cuda", "triton"),
    epilogues=tuple(EPILOGUES),
)
