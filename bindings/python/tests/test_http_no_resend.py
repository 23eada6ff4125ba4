"""No request is sent twice behind the caller's back: when a kept-alive connection closes without an
answer, libcurl's own resend on a fresh connection is refused; only the load's retries send it again,
and only for a method that may be repeated."""

from __future__ import annotations

import socket
from typing import List

import pytest
from conftest import RawServer, WAIT

import loadstate
from loadstate import Status


class _DropsTheSecond:
    """Answers the first request of the first connection and keeps it open; closes that connection when
    its second request arrives, without an answer; answers every request on later connections. Records
    the request lines it read."""

    def __init__(self) -> None:
        self.requests: List[bytes] = []
        self.raw = RawServer(self._serve)
        self.url = f"http://127.0.0.1:{self.raw.port}"

    def _serve(self, conn: socket.socket, number: int) -> None:
        served = 0
        data = b""
        while True:
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            head, _, data = data.partition(b"\r\n\r\n")
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            while len(data) < length:
                data += conn.recv(65536)
            data = data[length:]
            self.requests.append(head.split(b"\r\n")[0])
            served += 1
            if number == 1 and served == 2:
                conn.shutdown(socket.SHUT_RDWR)
                return
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")

    def close(self) -> None:
        self.raw.close()


@pytest.fixture
def server():
    s = _DropsTheSecond()
    yield s
    s.close()


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_connection_closed_without_an_answer_is_not_resent_behind_the_callers_back(rt, server, method):
    cell = rt.loadable(rt.http_loader(proxy=""))
    first = cell.load(loadstate.HttpRequest(f"{server.url}/one", method=method)).state(WAIT)
    assert first.status is Status.LOADED
    second = cell.load(loadstate.HttpRequest(f"{server.url}/two", method=method)).state(WAIT)
    assert second.status is Status.ERROR and "not sent again" in second.error_message
    assert [line.split()[1] for line in server.requests] == [b"/one", b"/two"]


def test_the_loads_own_retries_send_an_idempotent_request_again(rt, server):
    cell = rt.loadable(rt.http_loader(proxy=""))
    assert cell.load(loadstate.HttpRequest(f"{server.url}/one")).state(WAIT).status is Status.LOADED
    again = cell.load(loadstate.HttpRequest(f"{server.url}/two"), retries=2, retry_base=0.001).state(WAIT)
    assert again.status is Status.LOADED and again.value.body == b"ok"
    assert [line.split()[1] for line in server.requests] == [b"/one", b"/two", b"/two"]


def test_a_post_is_not_retried_even_with_retries(rt, server):
    cell = rt.loadable(rt.http_loader(proxy=""))
    assert cell.load(loadstate.HttpRequest(f"{server.url}/one", method="POST")).state(WAIT).status is Status.LOADED
    again = cell.load(loadstate.HttpRequest(f"{server.url}/two", method="POST"), retries=2,
                      retry_base=0.001).state(WAIT)
    assert again.status is Status.ERROR
    assert [line.split()[1] for line in server.requests] == [b"/one", b"/two"]
