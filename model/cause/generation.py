"""Generation replay: a language model writes one token at a time, each new query reading a growing cache of keys and
values (model/transformer.py DecodeCache, through one run request per step, model/run.py).

Step 0 feeds the prompt (P tokens) and chooses generated token 0 from the logits of the prompt's last position; step
k >= 1 feeds generated token k-1 alone, at position P + k - 1, whose query reads the P + k keys of the cache. So the
query that produced generated token k sits at position P + k - 1, and its attention row covers keys 0 .. P + k - 1
(`Step.rows`, (L, H, P + k)); `Generation.step_rows()` pads every row with zeros to the final length P + N. The cache
changes nothing: every row equals that position's row of one full forward over the final sequence (tests).

Choosing (`Sampling`): temperature 0 is greedy (argmax, ties to the lowest id); otherwise the logits are divided by
the temperature, cut to the top_k largest (0: no cut; ties at the k-th value kept), then to the smallest set whose
probabilities reach top_p (1.0: no cut), renormalised, and one token drawn with torch.multinomial from a generator
seeded with `seed` (the same seed gives the same text). `Step.prob` is the model's own probability of the chosen
token (softmax at temperature 1), `Step.drawn_prob` its probability in the distribution it was drawn from (1.0 when
greedy). Generation never stops early at an end-of-text token: it writes exactly N tokens (fewer only where the
model's positions end), so every array has the length asked for.

Costs: the cache's bytes (its key and value tensors), the multiply-adds of a step with the cache (the new rows only)
and without it (the whole sequence again), counted from the config, and the measured time of each cached step; the
time of the same step without the cache is measured only when asked (`time_uncached`: one full forward per step).

Notation: L layers, H query heads, G key/value heads, k d_k, d d_model, f d_ff, V vocabulary, P prompt length.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from ..errors import InputError
from ..run import Keep, Run
from ..transformer import DecodeCache
from .common import ro

MAX_NEW = 64  # the most tokens one replay writes (the app's slider and the CLI)


@dataclass(frozen=True)
class Sampling:
    temperature: float = 0.0  # 0: greedy
    top_k: int = 0  # 0: every token
    top_p: float = 1.0  # 1.0: every token
    seed: int = 0

    def __post_init__(self) -> None:
        if self.temperature < 0 or self.top_k < 0 or not 0.0 < self.top_p <= 1.0:
            raise InputError(f"Invalid sampling: temperature {self.temperature} (>= 0), top-k {self.top_k} (>= 0), "
                             f"top-p {self.top_p} (in (0, 1]).", key="cause_sampling")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0


def sampling_distribution(logits: torch.Tensor, s: Sampling) -> torch.Tensor:
    """logits (V,) -> the probabilities a token is drawn with (V,), float64 (see the module docstring)."""
    x = logits.double() / s.temperature
    if s.top_k and s.top_k < x.shape[0]:
        kth = torch.topk(x, s.top_k).values[-1]
        x = x.masked_fill(x < kth, float("-inf"))
    p = torch.softmax(x, -1)
    if s.top_p < 1.0:
        sp, order = torch.sort(p, descending=True)
        before = torch.cumsum(sp, 0) - sp  # the mass of the tokens ranked above each one
        drop = order[before >= s.top_p]  # the first token is always kept (before = 0)
        p = p.index_fill(0, drop, 0.0)
        p = p / p.sum()
    return p


def choose(logits: torch.Tensor, s: Sampling, gen: torch.Generator | None) -> tuple[int, float]:
    """(token id, the probability it was drawn with) for one position's logits (V,)."""
    if s.greedy:
        return int(torch.argmax(logits)), 1.0
    p = sampling_distribution(logits, s)
    i = int(torch.multinomial(p.float(), 1, generator=gen))
    return i, float(p[i])


@dataclass(frozen=True)
class Choice:
    token: str
    id: int
    prob: float


