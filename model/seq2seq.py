"""`seq2seq-tiny`: the paper's encoder-decoder (Vaswani et al. 2017: sinusoidal PE,
post-LN Add & Norm, ReLU FFN, tied embeddings), small enough to train on a
2-core CPU, trained by `python -m model.train` on copy / reverse / swap
(see `model.data`), whose correct cross-attention is known.

Files (assets/seq2seq-tiny/): model.safetensors (weights, strict load),
config.json ({"transformer": TransformerConfig.to_dict(), tasks, limits, the
alignment head, training recipe}), tokenizer.json (WordPiece trained with the
`tokenizers` library on the shipped corpus; lowercases, strips accents, unknown
words become `<unk>`).

Source: [<task>, x_1 .. x_n, <eos>]; greedy decoding gives [<bos>, y_1 .. y_n, <eos>].
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from .config import PRESETS, TransformerConfig
from .data import ASSET_DIR, BOS, BRIEF_SENTENCES, CORPUS_PATH, EOS, SPECIAL_TOKENS, TASK_TOKENS, TASKS, UNK
from .errors import InputError, WeightsError
from .loaded import Seq2SeqModel
from .tokenizer import Encoded, TextTokenizer, check_text
from .transformer import Transformer
from .weights import load_checkpoint

NAME = "seq2seq-tiny"
VOCAB_SIZE = PRESETS["seq2seq-tiny"].vocab_size  # WordPiece entries, specials and task tokens included
# longest source text in tokens; longer input is truncated with a notice. Training sentences (3-24 words) have
# at most 33 tokens and few above 26, so accuracy falls off beyond that: the limit keeps inputs in range.
MAX_TEXT_TOKENS = 32
FIX = "run `python -m model.train` to rebuild assets/seq2seq-tiny/, or restore it from git"

SEQ2SEQ_TINY = PRESETS["seq2seq-tiny"]  # d_model 128, 4 heads, 2 + 2 layers, d_ff 512 (model/config.py)


def build_tokenizer(words: list[str], vocab_size: int = VOCAB_SIZE) -> Tokenizer:
    """Train a WordPiece tokenizer (deterministic) on the corpus lines, the brief's sentences and the word list."""
    tok = Tokenizer(models.WordPiece(unk_token=UNK, max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True, strip_accents=True, clean_text=True,
                                                handle_chinese_chars=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(prefix="##")
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, min_frequency=1,
                                        show_progress=False)
    lines = CORPUS_PATH.read_text(encoding="utf-8").split("\n") + BRIEF_SENTENCES + words
    tok.train_from_iterator(lines, trainer)
    for i, s in enumerate(SPECIAL_TOKENS):  # ids 0..6 in a fixed order; <pad> = 0 = config.pad_id
        if tok.token_to_id(s) != i:
            raise RuntimeError(f"special token {s} got id {tok.token_to_id(s)}, expected {i}")
    return tok


def text_tokenizer(tok: Tokenizer, max_text_tokens: int = MAX_TEXT_TOKENS) -> TextTokenizer:
    """Wrap for source text: no specials added here, truncation at `max_text_tokens`.

    Special tokens typed by a user ("<eos>", "<copy>") are tokenized as plain
    text (`< eos >`), never as the control tokens themselves."""
    tok.encode_special_tokens = True  # not serialised in tokenizer.json: set on every load
    tt = TextTokenizer(tok, max_text_tokens)
    tt._counter.encode_special_tokens = True
    return tt


def check_task(task: str | None) -> str:
    task = "copy" if task is None else task
    if task not in TASKS:
        raise InputError(f"unknown task {task!r}; known tasks: {', '.join(TASKS)}")
    return task


def source_ids(tokenizer: TextTokenizer, ids: list[int], task: str) -> list[int]:
    """[<task>, ids.., <eos>]"""
    return [tokenizer.token_to_id(TASK_TOKENS[task]), *ids, tokenizer.token_to_id(EOS)]


class Seq2SeqTiny(Seq2SeqModel):
    """Seq2SeqModel whose source starts with a task token; `trace(text, task=...)`."""

    tasks = TASKS

    def encode_source(self, text: str, task: str | None = None, **kw) -> Encoded:
        task = check_task(task)
        check_text(text)
        enc = self.tokenizer.encode(text, add_special_tokens=False)  # (n,) text pieces, truncated
        if not enc.ids:
            raise InputError("The text has no tokens (only spaces or control characters): type a sentence.")
        ids = source_ids(self.tokenizer, enc.ids, task)
        return Encoded(
            tokens=[TASK_TOKENS[task], *enc.tokens, EOS],
            ids=ids,
            offsets=[(0, 0), *enc.offsets, (0, 0)],
            special=[True, *enc.special, True],
            type_ids=[0] * len(ids),
            word_ids=[-1, *enc.word_ids, -1],
            truncated=enc.truncated,
            n_tokens_untruncated=enc.n_tokens_untruncated + 2,
        )

    def decode_ids(self, src_ids: list[int], max_new_tokens: int | None = None) -> list[int]:
        # outputs are as long as the input: a few spare steps, never past the positions
        limit = max_new_tokens or len(src_ids) + 4
        return super().decode_ids(src_ids, min(limit, self.config.max_positions - 1))

    def trace(self, text: str, *, intermediates: bool = False, target: str | None = None,
              max_new_tokens: int | None = None, task: str | None = None, **kw):
        return super().trace(text, intermediates=intermediates, target=target, max_new_tokens=max_new_tokens,
                             task=check_task(task), **kw)


def read_config(directory: Path = ASSET_DIR) -> dict:
    path = directory / "config.json"
    if not path.is_file():
        raise WeightsError(f"Missing {path}. Fix: {FIX}")
    return json.loads(path.read_text(encoding="utf-8"))


def load_seq2seq_tiny(device: torch.device, directory: Path | None = None) -> Seq2SeqTiny:
    directory = Path(directory or ASSET_DIR)
    meta = read_config(directory)
    config = TransformerConfig.from_dict(meta["transformer"])
    if not (directory / "tokenizer.json").is_file():
        raise WeightsError(f"Missing {directory / 'tokenizer.json'}. Fix: {FIX}")
    tok = text_tokenizer(Tokenizer.from_file(str(directory / "tokenizer.json")),
                         int(meta.get("max_text_tokens", MAX_TEXT_TOKENS)))
    if tok.vocab_size != config.vocab_size:
        raise WeightsError(f"tokenizer has {tok.vocab_size} entries but the model {config.vocab_size}. Fix: {FIX}")
    with torch.random.fork_rng(devices=[]):  # the random init is overwritten; keep the global RNG untouched
        module = Transformer(config)
    load_checkpoint(module, directory / "model.safetensors", FIX)
    return Seq2SeqTiny(NAME, module, tok, device, trained=True, bos=BOS, eos=EOS,
                       max_new_tokens=config.max_positions - 1,
                       description="trained here on copy / reverse / swap")
