"""The Head lab's Cause tab (Streamlit): which heads produce the answer, and which cause it, on a decoder-only model.

- Direct logit attribution on the clean prompt: each head's, MLP's and the embeddings' part of the target-minus-foil
  logit, shown adding up to it; a layer x head grid, the top heads, what the method can and cannot say.
- Activation patching, clean into corrupted (the same number of tokens, said clearly otherwise): every head's output
  and the residual stream per layer x position, raw or normalised (corrupted 0, clean 1). The grids run on a click,
  with a progress bar and a Stop button (the run ends at the next layer; nothing partial is kept), at most
  MAX_CAUSE_TOKENS tokens. "Save in the deck" keeps the computed grids on the server (ui/saved.py) and adds the view
  as a slide, so a class that opens it reads them instead of computing them.
- Where they meet: the sidebar's layer and head is the picked head everywhere; a click on either grid picks it. Its
  attention map on the clean prompt, its DLA and its patching effect are side by side.

The prompts, target and foil are in the URL (hl_clean, hl_corrupt, hl_target, hl_foil) and in a deck slide.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from analysis import cause
from i18n import error_message, t
from model.errors import InputError
from viz import cause as vc

from . import deck_add, runs, saved
from .generation import needs_language_model
from .state import safe_callback
from .store import results
from .view import K_HEAD, K_LAYER, View, md_escape
from .widgets import chart, head_from_selection, layer_head, rename_columns, shared_kv, table

URL = dict(bind="query-params")
K_CLEAN, K_CORRUPT, K_TARGET, K_FOIL = "hl_clean", "hl_corrupt", "hl_target", "hl_foil"
K_NORMALISED, K_RUN, K_DLA_GRID, K_PATCH_GRID = "cause_norm", "_cause_run", "cause_dla_grid", "cause_patch_grid"
TAB_ID = "cause"  # this tab's id in the link and a slide (heads.tab.cause)
PICK = dict(selection_mode="points", config={"modeBarButtonsToRemove": ["select2d", "lasso2d"]})


@safe_callback
def _preset(name: str) -> None:
    p = cause.PRESETS[name]
    st.session_state.update({K_CLEAN: p.clean, K_CORRUPT: p.corrupt, K_TARGET: p.target, K_FOIL: p.foil})


def _picker(key: str):
    @safe_callback
    def pick() -> None:
        picked = head_from_selection(st.session_state.get(key))
        if picked is not None:
            st.session_state[K_LAYER], st.session_state[K_HEAD] = picked
    return pick


def inputs(view: View) -> tuple[str, str, str, str]:
    lg = view.lang
    d = cause.PRESETS[cause.DEFAULT_PRESET]
    for col, name in zip(st.columns(len(cause.PRESETS)), cause.PRESETS):
        col.button(t(f"cause.preset.{name}", lg), key=f"cause_preset_{name}", on_click=_preset, args=(name,),
                   width="stretch")
    clean = st.text_input(t("cause.clean", lg), d.clean, key=K_CLEAN, **URL)
    corrupt = st.text_input(t("cause.corrupt", lg), d.corrupt, key=K_CORRUPT, **URL)
    c1, c2 = st.columns(2)
    target = c1.text_input(t("cause.target", lg), d.target, key=K_TARGET, help=t("cause.answer_help", lg), **URL)
    foil = c2.text_input(t("cause.foil", lg), d.foil, key=K_FOIL, help=t("cause.answer_help", lg), **URL)
    return clean, corrupt, target, foil


def say(exc: InputError, lang: str) -> None:
    st.info(md_escape(error_message(exc, lang)), icon=":material/info:")


def shown(x) -> str:
    """An answer as the views write it: the typed text when it is one token, else the token that stands for it."""
    return md_escape(x.text.strip() if x.n_tokens == 1 else x.token)


def answers_note(a, lang: str) -> None:
    for x in (a.target, a.foil):
        if x is not None and x.n_tokens > 1:
            st.caption(t("cause.multi_token", lang, text=md_escape(x.text), n=x.n_tokens, token=md_escape(x.token)))


# ---- direct logit attribution --------------------------------------------------------------------------------------
def attribution(view: View, clean: str, target: str, foil: str):
    lg = view.lang
    st.subheader(t("cause.dla.head", lg))
    try:
        a = runs.attribution(view.model_name, view.device, clean, target, foil)
    except InputError as exc:
        say(exc, lg)
        return None
    answers_note(a, lg)
    what = t("cause.dla.what", lg, target=shown(a.target), foil=shown(a.foil)) if a.foil else \
        t("cause.dla.what_one", lg, target=shown(a.target))
    st.markdown(t("cause.dla.sum", lg, what=what, total=a.total, heads=float(a.head.sum()), mlps=float(a.mlp.sum()),
                  embed=a.embed, bias=float(a.attn_bias.sum()) + a.bias, error=abs(a.error)))
    title = t("cause.dla.grid_title", lg, what=what)
    chart(vc.grid(a.head, title=title, colorbar=t("cause.dla.part", lg), chosen=[(view.layer, view.head)],
                  lecture=view.lecture, lang=lg), K_DLA_GRID, subtitle=clean, filename="dla-heads",
          on_select=_picker(K_DLA_GRID), **PICK)
    c1, c2 = st.columns([3, 2])
    with c1:
        title = t("cause.dla.parts_title", lg)
        chart(vc.dla_parts(a.head, a.mlp, a.attn_bias, a.embed, title=title, lecture=view.lecture, lang=lg),
              "cause_dla_parts", subtitle=clean, filename="dla-layers")  # the heads' and MLPs' rows
    with c2:
        rows = [{"rank": r, "head": layer_head(la, h, lg, shared_kv(view.model, h)), "part": round(v, 3)}
                for r, (la, h, v) in enumerate(a.top_heads(8), start=1)]
        table(rename_columns(rows, lg, {"part": t("cause.dla.col_part", lg)}), view.lecture, key="cause_dla_top")
    st.caption(t("cause.dla.note", lg))
    return a


# ---- activation patching -------------------------------------------------------------------------------------------
def saved_key(view: View, clean, corrupt, target, foil) -> tuple:
    return (view.model_name, clean, corrupt, target, foil)


def _start(key: tuple) -> None:
    st.session_state[K_RUN] = key


def _stop() -> None:
    st.session_state[K_RUN] = None


@safe_callback
def _save(key: tuple, payload: str) -> None:
    saved.put("patching", key, payload)
    # a widget bound to the link leaves its default value out of it: the slide carries all four
    deck_add.add_view({**dict(zip((K_CLEAN, K_CORRUPT, K_TARGET, K_FOIL), key[1:])), "hl_tab": TAB_ID})


def patching(view: View, clean: str, corrupt: str, target: str, foil: str):
    lg = view.lang
    st.subheader(t("cause.patch.head", lg))
    st.caption(t("cause.patch.intro", lg))
    try:
        n = cause.check_pair(view.model, clean, corrupt)  # a clear message before any work
    except InputError as exc:
        say(exc, lg)
        return None
    residual = n <= cause.MAX_RESIDUAL_TOKENS
    key = saved_key(view, clean, corrupt, target, foil)
    p = None
    text = saved.get("patching", key)
    if text is not None:
        try:
            p = cause.patching_from_json(text)
            st.caption(t("cause.patch.from_deck", lg))
        except (ValueError, KeyError, TypeError):
            p = None
    if p is None:
        computed = runs.patching.key(view.model_name, view.device, clean, corrupt, target, foil, residual) in results()
        if not computed and st.session_state.get(K_RUN) != key:
            heads = view.model.config.n_decoder_layers * view.model.config.n_heads
            st.button(t("cause.patch.run" if residual else "cause.patch.run_heads", lg, n=heads), key="cause_patch_run",
                      on_click=_start, args=(key,),
                      type="primary", icon=":material/play_arrow:")
            return None
        stop = st.empty()
        if not computed:
            stop.button(t("cause.patch.stop", lg), key="cause_patch_stop", on_click=_stop, icon=":material/stop:")
        try:
            p = runs.patching(view.model_name, view.device, clean, corrupt, target, foil, residual)
        except InputError as exc:
            stop.empty()
            say(exc, lg)
            return None
        stop.empty()
    answers_note(p, lg)
    normalised = st.toggle(t("cause.patch.normalised", lg), True, key=K_NORMALISED,
                           help=t("cause.patch.normalised_help", lg))
    span = p.clean_diff - p.corrupt_diff
    st.markdown(t("cause.patch.diffs", lg, target=shown(p.target), foil=shown(p.foil),
                  clean=p.clean_diff, corrupt=p.corrupt_diff, span=span))
    if abs(span) < 1e-6:
        st.warning(t("cause.patch.no_span", lg))
    scaled = lambda g: p.normalised(g) if normalised else g  # noqa: E731
    bar = t("cause.patch.norm_bar" if normalised else "cause.patch.raw_bar", lg)
    if p.head is not None:
        grid = scaled(p.head)
        title = t("cause.patch.heads_title", lg)
        chart(vc.grid(grid, title=title, colorbar=bar, chosen=[(view.layer, view.head)], lecture=view.lecture,
                      lang=lg, zmax=1.0 if normalised else None), K_PATCH_GRID,
              subtitle=f"{clean} / {corrupt}", filename="patching-heads",
              on_select=_picker(K_PATCH_GRID), **PICK)
    if p.residual is None:
        st.caption(t("cause.patch.no_residual", lg, n=n, limit=cause.MAX_RESIDUAL_TOKENS))
    else:
        grid = scaled(p.residual)
        title = t("cause.patch.residual_title", lg)
        spelled = view.shown  # byte-level pieces as the text they spell
        clean_tokens, corrupt_tokens = [spelled(x) for x in p.clean_tokens], [spelled(x) for x in p.corrupt_tokens]
        chart(vc.residual_grid(grid, clean_tokens, corrupt_tokens, title=title, colorbar=bar,
                               lecture=view.lecture, lang=lg, zmax=1.0 if normalised else None), "cause_patch_resid",
              subtitle=f"{clean} / {corrupt}", filename="patching-residual")
    st.caption(t("cause.patch.note", lg))
    st.button(t("cause.patch.save", lg), key="cause_save", on_click=_save, args=(key, cause.patching_to_json(p)),
              icon=":material/add_to_queue:", help=t("cause.patch.save_help", lg))
    return p


# ---- one head, side by side ---------------------------------------------------------------------------------------
def picked(view: View, clean: str, a, p) -> None:
    lg = view.lang
    layer, head = view.layer, view.head
    kv = shared_kv(view.model, head)
    st.subheader(t("cause.picked.head", lg, where=layer_head(layer, head, lg, kv)))
    st.caption(t("cause.picked.intro", lg))
    c1, c2 = st.columns(2)
    with c1:
        try:
            tr = runs.get_trace(view.model_name, view.device, clean)
        except InputError as exc:
            say(exc, lg)
        else:
            att = tr.attention(tr.blocks[0])[layer, head]
            spelled = view.shown
            tokens = [spelled(x) for x in tr.source_tokens]
            chart(vc.head_map(att, tokens, layer, head, lecture=view.lecture, lang=lg, kv=kv),
                  "cause_head_map", subtitle=clean, filename="picked-head-attention")
    values = {}
    if a is not None:
        values[t("cause.picked.dla", lg)] = float(a.head[layer, head])
    if p is not None and p.head is not None:
        values[t("cause.picked.patch_raw", lg)] = float(p.head[layer, head] - p.corrupt_diff)
        norm = float(p.normalised(p.head)[layer, head])
        if np.isfinite(norm):
            values[t("cause.picked.patch_norm", lg)] = norm
    with c2:
        if values:
            chart(vc.head_bars(values, title=layer_head(layer, head, lg, kv), lecture=view.lecture),
                  "cause_head_bars", subtitle=clean, filename="picked-head")
            if a is not None:
                rank = int((np.abs(a.head) > abs(a.head[layer, head])).sum()) + 1
                st.caption(t("cause.picked.rank", lg, rank=rank, n=a.head.size))
        if p is None:
            st.caption(t("cause.picked.no_patch", lg))


def section(view: View) -> None:
    """The Head lab's Cause tab."""
    lg = view.lang
    st.caption(t("cause.intro", lg))
    if needs_language_model(view):
        return
    clean, corrupt, target, foil = inputs(view)
    a = attribution(view, clean, target, foil)
    p = patching(view, clean, corrupt, target, foil)
    picked(view, clean, a, p)
