"""The Positional-encoding lab's sections: the sinusoidal table, X, PE and X + PE for the sentence, learned vs fixed."""

from __future__ import annotations

import numpy as np
import streamlit as st

from analysis import positional as ap
from analysis.positional import MAX_D_MODEL, MAX_POSITIONS, MAX_ROPE_K, ROPE_DEFAULTS
from i18n import error_message, t
from model.errors import HeadlightError
from viz import positional as vp
from viz.heatmap import pooling_note

from . import readable, runs, store
from . import state as s
from .deckfile import PE_TAB_KEYS
from .labs import set_state
from .state import K_MODEL
from .view import View
from .widgets import Export, chart, localised_tabs

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


def position_kind_notice(view: View) -> None:
    """Above the lab: a model whose positions are not vectors added to the words (rotary: RoPE; none) says so."""
    kind = store.positional_kind(view.model_name)
    if kind in ("rotary", "none"):
        st.info(t(f"pe.kind_notice.{kind}", view.lang, model=view.model_name), icon=":material/rotate_right:")


def learned_models() -> list[str]:
    """Every available model whose config adds learned position rows (config.positional == "learned")."""
    return [n for n in s.available_models() if store.positional_kind(n) == "learned"]


def learned_model_picker(view: View, key: str) -> str | None:
    """A picker of the models with learned positions: it follows the sidebar's model whenever that one changes to
    a model with learned positions (the sidebar's one-click switch moves it too). None when there is none."""
    models, ss = learned_models(), st.session_state
    if not models:
        st.info(t("pe.no_learned", view.lang))
        return None
    follow = f"_{key}_sidebar"
    if ss.get(follow) != view.model_name or ss.get(key) not in models:
        ss[follow] = view.model_name
        if view.model_name in models:
            ss[key] = view.model_name
        elif ss.get(key) not in models:
            ss[key] = models[0]
    return st.selectbox(t("pe.learned_model", view.lang), models, key=key, help=t("pe.learned_model_help", view.lang))


def lab_unreadable_notice(view: View, name: str, key: str) -> None:
    """The notice that `name` cannot read the sentence, with a switch of this lab's picker `key` to a model of the
    lab's that reads it. The sidebar's own model has the shell's notice above the page already."""
    if name == view.model_name:
        return
    try:
        trace = runs.get_trace(name, view.device, view.text)
    except HeadlightError:
        return
    readable.unreadable_notice(trace, name, view.lang, key=f"{key}_switch", picker=key, among=learned_models())


def sentence_parts(view: View) -> None:
    """X, PE and X + PE of the sidebar's sentence in a model with learned positions (the sidebar's when it has
    them, else the picker's) and in the labs' encoder-decoder (sinusoidal), one tab each."""
    lg = view.lang
    learned = learned_model_picker(view, "pe_parts_model")
    if model_layout(view) is not None:  # the sidebar's own sinusoids, in its own order (a translator's)
        encdec, note = view.model, None
    else:
        encdec, note = store.lab_encoder_decoder(view.device)
    keys, names, kinds = ["pe.parts.sinusoidal"], [encdec.name], ["sinusoidal"]
    if learned is not None and note is None and encdec is view.model:  # the sidebar's sinusoids come first
        keys, names, kinds = [*keys, "pe.parts.learned"], [*names, learned], [*kinds, "learned"]
    elif learned is not None:
        keys, names, kinds = ["pe.parts.learned", *keys], [learned, *names], ["learned", *kinds]
    tabs = localised_tabs(keys, "pe_parts_tab", lg, model=encdec.name, learned=learned or "")
    for tab, name, kind in zip(tabs, names, kinds):
        if not tab.open:
            continue
        with tab:
            if kind == "learned":
                lab_unreadable_notice(view, name, "pe_parts_model")
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


def model_layout(view: View) -> str | None:
    """The sidebar's model's own order of its sinusoid columns when it is not the paper's (a Bergamot translator:
    "marian", the sines of every frequency first, then the cosines), else None."""
    config = view.model.config if view.model is not None else None
    if config is None or config.positional != "sinusoidal" or config.sinusoid_layout == "interleaved":
        return None
    return config.sinusoid_layout


