"""Generation replay on an encoder-decoder (a translator, seq2seq-tiny, a local BART / Marian): the source is encoded
once; the decoder starts from its start token and writes one token per step over its cache, which holds the
cross-attention's keys and values of the encoder output (projected at step 0) and, for each decoder layer, the
self-attention's keys and values so far, or an SSRU's running memory c (Marian's fast decoders: a constant d numbers
a layer however long the output, and no self-attention rows to draw).

The decoder's sequence is [<bos>, y_0, y_1, ...]: step k feeds position k and chooses y_k, so the prompt of
model/cause/generation.py's types is [<bos>] (P = 1), and a step's `rows` (its self-attention row) cover keys 0 .. k;
`cross` is its row over the source. Choosing is Sampling's (greedy by default); a model with a lexical shortlist
(the translators) chooses within it, as the Encoder-decoder page and the engine decode, and its probabilities are
then the shortlist's. It stops after the end token, or after the model's step limit (`step_limit`).

Multiply-adds count the decoder (the encoder runs once either way): with the cache a step runs its one position, and
projects the encoder output for the cross-attention only at step 0; without it every position again and the
projection of the encoder output again.
"""

from __future__ import annotations

import time

import torch

from ..run import Keep, Run
from ..transformer import DecodeCache
from .common import ro
from .generation import MAX_NEW, Choice, Generation, Sampling, Step, cache_bytes, choose, top_choices


def seq2seq_macs(config, n_new: int, m: int, n_src: int, *, project_memory: bool) -> int:
    """Multiply-adds of a decoder forward over n_new positions reading m decoder keys and n_src source positions."""
    c = config.decoder_config()
    d, h, g, k, f = c.d_model, c.n_heads, c.kv_heads, c.d_k, c.d_ff
    if config.decoder_mixer == "ssru":
        mix = 2 * n_new * d * d  # W and W_f
    else:
        mix = n_new * d * (h + 2 * g) * k + 2 * n_new * h * m * k + n_new * h * k * d
    cross = n_new * d * h * k + 2 * n_new * h * n_src * k + n_new * h * k * d
    if project_memory:
        cross += n_src * d * 2 * g * k  # the encoder output's keys and values
    ffn = n_new * d * f * (3 if c.gated_ffn else 2)
    return config.n_decoder_layers * (mix + cross + ffn) + d * config.vocab_size


def generate_seq2seq(loaded, text: str, max_new: int = 20, sampling: Sampling | None = None, *, top: int = 5,
                     time_uncached: bool = False, keep_kv: bool = True, progress=None) -> Generation:
    """Replay an encoder-decoder's decoding of `text` over its cache (see the module docstring)."""
    sampling = sampling or Sampling()
    enc = loaded.encode_source(text)
    src, cfg, module = list(enc.ids), loaded.config, loaded.module
    shortlist = getattr(loaded, "allowed_tokens", None)  # a translator's lexical shortlist (model/bergamot.py)
    allowed = None if shortlist is None else torch.from_numpy(shortlist(src)).to(loaded.device)
    n_new = max(0, min(int(max_new), MAX_NEW, loaded.step_limit(src, max_new)))
    gen = None if sampling.greedy else torch.Generator().manual_seed(int(sampling.seed))
    tok_of = lambda i: loaded.tokenizer.id_to_token(i) or f"[{i}]"  # noqa: E731
    cache = DecodeCache(cfg.n_decoder_layers)
    ys, memory, steps = [loaded.bos_id], None, []
    for step in range(n_new):
        t0 = time.perf_counter()
        with torch.inference_mode():
            rec = module.run(Run(src, target=ys[-1:], cache=cache, memory=memory, keep=Keep(logits="last")))
            memory = rec.encoder.output
            logits = rec.logits[0, -1]
            if allowed is not None:
                logits = logits.masked_fill(~allowed, float("-inf"))
            tok, drawn = choose(logits, sampling, gen)
        ms = (time.perf_counter() - t0) * 1e3
        m = cache.start
        layers = [rec.decoder.layers[i] for i in range(cfg.n_decoder_layers)]
        rows = None if layers[0].attention is None else ro(torch.stack([r.attention[0, :, -1] for r in layers]))
        cross = ro(torch.stack([r.cross[0, :, -1] for r in layers]))  # (L, H, n_src)
        k_new = v_new = None
        if keep_kv and rows is not None:
            k_new = ro(torch.stack([c["self"]["k"][0, :, -1:] for c in cache.layers]))  # (L, G, 1, k)
            v_new = ro(torch.stack([c["self"]["v"][0, :, -1:] for c in cache.layers]))
        ms_full = _time_full(module, src, ys, memory) if time_uncached else None
        prob = float(torch.softmax(logits.float(), -1)[tok])
        steps.append(Step(position=m, choice=Choice(tok_of(tok), tok, prob), drawn_prob=drawn,
                          top=top_choices(loaded, logits, top), rows=rows, k_new=k_new, v_new=v_new, n_fed=1,
                          cache_bytes=cache_bytes(cache),
                          macs_cached=seq2seq_macs(cfg, 1, m, len(src), project_memory=step == 0),
                          macs_full=seq2seq_macs(cfg, m, m, len(src), project_memory=True), ms_cached=ms,
                          ms_full=ms_full, cross=cross))
        ys.append(tok)
        if progress is not None:
            progress((step + 1) / n_new)
        if tok == loaded.eos_id:
            break
    c = cfg.decoder_config()
    return Generation(loaded.name, text, (loaded.bos_id,), (tok_of(loaded.bos_id),), sampling, tuple(steps),
                      c.n_heads, c.kv_heads, source_tokens=tuple(enc.tokens), shortlist=allowed is not None)


def _time_full(module, src: list[int], ys: list[int], memory) -> float:
    """Milliseconds of one decoder pass over every position so far, from the encoder output (no cache)."""
    t0 = time.perf_counter()
    with torch.inference_mode():
        module.run(Run(src, target=ys, memory=memory, keep=Keep(logits="last")))
    return (time.perf_counter() - t0) * 1e3
