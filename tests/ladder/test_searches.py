"""Every candidate of every tuned rung's search is right: the search may pick any of them on some GPU
and shape (registry-wide: a rung declares its searches in VARIANT.searches and is picked up here).

On the CPU the Triton candidates run in the interpreter (not those no interpreter runs, such as Gluon
kernels); on a GPU every candidate runs, CUDA C included, on ragged and tile-sized shapes. A GPU run
also times a real search once per rung and language, checks that its choice is reported, and that the
tuning cache gives the same choice without a search.
"""

import re

import pytest
import torch

from implementations import all_variants
from implementations.core import bench, search
from implementations.core.check import PRECISIONS

from ..helpers import (AWKWARD_SHAPES, INTERPRETER_BF16, candidate, checked_run, gpu_skip_reason, param_id,
                       skip_unless_batchable, skip_unless_runnable)

# Ragged in every dimension, several GROUP_M groups with a short last one, a partial last wave.
TUNING_SHAPES = [(17, 33, 5), (97, 61, 130), (1100, 300, 70), (1000, 1531, 777), (1000, 1100, 1028),
                 (2048, 2048, 2048)]
CPU_SHAPES = [*AWKWARD_SHAPES, (1100, 70, 20), (300, 600, 70), (20, 36, 44)]  # the last: ragged, rows 16-byte aligned
SEARCHES = [(v, s, dtype) for v in all_variants() for s in v.searches for dtype in v.dtypes]


def search_id(value):
    if isinstance(value, search.Search):
        return value.lang
    return param_id(value)


def check_every_candidate(variant, tuned, dtype, shape, device, skip=lambda cand: False, layout=None, batch=0):
    """Each candidate the search offers a layout, checked on its own (on the first layout the rung reads in place,
    unless one is given)."""
    layout = layout or variant.layouts.get(tuned.lang, ("nn",))[0]
    for cand in tuned.offered(layout):
        if skip(cand):
            continue
        result = bench.measure(
            rung=variant.tag, name=variant.name, config=tuned.describe(cand), impl=tuned.lang,
            precision=PRECISIONS[dtype], shape=shape, device=torch.device(device), seed=11, layout=layout, batch=batch,
            prepare=lambda a, b, cand=cand, **fused: candidate(a, b, lambda c: tuned.one(a, b, c, cand, **fused)))
        assert result.status == bench.STATUS_OK, (tuned.describe(cand), result.error, result.bound, result.note)


@pytest.mark.parametrize("shape", CPU_SHAPES, ids=param_id)
@pytest.mark.parametrize("variant, tuned, dtype", [p for p in SEARCHES if p[1].lang == "triton"], ids=search_id)
def test_every_triton_candidate_matches_reference(variant, tuned, dtype, shape, device):
    if device.type == "cpu" and dtype == "bf16":
        pytest.skip(INTERPRETER_BF16)
    if device.type == "cuda" and gpu_skip_reason(variant, "triton", dtype):
        pytest.skip(gpu_skip_reason(variant, "triton", dtype))
    check_every_candidate(variant, tuned, dtype, shape, device, skip=lambda cand: device.type == "cpu"
                          and tuned.gpu_only(cand))


@pytest.mark.gpu
@pytest.mark.parametrize("shape", TUNING_SHAPES, ids=param_id)
@pytest.mark.parametrize("variant, tuned, dtype", SEARCHES, ids=search_id)
def test_every_candidate_is_right_on_the_gpu(variant, tuned, dtype, shape):
    if gpu_skip_reason(variant, tuned.lang, dtype):
        pytest.skip(gpu_skip_reason(variant, tuned.lang, dtype))
    check_every_candidate(variant, tuned, dtype, shape, "cuda")


@pytest.mark.gpu
@pytest.mark.parametrize("variant, tuned, dtype", SEARCHES, ids=search_id)
def test_a_real_search_reports_its_choice(variant, tuned, dtype, monkeypatch):
    """With the timed search on (the test suite seeds the first candidate elsewhere), the result's note
    names the winner with its time and the runner-up; with the choices made in this process forgotten (as in
    a new process), the same shape takes the same choice from the tuning cache and times nothing."""
    if gpu_skip_reason(variant, tuned.lang, dtype):
        pytest.skip(gpu_skip_reason(variant, tuned.lang, dtype))
    monkeypatch.setenv(search.MODE_VARIABLE, "time")
    layout = variant.layouts.get(tuned.lang, ("nn",))[0]  # read in place: the run is the search's own
    result = checked_run(variant, tuned.lang, (512, 384, 256), "cuda", dtype, layout=layout)
    assert result.status == bench.STATUS_OK, result.note
    searched = re.search(r"\((\d+) candidates,", result.note)  # a rung may offer a problem only some of them
    assert searched and 2 <= int(searched.group(1)) <= len(tuned.candidates), result.note
    assert "runner-up" in result.note, result.note
    assert any(result.note.startswith(f"autotuned: {tuned.describe(c)}, ") for c in tuned.candidates), result.note
    tuned.choices.clear()
    monkeypatch.setattr(search, "time_candidates", lambda runs: pytest.fail("searched again"))
    again = checked_run(variant, tuned.lang, (512, 384, 256), "cuda", dtype, layout=layout)
    assert again.status == bench.STATUS_OK, again.note
    assert again.note.split(" (")[0] == result.note.split(" (")[0], (result.note, again.note)
    assert "from the tuning cache" in again.note, again.note


def test_every_search_belongs_to_its_rung():
    """A search's key names its rung: choices of different rungs never mix."""
    for variant in all_variants():
        assert len({s.lang for s in variant.searches}) == len(variant.searches), variant.stem
        for s in variant.searches:
            assert s.rung == variant.module and getattr(variant, s.lang) is not None, variant.stem


NATIVE = [(v, s, dtype, layout) for v, s, dtype in SEARCHES for layout in v.layouts.get(s.lang, ("nn",))
          if layout != "nn"]


@pytest.mark.parametrize("variant, tuned, dtype, layout", NATIVE, ids=search_id)
def test_every_candidate_reads_the_layouts_its_rung_declares(variant, tuned, dtype, layout, device):
    """A rung that reads a layout in place hands the transposed views to whichever candidate the search picks."""
    check_candidates_here(variant, tuned, dtype, device, (33, 17, 47), layout=layout)


def check_candidates_here(variant, tuned, dtype, device, cpu_shape, **problem):
    """Every candidate that can run here on one ragged shape: a small one in the interpreter (not the GPU-only
    candidates), a larger one on a GPU."""
    skip_unless_runnable(variant, tuned.lang, dtype, device)
    cpu = device.type == "cpu"
    check_every_candidate(variant, tuned, dtype, cpu_shape if cpu else (97, 61, 130), device,
                          skip=tuned.gpu_only if cpu else (lambda cand: False), **problem)


BATCHED = [(v, s, dtype) for v, s, dtype in SEARCHES if s.lang in v.batched]


@pytest.mark.parametrize("variant, tuned, dtype", BATCHED, ids=search_id)
def test_every_candidate_of_a_batched_kernel_computes_a_batch(variant, tuned, dtype, device):
    """A batch, on a transposed layout the candidates read in place (they are handed the views directly)."""
    skip_unless_batchable(dtype)
    native = variant.layouts.get(tuned.lang, ("nn",))
    layout = next(layout for layout in ("tn", "tt", "nt", "nn") if layout in native)
    check_candidates_here(variant, tuned, dtype, device, (21, 17, 9), layout=layout, batch=3)
