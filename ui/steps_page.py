"""Step by step: a whole layer on the sentence with the model's own numbers (attention stages, Add & Norm, FFN, vocab)."""

from __future__ import annotations

import streamlit as st

from i18n import activation_name, t
from viz import steps as vs_steps
from viz import tour as vt
from viz.model_notes import ffn_formula
from viz.steps import SECTION_OF, stage_figure
from viz.theme import column_width

from . import runs
from .layer_view import draw_figures, output_check
from .view import View
from .widgets import chart, layer_head, localised_tabs, table


def block_label(block: str, lang: str) -> str:
    """The attention block's name ("Encoder self-attention", ...) in the interface language."""
    return t(f"block.{block}", lang)


def draw_stage(view: View, stage, lang: str = "en", width: int | None = None) -> None:
    """One stage of the step-by-step walk-through: title and shape, formula, caption, heatmap with its export."""
    st.markdown(f"**{stage.title}** · `{stage.shape}`")
    st.latex(stage.latex)
    st.caption(stage.caption)
    if stage.trivial:  # no blocked cell: the mask is all ones and the masked scores equal the scaled ones
        st.info(t("steps.mask_none" if stage.key == "mask" else "steps.masked_none", lang))
        return
    title = f"{view.model_name} · {block_label(view.block, lang)} · {layer_head(view.layer, view.head, lang)}"
    chart(stage_figure(stage, lecture=view.lecture, lang=lang, width=width), f"step_{stage.key}", context=title,
          subtitle=view.text, filename=f"{view.model_name}-L{view.layer}-H{view.head}-{stage.key}")


def draw_section(view: View, stages: list, section: int, lang: str) -> None:
    """The stages of one attention section (SECTION_OF), those of one group side by side."""
    groups: dict[str, list] = {}
    for stage in (s for s in stages if SECTION_OF[s.key] == section):
        groups.setdefault(stage.group or stage.key, []).append(stage)
    for members in groups.values():
        for col, stage in zip(st.columns(len(members)) if len(members) > 1 else [st.container()], members):
            with col:
                draw_stage(view, stage, lang, column_width(len(members)))
        st.divider()


def step_tabs(view: View, lang: str) -> list[tuple[str, object]]:
    """(name, tab) of the Step by step page's lazy tabs for the sidebar's block (viz.steps.step_tabs)."""
    pre_ln = view.model.config.norm_placement == "pre"  # x + Sublayer(Norm(x)) (GPT-2)
    last = view.block != "encoder" and not pre_ln and view.layer == view.model.config.n_decoder_layers - 1
    names = vs_steps.step_tabs(view.block, last, pre_ln)
    if pre_ln:
        st.caption(t("steps.decoder_only", lang, norm="RMSNorm" if view.model.config.norm == "rmsnorm" else "LN"))
    if view.model.config.post_norms:  # Gemma: four norms a layer
        st.caption(t("steps.post_norms", lang))
    keys = [f"trpages.steps.tab.{n}_ssru" if n == "add_norm_dec" and ssru(view) else f"steps.tab.{n}" for n in names]
    norm = "RMSNorm" if view.model.config.norm == "rmsnorm" else "LN"  # the pre-LN tab names the model's own norm
    return list(zip(names, localised_tabs(keys, "steps_tab", lang, url=True, norm=norm)))


def ssru(view: View) -> bool:
    """Whether the model's decoder has an SSRU where masked self-attention would be (a Bergamot translator)."""
    return view.model.config.is_encoder_decoder and view.model.config.decoder_mixer == "ssru"


