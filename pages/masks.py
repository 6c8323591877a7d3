"""Mask lab: the padding mask on a padded batch (seed 002: "this is my car" / "that is not"), the look-ahead
triangle and the combined decoder mask ("I am sam <pad>"), and their effect on real scores and softmax weights.
Computations: viz/masks.py (the model's own modules and attention function; True = may attend).
"""

import streamlit as st

from model.errors import HeadlightError
from ui.downloads import download_buttons
from ui.state import get_model, sidebar
from viz import masks as vm
from viz.export import heatmap_figure
from viz.heatmap import mpl_plain
from viz.positional import fallback_encoder_decoder

st.session_state.setdefault("mask_second", "that is not")
st.session_state.setdefault("mask_lookahead", "I am sam")


def _preset(first: str, second: str) -> None:
    st.session_state.update({"text": first, "mask_second": second})


@st.cache_resource(max_entries=8, show_spinner="Running the padded batch…")
def padded(name: str, device: str, first: str, second: str) -> vm.PaddedRun:
    return vm.padded_run(get_model(name, device), [first, second])  # treated as immutable


@st.cache_resource(max_entries=8, show_spinner="Running the decoder…")
def decoder(name: str, device: str, sentence: str, n_pad: int) -> vm.DecoderRun:
    return vm.decoder_run(get_model(name, device), sentence, sentence, n_pad)


def draw_stages(prefix, stages, rows, cols, title, text):
    figs = vm.stage_figures(stages, rows, cols, title=title, big=view.lecture)
    for col, (name, fig) in zip(st.columns(3), figs.items()):
        with col:
            st.plotly_chart(fig, key=f"{prefix}_{name}")
            mat = stages["weights"] if name == "weights" else stages["scaled" if name == "masked" else name]
            masked = ~stages["mask"] if name == "masked" else None
            download_buttons(f"{prefix}-{name}", lambda m=mat, k=masked, n=name: heatmap_figure(
                m, rows, cols, title=f"{n} · {title}", subtitle=mpl_plain(text), masked=k, cmap="viridis"), mat, rows, cols,
                f"{prefix}-{name}")
    c = vm.stage_checks(stages)
    st.success(f"Every row of the weights sums to 1 (worst error {c['max_row_sum_error']:.1e}); the "
               f"{c['n_blocked']} blocked cells get weight {c['max_blocked_weight']:.1f} exactly.")


view = sidebar()
st.title("Mask lab")
st.markdown("Masks are boolean, **True = may attend**. Blocked scores become −∞ before the softmax, "
            "so blocked keys receive weight exactly 0 and every row still sums to 1.")

st.header("Padding mask on a batch")
b1, b2 = st.columns(2)
b1.button("Preset: “this is my car” / “that is not”", key="mask_preset_pad", on_click=_preset,
          args=("this is my car", "that is not"))
second = b2.text_input("Second sentence (padded to the first one's length)", key="mask_second", persist_state="session")
if view.trace is None or not second.strip():
    st.info("Type a sentence in the sidebar and a second one here to build a padded batch.")
else:
    run = padded(view.model_name, view.device, view.text, second)
    st.plotly_chart(vm.batch_mask_heatmap(run.tokens, run.mask, big=view.lecture), key="mask_batch")
    row = st.radio("Show sentence", [0, 1], index=1, horizontal=True, key="mask_row", persist_state="session",
                   format_func=lambda i: f"{i + 1}: {'padded' if not run.mask[i].all() else 'no padding'}")
    layer = min(view.layer, len(run.attention) - 1)
    stages = vm.padded_stages(view.model, run, layer, view.head, row)
    toks = run.tokens[row]
    draw_stages("mask-pad", stages, toks, toks, f"{view.model_name} · Layer {layer} · Head {view.head}",
                " ".join(toks))

st.header("Look-ahead (causal) mask and the combined decoder mask")
c1, c2, c3 = st.columns([2, 1, 1])
sentence = c1.text_input("Decoder sentence", key="mask_lookahead", persist_state="session")
n_pad = c2.number_input("<pad> tokens", 0, 8, 1, key="mask_pads", persist_state="session")
c3.button("Preset: “I am sam”", key="mask_preset_sam", on_click=lambda: st.session_state.update(
    {"mask_lookahead": "I am sam", "mask_pads": 1}))
words = sentence.split()[:64] + ["<pad>"] * int(n_pad)
if not words:
    st.info("Type a decoder sentence to see the look-ahead mask.")
else:
    ex = vm.example_masks(words)
    for col, (name, title) in zip(st.columns(3), [("padding", "Padding mask"), ("causal", "Look-ahead mask"),
                                                  ("combined", "Combined: padding AND look-ahead")]):
        with col:
            st.plotly_chart(vm.mask_heatmap(ex[name], words, words, title=title, big=view.lecture), key=f"ex_{name}")
            download_buttons(f"mask-{name}", lambda m=ex[name], t=title: heatmap_figure(
                m.astype(float), words, words, title=t, subtitle=mpl_plain(sentence), vmin=0, vmax=1), ex[name].astype(int),
                words, words, f"mask-{name}")

    st.subheader("On a real decoder: masked self-attention")
    encdec, note = fallback_encoder_decoder(lambda name: get_model(name, view.device))
    if note:
        st.caption(note)
    try:
        dec = decoder(encdec.name, view.device, sentence, int(n_pad))
    except HeadlightError as exc:
        st.info(str(exc))
    else:
        layer, head = min(view.layer, len(dec.attention) - 1), min(view.head, encdec.config.n_heads - 1)
        st.caption(f"{encdec.name}: source “{' '.join(dec.source_tokens)}”, decoder input teacher-forced as "
                   f"“{' '.join(dec.tokens)}”; layer {layer}, head {head} (the sidebar's choice, clamped to this "
                   f"model's {len(dec.attention)} layers × {encdec.config.n_heads} heads).")
        st.columns(3)[0].plotly_chart(vm.mask_heatmap(dec.mask, dec.tokens, dec.tokens, big=view.lecture,
                                                      title="The mask this decoder used"), key="dec_mask")
        draw_stages("mask-dec", vm.decoder_stages(encdec, dec, layer, head), dec.tokens, dec.tokens,
                    f"{encdec.name} decoder · Layer {layer} · Head {head}", " ".join(dec.tokens))
