"""The Training page's runs (issue 36): the recorded run the whole class can scrub, and the live run the lecturer
starts. Both draw a RunView (analysis/training.py) with the same figures (viz/training.py): the loss, alignment and
learning-rate curves with a marker at the step, the fixed sentence's cross-attention, one encoder head, the greedy
output.

- Recorded: a snapshot slider in a fragment, so moving it reruns only the fragment (no sidebar, no other tab). The
  link's `?snap=` is checked against the run's snapshots (ui/training_page.py read_link).
- Live: analysis/training_live.py runs the lab's training in a thread of this process (one at a time, at most
  LIMIT_S seconds, stoppable); a fragment polls it every POLL_S seconds while it runs. Only a session that gave the
  lecturer key (ui/class_room.py, as the Class page checks it), or any session when the server was started with
  HEADLIGHT_LIVE_TRAINING=1, may start one: a lecture hall cannot start 300.
"""

from __future__ import annotations

import os

import streamlit as st

from analysis import training as an
from analysis import training_live as live
from i18n import t
from viz import training as vt
from viz.theme import column_width

from . import class_room as cr
from .training_page import K_SNAP, PENDING, recorded_run, write_link
from .view import View, md_escape
from .widgets import Export, chart, export_popover

LIVE_FLAG = "HEADLIGHT_LIVE_TRAINING"  # "1": every session of this server may start a live run
POLL_S = 0.5  # the live run's redraw (a fragment); the first snapshot is drawn by the run the click starts
FIRST_WAIT_S = 1.5
K_LIVE, K_LIVE_SEED, K_LIVE_MSG, K_HEAD, K_ENC_LAYER, K_ENC_HEAD = (
    "_train_live_id", "train_live_seed", "_train_live_msg", "train_cross_head", "train_enc_layer", "train_enc_head")


# ---- what both runs draw ----------------------------------------------------------------------------------------
def build_figure(run: an.RunView, kind: str, i: int, a, b, lang: str, lecture: bool, width: int):
    """One of a run's figures at snapshot i: "curves" (the marker at its step), "cross" (head a), "encoder" (layer a,
    head b)."""
    if kind == "curves":
        return vt.curves_figure(run, int(run.steps[i]), lang=lang, lecture=lecture)
    if kind == "cross":
        return vt.cross_figure(run, i, a, lang=lang, lecture=lecture, width=width)
    return vt.encoder_figure(run, i, a, b, lang=lang, lecture=lecture, width=width)


@st.cache_resource(max_entries=600, show_spinner=False)
def recorded_figure(task: str, kind: str, i: int, a, b, lang: str, lecture: bool, width: int):
    """A recorded run's figure, built once per process and shared by every session (a three-panel plotly figure
    costs ~60 ms to build, most of the slider's server time; st.plotly_chart copies a figure before sending it, so a
    shared one is never changed)."""
    return build_figure(recorded_run(task), kind, i, a, b, lang, lecture, width)


def snapshot(view: View, run: an.RunView, i: int, prefix: str, recorded: bool = False) -> None:
    """Snapshot i of a run: its numbers, the curves with the marker, the cross-attention, an encoder head, the
    greedy output. `recorded`: the shipped run's figures, from the shared cache."""
    lg = view.lang
    step = int(run.steps[i])
    n_cols = 1 if view.lecture else 2
    width = column_width(n_cols)

    def figure(kind: str, a=None, b=None):
        args = (kind, i, a, b, lg, view.lecture, width)
        return recorded_figure(run.task, *args) if recorded else build_figure(run, *args)

    a, b, c, d = st.columns(4)
    a.metric(t("train.run.step", lg), f"{step} / {run.total_steps}")
    b.metric(t("train.run.loss", lg), f"{run.loss[i]:.3f}")
    c.metric(t("train.run.alignment", lg), f"{run.alignment[i]:.1%}")
    d.metric(t("train.run.lr", lg), f"{run.lr[i]:.2e}")
    st.plotly_chart(figure("curves"), key=f"{prefix}_curves")
    out = " ".join(run.greedy[i]) or "∅"
    st.markdown(t("train.run.greedy", lg, step=step, out=out, right=" ".join(run.target),
                  mark="✓" if run.greedy[i] == run.target else "✗"))
    head, layer, h = map_choice(run)
    figs = figure("cross", head), figure("encoder", layer, h)
    out = (None, None) if recorded else exports(run, i, head, layer, h, *figs)  # the recorded run's: outside
    cols = st.columns(n_cols)
    with cols[0]:
        chart(figs[0], f"{prefix}_cross", out[0])
        st.caption(t("train.run.right_note", lg))
    with cols[-1]:
        chart(figs[1], f"{prefix}_enc", out[1])


