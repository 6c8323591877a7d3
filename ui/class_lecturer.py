"""The Class page (issue 29), the lecturer's side: the key (once per browser session), a room with its QR code and
student link `/?room=CODE` (never the key), live questions from the quizzes with the projector view (students,
answers, the spread, then the reveal), the moderation of students' sentences, the class's head ranking, the export,
and "End class". Student text is drawn as plain text (st.text, escaped markdown), and on the projector only once
approved.

The room carries the model and language of the lecturer's sidebar when it opened (issue 34): students' sentences are
tokenized on it and the class's heads ranked on it. When the lecturer picks another model in the sidebar mid-class,
the room's model still counts: the page says so, questions on the sidebar's sentence wait, and one click moves the
class to the sidebar's model (students' phones follow; sentences sent before keep their model, and the Heads tab
ranks each model's sentences apart)."""

from __future__ import annotations

import collections
import csv
import html
import io
import json

import streamlit as st

from classroom.lecturer import KEY_ENV
from i18n import head_name, t
from viz import class_mode as vc

from . import class_room as cr
from . import runs, share
from .view import View, md_escape
from .widgets import localised_tabs, rename_columns, table

TAB_KEYS = ["class.tab.room", "class.tab.question", "class.tab.sentences", "class.tab.heads", "class.tab.export"]
K_TAB, K_KIND, K_STEP, K_KEY, K_RESUME = "class_tab", "class_kind", "class_step", "class_key", "class_resume"
K_MODEL, K_SENTENCE = "class_heads_model", "class_heads_sentence"
REFRESH_S = 1.0  # the projector's refresh
MODERATION_REFRESH_S = 3.0  # the sentences tab's
_CSS = """<style>
.class-link {font-size: clamp(1.4rem, 4vw, 2.6rem); font-weight: 600; overflow-wrap: anywhere}
.class-code {font-size: clamp(2rem, 6vw, 4rem); font-weight: 700; letter-spacing: 0.08em}
.st-key-class_qr img {image-rendering: pixelated; max-height: min(70vh, calc(100vh - 25rem)); max-width: 100%;
  object-fit: contain}
[data-testid="stMain"] [data-testid="stMetricValue"], [data-testid="stMain"] [data-testid="stMetricValue"] * {
  font-size: 3.6rem !important; line-height: 1.1 !important; font-weight: 700}
.st-key-class_moderation [data-testid="stText"] {font-size: 1rem; white-space: pre-wrap}
</style>"""  # constant CSS; no user text
# lecture mode: the moderation list as big as the page's text (ui/state.py LECTURE_CSS: 1.3rem)
_LECTURE_CSS = """<style>
[data-testid="stMain"] .st-key-class_moderation [data-testid="stText"] {font-size: 1.3rem !important}
</style>"""
# The room's QR code fits whole in the window, as the share dialog's does (issue 34: at 1600 x 1000 in lecture mode
# it ran off the bottom): its height is what the window leaves below its top, measured in the browser whenever the
# page changes or the window is resized (the CSS above is the fallback without JavaScript). Constant; no user text.
_FIT_QR = """<script>
(function () {
  if (window.__hlFitQr) { window.__hlFitQr(); return; }
  var MARGIN = 16, SMALLEST = 240, queued = false;
  function fit() {
    queued = false;
    var img = document.querySelector('.st-key-class_qr img');
    if (!img) { return; }
    var top = img.getBoundingClientRect().top, el = img.parentElement;
    for (; el && el !== document.body; el = el.parentElement) { top += el.scrollTop; }
    var room = Math.max(SMALLEST, Math.floor(window.innerHeight - top - MARGIN));
    if (img.style.maxHeight !== room + 'px') { img.style.maxHeight = room + 'px'; }
  }
  function soon() { if (!queued) { queued = true; window.requestAnimationFrame(fit); } }
  window.__hlFitQr = soon;
  window.addEventListener('resize', soon);
  new MutationObserver(soon).observe(document.body, {childList: true, subtree: true});
  soon();
})();
</script>"""


