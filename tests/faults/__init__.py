"""Rungs broken in ways that take a process down, for the fault-isolation tests: never registered (they
live here, not in implementations/), reached through `compare.py --with tests.faults.v90_faulting`."""
