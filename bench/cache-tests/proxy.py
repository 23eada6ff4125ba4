"""A reverse proxy on 127.0.0.1 whose cache is a client-side HTTP cache: loadstate's or hishel's.

The HTTP caching test suite (github.com/http-tests/cache-tests) tests a cache that sits between
its client and its origin server. A client library's cache is not a proxy, so this program makes
it one, the way an application would use it: every request the suite's client sends is loaded
again, same method, URL (on the origin), header fields and body, through the library with its
cache, and what the library hands back (status, header fields, body) is written back to the
client. The front end is the same for both libraries; only the loading differs:

* ``--backend loadstate``: loadstate's Python binding, the http loader with one memory cache per
  test (the suite's client names the test in a ``Test-ID`` header), the absolute URL as the cache
  key, ``CachePolicy.CACHE_FIRST`` for GET and HEAD and ``LOAD_ONLY`` for other methods, response
  headers honoured and no guessed freshness (the defaults), no redirect followed and no
  compression asked by the library (the client's own ``Accept-Encoding`` is passed on). A load
  that ends in an error of the ``HTTP`` domain carries the response: it is written back as it
  is. Any other failure (no connection, a transfer error) is answered 502 with its message.
* ``--backend hishel``: hishel's ``CacheClient`` for httpx in RFC 9111 mode as a private cache
  (``rfc=CacheOptions(shared=False)``), one client and one in-memory SQLite storage per test,
  no redirect followed, the raw (undecoded) body. A transport failure is answered 502.

Requests without ``Test-ID`` (the suite's own set-up and state requests) are loaded without a cache.

Framing belongs to each hop: the proxy drops the ``Transfer-Encoding`` and ``Content-Length``
lines the library hands back and sends its own ``Content-Length`` (a HEAD, a 304 and a 1xx keep
the library's ``Content-Length``, which describes the representation, and have no body; a 204 has
neither). Every other header line goes back as the library gave it, hop-by-hop ones included, so
that the suite sees what the cache stored.

Usage: ``proxy.py --backend loadstate|hishel --origin http://127.0.0.1:PORT [--port N]``; it prints
``listening on http://127.0.0.1:PORT`` once it accepts connections. ``LOADSTATE_LIBRARY`` chooses
the library that the binding loads (see bindings/python/README.md).
"""

from __future__ import annotations

import argparse
import http.server
import sys
import threading
from http import HTTPStatus
from typing import Callable, List, Optional, Tuple

Headers = List[Tuple[str, str]]
# What a backend returns: status, header lines, body.
Answer = Tuple[int, Headers, bytes]

# Request fields that belong to the hop between the client and the proxy: not passed on.
# (Host is the proxy's; the library sets the origin's from the URL.)
HOP_REQUEST_FIELDS = {"host", "connection", "keep-alive", "content-length", "transfer-encoding", "te",
                      "upgrade", "proxy-connection"}
# Statuses that never carry a body.
NO_BODY_STATUSES = {204, 304}
# Seconds one load may take; the suite's client gives up on a request after 10.
LOAD_TIMEOUT = 30.0


class LoadstateBackend:
    """Loads through loadstate's http loader with one memory cache per test."""

    def __init__(self, origin: str) -> None:
        import loadstate

        self.loadstate = loadstate
        self.origin = origin.rstrip("/")
        self.runtime = loadstate.Runtime()
        self.runtime.__enter__()  # open for the life of the process, as `with` would keep it
        self.http = self.runtime.http_loader(proxy="")
        self.caches: dict = {}
        self.lock = threading.Lock()
        self.version = f"loadstate {loadstate.__version__} ({loadstate.load_library().path})"

    def cache_for(self, test_id: str):
        with self.lock:
            cache = self.caches.get(test_id)
            if cache is None:
                cache = self.caches[test_id] = self.runtime.memory_cache(f"cache-tests {test_id}")
            return cache

    def load(self, method: str, target: str, headers: Headers, body: bytes, test_id: Optional[str]) -> Answer:
        ls = self.loadstate
        url = self.origin + target
        request = ls.HttpRequest(url, method=method, headers=headers, body=body,
                                 flags=ls.HTTP_NO_REDIRECTS | ls.HTTP_NO_COMPRESSION)
        cell = self.runtime.loadable(self.http)
        try:
            if test_id is None:
                state = cell.load(request, timeout=LOAD_TIMEOUT).state(LOAD_TIMEOUT + 5)
            else:
                policy = ls.CachePolicy.CACHE_FIRST if method in ("GET", "HEAD") else ls.CachePolicy.LOAD_ONLY
                state = cell.load(request, timeout=LOAD_TIMEOUT, cache=self.cache_for(test_id), cache_key=url,
                                  policy=policy).state(LOAD_TIMEOUT + 5)
        finally:
            cell.close()
        response = state.value
        if state.status is ls.Status.LOADED or (state.status is ls.Status.ERROR
                                                and state.error_domain == ls.Domain.HTTP
                                                and isinstance(response, ls.HttpResponse)):
            return response.status, list(response.headers), response.body
        message = f"loadstate: {state.status.name} {state.error_domain.name} {state.error_code}: {state.error_message}"
        return 502, [("Content-Type", "text/plain")], message.encode("utf-8", "replace")