def render(view: View) -> None:
    lg = view.lang
    st.title(t("class.title", lg))
    if not cr.key_set():
        st.warning(t("class.no_key", lg, env=KEY_ENV), icon=":material/key_off:")
        return
    if not cr.is_lecturer():
        key_form(lg)
        return
    code = cr.lecturer_room()
    if code is None:
        open_room(view)
        return
    st.html(_CSS)
    if view.lecture:
        st.html(_LECTURE_CSS)
    head, end = st.columns([4, 1], vertical_alignment="center")
    head.markdown(t("class.room_line", lg, code=f"`{code}`"))
    room_model_line(view, code)
    with end.popover(t("class.end", lg), icon=":material/stop_circle:"):
        st.caption(t("class.end_help", lg))
        st.button(t("class.end_confirm", lg), key="class_end", type="primary", on_click=end_class, args=(code,))
    tabs = localised_tabs(TAB_KEYS, K_TAB, lg, on_change="rerun")
    for tab, draw in zip(tabs, (room_tab, question_tab, sentences_tab, heads_tab, export_tab)):
        if tab.open:
            with tab:
                draw(view, code)


# ---- the key and the room ------------------------------------------------------------------------------------------
def key_form(lg: str) -> None:
    st.markdown(t("class.intro", lg))
    with st.form("class_key_form", clear_on_submit=True):  # the key leaves the widget's state once checked
        given = st.text_input(t("class.key", lg), type="password", key=K_KEY, max_chars=512,
                              help=t("class.key_help", lg, env=KEY_ENV))
        sent = st.form_submit_button(t("class.key_submit", lg), type="primary")
    if sent:
        verdict = cr.try_key(given or "")
        if verdict == "ok":
            st.rerun()
        st.error(t(f"class.key_{verdict}", lg), icon=":material/lock:")


def open_room(view: View) -> None:
    """Open a room on the sidebar's model and language (or continue one)."""
    lg = view.lang
    st.markdown(t("class.open_help", lg))
    if st.button(t("class.open", lg), type="primary", key="class_open", icon=":material/meeting_room:"):
        st.session_state[cr.LECTURER_ROOM] = cr.store().open_room(view.model_name, lg).code
        st.rerun()
    with st.expander(t("class.resume", lg)):
        code = st.text_input(t("class.resume_code", lg), key=K_RESUME, max_chars=64)
        if st.button(t("class.resume_button", lg), key="class_resume_go") and code:
            code = cr.normalize(code)
            if code and cr.store().room(code) is not None:
                st.session_state[cr.LECTURER_ROOM] = code
                st.rerun()
            st.error(t("class.no_room", lg), icon=":material/search_off:")


def room_model_line(view: View, code: str) -> None:
    """The class's model; when the sidebar shows another, that the class stays on its own, and the move."""
    lg = view.lang
    model = cr.room_model(cr.live_room(code))
    if model == view.model_name:
        st.caption(t("class.on_model", lg, model=model))
        return
    st.info(t("class.model_differs", lg, room=model, sidebar=view.model_name) if model else
            t("class.model_unset", lg), icon=":material/swap_horiz:")
    st.button(t("class.move", lg, model=view.model_name), key="class_move", on_click=move_class,
              args=(code, view.model_name), icon=":material/swap_horiz:")


def move_class(code: str, model: str) -> None:
    cr.store().set_room_model(code, model)


def asks_sidebar_model(kind: str, view: View, code: str) -> bool:
    """Whether a question of `kind` would be asked on the sidebar's model while the class runs on another."""
    model = cr.room_model(cr.live_room(code))
    return kind != "next_token" and model is not None and model != view.model_name


def end_class(code: str) -> None:
    cr.store().end_room(code)
    st.session_state.pop(cr.LECTURER_ROOM, None)


