"""The library's built-in loaders through the binding: file, exec, http."""

from __future__ import annotations

import asyncio
import ctypes
import http.server
import pickle
from unittest import mock

import pytest
from conftest import http_server, Recorder, WAIT

import loadstate
from loadstate import Domain, EventType, Status, cells
from loadstate._library import HttpResponseC


def test_file_loader_reads_a_file_with_progress(rt, tmp_path):
    path = tmp_path / "data.bin"
    path.write_bytes(b"0123456789" * 10)
    cell = rt.loadable(rt.file_loader(chunk_size=16))
    log = Recorder(cell)
    state = cell.load(path).state(WAIT)
    assert (state.status, state.value, state.request) == (Status.LOADED, b"0123456789" * 10, str(path))
    progress = [e for e in log.all if e.type is EventType.PROGRESS]
    assert progress and progress[-1].progress_total == 100


def test_file_loader_reports_a_missing_file_in_the_os_domain(rt, tmp_path):
    state = rt.loadable(rt.file_loader()).load(tmp_path / "missing").state(WAIT)
    assert (state.status, state.error_domain) == (Status.ERROR, Domain.OS)
    assert state.error_code == 2 and "missing" in state.error_message


def test_exec_loader_returns_stdout_and_fails_on_a_nonzero_exit(rt):
    cell = rt.loadable(rt.exec_loader())
    ok = cell.load(loadstate.ExecRequest(["sh", "-c", 'printf "%s" "$GREETING"; pwd'], env={"GREETING": "hi "},
                                         cwd="/")).state(WAIT)
    assert ok.value == b"hi /\n"
    assert ok.request == loadstate.ExecRequest(["sh", "-c", 'printf "%s" "$GREETING"; pwd'], ["GREETING=hi "], "/")
    failed = cell.load(["sh", "-c", "echo oops >&2; exit 3"]).state(WAIT)
    assert (failed.status, failed.error_domain, failed.error_code) == (Status.ERROR, Domain.EXIT, 3)
    assert "oops" in failed.error_message


def test_exec_requests_need_arguments():
    with pytest.raises(loadstate.InvalidArgument):
        loadstate.ExecRequest([]).encode()


MEBIBYTE = 1 << 20


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - the stdlib's name
        status = 404 if self.path == "/missing" else 200
        body = f"{self.command} {self.path} {self.headers.get('X-Test')}".encode()
        if self.path == "/big":
            body = bytes(MEBIBYTE)
        self.send_response(status)
        if status == 404:
            self.send_header("X-Reason", "no such page")
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    with http_server(_Handler) as url:
        yield url


def test_http_loader_gets_a_response(rt, server):
    cell = rt.loadable(rt.http_loader(proxy=""))
    state = cell.load(loadstate.HttpRequest(f"{server}/hello", headers=[("X-Test", "yes")])).state(WAIT)
    assert state.status is Status.LOADED
    response = state.value
    assert isinstance(response, loadstate.HttpResponse)
    assert (response.status, response.body) == (200, b"GET /hello yes")
    assert response.header("content-type") == "text/plain"
    assert state.request.url == f"{server}/hello"


def test_http_loader_reports_statuses_outside_2xx_in_the_http_domain(rt, server):
    state = rt.loadable(rt.http_loader(proxy="")).load(f"{server}/missing").state(WAIT)
    assert (state.status, state.error_domain, state.error_code) == (Status.ERROR, Domain.HTTP, 404)
    assert state.value == loadstate.HttpResponse(404, state.value.headers, b"GET /missing None")
    assert state.value.header("x-reason") == "no such page"


def test_a_status_outside_2xx_raises_load_failed_with_the_response(rt, server):
    cell = rt.loadable(rt.http_loader(proxy=""))
    with pytest.raises(loadstate.LoadFailed) as failed:
        cell.load(f"{server}/missing").value(WAIT)
    error = failed.value
    assert isinstance(error, loadstate.Error)
    assert (error.domain, error.code) == (Domain.HTTP, 404)
    assert error.message.startswith("HTTP 404")
    assert error.response.status == 404
    assert error.response.header("X-Reason") == "no such page"
    assert error.response.body == b"GET /missing None"
    assert str(error).startswith("http error 404: HTTP 404")


