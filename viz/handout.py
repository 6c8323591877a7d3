"""A lesson deck's handout as one PDF (matplotlib's PDF backend): a title page with the deck's title and its slides,
then one A4-landscape page per slide with the slide's title, where it looks (model, layer, head), the sentence, the
note, and the figures of the slide's own view (`Panel`s: the attention map of an explorer slide, Q, K and V of a
"Q, K, V" step, the decoder's masked self-attention and cross-attention of a decoder slide, a token table, the
output probabilities; numbers written in the cells of a small map). No Streamlit and no model runs here: the caller
(ui/handout.py) passes the numbers and the strings, already in the handout's language.

    pdf = handout_pdf("Attention, step by step", ["11 slides"],
                      [HandoutSlide("Q, K, V", note="...", where="minilm-l6 · Layer 0 · Head 0", sentence="I am good",
                                    panels=[attention_panel(w, toks, toks, xlabel="key", ylabel="query")])])

Every number a cell shows is `theme.number_text` of the value (`cell_labels`), and every panel is shrunk until its
tick labels, axis titles and colour bar lie on the page (`_fit`).

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
from .theme import MASKED_BG, number_text, tick_step

PAGE = (11.69, 8.27)  # A4 landscape, inches
CJK_FAMILY = "Noto Sans CJK KR"  # the face of the CJK collection that the Korean text uses
MAX_ANNOTATED = 256  # cells: a map of a short sentence has its weights written in
MAX_VECTOR = 20_000  # cells drawn as vector rectangles (crisp at any zoom); a larger map is an embedded image
_LOCK = threading.Lock()
_DIR: list[Path] = []
log = logging.getLogger("headlight.handout")


@dataclass(frozen=True)
class Panel:
    """One figure of a handout page: a heatmap (`matrix`), a bar chart (`bars` over `cols`) or a text table (`table`,
    its first row the header). The numbers are the caller's, drawn as they are: a cell's text is
    theme.number_text of its value, so the PDF's text reads back as the model's numbers."""

    title: str = ""
    matrix: np.ndarray | None = None  # (rows, cols)
    rows: Sequence[str] = ()  # row labels (query tokens, tokens)
    cols: Sequence[str] = ()  # column labels (key tokens, dimensions; a bar chart's bars)
    xlabel: str = ""
    ylabel: str = ""
    colorbar: str = ""
    vmin: float | None = None  # the colour range; None: the matrix's own (symmetric about 0 when diverging)
    vmax: float | None = None
    diverging: bool = False  # signed values (Q, K, scores, hidden states): red-blue about 0; else viridis
    masked: np.ndarray | None = None  # (rows, cols) bool, True = a blocked cell (drawn grey, no number)
    bars: Sequence[float] | None = None  # one value per entry of `cols` (probabilities)
    table: Sequence[Sequence[str]] | None = None  # rows of text, the first one the header
    digits: int = 2  # decimals of the numbers written in cells (a mask of 0s and 1s: 0)


@dataclass(frozen=True)
class HandoutSlide:
    title: str
    note: str = ""
    where: str = ""  # e.g. "minilm-l6 · Layer 3 · Head 1"
    sentence: str = ""
    panels: Sequence[Panel] = field(default_factory=tuple)  # the figures of the slide's own view, at most 4
    missing: str = ""  # shown instead of the figures when there are none


def attention_panel(weights, rows: Sequence[str], cols: Sequence[str], *, title: str = "", xlabel: str = "key",
                    ylabel: str = "query", colorbar: str = "") -> Panel:
    """One head's attention weights (query rows x key columns), on the 0-1 scale."""
    return Panel(title, np.asarray(weights, dtype=float), tuple(rows), tuple(cols), xlabel, ylabel, colorbar,
                 vmin=0.0, vmax=1.0)


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


REGION = (0.05, 0.07, 0.61, 0.84)  # (left, bottom, right, top) of a page's figures, in page fractions
MAX_TABLE_ROWS = 28


def cell_labels(matrix: np.ndarray, masked: np.ndarray | None = None, digits: int = 2) -> list[tuple[int, int, str]]:
    """(row, column, text) of every number a small map writes in its cells (theme.number_text, short: ".42",
    "1.00"); blocked and non-finite cells write none. The one rule, so a test can read the PDF back against it."""
    m = np.asarray(matrix, dtype=float)
    if m.size > MAX_ANNOTATED:
        return []
    out = []
    for (i, j), v in np.ndenumerate(m):
        if np.isfinite(v) and not (masked is not None and masked[i, j]):
            out.append((i, j, number_text(v, digits, short=True)))
    return out