def map_choice(run: an.RunView) -> tuple:
    """(cross head or "mean", encoder layer, encoder head) as picked, kept to the run's shapes."""
    head = st.session_state.get(K_HEAD, "mean")
    head = head if head in ("mean", *range(run.cross.shape[2])) else "mean"
    layer = int(st.session_state.get(K_ENC_LAYER, 0)) % run.encoder.shape[1]
    return head, layer, int(st.session_state.get(K_ENC_HEAD, 0)) % run.encoder.shape[2]


def exports(run: an.RunView, i: int, head, layer: int, h: int, cross_fig, enc_fig) -> tuple[Export, Export]:
    """What the two maps of snapshot i export (their numbers and a slide-quality twin, titled as the figures)."""
    name = f"training-{run.task}-step{int(run.steps[i])}"
    rows = [f"{x} → {y}" for x, y in zip(run.decoder_input, (*run.target, "<eos>"))]
    return (Export(_cross_matrix(run, i, head), rows, list(run.source), vt.plain_title(cross_fig.layout.title.text),
                   an.FIXED_SENTENCE, f"{name}-cross"),
            Export(run.encoder[i, layer, h], list(run.source), list(run.source),
                   vt.plain_title(enc_fig.layout.title.text),
                   an.FIXED_SENTENCE, f"{name}-encoder-L{layer}-H{h}"))


def _cross_matrix(run: an.RunView, i: int, head):
    maps = run.cross[i, -1]
    return maps.mean(0) if head == "mean" else maps[int(head)]


def map_pickers(run: an.RunView, lang: str) -> None:
    """Which cross-attention head (or the mean: the alignment's reading) and which encoder head to draw."""
    c1, c2, c3 = st.columns(3)
    layer = run.cross.shape[1] - 1
    c1.selectbox(t("train.run.cross_head", lang), ["mean", *range(run.cross.shape[2])], key=K_HEAD,
                 format_func=lambda h: t("train.run.mean_heads", lang, layer=layer) if h == "mean"
                 else t("sidebar.head_n", lang, i=h))
    c2.selectbox(t("train.run.enc_layer", lang), range(run.encoder.shape[1]), key=K_ENC_LAYER,
                 format_func=lambda i: t("sidebar.layer_n", lang, i=i))
    c3.selectbox(t("train.run.enc_head", lang), range(run.encoder.shape[2]), key=K_ENC_HEAD,
                 format_func=lambda i: t("sidebar.head_n", lang, i=i))


# ---- the recorded run ----------------------------------------------------------------------------------------------
def recorded_section(view: View, task: str) -> None:
    lg = view.lang
    run = recorded_run(task)
    steps = [int(s) for s in run.steps]
    st.markdown(t("train.run.intro", lg))
    st.caption(t("train.run.recorded", lg, task=task, seed=run.seed, steps=run.total_steps, n=len(steps),
                 cpu=run.cpu_s, wall=run.wall_s))
    ss = st.session_state
    pending = ss.pop(PENDING, None)
    if pending is not None:
        try:
            value = int(str(pending).strip())
        except ValueError:
            value = None
        if value in steps:
            ss[K_SNAP] = value
        else:
            ss[K_SNAP] = steps[-1]
            st.warning(t("train.bad_snap", lg, value=md_escape(str(pending)[:40]), first=steps[0], last=steps[-1],
                         every=steps[1] - steps[0] if len(steps) > 1 else 0), icon=":material/warning:")
    if ss.get(K_SNAP) not in steps:
        ss[K_SNAP] = steps[-1]
    map_pickers(run, lg)
    scrub(view, task)
    # the maps' exports, outside the fragment: two popovers redrawn on every move cost more in the browser than the
    # maps themselves; a popover's content is built when it opens (a full run), so it is the step on screen
    i = steps.index(int(ss[K_SNAP]))
    head, layer, h = map_choice(run)
    width = column_width(1 if view.lecture else 2)
    figs = (recorded_figure(task, "cross", i, head, None, lg, view.lecture, width),
            recorded_figure(task, "encoder", i, layer, h, lg, view.lecture, width))
    st.caption(t("train.run.export", lg))
    for col, key, export, fig in zip(st.columns(2), ("train_rec_cross", "train_rec_enc"), exports(run, i, head, layer,
                                                                                                  h, *figs), figs):
        with col:
            export_popover(f"{key}-export", export, fig)


