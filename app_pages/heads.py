"""Head lab: which heads matter and why, on the user's own sentence — minimal pairs, head surgery, value-weighted
attention and attention flow, the logit lens (seq2seq-tiny) and a head atlas. Sections: ui/heads.py."""

import streamlit as st

from ui import heads as uh
from ui.shell import current_view
from ui.state import require_trace

view = current_view()
st.title("Head lab")
require_trace(view)
st.caption(f"{view.model_name} · {view.label} · query token {view.token} (choose them in the sidebar)")
tabs = st.tabs(uh.TABS, key="hl_tab", on_change="rerun", bind="query-params")
for tab, draw in zip(tabs, (uh.minimal_pairs, uh.surgery, uh.beyond_weights, uh.atlas)):
    if tab.open:
        with tab:
            draw(view)
