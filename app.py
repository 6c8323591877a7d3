"""Headlight: see the inside of a Transformer on your own sentence.

Entry point (`streamlit run app.py`): the shell in ui/shell.py declares the pages of app_pages/ with st.navigation,
draws the shared sidebar, and runs the chosen page inside the error boundary.
"""

from ui import shell

shell.run()
