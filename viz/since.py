"""What changed since 2017: the design choices of the sidebar's model beside those of the paper's base model
(Vaswani et al. 2017, "Attention Is All You Need": encoder-decoder, d_model 512, 8 heads, post-LN LayerNorm,
sinusoidal positions added once, ReLU FFN with d_ff 2048, shared embeddings, subword vocabulary), one row per choice,
with a short reason where the model differs. Pure (no Streamlit, no model runs): everything comes from
viz.model_notes.ModelFacts, i.e. the model's config and tokenizer, never from its name.

    rows = since_rows(ModelFacts.from_model(loaded), "ko")   # [SinceRow(key="positions", same=False, ...), ...]
    since_table(rows, facts, "en")                          # {column name: [cells]} for st.table
    since_formula(facts)                                    # LaTeX: the paper's norm / positions beside this model's
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from i18n import t
from i18n.names import activation_name

from .model_notes import ModelFacts

ROWS = ("stack", "positions", "norm", "heads", "ffn", "bias", "tying", "vocab", "context")
# rows of the options since 2017 that only some models take, shown where the model takes them: the sliding window
# ("window", Mistral, Gemma 3) and RMSNorm on q and k ("qk_norm", Qwen3, Gemma 3)
OPTION_ROWS = ("window", "qk_norm")
PAPER_D_MODEL, PAPER_HEADS, PAPER_D_FF = 512, 8, 2048


@dataclass(frozen=True)
class SinceRow:
    key: str  # one of ROWS
    choice: str  # the design choice's name ("Positions")
    paper: str  # what the paper did
    model: str  # what this model does (from its config and tokenizer)
    same: bool  # this model made the paper's choice
    why: str  # one short line on why it changed; "" where it did not


def _ratio(a: int, b: int) -> str:
    """a / b as a short number: 4, 2.67."""
    return f"{a / b:.2f}".rstrip("0").rstrip(".") if b else "?"


def _stack(f: ModelFacts, lg: str) -> tuple[str, bool, str]:
    kind = {"encoder-decoder": "encdec", "encoder": "encoder", "decoder": "decoder"}[f.kind]
    if kind == "encdec" and f.decoder_mixer == "ssru":  # Bergamot: a deep encoder, a shallow decoder with an SSRU
        kind = "ssru"
    text = t(f"since.model.stack.{kind}", lg, e=f.n_encoder_layers, d=f.n_decoder_layers)
    return text, kind == "encdec", "" if kind == "encdec" else t(f"since.why.stack.{kind}", lg)


def _positions(f: ModelFacts, lg: str) -> tuple[str, bool, str]:
    kind = f.positional if f.positional in ("sinusoidal", "learned", "rotary") else "none"
    text = t(f"since.model.positions.{kind}", lg, n=f.max_positions, theta=f.rope_theta)
    if f.type_vocab_size:
        text += t("since.model.positions.types", lg, n=f.type_vocab_size)
    same = kind == "sinusoidal"
    return text, same, "" if same else t(f"since.why.positions.{kind}", lg)


def _norm(f: ModelFacts, lg: str) -> tuple[str, bool, str]:
    norm = t(f"notes.norm.{f.norm}", lg)
    text = t(f"since.model.norm.{f.norm_placement}", lg, norm=norm)
    pre, rms = f.norm_placement == "pre", f.norm == "rmsnorm"
    if f.post_norms:  # Gemma: one more norm on each sublayer's output
        text += t("since.model.norm.post_norms", lg, norm=norm)
    if f.norm_offset:
        text += t("since.model.norm.offset", lg)
    if not (pre or rms):
        return text, True, ""
    return text, False, t("since.why.norm." + ("pre_rms" if pre and rms else "pre" if pre else "rms"), lg)


def _heads(f: ModelFacts, lg: str) -> tuple[str, bool, str]:
    dk = f.d_k
    if f.kv_heads == f.n_heads:
        return t("since.model.heads.mha", lg, h=f.n_heads, dk=dk), True, ""
    frac = Fraction(f.kv_heads, f.n_heads)
    return (t("since.model.heads.gqa", lg, h=f.n_heads, kv=f.kv_heads, dk=dk), False,
            t("since.why.heads.gqa", lg, h=f.n_heads, kv=f.kv_heads, frac=frac))


def _ffn(f: ModelFacts, lg: str) -> tuple[str, bool, str]:
    r = _ratio(f.d_ff, f.d_model)
    if f.gated_ffn:
        glu = activation_name(f.activation, gated=True)
        return (t("since.model.ffn.gated", lg, glu=glu, act=f.act_name, f=f.d_ff, r=r), False,
                t("since.why.ffn.gated", lg, glu=glu))
    text = t("since.model.ffn.plain", lg, act=f.act_name, f=f.d_ff, r=r)
    same = f.activation.strip().lower() == "relu"
    return text, same, "" if same else t("since.why.ffn.act", lg, act=f.act_name)


def _bias(f: ModelFacts, lg: str) -> tuple[str, bool, str]:
    if f.bias:
        return t("since.model.bias.all", lg), True, ""
    kind = "qkv" if f.qkv_bias else "none"
    return t(f"since.model.bias.{kind}", lg), False, t(f"since.why.bias.{kind}", lg)


def _tying(f: ModelFacts, lg: str) -> tuple[str, bool, str]:
    if f.tie_embeddings:
        shared = f.kind == "encoder-decoder" and f.share_embeddings
        text = t("since.model.tying.tied_shared" if shared else "since.model.tying.tied", lg)
        same = shared or f.kind != "encoder-decoder"
        return text, same, "" if same else t("since.why.tying.unshared", lg)
    kind = "encoder" if f.kind == "encoder" else "untied"
    return t(f"since.model.tying.{kind}", lg), False, t(f"since.why.tying.{kind}", lg)


def _vocab(f: ModelFacts, lg: str) -> tuple[str, bool, str]:
    scheme = f.scheme if f.scheme in ("wordpiece", "sentencepiece", "bytelevel") else "plain"
    text = t(f"since.model.vocab.{scheme}", lg, v=f.vocab_size)
    same = scheme == "wordpiece"  # the paper's subword pieces (its English-French vocabulary is word pieces)
    return text, same, "" if same else t(f"since.why.vocab.{scheme}", lg)


def _context(f: ModelFacts, lg: str) -> tuple[str, bool, str]:
    kind = f.positional if f.positional in ("sinusoidal", "learned", "rotary") else "none"
    text = t(f"since.model.context.{kind}", lg, n=f.max_positions)
    same = kind in ("sinusoidal", "none")  # no table of positions: no built-in limit, as in the paper
    return text, same, "" if same else t(f"since.why.context.{kind}", lg, n=f.max_positions)


def _window(f: ModelFacts, lg: str) -> tuple[str, bool, str]:
    text = t("since.model.window", lg, w=f.sliding_window, n=f.n_local, L=f.n_decoder_layers,
             g=f.n_decoder_layers - f.n_local)
    if f.rope_theta_local is not None and f.rope_theta_local != f.rope_theta:
        text += t("since.model.window.theta", lg, local=f.rope_theta_local, theta=f.rope_theta)
    return text, False, t("since.why.window", lg)


def _qk_norm(f: ModelFacts, lg: str) -> tuple[str, bool, str]:
    text = t("since.model.qk_norm", lg, k=f.d_k)
    if f.attn_scalar:
        text += t("since.model.qk_norm.scalar", lg, s=f"{f.attn_scalar:g}", k=f.d_k)
    return text, False, t("since.why.qk_norm", lg)


_BUILD = {"stack": _stack, "positions": _positions, "norm": _norm, "heads": _heads, "ffn": _ffn, "bias": _bias,
          "tying": _tying, "vocab": _vocab, "context": _context, "window": _window, "qk_norm": _qk_norm}


def row_keys(facts: ModelFacts) -> tuple[str, ...]:
    """The rows of this model's table: every ROWS, then the OPTION_ROWS the model takes (from its config)."""
    taken = {"window": bool(facts.sliding_window), "qk_norm": facts.qk_norm}
    return (*ROWS, *(k for k in OPTION_ROWS if taken[k]))


