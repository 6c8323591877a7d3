"""Streamlit pieces of the Encoder-decoder decoding page: the controls, the run's summary (source, output, the
"Correct" banner), the step slider and the four figures with their exports.

The page's own choices are in its link (LINK_KEYS: the model on this page, task, teacher forcing, the typed target,
decoder layer and head, the step, the whole vocabulary), so a share link and a deck slide reopen them: a link's
value is checked before its widget is drawn (a wrong one keeps the page's choice, with a notice), and the widgets'
values are written back to the URL on every run (ui/state.py page_param, write_page_params)."""

from __future__ import annotations

import streamlit as st

from analysis.decoding import DecodingRun
from i18n import t
from model import get_spec, models_with
from model.data import TASKS
from viz import alignment as va
from viz import seq2seq as vs
from viz.theme import column_width

from . import readable
from .state import page_param, write_page_params
from .view import (
    TRANSLATORS,
    View,
    is_translator,  # noqa: F401 - the page asks s2s.is_translator (it lives in view.py: heads.py asks too)
    md_escape,
    model_label,
    show_value,
)
from .widgets import chart

MODEL = models_with(tasks=True)[0]  # seq2seq-tiny: trained here on copy / reverse / swap
# the link's name of each widget of this page (ui/deckfile.py S2S_QUERY): s2s_* in the URL, as no other page uses
LINK_KEYS = {"s2s_model": "s2s_model", "s2s_task": "task", "s2s_tf": "teacher_forcing", "s2s_target": "s2s_target",
             "s2s_layer": "s2s_layer", "s2s_head": "s2s_head", "s2s_step": "step", "s2s_vocab": "s2s_full_vocab"}
LABELS = {"s2s_model": "s2s.model", "s2s_task": "s2s.task", "s2s_tf": "s2s.teacher", "s2s_target": "s2s.target",
          "s2s_layer": "s2s.decoder_layer", "s2s_head": "s2s.head", "s2s_step": "s2s.step", "s2s_vocab": "s2s.full_vocab"}
SWITCH = {"1": True, "0": False}
MAX_TARGET = 2_000  # characters of a typed target


def from_link(name: str, choices, lang: str) -> None:
    """The link's value of one of this page's keys, when it has one: set as its widget's value if it is among
    `choices` (a mapping from the link's text to the value, or the texts allowed), else a notice."""
    raw = page_param(name)
    if raw is None:
        return
    key = LINK_KEYS[name]
    value = choices.get(raw) if isinstance(choices, dict) else raw if raw in choices else None
    if value is None:
        current = st.session_state.get(key)
        st.warning(t("s2s.url.bad", lang, what=t(LABELS[name], lang), value=show_value(raw),
                     default=show_value("" if current is None else current)), icon=":material/warning:")
        return
    st.session_state[key] = value


def to_link(**values) -> None:
    """This page's widgets' values into the URL (by their link names; None or False: not in it)."""
    write_page_params({name: None if v is None or v is False else "1" if v is True else str(v)
                       for name, v in values.items()})


def page_models(view: View) -> list[str]:
    """What this page can run: seq2seq-tiny, the translators, and the sidebar's local encoder-decoder folder."""
    spec = get_spec(view.model_name)
    local = [view.model_name] if spec.kind == "encoder-decoder" and spec.path is not None else []
    return [MODEL, *TRANSLATORS, *local]


def page_model(view: View) -> str:
    """The model this page runs, picked on the page: seq2seq-tiny (trained here on copy / reverse / swap), a
    translator, or the sidebar's local encoder-decoder folder; by default the sidebar's model when it is one of
    them."""
    options = page_models(view)
    ss = st.session_state
    if ss.get("s2s_model") not in options:
        ss["s2s_model"] = view.model_name if view.model_name in options else MODEL
    from_link("s2s_model", options, view.lang)
    name = st.selectbox(t("s2s.model", view.lang), options, key="s2s_model",
                        format_func=lambda n: model_label(n, view.lang), help=t("s2s.model_help", view.lang))
    to_link(s2s_model=name)
    return name



