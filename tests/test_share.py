"""Share with the class (ui/share.py, ui/hosts.py, serve/door.py): the sidebar button opens a dialog with a large QR
code of a short link `<base>/s/<id>`; the code decodes (zxing-cpp) to a link of at most 100 characters whose host a
phone can reach, and the door answers the link with a 307 to the exact view (page and query string)."""

from __future__ import annotations

import asyncio
import contextlib
import io
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest
import zxingcpp
from PIL import Image
from streamlit.testing.v1 import AppTest

from i18n import t
from ui import hosts, share, shortlinks

KOREAN = "철수는 영희에게 책을 빌려주었는데, 그녀는 그것을 아직 돌려주지 않았다."
VIEW = {"text": KOREAN, "model": "minilm-l6", "layer": "3", "head": "1", "token": "4", "step": "6", "lang": "ko"}
URLS = [
    "http://localhost:8501/?text=The+animal+didn%27t+cross+the+street+because+it+was+tired&model=minilm-l6&layer=0"
    "&head=0&token=10",
    "http://192.168.0.10:8501/s/k3m9x2ab5q",
    "http://lecture.local/steps?text=" + "%EA%B7%B8+%EB%8F%99%EB%AC%BC%EC%9D%80" * 20 + "&layer=3&head=1",
]


@pytest.fixture(autouse=True)
def _state(tmp_path, monkeypatch):
    monkeypatch.setenv("HEADLIGHT_STATE_DIR", str(tmp_path))
    monkeypatch.delenv(hosts.PUBLIC_URL_ENV, raising=False)


def share_payload_for(view: dict, path: str) -> str:
    return path + "?" + urlencode(list(view.items()))


@contextlib.contextmanager
def server_options(**values):
    """Streamlit's server.* options as a started server would have them (st.get_option reads them)."""
    from streamlit import config

    old = {k: config.get_option(f"server.{k}") for k in values}
    try:
        for k, v in values.items():
            config.set_option(f"server.{k}", v)
        yield
    finally:
        for k, v in old.items():
            config.set_option(f"server.{k}", v)


def decode(png: bytes) -> list[str]:
    return [r.text for r in zxingcpp.read_barcodes(Image.open(io.BytesIO(png)).convert("L"))]


@pytest.mark.parametrize("url", URLS)
def test_qr_encodes_the_url(url):
    qr = share.make_qr(url)
    assert qr.error in "MQH" and not qr.is_micro
    assert decode(share.qr_png(url)) == [url]


def test_png_and_svg():
    png = share.qr_png(URLS[0])
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 500
    svg = share.qr_svg(URLS[0]).decode()
    assert svg.lstrip().startswith("<svg") and "path" in svg


# ---- where the link points ------------------------------------------------------------------------------------------
def test_loopback_hosts():
    for h in ("localhost", "LOCALHOST", "127.0.0.1", "127.1.2.3", "::1", "[::1]", "0.0.0.0", "app.localhost", "", None):
        assert hosts.is_loopback_host(h), h
    for h in ("10.0.0.5", "192.168.1.20", "headlight.example.edu", "fe80::1x", "lecture.local"):
        assert not hosts.is_loopback_host(h), h
    assert hosts.listens_on_all(None) and hosts.listens_on_all("") and hosts.listens_on_all("0.0.0.0")
    assert hosts.listens_on_all("::") and not hosts.listens_on_all("127.0.0.1") and not hosts.listens_on_all("10.0.0.5")


def test_lan_address_choice():
    assert hosts.pick_lan_address(["127.0.0.1", "169.254.3.4", "0.0.0.0", "fe80::1", "10.0.0.5", "192.168.1.2"]) \
        == "10.0.0.5"
    assert hosts.pick_lan_address(["127.0.1.1", "::1", "not an address"]) is None
    assert hosts.pick_lan_address([]) is None


def test_lan_address_from_the_kernels_choice_then_the_host_name(monkeypatch):
    """lan_address without a network: the kernel's source address for a probe first, else the host name's."""
    picked: dict[str, str | None] = {"probe": "192.168.1.7"}

    class Sock:
        def __init__(self, *_):
            self.addr = None

        def __enter__(self):
            return self

        def __exit__(self, *_):
            return False

        def connect(self, addr):
            if picked["probe"] is None:
                raise OSError("network unreachable")
            self.addr = addr

        def getsockname(self):
            return (picked["probe"], 40000)

    names = [(2, 2, 17, "", ("127.0.1.1", 0)), (2, 2, 17, "", ("10.0.0.5", 0))]
    monkeypatch.setattr(hosts.socket, "socket", Sock)
    monkeypatch.setattr(hosts.socket, "getaddrinfo", lambda *a, **k: names)
    assert hosts.lan_address() == "192.168.1.7"
    picked["probe"] = None  # no route: the host name's addresses, loopback skipped
    assert hosts.lan_address() == "10.0.0.5"
    names[:] = [(2, 2, 17, "", ("127.0.1.1", 0))]
    assert hosts.lan_address() is None


