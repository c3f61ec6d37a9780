"""Raw CUDA C through CuPy: compile once, launch on torch tensors, and nvcc's report on the CPU.

- `CudaSource` is one `kernels_cuda/vNN_name.cu` with the kernel names (template instantiations
  included, e.g. "smem_tiling<32>") the rung launches. CuPy compiles it with NVRTC the first time a
  launch needs it, for the GPU at hand, and caches the binary (in memory and under ~/.cupy).
- `launch` runs one kernel on torch tensors: zero-copy through `__cuda_array_interface__`, on torch's
  current stream (so torch's CUDA events bracket it), after checking the launch shape.
- `compile_report` runs nvcc + ptxas on the CPU for any architecture, no GPU needed, and reads
  registers, shared memory, stack and spills per kernel from `ptxas -v`.
"""

from __future__ import annotations

import ctypes
import hashlib
import math
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import torch

from . import IMPORT_ROOT, PACKAGE_DIR, prebuild
from .validate import Refused

# kernels_cuda/ stands beside the package in a checkout and inside it once installed (package data).
KERNEL_DIR = next((d for d in (IMPORT_ROOT / "kernels_cuda", PACKAGE_DIR / "kernels_cuda") if d.is_dir()),
                  IMPORT_ROOT / "kernels_cuda")
# The one place compile options live, for NVRTC (GPU runs) and nvcc (CPU reports) alike. No
# fast-math: the fp32 rungs are compared with IEEE fp32 cuBLAS.
COMPILE_OPTIONS = ("-std=c++17", f"-I{KERNEL_DIR}")
_INCLUDE = re.compile(r'^\s*#include\s+"([^"]+)"', re.MULTILINE)
MAX_THREADS_PER_BLOCK = 1024
MAX_GRID = (2**31 - 1, 65535, 65535)


@cache
def toolkit_include() -> tuple[str, ...]:
    """-I for the CUDA toolkit's headers when there is a toolkit (CUDA_PATH, CUDA_HOME or nvcc's).

    NVRTC finds the runtime headers that pip's CUDA wheels ship, but those lack some that WMMA's
    <mma.h> includes (crt/mma.h); the toolkit has them.
    """
    nvcc = shutil.which("nvcc")
    for root in (os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), nvcc and str(Path(nvcc).parent.parent)):
        if root and (Path(root) / "include" / "crt" / "mma.h").is_file():
            return (f"-I{Path(root) / 'include'}",)
    return ()


def cupy():
    try:
        import cupy
    except ImportError as exc:
        raise RuntimeError(
            "CuPy is not installed, and it launches the CUDA C kernels: install the wheel that matches "
            "your CUDA driver, `pip install -e .[cuda13]` (cupy-cuda13x) or `pip install -e .[cuda12]` "
            "(cupy-cuda12x)"
        ) from exc
    return cupy


