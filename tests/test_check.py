"""The check layer must catch what it exists to catch; a check that cannot fail is no check."""

import math

import pytest
import torch

from implementations._check import PRECISIONS, compare, make_inputs, poison, reference

FP32 = PRECISIONS["fp32"]


def product(M=17, N=33, K=40, seed=0):
    a, b = make_inputs(M, N, K, FP32, "cpu", seed)
    return a, b, reference(a, b)


def test_a_correct_fp32_product_passes():
    a, b, ref = product()
    outcome = compare(a @ b, ref, FP32.bound(40))
    assert outcome.ok and outcome.error < 1e-6 and outcome.unwritten == 0


def test_all_zero_output_fails_with_error_one():
    a, b, ref = product()
    outcome = compare(torch.zeros_like(a @ b), ref, FP32.bound(40))
    assert not outcome.ok and outcome.error == pytest.approx(1.0)


def test_one_wrong_element_fails():
    a, b, ref = product()
    c = a @ b
    c[5, 7] += c.abs().mean()  # one element off by a typical element's size
    assert not compare(c, ref, FP32.bound(40)).ok


def test_one_unwritten_element_fails_and_is_counted():
    a, b, ref = product()
    c = torch.empty_like(a @ b)
    poison(c)
    c.copy_(a @ b)
    c[16, 32] = float("nan")  # as if the last thread never stored
    outcome = compare(c, ref, FP32.bound(40))
    assert not outcome.ok and outcome.unwritten == 1 and math.isnan(outcome.error)


def test_poison_fills_with_nan():
    c = torch.zeros(3, 4)
    poison(c)
    assert torch.isnan(c).all()


def test_inputs_are_fresh_per_seed_and_reproducible():
    a1, b1 = make_inputs(8, 8, 8, FP32, "cpu", 1)
    a2, _ = make_inputs(8, 8, 8, FP32, "cpu", 2)
    a1_again, b1_again = make_inputs(8, 8, 8, FP32, "cpu", 1)
    assert not torch.equal(a1, a2)
    assert torch.equal(a1, a1_again) and torch.equal(b1, b1_again)
    assert a1.std() > 0.5, "random normal data, never zeros or ones alone"


def test_zero_reference_only_accepts_exact_zero():
    ref = torch.zeros(3, 3, dtype=torch.float64)
    assert compare(torch.zeros(3, 3), ref, 1e-6).ok
    assert not compare(torch.full((3, 3), 1e-30), ref, 1e-6).ok


def test_bounds_follow_each_precisions_rounding():
    assert FP32.bound(1) < 1e-6 < FP32.bound(4096) < 3e-5
    assert PRECISIONS["tf32"].bound(4096) == pytest.approx(4 * (2**-11 + 2**-24) + 4 * 64 * 2**-24)
    assert PRECISIONS["fp16"].bound(4096) < PRECISIONS["bf16"].bound(4096) < 2e-2


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_low_precision_output_rounding_fits_its_bound_and_fp32_would_not(dtype):
    """torch's own fp16/bf16 product passes at its precision and fails the fp32 bound: the bounds separate."""
    p = PRECISIONS[dtype]
    a, b = make_inputs(64, 64, 256, p, "cpu", 3)
    c = (a.float() @ b.float()).to(p.dtype)
    assert compare(c, reference(a, b), p.bound(256)).ok
    assert not compare(c, reference(a, b), FP32.bound(256)).ok
