"""Every cache of the app, in one place. Results are shared by all sessions and never changed: the analysis package
returns frozen dataclasses with read-only arrays.

- the models: one st.cache_resource per (name, device), holding no per-request state;
- traces and every derived result: one process-wide LRU cache bounded by bytes (analysis.cache.ByteBudgetCache,
  HEADLIGHT_CACHE_MB, default 1024 MiB), keyed by the inputs that determine them, so changing layer, head or token
  re-runs neither the model nor a transform, and 48 texts of 512 tokens cannot grow the process past the budget.
  One result larger than the whole budget is refused with a message (BudgetError), never kept. Two sessions asking
  for the same missing result compute it once.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable

import numpy as np
import streamlit as st

from analysis import atlas, decoding, explore, flow, heads, masks, positional, stages
from analysis import trace as traces
from analysis.cache import ByteBudgetCache, budget_bytes
from analysis.frozen import freeze
from i18n import error_message, t
from model import DEFAULT_MODEL, HeadlightError, load_model
from model.trace import AttentionTrace
from viz.attention import mosaic

from .widgets import session_lang

THUMB = 24  # thumbnail side in the all-heads grid (pooled)
LAB_ENCODER_DECODERS = ("seq2seq-tiny", "paper-base")  # the labs' encoder-decoder: the trained one when it loads


def _msg(key: str, **fmt) -> str:
    """A progress message or notice in the session's language."""
    return t(key, session_lang(), **fmt)


@st.cache_resource(max_entries=4, show_spinner=False)
def _load_model(name: str, device: str):
    return load_model(name, device)


_LOADED: set[tuple[str, str]] = set()  # (name, device) loaded at least once: no spinner, no message


def get_model(name: str, device: str):
    """The shared model (loaded once per process); a spinner in the session's language while it loads."""
    if (name, device) in _LOADED:
        return _load_model(name, device)
    with st.spinner(_msg("cache.loading_model")):
        model = _load_model(name, device)
    _LOADED.add((name, device))
    return model


@st.cache_resource(show_spinner=False)
def results() -> ByteBudgetCache:
    """The one byte-bounded cache of results, shared by every session of this process."""
    return ByteBudgetCache(budget_bytes())


# At most this many script runs (and the results they compute) at once in a process: default one per core (more only
# wait for the CPU and multiply the working set: 48 students each opening a 512-token text at once took the process
# to 4-17 GB). The shell holds a slot for the whole run; a result computed outside a run takes one for itself.
MAX_RUNS = int(os.environ.get("HEADLIGHT_MAX_RUNS", "0")) or (os.cpu_count() or 1)
_RUNS = threading.BoundedSemaphore(MAX_RUNS)
_HELD = threading.local()  # re-entrant per thread: a result computed inside another's factory takes no second slot


@contextlib.contextmanager
def compute_slot():
    if getattr(_HELD, "depth", 0):
        _HELD.depth += 1
        try:
            yield
        finally:
            _HELD.depth -= 1
        return
    with _RUNS:
        _HELD.depth = 1
        try:
            yield
        finally:
            _HELD.depth = 0


def _in_slot(factory: Callable[[], object]):
    with compute_slot():
        return factory()


def cached(key: tuple, factory: Callable[[], object], spinner: str | None = None):
    """The result for `key` from the shared cache, computed by `factory` (under a spinner, in a compute slot) when
    missing."""
    cache = results()
    make = lambda: _in_slot(factory)  # noqa: E731
    if spinner is None or key in cache:
        return cache.get_or_create(key, make)
    with st.spinner(spinner):
        return cache.get_or_create(key, make)


def get_trace(name: str, device: str, text: str) -> AttentionTrace:
    """One trace per (model, device, text), with the per-layer hidden states."""
    return cached(("trace", name, device, text), lambda: traces.trace(get_model(name, device), text),
                  _msg("cache.running_model"))


def model_or_default(name: str, device: str, notices: list[str]) -> tuple[str, object]:
    """The model asked for, or the default one with a notice when it cannot load."""
    try:
        return name, get_model(name, device)
    except (HeadlightError, ImportError, OSError) as exc:
        if name == DEFAULT_MODEL:
            raise
        notices.append(_msg("error.model_fallback", name=name, msg=error_message(exc, session_lang()), default=DEFAULT_MODEL))
        return DEFAULT_MODEL, get_model(DEFAULT_MODEL, device)


