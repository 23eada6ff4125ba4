"""Debian's redis-server on 127.0.0.1 for the tests of the Redis cache.

As a module (Python tests)::

    from redis_server import RedisServer

    with RedisServer() as server:      # started on a free port
        url = server.url               # "redis://127.0.0.1:PORT"
        server.stop()                  # SIGTERM, waits for the exit
        server.start()                 # again, on the same port
        server.kill()                  # SIGKILL
        server.cli("PTTL", "lds:v:k")  # redis-cli's answer, as text

Each server has a temporary directory of its own (its log and unix socket,
``server.socket``; removed on exit) and no persistence (``--save ""
--appendonly no``). ``start`` returns once the server's log says "Ready to
accept connections" (a thread reads the log as the server writes it; the
wait has a deadline). It never uses a redis-server it did not start, such
as one systemd runs on 6379.

As a script (tests in other languages)::

    python3 Tests/support/redis_server.py

starts a server, prints one line of JSON, {"port": PORT, "url": URL,
"socket": PATH, "dir": PATH}, then reads commands from stdin, one a line:
"stop", "start", "kill", each answered "ok" (or "error: why") once done.
When stdin closes it stops the server and removes its directory, so it
never outlives its parent.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from types import TracebackType

DEADLINE_S = 120.0 if os.environ.get("LDS_TEST_SLOW", "0") not in ("", "0") else 10.0
READY = "Ready to accept connections"


def free_port() -> int:
    """A port of 127.0.0.1 nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServerError(RuntimeError):
    """redis-server did not start or stop as asked; the message ends with its log."""


class RedisServer:
    """A redis-server of its own on 127.0.0.1; see the module's docstring."""

    def __init__(self, port: int | None = None) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="lds-redis-"))
        self.socket = str(self.dir / "redis.sock")
        self._fixed_port = port is not None
        self.port = port if port is not None else free_port()
        self._process: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None
        self._lines: list[str] = []
        self._changed = threading.Condition()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def __enter__(self) -> RedisServer:
        if not self.running:
            self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    def start(self) -> None:
        """Starts the server (again, on the same port); returns once it is ready."""
        if self.running:
            raise RedisServerError("the server already runs")
        for _attempt in range(5):
            if self._launch():
                return
            if self._fixed_port or not any("Address already in use" in line for line in self._lines):
                break
            self.port = free_port()  # another process took the port first
        raise RedisServerError(f"redis-server did not start on {self.port}:\n" + "".join(self._lines[-20:]))

    def stop(self) -> None:
        """SIGTERM; waits for the exit (SIGKILL past the deadline)."""
        self._end(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL; waits for the exit."""
        self._end(signal.SIGKILL)

    def close(self) -> None:
        """Stops the server if it runs and removes its directory."""
        if self.running:
            self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def cli(self, *args: str) -> str:
        """redis-cli's output for one command against this server."""
        done = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(self.port), *args],
                              capture_output=True, text=True, timeout=DEADLINE_S, check=True)
        return done.stdout.strip()

    def _launch(self) -> bool:
        with self._changed:
            self._lines = []
        # The log goes to stdout ("--logfile ''"), read line by line by a thread.
        self._process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.dir), "--logfile", "",
             "--unixsocket", self.socket, "--unixsocketperm", "700", "--daemonize", "no"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self._reader = threading.Thread(target=self._read_log, args=(self._process,), daemon=True)
        self._reader.start()
        with self._changed:
            ready = self._changed.wait_for(
                lambda: any(READY in line for line in self._lines) or self._process is None
                or self._process.poll() is not None, timeout=DEADLINE_S)
            ready = ready and any(READY in line for line in self._lines)
        if not ready:
            self._end(signal.SIGKILL)
        return ready

    def _read_log(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            with self._changed:
                self._lines.append(line)
                if len(self._lines) > 1000:
                    del self._lines[:500]
                self._changed.notify_all()
        process.wait()  # end of the log: the server exited
        with self._changed:
            self._changed.notify_all()

    def _end(self, sig: signal.Signals) -> None:
        process = self._process
        if process is None or process.poll() is not None:
            self._join_reader()
            return
        process.send_signal(sig)
        try:
            process.wait(timeout=DEADLINE_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise RedisServerError(f"redis-server did not exit on signal {sig.name}") from None
        finally:
            self._join_reader()

    def _join_reader(self) -> None:
        if self._reader is not None:
            self._reader.join(timeout=DEADLINE_S)
            self._reader = None
        if self._process is not None and self._process.stdout is not None:
            self._process.stdout.close()


def main() -> None:
    with RedisServer() as server:
        print(json.dumps({"port": server.port, "url": server.url, "socket": server.socket,
                          "dir": str(server.dir)}), flush=True)
        actions = {"stop": server.stop, "start": server.start, "kill": server.kill}
        for line in sys.stdin:
            action = actions.get(line.strip())
            if action is None:
                print(f"error: unknown command {line.strip()!r}", flush=True)
                continue
            try:
                action()
                print("ok", flush=True)
            except (RedisServerError, subprocess.SubprocessError, OSError) as e:
                print(f"error: {e}", flush=True)


if __name__ == "__main__":
    main()
