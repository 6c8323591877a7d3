"""Predict, then reveal (Streamlit): the view hides the answer, the student clicks a guess, Reveal shows the real
numbers and how close the guess was (the weight the model put on the guess and its rank), and the session keeps a
running score. Three kinds of question, on any sentence:

- `attend_question`: where will a chosen query token attend in a chosen layer and head? (the row of A)
- `prev_head_question`: which head of a layer is the previous-token head? (mass on the token just before)
- `next_token_question`: which token will the decoder emit next? (seq2seq-tiny's top-5 at a decoding step)

Each returns True once revealed, so the caller draws the figure that gives the answer away only then. A question's
widgets are keyed by a hash of what it asks about (sentence, model, layer, head, token, step): a new sentence is a
new question. The numbers come from ui.runs (the model's own attention, analysis.metrics' head metrics,
analysis.decoding); nothing is recomputed here but ranks.
"""

from __future__ import annotations

import hashlib

import numpy as np
import streamlit as st

from analysis.decoding import DecodingRun
from i18n import head_name, t
from viz import tour as vt

from . import runs
from .view import View, md_escape

SCORE = "quiz_score"  # {"asked": int, "right": int}
MAX_PILLS = 40  # more options than this: a selectbox instead of pills


def _qid(*parts) -> str:
    return "quiz_" + hashlib.sha1(repr(parts).encode("utf-8", "replace")).hexdigest()[:12]


def score() -> dict:
    return st.session_state.setdefault(SCORE, {"asked": 0, "right": 0})


def score_line(lg: str) -> None:
    s = st.session_state.get(SCORE)
    if s and s["asked"]:
        st.caption(t("quiz.score", lg, right=s["right"], asked=s["asked"]))


def _reveal(qid: str, answer: int) -> None:
    ss = st.session_state
    guess = ss.get(f"{qid}_guess")
    if guess is None or f"{qid}_revealed" in ss:
        return
    ss[f"{qid}_revealed"] = guess
    s = score()
    ss[SCORE] = {"asked": s["asked"] + 1, "right": s["right"] + int(guess == answer)}


def _again(qid: str) -> None:
    ss = st.session_state
    for k in (f"{qid}_revealed", f"{qid}_guess"):
        ss.pop(k, None)


def rank_of(values: np.ndarray, i: int) -> int:
    """1 + how many options scored strictly higher than option i."""
    v = np.asarray(values, dtype=np.float64)
    return 1 + int((v > v[i]).sum())


def _ask(qid: str, question: str, labels: list[str], answer: int, lg: str) -> int | None:
    """The guess widget and the Reveal button; the guess (an option index) once revealed, else None."""
    ss = st.session_state
    st.markdown(f"**{t('quiz.heading', lg)}**")
    if len(labels) <= MAX_PILLS:
        st.pills(question, range(len(labels)), format_func=lambda i: md_escape(labels[i]), key=f"{qid}_guess")
    else:
        st.selectbox(question, range(len(labels)), index=None, format_func=lambda i: labels[i], key=f"{qid}_guess",
                     placeholder=t("quiz.pick", lg))
    if f"{qid}_revealed" not in ss:
        none = ss.get(f"{qid}_guess") is None
        st.button(t("quiz.reveal", lg), key=f"{qid}_reveal", type="primary", disabled=none, on_click=_reveal,
                  args=(qid, answer))
        st.caption(t("quiz.pick_first" if none else "quiz.hidden", lg))
        return None
    return ss[f"{qid}_revealed"]


def _verdict(qid: str, guess: int, answer: int, labels: list[str], detail: str, lg: str) -> None:
    if guess == answer:
        st.success(t("quiz.right", lg, answer=md_escape(labels[answer])), icon=":material/check_circle:")
    else:
        st.warning(t("quiz.wrong", lg, answer=md_escape(labels[answer])), icon=":material/cancel:")
    st.markdown(detail)
    st.button(t("quiz.again", lg), key=f"{qid}_again", on_click=_again, args=(qid,))


