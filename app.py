"""Headlight: see the inside of a Transformer on your own sentence.

Entry point (`streamlit run app.py`). Declares the pages with `st.navigation` / `st.Page`; each page is one thin
script in `pages/` that calls `ui.state.sidebar()` for the shared controls and `viz/` builders for its figures.
Pages are added only when their file exists, so the app runs at every stage of the build.

Error boundary: any unexpected exception on a page becomes a short `st.error` with a hint, never a traceback;
`HeadlightError` messages (meant for users) are shown as they are. Streamlit's own control flow (st.stop,
st.rerun) derives from BaseException, so `except Exception` lets it through.
"""

from __future__ import annotations

import logging
from pathlib import Path

import streamlit as st

from model.errors import HeadlightError

ROOT = Path(__file__).parent
PAGES = [  # (file, title, icon, default)
    ("pages/explorer.py", "Attention explorer", ":material/grid_on:", True),
    ("pages/positional.py", "Positional-encoding lab", ":material/waves:", False),
    ("pages/masks.py", "Mask lab", ":material/visibility_off:", False),
    ("pages/steps.py", "Step by step", ":material/functions:", False),
    ("pages/seq2seq.py", "Encoder-decoder decoding", ":material/translate:", False),
]

st.set_page_config(page_title="Headlight", page_icon=":material/highlight:", layout="wide")

pages = [st.Page(path, title=title, icon=icon, default=default)
         for path, title, icon, default in PAGES if (ROOT / path).exists()]
page = st.navigation(pages)
try:
    page.run()
except HeadlightError as exc:
    st.error(str(exc), icon="⚠️")
except Exception as exc:  # noqa: BLE001 - the boundary: log it, show a short message
    logging.getLogger("headlight").exception("page %s failed", page.title)
    st.error(f"Something went wrong on this page ({type(exc).__name__}). Try a shorter or different sentence, "
             "another model, or reload the page. The details are in the server log.", icon="⚠️")
