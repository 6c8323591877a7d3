"""Streamlit side of the Head lab: minimal pairs, head surgery, value-weighted norms and attention flow, the logit
lens and the head atlas. Numbers come from ui.cache (analysis.heads / flow / atlas, all through the model's own
forward), figures from viz/heads.py. The pair, the chosen heads and the tab are in the URL (widgets bound to
query parameters)."""

from __future__ import annotations

import json

import numpy as np
import streamlit as st

from analysis import heads as ah
from model.data import TASKS
from model.errors import InputError
from viz import heads as vh

from . import cache
from .state import View
from .widgets import Export, chart

TABS = ["Minimal pairs", "Head surgery", "Beyond raw weights", "Head atlas"]
URL = dict(bind="query-params")


def head_options(view: View) -> list[str]:
    """Every head of the model as "layer.head" (encoder) or "block:layer.head" (decoder blocks)."""
    cfg = view.model.config
    out = [f"{i}.{h}" for i in range(cfg.n_encoder_layers) for h in range(cfg.n_heads)]
    if cfg.is_encoder_decoder:
        out += [f"{b}:{i}.{h}" for b in ("decoder_self", "cross") for i in range(cfg.n_decoder_layers)
                for h in range(cfg.n_heads)]
    return out


def axes(grid) -> tuple[list[str], list[str]]:
    """Row and column labels of a layer x head grid."""
    return [f"Layer {i}" for i in range(grid.shape[0])], [f"Head {h}" for h in range(grid.shape[1])]


def minimal_pairs(view: View) -> None:
    st.caption("Two sentences that differ in a word or two: which heads change where the query token looks?")
    if st.button("Preset: “… because it was tired” / “… because it was wide”", key="hl_preset"):
        st.session_state.update(hl_a=ah.PRESET_A, hl_b=ah.PRESET_B, hl_query=ah.PRESET_QUERY,
                                hl_c1=ah.PRESET_CANDIDATES[0], hl_c2=ah.PRESET_CANDIDATES[1])
    a = st.text_input("Sentence A", ah.PRESET_A, key="hl_a", **URL)
    b = st.text_input("Sentence B", ah.PRESET_B, key="hl_b", **URL)
    c0, c1, c2 = st.columns(3)
    query = c0.text_input("Query token (a word, or its position in A)", ah.PRESET_QUERY, key="hl_query", **URL)
    w1 = c1.text_input("Candidate 1", ah.PRESET_CANDIDATES[0], key="hl_c1", **URL)
    w2 = c2.text_input("Candidate 2", ah.PRESET_CANDIDATES[1], key="hl_c2", **URL)
    spec = lambda s: int(s) if s.strip().isdigit() else s  # noqa: E731 - a position or a word
    try:
        pair = cache.minimal_pair(view.model_name, view.device, a, b, spec(query), spec(w1), spec(w2))
    except InputError as exc:
        st.info(str(exc))
        return
    st.markdown("**Aligned tokens** (A→B where they differ): " + " ".join(f"`{t}`" for t in pair.alignment.labels))
    chart(vh.change_grid(pair, lecture=view.lecture), "hl_change", Export(
        pair.change, [f"Layer {i}" for i in range(pair.change.shape[0])],
        [f"Head {h}" for h in range(pair.change.shape[1])], "Minimal pair: change of the preference", a))
    st.table(vh.ranked_table(pair, top=12))  # a plain table: the ranked rows are readable text (and in the DOM)
    st.caption(vh.NOTES["pairs"])
    delta = pair.delta(view.layer, view.head)
    chart(vh.delta_heatmap(delta, lecture=view.lecture), "hl_delta", Export(
        delta.delta, list(delta.labels), list(delta.labels), f"B − A · {view.label}", f"{a} / {b}"))


