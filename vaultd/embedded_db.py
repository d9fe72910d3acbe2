"""The embedded default database: SecantusDB, a MongoDB-wire server, run as a child process.

vaultd records the server's address in `<data_dir>/db/address.json`, so `vault-admin` can reach
the same data while vaultd runs; when nothing answers there, the CLI starts its own server for
the duration of the command. Either way, everything above this module just sees a MongoDB URI.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from vaultd import db_credentials, db_orphans
from vaultd.db_credentials import DbCredentials

ADDRESS_FILE = "address.json"
# How long a start waits for the server's first answer, unless the caller gives its own
# (`mongodb.embedded_start_seconds`): a store of 10^6 records under load was measured to take
# over 30 s to open (WiredTiger's recovery and the index catalog), so the limit is generous; a
# server that exits fails the start at once, whatever the limit.
START_TIMEOUT_SECONDS = 120.0
START_SETTING = "mongodb.embedded_start_seconds / VAULTD_EMBEDDED_DB_START_SECONDS"
STOP_POLL_SECONDS = 0.05  # between knocks on the port of a server that is stopping
PORT_ATTEMPTS = 3
# SecantusDB's own server with vaultd's fix to its index choice (`vaultd.secantus_server`).
SERVER_MODULE = db_orphans.SERVER_MODULE


class EmbeddedDbError(Exception):
    """The embedded server could not be started."""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _answers(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _hello_message() -> bytes:
    """An OP_MSG `{hello: 1, $db: "admin"}`, built by hand: `bson` costs the CLI 37 ms to import."""
    elements = (b"\x10hello\x00" + struct.pack("<i", 1)
                + b"\x02$db\x00" + struct.pack("<i", 6) + b"admin\x00")
    document = struct.pack("<i", 4 + len(elements) + 1) + elements + b"\x00"
    body = struct.pack("<I", 0) + b"\x00" + document  # no flags; section kind 0: the body
    return struct.pack("<iiii", 16 + len(body), 1, 0, 2013) + body  # 2013: OP_MSG


_HELLO = _hello_message()


def serves(host: str, port: int, timeout: float = 0.5) -> bool:
    """Whether the server answers a command, not just a connection.

    The kernel completes a connection as soon as SecantusDB listens, before its `start()` has
    started the thread that accepts; a SIGTERM in that window runs the stop handler inside
    `start()`, which then fails joining a thread not yet started (exit code 1). A reply comes
    only from that thread, after which a stop is safe."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(_HELLO)
            return len(sock.recv(16)) > 0
    except OSError:
        return False


def answering(server: EmbeddedServer) -> bool:
    """Whether this server, not another process on its port, answers a command.

    A port from `free_port` is free only until someone binds it: vaultd processes and tests
    starting side by side were seen to be handed the same one, and a stop sent on another's
    answer killed a server that had not yet set up its handler (exit by signal 15)."""
    return serves(server.host, server.port) and _holds_port(server.process.pid, server.port)


def _holds_port(pid: int, port: int) -> bool:
    """Whether process `pid` has the socket listening on `port` (Linux: /proc; true elsewhere)."""
    if not sys.platform.startswith("linux"):
        return True
    fd_dir = f"/proc/{pid}/fd"
    try:
        descriptors = os.listdir(fd_dir)
    except OSError:  # it exited: asked again next time
        return False
    sockets = set()
    for fd in descriptors:
        # One closed between the listing and its read (a busy server opens and closes files
        # all the time) is not the listening socket, which lives as long as the server.
        with contextlib.suppress(OSError):
            sockets.add(os.readlink(f"{fd_dir}/{fd}"))
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as rows:
            for row in list(rows)[1:]:
                fields = row.split()  # local address "0100007F:1F90", state "0A": LISTEN
                if (fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port
                        and f"socket:[{fields[9]}]" in sockets):
                    return True
    return False


