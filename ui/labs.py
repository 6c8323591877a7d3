"""Streamlit pieces of the lab pages (masks, positions): a row of stage figures with their exports, the example
masks, and a preset callback."""

from __future__ import annotations

import streamlit as st

from analysis.masks import decoder_stages, example_masks, padded_stages, stage_checks
from analysis.positional import MAX_D_MODEL, MAX_POSITIONS
from model.errors import HeadlightError
from model.trace import BLOCK_LABELS
from viz import masks as vm
from viz import positional as vp
from viz.heatmap import pooling_note
from viz.steps import stage_figure

from . import cache
from .state import View, safe_callback
from .widgets import Export, chart

PE_TABS = ["Sinusoidal table", "Your sentence: X, PE and X + PE", "Learned vs fixed"]
MASK_EXAMPLES = [("padding", "Padding mask"), ("causal", "Look-ahead mask"),
                 ("combined", "Combined: padding AND look-ahead")]


@safe_callback
def set_state(values: dict) -> None:
    """A preset button: set these widget values before the next run draws them."""
    st.session_state.update(values)


def draw_stages(view: View, prefix: str, stages: dict, tokens: list[str], title: str, text: str) -> None:
    """Raw scores, masked scores and softmax weights of one head side by side, each with its export, then the
    check that rows sum to 1 and blocked cells get 0."""
    figs = vm.stage_figures(stages, tokens, tokens, title=title, lecture=view.lecture)
    for col, (name, fig) in zip(st.columns(3), figs.items()):
        mat = stages["weights"] if name == "weights" else stages["scaled" if name == "masked" else name]
        with col:
            chart(fig, f"{prefix}_{name}", Export(mat, tokens, tokens, f"{name} · {title}", text, f"{prefix}-{name}",
                                                  heatmap=dict(masked=~stages["mask"] if name == "masked" else None)))
    c = stage_checks(stages)
    st.success(f"Every row of the weights sums to 1 (worst error {c['max_row_sum_error']:.1e}); the "
               f"{c['n_blocked']} blocked cells get weight {c['max_blocked_weight']:.1f} exactly.")


def draw_mask_examples(view: View, words: list[str], sentence: str) -> None:
    """Padding, look-ahead and combined masks of a word sequence ("I am sam <pad>"), each with its export."""
    masks = example_masks(words)
    for col, (name, title) in zip(st.columns(3), MASK_EXAMPLES):
        with col:
            chart(vm.mask_heatmap(masks[name], words, words, title=title, lecture=view.lecture), f"ex_{name}",
                  Export(masks[name].astype(int), words, words, title, sentence, f"mask-{name}",
                         heatmap=dict(vmin=0, vmax=1)))


def pe_export(matrix, title: str, xlabel: str, **heatmap) -> Export:
    """Export of a position table or a position-by-position matrix (positions down, `xlabel` across)."""
    rows, cols = list(range(matrix.shape[0])), list(range(matrix.shape[1]))
    return Export(matrix, rows, cols, title, filename=title,
                  heatmap=dict(xlabel=xlabel, ylabel="position", **heatmap))


EMBEDDING_LABELS = {
    "learned": {"token": "X: word embeddings", "position": "PE: learned position rows",
                "token_type": "token-type rows", "sum": "X + PE + type (before LayerNorm)"},
    "sinusoidal": {"token": "X: embedding × √d_model", "position": "PE: sinusoidal", "sum": "X + PE"},
}


def sentence_parts(view: View) -> None:
    """X, PE and X + PE of the sidebar's sentence in MiniLM (learned positions) and in the labs' encoder-decoder
    (sinusoidal), one tab each."""
    encdec, note = cache.lab_encoder_decoder(view.device)
    tabs = st.tabs(["MiniLM-L6: learned positions", f"{encdec.name}: sinusoidal positions"], key="pe_parts_tab",
                   on_change="rerun")
    for tab, name, kind in zip(tabs, ["minilm-l6", encdec.name], ["learned", "sinusoidal"]):
        if not tab.open:
            continue
        with tab:
            try:
                tokens, parts = cache.embedding_parts(name, view.device, view.text)
            except HeadlightError as exc:
                st.info(str(exc))
                continue
            labels = EMBEDDING_LABELS[kind]
            fig = vp.embedding_triptych(parts, tokens, labels=labels, lecture=view.lecture,
                                        title=f"{name}: {len(tokens)} tokens × {parts['sum'].shape[1]}")
            chart(fig, f"pe_parts_{name}", Export(parts["sum"], tokens, None, filename=f"{name}-x-plus-pe",
                                                  make_figure=lambda p=parts, t=tokens, m=name, lb=labels:
                                                  vp.triptych_figure(p, t, labels=lb, title=f"{m}: X, PE, X + PE",
                                                                     subtitle=view.text)))
            if kind == "sinusoidal" and note:
                st.caption(note)



