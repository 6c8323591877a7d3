"""analysis.cache: an LRU cache bounded by bytes, thread-safe, one computation per key."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import numpy as np
import pytest

from analysis.cache import (
    DEFAULT_BUDGET_MB,
    ENTRY_OVERHEAD,
    ENV_BUDGET,
    BudgetError,
    ByteBudgetCache,
    budget_bytes,
    nbytes_of,
)
from model.errors import HeadlightError
from model.trace import AttentionTrace

MB = 1024 * 1024


def blob(mb: float) -> np.ndarray:
    return np.zeros(int(mb * MB), dtype=np.uint8)


def small_trace(n: int = 6, layers: int = 2, heads: int = 3, *, seq2seq: bool = False) -> AttentionTrace:
    rng = np.random.default_rng(0)
    att = rng.random((layers, heads, n, n), dtype=np.float32)
    kw = {}
    if seq2seq:
        t = 4
        kw = dict(target_tokens=["<bos>", "a", "b", "c"], target_ids=[1, 2, 3, 4],
                  target_special=[True, False, False, False],
                  decoder_self_attention=rng.random((layers, heads, t, t), dtype=np.float32),
                  cross_attention=rng.random((layers, heads, t, n), dtype=np.float32),
                  decoder_hidden_states=rng.random((layers + 1, t, 8), dtype=np.float32))
    return AttentionTrace(
        model="tiny", text="a b c d", source_tokens=[f"t{i}" for i in range(n)], source_ids=list(range(n)),
        source_special=[False] * n, source_word_ids=list(range(n)), encoder_attention=att,
        masks={"source": np.ones((n, n), dtype=bool)},
        encoder_hidden_states=rng.random((layers + 1, n, 8), dtype=np.float32), **kw)


# ---- nbytes_of ----------------------------------------------------------------------------------------------
def test_nbytes_of_a_real_trace_counts_every_array():
    tr = small_trace()
    arrays = tr.encoder_attention.nbytes + tr.encoder_hidden_states.nbytes + tr.masks["source"].nbytes
    got = nbytes_of(tr)
    assert got >= arrays + ENTRY_OVERHEAD
    assert got - arrays - ENTRY_OVERHEAD < 2_000  # the rest: token strings and the text
    assert got >= tr.nbytes()  # at least what the trace itself reports


def test_nbytes_of_encoder_decoder_trace():
    tr = small_trace(seq2seq=True)
    arrays = sum(a.nbytes for a in (tr.encoder_attention, tr.decoder_self_attention, tr.cross_attention,
                                    tr.encoder_hidden_states, tr.decoder_hidden_states, tr.masks["source"]))
    assert arrays + ENTRY_OVERHEAD <= nbytes_of(tr) < arrays + ENTRY_OVERHEAD + 2_000


def test_nbytes_of_counts_each_array_once_and_survives_cycles():
    a = blob(1)

    @dataclass
    class Holder:
        x: np.ndarray
        y: object = None

    h = Holder(a)
    h.y = {"same": a, "view": a[: 1000], "list": [a, (a,)], "self": h}  # a cycle and three more references
    assert nbytes_of(h, overhead=0) == a.nbytes + len("same") + len("view") + len("list") + len("self")


def test_nbytes_of_plain_objects_and_tensors():
    import torch as torch

    class Plain:
        def __init__(self):
            self.t = torch.zeros(1000, dtype=torch.float32)
            self.shared = self.t[:10]  # shares the storage: counted once
            self.n = np.ones(250, dtype=np.float64)

    assert nbytes_of(Plain(), overhead=0) == 4000 + 2000
    p = Plain()
    p.module, p.fn, p.cls = np, nbytes_of, Plain  # referenced, not owned: not followed
    assert nbytes_of(p, overhead=0) == 4000 + 2000
    assert nbytes_of(None) == ENTRY_OVERHEAD


def test_nbytes_of_counts_the_whole_storage_behind_a_slice():
    """An array made from a slice of a tensor keeps the tensor's whole storage alive: it is counted at that size
    (one head of a 12-head record of a 512-token text showed 1 MiB and kept 12), once however many slices reach it."""
    import torch as torch
    t = torch.zeros(12, 1000, dtype=torch.float32)
    assert nbytes_of(t[3].numpy(), overhead=0) == 48_000
    assert nbytes_of({"a": t[3].numpy(), "b": t[4].numpy(), "c": t[5]}, overhead=0) == 48_000 + 3
    assert nbytes_of(t[3].clone().numpy(), overhead=0) == 4_000


def test_to_numpy_copies_a_view_of_a_larger_tensor():
    import torch as torch

    from analysis.frozen import to_numpy

    with torch.inference_mode():
        t = torch.randn(1, 12, 8, 8)
    one = to_numpy(t[0, 5])
    np.testing.assert_array_equal(one, t[0, 5].numpy())
    assert nbytes_of(one, overhead=0) == 8 * 8 * 4  # its own numbers, not the 12 heads'
    whole = to_numpy(t)
    assert np.shares_memory(whole, t.numpy())  # a whole tensor is not copied
    assert to_numpy(torch.ones(3, 4, dtype=torch.bool)[1]).dtype == np.bool_


def test_nbytes_of_deep_nesting_does_not_recurse():
    deep: list = [blob(0.001)]
    for _ in range(5_000):
        deep = [deep]
    assert nbytes_of(deep, overhead=0) == blob(0.001).nbytes


# ---- eviction by bytes, LRU order ------------------------------------------------------------------------
def test_evicts_by_bytes_not_entries():
    cache = ByteBudgetCache(10 * MB)
    for k in range(4):
        cache.get_or_create(k, lambda: blob(3))
    assert cache.keys() == [1, 2, 3]  # 4 x 3 MB do not fit in 10 MB: the oldest went
    assert cache.nbytes <= 10 * MB
    assert cache.stats()["evictions"] == 1
    for k in range(10, 110):  # many small entries do fit
        cache.get_or_create(k, lambda: blob(0.01))
    assert len(cache) >= 100
    assert cache.nbytes <= cache.budget_bytes


def test_lru_order_follows_use():
    cache = ByteBudgetCache(10 * MB)
    for k in "abc":
        cache.get_or_create(k, lambda: blob(3))
    assert cache.get("a") is not None  # a is now the most recent
    cache.get_or_create("b", lambda: pytest.fail("b is cached"))  # and then b
    cache.get_or_create("d", lambda: blob(3))
    assert cache.keys() == ["a", "b", "d"]  # c, the least recently used, was evicted
    cache.get_or_create("e", lambda: blob(6.9))
    assert cache.keys() == ["d", "e"]  # as many as needed to fit 6.9 MB, no more
    assert cache.get("a") is None


def test_custom_sizeof_and_clear():
    cache = ByteBudgetCache(100, sizeof=len)
    cache.get_or_create("x", lambda: "a" * 60)
    cache.get_or_create("y", lambda: "b" * 60)
    assert cache.keys() == ["y"] and cache.nbytes == 60
    cache.clear()
    assert len(cache) == 0 and cache.nbytes == 0
    assert cache.get_or_create("y", lambda: "c") == "c"


# ---- over budget ----------------------------------------------------------------------------------------
def test_one_result_over_the_whole_budget_is_a_clear_error():
    cache = ByteBudgetCache(5 * MB)
    kept = cache.get_or_create("small", lambda: blob(1))
    with pytest.raises(BudgetError) as err:
        cache.get_or_create("huge", lambda: blob(12))
    assert isinstance(err.value, HeadlightError)  # the app shows it as a message, not a crash
    msg = str(err.value)
    assert "12 MB" in msg and "5.0 MB" in msg and ENV_BUDGET in msg
    assert cache.get("small") is kept and "huge" not in cache  # nothing evicted for it, nothing stored
    assert cache.stats()["rejected"] == 1


def test_budget_from_environment(monkeypatch):
    monkeypatch.setenv(ENV_BUDGET, "256")
    assert budget_bytes() == 256 * MB
    for bad in ("", "lots", "-5", "0", "nan", "inf"):
        monkeypatch.setenv(ENV_BUDGET, bad)
        assert budget_bytes() == DEFAULT_BUDGET_MB * MB
    monkeypatch.delenv(ENV_BUDGET)
    assert budget_bytes() == 1024 * MB
    with pytest.raises(ValueError):
        ByteBudgetCache(0)


# ---- threads --------------------------------------------------------------------------------------------
def test_one_computation_for_concurrent_requests_of_one_key():
    cache = ByteBudgetCache(100 * MB)
    calls = []
    start = threading.Barrier(16)
    results = [None] * 16

    def factory():
        calls.append(threading.get_ident())
        time.sleep(0.2)  # long enough for every thread to arrive while it runs
        return blob(1)

    def worker(i):
        start.wait()
        results[i] = cache.get_or_create(("minilm-l6", "cpu", "same text"), factory)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(calls) == 1
    assert all(r is results[0] for r in results)
    assert cache.stats()["misses"] == 1 and cache.stats()["hits"] == 15


def test_different_keys_compute_in_parallel():
    """The factory runs outside the global lock: two slow keys take ~one factory time, not two."""
    cache = ByteBudgetCache(100 * MB)
    inside = threading.Barrier(2, timeout=5)  # both factories must be running at the same time

    def factory():
        inside.wait()
        return blob(0.1)

    threads = [threading.Thread(target=cache.get_or_create, args=(k, factory)) for k in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not inside.broken
    assert set(cache.keys()) == {"a", "b"}


def test_a_failing_factory_caches_nothing_and_others_retry():
    cache = ByteBudgetCache(10 * MB)
    n = {"calls": 0}

    def flaky():
        n["calls"] += 1
        if n["calls"] == 1:
            raise RuntimeError("first call fails")
        return blob(1)

    with pytest.raises(RuntimeError):
        cache.get_or_create("k", flaky)
    assert "k" not in cache
    assert cache.get_or_create("k", flaky).nbytes == MB
    assert n["calls"] == 2
    assert cache._key_locks == {}  # no per-key lock left behind


def test_many_threads_many_keys_stay_within_budget():
    cache = ByteBudgetCache(8 * MB)
    errors = []

    def worker(seed):
        try:
            for i in range(60):
                k = (seed * 7 + i) % 25
                v = cache.get_or_create(k, lambda k=k: np.full(MB // 2, k, dtype=np.uint8))
                assert v[0] == k
                assert cache.nbytes <= cache.budget_bytes
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors
    assert cache.nbytes <= cache.budget_bytes
    assert cache.nbytes == sum(nbytes_of(cache.get(k)) for k in cache.keys())
    assert cache._key_locks == {}
