"""A real redis-server for the tests: on 127.0.0.1, a free port and its own temporary folder, never 6379.

``with RedisServer() as server:`` starts one; ``server.url`` is its URL (``server.socket`` the path of its
unix socket), ``server.stop()`` (SIGTERM) and ``server.kill()`` (SIGKILL) end it, ``server.start()`` starts
it again on the same port, and ``server.command("KEYS", "*")`` sends one command. ``RedisServer(password=...)``
makes a server that requires AUTH. redis-server is installed with apt-get (as the
Makefile installs what it needs) when it is missing; when that fails, the tests fail saying so.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import BinaryIO, List, Optional, Union

STARTUP = 10.0  # seconds: the longest a start may take


def redis_server_program() -> str:
    """The redis-server program, installed from Debian's package when missing."""
    program = shutil.which("redis-server")
    if program is not None:
        return program
    sudo: List[str] = [] if os.geteuid() == 0 else ["sudo"]
    environment = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for command in (sudo + ["apt-get", "update", "-qq"], sudo + ["apt-get", "install", "-y", "-qq", "redis-server"]):
        done = subprocess.run(command, env=environment, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"redis-server is missing and `{' '.join(command)}` failed:\n{done.stderr}")
    program = shutil.which("redis-server")
    if program is None:
        raise RuntimeError("redis-server is still missing after apt-get install redis-server")
    return program


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


Reply = Union[None, int, bytes, str, List["Reply"]]


