"""Mask lab: the padding mask on a padded batch (seed 002: "this is my car" / "that is not"), the look-ahead triangle
and the combined decoder mask ("I am sam <pad>"), and their effect on real scores and softmax weights, read from the
model's own forward (analysis.masks). True = may attend. Two lazy tabs; sections: ui/mask_lab.py. Text: i18n "masks.*"."""

import streamlit as st

from i18n import t
from ui import mask_lab
from ui.shell import current_view
from ui.widgets import localised_tabs

view = current_view()
st.session_state.setdefault("mask_second", "that is not")
st.session_state.setdefault("mask_lookahead", "I am sam")
st.title(t("masks.title", view.lang))
st.markdown(t("masks.intro", view.lang))
for tab, draw in zip(localised_tabs(mask_lab.MASK_TAB_KEYS, "mask_tab", view.lang, url=True),
                     (mask_lab.padding_section, mask_lab.look_ahead_section)):
    if tab.open:
        with tab:
            draw(view)
