"""Browser benchmark of the app (run by `make bench`): the browser targets of issue 8, in headless Chromium.

Starts `streamlit run app.py` once, warms it, then measures in the page's own clock (performance.now):
1. new sentence: in a page already on the explorer, type a new sentence and press Ctrl+Enter; time to the first
   chart whose axis labels carry the new tokens, and time to idle;
2. head change: pick another head in the sidebar "Head" selectbox; time to idle with "Layer 0 · Head N" drawn;
3. page switch: click each other page's link in the sidebar navigation; time to idle on that page;
4. open a 14-token link in a fresh browser context (cold browser cache, warm server): navigation start to idle,
   with the static bytes (HTTP) and the app's WebSocket bytes;
5. the 512-token explorer link in a fresh context: WebSocket bytes and data -> drawn (last message -> idle);
6. every page in the menu's order, from the page before it, 3+ rounds, on two clocks: the page's (as in 3) and a
   Playwright script's (click() called -> wait_for_function sees the page's URL and title, no run indicator, every
   chart drawn), with the click's own lag and the detection lag between them;
7. first visit in a fresh context, side by side: this app's 14-token link and bench/minimal_app.py (one plotly
   heatmap), interleaved, and the ratio of the medians.

Idle: the Streamlit run of the action has finished (its script_finished message arrived), the status widget does
not say "running", no WebSocket message for 100 ms, no stale element, and every Plotly chart has its .main-svg and
every image is decoded; the time reported is the start of that quiet window. A WebSocket wrapper injected with
add_init_script stamps every message (size, time, ForwardMsg type) and the user action is stamped by the page's
own keydown / pointerdown event. Each figure is the median of REPEATS (5); the load average is printed with it.

Under the table, "where the time goes": action -> BackMsg sent (page clock), the run from that BackMsg to its
script_finished message, both stamped in Chromium's network layer (CDP), and the client's share (the rest, up to
idle), with bytes, messages and the main thread's long tasks. The network stamps are not delayed by a busy main
thread, but a busy page stops reading its WebSocket (flow control), so for pages of large messages the "run" column
is an upper bound on the server's work (bench/loadtest.py, which renders nothing, gives the server alone).
Then the largest static files of one cold open, with when each was requested and loaded.

    .venv/bin/python bench/bench_browser.py [REPEATS]     (writes bench/results_browser.md)"""

from __future__ import annotations

import argparse
import base64
import contextlib
import os
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from browser_support import chromium_browser, serve_app, wait_for_app  # noqa: E402

from i18n import t  # noqa: E402
from ui.pages import PAGES as TABLE  # noqa: E402

REPEATS = 5
DEFAULT = "The animal didn't cross the street because it was tired"
# new sentences for scenario 1: each is new to the server (a real cache miss), ~10-14 tokens like the default;
# the marker word must be one MiniLM token so it shows on the heatmap's axis as it is
SENTENCES = [
    ("A small dog ran across the garden after the ball", "garden"),
    ("The teacher wrote a long question on the board", "teacher"),
    ("My sister bought fresh bread from the market today", "bread"),
    ("The river flooded the village after heavy rain", "village"),
    ("Our train left the station late in the evening", "station"),
    ("The old man planted a tree near the house", "tree"),
    ("She painted the kitchen wall a bright yellow", "kitchen"),
]
MENU = [("" if p.default else p.name, t(p.title_key, "en")) for p in TABLE]  # (URL path, a heading's start), in order
PAGES = [m for m in MENU if m[0] in ("positional", "masks", "steps", "seq2seq")]
# scenario 6: every page in the menu's order, from the page before it (the explorer after the tour)
CYCLE = [*MENU[1:], MENU[0]]
# the script's own view of "switched and done", as a Playwright script without the page's instruments sees it:
# the URL is the page's, its title is shown, the status widget does not say running, every chart is drawn, nothing
# is stale
SEEN_DONE = r"""([path, h1]) => location.pathname.replace(/\/$/, '') === path && !window.__hl.running()
  && Array.from(document.querySelectorAll('[data-testid="stMain"] h1'), (e) => e.textContent).some((x) => x.includes(h1))
  && window.__hl.drawn() && !window.__hl.stale()"""
