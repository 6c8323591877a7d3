"""Attention explorer: one head in detail, all heads at once, a BertViz-style token view and head metrics.
Thin page: the View from the shell, derived numbers from ui.runs, sections from ui/explorer.py."""

import streamlit as st

from i18n import t
from ui import explorer as ex
from ui import runs
from ui.shell import current_view
from ui.state import require_trace
from ui.widgets import layer_head

view = current_view()
st.title(t("page.explorer", view.lang))
trace = require_trace(view)
st.caption(t("ex.caption", view.lang, n=len(trace.source_tokens), model=view.model_name,
             where=layer_head(view.layer, view.head, view.lang)))
mode, hide, merge, spell = ex.options(view)
d = runs.derived(view.model_name, view.device, view.text, view.block, mode, hide, merge, spell)
ex.sections(view, d, mode, (hide, merge, spell))
if view.model.kind == "decoder":  # GPT-2 family: what comes next
    ex.next_token_panel(view)