@dataclass
class EmbeddedServer:
    process: subprocess.Popen[bytes]
    host: str
    port: int
    storage: Path
    credentials: DbCredentials | None = None
    start_seconds: float = START_TIMEOUT_SECONDS  # what a start (or restart) waits at most

    @property
    def uri(self) -> str:
        return local_uri(self.host, self.port, self.credentials)

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM, wait, then SIGKILL: WiredTiger checkpoints on a clean shutdown.

        The signal goes to the server's main thread, where Python runs its handler: sent to
        the process, the kernel may hand it to any of its threads, and the main thread, blocked
        on a lock in `server.wait()`, is then not woken and the handler never runs (measured: a
        stop in three hung until the SIGKILL). While it stops, the port is knocked on: the
        handler first joins the accept thread, which closing the listening socket does not wake
        on Linux, for up to 2 s; a connection wakes it at once."""
        _remove_address(self.storage, self.process.pid)
        if self.process.poll() is not None:
            return
        _terminate_main_thread(self.process)
        deadline = time.monotonic() + timeout
        while self.process.poll() is None and time.monotonic() < deadline:
            _answers(self.host, self.port, timeout=0.2)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(STOP_POLL_SECONDS)
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(5)


def _terminate_main_thread(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the thread whose id is the process id (Linux: `tgkill`, glibc 2.30); to the
    process where that is not available."""
    tgkill = getattr(ctypes.CDLL(None, use_errno=True), "tgkill", None)
    if tgkill is None or not sys.platform.startswith("linux"):
        process.send_signal(signal.SIGTERM)
        return
    tgkill(process.pid, process.pid, signal.SIGTERM)  # ESRCH when it is gone: nothing to stop


def start(
    storage: Path, log_path: Path | None = None, record_address: bool = True,
    start_seconds: float = START_TIMEOUT_SECONDS,
) -> EmbeddedServer:
    """Start SecantusDB with authentication on a free loopback port (creating its user at
    first start: vaultd.db_credentials) and wait until it accepts connections: at most
    `start_seconds`, and no longer than it lives."""
    storage.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:  # the caller holds the data directory: a server already on this store is an orphan
        db_orphans.stop_orphans(storage)
    except db_orphans.OrphanDbError as exc:
        raise EmbeddedDbError(str(exc)) from None
    credentials = db_credentials.load_or_create(storage)
    if not credentials.provisioned:
        credentials = _provision(storage, log_path, credentials, start_seconds)
    return _launch(storage, log_path, record_address, credentials, start_seconds)


def _provision(storage: Path, log_path: Path | None, credentials: DbCredentials,
               start_seconds: float) -> DbCredentials:
    from vaultd.db_users import create_only_user  # pymongo is imported only when needed

    server = _launch(storage, log_path, False, None, start_seconds)
    try:
        create_only_user(server.uri, credentials)
    finally:
        server.stop()
    provisioned = DbCredentials(credentials.user, credentials.password, provisioned=True)
    db_credentials.write(storage, provisioned)
    return provisioned


def _launch(
    storage: Path, log_path: Path | None, record_address: bool, credentials: DbCredentials | None,
    start_seconds: float,
) -> EmbeddedServer:
    for _ in range(PORT_ATTEMPTS):
        server = spawn(storage, log_path, credentials, start_seconds=start_seconds)
        try:
            _wait_until_up(server)
            break
        except _PortTaken:  # another process took the free port first: pick another
            continue
    else:
        raise EmbeddedDbError(f"embedded database found no free port in {PORT_ATTEMPTS} tries")
    if record_address:
        record(server)
    return server


def spawn(storage: Path, log_path: Path | None, credentials: DbCredentials | None,
          port: int | None = None, start_seconds: float = START_TIMEOUT_SECONDS
          ) -> EmbeddedServer:
    """Start the server process (on `port`, or a free one) without waiting for it."""
    host, port = "127.0.0.1", port or free_port()
    log = open(log_path or log_file(storage), "ab")  # noqa: SIM115
    cmd = [
        sys.executable,
        "-m",
        SERVER_MODULE,
        "--host",
        host,
        "--port",
        str(port),
        "--storage-path",
        str(storage),
        "--log-level",
        "WARNING",
        # No replica-set advertisement, so no oplog: vaultd uses neither change streams nor
        # transactions, and the oplog cost every write an entry (its diff computed, its pre-image
        # encoded) and SecantusDB's trimming of it meanwhile.
        "--standalone",
        *(["--auth"] if credentials is not None else []),
    ]
    # A new session keeps a Ctrl-C in the terminal from killing the database before vaultd
    # has closed its connections; vaultd stops it explicitly. If vaultd itself is killed, the
    # kernel sends the database SIGTERM (PR_SET_PDEATHSIG), so no orphan keeps the store locked.
    # Popen must run on the thread that lives as long as vaultd: the signal follows the
    # death of the parent *thread*.
    process = subprocess.Popen(
        cmd,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=_die_with_parent,  # noqa: PLW1509 the hook only calls prctl
    )
    log.close()
    return EmbeddedServer(process, host, port, storage, credentials, start_seconds)


