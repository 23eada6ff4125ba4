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
from typing import Any, Callable

__all__ = ["Codec", "BYTES", "TEXT", "JSON"]


@dataclass(frozen=True)
class Codec:
    """A pair of functions between Python values and bytes.

    Attributes:
        name: a short name for messages.
        encode: value -> bytes.
        decode: bytes -> value.
    """

    name: str
    encode: Callable[[Any], bytes]
    decode: Callable[[bytes], Any]

    def __repr__(self) -> str:
        return f"<Codec {self.name}>"


def _bytes_encode(value: Any) -> bytes:
    if value is None:
        return b""
    if isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"the bytes codec needs bytes, bytearray or memoryview, not {type(value).__name__}"
                    " (give the cell or loader codec=loadstate.TEXT or loadstate.JSON)")


def _identity(data: bytes) -> bytes:
    return data


def _text_encode(value: Any) -> bytes:
    if value is None:
        return b""
    if not isinstance(value, str):
        raise TypeError(f"the text codec needs str, not {type(value).__name__}")
    return value.encode("utf-8")


def _text_decode(data: bytes) -> str:
    return data.decode("utf-8")


def _json_encode(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _json_decode(data: bytes) -> Any:
    return json.loads(data) if data else None


#: Values are bytes (``bytearray`` and ``memoryview`` are accepted too); the default.
BYTES = Codec("bytes", _bytes_encode, _identity)
#: Values are ``str``, stored as UTF-8.
TEXT = Codec("text", _text_encode, _text_decode)
#: Values are anything :func:`json.dumps` accepts, stored as compact UTF-8 JSON.
JSON = Codec("json", _json_encode, _json_decode)
