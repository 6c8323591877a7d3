"""Class mode, the student's side (issue 29): with a link `/?room=CODE`, every page shows, above it, which class the
student is in, the room's current question (one answer per browser session; choosing another replaces it), and a
form to send a sentence with a query word and the word it refers to, both picked among the tokens of the room's model
(the lecturer's, issue 34: a Korean sentence on multilingual-e5-small is Hangul subwords; on a model that cannot read
it, the notice and the one-click switch of ui/readable.py, which sends it on multilingual-e5-small instead). Drawn by
the shell (ui/shell.py) before the page; nothing else of the page changes. When the class ends, or the lecturer moves
it to another model, the live question (redrawn every REFRESH_S) reruns the whole page: an ended class leaves only
its message."""

from __future__ import annotations

import streamlit as st

from classroom.store import ClassError
from i18n import t

from . import class_room as cr
from . import readable, runs
from .quiz import MAX_PILLS
from .view import K_ROOM, View, md_escape

REFRESH_S = 2.0  # how often a student's question area looks for a new question or the reveal
MAX_SENT = 20  # sentences one session may send to a room
K_TEXT, K_QUERY, K_REF = "class_send_text", "class_send_query", "class_send_ref"
SENT = "_hl_class_sent"  # sentences this session sent
SENT_OK = "_hl_class_sent_ok"  # the last send's message, shown once
# the sentence box: the character counter ("22/200", and "Press Enter to apply" while typing) that Streamlit draws over
# the box's right end goes under the box, in room kept for it whether or not it shows (issue 34: on a 390 px phone the
# text ran under it; a counter that took room only while typing moved the pills under a finger). Constant.
_CSS = """<style>
.st-key-class_send_text [data-testid="stTextInput"] {padding-bottom: 1.5rem}
</style>"""
SWITCHED = "_hl_class_send_e5"  # the room model on which this student switched the form to multilingual-e5-small


def top(view: View) -> None:
    """The class banner, the live question and the sentence form, for a session that came with a room link."""
    raw = st.session_state.get(K_ROOM)
    if not raw:
        return
    lg = view.lang
    code = cr.student_room()
    if code is None:
        st.warning(t("class.gone", lg), icon=":material/meeting_room:")
        return
    base = cr.room_model(cr.live_room(code)) or view.model_name  # the class's model (a room without one: the sidebar's)
    st.html(_CSS)
    with st.container(border=True, key="class_banner"):
        st.markdown(t("class.banner", lg, code=f"`{code}`"))
        live_question(code, lg, view.text, view.device)
        with st.expander(t("class.send", lg), icon=":material/edit_note:"):
            sentence_form(code, base, view.device, lg)


@st.fragment(run_every=REFRESH_S)
def live_question(code: str, lg: str, text: str, device: str) -> None:
    """The room's current question (redrawn alone every REFRESH_S): on the lecturer's sentence, or, for the questions
    that can be asked on any sentence, on the student's own (the sidebar's). A class that ended, or moved to another
    model, meanwhile reruns the whole page."""
    store = cr.store()
    room = store.room(code)
    if room is None or cr.moved(room):
        st.rerun(scope="app")
    q = store.current_question(code)
    if q is None:
        st.caption(t("class.wait", lg))
        return
    p = q.payload
    st.markdown(cr.question_text(q, lg))
    if q.kind in cr.OWN_KINDS and text.strip() and text != p["text"] and st.toggle(
            t("class.own", lg), key=f"class_own_{q.id}", disabled=bool(q.revealed), help=t("class.own_help", lg)):
        own_answer(code, q, lg, text, device)
        return
    st.caption(t("class.on_sentence", lg, text=md_escape(p["text"])))
    key = f"class_answer_{q.id}"
    choose(q, len(p["options"]), lambda i: cr.option_label(q, i, lg), key, lg, save, (code, q.id, key))
    # a browser that reconnected to another app process reruns with its choice but calls no on_change: store the
    # choice whenever the store's record of this student differs from it (the same student: K_SID)
    mine = st.session_state.get(key)
    if mine is not None and not q.revealed and store.my_answer(code, q.id, cr.session_id()) != str(int(mine)):
        save(code, q.id, key)
    verdict(q, st.session_state.get(key), int(q.revealed["answer"]) if q.revealed else None,
            lambda i: cr.option_label(q, i, lg), lg)


def choose(q, n: int, label, key: str, lg: str, on_change, args: tuple) -> None:
    """The answer widget: pills, or a selectbox for many options; disabled once revealed."""
    fmt = dict(format_func=lambda i: md_escape(label(i)), key=key, on_change=on_change, args=args,
               disabled=bool(q.revealed))
    if n <= MAX_PILLS:
        st.pills(t("class.your_answer", lg), range(n), **fmt)
    else:
        st.selectbox(t("class.your_answer", lg), range(n), index=None, placeholder=t("quiz.pick", lg), **fmt)


def verdict(q, mine: int | None, answer: int | None, label, lg: str) -> None:
    """After the reveal, right or wrong; before it, that the answer is in."""
    if q.revealed and answer is not None:
        shown = md_escape(label(answer))
        if mine == answer:
            st.success(t("quiz.right", lg, answer=shown), icon=":material/check_circle:")
        else:
            st.warning(t("quiz.wrong", lg, answer=shown), icon=":material/cancel:")
    elif mine is not None:
        st.caption(t("class.answered_you", lg))


