"""What the guided tour says about *this* model, derived from its configuration and its tokenizer (no Streamlit, no
model runs): how it marks word pieces and which special tokens it adds (step 1), whether it scales its embeddings
(step 2), how positions enter (step 3: the paper's sin/cos, learned vectors and token types, rotary, none),
grouped-query attention and rotated queries and keys (steps 4-5), the causal mask of a decoder-only model (step 6),
the norm's kind and placement (step 10), the Feed Forward's activation and gate (step 11); plus each step's formula
as the model computes it, and the label of the model's own special tokens ("[CLS]/[SEP]", "<s>/</s>") for the
pages that name them.

    facts = ModelFacts.from_model(loaded)       # or ModelFacts(...) from a config and a tokenizer's specials
    step_notes("positional", facts, "ko")       # ["multilingual-e5-small은 위치마다 벡터를 학습해 ...", ...]
    step_formula("ffn", facts)                  # LaTeX
    specials_label(facts, "en")                 # "<s>/</s>"

Nothing here guesses from a model's name: a new local folder gets the captions its config and tokenizer call for.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from i18n import t
from i18n.names import activation_name

# the FFN's activation by its config name, as the captions and formulas write it
# the marks of each piece scheme, for a tokenizer that does not say (a WordLevel model): read from the tokens
_MARKS = (("sentencepiece", "\u2581"), ("bytelevel", "\u0120"), ("wordpiece", "##"))
MAX_VOCAB_SPECIALS = 4  # special tokens of the vocabulary named when a model adds none to the text


@dataclass(frozen=True)
class ModelFacts:
    """The facts the tour's captions are made of (TransformerConfig's fields plus the tokenizer's)."""

    name: str
    kind: str = "encoder"  # "encoder" | "decoder" (decoder-only) | "encoder-decoder"
    d_model: int = 512
    n_heads: int = 8
    kv_heads: int = 8
    positional: str = "sinusoidal"  # sinusoidal | learned | rotary | none
    max_positions: int = 512
    rope_theta: float = 10000.0
    type_vocab_size: int = 0
    embedding_layer_norm: bool = False
    scale_embeddings: bool = True
    norm: str = "layernorm"  # layernorm | rmsnorm
    norm_placement: str = "post"  # post | pre
    activation: str = "relu"
    gated_ffn: bool = False
    bias: bool = True
    qkv_bias: bool = True  # biases on W_Q, W_K, W_V (TransformerConfig.has_qkv_bias)
    output_bias: bool = True  # a bias on the output layer to the vocabulary (TransformerConfig.output_bias)
    d_ff: int = 2048
    n_encoder_layers: int = 6
    n_decoder_layers: int = 6
    vocab_size: int = 37000
    tie_embeddings: bool = True  # the output projection is the token table
    share_embeddings: bool = True  # the encoder and the decoder read one token table
    scheme: str | None = None  # "wordpiece" | "sentencepiece" | "bytelevel" | None (TextTokenizer.scheme)
    before: tuple[str, ...] = ()  # special tokens the model puts before a text ("[CLS]"; "<copy>")
    after: tuple[str, ...] = ()  # and after it ("[SEP]"; "</s>")
    vocab_specials: tuple[str, ...] = ()  # the vocabulary's special tokens (TextTokenizer.special_tokens)
    pad: str | None = None  # the padding token ("[PAD]", "<pad>")
    sinusoid_layout: str = "interleaved"  # the sinusoids' column order: the paper's, "halves" or "marian" (Bergamot)
    decoder_mixer: str = "attention"  # the decoder's self-mixing sublayer: masked self-attention, or an SSRU (Bergamot)
    head_dim: int | None = None  # d_k where the model states its own (Qwen3, Gemma 3); None: d_model / heads
    qk_norm: bool = False  # RMSNorm on each head's q and k before RoPE (Qwen3, Gemma 3)
    post_norms: bool = False  # a second norm on each sublayer's output (Gemma)
    norm_offset: float = 0.0  # the norms scale by (norm_offset + γ) (Gemma: 1)
    attn_scalar: float | None = None  # scores ÷ sqrt(attn_scalar) instead of sqrt(d_k) (Gemma's query_pre_attn_scalar)
    sliding_window: int | None = None  # the local layers' window
    n_local: int = 0  # how many decoder layers are local (sliding window)
    rope_theta_local: float | None = None  # their RoPE base where it differs

    @property
    def d_k(self) -> int:
        return self.head_dim or (self.d_model // self.n_heads if self.n_heads else 0)

    @classmethod
    def from_config(cls, name: str, config, *, scheme: str | None = None, tokens: list[str] | None = None,
                    special: list[bool] | None = None, vocab_specials=(), pad: str | None = None) -> ModelFacts:
        """From a TransformerConfig and, optionally, one encoded text (`tokens` with their `special` flags: the
        specials before its first text token and after its last are the model's wrapping ones)."""
        before, after = wrapping_specials(tokens or [], special or [])
        return cls(name=name, kind=config.kind, d_model=config.d_model, n_heads=config.n_heads,
                   kv_heads=config.kv_heads, positional=config.positional, max_positions=config.max_positions,
                   rope_theta=config.rope_theta, type_vocab_size=config.type_vocab_size,
                   embedding_layer_norm=config.embedding_layer_norm, scale_embeddings=config.scale_embeddings,
                   norm=config.norm, norm_placement=config.norm_placement, activation=config.activation,
                   gated_ffn=config.gated_ffn, bias=config.bias, qkv_bias=config.has_qkv_bias,
                   output_bias=config.output_bias, d_ff=config.d_ff,
                   n_encoder_layers=config.n_encoder_layers, n_decoder_layers=config.n_decoder_layers,
                   vocab_size=config.vocab_size, tie_embeddings=config.tie_embeddings,
                   share_embeddings=config.share_embeddings,
                   scheme=scheme if scheme is not None else scheme_from_tokens(tokens or []),
                   before=before, after=after, vocab_specials=tuple(vocab_specials), pad=pad,
                   sinusoid_layout=config.sinusoid_layout,
                   decoder_mixer=config.decoder_mixer, **_new_options(config))

    @classmethod
    def from_model(cls, loaded, probe: str = "a b") -> ModelFacts:
        """From a loaded model (model.loaded.LoadedModel): its config, its tokenizer's scheme and specials, and the
        specials it puts around a short probe text (only tokenized, never run)."""
        tok = loaded.tokenizer
        try:
            enc = loaded.encode_source(probe)
            tokens, special = list(enc.tokens), list(enc.special)
        except ValueError:  # a tokenizer that cannot read the probe (InputError): no wrapping specials
            tokens, special = [], []
        cfg = loaded.config
        return cls.from_config(loaded.name, cfg, scheme=tok.scheme, tokens=tokens, special=special,
                               vocab_specials=tok.special_tokens, pad=tok.id_to_token(cfg.pad_id))

    @property
    def specials(self) -> tuple[str, ...]:
        """The distinct special tokens the model adds to a text, in order ("[CLS]", "[SEP]")."""
        return tuple(dict.fromkeys((*self.before, *self.after)))

    @property
    def act_name(self) -> str:
        return activation_name(self.activation)


def _new_options(config) -> dict:
    """The facts of the options since 2017 that TransformerConfig names (issue 38), their defaults where a config
    does not have them."""
    local = tuple(config.local_layers)
    return dict(head_dim=config.head_dim, qk_norm=config.qk_norm,
                post_norms=config.post_norms, norm_offset=config.norm_offset,
                attn_scalar=config.attn_scalar,
                sliding_window=config.sliding_window if local else None, n_local=len(local),
                rope_theta_local=config.rope_theta_local)


def wrapping_specials(tokens: list[str], special: list[bool]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the special tokens before the first non-special token, those after the last one)."""
    flags = list(special)[: len(tokens)]
    text = [i for i, s in enumerate(flags) if not s]
    if not text:
        return tuple(tok for tok, s in zip(tokens, flags) if s), ()
    return tuple(tokens[: text[0]]), tuple(tokens[text[-1] + 1:])


def scheme_from_tokens(tokens: list[str]) -> str | None:
    """The piece scheme read from the marks in some tokens (`▁`, `Ġ`, `##`), or None."""
    for scheme, mark in _MARKS:
        if any(tok.startswith(mark) and len(tok) >= len(mark) for tok in tokens):
            return scheme
    return None


def code(tokens) -> str:
    """Tokens as inline code for markdown: `<s>`, `</s>` (backticks inside a token removed)."""
    return ", ".join(f"`{str(tok).replace('`', '')}`" for tok in tokens)


def specials_label(facts: ModelFacts, lang: str) -> str:
    """The model's special tokens as the pages name them: "[CLS]/[SEP]", "<s>/</s>", or, for a model that adds
    none (a language model such as SmolLM2), "special tokens"."""
    return "/".join(facts.specials) if facts.specials else t("notes.specials.none", lang)


def pad_label(facts: ModelFacts, lang: str) -> str:
    """The model's padding token ("[PAD]", "<pad>"), or "padding"."""
    return facts.pad or t("notes.pad.none", lang)


def piece_example(scheme: str | None, tokens: list[str], special: list[bool] | None = None) -> tuple[str, ...]:
    """The first word of a sentence that shows the scheme's mark: a piece and the piece that continues it
    (`didn` `##t`, `▁동물` `은`, `Ġcross` `ing`), or one marked piece; () when the sentence has none."""
    flags = list(special or [False] * len(tokens))
    mark = dict(_MARKS).get(scheme or "")
    if not mark:
        return ()
    plain = [(tok, not s) for tok, s in zip(tokens, flags)]
    for i in range(len(plain) - 1):
        (a, ok_a), (b, ok_b) = plain[i], plain[i + 1]
        if not (ok_a and ok_b):
            continue
        if scheme == "wordpiece" and b.startswith(mark) and not a.startswith(mark):
            return a, b
        if scheme != "wordpiece" and a.startswith(mark) and len(a) > 1 and not b.startswith(mark):
            return a, b
    return next(((tok,) for tok, ok in plain if ok and tok.startswith(mark) and len(tok) > len(mark)), ())


# ---- the captions, step by step --------------------------------------------------------------------------------------
def _tokens(f: ModelFacts, lg: str, tokens: list[str] | None, special: list[bool] | None) -> list[str]:
    out = [t(f"notes.tokens.{f.scheme or 'plain'}", lg, model=f.name)]
    example = piece_example(f.scheme, tokens or [], special)
    if example:
        out.append(t("notes.tokens.example", lg, pieces=" ".join(code([p]) for p in example)))
    if f.before and f.after:
        out.append(t("notes.tokens.wrap", lg, before=code(f.before), after=code(f.after)))
    elif f.before:
        out.append(t("notes.tokens.before", lg, before=code(f.before)))
    elif f.after:
        out.append(t("notes.tokens.after", lg, after=code(f.after)))
    elif f.vocab_specials:
        out.append(t("notes.tokens.none", lg, vocab=code(f.vocab_specials[:MAX_VOCAB_SPECIALS])))
    if f.pad and f.pad not in f.specials:
        out.append(t("notes.tokens.pad", lg, pad=code([f.pad])))
    return out


def _scaling(f: ModelFacts, lg: str) -> str:
    if f.scale_embeddings:
        return t("notes.embedding.scaled", lg, model=f.name, d=f.d_model, s=math.sqrt(f.d_model))
    return t("notes.embedding.unscaled", lg, model=f.name)


def _positional(f: ModelFacts, lg: str) -> list[str]:
    if f.positional == "sinusoidal":
        out = [t("notes.positional.sinusoidal", lg, model=f.name)]
        if f.sinusoid_layout == "marian":  # a Bergamot translator: the same waves, in Marian's order
            out.append(t("trpages.notes.positional.marian", lg, model=f.name, half=f.d_model // 2))
    elif f.positional == "learned":
        out = [t("notes.positional.learned", lg, model=f.name, n=f.max_positions)]
    elif f.positional == "rotary":
        out = [t("notes.positional.rotary", lg, model=f.name, theta=f.rope_theta)]
    else:
        out = [t("notes.positional.none", lg, model=f.name)]
    if f.type_vocab_size:
        out.append(t("notes.positional.token_types", lg, n=f.type_vocab_size))
    if f.positional != "rotary":
        out.append(t(f"notes.positional.{'scaled' if f.scale_embeddings else 'unscaled'}", lg, d=f.d_model,
                     s=math.sqrt(f.d_model)))
    if f.embedding_layer_norm:
        out.append(t("notes.positional.emb_norm", lg))
    return out


def _qkv(f: ModelFacts, lg: str) -> list[str]:
    out = []
    if f.kv_heads != f.n_heads:
        out.append(t("notes.qkv.gqa", lg, model=f.name, h=f.n_heads, kv=f.kv_heads, g=f.n_heads // f.kv_heads))
    if f.head_dim and f.head_dim * f.n_heads != f.d_model:
        out.append(t("notes.qkv.head_dim", lg, model=f.name, k=f.head_dim, h=f.n_heads, hk=f.head_dim * f.n_heads,
                     d=f.d_model))
    if f.qk_norm:
        out.append(t("notes.qkv.qk_norm", lg, model=f.name))
    if f.positional == "rotary":
        out.append(t("notes.qkv.rotary", lg))
    return out


def _add_norm(f: ModelFacts, lg: str) -> list[str]:
    norm = t(f"notes.norm.{f.norm}", lg)
    out = [t(f"notes.add_norm.{f.norm_placement}", lg, model=f.name, norm=norm)]
    out.append(t(f"notes.add_norm.{f.norm}", lg))
    if f.post_norms:
        out.append(t("notes.add_norm.post_norms", lg, model=f.name))
    if f.norm_offset:
        out.append(t("notes.add_norm.offset", lg, model=f.name))
    return out


def _mask(f: ModelFacts, lg: str) -> list[str]:
    out = [t("notes.mask.causal", lg, model=f.name)]
    if f.sliding_window:
        out.append(t("notes.mask.window", lg, model=f.name, w=f.sliding_window, n=f.n_local,
                     L=f.n_decoder_layers))
    return out


def _ffn(f: ModelFacts, lg: str) -> list[str]:
    if f.gated_ffn:
        glu = activation_name(f.activation, gated=True)
        return [t("notes.ffn.gated", lg, model=f.name, act=f.act_name, glu=glu)]
    return [t("notes.ffn.plain" if f.bias else "notes.ffn.plain_no_bias", lg, model=f.name, act=f.act_name)]


def step_notes(step: str, facts: ModelFacts, lang: str, *, tokens: list[str] | None = None,
               special: list[bool] | None = None) -> list[str]:
    """The model-specific captions of one tour step (markdown, in `lang`); [] for a step that says nothing about
    the model. Steps: ui.tour.STEPS. `tokens` / `special`: the sentence's tokens, for step 1's example of a piece."""
    f, lg = facts, lang
    if step == "tokens":
        return _tokens(f, lg, tokens, special)
    if step == "embedding":
        return [_scaling(f, lg)]
    if step == "positional":
        return _positional(f, lg)
    if step == "qkv":
        return _qkv(f, lg)
    if step == "scores" and (f.positional == "rotary" or f.attn_scalar):
        return ([t("notes.scores.rotary", lg)] if f.positional == "rotary" else []) + (
            [t("notes.scores.scalar", lg, model=f.name, s=f"{f.attn_scalar:g}", k=f.d_k)] if f.attn_scalar else [])
    if step == "mask" and f.kind == "decoder":
        return _mask(f, lg)
    if step == "add_norm":
        return _add_norm(f, lg)
    if step == "ffn":
        return _ffn(f, lg)
    return []


# ---- the formulas, as the model computes them ------------------------------------------------------------------------
# the tour's formula of a step where the model changes nothing of the paper's (words in them through the catalogue)
GENERAL = {
    "scores": r"S_{ij} = \frac{q_i \cdot k_j}{\sqrt{d_k}} = \frac{1}{\sqrt{d_k}} \sum_{r=1}^{d_k} q_{ir}\, k_{jr}",
    "mask": r"S' = \frac{Q K^{\top}}{\sqrt{d_k}} + M,\quad M_{ij} \in \{0, -\infty\}",
    "softmax": r"A_{ij} = \frac{\exp S'_{ij}}{\sum_{j'} \exp S'_{ij'}}",
    "attend": r"Z = A\,V",
    "decoder_self": r"\operatorname{softmax}\!\left(\frac{Q K^{\top}}{\sqrt{d_k}} + M_{\text{look-ahead}}\right) V",
    "cross": r"\operatorname{softmax}\!\left(\frac{Q_{dec} (M W^{K})^{\top}}{\sqrt{d_k}}\right) M W^{V}",
    # step 15: the next token from the last position's logits; the step's own key and value appended to the cache
    "generate": r"y_t = \operatorname{argmax} P(\cdot \mid y_{<t}),\quad K_{\le t} = [K_{<t};\, k_t],\;"
                r"V_{\le t} = [V_{<t};\, v_t]",
}


def tour_formula(step: str, facts: ModelFacts, lang: str = "en") -> str:
    """The formula a tour step shows (LaTeX): the model's own (step_formula), else the paper's general one. Steps
    12-14 (decoder_self, cross, output) take the facts of the model whose decoder they show."""
    if step == "tokens":
        return latex_sentence("notes.formula.tokens", lang, arrow=r"\;\longrightarrow\;",
                              seq=r"(t_0, t_1, \dots, t_{n-1})")
    return step_formula(step, facts, lang) or GENERAL[step]


PAPER_PE = (r"PE_{(pos, 2i)} = \sin\!\left(\frac{pos}{10000^{2i/d_{model}}}\right),\;"
            r"PE_{(pos, 2i+1)} = \cos\!\left(\frac{pos}{10000^{2i/d_{model}}}\right)")


def _op(name: str) -> str:
    """An activation's name as a LaTeX operator ("GELU (tanh)" -> \\operatorname{GELU_{tanh}})."""
    base, _, variant = name.partition(" (")
    base = base.replace("²", "^2")
    return rf"\operatorname{{{base}}}" + (rf"_{{\text{{{variant.rstrip(')')}}}}}" if variant else "")


def latex_sentence(key: str, lang: str, **maths: str) -> str:
    """A catalogue sentence inside a formula: its words as \\text{...} in `lang`, its placeholders the LaTeX given
    ("{qk} depends only on {mn}" -> q'_m \\cdot k'_n \\text{ depends only on } m - n; Korean puts them in its own
    order)."""
    mark = "\x00"
    msg = t(key, lang, **{k: f"{mark}{k}{mark}" for k in maths})
    out = []
    for i, piece in enumerate(msg.split(mark)):
        if i % 2:
            out.append(maths[piece])
        elif piece:
            out.append(r"\text{" + piece.replace("\\", "").replace("{", "").replace("}", "") + "}")
    return "".join(out)


def _bias(on: bool, name: str) -> str:
    """ "+ b^{name}" where the model has that bias, else nothing (SmolLM2 has none, GPT-2 and BERT have all)."""
    return rf" + b^{{{name}}}" if on else ""


def step_formula(step: str, facts: ModelFacts, lang: str = "en") -> str | None:
    """The step's formula as this model computes it (LaTeX), or None where the tour's general formula holds. Every
    "+ b" is there only where the model has that bias; words inside a formula are in `lang`."""
    f = facts
    if step == "embedding":
        return r"X = E[t]" + (r"\,\sqrt{d_{model}}" if f.scale_embeddings else "") + r" \in \mathbb{R}^{n \times d_{model}}"
    if step == "positional":
        types = r" + T[\text{type}]" if f.type_vocab_size else ""
        if f.positional == "sinusoidal":
            total = r"X + PE" + types
        elif f.positional == "learned":
            total = r"X + P[pos]" + types
        elif f.positional == "rotary":
            return (r"q'_m = R_{\Theta, m}\, q_m,\quad k'_n = R_{\Theta, n}\, k_n,\quad "
                    rf"\theta_i = {f.rope_theta:g}^{{-2i/d_k}},\quad "
                    + latex_sentence("notes.formula.relative", lang, qk=r"q'_m \cdot k'_n", mn=r"m - n"))
        else:
            total = "X" + types
        total = rf"\operatorname{{LayerNorm}}({total})" if f.embedding_layer_norm else total
        return (PAPER_PE + r",\; " if f.positional == "sinusoidal" else "") + r"X' = " + total
    if step == "qkv":
        b = (lambda n: _bias(f.qkv_bias, n))  # noqa: E731
        if f.positional == "rotary" and f.qk_norm:  # Qwen3, Gemma 3: each head's q and k normalised, then turned
            return (rf"Q = R_{{\Theta}}\,\operatorname{{RMSNorm}}(X W^{{Q}}{b('Q')}),\quad K = R_{{\Theta}}\,"
                    rf"\operatorname{{RMSNorm}}(X W^{{K}}{b('K')}),\quad V = X W^{{V}}{b('V')}")
        if f.positional == "rotary":  # q and k turned by their positions, v not
            return (rf"Q = R_{{\Theta}}\,(X W^{{Q}}{b('Q')}),\quad K = R_{{\Theta}}\,(X W^{{K}}{b('K')}),\quad "
                    rf"V = X W^{{V}}{b('V')}")
        return rf"Q = X W^{{Q}}{b('Q')},\quad K = X W^{{K}}{b('K')},\quad V = X W^{{V}}{b('V')}"
    if step == "concat":
        return (r"\operatorname{MultiHead}(Q, K, V) = \operatorname{Concat}(Z_1, \dots, Z_h)\,W^{O}"
                + _bias(f.bias, "O"))
    if step == "add_norm":
        norm = r"\operatorname{RMSNorm}" if f.norm == "rmsnorm" else r"\operatorname{LayerNorm}"
        if f.norm == "rmsnorm":
            gamma = r"(1 + \gamma)" if f.norm_offset else r"\gamma"
            inner = gamma + r" \odot \frac{s}{\sqrt{\frac{1}{d}\sum_j s_j^2 + \epsilon}}"
        else:
            inner = r"\gamma \odot \frac{s - \mu}{\sqrt{\sigma^2 + \epsilon}} + \beta"
        if f.norm_placement == "pre" and f.post_norms:  # Gemma: the sublayer's output normalised too
            return rf"x + {norm}'(\operatorname{{Sublayer}}({norm}(x))),\quad {norm}(s) = {inner}"
        if f.norm_placement == "pre":
            return rf"x + \operatorname{{Sublayer}}({norm}(x)),\quad {norm}(s) = {inner}"
        return rf"{norm}(x + \operatorname{{Sublayer}}(x)) = {inner}"
    if step == "ffn":
        return ffn_formula(f.activation, gated=f.gated_ffn, b1=f.bias, b2=f.bias)
    if step == "output":
        b = " + b" if f.output_bias else ""
        if f.kind == "decoder":  # a language model: the next token after the text, no source sentence
            return (r"P(t_n \mid t_0, \dots, t_{n-1}) = \operatorname{softmax}(h_{n-1} W_{vocab}" + b + ")")
        return r"P(y_t \mid y_{<t}, x) = \operatorname{softmax}(h_t W_{vocab}" + b + ")"
    return None


def ffn_formula(activation: str, *, gated: bool, b1: bool, b2: bool, generic: bool = False) -> str:
    """The Feed Forward as a model computes it: act(x W_1 + b_1) W_2 + b_2, or gated (SwiGLU)
    (act(x W_gate) ⊙ (x W_1 + b_1)) W_2 + b_2, each "+ b" only where the model has it. `generic`: "act" for the
    activation's name (the Step by step page's formula)."""
    act = r"\operatorname{act}" if generic else _op(activation_name(activation))
    up = r"x W_1 + b_1" if b1 else r"x W_1"
    down = r" + b_2" if b2 else ""
    if gated:
        return rf"\operatorname{{FFN}}(x) = \left({act}(x W_{{gate}}) \odot " + (f"({up})" if b1 else up) + \
            rf"\right) W_2{down}"
    return rf"\operatorname{{FFN}}(x) = {act}({up})\, W_2{down}"
