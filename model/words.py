"""Which words of a text a model cannot read as words: the one place that groups a tokenizer's pieces into the
text's words and finds those it wrote as an unknown token. Used by a model that names its unknown words itself
(LoadedModel.unknown_words: seq2seq-tiny, a translator) and by analysis.readability (which also finds jamo and byte
pieces, from a trace)."""

from __future__ import annotations

from collections.abc import Collection, Sequence

UNKNOWN_TOKENS = frozenset({"[UNK]", "<unk>", "<UNK>"})  # the unknown tokens of WordPiece, SentencePiece, Marian


def words(text: str, tokens: Sequence[str], word_ids: Sequence[int], offsets: Sequence[tuple[int, int]],
          special: Sequence[bool]) -> list[tuple[str, list[int]]]:
    """The words of `text` as a tokenizer split it: each word id (specials and pieces of no word left out) in order
    of first appearance, as typed (the span of its pieces, stripped; its pieces joined when none has a span), with
    the indices of its pieces."""
    idx: dict[int, list[int]] = {}
    for i, w in enumerate(word_ids):
        if w >= 0 and not special[i]:
            idx.setdefault(w, []).append(i)
    out = []
    for pieces in idx.values():
        spans = [offsets[i] for i in pieces if offsets and offsets[i][1] > offsets[i][0]]
        word = (text[min(s for s, _ in spans):max(e for _, e in spans)].strip() if spans
                else "".join(tokens[i] for i in pieces))
        out.append((word, pieces))
    return out


def unknown_ids(tokenizer) -> frozenset[int]:
    """The ids of the unknown tokens a tokenizer has (model.tokenizer.TextTokenizer: "<unk>" -> 1)."""
    return frozenset(i for i in map(tokenizer.token_to_id, sorted(UNKNOWN_TOKENS)) if i is not None)


def unknown_words(text: str, enc, unknown: Collection[int] = ()) -> list[str]:
    """The words of `text` with a piece its vocabulary lacks (an unknown token: a Korean word on a translator, an
    emoji on seq2seq-tiny), as typed, in order. `enc`: the model's encoding of `text` (model.tokenizer.Encoded);
    `unknown`: the ids of its unknown tokens (`unknown_ids`; none given: by the token alone). A SentencePiece
    tokenizer writes an unknown piece as the text it stands for ("고양이"), with the id of <unk>."""
    return [w for w, pieces in words(text, enc.tokens, enc.word_ids, enc.offsets, enc.special)
            if any(enc.ids[i] in unknown or enc.tokens[i] in UNKNOWN_TOKENS for i in pieces)]