def record(server: EmbeddedServer) -> None:
    """Publish the server's address for vault-admin (`running_address`)."""
    _write_address(server.storage, server.host, server.port, server.process.pid)


def log_file(storage: Path) -> Path:
    return storage.parent / "secantus.log"


def _die_with_parent() -> None:
    # SIGTERM, not SIGKILL: SecantusDB keeps journal records in the process for a moment after
    # acknowledging them (measured: writes acknowledged 0.1 s before a SIGKILL were lost, 0.2 s
    # before were kept), and its SIGTERM path closes the store cleanly. A slow shutdown is cut
    # short by the next vaultd (vaultd.db_orphans), once that window has long passed.
    if sys.platform.startswith("linux"):
        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


class _PortTaken(Exception):
    """The server could not listen: its port was taken between `free_port` and its bind."""


def _wait_until_up(server: EmbeddedServer) -> None:
    deadline = time.monotonic() + server.start_seconds
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            message = exit_message(server)
            if "Address already in use" in message:
                raise _PortTaken(message)
            raise EmbeddedDbError(message)
        if answering(server):
            return
        time.sleep(0.05)
    server.stop()
    raise EmbeddedDbError(not_started_message(server))


def not_started_message(server: EmbeddedServer) -> str:
    """Why a server that is still running was given up: the limit, where to raise it, its log."""
    return (f"embedded database in {server.storage} did not start within "
            f"{server.start_seconds:g} s ({START_SETTING}); see {log_file(server.storage)}")


def exit_message(server: EmbeddedServer) -> str:
    """Why a server that was starting exited: the last line of its log, not just a code."""
    path = log_file(server.storage)
    try:  # the log is appended to at every start: read its end only
        with open(path, "rb") as log:
            log.seek(max(0, log.seek(0, os.SEEK_END) - 4096))
            tail = log.read().decode(errors="replace")
        lines = [line for line in tail.splitlines() if line.strip()]
    except OSError:
        lines = []
    reason = f": {lines[-1].strip()[-300:]}" if lines else ""
    return (f"embedded database in {server.storage} exited with code "
            f"{server.process.returncode}{reason} (see {path})")


def _write_address(storage: Path, host: str, port: int, pid: int) -> None:
    path = storage / ADDRESS_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"host": host, "port": port, "pid": pid}))
    os.replace(tmp, path)


def _remove_address(storage: Path, pid: int) -> None:
    path = storage / ADDRESS_FILE
    try:
        if json.loads(path.read_text()).get("pid") == pid:
            path.unlink()
    except (OSError, ValueError):
        pass


def running_address(storage: Path) -> str | None:
    """URI of an embedded server another process started on this storage, if it answers."""
    try:
        info = json.loads((storage / ADDRESS_FILE).read_text())
        host, port = str(info["host"]), int(info["port"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not _answers(host, port):
        return None
    return local_uri(host, port, db_credentials.read(storage))


def local_uri(host: str, port: int, credentials: DbCredentials | None = None) -> str:
    """How vaultd, vault-admin and the tests reach the embedded server.

    Retryable writes are off: a single local node has no failover to retry across, and
    SecantusDB 0.7 scans its whole record of retryable writes (up to 10,000, kept 30 minutes)
    on every write, which was measured at 9-13 ms of CPU per insert once it was full, against
    0.7 ms without (bench/page-path.md). A configured MongoDB keeps the driver's default.
    """
    if credentials is None:
        return f"mongodb://{host}:{port}/?directConnection=true&retryWrites=false"
    return (f"mongodb://{credentials.uri_userinfo()}{host}:{port}/"
            "?directConnection=true&retryWrites=false&authSource=admin")
