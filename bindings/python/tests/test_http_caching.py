"""The http loader with a cache through the binding: revalidation (304s flagged ``revalidated``),
Cache-Control, compression, HTTP/2 against Debian's nginx, and HttpResponse's helpers."""

from __future__ import annotations

import gzip
import http.server
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict

import pytest
from conftest import http_server, WAIT

import loadstate
from loadstate import CachePolicy, Domain, LoadOptions, Status

REPOSITORY = Path(__file__).resolve().parents[3]


class _Handler(http.server.BaseHTTPRequestHandler):
    """/page: a body with ETag "v1" (304 when asked with it) and the Cache-Control of ?cc=;
    /json: a JSON body; /gzip: a gzip-compressed body. Counts the bodies of /page it sends."""

    protocol_version = "HTTP/1.1"
    bodies = 0

    def do_GET(self):  # noqa: N802 - the stdlib's name
        path, _, query = self.path.partition("?")
        if path == "/page":
            control = query[len("cc="):] if query.startswith("cc=") else "no-cache"
            if self.headers.get("If-None-Match") == '"v1"':
                self.send_response(304)
                self.send_header("ETag", '"v1"')
                self.send_header("Cache-Control", control)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            type(self).bodies += 1
            self.answer(b"the page", [("ETag", '"v1"'), ("Cache-Control", control)])
        elif path == "/json":
            self.answer(json.dumps({"name": "Ada", "langs": ["en"]}).encode(), [("Content-Type", "application/json")])
        elif path == "/gzip":
            self.answer(gzip.compress(b"squeezed " * 1000), [("Content-Encoding", "gzip")])
        else:
            self.answer(b"no such page", [], status=404)

    def answer(self, body, headers, status=200):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    _Handler.bodies = 0
    with http_server(_Handler) as url:
        yield url


def test_a_304_keeps_the_cached_body_and_is_flagged_revalidated(rt, server):
    cache = rt.memory_cache()
    cell = rt.loadable(rt.http_loader(proxy=""))
    first = cell.load(f"{server}/page", cache=cache, cache_key="page").state(WAIT)
    assert first.value.body == b"the page" and not first.from_cache
    again = cell.load(f"{server}/page", cache=cache, cache_key="page", policy=CachePolicy.CACHE_FIRST).state(WAIT)
    assert again.status is Status.LOADED
    assert again.from_cache and again.revalidated
    assert again.flags & loadstate.Flags.REVALIDATED
    assert again.value.body == b"the page"
    assert _Handler.bodies == 1


def test_no_store_keeps_a_response_out_of_the_cache_unless_ignored(rt, server):
    cache = rt.memory_cache()
    cell = rt.loadable(rt.http_loader(proxy=""))
    cell.load(f"{server}/page?cc=no-store", cache=cache, cache_key="k").state(WAIT)
    assert "k" not in cache
    ignoring = LoadOptions(cache=cache, cache_key="k", ignore_cache_headers=True)
    cell.load(f"{server}/page?cc=no-store", options=ignoring).state(WAIT)
    assert "k" in cache


def test_max_age_keeps_a_response_fresh(rt, server):
    cache = rt.memory_cache()
    cell = rt.loadable(rt.http_loader(proxy=""))
    cell.load(f"{server}/page?cc=max-age=600", cache=cache, cache_key="k").state(WAIT)
    again = cell.load(f"{server}/page?cc=max-age=600", cache=cache, cache_key="k",
                      policy=CachePolicy.CACHE_FIRST).state(WAIT)
    assert again.from_cache and not again.stale and not again.revalidated
    assert _Handler.bodies == 1


def test_raise_for_status_and_json(rt, server):
    cell = rt.loadable(rt.http_loader(proxy=""))
    response = cell.load(f"{server}/json").value(WAIT)
    assert response.raise_for_status() is response
    assert response.json() == {"name": "Ada", "langs": ["en"]}
    missing = loadstate.HttpResponse(404, [("X-Reason", "gone")], b"no such page")
    with pytest.raises(loadstate.LoadFailed) as failed:
        missing.raise_for_status()
    assert (failed.value.domain, failed.value.code) == (Domain.HTTP, 404)
    assert failed.value.response is missing
    with pytest.raises(ValueError):
        missing.json()


