"""The library's built-in loaders (file, exec, http) and the codecs of their requests and values.

These loaders run on the runtime's own loop: no Python runs for their
jobs. A cell made with one of them picks up its codecs, so requests and
values are Python objects:

* file: the request is a path (``str``, ``bytes`` or path-like), the value bytes;
* exec: the request an :class:`ExecRequest` (or a list of arguments), the value bytes (stdout);
* http: the request an :class:`HttpRequest` (or a URL), the value an :class:`HttpResponse`.
"""

from __future__ import annotations

import codecs
import json
import os
import struct
from ctypes import byref, c_char_p, c_size_t, c_void_p, sizeof, string_at
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ._checks import U64_MAX, bits, instance, integer, milliseconds, path, sequence
from ._library import ExecRequestC, HttpRequestC, load_library
from .codec import Codec
from .enums import CacheVerdict, Domain, HttpFlags
from .errors import HTTPStatusError, InvalidArgument

__all__ = ["ExecRequest", "HttpRequest", "HttpResponse", "CacheControl", "PATH", "EXEC_REQUEST", "HTTP_REQUEST", "HTTP_RESPONSE",
           "HTTP_INSECURE", "HTTP_NO_REDIRECTS", "HTTP_NO_COMPRESSION", "HTTP_HTTP2", "HTTP_HTTP1", "HTTP_NO_HEURISTIC_FRESHNESS",
           "HTTP_NO_STALE_ON_DISCONNECT"]

#: Skip TLS certificate and host verification (the header's ``LDS_HTTP_INSECURE``).
HTTP_INSECURE = HttpFlags.INSECURE
#: Do not follow redirects (``LDS_HTTP_NO_REDIRECTS``).
HTTP_NO_REDIRECTS = HttpFlags.NO_REDIRECTS
#: Ask for no compressed response (``LDS_HTTP_NO_COMPRESSION``); by default every encoding libcurl
#: decodes is asked for and the body is decoded.
HTTP_NO_COMPRESSION = HttpFlags.NO_COMPRESSION
#: HTTP/2, multiplexed: ALPN over TLS, prior knowledge over plain http (``LDS_HTTP_HTTP2``).
HTTP_HTTP2 = HttpFlags.HTTP2
#: HTTP/1.1 only (``LDS_HTTP_HTTP1``).
HTTP_HTTP1 = HttpFlags.HTTP1
#: Give this request's responses no heuristic lifetime (``LDS_HTTP_NO_HEURISTIC_FRESHNESS``): by default
#: the cache keeps a response that has ``Last-Modified`` and no explicit freshness fresh for 10% of its age
#: when it arrived, at most 24 hours (RFC 9111 4.2.2); with this flag such a response is stale at once.
HTTP_NO_HEURISTIC_FRESHNESS = HttpFlags.NO_HEURISTIC_FRESHNESS
#: Serve no stale stored response when the server cannot be reached (``LDS_HTTP_NO_STALE_ON_DISCONNECT``): by
#: default a stale response stands in for a request whose server is unreachable or closes the connection
#: without an answer (RFC 9111 4.2.4), unless the response forbids it (``must-revalidate``, ``no-cache``).
HTTP_NO_STALE_ON_DISCONNECT = HttpFlags.NO_STALE_ON_DISCONNECT
#: Delta-seconds above this read as this (RFC 9111 1.2.2).
_DELTA_SECONDS_MAX = 2**31


def _text(value: Union[str, bytes, "os.PathLike[str]"]) -> bytes:
    return os.fsencode(value)


def _strings(items: Sequence[bytes]) -> Any:
    array = (c_char_p * (len(items) + 1))(*items, None)
    return array


def _library_call(encode: Any, request: Any) -> bytes:
    library = load_library()
    out = c_void_p()
    length = c_size_t()
    rc = encode(byref(request), byref(out), byref(length))
    if rc < 0:
        raise library.error(rc, "encoding the request")
    try:
        return string_at(out.value, length.value) if out.value and length.value else b""
    finally:
        library.dll.lds_free(out)


