"""`seq2seq-tiny`: the paper's encoder-decoder (Vaswani et al. 2017: sinusoidal PE,
post-LN Add & Norm, ReLU FFN, tied embeddings), small enough to train on a
2-core CPU, trained by `python -m training.train` on copy / reverse / swap
(see `model.data`), whose correct cross-attention is known.

Files (assets/seq2seq-tiny/), each sha256-checked at load against the digests
pinned in `model.weights.SEQ2SEQ_TINY_SHA256` (a checkpoint directory of one's own,
`--checkpoint DIR`, against the sha256.json that training wrote beside it):
model.safetensors (weights, strict load), config.json ({"transformer":
TransformerConfig.to_dict(), tasks, limits, the alignment head, training
recipe}), tokenizer.json (WordPiece over an everyday English and Korean vocabulary
built from wordfreq's word lists, with every KS X 1001 Hangul syllable; lowercases,
strips accents but keeps Hangul whole, splits digits; a word with a character it
does not know, e.g. emoji or Greek, becomes `<unk>`).

Source: [<task>, x_1 .. x_n, <eos>]; greedy decoding gives [<bos>, y_1 .. y_n, <eos>].
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from tokenizers import Tokenizer

from .config import PRESETS, TransformerConfig
from .data import ASSET_DIR, BOS, EOS, MAX_TEXT_TOKENS, TASK_TOKENS, TASKS
from .errors import InputError, WeightsError
from .loaded import Seq2SeqModel
from .source import Source, build
from .tokenizer import Encoded, TextTokenizer, check_text
from .weights import SEQ2SEQ_TINY_SHA256, Checkpoint
from .words import unknown_ids, unknown_words

NAME = "seq2seq-tiny"
FIX = "git checkout -- assets/seq2seq-tiny"  # restore the shipped checkpoint from git
FIX_DIR = "python -m training.train --out DIR"  # train it again: writes DIR/sha256.json
FILES = ("model.safetensors", "tokenizer.json", "config.json")

SEQ2SEQ_TINY = PRESETS["seq2seq-tiny"]  # d_model 128, 4 heads, 2 + 2 layers, d_ff 512 (model/config.py)


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
        raise InputError(f"unknown task {task!r}; known tasks: {', '.join(TASKS)}", key="unknown_task", task=repr(task),
                         tasks=", ".join(TASKS))
    return task


def source_ids(tokenizer: TextTokenizer, ids: list[int], task: str) -> list[int]:
    """[<task>, ids.., <eos>]"""
    return [tokenizer.token_to_id(TASK_TOKENS[task]), *ids, tokenizer.token_to_id(EOS)]


class Seq2SeqTiny(Seq2SeqModel):
    """Seq2SeqModel whose source starts with a task token; `trace(text, task=...)`.

    The trace's meta also holds `unknown_words`: the words typed that became `<unk>`."""

    tasks = TASKS

    def __init__(self, *args, alignment: dict | None = None, **kw):
        super().__init__(*args, **kw)
        self.alignment = alignment or {"layer": -1, "head": "mean"}  # where the evaluation reads alignment

    def encode_source(self, text: str, task: str | None = None, **kw) -> Encoded:
        task = check_task(task)
        check_text(text)
        enc = self.tokenizer.encode(text, add_special_tokens=False)  # (n,) text pieces, truncated; none: InputError
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

    def step_limit(self, src_ids: list[int], max_new_tokens: int | None = None) -> int:
        # outputs are as long as the input: a few spare steps, never past the positions
        return min(max_new_tokens or len(src_ids) + 4, self.config.max_positions - 1)

    def trace(self, text: str, *, intermediates: bool = False, target: str | None = None,
              max_new_tokens: int | None = None, task: str | None = None, **kw):
        tr = super().trace(text, intermediates=intermediates, target=target, max_new_tokens=max_new_tokens,
                           task=check_task(task), **kw)
        enc = Encoded(tokens=tr.source_tokens, ids=tr.source_ids, offsets=tr.source_offsets,
                      special=tr.source_special, type_ids=[], word_ids=tr.source_word_ids, truncated=tr.truncated,
                      n_tokens_untruncated=tr.n_tokens_untruncated)
        tr.meta["unknown_words"] = unknown_words(text, enc, unknown_ids(self.tokenizer))
        return tr


def expected_digests(directory: Path) -> tuple[dict[str, str], str]:
    """The sha256 digests a seq2seq-tiny directory must match, and the fix to name when it does not:
    the pinned ones for the shipped assets, DIR/sha256.json (written by training) for any other."""
    if directory.resolve() == ASSET_DIR.resolve():
        return SEQ2SEQ_TINY_SHA256, FIX
    manifest = directory / "sha256.json"
    if not manifest.is_file():
        raise WeightsError(f"Missing {manifest} (the digests of the checkpoint). Fix: {FIX_DIR}",
                           key="checkpoint_manifest_missing", path=manifest, fix=FIX_DIR)
    try:
        digests = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise WeightsError(f"Cannot read {manifest} ({e}). Fix: {FIX_DIR}", key="checkpoint_unreadable", path=manifest,
                           detail=e, fix=FIX_DIR) from None
    if not isinstance(digests, dict) or set(digests) != set(FILES):
        raise WeightsError(f"{manifest} must name exactly {', '.join(FILES)}. Fix: {FIX_DIR}",
                           key="checkpoint_manifest_files", path=manifest, files=", ".join(FILES), fix=FIX_DIR)
    return digests, FIX_DIR


def read_config(directory: Path = ASSET_DIR) -> dict:
    path = directory / "config.json"
    if not path.is_file():
        raise WeightsError(f"Missing {path}. Fix: {FIX}", key="checkpoint_file_missing", path=path, fix=FIX)
    return json.loads(path.read_text(encoding="utf-8"))


def seq2seq_source(directory: Path | None = None) -> Source:
    """seq2seq-tiny's files (the shipped ones, or a checkpoint directory of one's own), each sha256-checked first."""
    directory = Path(directory or ASSET_DIR)
    digests, fix = expected_digests(directory)

    def config(r) -> TransformerConfig:
        try:
            r.kept["meta"] = meta = read_config(directory)
            return TransformerConfig.from_dict(meta["transformer"])
        except (ValueError, KeyError, TypeError) as e:
            raise WeightsError(f"{directory / 'config.json'} is not a seq2seq-tiny config ({e}). Fix: {fix}",
                               key="checkpoint_config", path=directory / "config.json", detail=e, fix=fix) from None

    def ids(r) -> dict:
        return {"bos_id": Seq2SeqModel.token_id(r.tokenizer, BOS), "eos_id": Seq2SeqModel.token_id(r.tokenizer, EOS),
                "max_new_tokens": r.config.max_positions - 1}

    return Source(NAME, {f: directory / f for f in FILES}, digests={f: digests[f] for f in FILES}, fix=fix,
                  config=config, ids=ids, same_vocab=True, model=Seq2SeqTiny,  # table: the module's own keys
                  weights=lambda r: Checkpoint([r.files["model.safetensors"]], fix=fix, source="model.safetensors"),
                  tokenizer=lambda r: text_tokenizer(Tokenizer.from_file(str(r.files["tokenizer.json"])),
                                                     int(r.kept["meta"].get("max_text_tokens", MAX_TEXT_TOKENS))),
                  extra=lambda r: {"alignment": r.kept["meta"].get("alignment")},
                  description="trained here on copy / reverse / swap")


def load_seq2seq_tiny(device: torch.device, directory: Path | None = None) -> Seq2SeqTiny:
    return build(seq2seq_source(directory), device)
