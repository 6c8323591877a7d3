"""The door's class endpoints (serve/door.py, issue 29 part 5) and the lecturer key (classroom/lecturer.py): a room
opened and its summary read with `Authorization: Bearer <key>`; without the key 401, a wrong one 403, both with no
data; wrong keys limited per client address (429), counted in the class store across processes, while the right key
always opens (issue 34); an unknown room 404; Streamlit never reached. Then the same over a real socket (uvicorn
with the door's protocol), with answers written by another store (another process's) on the same file."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from classroom import lecturer
from classroom import store as cs
from classroom.lecturer import Gate, bearer, key_matches
from classroom.store import open_store
from serve import door

KEY = "k" * 20 + "-right-key"
ROOT = Path(__file__).resolve().parents[1]


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def served(tmp_path, monkeypatch):
    """The door with a key, a fresh SQLite store under HEADLIGHT_DATA_DIR, and a gate on a fake clock."""
    monkeypatch.setenv(lecturer.KEY_ENV, KEY)
    monkeypatch.delenv("HEADLIGHT_CLASS_DB", raising=False)
    monkeypatch.setenv("HEADLIGHT_DATA_DIR", str(tmp_path))
    clock = Clock()
    monkeypatch.setattr(door, "GATE", Gate(clock=clock, failures=door.class_store))  # as served: the store counts
    monkeypatch.setattr(cs, "_SHARED", {})
    yield clock
    for s in cs._SHARED.values():
        s.close()


def call(method: str, path: str, key: str | None = None, *, peer: str = "10.1.2.3",
         headers: list | None = None) -> tuple[int, dict, dict]:
    """One request through DoorMiddleware: status, headers, JSON body."""
    sent = []

    async def app(scope, receive, send):
        raise AssertionError("a class endpoint reached Streamlit")

    async def send(m):
        sent.append(m)

    hs = list(headers or [])
    if key is not None:
        hs.append((b"authorization", f"Bearer {key}".encode()))
    scope = {"type": "http", "method": method, "path": path, "raw_path": path.encode(), "query_string": b"",
             "headers": hs, "client": (peer, 50000)}
    asyncio.run(door.DoorMiddleware(app)(scope, None, send))
    return sent[0]["status"], dict(sent[0]["headers"]), json.loads(sent[1]["body"])


ROOMS = "/_headlight/class/rooms"


def test_open_a_room_and_read_its_summary_with_the_key(served, tmp_path):
    status, headers, body = call("POST", ROOMS, KEY)
    assert status == 200 and headers[b"content-type"] == b"application/json" and headers[b"cache-control"] == b"no-store"
    code = body["room"]
    store = open_store(str(tmp_path / "class.sqlite3"))  # the same file, as another process
    assert store.room(code) is not None
    q = store.start_question(code, "attend", {"text": "it"})
    for s, a in (("s1", "cat"), ("s2", "cat"), ("s1", "mat")):
        store.answer(code, q.id, s, a)
    store.reveal(code, q.id, {"answer": "cat"})
    status, _, summary = call("GET", f"{ROOMS}/{code}/summary", KEY)
    assert status == 200 and summary == {"room": code, "students": 2, "answers": 2,
                                         "questions": [{"id": q.id, "kind": "attend", "answers": 2, "right": 1}],
                                         "sentences": 0, "approved": 0}
    assert call("GET", f"{ROOMS}/{code.lower()}/summary", KEY)[2]["room"] == code  # a code as typed
    assert call("GET", f"{ROOMS}/ZZZZZZZZ/summary", KEY)[:1] == (404,)
    assert call("GET", f"{ROOMS}/<script>/summary", KEY)[:1] == (404,)
    assert call("GET", ROOMS, KEY)[0] == 405 and call("POST", f"{ROOMS}/{code}/summary", KEY)[0] == 405
    assert call("GET", "/_headlight/class/elsewhere", KEY)[0] == 404
    status, _, body = call("DELETE", f"{ROOMS}/{code}", KEY)
    assert status == 200 and store.room(code) is None
    assert call("GET", f"{ROOMS}/{code}/summary", KEY)[0] == 404
    store.close()


def test_without_the_right_key_nothing_is_told(served, tmp_path, monkeypatch):
    code = call("POST", ROOMS, KEY)[2]["room"]
    for method, path in (("POST", ROOMS), ("GET", f"{ROOMS}/{code}/summary"), ("GET", f"{ROOMS}/ZZZZZZZZ/summary"),
                         ("DELETE", f"{ROOMS}/{code}"), ("GET", "/_headlight/class/nowhere")):
        status, headers, body = call(method, path)
        assert status == 401 and headers[b"www-authenticate"].startswith(b"Bearer") and list(body) == ["error"]
        for wrong in ("wrong", KEY[:-1], KEY + "x", KEY.upper(), "x" * 5000):
            status, _, body = call(method, path, wrong, peer=f"10.9.{len(wrong) % 250}.{len(path)}")
            assert status == 403 and list(body) == ["error"] and code not in json.dumps(body), (method, path)
    status, _, _ = call("GET", f"{ROOMS}/{code}/summary",
                        headers=[(b"authorization", f"Basic {KEY}".encode())])  # not a bearer token
    assert status == 401
    assert call("GET", f"{ROOMS}/{code}/summary", KEY)[0] == 200  # the room is still there (DELETE refused)
    monkeypatch.delenv(lecturer.KEY_ENV)  # a server started without a key: no lecturer action at all
    assert call("POST", ROOMS, KEY)[0] == 403 and call("POST", ROOMS, "")[0] == 403
    assert len(list(tmp_path.glob("class.sqlite3"))) == 1


def test_wrong_keys_are_limited_per_address_and_the_right_key_always_opens(served):
    """Issue 34: a lecture hall behind one campus address. After MAX_FAILURES wrong keys from it, further wrong keys
    get 429, but the right key always opens; the count is in the class store."""
    clock = served
    for _ in range(lecturer.MAX_FAILURES):
        assert call("POST", ROOMS, "guess", peer="10.0.0.7")[0] == 403
    status, headers, body = call("POST", ROOMS, "guess", peer="10.0.0.7")
    assert status == 429 and int(headers[b"retry-after"]) == 60 and list(body) == ["error"]
    for _ in range(3):  # the lecturer, at once and again, in the middle of the guessing
        assert call("POST", ROOMS, KEY, peer="10.0.0.7")[0] == 200
        assert call("POST", ROOMS, "guess", peer="10.0.0.7")[0] == 429
    assert call("POST", ROOMS, None, peer="10.0.0.7")[0] == 401  # no key: not a guess
    assert call("POST", ROOMS, "guess", peer="10.0.0.8")[0] == 403  # another address has its own count
    assert len(cs.shared_store().key_failures("10.0.0.7", clock.t, lecturer.WINDOW_S)) == lecturer.MAX_FAILURES
    clock.t += lecturer.WINDOW_S - 1
    assert call("POST", ROOMS, "guess", peer="10.0.0.7")[0] == 429
    clock.t += 1.5
    assert call("POST", ROOMS, "guess", peer="10.0.0.7")[0] == 403  # the oldest left the window
    # behind make serve's HAProxy (a loopback peer) the address is the last X-Forwarded-For entry, the one HAProxy
    # added; a client's own header before it changes nothing; from any other peer the header is ignored
    for i in range(lecturer.MAX_FAILURES):
        spoof = [(b"x-forwarded-for", f"1.2.3.{i}".encode()), (b"x-forwarded-for", b"192.0.2.1")]
        assert call("POST", ROOMS, "guess", peer="127.0.0.1", headers=spoof)[0] == 403
    assert call("POST", ROOMS, "guess", peer="127.0.0.1", headers=[(b"x-forwarded-for", b"192.0.2.1")])[0] == 429
    assert call("POST", ROOMS, KEY, peer="127.0.0.1", headers=[(b"x-forwarded-for", b"192.0.2.1")])[0] == 200
    assert call("POST", ROOMS, "guess", peer="127.0.0.1", headers=[(b"x-forwarded-for", b"192.0.2.2")])[0] == 403
    assert call("POST", ROOMS, "guess", peer="10.0.0.9", headers=[(b"x-forwarded-for", b"192.0.2.1")])[0] == 403
    assert door.client_address({"client": ("10.5.0.2", 1), "headers": [(b"x-forwarded-for", b"192.0.2.1")]}) \
        == "10.5.0.2"


def test_the_right_key_opens_when_the_store_is_down(served, monkeypatch):
    """A wrong key that cannot be counted (the database is down) is still refused; the right key still opens."""
    class Down:
        def key_failure(self, *a):
            raise OSError("database down")

        key_failures = key_failure

    monkeypatch.setattr(door, "GATE", Gate(clock=served, failures=Down()))
    assert call("POST", ROOMS, "guess")[0] == 403
    assert call("POST", ROOMS, KEY)[0] == 200


def _guessing_process(env: dict, guesses: int, start, out) -> None:
    """An app process of `make serve`: its own door and Gate on the shared store, wrong keys from one hall."""
    import os

    os.environ.update(env)
    statuses = []
    start.wait(30)
    for i in range(guesses):
        statuses.append(call("POST", ROOMS, f"guess-{os.getpid()}-{i}", peer="192.0.2.50")[0])
    out.put(statuses)


@pytest.mark.parametrize("db", ["sqlite", "postgresql"])
def test_the_wrong_key_limit_holds_across_processes(db, tmp_path, monkeypatch):
    """Two processes take wrong keys from one address at once: together they let exactly MAX_FAILURES through as
    403, then 429 (a per-process count let 2 x MAX_FAILURES through); the right key opens in either."""
    import multiprocessing

    env = {lecturer.KEY_ENV: KEY, "HEADLIGHT_DATA_DIR": str(tmp_path), "HEADLIGHT_CLASS_DB": ""}
    server = None
    if db == "postgresql":
        from pg_support import PostgresServer

        server = PostgresServer()
        env["HEADLIGHT_CLASS_DB"] = server.create_db()
    try:
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        monkeypatch.setattr(cs, "_SHARED", {})
        ctx = multiprocessing.get_context("spawn")  # torch is loaded here: no fork
        start, out = ctx.Event(), ctx.Queue()
        n = lecturer.MAX_FAILURES
        procs = [ctx.Process(target=_guessing_process, args=(env, n, start, out)) for _ in range(2)]
        for p in procs:
            p.start()
        time.sleep(0.5)
        start.set()
        statuses = [s for _ in procs for s in out.get(timeout=120)]
        for p in procs:
            p.join(30)
        assert sorted(statuses) == [403] * n + [429] * n
        assert call("POST", ROOMS, "guess", peer="192.0.2.50")[0] == 429  # this process sees the same count
        assert call("POST", ROOMS, KEY, peer="192.0.2.50")[0] == 200
    finally:
        for s in cs._SHARED.values():
            s.close()
        if server is not None:
            server.stop()


def test_a_balancer_on_another_host_can_be_trusted(monkeypatch):
    scope = {"client": ("10.5.0.2", 1), "headers": [(b"x-forwarded-for", b"6.6.6.6, 192.0.2.7")]}
    assert door.client_address(scope) == "10.5.0.2"
    monkeypatch.setenv(door.TRUSTED_PROXIES_ENV, "bogus, 10.5.0.0/24")
    assert door.client_address(scope) == "192.0.2.7"
    assert door.client_address({**scope, "client": ("10.6.0.2", 1)}) == "10.6.0.2"
    assert door.client_address({"client": None, "headers": []}) == ""


def test_the_key_helpers():
    assert bearer(b"Bearer abc") == "abc" and bearer("bearer  abc ") == "abc"
    assert bearer("Basic abc") is None and bearer("Bearer") is None and bearer(None) is None and bearer("") is None
    assert key_matches(KEY, KEY) and not key_matches("", KEY) and not key_matches(None, KEY)
    assert not key_matches("", "") and not key_matches("x", "")  # an empty key never matches
    assert key_matches("한국어 키", "한국어 키")  # any text, compared as UTF-8 bytes
    keys = {lecturer.new_key() for _ in range(100)}
    assert len(keys) == 100 and all(len(k) == 32 for k in keys)
    out = subprocess.run([sys.executable, "-m", "serve", "lecturer-key"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.strip()
    assert len(out) == 32 and out.replace("-", "").replace("_", "").isalnum()
    src = (ROOT / "serve" / "door.py").read_text() + (ROOT / "classroom" / "lecturer.py").read_text()
    assert "compare_digest" in src and "==" not in (ROOT / "classroom" / "lecturer.py").read_text().split(
        "def key_matches")[1].split("def ")[0]  # the key is compared in constant time only
    for f in ("Makefile", "deploy/serve.sh"):  # make run and make serve: a key printed when none is set
        text = (ROOT / f).read_text()
        assert "serve lecturer-key" in text and "HEADLIGHT_LECTURER_KEY" in text, f


def test_over_a_real_socket(served, tmp_path):
    """uvicorn with the door's protocol and middleware, as `python -m serve run` serves: status codes and JSON over
    HTTP/1.1."""
    import uvicorn

    async def app(scope, receive, send):
        raise AssertionError("reached Streamlit")

    config = uvicorn.Config(door.DoorMiddleware(app), host="127.0.0.1", port=0, http=door.DoorH11Protocol,
                            log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]

    def http(method: str, path: str, key: str | None) -> tuple[int, dict]:
        req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method, data=b"" if method == "POST"
                                     else None, headers={"Authorization": f"Bearer {key}"} if key else {})
        try:
            with urllib.request.urlopen(req, timeout=5) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    try:
        status, body = http("POST", ROOMS, KEY)
        assert status == 200 and set(body) == {"room", "expires"}
        code = body["room"]
        assert http("GET", f"{ROOMS}/{code}/summary", KEY) == (200, {
            "room": code, "students": 0, "answers": 0, "questions": [], "sentences": 0, "approved": 0})
        assert http("GET", f"{ROOMS}/{code}/summary", None)[0] == 401
        assert http("GET", f"{ROOMS}/{code}/summary", "nope")[0] == 403
    finally:
        server.should_exit = True
        thread.join(10)


def test_every_process_loads_the_live_rooms_models_before_the_students_come(tmp_path, monkeypatch):
    """serve/preload.py's watch (issue 34: the first student of a process waited for the room's model to load): the
    models of the live rooms, newest first, are loaded once per process; none is looked for without a class store,
    and a model that will not load is not tried again."""
    from serve import preload
    from ui import store as ui_store

    monkeypatch.delenv("HEADLIGHT_CLASS_DB", raising=False)
    monkeypatch.setenv("HEADLIGHT_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(cs, "_SHARED", {})
    monkeypatch.setattr(preload, "_FAILED", set())
    loads = []
    monkeypatch.setattr(ui_store, "preload_model", lambda name, device: loads.append((name, device)))
    monkeypatch.setattr(ui_store, "is_loaded", lambda name, device: (name, device) in loads)
    assert preload.room_models() == [] and preload.watch_once("cpu") == []
    assert not (tmp_path / "class.sqlite3").exists()  # no class store is made by looking
    store = open_store(str(tmp_path / "class.sqlite3"))
    store.open_room("minilm-l6", "en")
    store.open_room()  # opened by the endpoint: no model
    store.open_room("multilingual-e5-small", "ko")
    store.open_room("no-such-model", "ko")
    assert store.live_models(3) == ["no-such-model", "multilingual-e5-small", "minilm-l6"]
    monkeypatch.setattr(preload, "MAX_ROOM_MODELS", 3)
    assert preload.room_models() == ["no-such-model", "multilingual-e5-small", "minilm-l6"]
    assert preload.watch_once("cpu") == ["multilingual-e5-small", "minilm-l6"]  # an unknown name is not loaded
    assert preload.watch_once("cpu") == [] and loads == [("multilingual-e5-small", "cpu"), ("minilm-l6", "cpu")]

    def broken(name, device):
        raise OSError("weights missing")

    monkeypatch.setattr(ui_store, "preload_model", broken)
    monkeypatch.setattr(ui_store, "is_loaded", lambda name, device: False)
    assert preload.watch_once("cuda") == [] and preload._FAILED == {"multilingual-e5-small", "minilm-l6"}
    assert preload.watch_once("cuda") == []  # not tried again
    stop = threading.Event()
    stop.set()
    preload.watch_rooms(stop)  # returns at once when stopped
    store.close()


def test_the_warm_up_does_the_first_runs_one_time_work():
    """serve/preload.py warm_up, in a fresh interpreter that imported what the preload imports: PIL (which
    st.set_page_config's favicon imports) and plotly's JSON encoder were not loaded before it, and are after; outside
    a server it waits for none and sends nothing."""
    code = ("import importlib, sys; from serve import preload; [importlib.import_module(m) for m in preload.MODULES]; "
            "before = sorted(m for m in ('PIL.Image', 'plotly.io._json') if m in sys.modules); "
            "preload.RUNTIME_WAIT_S = 0; preload.warm_up(); "
            "print(before, sorted(m for m in ('PIL.Image', 'plotly.io._json') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                         env={**os.environ, "HEADLIGHT_PRELOAD": "0"}, timeout=300).stdout.strip().splitlines()[-1]
    assert out == "[] ['PIL.Image', 'plotly.io._json']", out
