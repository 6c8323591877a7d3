"""Micro-batching: many threads (Streamlit sessions) ask for one computation each; a worker thread runs whatever is
waiting as one batch. No waiting window: when the worker is idle a request runs at once, alone; while a batch runs,
new requests queue and form the next one. So a quiet app pays nothing, and a lecture hall's burst of new sentences
becomes a few padded forwards instead of hundreds of single ones (analysis.trace.trace_many).

    batcher = MicroBatcher(lambda items: [f(x) for x in items], max_items=16, max_cost=2048, cost=len)
    result = batcher.submit(item)   # blocks; raises what the batch raised for this item

If a batch fails, each of its items is run alone (`fn([item])`), so one bad item fails only its own request.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from queue import Empty, SimpleQueue
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class MicroBatcher(Generic[K, V]):
    def __init__(self, fn: Callable[[list[K]], list[V]], *, max_items: int = 16, max_cost: int = 2048,
                 cost: Callable[[K], int] = lambda _: 1, name: str = "batcher"):
        self.fn = fn
        self.max_items = max_items
        self.max_cost = max_cost  # e.g. padded tokens: a batch's memory is bounded by it
        self.cost = cost
        self.name = name
        self._queue: SimpleQueue[tuple[K, Future]] = SimpleQueue()
        self._worker: threading.Thread | None = None
        self._lock = threading.Lock()
        self.batches = 0  # how many batches ran, and how many items they held (for tests and benchmarks)
        self.items = 0

    def submit(self, item: K) -> V:
        fut: Future = Future()
        self._queue.put((item, fut))
        self._ensure_worker()
        return fut.result()

    def _ensure_worker(self) -> None:
        if self._worker is not None and self._worker.is_alive():
            return
        with self._lock:
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._loop, name=self.name, daemon=True)
                self._worker.start()

    def _loop(self) -> None:
        carry: tuple[K, Future] | None = None
        while True:
            first = carry or self._queue.get()
            carry = None
            batch, total = [first], self.cost(first[0])
            while len(batch) < self.max_items:
                try:
                    nxt = self._queue.get_nowait()
                except Empty:
                    break
                c = self.cost(nxt[0])
                if total + c > self.max_cost:  # too big for this batch: it starts the next one
                    carry = nxt
                    break
                batch.append(nxt)
                total += c
            self._run(batch)

    def _run(self, batch: list[tuple[K, Future]]) -> None:
        self.batches += 1
        self.items += len(batch)
        try:
            results = self.fn([item for item, _ in batch])
            if len(results) != len(batch):
                raise RuntimeError(f"{self.name}: {len(results)} results for {len(batch)} items")
        except BaseException as exc:  # noqa: BLE001 - run the items alone: each request gets its own result or error
            if len(batch) == 1:
                batch[0][1].set_exception(exc)
                return
            for item, fut in batch:
                self._run([(item, fut)])
            return
        for (_, fut), res in zip(batch, results):
            fut.set_result(res)
