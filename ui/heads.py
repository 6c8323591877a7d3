"""Streamlit side of the Head lab: minimal pairs, head surgery, value-weighted norms and attention flow, the logit
lens, the head atlas, and attention sinks and induction heads. Numbers come from ui.runs (analysis.heads / flow / atlas, all through the model's own
forward), figures from viz/heads.py. The pair and the chosen heads are in the URL (widgets bound to query
parameters), and so is the open tab, by its id (ui/widgets.py localised_tabs)."""

from __future__ import annotations

import json

import numpy as np
import streamlit as st

from analysis import heads as ah
from i18n import LANGS, error_message, head_name, t
from model.data import TASKS
from model.errors import InputError
from viz import heads as vh

from . import runs
from .readable import MULTILINGUAL
from .state import available_models, safe_callback
from .view import K_MODEL, View, is_translator, md_escape
from .widgets import chart, layer_head, localised_tabs, model_specials, rename_columns, shared_kv, table

TAB_KEYS = ["heads.tab.pairs", "heads.tab.surgery", "heads.tab.beyond", "heads.tab.atlas", "e5.tab.crosslingual",
            "heads.tab.circuits", "heads.tab.generation", "heads.tab.cause"]  # the last two: ui/generation.py, cause.py
TABS = [t(k, "en") for k in TAB_KEYS]  # "Minimal pairs", "Head surgery", "Beyond raw weights", "Head atlas"
K_TAB = "hl_tab"
URL = dict(bind="query-params")
def ranked_table(pair, lang: str, top: int = 12) -> list[dict]:
    """The minimal pair's heads ranked by the change of preference: head, change, flip mark, then the weights and
    preferences in A and B (headers in the interface language)."""
    _, c1, c2 = pair.labels
    names = {"a_w1": t("col.a_w", lang, c=c1), "a_w2": t("col.a_w", lang, c=c2), "b_w1": t("col.b_w", lang, c=c1),
             "b_w2": t("col.b_w", lang, c=c2)}
    rows = [{"rank": r["rank"], "head": layer_head(r["layer"], r["head"], lang), "change": r["change"],
             "flipped": f"{vh.FLIP_MARK} {t('heads.viz.flipped', lang)}" if r["flipped"] else "",
             **{k: v for k, v in r.items() if k[:2] in ("a_", "b_") or k.startswith("pref_")}}
            for r in pair.rows(top)]
    return rename_columns(rows, lang, names)


def tabs(view: View) -> list:
    """The lab's lazy tabs (the open one's id is in the URL), labelled in the interface language."""
    return localised_tabs(TAB_KEYS, K_TAB, view.lang, url=True)


def input_error(exc: InputError, lang: str) -> None:
    """A message of analysis' input checks in the interface language (i18n.error_message); the user's own words in
    it are escaped for markdown."""
    st.info(md_escape(error_message(exc, lang)))


def task_label(task: str, lang: str) -> str:
    return t(f"tour.task.{task}", lang)


def head_options(view: View) -> list[str]:
    """Every head of the model as "layer.head" (encoder) or "block:layer.head" (decoder blocks; an SSRU decoder has
    no self-attention heads, analysis.heads.ablatable_blocks)."""
    cfg, m = view.model.config, view.model
    out = [f"{i}.{h}" for i in range(m.n_layers(m.main_block)) for h in range(m.n_heads("encoder"))]
    if cfg.is_encoder_decoder:
        out += [f"{b}:{i}.{h}" for b in ah.ablatable_blocks(m)[1:] for i in range(cfg.n_decoder_layers)
                for h in range(m.n_heads(b))]
    return out


K_MODE = "hl_mode"  # the head surgery's ablation, by its id in the URL ("?hl_mode=keep")
K_HEADS = "hl_heads"  # the head surgery's heads, in session state and the URL ("?hl_heads=3.1&hl_heads=cross:1.2")


