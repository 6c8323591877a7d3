"""Streamlit-side code: the shell and its sidebar, the View, the store of results and the views' computations, the
page table, and each page's sections. Figure builders live in `viz/`; starting and serving the app in `serve/`."""
