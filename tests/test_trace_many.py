"""Traces of several texts from one padded forward, and the micro-batcher that groups the sessions' requests: the
app shows the same numbers whichever way a sentence was run."""

import threading
import time

import numpy as np
import pytest

from analysis import trace as traces
from analysis.batching import MicroBatcher
from model import InputError

TEXTS = ["The animal didn't cross the street because it was tired",
         "it",
         "Mina left her umbrella on the bus this morning, and nobody noticed until the rain started",
         "한국어 문장도 넣어 봅니다",
         "<script>alert(1)</script> & emoji 🙂"]


def test_stack_copies_layer_by_layer_and_releases():
    """model.loaded._stack: one batch row of every layer's maps in one array, equal to torch.stack's; with release,
    each layer's tensor is dropped from the list once copied (a trace never holds the maps twice)."""
    import torch

    from model.loaded import _stack

    layers = [torch.randn(2, 3, 5, 5) for _ in range(4)]
    want = torch.stack([a[1, :, :4, :4] for a in layers]).numpy()
    np.testing.assert_array_equal(_stack(list(layers), 1, 4), want)
    kept = list(layers)
    got = _stack(kept, 0, release=True)
    np.testing.assert_array_equal(got, torch.stack([a[0] for a in layers]).numpy())
    assert kept == [None] * 4 and got.dtype == np.float32 and got.flags.owndata


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_stack_on_device_equals_stack_bit_for_bit(dtype):
    """The accelerator's path (model.loaded._stack_on_device: stacked there, moved once) gives `_stack`'s array bit
    for bit; run here on CPU tensors (no GPU on the development machine), both row cuts, with release."""
    import torch

    from model.loaded import _stack, _stack_on_device

    layers = [torch.randn(3, 2, 6, 6).to(getattr(torch, dtype)) for _ in range(5)]
    for row, n in ((2, 4), (0, None), (1, 6)):
        want = _stack(list(layers), row, n)
        got = _stack_on_device(list(layers), row, n)
        assert got.dtype == np.float32 and got.shape == want.shape and got.flags.c_contiguous
        assert got.tobytes() == want.tobytes()
    kept = list(layers)
    got = _stack_on_device(kept, 1, 3, release=True)
    assert kept == [None] * 5 and got.tobytes() == _stack(list(layers), 1, 3).tobytes()


def test_trace_many_equals_trace_one_by_one(minilm):
    many = traces.trace_many(minilm, TEXTS)
    for text, got in zip(TEXTS, many):
        want = traces.trace(minilm, text)
        assert got.text == text
        assert got.source_tokens == want.source_tokens and got.source_ids == want.source_ids
        assert got.encoder_attention.shape == want.encoder_attention.shape  # (L, h, n, n): its own n, no padding
        np.testing.assert_allclose(got.encoder_attention, want.encoder_attention, atol=1e-5)  # the parity bound
        np.testing.assert_allclose(got.encoder_hidden_states, want.encoder_hidden_states, atol=1e-4)
        np.testing.assert_allclose(got.encoder_attention.sum(-1), 1.0, atol=1e-5)  # padding keys got no weight
        assert not got.encoder_attention.flags.writeable  # shared by sessions: read-only
        assert got.masks["source_padding"].all()


def test_trace_many_refuses_bad_text_like_trace(minilm):
    with pytest.raises(InputError):
        traces.trace_many(minilm, ["fine", "   "])


def test_batcher_groups_waiting_requests_and_keeps_their_order():
    seen = []
    gate = threading.Event()

    def fn(items):
        seen.append(list(items))
        gate.wait(5)  # the first batch holds the worker while the others queue
        return [x * 10 for x in items]

    b = MicroBatcher(fn, max_items=8, max_cost=100, cost=lambda x: 1)
    out = {}
    threads = [threading.Thread(target=lambda i=i: out.__setitem__(i, b.submit(i))) for i in range(6)]
    threads[0].start()
    time.sleep(0.2)  # request 0 runs alone; 1..5 arrive while it runs
    for t in threads[1:]:
        t.start()
    time.sleep(0.2)
    gate.set()
    for t in threads:
        t.join(5)
    assert out == {i: i * 10 for i in range(6)}
    assert seen[0] == [0] and sorted(seen[1]) == [1, 2, 3, 4, 5] and len(seen) == 2


def test_batcher_cost_bound_and_failure_isolation():
    def fn(items):
        if "bad" in items:
            raise ValueError("bad item")
        return [len(x) for x in items]

    b = MicroBatcher(fn, max_items=8, max_cost=5, cost=len)
    assert b.submit("abc") == 3
    with pytest.raises(ValueError, match="bad item"):
        b.submit("bad")
    # a failing batch is retried item by item: only the bad request fails
    results, errors = {}, {}
    gate = threading.Event()
    slow = MicroBatcher(lambda items: (gate.wait(5), fn(items))[1], max_items=8, max_cost=100, cost=len)

    def ask(x):
        try:
            results[x] = slow.submit(x)
        except ValueError as exc:
            errors[x] = exc

    first = threading.Thread(target=ask, args=("hold",))
    first.start()
    time.sleep(0.2)
    rest = [threading.Thread(target=ask, args=(x,)) for x in ("ok", "bad", "fine")]
    for t in rest:
        t.start()
    time.sleep(0.2)
    gate.set()
    for t in [first, *rest]:
        t.join(5)
    assert results == {"hold": 4, "ok": 2, "fine": 4} and set(errors) == {"bad"}
    assert b.items >= 1 and slow.batches >= 3


TEXTS_SHORT = ["The animal did not cross the street because it was tired", "i am good", "you are here now"]


@pytest.mark.parametrize("model_type,overrides", [("bert", {}), ("roberta", {}), ("xlm-roberta", {"pad_token_id": 1}),
                                                  ("distilbert", {})])
def test_trace_many_on_local_encoder_folders(tmp_path, model_type, overrides):
    """The batched traces of local BERT-family folders (learned positions, RoBERTa's offset, DistilBERT's sinusoids,
    another pad id) equal their one-by-one traces: the app batches any encoder's short sentences."""
    import torch
    from hf_support import make_encoder

    from model.hf.load import load_local

    _, path = make_encoder(model_type, tmp_path / model_type, **overrides)
    ours = load_local(torch.device("cpu"), path)
    assert traces.can_batch(ours)
    for text, got in zip(TEXTS_SHORT, traces.trace_many(ours, TEXTS_SHORT)):
        want = traces.trace(ours, text)
        assert got.source_ids == want.source_ids
        np.testing.assert_allclose(got.encoder_attention, want.encoder_attention, atol=1e-5)
        np.testing.assert_allclose(got.encoder_hidden_states, want.encoder_hidden_states, atol=1e-4)


@pytest.mark.slow
def test_trace_many_on_multilingual_e5():
    from model import load_model

    e5 = load_model("multilingual-e5-small", "cpu")
    texts = ["우리는 내일 아침 일찍 기차를 타고 부산에 간다", "The cat sat", "그 동물은 너무 피곤해서 길을 건너지 않았다"]
    for text, got in zip(texts, traces.trace_many(e5, texts)):
        want = traces.trace(e5, text)
        assert got.source_tokens == want.source_tokens
        np.testing.assert_allclose(got.encoder_attention, want.encoder_attention, atol=1e-5)
        np.testing.assert_allclose(got.encoder_hidden_states, want.encoder_hidden_states, atol=1e-4)


def test_models_without_trace_many_are_not_batched(paper_base):
    assert not traces.can_batch(paper_base)  # an encoder-decoder traces its own way (greedy decoding first)