def _range(p: Panel, m: np.ndarray) -> tuple[float, float]:
    finite = m[np.isfinite(m)]
    if p.masked is not None:
        finite = m[np.isfinite(m) & ~np.asarray(p.masked, dtype=bool)]
    lo = p.vmin if p.vmin is not None else (float(finite.min()) if finite.size else 0.0)
    hi = p.vmax if p.vmax is not None else (float(finite.max()) if finite.size else 1.0)
    if p.diverging and p.vmin is None and p.vmax is None:
        lim = max(abs(lo), abs(hi)) or 1.0
        lo, hi = -lim, lim
    return lo, (hi if hi > lo else lo + 1.0)


def _ticks(ax, labels: Sequence[str], n: int, axis: str, offset: float) -> None:
    """Tick labels of one axis, shortened to 16 characters: as many as fit the axis' length at 5-9 pt, one line
    of text each (a label is never drawn over its neighbour; the others are left out evenly)."""
    box = ax.get_position()
    length = (box.width * PAGE[0] if axis == "x" else box.height * PAGE[1]) * 72  # points
    size = max(5.0, min(9.0, length / max(n, 1) / 1.25))
    step = tick_step(n, max(1, int(length / (size * 1.25))))
    idx = list(range(0, n, step))
    names = [short_label(labels[i], 16) if i < len(labels) else str(i) for i in idx]
    if axis == "x":
        ax.set_xticks([i + offset for i in idx], names, rotation=90, fontsize=size)
    else:
        ax.set_yticks([i + offset for i in idx], names, fontsize=size)


def _heatmap(ax, p: Panel) -> None:
    m = np.asarray(p.matrix, dtype=float)
    rows, cols = m.shape
    masked = None if p.masked is None else np.asarray(p.masked, dtype=bool)
    shown = np.ma.masked_where(masked, m) if masked is not None else np.ma.masked_invalid(m)
    plt = pyplot()
    cmap = plt.get_cmap("RdBu_r" if p.diverging else "viridis").with_extremes(bad=MASKED_BG)
    lo, hi = _range(p, m)
    if rows * cols <= MAX_VECTOR:
        im = ax.pcolormesh(shown, cmap=cmap, vmin=lo, vmax=hi, edgecolors="none")
        ax.set_xlim(0, cols)
        ax.set_ylim(rows, 0)
        offset = 0.5
    else:
        im = ax.imshow(shown, cmap=cmap, vmin=lo, vmax=hi, aspect="auto", interpolation="nearest")
        offset = 0.0
    ax.set_aspect("auto")
    _ticks(ax, p.cols, cols, "x", offset)
    _ticks(ax, p.rows, rows, "y", offset)
    labels = cell_labels(m, masked, p.digits)
    box = ax.get_position()
    cell_w, cell_h = box.width * PAGE[0] * 72 / cols, box.height * PAGE[1] * 72 / rows  # points
    longest = max((len(text) for _, _, text in labels), default=1)
    size = min(9.0, cell_w / (longest * 0.62), cell_h / 1.3)
    if labels and size >= 4.0:  # numbers that fit their cells, or none
        for i, j, text in labels:
            v = m[i, j]
            dark = (v - lo) / (hi - lo) < 0.6 if not p.diverging else abs(v) > 0.6 * max(abs(lo), abs(hi))
            ax.text(j + offset, i + offset, text, ha="center", va="center", fontsize=size,
                    color="white" if dark else "black")
    ax.set_xlabel(p.xlabel, fontsize=10)
    ax.set_ylabel(p.ylabel, fontsize=10)
    cax = ax.inset_axes((1.02, 0.0, 0.035, 1.0))  # moves with the map: the fit below keeps both on the page
    cb = ax.figure.colorbar(im, cax=cax)
    cb.ax.tick_params(labelsize=8)
    if p.colorbar:
        cb.set_label(p.colorbar, fontsize=9)


def _bars(ax, p: Panel) -> None:
    vals = [float(v) for v in p.bars]
    y = np.arange(len(vals))
    ax.barh(y, vals, color="#4e79a7")
    ax.set_yticks(y, [short_label(c, 20) for c in p.cols], fontsize=10)
    ax.set_ylim(len(vals) - 0.5, -0.5)
    top = max(vals, default=1.0) or 1.0
    ax.set_xlim(0, top * 1.25)
    for i, v in enumerate(vals):
        ax.text(v + top * 0.02, i, number_text(v, 3), va="center", fontsize=10)
    ax.set_xlabel(p.xlabel, fontsize=10)


