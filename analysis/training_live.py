"""The Training page's live run (issue 36): the lab's training (training/lab.py), started from the page by the
lecturer, in a background thread of the app's process, while the page polls its snapshots.

Bounded: one run at a time per process (`start` refuses a second while one runs: LiveBusy), at most LIMIT_S seconds
of wall-clock time (then it stops at the current step and says so), and stoppable (`LiveRun.stop`). The thread
never touches Streamlit: it appends Snapshots to its LiveRun under a lock, and the page reads a copy.

    run = RUNNER.start(lab.LabSettings(task="reverse", seed=3))     # LiveBusy while another runs
    run.view()                                                        # a RunView of the snapshots so far
    run.stop()
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from dataclasses import dataclass

from training import lab

from .training import RunView, run_view

LIMIT_S = 60.0  # wall-clock seconds a live run may take
_IDS = itertools.count(1)


class LiveBusy(RuntimeError):
    """A live run is already running in this process."""


@dataclass(frozen=True)
class LiveStatus:
    state: str  # "running" | "done" | "stopped" (asked to) | "limit" (LIMIT_S reached) | "failed"
    step: int  # the last snapshot's step (-1 before the first)
    elapsed_s: float


class LiveRun:
    """One live run: its thread, its snapshots so far, its state."""

    def __init__(self, settings: lab.LabSettings, limit_s: float = LIMIT_S):
        self.id = next(_IDS)
        self.settings = settings
        self.limit_s = limit_s
        self._lock = threading.Lock()
        self._snapshots: list[lab.Snapshot] = []
        self._stop = threading.Event()
        self._first = threading.Event()  # set once the first snapshot (step 0) is there
        self._state = "running"
        self._started = time.perf_counter()
        self._ended: float | None = None
        self._thread = threading.Thread(target=self._run, name=f"headlight-live-train-{self.id}", daemon=True)

    def _add(self, snap: lab.Snapshot) -> None:
        with self._lock:
            self._snapshots.append(snap)
        self._first.set()

    def _run(self) -> None:
        try:
            result = lab.train(self.settings, on_snapshot=self._add, stop=self._stop.is_set, time_limit_s=self.limit_s)
            state = "done" if not result.stopped else ("stopped" if self._stop.is_set() else "limit")
        except Exception:  # noqa: BLE001 - a thread's boundary: logged, and the page says the run failed
            logging.getLogger("headlight").exception("live training run %s failed", self.id)
            state = "failed"
        with self._lock:
            self._state, self._ended = state, time.perf_counter()
        self._first.set()

    def begin(self) -> None:
        self._thread.start()

    def wait_first(self, timeout: float) -> bool:
        """Wait (at most `timeout` s) for the first snapshot, or the run's end; whether it came."""
        return self._first.wait(timeout)

    def stop(self) -> None:
        """Ask the run to stop after its current step (its last snapshot is then that step's)."""
        self._stop.set()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    @property
    def running(self) -> bool:
        with self._lock:
            return self._state == "running"

    def status(self) -> LiveStatus:
        with self._lock:
            end = self._ended if self._ended is not None else time.perf_counter()
            step = self._snapshots[-1].step if self._snapshots else -1
            return LiveStatus(self._state, step, end - self._started)

    def view(self) -> RunView | None:
        """The snapshots so far as a RunView (None before the first)."""
        with self._lock:
            snaps, state = list(self._snapshots), self._state
            elapsed = (self._ended or time.perf_counter()) - self._started
        if not snaps:
            return None
        return run_view(self.settings, snaps, wall_s=elapsed, stopped=state in ("stopped", "limit"))


class LiveRunner:
    """This process's live runs: at most one running; the last one kept so its page can still show it."""

    def __init__(self, limit_s: float = LIMIT_S):
        self.limit_s = limit_s
        self._lock = threading.Lock()
        self._runs: dict[int, LiveRun] = {}

    def start(self, settings: lab.LabSettings) -> LiveRun:
        with self._lock:
            if any(r.running for r in self._runs.values()):
                raise LiveBusy("a live training run is already running in this process")
            run = LiveRun(settings, self.limit_s)
            self._runs = {run.id: run}  # the earlier finished run is dropped
            run.begin()
            return run

    def get(self, run_id: object) -> LiveRun | None:
        with self._lock:
            return self._runs.get(run_id) if isinstance(run_id, int) else None

    def busy(self) -> bool:
        with self._lock:
            return any(r.running for r in self._runs.values())


RUNNER = LiveRunner()  # one per process: every session of this app process shares it
