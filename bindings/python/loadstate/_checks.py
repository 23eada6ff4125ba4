"""Checks of the arguments callers pass in, shared by every entry point of the package.

Each check returns the argument in the form the library takes, or raises
:class:`TypeError` naming the parameter and the types it accepts, or
:class:`~loadstate.InvalidArgument` (a :class:`ValueError`) naming the
parameter and the values it accepts. ``bool`` counts as neither a number
nor an int here: ``True`` given as a count or a duration is a mistake,
not 1.

They run where a call enters the package, never for each event.
"""

from __future__ import annotations

import enum
import math
import os
import threading
from typing import Any, Iterable, Optional, Tuple, Type, TypeVar, Union

from .enums import NAME_MAX, Code
from .errors import InvalidArgument

__all__ = ["U32_MAX", "U64_MAX", "I32_MIN", "I32_MAX", "invalid", "instance", "flag", "integer", "member", "bits",
           "sequence", "milliseconds", "seconds", "c_string", "path", "handle_name"]

#: The bounds of the header's integer types.
U32_MAX = 2**32 - 1
U64_MAX = 2**64 - 1
I32_MIN = -2**31
I32_MAX = 2**31 - 1

_BOUND_NAMES = {U32_MAX: "2**32 - 1", U64_MAX: "2**64 - 1", I32_MIN: "-2**31", I32_MAX: "2**31 - 1"}

E = TypeVar("E", bound=enum.IntEnum)


def _bound(value: int) -> str:
    """An integer bound as a message shows it: the integer types' bounds as powers of two."""
    return _BOUND_NAMES.get(value, str(value))


def _seconds(ms: int) -> str:
    """Milliseconds as a message shows them, in seconds: exact, without trailing zeros (``0.05``, ``60``)."""
    return f"{ms // 1000}.{ms % 1000:03d}".rstrip("0").rstrip(".")


def _type(value: Any) -> str:
    return type(value).__name__


def invalid(detail: str) -> InvalidArgument:
    """The :class:`~loadstate.InvalidArgument` (``LDS_EINVAL``) of an argument of the right type and a wrong value."""
    return InvalidArgument(int(Code.EINVAL), "invalid argument", detail)


def instance(name: str, value: Any, kind: Union[type, Tuple[type, ...]], wanted: str) -> Any:
    """``value`` when it is an instance of ``kind``; otherwise a :class:`TypeError` saying it must be ``wanted``
    (``"a loadstate.Limits"``, ``"a str or None"``)."""
    if not isinstance(value, kind):
        raise TypeError(f"{name} must be {wanted}, not {_type(value)}")
    return value


def flag(name: str, value: Any) -> bool:
    """A yes-or-no argument: ``True`` or ``False`` and nothing else (``"yes"``, 1 and ``None`` are refused)."""
    if value is True or value is False:
        return value
    raise TypeError(f"{name} must be a bool (True or False), not {_type(value)}")


