"""A student joining a room on a freshly started server (issue 34: "a student joining a room, cold: 7-10 s"), in
headless Chromium at 390 x 844, side by side for one or more source trees (this one and, say, an export of the
commit before a change), interleaved.

Each round, per tree: start `python -m serve run app.py` from that tree on a free port with an empty data folder (a
fresh process: models preloaded, no trace cached, no student seen), wait until `/_headlight/ready` answers 200
(the preload is over, as `make serve`'s balancer waits), open a room in the store (with the room's model, where the
tree's store takes one; `--model`), and a question on the lecturer's sentence; `--after` seconds later (a student
scanning the code; 5 s) a fresh browser context (no HTTP cache) opens `/?room=CODE` and the clock runs from `goto`
to:

- banner: the class banner is shown (the student knows they are in);
- question: the live question's options are shown;
- drawn: the page is idle (no run indicator) with the explorer's heatmap drawn beside the banner.

    .venv/bin/python bench/class_join.py --rounds 5 [--model minilm-l6] [--tree /tmp/base34 ...]

Prints the medians per tree and the load average (`uptime`) before and after."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from browser_support import CHROMIUM, CHROMIUM_ARGS, free_port  # noqa: E402

TEXT = "The animal didn't cross the street because it was tired"
DRAWN = """() => { const s = document.querySelector('[data-testid="stStatusWidget"]');
  if (s && /running/i.test(s.innerText)) return false;
  return !!document.querySelector('.st-key-class_banner') &&
         !!document.querySelector('[data-testid="stMain"] [data-testid="stPlotlyChart"] .main-svg'); }"""


def start(tree: Path, data: Path, port: int) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "serve", "run", str(tree / "app.py"), "--server.headless", "true",
           "--server.address", "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats", "false",
           "--server.fileWatcherType", "none"]
    env = {**os.environ, "HEADLIGHT_DEVICE": "cpu", "HEADLIGHT_DATA_DIR": str(data), "HEADLIGHT_CLASS_DB": "",
           "HEADLIGHT_LECTURER_KEY": "bench-class-join-key-0123456789", "PYTHONPATH": str(tree)}
    return subprocess.Popen(cmd, cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)


def wait_ready(port: int, timeout: float = 180.0) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_headlight/ready", timeout=2) as r:
                if r.status == 200:
                    return time.monotonic() - t0
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError("the server did not become ready")


def open_room(tree: Path, data: Path, model: str) -> str:
    """A room and a question, written by the tree's own store code (its schema), in a subprocess."""
    code = f"""
import inspect, sys
sys.path.insert(0, {str(tree)!r})
from classroom.store import open_store
s = open_store({str(data / "class.sqlite3")!r})
room = s.open_room({model!r}, "en") if "model" in inspect.signature(s.open_room).parameters else s.open_room()
s.start_question(room.code, "attend", dict(model="minilm-l6", text={TEXT!r}, block="encoder", layer=2, head=3,
                 query=8, query_token="it", options=[f"{{i}}: t{{i}}" for i in range(14)], answer=2,
                 weights=[0.07] * 14))
print(room.code)
"""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def join(browser, port: int, code: str) -> dict[str, float]:
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True,
                              has_touch=True)
    page = ctx.new_page()
    try:
        t0 = time.perf_counter()
        page.goto(f"http://127.0.0.1:{port}/?room={code}", wait_until="commit")
        page.wait_for_selector(".st-key-class_banner", timeout=120_000)
        banner = time.perf_counter() - t0
        page.wait_for_selector('.st-key-class_banner [data-testid="stButtonGroup"] button', timeout=120_000)
        question = time.perf_counter() - t0
        page.wait_for_function(DRAWN, timeout=120_000, polling=50)
        drawn = time.perf_counter() - t0
        return {"banner": banner, "question": question, "drawn": drawn}
    finally:
        ctx.close()


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--model", default="minilm-l6", help="the room's model")
    ap.add_argument("--after", type=float, default=5.0,
                    help="seconds between the room's opening and the student's join (scanning the code)")
    ap.add_argument("--tree", action="append", default=[], help="another source tree to measure beside this one")
    args = ap.parse_args(argv)
    trees = [ROOT, *(Path(x).resolve() for x in args.tree)]
    from playwright.sync_api import sync_playwright

    got: dict[Path, list[dict[str, float]]] = {t: [] for t in trees}
    print("load before:", uptime())
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        for r in range(args.rounds):
            for tree in trees if r % 2 == 0 else trees[::-1]:
                with tempfile.TemporaryDirectory() as tmp:
                    port = free_port()
                    proc = start(tree, Path(tmp), port)
                    try:
                        ready = wait_ready(port)
                        code = open_room(tree, Path(tmp), args.model)
                        time.sleep(args.after)
                        res = join(browser, port, code)
                    finally:
                        proc.terminate()
                        proc.wait(20)
                got[tree].append(res)
                print(f"round {r} {tree}: ready {ready:.1f} s, " + ", ".join(f"{k} {v:.2f} s" for k, v in res.items()),
                      flush=True)
        browser.close()
    print("load after:", uptime())
    print(f"\nmedians over {args.rounds} rounds (room model {args.model}):")
    for tree in trees:
        med = {k: statistics.median(x[k] for x in got[tree]) for k in got[tree][0]}
        print(f"  {tree}: " + ", ".join(f"{k} {v:.2f} s" for k, v in med.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
