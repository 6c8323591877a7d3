"""Share with the class (Streamlit): a large QR code of the current view's URL, so students open the exact view
(page, sentence, model, layer, head, token, step, language) on their phones.

QR library: segno (PyPI, maintained, pure Python, no dependencies; it writes PNG and SVG itself, no Pillow needed),
pinned in requirements.txt. The alternative, qrcode, needs Pillow for PNG. Error correction "M" (15 %), the
usual choice for a projected code; segno picks the smallest version that holds the URL.

The URL: `st.context.url` (Streamlit >= 1.46: scheme, host, port and the page path, without the query string) plus
the current query string from `st.query_params` (which the shell keeps in sync with the View). When the context
has no URL (AppTest, or an old Streamlit), the page's URL path is used with the query string, relative to the server.
"""

from __future__ import annotations

import io
from urllib.parse import urlencode

import segno
import streamlit as st

from i18n import t

from .widgets import session_lang

ERROR = "m"
SCALE = 10  # pixels per module in the PNG (a version-5 code is ~ 370 px wide)
MAX_QR_CHARS = 2_000  # a longer link makes a code too dense to scan from a projector (the largest holds ~2,300)


def current_url() -> str:
    """The page's URL with the current query string (every value, repeated keys kept)."""
    base = getattr(st.context, "url", None) or ""
    base = base.split("?", 1)[0].split("#", 1)[0]
    pairs = [(k, v) for k in st.query_params for v in st.query_params.get_all(k)]
    query = urlencode(pairs)
    return f"{base}?{query}" if query else base


def make_qr(url: str) -> segno.QRCode:
    """The QR code of `url` (byte mode, error level M)."""
    return segno.make(url, error=ERROR, micro=False, boost_error=False)


def qr_png(url: str, scale: int = SCALE) -> bytes:
    buf = io.BytesIO()
    make_qr(url).save(buf, kind="png", scale=scale, border=4, dark="#000000", light="#ffffff")
    return buf.getvalue()


def qr_svg(url: str, scale: int = SCALE) -> bytes:
    buf = io.BytesIO()
    make_qr(url).save(buf, kind="svg", scale=scale, border=4, xmldecl=False, svgns=True)
    return buf.getvalue()


def share_button(where=None, lang: str | None = None, key: str = "share") -> None:
    """A popover "Share with the class" (in `where`, e.g. st.sidebar) with a large QR code of the current URL.
    `key` prefixes the widget keys (two share buttons in one run need two keys)."""
    lg = lang or session_lang()
    where = where or st
    pop = where.popover(t("share.button", lg), help=t("share.help", lg), width="stretch", key=f"{key}_popover",
                        icon=":material/qr_code_2:",
                        on_change="rerun")
    if not pop.open:  # the code is made only while the popover is open: no QR work on other runs
        return
    url = current_url()
    with pop:
        if len(url) > MAX_QR_CHARS:
            st.info(t("share.too_long", lg, n=len(url)))
        else:
            st.image(qr_png(url), caption=t("share.caption", lg), width=360)
            st.download_button(t("share.download_svg", lg), qr_svg(url), "headlight-qr.svg", "image/svg+xml",
                               key=f"{key}_qr_svg")
        st.code(url or "/", language=None, wrap_lines=True)
