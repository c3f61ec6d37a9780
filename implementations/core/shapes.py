"""Named shape sets from real models (`compare.py --shapes NAME[,NAME]`), and the device memory one
case needs, so that a set too large for the GPU is refused before anything is allocated.

Convention: C = X·W, with X the activations (M×K, one row per token) and W the weight stored K×N, so
M = tokens, K = the projection's input features, N = its output features. One transformer layer's
projections, from each model's published configuration (config.json on the Hugging Face Hub):

- qkv: the query, key and value projections fused into one weight (as vLLM and TensorRT-LLM run them):
  K = hidden_size, N = (num_attention_heads + 2·num_key_value_heads)·head_dim;
- o: the attention output projection: K = num_attention_heads·head_dim, N = hidden_size;
- gate_up: the MLP's gate and up projections fused into one weight (vLLM, TensorRT-LLM; Hugging Face
  transformers runs them as two products of half the N): K = hidden_size, N = 2·intermediate_size;
- down: the MLP's down projection: K = intermediate_size, N = hidden_size.

Token counts: prefill of 2048 and 8192 tokens, decode of 1, 16 and 128 sequences (one new token each, so
M = the batch). In Mixtral-8x7B attention sees every token, and each expert's MLP the tokens routed to
it: with num_experts_per_tok of num_local_experts chosen per token, evenly spread, an expert sees
M = ceil(tokens·num_experts_per_tok / num_local_experts), at least 1.

The memory estimate counts what one case of compare.py holds on the device at its peak: A, B and C in
the operand dtype, a second A and B (the check after timing draws new inputs while the first ones are
alive), a row-major copy of A and B (made for a rung that does not read the layout in place), the check's
float64 tensors (check.py: the reference, C in float64, |A|·|B|, the bound and the temporaries of the
elementwise comparison; the float64 operands and their absolute values while |A|·|B| is formed), all of
it times the batch (--batch: the check works on the whole batch at once; with --groups, B once per
group), and do_bench's L2-flush buffer (two of them with --flush clean). Not counted: CUDA contexts,
torch's cached blocks in other processes, a rung's own workspace. It is an estimate to refuse what cannot
fit, not a promise that what passes will.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from tabulate import tabulate

LIST = "list"  # `--shapes list`: print every set instead of running
PREFILL_TOKENS = (2048, 8192)
DECODE_TOKENS = (1, 16, 128)
SQUARE_SIDES = tuple(2**e for e in range(8, 14))  # 256 ... 8192
# float64 M×N tensors: six alive at the check's peak (the reference, C in float64, |A|·|B| or the bound, and
# three temporaries of the bound or of the elementwise comparison), one more for its boolean masks
CHECK_MN_TENSORS = 7
L2_FLUSH_BYTES = 256 * 2**20  # the buffer do_bench zeroes before each timed call (Triton's default size)


@dataclass(frozen=True)
class Model:
    name: str
    config: str  # where the values come from
    hidden_size: int
    intermediate_size: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    num_local_experts: int = 0  # 0: a dense MLP
    num_experts_per_tok: int = 0
    mlp_weights: tuple[str, str] = ("gate_proj, up_proj", "down_proj")  # the checkpoint's names

    def values(self) -> str:
        experts = (f", num_local_experts {self.num_local_experts}, num_experts_per_tok {self.num_experts_per_tok}"
                   if self.num_local_experts else "")
        return (f"{self.name} ({self.config}): hidden_size {self.hidden_size}, intermediate_size "
                f"{self.intermediate_size}, num_attention_heads {self.num_attention_heads}, num_key_value_heads "
                f"{self.num_key_value_heads}, head_dim {self.head_dim}{experts}")


LLAMA3_8B = Model("Llama-3-8B", "meta-llama/Meta-Llama-3-8B config.json; head_dim = hidden_size / heads",
                  4096, 14336, 32, 8, 128)
LLAMA3_70B = Model("Llama-3-70B", "meta-llama/Meta-Llama-3-70B config.json; head_dim = hidden_size / heads",
                   8192, 28672, 64, 8, 128)
MIXTRAL_8X7B = Model("Mixtral-8x7B", "mistralai/Mixtral-8x7B-v0.1 config.json; head_dim = hidden_size / heads",
                     4096, 14336, 32, 8, 128, num_local_experts=8, num_experts_per_tok=2, mlp_weights=("w1, w3", "w2"))


@dataclass(frozen=True)
class Shape:
    M: int
    N: int
    K: int
    label: str  # short: "llama3-8b qkv prefill 2048"
    provenance: str  # where each dimension comes from
    model: str = ""  # the model's configuration values it is derived from ("" for no model)

    @property
    def dims(self) -> tuple[int, int, int]:
        return (self.M, self.N, self.K)

    @property
    def size(self) -> str:
        return f"{self.M}x{self.N}x{self.K}"


def projections(m: Model) -> list[tuple[str, int, int, str]]:
    """(name, K, N, how) of one layer's four products."""
    h, i, heads, kv, d = m.hidden_size, m.intermediate_size, m.num_attention_heads, m.num_key_value_heads, m.head_dim
    mlp = "expert " if m.num_local_experts else ""
    gate_up, down = m.mlp_weights
    return [
        ("qkv", h, (heads + 2 * kv) * d, f"QKV projection (q_proj, k_proj, v_proj fused): K = hidden_size {h}, "
                                          f"N = ({heads} heads + 2·{kv} KV heads)·{d} = {(heads + 2 * kv) * d}"),
        ("o", heads * d, h, f"attention output projection (o_proj): K = {heads} heads·{d} = {heads * d}, "
                            f"N = hidden_size {h}"),
        (f"{mlp}gate_up", h, 2 * i, f"{mlp}MLP gate and up projections ({gate_up} fused): K = hidden_size {h}, "
                                    f"N = 2·intermediate_size {i} = {2 * i}"),
        (f"{mlp}down", i, h, f"{mlp}MLP down projection ({down}): K = intermediate_size {i}, N = hidden_size {h}"),
    ]