class CudaSource:
    """One rung's .cu file and the kernel names its launcher may ask for.

    `arch`: None for kernels that run on any GPU from sm_80 on (CuPy compiles them for the GPU at hand),
    or an architecture-specific target such as "sm_90a" (wgmma, setmaxnreg), compiled for exactly that.
    """

    def __init__(self, module: str, kernels: Sequence[str], arch: str | None = None, directory: Path | None = None):
        self.stem = module.rpartition(".")[2]
        self.path = (directory or KERNEL_DIR) / f"{self.stem}.cu"
        self.kernels = tuple(kernels)
        self.arch = arch
        self._compiled: dict[tuple[int, str], object] = {}

    def __repr__(self) -> str:
        return f"CudaSource({self.path.name}, kernels={self.kernels}, arch={self.arch})"

    @property
    def archs(self) -> tuple[str, ...]:
        """What the CPU compile report builds for."""
        return (self.arch,) if self.arch else NVCC_ARCHS

    def runs_on(self, capability: tuple[int, int]) -> bool:
        """Whether a GPU of this compute capability can run the kernels (sm_90a code runs on 9.0 only)."""
        return self.arch is None or self.arch.removeprefix("sm_").rstrip("a") == f"{capability[0]}{capability[1]}"

    def included(self) -> list[Path]:
        """The kernels_cuda/ files this .cu pulls in with `#include "..."`, recursively."""
        found: list[Path] = []
        pending = [self.path]
        while pending:
            for name in _INCLUDE.findall(pending.pop().read_text()):
                path = KERNEL_DIR / name
                if path not in found and path.is_file():
                    found.append(path)
                    pending.append(path)
        return found

    def nvrtc_options(self) -> tuple[str, ...]:
        """COMPILE_OPTIONS plus a digest of the included files.

        CuPy keys its kernel cache on the source text and the options, not on included files, so a
        rung that includes another rung's .cu would keep a stale binary after that file changed.
        """
        digest = hashlib.sha256(b"".join(p.read_bytes() for p in self.included())).hexdigest()[:16]
        return (*COMPILE_OPTIONS, *toolkit_include(), f"-DTVC_INCLUDES_DIGEST=0x{digest}")

    def check_present(self) -> None:
        if not self.path.is_file():
            raise RuntimeError(
                f"{self.path} not found: the CUDA C sources ship in the package (implementations/kernels_cuda) "
                "or stand beside it in a checkout (kernels_cuda/); reinstall with `pip install .`"
            )

    def compile_ahead(self, name: str, device: int) -> None:
        """Leave kernel `name`'s compile to an open core/prebuild collection (a search's), which runs it beside the
        others before the first launch. An error stays in its future, unread: the launch compiles again and
        raises it."""
        prebuild.add((self.path, name, device), lambda pool: pool.submit(self.function, name, device))

    def function(self, name: str, device: int):
        """The compiled kernel `name` for CUDA device `device`, compiled on first use.

        Each kernel gets a module of its own, so its compile time is its own, as a Triton
        kernel's is for each specialisation.
        """
        kernel = self._compiled.get((device, name))
        if kernel is None:  # checked once, here, not on every launch
            if name not in self.kernels:
                raise ValueError(f"{self.path.name} has no kernel {name!r}; it instantiates {', '.join(self.kernels)}")
            self.check_present()
            cp = cupy()
            with cp.cuda.Device(device):
                if self.arch is None:
                    module = cp.RawModule(
                        code=self.path.read_text(), options=self.nvrtc_options(), name_expressions=[name])
                    kernel = module.get_function(name)
                else:
                    kernel = self._compile_for_arch(cp, name)
            self._compiled[(device, name)] = kernel
        return kernel

    def _compile_for_arch(self, cp, name: str):
        """NVRTC through cuda-python for an arch-specific target, loaded by CuPy.

        CuPy's RawModule always adds `-arch=sm_XY` for the device at hand (sm_90, never sm_90a), and
        NVRTC refuses a second -arch: so these kernels are compiled here, with the same options.
        """
        try:
            from cuda.bindings import nvrtc
        except ImportError as exc:
            raise RuntimeError(
                f"{self.path.name} targets {self.arch}, which CuPy cannot compile for: install cuda-python "
                "(`pip install cuda-bindings`, in the [cuda13] extra)") from exc

        def check(result):
            err, *values = result
            if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
                raise RuntimeError(f"NVRTC: {err.name} compiling {name} from {self.path.name}{log()}")
            return values[0] if len(values) == 1 else values

        def log():
            size = nvrtc.nvrtcGetProgramLogSize(program)[1]
            text = b" " * size
            nvrtc.nvrtcGetProgramLog(program, text)
            return ":\n" + text.decode(errors="replace").strip()

        program = check(nvrtc.nvrtcCreateProgram(self.path.read_bytes(), self.path.name.encode(), 0, [], []))
        check(nvrtc.nvrtcAddNameExpression(program, name.encode()))
        options = [o.encode() for o in (*self.nvrtc_options(), f"-arch={self.arch}")]
        check(nvrtc.nvrtcCompileProgram(program, len(options), options))
        cubin = b" " * check(nvrtc.nvrtcGetCUBINSize(program))
        check(nvrtc.nvrtcGetCUBIN(program, cubin))
        lowered = check(nvrtc.nvrtcGetLoweredName(program, name.encode())).decode()
        module = cp.cuda.function.Module()
        module.load(cubin)
        return module.get_function(lowered)


