"""A local HTTP server for the loader tests and benchmarks.

Listens on 127.0.0.1 on a free port, prints the port on its first line of
stdout, and serves until stdin closes (so it never outlives its parent).

Routes:
  /bytes/N            200 with N bytes (b"x" * N), Content-Length set
  /chunked/N/K        200 with N chunks of K bytes, chunked encoding
  /slow/MS            200 after MS milliseconds (stops early when the client leaves)
  /status/CODE        that status with a short body
  /reset              closes the connection without a response
  /redirect?to=URL    302 to URL
  /retry-after/S/KEY  503 with Retry-After: S for the first call with KEY, then 200
  /echo               200 echoing the method, headers and body
  /close-after/MS     200, then the kept-alive connection is closed MS milliseconds later
  /loop               302 to itself
  /empty              closes the connection without a response
  /retry-after-date/OFFSET/KEY
                      503 with Retry-After as an HTTP-date OFFSET seconds from now
                      (negative: past) for the first call with KEY, then 200
  /cached/KEY?etag=E&lm=DATE&cc=CC&size=N&h=Name:value
                      200 with N bytes (default: "body of KEY"), ETag E, Last-Modified
                      DATE, Cache-Control CC and each extra header h (all optional);
                      304 (no body, the same headers) when If-None-Match names E or
                      If-Modified-Since equals DATE. Every answer carries
                      X-Answer: the number of requests for KEY so far
  /count/KEY          "BODIES REQUESTS": the bodies and the requests /cached/KEY answered
  /gzip/N             200 with N bytes of "z", sent gzip-compressed (Content-Encoding: gzip)
                      whatever the request accepts
  /gzip-bomb/MIB      the same with MIB MiB of zero bytes (a compression bomb, about
                      1 KiB on the wire per MiB decoded)

Hostile answers, written raw (then the connection is closed; each stops
early when the client goes away):
  /status-line/N      a status line with a reason phrase of N bytes
  /headers/N/SIZE     N header lines of SIZE bytes each
  /trailers/N         a chunked body "ok", then N trailer lines of 62 bytes
"""
import gzip
import io
import socket
import sys
import threading
import time
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

