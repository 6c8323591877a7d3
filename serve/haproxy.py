"""What deploy/serve.sh asks of HAProxy that a shell cannot say by itself: one command on its admin socket
(deploy/haproxy.cfg `stats socket`), e.g. `set server headlight_apps/app1 state ready` once a process is ready."""

from __future__ import annotations

import socket


def admin(sock_path: str, command: str) -> str:
    """Send one command to HAProxy's admin socket; its answer, stripped (empty when it has nothing to say)."""
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(sock_path)
        s.sendall(command.encode() + b"\n")
        return s.recv(4096).decode().strip()