def test_public_base_order():
    pb = hosts.public_base
    # 1. HEADLIGHT_PUBLIC_URL wins over everything (a trailing slash dropped, a missing scheme added)
    assert pb("https://headlight.example.edu/", "http://10.0.0.9:8501/steps", None, 8501, "10.0.0.5") \
        == hosts.Base("https://headlight.example.edu", "public", True)
    assert pb("10.0.0.5:8501", None, "127.0.0.1", 8601, None).url == "http://10.0.0.5:8501"
    assert pb("https://uni.example/headlight/", None, None, 8501, None).url == "https://uni.example/headlight"
    # 2. the lecturer's browser already uses a host the class can reach
    assert pb(None, "http://10.0.0.9:8501/steps", "127.0.0.1", 8601, "10.0.0.5") \
        == hosts.Base("http://10.0.0.9:8501", "browser", True)
    assert pb("  ", "https://headlight.example.edu/heads", None, 8501, None).url == "https://headlight.example.edu"
    # 3. a browser on localhost, a server on every interface: the LAN address with the server's port
    assert pb(None, "http://localhost:8501/", None, 8501, "192.168.1.20") \
        == hosts.Base("http://192.168.1.20:8501", "lan", True)
    assert pb(None, "http://127.0.0.1:8501/", "0.0.0.0", 8502, "10.0.0.5").url == "http://10.0.0.5:8502"
    # 4. only this machine can open it: the browser's own URL, marked unreachable (the dialog warns)
    assert pb(None, "http://localhost:8501/steps", "127.0.0.1", 8501, "10.0.0.5") \
        == hosts.Base("http://localhost:8501", "localhost", False)
    assert pb(None, "http://localhost:8501/", None, 8501, None) == hosts.Base("http://localhost:8501", "localhost", False)
    assert pb(None, None, "127.0.0.1", 8501, None) == hosts.Base("http://localhost:8501", "localhost", False)


def test_bind_public_url():
    """make serve (deploy/serve.sh) sets HEADLIGHT_PUBLIC_URL from HAProxy's bind address."""
    assert hosts.bind_public_url("0.0.0.0:8501", "10.0.0.5") == "http://10.0.0.5:8501"
    assert hosts.bind_public_url(":8501", "10.0.0.5") == "http://10.0.0.5:8501"
    assert hosts.bind_public_url("*:8501", "10.0.0.5") == "http://10.0.0.5:8501"
    assert hosts.bind_public_url("[::]:8501", "10.0.0.5") == "http://10.0.0.5:8501"
    assert hosts.bind_public_url("0.0.0.0:8501", None) == ""
    assert hosts.bind_public_url("127.0.0.1:8501", "10.0.0.5") == ""
    assert hosts.bind_public_url("10.1.2.3:80", None) == "http://10.1.2.3:80"


# ---- the dialog -----------------------------------------------------------------------------------------------------
def _page():
    import streamlit as st
    from streamlit.runtime import Runtime

    from ui import share

    share.share_button(st.sidebar, page="steps")
    files = Runtime.instance().media_file_mgr._storage._files_by_id  # the images this run drew, by id
    st.session_state["media"] = {fid: f.content for fid, f in files.items()}


def _open(context_url: str | None = None, view: dict | None = None) -> AppTest:
    at = AppTest.from_function(_page, default_timeout=60)
    for k, v in (view or VIEW).items():
        at.query_params[k] = v
    if context_url:
        at.context["url"] = context_url
    at.run()
    assert not at.exception
    (button,) = at.sidebar.button
    assert button.label == t("share.button", "ko") == "수업에 공유" and button.proto.icon == ":material/qr_code_2:"
    assert not at.get("dialog"), "no dialog (and no QR work) until the button is clicked"
    button.click().run()
    assert not at.exception
    return at


