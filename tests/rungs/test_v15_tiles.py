"""v15's tile arithmetic on the host, no GPU: threads, shared memory, kernel names and descriptions of its
candidates, the two-consumer 64-row tile among them."""

import torch

from implementations import v15_warp_specialized as v15

MAX_SHARED = 227 * 1024  # an sm_90 block's dynamic shared memory at most


def test_every_candidate_fits_the_shared_memory_and_threads_it_launches_with():
    for tile in v15.CUDA_SEARCH.candidates:
        assert v15.shared_bytes(tile) <= MAX_SHARED, tile
        assert tile.threads == 128 * (1 + tile.consumers) <= 384, tile


def test_two_consumers_side_by_side_count_as_two():
    side = v15.Tile(128, 8, 1, 8, 0, 64, 1, 2)
    one = v15.Tile(128, 8, 1, 8, 0, 64)
    assert (side.consumers, side.threads) == (2, 384) and (one.consumers, one.threads) == (1, 256)
    assert v15.shared_bytes(side) - v15.shared_bytes(one) == 16 * 1024  # a second staging buffer for C
    assert side in v15.CUDA_CANDIDATES


def test_kernel_names_carry_consumers_n_and_descriptions_only_where_it_is_two():
    side, wide = v15.Tile(128, 8, 1, 8, 0, 64, 1, 2), v15.Tile(256, 4, 2, 8)
    assert (side.kernel(torch.bfloat16, "tn")
            == "warp_specialized_unclustered<1,128,8,1,8,0,64,1,2,0,1,0,NoEpilogue,NoGroups>")
    assert wide.kernel(torch.float16) == "warp_specialized<0,256,4,2,8,0,128,1,1,0,0,0,NoEpilogue,NoGroups>"
    assert str(wide) == "BN=256 STAGES=4 CLUSTER_M=2 GROUP_M=8 STREAM_K=0 BM=128 SPLIT_K=1"  # as tuning caches know it
    assert str(side).endswith("SPLIT_K=1 CONSUMERS_N=2")
