"""Streamlit pieces of the lab pages (masks, positions, step by step): a row of stage figures with their exports,
the example masks, a preset callback, the Step by step page's tabs through the whole layer (Add & Norm, Feed
Forward, the layer output and its check, a decoder layer's cross-attention Add & Norm, the final linear layer and
Softmax), and lazy tabs whose labels follow the interface language (i18n "pe.*", "masks.*", "steps.*")."""

from __future__ import annotations

import streamlit as st

from analysis.masks import decoder_stages, example_masks, padded_stages, stage_checks
from analysis.positional import MAX_D_MODEL, MAX_POSITIONS
from i18n import LANGS, error_message, t
from model.errors import HeadlightError
from viz import masks as vm
from viz import positional as vp
from viz import steps as vs_steps
from viz import tour as vt
from viz.heatmap import pooling_note
from viz.steps import SECTION_OF, stage_figure

from . import cache
from .state import View, safe_callback
from .widgets import Export, chart, layer_head

PE_TAB_KEYS = ["pe.tab.table", "pe.tab.sentence", "pe.tab.learned"]  # catalogue keys of the lab's lazy tabs
PE_TABS = [t(k) for k in PE_TAB_KEYS]  # English labels (tests open tabs by these)
MASK_EXAMPLES = ["padding", "causal", "combined"]  # catalogue "masks.example.<name>"


def lazy_tabs(keys: list[str], key: str, lang: str, **fmt):
    """Lazy st.tabs (only the open one is built; the open tab's LABEL is kept in session state under `key`) with
    the labels `t(k, lang, **fmt)`. After a change of language the open tab stays open (its label in the other
    language maps to the same tab); any other stored value falls back to the first tab, without an error."""
    labels = [t(k, lang, **fmt) for k in keys]
    ss = st.session_state
    value = ss.get(key)
    if value is not None and value not in labels:
        for other in LANGS:
            others = [t(k, other, **fmt) for k in keys]
            if value in others:
                ss[key] = labels[others.index(value)]
                break
        else:
            ss[key] = labels[0]
    return st.tabs(labels, key=key, on_change="rerun")


@safe_callback
def set_state(values: dict) -> None:
    """A preset button: set these widget values before the next run draws them."""
    st.session_state.update(values)


def draw_stages(view: View, prefix: str, stages: dict, tokens: list[str], title: str, text: str) -> None:
    """Raw scores, masked scores and softmax weights of one head side by side, each with its export, then the
    check that rows sum to 1 and blocked cells get 0."""
    lg = view.lang
    figs = vm.stage_figures(stages, tokens, tokens, title=title, lecture=view.lecture, lang=lg)
    for col, (name, fig) in zip(st.columns(3), figs.items()):
        mat = stages["weights"] if name == "weights" else stages["scaled" if name == "masked" else name]
        with col:
            chart(fig, f"{prefix}_{name}", Export(mat, tokens, tokens, f"{name} · {title}", text, f"{prefix}-{name}",
                                                  heatmap=dict(masked=~stages["mask"] if name == "masked" else None)))
    c = stage_checks(stages)
    st.success(t("masks.check", lg, err=c["max_row_sum_error"], n=c["n_blocked"], w=c["max_blocked_weight"]))


def draw_mask_examples(view: View, words: list[str], sentence: str) -> None:
    """Padding, look-ahead and combined masks of a word sequence ("I am sam <pad>"), each with its export."""
    masks = example_masks(words)
    for col, name in zip(st.columns(3), MASK_EXAMPLES):
        title = t(f"masks.example.{name}", view.lang)
        with col:
            chart(vm.mask_heatmap(masks[name], words, words, title=title, lecture=view.lecture, lang=view.lang),
                  f"ex_{name}",
                  Export(masks[name].astype(int), words, words, title, sentence, f"mask-{name}",
                         heatmap=dict(vmin=0, vmax=1)))


def pe_export(matrix, title: str, xlabel: str, lang: str = "en", filename: str | None = None, **heatmap) -> Export:
    """Export of a position table or a position-by-position matrix (positions down, `xlabel` across)."""
    rows, cols = list(range(matrix.shape[0])), list(range(matrix.shape[1]))
    return Export(matrix, rows, cols, title, filename=filename or title,
                  heatmap=dict(xlabel=xlabel, ylabel=t("pe.axis.position", lang), **heatmap))