def attend_question(view: View, layer: int, head: int, weights: np.ndarray, rows: list[str], cols: list[str],
                    lg: str, *, row: int | None = None, tag: tuple = ()) -> bool:
    """(a) Where will the sidebar's query token attend in this layer and head? weights (n, m) = the model's A.
    `row`: the query's row of `weights` when it is not the sidebar's token index (the explorer hides or merges
    tokens); `tag`: what else makes the question different (the explorer's block and options)."""
    i = min(view.token if row is None else row, len(rows) - 1)
    w = np.asarray(weights[i])  # the query's row of A
    labels = [f"{j}: {c}" for j, c in enumerate(cols)]
    answer = int(w.argmax())
    qid = _qid("attend", view.model_name, view.text, layer, head, i, *tag)
    where = head_name(layer, head, lg)
    question = t("quiz.attend.q", lg, token=md_escape(rows[i]), where=where)
    guess = _ask(qid, question, labels, answer, lg)
    if guess is None:
        return False
    _verdict(qid, guess, answer, labels, t("quiz.attend.detail", lg, guess=md_escape(cols[guess]), pos=guess,
                                            value=float(w[guess]), rank=rank_of(w, guess), n=len(w),
                                            best=float(w[answer])), lg)
    st.plotly_chart(vt.ranked_bars(w, cols, highlight=guess, answer=answer, lecture=view.lecture,
                                   title=t("quiz.attend.fig", lg, where=where),
                                   ylabel=t("quiz.weight", lg)), key=f"{qid}_fig")
    return True


def prev_head_question(view: View, layer: int, lg: str, block: str = "encoder") -> bool:
    """(b) Which head of this layer puts the most weight on the previous token? (analysis.metrics' "prev"), on the
    model's `block` (a decoder-only model's: "decoder_self")."""
    prev = np.asarray(runs.block_metrics(view.model_name, view.device, view.text, block)["prev"][layer])
    if not np.isfinite(prev).all():
        st.caption(t("quiz.prev.none", lg))
        return True
    labels = [t("tour.head_n", lg, i=h) for h in range(len(prev))]
    answer = int(prev.argmax())
    qid = _qid("prev", view.model_name, view.text, layer)
    guess = _ask(qid, t("quiz.prev.q", lg, layer=layer), labels, answer, lg)
    if guess is None:
        return False
    _verdict(qid, guess, answer, labels, t("quiz.prev.detail", lg, guess=labels[guess], value=float(prev[guess]),
                                           rank=rank_of(prev, guess), n=len(prev), best=float(prev[answer])), lg)
    st.plotly_chart(vt.ranked_bars(prev, [str(h) for h in range(len(prev))], highlight=guess, answer=answer,
                                   title=t("quiz.prev.fig", lg, layer=layer), ylabel=t("quiz.prev_mass", lg),
                                   lecture=view.lecture), key=f"{qid}_fig")
    return True


def next_options(run: DecodingRun, step: int) -> list[str]:
    """The options of a "which token next" question at `step`, each once: seq2seq-tiny copies, reverses or swaps the
    source, so its text tokens and <eos> (the task's last expected token); a translator (no task answer) writes
    another language, so the step's top tokens, in alphabetical order so that the order does not tell; then the
    emitted token (so the answer is always there)."""
    s = run.steps[step - 1]
    pool = [*run.source_tokens[1:-1], run.expected[-1]] if run.task is not None and run.expected \
        else sorted(s.top_tokens)
    options: list[str] = []
    for tok in [*pool, s.chosen]:
        if tok not in options:
            options.append(tok)
    return options


def next_token_question(view: View, run: DecodingRun, step: int, lg: str) -> bool:
    """(c) Which token will the decoder emit at this step? Options: the source's text tokens, <eos>, and the
    emitted token (so the answer is always there; a translator: its top-5 and the emitted token); the reveal uses the
    step's top-5 probabilities."""
    s = run.steps[step - 1]
    options = next_options(run, step)
    answer = options.index(s.chosen)
    qid = _qid("next", view.text, run.task, run.mode, step, *([run.model] if run.task is None else []))  # translator
    question = t("quiz.next.q", lg, step=step, last=md_escape(s.inputs[-1]))
    guess = _ask(qid, question, options, answer, lg)
    if guess is None:
        return False
    probs = dict(zip(s.top_tokens, (float(p) for p in s.top_probs)))
    g = options[guess]
    if g in probs:
        detail = t("quiz.next.detail", lg, guess=md_escape(g), value=probs[g], rank=list(probs).index(g) + 1,
                   k=len(probs))
    else:
        detail = t("quiz.next.outside", lg, guess=md_escape(g), k=len(probs), low=min(probs.values()))
    _verdict(qid, guess, answer, options, detail, lg)
    return True
