"""`make serve` (deploy/serve.sh): HAProxy answers at once; until an app process is ready every request gets the
starting page (503, reloads itself, in the browser's language), then the app itself. Needs Debian's haproxy (.ci/run
installs it; without CI a missing haproxy skips this test)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from ci_support import skip_or_fail

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str, headers: dict | None = None) -> tuple[int, dict, str]:
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read().decode("utf-8", "replace")


def test_serve_answers_at_once_then_serves_the_app(tmp_path):
    if shutil.which("haproxy") is None:
        if os.environ.get("CI"):
            pytest.fail("haproxy is missing: .ci/run installs it")
        skip_or_fail("haproxy not installed")
    port, base = free_port(), free_port()
    env = {**os.environ, "PORT": str(port), "HEADLIGHT_BASE_PORT": str(base), "HEADLIGHT_PROCS": "1",
           "HEADLIGHT_RUN_DIR": str(tmp_path), "PY": str(Path(os.sys.executable))}
    proc = subprocess.Popen(["deploy/serve.sh"], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    lines: list[str] = []  # serve.sh's messages, read as they come (it says "ready on" just after marking ready)

    def read() -> None:
        for line in proc.stdout:
            lines.append(line.decode())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        url = f"http://127.0.0.1:{port}/?text=hello&lang=ko"
        deadline = time.monotonic() + 20
        seen_starting = None
        while time.monotonic() < deadline:  # the port opens before the app is ready
            try:
                seen_starting = get(url, {"Accept-Language": "ko-KR,ko;q=0.9"})
                break
            except OSError:
                time.sleep(0.05)
        assert seen_starting is not None, "the balancer's port never opened"
        status, headers, body = seen_starting
        assert status == 503, "the app was ready before the balancer answered: no starting page to check"
        assert headers.get("x-headlight-starting") == "1" and headers.get("retry-after") == "1"
        assert body.index("시작하는 중") < body.index("is starting") and 'http-equiv="refresh"' in body
        status, _, body = get(f"http://127.0.0.1:{port}/")
        assert status == 503 and body.index("is starting") < body.index("시작하는 중")  # English by default
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            status, headers, body = get(url)
            if status == 200:
                break
            time.sleep(0.2)
        assert status == 200 and "x-headlight-starting" not in headers
        assert "<noscript>" in body or "streamlit" in body.lower()  # Streamlit's page
        assert get(f"http://127.0.0.1:{port}/_stcore/health")[0] == 200
        deadline = time.monotonic() + 20  # HAProxy routes to a process as soon as it is marked; the message follows
        while time.monotonic() < deadline and not any("ready on" in x for x in lines):
            time.sleep(0.1)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
    reader.join(10)
    out = "".join(lines)
    assert "answers now (a starting page)" in out and "ready on" in out
