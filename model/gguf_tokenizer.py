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

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

from .errors import WeightsError
from .tokenizer import BYTE_SPELLING, WORD_START

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


def gguf_tokenizer(md: dict, path) -> Tokenizer:
    """The tokenizer of a GGUF file's metadata `md` (see the module docstring); a WeightsError for another type."""
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
    vocab = tok.get_vocab()
    tok.add_tokens([AddedToken(t, normalized=False, special=False) for t, ty in zip(tokens, types)
                    if ty == USER_DEFINED and t in vocab])
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
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges_from_vocabulary(tokens, vocab), fuse_unk=True, dropout=None,
                               unk_token=tokens[unk] if unk is not None else "<unk>", byte_fallback=True))
    tok.normalizer = normalizers.Replace(" ", WORD_START)
    tok.pre_tokenizer = pre_tokenizers.Split(pattern=" ", behavior="merged_with_previous", invert=False)
    tok.decoder = decoders.Sequence([decoders.Replace(WORD_START, " "), decoders.ByteFallback(), decoders.Fuse()])
    return tok


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