@st.fragment
def scrub(view: View, task: str) -> None:
    """The slider and everything it moves: a fragment, so a new step reruns only this."""
    lg = view.lang
    run = recorded_run(task)
    steps = [int(s) for s in run.steps]
    step = st.select_slider(t("train.run.slider", lg), steps, key=K_SNAP)
    write_link(task, int(step))
    snapshot(view, run, steps.index(int(step)), "train_rec", recorded=True)


# ---- the live run --------------------------------------------------------------------------------------------------
def may_start() -> bool:
    """The lecturer key given in this session, or the server's flag."""
    return os.environ.get(LIVE_FLAG, "").strip().lower() in ("1", "true", "yes", "on") or cr.is_lecturer()


def key_form(lang: str) -> None:
    """Why the live run is closed, and the lecturer key's form when the server has a key."""
    if not cr.key_set():
        st.info(t("train.live.closed", lang, env=LIVE_FLAG), icon=":material/lock:")
        return
    st.info(t("train.live.need_key", lang), icon=":material/lock:")
    with st.form("train_key_form", clear_on_submit=True):
        given = st.text_input(t("class.key", lang), type="password", key="train_key", max_chars=512)
        sent = st.form_submit_button(t("class.key_submit", lang), type="primary")
    if sent:
        verdict = cr.try_key(given or "")
        if verdict == "ok":
            st.rerun()
        st.error(t(f"class.key_{verdict}", lang), icon=":material/lock:")


def _start(task: str, seed: int) -> None:
    ss = st.session_state
    try:
        run = live.RUNNER.start(an.LabSettings(task=task, seed=int(seed)))
    except live.LiveBusy:
        ss[K_LIVE_MSG] = ("warning", "train.live.busy")
        return
    ss[K_LIVE] = run.id
    ss[K_LIVE_MSG] = None
    run.wait_first(FIRST_WAIT_S)  # the rerun this click starts then draws step 0 at once


def _stop() -> None:
    ss = st.session_state
    run = live.RUNNER.get(ss.get(K_LIVE))
    if run is None or not run.running:
        ss[K_LIVE_MSG] = ("info", "train.live.not_running")
        return
    run.stop()


def live_section(view: View, task: str) -> None:
    lg = view.lang
    st.markdown(t("train.live.intro", lg, limit=int(live.LIMIT_S)))
    if not may_start():
        key_form(lg)
        return
    ss = st.session_state
    c1, c2, c3 = st.columns([1, 1, 1], vertical_alignment="bottom")
    seed = c1.number_input(t("train.live.seed", lg), 0, 9999, 0, key=K_LIVE_SEED)
    c2.button(t("train.live.start", lg, task=t(f"tour.task.{task}", lg)), key="train_live_start", type="primary",
              icon=":material/play_arrow:", on_click=_start, args=(task, int(seed)), width="stretch")
    c3.button(t("train.live.stop", lg), key="train_live_stop", icon=":material/stop:", on_click=_stop,
              width="stretch")
    msg = ss.get(K_LIVE_MSG)
    if msg:
        getattr(st, msg[0])(t(msg[1], lg), icon=":material/info:")
    run = live.RUNNER.get(ss.get(K_LIVE))
    if run is None:
        if live.RUNNER.busy():
            st.caption(t("train.live.other", lg))
        return
    if run.running:
        watch(view, run.id)
    else:
        show_live(view, run)


@st.fragment(run_every=POLL_S)
def watch(view: View, run_id: int) -> None:
    """Polled while the run runs; once it ends, the whole page is drawn again (the fragment stops polling)."""
    run = live.RUNNER.get(run_id)
    if run is None:
        return
    if not run.running:
        st.rerun(scope="app")
    show_live(view, run)


def show_live(view: View, run: live.LiveRun) -> None:
    lg = view.lang
    status = run.status()
    state = status.state
    text = t(f"train.live.state.{state}", lg, step=max(status.step, 0), steps=run.settings.steps,
             s=status.elapsed_s, limit=int(run.limit_s), task=t(f"tour.task.{run.settings.task}", lg),
             seed=run.settings.seed)
    {"running": st.info, "done": st.success, "failed": st.error}.get(state, st.warning)(
        text, icon=":material/model_training:")
    rv = run.view()
    if rv is None:
        return
    snapshot(view, rv, len(rv.steps) - 1, f"train_live_{run.id}")
