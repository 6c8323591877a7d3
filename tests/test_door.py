"""serve/door.py: the page for a link over the server's limit, and where an unknown nested path goes."""

from __future__ import annotations

from serve.door import door_page, redirect_target, request_lang

HTML = b"text/html,application/xhtml+xml"


def test_request_language():
    assert request_lang(b"GET /?text=a&lang=ko HTTP/1.1\r\n") == "ko"
    assert request_lang(b"GET /?lang=ko") == "ko"  # a head cut off right after the parameter
    assert request_lang(b"GET /?lang=kor HTTP/1.1\r\n") == "en"
    assert request_lang(b"GET / HTTP/1.1\r\nAccept-Language: ko-KR,ko;q=0.9\r\n") == "ko"
    assert request_lang(b"GET /?text=" + b"a" * 20_000) == "en"


def test_door_page_in_both_languages_link_language_first():
    ko = door_page(414, "ko").decode()
    assert ko.index("링크가 너무 깁니다") < ko.index("This link is too long") and 'href="/"' in ko
    en = door_page(400, "en").decode()
    assert en.index("could not be read") < en.index("요청을 읽을 수 없습니다")
    assert "<script" not in ko + en


def test_redirect_targets():
    assert redirect_target("/a/b", b"text=hi&lang=ko", HTML) == "/?text=hi&lang=ko"
    assert redirect_target("/steps/extra", b"", HTML) == "/steps"
    assert redirect_target("/heads/x/y/z", b"tab=2", HTML) == "/heads?tab=2"
    assert redirect_target("/explorer/x", b"", HTML) == "/"
    for left_alone in ("/", "/steps", "/nowhere", "/_stcore/health", "/static/js/main.js", "/media/abc.png",
                       "/component/x/y"):
        assert redirect_target(left_alone, b"", HTML) is None, left_alone
    assert redirect_target("/a/b", b"", b"*/*") is None  # not a browser's page request: Streamlit answers


def test_middleware_answers_a_long_link_with_the_door_page():
    import asyncio

    from serve.door import MAX_LINK_BYTES, DoorMiddleware

    sent, called = [], []

    async def app(scope, receive, send):
        called.append(scope["path"])

    async def send(msg):
        sent.append(msg)

    async def run(query: bytes):
        scope = {"type": "http", "method": "GET", "path": "/", "raw_path": b"/", "query_string": query,
                 "headers": [(b"accept", HTML)]}
        await DoorMiddleware(app)(scope, None, send)

    asyncio.run(run(b"lang=ko&text=" + b"a" * MAX_LINK_BYTES))
    assert sent[0]["status"] == 414 and "링크가 너무 깁니다".encode() in sent[1]["body"] and not called
    sent.clear()
    asyncio.run(run(b"text=" + b"a" * 4_000))
    assert not sent and called == ["/"]


def test_starting_page_both_languages_reloads_itself():
    import subprocess
    import sys

    from serve.door import STARTING_REFRESH_S, starting_page

    ko = starting_page("ko").decode()
    en = starting_page("en").decode()
    assert ko.index("시작하는 중") < ko.index("is starting") and en.index("is starting") < en.index("시작하는 중")
    for page in (ko, en):  # without JavaScript: a reload of the same link (query kept) every second
        assert f'<noscript><meta http-equiv="refresh" content="{STARTING_REFRESH_S}"></noscript>' in page
        assert page.count("<script>") == 1 and "location.reload()" in page  # with it: the poll (browser test below)
    out = subprocess.run([sys.executable, "-m", "serve", "starting-page", "ko"], capture_output=True, check=True,
                         cwd=__import__("pathlib").Path(__file__).resolve().parents[1]).stdout
    assert out.decode() == ko  # what deploy/serve.sh writes for HAProxy


def test_preload_fills_the_model_cache(monkeypatch):
    from serve import preload
    from ui import store

    monkeypatch.setenv("HEADLIGHT_PRELOAD", "0")
    assert not preload.enabled()
    monkeypatch.setenv("HEADLIGHT_PRELOAD", "1")
    assert preload.enabled()
    took = preload.run()
    assert took > 0
    assert {(m, "cpu") for m in preload.default_models()} <= store._LOADED
    assert store.get_model("minilm-l6", "cpu").name == "minilm-l6"  # the same cached object a page gets


