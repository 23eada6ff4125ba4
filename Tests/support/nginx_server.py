"""Debian's nginx on 127.0.0.1 for the HTTP/2 tests and benchmarks.

Makes a directory of its own with a self-signed certificate for 127.0.0.1
(made here with openssl; clients trust it explicitly through its file),
a configuration, and the files it serves; starts nginx on five free
ports (chosen again, up to five times, when nginx exits because one of
them was taken before it could bind it); prints one line of JSON:

  {"tls": PORT, "h2c": PORT, "plain": PORT, "slow": PORT, "slower": PORT, "ca": "/path/cert.pem", "log": "/path/access.log"}

  tls    HTTPS, HTTP/2 offered by ALPN (HTTP/1.1 for clients that do not ask)
  h2c    cleartext HTTP/2 only (clients need prior knowledge)
  plain  cleartext HTTP/1.1
  slow   cleartext HTTP/1.1 sending each response body at 10 MB/s (nginx's
         limit_rate), as a link of 80 Mbit/s per connection would
  slower the same at 1 MB/s (8 Mbit/s per connection, a mobile link)

and serves until stdin closes (so it never outlives its parent), then
stops nginx and removes the directory.

Every answer carries X-Connection (nginx's serial number of the
connection it came on) and X-Protocol (HTTP/1.1 or HTTP/2.0), so that a
client can count the connections its requests used. Routes: /ok ("ok"),
/100k (102,400 bytes, with nginx's ETag and Last-Modified; a matching
If-None-Match gets a 304), /text (64 KiB of text, gzip-compressed for
clients that accept it). HTTP/2 connections take up to 1,000 concurrent
streams.

With --access-log, nginx writes one line per answer, the bytes it sent
for it (headers and body), to the file the JSON line names as "log".
"""
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Exited(Exception):
    """nginx exited before it listened (a port taken meanwhile): what it said."""


def wait_for_pid_file(path: Path, process: subprocess.Popen, deadline: float) -> None:
    while True:
        if process.poll() is not None:
            raise Exited(process.stderr.read().decode() if process.stderr else "")
        try:
            if path.read_text().strip() == str(process.pid):
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit("nginx wrote no pid file within the deadline")
        time.sleep(0.01)


def wait_for(port: int, process: subprocess.Popen, deadline: float) -> None:
    while True:
        if process.poll() is not None:
            raise Exited(process.stderr.read().decode() if process.stderr else "")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit(f"nginx did not listen on {port}")
            time.sleep(0.01)


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="lds-nginx-"))
    www = work / "www"
    www.mkdir()
    (www / "100k").write_bytes(bytes(range(256)) * 400)
    (www / "text").write_bytes(b"loadstate compresses well. " * 2500)
    cert, key = work / "cert.pem", work / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    log = work / "access.log"
    access = f"log_format sent '$bytes_sent'; access_log {log} sent;" if "--access-log" in sys.argv else "access_log off;"
    for attempt in range(5):
        ports = {"tls": free_port(), "h2c": free_port(), "plain": free_port(), "slow": free_port(),
                 "slower": free_port()}
        process = start(work, www, cert, key, ports, access)
        try:
            deadline = time.monotonic() + 10
            # nginx writes its pid file once it holds every port (it exits
            # when one stays taken): only then do the ports answer for it,
            # and not for whoever took one of them.
            wait_for_pid_file(work / "nginx.pid", process, deadline)
            for port in ports.values():
                wait_for(port, process, deadline)
            break
        except Exited as exited:
            if attempt == 4:
                shutil.rmtree(work, ignore_errors=True)
                raise SystemExit(f"nginx exited: {exited}")
    try:
        print(json.dumps({**ports, "ca": str(cert), "log": str(log)}), flush=True)
        sys.stdin.read()
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(work, ignore_errors=True)


def start(work: Path, www: Path, cert: Path, key: Path, ports: dict, access: str) -> subprocess.Popen:
    """nginx with a configuration for `ports`, started (not yet listening, maybe)."""
    conf = work / "nginx.conf"
    conf.write_text(f"""
master_process off;
daemon off;
pid {work}/nginx.pid;
error_log {work}/error.log warn;
events {{ worker_connections 8192; }}
http {{
    {access}
    client_body_temp_path {work}/body;
    proxy_temp_path {work}/proxy;
    fastcgi_temp_path {work}/fastcgi;
    uwsgi_temp_path {work}/uwsgi;
    scgi_temp_path {work}/scgi;
    keepalive_requests 1000000;
    keepalive_timeout 60s;
    http2_max_concurrent_streams 1000;
    types {{ text/plain text; }}
    default_type application/octet-stream;
    gzip on;
    gzip_types text/plain;
    gzip_min_length 1;
    root {www};
    add_header X-Connection $connection always;
    add_header X-Protocol $server_protocol always;
    ssl_certificate {cert};
    ssl_certificate_key {key};
    server {{ listen 127.0.0.1:{ports["tls"]} ssl http2 backlog=4096; location = /ok {{ return 200 "ok"; }} }}
    server {{ listen 127.0.0.1:{ports["h2c"]} http2 backlog=4096; location = /ok {{ return 200 "ok"; }} }}
    server {{ listen 127.0.0.1:{ports["plain"]} backlog=4096; location = /ok {{ return 200 "ok"; }} }}
    server {{ listen 127.0.0.1:{ports["slow"]} backlog=4096; limit_rate 10m; }}
    server {{ listen 127.0.0.1:{ports["slower"]} backlog=4096; limit_rate 1m; }}
}}
""")
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    return subprocess.Popen([binary, "-c", str(conf), "-p", str(work), "-e", str(work / "error.log")],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


if __name__ == "__main__":
    main()
