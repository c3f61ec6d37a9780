#!/usr/bin/env python3
"""Every matrix-multiplication rung in raw CUDA C and in Triton, checked against torch, timed against cuBLAS.

Run `python compare.py --help` for the options. All logic lives in the `implementations` package.
"""

import os
import sys

import torch

if not torch.cuda.is_available():
    # Triton reads this when the kernel modules are imported, so it must be set before that import.
    os.environ.setdefault("TRITON_INTERPRET", "1")

from implementations._cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
