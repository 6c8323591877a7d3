"""The "Share with the class" QR code (ui/share.py, segno): the code encodes the current view's URL — decoded
with zxing-cpp when it is installed, else compared with segno's own matrix for the same data and error level — and
the popover shows it for the URL built from st.context.url and the query string."""

from __future__ import annotations

import numpy as np
import pytest
import segno
from streamlit.testing.v1 import AppTest

from i18n import t
from ui import share

URLS = [
    "http://localhost:8501/?text=The+animal+didn%27t+cross+the+street+because+it+was+tired&model=minilm-l6&layer=0"
    "&head=0&token=10",
    "http://192.168.0.10:8501/tour?text=%3Cscript%3Ealert%281%29%3C%2Fscript%3E&step=6&lang=ko",
    "http://lecture.local/steps?text=" + "%EA%B7%B8+%EB%8F%99%EB%AC%BC%EC%9D%80" * 20 + "&layer=3&head=1",
]


def _image(qr: segno.QRCode, scale: int = 4, border: int = 4) -> np.ndarray:
    """The code as a grey image: dark modules 0, light 255, with a quiet zone."""
    m = np.array([list(row) for row in qr.matrix], dtype=np.uint8)  # 1 = dark
    m = np.pad(m, border)
    return np.kron(np.where(m == 1, 0, 255).astype(np.uint8), np.ones((scale, scale), dtype=np.uint8))


@pytest.mark.parametrize("url", URLS)
def test_qr_encodes_the_url(url):
    qr = share.make_qr(url)
    assert qr.error == "M" and not qr.is_micro
    try:
        import zxingcpp
    except ImportError:  # no decoder installed: the library's own matrix for the same data and error level
        ref = segno.make(url, error="m", micro=False, boost_error=False)
        assert qr.matrix == ref.matrix and qr.version == ref.version
        return
    found = zxingcpp.read_barcodes(_image(qr))
    assert [r.text for r in found] == [url]


def test_png_and_svg():
    png = share.qr_png(URLS[0])
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 500
    svg = share.qr_svg(URLS[0]).decode()
    assert svg.lstrip().startswith("<svg") and "path" in svg


def _page():
    import streamlit as st

    from ui import share

    share.share_button(st.sidebar)
    st.markdown("URL=" + share.current_url())


def test_popover_shows_the_current_url():
    at = AppTest.from_function(_page, default_timeout=60)
    at.query_params["text"] = "<script>alert(1)</script>"
    at.query_params["step"] = "6"
    at.query_params["lang"] = "ko"
    at.run()
    assert not at.exception
    url = [m.value for m in at.markdown if m.value.startswith("URL=")][0][4:]
    assert "text=%3Cscript%3Ealert%281%29%3C%2Fscript%3E" in url and "step=6" in url and "lang=ko" in url
    # one popover, in the sidebar (where the shell puts it: share_button(sb, lang)), labelled in the session's language
    assert at.main.get("popover") == []
    (pop,) = at.sidebar.get("popover")
    assert pop.proto.popover.label == t("share.button", "ko") == "수업에 공유"
    assert pop.proto.popover.help == t("share.help", "ko")
    assert pop.proto.popover.icon == ":material/qr_code_2:"
    assert pop.proto.popover.open is False
    assert list(pop.children.values()) == [], "no QR work while the popover is closed"
    assert not at.sidebar.get("image") and not at.sidebar.code
    at.session_state["share_popover"] = True  # the lecturer opens it
    at.run()
    assert not at.exception
    (pop,) = at.sidebar.get("popover")
    assert pop.proto.popover.open is True
    image, download, code = pop.children.values()  # the QR image, its SVG download, the URL as text
    assert (image.type, download.type, code.type) == ("image", "download_button", "code")
    assert code.value == url
    assert image.proto.imgs[0].caption == t("share.caption", "ko")
    assert download.proto.label == t("share.download_svg", "ko")
    assert at.main.get("popover") == [] and not at.main.get("image")


def test_the_shell_puts_the_share_popover_in_the_sidebar():
    from pathlib import Path

    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=180)
    at.query_params["lang"] = "en"
    at.run()
    assert not at.exception
    label = t("share.button", "en")
    in_sidebar = [p for p in at.sidebar.get("popover") if p.proto.popover.label == label]
    assert len(in_sidebar) == 1 and in_sidebar[0].proto.popover.id.endswith("-share_popover")
    assert [p for p in at.main.get("popover") if p.proto.popover.label == label] == []


def test_a_link_too_long_for_a_qr_code_gets_a_message():
    at = AppTest.from_function(_page, default_timeout=60)
    at.query_params["text"] = "word " * 1000
    at.run()
    at.session_state["share_popover"] = True
    at.run()
    assert not at.exception
    assert any("too many for a QR code" in i.value for i in at.sidebar.info)  # share.too_long
