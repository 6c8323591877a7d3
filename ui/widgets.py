"""The one widget that draws a figure with its Export popover: PNG / SVG / PDF (matplotlib, slide quality) and CSV;
plus the small language helpers the pages share (the session's language, localised lazy tabs, table headers).

Exports are lazy: nothing is rendered with matplotlib, and no CSV is made, until the user opens the popover and
picks a format; a rerun never pays for them.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import streamlit as st

from analysis.metrics import METRICS
from i18n import DEFAULT_LANG, LANGS, catalogue, head_name, kv_head, pick_lang, t
from i18n.catalog import normalise
from viz.export import FORMATS, figure_bytes, heatmap_figure, matrix_csv
from viz.export_spec import ExportSpec, spec_of
from viz.html import HTML_MIME, figure_html
from viz.model_notes import ModelFacts, pad_label, specials_label

from .state import page_param, write_page_params
from .view import show_value

PLOTLY_CONFIG = {"displaylogo": False}
LANG_KEY = "lang"  # the sidebar's language widget (ui.state.K_LANG)
ARROWS_TAKEN = "_hl_arrows_taken"  # True while a lesson deck is presented: its bar owns the arrow keys (ui/deck.py)
# Streamlit's main area is focusable (its keys scroll it), and once a click or a key has focused it, it draws a grey
# 3 px frame round the whole page (an inset box-shadow on its ::before): on a projector, where the arrow keys move
# between slides or tour steps, no frame. The keys still work: the focus stays where it was, only unframed.
NO_FOCUS_FRAME_CSS = """<style>
[data-testid="stMain"]:focus::before, [data-testid="stMain"]:focus-visible::before { box-shadow: none !important; }
</style>"""


def session_lang() -> str:
    """The interface language of this session ("en" | "ko"): the sidebar's choice, else the URL's, else English.
    The one place that reads it; a page reads `View.lang`, set from this."""
    try:
        return pick_lang(st.session_state.get(LANG_KEY), st.query_params.get(LANG_KEY))
    except Exception:  # noqa: BLE001 - outside a Streamlit run (plain unit tests)
        return DEFAULT_LANG


def presenting() -> bool:
    """Whether a lesson deck is being presented: its bar is above the page (it owns the arrow keys and Back / Next)
    and the sidebar is hidden, so a page neither draws its own Back / Next nor points to the sidebar."""
    try:
        return bool(st.session_state.get(ARROWS_TAKEN))
    except Exception:  # noqa: BLE001 - outside a Streamlit run (plain unit tests)
        return False


def document_lang(lang: str) -> None:
    """Set the page's language, <html lang="...">, to the interface language. Streamlit serves one static index.html
    with lang="en", so a screen reader read a Korean page in an English voice (issue 26). A one-line script in an
    st.html element (not iframed: it runs in the app's own document) sets it on every run; it changes, and runs
    again, whenever the language does. Drawn at the end of the sidebar, where its empty element costs no room."""
    code = normalise(lang)
    st.sidebar.html(f"<script>document.documentElement.lang = {json.dumps(code)};</script>",
                    unsafe_allow_javascript=True)


def layer_head(layer: int, head: int, lang: str, kv: int | None = None) -> str:
    """'Layer 3 · Head 1' in the interface language (counted from 0): i18n.head_name, the one name of a head; with
    `kv` (shared_kv), the key/value head it shares: 'Layer 3 · Head 4 (KV 1)'."""
    return head_name(layer, head, lang, kv=kv)


def shared_kv(model, head: int, block: str = "decoder_self") -> int | None:
    """The key/value head a query head of `model` shares (grouped-query attention: SmolLM2's 9 query heads share 3),
    None for a model whose every head has its own and for cross-attention."""
    if model is None or block == "cross":
        return None
    return kv_head(head, model.config.n_heads, model.config.n_kv_heads)


def localised_tabs(names: Sequence[str], key: str, lang: str, *, url: bool = False, on_change="rerun", **fmt):
    """The one tab helper: lazy st.tabs (on_change="rerun": only the open tab is built, `tab.open`) labelled
    `t(name, lang, **fmt)` for each catalogue key in `names`. Session state holds the open tab's LABEL (Streamlit's
    tabs); a tab is known elsewhere by its id, the end of its catalogue key ("ffn" for "steps.tab.ffn"). A label of
    another language (a change of language) or an id becomes the same tab in this one; any other value falls back to
    the first tab. `url`: the open tab's id is in the page's link under `key`, so a
    share link and a deck slide reopen it: the link's value (ui/state.py page_param; an old link's label too) opens
    its tab, and one that names no tab opens the first with a notice."""
    labels = [t(n, lang, **fmt) for n in names]
    ids = [n[n.rfind(".") + 1:] for n in names]
    ss = st.session_state

    def index(value) -> int | None:
        if value in labels:
            return labels.index(value)
        if value in ids:
            return ids.index(value)
        for other in LANGS:
            others = [t(n, other, **fmt) for n in names]
            if value in others:
                return others.index(value)
        return None

    asked = page_param(key) if url else None
    if asked is not None:
        i = index(asked)
        if i is None:
            st.warning(t("shell.url.tab", lang, value=show_value(asked), tab=labels[0]), icon=":material/warning:")
        ss[key] = labels[i or 0]
    elif ss.get(key) is not None and ss[key] not in labels:
        ss[key] = labels[index(ss[key]) or 0]
    tabs = st.tabs(labels, key=key, on_change=on_change)
    if url:
        open_ = ss.get(key)
        write_page_params({key: ids[labels.index(open_) if open_ in labels else 0]})
    return tabs


def table(data, lecture: bool, *, key: str | None = None, height: int | None = None) -> None:
    """A table without its index: st.dataframe (sortable, its own scrolling), or in lecture mode st.table, whose
    HTML text takes the lecture style's bigger font (ui.state.LECTURE_CSS), which the data grid, drawn on a canvas,
    cannot; a tall one scrolls within `height` px."""
    if lecture:
        st.table(data, hide_index=True, height=height or "content")
    else:
        st.dataframe(data, hide_index=True, key=key, height=height or "auto", width="stretch")


def rename_columns(rows: list[dict], lang: str, names: dict[str, str] | None = None, **fmt) -> list[dict]:
    """Table rows with their headers in the interface language. analysis/ returns rows keyed by plain names
    ("layer", "most_attended", "entropy"); each is shown as the catalogue's "col.<name>" (a metric:
    "ex.metric.<name>"), or as `names[name]` (a label already in the interface language) when given; a header with no
    entry stays as it is. `fmt` fills the headers' placeholders (specials=..., model_specials)."""
    if not rows:
        return rows
    cat = catalogue(lang)
    fmt.setdefault("specials", t("notes.specials.none", lang))  # "Mass on {specials}" where the caller names none
    keys = {k: f"ex.metric.{k}" if k in METRICS else f"col.{k}" for k in rows[0]}
    new = {k: (names or {}).get(k) or (t(keys[k], lang, **fmt) if keys[k] in cat else k) for k in rows[0]}
    return [{new.get(k, k): v for k, v in r.items()} for r in rows]


