"""Encoder-decoder decoding: the trained seq2seq-tiny on the sidebar's sentence, one greedy step at a time (each
output fed back in), or teacher forcing (the whole shifted target at once, as in training). Per step: decoder
self-attention with its look-ahead triangle, the new token's cross-attention over the source, the top-5 next tokens.
Runs: analysis.decoding; figures: viz/seq2seq.py; controls and layout: ui/seq2seq.py."""

import streamlit as st

from ui import cache
from ui import seq2seq as s2s
from ui.shell import current_view

view = current_view()
st.title("Encoder-decoder decoding")
st.caption(f"This page always uses **{s2s.MODEL}**, a small encoder-decoder (2 + 2 layers × 4 heads, d_model 128) "
           "trained here on copy, reverse and swap; the sidebar's model choice applies to the other pages. "
           "Its tokenizer lowercases and knows 16,000 everyday English words as whole tokens, word pieces for rarer "
           "words, digits and punctuation; a word with any other character (emoji, Hangul, Greek) becomes `<unk>`.")
if not view.text.strip():
    st.stop()
model = cache.get_model(s2s.MODEL, view.device)
task, teacher, layer, head = s2s.controls(model)
run = cache.decoding_run(view.device, view.text, task, teacher)
s2s.summary(run, task, teacher, model.unknown_words(view.text))
step = s2s.step_slider(run)
s2s.figures(view, run, step, layer, head, teacher)
