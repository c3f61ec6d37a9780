"""compare.py --ncu and --sanitize on the CPU: the child's command line, the tools' command lines and
kernel filters, and the reading of their output (canned, as the tools print it), missing tools and
refused counters included."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from implementations import all_variants, select
from implementations.tools import ncu, profile, sanitize

REPO = Path(__file__).resolve().parents[2]
ALL_IMPLS = ("cuda", "triton", "cublas")
TORCH_KERNELS = ["vectorized_elementwise_kernel", "at::native::vectorized_elementwise_kernel", "elementwise_kernel",
                 "unrolled_elementwise_kernel", "distribution_elementwise_grid_stride_kernel", "CatArrayBatchedCopy",
                 "reduce_kernel", "fill"]
CUBLAS_KERNELS = [
    "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8_stage3_warpsize4x2x1_ffma_aligna4_alignc4_execute_"
    "kernel__51a_cublas",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_"
    "cublas",
    "nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NNT",
    "cutlass_80_tensorop_s1688gemm_128x128_16x5_nn_align4",
    "Kernel2",
    "ampere_sgemm_128x64_nn",
    "cublasLt::splitKreduce_kernel",
]


def label(i, rung, name, config, impl, size, tile, dtype="fp32"):
    M, N, K = size
    record = {"rung": rung, "name": name, "config": config, "impl": impl, "M": M, "N": N, "K": K, "dtype": dtype}
    return f"profiled {i}: {json.dumps({**record, 'tile': tile})}"


# ---- the child ----------------------------------------------------------------------------------------


def test_child_help_works_without_a_gpu():
    proc = subprocess.run([sys.executable, "-m", "implementations.tools.profile", "--help"], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    for option in ("--rungs", "--impl", "--sizes", "--dtype", "--config-json", "--no-warmup"):
        assert option in proc.stdout


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message given where there is no GPU")
def test_child_says_it_needs_a_gpu():
    proc = subprocess.run([sys.executable, "-m", "implementations.tools.profile", "--rungs", "3", "--sizes", "64"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert "needs a CUDA device" in proc.stderr
    assert "profiled" not in proc.stdout


@pytest.mark.parametrize("argv, message", [
    (["--rungs", "42"], "no rung matches '42'"),
    (["--impl", "cpu"], "launch no GPU kernel"),
    (["--config-json", "{TILE: 16}"], "--config-json"),
    (["--config-json", '{"TILE": "16"}'], "an object of integers"),
    (["--sizes", "12x4"], "neither N nor MxNxK"),
])
def test_child_refuses_bad_arguments(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        profile.main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_child_command():
    cmd = profile.child_command(select("3-4"), ("cuda", "triton"), [(64, 64, 64), (17, 33, 5)], "fp32",
                                 config={"TILE": 16}, warmup=False)
    assert cmd == [sys.executable, "-m", "implementations.tools.profile", "--rungs", "v03,v04", "--impl", "cuda,triton",
                   "--sizes", "64x64x64,17x33x5", "--dtype", "fp32", "--layout", "nn", "--config-json", '{"TILE": 16}',
                   "--no-warmup"]
    assert profile.child_command(select("1"), ("cublas",), [(8, 8, 8)], "bf16")[-8:] == [
        "--impl", "cublas", "--sizes", "8x8x8", "--dtype", "bf16", "--layout", "nn"]
    batched = profile.child_command(select("11"), ("cuda",), [(8, 8, 8)], "fp32", layouts=("nt", "tn"), batch=64,
                                    shared="b")
    assert batched[-6:] == ["--layout", "nt,tn", "--batch", "64", "--shared", "b"]
    args = profile.build_parser().parse_args(batched[3:])
    assert (args.layout, args.batch, args.shared) == (("nt", "tn"), 64, "b")


def test_batches_and_layouts_are_labelled_and_their_traffic_counts_every_product():
    assert profile.problem_label(512, 512, 512) == "512x512x512"
    assert profile.problem_label(512, 256, 128, "nt", 64) == "64×512x256x128 nt"
    record = {"rung": "v11", "name": "autotuned", "config": "", "impl": "cuda", "M": 512, "N": 512, "K": 512,
              "dtype": "fp32", "layout": "tn", "batch": 64, "tile": [128, 128]}
    rows, notes = ncu.match([ncu.Launch("autotuned", 0, {"dram_read": 1e6, "dram_write": 1e6})], {0: record})
    assert notes == [] and rows[0].size == "64×512x512x512 tn"
    one = 4 * (512 * 512 * 4 + 512 * 512 * 4) + 4 * 512 * 512  # A and B read 512 / 128 times, C written
    assert ncu.traffic_table(rows).splitlines()[-1].split()[-4:-1] == ["128x128", f"{64 * one / 1e6:,.1f}", "2.0"]


def test_read_child_output():
    text = "\n".join([
        "some library chatter",
        label(0, "cuBLAS", "torch.matmul", "", "cublas", (64, 64, 64), None),
        label(1, "v03", "smem_tiling", "TILE=16", "cuda", (64, 64, 64), [16, 16]),
        'skipped: {"rung": "v14", "name": "wgmma_tma", "config": "", "impl": "cuda", "M": 64, "N": 64, "K": 64, '
        '"dtype": "fp32", "reason": "supports fp16, bf16 only"}',
        'failed: {"rung": "v03", "name": "smem_tiling", "config": "TILE=32", "impl": "triton", "M": 64, "N": 64, '
        '"K": 64, "dtype": "fp32", "launch": 2, "error": "RuntimeError: boom"}',
    ])
    out = profile.read_child_output(text)
    assert sorted(out.labels) == [0, 1]
    assert out.labels[1]["config"] == "TILE=16" and out.labels[1]["tile"] == [16, 16]
    assert out.notes == ["v14 cuda 64x64x64: skipped: supports fp16, bf16 only",
                         "v03 TILE=32 triton 64x64x64: failed: RuntimeError: boom"]


def test_kernel_names_come_from_the_rungs():
    v = {x.tag: x for x in all_variants()}
    assert profile.cuda_kernel_names(v["v03"]) == ("smem_tiling",)  # smem_tiling<8>, <16>, <32>: one name
    assert profile.cuda_kernel_names(v["v13"]) == ("mma_sync", "mma_sync_tf32")
    assert profile.triton_kernel_names(v["v03"]) == ("smem_tiling_kernel",)
    assert profile.triton_kernel_names(v["v04"]) == ("smem_no_sync_kernel",)
    assert "smem_tiling_kernel" in profile.triton_kernel_names(v["v07"])  # v03's kernel, through its launcher
    assert "autotuned_kernel" in profile.triton_kernel_names(v["v11"])  # a candidate of its search


# ---- Nsight Compute: command and filter ----------------------------------------------------------------


def pairs(cmd):
    return set(zip(cmd, cmd[1:]))


def test_ncu_command(monkeypatch, tmp_path):
    monkeypatch.setattr(shutil, "which", lambda name: f"/usr/local/cuda/bin/{name}")
    variants = select("3-4")
    cmd = ncu.ncu_command(variants, ALL_IMPLS, [(4096, 4096, 4096)], "fp32", tmp_path / "ncu.csv")
    assert cmd[0] == "/usr/local/cuda/bin/ncu"
    flags = pairs(cmd)
    for pair in [("--clock-control", "none"), ("--nvtx-include", "tvc/"), ("--kernel-name-base", "function"),
                 ("--page", "raw"), ("--print-units", "base"), ("--target-processes", "application-only"),
                 ("--log-file", str(tmp_path / "ncu.csv")), ("--kernel-name", ncu.kernel_regex(variants, ALL_IMPLS))]:
        assert pair in flags
    assert "--nvtx" in cmd and "--csv" in cmd
    metrics = cmd[cmd.index("--metrics") + 1].split(",")
    assert metrics == ["gpu__time_duration.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                       "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "dram__bytes_read.sum",
                       "dram__bytes_write.sum", "sm__warps_active.avg.pct_of_peak_sustained_active"]
    child = profile.child_command(variants, ALL_IMPLS, [(4096, 4096, 4096)], "fp32")
    assert cmd[-len(child):] == child


def matches(regex: str, name: str) -> bool:
    assert regex.startswith("regex:")
    return re.search(regex.removeprefix("regex:"), name) is not None


def test_ncu_filter_keeps_every_rung_kernel_and_cublas_but_not_torch_helpers():
    regex = ncu.kernel_regex(all_variants(), ALL_IMPLS)
    for v in all_variants():
        for kernel in v.cuda_source.kernels:  # "smem_tiling<32>": ncu's function basis drops the template
            assert matches(regex, kernel.split("<")[0]), kernel
        for name in profile.triton_kernel_names(v):
            assert matches(regex, name), name
    for name in CUBLAS_KERNELS:
        assert matches(regex, name), name
    for name in TORCH_KERNELS:
        assert not matches(regex, name), name


def test_ncu_filter_follows_the_chosen_languages():
    v03 = select("3")
    cuda_only = ncu.kernel_regex(v03, ("cuda",))
    assert cuda_only == "regex:^(smem_tiling)$"
    assert not matches(cuda_only, "smem_tiling_kernel") and not matches(cuda_only, CUBLAS_KERNELS[0])
    assert matches(ncu.kernel_regex(v03, ("triton",)), "smem_tiling_kernel")
    assert not matches(ncu.kernel_regex(select("7"), ("cuda",)), "vectorized_elementwise_kernel")


# ---- Nsight Compute: reading its CSV ------------------------------------------------------------------

HEADER = ('"ID","Process ID","Process Name","Host Name",'
          '"thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg",'
          '"Id:Domain:Start/Stop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg","Kernel Name","Context","Stream",'
          '"Block Size","Grid Size","Device","CC","dram__bytes_read.sum","dram__bytes_write.sum",'
          '"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed","gpu__time_duration.sum",'
          '"sm__throughput.avg.pct_of_peak_sustained_elapsed","sm__warps_active.avg.pct_of_peak_sustained_active"')
UNITS = '"","","","","","","","","","","","","","byte","byte","%","ns","%","%"'  # as on the H100 (docs/results)


def csv_row(i, launch, kernel, block, grid, read, write, mem, time, sm, occupancy):
    nvtx = (f'41230  ""<default domain>:tvc:none:none:none:none:none:none""  '
            f'""<default domain>:tvc#{launch}:none:none:none:none:none:none"" ')
    cells = [str(i), "41230", "python3.11", "127.0.0.1", nvtx, "", kernel, "1", "7", block, grid, "0", "9.0",
             read, write, mem, time, sm, occupancy]
    return ",".join(f'"{c}"' for c in cells)


GEMM = CUBLAS_KERNELS[0]
SPLITK = ("void cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float, false, true, false>"
          "(cublasLt::cublasSplitKParams<float>, const float *, const float *, float *, const float *, const float *, "
          "const float *, const float *, float *, void *, long, float *, int *)")
SMEM = "void smem_tiling<32>(const float *, const float *, float *, int, int, int)"
CANNED_CSV = "\n".join([
    "==PROF== Connected to process 41230 (/usr/bin/python3.11)",
    f'==PROF== Profiling "{GEMM}" - 0: 0%....50%....100% - 9 passes',
    '==PROF== Profiling "splitKreduce_kernel" - 1: 0%....50%....100% - 9 passes',
    '==PROF== Profiling "smem_tiling" - 2: 0%....50%....100% - 9 passes',
    '==PROF== Profiling "smem_tiling" - 3: 0%....50%....100% - 9 passes',
    "==PROF== Disconnected from process 41230",
    HEADER,
    UNITS,
    csv_row(0, 0, GEMM, "(256, 1, 1)", "(16, 32, 1)", "201,457,664", "67,108,864", "62.17", "2,661,536", "93.80",
            "16.41"),
    csv_row(1, 0, SPLITK, "(128, 1, 1)", "(512, 1, 1)", "134,217,728", "67,108,864", "88.02", "41,344", "12.50",
            "45.10"),
    csv_row(2, 1, SMEM, "(32, 32, 1)", "(128, 128, 1)", "3,221,225,472", "67,108,864", "95.31", "15,229,472",
            "95.60", "98.77"),
    csv_row(3, 3, SMEM, "(16, 16, 1)", "(256, 256, 1)", "n/a", "67,108,864", "90.00", "16,836,000", "91.00",
            "97.00"),
    "",
])
SIZE = (4096, 4096, 4096)
CANNED_STDOUT = "\n".join([
    label(0, "cuBLAS", "torch.matmul", "", "cublas", SIZE, None),
    label(1, "v03", "smem_tiling", "TILE=32", "cuda", SIZE, [32, 32]),
    label(2, "v03", "smem_tiling", "TILE=32", "triton", SIZE, [32, 32]),
    'failed: {"rung": "v03", "name": "smem_tiling", "config": "TILE=16", "impl": "cuda", "M": 4096, "N": 4096, '
    '"K": 4096, "dtype": "fp32", "launch": 3, "error": "RuntimeError: CUDA error: unspecified launch failure"}',
])


def test_short_kernel_name():
    assert ncu.short_kernel_name(SMEM) == "smem_tiling<32>"
    assert ncu.short_kernel_name("smem_tiling_kernel") == "smem_tiling_kernel"
    parens_in_template = "void mergeSort<(unsigned int)1>(unsigned int *, int)"
    assert ncu.short_kernel_name(parens_in_template) == "mergeSort<(unsigned int)1>"


def test_parse_raw_csv():
    launches = ncu.parse_raw_csv(CANNED_CSV)
    assert [(x.kernel, x.launch) for x in launches] == [
        (GEMM, 0), ("cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float, false, true, false>", 0),
        ("smem_tiling<32>", 1), ("smem_tiling<32>", 3)]
    assert launches[2].values == {"time_ns": 15229472.0, "sm_pct": 95.6, "mem_pct": 95.31, "dram_read": 3221225472.0,
                                  "dram_write": 67108864.0, "occupancy_pct": 98.77}
    assert launches[3].values["dram_read"] is None  # "n/a"


def test_parse_raw_csv_scales_units_and_finds_no_table():
    text = "\n".join([HEADER, UNITS.replace('"byte","byte"', '"Mbyte","Kbyte"').replace('"ns"', '"usecond"'),
                      csv_row(0, 0, SMEM, "(32, 32, 1)", "(4, 4, 1)", "1.50", "2", "1", "3.5", "2", "3")])
    values = ncu.parse_raw_csv(text)[0].values
    assert (values["dram_read"], values["dram_write"], values["time_ns"]) == (1.5e6, 2e3, 3.5e3)
    assert ncu.parse_raw_csv("==PROF== Disconnected from process 1\n") == []


def test_rows_are_matched_to_launches_by_their_nvtx_range():
    labels = profile.read_child_output(CANNED_STDOUT).labels
    rows, notes = ncu.match(ncu.parse_raw_csv(CANNED_CSV), labels)
    assert [(r.launch, r.rung, r.impl, r.config, r.kernel[:13]) for r in rows] == [
        (0, "cuBLAS", "cublas", "", GEMM[:13]),  # two kernels in one launch: cuBLAS's GEMM and its split-K reduction
        (0, "cuBLAS", "cublas", "", "cublasLt::spl"),
        (1, "v03", "cuda", "TILE=32", "smem_tiling<3")]
    assert rows[2].tile == (32, 32) and rows[0].tile is None
    assert notes == ["kernel smem_tiling<32> of launch 3, whose run failed: left out",
                     "v03 TILE=32 triton 4096x4096x4096: ncu profiled no kernel of this launch "
                     "(is its kernel name in the filter?)"]


def test_without_an_nvtx_column_rows_are_matched_in_order_only_when_the_counts_agree():
    text = CANNED_CSV.replace("thread Domain:Push/Pop_Range", "thread Domain:Range")
    launches = ncu.parse_raw_csv(text)
    assert all(x.launch is None for x in launches)
    labels = profile.read_child_output(CANNED_STDOUT).labels
    rows, notes = ncu.match(launches, labels)
    assert rows == [] and "no NVTX column" in notes[0]
    rows, notes = ncu.match(launches[1:4], labels)
    assert [(r.launch, r.impl) for r in rows] == [(0, "cublas"), (1, "cuda"), (2, "triton")] and notes == []


# ---- Nsight Compute: running it, or not --------------------------------------------------------------


def fake_run(log_text, stdout, returncode=0, calls=None):
    def run(cmd, **kwargs):
        if calls is not None:
            calls.append((cmd, kwargs))
        Path(cmd[cmd.index("--log-file") + 1]).write_text(log_text)
        return subprocess.CompletedProcess(cmd, returncode, stdout=stdout, stderr="")
    return run


def test_profile_without_ncu(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("nothing should run"))
    report = ncu.profile(select("3"), ALL_IMPLS, [SIZE], "fp32", None)
    assert report.rows == [] and "ncu (Nsight Compute) is not on the PATH" in report.problem
    assert ncu.ncu_missing() == report.problem


def test_profile_without_counter_permission(monkeypatch, tmp_path):
    log = "\n".join([
        "==PROF== Connected to process 41230 (/usr/bin/python3.11)",
        "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters on "
        "the target device 0. For instructions on enabling permissions and to get more information see "
        "https://developer.nvidia.com/ERR_NVGPUCTRPERM",
        "==PROF== Disconnected from process 41230",
        "==WARNING== No kernels were profiled.",
    ])
    monkeypatch.setattr(shutil, "which", lambda name: "/opt/nvidia/ncu")
    monkeypatch.setattr(subprocess, "run", fake_run(log, CANNED_STDOUT, returncode=1))
    report = ncu.profile(select("3"), ALL_IMPLS, [SIZE], "fp32", tmp_path / "logs")
    assert report.rows == []
    assert report.problem.startswith("Nsight Compute cannot read this GPU's performance counters (ERR_NVGPUCTRPERM)")
    assert "==WARNING== No kernels were profiled." in report.notes
    assert (tmp_path / "logs" / "ncu_raw.csv").read_text() == log
    assert (tmp_path / "logs" / "ncu_stdout.txt").read_text() == CANNED_STDOUT
    assert "--clock-control none" in (tmp_path / "logs" / "ncu_command.txt").read_text()


def test_profile_that_profiles_nothing_says_why(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: "/opt/nvidia/ncu")
    monkeypatch.setattr(subprocess, "run", fake_run("==PROF== Disconnected\n==WARNING== No kernels were profiled.\n",
                                                    CANNED_STDOUT))
    report = ncu.profile(select("3"), ALL_IMPLS, [SIZE], "fp32", None)
    assert report.problem == "ncu profiled no kernel (exit code 0): ==WARNING== No kernels were profiled."


def test_profile_with_canned_output_and_its_tables(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(shutil, "which", lambda name: "/opt/nvidia/ncu")
    monkeypatch.setattr(subprocess, "run", fake_run(CANNED_CSV, CANNED_STDOUT, calls=calls))
    report = ncu.profile(select("3"), ALL_IMPLS, [SIZE], "fp32", tmp_path)
    assert report.problem == ""
    assert [(r.launch, r.kernel[:11]) for r in report.rows] == [(0, GEMM[:11]), (0, "cublasLt::s"), (1, "smem_tiling")]
    assert report.notes[0] == ("v03 TILE=16 cuda 4096x4096x4096: failed: "
                               "RuntimeError: CUDA error: unspecified launch failure")
    assert calls[0][1]["cwd"] == REPO and calls[0][0] == report.command

    table = ncu.ncu_table(report.rows)
    line = next(x for x in table.splitlines() if x.startswith("v03"))
    assert line.split()[-6:] == ["15,229.5", "95.6", "95.3", "3,221.2", "67.1", "98.8"]

    traffic = ncu.traffic_table(report.rows).splitlines()
    predicted = 4 * (4096 * 4096 * 128 + 4096 * 4096 * 128) + 4 * 4096 * 4096  # A and B read 128 times, C written
    measured = 3_221_225_472 + 67_108_864
    assert traffic[-1].split()[-4:] == ["32x32", f"{predicted / 1e6:,.1f}", f"{measured / 1e6:,.1f}",
                                        f"{measured / predicted:.3f}"]
    assert traffic[2].startswith("cuBLAS") and traffic[2].rstrip().endswith("268.6")  # cuBLAS: measured only


# ---- compute-sanitizer --------------------------------------------------------------------------------


def test_default_sanitize_selection_is_the_broken_rung_and_the_rung_it_breaks():
    assert [v.tag for v in sanitize.default_selection()] == ["v03", "v04"]
    assert [v.tag for v in sanitize.default_selection(select("4-6"))] == ["v04"]  # nothing correct below it


def test_sanitizer_filter_uses_mangled_names():
    v = {x.tag: x for x in all_variants()}
    assert sanitize.kernel_regex(v["v03"], "cuda") == "^(_Z11smem_tiling|smem_tiling$)"
    cuda, triton = sanitize.kernel_regex(v["v03"], "cuda"), sanitize.kernel_regex(v["v03"], "triton")
    assert re.search(cuda, "_Z11smem_tilingILi32EEvPKfS1_Pfiii")
    assert not re.search(cuda, "smem_tiling_kernel") and re.search(triton, "smem_tiling_kernel")
    assert not re.search(cuda, "_Z12smem_no_syncILi16EEvPKfS1_Pfiii")
    assert re.search(sanitize.kernel_regex(v["v01"], "cuda"), "naive")  # extern "C": not mangled
    torch_fill = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_"
    assert not re.search(sanitize.kernel_regex(v["v07"], "cuda"), torch_fill)
    assert re.search(sanitize.kernel_regex(v["v07"], "cuda"), "_Z9vectorizeILi128ELi128ELi8ELi8ELi8EEvPKfS1_Pfiiii")


def test_sanitizer_command(monkeypatch, tmp_path):
    monkeypatch.setattr(shutil, "which", lambda name: f"/usr/local/cuda/bin/{name}")
    v04 = select("4")[0]
    cmd = sanitize.sanitizer_command("racecheck", v04, {"TILE": 16}, "cuda", (64, 64, 64), "fp32", tmp_path / "r.log")
    assert cmd[0] == "/usr/local/cuda/bin/compute-sanitizer"
    flags = pairs(cmd)
    for pair in [("--tool", "racecheck"), ("--racecheck-report", "analysis"),
                 ("--target-processes", "application-only"),
                 ("--kernel-name", "regex=^(_Z12smem_no_sync|smem_no_sync$)"), ("--log-file", str(tmp_path / "r.log"))]:
        assert pair in flags
    child = profile.child_command([v04], ["cuda"], [(64, 64, 64)], "fp32", config={"TILE": 16}, warmup=False)
    assert cmd[-len(child):] == child
    memcheck = sanitize.sanitizer_command("memcheck", v04, {}, "triton", (64, 64, 64), "fp32", tmp_path / "m.log")
    assert ("--tool", "memcheck") in pairs(memcheck) and "--racecheck-report" not in memcheck
    assert ("--kernel-name", "regex=^(smem_no_sync_kernel$)") in pairs(memcheck)


RACECHECK_ANALYSIS = """\
========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at void smem_no_sync<16>(const float *, const float *, float *, \
int, int, int)+0x1b0 in v04_smem_no_sync.cu:27
=========     and Read access at void smem_no_sync<16>(const float *, const float *, float *, int, int, int)+0x2c0 \
in v04_smem_no_sync.cu:33 [1024 hazards]
=========
========= Error: Race reported between Read access at void smem_no_sync<16>(const float *, const float *, float *, \
int, int, int)+0x2c0 in v04_smem_no_sync.cu:33
=========     and Write access at void smem_no_sync<16>(const float *, const float *, float *, int, int, int)+0x1b0 \
in v04_smem_no_sync.cu:27 [512 hazards]
=========
========= RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)
"""
RACECHECK_HAZARDS = """\
========= COMPUTE-SANITIZER
========= Error: Potential RAW hazard detected at __shared__ 0x0 in block (0,0,0) :
=========     Write Thread (0,1,0) at smem_no_sync<16>+0x1b0 in v04_smem_no_sync.cu:27
=========     Read Thread (0,0,0) at smem_no_sync<16>+0x2c0 in v04_smem_no_sync.cu:33
=========     Current Value : 0
========= Error: Potential WAR hazard detected at __shared__ 0x4 in block (1,0,0) :
=========     Read Thread (3,0,0) at smem_no_sync<16>+0x2c0 in v04_smem_no_sync.cu:33
=========     Write Thread (0,0,0) at smem_no_sync<16>+0x1b0 in v04_smem_no_sync.cu:27
=========     Current Value : 1065353216, Incoming Value : 1073741824
========= Error: Potential WAR hazard detected at __shared__ 0x5 in block (1,0,0) :
=========     Read Thread (3,0,0) at smem_no_sync<16>+0x2c0 in v04_smem_no_sync.cu:33
=========     Write Thread (0,0,0) at smem_no_sync<16>+0x1b0 in v04_smem_no_sync.cu:27
========= RACECHECK SUMMARY: 3 hazards displayed (3 errors, 0 warnings)
"""
RACECHECK_CLEAN = """\
========= COMPUTE-SANITIZER
========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)
"""
MEMCHECK = """\
========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 4 bytes
=========     at smem_tiling_kernel+0x3d0
=========     by thread (5,0,0) in block (1,0,0)
=========     Address 0x7f3a4c000190 is out of bounds
=========     and is 1 bytes after the nearest allocation at 0x7f3a4c000000 of size 400 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: [0x2f8b10] in libcuda.so.1
=========
========= Program hit cudaErrorInvalidValue (error 1) due to "invalid argument" on CUDA API call to \
cudaFuncGetAttributes.
=========     Saved host backtrace up to driver entry point at error
=========
========= ERROR SUMMARY: 2 errors
"""


def test_parse_racecheck_analysis_reports():
    f = sanitize.parse_log(RACECHECK_ANALYSIS)
    assert f.summary == "RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)"
    assert (f.reports, f.errors, f.warnings, f.hazards, f.by_type) == (2, 2, 0, 1536, {})
    assert len(f.lines) == 4
    assert f.lines[0].startswith("Error: Race reported between Write access at void smem_no_sync<16>(")
    assert f.lines[1].strip().endswith("in v04_smem_no_sync.cu:33 [1024 hazards]")


def test_parse_racecheck_hazard_reports():
    f = sanitize.parse_log(RACECHECK_HAZARDS)
    assert (f.reports, f.errors, f.hazards, f.by_type) == (3, 3, 3, {"RAW": 1, "WAR": 2})
    assert f.lines[0] == "Error: Potential RAW hazard detected at __shared__ 0x0 in block (0,0,0) :"
    assert len(f.lines) == sanitize.FIRST_LINES


def test_parse_memcheck_and_clean_and_unfinished_logs():
    f = sanitize.parse_log(MEMCHECK)
    assert (f.summary, f.reports, f.errors, f.api_errors) == ("ERROR SUMMARY: 2 errors", 2, 2, 1)
    assert f.lines[:2] == ["Invalid __global__ read of size 4 bytes", "    at smem_tiling_kernel+0x3d0"]
    assert not any("Host Frame" in line or "backtrace" in line for line in f.lines)
    clean = sanitize.parse_log(RACECHECK_CLEAN)
    assert (clean.reports, clean.hazards, clean.lines) == (0, 0, [])
    assert sanitize.parse_log("========= COMPUTE-SANITIZER\n").summary == ""


def fake_sanitizer(logs):
    """compute-sanitizer as the tests see it: the log for each (rung, impl), the child's label line."""
    def run(cmd, **kwargs):
        rung, impl = cmd[cmd.index("--rungs") + 1], cmd[cmd.index("--impl") + 1]
        config = cmd[cmd.index("--config-json") + 1]
        Path(cmd[cmd.index("--log-file") + 1]).write_text(logs.get((rung, impl), RACECHECK_CLEAN))
        stdout = label(0, rung, "x", config, impl, (97, 61, 130), [16, 16])
        return subprocess.CompletedProcess(cmd, 0, stdout=stdout, stderr="")
    return run