def test_a_compressed_body_is_decoded_unless_compression_is_off(rt, server):
    cell = rt.loadable(rt.http_loader(proxy=""))
    assert cell.load(f"{server}/gzip").value(WAIT).body == b"squeezed " * 1000
    raw = cell.load(loadstate.HttpRequest(f"{server}/gzip", flags=loadstate.HTTP_NO_COMPRESSION)).value(WAIT)
    assert raw.body[:2] == b"\x1f\x8b"


def test_requests_keep_their_version_flags_and_ca_file():
    request = loadstate.HttpRequest("https://127.0.0.1/", max_redirects=5, flags=loadstate.HTTP_HTTP2,
                                    ca_file="/tmp/ca.pem")
    assert loadstate.HttpRequest.decode(request.encode()) == request
    plain = loadstate.HttpRequest("https://127.0.0.1/", max_redirects=5,
                                  flags=loadstate.HTTP_HTTP1 | loadstate.HTTP_NO_COMPRESSION)
    assert loadstate.HttpRequest.decode(plain.encode()) == plain
    with pytest.raises(loadstate.InvalidArgument):
        loadstate.HttpRequest("https://127.0.0.1/", flags=loadstate.HTTP_HTTP1 | loadstate.HTTP_HTTP2).encode()


@pytest.fixture(scope="module")
def nginx():
    """Debian's nginx with a self-signed certificate (Tests/support/nginx_server.py)."""
    script = REPOSITORY / "Tests" / "support" / "nginx_server.py"
    process = subprocess.Popen([sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert process.stdout is not None and process.stdin is not None
    info = json.loads(process.stdout.readline())
    yield info
    process.stdin.close()
    process.wait()


def test_http2_over_tls_with_a_trusted_ca_file_shares_one_connection(rt, nginx):
    loader = rt.http_loader(proxy="")
    request = loadstate.HttpRequest(f"https://127.0.0.1:{nginx['tls']}/ok", flags=loadstate.HTTP_HTTP2,
                                    ca_file=nginx["ca"])
    loads = [rt.loadable(loader).load(request) for _ in range(50)]
    responses = [load.value(WAIT) for load in loads]
    assert {r.header("x-protocol") for r in responses} == {"HTTP/2.0"}
    assert len({r.header("x-connection") for r in responses}) == 1
    untrusted = rt.loadable(loader).load(loadstate.HttpRequest(request.url, flags=loadstate.HTTP_HTTP2)).state(WAIT)
    assert untrusted.status is Status.ERROR and untrusted.error_domain != Domain.HTTP


CA_FROM_ENVIRONMENT = """
import sys, loadstate
with loadstate.Runtime(library=sys.argv[2]) as rt:
    state = rt.loadable(rt.http_loader(proxy="")).load(sys.argv[1]).state(10)
    print(state.status.name, state.error_message)
"""


def test_the_default_ca_certificates_come_from_loadstate_ca_file(nginx):
    """LOADSTATE_CA_FILE replaces libcurl's compiled-in CA file for requests without a ca_file of their own.

    A process of its own for each case: the library reads the variable when it sets a transfer handle up.
    """
    library = loadstate.load_library().path
    env = {name: value for name, value in os.environ.items()
           if name not in ("LOADSTATE_CA_FILE", "LOADSTATE_CA_DIR", "SSL_CERT_FILE", "SSL_CERT_DIR")}
    env["PYTHONPATH"] = str(Path(loadstate.__file__).resolve().parent.parent)

    def fetch(extra: Dict[str, str]) -> str:
        done = subprocess.run([sys.executable, "-c", CA_FROM_ENVIRONMENT, f"https://127.0.0.1:{nginx['tls']}/ok",
                               library], env=dict(env, **extra), capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert fetch({"LOADSTATE_CA_FILE": nginx["ca"]}).startswith("LOADED")
    refused = fetch({})
    assert refused.startswith("ERROR") and "certificate" in refused, refused
