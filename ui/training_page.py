"""The Training page's pieces (issue 36; the page is app_pages/training.py): the task picker and six lazy tabs, the
schedule, label smoothing, teacher forcing, dropout, the recorded run (a snapshot slider, redrawn alone in a
fragment) and the live run (ui/training_live.py). Numbers from analysis/training.py (through the shared store),
figures from viz/training.py, text from i18n "train.*".

The link carries the task (`?task=reverse`) and the recorded run's snapshot (`?snap=200`). They are read whenever the
link differs from what this page last wrote there (a session's first run, a lesson deck's slide) and checked: an
unknown task or a step at which the run has no snapshot gets one notice, in the interface language, and the default.
"""

from __future__ import annotations

import streamlit as st

from analysis import training as an
from i18n import t
from viz import training as vt
from viz.theme import column_width

from .store import memo
from .view import View, md_escape, show_value
from .widgets import chart, localised_tabs, table

TAB_KEYS = ["train.tab.schedule", "train.tab.smoothing", "train.tab.teacher", "train.tab.dropout", "train.tab.run",
            "train.tab.live"]
RUN_TAB = 4
K_TAB, K_TASK, K_SNAP, K_SENTENCE, K_SEED = "train_tab", "train_task", "train_snap", "train_sentence", "train_seed"
URL_TASK, URL_SNAP = "task", "snap"  # the link's keys (ui/deckfile.py PAGE_QUERY)
SEEN, NOTICE, PENDING = "_train_url_seen", "_train_notice", "_train_pending_snap"
DEFAULT_TASK = "reverse"
D_MODELS = (64, 128, 256, 512, 1024)


# ---- cached results (the shared store; a model per task in st.cache_resource) ---------------------------------
@st.cache_resource(max_entries=len(an.TASKS), show_spinner=False)
def recorded_model(task: str):
    """The recorded run's final weights; shared by every session, never switched out of eval mode."""
    return an.recorded_model(task)


@memo(spinner="train.loading")
def recorded_run(task: str) -> an.RunView:
    return an.recorded_run(task)


@memo
def schedule_curve(d_model: int, warmup: int, last: int) -> an.Schedule:
    return an.schedule_curve(d_model, warmup, last)


@memo
def smoothing(task: str, position: int, eps: float) -> an.Smoothing:
    return an.smoothing(recorded_model(task), task, position, eps)


@memo
def teacher_forcing(task: str, sentence: str) -> an.TeacherForcing:
    return an.teacher_forcing(recorded_model(task), task, sentence, recorded_run(task).seed)


@memo
def dropout(task: str, sentence: str, seed: int, block: str, layer: int, head: int) -> an.Dropout:
    return an.dropout_view(recorded_model(task), task, sentence, seed, block, layer, head)


# ---- the link ------------------------------------------------------------------------------------------------------
def read_link(lang: str) -> None:
    """The task and the snapshot from the link: when it differs from what this page wrote last (a new link), or when
    the page's own state is gone (a lesson deck's slide brings the page back with its link; Streamlit forgets a
    widget's state once its page is left). A bad value gets one notice, only for a new link."""
    ss = st.session_state
    raw = (st.query_params.get(URL_TASK), st.query_params.get(URL_SNAP))
    fresh = ss.get(SEEN) != raw
    ss[SEEN] = raw
    task, snap = raw
    if task is not None and (fresh or K_TASK not in ss):
        if task in an.TASKS:
            ss[K_TASK] = task
        elif fresh:
            ss[NOTICE] = t("train.bad_task", lang, value=show_value(task), tasks=", ".join(an.TASKS))
    if snap is not None and (fresh or K_SNAP not in ss):
        ss[PENDING] = snap
        if fresh:
            ss[K_TAB] = t(TAB_KEYS[RUN_TAB], lang)  # a link to a snapshot opens the recorded run


def write_link(task: str, snap: int | None) -> None:
    ss = st.session_state
    want = {URL_TASK: task, URL_SNAP: None if snap is None else str(snap)}
    for k, v in want.items():
        if v is None:
            if k in st.query_params:
                del st.query_params[k]
        elif st.query_params.get(k) != v:
            st.query_params[k] = v
    ss[SEEN] = (want[URL_TASK], want[URL_SNAP])


def task_picker(lang: str) -> str:
    ss = st.session_state
    if ss.get(K_TASK) not in an.TASKS:
        ss[K_TASK] = DEFAULT_TASK
    return st.segmented_control(t("train.task", lang), an.TASKS, key=K_TASK, required=True,
                                format_func=lambda x: t(f"tour.task.{x}", lang), on_change=_clear_notice)


def _clear_notice() -> None:
    st.session_state.pop(NOTICE, None)


def notice() -> None:
    if st.session_state.get(NOTICE):
        st.warning(st.session_state[NOTICE], icon=":material/warning:")


def tabs(lang: str):
    return localised_tabs(TAB_KEYS, K_TAB, lang, url=True, on_change="rerun")  # the open tab in the link, by its id


