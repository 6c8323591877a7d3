"""The Head lab's Generation tab and the tour's generation step (Streamlit): a decoder-only model writes after the
sidebar's sentence one token at a time over its KV cache (analysis/cause.py, model/cause/generation.py). Greedy or
sampled (temperature, top-k, top-p, seed); each step's token, probability and runners-up; a step slider with the new
query's row over the keys so far (every head of the sidebar's layer, the sidebar's head in every layer), the keys
and values the step appended, which query heads read which cache; the cache's size and a step's work with and without
it; the attention sink at each step. The choices are in the URL (widgets bound to query parameters)."""

from __future__ import annotations

import numpy as np
import streamlit as st

from analysis import cause
from i18n import error_message, t
from model import models_with
from model.errors import InputError
from viz import cause as vc

from . import runs
from .state import available_models, safe_callback
from .view import K_MODEL, View, md_escape
from .widgets import chart, rename_columns, shared_kv, table

URL = dict(bind="query-params")
LANGUAGE_MODEL = models_with(next_token=True)[0]  # offered where the sidebar's model cannot generate (SmolLM2)


def settings(view: View, *, compact: bool = False) -> tuple[int, float, int, float, int, bool]:
    """(new tokens, temperature, top-k, top-p, seed, time without the cache) from the widgets."""
    lg = view.lang
    c1, c2 = st.columns(2)
    n = int(c1.slider(t("cause.gen.n", lg), 1, 40, 8 if compact else 12, key="gen_new", **URL))
    # a toggle, not a radio: a radio bound to the URL writes its label there, which is the interface language's
    sample = False if compact else c2.toggle(t("cause.gen.sample", lg), key="gen_sample", help=t("cause.gen.mode", lg),
                                             **URL)
    temperature, top_k, top_p, seed = 0.0, 0, 1.0, 0
    if sample:
        c1, c2, c3, c4 = st.columns(4)
        temperature = float(c1.slider(t("cause.gen.temperature", lg), 0.1, 2.0, 0.8, 0.1, key="gen_temp", **URL))
        top_k = int(c2.number_input(t("cause.gen.top_k", lg), 0, 500, 50, key="gen_topk", **URL,
                                    help=t("cause.gen.top_k_help", lg)))
        top_p = float(c3.slider(t("cause.gen.top_p", lg), 0.05, 1.0, 0.9, 0.05, key="gen_topp", **URL))
        seed = int(c4.number_input(t("cause.gen.seed", lg), 0, 2**31 - 1, 0, key="gen_seed", **URL))
    timed = False if compact else st.toggle(t("cause.gen.time_full", lg), key="gen_time",
                                            help=t("cause.gen.time_full_help", lg))
    return n, temperature, top_k, top_p, seed, bool(timed)


@safe_callback
def _use_language_model() -> None:
    st.session_state[K_MODEL] = LANGUAGE_MODEL


def needs_language_model(view: View, *, translators: bool = False) -> bool:
    """True (and a notice, with a one-click switch) when the sidebar's model is not a decoder-only language model
    (translators: nor an encoder-decoder, whose decoder writes too)."""
    if view.model.kind == "decoder" or (translators and view.model.kind == "encoder-decoder"):
        return False
    st.info(t("cause.need_lm", view.lang, model=view.model_name), icon=":material/info:")
    if LANGUAGE_MODEL in available_models():
        st.button(t("cause.use_lm", view.lang, model=LANGUAGE_MODEL), key="gen_use_lm", on_click=_use_language_model)
    return True


def run(view: View, n, temperature, top_k, top_p, seed, timed):
    try:
        return runs.generation(view.model_name, view.device, view.text, n, temperature, top_k, top_p, seed, timed)
    except InputError as exc:
        st.info(md_escape(error_message(exc, view.lang)))
        return None