def _header_pair(item: Any, wanted: str) -> Tuple[Any, Any]:
    """A header given as a ``(name, value)`` pair, not yet checked to be strings."""
    if not isinstance(item, (tuple, list)) or len(item) != 2:
        raise TypeError(f"headers must be {wanted}, not a list holding {type(item).__name__}")
    return item[0], item[1]


def _pair(field: str, name: Any, value: Any) -> Tuple[str, str]:
    """A ``(name, value)`` pair of strings of ``field``: headers, or an environment."""
    if not isinstance(name, str) or not isinstance(value, str):
        raise TypeError(f"{field} must pair str names with str values, not {type(name).__name__} "
                        f"with {type(value).__name__}")
    return name, value


def _c_list(array: Any) -> Optional[List[bytes]]:
    """A NULL-terminated array of C strings the library wrote, as a list (``None`` for NULL)."""
    if not array:
        return None
    items: List[bytes] = []
    while array[len(items)] is not None:
        items.append(array[len(items)])
    return items


def _seconds_directive(name: str, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int (seconds) or None, not {type(value).__name__}")
    if value < 0:
        raise InvalidArgument(InvalidArgument.code, "invalid argument", f"{name} must be 0 or more seconds, not {value}")


@dataclass(frozen=True)
class CacheControl:
    """The request's own cache directives (RFC 9111 5.2.1), sent as its ``Cache-Control`` header and
    honoured by the http loader's cache.

    Attributes:
        max_age: take a stored response only while its age is at most this many seconds.
        max_stale: take a stale stored response too: ``True`` however stale, or up to this many
            seconds past its lifetime; ``None`` (or ``False``): only fresh ones.
        min_fresh: take a stored response only if it stays fresh for at least this many seconds more.
        no_cache: take no stored response without revalidating it with the server.
        no_store: store neither this request nor its response.
        only_if_cached: never reach the network: with no usable stored response the load fails with an
            :class:`~loadstate.HTTPStatusError` 504.

    Seconds are ints of 0 or more (:class:`TypeError` for another type, :class:`~loadstate.InvalidArgument`
    for a negative one). ``str()`` gives the header's value, directives in the order above
    (``"max-age=60, no-cache"``); no directive at all gives ``""`` (and the directives are false),
    and no header is sent.

    >>> str(CacheControl(max_age=60, max_stale=True))
    'max-age=60, max-stale'
    """

    max_age: Optional[int] = None
    max_stale: Union[None, bool, int] = None
    min_fresh: Optional[int] = None
    no_cache: bool = False
    no_store: bool = False
    only_if_cached: bool = False

    def __post_init__(self) -> None:
        _seconds_directive("max_age", self.max_age)
        _seconds_directive("min_fresh", self.min_fresh)
        if self.max_stale is False:
            object.__setattr__(self, "max_stale", None)
        elif self.max_stale is not True:
            _seconds_directive("max_stale", self.max_stale)
        for name in ("no_cache", "no_store", "only_if_cached"):
            instance(name, getattr(self, name), bool, "a bool")

    def __str__(self) -> str:
        parts = []
        if self.max_age is not None:
            parts.append(f"max-age={self.max_age}")
        if self.max_stale is True:
            parts.append("max-stale")
        elif self.max_stale is not None:
            parts.append(f"max-stale={self.max_stale}")
        if self.min_fresh is not None:
            parts.append(f"min-fresh={self.min_fresh}")
        parts += [name for name, on in (("no-cache", self.no_cache), ("no-store", self.no_store),
                                        ("only-if-cached", self.only_if_cached)) if on]
        return ", ".join(parts)

    def __bool__(self) -> bool:
        return bool(str(self))

    @classmethod
    def parse(cls, value: str) -> Optional["CacheControl"]:
        """The directives of a ``Cache-Control`` request header value, or ``None`` when it holds anything
        else (an unknown directive, a bad or repeated number, a quoted value): the value is then kept as
        it is, not rewritten. Names are read in any case, spaces around commas are skipped."""
        fields: Dict[str, Any] = {}
        for part in value.split(","):
            part = part.strip()
            if not part:
                continue
            name, equals, argument = part.partition("=")
            key = name.lower().replace("-", "_")
            if key in fields or name != name.strip():
                return None
            if key in ("max_age", "min_fresh", "max_stale") and equals:
                if not (argument.isascii() and argument.isdigit()):
                    return None
                fields[key] = min(int(argument), _DELTA_SECONDS_MAX)
            elif key in ("max_stale", "no_cache", "no_store", "only_if_cached") and not equals:
                fields[key] = True
            else:
                return None
        return cls(**fields)


@dataclass(frozen=True)
class ExecRequest:
    """A command for the exec loader.

    Attributes:
        argv: the program (searched in PATH) and its arguments (``str``, ``bytes`` or path-like).
        env: ``NAME=value`` strings (``str`` or ``bytes``), or a mapping of ``str`` to ``str``; ``None``
            inherits the environment.
        cwd: the working directory, or ``None``.

    The types are checked when the request is made (:class:`TypeError`; an empty ``argv`` is an
    :class:`~loadstate.InvalidArgument`).
    """

    argv: Sequence[Union[str, bytes]]
    env: Union[None, Sequence[Union[str, bytes]], Mapping[str, str]] = None
    cwd: Union[None, str, bytes, "os.PathLike[str]"] = None

    def __post_init__(self) -> None:
        argv = sequence("argv", self.argv, "a list of arguments (str, bytes or os.PathLike)")
        if not argv:
            raise InvalidArgument(InvalidArgument.code, "invalid argument",
                                  "argv must be a non-empty list of arguments")
        for argument in argv:
            path("argv", argument)
        env = self.env
        if isinstance(env, Mapping):
            for name, value in env.items():
                _pair("env", name, value)
        elif env is not None:
            for entry in sequence("env", env, "a mapping of str to str or a list of NAME=value strings, or None"):
                instance("env", entry, (str, bytes), "a list of NAME=value strings (str or bytes)")
        path("cwd", self.cwd, none=True)

    def encode(self) -> bytes:
        """The library's encoding ("LDX1") of the request."""
        argv = [_text(a) for a in self.argv]
        env = None
        if self.env is not None:
            pairs = self.env.items() if isinstance(self.env, Mapping) else None
            env = [_text(f"{k}={v}") for k, v in pairs] if pairs is not None else [_text(e) for e in self.env]
        keep = (_strings(argv), _strings(env) if env is not None else None)
        request = ExecRequestC(sizeof(ExecRequestC), keep[0], keep[1],
                               _text(self.cwd) if self.cwd is not None else None)
        return _library_call(load_library().dll.lds_exec_request_encode, request)

    @classmethod
    def decode(cls, data: bytes) -> "ExecRequest":
        """Reads an encoded exec request back (``lds_exec_request_decode``); bytes the exec loader would
        refuse raise :class:`~loadstate.InvalidArgument`."""
        library = load_library()
        raw = bytes(data)
        out = ExecRequestC()
        rc = library.dll.lds_exec_request_decode(raw, len(raw), byref(out))
        if rc < 0:
            raise library.error(rc, "decoding an exec request")
        try:
            argv = [os.fsdecode(a) for a in _c_list(out.argv) or []]
            env = _c_list(out.env)
            cwd = out.cwd
        finally:
            library.dll.lds_exec_request_clear(byref(out))
        return cls(argv, [os.fsdecode(e) for e in env] if env is not None else None,
                   os.fsdecode(cwd) if cwd is not None else None)


@dataclass(frozen=True)
class HttpRequest:
    """A request for the http loader.

    Attributes:
        url: an ``http://`` or ``https://`` URL.
        method: the method (``GET`` by default).
        headers: ``(name, value)`` pairs or ``"Name: value"`` lines.
        body: the body.
        timeout: seconds for the whole transfer (``None``: none; the load's timeout still applies).
        max_redirects: redirects to follow (0: the library's default of 5).
        max_body: the largest body accepted, decoded when compressed (0: :data:`loadstate.VALUE_MAX`).
        flags: :class:`~loadstate.enums.HttpFlags` (:data:`HTTP_INSECURE`, :data:`HTTP_NO_REDIRECTS`,
            :data:`HTTP_NO_COMPRESSION`, :data:`HTTP_HTTP2` or :data:`HTTP_HTTP1`,
            :data:`HTTP_NO_HEURISTIC_FRESHNESS`, :data:`HTTP_NO_STALE_ON_DISCONNECT`).
        ca_file: a file of PEM CA certificates to verify the server with instead of the system's
            (a self-signed server's own certificate); ``None``: the system's.
        cache_control: the request's cache directives, a :class:`CacheControl` or a ``Cache-Control``
            value (``str``), sent as the last header line ``Cache-Control: ...``. A string that
            :meth:`CacheControl.parse` reads is kept as that :class:`CacheControl`, another one as it is;
            an empty one, or a :class:`CacheControl` without directives, is ``None``. Giving both this and
            a ``Cache-Control`` line in ``headers`` is an :class:`~loadstate.InvalidArgument`: one
            request, one set of directives. :meth:`decode` reads a request's only ``Cache-Control``
            line back into this field when :meth:`CacheControl.parse` reads it, and leaves it in
            ``headers`` otherwise.

    The fields' types are checked when the request is made: a :class:`TypeError` names the field.
    ``headers`` are kept as a tuple (a mapping as its ``(name, value)`` pairs) and ``body`` as
    ``bytes`` (``None``: empty). :meth:`encode` raises :class:`loadstate.InvalidArgument` for a
    method that is not an HTTP token, a URL holding a control character or a space, and header
    lines that are not ``Name: value`` with a token name and a value free of control characters
    but tab.
    """

    url: str
    method: str = "GET"
    headers: Union[Sequence[Union[str, Tuple[str, str]]], Mapping[str, str]] = ()
    body: Optional[bytes] = b""
    timeout: Optional[float] = None
    max_redirects: int = 0
    max_body: int = 0
    flags: int = 0
    ca_file: Optional[Union[str, "os.PathLike[str]"]] = None
    cache_control: Union[None, CacheControl, str] = None

    def __post_init__(self) -> None:
        instance("url", self.url, str, "a str")
        instance("method", self.method, str, "a str")
        headers = self.headers
        wanted = "a list of (name, value) pairs or 'Name: value' strings, or a mapping of str to str"
        if isinstance(headers, Mapping):
            lines: Tuple[Union[str, Tuple[str, str]], ...] = tuple(
                _pair("headers", name, value) for name, value in headers.items())
        else:
            lines = tuple(line if isinstance(line, str) else _pair("headers", *_header_pair(line, wanted))
                          for line in sequence("headers", headers, wanted))
        body = self.body
        if body is None:
            body = b""
        elif isinstance(body, (bytearray, memoryview)):
            body = bytes(body)
        instance("body", body, bytes, "bytes or None")
        milliseconds("timeout", self.timeout)
        integer("max_redirects", self.max_redirects)
        integer("max_body", self.max_body, 0, U64_MAX)
        bits("flags", self.flags, HttpFlags)
        path("ca_file", self.ca_file, none=True)
        directives = instance("cache_control", self.cache_control, (CacheControl, str, type(None)),
                              "a loadstate.CacheControl, a str or None")
        if isinstance(directives, str):
            parsed = CacheControl.parse(directives)
            directives = parsed if parsed is not None else directives.strip()
        if directives is not None and not directives:
            directives = None
        if directives is not None and any(_is_cache_control(line) for line in lines):
            raise InvalidArgument(InvalidArgument.code, "invalid argument",
                                  "cache_control given and a Cache-Control line in headers: give one of them")
        object.__setattr__(self, "headers", lines)
        object.__setattr__(self, "body", body)
        object.__setattr__(self, "cache_control", directives)

    def encode(self) -> bytes:
        """The library's encoding ("LDH1") of the request."""
        lines = [(h if isinstance(h, str) else f"{h[0]}: {h[1]}").encode("utf-8") for h in self.headers]
        if self.cache_control is not None:
            lines.append(f"Cache-Control: {self.cache_control}".encode("utf-8"))
        headers = _strings(lines)
        body = self.body or b""
        request = HttpRequestC(sizeof(HttpRequestC), self.method.encode("utf-8"), self.url.encode("utf-8"),
                               headers, len(lines), body, len(body),
                               milliseconds("timeout", self.timeout), self.max_redirects, self.max_body, self.flags,
                               _text(self.ca_file) if self.ca_file is not None else None)
        return _library_call(load_library().dll.lds_http_request_encode, request)

    @classmethod
    def decode(cls, data: bytes) -> "HttpRequest":
        """Reads an encoded HTTP request back (``lds_http_request_decode``); bytes the http loader would
        refuse raise :class:`~loadstate.InvalidArgument`."""
        library = load_library()
        raw = bytes(data)
        out = HttpRequestC()
        rc = library.dll.lds_http_request_decode(raw, len(raw), byref(out))
        if rc < 0:
            raise library.error(rc, "decoding an HTTP request")
        try:
            method = (out.method or b"GET").decode("ascii")
            url = (out.url or b"").decode("utf-8")
            headers = tuple(out.headers[i].decode("utf-8") for i in range(out.header_count))
            # The field is a c_char_p, which stops at a NUL: the body is read from its pointer.
            body_at = c_void_p.from_buffer(out, HttpRequestC.body.offset).value
            body = string_at(body_at, out.body_len) if out.body_len and body_at is not None else b""
            timeout_ms, max_body, max_redirects, flags = out.timeout_ms, out.max_body, out.max_redirects, out.flags
            ca_file = os.fsdecode(out.ca_file) if out.ca_file is not None else None
        finally:
            library.dll.lds_http_request_clear(byref(out))
        cache_control = None
        found = [i for i, line in enumerate(headers) if _is_cache_control(line)]
        if len(found) == 1:
            cache_control = CacheControl.parse(headers[found[0]].partition(":")[2])
            if cache_control:  # an empty line ("Cache-Control:" removes the header) stays in headers
                headers = headers[:found[0]] + headers[found[0] + 1:]
        # max_redirects is the effective count: 0 comes with HTTP_NO_REDIRECTS in flags.
        # Made without __post_init__: the library's encoding holds fields of the right types.
        request: HttpRequest = object.__new__(cls)
        request.__dict__.update(url=url, method=method, headers=headers, body=body,
                                timeout=timeout_ms / 1000 if timeout_ms else None, max_redirects=max_redirects,
                                max_body=max_body, flags=flags, ca_file=ca_file,
                                cache_control=cache_control or None)
        return request


def _is_cache_control(line: Union[str, Tuple[str, str]]) -> bool:
    """Whether a header (a line or a pair) is a ``Cache-Control`` header."""
    name = line.partition(":")[0] if isinstance(line, str) else line[0]
    return name.strip().lower() == "cache-control"


class HttpResponse:
    """The value of an http job: an immutable value, compared by its three attributes.

    Attributes:
        status: the final response's status.
        headers: its header lines as ``(name, value)`` pairs, in order. A decoded response reads them from
            the raw lines on first use, so that a caller who looks only at the status and the body never
            pays for them.
        body: the body.
        encoding: the ``Content-Type`` charset, when Python knows it (else ``None``).
        text: the body decoded with ``encoding``, UTF-8 without one (see :attr:`text`).

    :meth:`json` decodes the body as JSON, :meth:`raise_for_status` raises an
    :class:`~loadstate.HTTPStatusError` for a status outside 2xx. :attr:`age` and :attr:`cache` say
    how old a response served by the http loader's cache is and why it was served.
    """

    __slots__ = ("_status", "_headers", "_lines", "_body")

    _status: int
    _headers: Optional[List[Tuple[str, str]]]
    _lines: bytes
    _body: bytes

    def __init__(self, status: int, headers: Optional[Sequence[Tuple[str, str]]] = None, body: bytes = b"") -> None:
        set_slot = object.__setattr__
        set_slot(self, "_status", status)
        set_slot(self, "_headers", list(headers) if headers is not None else [])
        set_slot(self, "_lines", b"")
        set_slot(self, "_body", body)

    @property
    def status(self) -> int:
        return self._status

    @property
    def headers(self) -> List[Tuple[str, str]]:
        headers = self._headers
        if headers is None:
            headers = []
            for line in self._lines.decode("latin-1").split("\r\n"):
                name, colon, value = line.partition(":")
                if colon:
                    headers.append((name.strip(), value.strip()))
            object.__setattr__(self, "_headers", headers)
        return headers

    @property
    def body(self) -> bytes:
        return self._body

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"HttpResponse is immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"HttpResponse is immutable: cannot delete {name!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HttpResponse):
            return NotImplemented
        return (self._status, self._body, self.headers) == (other._status, other._body, other.headers)

    __hash__ = None  # type: ignore[assignment]  # like a list of headers: mutable inside, so not hashable

    def __repr__(self) -> str:
        return f"HttpResponse(status={self._status!r}, headers={self.headers!r}, body={self._body!r})"

    def __reduce__(self) -> Tuple[Any, ...]:
        return (HttpResponse, (self._status, self.headers, self._body))

    def header(self, name: str) -> Optional[str]:
        """The first header called ``name`` (any case), or ``None``."""
        wanted = name.lower()
        return next((value for key, value in self.headers if key.lower() == wanted), None)

    def raise_for_status(self) -> "HttpResponse":
        """Returns the response when its status is 2xx; raises otherwise.

        Raises:
            HTTPStatusError: a :class:`~loadstate.LoadFailed` in :attr:`Domain.HTTP
                <loadstate.Domain.HTTP>`, with the status as ``code`` and ``status`` and this response
                as ``value`` and ``response`` (as a failed http load raises it).
        """
        if 200 <= self._status < 300:
            return self
        raise HTTPStatusError(self._status, f"HTTP {self._status}", Domain.HTTP, final=True, value=self)

    @property
    def age(self) -> Optional[int]:
        """The ``Age`` header in seconds (RFC 9111 5.1): the response's current age when the cache served
        it (the cache writes it then), or what an upstream cache sent. The first header's first member
        is read (``"7200, 0"`` is 7200); a value that is not digits, or no header, gives ``None``; values
        above 2**31 read as 2**31 (RFC 9111 1.2.2)."""
        value = self.header("Age")
        if value is None:
            return None
        first = value.split(",", 1)[0].strip(" \t")
        if not first or not (first.isascii() and first.isdigit()):
            return None
        return min(int(first), _DELTA_SECONDS_MAX)

    @property
    def cache(self) -> Optional[CacheVerdict]:
        """Why the http loader's cache served this response: a :class:`~loadstate.CacheVerdict`
        (``"fresh"``, ``"heuristic"``, ``"stale"``, ``"revalidated"``; a ``str`` enum), or ``None`` for a
        response loaded from the network and not from the cache.

        Read from the ``detail`` parameter of the ``loadstate`` member of the ``Cache-Status`` field
        (RFC 9211), which the cache adds (``Cache-Status: loadstate; hit; ttl=118; detail=fresh``).
        Members of other caches, on any ``Cache-Status`` line, are skipped; a member or ``detail`` that
        does not parse, or an unknown verdict, gives ``None``."""
        for name, value in self.headers:
            if name.lower() != "cache-status":
                continue
            for member, params in _structured_list(value):
                if member == "loadstate" and not isinstance(member, _Quoted):
                    detail = params.get("detail")
                    try:
                        return CacheVerdict(detail) if isinstance(detail, str) else None
                    except ValueError:
                        return None
        return None

    @property
    def encoding(self) -> Optional[str]:
        """The ``charset`` of the ``Content-Type`` header when it names a codec Python knows (its
        Python name, lower case: ``"iso8859-1"`` for ``ISO-8859-1``), else ``None`` (no header, no
        charset, or one Python does not know). :attr:`text` and :meth:`json` decode with it."""
        charset = _charset(self.header("Content-Type"))
        if charset is None:
            return None
        try:
            return codecs.lookup(charset).name
        except LookupError:
            return None

    @property
    def text(self) -> str:
        """The body as text, decoded with :attr:`encoding`; without one (no charset, or one Python
        does not know), as UTF-8, whatever the media type. UTF-8 is what JSON must be (RFC 8259)
        and what ``httpx`` assumes; ``requests`` assumes ISO-8859-1 for ``text/*`` without a
        charset (RFC 2616, dropped by RFC 7231), which this does not. Bytes the codec cannot
        decode become U+FFFD (``errors="replace"``), as ``requests`` and ``httpx`` do; a
        byte-order mark of UTF-8 is dropped when decoding as UTF-8."""
        encoding = self.encoding or "utf-8"
        if encoding == "utf-8" and self._body.startswith(codecs.BOM_UTF8):
            encoding = "utf-8-sig"
        return self._body.decode(encoding, errors="replace")

    def json(self) -> Any:
        """The body decoded as JSON: with the ``Content-Type`` charset when it names one Python
        knows (:attr:`encoding`); without it, as :func:`json.loads` reads bytes (UTF-8, the JSON
        default, or UTF-16 or -32, told apart by the first bytes; a UTF-8 byte-order mark is
        skipped).

        Raises:
            json.JSONDecodeError: the body is not JSON (a :class:`ValueError`).
            UnicodeDecodeError: the body is not text in its charset (a :class:`ValueError`).
        """
        encoding = self.encoding
        if encoding is None:
            return json.loads(self._body)
        if encoding == "utf-8" and self._body.startswith(codecs.BOM_UTF8):
            encoding = "utf-8-sig"
        return json.loads(self._body.decode(encoding))

    def encode(self) -> bytes:
        """The library's encoding ("LDR1"), as the http loader produces it."""
        lines = "".join(f"{k}: {v}\r\n" for k, v in self.headers).encode("latin-1")
        return b"LDR1" + struct.pack("<iI", self._status, len(lines)) + lines + self._body

    @classmethod
    def decode(cls, data: Union[bytes, memoryview]) -> "HttpResponse":
        """Decodes an http job's value ("LDR1", the status as an i32, the header lines as a u32 length and
        the lines, then the body to the end; see ``lds_http_response_decode``).

        The hot path of every http load: it reads the encoding in Python (a call into the library
        costs more than the parse), copies the body once, also from a ``memoryview``, and keeps the
        header lines as they came, to be split into pairs when :attr:`headers` is first read.

        Raises:
            InvalidArgument: ``data`` is not an encoded response.
        """
        if len(data) < _RESPONSE_HEAD.size or data[:4] != b"LDR1":
            raise InvalidArgument(InvalidArgument.code, "invalid argument", "not an encoded HTTP response")
        status, lines_len = _RESPONSE_HEAD.unpack_from(data)
        body_at = _RESPONSE_HEAD.size + lines_len
        if body_at > len(data):
            raise InvalidArgument(InvalidArgument.code, "invalid argument", "not an encoded HTTP response")
        response = object.__new__(cls)
        set_slot = object.__setattr__
        set_slot(response, "_status", status)
        set_slot(response, "_headers", None if lines_len else [])
        set_slot(response, "_lines", bytes(data[_RESPONSE_HEAD.size:body_at]))
        set_slot(response, "_body", bytes(data[body_at:]))
        return response


def _charset(content_type: Optional[str]) -> Optional[str]:
    """The ``charset`` parameter of a ``Content-Type`` value (quotes removed), or ``None``."""
    if not content_type:
        return None
    for parameter in content_type.split(";")[1:]:
        name, equals, value = parameter.partition("=")
        if equals and name.strip().lower() == "charset":
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] == '"':
                value = value[1:-1]
            return value.strip() or None
    return None


