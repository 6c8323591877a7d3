"""Step by step: a whole layer on the sentence with the model's own numbers (attention stages, Add & Norm, FFN, vocab)."""

from __future__ import annotations

import streamlit as st

from i18n import activation_name, t
from viz import steps as vs_steps
from viz import tour as vt
from viz.steps import SECTION_OF, stage_figure
from viz.theme import column_width

from . import runs
from .view import View
from .widgets import Export, chart, layer_head, localised_tabs, table


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
    chart(stage_figure(stage, lecture=view.lecture, lang=lang, width=width), f"step_{stage.key}", Export(
        stage.matrix, stage.rows, stage.cols, f"{title} · {stage.title} ({stage.shape})", view.text,
        f"{view.model_name}-L{view.layer}-H{view.head}-{stage.key}", heatmap=dict(
            masked=stage.masked, cmap="viridis" if stage.colorscale == "Viridis" else "RdBu_r",
            xlabel=stage.xlabel, ylabel=stage.ylabel)))


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
    keys = [f"trpages.steps.tab.{n}_ssru" if n == "add_norm_dec" and ssru(view) else f"steps.tab.{n}" for n in names]
    return list(zip(names, localised_tabs(keys, "steps_tab", lang, url=True)))


def ssru(view: View) -> bool:
    """Whether the model's decoder has an SSRU where masked self-attention would be (a Bergamot translator)."""
    return view.model.config.is_encoder_decoder and view.model.config.decoder_mixer == "ssru"


def draw_figures(view: View, figs: dict, prefix: str, tokens: list[str], layer: int) -> None:
    """Figures of viz.tour's Add & Norm / Feed Forward builders; the matrices with their exports."""
    for name, (fig, m) in figs.items():
        if m is None:
            st.plotly_chart(fig, key=f"{prefix}_{name}")
            continue
        rows = tokens if name not in ("W_1", "W_2", "W_gate") else [str(i) for i in range(m.shape[0])]
        chart(fig, f"{prefix}_{name}", Export(m, rows, [str(j) for j in range(m.shape[1])], fig.layout.title.text,
                                              view.text, f"{view.model_name}-L{layer}-{prefix}-{name}"))


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
    st.caption(t("trpages.steps.add_norm_dec_ssru.note" if mixer else f"steps.{name}.note", lg, layer=view.layer))
    if name in ("add_norm", "add_norm_dec"):
        st.latex(FORMULA_ADD_NORM.replace("Sublayer", "SSRU" if mixer else "MultiHead"))
        figs = vt.add_norm_figures(sub, "norm1", tokens, sum_title=t("tour.add_norm.sum_fig", lg, n=n, d=d),
                                   lang=lg, lecture=lecture)
    elif name == "add_norm_pre":  # pre-LN: the residual sum after attention, then LN_2 (the FFN's input)
        st.latex(FORMULA_PRE_RMS if view.model.config.norm == "rmsnorm" else FORMULA_PRE_LN)
        figs = vt.add_norm_figures(sub, "norm2", tokens, sum_title=t("steps.pre_sum_fig", lg, n=n, d=d), lang=lg,
                                   lecture=lecture)
    elif name == "output_pre":  # pre-LN: the layer output is the second residual sum, with no norm after it
        st.latex(r"x_{\ell+1} = s + \operatorname{FFN}(\operatorname{LN_2}(s))")
        out = sub["output"]
        figs = {"out": (vt.token_matrix(out, tokens, t("tour.ffn.out_fig", lg, layer=view.layer), lang=lg,
                                        lecture=lecture), out)}
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
        if "W_gate" in sub:  # gated (SwiGLU)
            st.latex(FORMULA_GLU)
            st.markdown(t("steps.ffn.glu_shapes", lg, d=d, f=sub["W_1"].shape[1], act=act))
        else:
            st.latex(r"\operatorname{FFN}(x) = \operatorname{act}(x W_1 + b_1)\, W_2 + b_2")
            st.markdown(t("tour.ffn.shapes", lg, d=d, f=sub["W_1"].shape[1], act=act))
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


def output_check(sub: dict, hidden, layer: int, lang: str) -> None:
    """The layer output recomputed from its sublayers against the model's own hidden state (≤ 1e-5: a success)."""
    diff = vt.layer_output_check(sub, hidden, layer)
    if diff is not None:
        (st.success if diff < 1e-5 else st.warning)(t("tour.ffn.check", lang, diff=diff, layer=layer))


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
            chart(stage_figure(stage, lecture=view.lecture, lang=lang, width=column_width(2)), f"steps_cross_{key}", Export(
                stage.matrix, stage.rows, stage.cols, f"{view.model_name} · {stage.title} ({stage.shape})", view.text,
                f"{view.model_name}-L{view.layer}-H{head}-cross-{key}",
                heatmap=dict(cmap="viridis" if stage.colorscale == "Viridis" else "RdBu_r", xlabel=stage.xlabel,
                             ylabel=stage.ylabel)))


FORMULA_PRE_LN = (r"s = x + \operatorname{MultiHead}(\operatorname{LN_1}(x)), \quad \operatorname{LN_2}(s) = "
                  r"\gamma \odot \frac{s - \mu}{\sqrt{\sigma^2 + \epsilon}} + \beta")
FORMULA_PRE_RMS = (r"s = x + \operatorname{MultiHead}(\operatorname{RMSNorm_1}(x)), \quad \operatorname{RMSNorm_2}(s) = "
                   r"\gamma \odot \frac{s}{\sqrt{\operatorname{mean}(s^2) + \epsilon}}")
FORMULA_GLU = (r"\operatorname{FFN}(x) = \big(\operatorname{act}(x W_{gate}) \odot (x W_1 + b_1)\big)\, W_2 + b_2")
FORMULA_ADD_NORM = (r"\operatorname{LayerNorm}(x + \operatorname{Sublayer}(x)) = "
                    r"\gamma \odot \frac{s - \mu}{\sqrt{\sigma^2 + \epsilon}} + \beta")


def vocab_section(view: View, lang: str) -> None:
    """The last decoder layer's output through the final linear layer and Softmax over the vocabulary: the top
    tokens at every decoder position, the chosen query token's bars, and the check against the model's logits."""
    out = runs.vocab_output(view.model_name, view.device, view.text)
    rows = view.trace.axis_tokens("decoder_self")[0]
    d, v = out["W"]
    st.caption(t("steps.vocab.note", lang))
    st.latex(r"P(y_t \mid y_{<t}, x) = \operatorname{softmax}(h_t W_{vocab} + b)")
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
