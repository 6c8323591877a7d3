"""What the three lab pages share: URL-state callbacks, the staged mask figures (their lazy tabs: ui/widgets.py
localised_tabs). The pages: ui/pe_lab.py (Positional-encoding lab), ui/mask_lab.py (Mask lab), ui/steps_page.py (Step by step)."""

from __future__ import annotations

import streamlit as st

from analysis.masks import stage_checks
from i18n import t
from viz import masks as vm
from viz.theme import column_width

from .state import safe_callback
from .view import View
from .widgets import chart


@safe_callback
def set_state(values: dict) -> None:
    """A preset button: set these widget values before the next run draws them."""
    st.session_state.update(values)


def draw_stages(view: View, prefix: str, stages: dict, tokens: list[str], title: str, text: str) -> None:
    """Raw scores, masked scores and softmax weights of one head side by side (one under the other in lecture mode,
    where three columns squeeze the matrices on a projector), each with its export, then the check that rows sum to
    1 and blocked cells get 0."""
    lg = view.lang
    n = 1 if view.lecture else 3
    figs = vm.stage_figures(stages, tokens, tokens, title=title, lecture=view.lecture, lang=lg, width=column_width(n))
    for col, (name, fig) in zip(st.columns(3) if n == 3 else [st.container()] * 3, figs.items()):
        with col:  # each exports its stage's matrix (vm.stage_figures describes it)
            chart(fig, f"{prefix}_{name}", subtitle=text, filename=f"{prefix}-{name}")
    c = stage_checks(stages)
    st.success(t("masks.check", lg, err=c["max_row_sum_error"], n=c["n_blocked"], w=c["max_blocked_weight"]))