def pe_table_section(view: View) -> None:
    """The sinusoidal table for chosen sizes, its columns as curves, and the position-to-position similarity."""
    c1, c2 = st.columns(2)
    n = c1.slider("Positions", 1, MAX_POSITIONS, 50, key="pe_n", persist_state="session")
    d = c2.slider("d_model", 2, MAX_D_MODEL, 128, step=2, key="pe_d", persist_state="session")
    pe = cache.pe_table(n, d)
    chart(vp.pe_heatmap(pe, lecture=view.lecture), "pe_heat", pe_export(pe, f"Sinusoidal PE · {n} positions × {d} dims",
                                                                   "dimension", cmap="RdBu_r", vmin=-1, vmax=1))
    st.caption(pooling_note(pe.shape, 384) or "Every value lies in [−1, 1]; even columns are sines, odd columns cosines.")

    st.subheader("Dimensions as curves")
    st.session_state["pe_dims"] = [j for j in st.session_state.get("pe_dims", []) if j < d] or vp.default_dims(d)
    dims = st.multiselect("Dimensions", list(range(d)), key="pe_dims", persist_state="session",
                          help="Low dimensions turn fast, high ones slowly.")
    chart(vp.pe_curves(pe, dims, lecture=view.lecture), "pe_curves", Export(
        pe[:, dims], list(range(n)), [f"dim {j}" for j in dims], filename="pe-curves",
        make_figure=lambda: vp.curves_figure(pe, dims)))

    st.subheader("Position-to-position similarity")
    cosine = st.toggle("Cosine similarity (instead of raw dot products)", key="pe_cosine", persist_state="session")
    sim = cache.pe_similarity(n, d, cosine)
    chart(vp.similarity_heatmap(sim, title=f"PE · PEᵀ ({n} × {n})", cosine=cosine, lecture=view.lecture), "pe_sim",
          pe_export(sim, f"PE similarity ({'cosine' if cosine else 'dot'})", "position"))
    st.caption("Nearby positions have similar vectors and the similarity depends only on the distance: "
               "the diagonal bands are the same everywhere. " + (pooling_note(sim.shape, 256) or ""))


def learned_vs_fixed(view: View) -> None:
    """MiniLM's 512 learned position rows beside the sinusoidal table, with their cosine similarities."""
    st.subheader("Learned (MiniLM) versus fixed (sinusoidal) positions")
    learned, learned_sim = cache.learned_positions(view.device)
    for col, mat, s, name in zip(st.columns(2), (learned, cache.pe_table(512, learned.shape[1])),
                                 (learned_sim, cache.pe_similarity(512, learned.shape[1], True)),
                                 ("MiniLM learned", "Sinusoidal")):
        with col:
            st.plotly_chart(vp.pe_heatmap(mat, title=f"{name}: 512 × {mat.shape[1]}", lecture=view.lecture, max_side=256,
                                          lim=vp.robust_limit(mat)), key=f"cmp_{name}")
            chart(vp.similarity_heatmap(s, title=f"{name}: cosine similarity", cosine=True, lecture=view.lecture),
                  f"cmp_sim_{name}", pe_export(s, f"{name} positions: cosine similarity", "position"))
    st.caption("Cosine similarity here, since the two tables have very different scales. The sinusoidal rows are a "
               "fixed formula, with bands that depend only on distance. MiniLM learned its 512 rows in training: "
               "similar neighbours too, but noisier, and it cannot go beyond position 511. " + pooling_note((512, 512), 256))


