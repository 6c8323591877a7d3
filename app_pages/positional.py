"""Positional-encoding lab: the sinusoidal table (Vaswani et al. 2017, 3.5), its curves and position similarity,
X / PE / X + PE of the typed sentence, and MiniLM's learned positions beside the fixed ones. Three lazy tabs (only the
open one is built and sent); sections: ui/labs.py."""

import streamlit as st

from ui import labs
from ui.shell import current_view

view = current_view()
st.title("Positional-encoding lab")
st.latex(r"PE_{(pos,\,2i)} = \sin\!\left(\frac{pos}{10000^{2i/d_{model}}}\right) \qquad "
         r"PE_{(pos,\,2i+1)} = \cos\!\left(\frac{pos}{10000^{2i/d_{model}}}\right)")
tabs = st.tabs(labs.PE_TABS, key="pe_tab", on_change="rerun")


def your_sentence(view) -> None:
    if view.trace is None:
        st.info("Type a sentence in the sidebar to see its embeddings with positions added.")
    else:
        labs.sentence_parts(view)


for tab, draw in zip(tabs, (labs.pe_table_section, your_sentence, labs.learned_vs_fixed)):
    if tab.open:
        with tab:
            draw(view)