calls = {}
calls_lock = threading.Lock()
# Compressed bodies already made, by route and size.
compressed = {}
# /cached/KEY: requests answered and bodies sent, by key.
cached_requests = {}
cached_bodies = {}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send_body(self, code, body, headers=()):
        self.send_response(code)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def raw(self, *parts):
        """Writes the bytes of each part (bytes, or an iterable of bytes) as
        they are, then closes the connection; stops early when the client
        has gone (it may abort an answer it finds too big)."""
        self.close_connection = True
        try:
            for part in parts:
                for chunk in [part] if isinstance(part, bytes) else part:
                    self.wfile.write(chunk)
            self.wfile.flush()
        except OSError:
            pass

    def do_GET(self):
        url = urlparse(self.path)
        parts = [p for p in url.path.split("/") if p]
        route = parts[0] if parts else ""
        if route == "bytes":
            self.send_body(200, b"x" * int(parts[1]))
        elif route == "chunked":
            count, size = int(parts[1]), int(parts[2])
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for _ in range(count):
                self.wfile.write(b"%x\r\n%s\r\n" % (size, b"c" * size))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        elif route == "slow":
            deadline = time.monotonic() + int(parts[1]) / 1000
            self.connection.settimeout(0.01)
            while time.monotonic() < deadline:
                try:
                    if self.connection.recv(1, socket.MSG_PEEK) == b"":
                        return  # the client went away
                except socket.timeout:
                    pass
                except OSError:
                    return
            self.connection.settimeout(None)
            self.send_body(200, b"slow")
        elif route == "echo":
            self.do_POST()
        elif route == "close-after":
            self.send_body(200, b"closing soon")
            time.sleep(int(parts[1]) / 1000)
            self.close_connection = True
        elif route == "loop":
            self.send_body(302, b"", [("Location", "/loop")])
        elif route == "empty":
            self.close_connection = True
        elif route == "status-line":
            self.raw(b"HTTP/1.1 200 " + b"r" * int(parts[1]) + b"\r\nContent-Length: 2\r\n\r\nok")
        elif route == "headers":
            count, size = int(parts[1]), int(parts[2])
            line = b"X-Filler: " + b"h" * max(size - 12, 0) + b"\r\n"
            head = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
            self.raw(head, (line for _ in range(count)), [b"\r\nok"])
        elif route == "trailers":
            count = int(parts[1])
            head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Filler\r\n\r\n2\r\nok\r\n0\r\n"
            line = b"X-Filler: " + b"t" * 50 + b"\r\n"
            self.raw(head, (line for _ in range(count)), [b"\r\n"])
        elif route == "retry-after-date":
            offset, key = int(parts[1]), parts[2]
            with calls_lock:
                n = calls.get(key, 0) + 1
                calls[key] = n
            if n == 1:
                when = formatdate(time.time() + offset, usegmt=True)
                self.send_body(503, b"busy", [("Retry-After", when)])
            else:
                self.send_body(200, b"ok after %d" % n)
        elif route == "cached":
            self.cached(parts[1], parse_qs(url.query))
        elif route in ("gzip", "gzip-bomb"):
            size = int(parts[1]) * (1 << 20 if route == "gzip-bomb" else 1)
            with calls_lock:
                if (route, size) not in compressed:
                    # Compressed a MiB at a time: the bomb's plain form is never held.
                    out = io.BytesIO()
                    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9) as writer:
                        chunk = b"z" * min(size, 1 << 20) if route == "gzip" else bytes(min(size, 1 << 20))
                        for at in range(0, size, len(chunk) or 1):
                            writer.write(chunk[:size - at])
                    compressed[(route, size)] = out.getvalue()
                body = compressed[(route, size)]
            self.send_body(200, body, [("Content-Encoding", "gzip")])
        elif route == "count":
            with calls_lock:
                counts = b"%d %d" % (cached_bodies.get(parts[1], 0), cached_requests.get(parts[1], 0))
            self.send_body(200, counts)
        elif route == "status":
            code = int(parts[1])
            self.send_body(code, b"status %d" % code)
        elif route == "reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            self.connection.close()
            self.close_connection = True
        elif route == "redirect":
            target = parse_qs(url.query)["to"][0]
            self.send_body(302, b"", [("Location", target)])
        elif route == "retry-after":
            seconds, key = parts[1], parts[2]
            with calls_lock:
                n = calls.get(key, 0) + 1
                calls[key] = n
            if n == 1:
                self.send_body(503, b"busy", [("Retry-After", seconds)])
            else:
                self.send_body(200, b"ok after %d" % n)
        else:
            self.send_body(404, b"no such route")

    def cached(self, key, query):
        etag = query.get("etag", [None])[0]
        modified = query.get("lm", [None])[0]
        with calls_lock:
            n = cached_requests.get(key, 0) + 1
            cached_requests[key] = n
        headers = [("X-Answer", str(n))]
        if etag is not None:
            headers.append(("ETag", etag))
        if modified is not None:
            headers.append(("Last-Modified", modified))
        if "cc" in query:
            headers.append(("Cache-Control", query["cc"][0]))
        for extra in query.get("h", []):
            name, _, value = extra.partition(":")
            headers.append((name, value))
        match = self.headers.get("If-None-Match")
        since = self.headers.get("If-Modified-Since")
        if (etag is not None and match == etag) or (modified is not None and since == modified):
            self.send_response(304)
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            return
        with calls_lock:
            cached_bodies[key] = cached_bodies.get(key, 0) + 1
        size = query.get("size", [None])[0]
        body = b"b" * int(size) if size is not None else b"body of " + key.encode()
        self.send_body(200, body, headers)

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        lines = [f"{self.command} {self.path}"] + [f"{k}: {v}" for k, v in self.headers.items()]
        self.send_body(200, ("\n".join(lines) + "\n\n").encode() + body)

    do_PUT = do_POST

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", "7")
        self.end_headers()


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024

    def handle_error(self, request, client_address):
        # Clients that reset or drop their connection (cancelled loads, the
        # hostile-input tests) are expected: say nothing of them.
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


def main():
    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(server.server_address[1], flush=True)
    sys.stdin.read()
    server.shutdown()


if __name__ == "__main__":
    main()
