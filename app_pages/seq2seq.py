"""Encoder-decoder decoding: the trained seq2seq-tiny on the sidebar's sentence, one greedy step at a time (each
output fed back in), or teacher forcing (the whole shifted target at once, as in training). Per step: decoder
self-attention with its look-ahead triangle, the new token's cross-attention over the source, the top-5 next tokens.
Runs: analysis.decoding; figures: viz/seq2seq.py; controls and layout: ui/seq2seq.py; text: i18n "s2s.*"."""

import streamlit as st

from i18n import t
from ui import runs, store
from ui import seq2seq as s2s
from ui.shell import current_view

view = current_view()
st.title(t("s2s.title", view.lang))
name = s2s.page_model(view)  # seq2seq-tiny, a translator, or the sidebar's local encoder-decoder folder
caption = "s2s.caption" if name == s2s.MODEL else "s2s.caption_translator" if s2s.is_translator(name) \
    else "s2s.caption_folder"
st.caption(t(caption, view.lang, model=name))
if not view.text.strip():
    st.stop()
model = store.get_model(name, view.device)
task, teacher, layer, head, target, full_vocab = s2s.controls(model, view.lang)
if teacher and task is None and not (target or "").strip():
    st.info(t("s2s.need_target", view.lang), icon=":material/edit:")
    st.stop()
unknown = model.unknown_words(view.text)
if unknown and s2s.is_translator(name):  # they read English or Portuguese only: say which models read the text
    if s2s.translator_notice(view, model, unknown, view.lang):
        st.stop()  # a text it cannot read: no translation, no decoding steps (they would be noise)
    unknown = []
run = runs.decoding_run(view.device, view.text, task, teacher, name, target, full_vocab)
# over the whole vocabulary: the shortlist's translation beside it (where the choice differs)
other = runs.decoding_run(view.device, view.text, task, False, name, None, False) if full_vocab else None
s2s.summary(run, task, teacher, unknown, view.lang, other)
s2s.stepper(view, run, layer, head, teacher)  # the step slider and its figures: a fragment, rerun alone
if task is None:  # a model that translates (or a local folder's): the alignment of its words
    s2s.alignment(view, run, layer, head)
