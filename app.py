"""Headlight: see the inside of a Transformer on your own sentence.

Entry point (`python -m serve run app.py`, or plain `streamlit run app.py`): the shell in ui/shell.py declares the
pages (ui/pages.py) with st.navigation, draws the shared sidebar, and runs the chosen page inside the error boundary.
"""

from serve import preload

preload.wait()  # a fresh process may still be importing the pages' modules and loading the models (serve/preload.py)

from serve.process import configure_process  # noqa: E402 - after the preload: one thread imports the stack at a time
from ui import shell  # noqa: E402

configure_process()  # torch threads and the allocator, once per process
shell.run()