def heads_from_url(options: list[str]) -> None:
    """The chosen heads from the link on a session's first run; kept to this model's heads on every run. Bound by
    hand, not with bind="query-params": Streamlit's binding writes a multiselect's shown labels into the URL, and
    these are in the interface language ("레이어 3 · 헤드 1"), so a Korean link would not reopen in English."""
    ss = st.session_state
    if K_HEADS not in ss:
        ss[K_HEADS] = [p.strip() for v in st.query_params.get_all(K_HEADS) for p in v.split(",") if p.strip()]
    known = set(options)
    kept = list(dict.fromkeys(o for o in ss[K_HEADS] if o in known))
    if kept != ss[K_HEADS]:
        ss[K_HEADS] = kept


def heads_to_url(chosen: list[str]) -> None:
    """The chosen heads into the URL, as their language-free values ("3.1", "cross:1.2")."""
    if st.query_params.get_all(K_HEADS) != list(chosen):
        if chosen:
            st.query_params[K_HEADS] = list(chosen)
        elif K_HEADS in st.query_params:
            del st.query_params[K_HEADS]


def mode_from_url() -> None:
    """The ablation from the link on a session's first run, by its id ("zero", "mean", "keep"); a label that a
    link of before wrote (in either language) reads as its id. Bound by hand, as the heads are (heads_from_url):
    Streamlit's binding writes the shown label, so a Korean link would reopen in English as "zero"."""
    ss = st.session_state
    if K_MODE not in ss:
        value = st.query_params.get(K_MODE)
        labels = {t(f"heads.ablation.{m}", lang): m for lang in LANGS for m in ah.ABLATIONS}
        mode = value if value in ah.ABLATIONS else labels.get(value)
        if mode is not None:
            ss[K_MODE] = mode


def mode_to_url(mode: str) -> None:
    """The ablation into the URL by its id; none for the first (the default)."""
    if mode == ah.ABLATIONS[0]:
        if K_MODE in st.query_params:
            del st.query_params[K_MODE]
    elif st.query_params.get(K_MODE) != mode:
        st.query_params[K_MODE] = mode


def head_option_label(option: str, lang: str, model=None) -> str:
    """How a head option is shown: its one name ("2.6" -> "레이어 2 · 헤드 6", "decoder_self:1.2" -> "디코더 셀프
    어텐션 · 레이어 1 · 헤드 2" in Korean, i18n.head_name; "2.4" -> "Layer 2 · Head 4 (KV 1)" on a grouped-query
    model); the value stays as it is."""
    block, _, lh = option.rpartition(":")
    layer, _, head = lh.partition(".")
    return head_name(int(layer), int(head), lang, block=block or None,
                     kv=shared_kv(model, int(head), block or "decoder_self"))


@safe_callback
def korean_pair() -> None:
    """The Korean minimal pair, on the model that reads Korean (a callback: it may change the sidebar's model)."""
    st.session_state.update(hl_a=ah.PRESET_KO_A, hl_b=ah.PRESET_KO_B, hl_query=ah.PRESET_KO_QUERY,
                            hl_c1=ah.PRESET_KO_CANDIDATES[0], hl_c2=ah.PRESET_KO_CANDIDATES[1])
    if MULTILINGUAL in available_models():
        st.session_state[K_MODEL] = MULTILINGUAL


