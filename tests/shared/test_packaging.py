"""`pip install .` gives a working tool from any directory: the wheel carries every .cu source and
header and the page templates, and its console script runs the same CLI as compare.py."""

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from implementations import all_variants

# its module fixture is built once: every test of this file runs in one xdist worker
pytestmark = pytest.mark.xdist_group("test_packaging")

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    # built from a copy, so that setuptools' build/ and egg-info never touch (or read stale files from) the checkout
    source = tmp_path_factory.mktemp("source") / "triton-vs-cuda"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info",
                                                                 "__pycache__", "docs", "tests", "gpu-logs"))
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(out), str(source)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (found,) = out.glob("triton_vs_cuda-*.whl")
    return found


def test_the_wheel_carries_the_cuda_sources_the_templates_and_the_console_script(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    sources = {f"implementations/kernels_cuda/{p.name}" for p in (REPO / "kernels_cuda").iterdir()
               if p.suffix in (".cu", ".cuh")}
    templates = {f"implementations/tools/templates/{p.name}" for p in (REPO / "implementations/tools/templates").iterdir()}
    assert sources and templates and sources | templates <= names, sorted((sources | templates) - names)
    (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    assert "triton-vs-cuda = implementations.core.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_the_installed_package_finds_its_kernels_from_any_directory(wheel, tmp_path):
    target = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-compile", "-q", "--target",
                           str(target), str(wheel)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    env = {**os.environ, "PYTHONPATH": str(target), "TRITON_INTERPRET": "1"}
    check = ("import implementations, implementations.core.cuda_c as c; "
             "print(implementations.__file__); print(c.KERNEL_DIR); "
             "print(all(v.cuda_source.path.is_file() for v in implementations.all_variants() if v.cuda_source))")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = subprocess.run([sys.executable, "-c", check], cwd=elsewhere, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    package, kernels, present = out.stdout.split()
    assert Path(package).is_relative_to(target) and Path(kernels) == target / "implementations" / "kernels_cuda"
    assert present == "True"
    script = target / "bin" / "triton-vs-cuda"
    listed = subprocess.run([sys.executable, str(script), "--list"], cwd=elsewhere, env=env, capture_output=True,
                            text=True, timeout=300)
    assert listed.returncode == 0, listed.stderr[-3000:]
    assert all(v.name in listed.stdout for v in all_variants())