def layer_section(view: View, name: str, lang: str) -> None:
    """One tab of the rest of the layer after multi-head attention (Add & Norm, Feed Forward, the second / third
    Add & Norm and the layer output; the decoder's cross-attention Add & Norm; the final linear layer and Softmax),
    with the model's own numbers (analysis.stages.sublayer_steps) and the figures the guided tour draws."""
    if name == vs_steps.VOCAB_TAB:
        return vocab_section(view, lang)
    dec = view.block != "encoder"
    block = "decoder_self" if dec else "encoder"
    sub = runs.sublayer_steps(view.model_name, view.device, view.text, block, view.layer)
    tokens = view.trace.axis_tokens(block)[0]
    n, d = sub["x"].shape
    lg, lecture, prefix = lang, view.lecture, f"steps_{name}"
    mixer = name == "add_norm_dec" and ssru(view)  # the SSRU's output, not a self-attention's, is added
    rms = view.model.config.norm == "rmsnorm"
    norm = "RMSNorm" if rms else "LN"  # the pre-LN stack's two norms: LN_1 / LN_2, or RMSNorm_1 / RMSNorm_2
    st.caption(t("trpages.steps.add_norm_dec_ssru.note" if mixer else f"steps.{name}.note", lg, layer=view.layer,
                 norm=norm))
    if name in ("add_norm", "add_norm_dec"):
        st.latex(FORMULA_ADD_NORM.replace("Sublayer", "SSRU" if mixer else "MultiHead"))
        figs = vt.add_norm_figures(sub, "norm1", tokens, sum_title=t("tour.add_norm.sum_fig", lg, n=n, d=d),
                                   lang=lg, lecture=lecture)
    elif name == "add_norm_pre":  # pre-LN: the residual sum after attention, then LN_2 (the FFN's input)
        st.latex(pre_ln_formula(view.model.config))
        figs = post_norm_figures(sub, "post_norm1", tokens, t("steps.post_norm1_fig", lg, n=n, d=d), lg, lecture)
        figs.update(vt.add_norm_figures(sub, "norm2", tokens, sum_title=t("steps.pre_sum_fig", lg, n=n, d=d, norm=norm),
                                        lang=lg, lecture=lecture))
    elif name == "output_pre":  # pre-LN: the layer output is the second residual sum, with no norm after it
        post = "post_norm2" in sub  # Gemma: the FFN's output normalised before the residual adds it
        st.latex(r"x_{\ell+1} = s + " + (rf"\operatorname{{{norm}'_2}}(\operatorname{{FFN}}(\operatorname{{{norm}_2}}(s)))"
                                         if post else rf"\operatorname{{FFN}}(\operatorname{{{norm}_2}}(s))"))
        out = sub["output"]
        figs = post_norm_figures(sub, "post_norm2", tokens, t("steps.post_norm2_fig", lg, n=n, d=d), lg, lecture)
        figs["out"] = (vt.token_matrix(out, tokens, vt.out_title(view.layer, lg, norm), lang=lg, lecture=lecture),
                       out)
    elif name == "cross_norm":
        head = min(view.head, view.n_heads - 1)
        steps = runs.attention_steps(view.model_name, view.device, view.text, "cross", view.layer, head)
        if view.block == "decoder_self":  # the cross-attention itself: K and V from M, queries from the decoder
            cross_glance(view, steps, head, lg)
        cross = steps["output"]
        figs = {"cross": (vt.token_matrix(cross, tokens, t("steps.cross_fig", lg, n=n, d=d), lang=lg,
                                          lecture=lecture), cross)}
        figs.update(vt.add_norm_figures(sub, "norm2", tokens, sum_title=t("steps.cross_sum_fig", lg, n=n, d=d),
                                        lang=lg, lecture=lecture))
    elif name in ("ffn", "ffn_dec"):
        act = activation_name(view.model.activation)  # ReLU, GELU, SiLU/Swish
        gated = "W_gate" in sub  # gated (SwiGLU); "+ b" only where the model has the bias (sublayer_steps)
        st.latex(ffn_formula(view.model.activation, gated=gated, b1=bool(sub["bias_1"]), b2=bool(sub["bias_2"]),
                             generic=True))
        st.markdown(t("steps.ffn.glu_shapes" if gated else "tour.ffn.shapes", lg, d=d, f=sub["W_1"].shape[1], act=act))
        figs = vt.ffn_figures(sub, tokens, layer=view.layer, act=act, lang=lg, weights=True, lecture=lecture)
        figs.pop("out")
    else:
        last = "norm3" if dec else "norm2"
        st.latex(FORMULA_ADD_NORM.replace("Sublayer", "FFN"))
        figs = vt.add_norm_figures(sub, last, tokens, sum_title=t("steps.ffn_sum_fig", lg, n=n, d=d), lang=lg,
                                   lecture=lecture)
    draw_figures(view, figs, prefix, tokens, view.layer)
    if name in ("output", "output_dec", "output_pre"):
        output_check(sub, view.trace.decoder_hidden_states if dec else view.trace.encoder_hidden_states, view.layer, lg)


