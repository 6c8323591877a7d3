"""Head atlas: label every encoder head by what it does on a fixed battery of probe sentences.

The battery (assets/probes/atlas_probes.json, written for this project) is run through the model's own encoder
forward, one sentence at a time, and each head gets one score per label, the mean over sentences:

- prev / next / self: attention mass on the previous token, the next token, the token itself;
- sink:               mass on special tokens ([CLS]/[SEP]; <task>/<eos> on seq2seq-tiny);
- punct:              mass on punctuation tokens;
- broad:              normalised entropy of the row, H(row) / log(row length), in [0, 1] (1 = uniform);
- same_word:          from a token whose text occurs elsewhere in the sentence, the mass on those other occurrences;
- coref:              from the labelled pronoun, is the most attended real (non-special) token other than the
                      pronoun itself part of the labelled antecedent? (accuracy over the labelled pairs);
                      `coref_mass` is the antecedent's share of that row's mass on real tokens.

Rows are the real (non-special) query tokens. Every score is a fraction in [0, 1]. The top label of a head follows
the rule at SPECIALIST_MIN below. Per head the best example sentences are those where its top label's score is
highest.

CLI:  python -m analysis.atlas --model minilm-l6 [--out atlas.json | atlas.csv] [--task copy]
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
import time
import unicodedata
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from model.errors import HeadlightError, InputError
from model.registry import DEFAULT_MODEL
from model.tokenizer import piece_text

from .frozen import ro, to_numpy
from .heads import encoder_input, locate, run_encoder

PROBES_PATH = Path(__file__).resolve().parent.parent / "assets" / "probes" / "atlas_probes.json"
PROBES_KO_PATH = PROBES_PATH.with_name("atlas_probes_ko.json")  # Korean probes, for models that read Korean
# the labels, by key (their names are in the catalogue: heads.atlas.<key>): previous / next token, self, the
# [CLS]/[SEP] sink, punctuation, broad (high entropy), the same word elsewhere, coreference (pronoun -> antecedent)
LABELS = ("prev", "next", "self", "sink", "punct", "broad", "same_word", "coref")
TOP_LABELS = (*LABELS, "mixed")
# A head's top label: the specialised label whose score is furthest above its minimum here (mass labels: a third
# of the attention; coreference: right on at least half of the labelled pairs, chance is about 1 in 10); failing
# that "sink" when at least half of the attention goes to special tokens (the "no-op" of Clark et al. 2019);
# failing that "broad" when the normalised entropy is at least BROAD_ENTROPY, else "mixed".
SPECIALIST_MIN = {"prev": 0.3, "next": 0.3, "self": 0.3, "punct": 0.3, "same_word": 0.3, "coref": 0.5}
SINK_MIN = 0.5
BROAD_ENTROPY = 0.6
N_EXAMPLES = 3


@dataclass(frozen=True)
class Probe:
    sentence: str
    pronoun: str
    antecedent: str
    distractor: str = ""


def load_probes(path: str | Path = PROBES_PATH) -> list[Probe]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return [Probe(p["sentence"], p["pronoun"], p["antecedent"], p.get("distractor", "")) for p in data["probes"]]


def is_punct(token: str) -> bool:
    t = piece_text(token, first=False)
    return bool(t) and all(unicodedata.category(c).startswith("P") for c in t)


def sentence_scores(att: np.ndarray, tokens: tuple[str, ...], special: tuple[bool, ...],
                    coref: tuple[tuple[int, ...], tuple[int, ...]] | None) -> dict[str, np.ndarray]:
    """One sentence's (L, H, N, N) attention -> each label's (L, H) score (NaN where the sentence cannot say:
    no punctuation, no repeated word, no labelled pair)."""
    L, H, n, _ = att.shape
    spec = np.asarray(special, dtype=bool)
    rows = np.flatnonzero(~spec)  # real query tokens
    nan = np.full((L, H), np.nan, dtype=np.float32)
    a = att[:, :, rows, :]  # (L, H, R, N)
    out: dict[str, np.ndarray] = {}
    for name, off in (("prev", -1), ("next", 1), ("self", 0)):
        ok = (rows + off >= 0) & (rows + off < n)
        out[name] = a[:, :, ok, (rows + off)[ok]].mean(-1) if ok.any() else nan
    out["sink"] = a[..., spec].sum(-1).mean(-1) if spec.any() else nan
    punct = np.array([is_punct(t) and not s for t, s in zip(tokens, special)])
    out["punct"] = a[..., punct].sum(-1).mean(-1) if punct.any() else nan
    p = np.clip(a, 1e-12, 1.0)
    out["broad"] = (-(a * np.log(p)).sum(-1) / np.log(n)).mean(-1) if n > 1 else nan
    same = np.array([[tokens[i] == tokens[j] and i != j and not special[j] for j in range(n)] for i in rows])
    has = same.any(-1)  # (R,)
    out["same_word"] = (a[:, :, has] * same[has]).sum(-1).mean(-1) if has.any() else nan
    if coref is not None:
        pron, ante = coref
        row = att[:, :, list(pron), :].mean(2)  # (L, H, N) from the pronoun (mean over its pieces)
        real = (~spec).copy()
        real[list(pron)] = False
        masked = np.where(real, row, -1.0)
        out["coref"] = np.isin(masked.argmax(-1), ante).astype(np.float32)
        tot = row[..., real].sum(-1)
        out["coref_mass"] = np.divide(row[..., list(ante)].sum(-1), tot, out=np.zeros_like(tot), where=tot > 0)
    else:
        out["coref"] = out["coref_mass"] = nan
    return {k: np.asarray(v, dtype=np.float32) for k, v in out.items()}


@dataclass(frozen=True)
class Atlas:
    model: str
    sentences: tuple[str, ...]
    n_coref: int  # labelled pairs found in the model's tokens
    scores: dict  # label -> (L, H) mean over sentences (labels of LABELS plus "coref_mass")
    per_sentence: dict  # label -> (S, L, H), NaN where a sentence has nothing to say
    top_label: tuple[tuple[str, ...], ...]  # (L, H)
    seconds: float  # build time

    @property
    def label_names(self) -> tuple[str, ...]:
        """Every possible top label, in a fixed order (colour index)."""
        return TOP_LABELS

    @property
    def shape(self) -> tuple[int, int]:
        return self.scores["prev"].shape

    def top_label_index(self) -> np.ndarray:
        """(L, H) int: index into TOP_LABELS (for a categorical colour scale)."""
        return np.array([[TOP_LABELS.index(t) for t in row] for row in self.top_label])

    def examples(self, layer: int, head: int, label: str | None = None, k: int = N_EXAMPLES) -> list[dict]:
        """The sentences where this head scores highest on `label` (default: its top label)."""
        label = label or self.top_label[layer][head]
        if label == "mixed":
            label = "broad"
        vals = self.per_sentence[label][:, layer, head]
        # coreference is right or wrong per sentence: among the right ones, the largest mass on the antecedent first
        tie = self.per_sentence["coref_mass"][:, layer, head] if label == "coref" else np.zeros_like(vals)
        order = [i for i in np.lexsort((-np.nan_to_num(tie), -np.nan_to_num(vals, nan=-np.inf)))
                 if not np.isnan(vals[i])]
        return [{"sentence": self.sentences[i], "label": label, "score": round(float(vals[i]), 3)}
                for i in order[:k]]

    def rows(self) -> list[dict]:
        """One dict per head: top label, then every score (3 decimals)."""
        L, H = self.shape
        out = []
        for la in range(L):
            for h in range(H):
                row = {"layer": la, "head": h, "top_label": self.top_label[la][h]}
                row.update({k: round(float(v[la, h]), 3) for k, v in self.scores.items()})
                out.append(row)
        return out

    def to_csv(self) -> str:
        rows = self.rows()
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
        return buf.getvalue()

    def to_json_dict(self) -> dict:
        L, H = self.shape
        return {
            "model": self.model, "labels": list(LABELS), "n_sentences": len(self.sentences), "n_coref": self.n_coref,
            "shape": [L, H], "top_label": [list(r) for r in self.top_label],
            "scores": {k: np.round(v.astype(np.float64), 4).tolist() for k, v in self.scores.items()},
            "examples": {f"{la},{h}": self.examples(la, h) for la in range(L) for h in range(H)},
            "rule": {"specialist_min": SPECIALIST_MIN, "sink_min": SINK_MIN, "broad_entropy": BROAD_ENTROPY},
        }

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix == ".csv":
            path.write_text(self.to_csv(), encoding="utf-8")
        elif suffix == ".json":
            path.write_text(json.dumps(self.to_json_dict(), ensure_ascii=False, indent=1), encoding="utf-8")
        else:
            raise InputError(f"unknown atlas format {suffix!r}: use .json or .csv")
        return path


def top_labels(scores: dict[str, np.ndarray]) -> tuple[tuple[str, ...], ...]:
    """Each head's label (see SPECIALIST_MIN): a specialised pattern first, then the sink, then broad / mixed."""
    names = list(SPECIALIST_MIN)
    ratio = np.stack([np.nan_to_num(scores[k], nan=0.0) / SPECIALIST_MIN[k] for k in names])  # (C, L, H)
    best, top = ratio.argmax(0), ratio.max(0)
    sink = np.nan_to_num(scores["sink"], nan=0.0)
    broad = np.nan_to_num(scores["broad"], nan=0.0)
    L, H = best.shape
    out = []
    for la in range(L):
        row = []
        for h in range(H):
            if top[la, h] >= 1.0:
                row.append(names[best[la, h]])
            elif sink[la, h] >= SINK_MIN:
                row.append("sink")
            else:
                row.append("broad" if broad[la, h] >= BROAD_ENTROPY else "mixed")
        out.append(tuple(row))
    return tuple(out)