def minimal_pairs(view: View) -> None:
    lg = view.lang
    st.caption(t("heads.pairs.intro", lg))
    b0, b1 = st.columns(2)
    if b0.button(t("heads.pairs.preset", lg), key="hl_preset"):
        st.session_state.update(hl_a=ah.PRESET_A, hl_b=ah.PRESET_B, hl_query=ah.PRESET_QUERY,
                                hl_c1=ah.PRESET_CANDIDATES[0], hl_c2=ah.PRESET_CANDIDATES[1])
    b1.button(t("e5.pairs.preset_ko", lg), key="hl_preset_ko", on_click=korean_pair)
    a = st.text_input(t("heads.pairs.a", lg), ah.PRESET_A, key="hl_a", **URL)
    b = st.text_input(t("heads.pairs.b", lg), ah.PRESET_B, key="hl_b", **URL)
    c0, c1, c2 = st.columns(3)
    query = c0.text_input(t("heads.pairs.query", lg), ah.PRESET_QUERY, key="hl_query", **URL)
    w1 = c1.text_input(t("heads.pairs.c1", lg), ah.PRESET_CANDIDATES[0], key="hl_c1", **URL)
    w2 = c2.text_input(t("heads.pairs.c2", lg), ah.PRESET_CANDIDATES[1], key="hl_c2", **URL)
    spec = lambda s: int(s) if s.strip().isdigit() else s  # noqa: E731 - a position or a word
    try:
        pair = runs.minimal_pair(view.model_name, view.device, a, b, spec(query), spec(w1), spec(w2))
    except InputError as exc:
        input_error(exc, lg)
        return
    st.markdown(t("heads.pairs.aligned", lg) + " " + " ".join(f"`{x}`" for x in pair.alignment.labels))
    chart(vh.change_grid(pair, lecture=view.lecture, lang=lg), "hl_change", subtitle=a, filename="figure")
    # a plain table: the ranked rows are readable text (and in the DOM)
    st.table(ranked_table(pair, lg))
    st.caption(t("heads.note.pairs", lg))
    delta = pair.delta(view.layer, view.head)
    chart(vh.delta_heatmap(delta, lecture=view.lecture, lang=lg), "hl_delta", subtitle=f"{a} / {b}", filename="figure")


def has_tasks(view: View) -> bool:
    """Whether the model was trained on tasks with exact answers (seq2seq-tiny's copy / reverse / swap)."""
    return bool(view.model.abilities.tasks)


def surgery(view: View) -> None:
    lg = view.lang
    c1, c2 = st.columns([3, 2])
    options = head_options(view)
    heads_from_url(options)
    chosen = c1.multiselect(t("heads.surgery.heads", lg), options, key=K_HEADS,
                            format_func=lambda o: head_option_label(o, lg, view.model), help=t("heads.surgery.heads_help", lg),
                            placeholder=t("widgets.pick_heads", lg), select_all=False)  # no English "Select all"
    heads_to_url(chosen)
    mode_from_url()
    mode = c2.selectbox(t("heads.surgery.mode", lg), ah.ABLATIONS, key=K_MODE,
                        format_func=lambda m: t(f"heads.ablation.{m}", lg))
    mode_to_url(mode)
    picked = tuple(ah.heads_from_text(",".join(chosen)))
    st.caption(t("heads.note.surgery", lg))
    if view.model.config.is_encoder_decoder:
        task = (st.radio(t("heads.task", lg), TASKS, horizontal=True, key="hl_task",
                         format_func=lambda x: task_label(x, lg)) if has_tasks(view) else None)
        effect = runs.decoder_effect(view.model_name, view.device, view.text, picked, mode, task)
        if is_translator(view.model_name):  # the translation itself, with and without the heads
            translation_change(view, effect)
        else:
            st.code(t("heads.surgery.outputs", lg, before=" ".join(effect.output_before),
                      after=" ".join(effect.output_after)), language=None)
            if task is None:  # a model without tasks (a local BART / Marian): does the greedy output change?
                same = effect.output_before == effect.output_after
                (st.success if same else st.warning)(
                    t("heads.surgery.next_same" if same else "heads.surgery.next_changed", lg))
            else:
                (st.success if effect.exact_after else st.warning)(
                    t("heads.surgery.still" if effect.exact_after else "heads.surgery.no_longer", lg,
                      task=task_label(task, lg)))
        chart(vh.top_k_bars(effect, lecture=view.lecture, lang=lg, model=view.model_name), "hl_topk",
              subtitle=view.text, filename="head-surgery-top5")
        return
    if view.model.kind == "decoder":  # GPT-2: the next-token distribution and the greedy continuation first
        next_token_surgery(view, picked, mode)
    effect = runs.encoder_effect(view.model_name, view.device, view.text, picked, mode)
    chart(vh.token_change_bars(effect, lecture=view.lecture, lang=lg, model=view.model_name), "hl_tokens",
          subtitle=view.text, filename="head-surgery-token-change")
    before_after_maps(view, effect, picked)
    if st.toggle(t("heads.surgery.rank", lg), key="hl_rank"):
        grid = runs.rank_heads(view.model_name, view.device, view.text, mode)
        chart(vh.effect_grid(grid, chosen=picked, lecture=view.lecture, lang=lg), "hl_effect", subtitle=view.text,
              filename="head-effects")
        table(rename_columns(grid.rows()[:12], lg), view.lecture, key="hl_effect_table")