def lab_encoder_decoder(device: str):
    """(loaded, note): the first encoder-decoder that loads; the note says when its weights are untrained."""
    errors = []
    for name in LAB_ENCODER_DECODERS:
        try:
            loaded = get_model(name, device)
        except (HeadlightError, ImportError, OSError):
            errors.append(name)
            continue
        note = None if loaded.trained else (_msg("error.lab_untrained_missing", name=name, missing=errors[0]) if errors
                                            else _msg("error.lab_untrained", name=name))
        return loaded, note
    raise HeadlightError("No encoder-decoder model could be loaded: " + ", ".join(errors), key="no_encoder_decoder",
                         names=", ".join(errors))


# ---- explorer -------------------------------------------------------------------------------------------------
def derived(name: str, device: str, text: str, block: str, mode: str, hide: bool, merge: bool) -> explore.Derived:
    return cached(("derived", name, device, text, block, mode, hide, merge),
                  lambda: explore.derive(get_trace(name, device, text), block, mode, hide, merge))


def thumbnails(name: str, device: str, text: str, block: str, mode: str, hide: bool, merge: bool):
    """(mosaic image, t, u) of the all-heads grid for a derived view."""
    return cached(("thumbnails", name, device, text, block, mode, hide, merge),
                  lambda: mosaic(derived(name, device, text, block, mode, hide, merge).att, size=THUMB))


def block_metrics(name: str, device: str, text: str, block: str) -> dict[str, np.ndarray]:
    return cached(("metrics", name, device, text, block),
                  lambda: explore.block_metrics(get_trace(name, device, text), block))


# ---- step by step, masks, decoding, positions ------------------------------------------------------------------
def attention_steps(name: str, device: str, text: str, block: str, layer: int, head: int) -> dict:
    return cached(("steps", name, device, text, block, layer, head), lambda: stages.attention_steps(
        get_model(name, device), get_trace(name, device, text), block, layer, head),
        _msg("cache.reading_head"))


def sublayer_steps(name: str, device: str, text: str, block: str, layer: int) -> dict:
    """analysis.stages.sublayer_steps: one layer's Add & Norm and Feed Forward intermediates (a decoder layer's are
    the same for its self- and cross-attention blocks)."""
    return cached(("sublayers", name, device, text, block, layer), lambda: stages.sublayer_steps(
        get_model(name, device), get_trace(name, device, text), block, layer), _msg("cache.reading_layer"))


def vocab_output(name: str, device: str, text: str, k: int = 5) -> dict:
    """The final linear layer and Softmax of an encoder-decoder, on the trace's decoder input (teacher forcing):
    the model's own logits (T, V) from its forward, their top-k probabilities per position, the output layer's
    shape, and the largest difference between the logits and the output layer applied to the last decoder layer's
    output (as the Step by step page shows it)."""
    def make():
        import torch

        loaded, trace = get_model(name, device), get_trace(name, device, text)
        module = loaded.module
        last = loaded.config.n_decoder_layers - 1
        h = sublayer_steps(name, device, text, "decoder_self", last)["norm3"]  # (T, d)
        src = torch.tensor([trace.source_ids], device=loaded.device)
        tgt = torch.tensor([trace.target_ids], device=loaded.device)
        with torch.inference_mode():
            logits = module(src, tgt).logits[0].float()  # (T, V)
            again = module.generator(torch.tensor(np.array(h), device=loaded.device)).float()
            probs = logits.softmax(-1)
            top_p, top_i = probs.topk(min(k, probs.shape[-1]), dim=-1)  # (T, k)
        tok = loaded.tokenizer.id_to_token
        return freeze({"top_probs": top_p.cpu().numpy(), "top_tokens": [[tok(i) for i in row] for row in top_i.tolist()],
                       "sums": probs.sum(-1).cpu().numpy(), "vocab": int(logits.shape[-1]),
                       "W": tuple(module.generator.weight.T.shape),
                       "diff": float((logits - again).abs().max())})

    return cached(("vocab_output", name, device, text, k), make, _msg("cache.reading_output"))


def padded_run(name: str, device: str, first: str, second: str, layer: int) -> masks.PaddedRun:
    return cached(("padded", name, device, first, second, layer),
                  lambda: masks.padded_run(get_model(name, device), [first, second], layers={layer}),
                  _msg("cache.padded_batch"))


def decoder_run(name: str, device: str, sentence: str, n_pad: int, layer: int) -> masks.DecoderRun:
    return cached(("decoder", name, device, sentence, n_pad, layer),
                  lambda: masks.decoder_run(get_model(name, device), sentence, sentence, n_pad, layers={layer}),
                  _msg("cache.decoder"))