LONG = " ".join(["the animal didn't cross the street because it was tired"] * 60)  # > 512 tokens: truncated
TIMEOUT_MS = 120_000
EXTRA: dict[str, str] = {}  # query parameters on every link (--gpt2: the registered folder's model name)


def query(**params) -> str:
    return urlencode({**params, **EXTRA})

# Before the app's JS: wrap WebSocket (stamp and size every message, tell ForwardMsg types apart by their
# top-level protobuf field), stamp the user's action by its own event, record long tasks, and provide the
# watcher that finds "first" (the scenario's target condition) and "idle".
INIT = r"""
(() => {
  const hl = window.__hl = {bytes: 0, n: 0, last: 0, rx: [], tx: [], armed: null, action: null, long: [],
                            checks: 0, checkMs: 0};
  const FIELDS = {4: 'new_session', 5: 'delta', 6: 'script_finished', 9: 'session_status', 10: 'session_event',
    12: 'page_info', 13: 'page_config', 14: 'git_info', 18: 'page_profile', 23: 'navigation', 26: 'heartbeat_ack'};
  function kind(buf) {  // the top-level field of a ForwardMsg other than hash (1) and metadata (2)
    const b = new Uint8Array(buf); let i = 0;
    const varint = () => { let v = 0, m = 1, c; do { c = b[i++]; v += (c & 127) * m; m *= 128; } while (c & 128); return v; };
    while (i < b.length) {
      const key = varint(), f = Math.floor(key / 8), wt = key & 7;
      if (f > 2) return FIELDS[f] || ('field' + f);
      if (wt === 0) varint(); else if (wt === 1) i += 8; else if (wt === 5) i += 4;
      else if (wt === 2) { const n = varint(); i += n; } else return '?';
    }
    return '?';
  }
  const Orig = window.WebSocket;
  function Wrapped(...args) {
    const ws = new Orig(...args);
    ws.addEventListener('message', (e) => {
      const d = e.data, t = performance.now(), n = d.byteLength ?? d.size ?? d.length ?? 0;
      let k = '?'; try { if (d instanceof ArrayBuffer) k = kind(d); } catch (err) { k = '!'; }
      hl.bytes += n; hl.n += 1; hl.rx.push([t, n, k]);
      if (k !== 'heartbeat_ack') hl.last = t;
    });
    const send = ws.send.bind(ws);
    ws.send = (d) => { hl.tx.push([performance.now(), d.byteLength ?? d.size ?? d.length ?? 0]); return send(d); };
    return ws;
  }
  Wrapped.prototype = Orig.prototype;
  for (const k of ['CONNECTING', 'OPEN', 'CLOSING', 'CLOSED']) Wrapped[k] = Orig[k];
  window.WebSocket = Wrapped;
  const stamp = (e) => {
    if (hl.armed === 'key' && e.type === 'keydown' && e.key === 'Enter') { hl.action = e.timeStamp; hl.armed = null; }
    if (hl.armed === 'pointer' && e.type === 'pointerdown') { hl.action = e.timeStamp; hl.armed = null; }
  };
  window.addEventListener('keydown', stamp, true);
  window.addEventListener('pointerdown', stamp, true);
  try { new PerformanceObserver((l) => { for (const e of l.getEntries()) hl.long.push([e.startTime, e.duration]); })
          .observe({type: 'longtask', buffered: true}); } catch (err) {}

  const running = () => { const s = document.querySelector('[data-testid="stStatusWidget"]');
                          return !!s && /running/i.test(s.innerText); };
  const drawn = () => {
    const charts = document.querySelectorAll('[data-testid="stPlotlyChart"]');
    for (const c of charts) if (!c.querySelector('.main-svg')) return false;
    for (const im of document.querySelectorAll('[data-testid="stImage"] img')) if (!im.complete) return false;
    return true;
  };
  const anyDrawn = () => document.querySelectorAll('[data-testid="stPlotlyChart"], [data-testid="stImage"] img').length > 0;
  const stale = () => !!document.querySelector('[data-stale="true"]');
  hl.drawn = drawn; hl.running = running; hl.stale = stale;  // for the script-side clock of scenario 6
  const chartText = (sel) => Array.from(document.querySelectorAll('[data-testid="stPlotlyChart"] ' + sel),
                                        (e) => e.textContent).join('|');
  const TARGETS = {
    word: (w) => chartText('.xtick text, .ytick text').split('|').some((x) => x.replace(/^[\u0120\u2581]/, '') === w),
    title: (t) => chartText('.gtitle').split('|').some((x) => x.trim().endsWith(t)),
    page: ([path, h1]) => location.pathname.replace(/\/$/, '').endsWith(path) &&
      Array.from(document.querySelectorAll('[data-testid="stMain"] h1'), (e) => e.textContent).some((x) => x.includes(h1)),
    any: () => anyDrawn(),  // a page opened by a link: something is drawn (pages of the cycle may have no chart)
  };
  // start watching: res.first = first time the target holds with every chart drawn; res.idle = start of the quiet
  // window after the run's script_finished (from = index into hl.rx of the first message that may count)
  window.__hlWatch = (target, arg, armed, fromStart) => {
    const from = fromStart ? 0 : hl.rx.length, res = hl.res = {first: null, idle: null, since: null};
    hl.armed = armed || null; hl.action = armed ? null : 0;
    const check = () => {
      if (res.idle !== null) return;
      const now = performance.now();
      try { step(now); } finally { hl.checks += 1; hl.checkMs += performance.now() - now; }
    };
    const step = (now) => {
      const ok = TARGETS[target](arg) && drawn();
      if (ok && res.first === null) res.first = now;
      const finished = hl.rx.slice(from).some((m) => m[2] === 'script_finished');
      if (!(ok && finished && !running() && !stale())) { res.since = null; return; }
      if (res.since === null || res.since < hl.last) res.since = Math.max(now, hl.last);
      if (now - res.since >= 100 && now - hl.last >= 100) {
        res.idle = res.since; clearInterval(timer); mo.disconnect();
      }
    };
    const timer = setInterval(check, 20);
    const mo = new MutationObserver(check);
    mo.observe(document, {subtree: true, childList: true});  // d3 sets labels with textContent: childList
  };
})();
"""