def translation_change(view: View, effect) -> None:
    """A translator's greedy translation (within its shortlist, as the Encoder-decoder page decodes) with and
    without the chosen heads, detokenized, and whether it changed; an SSRU decoder has no self-attention heads to
    offer, which the caption says."""
    lg, m = view.lang, view.model
    if "decoder_self" not in ah.ablatable_blocks(m):
        st.caption(t("trpages.surgery.no_self", lg))
    tr = m.abilities.translation
    st.markdown(t("trpages.surgery.translation", lg, source=t(f"s2s.lang.{tr.source}", lg),
                  target=t(f"s2s.lang.{tr.target}", lg)))
    st.code(t("heads.surgery.outputs", lg, before=effect.text_before, after=effect.text_after), language=None,
            wrap_lines=True)
    same = effect.text_before == effect.text_after
    if not effect.heads:
        st.info(t("trpages.surgery.pick", lg), icon=":material/touch_app:")
    else:
        (st.success if same else st.warning)(t("trpages.surgery.same" if same else "trpages.surgery.changed", lg,
                                               n=len(effect.heads)))


def shown_layer(view: View, after: list[int]) -> int:
    """The layer of the before / after maps, picked among the layers after the removed heads: the sidebar's layer
    when it is one of them, else the first one (and again whenever the removed heads or the sidebar's layer change)."""
    ss, key = st.session_state, "hl_map_layer"
    default = view.layer if view.layer in after else after[0]
    if ss.get(key) not in after or ss.get("_hl_map_layer_for") != (tuple(after), view.layer):
        ss[key] = default
    ss["_hl_map_layer_for"] = (tuple(after), view.layer)
    return st.selectbox(t("heads.surgery.map_layer", view.lang), after, key=key,
                        format_func=lambda i: t("sidebar.layer_n", view.lang, i=i))


def before_after_maps(view: View, effect, picked: tuple) -> None:
    """One head's attention before and after the ablation, in a layer AFTER the removed heads: an ablation changes a
    head's output, never the weights of its own layer or of the layers before it, so only later layers can differ.
    With the removed heads in the last layer no map can change: it says so and shows the output change instead."""
    lg = view.lang
    main = [ref for ref in picked if len(ref) == 2 or ref[0] in ("encoder", "decoder_self")]
    if not main:
        st.info(t("heads.surgery.maps_none", lg))
        return
    last = max(ref[-2] for ref in main)
    n_layers = effect.attention_before.shape[0]
    after = list(range(last + 1, n_layers))
    if not after:
        st.info(t("heads.surgery.maps_last", lg, layer=t("sidebar.layer_n", lg, i=last)))
        st.metric(t("heads.surgery.output_change", lg), f"{effect.sentence_change:.4f}")
        return
    layer = shown_layer(view, after)
    where = layer_head(layer, view.head, lg)
    diff = float(np.abs(effect.attention_after[layer, view.head] - effect.attention_before[layer, view.head]).max())
    st.caption(t("heads.surgery.maps_caption", lg, where=where, last=t("sidebar.layer_n", lg, i=last), diff=diff))
    figs = vh.before_after_heatmaps(effect, layer, view.head, lecture=view.lecture, lang=lg)
    for col, fig, key in zip(st.columns(2), figs, ("hl_before", "hl_after")):
        with col:  # each exports its head's attention (vh.before_after_heatmaps describes it)
            chart(fig, key, subtitle=view.text, filename=f"head-surgery-{key[3:]}")
    chart(vh.ablation_delta_heatmap(effect, layer, view.head, lecture=view.lecture, lang=lg), "hl_ablation_delta",
          subtitle=view.text, filename="head-surgery-delta")


