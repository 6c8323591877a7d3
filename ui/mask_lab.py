"""The Mask lab's sections: the padding mask of a padded batch, the look-ahead triangle and the combined decoder mask."""

from __future__ import annotations

import streamlit as st

from analysis.masks import decoder_stages, example_masks, layer_kind_masks, padded_stages
from i18n import head_name, t
from viz import masks as vm
from viz.theme import column_width

from . import runs, store
from .deckfile import MASK_TAB_KEYS
from .labs import draw_stages, set_state
from .view import View
from .widgets import chart, layer_head, model_pad

MASK_EXAMPLES = ["padding", "causal", "combined"]  # catalogue "masks.example.<name>"


def draw_mask_examples(view: View, words: list[str], sentence: str) -> None:
    """Padding, look-ahead and combined masks of a word sequence ("I am sam <pad>"), each with its export."""
    masks = example_masks(words)
    for col, name in zip(st.columns(3), MASK_EXAMPLES):
        title = t(f"masks.example.{name}", view.lang)
        with col:
            chart(vm.mask_heatmap(masks[name], words, words, title=title, lecture=view.lecture, lang=view.lang,
                                  width=column_width(3)),
                  f"ex_{name}", subtitle=sentence, filename=f"mask-{name}")




MASK_TABS = [t(k) for k in MASK_TAB_KEYS]  # English labels


def padding_section(view: View) -> None:
    """A padded batch (the sidebar's sentence and a second one): its mask, then one head's stages on a real layer."""
    lg = view.lang
    b1, b2 = st.columns(2)
    b1.button(t("masks.preset_pad", lg), key="mask_preset_pad", on_click=set_state,
              args=({"text": "this is my car", "mask_second": "that is not"},))
    second = b2.text_input(t("masks.second", lg), key="mask_second", persist_state="session")
    if view.model.kind == "decoder" and view.trace is not None:  # GPT-2: no padded batch; its own causal mask
        st.info(t("masks.decoder_only", lg, model=view.model_name))
        toks = view.trace.source_tokens
        window_masks(view, toks)
        steps = runs.attention_steps(view.model_name, view.device, view.text, "decoder_self", view.layer, view.head)
        draw_stages(view, "mask-causal", steps, toks,
                    f"{view.model_name} · {layer_head(view.layer, view.head, lg)}", " ".join(toks))
    elif view.trace is None or not second.strip():
        st.info(t("masks.need_text", lg))
    else:
        layer = min(view.layer, view.model.config.n_encoder_layers - 1)
        head = min(view.head, view.model.n_heads("encoder") - 1)  # the sidebar's head may be a decoder block's
        run = runs.padded_run(view.model_name, view.device, view.text, second, layer)
        st.plotly_chart(vm.batch_mask_heatmap(run.tokens, run.mask, lecture=view.lecture, lang=lg,
                                                pad=model_pad(view)), key="mask_batch")
        row = st.radio(t("masks.show_sentence", lg), [0, 1], index=1, horizontal=True, key="mask_row",
                       persist_state="session", format_func=lambda i: t(
                           "masks.row_padded" if not run.mask[i].all() else "masks.row_unpadded", lg, i=i + 1))
        toks = run.tokens[row]
        draw_stages(view, "mask-pad", padded_stages(run, layer, head, row), toks,
                    f"{view.model_name} · {layer_head(layer, head, lg)}", " ".join(toks))


def window_masks(view: View, tokens: list[str]) -> None:
    """A model with sliding-window layers (Gemma 3): its two masks on the sentence side by side, the global layers'
    look-ahead triangle and the local layers' band, and which layers are which."""
    c = view.model.config
    if not c.local_layers:
        return
    lg, masks = view.lang, layer_kind_masks(view.model, len(tokens))
    st.markdown(t("masks.window", lg, model=view.model_name, w=c.sliding_window, n=len(c.local_layers),
                  L=c.n_decoder_layers, layers=", ".join(map(str, c.local_layers)), layer=view.layer,
                  kind=t("masks.kind.local" if c.is_local(view.layer) else "masks.kind.global", lg)))
    if len(tokens) <= c.sliding_window:
        st.caption(t("masks.window_long", lg, w=c.sliding_window, n=len(tokens)))
    for col, kind in zip(st.columns(3)[:2], ("global", "local")):
        title = t(f"masks.fig.{kind}", lg, w=c.sliding_window)
        with col:
            chart(vm.mask_heatmap(masks[kind], tokens, tokens, title=title, lecture=view.lecture, lang=lg,
                                  width=column_width(3)), f"mask_kind_{kind}", subtitle=view.text,
                  filename=f"mask-{kind}")


def look_ahead_section(view: View) -> None:
    """The look-ahead triangle and the combined decoder mask on word tokens, then a real decoder's masked
    self-attention."""
    lg = view.lang
    c1, c2, c3 = st.columns([2, 1, 1])
    sentence = c1.text_input(t("masks.decoder_sentence", lg), key="mask_lookahead", persist_state="session")
    n_pad = int(c2.number_input(t("masks.pads", lg), 0, 8, 1, key="mask_pads", persist_state="session"))
    c3.button(t("masks.preset_sam", lg), key="mask_preset_sam", on_click=set_state,
              args=({"mask_lookahead": "I am sam", "mask_pads": 1},))
    words = sentence.split()[:64] + ["<pad>"] * n_pad
    if not words:
        st.info(t("masks.need_decoder_text", lg))
        return
    draw_mask_examples(view, words, sentence)
    st.subheader(t("masks.real_decoder", lg))
    encdec, note = store.lab_encoder_decoder(view.device)
    if note:
        st.caption(note)
    if view.model.config.is_encoder_decoder and view.model.config.decoder_mixer == "ssru":  # a translator (Bergamot)
        st.info(t("trpages.masks.ssru", lg, model=view.model_name, lab=encdec.name), icon=":material/info:")
    layer, head = min(view.layer, encdec.config.n_decoder_layers - 1), min(view.head, encdec.n_heads("decoder_self") - 1)
    dec = runs.decoder_run(encdec.name, view.device, sentence, n_pad, layer)
    st.caption(t("masks.decoder_caption", lg, model=encdec.name, source=" ".join(dec.source_tokens),
                 tokens=" ".join(dec.tokens), where=head_name(layer, head, lg), n_layers=encdec.config.n_decoder_layers,
                 n_heads=encdec.n_heads("decoder_self")))
    st.columns(3)[0].plotly_chart(vm.mask_heatmap(dec.mask, dec.tokens, dec.tokens, lecture=view.lecture, lang=lg,
                                                  title=t("masks.fig.used", lg), width=column_width(3)), key="dec_mask")
    draw_stages(view, "mask-dec", decoder_stages(dec, layer, head), dec.tokens,
                t("masks.decoder_where", lg, model=encdec.name, where=layer_head(layer, head, lg)),
                " ".join(dec.tokens))