def check_launch_shape(grid: tuple[int, ...], block: tuple[int, ...]) -> None:
    """Refuse a launch CUDA would reject, with the reason, before the driver sees it."""
    threads = math.prod(block)
    if threads > MAX_THREADS_PER_BLOCK:
        dims = "×".join(map(str, block))
        raise Refused(
            f"a block of {dims} = {threads} threads cannot launch: CUDA allows at most "
            f"{MAX_THREADS_PER_BLOCK} threads per block"
        )
    check_grid(grid)


def check_grid(grid: tuple[int, ...]) -> None:
    """Grid limits are the same for CUDA blocks and Triton programs: x < 2^31, y and z <= 65535."""
    for axis, (size, limit) in enumerate(zip(grid, MAX_GRID)):
        if not 1 <= size <= limit:
            raise Refused(
                f"grid dimension {'xyz'[axis]} = {size:,} is outside CUDA's limit of 1..{limit:,}: "
                "the matrix is too large along that axis for this kernel's launch shape"
            )


def _kernel_arg(value):
    # A tensor goes in as its device address: CuPy has no bfloat16 dtype, so it could not wrap a bf16
    # tensor as an array, and a kernel parameter `const T*` is just the address. The caller keeps the
    # tensor alive (bind's closure holds `args`).
    if isinstance(value, torch.Tensor):
        return np.uint64(value.data_ptr())
    if isinstance(value, np.generic):  # np.void: a struct by value, such as a TMA tensor map
        return value
    raise TypeError(
        f"CUDA kernel arguments are tensors or numpy scalars of the C parameter's type (np.int32, ...), "
        f"got {type(value).__name__}: CuPy would pass a bare Python int as a 64-bit value"
    )


LAST_LAUNCH = [""]  # the last CUDA C launch of this process: what a fault report names
STATIC_SMEM_LIMIT = 48 * 1024  # beyond this a kernel's dynamic shared memory must be opted into


def bind(source: CudaSource, name: str, grid, block, args: Sequence, shared_mem: int = 0) -> Callable[[], object]:
    """Check the launch, convert the arguments once, and return a function that only launches.

    The returned function launches `name` on torch's current stream (so torch's CUDA events and
    graph capture see it), compiling it on first use, and returns the CuPy kernel. `shared_mem`:
    bytes of dynamic shared memory (`extern __shared__`); above 48 KB the kernel's limit is raised.
    """
    grid, block = tuple(int(g) for g in grid), tuple(int(b) for b in block)
    check_launch_shape(grid, block)
    if name not in source.kernels:
        raise ValueError(f"{source.path.name} has no kernel {name!r}; it instantiates {', '.join(source.kernels)}")
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    device = tensors[0].device.index
    if any(t.device != tensors[0].device for t in tensors):
        raise ValueError(f"every tensor argument of {name} must be on {tensors[0].device}")
    cp = cupy()
    kernel_args = tuple(_kernel_arg(a) for a in args)
    source.compile_ahead(name, device)
    described = f"{name} in {source.path.name}, grid {grid}, block {block}, {shared_mem} B dynamic shared memory"

    def run():
        LAST_LAUNCH[0] = described
        kernel = source.function(name, device)
        with cp.cuda.Device(device), _cupy_stream(cp, torch.cuda.current_stream(device)):
            if shared_mem > STATIC_SMEM_LIMIT:
                cp.cuda.driver.funcSetAttribute(
                    function_pointer(kernel), cp.cuda.driver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    shared_mem)
            kernel(grid, block, kernel_args, shared_mem=shared_mem)
        return kernel

    run.tensors = tuple(tensors)  # kernel_args holds their addresses: they must live as long as `run`
    return run


def function_pointer(kernel) -> int:
    """The CUfunction behind a CuPy RawKernel or a Module's Function."""
    return kernel.kernel.ptr if hasattr(kernel, "kernel") else kernel.ptr