@dataclass(frozen=True)
class Step:
    """One step: the token it chose and what its query read."""

    position: int  # the chosen token's position in the final sequence (P + k)
    choice: Choice  # the chosen token and its probability under the model (temperature 1)
    drawn_prob: float  # its probability in the distribution it was drawn from (1.0 greedy)
    top: tuple[Choice, ...]  # the most probable next tokens (temperature 1)
    rows: np.ndarray | None  # (L, H, P + k): the query at position P + k - 1 over every key so far (None: an SSRU)
    k_new: np.ndarray | None  # (L, G, n_fed, k) the keys this step appended (after RoPE), None without a cache
    v_new: np.ndarray | None  # (L, G, n_fed, k) the values
    n_fed: int  # positions fed this step (P at step 0, then 1)
    cache_bytes: int  # the cache's size after this step
    macs_cached: int  # multiply-adds of this step with the cache
    macs_full: int  # ... of the same step without it (every position again)
    ms_cached: float  # measured time of this step's forward and choice
    ms_full: float | None  # measured time of one full forward over the sequence so far (time_uncached)
    cross: np.ndarray | None = None  # (L, H, n_src) an encoder-decoder's cross-attention row over the source

    @property
    def sink(self) -> np.ndarray | None:
        """(L, H) this query's weight on the first token (the attention sink); None without self-attention rows."""
        return None if self.rows is None else self.rows[:, :, 0]