def controls(model, lang: str = "en") -> tuple[str | None, bool, int, int | str, str | None, bool]:
    """Task (None for a model without tasks), teacher forcing, decoder layer and head ("mean" = mean of heads), the
    typed target of a model without tasks when teacher forcing, and (a translator with a shortlist) whether to decode
    over the whole vocabulary; the values never depend on `lang`."""
    lg = lang
    tasks, shortlist = bool(model.abilities.tasks), model.abilities.shortlist
    n_layers, n_heads = model.config.n_decoder_layers, model.n_heads("cross")
    ss = st.session_state
    if ss.get("s2s_layer") not in range(n_layers):  # the last layer by default (and after a change of model)
        ss["s2s_layer"] = n_layers - 1
    if ss.get("s2s_head") not in ["mean", *range(n_heads)]:
        ss["s2s_head"] = "mean"
    if tasks:
        from_link("s2s_task", TASKS, lg)
    if shortlist:
        from_link("s2s_vocab", SWITCH, lg)
    from_link("s2s_tf", SWITCH, lg)
    if not tasks:
        from_link("s2s_target", _Any(), lg)
    from_link("s2s_layer", {str(i): i for i in range(n_layers)}, lg)
    from_link("s2s_head", {"mean": "mean", **{str(i): i for i in range(n_heads)}}, lg)
    c1, c2, c3, c4 = st.columns([2, 2, 1, 1])
    task = c1.radio(t("s2s.task", lg), TASKS, horizontal=True, key="task", format_func=lambda x: t(f"s2s.task.{x}", lg),
                    help="\n\n".join(t(f"s2s.task_help.{x}", lg) for x in TASKS)) if tasks else None
    full_vocab = c1.toggle(t("s2s.full_vocab", lg), key="s2s_full_vocab", help=t("s2s.full_vocab_help", lg)) \
        if shortlist else False
    teacher = c2.toggle(t("s2s.teacher", lg), key="teacher_forcing",
                        help=t("s2s.teacher_help" if tasks else "s2s.teacher_help_folder", lg))
    target = None
    if teacher and not tasks:  # no task answer to force: the user types the target (python -m model --target)
        target = st.text_input(t("s2s.target_translator" if shortlist else "s2s.target", lg), key="s2s_target",
                               max_chars=MAX_TARGET, help=t("s2s.target_help", lg))
    layer = c3.selectbox(t("s2s.decoder_layer", lg), range(n_layers), key="s2s_layer",
                         format_func=lambda i: t("s2s.layer_n", lg, i=i))
    head = c4.selectbox(t("s2s.head", lg), ["mean", *range(n_heads)], key="s2s_head",
                        format_func=lambda h: t("s2s.head_mean", lg) if h == "mean" else t("s2s.head_n", lg, i=h))
    to_link(s2s_task=task, s2s_tf=teacher, s2s_target=target or None, s2s_layer=layer, s2s_head=head,
            s2s_vocab=full_vocab)
    return task, teacher, layer, head, target, full_vocab and not teacher


class _Any:
    """Any text is a value (the typed target): `choices` for from_link."""

    def __contains__(self, raw) -> bool:
        return isinstance(raw, str) and len(raw) <= MAX_TARGET