def student_link(code: str) -> str:
    """The students' link: the public base and `/?room=CODE`, nothing else (never the key)."""
    return f"{share.current_base().url}/?{cr.K_ROOM}={code}"


def room_tab(view: View, code: str) -> None:
    lg = view.lang
    base = share.current_base()
    link = student_link(code)
    left, right = st.columns([3, 2], vertical_alignment="top")  # the code's top right under the tabs, where _FIT_QR
    # measures it (centred beside a taller column, it moved down as it shrank)
    with left.container(key="class_qr"):
        scale = max(share.SCALE, -(-share.QR_PX // share.make_qr(link).symbol_size(scale=1)[0]))
        st.image(share.qr_png(link, scale=scale), width=share.QR_PX, output_format="PNG")
        st.html(_FIT_QR, unsafe_allow_javascript=True)
    with right:
        st.markdown(t("class.join", lg))
        st.html(f'<div class="class-code">{html.escape(code)}</div>')
        host, _, path = link.split("://", 1)[-1].partition("/")
        st.html(f'<div class="class-link">{html.escape(host)}<wbr>/{html.escape(path)}</div>')
        st.code(link, language=None, wrap_lines=True)
        if not base.reachable:  # beside the code, not above it: the code starts right under the tabs
            st.warning(t("share.localhost", lg, url=f"`{base.url}`"))


# ---- questions and the projector -----------------------------------------------------------------------------------
def question_tab(view: View, code: str) -> None:
    lg = view.lang
    kind = st.segmented_control(t("class.kind", lg), cr.KINDS, key=K_KIND, default="attend", required=True,
                                format_func=lambda k: t(f"class.kind.{k}", lg))  # the page's width: lecture fonts fit
    step = st.number_input(t("class.step", lg), 1, 64, 3, key=K_STEP, width=200) if kind == "next_token" else 1
    st.caption(t(f"class.kind_help.{kind}", lg, where=head_name(view.layer, view.head, lg), layer=view.layer))
    if st.button(t("class.start", lg), type="primary", key="class_start", icon=":material/play_arrow:",
                 disabled=not view.text.strip() or asks_sidebar_model(kind, view, code)):
        cr.store().start_question(code, kind, cr.make_payload(kind, view, int(step)))
    projector(code, lg, view.lecture)


@st.fragment(run_every=REFRESH_S)
def projector(code: str, lg: str, lecture: bool) -> None:
    """The live view: students, answers, the spread; the reveal. Redrawn every second, alone."""
    store = cr.store()
    if store.room(code) is None:
        return
    q = store.current_question(code)
    students = store.students(code)
    if q is None:
        st.info(t("class.no_question", lg, n=students), icon=":material/hourglass_empty:")
        return
    tl = cr.tally(code, q)
    st.markdown(f"### {cr.question_text(q, lg)}")
    a, b = st.columns(2)
    a.metric(t("class.students", lg), students)
    b.metric(t("class.answered", lg), tl.answered)
    if tl.own:
        st.caption(t("class.own_count", lg, n=tl.own))
    labels = [cr.option_label(q, i, lg) for i in range(len(q.payload["options"]))]
    res = q.revealed
    if not res:
        st.plotly_chart(vc.answer_bars(tl.counts, labels, title=t("class.fig.spread", lg), lecture=lecture, lang=lg),
                        key=f"class_spread_{q.id}")
        st.button(t("quiz.reveal", lg), key=f"class_reveal_{q.id}", type="primary", on_click=reveal, args=(code, q))
        return
    answer = int(res["answer"])
    st.success(t("class.reveal.answer", lg, answer=md_escape(labels[answer]), right=res["right"],
                 n=res["answered"]), icon=":material/check_circle:")
    if res.get("own"):
        st.caption(t("class.reveal.own", lg, n=res["own"], right=res["own_right"]))
    st.plotly_chart(vc.answer_bars(tl.counts, labels, answer=answer, weights=res["weights"], lecture=lecture,
                                   title=t("class.fig.reveal", lg), lang=lg), key=f"class_reveal_fig_{q.id}")


def reveal(code: str, q) -> None:
    cr.store().reveal(code, q.id, cr.reveal_result(code, q))


# ---- sentences ------------------------------------------------------------------------------------------------------
def sentence_line(s, lg: str) -> str:
    """A sentence as plain text with its query and referent tokens (for st.text: never markdown or HTML)."""
    return t("class.sentence_line", lg, text=cr.plain(s.text), query=_tok(s, s.query), referent=_tok(s, s.referent))


def _tok(s, i: int) -> str:
    return cr.plain(s.tokens[i]) if 0 <= i < len(s.tokens) else "?"


def sentences_tab(view: View, code: str) -> None:
    moderation(code, view.lang)


@st.fragment(run_every=MODERATION_REFRESH_S)
def moderation(code: str, lg: str) -> None:
    """The sentences students sent, refreshed alone: waiting ones inside a closed expander (off the projector)."""
    store = cr.store()
    if store.room(code) is None:
        return
    pending = store.sentences(code, "pending")
    approved = store.sentences(code, "approved")
    st.markdown(t("class.moderation", lg, pending=len(pending), approved=len(approved),
                  hidden=len(store.sentences(code, "hidden"))))
    with st.container(key="class_moderation"):  # its text sized by _CSS / _LECTURE_CSS
        moderation_list(code, lg, pending, approved)


def moderation_list(code: str, lg: str, pending: list, approved: list) -> None:
    store = cr.store()
    if pending:
        st.button(t("class.approve_all", lg), key="class_approve_all", on_click=store.moderate_all,
                  args=(code, "approved"), kwargs={"only": "pending"}, icon=":material/done_all:")
        with st.expander(t("class.pending", lg), expanded=False, key="class_pending"):  # not on the projector until opened
            for s in pending:
                c1, c2, c3 = st.columns([6, 1, 1], vertical_alignment="center")
                c1.text(sentence_line(s, lg))
                c2.button(t("class.approve", lg), key=f"class_ok_{s.id}", on_click=store.moderate,
                          args=(code, s.id, "approved"))
                c3.button(t("class.hide", lg), key=f"class_hide_{s.id}", on_click=store.moderate,
                          args=(code, s.id, "hidden"))
    for s in approved:
        c1, c2 = st.columns([7, 1], vertical_alignment="center")
        c1.text(sentence_line(s, lg))
        c2.button(t("class.hide", lg), key=f"class_hide_{s.id}", on_click=store.moderate, args=(code, s.id, "hidden"))


# ---- the head ranking ---------------------------------------------------------------------------------------------
def ranking_for(code: str, device: str, model: str | None = None):
    """(model, its approved sentences, the ranking) for the approved sentences of `model` (default: the class's
    model, else the model most of them were sent with), or (None, [], None) with none approved."""
    approved = cr.store().sentences(code, "approved")
    if not approved:
        return None, [], None
    models = collections.Counter(s.model for s in approved)
    if model not in models:
        model = cr.room_model(cr.live_room(code))
    model = model if model in models else models.most_common(1)[0][0]
    mine = [s for s in approved if s.model == model]
    return model, mine, runs.class_ranking(model, device, tuple((s.text, s.query, s.referent) for s in mine))


def heads_tab(view: View, code: str) -> None:
    lg = view.lang
    approved = cr.store().sentences(code, "approved")
    if not approved:
        st.info(t("class.no_sentences", lg), icon=":material/edit_note:")
        return
    models = sorted({s.model for s in approved})
    room = cr.room_model(cr.live_room(code))
    chosen = st.selectbox(t("class.model", lg), models, key=K_MODEL, index=models.index(room) if room in models
                          else 0) if len(models) > 1 else models[0]
    model, mine, ranking = ranking_for(code, view.device, chosen)
    st.plotly_chart(vc.ranking_grid(ranking, lecture=view.lecture, lang=lg), key="class_ranking")
    if ranking.skipped:
        st.caption(t("class.skipped", lg, n=ranking.skipped))
    if ranking.best is None:
        return
    la, h = ranking.best
    st.markdown(t("class.best", lg, where=head_name(la, h, lg), share=float(ranking.agreement[la, h]),
                  hits=int(ranking.hits[la, h]), n=ranking.used))
    rows = [{**r, "agreement": round(r["agreement"], 3)} for r in ranking.rows()[:20]]
    table(rename_columns(rows, lg, names={"agreement": t("class.col.agreement", lg), "hits": t("class.col.hits", lg),
                                          "sentences": t("class.col.sentences", lg)}), view.lecture)
    i = st.selectbox(t("class.map_sentence", lg), range(len(mine)), key=K_SENTENCE,
                     format_func=lambda j: sentence_line(mine[j], lg))
    s = mine[i or 0]
    tr = runs.get_trace(model, view.device, s.text)
    block = "decoder_self" if tr.is_decoder_only else "encoder"
    rows_t, cols_t = tr.axis_tokens(block)
    st.plotly_chart(vc.head_map(tr.attention(block)[la, h], rows_t, cols_t, query=s.query, lecture=view.lecture,
                                lang=lg, title=t("class.fig.map", lg, where=head_name(la, h, lg))),
                    key="class_best_map")


# ---- export ----------------------------------------------------------------------------------------------------------
def export_data(code: str, device: str) -> dict:
    """The room's answers and ranking, anonymous: counts per option, never a student session."""
    store = cr.store()
    questions = []
    for x in store.questions(code):
        tl = cr.tally(code, x)
        p = x.payload
        questions.append({"id": x.id, "kind": x.kind, "model": p.get("model"), "text": p.get("text"),
                          "layer": p.get("layer"), "head": p.get("head"), "step": p.get("step"),
                          "options": list(p["options"]), "answers": tl.counts, "answered": tl.answered,
                          "answer": p["answer"], "right": tl.counts[int(p["answer"])],
                          "revealed": bool(x.revealed)})
    model, mine, ranking = ranking_for(code, device)
    return {"room": code, "questions": questions,
            "ranking": {"model": model, "sentences": len(mine), "best": list(ranking.best) if ranking and
                        ranking.best else None, "heads": ranking.rows() if ranking else []}}


def export_csv(data: dict) -> tuple[str, str]:
    """(answers CSV, ranking CSV)."""
    a = io.StringIO()
    w = csv.writer(a)
    w.writerow(["question", "kind", "option", "label", "answers", "model_answer"])
    for q in data["questions"]:
        for i, (label, n) in enumerate(zip(q["options"], q["answers"])):
            w.writerow([q["id"], q["kind"], i, label, n, int(i == q["answer"])])
    r = io.StringIO()
    w = csv.writer(r)
    w.writerow(["layer", "head", "agreement", "hits", "sentences"])
    for row in data["ranking"]["heads"]:
        w.writerow([row["layer"], row["head"], f"{row['agreement']:.6f}", row["hits"], row["sentences"]])
    return a.getvalue(), r.getvalue()


def export_tab(view: View, code: str) -> None:
    lg = view.lang
    st.caption(t("class.export_help", lg))
    data = export_data(code, view.device)
    answers, ranking = export_csv(data)
    c1, c2, c3 = st.columns(3)
    c1.download_button(t("class.export_json", lg), json.dumps(data, ensure_ascii=False, indent=1),
                       f"headlight-class-{code}.json", "application/json", key="class_json", on_click="ignore")
    c2.download_button(t("class.export_answers", lg), answers, f"headlight-class-{code}-answers.csv", "text/csv",
                       key="class_csv_answers", on_click="ignore")
    c3.download_button(t("class.export_ranking", lg), ranking, f"headlight-class-{code}-ranking.csv", "text/csv",
                       key="class_csv_ranking", on_click="ignore")
