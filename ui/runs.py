"""Each view's computations, kept in the shared store (ui/store.py `memo`): the sidebar's trace, then the explorer,
step by step, masks, decoding, positions and the Head lab. Each asks analysis/ for its result; none draws (a
spinner or a progress bar is named by `memo` and drawn by the calling session). Pages call them directly:
`runs.derived(view.model_name, view.device, view.text, ...)`.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from analysis import atlas, cause, class_heads, decoding, explore, flow, heads, masks, positional, stages, vocab
from analysis import crosslingual as xl
from analysis import trace as traces
from analysis.batching import MicroBatcher
from analysis.frozen import freeze
from model import HeadlightError, models_with
from model.trace import AttentionTrace
from viz.attention import mosaic

from .store import get_model, is_loaded, memo, results

TASK_MODEL = models_with(tasks=True)[0]  # the encoder-decoder with tasks (seq2seq-tiny): the decoding runs' default

THUMB = 24  # thumbnail side in the all-heads grid (pooled)


# ---- the sidebar's trace -----------------------------------------------------------------------------------------
@memo(spinner="cache.running_model")
def get_trace(name: str, device: str, text: str) -> AttentionTrace:
    """One trace per (model, device, text), with the per-layer hidden states."""
    return traces.trace(get_model(name, device), text)


PREFETCH_CHARS = 400  # texts up to this long go through the batcher (a sentence; ~100 tokens at most)
BATCH_ITEMS = 16  # at most this many texts per padded forward
BATCH_CHARS = 4096  # and at most this many characters: bounds the padded batch's memory


@st.cache_resource(show_spinner=False)
def _batcher(name: str, device: str) -> MicroBatcher:
    """One worker per model and device that traces the short texts waiting at once in one padded forward."""
    loaded = get_model(name, device)
    return MicroBatcher(lambda texts: traces.trace_many(loaded, texts), max_items=BATCH_ITEMS, max_cost=BATCH_CHARS,
                        cost=len, name=f"headlight-batch-{name}")


def prefetch_trace(name: str, device: str, text: str) -> None:
    """get_trace's result for a short text, computed through the model's batcher and outside any compute slot (the
    shell calls this before the run takes its slot, so the sessions waiting for slots are batched together). Only
    for a model already loaded that traces in batches; errors are left to get_trace, which the sidebar calls."""
    if not text.strip() or len(text) > PREFETCH_CHARS or not is_loaded(name, device):
        return
    key = get_trace.key(name, device, text)
    store = results()
    if key in store or not traces.can_batch(get_model(name, device)):
        return
    try:
        store.get_or_create(key, lambda: _batcher(name, device).submit(text))
    except HeadlightError:
        pass


# ---- explorer -------------------------------------------------------------------------------------------------
@memo
def derived(name: str, device: str, text: str, block: str, mode: str, hide: bool, merge: bool,
            spell: bool = False) -> explore.Derived:
    return explore.derive(get_trace(name, device, text), block, mode, hide, merge, spell)


@memo
def thumbnails(name: str, device: str, text: str, block: str, mode: str, hide: bool, merge: bool,
               spell: bool = False):
    """(mosaic image, t, u) of the all-heads grid for a derived view."""
    return mosaic(derived(name, device, text, block, mode, hide, merge, spell).att, size=THUMB)


@memo
def block_metrics(name: str, device: str, text: str, block: str) -> dict[str, np.ndarray]:
    return explore.block_metrics(get_trace(name, device, text), block)


@memo(spinner="cache.running_model")
def greedy_steps(name: str, device: str, text: str, k: int) -> tuple:
    """A decoder-only model's first k greedy steps after `text` (model/loaded.py Step), each length made
    from the one before it: one more step is one more forward."""
    done = greedy_steps(name, device, text, k - 1) if k > 1 else ()
    more = get_model(name, device).greedy_continue(text, 1, top_k=5, prefix=tuple(s.choice.id for s in done))
    return done + tuple(more)


def greedy_continuation(name: str, device: str, text: str, n_new: int = 8) -> tuple:
    """A decoder-only model's greedy continuation of `text`, step by step, up to n_new steps or the model's last
    position (a forward of a 124M GPT-2 reads all its 0.5 GB of weights, ~85 ms on one core, so eight steps at once
    took 0.7 s: each length is kept, and asking for one more step runs one more forward)."""
    steps: tuple = ()
    for k in range(1, n_new + 1):
        nxt = greedy_steps(name, device, text, k)
        if len(nxt) == len(steps):  # the model's positions are full
            break
        steps = nxt
    return steps


# ---- step by step, masks, decoding, positions ------------------------------------------------------------------
@memo(spinner="cache.reading_head")
def attention_steps(name: str, device: str, text: str, block: str, layer: int, head: int) -> dict:
    return stages.attention_steps(get_model(name, device), get_trace(name, device, text), block, layer, head)


@memo(spinner="cache.reading_layer")
def sublayer_steps(name: str, device: str, text: str, block: str, layer: int) -> dict:
    """analysis.stages.sublayer_steps: one layer's Add & Norm and Feed Forward intermediates (a decoder layer's are
    the same for its self- and cross-attention blocks)."""
    return stages.sublayer_steps(get_model(name, device), get_trace(name, device, text), block, layer)


@memo(spinner="cache.reading_output")
def vocab_output(name: str, device: str, text: str, k: int = 5) -> dict:
    """The final linear layer and Softmax of an encoder-decoder on the trace's decoder input (analysis.vocab), checked
    against the output layer applied to the last decoder layer's output, as the Step by step page shows it."""
    loaded = get_model(name, device)
    last = sublayer_steps(name, device, text, "decoder_self", loaded.config.n_decoder_layers - 1)["output"]  # (T, d)
    return vocab.output_distribution(loaded, get_trace(name, device, text), last, k)