def decoding_run(device: str, text: str, task: str, teacher: bool) -> decoding.DecodingRun:
    def make():
        model = get_model("seq2seq-tiny", device)
        return decoding.teacher_forced_run(model, text, task) if teacher else decoding.greedy_run(model, text, task)

    return cached(("decoding", device, text, task, teacher), make, _msg("cache.decoding"))


def pe_table(n: int, d: int) -> np.ndarray:
    return cached(("pe", n, d), lambda: positional.sinusoidal(n, d))  # (n, d)


def pe_similarity(n: int, d: int, cosine: bool) -> np.ndarray:
    return cached(("pe_similarity", n, d, cosine), lambda: positional.similarity(pe_table(n, d), cosine),
                  _msg("cache.similarity"))  # (n, n)


def learned_positions(device: str) -> tuple[np.ndarray, np.ndarray]:
    """MiniLM's 512 learned position rows and their cosine similarity."""
    def make():
        table = traces.position_table(get_model("minilm-l6", device), 512)  # (512, 384)
        return table, positional.similarity(table, cosine=True)

    return cached(("learned_positions", device), make)


def embedding_parts(name: str, device: str, text: str) -> tuple[list[str], dict[str, np.ndarray]]:
    def make():
        enc, parts = get_model(name, device).embedding_parts(text)
        return freeze((enc.tokens, parts))

    return cached(("embedding_parts", name, device, text), make)


# ---- head lab --------------------------------------------------------------------------------------------------
def progress_bar(label: str):
    """A st.progress bar and the callback that moves it (fraction 0..1)."""
    bar = st.progress(0.0, text=label)
    return bar, lambda f: bar.progress(min(max(float(f), 0.0), 1.0), text=label)


def minimal_pair(name: str, device: str, a: str, b: str, query: str, c1: str, c2: str):
    return cached(("pair", name, device, a, b, query, c1, c2),
                  lambda: heads.minimal_pair(get_model(name, device), a, b, query, (c1, c2)))


def encoder_baseline(name: str, device: str, text: str):
    return cached(("encoder_run", name, device, text), lambda: heads.encoder_run(get_model(name, device), text))


def encoder_effect(name: str, device: str, text: str, chosen: tuple, mode: str):
    return cached(("encoder_effect", name, device, text, chosen, mode), lambda: heads.encoder_effect(
        get_model(name, device), text, chosen, mode, baseline=encoder_baseline(name, device, text)))


def decoder_effect(name: str, device: str, text: str, chosen: tuple, mode: str, task: str):
    return cached(("decoder_effect", name, device, text, chosen, mode, task),
                  lambda: heads.decoder_effect(get_model(name, device), text, chosen, mode, task=task))


def rank_heads(name: str, device: str, text: str, mode: str):
    def make():
        bar, tick = progress_bar(_msg("cache.ablating"))
        out = heads.rank_heads_by_effect(get_model(name, device), text, mode, progress=tick,
                                         baseline=encoder_baseline(name, device, text))
        bar.empty()
        return out

    return cached(("rank_heads", name, device, text, mode), make)


def value_norms(name: str, device: str, text: str, **kw):
    return cached(("value_norms", name, device, text, tuple(kw.items())),
                  lambda: heads.value_norms(get_model(name, device), text, **kw))


def greedy_continuation(name: str, device: str, text: str, n_new: int = 8) -> tuple:
    """A decoder-only model's greedy continuation of `text`, step by step (model/hf/decoder_only.py Step)."""
    return cached(("greedy", name, device, text, n_new),
                  lambda: tuple(get_model(name, device).greedy_continue(text, n_new, top_k=5)),
                  _msg("cache.running_model"))


def attention_flow(name: str, device: str, text: str, token: int):
    def make():
        trace = get_trace(name, device, text)
        bar, tick = progress_bar(_msg("cache.flow"))
        att = trace.attention(trace.blocks[0])  # the encoder's, or a decoder-only model's causal self-attention
        out = flow.flow_and_rollout(att, trace.source_tokens, token, progress=tick)
        bar.empty()
        return out

    return cached(("flow", name, device, text, token), make)


def logit_lens(device: str, text: str, task: str, step: int):
    return cached(("logit_lens", device, text, task, step),
                  lambda: heads.logit_lens(get_model("seq2seq-tiny", device), text, step=step, task=task))


def head_atlas(name: str, device: str, **kw):
    def make():
        bar, tick = progress_bar(_msg("cache.atlas", name=name))
        out = atlas.build_atlas(get_model(name, device), progress=tick, **kw)
        bar.empty()
        return out

    return cached(("atlas", name, device, tuple(kw.items())), make)
