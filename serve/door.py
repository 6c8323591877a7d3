"""The app's door: two fixes at the HTTP level for the Streamlit server that `make run`, `make serve` and the tests
start (`python -m serve run app.py ...`, serve/__main__.py), the readiness path, and the pages it answers with itself.

1. A link over the server's request-head limit (uvicorn/h11: 16 KB). Uvicorn answers it with a plain-text
   "Invalid HTTP request received." (when the head arrives in pieces; a head that arrives at once is read, and
   the app would get a 100 KB link) and closes the socket while the browser may still be sending the rest of the
   head, which a browser can show as a reset or a hang. Here the answer is a small page in the link's language
   (`lang=ko` in the link or a Korean Accept-Language; both languages are on it) with status 414 (400 for other
   unreadable requests) and a link back to the app, for any link over MAX_LINK_BYTES; the rest of the request is read and dropped for up to
   LINGER_S before the socket closes, so the browser reads the page, and the next link opens a new connection.
2. An unknown nested path (`/a/b`, `/steps/extra`): Streamlit serves its page there, whose relative asset paths
   then point under /a/ and fail, leaving a blank page. A browser's request for such a path is redirected (307) to
   the page it starts with, or to the explorer, keeping the query string. One-level unknown paths are Streamlit's
   own (it falls back to the default page) and are left alone.

3. A short link `/s/<id>` (the share dialog's QR code, ui/share.py): a 307 to the view's path and query stored under
   the id (ui/shortlinks.py, on disk, shared by every process); an unknown or malformed id gets a small page in the
   browser's language (404) with a link to the app.

4. The class endpoints for tools and tests (`CLASS_PREFIX`, issue 29), answered here in JSON, never by Streamlit:
   `POST /_headlight/class/rooms` opens a room (`{"room": CODE}`), `GET /_headlight/class/rooms/CODE/summary` is its
   summary (classroom/store.py `summary`), `DELETE /_headlight/class/rooms/CODE` ends it. Each needs
   `Authorization: Bearer <HEADLIGHT_LECTURER_KEY>` (classroom/lecturer.py): no key 401, a wrong key (or none set)
   403, a wrong key after too many from one address 429 (counted in the class store, so across processes), each
   with no data; the right key is always let through. The key is checked before the path is read, so without it
   nothing about rooms or routes is told. An unknown or expired room: 404.

All are installed by wrapping uvicorn's Config before Streamlit builds its server (Streamlit 1.67 serves with
uvicorn, `streamlit.web.server.starlette`); nothing else of Streamlit is changed.
"""

from __future__ import annotations

import asyncio
import html
import ipaddress
import json
import logging
import os
import re
from urllib.parse import quote

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from classroom.lecturer import Gate, bearer
from classroom.store import UnknownRoom, shared_store
from i18n import LANGS, t
from ui import shortlinks
from ui.pages import BY_NAME

from . import preload

H11_DEFAULT_LIMIT = 16_384  # h11's max_incomplete_event_size when uvicorn sets none
LINGER_S = 1.0  # read and drop what the browser still sends, then close
SHORT_PREFIX = "/s/"  # short links: /s/<id> (ui/share.py SHORT_PREFIX)
STARTING_REFRESH_S = 1  # the starting page reloads itself this often without JavaScript
STARTING_POLL_S = 0.25  # with JavaScript it asks this often whether the app answers, and reloads as soon as it does
READY_PATH = "/_headlight/ready"  # 200 once the preload is over (make serve's readiness check)
CLASS_PREFIX = "/_headlight/class/"  # the class endpoints (lecturer key required)
MAX_LINK_BYTES = 16_384  # a longer link gets the door page, however its bytes arrived (h11 refuses it only when
# the head comes in pieces); the app writes its own links far below this (ui/state.py MAX_URL_TEXT)
# Streamlit's own first path segments (its API, websocket, assets, media files, components)
STREAMLIT_PREFIXES = {"_stcore", "static", "media", "component", "app", "~", "healthz", "_headlight"}


def request_lang(head: bytes) -> str:
    """The language of a (partial) request head: `lang=ko` in its query, else a Korean Accept-Language, else
    English."""
    if re.search(rb"[?&]lang=ko(?:[&\s#]|$)", head[:65_536]):
        return "ko"
    if re.search(rb"(?im)^accept-language:\s*ko", head):
        return "ko"
    return "en"