EMBEDDING_PARTS = {"learned": ("token", "position", "token_type", "sum"), "sinusoidal": ("token", "position", "sum")}


def embedding_labels(kind: str, lang: str) -> dict[str, str]:
    """Subplot titles of X, PE (, token type) and their sum: catalogue "pe.part.<kind>.<part>"."""
    return {k: t(f"pe.part.{kind}.{k}", lang) for k in EMBEDDING_PARTS[kind]}


def sentence_parts(view: View) -> None:
    """X, PE and X + PE of the sidebar's sentence in MiniLM (learned positions) and in the labs' encoder-decoder
    (sinusoidal), one tab each."""
    encdec, note = cache.lab_encoder_decoder(view.device)
    lg = view.lang
    tabs = lazy_tabs(["pe.parts.learned", "pe.parts.sinusoidal"], "pe_parts_tab", lg, model=encdec.name)
    for tab, name, kind in zip(tabs, ["minilm-l6", encdec.name], ["learned", "sinusoidal"]):
        if not tab.open:
            continue
        with tab:
            try:
                tokens, parts = cache.embedding_parts(name, view.device, view.text)
            except HeadlightError as exc:
                st.info(error_message(exc, lg))
                continue
            labels = embedding_labels(kind, lg)
            fig = vp.embedding_triptych(parts, tokens, labels=labels, lecture=view.lecture, lang=lg,
                                        title=t("pe.fig.parts", lg, model=name, n=len(tokens), d=parts["sum"].shape[1]))
            chart(fig, f"pe_parts_{name}", Export(parts["sum"], tokens, None, filename=f"{name}-x-plus-pe",
                                                  make_figure=lambda p=parts, t=tokens, m=name, lb=labels:
                                                  vp.triptych_figure(p, t, labels=lb, title=f"{m}: X, PE, X + PE",
                                                                     subtitle=view.text, lang=lg)))
            if kind == "sinusoidal" and note:
                st.caption(note)



def pe_table_section(view: View) -> None:
    """The sinusoidal table for chosen sizes, its columns as curves, and the position-to-position similarity."""
    lg, lecture = view.lang, view.lecture
    c1, c2 = st.columns(2)
    n = c1.slider(t("pe.positions", lg), 1, MAX_POSITIONS, 50, key="pe_n", persist_state="session")
    d = c2.slider(t("pe.d_model", lg), 2, MAX_D_MODEL, 128, step=2, key="pe_d", persist_state="session")
    pe = cache.pe_table(n, d)
    title = t("pe.export.table", lg, n=n, d=d)
    chart(vp.pe_heatmap(pe, lecture=lecture, lang=lg), "pe_heat",
          pe_export(pe, title, t("pe.axis.dim", lg), lg, filename=t("pe.export.table", "en", n=n, d=d),
                    cmap="RdBu_r", vmin=-1, vmax=1))
    st.caption(pooling_note(pe.shape, 384, lg) or t("pe.table_caption", lg))

    st.subheader(t("pe.curves", lg))
    st.session_state["pe_dims"] = [j for j in st.session_state.get("pe_dims", []) if j < d] or vp.default_dims(d)
    dims = st.multiselect(t("pe.dims", lg), list(range(d)), key="pe_dims", persist_state="session",
                          help=t("pe.dims_help", lg))
    chart(vp.pe_curves(pe, dims, lecture=lecture, lang=lg), "pe_curves", Export(
        pe[:, dims], list(range(n)), [t("pe.dim_n", lg, j=j) for j in dims], filename="pe-curves",
        make_figure=lambda: vp.curves_figure(pe, dims, lang=lg)))

    st.subheader(t("pe.similarity", lg))
    cosine = st.toggle(t("pe.cosine", lg), key="pe_cosine", persist_state="session")
    sim = cache.pe_similarity(n, d, cosine)
    kind = "cosine" if cosine else "dot"
    chart(vp.similarity_heatmap(sim, title=f"PE · PEᵀ ({n} × {n})", cosine=cosine, lecture=lecture, lang=lg), "pe_sim",
          pe_export(sim, t(f"pe.export.similarity_{kind}", lg), t("pe.axis.position", lg), lg,
                    filename=t(f"pe.export.similarity_{kind}", "en")))
    st.caption(t("pe.similarity_caption", lg) + (pooling_note(sim.shape, 256, lg) or ""))


