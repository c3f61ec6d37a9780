"""v15 Triton's B-pitch candidates: offered where B's stored rows are not 128 bytes apart, and right, with B
copied to that pitch inside the call (on the CPU in the interpreter, fp16; on an sm_90 GPU both dtypes)."""

import pytest
import torch

from implementations.core.check import PRECISIONS, check, make_inputs, poison


def test_the_pitch_candidates_join_the_search_only_where_b_rows_are_ragged():
    from implementations import v15_warp_specialized as v15

    def stored(rows, cols):
        return torch.empty(rows, cols, dtype=torch.bfloat16)

    assert v15.ragged_pitch(stored(7000, 5000))  # 10000-byte rows
    assert not v15.ragged_pitch(stored(7000, 5120))
    assert not v15.ragged_pitch(stored(5000, 7000).T)  # a transposed B: its stored rows are K, read as A's are
    assert v15.ragged_pitch(torch.empty(3, 64, 72, dtype=torch.float16))  # a batch, 144-byte rows


def test_b_copied_to_a_128_byte_pitch_is_the_same_matrix():
    from implementations import v15_warp_specialized as v15

    b = torch.randn(2, 33, 100).to(torch.float16)
    padded, copy = v15.pitch_padded(b)
    copy()
    assert padded.stride(-2) * padded.element_size() % 128 == 0
    assert torch.equal(padded, b)


@pytest.mark.parametrize("layout", ["nn", "tn"])
def test_the_pitch_candidates_are_right_run_after_run(layout, device):
    from implementations import v15_warp_specialized as v15

    if device.type == "cuda" and torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("TMA descriptors and wgmma: sm_90")
    for dtype in ["fp16"] if device.type == "cpu" else ["fp16", "bf16"]:
        precision = PRECISIONS[dtype]
        a, b = make_inputs(70, 200, 90, precision, device, 3, layout=layout)
        assert v15.ragged_pitch(b)
        c = torch.empty(70, 200, device=device, dtype=a.dtype)
        refresh, runs = v15.prepare_triton(a, b, c, v15.PITCH_CONFIGS)
        for config, run in runs.items():
            for _ in range(2):  # the copy of B is refreshed in each call
                poison(c)
                refresh()
                run()
                outcome = check(c, a, b, precision)
                assert outcome.ok, (config, dtype, outcome.why())
            b.mul_(-1)  # B changes between calls: the next call must copy it again
            poison(c)
            refresh()
            run()
            assert check(c, a, b, precision).ok, (config, dtype, "B's change not copied")