def next_token_surgery(view: View, picked: tuple, mode: str) -> None:
    """A decoder-only model's next token after the sentence and its greedy continuation, before and after."""
    lg = view.lang
    effect = runs.next_token_effect(view.model_name, view.device, view.text, picked, mode)
    st.code(t("heads.surgery.outputs", lg, before=effect.text_before, after=effect.text_after), language=None)
    same = effect.output_before == effect.output_after
    (st.success if same else st.warning)(t("heads.surgery.next_same" if same else "heads.surgery.next_changed", lg))
    chart(vh.top_k_bars(effect, lecture=view.lecture, lang=lg, model=view.model_name), "hl_topk",
          subtitle=view.text, filename="head-surgery-top5")
    st.caption(t("heads.note.next", lg))


def beyond_weights(view: View) -> None:
    lg = view.lang
    vn = runs.value_norms(view.model_name, view.device, view.text)
    st.caption(t("heads.note.norms", lg, specials=model_specials(view)))
    figs = vh.value_norm_heatmaps(vn, view.layer, view.head, lecture=view.lecture, lang=lg)
    for col, fig, key in zip(st.columns(2), figs, ("hl_weights", "hl_norms")):
        with col:  # the weights and the value norms (vh.value_norm_heatmaps describes them)
            chart(fig, key, subtitle=view.text, filename=f"value-{key[3:]}")
    chart(vh.special_share_scatter(vn, lecture=view.lecture, lang=lg, specials=model_specials(view)), "hl_special",
          subtitle=view.text, filename="special-shares")  # both shares, a row per head
    try:
        fr = runs.attention_flow(view.model_name, view.device, view.text, view.token)
    except InputError as exc:
        input_error(exc, lg)
    else:
        chart(vh.flow_bars(fr, lecture=view.lecture, lang=lg), "hl_flow", subtitle=view.text,
              filename="attention-flow")
        st.caption(t("heads.note.flow", lg))
    if view.model.config.is_encoder_decoder or view.model.kind == "decoder":
        if view.model.kind == "decoder":  # GPT-2: every layer read at the sentence's last position
            lens = runs.text_logit_lens(view.model_name, view.device, view.text)
        else:
            task = (st.radio(t("heads.task", lg), TASKS, horizontal=True, key="hl_lens_task",
                             format_func=lambda x: task_label(x, lg)) if has_tasks(view) else None)
            lens = runs.logit_lens(view.device, view.text, task,
                                    int(st.number_input(t("heads.beyond.step", lg), 0, 64, 0, key="hl_lens_step")),
                                    view.model_name)
        chart(vh.logit_lens_heatmap(lens, lecture=view.lecture, lang=lg), "hl_lens", subtitle=view.text,
              filename="logit-lens")
        st.caption(t("heads.note.lens", lg))
    else:
        st.info(t("heads.beyond.no_lens", lg))


