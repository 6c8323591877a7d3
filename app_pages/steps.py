"""Step by step: scaled dot-product attention on the typed sentence for the chosen block, layer and head
(Vaswani et al. 2017, eq. 1 and 3.2.2), each stage a labelled heatmap with its shape and formula. The numbers are
read from the model's own forward (analysis.stages); stages are built in viz/steps.py."""

import numpy as np
import streamlit as st

from model.trace import BLOCK_LABELS
from ui import cache
from ui.shell import current_view
from ui.state import require_trace
from ui.widgets import Export, chart
from viz.steps import build_stages, stage_figure

view = current_view()
st.title("Step by step: scaled dot-product attention")
st.latex(r"\operatorname{Attention}(Q, K, V) = \operatorname{softmax}\!\left(\frac{Q K^{\top}}{\sqrt{d_k}}\right) V"
         r"\qquad \operatorname{MultiHead} = \operatorname{Concat}(Z_1, \dots, Z_h)\,W^{O}")
trace = require_trace(view)
st.caption(f"{view.model_name} · {BLOCK_LABELS[view.block]} · {view.label} (choose them in the sidebar)"
           + ("" if view.model.trained else " · untrained model: random weights, real shapes"))
steps = cache.attention_steps(view.model_name, view.device, view.text, view.block, view.layer, view.head)
rows, cols = trace.axis_tokens(view.block)
groups: dict[str, list] = {}
for stage in build_stages(steps, rows, cols, head=view.head, n_heads=view.n_heads, block=view.block):
    groups.setdefault(stage.group or stage.key, []).append(stage)
for members in groups.values():
    for col, stage in zip(st.columns(len(members)) if len(members) > 1 else [st.container()], members):
        with col:
            st.markdown(f"**{stage.title}** · `{stage.shape}`")
            st.latex(stage.latex)
            st.caption(stage.caption)
            if stage.trivial:  # no blocked cell: the mask is all ones and the masked scores equal the scaled ones
                st.info("Nothing is blocked here: the mask is all ones." if stage.key == "mask" else
                        "Nothing is blocked here, so the masked scores equal the scaled ones above; not drawn again.")
                continue
            title = f"{view.model_name} · {BLOCK_LABELS[view.block]} · {view.label} · {stage.title} ({stage.shape})"
            chart(stage_figure(stage, lecture=view.lecture), f"step_{stage.key}", Export(
                stage.matrix, stage.rows, stage.cols, title, view.text,
                f"{view.model_name}-L{view.layer}-H{view.head}-{stage.key}", heatmap=dict(
                    masked=stage.masked, cmap="viridis" if stage.colorscale == "Viridis" else "RdBu_r",
                    xlabel=stage.xlabel, ylabel=stage.ylabel)))
    st.divider()

diff = float(np.abs(steps["weights"] - trace.attention(view.block)[view.layer, view.head]).max())
(st.success if diff < 1e-5 else st.warning)(
    f"Check: these weights equal the model's own attention for this head (largest difference {diff:.1e}).")
