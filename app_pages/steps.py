"""Step by step: the whole layer on the typed sentence for the chosen block, layer and head (Vaswani et al. 2017,
eq. 1, 3.2.2 and 3.3): scaled dot-product attention in five lazy tabs (only the open one is built), then Add & Norm,
Feed Forward and the second Add & Norm up to the layer output, checked against the model's own; a decoder layer adds
the cross-attention's Add & Norm and, at the last layer, the final linear layer and Softmax over the vocabulary.
The numbers are read from the model's own forward (analysis.stages); stages: viz/steps.py, sections: ui/steps_page.py."""

import numpy as np
import streamlit as st

from i18n import t
from ui import runs, steps_page
from ui.shell import current_view
from ui.state import require_trace
from ui.widgets import layer_head, presenting
from viz.steps import ATTENTION_TABS, build_stages

view = current_view()
lg = view.lang
st.title(t("steps.title", lg))
st.latex(r"\operatorname{Attention}(Q, K, V) = \operatorname{softmax}\!\left(\frac{Q K^{\top}}{\sqrt{d_k}}\right) V"
         r"\qquad \operatorname{MultiHead} = \operatorname{Concat}(Z_1, \dots, Z_h)\,W^{O}")
trace = require_trace(view)
where = layer_head(view.layer, view.head, lg)
st.caption(t("steps.caption_present" if presenting() else "steps.caption", lg, model=view.model_name, block=steps_page.block_label(view.block, lg), where=where)
           + ("" if view.model.trained else t("steps.untrained", lg)))
steps = runs.attention_steps(view.model_name, view.device, view.text, view.block, view.layer, view.head)
diff = float(np.abs(steps["weights"] - trace.attention(view.block)[view.layer, view.head]).max())
(st.success if diff < 1e-5 else st.warning)(t("steps.check", lg, diff=diff))
rows, cols = trace.axis_tokens(view.block)
stages = build_stages(steps, rows, cols, head=view.head, n_heads=view.n_heads, block=view.block, lang=lg)
for name, tab in steps_page.step_tabs(view, lg):
    if tab.open:
        with tab:
            if name in ATTENTION_TABS:
                steps_page.draw_section(view, stages, ATTENTION_TABS.index(name), lg)
            else:
                steps_page.layer_section(view, name, lg)