class RedisServer:
    """A redis-server process of one test; see the module's documentation."""

    def __init__(self, password: Optional[str] = None, extra: Optional[List[str]] = None) -> None:
        self.program = redis_server_program()
        self.password = password
        self.extra = list(extra or [])
        self.folder = Path(tempfile.mkdtemp(prefix="loadstate-redis-"))
        self.socket = str(self.folder / "redis.sock")
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: Optional[subprocess.Popen[bytes]] = None
        self.started_once = False
        self.start()

    def start(self) -> None:
        """Starts the server (again) on its port; returns once it answers as the process started.

        The first start takes another free port when the one chosen was taken meanwhile (by a server of
        another test, which would otherwise answer in its place).
        """
        assert self.process is None, "the server runs already"
        for _ in range(10):
            if self._start_once():
                return
            if self.started_once:
                break
            self.port = free_port()
            self.url = f"redis://127.0.0.1:{self.port}/0"
        log = self.folder / "redis.log"
        raise RuntimeError(f"redis-server did not start on port {self.port}:\n"
                           f"{log.read_text(errors='replace') if log.exists() else ''}")

    def _start_once(self) -> bool:
        """One start on ``self.port``: whether this process answers there."""
        process = subprocess.Popen(
            [self.program, "--bind", "127.0.0.1", "--port", str(self.port), "--dir", str(self.folder),
             "--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", str(self.folder / "redis.log"),
             "--unixsocket", self.socket, "--unixsocketperm", "700"]
            + (["--requirepass", self.password] if self.password is not None else []) + self.extra,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.process = process
        deadline = time.monotonic() + STARTUP
        while process.poll() is None and time.monotonic() < deadline:
            try:
                info = self.command("INFO", "server")
            except (OSError, RuntimeError):
                info = None
            if isinstance(info, bytes) and f"process_id:{process.pid}\r\n".encode() in info:
                self.started_once = True
                return True
            time.sleep(0.02)
        self._end(signal.SIGKILL)
        return False

    def stop(self) -> None:
        """Stops the server with SIGTERM and waits for it to exit."""
        self._end(signal.SIGTERM)

    def kill(self) -> None:
        """Kills the server with SIGKILL and waits for it to exit."""
        self._end(signal.SIGKILL)

    def _end(self, how: signal.Signals) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(how)
            self.process.wait(timeout=STARTUP)
        self.process = None

    def command(self, *args: Union[str, bytes, int]) -> Reply:
        """Sends one command on a new connection (after AUTH when the server wants a password) and returns
        its reply (errors as ``RuntimeError``)."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=STARTUP) as connection:
            replies = connection.makefile("rb")
            if self.password is not None:
                connection.sendall(_request("AUTH", self.password))
                _read_reply(replies)
            connection.sendall(_request(*args))
            return _read_reply(replies)

    def __enter__(self) -> "RedisServer":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.kill()
        shutil.rmtree(self.folder, ignore_errors=True)


def _request(*args: Union[str, bytes, int]) -> bytes:
    parts = [arg if isinstance(arg, bytes) else str(arg).encode() for arg in args]
    return b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(part), part) for part in parts)


def _read_reply(stream: BinaryIO) -> Reply:
    line = stream.readline()
    if not line:
        raise ConnectionError("redis-server closed the connection")
    kind, rest = line[:1], line[1:-2]
    if kind == b"+":
        return rest.decode()
    if kind == b"-":
        raise RuntimeError(rest.decode())
    if kind == b":":
        return int(rest)
    if kind == b"$":
        length = int(rest)
        if length < 0:
            return None
        return stream.read(length + 2)[:-2]
    if kind == b"*":
        count = int(rest)
        return None if count < 0 else [_read_reply(stream) for _ in range(count)]
    raise ConnectionError(f"unexpected reply {line!r}")


def redis_name(prefix: str, mark: str, key: str) -> bytes:
    """The Redis key under which a cache with ``prefix`` keeps ``key``'s entry
    (mark ``"v:"``) or lease (``"l:"``): the prefix, a hash tag of three hex
    digits computed from the key (FNV-1a folded to 12 bits), the mark, the key."""
    h = 2166136261
    for b in key.encode():
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    tag = (h ^ (h >> 12) ^ (h >> 24)) & 0xFFF
    return f"{prefix}{{{tag:03x}}}{mark}{key}".encode()


def entry_names(server: "RedisServer", prefix: str = "") -> list:
    """The entries' Redis keys under ``prefix``, sorted."""
    return sorted(k for k in server.command("KEYS", f"{prefix}*") if b"}v:" in k)


class RedisCluster:
    """A Redis Cluster of ``masters`` masters with one replica each, every node a redis-server of its own on
    127.0.0.1 (cluster mode, node timeout ``node_timeout_ms``), joined by ``redis-cli --cluster create``.

    ``cluster.url`` is the ``redis+cluster://`` URL naming every node; ``cluster.nodes`` the servers;
    ``cluster.master_of(key)`` the server that serves a key now; ``cluster.wait_ok()`` waits until every
    node that runs says ``cluster_state:ok``.
    """

    def __init__(self, masters: int = 3, node_timeout_ms: int = 1000) -> None:
        self.nodes: List[RedisServer] = []
        try:
            for _ in range(masters * 2):
                # The bus on a free port of its own: by default it is the port + 10000, past 65535 for a
                # port over 55535.
                self.nodes.append(RedisServer(extra=[
                    "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                    "--cluster-node-timeout", str(node_timeout_ms), "--cluster-port", str(free_port())]))
            cli = shutil.which("redis-cli")
            if cli is None:
                raise RuntimeError("redis-cli is missing (Debian's redis-tools, installed with redis-server)")
            created = subprocess.run(
                [cli, "--cluster", "create"] + [f"127.0.0.1:{n.port}" for n in self.nodes]
                + ["--cluster-replicas", "1", "--cluster-yes"],
                capture_output=True, text=True, timeout=60)
            if created.returncode != 0:
                raise RuntimeError(f"redis-cli --cluster create failed:\n{created.stdout}\n{created.stderr}")
            self.wait_ok()
        except BaseException:
            self.close()
            raise
        self.url = "redis+cluster://" + ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)

    def running(self) -> List[RedisServer]:
        return [n for n in self.nodes if n.process is not None and n.process.poll() is None]

    def wait_ok(self, timeout: float = 30.0, without: Optional[int] = None) -> None:
        """Waits until every running node reports ``cluster_state:ok`` and agrees on the slots' masters, and
        every replica's link to its master is up (a replica that never synced would not take over);
        ``without``: and no master listens on that port (a killed master's replica took over)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                states = [n.command("CLUSTER", "INFO") for n in self.running()]
                maps = [self._masters(n) for n in self.running()]
                links = [n.command("INFO", "replication") for n in self.running()]
                if all(isinstance(s, bytes) and b"cluster_state:ok" in s for s in states) \
                        and all(m == maps[0] for m in maps) and without not in maps[0] \
                        and all(isinstance(i, bytes) and (b"role:master" in i or b"master_link_status:up" in i)
                                for i in links):
                    return
            except (OSError, RuntimeError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the Redis Cluster did not reach cluster_state:ok")
            time.sleep(0.05)

    @staticmethod
    def _masters(node: RedisServer) -> List[int]:
        slots = node.command("CLUSTER", "SLOTS")
        assert isinstance(slots, list)
        return sorted(int(r[2][1]) for r in slots)  # type: ignore[index]

    def master_of(self, key: Union[str, bytes]) -> RedisServer:
        """The running node that serves ``key`` now (by asking one with CLUSTER KEYSLOT and CLUSTER SLOTS)."""
        node = self.running()[0]
        slot = node.command("CLUSTER", "KEYSLOT", key)
        slots = node.command("CLUSTER", "SLOTS")
        assert isinstance(slot, int) and isinstance(slots, list)
        for r in slots:
            if r[0] <= slot <= r[1]:  # type: ignore[index,operator]
                port = int(r[2][1])  # type: ignore[index]
                return next(n for n in self.nodes if n.port == port)
        raise RuntimeError(f"no master serves slot {slot}")

    def close(self) -> None:
        for node in self.nodes:
            node.__exit__(None, None, None)

    def __enter__(self) -> "RedisCluster":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
