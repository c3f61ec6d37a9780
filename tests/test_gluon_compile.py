"""v11's Gluon kernel, which no interpreter runs, compiles for sm_80 and sm_90 without spills (no GPU needed).

Triton compiles it ahead of time for a target GPU; the ptxas it ships reports on the PTX. Both forms:
EVEN (the tiles divide the shape: masks only along K) and the general one. The GPU tests run it.
"""

import pytest

from implementations import v11_autotuned as v11


@pytest.mark.parametrize("even", [True, False], ids=["even", "edges"])
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("tile", v11.GLUON_CANDIDATES, ids=str)
def test_gluon_candidate_compiles_without_spills(tile, arch, even):
    report = v11.gluon_report(tile, arch, even)
    assert report.spills == 0, f"{report.kernel} spills {report.spill_stores}/{report.spill_loads} bytes on {arch}"
    assert 0 < report.registers <= 255


def test_gluon_tile_uses_the_shared_memory_of_its_stages():
    tile = v11.GLUON_CANDIDATES[0]
    shared = v11.compile_gluon(tile, (9, 0)).metadata.shared
    assert shared >= tile.STAGES * tile.BK * (tile.BM + tile.BN) * 4
