"""Triton helpers shared by the rungs: launch checks and what a compiled kernel reports."""

from __future__ import annotations

from ._validate import check_tile


def check_dot_tile(TILE: int) -> None:
    """`tl.dot` takes power-of-two blocks with every side at least 16."""
    check_tile(TILE)
    if TILE < 16 or TILE & (TILE - 1):
        raise ValueError(f"TILE={TILE}: Triton's tl.dot needs power-of-two block sides of at least 16")
