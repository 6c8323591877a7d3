"""The floor for the Training page's snapshot slider (bench/bench_training_page.py): a minimal Streamlit app with a
select_slider over 41 steps in a fragment that redraws one small plotly figure titled "Step N: cross-attention" (the
title the benchmark waits for), with nothing else on the page.

    .venv/bin/streamlit run bench/minimal_slider_app.py"""

import numpy as np
import plotly.graph_objects as go
import streamlit as st

st.title("Minimal slider app")


@st.fragment
def scrub() -> None:
    step = st.select_slider("Training step (snapshot)", list(range(0, 401, 10)), value=0, key="snap")
    m = np.random.default_rng(step).random((9, 10))
    fig = go.Figure(go.Heatmap(z=m, colorscale="Viridis"))
    fig.update_layout(title=f"Step {step}: cross-attention", height=420, yaxis={"autorange": "reversed"})
    st.plotly_chart(fig)


scrub()
