"""The tokenizer a GGUF file's metadata describes, built with `tokenizers` as transformers builds it from the same file
(transformers' integrations/gguf/gguf_tokenizer_mapping.py), so the ids agree with transformers and llama.cpp:

- "gpt2" (byte-level BPE: Llama 3, SmolLM2, Qwen2 / Qwen3): the vocabulary and merges, GPT-2's byte-level
  pre-tokenizer or the split regex of the vocabulary's pre-tokenizer type (tokenizer.ggml.pre, e.g. qwen2's);
- "llama" (SentencePiece BPE with byte fallback) for Gemma 3: spaces become "▁", a character missing from the
  vocabulary falls back to its UTF-8 bytes ("<0xEB>"); the file lists no merges, so they are rebuilt from the
  vocabulary in the order its tokens are listed (transformers' gemma_tokenizer and generate_merges).

Control tokens are kept whole as special tokens, user-defined ones as added tokens, a BOS is prepended when the file
says so. Reads the metadata only: `gguf_tokenizer(metadata, path)`.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

from .errors import WeightsError
from .tokenizer import BYTE_SPELLING, WORD_START
from .weights import cache_dir

_LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                 r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
                r"|\s+(?!\S)|\s+")
# tokenizer.ggml.pre -> the split regex its merges were learned with (transformers' GGUF_PRE_TOKENIZER_SPLITS for the
# families read here); any other type keeps GPT-2's byte-level split, as transformers does
PRE_TOKENIZER_SPLITS = {"llama3": _LLAMA3_SPLIT, "llama-v3": _LLAMA3_SPLIT, "llama-bpe": _LLAMA3_SPLIT,
                        "smaug-bpe": _LLAMA3_SPLIT, "qwen2": _QWEN2_SPLIT, "deepseek-r1-qwen": _QWEN2_SPLIT}
SENTENCEPIECE_ARCHITECTURES = ("gemma3",)  # where a "llama" (SentencePiece) vocabulary is read (Gemma's rules)
CONTROL, USER_DEFINED = 3, 4  # tokenizer.ggml.token_type


@contextlib.contextmanager
def _no_gc():
    """The garbage collector paused while a vocabulary's hundreds of thousands of small objects are made (none of them
    in a cycle): its passes over every object of torch and numpy were a third of building Gemma 3's tokenizer."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def gguf_tokenizer(md: dict, path) -> Tokenizer:
    """The tokenizer of a GGUF file's metadata `md` (see the module docstring); a WeightsError for another type."""
    with _no_gc():
        return _gguf_tokenizer(md, path)


def _gguf_tokenizer(md: dict, path) -> Tokenizer:
    kind, arch = md.get("tokenizer.ggml.model"), md.get("general.architecture")
    if kind == "gpt2":
        tok, spelled = byte_level(md, path), set(BYTE_SPELLING.values())
    elif kind == "llama" and arch in SENTENCEPIECE_ARCHITECTURES:
        tok, spelled = sentencepiece(md), None
    else:
        raise WeightsError(f"{path}: tokenizer type {kind!r} is not supported; supported: 'gpt2' (byte-level BPE), "
                           "'llama' (SentencePiece, in gemma3 files).", key="gguf_tokenizer", path=str(path),
                           tokenizer=repr(kind))
    tokens = md["tokenizer.ggml.tokens"]
    types = md.get("tokenizer.ggml.token_type")
    types = [] if types is None else list(types)
    # a control token spelled outside a byte-level alphabet is llama.cpp's mislabel: not added (transformers skips it)
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True) for t, ty in zip(tokens, types)
                            if ty == CONTROL and (spelled is None or set(t) <= spelled)])
    user = [t for t, ty in zip(tokens, types) if ty == USER_DEFINED]
    if user:  # (a byte-level vocabulary is respelled: what counts is the tokenizer's own)
        vocab = tok.get_vocab()
        tok.add_tokens([AddedToken(t, normalized=False, special=False) for t in user if t in vocab])
    bos = md.get("tokenizer.ggml.bos_token_id")
    add_bos = md.get("tokenizer.ggml.add_bos_token", kind == "llama")  # llama.cpp: a SentencePiece vocabulary adds it
    if add_bos and bos is not None:
        tok.post_processor = processors.TemplateProcessing(single=f"{tokens[bos]}:0 $A:0",
                                                           pair=f"{tokens[bos]}:0 $A:0 $B:1",
                                                           special_tokens=[(tokens[bos], int(bos))])
    elif kind == "gpt2":
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return tok


