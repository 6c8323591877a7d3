"""Step by step: scaled dot-product attention on the typed sentence for the chosen block, layer and head
(Vaswani et al. 2017, eq. 1 and 3.2.2), each stage a labelled heatmap with its shape and formula. The numbers are the
model's own (model.steps.attention_steps, checked against the trace); stages are built in viz/steps.py.
"""

import numpy as np
import streamlit as st

from model.steps import attention_steps
from model.trace import BLOCK_LABELS
from ui.downloads import download_buttons
from ui.state import require_trace, sidebar
from viz.export import heatmap_figure
from viz.heatmap import mpl_plain
from viz.steps import build_stages, stage_figure


@st.cache_data(max_entries=16, show_spinner="Recomputing this head…")
def steps_for(name: str, device: str, text: str, block: str, layer: int, head: int, _model, _trace):
    return attention_steps(_model, _trace, block, layer, head)  # one layer's matmuls, not a model run


def draw(stage) -> None:
    st.markdown(f"**{stage.title}** · `{stage.shape}`")
    st.latex(stage.latex)
    st.caption(stage.caption)
    if stage.trivial:  # no blocked cell: the mask is all ones and the masked scores equal the scaled ones
        st.info("Nothing is blocked here: the mask is all ones." if stage.key == "mask" else
                "Nothing is blocked here, so the masked scores equal the scaled ones above; not drawn again.")
        return
    st.plotly_chart(stage_figure(stage, big=view.lecture), key=f"step_{stage.key}")
    title = f"{view.model_name} · {BLOCK_LABELS[view.block]} · {view.label} · {stage.title} ({stage.shape})"
    download_buttons(f"step-{stage.key}", lambda: heatmap_figure(
        stage.matrix, stage.rows, stage.cols, title=title, subtitle=mpl_plain(view.text), masked=stage.masked,
        cmap="viridis" if stage.colorscale == "Viridis" else "RdBu_r", xlabel=stage.xlabel, ylabel=stage.ylabel),
        stage.matrix, stage.rows, stage.cols, f"{view.model_name}-L{view.layer}-H{view.head}-{stage.key}")


view = sidebar()
st.title("Step by step: scaled dot-product attention")
st.latex(r"\operatorname{Attention}(Q, K, V) = \operatorname{softmax}\!\left(\frac{Q K^{\top}}{\sqrt{d_k}}\right) V"
         r"\qquad \operatorname{MultiHead} = \operatorname{Concat}(Z_1, \dots, Z_h)\,W^{O}")
trace = require_trace(view)
st.caption(f"{view.model_name} · {BLOCK_LABELS[view.block]} · {view.label} (choose them in the sidebar)"
           + ("" if view.model.trained else " · untrained model: random weights, real shapes"))
steps = steps_for(view.model_name, view.device, view.text, view.block, view.layer, view.head, view.model, trace)
rows, cols = trace.axis_tokens(view.block)
stages = build_stages(steps, rows, cols, head=view.head, n_heads=view.n_heads, block=view.block)

groups: dict[str, list] = {}
for stage in stages:
    groups.setdefault(stage.group or stage.key, []).append(stage)
for members in groups.values():
    for col, stage in zip(st.columns(len(members)) if len(members) > 1 else [st.container()], members):
        with col:
            draw(stage)
    st.divider()

diff = float(np.abs(steps["weights"] - trace.attention(view.block)[view.layer, view.head]).max())
(st.success if diff < 1e-5 else st.warning)(
    f"Check: these weights equal the model's own attention for this head (largest difference {diff:.1e}).")
