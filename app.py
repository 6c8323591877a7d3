"""Headlight: coming soon."""

import streamlit as st

st.title("Headlight")
st.write("Coming soon.")
