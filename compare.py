#!/usr/bin/env python3
"""Every matrix-multiplication rung in raw CUDA C and in Triton, checked against torch, timed against cuBLAS.

`python compare.py --help` lists the options; `triton-vs-cuda` is the same command once installed. All
logic lives in the `implementations` package (implementations/core/cli.py).
"""

import sys

from implementations.core.cli import main

if __name__ == "__main__":
    sys.exit(main())