def atlas(view: View) -> None:
    lg = view.lang
    at = runs.head_atlas(view.model_name, view.device,
                          **({"task": "copy"} if has_tasks(view) else {}))
    chart(vh.atlas_grid(at, chosen=[(view.layer, view.head)], lecture=view.lecture, lang=lg,
                        specials=model_specials(view)), "hl_atlas", filename="head-atlas")  # top label indices
    st.markdown(t("heads.atlas.best", lg, where=layer_head(view.layer, view.head, lg)))
    examples = at.examples(view.layer, view.head)
    examples = [{**r, "label": t(f"heads.atlas.{r['label']}", lg, specials=model_specials(view))} for r in examples]
    table(rename_columns(examples, lg), view.lecture, key="hl_examples")
    c1, c2 = st.columns(2)
    c1.download_button(t("heads.atlas.csv", lg), lambda: at.to_csv(), f"{view.model_name}-head-atlas.csv", "text/csv",
                       key="hl_atlas_csv")
    c2.download_button(t("heads.atlas.json", lg), lambda: json.dumps(at.to_json_dict(), ensure_ascii=False),
                       f"{view.model_name}-head-atlas.json", "application/json", key="hl_atlas_json")


K_REPEAT = "hl_repeat"  # the induction sequence's length R (in the URL)


def top_table(grid: np.ndarray, view: View, k: int = 5) -> list[dict]:
    """The k highest heads of a layer x head grid: rank, head (with its shared key/value head), score."""
    rows = [{"rank": r, "head": layer_head(la, h, view.lang, shared_kv(view.model, h, view.block)),
             "score": round(v, 3)} for r, (la, h, v) in enumerate(ah.top_heads(grid, k), start=1)]
    return rename_columns(rows, view.lang)


def circuits(view: View) -> None:
    """Attention sinks on the sidebar's sentence, then (decoder-only models) induction and previous-token heads on a
    repeated random sequence."""
    lg = view.lang
    st.subheader(t("heads.sink.title", lg))
    try:
        sink = runs.attention_sink(view.model_name, view.device, view.text)
    except InputError as exc:
        input_error(exc, lg)
    else:
        st.markdown(t("heads.sink.intro", lg))
        first = sink.tokens[0]
        mean = float(np.nanmean(sink.scores))
        above = int((sink.scores > 0.5).sum())
        st.markdown(t("heads.sink.summary", lg, first=md_escape(first), mean=mean, above=above,
                      total=sink.scores.size))
        chart(vh.sink_grid(sink, chosen=[(view.layer, view.head)], lecture=view.lecture, lang=lg), "hl_sink",
              subtitle=view.text, filename="attention-sink")
        st.table(top_table(sink.scores, view))
    st.subheader(t("heads.induction.title", lg))
    if view.model.kind != "decoder":
        st.info(t("heads.induction.decoder_only", lg))
        return
    st.markdown(t("heads.induction.intro", lg))
    most = max(1, (view.model.config.max_positions - 1) // 2)
    lo, hi = min(5, most), min(50, most)
    repeat = int(st.slider(t("heads.induction.repeat", lg), lo, hi, min(40, hi), key=K_REPEAT, **URL))
    try:
        ind = runs.induction(view.model_name, view.device, repeat)
    except InputError as exc:
        input_error(exc, lg)
        return
    st.caption(t("heads.induction.sequence_bos" if ind.offset else "heads.induction.sequence", lg, r=ind.repeat,
                 n=len(ind.ids)))
    c1, c2 = st.columns(2)
    c1.metric(t("heads.induction.loss_first", lg), f"{ind.loss_first:.2f}")
    c2.metric(t("heads.induction.loss_second", lg), f"{ind.loss_second:.2f}",
              delta=f"{ind.loss_second - ind.loss_first:+.2f}", delta_color="inverse")
    chosen = [(view.layer, view.head)]
    for which in ("induction", "previous"):  # full width, one under the other: a grid of all layers is wide
        grid = ind.induction if which == "induction" else ind.previous
        chart(vh.induction_grid(ind, which, chosen=chosen, lecture=view.lecture, lang=lg), f"hl_{which}",
              filename=f"{which}-scores")
        st.markdown(t(f"heads.{which}.top", lg))
        st.table(top_table(grid, view))
    st.caption(t("heads.note.induction", lg))