RESULT = """() => { const h = window.__hl, r = h.res;
  return {first: r.first, idle: r.idle, action: h.action, rx: h.rx, tx: h.tx, long: h.long,
          checks: h.checks, checkMs: h.checkMs}; }"""


def load() -> str:
    return "load " + " ".join(f"{x:.2f}" for x in os.getloadavg())


FIELDS = {4: "new_session", 5: "delta", 6: "script_finished", 26: "heartbeat_ack"}
NET: dict = {}  # page -> {"frames": [(direction, network time s, bytes, kind)], "mark": index at the last watch()}


def proto_kind(head: bytes) -> str:
    """The top-level field of a ForwardMsg (from its first bytes) other than hash (1) and metadata (2)."""
    i = 0

    def varint() -> int:
        nonlocal i
        v = shift = 0
        while True:
            c = head[i]
            i += 1
            v |= (c & 127) << shift
            shift += 7
            if not c & 128:
                return v

    try:
        while i < len(head):
            key = varint()
            field, wire = key >> 3, key & 7
            if field > 2:
                return FIELDS.get(field, f"field{field}")
            i += {0: 0, 1: 8, 5: 4}.get(wire, 0)
            if wire == 0:
                varint()
            elif wire == 2:
                n = varint()  # not `i += varint()`: that reads i before varint() moves it
                i += n
    except IndexError:
        pass
    return "?"


