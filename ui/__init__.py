"""Streamlit-side shared code (sidebar, URL state, caching). Figure builders live in `viz/`."""