def model_set(key: str, m: Model, phases=(("prefill", PREFILL_TOKENS), ("decode", DECODE_TOKENS))) -> list[Shape]:
    """The model's four projections at every token count of these phases."""
    found = []
    for phase, counts in phases:
        for tokens in counts:
            rows = (f"{tokens} tokens of a prefill" if phase == "prefill"
                    else f"a decode step of {tokens} sequence{'s' * (tokens > 1)}, one token each")
            for name, K, N, how in projections(m):
                M, why = tokens, rows
                if name.startswith("expert"):
                    M = max(1, math.ceil(tokens * m.num_experts_per_tok / m.num_local_experts))
                    why += (f", each token routed to {m.num_experts_per_tok} of {m.num_local_experts} experts, "
                            "evenly spread")
                found.append(Shape(M, N, K, f"{key} {name} {phase} {tokens}", f"M = {M}: {why}; {how}", m.values()))
    return found


MODELS = {"llama3-8b": LLAMA3_8B, "llama3-70b": LLAMA3_70B, "mixtral-8x7b": MIXTRAL_8X7B}
SETS: dict[str, tuple[str, list[Shape]]] = {
    **{key: (f"one {m.name} layer's projections, prefill {' and '.join(map(str, PREFILL_TOKENS))} tokens, decode "
             f"{', '.join(map(str, DECODE_TOKENS))}", model_set(key, m)) for key, m in MODELS.items()},
    "decode": (f"the decode shapes (M = {', '.join(map(str, DECODE_TOKENS))}) of {', '.join(MODELS)}",
               [s for key, m in MODELS.items() for s in model_set(key, m, (("decode", DECODE_TOKENS),))]),
    "square": (f"N³ for N = {', '.join(map(str, SQUARE_SIDES))}",
               [Shape(n, n, n, f"square {n}", f"{n}³, no model: the square sizes the ladder is usually timed at")
                for n in SQUARE_SIDES]),
}


def resolve(text: str) -> list[Shape]:
    """"llama3-8b,decode": the shapes of these sets in order, each (label and size) once."""
    names = [n.strip().lower() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in SETS]
    if unknown or not names:
        raise ValueError(f"unknown shape set {', '.join(unknown) or repr(text)}; known: {', '.join(SETS)} "
                         f"(--shapes {LIST} shows them)")
    return list({(s.label, s.dims): s for name in names for s in SETS[name][1]}.values())


def run_sizes(shapes: list[Shape]) -> list[tuple[int, int, int]]:
    """The (M, N, K) to run, each once, in the order first met: models share shapes (Llama-3-8B's and
    Mixtral-8x7B's attention)."""
    return list(dict.fromkeys(s.dims for s in shapes))


def legend(shapes: list[Shape], fmt: str = "simple") -> str:
    """Size → the labels of the shapes it stands for."""
    labels: dict[str, list[str]] = {}
    for s in shapes:
        labels.setdefault(s.size, []).append(s.label)
    return tabulate([[size, "; ".join(names)] for size, names in labels.items()], ["size", "shapes"],
                    tablefmt=fmt, disable_numparse=True)


def listing() -> str:
    """Every set: the configurations it derives from, then each shape with its label, dimensions and provenance."""
    parts = []
    for name, (description, shapes) in SETS.items():
        rows = [[s.label, s.M, s.N, s.K, s.provenance] for s in shapes]
        parts += [f"{name}: {description}", *(f"  {m}" for m in dict.fromkeys(s.model for s in shapes if s.model)),
                  tabulate(rows, ["label", "M", "N", "K", "provenance"], disable_numparse=True), ""]
    return "\n".join(parts)


def device_bytes(M: int, N: int, K: int, element_size: int, batch: int = 0, groups: int = 0,
                 flush_buffers: int = 1) -> int:
    """Device memory one case holds at its peak (see the module docstring); batch 0: one product; `groups`: a
    grouped product's matrices of B (one K×N each); `flush_buffers`: 2 where a clean flush reads a second one."""
    operands = M * K + max(groups, 1) * K * N
    one = element_size * (3 * operands + M * N) + 8 * (CHECK_MN_TENSORS * M * N + 2 * operands)
    return max(batch, 1) * one + flush_buffers * L2_FLUSH_BYTES


def memory_refusal(sizes: list[tuple[int, int, int]], element_size: int, free_bytes: int, device_name: str,
                   batch: int = 0, groups: int = 0, flush_buffers: int = 1) -> str:
    """One line naming the size that needs the most, when that is more than free_bytes; "" when all fit."""
    need, (M, N, K) = max((device_bytes(*dims, element_size, batch, groups, flush_buffers), dims) for dims in sizes)
    if need <= free_bytes:
        return ""
    size = f"{M}x{N}x{K}" if not batch else f"{batch}×({M}x{N}x{K})"
    return (f"shape {size} needs about {need / 2**30:.1f} GiB on {device_name}, which has "
            f"{free_bytes / 2**30:.1f} GiB free")


def check_memory(sizes: list[tuple[int, int, int]], dtype: torch.dtype, device: torch.device, batch: int = 0,
                 groups: int = 0, flush_buffers: int = 1) -> str:
    """memory_refusal against the device's free memory now; "" on the CPU (the host is not checked)."""
    if device.type != "cuda":
        return ""
    free, _ = torch.cuda.mem_get_info(device)
    return memory_refusal(sizes, dtype.itemsize, free, torch.cuda.get_device_name(device), batch, groups,
                          flush_buffers)