def draw_stage(view: View, stage) -> None:
    """One stage of the step-by-step walk-through: title and shape, formula, caption, heatmap with its export."""
    st.markdown(f"**{stage.title}** · `{stage.shape}`")
    st.latex(stage.latex)
    st.caption(stage.caption)
    if stage.trivial:  # no blocked cell: the mask is all ones and the masked scores equal the scaled ones
        st.info("Nothing is blocked here: the mask is all ones." if stage.key == "mask" else
                "Nothing is blocked here, so the masked scores equal the scaled ones above; not drawn again.")
        return
    title = f"{view.model_name} · {BLOCK_LABELS[view.block]} · {view.label} · {stage.title} ({stage.shape})"
    chart(stage_figure(stage, lecture=view.lecture), f"step_{stage.key}", Export(
        stage.matrix, stage.rows, stage.cols, title, view.text,
        f"{view.model_name}-L{view.layer}-H{view.head}-{stage.key}", heatmap=dict(
            masked=stage.masked, cmap="viridis" if stage.colorscale == "Viridis" else "RdBu_r",
            xlabel=stage.xlabel, ylabel=stage.ylabel)))



MASK_TABS = ["Padding mask on a batch", "Look-ahead mask and the combined decoder mask"]


def padding_section(view: View) -> None:
    """A padded batch (the sidebar's sentence and a second one): its mask, then one head's stages on a real layer."""
    b1, b2 = st.columns(2)
    b1.button("Preset: “this is my car” / “that is not”", key="mask_preset_pad", on_click=set_state,
              args=({"text": "this is my car", "mask_second": "that is not"},))
    second = b2.text_input("Second sentence (padded to the first one's length)", key="mask_second", persist_state="session")
    if view.trace is None or not second.strip():
        st.info("Type a sentence in the sidebar and a second one here to build a padded batch.")
    else:
        layer = min(view.layer, view.model.config.n_encoder_layers - 1)
        run = cache.padded_run(view.model_name, view.device, view.text, second, layer)
        st.plotly_chart(vm.batch_mask_heatmap(run.tokens, run.mask, lecture=view.lecture), key="mask_batch")
        row = st.radio("Show sentence", [0, 1], index=1, horizontal=True, key="mask_row", persist_state="session",
                       format_func=lambda i: f"{i + 1}: {'padded' if not run.mask[i].all() else 'no padding'}")
        toks = run.tokens[row]
        draw_stages(view, "mask-pad", padded_stages(run, layer, view.head, row), toks,
                    f"{view.model_name} · Layer {layer} · Head {view.head}", " ".join(toks))


def look_ahead_section(view: View) -> None:
    """The look-ahead triangle and the combined decoder mask on word tokens, then a real decoder's masked
    self-attention."""
    c1, c2, c3 = st.columns([2, 1, 1])
    sentence = c1.text_input("Decoder sentence", key="mask_lookahead", persist_state="session")
    n_pad = int(c2.number_input("<pad> tokens", 0, 8, 1, key="mask_pads", persist_state="session"))
    c3.button("Preset: “I am sam”", key="mask_preset_sam", on_click=set_state,
              args=({"mask_lookahead": "I am sam", "mask_pads": 1},))
    words = sentence.split()[:64] + ["<pad>"] * n_pad
    if not words:
        st.info("Type a decoder sentence to see the look-ahead mask.")
        return
    draw_mask_examples(view, words, sentence)
    st.subheader("On a real decoder: masked self-attention")
    encdec, note = cache.lab_encoder_decoder(view.device)
    if note:
        st.caption(note)
    layer, head = min(view.layer, encdec.config.n_decoder_layers - 1), min(view.head, encdec.config.n_heads - 1)
    dec = cache.decoder_run(encdec.name, view.device, sentence, n_pad, layer)
    st.caption(f"{encdec.name}: source “{' '.join(dec.source_tokens)}”, decoder input teacher-forced as "
               f"“{' '.join(dec.tokens)}”; layer {layer}, head {head} (the sidebar's choice, clamped to this "
               f"model's {encdec.config.n_decoder_layers} layers × {encdec.config.n_heads} heads).")
    st.columns(3)[0].plotly_chart(vm.mask_heatmap(dec.mask, dec.tokens, dec.tokens, lecture=view.lecture,
                                                  title="The mask this decoder used"), key="dec_mask")
    draw_stages(view, "mask-dec", decoder_stages(dec, layer, head), dec.tokens,
                f"{encdec.name} decoder · Layer {layer} · Head {head}", " ".join(dec.tokens))
