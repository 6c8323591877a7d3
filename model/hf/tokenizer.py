"""tokenizer.json of a model folder, through the `tokenizers` library."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tokenizers import Tokenizer

from ..errors import InputError
from ..tokenizer import Encoded, TextTokenizer


class FolderTokenizer(TextTokenizer):
    """A TextTokenizer whose segment ids never exceed the model's token-type table (RoBERTa has one row)."""

    def __init__(self, tokenizer: Tokenizer, max_length: int, type_vocab_size: int = 0):
        super().__init__(tokenizer, max_length)
        self.type_vocab_size = type_vocab_size

    def encode(self, text: str, pair: str | None = None, *, add_special_tokens: bool = True) -> Encoded:
        enc = super().encode(text, pair, add_special_tokens=add_special_tokens)
        top = max(self.type_vocab_size - 1, 0)
        if any(t > top for t in enc.type_ids):
            enc = dataclasses.replace(enc, type_ids=[min(t, top) for t in enc.type_ids])
        return enc


def load_tokenizer(folder: Path, max_length: int, rows: int, type_vocab_size: int = 0) -> FolderTokenizer:
    """tokenizer.json of `folder`; its vocabulary (added tokens included) must fit the `rows` of the embedding."""
    path = folder / "tokenizer.json"
    if not path.is_file():
        raise InputError(f"{str(folder)!r} has no tokenizer.json (the fast-tokenizer file); save the tokenizer "
                         "with a fast tokenizer's save_pretrained, which writes it.", key="hf_tokenizer_missing",
                         path=str(folder))
    try:
        tok = Tokenizer.from_file(str(path))
    except Exception as e:  # the Rust side raises plain Exception subclasses with the parse error
        detail = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
        raise InputError(f"{str(path)!r} cannot be read as a tokenizer ({detail}).", key="hf_tokenizer_invalid",
                         path=str(path), detail=detail) from None
    vocab = tok.get_vocab(with_added_tokens=True)
    size = max(vocab.values(), default=-1) + 1  # ids run 0..size-1; each must have an embedding row
    if size > rows:
        raise InputError(f"{str(path)!r} has {size} tokens but the model's embedding has only {rows} rows: the "
                         "tokenizer does not belong to these weights.", key="hf_vocab_too_large", path=str(path),
                         tokens=size, rows=rows)
    return FolderTokenizer(tok, max_length, type_vocab_size)
