"""Once-per-process settings of an app process: torch's threads and glibc's allocator. app.py applies them before
every script run (at once after the first), the preload (serve/preload.py) in its thread."""

from __future__ import annotations

import ctypes
import os

_CONFIGURED: list[bool] = []


def configure_process() -> None:
    """Once per process: torch intra-op threads (Streamlit serves each session from its own thread; OpenMP threads
    of concurrent runs oversubscribe the CPU: measured on 2 busy cores, the default sentence took 15 ms with 1 thread
    and 600-900 ms with 2; override with HEADLIGHT_TORCH_THREADS), and glibc's allocator told to give large freed
    buffers back to the system (below)."""
    import torch  # here, not at import: app.py imports serve (this module too) before the preload's imports end

    threads = os.environ.get("HEADLIGHT_TORCH_THREADS", "1")
    if threads.isdigit() and int(threads) > 0 and torch.get_num_threads() != int(threads):
        torch.set_num_threads(int(threads))
    if not _CONFIGURED:
        _CONFIGURED.append(return_freed_memory())


def return_freed_memory() -> bool:
    """glibc only (a no-op elsewhere): allocations of 1 MiB and more are mmap'd, so freeing them returns the memory
    (glibc's dynamic threshold otherwise rises to 32 MiB after the first large free, and attention maps of 12.6 MB
    then stay in the heap), and at most 2 malloc arenas for the many session threads. Measured with 48 students
    opening distinct 512-token texts at once: peak RSS 2.3 GB without, 1.36 GB with (budget 1 GB + models 0.48 GB).
    The same can be set before start with MALLOC_MMAP_THRESHOLD_ / MALLOC_ARENA_MAX, which `make run` does."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        M_MMAP_THRESHOLD, M_ARENA_MAX = -3, -8
        return bool(libc.mallopt(M_MMAP_THRESHOLD, 1 << 20)) and bool(libc.mallopt(M_ARENA_MAX, 2))
    except (OSError, AttributeError):
        return False