def summary(run: DecodingRun, task: str | None, teacher: bool, unknown_words: list[str], lang: str = "en",
            other: DecodingRun | None = None) -> None:
    """other: a translator's run within its shortlist, when `run` decoded over the whole vocabulary."""
    lg = lang
    if run.truncated:
        sp = run.n_source_specials
        st.warning(t("s2s.truncated", lg, n=run.n_tokens_untruncated - sp, model=run.model,
                     k=len(run.source_tokens) - sp), icon=":material/warning:")
    if unknown_words:
        st.info(t("s2s.unknown", lg, words=", ".join(md_escape(w) for w in unknown_words)))
    st.markdown(t("s2s.source" if task is not None else "s2s.source_folder", lg))
    st.code(" ".join(run.source_tokens), language=None, wrap_lines=True)
    st.markdown(t("s2s.teacher_target" if teacher else "s2s.greedy_output", lg))
    st.code(" ".join(run.output_tokens), language=None, wrap_lines=True)
    if run.output_text and task is None:  # a translator: the translation itself, detokenized
        st.markdown(t("s2s.translation_forced" if teacher else "s2s.translation", lg))
        st.markdown(f"#### {md_escape(run.output_text)}")
        if other is not None and other.output_text != run.output_text:  # the whole vocabulary said something else
            st.info(t("s2s.shortlist_differs", lg, text=md_escape(other.output_text)), icon=":material/filter_alt:")
        removed = run.shortlist_removed if not teacher else []
        if removed:
            st.info(t("s2s.shortlist_removed", lg, steps=", ".join(map(str, removed)),
                      tokens=", ".join(f"`{md_escape(run.steps[i - 1].top_tokens[0])}`" for i in removed)),
                    icon=":material/filter_alt:")
    if teacher or task is None:  # no task: no exact answer to compare with
        return
    if run.correct:
        st.success(t("s2s.correct", lg, task=t(f"s2s.task.{task}", lg)), icon=":material/check_circle:")
    else:
        st.warning(t("s2s.expected", lg), icon=":material/cancel:")
        st.code(" ".join(run.expected), language=None, wrap_lines=True)


def step_slider(run: DecodingRun, lang: str = "en") -> int:
    n_steps, ss = len(run.steps), st.session_state
    from_link("s2s_step", {str(i): i for i in range(1, n_steps + 1)}, lang)
    if not isinstance(ss.get("step"), int) or not 1 <= ss["step"] <= n_steps:
        ss["step"] = min(max(ss.get("step", 1) if isinstance(ss.get("step"), int) else 1, 1), n_steps)
    if n_steps == 1:
        st.caption(t("s2s.one_step", lang))
        step = 1
    else:
        step = st.slider(t("s2s.step", lang), 1, n_steps, key="step", help=t("s2s.step_help", lang))
    to_link(s2s_step=step)
    return step


@st.fragment
def stepper(view: View, run: DecodingRun, layer: int, head: int | str, teacher: bool) -> None:
    """The step slider and the step's four figures, as one fragment: moving the slider reruns only these (not the
    sidebar, the summary or the alignment view, which do not depend on the step), and only these are sent and
    drawn again (0.7-2.4 s a step on a loaded machine, issue 34)."""
    step = step_slider(run, view.lang)
    figures(view, run, step, layer, head, teacher)


def figures(view: View, run: DecodingRun, step: int, layer: int, head: int | str, teacher: bool) -> None:
    s, lg = run.steps[step - 1], view.lang
    st.markdown(t("s2s.step_of", lg, i=step, n=len(run.steps), k=len(s.inputs)))
    st.code(" ".join(s.inputs) + f"   →   {s.chosen}", language=None, wrap_lines=True)
    name = f"{run.model}-{run.task}" if run.task else run.model
    left, right = st.columns(2)
    with left:  # each figure exports what it draws, under the model, task and head (viz/seq2seq.py describes it)
        if run.has_self_attention:
            fig = vs.self_attention_figure(run, step, layer, head, full=teacher, lecture=view.lecture, lang=lg,
                                           width=column_width(2))[0]
            chart(fig, "s2s_self", subtitle=view.text, filename=f"{name}-decoder-self-step{step}")
        else:  # an SSRU decoder: no self-attention to draw, its forget gate instead
            ssru_figure(view, run, step, layer, name)
    with right:
        fig = vs.cross_figure(run, step, layer, head, full=teacher, lecture=view.lecture, lang=lg,
                              width=column_width(2))[0]
        chart(fig, "s2s_cross", subtitle=view.text, filename=f"{name}-cross-step{step}")
    left, right = st.columns(2)
    left.plotly_chart(vs.cross_row_figure(run, step, layer, head, lecture=view.lecture, lang=lg,
                                          width=column_width(2)), key="s2s_row")
    with right:  # every step's top 5 (vs.topk_table)
        chart(vs.topk_figure(run, step, lecture=view.lecture, lang=lg, width=column_width(2)), "s2s_topk",
              subtitle=view.text, filename=f"{name}-top5")
    st.caption(t("s2s.figures_caption" if run.has_self_attention else "s2s.figures_caption_ssru", lg))


