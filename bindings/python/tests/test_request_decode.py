"""lds_exec_request_decode and lds_http_request_decode through ctypes: what the Python encoders write, the
library reads back."""

from __future__ import annotations

from ctypes import byref, c_void_p, string_at
from typing import List, Optional

import pytest

import loadstate
from loadstate import _library
from loadstate.enums import HttpFlags


def _list(array) -> Optional[List[bytes]]:
    """A NULL-terminated C string array as a list (None for NULL)."""
    if not array:
        return None
    items = []
    i = 0
    while array[i] is not None:
        items.append(array[i])
        i += 1
    return items


def test_exec_request_round_trip_through_the_library_decoder():
    dll = loadstate.load_library().dll
    for request in [loadstate.ExecRequest(["true"]),
                    loadstate.ExecRequest(["printf", "", "caf\u00e9"], env=["A=1", "EMPTY="], cwd="/tmp"),
                    loadstate.ExecRequest(["x"], env=[], cwd="")]:
        data = request.encode()
        out = _library.ExecRequestC()
        assert dll.lds_exec_request_decode(data, len(data), byref(out)) == 0
        try:
            assert [a.decode() for a in _list(out.argv)] == list(request.argv)
            env = _list(out.env)
            assert (None if env is None else [e.decode() for e in env]) == request.env
            assert (None if out.cwd is None else out.cwd.decode()) == request.cwd
        finally:
            dll.lds_exec_request_clear(byref(out))
        assert not out.argv


def test_http_request_round_trip_through_the_library_decoder():
    dll = loadstate.load_library().dll
    request = loadstate.HttpRequest("https://example.invalid/a?b=c", method="PUT",
                                    headers=["Accept: text/plain", ("X-A", "1")], body=b"a\0b",
                                    timeout=2.5, max_redirects=3, max_body=1 << 40,
                                    flags=HttpFlags.INSECURE | HttpFlags.HTTP1, ca_file="/ca.pem")
    data = request.encode()
    out = _library.HttpRequestC()
    assert dll.lds_http_request_decode(data, len(data), byref(out)) == 0
    try:
        assert out.method == b"PUT" and out.url == b"https://example.invalid/a?b=c"
        assert [out.headers[i] for i in range(out.header_count)] == [b"Accept: text/plain", b"X-A: 1"]
        # The field is a c_char_p, which stops at the first NUL: read the pointer itself.
        body = c_void_p.from_buffer(out, _library.HttpRequestC.body.offset).value
        assert string_at(body, out.body_len) == b"a\0b"
        assert (out.timeout_ms, out.max_redirects, out.max_body) == (2500, 3, 1 << 40)
        assert out.flags == int(HttpFlags.INSECURE | HttpFlags.HTTP1)
        assert out.ca_file == b"/ca.pem"
    finally:
        dll.lds_http_request_clear(byref(out))
    assert not out.headers


@pytest.mark.parametrize("name", ["lds_exec_request_decode", "lds_http_request_decode"])
def test_every_truncation_is_refused(name):
    dll = loadstate.load_library().dll
    if name == "lds_exec_request_decode":
        data, out = loadstate.ExecRequest(["sh", "-c", "x"], env=["A=b"], cwd="/").encode(), _library.ExecRequestC()
    else:
        data, out = loadstate.HttpRequest("http://h/", headers=["A: b"], body=b"x").encode(), _library.HttpRequestC()
    for n in range(len(data)):
        assert getattr(dll, name)(data[:n], n, byref(out)) == -1, n  # LDS_EINVAL


def test_the_request_classes_decode_through_the_library():
    exec_bytes = loadstate.ExecRequest(["sh", "-c", "x"], env=["A=b"], cwd="/").encode()
    assert loadstate.ExecRequest.decode(memoryview(exec_bytes)) == loadstate.ExecRequest(["sh", "-c", "x"], ["A=b"], "/")
    with pytest.raises(loadstate.InvalidArgument):
        loadstate.ExecRequest.decode(exec_bytes[:-1])
    http_bytes = loadstate.HttpRequest("http://h/", headers=["A: b"], body=b"x\0y").encode()
    assert loadstate.HttpRequest.decode(http_bytes).body == b"x\0y"
    with pytest.raises(loadstate.InvalidArgument):
        loadstate.HttpRequest.decode(http_bytes[:-1])
    # A header line with CR LF, written by hand: the library refuses it as the http loader does.
    line = b"A: b\r\nC: d"
    crafted = (b"LDH1" + b"\3\0\0\0GET" + b"\x09\0\0\0http://h/" + b"\1\0\0\0" + bytes([len(line), 0, 0, 0]) + line
               + b"\0\0\0\0" + bytes(4) + bytes(8) + b"\5\0\0\0" + bytes(4))
    with pytest.raises(loadstate.InvalidArgument):
        loadstate.HttpRequest.decode(crafted)
    assert loadstate.HttpRequest.decode(crafted.replace(b"\r\n", b", ")).headers == ("A: b, C: d",)
