"""The Positional-encoding lab's sections: the sinusoidal table, X, PE and X + PE for the sentence, learned vs fixed."""

from __future__ import annotations

import streamlit as st

from analysis.positional import MAX_D_MODEL, MAX_POSITIONS
from i18n import error_message, t
from model.errors import HeadlightError
from viz import positional as vp
from viz.heatmap import pooling_note

from . import runs, store
from .labs import lazy_tabs
from .view import View
from .widgets import Export, chart

PE_TAB_KEYS = ["pe.tab.table", "pe.tab.sentence", "pe.tab.learned"]  # catalogue keys of the lab's lazy tabs
PE_TABS = [t(k) for k in PE_TAB_KEYS]  # English labels (tests open tabs by these)


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
    encdec, note = store.lab_encoder_decoder(view.device)
    lg = view.lang
    tabs = lazy_tabs(["pe.parts.learned", "pe.parts.sinusoidal"], "pe_parts_tab", lg, model=encdec.name)
    for tab, name, kind in zip(tabs, ["minilm-l6", encdec.name], ["learned", "sinusoidal"]):
        if not tab.open:
            continue
        with tab:
            try:
                tokens, parts = runs.embedding_parts(name, view.device, view.text)
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
    pe = runs.pe_table(n, d)
    title = t("pe.export.table", lg, n=n, d=d)
    chart(vp.pe_heatmap(pe, lecture=lecture, lang=lg), "pe_heat",
          pe_export(pe, title, t("pe.axis.dim", lg), lg, filename=t("pe.export.table", "en", n=n, d=d),
                    cmap="RdBu_r", vmin=-1, vmax=1))
    st.caption(pooling_note(pe.shape, 384, lg) or t("pe.table_caption", lg))

    st.subheader(t("pe.curves", lg))
    st.session_state["pe_dims"] = [j for j in st.session_state.get("pe_dims", []) if j < d] or vp.default_dims(d)
    dims = st.multiselect(t("pe.dims", lg), list(range(d)), key="pe_dims", persist_state="session",
                          help=t("pe.dims_help", lg), placeholder=t("widgets.pick_dims", lg), select_all=False)
    chart(vp.pe_curves(pe, dims, lecture=lecture, lang=lg), "pe_curves", Export(
        pe[:, dims], list(range(n)), [t("pe.dim_n", lg, j=j) for j in dims], filename="pe-curves",
        make_figure=lambda: vp.curves_figure(pe, dims, lang=lg)))

    st.subheader(t("pe.similarity", lg))
    cosine = st.toggle(t("pe.cosine", lg), key="pe_cosine", persist_state="session")
    sim = runs.pe_similarity(n, d, cosine)
    kind = "cosine" if cosine else "dot"
    chart(vp.similarity_heatmap(sim, title=f"PE · PEᵀ ({n} × {n})", cosine=cosine, lecture=lecture, lang=lg), "pe_sim",
          pe_export(sim, t(f"pe.export.similarity_{kind}", lg), t("pe.axis.position", lg), lg,
                    filename=t(f"pe.export.similarity_{kind}", "en")))
    st.caption(t("pe.similarity_caption", lg) + (pooling_note(sim.shape, 256, lg) or ""))


def learned_vs_fixed(view: View) -> None:
    """MiniLM's 512 learned position rows beside the sinusoidal table, with their cosine similarities."""
    lg = view.lang
    st.subheader(t("pe.learned_title", lg))
    learned, learned_sim = runs.learned_positions(view.device)
    for col, mat, s, name in zip(st.columns(2), (learned, runs.pe_table(512, learned.shape[1])),
                                 (learned_sim, runs.pe_similarity(512, learned.shape[1], True)),
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
