"""The environment that goes with every saved result: device, clocks, driver and library versions."""

from __future__ import annotations

import datetime
import importlib.metadata
import platform
import subprocess

import torch



def set_cublas_math(tf32: bool) -> str:
    """Set cuBLAS's modes explicitly and return how, for the record: fp32 as TF32 or IEEE, and 16-bit products
    reduced in fp32 as the rungs do (torch lets cuBLAS reduce split-K partial sums in bf16 or fp16 by default,
    which fails the check at shapes where it splits K)."""
    matmul = torch.backends.cuda.matmul
    matmul.allow_bf16_reduced_precision_reduction = False
    matmul.allow_fp16_reduced_precision_reduction = False
    reductions = "16-bit reduced-precision reductions off"
    if hasattr(matmul, "fp32_precision"):  # torch >= 2.9
        matmul.fp32_precision = "tf32" if tf32 else "ieee"
        return f"torch.backends.cuda.matmul.fp32_precision = {matmul.fp32_precision!r}; {reductions}"
    matmul.allow_tf32 = tf32
    return f"torch.backends.cuda.matmul.allow_tf32 = {tf32}; {reductions}"


def tf32_enabled() -> bool:
    """Read the mode through the API that set it: torch >= 2.9 refuses to read the legacy flag after
    the new one was set to "tf32"."""
    matmul = torch.backends.cuda.matmul
    return matmul.fp32_precision == "tf32" if hasattr(matmul, "fp32_precision") else matmul.allow_tf32


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _cupy_version() -> str:
    names = [d.metadata["Name"] for d in importlib.metadata.distributions()]
    found = sorted({n for n in names if n and n.lower().startswith("cupy")})
    return ", ".join(f"{n} {_version(n)}" for n in found) or "not installed"


def _nvidia_smi(index: int) -> dict[str, str]:
    fields = ["clocks.sm", "clocks.max.sm", "clocks.mem", "power.draw", "power.limit", "temperature.gpu",
              "driver_version"]
    try:
        out = subprocess.run(
            ["nvidia-smi", f"--id={index}", f"--query-gpu={','.join(fields)}", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20, check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return {"nvidia-smi": "unavailable"}
    return dict(zip(fields, (v.strip() for v in out.strip().split(","))))


def environment(device: torch.device | None = None) -> dict[str, str]:
    """A flat record of where the numbers came from."""
    env = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": platform.node(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "triton": _version("triton"),
        "cupy": _cupy_version(),
        "numpy": _version("numpy"),
    }
    if device is None or device.type != "cuda":
        env["device"] = "CPU only (no CUDA device): nothing is timed"
        return env
    index = device.index if device.index is not None else torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    env.update({
        "device": props.name,
        "compute capability": f"{props.major}.{props.minor}",
        "SMs": str(props.multi_processor_count),
        "memory": f"{props.total_memory / 2**30:.0f} GiB",
        "L2": f"{getattr(props, 'L2_cache_size', 0) / 2**20:.0f} MiB",
        "CUDA (torch)": str(torch.version.cuda),
        "cuBLAS fp32 TF32": "on" if tf32_enabled() else "off",
    })
    env.update(_nvidia_smi(index))
    return env


def end_of_run(device: torch.device) -> dict[str, str]:
    """Clocks, power and temperature sampled again after the sweep: the start shows an idle GPU."""
    sample = _nvidia_smi(device.index if device.index is not None else torch.cuda.current_device())
    return {f"{key} at end": sample[key] for key in ("clocks.sm", "power.draw", "temperature.gpu") if key in sample}
