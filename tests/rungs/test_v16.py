"""v16 wgmma tf32: every candidate of both languages on every layout it reads in place (CUDA C nn, nt, tt; Triton
nn, nt), on batches
(of one too) and on a matrix shared by the batch, against the float64 reference with NaN-poisoned outputs;
tn copied by the shared layer. On the CPU the Triton candidates run in the interpreter; the CUDA C ones need
an sm_90a GPU."""

import pytest
import torch

from implementations import v16_wgmma_tf32 as v16
from implementations.core import bench
from implementations.core.check import PRECISIONS, check, make_inputs, poison

from ..helpers import candidate, checked_run, param_id, skip_unless_runnable
from ..ladder import test_searches

VARIANT = v16.VARIANT
SEARCHES = {s.lang: s for s in VARIANT.searches}
# M = 1, K = 1, N % 4 != 0 (C stored from registers in CUDA C), N % 4 == 0 (through TMA), several tiles of
# every candidate with ragged last ones.
GPU_SHAPES = [(1, 61, 130), (97, 61, 1), (97, 61, 130), (300, 260, 200), (1000, 1100, 1028)]
# The batched shapes the rung is measured on against torch.bmm (4096×64³ ... 64×512³), checked here.
BMM_SHAPES = [(4096, 64), (1024, 128), (256, 256), (64, 512)]
NATIVE = [(lang, layout) for lang in ("cuda", "triton") for layout in VARIANT.layouts[lang]]


@pytest.mark.gpu
@pytest.mark.parametrize("shape", GPU_SHAPES, ids=param_id)
@pytest.mark.parametrize("lang, layout", NATIVE)
def test_every_candidate_reads_its_layouts_in_place(lang, layout, shape):
    skip_unless_runnable(VARIANT, lang, "tf32", torch.device("cuda"))
    test_searches.check_every_candidate(VARIANT, SEARCHES[lang], "tf32", shape, "cuda", layout=layout)


@pytest.mark.gpu
@pytest.mark.parametrize("shape, batch", [((97, 61, 130), 1), ((1, 61, 1), 3), ((97, 61, 130), 3),
                                          ((300, 260, 200), 5)], ids=param_id)
@pytest.mark.parametrize("lang, layout", NATIVE)
def test_every_candidate_computes_a_batch_in_one_launch(lang, layout, shape, batch):
    skip_unless_runnable(VARIANT, lang, "tf32", torch.device("cuda"))
    test_searches.check_every_candidate(VARIANT, SEARCHES[lang], "tf32", shape, "cuda", layout=layout, batch=batch)


@pytest.mark.gpu
@pytest.mark.parametrize("batch, size", BMM_SHAPES, ids=param_id)
@pytest.mark.parametrize("lang", ["cuda", "triton"])
def test_every_candidate_is_right_on_the_bmm_shapes(lang, batch, size):
    skip_unless_runnable(VARIANT, lang, "tf32", torch.device("cuda"))
    test_searches.check_every_candidate(VARIANT, SEARCHES[lang], "tf32", (size, size, size), "cuda", batch=batch)


@pytest.mark.parametrize("shared", ["A", "B"])
@pytest.mark.parametrize("lang, layout", NATIVE)
def test_every_candidate_reads_an_operand_shared_by_the_batch(lang, layout, shared, device):
    """A 2-D operand beside a 3-D one is read as matrix 0 for every product (a_step or b_step 0)."""
    skip_unless_runnable(VARIANT, lang, "tf32", device)
    tuned = SEARCHES[lang]
    shape = (97, 61, 130) if device.type == "cuda" else (21, 17, 47)
    for cand in tuned.candidates:
        a, b = make_inputs(*shape, PRECISIONS["tf32"], device, 17, layout=layout, batch=3)
        a, b = (a[0], b) if shared == "A" else (a, b[0])
        prepared = candidate(a, b, lambda c, cand=cand: tuned.one(a, b, c, cand))
        poison(prepared.out)
        prepared.run()
        outcome = check(prepared.out, a, b, PRECISIONS["tf32"])
        assert outcome.ok, (tuned.describe(cand), outcome.why())


@pytest.mark.parametrize("batch", [0, 3])
@pytest.mark.parametrize("layout", ["nn", "nt", "tn", "tt"])
@pytest.mark.parametrize("lang", ["cuda", "triton"])
def test_the_shared_layer_copies_one_operand_only_where_it_must(lang, layout, batch, device):
    """The layouts a language reads in place reach its kernel as they are, in one launch; the other (tn) has one
    operand copied, the smaller: B here (then tt)."""
    skip_unless_runnable(VARIANT, lang, "tf32", device)
    result = checked_run(VARIANT, lang, (33, 17, 47), device, "tf32", layout=layout, batch=batch)
    assert result.status == bench.STATUS_OK, (result.note, result.worst)
    assert ("copies B to a transposed view" in result.note) == (layout not in VARIANT.layouts[lang]), result.note
    assert "copies A" not in result.note and "one launch per matrix" not in result.note, result.note


@pytest.mark.gpu
def test_cuda_refuses_tn_in_one_line():
    """tn has no operand stored with rows of K; a caller that bypasses the shared layer is told so."""
    skip_unless_runnable(VARIANT, "cuda", "tf32", torch.device("cuda"))
    a, b = make_inputs(64, 64, 64, PRECISIONS["tf32"], "cuda", 3, layout="tn")
    c = torch.empty(64, 64, device="cuda")
    with pytest.raises(ValueError, match="reads nn, nt, tt in place, not tn"):
        v16.prepare_cuda(a, b, c)
