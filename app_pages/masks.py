"""Mask lab: the padding mask on a padded batch (seed 002: "this is my car" / "that is not"), the look-ahead triangle
and the combined decoder mask ("I am sam <pad>"), and their effect on real scores and softmax weights, read from the
model's own forward (analysis.masks). True = may attend. Two lazy tabs; sections: ui/labs.py."""

import streamlit as st

from ui import labs
from ui.shell import current_view

view = current_view()
st.session_state.setdefault("mask_second", "that is not")
st.session_state.setdefault("mask_lookahead", "I am sam")
st.title("Mask lab")
st.markdown("Masks are boolean, **True = may attend**. Blocked scores become −∞ before the softmax, "
            "so blocked keys receive weight exactly 0 and every row still sums to 1.")
for tab, draw in zip(st.tabs(labs.MASK_TABS, key="mask_tab", on_change="rerun"),
                     (labs.padding_section, labs.look_ahead_section)):
    if tab.open:
        with tab:
            draw(view)
