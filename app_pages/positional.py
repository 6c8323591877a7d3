"""Positional-encoding lab: the sinusoidal table (Vaswani et al. 2017, 3.5), its curves and position similarity,
X / PE / X + PE of the typed sentence, and a model's learned positions beside the fixed ones (any model whose config
has learned positions; a rotary model is told apart above the tabs), and RoPE beside the sinusoidal table (its
frequencies, why q·k depends only on m − n, a rotary head's score by distance). Four lazy tabs (only the
open one is built and sent); sections: ui/pe_lab.py. Text: i18n "pe.*" (the sidebar's language)."""

import streamlit as st

from i18n import t
from ui import pe_lab
from ui.shell import current_view
from ui.widgets import localised_tabs

view = current_view()
st.title(t("pe.title", view.lang))
st.latex(r"PE_{(pos,\,2i)} = \sin\!\left(\frac{pos}{10000^{2i/d_{model}}}\right) \qquad "
         r"PE_{(pos,\,2i+1)} = \cos\!\left(\frac{pos}{10000^{2i/d_{model}}}\right)")
pe_lab.position_kind_notice(view)
tabs = localised_tabs(pe_lab.PE_TAB_KEYS, "pe_tab", view.lang, url=True)


def your_sentence(view) -> None:
    if view.trace is None:
        st.info(t("pe.need_text", view.lang))
    else:
        pe_lab.sentence_parts(view)


for tab, draw in zip(tabs, (pe_lab.pe_table_section, your_sentence, pe_lab.learned_vs_fixed, pe_lab.rope_section)):
    if tab.open:
        with tab:
            draw(view)