def own_answer(code: str, q, lg: str, text: str, device: str) -> None:
    """The question on the student's own sentence: for "where will it attend", the query token first; the answer is
    stored as right or wrong only (it has no place in the spread of the lecturer's options)."""
    p = q.payload
    st.caption(t("class.on_own", lg, text=md_escape(text)))
    query = None
    if q.kind == "attend":
        rows = runs.get_trace(p["model"], device, text).axis_tokens(p["block"])[0]
        query = st.pills(t("class.own_query", lg), range(len(rows)), key=f"class_ownq_{q.id}",
                         format_func=lambda i: md_escape(f"{i}: {rows[i]}"), disabled=bool(q.revealed))
    asked = cr.own_question(q, text, device, query)
    if asked is None:
        return
    options, answer = asked
    key = f"class_owna_{q.id}_{query}"
    label = (lambda i: t("tour.head_n", lg, i=i)) if q.kind == "prev_head" else (lambda i: options[i])
    choose(q, len(options), label, key, lg, save_own, (code, q.id, key, answer))
    verdict(q, st.session_state.get(key), answer, label, lg)


def save_own(code: str, qid: int, key: str, answer: int) -> None:
    """Store whether this session's answer on its own sentence is the model's (the last one counts)."""
    value = st.session_state.get(key)
    q = cr.store().question(code, qid)
    if value is None or q is None or q.revealed:
        return
    try:
        cr.store().answer(code, qid, cr.session_id(), cr.OWN + str(int(int(value) == answer)))
    except ClassError:
        pass


def save(code: str, qid: int, key: str) -> None:
    """Store this session's answer (the last one counts; a cleared choice keeps the previous answer)."""
    value = st.session_state.get(key)
    q = cr.store().question(code, qid)
    if value is None or q is None or q.revealed:
        return
    try:
        cr.store().answer(code, qid, cr.session_id(), str(int(value)))
    except ClassError:  # revealed or ended meanwhile: the next refresh shows it
        pass


def form_model(base: str) -> str:
    """The model the sentence form reads with: the class's, or multilingual-e5-small once this student clicked the
    switch on that class model (a switch made for another model is forgotten)."""
    return readable.MULTILINGUAL if st.session_state.get(SWITCHED) == base else base


def switch_form(base: str) -> None:
    st.session_state[SWITCHED] = base
    st.session_state[K_QUERY] = st.session_state[K_REF] = None  # other tokens: the picks start over


@st.fragment
def sentence_form(code: str, base: str, device: str, lg: str) -> None:
    """The sentence, then its query word and referent among the tokens of `base` (the class's model), or of
    multilingual-e5-small after the switch that the notice offers when `base` cannot read the sentence."""
    ss = st.session_state
    if ss.get(SENT_OK):
        st.success(ss.pop(SENT_OK), icon=":material/send:")
    st.caption(t("class.send_help", lg, n=cr.MAX_SENTENCE))
    text = st.text_input(t("class.send.text", lg), key=K_TEXT, max_chars=cr.MAX_SENTENCE,
                         placeholder=t("class.send.placeholder", lg))
    if not text:
        return
    problem = cr.sentence_problem(text)
    if problem:
        st.error(t(problem, lg, n=cr.MAX_SENTENCE), icon=":material/block:")
        return
    model = form_model(base)
    tr = runs.get_trace(model, device, text)
    readable.unreadable_notice(tr, model, lg, key="class_send_switch", on_click=switch_form, args=(base,))
    block = "decoder_self" if tr.is_decoder_only else "encoder"
    tokens = list(tr.axis_tokens(block)[1])
    special = tr.axis_special(block)[1]
    choices = [i for i in range(len(tokens)) if not special[i]]
    st.caption(t("class.send.model", lg, model=model))
    # "8: the" as in the question's options: Streamlit's pills tell options apart by their labels, and a sentence's
    # second "the" (or "는") labelled like its first made a click on one choose the other
    fmt = dict(format_func=lambda i: md_escape(f"{i}: {tokens[i]}"), width="stretch")
    q = st.pills(t("class.send.query", lg), choices, key=K_QUERY, **fmt)
    r = st.pills(t("class.send.referent", lg), choices, key=K_REF, **fmt)
    full = ss.get(SENT, 0) >= MAX_SENT
    if full:
        st.caption(t("class.send.full", lg, n=MAX_SENT))
    ready = q is not None and r is not None and q != r and not full
    st.button(t("class.send.button", lg), key="class_send_go", type="primary", disabled=not ready, on_click=send,
              args=(code, model, text, tokens, q, r, lg))


def send(code: str, model: str, text: str, tokens: list[str], query: int, referent: int, lg: str) -> None:
    ss = st.session_state
    if cr.sentence_problem(text) or cr.store().room(code) is None or ss.get(SENT, 0) >= MAX_SENT:
        return
    try:
        cr.store().submit_sentence(code, cr.session_id(), model, text, tokens, int(query), int(referent))
    except (ClassError, ValueError):  # the store's limits (too many from one student, a room just ended)
        ss[SENT] = MAX_SENT
        return
    ss[SENT] = ss.get(SENT, 0) + 1
    ss[K_TEXT], ss[K_QUERY], ss[K_REF] = "", None, None  # set, not deleted: the browser's widgets follow
    ss[SENT_OK] = t("class.send.done", lg)
