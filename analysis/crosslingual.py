"""Cross-lingual heads: for a sentence and its translation, which heads carry the same relation in both?

For each language: the weight every head (layer x head) puts from a query word to a target word (e.g. "it" ->
"animal" and "그것은" -> "동물은"), words being merged subword pieces: the mean over the query's pieces of the sum
over the target's pieces (the explorer's "merge subwords" rule). Then the agreement across all heads: Pearson and
Spearman correlation, and the overlap of each language's top-k heads against the overlap two random top-k sets would
have (k^2 / heads). One encoder forward per sentence (the model's own trace).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .frozen import readonly
from .heads import encoder_input, locate, word_text

DEFAULT_EN = ("The animal didn't cross the street because it was tired", "it", "animal")
DEFAULT_KO = ("그 동물은 길을 건너지 않았다. 그것은 너무 피곤했기 때문이다", "그것은", "동물은")


@dataclass(frozen=True)
class Side:
    sentence: str
    query: tuple[int, ...]  # token positions of the query word
    target: tuple[int, ...]  # token positions of the target word
    tokens: tuple[str, ...]
    weight: np.ndarray  # (L, H) query word -> target word, read-only
    query_word: str = ""  # the query's pieces merged into its word ("▁ 트로 피 는" -> "트로피는")
    target_word: str = ""


@dataclass(frozen=True)
class CrossLingual:
    a: Side
    b: Side
    pearson: float
    spearman: float
    k: int
    top_a: tuple[tuple[int, int], ...]  # (layer, head), strongest first
    top_b: tuple[tuple[int, int], ...]
    overlap: tuple[tuple[int, int], ...]  # heads in both top-k lists
    chance_overlap: float  # k^2 / (L * H): the overlap two random top-k sets have on average

    def rows(self) -> list[dict]:
        """Every head with both weights and both ranks, strongest (by the smaller of the two ranks) first."""
        L, H = self.a.weight.shape
        ra, rb = _ranks(self.a.weight), _ranks(self.b.weight)
        out = [{"layer": la, "head": h, "a": float(self.a.weight[la, h]), "b": float(self.b.weight[la, h]),
                "rank_a": int(ra[la, h]), "rank_b": int(rb[la, h])} for la in range(L) for h in range(H)]
        return sorted(out, key=lambda r: (max(r["rank_a"], r["rank_b"]), r["rank_a"] + r["rank_b"]))


def _ranks(w: np.ndarray) -> np.ndarray:
    """(L, H) -> rank of each head, 1 = largest weight (ties by position)."""
    flat = w.reshape(-1)
    order = np.argsort(-flat, kind="stable")
    r = np.empty_like(order)
    r[order] = np.arange(1, flat.size + 1)
    return r.reshape(w.shape)


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    rx, ry = _ranks(x).reshape(-1).astype(float), _ranks(y).reshape(-1).astype(float)
    return float(np.corrcoef(rx, ry)[0, 1])


def word_weight(att: np.ndarray, query: tuple[int, ...], target: tuple[int, ...]) -> np.ndarray:
    """(L, H, N, N) -> (L, H): mean over the query's tokens of the summed weight on the target's tokens."""
    q = np.asarray(query)
    k = np.asarray(target)
    return att[:, :, q][:, :, :, k].sum(-1).mean(-1)


def side(model, sentence: str, query: str, target: str, label: str = "A") -> Side:
    """One sentence's side; `label` ("A" / "B") names the sentence in an error (the catalogue translates the
    words "query word" / "target word", error.value.*)."""
    inp = encoder_input(model, sentence)
    qi = locate(inp, query, what="query word", sentence=label)
    ti = locate(inp, target, what="target word", sentence=label)
    tr = model.trace(sentence)
    w = word_weight(tr.encoder_attention, qi, ti).astype(np.float32)
    return Side(sentence, qi, ti, inp.tokens, readonly(w), word_text(inp.tokens, qi), word_text(inp.tokens, ti))


def compare(model, a: tuple[str, str, str] = DEFAULT_EN, b: tuple[str, str, str] = DEFAULT_KO, *,
            k: int = 10) -> CrossLingual:
    """a, b: (sentence, query word, target word) in each language."""
    sa, sb = side(model, *a, label="A"), side(model, *b, label="B")
    wa, wb = sa.weight.reshape(-1), sb.weight.reshape(-1)
    n = wa.size
    k = max(1, min(k, n))
    H = sa.weight.shape[1]
    top = lambda w: tuple(divmod(int(i), H) for i in np.argsort(-w.reshape(-1), kind="stable")[:k])  # noqa: E731
    ta, tb = top(sa.weight), top(sb.weight)
    both = tuple(x for x in ta if x in set(tb))
    pearson = float(np.corrcoef(wa, wb)[0, 1]) if wa.std() > 0 and wb.std() > 0 else float("nan")
    return CrossLingual(sa, sb, pearson, _spearman(sa.weight, sb.weight), k, ta, tb, both, k * k / n)