def network_log(context, page) -> None:
    """Stamp every WebSocket frame in the browser's network layer (CDP), which a busy page main thread cannot
    delay: the server's share is measured there, from the action's BackMsg to the run's script_finished."""
    log = NET[page] = {"frames": [], "mark": 0}
    cdp = context.new_cdp_session(page)

    def frame(direction: str):
        def on(p: dict) -> None:
            data = p["response"]["payloadData"]
            kind = proto_kind(base64.b64decode(data[:800])) if direction == "rx" and p["response"]["opcode"] == 2 \
                else "?"
            log["frames"].append((direction, p["timestamp"], len(data) * 3 // 4, kind))
        return on

    cdp.on("Network.webSocketFrameReceived", frame("rx"))
    cdp.on("Network.webSocketFrameSent", frame("tx"))
    cdp.send("Network.enable")


def network_split(page) -> dict:
    """BackMsg -> script_finished in the network layer's clock, for the frames since the last watch()."""
    log = NET.get(page)
    if not log:
        return {}
    frames = log["frames"][log["mark"]:]
    sent = next((f[1] for f in frames if f[0] == "tx"), None)
    done = next((f[1] for f in frames if f[0] == "rx" and f[3] == "script_finished" and sent is not None
                 and f[1] >= sent), None)
    return {"server_net_s": done - sent} if sent is not None and done is not None else {}


def summary(r: dict, t0: float) -> dict:
    """Split one measurement: server run (the action's first BackMsg -> script_finished), bytes, client (last
    message -> idle), and long tasks of the main thread between the action and idle."""
    idle = r["idle"]
    rx = [m for m in r["rx"] if t0 <= m[0] <= idle]
    sent = [t for t, _ in r["tx"] if t >= t0]
    finished = [m[0] for m in rx if m[2] == "script_finished"]
    last = max((m[0] for m in rx if m[2] != "heartbeat_ack"), default=t0)
    send = sent[0] if sent else t0
    kinds: dict[str, int] = {}
    for m in rx:
        kinds[m[2]] = kinds.get(m[2], 0) + m[1]
    return {
        "first_s": (r["first"] - t0) / 1000 if r["first"] is not None else float("nan"),
        "idle_s": (idle - t0) / 1000,
        "send_s": (send - t0) / 1000,  # action -> its BackMsg leaves
        "first_msg_s": (rx[0][0] - send) / 1000 if rx else float("nan"),  # BackMsg -> first reply
        "server_s": ((finished[-1] if finished else last) - send) / 1000,  # BackMsg -> script_finished
        "client_s": (idle - last) / 1000,  # last message -> idle
        "ws_bytes": sum(m[1] for m in rx), "messages": len(rx), "bytes_by_kind": kinds,
        "longtask_s": sum(d for s, d in r["long"] if t0 <= s <= idle) / 1000,
        "watch_ms": r["checkMs"],  # the benchmark's own checks in the page (all of them so far)
    }


def watch(page, target: str, arg, armed: str | None = None, from_start: bool = False) -> None:
    if page in NET:
        NET[page]["mark"] = 0 if from_start else len(NET[page]["frames"])
    page.evaluate("([t, a, armed, f]) => window.__hlWatch(t, a, armed, f)", [target, arg, armed, from_start])


def result(page, t0: float | None = None) -> dict:
    page.wait_for_function("() => window.__hl.res && window.__hl.res.idle !== null", timeout=TIMEOUT_MS, polling=100)
    r = page.evaluate(RESULT)
    if t0 is None:
        t0 = r["action"]
    if t0 is None:
        raise RuntimeError("the user action was not seen by the page")
    out = summary(r, t0)
    net = network_split(page)
    if net:  # client = what is left of action -> idle after the BackMsg left and the server finished sending
        out["server_net_s"] = net["server_net_s"]
        out["client_net_s"] = out["idle_s"] - out["send_s"] - net["server_net_s"]
    return out


@contextlib.contextmanager
def app_page(browser, url: str):
    context = browser.new_context(viewport={"width": 1600, "height": 1000}, device_scale_factor=1)
    try:
        context.add_init_script(INIT)
        page = context.new_page()
        network_log(context, page)
        page.goto(url)
        wait_for_app(page)
        watch(page, "any", None, from_start=True)
        result(page, 0.0)
        yield page
    finally:
        NET.clear()
        context.close()


def textarea(page):
    return page.locator('[data-testid="stSidebar"] [data-testid="stTextArea"] textarea')


def type_sentence(page, sentence: str, word: str) -> dict:
    textarea(page).fill(sentence)
    watch(page, "word", word, "key")
    textarea(page).press("Control+Enter")
    return result(page)


def new_sentence(browser, base: str, repeats: int, path: str = "", **params) -> list[dict]:
    """Scenario 1 (the explorer), or 8 (path "seq2seq", model=<a translator>: the Encoder-decoder page)."""
    rows = []
    with app_page(browser, f"{base}/{path}?{query(text=DEFAULT, **params)}") as page:
        type_sentence(page, *SENTENCES[-1])  # warm-up: the first rerun of this session is not measured
        for sentence, word in SENTENCES[:repeats]:
            rows.append(type_sentence(page, sentence, word))
    return rows


def pick_head(page, head: int) -> dict:
    box = page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]').filter(has_text="Head")
    box.locator("input").click()
    option = page.get_by_role("option", name=f"Head {head}", exact=True)
    option.wait_for()
    watch(page, "title", f"Layer 0 · Head {head}", "pointer")
    option.click()
    return result(page)


def head_change(browser, base: str, repeats: int) -> list[dict]:
    with app_page(browser, f"{base}/?{query(text=DEFAULT)}") as page:
        pick_head(page, 11)  # warm-up
        return [pick_head(page, h) for h in range(1, repeats + 1)]


def go(page, path: str, h1: str, measured: bool = True) -> dict | None:
    link = page.locator(f'[data-testid="stSidebarNavLink"][href$="/{path}"]')
    watch(page, "page", [f"/{path}" if path else "", h1], "pointer")
    link.click()
    return result(page) if measured else (result(page, 0.0) and None)


def page_switch(browser, base: str, repeats: int) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    with app_page(browser, f"{base}/?{query(text=DEFAULT)}") as page:
        for path, h1 in PAGES:  # warm-up: every page once (the server's caches of the labs)
            go(page, path, h1, measured=False)
            go(page, "", "Attention explorer", measured=False)
        # interleaved, so that every measured switch is a page this session has not seen in its last two runs:
        # Streamlit then sends the page's large messages again (its client-side message cache has expired), as
        # for a student who moves on through the pages
        for _ in range(repeats):
            for path, h1 in PAGES:
                out.setdefault(path, []).append(go(page, path, h1))
                go(page, "", "Attention explorer", measured=False)
    return out


def go_two_clocks(page, path: str, h1: str) -> dict:
    """One switch measured twice: the page's clock (pointerdown -> start of the quiet window, as in scenario 3) and
    the script's (before Playwright's click() -> its wait_for_function on SEEN_DONE returns, polled every
    animation frame), with where the two differ: the click's own lag (click() called -> pointerdown in the page)
    and the detection lag (the quiet window's start -> the script sees it)."""
    link = page.locator(f'[data-testid="stSidebarNavLink"][href$="/{path}"]')
    link.wait_for()
    origin = page.evaluate("performance.timeOrigin")  # ms since the epoch, the page clock's zero
    watch(page, "page", [f"/{path}" if path else "", h1], "pointer")
    t0 = time.time()
    link.click()
    page.wait_for_function(SEEN_DONE, arg=[f"/{path}" if path else "", h1], timeout=TIMEOUT_MS, polling="raf")
    t1 = time.time()
    r = result(page)
    action_epoch = (origin + page.evaluate("window.__hl.action")) / 1000
    idle_epoch = action_epoch + r["idle_s"]
    r["script_s"] = t1 - t0
    r["click_lag_s"] = action_epoch - t0
    r["seen_lag_s"] = t1 - idle_epoch  # negative: the script saw "done" before the page's quiet window began
    return r


def page_cycle(browser, base: str, rounds: int) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    with app_page(browser, f"{base}/?{query(text=DEFAULT)}") as page:
        for path, h1 in CYCLE:  # warm-up round: every page once
            go(page, path, h1, measured=False)
        for _ in range(rounds):
            for path, h1 in CYCLE:
                out.setdefault(path, []).append(go_two_clocks(page, path, h1))
    return out


def open_link(browser, url: str) -> dict:
    """A fresh context (cold HTTP cache), navigation start -> idle, with static and WebSocket bytes."""
    context = browser.new_context(viewport={"width": 1600, "height": 1000}, device_scale_factor=1)
    try:
        context.add_init_script(INIT + "\nwindow.__hlWatch('any', null, null, true);")
        page = context.new_page()
        network_log(context, page)
        page.goto(url)
        r = result(page, 0.0)
        res = page.evaluate("""() => performance.getEntriesByType('resource').concat(
                                  performance.getEntriesByType('navigation')).map(e => [e.name, e.transferSize,
                                  e.encodedBodySize, e.decodedBodySize, e.startTime, e.responseEnd])""")
        r["static_bytes"] = sum(e[1] for e in res)
        r["static_body"] = sum(e[2] for e in res)
        r["static_end_s"] = max(e[5] for e in res) / 1000
        r["resources"] = res
        return r
    finally:
        NET.clear()
        context.close()


def fresh_open(browser, base: str, text: str, repeats: int) -> list[dict]:
    url = f"{base}/?{query(text=text, layer=2, head=5)}"
    open_link(browser, url)  # warm-up: fills the server's trace cache for this text
    return [open_link(browser, url) for _ in range(repeats)]


def med(rows: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def verdict(value: float, target: float) -> str:
    return "met" if value <= target else "missed"


def run(repeats: int, env: dict | None = None, only: set[int] | None = None) -> str:
    from playwright.sync_api import sync_playwright

    table = ["| scenario | measure | median | range | target | |", "|---|---|---|---|---|---|"]
    diag = ["| scenario | action -> BackMsg sent | server run (BackMsg -> script_finished, network) "
            "| client (the rest, to idle) | WebSocket bytes | messages | main-thread long tasks | total to idle "
            "| page saw script_finished -> idle |",
            "|---|---|---|---|---|---|---|---|---|"]
    loads: list[str] = []
    cyc = ["| to page | page clock: pointerdown -> idle | script clock: click() -> seen done | click() -> pointerdown "
           "| idle -> seen by the script | server run | main-thread long tasks |", "|---|---|---|---|---|---|---|"]

    def row(name: str, what: str, rows: list[dict], key: str, target: float | None, unit: str = "s") -> None:
        vals = [r[key] for r in rows]
        m = statistics.median(vals)
        if unit == "MB":
            cell, rng = f"{m / 1e6:.2f} MB", f"{min(vals) / 1e6:.2f}-{max(vals) / 1e6:.2f}"
            tgt, ok = (f"≤ {target / 1e6:.0f} MB", verdict(m, target)) if target else ("", "")
        else:
            cell, rng = f"{m:.2f} s", f"{min(vals):.2f}-{max(vals):.2f}"
            tgt, ok = (f"≤ {target:.1f} s", verdict(m, target)) if target else ("", "")
        table.append(f"| {name} | {what} | {cell} | {rng} | {tgt} | {ok} |")
        print(table[-1], flush=True)

    def drow(name: str, rows: list[dict]) -> None:
        diag.append(f"| {name} | {med(rows, 'send_s'):.2f} s | {med(rows, 'server_net_s'):.2f} s "
                    f"| {med(rows, 'client_net_s'):.2f} s | {med(rows, 'ws_bytes') / 1e3:.0f} kB "
                    f"| {med(rows, 'messages'):.0f} | {med(rows, 'longtask_s'):.2f} s | {med(rows, 'idle_s'):.2f} s "
                    f"| {med(rows, 'client_s'):.2f} s |")

    def want(n: int) -> bool:
        return only is None or n in only

    resources, static_end = [], 0.0
    with serve_app(env=env) as base, sync_playwright() as p:
        browser = chromium_browser(p)
        try:
            t = time.perf_counter()
            open_link(browser, f"{base}/?{query(text=DEFAULT)}")  # warm-up: model and trace caches
            print(f"server warm after {time.perf_counter() - t:.1f} s; {load()}", flush=True)

            if want(1):
                rows = new_sentence(browser, base, repeats)
                loads.append(load())
                row("1. new sentence (Ctrl+Enter)", "first updated chart", rows, "first_s", 0.3)
                row("1. new sentence (Ctrl+Enter)", "idle", rows, "idle_s", 0.5)
                drow("1. new sentence", rows)

            if want(8):
                # 8. a new sentence on the Encoder-decoder page with the translator (greedy decoding within the
                # shortlist, every step's maps, the alignment view)
                rows = new_sentence(browser, base, repeats, "seq2seq", model="bergamot-en-pt")
                loads.append(load())
                row("8. new sentence, Encoder-decoder page, Firefox en→pt", "first updated chart", rows, "first_s",
                    0.5)
                row("8. new sentence, Encoder-decoder page, Firefox en→pt", "idle", rows, "idle_s", None)
                drow("8. new sentence, translator", rows)

            if want(2):
                rows = head_change(browser, base, repeats)
                loads.append(load())
                row("2. head change (sidebar)", "idle, new title drawn", rows, "idle_s", 0.2)
                drow("2. head change", rows)

            if want(3):
                switched = page_switch(browser, base, repeats)
                loads.append(load())
                for (path, h1) in PAGES:
                    row(f"3. explorer -> {h1}", "idle", switched[path], "idle_s", 0.6)
                    drow(f"3. -> {h1}", switched[path])

            if want(6):
                cycle = page_cycle(browser, base, max(3, repeats))
                loads.append(load())
                for path, h1 in CYCLE:
                    row(f"6. page cycle -> {h1}", "idle, page clock", cycle[path], "idle_s", 0.5)
                    row(f"6. page cycle -> {h1}", "click() -> seen done, script clock", cycle[path], "script_s", None)
                    cyc.append(f"| {h1} | {med(cycle[path], 'idle_s'):.2f} s | {med(cycle[path], 'script_s'):.2f} s "
                               f"| {med(cycle[path], 'click_lag_s'):.2f} s | {med(cycle[path], 'seen_lag_s'):+.2f} s "
                               f"| {med(cycle[path], 'server_net_s'):.2f} s | {med(cycle[path], 'longtask_s'):.2f} s |")

            if want(4):
                rows = fresh_open(browser, base, DEFAULT, repeats)
                loads.append(load())
                row("4. open link, fresh browser, 14 tokens", "open -> every chart drawn", rows, "idle_s", 2.5)
                row("4. open link, fresh browser, 14 tokens", "static bytes (HTTP)", rows, "static_bytes", None, "MB")
                row("4. open link, fresh browser, 14 tokens", "WebSocket bytes", rows, "ws_bytes", None, "MB")
                drow("4. open link (14 tokens)", rows)
                static_end = med(rows, "static_end_s")
                resources = rows[-1]["resources"]

            if want(7):
                # 7. first visit, side by side with the floor: a minimal Streamlit app drawing one plotly heatmap
                # (bench/minimal_app.py, same server options, plain `streamlit run`: none of the door's preload hints),
            # each open in a fresh context, interleaved
                url = f"{base}/?{query(text=DEFAULT, layer=2, head=5)}"
                with serve_app(app="bench/minimal_app.py", door=False) as mbase:  # plain Streamlit
                    open_link(browser, f"{mbase}/")  # warm-up of that server
                    pairs = [(open_link(browser, url), open_link(browser, f"{mbase}/")) for _ in range(repeats)]
                loads.append(load())
                ours, floor = [a for a, _ in pairs], [b for _, b in pairs]
                row("7. first visit, fresh browser: this app (14 tokens)", "open -> every chart drawn", ours, "idle_s",
                    None)
                row("7. first visit, fresh browser: minimal Streamlit + plotly app", "open -> its chart drawn", floor,
                    "idle_s", None)
                ratio = med(ours, "idle_s") / med(floor, "idle_s")
                table.append(f"| 7. first visit: this app / minimal app | ratio of the medians | {ratio:.2f}x | "
                             f"{min(a['idle_s'] / b['idle_s'] for a, b in pairs):.2f}-"
                             f"{max(a['idle_s'] / b['idle_s'] for a, b in pairs):.2f} | ≤ 1.1x | "
                             f"{'met' if ratio <= 1.1 else 'missed'} |")
                print(table[-1], flush=True)
                drow("7. first visit, this app", ours)
                drow("7. first visit, minimal app", floor)

            if want(5):
                rows = fresh_open(browser, base, LONG, repeats)
                loads.append(load())
                row("5. open link, fresh browser, 512 tokens", "WebSocket bytes", rows, "ws_bytes", 2e6, "MB")
                row("5. open link, fresh browser, 512 tokens", "data -> drawn", rows, "client_s", 3.0)
                row("5. open link, fresh browser, 512 tokens", "open -> drawn", rows, "idle_s", None)
                drow("5. open link (512 tokens)", rows)
        finally:
            browser.close()

    out = "\n".join(table)
    out += (f"\n\nmedians of {repeats} in headless Chromium ({Path('/usr/bin/chromium').name}), app server warmed "
            f"once; load averages (1, 5, 15 min) after each scenario: {'; '.join(loads)}\n")
    out += "\nWhere the time goes (medians; times from the user action, or from navigation start for 4 and 5):\n\n"
    out += "\n".join(diag) + "\n"
    out += ("\nScenario 6, every page in the menu's order from the one before it, two clocks (medians): the page's own "
            "(pointerdown -> the start of the 100 ms quiet window) and a Playwright script's (click() called -> "
            "wait_for_function sees the URL, no run indicator, every chart drawn, nothing stale):\n\n")
    out += "\n".join(cyc) + "\n"
    if resources:
        biggest = sorted(resources, key=lambda e: -e[1])[:8]
        out += f"\nStatic files of one cold open (last one finished {static_end:.2f} s after navigation start):\n\n"
        out += "| file | transferred | decoded | requested at | loaded at |\n|---|---|---|---|---|\n"
        out += "\n".join(f"| {e[0].split('?')[0].rsplit('/', 1)[-1] or e[0]} | {e[1] / 1e3:.0f} kB "
                         f"| {e[3] / 1e3:.0f} kB | {e[4] / 1e3:.2f} s | {e[5] / 1e3:.2f} s |" for e in biggest) + "\n"
    print(out)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("repeats", nargs="?", type=int, default=REPEATS)
    ap.add_argument("--only", type=lambda v: {int(x) for x in v.split(",")}, default=None, metavar="N,N",
                    help="run only these scenarios (e.g. --only 7: the first visit against the minimal app); the "
                         "results file is then not written")
    ap.add_argument("--gpt2", action="store_true",
                    help="the same scenarios on a GPT-2 of the 124M shape (12 layers x 12 heads, random weights) "
                         "registered from a local folder (writes bench/results_browser_gpt2.md)")
    ap.add_argument("--model", default=None,
                    help="the same scenarios on a registered model, e.g. --model smollm2-135m (writes "
                         "bench/results_browser_<model>.md unless --only is given)")
    args = ap.parse_args()
    if args.model:
        EXTRA["model"] = args.model
    if args.only:
        run(args.repeats, only=args.only)
        return
    if args.model:
        res = run(args.repeats)
        (Path(__file__).parent / f"results_browser_{args.model}.md").write_text(f"?model={args.model}\n\n" + res)
        return
    if not args.gpt2:
        res = run(args.repeats)
        (Path(__file__).parent / "results_browser.md").write_text(res)
        return
    import tempfile

    sys.path.insert(0, str(Path(__file__).parent))
    from bench_gpt2 import build

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "gpt2-124m-random"
        # a tokenizer whose words are whole tokens, so that a sentence is ~10-14 tokens as with MiniLM (speed only:
        # the weights are random)
        build(folder, corpus=[DEFAULT, LONG] + [s for s, _ in SENTENCES] * 4, vocab=1200)
        EXTRA["model"] = folder.name
        res = run(args.repeats, env={"HEADLIGHT_MODELS": str(folder)})
    header = ("GPT-2 of the 124M shape (12 layers x 12 heads, n_embd 768, random weights), registered with "
              "HEADLIGHT_MODELS and opened with ?model=gpt2-124m-random\n\n")
    (Path(__file__).parent / "results_browser_gpt2.md").write_text(header + res)


if __name__ == "__main__":
    main()
