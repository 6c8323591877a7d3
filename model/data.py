"""Data for `seq2seq-tiny`: English word sequences and three token-level tasks
whose correct cross-attention is known in advance.

Tasks (the task token is the first source token; the target is a permutation
of the source's text tokens, WordPiece pieces and `<unk>` included):
- ``copy``    y = x                       alignment: a diagonal
- ``reverse`` y = x reversed              alignment: the anti-diagonal
- ``swap``    neighbours swap places:     alignment: a zig-zag permutation
              (x2 x1 x4 x3 ...; an odd last token stays put)

Source ids: [<task>, x_1 .. x_n, <eos>];  target ids: [<bos>, y_1 .. y_n, <eos>].

Word source (offline, shipped in the repo): ``assets/seq2seq-tiny/corpus.txt``,
the prose lines of the Python Language Reference as bundled with CPython in
``pydoc_data/topics.py`` (PSF licence), extracted by ``python -m model.data``.
Sentences are 3 to 24 words, half of them windows of that running text and half
uniform draws from its word list (so every word is trained), plus the brief's
example sentences' words. Held-out splits come from other seeds and exclude
every training sentence.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from pathlib import Path

from .examples import EXAMPLE_SENTENCES

ASSET_DIR = Path(__file__).resolve().parent.parent / "assets" / "seq2seq-tiny"
CORPUS_PATH = ASSET_DIR / "corpus.txt"

TASKS = ("copy", "reverse", "swap")
TASK_TOKENS = {t: f"<{t}>" for t in TASKS}
PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<bos>", "<eos>"
SPECIAL_TOKENS = [PAD, UNK, BOS, EOS, *TASK_TOKENS.values()]  # ids 0.. in this order; <pad> = 0

MIN_WORDS, MAX_WORDS = 3, 24

BRIEF_SENTENCES = EXAMPLE_SENTENCES  # the brief's example sentences: always in the evaluation set

_WORD = re.compile(r"[A-Za-z]+(?:'[a-z]+)?|[,.;:?!']")


def permutation(task: str, n: int) -> list[int]:
    """Output position i takes source text token perm[i] (0-based over x_1..x_n)."""
    if task == "copy":
        return list(range(n))
    if task == "reverse":
        return list(range(n - 1, -1, -1))
    if task == "swap":
        perm = []
        for i in range(0, n - 1, 2):
            perm += [i + 1, i]
        if n % 2:
            perm.append(n - 1)
        return perm
    raise ValueError(f"unknown task {task!r}; known tasks: {', '.join(TASKS)}")


def apply_task(task: str, seq: list) -> list:
    return [seq[j] for j in permutation(task, len(seq))]


# ---- corpus ---------------------------------------------------------------

def extract_corpus() -> list[str]:
    """Prose lines of CPython's bundled Language Reference (pydoc_data.topics):
    lines of at least 4 whitespace-separated pieces, >= 85% of them plain words."""
    import pydoc_data.topics as topics

    keep = []
    for topic in sorted(topics.topics):
        for line in topics.topics[topic].split("\n"):
            line = line.strip()
            if not line or line.startswith((">>>", "...")) or line[0] in " *=-+|`#":
                continue
            pieces = line.split()
            words = [w for w in pieces if re.fullmatch(r"[A-Za-z][a-z]*[,.;:]?", w)]
            if len(pieces) >= 4 and len(words) / len(pieces) >= 0.85:
                keep.append(line)
    return keep


def load_corpus_tokens(path: Path = CORPUS_PATH) -> list[str]:
    """The corpus as one running stream of lowercase words and punctuation marks."""
    text = path.read_text(encoding="utf-8")
    return [w.lower() for w in _WORD.findall(text)]


def word_list(stream: list[str]) -> list[str]:
    """Every word of the corpus and of the brief's sentences, most frequent first (ties alphabetical)."""
    counts = Counter(w for w in stream if w[0].isalpha())
    for s in BRIEF_SENTENCES:
        for w in _WORD.findall(s.lower()):
            if w[0].isalpha():
                counts[w] += 1
    return sorted(counts, key=lambda w: (-counts[w], w))


class SentenceSampler:
    """Deterministic English word sequences of MIN_WORDS..MAX_WORDS words."""

    def __init__(self, stream: list[str] | None = None):
        self.stream = stream if stream is not None else load_corpus_tokens()
        self.words = word_list(self.stream)

    def sample(self, rng: random.Random) -> str:
        n = rng.randint(MIN_WORDS, MAX_WORDS)
        if rng.random() < 0.5:  # a window of real running text
            start = rng.randrange(len(self.stream) - n)
            toks = self.stream[start : start + n]
        else:  # uniform words, so rare words are trained too
            toks = [rng.choice(self.words) for _ in range(n)]
        text = " ".join(toks)
        return text[:1].upper() + text[1:] if rng.random() < 0.3 else text

    def sentences(self, seed: int, count: int, exclude: set[str] | None = None) -> list[str]:
        """`count` distinct sentences from `seed`, none in `exclude` (compared case-insensitively)."""
        rng = random.Random(seed)
        exclude = exclude or set()
        out, seen = [], set()
        while len(out) < count:
            s = self.sample(rng)
            key = s.lower()
            if key in exclude or key in seen:
                continue
            seen.add(key)
            out.append(s)
        return out


TRAIN_SEED, HELDOUT_SEED = 0, 12345


def heldout_sentences(sampler: SentenceSampler, train: list[str], count: int = 1000) -> list[str]:
    """Evaluation inputs: the brief's sentences first, then fresh ones, none seen in training."""
    exclude = {s.lower() for s in train}
    brief = [s for s in BRIEF_SENTENCES if s.lower() not in exclude]
    return brief + sampler.sentences(HELDOUT_SEED, count - len(brief), exclude | {s.lower() for s in brief})


if __name__ == "__main__":  # regenerate the shipped corpus from this Python's pydoc_data
    lines = extract_corpus()
    ASSET_DIR.mkdir(parents=True, exist_ok=True)
    CORPUS_PATH.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {CORPUS_PATH} ({len(lines)} lines)")