def ssru_figure(view: View, run: DecodingRun, step: int, layer: int, name: str) -> None:
    """The forget gate of the chosen decoder layer over the inputs so far (an SSRU stands where self-attention
    would), with the note that says so."""
    lg = view.lang
    st.info(t("s2s.no_self_attention", lg), icon=":material/info:")
    s = run.steps[step - 1]
    gates = run.forget_gates[layer, :step]  # (t, d): the inputs so far
    fig = va.forget_gate_figure(s.inputs, gates, lang=lg, lecture=view.lecture, width=column_width(2),
                                title=t("s2s.fig.forget", lg, layer=layer, step=step))
    chart(fig, "s2s_forget", subtitle=view.text, filename=f"{name}-forget-gate-L{layer}-step{step}")
    st.caption(va.forget_gate_caption(lg))


def alignment(view: View, run: DecodingRun, layer: int, head: int | str) -> None:
    """The alignment view: the cross-attention of the chosen layer and head (or the mean of its heads) between the
    source words and the words the decoder produced, as a matrix or as lines, subwords merged."""
    lg = view.lang
    st.subheader(t("s2s.alignment", lg))
    weights = vs.pick(run.cross_matrix(len(run.steps)), layer, head)  # (T, m)
    out = run.output_tokens
    special = [tok == "</s>" for tok in out]
    where = vs.head_name(layer, head, lg)
    c1, c2, c3 = st.columns([2, 1, 1])
    kind = c1.radio(t("s2s.alignment_kind", lg), ("lines", "matrix"), horizontal=True, key="s2s_align_kind",
                    format_func=lambda k: t(f"s2s.alignment_kind.{k}", lg))
    merge = c2.toggle(t("s2s.alignment_merge", lg), value=True, key="s2s_align_merge")
    threshold = c3.slider(t("s2s.alignment_threshold", lg), 0.05, 0.9, 0.2, 0.05, key="s2s_align_threshold") \
        if kind == "lines" else 0.2
    kw = dict(lang=lg, merge=merge, drop_special=True, source_special=[tok == "</s>" for tok in run.source_tokens],
              target_special=special, lecture=view.lecture, title=t("s2s.fig.alignment", lg, where=where))
    if kind == "lines":
        fig = va.alignment_lines_figure(run.source_tokens, out, weights, threshold=threshold, **kw)
        caption = va.alignment_lines_caption(lg, threshold)
    else:
        fig = va.alignment_matrix_figure(run.source_tokens, out, weights, **kw)
        caption = va.alignment_matrix_caption(lg)
    chart(fig, f"s2s_align_{kind}", subtitle=view.text, filename=f"{run.model}-alignment")  # the weights as given
    st.caption(caption)


def translator_notice(view: View, model, unknown: list[str], lang: str) -> bool:
    """A translator reads English or Portuguese only: for words its vocabulary lacks (Korean, say) the notice says
    so, names the models that read them (the registry's) and offers a switch of this page's model to one of them.
    `unknown`: its unknown words in the text. True when the text is mostly unreadable: then the page shows no
    translation of it, nor its decoding steps, which would be noise."""
    return readable.translator_notice(model, unknown, lang, text=view.text, among=page_models(view),
                                      picker="s2s_model", key="s2s_switch", stop=True)
