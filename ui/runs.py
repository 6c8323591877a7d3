"""The cached computations of each view (explorer, step by step, masks, decoding, positions, Head lab): each one a
key of the inputs that determine its result and a factory that asks analysis/ for it, run through ui.cache's one
shared store (`cached`) and its models (`get_model`). ui.cache re-exports these names, so pages call
`cache.derived(...)`, `cache.minimal_pair(...)` as before."""

from __future__ import annotations

import numpy as np
import streamlit as st

from analysis import atlas, decoding, explore, flow, heads, masks, positional, stages
from analysis import trace as traces
from analysis.frozen import freeze
from viz.attention import mosaic

from .cache import THUMB, cached, get_model, get_trace, msg


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
        msg("cache.reading_head"))


def sublayer_steps(name: str, device: str, text: str, block: str, layer: int) -> dict:
    """analysis.stages.sublayer_steps: one layer's Add & Norm and Feed Forward intermediates (a decoder layer's are
    the same for its self- and cross-attention blocks)."""
    return cached(("sublayers", name, device, text, block, layer), lambda: stages.sublayer_steps(
        get_model(name, device), get_trace(name, device, text), block, layer), msg("cache.reading_layer"))


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
        h = sublayer_steps(name, device, text, "decoder_self", last)["output"]  # (T, d)
        src = torch.tensor([trace.source_ids], device=loaded.device)
        tgt = torch.tensor([trace.target_ids], device=loaded.device)
        with torch.inference_mode():
            logits = module(src, tgt).logits[0].float()  # (T, V)
            again = module.output(torch.tensor(np.array(h), device=loaded.device)).float()
            probs = logits.softmax(-1)
            top_p, top_i = probs.topk(min(k, probs.shape[-1]), dim=-1)  # (T, k)
        tok = loaded.tokenizer.id_to_token
        return freeze({"top_probs": top_p.cpu().numpy(), "top_tokens": [[tok(i) for i in row] for row in top_i.tolist()],
                       "sums": probs.sum(-1).cpu().numpy(), "vocab": int(logits.shape[-1]),
                       "W": tuple(module.generator.weight.T.shape),
                       "diff": float((logits - again).abs().max())})

    return cached(("vocab_output", name, device, text, k), make, msg("cache.reading_output"))


def padded_run(name: str, device: str, first: str, second: str, layer: int) -> masks.PaddedRun:
    return cached(("padded", name, device, first, second, layer),
                  lambda: masks.padded_run(get_model(name, device), [first, second], layers={layer}, upto=layer),
                  msg("cache.padded_batch"))


def decoder_run(name: str, device: str, sentence: str, n_pad: int, layer: int) -> masks.DecoderRun:
    return cached(("decoder", name, device, sentence, n_pad, layer),
                  lambda: masks.decoder_run(get_model(name, device), sentence, sentence, n_pad, layers={layer}),
                  msg("cache.decoder"))


def decoding_run(device: str, text: str, task: str | None, teacher: bool, name: str = "seq2seq-tiny",
                 target: str | None = None) -> decoding.DecodingRun:
    """Greedy decoding or teacher forcing on `name` (seq2seq-tiny with its task, or a local encoder-decoder folder
    with no task, teacher-forced on the typed `target`)."""
    def make():
        model = get_model(name, device)
        if teacher:
            return decoding.teacher_forced_run(model, text, task, target)
        return decoding.greedy_run(model, text, task)

    return cached(("decoding", name, device, text, task, teacher, target if teacher else None), make,
                  msg("cache.decoding"))


def pe_table(n: int, d: int) -> np.ndarray:
    return cached(("pe", n, d), lambda: positional.sinusoidal(n, d))  # (n, d)


def pe_similarity(n: int, d: int, cosine: bool) -> np.ndarray:
    return cached(("pe_similarity", n, d, cosine), lambda: positional.similarity(pe_table(n, d), cosine),
                  msg("cache.similarity"))  # (n, n)


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


def next_token_effect(name: str, device: str, text: str, chosen: tuple, mode: str):
    return cached(("next_token_effect", name, device, text, chosen, mode),
                  lambda: heads.next_token_effect(get_model(name, device), text, chosen, mode))


def rank_heads(name: str, device: str, text: str, mode: str):
    def make():
        bar, tick = progress_bar(msg("cache.ablating"))
        out = heads.rank_heads_by_effect(get_model(name, device), text, mode, progress=tick,
                                         baseline=encoder_baseline(name, device, text))
        bar.empty()
        return out

    return cached(("rank_heads", name, device, text, mode), make)


def value_norms(name: str, device: str, text: str, **kw):
    return cached(("value_norms", name, device, text, tuple(kw.items())),
                  lambda: heads.value_norms(get_model(name, device), text, **kw))


def greedy_continuation(name: str, device: str, text: str, n_new: int = 8) -> tuple:
    """A decoder-only model's greedy continuation of `text`, step by step (model/hf/decoder_only.py Step). Each
    length is cached on the one before it: one more step is one more forward (a forward of a 124M GPT-2 reads all
    its 0.5 GB of weights, ~85 ms on one core, so eight steps at once took 0.7 s)."""
    steps: tuple = ()
    for k in range(1, n_new + 1):
        def make(done=steps):
            more = get_model(name, device).greedy_continue(text, 1, top_k=5, prefix=tuple(s.choice.id for s in done))
            return done + tuple(more)

        nxt = cached(("greedy", name, device, text, k), make, msg("cache.running_model"))
        if len(nxt) == len(steps):  # the model's positions are full
            break
        steps = nxt
    return steps


def attention_flow(name: str, device: str, text: str, token: int):
    def make():
        trace = get_trace(name, device, text)
        bar, tick = progress_bar(msg("cache.flow"))
        att = trace.attention(trace.blocks[0])  # the encoder's, or a decoder-only model's causal self-attention
        out = flow.flow_and_rollout(att, trace.source_tokens, token, progress=tick)
        bar.empty()
        return out

    return cached(("flow", name, device, text, token), make)


def text_logit_lens(name: str, device: str, text: str):
    """A decoder-only model's logit lens at the last position of the text."""
    return cached(("text_logit_lens", name, device, text), lambda: heads.logit_lens(get_model(name, device), text))


def logit_lens(device: str, text: str, task: str | None, step: int, name: str = "seq2seq-tiny"):
    return cached(("logit_lens", name, device, text, task, step),
                  lambda: heads.logit_lens(get_model(name, device), text, step=step, task=task))


def head_atlas(name: str, device: str, **kw):
    def make():
        bar, tick = progress_bar(msg("cache.atlas", name=name))
        out = atlas.build_atlas(get_model(name, device), progress=tick, **kw)
        bar.empty()
        return out

    return cached(("atlas", name, device, tuple(kw.items())), make)