def since_rows(facts: ModelFacts, lang: str) -> list[SinceRow]:
    """One row per design choice (row_keys): the paper's, this model's, whether they are the same, and why it
    changed."""
    out = []
    for key in row_keys(facts):
        model, same, why = _BUILD[key](facts, lang)
        out.append(SinceRow(key, t(f"since.row.{key}", lang), t(f"since.paper.{key}", lang), model, same, why))
    return out


def since_table(rows: list[SinceRow], facts: ModelFacts, lang: str) -> dict[str, list[str]]:
    """The rows as columns for a table: choice, the paper (2017), this model (named), why it changed ("=" the
    paper's where it did not)."""
    same = t("since.same_cell", lang)
    return {t("since.col.choice", lang): [r.choice for r in rows],
            t("since.col.paper", lang): [r.paper for r in rows],
            facts.name: [r.model for r in rows],
            t("since.col.why", lang): [same if r.same else r.why for r in rows]}


def since_summary(rows: list[SinceRow], facts: ModelFacts, lang: str) -> str:
    """One line above the table: every choice the paper's, or which of them changed."""
    diff = [r.choice for r in rows if not r.same]
    if not diff:
        return t("since.summary.same", lang, model=facts.name, n=len(rows))
    return t("since.summary.diff", lang, model=facts.name, k=len(diff), n=len(rows), names=", ".join(diff))


