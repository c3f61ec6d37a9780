"""The timeline tool's reading of v15's stamps (implementations/tools/timeline.py), on made-up stamps: no GPU."""

import numpy as np
import pytest

from implementations.tools import timeline


def stamps_of(ctas):
    """CTAs × TIMELINE_SLOTS stamps from (start ns, end ns, start cycle, tile-end cycles, end cycle) per CTA."""
    out = np.zeros((len(ctas), 16), dtype=np.int64)
    for row, (start_ns, end_ns, start_clk, tiles, end_clk) in zip(out, ctas):
        row[timeline.START_NS], row[timeline.END_NS] = start_ns, end_ns
        row[timeline.START_CLK], row[timeline.END_CLK] = start_clk, end_clk
        row[timeline.TILES:timeline.TILES + len(tiles)] = tiles
    return out


def test_summary_times_the_tiles_and_the_epilogue_after_the_last():
    stamps = stamps_of([(1000, 6000, 100, [4100], 5400),  # one tile: 4000 cycles, then 1300 to the end
                        (1200, 9000, 300, [4300, 7300], 8800),  # two tiles: the later one 3000, then 1500
                        (1100, 5900, 200, [4200], 5500)])
    s = timeline.summarise(stamps, np.array([1, 2, 1]))
    assert s["span_us"] == pytest.approx(8.0) and s["skew_us"] == pytest.approx(0.2)
    assert s["first_tile_kcyc"] == pytest.approx((4.0, 4.0, 4.0))
    assert s["tile_kcyc"] == pytest.approx((3.0, 3.0, 3.0))
    assert s["epilogue_kcyc"] == pytest.approx((4.1 / 3, 1.3, 1.5))  # 1300, 1500 and 1300 cycles


def test_a_cta_with_more_tiles_than_stamps_has_no_epilogue_figure():
    many = list(range(1000, 12000, 1000))  # all 11 stamps used, and the CTA took 12 tiles
    stamps = stamps_of([(0, 9000, 0, many, 13000), (0, 3000, 0, [2000], 2600)])
    s = timeline.summarise(stamps, np.array([12, 1]))
    assert s["epilogue_kcyc"] == pytest.approx((0.6, 0.6, 0.6))


def test_the_mean_tile_of_each_round_and_ctas_without_tiles_left_out():
    stamps = stamps_of([(0, 9000, 0, [4000, 7000, 9500], 9800),  # rounds of 4000, 3000 and 2500 cycles
                        (0, 8000, 0, [5000, 7000], 7500),  # 5000 and 2000
                        (0, 100, 0, [], 50)])  # took none
    s = timeline.summarise(stamps, np.array([3, 2, 0]))
    assert s["round_kcyc"] == pytest.approx([4.5, 2.5, 2.5])
    assert s["skew_us"] == 0 and s["tiles"] == {2: 1, 3: 1}


def test_the_groups_of_each_round():
    """ramp-like groups of 128-row tiles in clusters of two, one tile column: 1, 1, 2, 3 cluster tiles, in rounds
    of three clusters."""
    from implementations.v15_warp_specialized import Tile

    tile = Tile(256, 4, 2, 8)
    assert timeline.round_groups((128, 256, 512, 768), 256, tile, 3) == ["0-2", "2-3", "3-3"]
