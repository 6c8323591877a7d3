"""Figure builders shared by pages and tests. Never imports Streamlit."""