def reads_korean(model, **encode_kw) -> bool:
    """True when the model's tokenizer turns a Korean sentence into real pieces (no unknown token, no jamo)."""
    from .readability import readability

    try:
        return readability(model.trace(KOREAN_CHECK, **encode_kw)).n_unreadable == 0
    except HeadlightError:
        return False


KOREAN_CHECK = "그 동물은 너무 피곤해서 길을 건너지 않았다"


def default_probes(model, **encode_kw) -> list[Probe]:
    """The English battery, plus the Korean one for a model that reads Korean (multilingual-e5-small)."""
    return load_probes() + (load_probes(PROBES_KO_PATH) if reads_korean(model, **encode_kw) else [])


def build_atlas(model, probes: list[Probe] | None = None, *, progress: Callable[[float], None] | None = None,
                **encode_kw) -> Atlas:
    """Run the battery through `model`'s encoder and score every head (encode_kw: e.g. task="copy" for
    seq2seq-tiny, whose encoder is labelled). `progress(fraction)` after each sentence."""
    t0 = time.perf_counter()
    probes = default_probes(model, **encode_kw) if probes is None else probes
    if not probes:
        raise InputError("The probe battery is empty.")
    if model.kind == "encoder-decoder" and "task" not in encode_kw and model.abilities.tasks:
        encode_kw = {**encode_kw, "task": model.abilities.tasks[0]}
    per: dict[str, list[np.ndarray]] = {}
    n_coref = 0
    for i, pr in enumerate(probes):
        inp = encoder_input(model, pr.sentence, **encode_kw)
        att = np.stack([to_numpy(a[0]) for a in run_encoder(model, inp).self_attention])
        try:
            pair = (locate(inp, pr.pronoun, what="pronoun", sentence="probe"),
                    locate(inp, pr.antecedent, what="antecedent", sentence="probe"))
            if set(pair[0]) & set(pair[1]) or any(inp.special[j] for j in pair[0] + pair[1]):
                pair = None
        except InputError:  # e.g. the word is <unk> or split differently in this model's vocabulary
            pair = None
        n_coref += pair is not None
        for k, v in sentence_scores(att, inp.tokens, inp.special, pair).items():
            per.setdefault(k, []).append(v)
        if progress is not None:
            progress((i + 1) / len(probes))
    per_sentence = {k: ro(np.stack(v)) for k, v in per.items()}  # (S, L, H)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns (e.g. no coref pair) stay NaN
        scores = {k: ro(np.nanmean(v, axis=0)) for k, v in per_sentence.items()}
    return Atlas(model.name, tuple(p.sentence for p in probes), n_coref, scores, per_sentence,
                 top_labels(scores), time.perf_counter() - t0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m analysis.atlas", description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--out", help="write the atlas to this .json or .csv file")
    ap.add_argument("--task", help="seq2seq-tiny: the task token the encoder sees (default: copy)")
    ap.add_argument("--probes", default=None, help="probe battery (JSON; default: English, plus Korean for a model "
                    "that reads Korean)")
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args(argv)
    try:
        from model import load_model

        model = load_model(args.model, args.device)
        atlas = build_atlas(model, load_probes(args.probes) if args.probes else None,
                            **({"task": args.task} if args.task else {}))
        if args.out:
            atlas.save(args.out)
    except (HeadlightError, OSError, ValueError, KeyError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    L, H = atlas.shape
    print(f"{atlas.model}: {len(atlas.sentences)} probe sentences, {atlas.n_coref} labelled pairs, "
          f"{L} layers x {H} heads, {atlas.seconds:.2f} s")
    for la in range(L):
        print(f"layer {la}: " + "  ".join(f"{h}:{atlas.top_label[la][h]}" for h in range(H)))
    if args.out:
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
