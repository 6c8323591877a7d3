"""The few token operations analysis/ needs from a loaded model, so that it never calls the tokenizer itself.

    enc = loaded.encode(text)            # the text as the first stack reads it (an Encoded: tokens, ids, type ids)
    loaded.type_ids(enc.type_ids)        # (1, n) token types for the forward, or None: decided here alone
    loaded.encode_target(target)         # a decoder target's ids, no special tokens
    loaded.token_texts(ids, "#{id}")     # id -> token string
    loaded.token_ids(tokens)             # token string -> id

A mixin of model/loaded.py's LoadedModel (it reads `tokenizer`, `config`, `device` and `encode_source` there).
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from .tokenizer import Encoded


class TokenOps:
    def encode(self, text: str, pair: str | None = None, **kw) -> Encoded:
        """`text` as the model's first stack reads it: its source (kw: a task model's task=), or with `pair` a text
        pair (an encoder's segments A and B, as EncoderModel.trace encodes them)."""
        return self.tokenizer.encode(text, pair) if pair is not None else self.encode_source(text, **kw)

    def type_ids(self, types: Iterable[int] | None) -> torch.Tensor | None:
        """(1, n) token types for the forward where the model has a token-type embedding (BERT family), else None.
        The one place that decides: a model without the embedding ignores them, and with it None means all zeros."""
        types = list(types or ())
        if not (self.config.type_vocab_size and types):
            return None
        return torch.tensor([types], dtype=torch.long, device=self.device)

    def encode_target(self, text: str) -> list[int]:
        """A decoder target's ids as typed: the text's pieces without special tokens."""
        return self.tokenizer.encode(text, add_special_tokens=False).ids

    def token_texts(self, ids: Iterable[int], missing: str | None = None) -> list[str | None]:
        """Each id's token string; where the vocabulary has none (or an empty one), `missing` formatted with the id
        ("#{id}"), or None when `missing` is None."""
        out = []
        for i in ids:
            t = self.tokenizer.id_to_token(int(i))
            out.append((t or missing.format(id=int(i))) if missing is not None else t)
        return out

    def token_ids(self, tokens: Iterable[str]) -> list[int | None]:
        """Each token string's id (None where the vocabulary lacks it)."""
        return [self.tokenizer.token_to_id(t) for t in tokens]

    def ordinary_ids(self) -> list[int]:
        """The ids of the vocabulary (as far as the model's output reaches) that are no special token, ascending."""
        tok = self.tokenizer
        specials = {tok.token_to_id(s) for s in tok.special_tokens}
        return [i for i in range(min(tok.vocab_size, self.config.vocab_size)) if i not in specials]

    def detokenize(self, ids: Iterable[int]) -> str:
        """Ids as text (special tokens skipped)."""
        return self.tokenizer.decode(list(ids))