def tensor_map(t: torch.Tensor, box: tuple[int, int], l2_promotion: int = 256) -> np.void:
    """A TMA tensor map (the driver's 128-byte CUtensorMap) for a row-major fp16, bf16, fp32 or fp8 (e4m3, as
    bytes) matrix, or a batch of them (3-D, each matrix row-major; the batch may be strided).

    `box` = (columns, rows) of the tile one copy moves, innermost first (one matrix of a batch at a time:
    a 3-D map's box is columns × rows × 1, its coordinates column, row, matrix); a box row is at most 128
    bytes (128 fp8, 64 16-bit or 32 fp32 elements), swizzled in 128-byte patterns in shared memory, and parts of a
    box outside the matrix read as zeros, never the next matrix's. TMA needs the row pitch (and a batch's
    matrix pitch) to be a multiple of 16 bytes (the launchers pad when not). `l2_promotion` (0, 64, 128
    or 256 bytes): how much L2 fetches from DRAM at once on a miss of a copy. Built by
    cuTensorMapEncodeTiled from cuda-python; returned as a numpy struct that CuPy passes by value.
    """
    from cuda.bindings import driver

    size = t.element_size()
    types = {torch.float16: driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
             torch.bfloat16: driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
             torch.float32: driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
             torch.float8_e4m3fn: driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_UINT8}
    pitches = [stride * size for stride in reversed(t.stride()[:-1])]  # bytes, innermost first: row, matrix
    if (t.dtype not in types or t.dim() not in (2, 3) or t.stride(-1) != 1 or any(p % 16 or p <= 0 for p in pitches)
            or t.data_ptr() % 16):
        raise ValueError("tensor_map takes a row-major fp16, bf16, fp32 or fp8 matrix (or a 3-D batch of them) whose "
                         "rows (and matrices) start 16 bytes apart or a multiple of that, none at a stride of 0; got "
                         f"{t.dtype} {tuple(t.shape)}, strides {t.stride()}")
    if box[0] * size > 128:
        raise ValueError(f"a box row of {box[0]} elements is {box[0] * size} bytes: the 128-byte swizzle allows 128")
    promotions = {0: driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_NONE,
                  64: driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_64B,
                  128: driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                  256: driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B}
    if l2_promotion not in promotions:
        raise ValueError(f"l2_promotion is 0, 64, 128 or 256 bytes, not {l2_promotion}")
    u32, u64 = driver.cuuint32_t, driver.cuuint64_t
    rank = t.dim()
    err, encoded = driver.cuTensorMapEncodeTiled(
        types[t.dtype], u32(rank), t.data_ptr(), [u64(n) for n in reversed(t.shape)], [u64(p) for p in pitches],
        [u32(x) for x in box] + [u32(1)] * (rank - 2), [u32(1)] * rank,
        driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
        promotions[l2_promotion],
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuTensorMapEncodeTiled failed: {err.name} (shape {'×'.join(map(str, t.shape))}, box {box})")
    raw = np.frombuffer(ctypes.string_at(encoded.getPtr(), 128), dtype=np.uint64)
    packed = np.zeros((), dtype=TENSOR_MAP_DTYPE)
    packed["words"] = raw
    return packed[()]


TENSOR_MAP_DTYPE = np.dtype([("words", np.uint64, (16,))], align=True)


def rows_aligned(*matrices: torch.Tensor) -> np.int32:
    """1 if every row of every (row-major) matrix, or batch of them (3-D), starts on a 16-byte boundary, so
    16-byte accesses (float4, eight halves, 16-byte cp.async) are legal: row length a multiple of 16 bytes,
    a 16-byte-aligned base, and in a batch a matrix pitch a multiple of 16 bytes."""
    return np.int32(all((m.shape[-1] * m.element_size()) % 16 == 0 and m.data_ptr() % 16 == 0
                        and (m.dim() == 2 or (m.stride(0) * m.element_size()) % 16 == 0) for m in matrices))


def cpp_bool(value) -> str:
    """A template argument for a C++ bool parameter (kernel names are C++ expressions)."""
    return "true" if value else "false"


_streams: dict[int, object] = {}


def _cupy_stream(cp, stream: torch.cuda.Stream):
    """torch's stream as a CuPy stream (made once per stream), to make it CuPy's current stream."""
    wrapped = _streams.get(stream.cuda_stream)
    if wrapped is None:
        if hasattr(cp.cuda.Stream, "from_external") and hasattr(stream, "__cuda_stream__"):
            wrapped = cp.cuda.Stream.from_external(stream)  # CuPy >= 14: the CUDA stream protocol
        else:
            wrapped = cp.cuda.ExternalStream(stream.cuda_stream, stream.device_index)
        _streams[stream.cuda_stream] = wrapped
    return wrapped


# ---- nvcc compile report (CPU) -----------------------------------------------------------------------

NVCC_ARCHS = ("sm_80", "sm_90")


@dataclass(frozen=True)
class PtxasReport:
    kernel: str
    arch: str
    registers: int
    smem_bytes: int
    stack_bytes: int
    spill_stores: int
    spill_loads: int
    compile_s: float  # nvcc's wall time for the whole .cu (all its kernels)

    @property
    def spills(self) -> int:
        return self.spill_stores + self.spill_loads


def nvcc_path() -> str:
    path = shutil.which("nvcc")
    if path is None:
        raise RuntimeError("nvcc not found: install the CUDA toolkit (nvcc) for compile reports of the .cu rungs")
    return path


_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(\w+)'")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")


def _demangle(names: list[str]) -> dict[str, str]:
    """Itanium-mangled name -> "kernel<args>" as written in a name expression (c++filt, binutils)."""
    mangled = [n for n in names if n.startswith("_Z")]
    if not mangled:
        return {n: n for n in names}
    tool = shutil.which("c++filt")
    if tool is None:
        raise RuntimeError("c++filt not found: install binutils to read the names of templated kernels")
    plain = subprocess.run([tool], input="\n".join(mangled), capture_output=True, text=True, check=True).stdout
    out = {n: n for n in names}
    for m, p in zip(mangled, plain.splitlines()):
        signature = p.removeprefix("void ").split("(")[0]
        out[m] = re.sub(r"\s+", "", signature)
    return out


def parse_ptxas(text: str, kernel: str, arch: str, compile_s: float, where: str) -> PtxasReport:
    """ptxas -v's lines for one entry function (registers, stack, spills, static shared memory)."""
    frame, used, smem = _FRAME.search(text), _USED.search(text), _SMEM.search(text)
    if frame is None or used is None:
        raise RuntimeError(f"could not read ptxas's report for {kernel} in {where}:\n{text}")
    return PtxasReport(
        kernel=kernel, arch=arch, registers=int(used.group(1)), smem_bytes=int(smem.group(1)) if smem else 0,
        stack_bytes=int(frame.group(1)), spill_stores=int(frame.group(2)), spill_loads=int(frame.group(3)),
        compile_s=compile_s,
    )


@cache
def compile_report(source: CudaSource, arch: str) -> tuple[PtxasReport, ...]:
    """Compile `source` for `arch` with nvcc (cubin only, no GPU needed) and parse ptxas's report."""
    nvcc = nvcc_path()
    source.check_present()
    with tempfile.TemporaryDirectory() as tmp:
        wrapper = Path(tmp) / f"{source.stem}_instantiate.cu"
        # Taking each kernel's address makes nvcc instantiate exactly the names the launcher uses.
        addresses = ", ".join(f"(void*)&{k}" for k in source.kernels)
        wrapper.write_text(f'#include "{source.path}"\nvoid* const tvc_kernels[] = {{{addresses}}};\n')
        target = arch.removeprefix("sm_")
        cmd = [nvcc, "-cubin", f"-gencode=arch=compute_{target},code=sm_{target}", *COMPILE_OPTIONS,
               "-Xptxas", "-v", "-diag-suppress", "177",
               "-o", str(Path(tmp) / "out.cubin"), str(wrapper)]
        start = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"nvcc failed on {source.path.name} for {arch}:\n{proc.stderr}")
    blocks = _ENTRY.split(proc.stderr)[1:]  # [name, arch, text, name, arch, text, ...]
    names = blocks[0::3]
    readable = _demangle(names)
    reports = []
    for name, entry_arch, text in zip(blocks[0::3], blocks[1::3], blocks[2::3]):
        reports.append(parse_ptxas(text, readable[name], entry_arch, elapsed, where=source.path.name))
    order = {k: i for i, k in enumerate(source.kernels)}  # the launcher's order; unlisted kernels last
    return tuple(sorted(reports, key=lambda r: order.get(r.kernel, len(order))))
