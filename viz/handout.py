"""A lesson deck's handout as one PDF (matplotlib's PDF backend): a title page with the deck's title and its slides,
then one A4-landscape page per slide with the slide's title, where it looks (model, layer, head), the sentence, the
note, and the one-head attention map of the slide's view (query rows x key columns, the weights written in the cells
of a short sentence). No Streamlit and no model runs here: the caller passes the numbers and the strings, already in
the handout's language.

    pdf = handout_pdf("Attention, step by step", ["11 slides", "minilm-l6"],
                      [HandoutSlide("Q, K, V", note="...", where="minilm-l6 · Layer 0 · Head 0",
                                    sentence="I am good", weights=w, rows=toks, cols=toks)],
                      xlabel="key", ylabel="query", colorbar="attention weight")

Fonts: the text is TrueType embedded in the PDF (`pdf.fonttype` 42: a subset per font, searchable and copyable).
Hangul needs a CJK font: Noto Sans CJK (Debian's fonts-noto-cjk), found with matplotlib's font_manager. Its outlines
are CFF (PostScript), which a PDF's TrueType font program (FontFile2) may not hold, so the glyphs the handout uses are
subset with fontTools and converted to TrueType outlines (cu2qu, error under 1/1000 em) once per set of characters,
and that font is registered with matplotlib under a name of its own. Without the font (or fontTools) the handout is
still made, with DejaVu Sans (Hangul then shows as boxes): `cjk_font()` says which it is.
"""

from __future__ import annotations

import functools
import hashlib
import io
import logging
import tempfile
import threading
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .export import pyplot, short_label
from .theme import MASKED_BG, tick_step

PAGE = (11.69, 8.27)  # A4 landscape, inches
CJK_FAMILY = "Noto Sans CJK KR"  # the face of the CJK collection that the Korean text uses
MAX_ANNOTATED = 256  # cells: a map of a short sentence has its weights written in
MAX_VECTOR = 20_000  # cells drawn as vector rectangles (crisp at any zoom); a larger map is an embedded image
_LOCK = threading.Lock()
_DIR: list[Path] = []
log = logging.getLogger("headlight.handout")


@dataclass(frozen=True)
class HandoutSlide:
    title: str
    note: str = ""
    where: str = ""  # e.g. "minilm-l6 · Layer 3 · Head 1"
    sentence: str = ""
    weights: np.ndarray | None = None  # (rows, cols) one head's attention weights
    rows: Sequence[str] = field(default_factory=tuple)  # query tokens
    cols: Sequence[str] = field(default_factory=tuple)  # key tokens
    missing: str = ""  # shown instead of the map when there are no weights


# ---- fonts --------------------------------------------------------------------------------------------------------
def _cjk_file() -> tuple[str, int] | None:
    """(file, index in a collection) of the Korean face of Noto Sans CJK, or None."""
    pyplot()
    from matplotlib import font_manager

    for f in font_manager.fontManager.ttflist:
        if f.name == CJK_FAMILY and f.weight in (400, "normal", "regular"):
            return f.fname, 0
    return None


def _to_truetype(font) -> None:
    """A CFF-flavoured OpenType font turned into TrueType outlines in place (fontTools' otf2ttf recipe)."""
    from fontTools.pens.cu2quPen import Cu2QuPen
    from fontTools.pens.ttGlyphPen import TTGlyphPen
    from fontTools.ttLib import newTable

    order = font.getGlyphOrder()
    glyph_set = font.getGlyphSet()
    glyphs = {}
    for name in order:
        pen = TTGlyphPen(glyph_set)
        glyph_set[name].draw(Cu2QuPen(pen, max_err=1.0, reverse_direction=True))
        glyphs[name] = pen.glyph()
    font["loca"] = newTable("loca")
    glyf = font["glyf"] = newTable("glyf")
    glyf.glyphOrder = order
    glyf.glyphs = glyphs
    del font["CFF "]
    glyf.compile(font)
    maxp = font["maxp"] = newTable("maxp")
    maxp.tableVersion = 0x00010000
    for attr in ("maxTwilightPoints", "maxStorage", "maxFunctionDefs", "maxInstructionDefs", "maxStackElements",
                 "maxSizeOfInstructions", "maxComponentElements"):
        setattr(maxp, attr, 0)
    maxp.maxZones = 1
    maxp.compile(font)
    post = font["post"]
    post.formatType, post.extraNames, post.mapping, post.glyphOrder = 2.0, [], {}, order
    font.sfntVersion = "\x00\x01\x00\x00"


