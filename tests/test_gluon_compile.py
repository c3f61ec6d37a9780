"""v11's Gluon kernel, which no interpreter runs, compiles for sm_80 and sm_90 without spills (no GPU needed).

Triton compiles it ahead of time for a target GPU; the ptxas it ships reports on the PTX. Both forms:
EVEN (the tiles divide the shape: masks only along K) and the general one. The GPU tests run it. The
compiles run in a fresh process: once Triton's interpreter has run a kernel, it leaves `tl.tensor`'s
operators patched for the rest of the process, and a later compile fails inside them.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from implementations import v11_autotuned as v11

CASES = [(tile, arch, even) for tile in v11.GLUON_CANDIDATES for arch in ("sm_80", "sm_90") for even in (True, False)]
SCRIPT = """
import json, sys
from implementations import v11_autotuned as v11
cases = json.loads(sys.argv[1])
out = [v11.gluon_report(v11.Tile(*tile), arch, even) for tile, arch, even in cases]
print(json.dumps([r.__dict__ for r in out]))
"""


@pytest.fixture(scope="module")
def reports():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(CASES)], capture_output=True, text=True,
                          env=env, cwd=root, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    rows = json.loads(proc.stdout.strip().splitlines()[-1])
    return {case: v11.PtxasReport(**row) for case, row in zip(CASES, rows, strict=True)}


@pytest.mark.parametrize("tile, arch, even", CASES, ids=lambda x: str(x))
def test_gluon_candidate_compiles_without_spills(reports, tile, arch, even):
    report = reports[(tile, arch, even)]
    assert report.spills == 0, f"{report.kernel} spills {report.spill_stores}/{report.spill_loads} bytes on {arch}"
    assert 0 < report.registers <= 255


@pytest.mark.parametrize("tile", v11.GLUON_CANDIDATES, ids=str)
def test_gluon_tile_holds_its_stages_in_shared_memory(reports, tile):
    """STAGES copies of the A^T and B tiles, in the two allocations for even and odd tiles."""
    assert reports[(tile, "sm_90", True)].smem_bytes >= tile.STAGES * tile.BK * (tile.BM + tile.BN) * 4
