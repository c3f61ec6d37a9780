"""The k-loop of an fp32 CUDA kernel in SASS, and how its FFMAs read the register file (no GPU: nvcc and cuobjdump;
where the toolkit lacks cuobjdump, `pip install nvidia-cuda-cuobjdump` puts one under site-packages/nvidia/cu13/bin).

    python scripts/sass_banks.py kernels_cuda/v11_autotuned.cu "autotuned<128,256,8,64,64,3,8,0,true,false,false,true>"
    python scripts/sass_banks.py --sass cutlass.sass       (an already disassembled cubin, every kernel in it)

The k-loop is the backward branch holding the most FFMAs. Per FFMA it counts the source registers not served by
the operand reuse cache (a source marked .reuse in the FFMA before, in the same slot), and the register file's
two banks (register number mod 2), each read once a cycle, as measured on Ampere (Huerta et al., MICRO 2025):
`same-bank pairs` are extra cycles such reads would need, `3 in one bank` FFMAs reading three registers of one
bank. A model of the hardware, not a measurement: speed is the GPU's to say (docs/notes/v11.md).
"""

import argparse
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from implementations.core.cuda_c import COMPILE_OPTIONS, nvcc_path  # noqa: E402

INSTRUCTION = re.compile(r"^\s+/\*([0-9a-f]{4,5})\*/\s+(.*?)\s*;", re.MULTILINE)
REGISTER = re.compile(r"^-?\|?(R\d+)(\.reuse)?")


def disassemble(source: Path, kernel: str, arch: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        wrapper = Path(tmp) / "k.cu"
        wrapper.write_text(f'#include "{source.resolve()}"\nvoid* const tvc_kernel = (void*)&{kernel};\n')
        subprocess.run([nvcc_path(), "-cubin", f"-arch={arch}", *COMPILE_OPTIONS, "-diag-suppress", "177",
                        "-o", f"{tmp}/k.cubin", str(wrapper)], check=True)
        return subprocess.run(["cuobjdump", "-sass", f"{tmp}/k.cubin"],
                              capture_output=True, text=True, check=True).stdout


def k_loops(sass: str) -> dict[str, list[str]]:
    """Each function's loop body with the most FFMAs (instructions from a backward branch's target to it)."""
    loops = {}
    for function in re.split(r"\n\s+Function : ", sass)[1:]:
        name = function.split("\n")[0].strip()
        code = [(int(a, 16), text) for a, text in INSTRUCTION.findall(function)]
        index = {address: i for i, (address, _) in enumerate(code)}
        best = []
        for i, (address, text) in enumerate(code):
            target = re.search(r"\bBRA\b.*0x([0-9a-f]+)", text)
            if target and int(target.group(1), 16) < address and int(target.group(1), 16) in index:
                body = [t for _, t in code[index[int(target.group(1), 16)]:i + 1]]
                if sum(opcode(t) == "FFMA" for t in body) > sum(opcode(t) == "FFMA" for t in best):
                    best = body
        if best:
            loops[name] = best
    return loops


def opcode(text: str) -> str:
    words = text.split()
    return (words[1] if words[0].startswith("@") else words[0]).split(".")[0]


def register_reads(body: list[str]) -> Counter:
    counts = Counter()
    cached = [None, None, None]  # the register each source slot's reuse cache holds
    for text in body:
        if opcode(text) != "FFMA":
            cached = [None, None, None]
            continue
        sources = [s.strip() for s in text.split(None, 1)[1].split(",")[1:4]]
        reads, kept = set(), [None, None, None]
        for slot, source in enumerate(sources):
            match = REGISTER.match(source)
            if not match:
                continue
            if cached[slot] == match.group(1):
                counts["reuse"] += 1
            else:
                reads.add(int(match.group(1)[1:]))
            if match.group(2):
                kept[slot] = match.group(1)
        cached = kept
        banks = Counter(r % 2 for r in reads)
        counts["FFMA"] += 1
        counts["same-bank pairs"] += max(banks.values(), default=1) - 1
        counts["3 in one bank"] += len(reads) == 3 and len(banks) == 1
    return counts


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("source", nargs="?", type=Path, help="a .cu file (its includes from kernels_cuda/)")
    p.add_argument("kernel", nargs="?", help="one instantiation, as the launcher names it")
    p.add_argument("--arch", default="sm_90")
    p.add_argument("--sass", type=Path, help="read this cuobjdump -sass output instead of compiling")
    args = p.parse_args()
    if not args.sass and not (args.source and args.kernel):
        p.error("give a .cu file and a kernel, or --sass FILE")
    sass = args.sass.read_text() if args.sass else disassemble(args.source, args.kernel, args.arch)
    loops = k_loops(sass)
    if not loops:
        print("no loop with FFMAs found", file=sys.stderr)
        return 1
    for name, body in loops.items():
        c = register_reads(body)
        n = c["FFMA"]
        print(f"{name}: k-loop {len(body)} instructions, {n} FFMA ({n / len(body):.3f}); per FFMA: "
              f"{c['reuse'] / n:.2f} sources from the reuse cache, {c['same-bank pairs'] / n:.2f} same-bank pairs, "
              f"{c['3 in one bank'] / n:.3f} with 3 in one bank")
    return 0


if __name__ == "__main__":
    sys.exit(main())
