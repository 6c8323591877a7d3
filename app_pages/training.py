"""Training: how attention gets learned (issue 36). The paper's learning-rate schedule, label smoothing over the lab
model's real vocabulary, teacher forcing's shifted target and a training step's logits, dropout in training against
inference mode, a recorded training run of a small encoder-decoder the class can scrub (snapshot by snapshot, its
cross-attention going from uniform to the task's diagonal), and a live run for the lecturer. Six lazy tabs; the
sections: ui/training_page.py and ui/training_run.py; the numbers: analysis/training.py (the lab: training/lab.py);
figures: viz/training.py; text: i18n "train.*"."""

import streamlit as st

from i18n import t
from ui import training_page as tp
from ui import training_run as tr
from ui.shell import current_view

view = current_view()
lang = view.lang
tp.read_link(lang)
st.title(t("train.title", lang))
st.markdown(t("train.intro", lang, **tp.model_shape()))
tp.notice()
task = tp.task_picker(lang)
sections = (tp.schedule_section, tp.smoothing_section, tp.teacher_section, tp.dropout_section, tr.recorded_section,
            tr.live_section)
opened = None
for i, (tab, draw) in enumerate(zip(tp.tabs(lang), sections)):
    if tab.open:
        opened = i
        with tab:
            draw(view, task)
if opened != tp.RUN_TAB:  # the recorded run writes its snapshot itself
    tp.write_link(task, None)
