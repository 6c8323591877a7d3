"""Head lab: which heads matter and why, on the user's own sentence — minimal pairs, head surgery, value-weighted
attention and attention flow, the logit lens (seq2seq-tiny), a head atlas, sinks and induction heads, generation
replay over the KV cache, and attribution and patching. Sections: ui/heads.py, ui/generation.py, ui/cause.py."""

import streamlit as st

from i18n import t
from ui import cause, generation
from ui import heads as uh
from ui.crosslingual import crosslingual
from ui.shell import current_view
from ui.state import require_trace
from ui.widgets import layer_head, presenting, shared_kv

view = current_view()
view = view.on_block(view.model.main_block)  # the lab reads the encoder (or a decoder-only model's one stack)
st.title(t("heads.page", view.lang))
require_trace(view)
st.caption(t("heads.caption_present" if presenting() else "heads.caption", view.lang, model=view.model_name, where=layer_head(view.layer, view.head, view.lang,
                                                                      shared_kv(view.model, view.head, view.block)),
             token=view.token))
for tab, draw in zip(uh.tabs(view), (uh.minimal_pairs, uh.surgery, uh.beyond_weights, uh.atlas, crosslingual,
                                       uh.circuits, generation.section, cause.section)):
    if tab.open:
        with tab:
            draw(view)
