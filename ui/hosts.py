"""Where students reach the app (no Streamlit here): the base of a short link that a phone in the lecture hall can open.

`public_base` (pure) picks, in this order:
1. $HEADLIGHT_PUBLIC_URL (set by whoever starts the app: `https://headlight.example.edu`, `http://10.0.0.5:8501`);
2. else the lecturer's browser URL when its host is not a loopback name or address;
3. else, when the server listens on all interfaces (Streamlit's `server.address` unset or 0.0.0.0 / ::), this
   machine's LAN address (`lan_address`, found without internet) with the server's port;
4. else the browser's own (localhost) URL, marked unreachable: the share dialog warns that phones cannot open it.

`bind_public_url` does the same for `make serve`'s HAProxy bind address (deploy/serve.sh exports the result as
$HEADLIGHT_PUBLIC_URL: its app processes listen on 127.0.0.1 behind HAProxy).
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

PUBLIC_URL_ENV = "HEADLIGHT_PUBLIC_URL"
# names and networks a phone in the hall cannot reach: this machine's own
_LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback", ""}
# private targets for the UDP trick: connect() on a UDP socket sends nothing, it only picks the route and source address
_PROBES = ("10.255.255.255", "172.31.255.255", "192.168.255.255")


@dataclass(frozen=True)
class Base:
    """Where students reach the app: `url` (scheme://host[:port], no slash at the end), `source` ("public", "browser",
    "lan", "localhost"), and `reachable`: False when only this machine can open it (the dialog warns)."""

    url: str
    source: str
    reachable: bool


def is_loopback_host(host: str | None) -> bool:
    """True for a host that names this machine only: localhost, 127.0.0.0/8, ::1, 0.0.0.0, *.localhost."""
    h = (host or "").strip().strip("[]").lower().rstrip(".")
    if h in _LOOPBACK_NAMES or h.endswith(".localhost"):
        return True
    try:
        ip = ipaddress.ip_address(h)
    except ValueError:
        return False
    return ip.is_loopback or ip.is_unspecified


def listens_on_all(address: str | None) -> bool:
    """Streamlit's server.address: unset (all interfaces), 0.0.0.0 or ::."""
    return (address or "").strip().strip("[]") in ("", "0.0.0.0", "::")


def pick_lan_address(candidates) -> str | None:
    """The first IPv4 address among `candidates` that another machine on the network could use (private or global,
    not loopback, link-local, unspecified or multicast); None if there is none. Pure."""
    for c in candidates:
        try:
            ip = ipaddress.ip_address(str(c))
        except ValueError:
            continue
        if ip.version == 4 and not (ip.is_loopback or ip.is_link_local or ip.is_unspecified or ip.is_multicast):
            return str(ip)
    return None


def lan_address() -> str | None:
    """This machine's address on the classroom network, found without internet: the source address the kernel picks
    for a (never sent) UDP datagram to a private address, else the host name's addresses; None when there is none."""
    found: list[str] = []
    for target in _PROBES:
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.connect((target, 9))
                found.append(s.getsockname()[0])
        except OSError:
            continue
    try:
        found += [ai[4][0] for ai in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)]
    except OSError:
        pass
    return pick_lan_address(found)


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def public_base(public_url: str | None, browser_url: str | None, server_address: str | None, server_port: int,
                lan: str | None) -> Base:
    """Where the short link should point (pure: every input given). See the module's docstring for the order."""
    if public_url and public_url.strip():
        u = public_url.strip()
        if "://" not in u:
            u = "http://" + u
        parts = urlsplit(u)
        return Base(f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}", "public", True)
    browser = urlsplit(browser_url or "")
    if browser.hostname and browser.scheme in ("http", "https") and not is_loopback_host(browser.hostname):
        return Base(_origin(browser_url), "browser", True)
    if listens_on_all(server_address) and lan:
        return Base(f"http://{lan}:{server_port}", "lan", True)
    if browser.hostname and browser.scheme in ("http", "https"):
        return Base(_origin(browser_url), "localhost", False)
    return Base(f"http://localhost:{server_port}", "localhost", False)


def bind_public_url(bind: str, lan: str | None) -> str:
    """The URL students open for a server bound to `bind` ("host:port", as HAProxy's bind line): the LAN address
    for all interfaces ("0.0.0.0:8501", ":8501", "*:8501", "[::]:8501"), the host itself for any other non-loopback
    host, "" for a loopback bind or all interfaces without a LAN address. Pure."""
    host, _, port = bind.rpartition(":")
    host = host.strip("[]")
    if host in ("*",) or listens_on_all(host):
        return f"http://{lan}:{port}" if lan else ""
    if is_loopback_host(host):
        return ""
    return f"http://{'[' + host + ']' if ':' in host else host}:{port}"