def _dialog(at):
    (dialog,) = at.get("dialog")
    assert dialog.proto.dialog.title == t("share.title", "ko") and dialog.proto.dialog.is_open
    assert dialog.proto.dialog.pixel_width == share.DIALOG_WIDTH
    return dialog


def _descendants(node):
    for child in getattr(node, "children", {}).values():
        yield child
        yield from _descendants(child)


def _code_png(at, dialog) -> bytes:
    (image,) = [n for n in _descendants(dialog) if type(n).__name__ == "Image"]
    fid = image.proto.imgs[0].url.rsplit("/", 1)[-1].split(".")[0]
    assert image.proto.imgs[0].url.endswith(".png")  # not re-encoded as JPEG
    png = at.session_state["media"][fid]
    assert Image.open(io.BytesIO(png)).width >= share.QR_PX  # drawn at its size or larger: no upscaling blur
    return png


def _asgi_get(path: str, headers: list | None = None) -> tuple[int, dict, bytes]:
    from serve.door import DoorMiddleware

    sent = []

    async def app(scope, receive, send):
        raise AssertionError(f"a short link reached Streamlit: {scope['path']}")

    async def send(msg):
        sent.append(msg)

    path, _, query = path.partition("?")
    scope = {"type": "http", "method": "GET", "path": path, "raw_path": path.encode(), "query_string": query.encode(),
             "headers": headers or [(b"accept", b"text/html")]}
    asyncio.run(DoorMiddleware(app)(scope, None, send))
    return sent[0]["status"], dict(sent[0]["headers"]), sent[1]["body"]


def test_dialog_shows_a_code_of_a_short_link_that_opens_the_exact_view(monkeypatch):
    monkeypatch.setenv(hosts.PUBLIC_URL_ENV, "http://10.0.0.5:8501")
    at = _open("http://localhost:8501/steps")
    dialog = _dialog(at)
    (link,) = decode(_code_png(at, dialog))
    assert len(link) <= 100
    assert link.startswith("http://10.0.0.5:8501/s/") and shortlinks.is_id(link.rsplit("/", 1)[-1])
    # the link is written out too: in large text and as copyable code, with the caption; no warning
    big = [n.value for n in _descendants(dialog) if type(n).__name__ == "Html"]
    assert big == [f'<div class="share-link">{link.split("://", 1)[1].replace("/s/", "<wbr>/s/", 1)}</div>']
    assert [c.value for c in _descendants(dialog) if type(c).__name__ == "Code"] == [link]
    assert any(m.value == t("share.caption", "ko") for m in _descendants(dialog) if type(m).__name__ == "Markdown")
    assert not [w for w in _descendants(dialog) if type(w).__name__ == "Warning"]
    # the door answers it with the exact page and query the lecturer sees
    status, headers, _ = _asgi_get(urlsplit(link).path)
    assert status == 307
    location = headers[b"location"].decode()
    assert urlsplit(location).path == "/steps"
    assert dict(parse_qsl(urlsplit(location).query)) == VIEW
    assert location == share_payload_for(VIEW, "/steps")


def test_dialog_warns_when_only_this_machine_can_open_the_link(monkeypatch):
    """A server bound to 127.0.0.1 (as each of make serve's processes is), a browser on localhost and no
    HEADLIGHT_PUBLIC_URL: the code still works on this machine, and the dialog says why phones cannot open it."""
    at = AppTest.from_function(_page, default_timeout=60)
    for k, v in VIEW.items():
        at.query_params[k] = v
    at.context["url"] = "http://localhost:8501/steps"
    with server_options(address="127.0.0.1", port=8501):
        at.run()
        at.sidebar.button[0].click().run()
    assert not at.exception
    dialog = _dialog(at)
    (warning,) = [w for w in _descendants(dialog) if type(w).__name__ == "Warning"]
    assert warning.value == t("share.localhost", "ko", url="`http://localhost:8501`")
    assert "`http://localhost:8501`을 열 수 없습니다" in warning.value
    assert "HEADLIGHT_PUBLIC_URL=" in warning.value and "localhost:8501" in warning.value
    (link,) = decode(_code_png(at, dialog))
    assert link.startswith("http://localhost:8501/s/")