@memo(spinner="cache.padded_batch")
def padded_run(name: str, device: str, first: str, second: str, layer: int) -> masks.PaddedRun:
    return masks.padded_run(get_model(name, device), [first, second], layers={layer}, upto=layer)


@memo(spinner="cache.decoder")
def decoder_run(name: str, device: str, sentence: str, n_pad: int, layer: int) -> masks.DecoderRun:
    return masks.decoder_run(get_model(name, device), sentence, sentence, n_pad, layers={layer})


def decoding_run(device: str, text: str, task: str | None, teacher: bool, name: str = TASK_MODEL,
                 target: str | None = None, full_vocab: bool = False) -> decoding.DecodingRun:
    """Greedy decoding or teacher forcing on `name` (seq2seq-tiny with its task, or a model with no task, e.g. a
    translator or a local encoder-decoder folder, teacher-forced on the typed `target`). full_vocab: a translator
    decodes over its whole vocabulary, not its shortlist."""
    if teacher:
        return teacher_forced_run(name, device, text, task, target)
    return greedy_run(name, device, text, task, full_vocab)


@memo(spinner="cache.decoding")
def greedy_run(name: str, device: str, text: str, task: str | None, full_vocab: bool = False) -> decoding.DecodingRun:
    return decoding.greedy_run(get_model(name, device), text, task, full_vocab=full_vocab)


@memo(spinner="cache.decoding")
def teacher_forced_run(name: str, device: str, text: str, task: str | None, target: str | None) -> decoding.DecodingRun:
    return decoding.teacher_forced_run(get_model(name, device), text, task, target)


@memo
def pe_table(n: int, d: int, layout: str = "interleaved") -> np.ndarray:
    return positional.sinusoidal(n, d, layout)  # (n, d)


@memo(spinner="cache.similarity")
def pe_similarity(n: int, d: int, cosine: bool, layout: str = "interleaved") -> np.ndarray:
    return positional.similarity(pe_table(n, d, layout), cosine)  # (n, n)


def learned_positions(name: str, device: str) -> tuple[np.ndarray, np.ndarray]:
    """A model's learned position rows (all it has, at most 512) and their cosine similarity."""
    get_model(name, device)  # loaded here, under its spinner, when the sidebar runs another model
    return model_positions(name, device)


@memo
def model_positions(name: str, device: str) -> tuple[np.ndarray, np.ndarray]:
    table = traces.position_table(get_model(name, device), 512)  # (n <= 512, d)
    return table, positional.similarity(table, cosine=True)


@memo
def embedding_parts(name: str, device: str, text: str) -> tuple[list[str], dict[str, np.ndarray]]:
    enc, parts = get_model(name, device).embedding_parts(text)
    return freeze((enc.tokens, parts))


# ---- head lab --------------------------------------------------------------------------------------------------
@memo
def minimal_pair(name: str, device: str, a: str, b: str, query: str, c1: str, c2: str):
    return heads.minimal_pair(get_model(name, device), a, b, query, (c1, c2))


@memo
def encoder_baseline(name: str, device: str, text: str):
    return heads.encoder_run(get_model(name, device), text)