def written(view: View, gen, step: int | None) -> None:
    """The prompt and what the model wrote (detokenized, in bold), then each generated token as a code span, the
    chosen step's marked."""
    ids = [s.choice.id for s in gen.steps]
    said = (view.model.output_text(ids) if gen.source_tokens else view.model.tokenizer.decode(ids)).strip() \
        or " ".join(gen.tokens)  # an encoder-decoder's output text drops its end token
    said = " ⏎ ".join(said.splitlines())  # a new line the model wrote, shown as one
    st.markdown(md_escape(gen.prompt) + " **" + md_escape(said) + "**")
    out, shown = [], view.shown
    for k, s in enumerate(gen.steps):
        tok = "`" + shown(s.choice.token).replace("`", "ˋ") + "`"
        out.append(f"**▸{k}** {tok}" if k == step else tok)
    st.caption(t("cause.gen.tokens", view.lang) + " " + " ".join(out))


def step_picker(view: View, gen) -> int:
    N = len(gen.steps)
    if N == 1:
        return 0
    return int(st.slider(t("cause.gen.step_slider", view.lang), 0, N - 1, 0, key="gen_step", **URL))


def row_pair(view: View, gen, k: int, rows: np.ndarray, keys: list[str], name: str) -> tuple[int, int]:
    """Two heatmaps of a step's rows (L, H, keys): every head of the sidebar's layer, its head in every layer."""
    lg = view.lang
    L, H = rows.shape[:2]
    layer, head = min(view.layer, L - 1), min(view.head, H - 1)
    kv = [shared_kv(view.model, h, "cross" if name == "cross" else "decoder_self") for h in range(H)]
    heads = [t("ex.head_n", lg, i=h) + ("" if kv[h] is None else f" · KV {kv[h]}") for h in range(H)]
    layers = [t("ex.layer_n", lg, i=i) for i in range(L)]
    c1, c2 = st.columns(2)
    for col, mat, labels, title, hl, part in (
            (c1, rows[layer], heads, t(f"cause.gen.{name}_heads", lg, layer=layer, k=k), head, "by-head"),
            (c2, rows[:, head], layers, t(f"cause.gen.{name}_layers", lg, head=head, k=k), layer, "by-layer")):
        with col:
            chart(vc.step_rows(mat, keys, labels, title=title, lecture=view.lecture, lang=lg, highlight=hl),
                  f"gen_{name}_{part}", subtitle=gen.prompt, filename=f"{name}-{part}")
    return layer, head


def step_view(view: View, gen, k: int) -> None:
    """The chosen step: the query's rows over the keys so far (and, on an encoder-decoder, over the source), and the
    keys and values it appended."""
    lg, s = view.lang, gen.steps[k]
    shown = view.shown
    tokens = [shown(x) for x in gen.tokens]
    q = len(gen.prompt_ids) + k - 1
    line = "cause.gen.step_line_s2s" if gen.source_tokens else "cause.gen.step_line"
    st.markdown(t(line, lg, k=k, q=q, query=md_escape(tokens[q]), token=md_escape(shown(s.choice.token)),
                  p=s.choice.prob, m=q + 1))
    if gen.source_tokens:
        row_pair(view, gen, k, cause.cross_rows(gen, k), list(gen.source_tokens), "cross")
    if not gen.has_self_rows:
        st.caption(t("cause.gen.ssru", lg, d=view.model.config.d_model, bytes=s.cache_bytes))
        return
    layer, _ = row_pair(view, gen, k, cause.step_rows_padded(gen, k), tokens, "rows")  # NaN past the keys it saw
    if s.k_new is not None:
        fed = tokens[s.position - s.n_fed: s.position]
        labels = [t("cause.gen.kv_row", lg, g=g, token=tok) for g in range(s.k_new.shape[1]) for tok in fed]
        c1, c2 = st.columns(2)
        for col, name, values in ((c1, "k", s.k_new[layer]), (c2, "v", s.v_new[layer])):
            mat = values.reshape(-1, values.shape[-1])  # (G * n_fed, d_k)
            title = t(f"cause.gen.{name}_new", lg, layer=layer, n=s.n_fed)
            with col:
                chart(vc.kv_rows(mat, labels, title=title, lecture=view.lecture, lang=lg), f"gen_{name}_new",
                      subtitle=gen.prompt, filename=f"appended-{name}")
    st.caption(t("cause.gen.kv_caption", lg, n=s.n_fed, bytes=s.cache_bytes, kib=s.cache_bytes / 1024))


