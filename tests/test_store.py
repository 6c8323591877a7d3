"""ui/store.py `memo`: results kept in the shared byte-bounded store, keyed by the function's qualified name and its
arguments; a spinner or progress bar drawn by the calling session only while the result is missing, never inside a
computation; one computation for concurrent callers; BudgetError for a result over the budget."""

from __future__ import annotations

import contextlib
import threading
import time

import numpy as np
import pytest

from analysis.cache import BudgetError, ByteBudgetCache
from ui import store
from ui.store import memo

CALLS: list[tuple] = []


@memo
def add(a: int, b: int = 1, *rest: int, **kw) -> int:
    CALLS.append(("add", a, b, rest, kw))
    return a + b + sum(rest) + sum(kw.values())


@memo
def add_again(a: int, b: int = 1, *rest: int, **kw) -> int:  # same arguments, another function: another key
    CALLS.append(("add_again", a, b))
    return a + b


@memo(spinner="cache.running_model")
def inner(x: int) -> int:
    CALLS.append(("inner", x))
    return x * 10


@memo(spinner="cache.decoding")
def outer(x: int) -> int:
    CALLS.append(("outer", x))
    return inner(x) + 1


@memo(progress="cache.atlas")  # "Building the head atlas of {name}…": formatted with the call's arguments
def slow(name: str, n: int, progress=None) -> int:
    CALLS.append(("slow", name, n))
    for i in range(n):
        if progress is not None:
            progress((i + 1) / n)
    return n


@memo
def big(mb: float) -> np.ndarray:
    return np.zeros(int(mb * 1024 * 1024), dtype=np.uint8)


class Drawn:
    """Stands in for st.spinner / st.progress and records what the session would see."""

    def __init__(self):
        self.items: list[tuple] = []

    @contextlib.contextmanager
    def spinner(self, text):
        self.items.append(("spinner", text))
        yield

    def progress(self, value, text=None):
        self.items.append(("progress", value, text))
        drawn = self

        class Bar:
            def progress(self, value, text=None):
                drawn.items.append(("tick", value, text))

            def empty(self):
                drawn.items.append(("empty",))

        return Bar()


@pytest.fixture
def drawn(monkeypatch) -> Drawn:
    """A fresh store, and the drawing recorded instead of sent."""
    cache = ByteBudgetCache(8 * 1024 * 1024)
    d = Drawn()
    monkeypatch.setattr(store, "results", lambda: cache)
    monkeypatch.setattr(store.st, "spinner", d.spinner)
    monkeypatch.setattr(store.st, "progress", d.progress)
    CALLS.clear()
    return d


def test_key_is_the_qualified_name_and_the_normalised_arguments(drawn):
    assert add.key(1) == add.key(1, 1) == add.key(a=1, b=1) == add.key(b=1, a=1)  # defaults filled in
    assert add.key(1)[0] == "test_store.add" and add.key(1) != add_again.key(1)
    assert add.key(1, 2, x=1, y=2) == add.key(1, 2, y=2, x=1)  # keyword order
    assert add.key(1, 2, 3) != add.key(1, 2) and add.key(1, [1, 2]) == add.key(1, (1, 2))  # lists as tuples
    assert add(1) == add(1, 1) == add(a=1) == 2 and add(1, 2, 3, x=4) == 10
    assert [c[0] for c in CALLS] == ["add", "add"]  # add(1) once, add(1, 2, 3, x=4) once
    assert add_again(1) == 2 and CALLS[-1][0] == "add_again"
    assert slow.key("m", 3) == slow.key("m", 3, progress=lambda f: None)  # the callback is no part of the key
    with pytest.raises(TypeError, match="hashable"):
        add.key(1, {1, 2}, np.zeros(2))


def test_a_spinner_only_while_missing_and_never_inside_a_computation(drawn):
    assert outer(2) == 21
    assert drawn.items == [("spinner", "Decoding…")]  # not inner's: it ran inside outer's computation
    assert outer(2) == 21 and inner(2) == 20
    assert drawn.items == [("spinner", "Decoding…")]  # present: nothing drawn
    assert inner(3) == 30 and drawn.items[-1] == ("spinner", "Running the model…")
    assert CALLS == [("outer", 2), ("inner", 2), ("inner", 3)]


def test_a_progress_bar_drawn_by_the_caller_and_moved_by_the_computation(drawn):
    assert slow("minilm-l6", 2) == 2
    label = "Building the head atlas of minilm-l6 (runs the probe battery once)…"
    assert drawn.items == [("progress", 0.0, label), ("tick", 0.5, label), ("tick", 1.0, label), ("empty",)]
    assert slow("minilm-l6", 2) == 2 and len(drawn.items) == 4  # present: no bar


def test_one_computation_for_sessions_asking_at_once(drawn):
    results, started = [], threading.Barrier(4)

    @memo
    def once(x: int) -> int:
        CALLS.append(("once", x))
        time.sleep(0.2)
        return x

    def ask():
        started.wait()
        results.append(once(7))

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert results == [7, 7, 7, 7] and CALLS == [("once", 7)]


def test_a_result_over_the_budget_is_refused_and_not_kept(drawn):
    with pytest.raises(BudgetError):
        big(9)
    assert big(1).nbytes == 1024 * 1024
    assert big.key(9) not in store.results() and big.key(1) in store.results()


def test_a_failed_computation_is_not_kept(drawn):
    @memo
    def fails(x: int) -> int:
        CALLS.append(("fails", x))
        raise ValueError("no")

    for _ in range(2):  # a failure is not kept: the next call computes again
        with pytest.raises(ValueError):
            fails(1)
    assert CALLS == [("fails", 1), ("fails", 1)] and not store.computing()
