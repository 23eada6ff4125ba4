"""Codecs: how Python values become the byte strings the library stores.

The library's values and requests are bytes. A cell or loader can be given
a codec so that Python code deals in ``str`` or JSON-able values instead:

>>> JSON.encode({"id": 7})
b'{"id":7}'
>>> JSON.decode(b'{"id":7}')
{'id': 7}

A request of ``None`` is always sent as no bytes at all, whatever the codec,
and an empty request decodes to ``None`` with every codec but :data:`BYTES`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Generic, TypeVar

__all__ = ["Codec", "BYTES", "TEXT", "JSON"]

T = TypeVar("T")


@dataclass(frozen=True)
class Codec(Generic[T]):
    """A pair of functions between Python values of type ``T`` and bytes.

    ``encode`` raises :class:`TypeError`, naming the types it accepts, for a
    value it cannot encode.

    Attributes:
        name: a short name for messages.
        encode: value -> bytes.
        decode: bytes -> value.
        decodes_views: ``decode`` also takes a ``memoryview`` and keeps no reference to it (it copies what
            it keeps), so a large value is decoded straight from the library's memory during the callback
            that delivers it, without a copy into ``bytes`` first.
    """

    name: str
    encode: Callable[[Any], bytes]
    decode: Callable[[bytes], T]
    decodes_views: bool = False

    def __repr__(self) -> str:
        return f"<Codec {self.name}>"


def _bytes_encode(value: Any) -> bytes:
    if value is None:
        return b""
    if isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"the bytes codec takes bytes, bytearray, memoryview or None, not {type(value).__name__}"
                    " (give the cell or loader codec=loadstate.TEXT or loadstate.JSON)")


def _identity(data: bytes) -> bytes:
    return data


def _text_encode(value: Any) -> bytes:
    if value is None:
        return b""
    if not isinstance(value, str):
        raise TypeError(f"the text codec takes str or None, not {type(value).__name__}")
    return value.encode("utf-8")


def _text_decode(data: bytes) -> str:
    return str(data, "utf-8")


def _json_encode(value: Any) -> bytes:
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except TypeError as exc:
        raise TypeError(f"the json codec takes what json.dumps accepts: {exc}") from None
    return text.encode("utf-8")


def _json_decode(data: bytes) -> Any:
    return json.loads(data) if data else None


#: Values are bytes (``bytearray`` and ``memoryview`` are accepted too); the default.
BYTES: Codec[bytes] = Codec("bytes", _bytes_encode, _identity)
#: Values are ``str``, stored as UTF-8.
TEXT: Codec[str] = Codec("text", _text_encode, _text_decode, decodes_views=True)
#: Values are anything :func:`json.dumps` accepts, stored as compact UTF-8 JSON.
JSON: Codec[Any] = Codec("json", _json_encode, _json_decode)


def encode_request(codec: Codec[Any], request: Any) -> bytes:
    """``request`` encoded with ``codec`` (``None``: no bytes); a value it cannot encode raises
    :class:`TypeError` naming the request. (Callers test the common case, bytes with :data:`BYTES`, first.)"""
    if request is None:
        return b""
    try:
        return codec.encode(request)
    except TypeError as exc:
        raise TypeError(f"request: {exc}") from None

