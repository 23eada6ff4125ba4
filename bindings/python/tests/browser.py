"""Headless Chromium driven over its DevTools protocol, for the inspector's browser test.

A small WebSocket client (RFC 6455: text frames, client masking) speaks
to a Chromium started on 127.0.0.1 with its own profile directory.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import tempfile
import urllib.request
from typing import Any, Dict, Optional
from urllib.parse import urlsplit


def chromium_path() -> Optional[str]:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


class WebSocket:
    def __init__(self, url: str, timeout: float) -> None:
        u = urlsplit(url)
        assert u.hostname and u.port
        self.sock = socket.create_connection((u.hostname, u.port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {u.path} HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
                          .encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            assert chunk, "the DevTools connection closed during the handshake"
            head += chunk
        assert head.startswith(b"HTTP/1.1 101"), head

    def send(self, text: str) -> None:
        payload = text.encode()
        mask = os.urandom(4)
        n = len(payload)
        header = bytes([0x81])
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 65536:
            header += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", n)
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def _exactly(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            assert chunk, "the DevTools connection closed"
            data += chunk
        return data

    def receive(self) -> str:
        message = b""
        while True:
            first, second = self._exactly(2)
            n = second & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._exactly(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._exactly(8))[0]
            payload = self._exactly(n)
            if first & 0x0F in (0x1, 0x0):
                message += payload
                if first & 0x80:
                    return message.decode()

    def close(self) -> None:
        self.sock.close()


class Browser:
    """A headless Chromium and one page of it."""

    def __init__(self, timeout: float = 30) -> None:
        path = chromium_path()
        assert path, "chromium is not installed"
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="loadstate-chromium-")
        self.process = subprocess.Popen(
            [path, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
             "--disable-background-networking", "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
             f"--user-data-dir={self.profile}", "--window-size=1280,800", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        port = None
        assert self.process.stderr
        for line in self.process.stderr:
            found = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
            if found:
                port = int(found.group(1))
                break
        assert port, "chromium did not report its DevTools port"
        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with direct.open(f"http://127.0.0.1:{port}/json/list", timeout=timeout) as answer:
            pages = [t for t in json.load(answer) if t["type"] == "page"]
        self.ws = WebSocket(pages[0]["webSocketDebuggerUrl"], timeout)
        self.next_id = 0

    def call(self, method: str, **params: Any) -> Dict[str, Any]:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.receive())
            if message.get("id") == self.next_id:
                assert "error" not in message, message
                return message["result"]

    def navigate(self, url: str) -> None:
        self.call("Page.enable")
        self.call("Page.navigate", url=url)
        # Until the new document has loaded.
        while True:
            message = json.loads(self.ws.receive())
            if message.get("method") == "Page.loadEventFired":
                return

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
        assert "exceptionDetails" not in result, result
        return result["result"].get("value")

    def screenshot(self, path: str) -> None:
        data = self.call("Page.captureScreenshot", format="png")["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self) -> None:
        self.ws.close()
        self.process.kill()
        self.process.wait(self.timeout)
        shutil.rmtree(self.profile, ignore_errors=True)
