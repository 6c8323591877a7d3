"""The floor for the browser and load benchmarks: a minimal Streamlit app that draws one plotly heatmap of a
14 x 14 matrix (the size of the explorer's default sentence), with a Sentence box keyed like the app's.

    .venv/bin/streamlit run bench/minimal_app.py      (bench/bench_browser.py serves it beside the app)"""

import numpy as np
import plotly.graph_objects as go
import streamlit as st

text = st.sidebar.text_area("Sentence", "The animal didn't cross the street because it was tired", key="text")
words = text.split() or ["(empty)"]
n = len(words)
rng = np.random.default_rng(len(text))
m = rng.random((n, n))
m /= m.sum(1, keepdims=True)
st.title("Minimal app")
fig = go.Figure(go.Heatmap(z=m, x=[f"{i}:{w}" for i, w in enumerate(words)], y=[f"{i}:{w}" for i, w in enumerate(words)],
                           colorscale="Blues"))
fig.update_layout(title="Layer 0 · Head 0", height=520, yaxis={"autorange": "reversed"})
st.plotly_chart(fig)