# ---- 1. the schedule ----------------------------------------------------------------------------------------------
def schedule_section(view: View, task: str) -> None:
    lg = view.lang
    st.markdown(t("train.sched.intro", lg))
    st.latex(r"\eta(s) = d_{model}^{-0.5} \cdot \min\left(s^{-0.5},\; s \cdot w^{-1.5}\right)")
    st.caption(t("train.sched.symbols", lg))
    c1, c2 = st.columns(2)
    d_model = c1.select_slider(t("train.sched.d_model", lg), D_MODELS, value=an.PAPER_D_MODEL, key="train_d_model")
    warmup = c2.slider(t("train.sched.warmup", lg), 100, 16000, an.PAPER_WARMUP, step=100, key="train_warmup")
    last = max(20_000, 3 * warmup)
    paper = schedule_curve(an.PAPER_D_MODEL, an.PAPER_WARMUP, last)
    chosen = schedule_curve(int(d_model), int(warmup), last)
    st.plotly_chart(vt.schedule_figure(paper, chosen, lang=lg, lecture=view.lecture), key="train_sched_fig")
    st.caption(t("train.sched.peak", lg, d=chosen.d_model, w=chosen.warmup, peak=chosen.peak_rate,
                 paper=paper.peak_rate))
    run = recorded_run(task)
    lab_curve = schedule_curve(an.LAB_D_MODEL, an.LAB_WARMUP, run.total_steps)
    st.plotly_chart(vt.lab_schedule_figure(lab_curve, run, lang=lg, lecture=view.lecture), key="train_lab_sched")
    st.info(t("train.sched.adam", lg), icon=":material/tune:")


# ---- 2. label smoothing ---------------------------------------------------------------------------------------------
def smoothing_section(view: View, task: str) -> None:
    lg = view.lang
    st.markdown(t("train.smooth.intro", lg))
    st.latex(r"q_k = (1-\varepsilon)\,[k = y] + \frac{\varepsilon}{V},\qquad "
             r"\mathcal{L} = -\sum_k q_k \log p_k = (1-\varepsilon)(-\log p_y) + \varepsilon \cdot "
             r"\frac{1}{V}\sum_k (-\log p_k)")
    run = recorded_run(task)
    c1, c2 = st.columns(2)
    positions = list(range(len(run.target) + 1))
    labels = [*run.target, "<eos>"]
    pos = c1.selectbox(t("train.smooth.position", lg), positions, key="train_smooth_pos",
                       format_func=lambda i: t("train.smooth.pos_opt", lg, i=i, inp=run.decoder_input[i],
                                               label=labels[i]))
    eps = c2.slider(t("train.smooth.eps", lg), 0.0, 0.5, 0.1, step=0.05, key="train_eps")
    sm = smoothing(task, int(pos), round(float(eps), 2))
    st.caption(t("train.smooth.convention", lg, eps=sm.eps, v=sm.vocab_size, each=sm.eps / sm.vocab_size,
                 right=1 - sm.eps + sm.eps / sm.vocab_size))
    st.plotly_chart(vt.smoothing_figure(sm, lang=lg, lecture=view.lecture), key="train_smooth_fig")
    st.markdown(f"**{t('train.smooth.table', lg)}**")
    table(loss_rows(sm.rows, lg, sm.eps), view.lecture, key="train_smooth_table")
    st.markdown(t("train.smooth.why", lg, eps=sm.eps))
    st.markdown(f"**{t('train.smooth.two_title', lg)}**")
    st.markdown(t("train.smooth.two_intro", lg, a=an.TWO_ANSWERS[0], b=an.TWO_ANSWERS[1]))
    rows = loss_rows(sm.two, lg, sm.eps, other=sm.two_other)
    table(rows, view.lecture, key="train_two_table")
    st.markdown(t("train.smooth.two_why", lg, a=an.TWO_ANSWERS[0], b=an.TWO_ANSWERS[1], eps=sm.eps,
                  gap=sm.best_gap, q=1 - sm.eps + sm.eps / sm.vocab_size, each=sm.eps / sm.vocab_size))


def loss_rows(rows, lang: str, eps: float, other=None) -> list[dict]:
    a, b = an.TWO_ANSWERS
    out = []
    for i, r in enumerate(rows):
        row = {t("train.col.prediction", lang): t(f"train.pred.{r.name}", lang, a=a, b=b),
               t("train.col.p_right", lang): round(r.p_right, 4),
               t("train.col.onehot", lang): round(r.onehot, 4),
               t("train.col.smoothed", lang, eps=eps): round(r.smoothed, 4),
               t("train.col.torch", lang): round(r.torch, 4)}
        if other is not None:
            row[t("train.col.other", lang, b=b, eps=eps)] = round(other[i], 4)
        out.append(row)
    return out