def test_get_of_an_http_cell_returns_the_response_or_raises(server):
    async def main():
        async with loadstate.Runtime(loadstate.Delivery.POLL) as rt:
            cell = rt.loadable(rt.http_loader(proxy=""))
            response = await cell.get(f"{server}/hello")
            assert (response.status, response.body) == (200, b"GET /hello None")
            with pytest.raises(loadstate.LoadFailed) as failed:
                await cell.get(loadstate.HttpRequest(f"{server}/missing"))
            assert failed.value.response.status == 404

    asyncio.run(main())


def _deliveries(rt, server, delivery_mode_listens, loads=1):
    """How many events of the last of ``loads`` 1 MiB downloads on one cell reach Python, and how many of
    them are PROGRESS events."""
    cell = rt.loadable(rt.http_loader(proxy=""))
    delivery_mode_listens(cell)
    for _ in range(loads):
        seen = []
        original = cells._CellState.deliver

        def counting(state, raw):
            seen.append(raw[0])
            original(state, raw)

        with mock.patch.object(cells._CellState, "deliver", counting):
            response = cell.load(f"{server}/big").value(WAIT)
        assert len(response.body) == MEBIBYTE
    return len(seen), seen.count(EventType.PROGRESS)


@pytest.mark.parametrize("delivery", [loadstate.Delivery.LOOP, loadstate.Delivery.POLL])
def test_progress_events_reach_python_only_when_something_listens_for_them(server, delivery):
    with loadstate.Runtime(delivery) as rt:
        # The first load of a cell nobody listens to turns them off (LDS_LOAD_NO_PROGRESS).
        assert _deliveries(rt, server, lambda cell: None) == (2, 0)
        assert _deliveries(rt, server, lambda cell: None, loads=2) == (2, 0)
        assert _deliveries(rt, server, lambda cell: cell.subscribe(lambda event: None, progress=False)) == (2, 0)
        events, progress = _deliveries(rt, server, lambda cell: cell.subscribe(lambda event: None))
        assert progress >= 8 and events == progress + 2
        events, progress = _deliveries(rt, server, lambda cell: cell.subscribe(lambda event: None)())
        assert (events, progress) == (2, 0)       # unsubscribed: off again


def test_http_request_and_response_encodings_round_trip():
    request = loadstate.HttpRequest("https://example.org/x", "PUT", ("A: 1", "B: 2"), b"body", 2.5, 3, 100,
                                    loadstate.HTTP_INSECURE)
    assert loadstate.HttpRequest.decode(request.encode()) == request
    no_redirects = loadstate.HttpRequest("http://x", flags=loadstate.HTTP_NO_REDIRECTS)
    assert loadstate.HttpRequest.decode(no_redirects.encode()) == no_redirects
    response = loadstate.HttpResponse(201, [("Location", "/x")], b"made")
    assert loadstate.HttpResponse.decode(response.encode()) == response
    assert loadstate.HttpResponse.decode(memoryview(response.encode())) == response
    assert type(loadstate.HttpResponse.decode(memoryview(response.encode())).body) is bytes
    assert loadstate.HttpResponse.decode(loadstate.HttpResponse(204).encode()) == loadstate.HttpResponse(204)


def test_http_response_decoding_agrees_with_the_library():
    library = loadstate.load_library()
    out = HttpResponseC()
    for response in (loadstate.HttpResponse(200, [("A", "1"), ("Set-Cookie", "x=1; y")], b"\r\n\x00body"),
                     loadstate.HttpResponse(-1, [], b""), loadstate.HttpResponse(599, [("Empty", "")], b"x" * 4096)):
        data = response.encode()
        assert library.dll.lds_http_response_decode(data, len(data), ctypes.byref(out)) == 0
        assert loadstate.HttpResponse.decode(data) == loadstate.HttpResponse(
            out.status, response.headers, ctypes.string_at(out.body, out.body_len))