class HishelBackend:
    """Loads through httpx with hishel's RFC 9111 cache, one client and in-memory storage per test."""

    def __init__(self, origin: str) -> None:
        import hishel
        import hishel.httpx
        import httpx

        self.hishel = hishel
        self.httpx = httpx
        self.origin = origin.rstrip("/")
        self.clients: dict = {}
        self.lock = threading.Lock()
        self.plain = httpx.Client(trust_env=False, follow_redirects=False, timeout=LOAD_TIMEOUT)
        from importlib.metadata import version
        self.version = f"hishel {version('hishel')}, httpx {httpx.__version__}"

    def client_for(self, test_id: str):
        import sqlite3

        with self.lock:
            client = self.clients.get(test_id)
            if client is None:
                # hishel 2's storages are SQLite and Redis; an in-memory SQLite database is its
                # memory cache. The connection is used from the proxy's threads, under hishel's lock.
                storage = self.hishel.SqliteStorage(connection=sqlite3.connect(":memory:", check_same_thread=False))
                client = self.hishel.httpx.CacheClient(storage=storage, rfc=self.hishel.CacheOptions(shared=False),
                                                       trust_env=False, follow_redirects=False,
                                                       timeout=LOAD_TIMEOUT)
                self.clients[test_id] = client
            return client

    def load(self, method: str, target: str, headers: Headers, body: bytes, test_id: Optional[str]) -> Answer:
        client = self.plain if test_id is None else self.client_for(test_id)
        request = client.build_request(method, self.origin + target, headers=headers, content=body or None)
        try:
            response = client.send(request, stream=True)
            try:
                raw = b"".join(response.iter_raw())
            finally:
                response.close()
        except self.httpx.HTTPError as error:
            message = f"hishel/httpx: {type(error).__name__}: {error}"
            return 502, [("Content-Type", "text/plain")], message.encode("utf-8", "replace")
        return response.status_code, [(k.decode("latin-1"), v.decode("latin-1")) for k, v in response.headers.raw], raw


def make_handler(backend) -> type:
    """The request handler class of the proxy, loading through ``backend``."""

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "cache-tests-proxy"

        def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base class's name
            pass

        def handle_one_request(self) -> None:
            # As the base class does, but for every method (the suite sends unknown ones).
            self.raw_requestline = self.rfile.readline(65537)
            if len(self.raw_requestline) > 65536:
                self.send_error(HTTPStatus.REQUEST_URI_TOO_LONG)
                return
            if not self.raw_requestline:
                self.close_connection = True
                return
            if not self.parse_request():
                return
            self.proxy()
            self.wfile.flush()

        def read_body(self) -> bytes:
            if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                chunks = []
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass
                        return b"".join(chunks)
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length > 0 else b""

        def proxy(self) -> None:
            body = self.read_body()
            connection_fields = {token.strip().lower() for value in self.headers.get_all("Connection", [])
                                 for token in value.split(",")}
            headers = [(name, value) for name, value in self.headers.items()
                       if name.lower() not in HOP_REQUEST_FIELDS and name.lower() not in connection_fields]
            test_id = self.headers.get("Test-ID")
            try:
                status, lines, answer_body = backend.load(self.command, self.path, headers, body, test_id)
            except Exception as error:  # a bug of the backend's use: say it to the client
                status, lines = 502, [("Content-Type", "text/plain")]
                answer_body = f"proxy: {type(error).__name__}: {error}".encode("utf-8", "replace")
            self.write(status, lines, answer_body)

        def write(self, status: int, lines: Headers, body: bytes) -> None:
            bodiless = self.command == "HEAD" or status in NO_BODY_STATUSES or status < 200
            keep_length = bodiless and status != 204
            try:
                reason = HTTPStatus(status).phrase
            except ValueError:
                reason = "Unknown"
            out = [f"HTTP/1.1 {status} {reason}\r\n"]
            for name, value in lines:
                lower = name.lower()
                if lower == "transfer-encoding" or (lower == "content-length" and not keep_length):
                    continue
                if lower == "connection" and "close" in (t.strip().lower() for t in value.split(",")):
                    self.close_connection = True
                out.append(f"{name}: {value}\r\n")
            if not bodiless:
                out.append(f"Content-Length: {len(body)}\r\n")
            out.append("\r\n")
            self.wfile.write("".join(out).encode("latin-1", "replace"))
            if not bodiless:
                self.wfile.write(body)

    return Handler


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("loadstate", "hishel"), required=True)
    parser.add_argument("--origin", required=True, help="the suite's server, e.g. http://127.0.0.1:8000")
    parser.add_argument("--port", type=int, default=0, help="the port to listen on (0: a free one)")
    args = parser.parse_args(argv)
    factory: Callable = LoadstateBackend if args.backend == "loadstate" else HishelBackend
    backend = factory(args.origin)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(backend))
    server.daemon_threads = True
    print(f"listening on http://127.0.0.1:{server.server_address[1]} ({backend.version})", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
