"""The round loop the probe scripts share: check every run once, then time them all in interleaved rounds.

Each time is a do_bench median (L2 flushed between calls). Rounds alternate the order of the runs, so
that no run always follows the same neighbour, and each run's figure is the median over rounds of its
speed as a fraction of the baseline's (the first run) in the same round.
"""

import statistics

from triton.testing import do_bench

from implementations.core.check import compare, poison


def parse_size(size: str) -> tuple[int, int, int]:
    """"n" for n³, or "MxNxK"."""
    return tuple(map(int, size.split("x"))) if "x" in size else (int(size),) * 3


def check_then_time(runs: dict, c, ref, bound: float, rounds: int, describe=lambda label, out: "") -> dict:
    """Print each run's normwise error (its output `c` poisoned first; `describe(label, what run returned)`
    adds to the line), then time the runs in `rounds` rounds; returns {label: median fraction of the first}."""
    width = max(map(len, runs))
    for label, run in runs.items():
        poison(c)
        out = run()
        print(f"  {label:{width}} err {compare(c, ref, bound).error:.2e} {describe(label, out)}", flush=True)
    baseline = next(iter(runs))
    ratios = {label: [] for label in runs if label != baseline}
    for r in range(rounds):
        order = list(runs.items()) if r % 2 == 0 else list(reversed(runs.items()))
        ms = {label: do_bench(run, warmup=25, rep=200) for label, run in order}
        for label in ratios:
            ratios[label].append(ms[baseline] / ms[label])
        print(f"  round {r}: " + ", ".join(f"{label} {ms[label]:.4f} ms" for label in runs), flush=True)
    medians = {label: statistics.median(values) for label, values in ratios.items() if values}
    for label, values in ratios.items() if rounds else ():
        print(f"  {label:{width}} {medians[label]:7.1%} of {baseline} (median of {rounds}; "
              f"{min(values):.1%}-{max(values):.1%})", flush=True)
    return medians
