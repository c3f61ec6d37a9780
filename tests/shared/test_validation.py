"""Bad input gets a clear error or a correct result: never a crash, a hang or a silent wrong answer."""

import numpy as np
import pytest
import torch

from implementations import all_variants, select
from implementations.core.check import PRECISIONS, make_scales, reference
from implementations.core.cuda_c import CudaSource, _kernel_arg, check_grid, check_launch_shape
from implementations.core.validate import check_operands

from ..helpers import gpu_skip_reason

V03 = select("smem_tiling")[0]
LANG = "triton"  # runs here (interpreter) and on a GPU; the CUDA side shares the same checks


def operands(M, N, K, device, dtype=torch.float32):
    return torch.randn(M, K, device=device).to(dtype), torch.randn(K, N, device=device).to(dtype)


def first_dtype(variant) -> torch.dtype:
    return PRECISIONS[variant.dtypes[0]].dtype


def scales_for(variant, device, M, N):
    """The scales its first dtype takes for an M×N product (fp8's), or None."""
    return make_scales(PRECISIONS[variant.dtypes[0]], device, 1, M, N)


def test_inner_dimensions_must_agree(device):
    with pytest.raises(ValueError, match=r"inner dimensions differ: A is 4×5 and B is 6×3"):
        V03.matmul(LANG, torch.randn(4, 5, device=device), torch.randn(6, 3, device=device))


@pytest.mark.parametrize("shape", [(8,), (1, 2, 3, 8)])
def test_operands_must_be_matrices(shape, device):
    with pytest.raises(ValueError, match=r"must be a matrix \(2-D\) or a batch of matrices \(3-D\)"):
        V03.matmul(LANG, torch.randn(*shape, device=device), torch.randn(8, 8, device=device))


def test_operands_must_be_tensors():
    with pytest.raises(TypeError, match="must be a torch.Tensor"):
        V03.matmul(LANG, np.ones((4, 4), np.float32), torch.randn(4, 4))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.int32])
def test_unsupported_dtypes_are_named(dtype, device):
    a = torch.ones(4, 4, dtype=dtype, device=device)
    with pytest.raises(TypeError, match="takes float32 operands"):
        V03.matmul(LANG, a, a)


def test_mixed_dtypes_are_refused(device):
    with pytest.raises(TypeError, match="share a dtype"):
        V03.matmul(LANG, torch.randn(4, 4, device=device), torch.randn(4, 4, device=device).double())


@pytest.mark.parametrize("variant", all_variants(), ids=lambda v: v.stem)
def test_cpu_tensors_handed_to_cuda_c_say_what_to_do(variant):
    a, b = operands(8, 8, 8, "cpu", first_dtype(variant))
    with pytest.raises(ValueError, match=r"needs CUDA tensors, got tensors on cpu: move them with \.cuda\(\)"):
        variant.matmul("cuda", a, b)


def test_cpu_tensors_handed_to_compiled_triton_say_what_to_do():
    a, b = operands(8, 8, 8, "cpu")
    with pytest.raises(ValueError, match="TRITON_INTERPRET=1"):
        check_operands(a, b, dtypes=[torch.float32], lang="triton", triton_on_cpu=False)


def test_the_interpreter_is_read_off_the_kernels_themselves():
    assert V03.triton_interpreted == (not torch.cuda.is_available())


LANGS_HERE = ["triton", pytest.param("cuda", marks=pytest.mark.gpu)]


@pytest.mark.parametrize("lang", LANGS_HERE)
@pytest.mark.parametrize("M, N, K", [(0, 5, 7), (5, 0, 7), (0, 0, 0), (5, 7, 0)])
@pytest.mark.parametrize("variant", [V03, *select("14-15,19")], ids=lambda v: v.stem)
def test_empty_dimensions_give_the_right_result(variant, M, N, K, lang, device):
    """K = 0 has no TMA tensor map (a zero-width matrix): v14, v15 and v19 write the zeros themselves."""
    skip_where_unsupported(variant, lang, device)
    a, b = operands(M, N, K, device, first_dtype(variant))
    c = variant.matmul(lang, a, b, scales=scales_for(variant, device, M, N))
    assert c.shape == (M, N)
    assert torch.equal(c.double(), reference(a, b)), "K = 0 is an empty sum: all zeros, written by the kernel"


