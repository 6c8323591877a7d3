"""The Head lab's cause views, for the app: generation replay, direct logit attribution and activation patching
(computed by model/cause/ through the one forward), frozen for the shared store, with the presets and the derived
tables the views draw. A patching result also goes to and from plain JSON (the lesson deck keeps a computed grid so a
class does not recompute it; ui/saved.py).

Presets (clean, corrupted, target, foil; the two prompts of each have the same number of tokens on SmolLM2):
- "eiffel": the factual-recall pair of Meng et al. 2022 (ROME), in the issue's words;
- "ioi": an indirect-object sentence (Wang et al. 2022, "Interpretability in the Wild");
- "lecture": the lecture's flagship sentence ("... because it was tired / wide"), asked as a question. SmolLM2-135M
  says " animal" after both, less surely after "wide": a small, honest effect.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from model.cause.attribution import Attribution, attribute
from model.cause.common import AnswerToken
from model.cause.generation import Generation, Sampling, generate
from model.cause.patching import Patching, pair_ids, patch
from model.cause.translation import generate_seq2seq

from .frozen import freeze, ro


@dataclass(frozen=True)
class PatchPreset:
    clean: str
    corrupt: str
    target: str
    foil: str


PRESETS = {
    "eiffel": PatchPreset("The Eiffel Tower is located in the city of", "The Colosseum is located in the city of",
                          " Paris", " Rome"),
    "ioi": PatchPreset("When Mary and John went to the store, John gave a drink to",
                       "When Mary and John went to the store, Mary gave a drink to", " Mary", " John"),
    "lecture": PatchPreset("The animal didn't cross the street because it was tired. Question: what was tired? "
                           "Answer: the", "The animal didn't cross the street because it was wide. Question: what "
                           "was wide? Answer: the", " animal", " street"),
}
DEFAULT_PRESET = "eiffel"
MAX_RESIDUAL_TOKENS = 24  # the residual grid runs one patched copy per position in each layer: n x n rows a layer


def generation(loaded, text: str, n: int, sampling: Sampling, *, time_uncached: bool = False,
               progress=None) -> Generation:
    """A decoder-only model's generation replay, or an encoder-decoder's decoding of `text` (model/cause/)."""
    replay = generate_seq2seq if loaded.kind == "encoder-decoder" else generate
    return freeze(replay(loaded, text, n, sampling, time_uncached=time_uncached, progress=progress))


def attribution(loaded, text: str, target: str | None, foil: str | None) -> Attribution:
    return freeze(attribute(loaded, text, target or None, foil or None))


def patching(loaded, clean: str, corrupt: str, target: str, foil: str, *, residual: bool = True,
             progress=None) -> Patching:
    return freeze(patch(loaded, clean, corrupt, target, foil, residual=residual, progress=progress))


def check_pair(loaded, clean: str, corrupt: str) -> int:
    """The prompts' common token count; an InputError (key "cause_lengths", naming both counts) when they differ,
    said before any grid is computed."""
    (ids, _), _ = pair_ids(loaded, clean, corrupt)
    return len(ids)


# ---- what the generation view draws ---------------------------------------------------------------------------
def kv_map(n_heads: int, n_kv_heads: int) -> np.ndarray:
    """(H, G) 1 where query head i reads key/value head g (grouped-query attention: i // (H / G))."""
    g = n_heads // n_kv_heads
    return ro(np.eye(n_kv_heads)[np.arange(n_heads) // g])


def costs(gen: Generation) -> dict[str, np.ndarray]:
    """Per step: the cache's KiB, the multiply-adds with and without the cache, the measured ms (NaN: not timed)."""
    s = gen.steps
    return {"cache_kib": ro([x.cache_bytes / 1024 for x in s]), "macs_cached": ro([x.macs_cached for x in s]),
            "macs_full": ro([x.macs_full for x in s]), "ms_cached": ro([x.ms_cached for x in s]),
            "ms_full": ro([np.nan if x.ms_full is None else x.ms_full for x in s])}


def sink_by_layer(gen: Generation) -> np.ndarray:
    """(L, N) each step's mean weight on the first token over the heads of each layer (no self-attention: (0, 0))."""
    if not gen.has_self_rows:
        return ro(np.zeros((0, 0)))
    return ro(np.stack([s.sink.mean(axis=1) for s in gen.steps], axis=1))


def cross_rows(gen: Generation, step: int) -> np.ndarray:
    """(L, H, n_src) an encoder-decoder step's cross-attention rows over the source."""
    return gen.steps[step].cross


def step_rows_padded(gen: Generation, step: int) -> np.ndarray:
    """(L, H, P + N) step `step`'s rows, NaN past the keys it could see (drawn as blocked cells)."""
    rows = gen.step_rows()[step].astype(np.float32)
    rows[..., gen.steps[step].rows.shape[-1]:] = np.nan
    return ro(rows)


def step_table(gen: Generation, top: int = 3, spell=str) -> list[dict]:
    """One row per step: step, position, token, its probability, the probability it was drawn with, the runners-up.
    `spell`: a token -> the text shown for it (the page's: byte-level pieces as the text they spell)."""
    return [{"step": k, "position": s.position, "token": spell(s.choice.token), "prob": round(s.choice.prob, 4),
             "drawn": round(s.drawn_prob, 4),
             "top": "  ".join(f"{spell(c.token)} {c.prob:.2f}" for c in s.top[:top])} for k, s in enumerate(gen.steps)]


# ---- a patching result as plain JSON -----------------------------------------------------------------------------
def _answer(a: AnswerToken) -> dict:
    return {"text": a.text, "id": a.id, "token": a.token, "n_tokens": a.n_tokens}


def patching_to_json(p: Patching) -> str:
    """The result as JSON (numbers as they are; no pickle anywhere)."""
    grid = lambda g: None if g is None else np.asarray(g, dtype=np.float64).tolist()  # noqa: E731
    return json.dumps({"model": p.model, "clean": p.clean, "corrupt": p.corrupt, "clean_ids": list(p.clean_ids),
                       "corrupt_ids": list(p.corrupt_ids), "clean_tokens": list(p.clean_tokens),
                       "corrupt_tokens": list(p.corrupt_tokens), "target": _answer(p.target),
                       "foil": _answer(p.foil), "clean_diff": p.clean_diff, "corrupt_diff": p.corrupt_diff,
                       "head": grid(p.head), "residual": grid(p.residual)}, ensure_ascii=False)


def patching_from_json(text: str) -> Patching:
    """The result back from patching_to_json (a ValueError / KeyError / TypeError on anything else)."""
    d = json.loads(text)
    grid = lambda g: None if g is None else ro(g)  # noqa: E731
    return freeze(Patching(str(d["model"]), str(d["clean"]), str(d["corrupt"]), tuple(map(int, d["clean_ids"])),
                           tuple(map(int, d["corrupt_ids"])), tuple(map(str, d["clean_tokens"])),
                           tuple(map(str, d["corrupt_tokens"])), AnswerToken(**d["target"]),
                           AnswerToken(**d["foil"]), float(d["clean_diff"]), float(d["corrupt_diff"]),
                           grid(d["head"]), grid(d["residual"])))
