"""Streamlit pieces of the lab pages (masks, positions): a row of stage figures with their exports, the example
masks, and a preset callback."""

from __future__ import annotations

import streamlit as st

from analysis.masks import example_masks, stage_checks
from model.errors import HeadlightError
from viz import masks as vm
from viz import positional as vp

from . import cache
from .state import View, safe_callback
from .widgets import Export, chart

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
    tabs = st.tabs(["MiniLM-L6: learned positions", f"{encdec.name}: sinusoidal positions"])
    for tab, name, kind in zip(tabs, ["minilm-l6", encdec.name], ["learned", "sinusoidal"]):
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