@dataclass(frozen=True)
class Generation:
    model: str
    prompt: str
    prompt_ids: tuple[int, ...]
    prompt_tokens: tuple[str, ...]
    sampling: Sampling
    steps: tuple[Step, ...]
    n_heads: int
    n_kv_heads: int
    source_tokens: tuple[str, ...] = ()  # an encoder-decoder's source (the prompt is then its decoder's [<bos>])
    shortlist: bool = False  # an encoder-decoder chose within its lexical shortlist

    @property
    def ids(self) -> list[int]:
        """The prompt and the generated tokens."""
        return [*self.prompt_ids, *(s.choice.id for s in self.steps)]

    @property
    def tokens(self) -> list[str]:
        return [*self.prompt_tokens, *(s.choice.token for s in self.steps)]

    @property
    def kv_group(self) -> list[int]:
        """Query head i reads key/value head kv_group[i] (grouped-query attention; i itself without it)."""
        g = self.n_heads // self.n_kv_heads
        return [h // g for h in range(self.n_heads)]

    def step_rows(self) -> np.ndarray:
        """(N, L, H, P + N): row k is step k's query over every key, zeros past the keys it could see."""
        n = len(self.prompt_ids) + len(self.steps)
        L, H = self.steps[0].rows.shape[:2] if self.steps else (0, 0)
        out = np.zeros((len(self.steps), L, H, n), dtype=np.float32)
        for k, s in enumerate(self.steps):
            out[k, :, :, : s.rows.shape[-1]] = s.rows
        return out

    def sink_mass(self) -> np.ndarray:
        """(N,) the mean over layers and heads of each step's weight on the first token (NaN: no self-attention)."""
        return np.array([np.nan if s.sink is None else float(s.sink.mean()) for s in self.steps], dtype=np.float32)

    @property
    def has_self_rows(self) -> bool:
        """Whether the steps have self-attention rows (an SSRU decoder has a running memory instead)."""
        return bool(self.steps) and self.steps[0].rows is not None


def cache_bytes(cache: DecodeCache) -> int:
    """Bytes held by a cache's tensors (keys and values; an SSRU's memory; a cross-attention's projections)."""
    return sum(t.numel() * t.element_size() for layer in cache.layers for part in layer.values()
               for t in part.values() if isinstance(t, torch.Tensor))


def step_macs(config, n_new: int, m: int, *, logits_rows: int = 1) -> int:
    """Multiply-adds of a decoder-only forward over n_new query positions that read m keys each (the look-ahead
    mask is applied after the product, so every row reads all m), with `logits_rows` rows of output logits."""
    d, h, g, k, f = config.d_model, config.n_heads, config.kv_heads, config.d_k, config.d_ff
    attn = n_new * d * (h + 2 * g) * k + 2 * n_new * h * m * k + n_new * h * k * d  # QKV, QK^T and x V, W_O
    ffn = n_new * d * f * (3 if config.gated_ffn else 2)
    return config.n_decoder_layers * (attn + ffn) + logits_rows * d * config.vocab_size


def top_choices(loaded, logits: torch.Tensor, k: int) -> tuple[Choice, ...]:
    p, i = torch.softmax(logits.float(), -1).topk(max(1, min(k, logits.shape[0])))
    return tuple(Choice(loaded.tokenizer.id_to_token(int(j)) or f"[{int(j)}]", int(j), float(q)) for q, j in zip(p, i))


def generate(loaded, text: str, max_new: int = 20, sampling: Sampling = Sampling(), *, top: int = 5,
             time_uncached: bool = False, keep_kv: bool = True, progress=None) -> Generation:
    """Replay a decoder-only model's generation after `text`, one cached step at a time (see the module docstring).
    progress: a callback of the fraction done (0..1) after each step."""
    if loaded.kind != "decoder":
        raise InputError(f"{loaded.name} is not a decoder-only language model: generation replay needs one.",
                         key="cause_decoder_only", model=loaded.name)
    enc = loaded.encode_prompt(text)
    ids = list(enc.ids)
    cfg = loaded.config
    n_new = max(0, min(int(max_new), MAX_NEW, cfg.max_positions - len(ids)))
    gen = None if sampling.greedy else torch.Generator().manual_seed(int(sampling.seed))
    cache = DecodeCache(cfg.n_decoder_layers)
    feed, steps = ids, []
    module = loaded.module
    for step in range(n_new):
        t0 = time.perf_counter()
        with torch.inference_mode():
            rec = module.run(Run(feed, cache=cache, keep=Keep(logits="last")))
            logits = rec.logits[0, -1]
            tok, drawn = choose(logits, sampling, gen)
        ms = (time.perf_counter() - t0) * 1e3
        m = cache.start  # keys so far
        layers = rec.decoder.layers
        rows = ro(torch.stack([layers[i].attention[0, :, -1] for i in range(cfg.n_decoder_layers)]))  # (L, H, m)
        k_new = v_new = None
        if keep_kv:  # (L, G, n, k) each
            k_new = ro(torch.stack([c["self"]["k"][0, :, -len(feed):] for c in cache.layers]))
            v_new = ro(torch.stack([c["self"]["v"][0, :, -len(feed):] for c in cache.layers]))
        ms_full = _time_full(module, [*ids, *(s.choice.id for s in steps)]) if time_uncached else None
        top_k = top_choices(loaded, logits, top)
        prob = float(torch.softmax(logits.float(), -1)[tok])
        steps.append(Step(position=m, choice=Choice(loaded.tokenizer.id_to_token(tok) or f"[{tok}]", tok, prob),
                          drawn_prob=drawn, top=top_k, rows=rows, k_new=k_new, v_new=v_new, n_fed=len(feed),
                          cache_bytes=cache_bytes(cache), macs_cached=step_macs(cfg, len(feed), m),
                          macs_full=step_macs(cfg, m, m), ms_cached=ms, ms_full=ms_full))
        feed = [tok]
        if progress is not None:
            progress((step + 1) / n_new)
    return (Generation(loaded.name, text, tuple(ids), tuple(enc.tokens), sampling, tuple(steps), cfg.n_heads,
                             cfg.kv_heads))


def _time_full(module, ids: list[int]) -> float:
    """Milliseconds of one forward over the whole sequence so far, last position's logits only (no cache)."""
    t0 = time.perf_counter()
    with torch.inference_mode():
        module.run(Run(ids, keep=Keep(logits="last")))
    return (time.perf_counter() - t0) * 1e3
