"""v15's split-K, both languages: a tile's k-slices summed by whichever slice finishes last, right run after run
(the counters set back to 0), the same bits each time, and offered to the search only where tiles are few.
On the CPU Triton's kernel runs in the interpreter (fp16: the interpreter's bf16 is wrong); the CUDA C
candidates, and both dtypes, need an sm_90a GPU."""

import pytest
import torch

from implementations.core.check import PRECISIONS, check, make_inputs, poison

from ..helpers import param_id

# k-blocks fewer than the slices (empty slices), ragged in every dimension, a row of A, a batch sharing B.
CASES = [((33, 70, 40), 0), ((97, 61, 300), 0), ((1, 96, 520), 0), ((20, 40, 200), 3)]


def dtypes(device):
    return ["fp16"] if device.type == "cpu" else ["fp16", "bf16"]


@pytest.mark.parametrize("lang", ["triton", "cuda"])
@pytest.mark.parametrize("case", CASES, ids=param_id)
def test_split_k_is_right_and_the_same_run_after_run(case, lang, device):
    from implementations import v15_warp_specialized as v15

    if device.type == "cuda" and torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("TMA descriptors and wgmma: sm_90")
    if lang == "cuda" and device.type != "cuda":
        pytest.skip("the CUDA C kernel needs an sm_90a GPU")
    (M, N, K), batch = case
    for dtype in dtypes(device):
        precision = PRECISIONS[dtype]
        a, b = make_inputs(M, N, K, precision, device, 5, batch=batch, shared="b" if batch else "")
        c = torch.empty((batch, M, N) if batch else (M, N), device=device, dtype=a.dtype)
        if lang == "cuda":
            refresh, runs = v15.prepare_cuda(a, b, c, v15.CUDA_SPLIT_CANDIDATES)
        else:
            refresh, runs = v15.prepare_triton(a, b, c, v15.SPLIT_K_CONFIGS)
        for config, run in runs.items():
            first = None
            for _ in range(3):  # a launch that left a counter raised would skip or repeat a sum in the next
                poison(c)
                refresh()
                run()
                outcome = check(c, a, b, precision)
                assert outcome.ok, (config, case, dtype, outcome.why())
                first = c.clone() if first is None else first
                assert torch.equal(c, first), (config, case, dtype, "differs from the first run")


def test_split_k_joins_the_search_only_where_tiles_are_few():
    from implementations import v15_warp_specialized as v15

    cpu = torch.device("cpu")
    assert v15.few_tiles(16, 4096, 1, cpu)  # decode: 32 tiles of 128×128
    assert v15.few_tiles(1024, 1024, 1, cpu)
    assert not v15.few_tiles(2048, 2048, 1, cpu)  # 256 tiles
    assert not v15.few_tiles(1024, 1024, 4, cpu)  # a batch of four fills the GPU with tiles


@pytest.mark.parametrize("shape, batch", [((16, 4096, 4096), 0), ((4096, 4096, 4096), 0), ((128, 128, 128), 1024),
                                          ((3000, 5000, 7000), 0)], ids=param_id)
def test_the_search_is_given_the_candidates_for_its_shape(shape, batch):
    """Where 128×128 tiles are fewer than SMs: no tile wider than 128×128, split-K's and (CUDA C) the unpaired tile,
    (Triton) v11's kernel; a batch of many tiles: every tile and the unpaired one, v11's kernel; a large product:
    every candidate and nothing else; B's rows not 128 bytes apart: Triton's PAD_B configs too."""
    from implementations import v15_warp_specialized as v15

    M, N, K = shape
    lead = (batch,) if batch else ()
    a, b = torch.empty(*lead, M, K, dtype=torch.bfloat16), torch.empty(*lead, K, N, dtype=torch.bfloat16)
    c = torch.empty(*lead, M, N, dtype=torch.bfloat16)
    cuda, triton = v15.cuda_candidates(a, b, c), v15.triton_candidates(a, b, c)
    assert set(cuda) <= set(v15.CUDA_SEARCH.candidates) and set(triton) <= set(v15.TRITON_SEARCH.candidates)
    few = v15.few_tiles(M, N, max(batch, 1), torch.device("cpu"))
    assert few == (shape == (16, 4096, 4096))
    wide_cuda = [t for t in cuda if t.BM * t.BN > 128 * 128]
    wide_triton = [c for c in triton if c.kwargs["BLOCK_M"] * c.kwargs["BLOCK_N"] > 128 * 128]
    assert (not wide_cuda and not wide_triton) if few else (wide_cuda and wide_triton)
    assert set(v15.CUDA_SPLIT_CANDIDATES) <= set(cuda) if few else not set(v15.CUDA_SPLIT_CANDIDATES) & set(cuda)
    assert set(v15.SPLIT_K_CONFIGS) <= set(triton) if few else not set(v15.SPLIT_K_CONFIGS) & set(triton)
    assert (set(v15.CUDA_UNPAIRED_CANDIDATES) <= set(cuda)) == (few or batch > 0)
    assert (set(v15.POINTER_CONFIGS) <= set(triton)) == (few or batch > 0)
    assert (set(v15.PITCH_CONFIGS) <= set(triton)) == (N == 5000)
    if not few and not batch:
        assert cuda == v15.CUDA_CANDIDATES
