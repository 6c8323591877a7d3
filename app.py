"""Headlight: see the inside of a Transformer on your own sentence.

Entry point (`streamlit run app.py`): the shell in ui/shell.py declares the pages of app_pages/ with st.navigation,
draws the shared sidebar, and runs the chosen page inside the error boundary.
"""

from ui import preload

preload.wait()  # a fresh process may still be importing the pages' modules and loading the models (ui/preload.py)

from ui import shell  # noqa: E402 - after the preload: one thread imports the stack at a time

shell.run()
