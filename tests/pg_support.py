"""A real PostgreSQL server for the class store's tests, from Debian's `postgresql` package (.ci/run installs it):
initdb into a temporary folder, `pg_ctl start` on a free port on 127.0.0.1 with its unix socket in that folder, as
the `postgres` user when the tests run as root (PostgreSQL refuses to run as root). Without the binaries the tests
skip, except in CI (CI=true), where they fail."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import ci_support

NEEDED = ("initdb", "pg_ctl", "postgres")


def pg_bindir() -> Path | None:
    """The folder holding initdb and pg_ctl: on PATH, else Debian's /usr/lib/postgresql/<version>/bin (newest)."""
    found = shutil.which("pg_ctl")
    if found and shutil.which("initdb"):
        return Path(os.path.realpath(found)).parent
    for d in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name)
                    if Path(p).parent.name.isdigit() else 0, reverse=True):
        if all((Path(d) / n).exists() for n in NEEDED):
            return Path(d)
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def skip_or_fail(reason: str) -> None:
    ci_support.skip_or_fail(f"{reason}; .ci/run installs Debian's postgresql package")


class PostgresServer:
    """One throw-away server; `url(db)` for a database on it, `create_db()` for a fresh one."""

    def __init__(self) -> None:
        bindir = pg_bindir()
        if bindir is None:
            skip_or_fail("PostgreSQL's initdb / pg_ctl not found (Debian package postgresql)")
        self.bindir = bindir
        self.dir = Path(tempfile.mkdtemp(prefix="headlight-pg-"))
        self.port = free_port()
        self.user_kw: dict = {}
        if os.getuid() == 0:  # postgres will not run as root: the package's own user, else nobody
            try:
                pw = pwd.getpwnam("postgres")
            except KeyError:
                pw = pwd.getpwnam("nobody")
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
            self.user_kw = {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": []}
        self.data = self.dir / "data"
        self.log = self.dir / "log"
        self._n = 0
        env = {**os.environ, "LC_ALL": "C.UTF-8", "TZ": "UTC"}
        self._run(["initdb", "-D", str(self.data), "-A", "trust", "-U", "headlight", "-E", "UTF8", "--no-sync",
                   "--no-instructions"], env)
        # -F: no fsync (a test server); listen on loopback and a socket in our folder only
        self._run(["pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "30", "-o",
                   f"-F -p {self.port} -h 127.0.0.1 -k {self.dir} -c max_connections=200", "start"], env)

    def _run(self, argv: list[str], env: dict | None = None) -> None:
        argv = [str(self.bindir / argv[0]), *argv[1:]]
        r = subprocess.run(argv, capture_output=True, text=True, cwd=self.dir, env=env, timeout=120, **self.user_kw)
        if r.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"{' '.join(argv)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}\n{log}")

    def url(self, db: str = "postgres") -> str:
        return f"postgresql://headlight@127.0.0.1:{self.port}/{db}"

    def create_db(self) -> str:
        """A new, empty database; its URL."""
        import psycopg

        self._n += 1
        name = f"t{self._n}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def restart(self) -> None:
        self._run(["pg_ctl", "-D", str(self.data), "-l", str(self.log), "-m", "fast", "-w", "-t", "30", "restart"])

    def stop(self) -> None:
        try:
            self._run(["pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop"])
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