_LN = r"\operatorname{LN}(x + \operatorname{Sub}(x)),\; \operatorname{LN}(s) = \gamma \odot \frac{s - \mu}{\sigma} + \beta"
_PE = r"x_{pos} = e_{pos} + PE_{pos}"


def since_formula(facts: ModelFacts) -> str:
    """The paper's formula beside this model's for the first choices that differ among the norm and the positions
    (2017 → this model); the paper's two where the model makes the same choices. One formula, its lines gathered."""
    parts = since_formulas(facts)
    return parts[0] if len(parts) == 1 else r"\begin{gathered}" + r" \\ ".join(parts) + r"\end{gathered}"


def since_formulas(facts: ModelFacts) -> list[str]:
    """since_formula's lines, each its own formula (a page may draw them one by one, so that a narrow screen can
    break each line at its arrows and equals signs)."""
    f, parts = facts, []
    if f.norm != "layernorm" or f.norm_placement != "post":
        norm = r"\operatorname{RMSNorm}" if f.norm == "rmsnorm" else r"\operatorname{LN}"
        inner = (r"\gamma \odot \frac{s}{\operatorname{RMS}(s)}" if f.norm == "rmsnorm"
                 else r"\gamma \odot \frac{s - \mu}{\sigma} + \beta")
        sub = (rf"x + \operatorname{{Sub}}({norm}(x))" if f.norm_placement == "pre"
               else rf"{norm}(x + \operatorname{{Sub}}(x))")
        parts.append(rf"\underbrace{{{_LN}}}_{{2017}} \;\longrightarrow\; {sub},\; {norm}(s) = {inner}")
    if f.positional != "sinusoidal":
        if f.positional == "rotary":
            now = rf"q'_m = R_{{\Theta,m}}\, q_m,\; k'_n = R_{{\Theta,n}}\, k_n,\; \theta_i = {f.rope_theta:g}^{{-2i/d_k}}"
        elif f.positional == "learned":
            now = r"x_{pos} = e_{pos} + P[pos]"
        else:
            now = r"x_{pos} = e_{pos}"
        parts.append(rf"\underbrace{{{_PE}}}_{{2017}} \;\longrightarrow\; {now}")
    return parts or [rf"\underbrace{{{_LN},\quad {_PE}}}_{{2017}}"]