def test_dialog_uses_the_lan_address_when_the_server_listens_everywhere(monkeypatch):
    monkeypatch.setattr(share, "lan_address", lambda: "192.168.7.20")
    at = AppTest.from_function(_page, default_timeout=60)
    at.query_params["text"] = "hello"
    at.query_params["lang"] = "ko"
    at.context["url"] = "http://localhost:8765/"
    with server_options(address="0.0.0.0", port=8765):
        at.run()
        at.sidebar.button[0].click().run()
    assert not at.exception
    dialog = _dialog(at)
    (link,) = decode(_code_png(at, dialog))
    assert link.startswith("http://192.168.7.20:8765/s/")
    status, headers, _ = _asgi_get(urlsplit(link).path)
    assert (status, headers[b"location"]) == (307, b"/?text=hello&lang=ko")


def test_the_browser_url_path_is_the_page(monkeypatch):
    """The link stores the browser's path (here /heads), not the page argument, when the browser's URL is known;
    a browser on a LAN host gives that host."""
    at = _open("http://10.0.0.9:8501/heads", {"text": "a b", "lang": "ko"})
    (link,) = decode(_code_png(at, _dialog(at)))
    assert link.startswith("http://10.0.0.9:8501/s/")
    assert shortlinks.get("view", link.rsplit("/", 1)[-1]) == "/heads?text=a+b&lang=ko"


def test_unknown_short_link_gets_a_page_in_the_browsers_language():
    status, headers, body = _asgi_get("/s/aaaaaaaaaa", [(b"accept", b"text/html"), (b"accept-language", b"ko-KR")])
    page = body.decode()
    assert status == 404 and headers[b"content-type"].startswith(b"text/html")
    assert page.index(t("door.unknown_link.title", "ko")) < page.index(t("door.unknown_link.title", "en"))
    assert 'href="/"' in page
    for bad in ("/s/", "/s/x", "/s/../../etc/passwd", "/s/AAAAAAAAAA", "/s/aaaaaaaaaa/extra"):
        status, _, body = _asgi_get(bad)
        assert status == 404 and t("door.unknown_link.title", "en").encode() in body, bad


def test_a_stored_payload_is_only_ever_a_path_on_this_site():
    from serve.door import short_link_target

    sid = shortlinks.put("view", "//evil.example/x")
    assert short_link_target("/s/" + sid) is None
    sid = shortlinks.put("view", "https://evil.example/")
    assert short_link_target("/s/" + sid) is None
    sid = shortlinks.put("view", "/steps?text=철수")  # a hand-made payload with raw UTF-8: percent-encoded
    assert short_link_target("/s/" + sid) == "/steps?text=%EC%B2%A0%EC%88%98"


def test_the_shell_puts_the_share_button_in_the_sidebar():
    from pathlib import Path

    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=180)
    at.query_params["lang"] = "en"
    at.run()
    assert not at.exception
    label = t("share.button", "en")
    assert [b.key for b in at.sidebar.button if b.label == label] == ["share_button"]
    assert [b for b in at.main.button if b.label == label] == []


@pytest.mark.slow
def test_a_short_link_through_the_running_app(tmp_path):
    """The real server (python -m serve run, as make run): the link from the dialog's code, asked over HTTP, is a 307
    to the exact view, and an unknown id is a 404 page."""
    import http.client

    from browser_support import serve_app

    payload = share_payload_for(VIEW, "/steps")
    sid = shortlinks.put("view", payload)
    with serve_app(env={"HEADLIGHT_STATE_DIR": str(tmp_path), "HEADLIGHT_PRELOAD": "0"}) as base:
        host = urlsplit(base)
        for path, want in ((f"/s/{sid}", 307), ("/s/bbbbbbbbbb", 404)):
            conn = http.client.HTTPConnection(host.hostname, host.port, timeout=10)
            conn.request("GET", path, headers={"Accept": "text/html"})
            r = conn.getresponse()
            assert r.status == want
            if want == 307:
                assert r.getheader("location") == payload
            conn.close()


def test_serve_public_url_command():
    """deploy/serve.sh's HEADLIGHT_PUBLIC_URL: `python -m serve public-url BIND`."""
    import subprocess
    import sys
    from pathlib import Path

    def run(bind: str) -> str:
        return subprocess.run([sys.executable, "-m", "serve", "public-url", bind], capture_output=True, text=True,
                              check=True, cwd=Path(__file__).resolve().parents[1]).stdout.strip()

    assert run("127.0.0.1:8501") == ""
    assert run("10.1.2.3:8501") == "http://10.1.2.3:8501"
    lan = hosts.lan_address()
    assert run("0.0.0.0:8501") == (f"http://{lan}:8501" if lan else "")
