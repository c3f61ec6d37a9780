"""The check's own tests: deliberately broken kernels must all be rejected, at every precision and at
awkward and large shapes. A check that lets any of them pass has a hole.

The broken kernels are torch stand-ins on the CPU that reproduce, element for element, what each defect
makes a real kernel write (the interpreter would take minutes at 1024³ and cannot hold state between
calls the way a stale accumulator does): an edge mask off by one in M, N or K, a missing last K tile, one
tile stored transposed, B read with its strides swapped, one wrong element, a corner element left at
zero, and an accumulator not reset between calls. The broken-on-purpose rung (v04) is tested as it is,
elsewhere.
"""

import pytest
import torch

from implementations.core import bench
from implementations.core.check import PRECISIONS, make_inputs, reference
from implementations.core.registry import Prepared

TILE = 32  # the tile the stand-ins imagine (a K tile, a C tile)


def product(a, b):
    """fp32 accumulation, rounded once to C's dtype, as the kernels do."""
    return (a.float() @ b.float()).to(a.dtype)


def mask_m(a, b):
    c = product(a, b)
    c[-1] = 0  # the last row masked out of the store's compute: written as zeros
    return c


def mask_n(a, b):
    c = product(a, b)
    c[:, -1] = 0
    return c


def mask_k(a, b):
    return product(a[:, :-1], b[:-1])  # the last k masked off


def missing_last_k_tile(a, b):
    K = a.shape[1]
    kept = (K - 1) // TILE * TILE
    return product(a[:, :kept], b[:kept])


def transposed_tile(a, b):
    c = product(a, b)
    c[:TILE, :TILE] = c[:TILE, :TILE].T.clone()
    return c


def swapped_strides(a, b):
    K, N = b.shape
    return product(a, b.flatten().view(N, K).T)  # B read at k·1 + n·K instead of k·N + n


def one_wrong_element(a, b):
    c = product(a, b)
    i, j = c.shape[0] // 2, c.shape[1] // 3
    c[i, j] += 0.01 * (a[i].double().abs() @ b[:, j].double().abs()).to(c.dtype)  # 1% of its scale
    return c


def corner_zero(a, b):
    c = product(a, b)
    c[-1, -1] = 0
    return c


DEFECTS = [mask_m, mask_n, mask_k, missing_last_k_tile, transposed_tile, swapped_strides, one_wrong_element,
           corner_zero]
SHAPES = [(257, 263, 271), (1024, 1024, 1024)]


def stand_in(defect):
    def prepare(a, b):
        c = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype)
        return Prepared(lambda: c.copy_(defect(a, b)), c)

    return prepare


def stale_accumulator(a, b):
    """Right on the first call; every later call adds onto what the last one left (state not reset)."""
    c = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype)
    acc = torch.zeros(c.shape, dtype=torch.float32)

    def run():
        acc.add_(a.float() @ b.float())
        c.copy_(acc.to(c.dtype))

    return Prepared(run, c)


def cached_output(a, b):
    """Computes once, then returns the first result whatever the inputs."""
    c = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype)
    first = product(a, b)
    return Prepared(lambda: c.copy_(first), c)


def measured(prepare, dtype, shape, inputs="normal", seed=3):
    return bench.measure(rung="v00", name="broken", config="", impl="triton", precision=PRECISIONS[dtype],
                         shape=shape, device=torch.device("cpu"), seed=seed, prepare=prepare, inputs=inputs)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("defect", DEFECTS, ids=lambda d: d.__name__)
def test_every_broken_kernel_is_rejected(defect, dtype, shape):
    result = measured(stand_in(defect), dtype, shape)
    assert result.status == bench.STATUS_WRONG, (defect.__name__, result.error, result.bound, result.worst)


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("broken", [stale_accumulator, cached_output], ids=lambda f: f.__name__)
def test_a_kernel_right_once_and_wrong_later_is_rejected(broken, dtype):
    result = measured(broken, dtype, SHAPES[0])
    assert result.status == bench.STATUS_WRONG and result.note.startswith("changed between calls"), result.note


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("inputs", ["normal", "positive", "wide", "integers"])
def test_the_right_product_passes_with_every_input_kind(inputs, dtype):
    result = measured(stand_in(product), dtype, SHAPES[0], inputs)
    assert result.status == bench.STATUS_OK, (result.note, result.worst)


def test_the_defects_the_normwise_check_missed_are_rejected_with_the_worst_element_named():
    """At 1024³ bf16 a corner element written as 0 and one element off by 300 stay under the normwise
    bound; the componentwise check rejects both and names the element."""
    a, b = make_inputs(1024, 1024, 1024, PRECISIONS["bf16"], "cpu", 3)
    ref = reference(a, b)
    for defect in (corner_zero, lambda a, b: product(a, b).index_put_((torch.tensor(5), torch.tensor(7)),
                                                                      torch.tensor(300.0, dtype=a.dtype),
                                                                      accumulate=True)):
        c = defect(a, b)
        normwise = ((c.double() - ref).norm() / ref.norm()).item()
        assert normwise <= PRECISIONS["bf16"].bound(1024), "the normwise check alone would pass it"
        result = measured(stand_in(defect), "bf16", (1024, 1024, 1024))
        assert result.status == bench.STATUS_WRONG and result.outside >= 1, result.note
        assert result.worst.startswith("C[1023, 1023]" if defect is corner_zero else "C[5, 7]"), result.worst


def test_integer_inputs_must_be_exact():
    """With small-integer inputs the product is exact in every precision: one ulp off fails."""
    def one_ulp_off(a, b):
        c = product(a, b)
        c[3, 4] = torch.nextafter(c[3, 4], torch.tensor(float("inf"), dtype=c.dtype))
        return c

    assert measured(stand_in(product), "fp32", SHAPES[0], "integers").status == bench.STATUS_OK
    result = measured(stand_in(one_ulp_off), "fp32", SHAPES[0], "integers")
    assert result.status == bench.STATUS_WRONG and result.worst.startswith("C[3, 4]"), result.note
