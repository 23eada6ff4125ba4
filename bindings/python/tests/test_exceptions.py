"""Failures raise the exceptions Python code already catches: OSError subclasses by errno, HTTPStatusError,
and HttpResponse reads its text and JSON by Content-Type's charset."""

from __future__ import annotations

import errno
import http.server
import json
import pickle
import socket
import threading

import pytest
from conftest import WAIT

import loadstate
from loadstate import Domain


class _Handler(http.server.BaseHTTPRequestHandler):
    PAGES = {
        "/latin": (200, "text/plain; charset=ISO-8859-1", "café".encode("latin-1")),
        "/utf8": (200, "text/plain", "naïve ✓".encode()),
        "/json": (200, "application/json", json.dumps({"name": "Zoë"}).encode()),
        "/json16": (200, "application/json; charset=utf-16", json.dumps({"a": 1}).encode("utf-16")),
        "/bad": (200, "text/plain; charset=utf-8", b"ok \xff"),
        "/missing": (404, "text/plain", b"no such page"),
        "/broken": (503, "text/plain", b"later"),
    }

    def do_GET(self):  # noqa: N802 - the stdlib's name
        status, content_type, body = self.PAGES[self.path]
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_refused_connection_is_a_connection_refused_error(rt):
    with pytest.raises(ConnectionRefusedError) as refused:
        rt.loadable(rt.http_loader(proxy="")).load(f"http://127.0.0.1:{_closed_port()}/").value(WAIT)
    error = refused.value
    assert isinstance(error, OSError) and isinstance(error, loadstate.LoadFailed)
    assert isinstance(error, loadstate.OSLoadFailed) and isinstance(error, loadstate.Error)
    assert (error.errno, error.strerror, error.domain) == (errno.ECONNREFUSED, "Connection refused", Domain.OS)
    assert "127.0.0.1" in error.message


def test_a_missing_file_or_program_is_a_file_not_found_error(rt, tmp_path):
    with pytest.raises(FileNotFoundError) as missing:
        rt.loadable(rt.file_loader()).load(tmp_path / "missing").value(WAIT)
    assert missing.value.errno == errno.ENOENT
    with pytest.raises(FileNotFoundError):
        rt.loadable(rt.exec_loader()).load(loadstate.ExecRequest([str(tmp_path / "no-such-program")])).value(WAIT)
    with pytest.raises(IsADirectoryError):
        rt.loadable(rt.file_loader()).load(tmp_path).value(WAIT)


def test_os_errors_are_chosen_as_python_chooses_them_and_pickle():
    for code, expected in ((errno.EACCES, PermissionError), (errno.EPERM, PermissionError),
                           (errno.ETIMEDOUT, TimeoutError), (errno.ECONNRESET, ConnectionResetError),
                           (errno.EPIPE, BrokenPipeError), (errno.EIO, OSError)):
        error = loadstate.errors.load_error(code, "message", Domain.OS)
        assert type(error).__mro__[1:3] == (loadstate.OSLoadFailed, loadstate.LoadFailed) or expected is OSError
        assert isinstance(error, expected) and isinstance(error, loadstate.LoadFailed)
        assert type(OSError(code, "x")) is expected
        again = pickle.loads(pickle.dumps(error))
        assert type(again) is type(error) and (again.errno, again.message) == (code, "message")
    assert type(loadstate.errors.load_error(errno.EIO, "m", Domain.OS)) is loadstate.OSLoadFailed


def test_statuses_outside_2xx_raise_http_status_error_with_the_response(rt, server):
    http = rt.http_loader(proxy="")
    with pytest.raises(loadstate.HTTPStatusError) as missing:
        rt.loadable(http).load(f"{server}/missing").value(WAIT)
    error = missing.value
    assert isinstance(error, loadstate.LoadFailed) and error.domain is Domain.HTTP
    assert (error.status, error.code, error.response.status, error.response.text) == (404, 404, 404, "no such page")
    with pytest.raises(loadstate.HTTPStatusError):
        loadstate.HttpResponse(503, [], b"").raise_for_status()


def test_text_and_json_follow_the_content_type_charset(rt, server):
    http = rt.http_loader(proxy="")

    def get(path):
        return rt.loadable(http).load(f"{server}{path}").value(WAIT)

    latin = get("/latin")
    assert (latin.encoding, latin.text) == ("iso8859-1", "café")
    utf8 = get("/utf8")
    assert (utf8.encoding, utf8.text) == (None, "naïve ✓")
    assert get("/json").json() == {"name": "Zoë"}
    assert get("/json16").json() == {"a": 1}
    assert get("/bad").text == "ok \ufffd"
    unknown = loadstate.HttpResponse(200, [("Content-Type", "text/plain; charset=x-no-such")], b"plain")
    assert (unknown.encoding, unknown.text) == (None, "plain")
