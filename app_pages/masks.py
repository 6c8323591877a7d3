"""Mask lab: the padding mask on a padded batch (seed 002: "this is my car" / "that is not"), the look-ahead triangle
and the combined decoder mask ("I am sam <pad>"), and their effect on real scores and softmax weights, read from the
model's own forward (analysis.masks). True = may attend."""

import streamlit as st

from analysis import masks as am
from ui import cache
from ui.labs import draw_mask_examples, draw_stages, set_state
from ui.shell import current_view
from viz import masks as vm

view = current_view()
st.session_state.setdefault("mask_second", "that is not")
st.session_state.setdefault("mask_lookahead", "I am sam")
st.title("Mask lab")
st.markdown("Masks are boolean, **True = may attend**. Blocked scores become −∞ before the softmax, "
            "so blocked keys receive weight exactly 0 and every row still sums to 1.")

st.header("Padding mask on a batch")
b1, b2 = st.columns(2)
b1.button("Preset: “this is my car” / “that is not”", key="mask_preset_pad", on_click=set_state,
          args=({"text": "this is my car", "mask_second": "that is not"},))
second = b2.text_input("Second sentence (padded to the first one's length)", key="mask_second", persist_state="session")
if view.trace is None or not second.strip():
    st.info("Type a sentence in the sidebar and a second one here to build a padded batch.")
else:
    layer = min(view.layer, view.model.config.n_encoder_layers - 1)
    run = cache.padded_run(view.model_name, view.device, view.text, second, layer)
    st.plotly_chart(vm.batch_mask_heatmap(run.tokens, run.mask, lecture=view.lecture), key="mask_batch")
    row = st.radio("Show sentence", [0, 1], index=1, horizontal=True, key="mask_row", persist_state="session",
                   format_func=lambda i: f"{i + 1}: {'padded' if not run.mask[i].all() else 'no padding'}")
    toks = run.tokens[row]
    draw_stages(view, "mask-pad", am.padded_stages(run, layer, view.head, row), toks,
                f"{view.model_name} · Layer {layer} · Head {view.head}", " ".join(toks))

st.header("Look-ahead (causal) mask and the combined decoder mask")
c1, c2, c3 = st.columns([2, 1, 1])
sentence = c1.text_input("Decoder sentence", key="mask_lookahead", persist_state="session")
n_pad = int(c2.number_input("<pad> tokens", 0, 8, 1, key="mask_pads", persist_state="session"))
c3.button("Preset: “I am sam”", key="mask_preset_sam", on_click=set_state,
          args=({"mask_lookahead": "I am sam", "mask_pads": 1},))
words = sentence.split()[:64] + ["<pad>"] * n_pad
if not words:
    st.info("Type a decoder sentence to see the look-ahead mask.")
    st.stop()
draw_mask_examples(view, words, sentence)
st.subheader("On a real decoder: masked self-attention")
encdec, note = cache.lab_encoder_decoder(view.device)
if note:
    st.caption(note)
layer, head = min(view.layer, encdec.config.n_decoder_layers - 1), min(view.head, encdec.config.n_heads - 1)
dec = cache.decoder_run(encdec.name, view.device, sentence, n_pad, layer)
st.caption(f"{encdec.name}: source “{' '.join(dec.source_tokens)}”, decoder input teacher-forced as "
           f"“{' '.join(dec.tokens)}”; layer {layer}, head {head} (the sidebar's choice, clamped to this "
           f"model's {encdec.config.n_decoder_layers} layers × {encdec.config.n_heads} heads).")
st.columns(3)[0].plotly_chart(vm.mask_heatmap(dec.mask, dec.tokens, dec.tokens, lecture=view.lecture,
                                              title="The mask this decoder used"), key="dec_mask")
draw_stages(view, "mask-dec", am.decoder_stages(dec, layer, head), dec.tokens,
            f"{encdec.name} decoder · Layer {layer} · Head {head}", " ".join(dec.tokens))