class _Quoted(str):
    """A structured field's quoted string, as opposed to a token of the same text."""


def _structured_list(value: str) -> List[Tuple[Any, Dict[str, Any]]]:
    """The members of a structured-field list (RFC 8941), read tolerantly: each a bare item (a token, an
    integer or a quoted string) and its ``;key=value`` parameters (a key alone is ``True``). Spaces are
    skipped anywhere between the parts; a member that does not parse is left out (as ``(None, {})``),
    the others are kept."""
    members: List[Tuple[Any, Dict[str, Any]]] = []
    at = 0
    end = len(value)

    def skip(at: int) -> int:
        while at < end and value[at] in " \t":
            at += 1
        return at

    def item(at: int) -> Tuple[Any, int]:
        """A bare item from ``at``, and where it ends; ``None`` for one that does not parse. A quoted
        string comes back as a :class:`_Quoted`, told apart from a token."""
        if at < end and value[at] == '"':
            text = []
            at += 1
            while at < end and value[at] != '"':
                if value[at] == "\\" and at + 1 < end:
                    at += 1
                text.append(value[at])
                at += 1
            return (_Quoted("".join(text)) if at < end else None), at + 1
        start = at
        while at < end and value[at] not in ";,= \t\"":
            at += 1
        raw = value[start:at]
        if raw.lstrip("-").isdigit() and raw.isascii():
            return int(raw), at
        return (raw or None), at

    while at < end:
        at = skip(at)
        bare, at = item(at)
        params: Dict[str, Any] = {}
        good = bare is not None
        at = skip(at)
        while at < end and value[at] == ";":
            at = skip(at + 1)
            key, at = item(at)
            at = skip(at)
            param: Any = True
            if at < end and value[at] == "=":
                param, at = item(skip(at + 1))
                at = skip(at)
            if isinstance(key, str) and key not in params:
                params[key] = param
        if at < end and value[at] != ",":
            good = False
            while at < end and value[at] != ",":  # skip what does not parse up to the next member
                if value[at] == '"':
                    at = item(at)[1]
                else:
                    at += 1
        members.append((bare, params) if good else (None, {}))
        at += 1
    return members


