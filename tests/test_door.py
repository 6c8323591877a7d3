"""ui/door.py: the page for a link over the server's limit, and where an unknown nested path goes."""

from __future__ import annotations

from ui.door import door_page, redirect_target, request_lang

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

    from ui.door import MAX_LINK_BYTES, DoorMiddleware

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