# ---- the lab's sentence (teacher forcing, dropout) ------------------------------------------------------------------
def sentence_input(lang: str) -> str | None:
    """The sentence box; None (and one message) when a word is outside the lab's vocabulary or the length is not
    1..MAX_LEN words."""
    ss = st.session_state
    ss.setdefault(K_SENTENCE, an.FIXED_SENTENCE)
    text = st.text_input(t("train.sentence", lang), key=K_SENTENCE, max_chars=200,
                         help=t("train.sentence_help", lang, n=an.MAX_LEN))
    try:
        an.lab_words(text)
    except an.UnknownWords as exc:
        if exc.words:
            st.warning(t("train.unknown_words", lang, words=", ".join(md_escape(w) for w in exc.words[:10]),
                         n=len(exc.words)), icon=":material/spellcheck:")
        else:
            st.warning(t("train.bad_length", lang, n=exc.n_words, most=an.MAX_LEN), icon=":material/straighten:")
        with st.expander(t("train.vocab", lang, n=len(an.WORDS))):
            st.code(" ".join(an.WORDS), language=None, wrap_lines=True)
        return None
    return text


# ---- 3. teacher forcing ---------------------------------------------------------------------------------------------
def teacher_section(view: View, task: str) -> None:
    lg = view.lang
    st.markdown(t("train.tf.intro", lg))
    sentence = sentence_input(lg)
    if sentence is None:
        return
    tf = teacher_forcing(task, sentence)
    st.code(" ".join(tf.source), language=None, wrap_lines=True)
    table({t("train.col.position", lg): list(range(len(tf.decoder_input))),
           t("train.col.decoder_input", lg): list(tf.decoder_input),
           t("train.col.label", lg): list(tf.labels),
           t("train.col.p_label", lg, which=t("train.tf.untrained", lg)): [round(float(x), 4) for x in
                                                                              tf.untrained.label_prob],
           t("train.col.p_label", lg, which=t("train.tf.trained", lg)): [round(float(x), 4) for x in
                                                                            tf.trained.label_prob]},
          view.lecture, key="train_tf_table")
    cols = st.columns(1 if view.lecture else 2)
    width = column_width(len(cols))
    with cols[0]:
        chart(vt.mask_figure(tf, lang=lg, lecture=view.lecture, width=width), "train_tf_mask", subtitle=sentence,
              filename="training-look-ahead-mask")
    which = cols[-1].radio(t("train.tf.which", lg), ("untrained", "trained"), index=1, horizontal=True,
                           key="train_tf_which", format_func=lambda k: t(f"train.tf.{k}", lg))
    logits = tf.trained if which == "trained" else tf.untrained
    title = t("train.tf.logits_fig", lg, which=t(f"train.tf.{which}", lg), loss=logits.mean_loss)
    with cols[-1]:
        chart(vt.logits_figure(tf, logits, title, lang=lg, lecture=view.lecture, width=width), "train_tf_logits",
              subtitle=sentence, filename=f"training-logits-{which}")
    st.plotly_chart(vt.position_loss_figure(tf, lang=lg, lecture=view.lecture), key="train_tf_loss")
    st.markdown(t("train.tf.why", lg))


# ---- 4. dropout -----------------------------------------------------------------------------------------------------
def dropout_section(view: View, task: str) -> None:
    lg = view.lang
    st.markdown(t("train.drop.intro", lg, p=an.LAB_DROPOUT))
    sentence = sentence_input(lg)
    if sentence is None:
        return
    c1, c2, c3, c4 = st.columns(4)
    seed = c1.number_input(t("train.drop.seed", lg), 0, 9999, 0, key=K_SEED)
    block = c2.selectbox(t("train.drop.block", lg), an.BLOCKS, key="train_drop_block",
                         format_func=lambda b: t(f"block.{b}", lg))
    layer = c3.selectbox(t("train.layer", lg), range(an.N_LAYERS), key="train_drop_layer",
                         format_func=lambda i: t("sidebar.layer_n", lg, i=i))
    head = c4.selectbox(t("train.head", lg), range(an.N_HEADS), key="train_drop_head",
                        format_func=lambda i: t("sidebar.head_n", lg, i=i))
    d = dropout(task, sentence, int(seed), block, int(layer), int(head))
    cols = st.columns(1 if view.lecture else 2)
    figs = vt.dropout_figures(d, lang=lg, lecture=view.lecture, width=column_width(len(cols)))
    for i, (fig, name) in enumerate(zip(figs, ("train", "eval"))):  # each exports its weights (vt.dropout_figures)
        with cols[i % len(cols)]:
            chart(fig, f"train_drop_{name}", subtitle=sentence, filename=f"training-dropout-{name}")
    st.caption(t("train.drop.count", lg, n=int(d.dropped.sum()), total=int(d.allowed.sum()), p=d.p,
                 scale=1 / (1 - d.p)))
    table({t("train.col.position", lg): list(range(len(d.train_out))),
           t("train.col.train_out", lg): list(d.train_out), t("train.col.eval_out", lg): list(d.eval_out)},
          view.lecture, key="train_drop_out")
    st.markdown(t("train.drop.why", lg, p=d.p))


def model_shape() -> dict:
    """The small model's sizes for the page's introduction."""
    return dict(d=an.LAB_D_MODEL, h=an.N_HEADS, n=an.N_LAYERS, f=an.LAB_D_FF)