# After the "LDR1" magic: the status and the length of the header lines.
_RESPONSE_HEAD = struct.Struct("<4xiI")


def _path_encode(value: Any) -> bytes:
    if value is None:
        return b""
    if not isinstance(value, (str, bytes, os.PathLike)):
        raise TypeError(f"the file loader takes a path (str, bytes or os.PathLike), not {type(value).__name__}")
    return _text(value)


def _exec_encode(value: Any) -> bytes:
    if value is None:
        return b""
    if isinstance(value, ExecRequest):
        return value.encode()
    if isinstance(value, (list, tuple)) and all(isinstance(a, (str, bytes, os.PathLike)) for a in value):
        return ExecRequest(list(value)).encode()
    raise TypeError("the exec loader takes an ExecRequest or a list of arguments (str, bytes or os.PathLike), "
                    f"not {type(value).__name__}")


# The encodings of the URLs loaded last, so that loading a URL again costs no call into the library.
_URL_ENCODINGS: Dict[str, bytes] = {}
_URL_ENCODINGS_MAX = 1024


def _http_encode(value: Any) -> bytes:
    if value is None:
        return b""
    if isinstance(value, str):
        encoded = _URL_ENCODINGS.get(value)
        if encoded is None:
            encoded = HttpRequest(value).encode()
            if len(_URL_ENCODINGS) >= _URL_ENCODINGS_MAX:
                _URL_ENCODINGS.clear()
            _URL_ENCODINGS[value] = encoded
        return encoded
    if isinstance(value, HttpRequest):
        return value.encode()
    raise TypeError(f"the http loader takes an HttpRequest or a URL (str), not {type(value).__name__}")


def _response_encode(value: Any) -> bytes:
    if isinstance(value, HttpResponse):
        return value.encode()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError("the http response codec takes an HttpResponse or its encoding (bytes), "
                    f"not {type(value).__name__}")


#: Requests of the file loader: a path (``str``, ``bytes`` or path-like); decoded as ``str``.
PATH: Codec[str] = Codec("path", _path_encode, os.fsdecode)
#: Requests of the exec loader: an :class:`ExecRequest` or a list of arguments.
EXEC_REQUEST: Codec[ExecRequest] = Codec("exec request", _exec_encode, ExecRequest.decode)
#: Requests of the http loader: an :class:`HttpRequest` or a URL.
HTTP_REQUEST: Codec[HttpRequest] = Codec("http request", _http_encode, HttpRequest.decode)
#: Values of the http loader: :class:`HttpResponse`.
HTTP_RESPONSE: Codec[HttpResponse] = Codec("http response", _response_encode, HttpResponse.decode, decodes_views=True)
