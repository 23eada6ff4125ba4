"""Failed loads as the exceptions Python code already catches, and HttpResponse's text.

Real failures: a refused connection (a socket bound on 127.0.0.1 that does not listen), files
that are missing or are directories, programs that are missing or not executable, and an HTTP
server (the standard library's) answering 404 and bodies in several charsets.
"""

from __future__ import annotations

import copy
import errno
import http.server
import json
import os
import pickle
import socket

import pytest
from conftest import http_server, WAIT

import loadstate
from loadstate import Domain, Status
from loadstate.errors import LoadOSError, load_error, os_error_class


def _os_error_checks(error, number, builtin):
    assert isinstance(error, builtin) and isinstance(error, OSError)
    assert isinstance(error, loadstate.LoadFailed) and isinstance(error, loadstate.Error)
    assert isinstance(error, LoadOSError)
    assert error.domain == Domain.OS and error.code == number
    assert error.errno == number and error.strerror == os.strerror(number)
    # The class Python's own OSError picks for the errno.
    assert type(OSError(number, "")) is builtin


@pytest.fixture
def refusing_port():
    """A port on 127.0.0.1 bound but not listening: a connection to it is refused (ECONNREFUSED)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    yield sock.getsockname()[1]
    sock.close()


def test_a_refused_http_connection_is_a_connection_refused_error(rt, refusing_port):
    cell = rt.loadable(rt.http_loader(proxy=""))
    url = f"http://127.0.0.1:{refusing_port}/"
    with pytest.raises(ConnectionRefusedError) as caught:
        cell.load(url).value(WAIT)
    error = caught.value
    _os_error_checks(error, errno.ECONNREFUSED, ConnectionRefusedError)
    assert isinstance(error, ConnectionError)
    assert url in error.message
    assert type(error).__name__ == "LoadConnectionRefusedError"
    assert str(error).startswith("os error 111: ")
    # The event's error is the same class.
    state = cell.load(url).state(WAIT)
    assert type(state.error) is type(error)
    with pytest.raises(OSError):
        state.raise_for_error()


def test_a_missing_file_is_a_file_not_found_error(rt, tmp_path):
    missing = tmp_path / "missing.txt"
    cell = rt.loadable(rt.file_loader())
    with pytest.raises(FileNotFoundError) as caught:
        cell.load(missing).value(WAIT)
    _os_error_checks(caught.value, errno.ENOENT, FileNotFoundError)
    assert str(missing) in caught.value.message


def test_a_directory_read_as_a_file_is_an_is_a_directory_error(rt, tmp_path):
    with pytest.raises(IsADirectoryError) as caught:
        rt.loadable(rt.file_loader()).load(tmp_path).value(WAIT)
    _os_error_checks(caught.value, errno.EISDIR, IsADirectoryError)


def test_a_missing_program_is_a_file_not_found_error(rt):
    cell = rt.loadable(rt.exec_loader())
    with pytest.raises(FileNotFoundError) as caught:
        cell.load(["loadstate-no-such-program-here"]).value(WAIT)
    _os_error_checks(caught.value, errno.ENOENT, FileNotFoundError)


def test_a_program_that_is_not_executable_is_a_permission_error(rt, tmp_path):
    script = tmp_path / "script.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)  # no execute bit: execve refuses it with EACCES, also to root
    with pytest.raises(PermissionError) as caught:
        rt.loadable(rt.exec_loader()).load([str(script)]).value(WAIT)
    _os_error_checks(caught.value, errno.EACCES, PermissionError)


def test_a_non_zero_exit_stays_a_plain_load_failed(rt):
    with pytest.raises(loadstate.LoadFailed) as caught:
        rt.loadable(rt.exec_loader()).load(["sh", "-c", "exit 3"]).value(WAIT)
    assert type(caught.value) is loadstate.LoadFailed and not isinstance(caught.value, OSError)
    assert (caught.value.domain, caught.value.code) == (Domain.EXIT, 3)


@pytest.mark.parametrize("number", sorted(errno.errorcode))
def test_every_errno_gets_the_class_pythons_oserror_picks(number):
    error = load_error(number, "message", Domain.OS)
    builtin = type(OSError(number, ""))
    assert isinstance(error, builtin) and isinstance(error, LoadOSError)
    assert type(error) is os_error_class(number)  # one class per OSError subclass, made once
    assert error.errno == number and error.strerror == os.strerror(number)
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is type(error) and (again.errno, again.message, again.domain) == (number, "message", Domain.OS)
    assert type(copy.copy(error)) is type(error)


def test_etimedout_is_a_timeout_error_and_eperm_a_permission_error():
    assert issubclass(os_error_class(errno.ETIMEDOUT), TimeoutError)
    assert issubclass(os_error_class(errno.EPERM), PermissionError)
    assert issubclass(os_error_class(errno.EACCES), PermissionError)
    assert os_error_class(errno.EIO) is LoadOSError


class _Handler(http.server.BaseHTTPRequestHandler):
    # path -> (status, Content-Type or None, body)
    pages = {
        "/missing": (404, "text/plain; charset=utf-8", "no such page".encode()),
        "/latin1": (200, "text/plain; charset=ISO-8859-1", "café crème".encode("latin-1")),
        "/quoted": (200, 'text/html; charset="windows-1252"', "“quoted” €".encode("cp1252")),
        "/utf8-no-charset": (200, "text/plain", "naïve ☃".encode()),
        "/no-content-type": (200, None, "plain ☃".encode()),
        "/unknown-charset": (200, "text/plain; charset=x-no-such-charset", "ünknown".encode()),
        "/json": (200, "application/json", json.dumps({"name": "Zoë ☃"}, ensure_ascii=False).encode()),
        "/json-utf16": (200, "application/json; charset=utf-16", json.dumps({"name": "Zoë"}).encode("utf-16")),
        "/json-bom": (200, "application/json; charset=utf-8", b"\xef\xbb\xbf" + b'{"a": "\xc3\xa9"}'),
        "/json-latin1": (200, "application/json; charset=iso-8859-1", '{"a": "é"}'.encode("latin-1")),
    }

    def do_GET(self):  # noqa: N802 - the stdlib's name
        status, content_type, body = self.pages[self.path]
        self.send_response(status)
        if content_type is not None:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    with http_server(_Handler) as url:
        yield url


def test_a_404_is_an_http_status_error_with_the_response(rt, server):
    cell = rt.loadable(rt.http_loader(proxy=""))
    with pytest.raises(loadstate.HTTPStatusError) as caught:
        cell.load(f"{server}/missing").value(WAIT)
    error = caught.value
    assert isinstance(error, loadstate.LoadFailed) and not isinstance(error, OSError)
    assert (error.status, error.code, error.domain) == (404, 404, Domain.HTTP)
    assert error.response is error.value and error.response.status == 404
    assert error.response.text == "no such page"
    assert str(error).startswith("http error 404: HTTP 404")
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is loadstate.HTTPStatusError and again.response == error.response
    # The event's error and raise_for_status give the same class.
    state = cell.load(f"{server}/missing").state(WAIT)
    assert state.status == Status.ERROR and isinstance(state.error, loadstate.HTTPStatusError)
    with pytest.raises(loadstate.HTTPStatusError) as raised:
        state.value.raise_for_status()
    assert raised.value.status == 404 and raised.value.response is state.value
    assert loadstate.HttpResponse(200, [], b"").raise_for_status().status == 200


@pytest.mark.parametrize("path, encoding, text", [
    ("/latin1", "iso8859-1", "café crème"),
    ("/quoted", "cp1252", "“quoted” €"),
    ("/utf8-no-charset", None, "naïve ☃"),
    ("/no-content-type", None, "plain ☃"),
    ("/unknown-charset", None, "ünknown"),
    ("/json", None, '{"name": "Zoë ☃"}'),
])
def test_text_follows_the_content_type_charset_and_defaults_to_utf8(rt, server, path, encoding, text):
    response = rt.loadable(rt.http_loader(proxy="")).load(f"{server}{path}").value(WAIT)
    assert response.encoding == encoding
    assert response.text == text


@pytest.mark.parametrize("path, value", [
    ("/json", {"name": "Zoë ☃"}),
    ("/json-utf16", {"name": "Zoë"}),
    ("/json-bom", {"a": "é"}),
    ("/json-latin1", {"a": "é"}),
])
def test_json_follows_the_charset_and_defaults_to_utf8(rt, server, path, value):
    response = rt.loadable(rt.http_loader(proxy="")).load(f"{server}{path}").value(WAIT)
    assert response.json() == value


def test_text_replaces_what_its_charset_cannot_decode():
    response = loadstate.HttpResponse(200, [("Content-Type", "text/plain")], b"ok \xff\xfe end")
    assert response.text == "ok \ufffd\ufffd end"
    with pytest.raises(ValueError):
        loadstate.HttpResponse(200, [("Content-Type", "application/json")], b"{not json").json()
