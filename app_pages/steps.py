"""Step by step: scaled dot-product attention on the typed sentence for the chosen block, layer and head
(Vaswani et al. 2017, eq. 1 and 3.2.2), each stage a labelled heatmap with its shape and formula, in five lazy tabs
(only the open one is built). The numbers are read from the model's own forward (analysis.stages); stages are built
in viz/steps.py."""

import numpy as np
import streamlit as st

from model.trace import BLOCK_LABELS
from ui import cache
from ui.labs import draw_stage
from ui.shell import current_view
from ui.state import require_trace
from viz.steps import SECTION_OF, SECTIONS, build_stages

view = current_view()
st.title("Step by step: scaled dot-product attention")
st.latex(r"\operatorname{Attention}(Q, K, V) = \operatorname{softmax}\!\left(\frac{Q K^{\top}}{\sqrt{d_k}}\right) V"
         r"\qquad \operatorname{MultiHead} = \operatorname{Concat}(Z_1, \dots, Z_h)\,W^{O}")
trace = require_trace(view)
st.caption(f"{view.model_name} · {BLOCK_LABELS[view.block]} · {view.label} (choose them in the sidebar)"
           + ("" if view.model.trained else " · untrained model: random weights, real shapes"))
steps = cache.attention_steps(view.model_name, view.device, view.text, view.block, view.layer, view.head)
diff = float(np.abs(steps["weights"] - trace.attention(view.block)[view.layer, view.head]).max())
(st.success if diff < 1e-5 else st.warning)(
    f"Check: these weights equal the model's own attention for this head (largest difference {diff:.1e}).")
rows, cols = trace.axis_tokens(view.block)
stages = build_stages(steps, rows, cols, head=view.head, n_heads=view.n_heads, block=view.block)
for i, tab in enumerate(st.tabs([f"{i + 1} · {name}" for i, name in enumerate(SECTIONS)], key="steps_tab",
                                on_change="rerun")):
    if not tab.open:
        continue
    with tab:
        groups: dict[str, list] = {}
        for stage in (s for s in stages if SECTION_OF[s.key] == i):
            groups.setdefault(stage.group or stage.key, []).append(stage)
        for members in groups.values():
            for col, stage in zip(st.columns(len(members)) if len(members) > 1 else [st.container()], members):
                with col:
                    draw_stage(view, stage)
            st.divider()
