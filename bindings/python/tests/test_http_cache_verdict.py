"""End to end: request directives, Age and the cache's verdict against a real server on 127.0.0.1.

These tests need the http loader's cache of issue #32 (request directives honoured, Age and
``Cache-Status: loadstate; ...`` added to a response served from the cache, heuristic freshness from
Last-Modified, LDS_HTTP_NO_HEURISTIC_FRESHNESS). Against a library without it they fail: they are
not skipped, so that their failure shows what is missing."""

from __future__ import annotations

import email.utils
import http.server
import threading
import time

import pytest
from conftest import WAIT, http_server

import loadstate
from loadstate import CacheControl, CachePolicy, CacheVerdict, HttpRequest, Status


class _Handler(http.server.BaseHTTPRequestHandler):
    """/fresh: ``Cache-Control: max-age=60``; /modified: only a ``Last-Modified`` a day old;
    /etag: ``no-cache`` and ETag "v1", 304 to If-None-Match "v1". Counts the requests per path."""

    protocol_version = "HTTP/1.1"
    hits: dict = {}
    lock = threading.Lock()

    def do_GET(self):  # noqa: N802 - the stdlib's name
        with self.lock:
            type(self).hits[self.path] = type(self).hits.get(self.path, 0) + 1
        if self.path == "/fresh":
            self.answer([("Cache-Control", "max-age=60")])
        elif self.path == "/modified":
            day_ago = email.utils.formatdate(time.time() - 86400, usegmt=True)
            self.answer([("Last-Modified", day_ago), ("Date", email.utils.formatdate(usegmt=True))])
        elif self.path == "/etag":
            if self.headers.get("If-None-Match") == '"v1"':
                self.send_response(304)
                self.send_header("ETag", '"v1"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.answer([("Cache-Control", "no-cache"), ("ETag", '"v1"')])
        else:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

    def answer(self, headers):
        body = b"body of " + self.path.encode()
        self.send_response(200)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    _Handler.hits = {}
    with http_server(_Handler) as url:
        yield url


def _load(rt, cell, cache, request, policy=CachePolicy.CACHE_FIRST):
    return cell.load(request, cache=cache, cache_key="k", policy=policy).state(WAIT)


def test_a_fresh_stored_response_comes_back_with_age_and_the_fresh_verdict(rt, server):
    cache = rt.memory_cache()
    cell = rt.loadable(rt.http_loader(proxy=""))
    first = _load(rt, cell, cache, f"{server}/fresh")
    assert first.status is Status.LOADED and not first.from_cache
    assert first.value.cache is None
    again = _load(rt, cell, cache, f"{server}/fresh")
    assert again.from_cache
    assert again.value.cache == "fresh" and again.value.cache is CacheVerdict.FRESH
    assert again.value.age is not None and 0 <= again.value.age <= 60
    assert _Handler.hits["/fresh"] == 1


def test_a_response_with_only_last_modified_is_fresh_by_heuristic(rt, server):
    cache = rt.memory_cache()
    cell = rt.loadable(rt.http_loader(proxy=""))
    _load(rt, cell, cache, f"{server}/modified")
    again = _load(rt, cell, cache, f"{server}/modified")
    assert again.from_cache and again.value.cache is CacheVerdict.HEURISTIC
    assert again.value.age is not None
    assert _Handler.hits["/modified"] == 1


def test_with_no_heuristic_freshness_the_same_response_is_loaded_again(rt, server):
    cache = rt.memory_cache()
    cell = rt.loadable(rt.http_loader(proxy=""))
    request = HttpRequest(f"{server}/modified", flags=loadstate.HTTP_NO_HEURISTIC_FRESHNESS)
    _load(rt, cell, cache, request)
    again = _load(rt, cell, cache, request)
    assert again.status is Status.LOADED
    assert again.value.cache is None or again.value.cache is CacheVerdict.REVALIDATED
    assert _Handler.hits["/modified"] == 2


def test_only_if_cached_on_an_empty_cache_is_a_504_without_the_network(rt, server):
    cache = rt.memory_cache()
    cell = rt.loadable(rt.http_loader(proxy=""))
    request = HttpRequest(f"{server}/fresh", cache_control=CacheControl(only_if_cached=True))
    with pytest.raises(loadstate.HTTPStatusError) as raised:
        cell.load(request, cache=cache, cache_key="k", policy=CachePolicy.CACHE_FIRST).value(WAIT)
    assert raised.value.status == 504
    assert _Handler.hits.get("/fresh", 0) == 0


def test_only_if_cached_takes_a_stored_response(rt, server):
    cache = rt.memory_cache()
    cell = rt.loadable(rt.http_loader(proxy=""))
    _load(rt, cell, cache, f"{server}/fresh")
    request = HttpRequest(f"{server}/fresh", cache_control="only-if-cached")
    again = _load(rt, cell, cache, request)
    assert again.status is Status.LOADED and again.value.cache is CacheVerdict.FRESH
    assert _Handler.hits["/fresh"] == 1


def test_request_no_cache_goes_to_the_server_even_for_a_fresh_response(rt, server):
    cache = rt.memory_cache()
    cell = rt.loadable(rt.http_loader(proxy=""))
    _load(rt, cell, cache, f"{server}/fresh")
    again = _load(rt, cell, cache, HttpRequest(f"{server}/fresh", cache_control=CacheControl(no_cache=True)))
    assert again.status is Status.LOADED
    assert _Handler.hits["/fresh"] == 2


def test_a_304_is_the_revalidated_verdict(rt, server):
    cache = rt.memory_cache()
    cell = rt.loadable(rt.http_loader(proxy=""))
    _load(rt, cell, cache, f"{server}/etag")
    again = _load(rt, cell, cache, f"{server}/etag")
    assert again.value.cache is CacheVerdict.REVALIDATED
    assert again.value.body == b"body of /etag"
    assert _Handler.hits["/etag"] == 2