def test_a_decoded_http_response_is_an_immutable_value_with_its_headers_read_on_first_use():
    sent = loadstate.HttpResponse(200, [("Content-Type", "text/plain"), ("X-Odd", "spaced : value"),
                                        ("Set-Cookie", "a=1"), ("Set-Cookie", "b=2")], b"hello")
    response = loadstate.HttpResponse.decode(sent.encode())
    assert (response.status, response.body) == (200, b"hello")
    assert response._headers is None  # not split yet: nothing asked for them
    assert response.headers == [("Content-Type", "text/plain"), ("X-Odd", "spaced : value"),
                                ("Set-Cookie", "a=1"), ("Set-Cookie", "b=2")]
    assert response.headers is response.headers  # split once
    assert response.header("content-type") == "text/plain" and response.header("missing") is None
    assert response == sent and response != loadstate.HttpResponse(200, sent.headers, b"other")
    assert repr(response) == ("HttpResponse(status=200, headers=[('Content-Type', 'text/plain'), "
                              "('X-Odd', 'spaced : value'), ('Set-Cookie', 'a=1'), ('Set-Cookie', 'b=2')], "
                              "body=b'hello')")
    assert pickle.loads(pickle.dumps(response)) == response
    with pytest.raises(AttributeError):
        response.status = 500  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del response.body  # type: ignore[misc]
    with pytest.raises(TypeError):
        hash(response)
    assert loadstate.HttpResponse.decode(loadstate.HttpResponse(204).encode()).headers == []


@pytest.mark.parametrize("data", [b"", b"LDR1", b"LDR2" + bytes(8), b"LDR1" + bytes(4) + b"\x05\x00\x00\x00abcd",
                                  b"LDR1" + bytes(4) + b"\xff\xff\xff\xff"])
def test_an_http_response_that_is_not_one_is_refused_as_the_library_refuses_it(data):
    library = loadstate.load_library()
    assert library.dll.lds_http_response_decode(data, len(data), ctypes.byref(HttpResponseC())) == loadstate.Code.EINVAL
    with pytest.raises(loadstate.InvalidArgument, match="not an encoded HTTP response"):
        loadstate.HttpResponse.decode(data)


def test_a_url_loaded_again_has_the_same_encoding():
    first = loadstate.HTTP_REQUEST.encode("http://127.0.0.1:1/again")
    assert loadstate.HTTP_REQUEST.encode("http://127.0.0.1:1/again") == first
    assert first == loadstate.HttpRequest("http://127.0.0.1:1/again").encode()
    assert loadstate.HTTP_REQUEST.encode("http://127.0.0.1:1/other") != first


@pytest.mark.parametrize("line", ["Bad: a\nInjected: b", "Bad: a\r\nInjected: b", "Bad: a\rInjected: b"])
def test_http_headers_with_line_breaks_are_refused(line):
    with pytest.raises(loadstate.InvalidArgument):
        loadstate.HttpRequest("http://x", headers=[line]).encode()


@pytest.mark.parametrize("request_", [
    loadstate.HttpRequest("http://x", "GET / HTTP/1.1\r\nInjected: b\r\n\r\nGET"),
    loadstate.HttpRequest("http://x", "G ET"),
    loadstate.HttpRequest("http://x/\r\nInjected: b"),
    loadstate.HttpRequest("http://x/ y"),
    loadstate.HttpRequest("http://x", headers=["no colon"]),
    loadstate.HttpRequest("http://x", headers=[("Bad Name", "v")]),
    loadstate.HttpRequest("http://x", headers=[("X", "a\x01b")]),
])
def test_http_methods_urls_and_headers_that_could_inject_lines_are_refused(request_):
    with pytest.raises(loadstate.InvalidArgument):
        request_.encode()
