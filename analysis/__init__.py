"""Analysis: runs a loaded model for a view and returns frozen, read-only numpy results.

Imports model/ only: never Streamlit or plotly."""
