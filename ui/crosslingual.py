"""The Head lab's cross-lingual tab: a sentence and its translation, a query word and its target word in each; which
heads carry the relation in both languages (analysis.crosslingual), drawn by viz.crosslingual."""

from __future__ import annotations

import streamlit as st

from analysis import crosslingual as xl
from i18n import error_message, head_name, t
from model.errors import InputError
from viz import crosslingual as vx
from viz.theme import column_width

from . import runs
from .readable import MULTILINGUAL
from .state import available_models
from .view import View, md_escape
from .widgets import chart, rename_columns

URL = dict(bind="query-params")


def crosslingual(view: View) -> None:
    lg = view.lang
    st.caption(t("e5.xl.intro", lg))
    # two languages need a model that reads both: this view runs multilingual-e5-small whatever the sidebar says
    name = MULTILINGUAL if MULTILINGUAL in available_models() else view.model_name
    if name != view.model_name:
        st.caption(t("e5.xl.model_hint", lg, model=view.model_name))
    ca, cb = st.columns(2)
    a = ca.text_input(t("e5.xl.sentence_a", lg), xl.DEFAULT_EN[0], key="xl_a", **URL)
    qa = ca.text_input(t("e5.xl.query", lg), xl.DEFAULT_EN[1], key="xl_qa", **URL)
    ka = ca.text_input(t("e5.xl.target", lg), xl.DEFAULT_EN[2], key="xl_ka", **URL)
    b = cb.text_input(t("e5.xl.sentence_b", lg), xl.DEFAULT_KO[0], key="xl_b", **URL)
    qb = cb.text_input(t("e5.xl.query", lg), xl.DEFAULT_KO[1], key="xl_qb", **URL)
    kb = cb.text_input(t("e5.xl.target", lg), xl.DEFAULT_KO[2], key="xl_kb", **URL)
    try:
        r = runs.crosslingual(name, view.device, (a, qa, ka), (b, qb, kb))
    except InputError as exc:
        st.info(md_escape(error_message(exc, lg)))
        return
    st.markdown(t("e5.xl.summary", lg, k=r.k, n=len(r.overlap), chance=f"{r.chance_overlap:.1f}",
                  r=f"{r.spearman:.2f}", p=f"{r.pearson:.2f}"))
    zmax = float(max(r.a.weight.max(), r.b.weight.max()))
    g1, g2 = st.columns(2)
    with g1:
        chart(cross_grid(r.a, zmax, r, view), "xl_grid_a", subtitle=a, filename="figure")
    with g2:
        chart(cross_grid(r.b, zmax, r, view), "xl_grid_b", subtitle=b, filename="figure")
    chart(vx.agreement_scatter(r, lecture=view.lecture, lang=lg), "xl_scatter")
    rows = [{"head": head_name(x["layer"], x["head"], lg), "a": round(x["a"], 3),
             "b": round(x["b"], 3), "rank_a": x["rank_a"], "rank_b": x["rank_b"]} for x in r.rows()[:12]]
    st.table(rename_columns(rows, lg))


def cross_grid(side, zmax, r, view: View):
    return vx.weight_grid(side, zmax=zmax, shared=r.overlap, lecture=view.lecture, lang=view.lang,
                          width=column_width(2))