def _table(ax, p: Panel) -> None:
    rows = [list(map(str, r)) for r in p.table]
    head, body = rows[0], rows[1:]
    if len(body) > MAX_TABLE_ROWS:
        body = body[: MAX_TABLE_ROWS - 1] + [["…"] * len(head)]
    ax.axis("off")
    cells = [[short_label(c, 34) for c in r] for r in body] or [[""] * len(head)]
    tab = ax.table(cellText=cells, colLabels=[short_label(c, 24) for c in head], loc="upper left", cellLoc="left")
    tab.auto_set_font_size(False)
    tab.set_fontsize(max(6, min(10, 300 / max(len(cells), 1))))
    tab.auto_set_column_width(list(range(len(head))))


def _grid(n: int) -> tuple[int, int]:
    return (1, n) if n <= 3 else (2, 2)


def _fit(fig, axes: list, cells: list[tuple[float, float, float, float]]) -> None:
    """Shrink each axes until everything it draws (ticks, labels, title, colour bar) lies inside its cell: the
    labels of a long token or a Korean axis title never run off the page."""
    renderer = fig.canvas.get_renderer()
    for _ in range(4):
        moved = False
        for ax, (x0, y0, x1, y1) in zip(axes, cells):
            box = ax.get_tightbbox(renderer).transformed(fig.transFigure.inverted())
            pos = ax.get_position()
            left, right = max(0.0, x0 - box.x0), max(0.0, box.x1 - x1)
            bottom, top = max(0.0, y0 - box.y0), max(0.0, box.y1 - y1)
            if left + right + bottom + top > 1e-4:
                moved = True
                w = max(0.05, pos.width - left - right - 0.004)
                h = max(0.05, pos.height - bottom - top - 0.004)
                ax.set_position((pos.x0 + left + 0.002, pos.y0 + bottom + 0.002, w, h))
        if not moved:
            return


def _panels(fig, panels: Sequence[Panel]) -> None:
    panels = list(panels)[:4]
    nr, nc = _grid(len(panels))
    x0, y0, x1, y1 = REGION
    cw, ch = (x1 - x0) / nc, (y1 - y0) / nr
    axes, cells = [], []
    for k, p in enumerate(panels):
        r, c = divmod(k, nc)
        cell = (x0 + c * cw, y1 - (r + 1) * ch, x0 + (c + 1) * cw, y1 - r * ch)
        ax = fig.add_axes((cell[0] + 0.06 * cw, cell[1] + 0.12 * ch, 0.78 * cw, 0.78 * ch))
        if p.matrix is not None and np.asarray(p.matrix).ndim == 2 and np.asarray(p.matrix).size:
            _heatmap(ax, p)
        elif p.bars is not None:
            _bars(ax, p)
        elif p.table is not None:
            _table(ax, p)
        else:
            ax.axis("off")
        if p.title:
            ax.set_title("\n".join(wrap(p.title, int(70 / nc), 2)), fontsize=12 if nc == 1 else 10)
        axes.append(ax)
        cells.append(cell)
    _fit(fig, axes, cells)


def _slide_page(plt, i: int, n: int, s: HandoutSlide):
    fig = plt.figure(figsize=PAGE)
    fig.text(0.04, 0.95, "\n".join(wrap(s.title or "—", 70, 2)), fontsize=21, va="top")
    fig.text(0.96, 0.95, f"{i} / {n}", fontsize=11, ha="right", va="top", color="#666666")
    if s.panels:
        _panels(fig, s.panels)
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


def handout_pdf(title: str, lines: Sequence[str], slides: Sequence[HandoutSlide]) -> bytes:
    """The handout: a title page (the deck's title, `lines` under it, the slides' titles), then a page per slide."""
    plt = pyplot()
    texts = [title, *lines]
    for s in slides:
        texts += [s.title, s.note, s.where, s.sentence, s.missing]
        for p in s.panels:
            texts += [p.title, p.xlabel, p.ylabel, p.colorbar, *p.rows, *p.cols,
                      *(c for r in (p.table or ()) for c in r)]
    family = cjk_font("".join(map(str, texts)))
    rc = {"pdf.fonttype": 42, "font.family": ["DejaVu Sans", *([family] if family else [])], "text.parse_math": False,
          "axes.unicode_minus": False}
    buf = io.BytesIO()
    from matplotlib.backends.backend_pdf import PdfPages

    with plt.rc_context(rc), PdfPages(buf, metadata={"Title": title or "Headlight", "Creator": "Headlight"}) as pdf:
        pages = [lambda: _title_page(plt, title, lines, slides)]
        pages += [functools.partial(_slide_page, plt, i, len(slides), s) for i, s in enumerate(slides, start=1)]
        for make in pages:
            fig = make()
            try:
                pdf.savefig(fig)
            finally:
                plt.close(fig)
    return buf.getvalue()