_FACTS: dict[int, tuple] = {}  # id(loaded model) -> (weak reference to it, its ModelFacts)


def model_facts(model) -> ModelFacts:
    """What the captions say about a loaded model, from its config and tokenizer (viz.model_notes); made once per
    loaded model (it tokenizes a probe: 1 % of an explorer run's CPU when made on every call, issue 39)."""
    hit = _FACTS.get(id(model))
    if hit is not None and hit[0]() is model:
        return hit[1]
    facts = ModelFacts.from_model(model)
    try:
        _FACTS[id(model)] = (weakref.ref(model), facts)
    except TypeError:  # not weakly referable: made each time
        pass
    return facts


def model_specials(view) -> str:
    """The view's model's own special tokens for a label ("[CLS]/[SEP]", "<s>/</s>", or "special tokens")."""
    return specials_label(model_facts(view.model), view.lang)


def model_pad(view) -> str:
    """The view's model's padding token ("[PAD]", "<pad>")."""
    return pad_label(model_facts(view.model), view.lang)


@dataclass
class Export:
    """What a figure exports: its numbers (CSV) and a matplotlib twin (PNG / SVG / PDF). By default the twin is
    `viz.export.heatmap_figure(matrix, rows, cols, title=title, subtitle=subtitle, **heatmap)`."""

    matrix: np.ndarray
    rows: list | None = None
    cols: list | None = None
    title: str = ""
    subtitle: str = ""
    filename: str = "figure"
    make_figure: Callable[[], object] | None = None  # a custom matplotlib figure
    heatmap: dict | None = None  # keyword arguments for heatmap_figure (cmap, vmin, masked, xlabel ...)

    def figure(self):
        if self.make_figure is not None:
            return self.make_figure()
        kw = dict(self.heatmap or {})
        lg = session_lang()
        kw.setdefault("xlabel", t("ex.axis.key", lg))  # the axis titles in the interface language
        kw.setdefault("ylabel", t("ex.axis.query", lg))
        return heatmap_figure(self.matrix, self.rows, self.cols, title=self.title, subtitle=self.subtitle, **kw)

    @classmethod
    def of(cls, spec: ExportSpec, subtitle: str = "", filename: str = "figure", context: str = "") -> Export:
        """The export a builder described (viz.export_spec), with the page's subtitle (the sentence), file name and
        context before its title ("model · layer · head · " + the builder's title)."""
        return cls(spec.matrix, spec.rows, spec.cols, f"{context} · {spec.title}" if context else spec.title, subtitle,
                   filename,
                   heatmap=spec.heatmap_kwargs() or None)