def door_page(status: int, lang: str) -> bytes:
    """The page for an unreadable request (400, 414) or an unknown short link (404): in `lang`, then in the other
    language, with a link to the app."""
    return _page({414: "too_long", 404: "unknown_link"}.get(status, "bad"), lang, link="/")


def short_link_target(path: str) -> str | None:
    """For a short link's path (`/s/<id>`), the stored view's path and query; None for an unknown or malformed id.
    Only a site-relative path is ever returned (never `//host` or a scheme), with any byte outside printable ASCII
    percent-encoded, so the Location header is always valid."""
    sid = path[len(SHORT_PREFIX):].rstrip("/")
    payload = shortlinks.get("view", sid)
    if payload is None or not payload.startswith("/") or payload.startswith("//"):
        return None
    return quote(payload, safe="/?&=+%:@!$'()*,;-._~#[]")


def starting_page(lang: str) -> bytes:
    """The page `make serve`'s balancer shows while no app process is ready (starting, or restarting): in `lang`,
    then the other language. It asks the same link again (HEAD) every STARTING_POLL_S seconds and reloads it, query
    kept, as soon as the answer is no longer 503; without JavaScript it reloads every STARTING_REFRESH_S seconds.
    (A 1 s reload made the students who scanned the code during the warm-up wait 0.5 s on average after it.)"""
    return _page("starting", lang, refresh=STARTING_REFRESH_S)


def _page(kind: str, lang: str, *, link: str | None = None, refresh: int | None = None) -> bytes:
    parts = []
    for lg in (lang, *(x for x in LANGS if x != lang)):
        parts.append(f'<section lang="{lg}"><h1>{html.escape(t(f"door.{kind}.title", lg))}</h1>'
                     f"<p>{html.escape(t(f'door.{kind}.body', lg))}</p>"
                     + (f'<p><a href="{link}">{html.escape(t("door.home", lg))}</a></p>' if link else "")
                     + "</section>")
    meta = ""
    if refresh:  # poll, one request at a time; the meta refresh is the fallback without JavaScript
        poll_ms = round(STARTING_POLL_S * 1000)
        meta = (f'<noscript><meta http-equiv="refresh" content="{refresh}"></noscript>'
                "<script>(function poll(){setTimeout(function(){fetch(location.href,{method:'HEAD',cache:'no-store'})"
                ".then(function(r){if(r.status!==503)location.reload();else poll();},poll);}," + str(poll_ms) +
                ");})();</script>")
    return ("<!doctype html><html lang=\"" + lang + "\"><head><meta charset=\"utf-8\">" + meta +
            "<meta name=\"viewport\" content=\"width=device-width\"><title>Headlight</title>"
            "<style>body{font-family:sans-serif;max-width:40em;margin:3em auto;padding:0 1em;line-height:1.5;word-break:keep-all}"
            "section+section{margin-top:2em;color:#555}</style></head><body>"
            + "".join(parts) + "</body></html>").encode("utf-8")