@memo
def encoder_effect(name: str, device: str, text: str, chosen: tuple, mode: str):
    return heads.encoder_effect(get_model(name, device), text, chosen, mode,
                                baseline=encoder_baseline(name, device, text))


@memo
def decoder_effect(name: str, device: str, text: str, chosen: tuple, mode: str, task: str):
    return heads.decoder_effect(get_model(name, device), text, chosen, mode, task=task)


@memo
def next_token_effect(name: str, device: str, text: str, chosen: tuple, mode: str):
    return heads.next_token_effect(get_model(name, device), text, chosen, mode)


@memo(progress="cache.ablating")
def rank_heads(name: str, device: str, text: str, mode: str, progress=None):
    return heads.rank_heads_by_effect(get_model(name, device), text, mode, progress=progress,
                                      baseline=encoder_baseline(name, device, text))


@memo
def value_norms(name: str, device: str, text: str, **kw):
    return heads.value_norms(get_model(name, device), text, **kw)


@memo(progress="cache.flow")
def attention_flow(name: str, device: str, text: str, token: int, progress=None):
    trace = get_trace(name, device, text)
    att = trace.attention(trace.blocks[0])  # the encoder's, or a decoder-only model's causal self-attention
    return flow.flow_and_rollout(att, trace.source_tokens, token, progress=progress)


@memo
def text_logit_lens(name: str, device: str, text: str):
    """A decoder-only model's logit lens at the last position of the text."""
    return heads.logit_lens(get_model(name, device), text)


@memo
def logit_lens(device: str, text: str, task: str | None, step: int, name: str = TASK_MODEL):
    return heads.logit_lens(get_model(name, device), text, step=step, task=task)


@memo
def attention_sink(name: str, device: str, text: str):
    """Each head's mean weight on the first token of the sidebar's sentence (analysis.heads.attention_sink)."""
    return heads.attention_sink(get_trace(name, device, text))


@memo(spinner="cache.running_model")
def induction(name: str, device: str, repeat: int, seed: int = heads.INDUCTION_SEED):
    """Every head's induction and previous-token scores on `repeat` random ids repeated twice."""
    return heads.induction(get_model(name, device), repeat, seed)


@memo(progress="cache.atlas")  # "Building the head atlas of {name}…"
def head_atlas(name: str, device: str, progress=None, **kw):
    return atlas.build_atlas(get_model(name, device), progress=progress, **kw)


def crosslingual(name: str, device: str, a: tuple[str, str, str], b: tuple[str, str, str]):
    """The Head lab's across-languages view: (sentence, query word, target word) in two languages."""
    get_model(name, device)  # loaded here, under its spinner, when the sidebar runs another model
    return crosslingual_compare(name, device, a, b)


@memo
def crosslingual_compare(name: str, device: str, a: tuple[str, str, str], b: tuple[str, str, str]):
    return xl.compare(get_model(name, device), a, b)


# ---- class mode ---------------------------------------------------------------------------------------------------
@memo(spinner="cache.running_model")
def class_ranking(name: str, device: str, sentences: tuple[tuple[str, int, int], ...]) -> class_heads.HeadRanking:
    """The class's head ranking over approved sentences (text, query token, referent token), each traced once."""
    sents = [class_heads.ClassSentence(*s) for s in sentences]
    return class_heads.rank_heads(get_model(name, device), sents,
                                  traces=[get_trace(name, device, s.text) for s in sents])


# ---- the Head lab's cause views (generation replay, attribution, patching) ----------------------------------------
@memo(progress="cause.progress.generating")
def generation(name: str, device: str, text: str, n: int, temperature: float, top_k: int, top_p: float, seed: int,
               time_uncached: bool = False, progress=None):
    """A decoder-only model's generation replay over its KV cache (analysis.cause.generation)."""
    return cause.generation(get_model(name, device), text, n, cause.Sampling(temperature, top_k, top_p, seed),
                            time_uncached=time_uncached, progress=progress)


@memo(spinner="cache.running_model")
def attribution(name: str, device: str, text: str, target: str, foil: str):
    """Direct logit attribution at the last position of `text` (an empty target: the model's own next token)."""
    return cause.attribution(get_model(name, device), text, target, foil)


@memo(progress="cause.progress.patching")
def patching(name: str, device: str, clean: str, corrupt: str, target: str, foil: str, residual: bool = True,
             progress=None):
    """Activation patching of every head (and of the residual stream), clean into corrupted (a progress bar; the
    app's Stop ends it at the next layer, and nothing partial is kept)."""
    return cause.patching(get_model(name, device), clean, corrupt, target, foil, residual=residual, progress=progress)
