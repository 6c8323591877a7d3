"""glibc's allocator told to give large freed buffers back to the system, for a process that runs a model without
the app's server (the command line): the setting `make run` makes with MALLOC_MMAP_THRESHOLD_ / MALLOC_ARENA_MAX and
serve/process.py with the same two mallopt calls (serve/ may not be imported here)."""

from __future__ import annotations

import ctypes

M_MMAP_THRESHOLD, M_ARENA_MAX = -3, -8  # glibc's malloc.h


def return_freed_memory() -> bool:
    """glibc only (False, and nothing changed, elsewhere): allocations of 1 MiB and more are mmap'd, so freeing them
    returns the memory (glibc's dynamic threshold otherwise rises to 32 MiB after the first large free, and the
    freed score and map buffers of every layer stay in the heap), and at most 2 malloc arenas (the dequantising
    threads). A 512-token SmolLM2 trace from the command line peaked at 1,722 MiB without, 1,179 MiB with
    (2026-11-27); nothing computed changes."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        return bool(libc.mallopt(M_MMAP_THRESHOLD, 1 << 20)) and bool(libc.mallopt(M_ARENA_MAX, 2))
    except (OSError, AttributeError):
        return False