@functools.lru_cache(maxsize=32)
def _subset_family(chars: str) -> str | None:
    """A matplotlib family holding Noto Sans CJK KR's glyphs for `chars` as TrueType, or None."""
    found = _cjk_file()
    if found is None:
        return None
    try:
        from fontTools import subset
        from fontTools.ttLib import TTCollection, TTFont
    except ImportError:
        return None
    path, _ = found
    try:
        index = 0
        if path.lower().endswith((".ttc", ".otc")):
            coll = TTCollection(path, lazy=True)
            index = next(i for i, f in enumerate(coll.fonts) if f["name"].getDebugName(1) == CJK_FAMILY)
        font = TTFont(path, fontNumber=index)
        opts = subset.Options()
        opts.layout_features, opts.name_IDs, opts.hinting, opts.notdef_outline = [], ["*"], False, True
        opts.drop_tables += ["VORG", "vhea", "vmtx", "BASE", "GSUB", "GPOS"]
        sub = subset.Subsetter(opts)
        sub.populate(text=chars)
        sub.subset(font)
        if "CFF " in font:
            _to_truetype(font)
        digest = hashlib.sha256(chars.encode("utf-8")).hexdigest()[:12]
        family = f"Headlight CJK {digest}"
        for rec in font["name"].names:
            if rec.nameID in (1, 4, 16):  # family and full name: a name of its own; the PostScript name stays Noto's
                rec.string = family
        with _LOCK:
            if not _DIR:
                _DIR.append(Path(tempfile.mkdtemp(prefix="headlight-fonts-")))
            out = _DIR[0] / f"{digest}.ttf"
            font.save(str(out))
            from matplotlib import font_manager

            font_manager.fontManager.addfont(str(out))
        return family
    except Exception:  # noqa: BLE001 - a font we cannot convert: the handout falls back to the plain fonts
        log.exception("could not make the handout's CJK font")
        return None


def cjk_font(chars: str) -> str | None:
    """The family the handout uses for `chars` beyond Latin (None: DejaVu Sans only)."""
    base = "0123456789.,:;-+−·…“”()[]/×% abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    needed = "".join(sorted(set(chars) | set(base)))
    return _subset_family(needed)


# ---- text -----------------------------------------------------------------------------------------------------------
def _width(ch: str) -> int:
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def wrap(text: str, width: int, max_lines: int | None = None) -> list[str]:
    """Lines of at most `width` columns (a Hangul syllable takes two), words kept whole where they fit."""
    text = "".join(ch if ch.isprintable() or ch == "\n" else "\ufffd" for ch in str(text))
    lines: list[str] = []
    for para in text.splitlines() or [""]:
        line, w = "", 0
        for word in para.split(" "):
            ww = sum(_width(c) for c in word)
            if line and w + 1 + ww > width:
                lines.append(line)
                line, w = "", 0
            while ww > width:  # a word longer than a line: cut it
                cut, cw = "", 0
                for c in word:
                    if cw + _width(c) > width:
                        break
                    cut, cw = cut + c, cw + _width(c)
                lines.append(cut)
                word = word[len(cut):]
                ww -= cw
            line, w = (f"{line} {word}", w + 1 + ww) if line else (word, ww)
        lines.append(line)
    if max_lines is not None and len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] = lines[-1][: max(0, len(lines[-1]) - 1)] + "…"
    return lines


# ---- pages ----------------------------------------------------------------------------------------------------------
def _title_page(plt, title: str, lines: Sequence[str], slides: Sequence[HandoutSlide]):
    fig = plt.figure(figsize=PAGE)
    fig.text(0.07, 0.86, "\n".join(wrap(title or "Headlight", 48, 2)), fontsize=30, va="top")
    fig.text(0.07, 0.72, "\n".join(line for text in lines for line in wrap(text, 110, 2)), fontsize=13, va="top",
             color="#444444")
    toc = [f"{i:>2}.  {short_label(s.title, 70)}" for i, s in enumerate(slides, start=1)]
    half = (len(toc) + 1) // 2 if len(toc) > 14 else len(toc)
    for k, col in enumerate((toc[:half], toc[half:])):
        if col:
            fig.text(0.07 + 0.45 * k, 0.58, "\n".join(col), fontsize=12, va="top", linespacing=1.6)
    return fig