def learned_vs_fixed(view: View) -> None:
    """MiniLM's 512 learned position rows beside the sinusoidal table, with their cosine similarities."""
    lg = view.lang
    st.subheader(t("pe.learned_title", lg))
    learned, learned_sim = cache.learned_positions(view.device)
    for col, mat, s, name in zip(st.columns(2), (learned, cache.pe_table(512, learned.shape[1])),
                                 (learned_sim, cache.pe_similarity(512, learned.shape[1], True)),
                                 ("learned", "sinusoidal")):
        label, en = t(f"pe.kind.{name}", lg), t(f"pe.kind.{name}", "en")
        with col:
            st.plotly_chart(vp.pe_heatmap(mat, title=f"{label}: 512 × {mat.shape[1]}", lecture=view.lecture,
                                          max_side=256, lim=vp.robust_limit(mat), lang=lg), key=f"cmp_{en}")
            chart(vp.similarity_heatmap(s, title=t("pe.fig.cmp_sim", lg, name=label), cosine=True,
                                        lecture=view.lecture, lang=lg),
                  f"cmp_sim_{en}", pe_export(s, t("pe.export.cmp_sim", lg, name=label), t("pe.axis.position", lg),
                                             lg, filename=t("pe.export.cmp_sim", "en", name=en)))
    st.caption(t("pe.learned_caption", lg) + (pooling_note((512, 512), 256, lg) or ""))


def block_label(block: str, lang: str) -> str:
    """The attention block's name ("Encoder self-attention", ...) in the interface language."""
    return t(f"block.{block}", lang)


