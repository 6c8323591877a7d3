"""Attention explorer: one head in detail, all heads at once, a BertViz-style token view and head metrics.

Thin page: state from the shared sidebar, figures from viz/, sections from ui/explorer.py."""

import time

import streamlit as st

from ui import explorer as ex
from ui.state import RENDER_MS, require_trace, sidebar

started = time.perf_counter()
view = sidebar()
st.title("Attention explorer")
trace = require_trace(view)
st.caption(f"{len(trace.source_tokens)} tokens · {view.model_name} · {view.label} "
           "(layers and heads count from 0)")
mode, hide, merge = ex.options(view)
d = ex.derived_view(view.model_name, view.device, view.text, view.block, mode, hide, merge)
metrics = ex.block_metrics(view.model_name, view.device, view.text, view.block)

one, grid, tok, met, data = st.tabs(["One head", "All heads", "Token view", "Head metrics", "Data"])
with one:
    ex.one_head(view, d, mode)
with grid:
    ex.all_heads(view, d, mode, metrics)
with tok:
    ex.token_section(view, d, mode)
with met:
    ex.metrics_section(view, metrics)
with data:
    st.write("Download the whole trace: tokens, ids, masks, every attention array and the hidden states.")
    ex.trace_downloads(view)
RENDER_MS.append(("explorer", (time.perf_counter() - started) * 1000))  # server-side ms, for benchmarks