@pytest.mark.parametrize("lang", LANGS_HERE)
@pytest.mark.parametrize("variant", [v for v in all_variants() if not v.expect_wrong], ids=lambda v: v.stem)
def test_transposed_and_sliced_operands_are_made_contiguous(variant, lang, device):
    skip_where_unsupported(variant, lang, device)
    dtype = first_dtype(variant)
    a_t = torch.randn(30, 21, device=device).to(dtype).t()  # 21×30, column-major
    b_sliced = torch.randn(30, 40, device=device).to(dtype)[:, ::2]  # 30×20, stride 2
    assert not a_t.is_contiguous() and not b_sliced.is_contiguous()
    scales = scales_for(variant, device, 21, 20)
    c = variant.matmul(lang, a_t, b_sliced, scales=scales)
    ref = reference(a_t, b_sliced, scales=scales)
    assert (c.double() - ref).norm() / ref.norm() < PRECISIONS[variant.dtypes[0]].bound(30)


def skip_where_unsupported(variant, lang, device):
    if device.type == "cuda" and gpu_skip_reason(variant, lang, variant.dtypes[0]):
        pytest.skip(gpu_skip_reason(variant, lang, variant.dtypes[0]))


@pytest.mark.parametrize("M, N, K", [(2**16, 2**16, 1), (1, 2**16, 2**16), (2**16, 1, 2**16)])
def test_sizes_beyond_32_bit_indexing_are_refused(M, N, K, device):
    # expand() gives huge shapes over a one-element storage: nothing large is allocated
    a = torch.zeros(1, 1, device=device).expand(M, K)
    b = torch.zeros(1, 1, device=device).expand(K, N)
    with pytest.raises(ValueError, match="too large for the 32-bit indexing"):
        check_operands(a, b, dtypes=[torch.float32], lang=LANG, triton_on_cpu=True)


def test_a_dimension_without_room_for_a_tile_of_overrun_is_refused(device):
    a = torch.zeros(1, 1, device=device).expand(2**31 - 100, 1)
    b = torch.zeros(1, 1, device=device).expand(1, 1)
    with pytest.raises(ValueError, match="too large for 32-bit indexing with tile overrun"):
        check_operands(a, b, dtypes=[torch.float32], lang=LANG, triton_on_cpu=True)


@pytest.mark.parametrize("tile, error", [(0, ValueError), (-16, ValueError), ("32", TypeError), (32.0, TypeError)])
@pytest.mark.parametrize("lang", ["cuda", "triton"])
def test_tile_must_be_a_positive_int(tile, error, lang):
    a, b = operands(32, 32, 32, "cpu")
    launcher = V03.launcher(lang)
    with pytest.raises(error, match="TILE must be"):
        launcher(a, b, torch.empty(32, 32), TILE=tile)


def test_operands_that_require_grad_are_accepted(device):
    a = torch.randn(20, 30, device=device, requires_grad=True)
    b = torch.randn(30, 10, device=device)
    c = V03.matmul(LANG, a, b)
    ref = reference(a.detach(), b)
    assert (c.double() - ref).norm() / ref.norm() < 1e-6


def test_a_block_too_large_to_launch_is_refused_with_the_reason():
    with pytest.raises(ValueError, match=r"64×64 = 4096 threads cannot launch: CUDA allows at most 1024"):
        check_launch_shape((1, 1), (64, 64))


@pytest.mark.parametrize("grid", [(2**31, 1), (1, 65536), (1, 1, 70000), (0, 1)])
def test_grids_beyond_cudas_limits_are_refused(grid):
    with pytest.raises(ValueError, match="outside CUDA's limit"):
        check_grid(grid)


def test_cuda_tile_64_names_the_thread_limit_before_touching_a_gpu():
    a, b = operands(64, 64, 64, "cpu")
    c = torch.empty(64, 64)
    with pytest.raises(ValueError, match="4096 threads cannot launch"):
        V03.cuda(a, b, c, TILE=64)


def test_triton_tile_must_suit_tl_dot(device):
    a, b = operands(16, 16, 16, device)
    with pytest.raises(ValueError, match="at least 16"):
        V03.matmul(LANG, a, b, TILE=8)


def test_triton_tile_64_works_where_cuda_cannot(device):
    a, b = operands(70, 65, 66, device)
    ref = reference(a, b)
    c = V03.matmul(LANG, a, b, TILE=64)
    assert (c.double() - ref).norm() / ref.norm() < 1e-6


def test_a_kernel_name_the_source_does_not_instantiate_is_refused():
    source = CudaSource("implementations.v03_smem_tiling", ["smem_tiling<16>"])
    with pytest.raises(ValueError, match="has no kernel 'smem_tiling<64>'"):
        source.function("smem_tiling<64>", 0)


def test_bare_python_ints_are_refused_as_kernel_arguments():
    assert _kernel_arg(np.int32(3)) == 3
    with pytest.raises(TypeError, match="np.int32"):
        _kernel_arg(3)