def test_sanitize_shows_the_race_and_says_what_racecheck_cannot_see(monkeypatch, tmp_path):
    monkeypatch.setattr(shutil, "which", lambda name: "/opt/cuda/bin/compute-sanitizer")
    monkeypatch.setattr(subprocess, "run", fake_sanitizer({("v04", "cuda"): RACECHECK_ANALYSIS}))
    report = sanitize.sanitize("racecheck", sanitize.default_selection(), log_dir=tmp_path)
    assert report.problem == ""
    got = {(r.rung, r.config, r.impl): r.verdict for r in report.results}
    assert list(got) == [("v03", "TILE=16", "cuda"), ("v03", "TILE=16", "triton"), ("v03", "TILE=32", "cuda"),
                         ("v03", "TILE=32", "triton"), ("v04", "TILE=16", "cuda"), ("v04", "TILE=16", "triton"),
                         ("v04", "TILE=32", "cuda"), ("v04", "TILE=32", "triton")]
    assert got["v03", "TILE=16", "cuda"] == "clean: no shared-memory hazard"
    assert got["v04", "TILE=16", "cuda"] == "2 race report(s), 1536 hazards (2 errors, 0 warnings)"
    assert got["v04", "TILE=32", "triton"].startswith("no shared-memory hazard, and still wrong on purpose: "
                                                      "racecheck checks shared memory only")
    assert "no atomic add between split-K programs" in got["v04", "TILE=32", "triton"]
    assert (tmp_path / "racecheck_v04_TILE16_cuda.log").read_text() == RACECHECK_ANALYSIS
    text = sanitize.format_report(report)
    assert "v04 TILE=16 cuda: first lines of RACECHECK SUMMARY: 2 hazards displayed" in text
    assert "[1024 hazards]" in text and "v03 TILE=16 cuda: first lines" not in text