def draw_stage(view: View, stage, lang: str = "en") -> None:
    """One stage of the step-by-step walk-through: title and shape, formula, caption, heatmap with its export."""
    st.markdown(f"**{stage.title}** · `{stage.shape}`")
    st.latex(stage.latex)
    st.caption(stage.caption)
    if stage.trivial:  # no blocked cell: the mask is all ones and the masked scores equal the scaled ones
        st.info(t("steps.mask_none" if stage.key == "mask" else "steps.masked_none", lang))
        return
    title = f"{view.model_name} · {block_label(view.block, lang)} · {layer_head(view.layer, view.head, lang)}"
    chart(stage_figure(stage, lecture=view.lecture, lang=lang), f"step_{stage.key}", Export(
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
                draw_stage(view, stage, lang)
        st.divider()


def step_tabs(view: View, lang: str) -> list[tuple[str, object]]:
    """(name, tab) of the Step by step page's lazy tabs for the sidebar's block (viz.steps.step_tabs)."""
    last = view.block != "encoder" and view.layer == view.model.config.n_decoder_layers - 1
    names = vs_steps.step_tabs(view.block, last)
    return list(zip(names, lazy_tabs([f"steps.tab.{n}" for n in names], "steps_tab", lang)))


def _draw_figures(view: View, figs: dict, prefix: str, tokens: list[str], layer: int) -> None:
    """Figures of viz.tour's Add & Norm / Feed Forward builders; the matrices with their exports."""
    for name, (fig, m) in figs.items():
        if m is None:
            st.plotly_chart(fig, key=f"{prefix}_{name}")
            continue
        rows = tokens if name not in ("W_1", "W_2") else [str(i) for i in range(m.shape[0])]
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
    sub = cache.sublayer_steps(view.model_name, view.device, view.text, block, view.layer)
    tokens = view.trace.axis_tokens(block)[0]
    n, d = sub["norm1"].shape
    lg, lecture, prefix = lang, view.lecture, f"steps_{name}"
    st.caption(t(f"steps.{name}.note", lg, layer=view.layer))
    if name in ("add_norm", "add_norm_dec"):
        st.latex(FORMULA_ADD_NORM.replace("Sublayer", "MultiHead"))
        figs = vt.add_norm_figures(sub, "norm1", tokens, sum_title=t("tour.add_norm.sum_fig", lg, n=n, d=d),
                                   lang=lg, lecture=lecture)
    elif name == "cross_norm":
        head = min(view.head, view.n_heads - 1)
        steps = cache.attention_steps(view.model_name, view.device, view.text, "cross", view.layer, head)
        if view.block == "decoder_self":  # the cross-attention itself: K and V from M, queries from the decoder
            cross_glance(view, steps, head, lg)
        cross = steps["output"]
        figs = {"cross": (vt.token_matrix(cross, tokens, t("steps.cross_fig", lg, n=n, d=d), lang=lg,
                                          lecture=lecture), cross)}
        figs.update(vt.add_norm_figures(sub, "norm2", tokens, sum_title=t("steps.cross_sum_fig", lg, n=n, d=d),
                                        lang=lg, lecture=lecture))
    elif name in ("ffn", "ffn_dec"):
        act = getattr(view.model.config, "activation", "relu").upper()
        st.latex(r"\operatorname{FFN}(x) = \operatorname{act}(x W_1 + b_1)\, W_2 + b_2")
        st.markdown(t("tour.ffn.shapes", lg, d=d, f=sub["W_1"].shape[1], act=act))
        figs = vt.ffn_figures(sub, tokens, layer=view.layer, act=act, lang=lg, weights=True, lecture=lecture)
        figs.pop("out")
    else:
        last = "norm3" if dec else "norm2"
        st.latex(FORMULA_ADD_NORM.replace("Sublayer", "FFN"))
        figs = vt.add_norm_figures(sub, last, tokens, sum_title=t("steps.ffn_sum_fig", lg, n=n, d=d), lang=lg,
                                   lecture=lecture)
    _draw_figures(view, figs, prefix, tokens, view.layer)
    if name in ("output", "output_dec"):
        hidden = view.trace.decoder_hidden_states if dec else view.trace.encoder_hidden_states
        diff = vt.layer_output_check(sub, hidden, view.layer)
        if diff is not None:
            (st.success if diff < 1e-5 else st.warning)(t("tour.ffn.check", lg, diff=diff, layer=view.layer))


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
            chart(stage_figure(stage, lecture=view.lecture, lang=lang), f"steps_cross_{key}", Export(
                stage.matrix, stage.rows, stage.cols, f"{view.model_name} · {stage.title} ({stage.shape})", view.text,
                f"{view.model_name}-L{view.layer}-H{head}-cross-{key}",
                heatmap=dict(cmap="viridis" if stage.colorscale == "Viridis" else "RdBu_r", xlabel=stage.xlabel,
                             ylabel=stage.ylabel)))


FORMULA_ADD_NORM = (r"\operatorname{LayerNorm}(x + \operatorname{Sublayer}(x)) = "
                    r"\gamma \odot \frac{s - \mu}{\sqrt{\sigma^2 + \epsilon}} + \beta")


def vocab_section(view: View, lang: str) -> None:
    """The last decoder layer's output through the final linear layer and Softmax over the vocabulary: the top
    tokens at every decoder position, the chosen query token's bars, and the check against the model's logits."""
    out = cache.vocab_output(view.model_name, view.device, view.text)
    rows = view.trace.axis_tokens("decoder_self")[0]
    d, v = out["W"]
    st.caption(t("steps.vocab.note", lang))
    st.latex(r"P(y_t \mid y_{<t}, x) = \operatorname{softmax}(h_t W_{vocab} + b)")
    st.markdown(t("steps.vocab.shapes", lang, d=d, v=v))
    i = min(view.token, len(rows) - 1)
    probs, toks = out["top_probs"][i], out["top_tokens"][i]
    st.plotly_chart(vt.ranked_bars(probs, toks, answer=0, title=t("steps.vocab.fig", lang, i=i, token=rows[i]),
                                   ylabel=t("tour.axis.probability", lang), lecture=view.lecture), key="steps_vocab")
    st.dataframe({t("steps.col.position", lang): list(range(len(rows))), t("steps.col.input", lang): list(rows),
                  t("steps.col.top", lang): [" · ".join(f"{tk} {p:.3f}" for tk, p in zip(tt, pp))
                                             for tt, pp in zip(out["top_tokens"], out["top_probs"])]},
                 hide_index=True, width="stretch")
    err = float(abs(out["sums"] - 1).max())
    (st.success if out["diff"] < 1e-4 else st.warning)(t("steps.vocab.check", lang, diff=out["diff"], err=err))


MASK_TAB_KEYS = ["masks.tab.padding", "masks.tab.look_ahead"]  # catalogue keys of the lab's lazy tabs
MASK_TABS = [t(k) for k in MASK_TAB_KEYS]  # English labels


def padding_section(view: View) -> None:
    """A padded batch (the sidebar's sentence and a second one): its mask, then one head's stages on a real layer."""
    lg = view.lang
    b1, b2 = st.columns(2)
    b1.button(t("masks.preset_pad", lg), key="mask_preset_pad", on_click=set_state,
              args=({"text": "this is my car", "mask_second": "that is not"},))
    second = b2.text_input(t("masks.second", lg), key="mask_second", persist_state="session")
    if view.trace is None or not second.strip():
        st.info(t("masks.need_text", lg))
    else:
        layer = min(view.layer, view.model.config.n_encoder_layers - 1)
        run = cache.padded_run(view.model_name, view.device, view.text, second, layer)
        st.plotly_chart(vm.batch_mask_heatmap(run.tokens, run.mask, lecture=view.lecture, lang=lg), key="mask_batch")
        row = st.radio(t("masks.show_sentence", lg), [0, 1], index=1, horizontal=True, key="mask_row",
                       persist_state="session", format_func=lambda i: t(
                           "masks.row_padded" if not run.mask[i].all() else "masks.row_unpadded", lg, i=i + 1))
        toks = run.tokens[row]
        draw_stages(view, "mask-pad", padded_stages(run, layer, view.head, row), toks,
                    f"{view.model_name} · {layer_head(layer, view.head, lg)}", " ".join(toks))


def look_ahead_section(view: View) -> None:
    """The look-ahead triangle and the combined decoder mask on word tokens, then a real decoder's masked
    self-attention."""
    lg = view.lang
    c1, c2, c3 = st.columns([2, 1, 1])
    sentence = c1.text_input(t("masks.decoder_sentence", lg), key="mask_lookahead", persist_state="session")
    n_pad = int(c2.number_input(t("masks.pads", lg), 0, 8, 1, key="mask_pads", persist_state="session"))
    c3.button(t("masks.preset_sam", lg), key="mask_preset_sam", on_click=set_state,
              args=({"mask_lookahead": "I am sam", "mask_pads": 1},))
    words = sentence.split()[:64] + ["<pad>"] * n_pad
    if not words:
        st.info(t("masks.need_decoder_text", lg))
        return
    draw_mask_examples(view, words, sentence)
    st.subheader(t("masks.real_decoder", lg))
    encdec, note = cache.lab_encoder_decoder(view.device)
    if note:
        st.caption(note)
    layer, head = min(view.layer, encdec.config.n_decoder_layers - 1), min(view.head, encdec.config.n_heads - 1)
    dec = cache.decoder_run(encdec.name, view.device, sentence, n_pad, layer)
    st.caption(t("masks.decoder_caption", lg, model=encdec.name, source=" ".join(dec.source_tokens),
                 tokens=" ".join(dec.tokens), layer=layer, head=head, n_layers=encdec.config.n_decoder_layers,
                 n_heads=encdec.config.n_heads))
    st.columns(3)[0].plotly_chart(vm.mask_heatmap(dec.mask, dec.tokens, dec.tokens, lecture=view.lecture, lang=lg,
                                                  title=t("masks.fig.used", lg)), key="dec_mask")
    draw_stages(view, "mask-dec", decoder_stages(dec, layer, head), dec.tokens,
                t("masks.decoder_where", lg, model=encdec.name, where=layer_head(layer, head, lg)),
                " ".join(dec.tokens))
