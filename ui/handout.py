"""A lesson deck's PDF handout: each slide's page shows the figures of the slide's OWN view, read from the same runs
the page draws (ui.runs, through the shared store), so a handout never prints another view's numbers.

    slide page / its link's own keys         the handout's figures
    explorer, heads, class (and any other)   the one-head attention map of the slide's block, layer and head
    steps (steps_tab, by its id)             the open tab's stages (X; Q, K, V; the scaled and masked scores; A and Z;
                                             Concat and W_O's output; an Add & Norm's sum and result; the FFN)
    tour (step)                              the step's own figure: the token table, X, the positions, the stages
                                             of viz.tour.STEP_STAGES, the sublayers, the decoder's masked
                                             self-attention, the cross-attention, the output probabilities, the
                                             table of what changed since 2017
    masks (mask_tab)                         the padded batch's mask and a padded row's weights; or the padding,
                                             look-ahead and combined masks of "I am sam <pad>"
    positional (pe_tab)                      the PE table; X, PE and X + PE; or RoPE's q and k before and after
    seq2seq (s2s_task, s2s_tf, ...)          the decoder's masked self-attention and the cross-attention

The PDF itself is viz/handout.py. Nothing here draws with Streamlit but `handout_bytes`' caller (ui/deck.py).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from analysis.masks import example_masks
from i18n import error_message, t
from model import DEFAULT_MODEL, HeadlightError, get_spec, models_with
from model.data import TASKS
from model.examples import DEFAULT_TEXT
from viz import seq2seq as vs
from viz import tour as vt
from viz.handout import HandoutSlide, Panel, attention_panel, handout_pdf
from viz.model_notes import ModelFacts
from viz.since import since_rows, since_table
from viz.steps import ATTENTION_TABS, build_stages, step_tabs
from viz.theme import number_text

from . import runs, store
from . import state as s
from .deckfile import MASK_TAB_KEYS, PE_TAB_KEYS, Deck, Slide
from .pages import BY_NAME

# the encoder-decoder a page falls back to when the slide's model has no decoder (the one with tasks: seq2seq-tiny)
DECODER_MODEL = models_with(tasks=True)[0]
MASK_SENTENCE, MASK_SECOND, MASK_PADS = "I am sam", "that is not", 1  # the Mask lab's presets (app_pages/masks.py)
PE_SIZE = (50, 128)  # the PE lab's default table: the lecture's 50 positions x 128 dimensions
# the stages a Step by step tab's handout page shows (its figures that have tokens for rows)
TAB_STAGES = {"x": ("X",), "qkv": ("Q", "K", "V"), "scores": ("scores", "scaled", "masked"), "softmax": ("weights", "Z"),
              "concat": ("Z_all", "output")}


def _int(raw, default: int = 0) -> int:
    try:
        return int(str(raw).strip())
    except (TypeError, ValueError):
        return default


def tab_name(raw, names: list[str], catalogue_keys: list[str]) -> str:
    """The tab a slide's option names: the tab's own name, its catalogue key, or (older decks) its label in any
    language; anything else the first tab."""
    raw = str(raw or "")
    for name, key in zip(names, catalogue_keys):
        if raw in (name, key) or any(raw == t(key, lang) for lang in ("en", "ko")):
            return name
    return names[0]


@dataclass
class _Slide:
    """What a slide's figures are made from: its model, sentence and place, in the handout's language."""

    slide: Slide
    model: str
    text: str
    layer: int
    head: int
    lang: str
    device: str

    @property
    def query(self) -> dict:
        return self.slide.query

    def loaded(self, name: str | None = None):
        return store.get_model(name or self.model, self.device)


# ---- stages and sublayers --------------------------------------------------------------------------------------------
def _stage_panel(stage) -> Panel:
    return Panel(f"{stage.title}  ·  {stage.shape}", stage.matrix, tuple(stage.rows), tuple(stage.cols), stage.xlabel,
                 stage.ylabel, vmin=stage.zmin, vmax=stage.zmax, diverging=stage.colorscale == "RdBu_r",
                 masked=stage.masked)


def _stages(c: _Slide, block: str, keys: tuple[str, ...]) -> list[Panel]:
    m = c.loaded()
    layer, head = min(c.layer, m.n_layers(block) - 1), min(c.head, m.n_heads(block) - 1)
    trace = runs.get_trace(c.model, c.device, c.text)
    steps = runs.attention_steps(c.model, c.device, c.text, block, layer, head)
    rows, cols = trace.axis_tokens(block)
    by_key = {st.key: st for st in build_stages(steps, list(rows), list(cols), head=head, n_heads=m.n_heads(block),
                                                block=block, lang=c.lang)}
    blocked = ~np.asarray(steps["mask"], dtype=bool)
    out = []
    for k in keys:
        if k not in by_key or by_key[k].trivial:
            continue
        stage = by_key[k]
        if k == "weights" and blocked.any():  # blocked weights are exactly 0: grey, as the masked scores
            stage = dataclasses.replace(stage, masked=blocked)
        out.append(_stage_panel(stage))
    return out


def _matrix(title: str, m, rows, lang: str, **kw) -> Panel:
    m = np.asarray(m)
    return Panel(title, m, tuple(rows), tuple(str(j) for j in range(m.shape[1])), t("tour.axis.dim", lang),
                 t("tour.axis.token", lang), diverging=True, **kw)


def _sublayer(c: _Slide, block: str, tab: str) -> list[Panel]:
    """An Add & Norm (what the norm normalised and its result) or the Feed Forward (its hidden layer after the
    activation and the layer output), as Step by step and the tour draw them."""
    m = c.loaded()
    layer = min(c.layer, m.n_layers(block) - 1)
    trace = runs.get_trace(c.model, c.device, c.text)
    rows, _ = trace.axis_tokens(block)
    sub = runs.sublayer_steps(c.model, c.device, c.text, block, layer)
    lg = c.lang
    if tab.startswith("ffn") or tab.startswith("output"):
        hidden = sub.get("ffn_hidden", sub["ffn_act"])
        return [_matrix(t("handout.ffn_hidden", lg, layer=layer), hidden, rows, lg),
                _matrix(t("handout.layer_output", lg, layer=layer), sub["output"], rows, lg)]
    pre = m.config.norm_placement == "pre"
    norm = {"add_norm_dec": "norm1", "cross_norm": "norm2"}.get(tab, "norm2" if pre else "norm1")
    return [_matrix(t("handout.norm_in", lg, layer=layer), sub[f"{norm}_in"], rows, lg),
            _matrix(t("handout.norm_out", lg, layer=layer), sub[norm], rows, lg)]


# ---- the pages -------------------------------------------------------------------------------------------------------
def _attention(c: _Slide) -> list[Panel]:
    trace = runs.get_trace(c.model, c.device, c.text)
    block = c.query.get("block") if c.query.get("block") in trace.blocks else trace.blocks[0]
    att = trace.attention(block)
    if not (0 <= c.layer < att.shape[0] and 0 <= c.head < att.shape[1]):
        raise _Missing(t("deck.handout.no_head", c.lang, layer=c.layer, head=c.head, model=c.model,
                         layers=att.shape[0], heads=att.shape[1]))
    rows, cols = trace.axis_tokens(block)
    lg = c.lang
    title = t("handout.head_map", lg, block=t(f"ex.block.{block}", lg), layer=c.layer, head=c.head)
    return [attention_panel(att[c.layer, c.head], rows, cols, title=title, xlabel=t("ex.axis.key", lg),
                            ylabel=t("ex.axis.query", lg), colorbar=t("ex.axis.attention_weight", lg))]


def _steps(c: _Slide) -> list[Panel]:
    m = c.loaded()
    blocks = runs.get_trace(c.model, c.device, c.text).blocks
    block = c.query.get("block") if c.query.get("block") in blocks else m.main_block
    pre = m.config.norm_placement == "pre"
    names = step_tabs(block, True, pre)
    tab = tab_name(c.query.get("steps_tab"), names, [f"steps.tab.{n}" for n in names])
    if tab in ATTENTION_TABS:
        return _stages(c, block, TAB_STAGES[tab])
    if tab.startswith("vocab"):
        return _vocab(c, runs.vocab_output(c.model, c.device, c.text))
    return _sublayer(c, block, tab)


def _vocab(c: _Slide, out: dict) -> list[Panel]:
    """The Softmax over the vocabulary at the last decoder position: its top-k (analysis.vocab)."""
    tokens, probs = list(out["top_tokens"][-1]), [float(p) for p in out["top_probs"][-1]]
    return [Panel(t("handout.next_token", c.lang), cols=tuple(tokens), bars=probs,
                  xlabel=t("tour.axis.probability", c.lang))]


def _decoder(c: _Slide, key: str = "cross") -> str:
    """The model whose decoder a decoder view (`key`: decoder_self, cross, output) shows, as the tour chooses it
    (viz.tour.decoder_source: by the slide model's kind): its own, or seq2seq-tiny."""
    return c.model if vt.decoder_source(key, get_spec(c.model).kind) == "own" else DECODER_MODEL


def _decoding(c: _Slide, name: str, *, self_attn: bool, cross: bool) -> list[Panel]:
    loaded = c.loaded(name)
    task = c.query.get("s2s_task") if c.query.get("s2s_task") in TASKS else TASKS[0]
    task = task if name == DECODER_MODEL else None
    teacher = c.query.get("s2s_tf") == "1" and task is not None
    run = runs.decoding_run(c.device, c.text, task, teacher, name=name)
    n_layers, lg = loaded.config.n_decoder_layers, c.lang
    layer = _int(c.query.get("s2s_layer"), n_layers - 1)
    layer = min(max(layer, 0), n_layers - 1)
    head = c.query.get("s2s_head", "mean")
    head = "mean" if head in (None, "mean") or not 0 <= _int(head, -1) < loaded.n_heads("cross") else _int(head)
    where = vs.head_name(layer, head, lg)
    out: list[Panel] = []
    last = len(run.steps)
    if self_attn and run.has_self_attention:
        s_ = run.steps[last - 1]
        mat = vs.pick(s_.self_attention, layer, head)
        blocked = ~np.tril(np.ones(mat.shape, dtype=bool))
        out.append(Panel(f"{name} · " + t("s2s.fig.self", lg, where=where), mat, tuple(s_.inputs), tuple(s_.inputs),
                         t("s2s.axis.key_earlier", lg), t("s2s.axis.query_input", lg), t("s2s.axis.weight", lg),
                         vmin=0.0, vmax=1.0, masked=blocked))
    elif self_attn:  # an SSRU decoder: its forget gate stands where masked self-attention would
        gates = run.forget_gates[layer]  # (T, d)
        out.append(Panel(f"{name} · " + t("trpages.tour.fig.forget", lg, layer=layer, step=last), gates.T,
                         tuple(f"c{i}" for i in range(gates.shape[1])), tuple(run.steps[last - 1].inputs),
                         vmin=0.0, vmax=1.0))
    if cross:
        mat = vs.pick(run.cross_matrix(last), layer, head)
        out.append(Panel(f"{name} · " + t("s2s.fig.cross", lg, where=where), mat, tuple(run.steps[last - 1].inputs),
                         tuple(run.source_tokens), t("s2s.axis.source", lg), t("s2s.axis.input", lg),
                         t("s2s.axis.weight", lg), vmin=0.0, vmax=1.0))
    return out


def _output(c: _Slide, name: str) -> list[Panel]:
    """The output probabilities: an encoder-decoder's first greedy step, or a decoder-only model's next token after
    the text (its trace's top 5, each token as the text it adds), as the tour's step 14 shows them."""
    if get_spec(name).kind == "decoder":
        meta = runs.get_trace(name, c.device, c.text).meta
        tok = c.loaded(name).tokenizer
        tokens = [vt.shown_token(tok.decode([i], skip_special_tokens=False)) if (i := tok.token_to_id(x)) is not None
                  else x for x in meta.get("next_tokens", [])]
        return [Panel(t("tour.dec.fig.next", c.lang, model=name, k=len(tokens)), cols=tuple(tokens),
                      bars=[float(p) for p in meta.get("next_probs", [])], xlabel=t("tour.axis.probability", c.lang))]
    task = TASKS[0] if name == DECODER_MODEL else None
    run = runs.decoding_run(c.device, c.text, task, False, name=name)
    s_ = run.steps[0]
    return [Panel(f"{name} · " + t("tour.fig.topk", c.lang, step=1, k=len(s_.top_tokens)), cols=tuple(s_.top_tokens),
                  bars=[float(p) for p in s_.top_probs], xlabel=t("tour.axis.probability", c.lang))]


def _tour(c: _Slide) -> list[Panel]:
    step = _int(c.query.get("step"), 1)
    key = vt.STEPS[min(max(step, 1), len(vt.STEPS)) - 1]
    m, lg = c.loaded(), c.lang
    if key == "since":
        facts = ModelFacts.from_model(m)
        table = since_table(since_rows(facts, lg), facts, lg)
        head = list(table)
        return [Panel(table=[head, *zip(*(table[h] for h in head))])]
    stages = vt.step_stages(key, positional=m.config.positional, kind=m.config.kind)
    if key in vt.DECODER_STEPS and _decoder(c, key) == c.model and stages:  # a decoder-only model's own step 12
        return _stages(c, m.main_block, stages)
    if key in ("decoder_self", "cross"):
        return _decoding(c, _decoder(c, key), self_attn=key == "decoder_self", cross=key == "cross")
    if key == "output":
        return _output(c, _decoder(c, key))
    if key == "generate":
        return _generation(c)
    block = m.main_block
    trace = runs.get_trace(c.model, c.device, c.text)
    if key == "tokens":
        head = [t(f"tour.col.{k}", lg) for k in ("position", "token", "id", "special")]
        rows = [[str(i), tok, str(i_d), "✓" if sp else ""] for i, (tok, i_d, sp) in
                enumerate(zip(trace.source_tokens, trace.source_ids, trace.source_special))]
        return [Panel(t("tour.tokens.title", lg), table=[head, *rows])]
    if key in ("embedding", "positional"):
        if stages:  # a rotary model's step 3: q and k before and after RoPE
            return _stages(c, block, stages)
        tokens, parts = runs.embedding_parts(c.model, c.device, c.text)
        names = ("token",) if key == "embedding" else tuple(k for k in ("token", "position", "sum") if k in parts)
        return [_matrix(t(f"tour.positional.part.{k}", lg), parts[k], tokens, lg) for k in names]
    if stages:
        return _stages(c, block, stages)
    return _sublayer(c, block, key)


def _generation(c: _Slide) -> list[Panel]:
    """The tour's generation step: the language model's greedy tokens after the sentence, one row per step (an
    encoder model writes nothing: the step then has its title and note only)."""
    if c.loaded().kind != "decoder":
        return []
    gen = runs.generation(c.model, c.device, c.text, 8, 0.0, 0, 1.0, 0)
    head = [t(f"cause.gen.col.{k}", c.lang) for k in ("step", "position", "token", "prob")]
    rows = [[str(k), str(s_.position), s_.choice.token, number_text(s_.choice.prob, 3)] for k, s_ in
            enumerate(gen.steps)]
    return [Panel(t("tour.generate.title", c.lang), table=[head, *rows])]


def _masks(c: _Slide) -> list[Panel]:
    names = [k.rsplit(".", 1)[1] for k in MASK_TAB_KEYS]
    tab, lg = tab_name(c.query.get("mask_tab"), names, MASK_TAB_KEYS), c.lang
    if tab == "look_ahead":
        words = MASK_SENTENCE.split() + ["<pad>"] * MASK_PADS
        masks = example_masks(words)
        return [Panel(t(f"masks.example.{k}", lg), np.asarray(masks[k], dtype=float), tuple(words), tuple(words),
                      vmin=0.0, vmax=1.0, digits=0) for k in ("padding", "causal", "combined")]
    m = c.loaded()
    if m.kind == "decoder":  # a decoder-only model: its own causal mask and the weights under it
        return _stages(c, "decoder_self", ("mask", "weights"))
    layer, head = min(c.layer, m.config.n_encoder_layers - 1), min(c.head, m.n_heads("encoder") - 1)
    run = runs.padded_run(c.model, c.device, c.text, MASK_SECOND, layer)
    row = 1
    toks = run.tokens[row]
    weights = np.asarray(run.stages[layer]["weights"][row, head])
    return [Panel(t("masks.fig.batch", lg), np.asarray(run.mask, dtype=float),
                  tuple(t("masks.sentence_n", lg, i=i + 1) for i in range(len(run.tokens))),
                  tuple(str(j) for j in range(run.mask.shape[1])), t("masks.axis.position", lg), vmin=0.0, vmax=1.0,
                  digits=0),
            attention_panel(weights, toks, toks, title=t("handout.padded_weights", lg, layer=layer, head=head),
                            xlabel=t("ex.axis.key", lg), ylabel=t("ex.axis.query", lg))]


def _positional(c: _Slide) -> list[Panel]:
    names = [k.rsplit(".", 1)[1] for k in PE_TAB_KEYS]
    tab, lg = tab_name(c.query.get("pe_tab"), names, PE_TAB_KEYS), c.lang
    m = c.loaded()
    if tab == "sentence" or (tab == "rope" and m.config.positional == "rotary"):
        return _tour(_with_step(c, "positional"))
    n, d = PE_SIZE
    pe = runs.pe_table(n, d)
    return [Panel(t("handout.pe_table", lg, n=n, d=d), pe, tuple(str(i) for i in range(n)),
                  tuple(str(j) for j in range(d)), t("pe.axis.dim", lg), t("masks.axis.position", lg), vmin=-1.0,
                  vmax=1.0, diverging=True)]


def _with_step(c: _Slide, key: str) -> _Slide:
    slide = Slide(c.slide.page, {**c.query, "step": str(vt.STEPS.index(key) + 1)}, c.slide.options)
    return _Slide(slide, c.model, c.text, c.layer, c.head, c.lang, c.device)


def _seq2seq(c: _Slide) -> list[Panel]:
    name = c.query.get("s2s_model") or _decoder(c)
    name = name if name in s.available_models() and get_spec(name).kind == "encoder-decoder" else _decoder(c)
    return _decoding(c, name, self_attn=True, cross=True)


FIGURES = {"steps": _steps, "tour": _tour, "masks": _masks, "positional": _positional, "seq2seq": _seq2seq}


class _Missing(Exception):
    """A slide whose view has no figure to print (the reason, in the handout's language)."""


def handout_slide(slide: Slide, device: str, lang: str) -> HandoutSlide:
    """A slide of the handout: its title and note, and the figures of its own view (FIGURES, by page), or the
    reason there are none, in `lang`."""
    q = slide.query
    model, text = q.get("model") or DEFAULT_MODEL, q.get("text", DEFAULT_TEXT)
    layer, head = _int(q.get("layer")), _int(q.get("head"))
    where = f"{model} · " + t("widgets.layer_head", lang, layer=layer, head=head)
    out = dict(title=slide.title or t(BY_NAME[slide.page].title_key, lang), note=slide.note, where=where,
               sentence=text)
    if model not in s.available_models():
        return HandoutSlide(**out, missing=t("deck.handout.no_model", lang, model=model))
    if not text.strip():
        return HandoutSlide(**out, missing=t("shell.empty_text", lang))
    c = _Slide(slide, model, text, max(layer, 0), max(head, 0), lang, device)
    try:
        panels = FIGURES.get(slide.page, _attention)(c)
    except HeadlightError as exc:
        return HandoutSlide(**out, missing=error_message(exc, lang))
    except _Missing as why:
        return HandoutSlide(**out, missing=str(why))
    if not panels:
        return HandoutSlide(**out, missing=t("handout.no_figure", lang))
    return HandoutSlide(**out, panels=tuple(panels))


def handout_bytes(deck: Deck, device: str) -> bytes:
    """The deck as one PDF, in the deck's language (viz/handout.py)."""
    lang = deck.lang
    slides = [handout_slide(slide, device, lang) for slide in deck.slides]
    lines = [t("deck.handout.lines", lang, n=len(deck))]
    return handout_pdf(deck.title or t("page.deck", lang), lines, slides)