def test_ready_path_follows_the_preload(monkeypatch):
    """make serve marks a process ready on /_headlight/ready: 503 while its preload runs, 200 after (and when none
    was started); Streamlit's own /_stcore/health is left to Streamlit."""
    import asyncio
    import threading

    from serve import preload
    from serve.door import READY_PATH, DoorMiddleware

    async def app(scope, receive, send):  # Streamlit: never reached for READY_PATH
        raise AssertionError("the ready path went to Streamlit")

    def status() -> tuple[int, bytes]:
        sent = []

        async def send(m):
            sent.append(m)

        asyncio.run(DoorMiddleware(app)({"type": "http", "method": "GET", "path": READY_PATH, "raw_path": b"",
                                         "query_string": b"", "headers": []}, None, send))
        return sent[0]["status"], sent[1]["body"]

    monkeypatch.setattr(preload, "_STARTED", [])
    assert status() == (200, b"ready")
    monkeypatch.setattr(preload, "_STARTED", [object()])
    monkeypatch.setattr(preload, "_DONE", threading.Event())
    assert status() == (503, b"starting")
    preload._DONE.set()
    assert status() == (200, b"ready")


def test_starting_page_turns_into_the_app_as_soon_as_it_answers():
    """In Chromium: the starting page polls its own link and reloads it (query kept) within a poll of the server
    answering; a 503 keeps it waiting, one request at a time."""
    import http.server
    import threading
    import time

    from browser_support import browser_available, chromium_browser
    from ci_support import skip_or_fail

    from serve.door import starting_page

    reason = browser_available()
    if reason:
        skip_or_fail(reason)
    state = {"ready_at": None, "requests": [], "open": 0, "max_open": 0}
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self, body: bool) -> None:
            with lock:  # HEAD requests sent before the previous one was answered (the poll's overlap)
                if self.command == "HEAD":
                    state["open"] += 1
                    state["max_open"] = max(state["max_open"], state["open"])
                state["requests"].append((time.monotonic(), self.command, self.path))
            ready = state["ready_at"] is not None and time.monotonic() >= state["ready_at"]
            page = b"<!doctype html><title>app</title><h1 id=app>the app</h1>" if ready else starting_page("en")
            if self.command == "HEAD":
                with lock:
                    state["open"] -= 1
            self.send_response(200 if ready else 503)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(page)))
            self.end_headers()
            if body:
                self.wfile.write(page)

        def do_GET(self):  # noqa: N802 - http.server's name
            self._answer(True)

        def do_HEAD(self):  # noqa: N802
            self._answer(False)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    from playwright.sync_api import sync_playwright

    try:
        with sync_playwright() as p:
            browser = chromium_browser(p)
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{server.server_port}/steps?text=hello&lang=ko")
            assert "is starting" in page.content()
            deadline = time.monotonic() + 20  # still starting: it keeps polling, and stays on the page
            while time.monotonic() < deadline and sum(r[1] == "HEAD" for r in state["requests"]) < 3:
                page.wait_for_timeout(100)
            assert sum(r[1] == "HEAD" for r in state["requests"]) >= 3 and "the app" not in page.content()
            state["ready_at"] = time.monotonic()
            page.wait_for_selector("#app", timeout=5000)
            assert page.url.endswith("/steps?text=hello&lang=ko")  # the same link
            link = [r for r in state["requests"] if r[2].startswith("/steps")]  # not the browser's /favicon.ico
            before = [r for r in link if r[0] < state["ready_at"]]
            after = [r for r in link if r[0] >= state["ready_at"]]
            # while starting the page was loaded once and then only polled (no reload cycle); the reload came
            # right after the first poll that was answered
            assert [r[1] for r in before].count("GET") == 1
            assert [r[1] for r in after][:2] == ["HEAD", "GET"]
            assert state["max_open"] == 1  # one poll at a time
            browser.close()
    finally:
        server.shutdown()