class DoorH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, answering an unreadable request with door_page instead of plain text."""

    _lingering = False

    def send_400_response(self, msg: str) -> None:
        head, _ = self.conn.trailing_data
        limit = self.config.h11_max_incomplete_event_size or H11_DEFAULT_LIMIT
        status = 414 if len(head) >= limit else 400
        body = door_page(status, request_lang(head))
        reason = b"URI Too Long" if status == 414 else b"Bad Request"
        raw = (b"HTTP/1.1 %d %s\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: %d\r\n"
               b"cache-control: no-store\r\nconnection: close\r\n\r\n" % (status, reason, len(body))) + body
        self.logger.warning("%s (%d bytes of request head): answered %d", msg, len(head), status)
        self.transport.write(raw)  # written as bytes: h11's state machine is in its error state here
        self._lingering = True
        try:
            self.transport.write_eof()  # the response is complete; the browser may still be sending
        except (NotImplementedError, OSError, RuntimeError):
            pass
        self.loop.call_later(LINGER_S, self.transport.close)

    def data_received(self, data: bytes) -> None:
        if self._lingering:  # the rest of a refused request: dropped
            return
        super().data_received(data)


class DoorMiddleware:
    """ASGI: a browser's GET of an unknown nested path goes (307) to the page it starts with, or the explorer,
    keeping the query string."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope.get("type") == "http":
            query = scope.get("query_string", b"")
            if len(scope.get("raw_path") or b"") + len(query) > MAX_LINK_BYTES:
                body = door_page(414, request_lang(b"GET /?" + query[:65_536]))
                await send({"type": "http.response.start", "status": 414,
                            "headers": [(b"content-type", b"text/html; charset=utf-8"),
                                        (b"cache-control", b"no-store"), (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        if scope.get("type") == "http" and scope.get("path") == READY_PATH:
            await readiness(send)
            return
        if scope.get("type") == "http" and (scope.get("path", "") + "/").startswith(CLASS_PREFIX):
            await class_api(scope, send)
            return
        if scope.get("type") == "http" and scope.get("path", "").startswith(SHORT_PREFIX) \
                and scope.get("method") in ("GET", "HEAD"):
            await short_link(scope, send)
            return
        if scope.get("type") == "http" and scope.get("method") in ("GET", "HEAD"):
            target = redirect_target(scope.get("path", "/"), scope.get("query_string", b""),
                                     dict(scope.get("headers") or []).get(b"accept", b""))
            if target is not None:
                await redirect(send, target)
                return
        await self.app(scope, receive, send)


async def redirect(send, target: str) -> None:
    """A 307 to `target` (a path and query on this site), never cached."""
    await send({"type": "http.response.start", "status": 307,
                "headers": [(b"location", target.encode("latin-1")), (b"cache-control", b"no-store"),
                            (b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})


async def short_link(scope, send) -> None:
    """`/s/<id>`: 307 to the stored view, or the unknown-link page (404) in the browser's language."""
    target = short_link_target(scope["path"])
    if target is not None:
        await redirect(send, target)
        return
    head = b"".join(k + b": " + v + b"\r\n" for k, v in scope.get("headers") or [])
    body = door_page(404, request_lang(b"GET /?" + scope.get("query_string", b"")[:1024] + b" HTTP/1.1\r\n" + head))
    await send({"type": "http.response.start", "status": 404,
                "headers": [(b"content-type", b"text/html; charset=utf-8"), (b"cache-control", b"no-store"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def readiness(send) -> None:
    """READY_PATH: 200 once the process has imported its modules and loaded its models (serve/preload.py), 503
    before. `make serve` marks a process ready on it (Streamlit's /_stcore/health answers as soon as the server is up,
    and the browser's page polls that one, so it stays as it is)."""
    ok = preload.ready()
    body = b"ready" if ok else b"starting"
    await send({"type": "http.response.start", "status": 200 if ok else 503,
                "headers": [(b"content-type", b"text/plain"), (b"cache-control", b"no-store"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


# ---- the class endpoints ---------------------------------------------------------------------------------------------
LOG = logging.getLogger("headlight.door")


def class_store():
    """The process's class store (classroom/store.py shared_store: the Class page's too), opened on first use."""
    return shared_store()


# the key check (HEADLIGHT_LECTURER_KEY, read at each check); wrong keys counted in the class store, every process's
GATE = Gate(failures=class_store)


TRUSTED_PROXIES_ENV = "HEADLIGHT_TRUSTED_PROXIES"  # balancers on other hosts whose X-Forwarded-For is believed


def trusted_proxy(peer: str) -> bool:
    """This machine (make serve's HAProxy), or an address or network in HEADLIGHT_TRUSTED_PROXIES ("10.0.0.5,
    10.1.0.0/16": the balancer of several hosts)."""
    try:
        ip = ipaddress.ip_address(peer)
    except ValueError:
        return False
    if ip.is_loopback:
        return True
    for item in os.environ.get(TRUSTED_PROXIES_ENV, "").split(","):
        try:
            if item.strip() and ip in ipaddress.ip_network(item.strip(), strict=False):
                return True
        except ValueError:
            continue
    return False


def client_address(scope) -> str:
    """The requester's address: the peer's, or, when the peer is a trusted balancer (HAProxy of `make serve` on
    this machine, which adds `X-Forwarded-For`, deploy/haproxy.cfg), the last address in that header (the one the
    balancer itself added; a client's own header comes before it)."""
    peer = (scope.get("client") or ("", 0))[0] or ""
    if trusted_proxy(peer):
        forwarded = [v for k, v in scope.get("headers") or [] if k == b"x-forwarded-for"]
        if forwarded:
            last = forwarded[-1].decode("latin-1").split(",")[-1].strip()
            if last:
                return last
    return peer


async def json_response(send, status: int, data: dict, headers: list | None = None) -> None:
    body = json.dumps(data).encode("utf-8")
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"cache-control", b"no-store"),
                            (b"content-length", str(len(body)).encode()), *(headers or [])]})
    await send({"type": "http.response.body", "body": body})


async def class_api(scope, send) -> None:
    """CLASS_PREFIX: the lecturer key first (401 / 403 / 429 with nothing else told), then the route."""
    authorization = next((v for k, v in scope.get("headers") or [] if k == b"authorization"), None)
    address = client_address(scope)
    verdict = await asyncio.to_thread(GATE.check, address, bearer(authorization))  # a wrong key: a store write
    if verdict == "limited":
        wait = max(1, round(await asyncio.to_thread(GATE.retry_after, address)))
        LOG.warning("class endpoint: too many wrong lecturer keys from %s", address)
        await json_response(send, 429, {"error": "too many wrong keys; try again later"},
                            [(b"retry-after", str(wait).encode())])
        return
    if verdict == "missing":
        await json_response(send, 401, {"error": "the lecturer key is required (Authorization: Bearer <key>)"},
                            [(b"www-authenticate", b'Bearer realm="headlight"')])
        return
    if verdict != "ok":  # wrong, or no key set on this server: no lecturer action is possible
        if verdict == "wrong":
            LOG.warning("class endpoint: a wrong lecturer key from %s", address)
        await json_response(send, 403, {"error": "wrong lecturer key"})
        return
    parts = [p for p in scope["path"][len(CLASS_PREFIX):].split("/") if p]
    method = scope.get("method")
    try:
        if parts == ["rooms"]:
            if method != "POST":
                await json_response(send, 405, {"error": "POST opens a room"}, [(b"allow", b"POST")])
                return
            room = await asyncio.to_thread(lambda: class_store().open_room())
            await json_response(send, 200, {"room": room.code, "expires": room.expires})
            return
        if len(parts) == 3 and parts[0] == "rooms" and parts[2] == "summary":
            if method != "GET":
                await json_response(send, 405, {"error": "GET reads the summary"}, [(b"allow", b"GET")])
                return
            code = parts[1]
            summary = await asyncio.to_thread(lambda: class_store().summary(code))
            await json_response(send, 200, summary)
            return
        if len(parts) == 2 and parts[0] == "rooms" and method == "DELETE":
            code = parts[1]
            await asyncio.to_thread(lambda: class_store().end_room(code))
            await json_response(send, 200, {"ended": code})
            return
    except UnknownRoom:
        await json_response(send, 404, {"error": "no such class (unknown, ended or expired)"})
        return
    except Exception as exc:  # noqa: BLE001 - the database is down or refused it: said (503) and logged
        LOG.exception("class endpoint: the class store failed: %s", exc)
        await json_response(send, 503, {"error": "the class store is not available"})
        return
    await json_response(send, 404, {"error": "no such class endpoint"})


def redirect_target(path: str, query: bytes, accept: bytes) -> str | None:
    """Where a browser asking for `path` should go instead, or None to serve it as Streamlit does."""
    parts = [p for p in path.split("/") if p]
    if len(parts) < 2 or parts[0] in STREAMLIT_PREFIXES or b"text/html" not in accept:
        return None
    page = parts[0] if parts[0] in BY_NAME and not BY_NAME[parts[0]].default else ""  # the default page is "/"
    q = query.decode("latin-1")
    return "/" + page + ("?" + q if q else "")


def install() -> None:
    """Wrap uvicorn.Config so that the server Streamlit builds uses the door's protocol and middleware."""
    if getattr(uvicorn.Config, "_headlight_door", False):
        return
    base = uvicorn.Config

    class DoorConfig(base):
        _headlight_door = True

        def __init__(self, app, *args, **kwargs):
            if kwargs.get("http", "auto") in ("auto", "h11"):
                kwargs["http"] = DoorH11Protocol
            super().__init__(DoorMiddleware(app), *args, **kwargs)

    uvicorn.Config = DoorConfig