def test_sanitize_does_not_call_a_skipped_or_unfinished_launch_clean(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: "/opt/cuda/bin/compute-sanitizer")

    def run(cmd, **kwargs):
        rung = cmd[cmd.index("--rungs") + 1]
        if rung == "v15":
            stdout = ('skipped: {"rung": "v15", "name": "warp_specialized", "config": "", "impl": "cuda", "M": 97, '
                      '"N": 61, "K": 130, "dtype": "bf16", "reason": "needs compute capability 9.0"}')
            Path(cmd[cmd.index("--log-file") + 1]).write_text("========= ERROR SUMMARY: 0 errors\n")
        else:
            stdout = ""  # the child died before its launch; the tool wrote no summary
        return subprocess.CompletedProcess(cmd, 139, stdout=stdout, stderr="Segmentation fault")

    monkeypatch.setattr(subprocess, "run", run)
    report = sanitize.sanitize("memcheck", select("14,15"), impls=("cuda", "cublas"), dtype="bf16")
    verdicts = [r.verdict for r in report.results]
    assert verdicts[-1] == "v15 cuda 97x61x130: skipped: needs compute capability 9.0"
    assert verdicts[0].startswith("no summary from compute-sanitizer (exit code 139)")
    assert [r.impl for r in report.results] == ["cuda"] * len(report.results)  # cuBLAS is not ours to check


def test_sanitize_memcheck_verdict_separates_api_errors():
    result = sanitize.SanitizeResult("v03", "smem_tiling", "TILE=16", "triton", "memcheck", launched=True,
                                      findings=sanitize.parse_log(MEMCHECK))
    assert result.verdict == "1 error(s) in the kernel (1 CUDA API error(s) from host-side calls)"


def test_sanitize_without_the_tool_or_with_an_unknown_tool(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    report = sanitize.sanitize("racecheck", select("4"))
    assert report.results == [] and "compute-sanitizer is not on the PATH" in report.problem
    assert sanitize.format_report(report).startswith("compute-sanitizer racecheck: compute-sanitizer is not")
    with pytest.raises(ValueError, match="unknown compute-sanitizer tool 'leakcheck'"):
        sanitize.sanitize("leakcheck", select("4"))