def surgery(view: View) -> None:
    c1, c2 = st.columns([3, 2])
    chosen = c1.multiselect("Heads to ablate", head_options(view), key="hl_heads", **URL,
                            help="layer.head for the encoder; decoder_self: or cross: for the decoder's heads.")
    mode = c2.selectbox("Ablation", list(ah.ABLATION_LABELS), format_func=ah.ABLATION_LABELS.get, key="hl_mode", **URL)
    picked = tuple(ah.heads_from_text(",".join(chosen)))
    st.caption(vh.NOTES["surgery"])
    if view.model.config.is_encoder_decoder:
        task = st.radio("Task", TASKS, horizontal=True, key="hl_task")
        effect = cache.decoder_effect(view.model_name, view.device, view.text, picked, mode, task)
        st.code(f"before: {' '.join(effect.output_before)}\nafter:  {' '.join(effect.output_after)}", language=None)
        (st.success if effect.exact_after else st.warning)(
            f"After the ablation the output is {'still' if effect.exact_after else 'no longer'} the {task} answer.")
        rows = effect.top_rows()
        chart(vh.top_k_bars(effect, lecture=view.lecture), "hl_topk", Export(
            np.array([[r["Before"], r["After"]] for r in rows]), [r["Token"] for r in rows], ["before", "after"],
            f"Top-5 next tokens before and after · {view.model_name}", view.text, "head-surgery-top5"))
        return
    effect = cache.encoder_effect(view.model_name, view.device, view.text, picked, mode)
    chart(vh.token_change_bars(effect, lecture=view.lecture), "hl_tokens", Export(
        effect.token_change[None], ["1 - cos"], list(effect.tokens), f"Token change after ablation · {view.model_name}",
        view.text, "head-surgery-token-change"))
    figs = vh.before_after_heatmaps(effect, view.layer, view.head, lecture=view.lecture)
    for col, fig, key, att in zip(st.columns(2), figs, ("hl_before", "hl_after"),
                                  (effect.attention_before, effect.attention_after)):
        with col:
            chart(fig, key, Export(att[view.layer, view.head], list(effect.tokens), list(effect.tokens),
                                   f"{key[3:]} · {view.label}", view.text, f"head-surgery-{key[3:]}"))
    if st.toggle("Rank heads by effect (every head ablated alone)", key="hl_rank"):
        grid = cache.rank_heads(view.model_name, view.device, view.text, mode)
        chart(vh.effect_grid(grid, chosen=picked, lecture=view.lecture), "hl_effect", Export(
            grid.sentence_change, *axes(grid.sentence_change), "Effect of ablating each head (1 - cos)", view.text,
            "head-effects"))
        st.dataframe(grid.rows()[:12], hide_index=True, key="hl_effect_table")


def beyond_weights(view: View) -> None:
    vn = cache.value_norms(view.model_name, view.device, view.text)
    st.caption(vh.NOTES["norms"])
    figs = vh.value_norm_heatmaps(vn, view.layer, view.head, lecture=view.lecture)
    for col, fig, key, m in zip(st.columns(2), figs, ("hl_weights", "hl_norms"), (vn.weights, vn.norms)):
        with col:
            chart(fig, key, Export(m[view.layer, view.head], list(vn.tokens), list(vn.tokens),
                                   f"{key[3:]} · {view.label}", view.text, f"value-{key[3:]}"))
    share = np.stack([vn.special_weight_share.ravel(), vn.special_norm_share.ravel()], axis=1)
    chart(vh.special_share_scatter(vn, lecture=view.lecture), "hl_special", Export(
        share, [f"Layer {i // vn.weights.shape[1]} Head {i % vn.weights.shape[1]}" for i in range(len(share))],
        ["weight share on specials", "norm share on specials"], "Specials: weight vs norm", view.text,
        "special-shares"))
    try:
        fr = cache.attention_flow(view.model_name, view.device, view.text, view.token)
    except InputError as exc:
        st.info(str(exc))
    else:
        chart(vh.flow_bars(fr, lecture=view.lecture), "hl_flow", Export(
            np.stack([fr.rollout, fr.flow]), ["rollout", "flow"], list(fr.tokens), "Rollout and attention flow",
            view.text, "attention-flow"))
        st.caption(vh.NOTES["flow"])
    if view.model.config.is_encoder_decoder:
        lens = cache.logit_lens(view.device, view.text, st.radio("Task", TASKS, horizontal=True, key="hl_lens_task"),
                                int(st.number_input("Decoding step", 0, 64, 0, key="hl_lens_step")))
        chart(vh.logit_lens_heatmap(lens, lecture=view.lecture), "hl_lens", Export(
            lens.top_probs, list(lens.layers), [f"top {k + 1}" for k in range(lens.top_probs.shape[1])],
            "Logit lens: top-k per decoder layer", view.text, "logit-lens"))
        st.caption(vh.NOTES["lens"])
    else:
        st.info("The logit lens reads a decoder: choose seq2seq-tiny in the sidebar to see it.")


def atlas(view: View) -> None:
    at = cache.head_atlas(view.model_name, view.device,
                          **({"task": "copy"} if view.model.config.is_encoder_decoder else {}))
    idx = at.top_label_index().astype(float)
    chart(vh.atlas_grid(at, chosen=[(view.layer, view.head)], lecture=view.lecture), "hl_atlas", Export(
        idx, *axes(idx), "Head atlas: top label per head (index into the labels)", filename="head-atlas"))
    st.markdown(f"**Best examples of {view.label}**")
    st.dataframe(at.examples(view.layer, view.head), hide_index=True, key="hl_examples")
    c1, c2 = st.columns(2)
    c1.download_button("Atlas as CSV", lambda: at.to_csv(), f"{view.model_name}-head-atlas.csv", "text/csv",
                       key="hl_atlas_csv")
    c2.download_button("Atlas as JSON", lambda: json.dumps(at.to_json_dict(), ensure_ascii=False), f"{view.model_name}-head-atlas.json",
                       "application/json", key="hl_atlas_json")