def cross_glance(view: View, steps: dict, head: int, lang: str) -> None:
    """The cross-attention of this decoder layer in two figures (the encoder output M, which gives the keys and
    values, and the weights of the chosen head); all its stages are on the sidebar's cross-attention block."""
    rows, cols = view.trace.axis_tokens("cross")
    stages = vs_steps.build_stages(steps, rows, cols, head=head, n_heads=view.n_heads, block="cross", lang=lang)
    by_key = {s.key: s for s in stages}
    for col, key in zip(st.columns(2), ("memory", "weights")):
        stage = by_key[key]
        with col:
            st.markdown(f"**{stage.title}** · `{stage.shape}`")
            chart(stage_figure(stage, lecture=view.lecture, lang=lang, width=column_width(2)), f"steps_cross_{key}",
                  subtitle=view.text, filename=f"{view.model_name}-L{view.layer}-H{head}-cross-{key}",
                  context=view.model_name)  # the stage as stage_figure describes it (neither stage is masked)


def post_norm_figures(sub: dict, norm: str, tokens: list[str], title: str, lang: str, lecture: bool) -> dict:
    """A post-norm's figures (Gemma: the sublayer's output, its mean squares, 1 + γ, what the residual adds), keyed
    apart from the next norm's; {} for a model without post-norms."""
    if norm not in sub:
        return {}
    figs = vt.add_norm_figures(sub, norm, tokens, sum_title=title, lang=lang, lecture=lecture)
    return {f"{norm}_{k}": v for k, v in figs.items()}


def pre_ln_formula(config) -> str:
    """The first residual sum of a pre-LN layer and the norm before its FFN, as this model computes them: LayerNorm
    or RMSNorm, Gemma's post-norm on the attention's output and its (1 + γ) scale."""
    if config.norm != "rmsnorm":
        return FORMULA_PRE_LN
    gamma = r"(1 + \gamma)" if config.norm_offset else r"\gamma"
    sub = r"\operatorname{MultiHead}(\operatorname{RMSNorm_1}(x))"
    added = rf"\operatorname{{RMSNorm'_1}}({sub})" if config.post_norms else sub
    return (rf"s = x + {added}, \quad \operatorname{{RMSNorm_2}}(s) = {gamma} \odot "
            r"\frac{s}{\sqrt{\operatorname{mean}(s^2) + \epsilon}}")


FORMULA_PRE_LN = (r"s = x + \operatorname{MultiHead}(\operatorname{LN_1}(x)), \quad \operatorname{LN_2}(s) = "
                  r"\gamma \odot \frac{s - \mu}{\sqrt{\sigma^2 + \epsilon}} + \beta")
FORMULA_ADD_NORM = (r"\operatorname{LayerNorm}(x + \operatorname{Sublayer}(x)) = "
                    r"\gamma \odot \frac{s - \mu}{\sqrt{\sigma^2 + \epsilon}} + \beta")


def vocab_section(view: View, lang: str) -> None:
    """The last decoder layer's output through the final linear layer and Softmax over the vocabulary: the top
    tokens at every decoder position, the chosen query token's bars, and the check against the model's logits."""
    out = runs.vocab_output(view.model_name, view.device, view.text)
    rows = view.trace.axis_tokens("decoder_self")[0]
    d, v = out["W"]
    st.caption(t("steps.vocab.note", lang))
    b = " + b" if view.model.config.output_bias else ""  # the model's own: BART has final_logits_bias, Marian none
    st.latex(r"P(y_t \mid y_{<t}, x) = \operatorname{softmax}(h_t W_{vocab}" + b + ")")
    st.markdown(t("steps.vocab.shapes", lang, d=d, v=v))
    i = min(view.token, len(rows) - 1)
    probs, toks = out["top_probs"][i], out["top_tokens"][i]
    st.plotly_chart(vt.ranked_bars(probs, toks, answer=0, title=t("steps.vocab.fig", lang, i=i, token=rows[i]),
                                   ylabel=t("tour.axis.probability", lang), lecture=view.lecture), key="steps_vocab")
    table({t("steps.col.position", lang): list(range(len(rows))), t("steps.col.input", lang): list(rows),
                  t("steps.col.top", lang): [" · ".join(f"{tk} {p:.3f}" for tk, p in zip(tt, pp))
                                             for tt, pp in zip(out["top_tokens"], out["top_probs"])]},
          view.lecture)
    err = float(abs(out["sums"] - 1).max())
    (st.success if out["diff"] < 1e-4 else st.warning)(t("steps.vocab.check", lang, diff=out["diff"], err=err))
