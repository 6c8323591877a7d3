"""Attention explorer: one head in detail, all heads at once, a BertViz-style token view and head metrics.
Thin page: the View from the shell, derived numbers from ui.cache, sections from ui/explorer.py."""

import streamlit as st

from ui import cache
from ui import explorer as ex
from ui.shell import current_view
from ui.state import require_trace

view = current_view()
st.title("Attention explorer")
trace = require_trace(view)
st.caption(f"{len(trace.source_tokens)} tokens · {view.model_name} · {view.label} (layers and heads count from 0)")
mode, hide, merge = ex.options(view)
d = cache.derived(view.model_name, view.device, view.text, view.block, mode, hide, merge)
ex.sections(view, d, mode, (hide, merge))