def kv_groups(view: View, gen) -> None:
    lg = view.lang
    if not gen.has_self_rows:
        return
    if gen.n_kv_heads == gen.n_heads:
        st.caption(t("cause.gen.no_groups", lg, h=gen.n_heads))
        return
    m = cause.kv_map(gen.n_heads, gen.n_kv_heads)
    c1, c2 = st.columns([2, 3])
    with c1:
        chart(vc.kv_groups(m, lecture=view.lecture, lang=lg), "gen_groups", filename="kv-groups")
    g = gen.n_heads // gen.n_kv_heads
    c2.markdown(t("cause.gen.groups_text", lg, h=gen.n_heads, g=gen.n_kv_heads, per=g,
                  saved=gen.n_heads / gen.n_kv_heads))


def costs(view: View, gen, k: int) -> None:
    lg, s = view.lang, gen.steps[k]
    c = cause.costs(gen)
    m1, m2, m3 = st.columns(3)
    m1.metric(t("cause.gen.cache_now", lg), f"{s.cache_bytes / 1024:,.1f} KiB")
    m2.metric(t("cause.gen.macs_now", lg), f"{s.macs_cached / 1e6:,.1f} M",
              delta=t("cause.gen.macs_ratio", lg, r=s.macs_full / max(s.macs_cached, 1)), delta_color="off")
    m3.metric(t("cause.gen.ms_now", lg), f"{s.ms_cached:.1f} ms",
              delta=None if s.ms_full is None else t("cause.gen.ms_full", lg, ms=s.ms_full), delta_color="off")
    cols = st.columns(3)
    for col, which in zip(cols, ("cache", "macs", "time")):
        with col:
            chart(vc.costs(c, which=which, lecture=view.lecture, lang=lg), f"gen_cost_{which}", subtitle=gen.prompt,
                  filename=f"cost-{which}")  # the series it draws, a row each
    st.caption(t("cause.gen.costs_caption", lg))


def sinks(view: View, gen, k: int) -> None:
    lg = view.lang
    if not gen.has_self_rows:
        st.caption(t("cause.gen.no_sink", lg))
        return
    by_layer = cause.sink_by_layer(gen)
    mass = gen.sink_mass()
    st.markdown(t("cause.gen.sink_line", lg, k=k, mass=float(mass[k]), mean=float(mass.mean()),
                  first=md_escape(gen.tokens[0])))
    chart(vc.sink(by_layer, lecture=view.lecture, lang=lg, step=k), "gen_sink", subtitle=gen.prompt,
          filename="sink-by-step")


def section(view: View) -> None:
    """The Head lab's Generation tab."""
    lg = view.lang
    st.caption(t("cause.gen.intro", lg))
    if needs_language_model(view, translators=True):
        return
    if view.model.kind == "encoder-decoder":
        st.caption(t("cause.gen.s2s", lg, model=view.model_name))
    gen = run(view, *settings(view))
    if gen is None or not gen.steps:
        if gen is not None:
            st.info(t("cause.gen.no_room", lg))
        return
    k = step_picker(view, gen)
    written(view, gen, k)
    if gen.shortlist:
        st.caption(t("cause.gen.shortlist", lg))
    names = {k: t(f"cause.gen.col.{k}", lg) for k in ("step", "position", "token", "prob", "drawn", "top")}
    table(rename_columns(cause.step_table(gen, spell=view.shown), lg, names), view.lecture, key="gen_table", height=240)
    step_view(view, gen, k)
    if gen.has_self_rows:
        st.subheader(t("cause.gen.groups_head", lg))
        kv_groups(view, gen)
    st.subheader(t("cause.gen.costs_head", lg))
    costs(view, gen, k)
    st.subheader(t("cause.gen.sink_head", lg))
    sinks(view, gen, k)


def tour_step(view: View, lg: str) -> None:
    """The tour's generation step: eight greedy tokens of the sidebar's language model, one step's rows."""
    if needs_language_model(view):
        return
    gen = run(view, *settings(view, compact=True))
    if gen is None or not gen.steps:
        return
    k = step_picker(view, gen)
    written(view, gen, k)
    step_view(view, gen, k)
    s = gen.steps[k]
    st.caption(t("cause.gen.tour_costs", lg, bytes=s.cache_bytes, cached=s.macs_cached / 1e6,
                 full=s.macs_full / 1e6))