def slug(s: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in s)[:60].strip("-") or "figure"


def export_popover(key: str, export: Export, fig=None) -> None:
    """PNG / SVG / PDF (matplotlib), CSV, and, for a plotly figure, a standalone interactive HTML file that opens
    offline (plotly.js embedded; built only when clicked)."""
    name = slug(export.filename)
    lg = session_lang()
    pop = st.popover(t("export.button", lg), help=t("export.help", lg), key=f"{key}-popover", on_change="rerun")
    if not pop.open:  # its contents are drawn only while it is open: one element per figure on every other run
        return
    with pop:
        fmt = st.radio(t("export.format", lg), [*FORMATS, "csv", *(["html"] if fig is not None else [])],
                       horizontal=True, key=f"{key}-fmt", index=None)
        if fmt == "html":
            st.download_button(t("export.download", lg, fmt="HTML"),
                               lambda: figure_html(fig, title=export.title or export.filename),
                               f"{name}.html", HTML_MIME, key=f"{key}-html", help=t("widgets.html_help", lg))
        elif fmt == "csv":
            st.download_button(t("export.download", lg, fmt="CSV"), matrix_csv(export.matrix, export.rows, export.cols),
                               f"{name}.csv", "text/csv", key=f"{key}-csv")
        elif fmt:
            st.download_button(t("export.download", lg, fmt=fmt.upper()), figure_bytes(export.figure(), fmt),
                               f"{name}.{fmt}", FORMATS[fmt], key=f"{key}-{fmt}")


def chart(fig, key: str, export: Export | None = None, *, subtitle: str = "", filename: str = "", context: str = "",
          **kwargs):
    """st.plotly_chart plus its Export popover under it: `export`, else the one its builder attached (viz.export_spec)
    when `filename` names the file (with `subtitle`, the sentence, under its title, and `context`, the page's model,
    layer and head, before it). Returns the chart's event state."""
    spec = spec_of(fig) if export is None and filename else None
    if spec is not None:
        export = Export.of(spec, subtitle, filename, context)
    state = st.plotly_chart(fig, key=key, config={**PLOTLY_CONFIG, **kwargs.pop("config", {})}, **kwargs)
    if export is not None:
        export_popover(f"{key}-export", export, fig)
    return state


def head_from_selection(state) -> tuple[int, int] | None:
    """(layer, head) of the first clicked marker in a plotly_chart selection state, else None."""
    sel = state.get("selection") if isinstance(state, dict) else getattr(state, "selection", None)
    points = (sel.get("points") if isinstance(sel, dict) else getattr(sel, "points", None)) or []
    for p in points:
        cd = p.get("customdata") if isinstance(p, dict) else None
        if isinstance(cd, dict):  # a typed-array slice arrives as {"0": layer, "1": head}
            cd = [cd.get("0", cd.get(0)), cd.get("1", cd.get(1))]
        try:
            return int(cd[0]), int(cd[1])
        except (TypeError, ValueError, IndexError, KeyError):
            continue
    return None
