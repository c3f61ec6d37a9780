"""The shared layer every rung stands on: registry, problem inputs and reference, check, timing, the
CUDA C (CuPy) and Triton plumbing, the search, the task runner, the command line and the reports.

Rungs import from here; nothing here imports a rung by name (the registry finds them by file name).
"""

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # implementations/
# Where `import implementations` resolves from: the checkout, or site-packages once installed. Child
# processes (the profilers' target program) run from here so that they import this same package.
IMPORT_ROOT = PACKAGE_DIR.parent