def _heatmap(ax, s: HandoutSlide, xlabel: str, ylabel: str, colorbar: str, fig) -> None:
    m = np.asarray(s.weights, dtype=float)
    rows, cols = m.shape
    shown = np.ma.masked_invalid(m)
    cmap = pyplot().get_cmap("viridis").with_extremes(bad=MASKED_BG)
    if rows * cols <= MAX_VECTOR:
        im = ax.pcolormesh(shown, cmap=cmap, vmin=0.0, vmax=1.0, edgecolors="none")
        ax.set_xlim(0, cols)
        ax.set_ylim(rows, 0)
        offset = 0.5
    else:
        im = ax.imshow(shown, cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto", interpolation="nearest")
        offset = 0.0
    ax.set_aspect("auto")
    for labels, n, setter, rot in ((s.cols, cols, ax.set_xticks, 90), (s.rows, rows, ax.set_yticks, 0)):
        step = tick_step(n, 48)
        idx = list(range(0, n, step))
        size = max(5, min(11, 260 / max(len(idx), 1)))
        names = [short_label(labels[i], 16) if i < len(labels) else str(i) for i in idx]
        setter([i + offset for i in idx], names, rotation=rot, fontsize=size)
    if rows * cols <= MAX_ANNOTATED:
        size = max(5, min(9, 90 / max(rows, cols)))
        for (i, j), v in np.ndenumerate(m):
            if np.isfinite(v):
                ax.text(j + offset, i + offset, f"{v:.2f}"[1:] if 0 <= v < 1 else f"{v:.1f}", ha="center",
                        va="center", fontsize=size, color="white" if v < 0.6 else "black")
    ax.set_xlabel(xlabel, fontsize=11)
    ax.set_ylabel(ylabel, fontsize=11)
    cb = fig.colorbar(im, ax=ax, fraction=0.04, pad=0.02)
    cb.ax.tick_params(labelsize=9)
    if colorbar:
        cb.set_label(colorbar, fontsize=10)


def _slide_page(plt, i: int, n: int, s: HandoutSlide, xlabel: str, ylabel: str, colorbar: str):
    fig = plt.figure(figsize=PAGE)
    fig.text(0.04, 0.95, "\n".join(wrap(s.title or "—", 70, 2)), fontsize=21, va="top")
    fig.text(0.96, 0.95, f"{i} / {n}", fontsize=11, ha="right", va="top", color="#666666")
    if s.weights is not None and np.asarray(s.weights).ndim == 2 and np.asarray(s.weights).size:
        ax = fig.add_axes((0.09, 0.12, 0.50, 0.68))
        _heatmap(ax, s, xlabel, ylabel, colorbar, fig)
    elif s.missing:
        fig.text(0.06, 0.5, "\n".join(wrap(s.missing, 70, 6)), fontsize=12, va="center", color="#666666")
    x, y = 0.66, 0.80
    for text, size, colour, width, most in ((s.where, 12, "#444444", 46, 2), (s.sentence and f"“{s.sentence}”", 12,
                                            "#222222", 46, 4), (s.note, 13, "#000000", 42, 16)):
        if not text:
            continue
        lines = wrap(text, width, most)
        fig.text(x, y, "\n".join(lines), fontsize=size, va="top", color=colour, linespacing=1.45)
        y -= (len(lines) * 1.45 * size / 72 + 0.25) / PAGE[1]
    return fig


def handout_pdf(title: str, lines: Sequence[str], slides: Sequence[HandoutSlide], *, xlabel: str = "key",
                ylabel: str = "query", colorbar: str = "") -> bytes:
    """The handout: a title page (the deck's title, `lines` under it, the slides' titles), then a page per slide."""
    plt = pyplot()
    texts = [title, *lines, xlabel, ylabel, colorbar]
    for s in slides:
        texts += [s.title, s.note, s.where, s.sentence, s.missing, *s.rows, *s.cols]
    family = cjk_font("".join(map(str, texts)))
    rc = {"pdf.fonttype": 42, "font.family": ["DejaVu Sans", *([family] if family else [])], "text.parse_math": False,
          "axes.unicode_minus": False}
    buf = io.BytesIO()
    from matplotlib.backends.backend_pdf import PdfPages

    with plt.rc_context(rc), PdfPages(buf, metadata={"Title": title or "Headlight", "Creator": "Headlight"}) as pdf:
        pages = [lambda: _title_page(plt, title, lines, slides)]
        pages += [functools.partial(_slide_page, plt, i, len(slides), s, xlabel, ylabel, colorbar)
                  for i, s in enumerate(slides, start=1)]
        for make in pages:
            fig = make()
            try:
                pdf.savefig(fig)
            finally:
                plt.close(fig)
    return buf.getvalue()
