"""Share with the class (Streamlit): a dialog with a large QR code of a short link to the current view, so students
open the exact view (page, sentence, model, layer, head, token, step, language) on their phones.

The short link: the view's path and query string (`view_payload`) are stored with ui/shortlinks.py (content-addressed,
on disk, shared by every app process) and the link is `<base>/s/<id>`; the door (serve/door.py) answers it with a
307 to the stored path and query. A Korean sentence makes a ~400-character link once percent-encoded, a dense code
that a phone cannot read from the back row; the short link is ~30-45 characters (a version 3 code, 29 x 29 modules, at error level M).

The base must be a host the students' phones can reach: ui/hosts.py `public_base` ($HEADLIGHT_PUBLIC_URL, else a
non-loopback browser URL, else the LAN address when the server listens on all interfaces, else localhost with a
warning in the dialog).

QR library: segno (PyPI, pure Python, writes PNG and SVG itself), pinned in requirements.txt. Error correction at
least "M" (segno raises it for free when the version has room: `boost_error`), the usual choice for a projected code.
"""

from __future__ import annotations

import html
import io
import os
from urllib.parse import urlencode, urlsplit

import segno
import streamlit as st

from i18n import t

from . import shortlinks
from .hosts import PUBLIC_URL_ENV, Base, lan_address, listens_on_all, public_base
from .widgets import session_lang

ERROR = "m"
SCALE = 10  # pixels per module in the PNG (SVG scales itself)
MAX_QR_CHARS = 2_000  # a longer link makes a code too dense to scan from a projector (the largest holds ~2,300)
SHORT_PREFIX = "/s/"  # the door answers <base>/s/<id>
DIALOG_WIDTH = 1400  # px (narrower screens: the screen's width)
QR_PX = 760  # the code's width with its quiet zone: at 1600 x 1000 most of the dialog's height (at most 72 % of the
# screen's height; on a phone, the column's width)


def view_payload(page: str = "") -> str:
    """The current view's path and query string (no scheme or host): what a short link stores. The path is the
    browser's (st.context.url) when known, else the page's URL path ("" for the default page)."""
    url = getattr(st.context, "url", None)
    path = (urlsplit(url).path or "/") if url else "/" + page.strip("/")
    pairs = [(k, v) for k in st.query_params for v in st.query_params.get_all(k)]
    query = urlencode(pairs)
    return f"{path}?{query}" if query else path


def current_url() -> str:
    """The page's full URL with the current query string (every value, repeated keys kept)."""
    base = getattr(st.context, "url", None) or ""
    base = base.split("?", 1)[0].split("#", 1)[0]
    pairs = [(k, v) for k in st.query_params for v in st.query_params.get_all(k)]
    query = urlencode(pairs)
    return f"{base}?{query}" if query else base


def current_base() -> Base:
    """public_base for this session: the environment, the browser's URL, Streamlit's server options."""
    address = st.get_option("server.address")
    lan = lan_address() if listens_on_all(address) else None
    return public_base(os.environ.get(PUBLIC_URL_ENV), getattr(st.context, "url", None), address,
                       int(st.get_option("server.port")), lan)


def short_link(base: Base, payload: str) -> str:
    """Store the payload and return `<base>/s/<id>`."""
    return base.url + SHORT_PREFIX + shortlinks.put("view", payload)


def make_qr(url: str) -> segno.QRCode:
    """The QR code of `url` (byte mode, error level M or higher when the version has room)."""
    return segno.make(url, error=ERROR, micro=False, boost_error=True)


def qr_png(url: str, scale: int = SCALE) -> bytes:
    buf = io.BytesIO()
    make_qr(url).save(buf, kind="png", scale=scale, border=4, dark="#000000", light="#ffffff")
    return buf.getvalue()


def qr_svg(url: str, scale: int = SCALE) -> bytes:
    buf = io.BytesIO()
    make_qr(url).save(buf, kind="svg", scale=scale, border=4, xmldecl=False, svgns=True)
    return buf.getvalue()


_CSS = """<style>
.share-link {font-size: clamp(1.4rem, 5vw, 2.4rem); font-weight: 600; line-height: 1.25; overflow-wrap: anywhere}
.st-key-share_qr img {image-rendering: pixelated; max-height: 72vh; max-width: 100%; object-fit: contain}
</style>"""


def share_dialog(lang: str, page: str = "") -> None:
    """The dialog's contents: the code of the short link, the link in large text, a warning when only this machine
    can open it, the code as SVG."""
    base = current_base()
    payload = view_payload(page)
    try:
        link = short_link(base, payload)
    except (OSError, ValueError) as exc:  # the link store is not writable, or the payload is over its limit
        st.error(t("share.store_failed", lang, error=str(exc)))
        link = current_url() or payload
    st.html(_CSS)
    if not base.reachable:
        st.warning(t("share.localhost", lang, url=f"`{base.url}`"))  # as code: no link, the particle outside it
    if len(link) > MAX_QR_CHARS:
        st.info(t("share.too_long", lang, n=len(link)))
    else:
        left, right = st.columns([3, 2], vertical_alignment="center")
        with left.container(key="share_qr"):
            scale = max(SCALE, -(-QR_PX // make_qr(link).symbol_size(scale=1)[0]))  # no upscaling blur
            st.image(qr_png(link, scale=scale), width=QR_PX, output_format="PNG")
        with right:
            st.markdown(t("share.caption", lang))
            st.caption(t("share.link_label", lang))
            host, _, path = link.split("://", 1)[-1].partition("/")  # a line break, if any, before the path
            st.html(f'<div class="share-link">{html.escape(host)}<wbr>/{html.escape(path)}</div>')
            st.code(link, language=None, wrap_lines=True)
            st.download_button(t("share.download_svg", lang), qr_svg(link), "headlight-qr.svg", "image/svg+xml",
                               key="share_qr_svg", on_click="ignore")


def share_button(where=None, lang: str | None = None, key: str = "share", page: str = "") -> None:
    """A button "Share with the class" (in `where`, e.g. st.sidebar) that opens the share dialog. `key`: the button's
    key (two share buttons in one run need two keys); `page`: the page's URL path (used when the browser's URL is
    unknown)."""
    lg = lang or session_lang()
    where = where or st
    if where.button(t("share.button", lg), help=t("share.help", lg), width="stretch", key=f"{key}_button",
                    icon=":material/qr_code_2:"):
        st.dialog(t("share.title", lg), width=DIALOG_WIDTH)(share_dialog)(lg, page)