def integer(name: str, value: Any, low: int = 0, high: Optional[int] = U32_MAX) -> int:
    """An integer argument from ``low`` to ``high`` (``None``: no upper bound), as a plain ``int``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {_type(value)}")
    number = int(value)  # an IntEnum member as a plain int
    if number < low or (high is not None and number > high):
        wanted = f"from {_bound(low)} to {_bound(high)}" if high is not None else f">= {_bound(low)}"
        raise invalid(f"{name} must be an int {wanted}, not {number!r}")
    return number


def member(name: str, value: Any, kind: Type[E]) -> E:
    """A member of the int enum ``kind``, given as a member or as its value."""
    if isinstance(value, kind):
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        names = ", ".join(m.name for m in kind)
        raise TypeError(f"{name} must be a loadstate.{kind.__name__} ({names}), not {_type(value)}")
    try:
        return kind(value)
    except ValueError:
        names = ", ".join(f"{kind.__name__}.{m.name} ({m.value})" for m in kind)
        raise invalid(f"{name} must be one of {names}, not {value!r}") from None


def bits(name: str, value: Any, kind: Type[enum.IntFlag]) -> int:
    """A set of the flags of ``kind``, or-ed together: an int with no bit ``kind`` does not name."""
    known = 0
    for flag_ in kind:
        known |= int(flag_)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be loadstate.{kind.__name__} flags (an int), not {_type(value)}")
    if value < 0 or value & ~known:
        names = " | ".join(f"{kind.__name__}.{m.name}" for m in kind if m.value)
        raise invalid(f"{name} must be flags of {names}, not {value!r}")
    return int(value)


def sequence(name: str, value: Any, wanted: str) -> Tuple[Any, ...]:
    """A list-like argument (any iterable but a string) as a tuple; otherwise a :class:`TypeError` saying it must
    be ``wanted``."""
    if isinstance(value, (str, bytes, bytearray)) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be {wanted}, not {_type(value)}")
    return tuple(value)


def _number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of seconds (int or float) or None, not {_type(value)}")
    return value


def milliseconds(name: str, value: Optional[float], limit: int = U32_MAX, least: int = 0) -> int:
    """A duration in seconds (``None``: 0) as whole milliseconds, at most ``limit``; a duration other than 0
    must be at least ``least`` ms (0 then stands for the library's default)."""
    if value is None:
        return 0
    seconds_ = _number(name, value)
    ms = -1 if isinstance(seconds_, float) and not math.isfinite(seconds_) else round(seconds_ * 1000)
    if ms < 0 or ms > limit or 0 < ms < least:
        zero = "0 or " if least else ""
        raise invalid(f"{name} must be {zero}a number of seconds from {_seconds(least)} to {_seconds(limit)}, "
                      f"not {value!r}")
    return ms


def seconds(name: str, value: Optional[float]) -> Optional[float]:
    """How long to wait, in seconds, or ``None`` for no limit."""
    if value is None:
        return None
    seconds_ = _number(name, value)
    if not 0 <= seconds_ <= threading.TIMEOUT_MAX:
        raise invalid(f"{name} must be a number of seconds from 0 to {threading.TIMEOUT_MAX} or None, not {value!r}")
    return float(seconds_)


def c_string(name: str, value: Any, none: bool = False) -> Optional[bytes]:
    """A string argument (``str`` or ``bytes``; ``None`` when ``none``) as the bytes of a C string: UTF-8,
    without NUL."""
    if isinstance(value, str):
        raw = value.encode("utf-8")
    elif isinstance(value, (bytes, bytearray)):
        raw = bytes(value)
    elif value is None and none:
        return None
    else:
        raise TypeError(f"{name} must be str or bytes{' or None' if none else ''}, not {_type(value)}")
    return _without_nul(name, raw)


def handle_name(value: Any) -> Optional[bytes]:
    """The ``name`` of a loader or cell (``str`` or ``None``) as the C string the library takes: ``None`` for
    no name (``""`` too); at most :data:`~loadstate.NAME_MAX` bytes of UTF-8, without control characters."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"name must be str or None, not {_type(value)}")
    if not value:
        return None
    try:
        raw = value.encode("utf-8")
    except UnicodeEncodeError:
        raise invalid(f"name must be text that UTF-8 encodes, not {value!r}") from None
    if len(raw) > NAME_MAX:
        raise invalid(f"name must be at most {NAME_MAX} bytes of UTF-8, not {len(raw)}")
    if any(ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f for c in value):
        raise invalid(f"name must hold no control character, not {value!r}")
    return raw


def path(name: str, value: Any, none: bool = False) -> Optional[bytes]:
    """A file path (``str``, ``bytes`` or ``os.PathLike``; ``None`` when ``none``) as the bytes of a C string."""
    if isinstance(value, (str, bytes, os.PathLike)):
        raw = os.fsencode(value)
    elif value is None and none:
        return None
    else:
        raise TypeError(f"{name} must be str, bytes or os.PathLike{' or None' if none else ''}, not {_type(value)}")
    return _without_nul(name, raw)


def _without_nul(name: str, raw: bytes) -> bytes:
    """``raw``, which a C string cannot hold if it has a NUL byte (then :class:`InvalidArgument`)."""
    if b"\0" in raw:
        raise invalid(f"{name} must not contain NUL")
    return raw
