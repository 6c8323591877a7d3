"""Attention explorer: one head in detail, all heads at once, a token view and head metrics."""

import streamlit as st

from ui.state import require_trace, sidebar

view = sidebar()
st.title("Attention explorer")
trace = require_trace(view)
st.write(view.label, len(trace.source_tokens), "tokens")