def byte_level(md: dict, path) -> Tokenizer:
    """Byte-level BPE: a token written in plain characters is respelled in the byte alphabet."""
    tokens, merges = md["tokenizer.ggml.tokens"], md.get("tokenizer.ggml.merges")
    if not isinstance(merges, list):
        raise WeightsError(f"{path} is not a GGUF file this app can read: the byte-level tokenizer has no merges "
                           "(tokenizer.ggml.merges).", key="gguf_malformed", path=str(path),
                           problem="the byte-level tokenizer has no merges (tokenizer.ggml.merges)")
    alphabet = set(BYTE_SPELLING.values())
    vocab = {}
    for i, tok in enumerate(tokens):
        vocab.setdefault(tok if set(tok) <= alphabet else "".join(BYTE_SPELLING[b] for b in tok.encode("utf-8")), i)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[tuple(m.split(" ", 1)) for m in merges], dropout=None,
                               continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False))
    split = PRE_TOKENIZER_SPLITS.get(md.get("tokenizer.ggml.pre"))
    if split is None:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    else:
        tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(split), behavior="isolated"),
                                                     pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    return tok


def sentencepiece(md: dict) -> Tokenizer:
    """Gemma's SentencePiece BPE (transformers' GemmaTokenizer over gemma_tokenizer's vocabulary and merges): a token of
    two or more spaces is respelled in "▁"; the merges come from the vocabulary, best first in the file's order."""
    tokens = [WORD_START * len(t) if " " in t and not t.strip() else t for t in md["tokenizer.ggml.tokens"]]
    vocab = {t: i for i, t in enumerate(tokens)}  # a repeated token: its last id, as transformers reads it
    unk = md.get("tokenizer.ggml.unknown_token_id")
    tok = Tokenizer(models.BPE(vocab=vocab, merges=cached_merges(tokens, vocab), fuse_unk=True, dropout=None,
                               unk_token=tokens[unk] if unk is not None else "<unk>", byte_fallback=True))
    tok.normalizer = normalizers.Replace(" ", WORD_START)
    tok.pre_tokenizer = pre_tokenizers.Split(pattern=" ", behavior="merged_with_previous", invert=False)
    tok.decoder = decoders.Sequence([decoders.Replace(WORD_START, " "), decoders.ByteFallback(), decoders.Fuse()])
    return tok


MERGES_CACHE_VERSION = 1  # raise it when merges_from_vocabulary changes what it returns
MERGES_CACHE_MIN_TOKENS = 32768  # smaller vocabularies rebuild their merges in well under 0.1 s


def cached_merges(tokens: list[str], vocab: dict[str, int]) -> list[tuple[str, str]]:
    """merges_from_vocabulary, kept as JSON in weights.cache_dir() by the vocabulary's digest for a large vocabulary:
    rebuilding Gemma 3's 262,144 tokens' merges takes ~1 s of CPU at every load, reading them back ~0.2 s. A missing,
    unreadable or malformed file is rebuilt; a cache that cannot be written (a read-only home) is skipped."""
    if len(tokens) < MERGES_CACHE_MIN_TOKENS:
        return merges_from_vocabulary(tokens, vocab)
    digest = hashlib.sha256("\n".join(tokens).encode("utf-8", "surrogatepass")).hexdigest()[:32]
    path = cache_dir() / f"gguf-merges-v{MERGES_CACHE_VERSION}-{digest}.json"
    try:
        merges = [(a, b) for a, b in json.loads(path.read_text(encoding="utf-8"))]
        if all(type(a) is str and type(b) is str for a, b in merges):
            return merges
    except (OSError, ValueError, TypeError):  # missing, unreadable, not pairs
        pass
    merges = merges_from_vocabulary(tokens, vocab)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(merges, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, path)  # whole or not at all: another process may be reading it
    except OSError:
        pass
    return merges


def merges_from_vocabulary(tokens: list[str], vocab: dict[str, int]) -> list[tuple[str, str]]:
    """Every split of a token into two vocabulary tokens, the earliest-listed token's first (transformers'
    generate_merges with each token's score -(its position)): ties by the longer left part, then the longer right."""
    score = {t: -i for i, t in enumerate(tokens)}  # a repeated token: its last position, as the dict keeps it
    merges = []
    for token, s in score.items():  # in the order of first appearance
        local = [(token[:k], token[k:]) for k in range(1, len(token)) if token[:k] in vocab and token[k:] in vocab]
        local.sort(key=lambda lr: (vocab[lr[0]], vocab[lr[1]]))
        merges.extend((l_, r, s) for l_, r in local)
    merges.sort(key=lambda m: (m[2], len(m[0]), len(m[1])), reverse=True)
    return [(l_, r) for l_, r, _ in merges]