def pe_table_section(view: View) -> None:
    """The sinusoidal table for chosen sizes, its columns as curves, and the position-to-position similarity; laid
    out as the sidebar's model lays it out when that differs from the paper (a translator's Marian sinusoids)."""
    lg, lecture = view.lang, view.lecture
    layout = model_layout(view)
    if layout is not None and not st.toggle(t("trpages.pe.own_layout", lg, model=view.model_name,
                                              d=view.model.config.d_model), value=True, key="pe_own_layout",
                                            help=t("trpages.pe.own_layout_help", lg)):
        layout = None
    c1, c2 = st.columns(2)
    n = c1.slider(t("pe.positions", lg), 1, MAX_POSITIONS, 50, key="pe_n", persist_state="session")
    d = c2.slider(t("pe.d_model", lg), 2, MAX_D_MODEL, 128, step=2, key="pe_d", persist_state="session")
    pe = runs.pe_table(n, d, layout or "interleaved")
    title = t("pe.export.table", lg, n=n, d=d)
    fig_title = t("trpages.pe.fig.table", lg, model=view.model_name, n=n, d=d) if layout else ""
    chart(vp.pe_heatmap(pe, title=fig_title, lecture=lecture, lang=lg), "pe_heat",
          pe_export(pe, fig_title or title, t("pe.axis.dim", lg), lg, filename=t("pe.export.table", "en", n=n, d=d),
                    cmap="RdBu_r", vmin=-1, vmax=1))
    st.caption(pooling_note(pe.shape, 384, lg) or t("trpages.pe.table_caption" if layout else "pe.table_caption", lg,
                                                     half=d // 2))

    st.subheader(t("pe.curves", lg))
    st.session_state["pe_dims"] = [j for j in st.session_state.get("pe_dims", []) if j < d] or vp.default_dims(d)
    dims = st.multiselect(t("pe.dims", lg), list(range(d)), key="pe_dims", persist_state="session",
                          help=t("pe.dims_help", lg), placeholder=t("widgets.pick_dims", lg), select_all=False)
    chart(vp.pe_curves(pe, dims, lecture=lecture, lang=lg), "pe_curves", Export(
        pe[:, dims], list(range(n)), [t("pe.dim_n", lg, j=j) for j in dims], filename="pe-curves",
        make_figure=lambda: vp.curves_figure(pe, dims, lang=lg)))

    st.subheader(t("pe.similarity", lg))
    cosine = st.toggle(t("pe.cosine", lg), key="pe_cosine", persist_state="session")
    sim = runs.pe_similarity(n, d, cosine, layout or "interleaved")
    kind = "cosine" if cosine else "dot"
    chart(vp.similarity_heatmap(sim, title=f"PE · PEᵀ ({n} × {n})", cosine=cosine, lecture=lecture, lang=lg), "pe_sim",
          pe_export(sim, t(f"pe.export.similarity_{kind}", lg), t("pe.axis.position", lg), lg,
                    filename=t(f"pe.export.similarity_{kind}", "en")))
    st.caption(t("pe.similarity_caption", lg) + (pooling_note(sim.shape, 256, lg) or ""))


def learned_vs_fixed(view: View) -> None:
    """A model's learned position rows (any model whose config has learned positions) beside the sinusoidal table
    of the same size, with their cosine similarities."""
    lg = view.lang
    name = learned_model_picker(view, "pe_cmp_model")
    if name is None:
        return
    st.subheader(t("pe.learned_title", lg, model=name))
    learned, learned_sim = runs.learned_positions(name, view.device)
    n, d = learned.shape
    for col, mat, sim, kind in zip(st.columns(2), (learned, runs.pe_table(n, d)),
                                   (learned_sim, runs.pe_similarity(n, d, True)), ("learned", "sinusoidal")):
        label, en = t(f"pe.kind.{kind}", lg, model=name), t(f"pe.kind.{kind}", "en", model=name)
        short = t(f"pe.kind_short.{kind}", lg)  # on screen (half a page wide; the subheader names the model)
        with col:
            st.plotly_chart(vp.pe_heatmap(mat, title=f"{short}: {n} × {d}", lecture=view.lecture,
                                          max_side=256, lim=vp.robust_limit(mat), lang=lg), key=f"cmp_{kind}")
            chart(vp.similarity_heatmap(sim, title=t("pe.fig.cmp_sim", lg, name=short), cosine=True,
                                        lecture=view.lecture, lang=lg),
                  f"cmp_sim_{kind}", pe_export(sim, t("pe.export.cmp_sim", lg, name=label), t("pe.axis.position", lg),
                                               lg, filename=t("pe.export.cmp_sim", "en", name=en)))
    st.caption(t("pe.learned_caption", lg, model=name, n=n, last=n - 1) + (pooling_note((n, n), 256, lg) or ""))


# ---- RoPE: rotary positions beside the sinusoidal table -------------------------------------------------------------
ROPE_OFFSETS = (0, 100, 1000, 5000)  # absolute positions of the key in the relative-only demonstration
ROPE_TOP_KEYS = 5


def rope_settings(view: View) -> tuple[float, int]:
    """θ and k: the sidebar's model's when it is rotary (again whenever the sidebar changes model), else SmolLM2's;
    the user may change both."""
    lg, ss = view.lang, st.session_state
    config = view.model.config if view.model is not None else None
    rotary = store.positional_kind(view.model_name) == "rotary" and config is not None
    theta0, k0 = (float(config.rope_theta), int(config.d_k)) if rotary else ROPE_DEFAULTS
    if ss.get("_rope_sidebar") != view.model_name or "rope_theta" not in ss or "rope_k" not in ss:
        ss["_rope_sidebar"], ss["rope_theta"], ss["rope_k"] = view.model_name, theta0, k0
    key = "rope.source.model" if rotary else "rope.source.defaults"
    st.caption(t(key, lg, model=view.model_name, theta=theta0, k=k0))
    local = local_base(view)
    if local is not None:  # Gemma 3: its sliding-window layers turn with a base of their own
        st.caption(t("rope.source.local", lg, model=view.model_name, theta=theta0, local=local,
                     n=len(config.local_layers), L=config.n_decoder_layers, w=config.sliding_window))
    c1, c2, c3 = st.columns(3)
    theta = c1.number_input(t("rope.theta", lg), min_value=2.0, max_value=1e9, step=10000.0, format="%g",
                            key="rope_theta", help=t("rope.theta_help", lg), persist_state="session")
    k = c2.number_input(t("rope.k", lg), min_value=2, max_value=MAX_ROPE_K, step=2, key="rope_k",
                        help=t("rope.k_help", lg), persist_state="session")
    c3.slider(t("rope.distance", lg), 16, 2048, 256, step=16, key="rope_dist", persist_state="session")
    return float(theta), int(k) // 2 * 2 or 2


def local_base(view: View) -> float | None:
    """The RoPE base of the sidebar model's sliding-window layers where it differs from its global layers' (Gemma 3:
    10,000 beside 1,000,000), else None."""
    config = view.model.config if view.model is not None else None
    if config is None or store.positional_kind(view.model_name) != "rotary" or not config.local_layers:
        return None
    local = config.rope_theta_local
    return None if local is None or local == config.rope_theta else float(local)


def rope_section(view: View) -> None:
    """RoPE for every model: the frequency of each pair beside the sinusoidal table's, the relative-only score of a
    fixed q and k, and (a rotary sidebar model with a sentence) one real head's score by distance."""
    lg, lecture = view.lang, view.lecture
    st.markdown(t("rope.intro", lg))
    theta, k = rope_settings(view)
    distance = int(st.session_state.get("rope_dist", 256))

    st.subheader(t("rope.freq_title", lg))
    rope, sinus = ap.rope_frequencies(theta, k), ap.sinusoidal_frequencies(k)
    base = local_base(view)
    local = None if base is None else (base, ap.rope_frequencies(base, k))  # both bases of one model, one figure
    cols = ["rope_angle", "rope_wavelength", "sinusoidal_angle", "sinusoidal_wavelength"]
    table = np.stack([rope, ap.wavelengths(rope), sinus, ap.wavelengths(sinus)], 1)
    if local is not None:
        table, cols = np.hstack([table, np.stack([local[1], ap.wavelengths(local[1])], 1)]), [
            *cols, "rope_local_angle", "rope_local_wavelength"]
    chart(vp.rope_frequency_figure(rope, sinus, theta=theta, lecture=lecture, lang=lg, local=local), "rope_freq",
          Export(table, [str(j) for j in range(len(rope))], cols, filename="rope-frequencies",
                 make_figure=lambda: vp.lines_figure(
                     np.arange(len(rope)), {t("rope.trace.rope", lg, theta=theta, k=k): rope,
                                            **({t("rope.trace.local", lg, theta=base): local[1]} if local else {}),
                                            t("rope.trace.sinusoidal", lg, d=k): sinus},
                     title=t("rope.fig.freq", lg, theta=theta, k=k), xlabel=t("rope.axis.pair", lg),
                     ylabel=t("rope.axis.freq", lg), logy=True, lang=lg)))
    st.caption(t("rope.freq_caption", lg, slowest=float(ap.wavelengths(rope)[-1])))
    if local is not None:
        st.caption(t("rope.local_caption", lg, theta=theta, local=base, slowest=float(ap.wavelengths(local[1])[-1])))

    st.subheader(t("rope.rel_title", lg))
    st.latex(r"(R_{m}\,q)^{\top}(R_{n}\,k) = q^{\top} R_{m}^{\top} R_{n}\, k = q^{\top} R_{n-m}\, k")
    kind = st.radio(t("rope.vectors", lg), ["random", "constant"], key="rope_vectors", horizontal=True,
                    format_func=lambda v: t(f"rope.vectors.{v}", lg), persist_state="session")
    r = ap.relative_scores(*ap.rope_test_vectors(k, kind), theta, ROPE_OFFSETS, distance)
    chart(vp.relative_scores_figure(r, lecture=lecture, lang=lg), "rope_rel",
          Export(r["scores"].T, [str(d) for d in r["distance"]], [f"n={n}" for n in ROPE_OFFSETS],
                 filename="rope-relative-scores",
                 make_figure=lambda: vp.lines_figure(
                     r["distance"], {t("rope.trace.offset", lg, n=n): y for n, y in zip(ROPE_OFFSETS, r["scores"])},
                     title=t("rope.fig.relative", lg, diff=r["max_diff"]), xlabel=t("rope.axis.distance", lg),
                     ylabel=t("rope.axis.score", lg), lang=lg)))
    st.caption(t("rope.rel_caption", lg, offsets=", ".join(map(str, ROPE_OFFSETS)), diff=r["max_diff"]))

    st.subheader(t("rope.model_title", lg))
    rope_model_section(view, distance)


def rope_model_section(view: View, distance: int) -> None:
    """The sidebar's head (layer, head, query token) of a rotary model on the sentence, by distance."""
    lg = view.lang
    if store.positional_kind(view.model_name) != "rotary":
        st.info(t("rope.need_rotary", lg, model=view.model_name))
        rotary = [n for n in s.available_models() if store.positional_kind(n) == "rotary"]
        if rotary:
            st.button(t("rope.switch", lg, model=rotary[0]), key="rope_switch", on_click=set_state,
                      args=({K_MODEL: rotary[0]},))
        return
    if view.trace is None:
        st.info(t("pe.need_text", lg))
        return
    try:
        steps = runs.attention_steps(view.model_name, view.device, view.text, view.block, view.layer, view.head)
        p = ap.head_distance_profile(steps, view.token, distance)
    except (HeadlightError, ValueError) as exc:
        st.info(error_message(exc, lg) if isinstance(exc, HeadlightError) else str(exc))
        return
    queries, keys = view.trace.axis_tokens(view.block)
    query = queries[view.token]
    title = t("rope.fig.model", lg, model=view.model_name, layer=view.layer, head=view.head, query=query,
              theta=p["theta"], k=p["k"])
    chart(vp.head_distance_figure(p, keys, query, title=title, top=ROPE_TOP_KEYS, lecture=view.lecture, lang=lg),
          "rope_head", Export(p["scores"], list(keys), [str(d) for d in p["distance"]],
                              filename=f"{view.model_name}-rope-L{view.layer}-H{view.head}",
                              make_figure=lambda: vp.lines_figure(
                                  p["distance"], {t("rope.trace.mean", lg): p["mean"]}, title=title,
                                  xlabel=t("rope.axis.distance_query", lg, query=query),
                                  ylabel=t("rope.axis.scaled", lg), lang=lg,
                                  markers=(t("rope.trace.model", lg), p["real"][p["shown"]],
                                           p["model"][p["shown"]]))))
    st.caption(t("rope.model_caption", lg, query=query, top=min(ROPE_TOP_KEYS, int(p["shown"].sum())),
                 check=p["check"]))
