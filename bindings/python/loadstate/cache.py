"""Caches of the runtime: in memory, or persisted in an SQLite file.

Unlike cell operations, cache operations do their work on the calling
thread and return when it is done; they may be called from any thread,
including from callbacks.
"""

from __future__ import annotations

import os
import weakref
from ctypes import byref, c_uint64, sizeof, string_at
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional, Union

from ._library import CacheStatisticsC, CacheValueC, MemoryCacheOptionsC, PersistentCacheOptionsC
from .codec import Codec
from .types import _milliseconds

if TYPE_CHECKING:
    from .runtime import Runtime

__all__ = ["Cache", "CacheEntry", "CacheStats"]

CACHE_REPLACE_DAMAGED = 1 << 0

Key = Union[bytes, str]


@dataclass(frozen=True)
class CacheEntry:
    """An entry found by :meth:`Cache.get`.

    Attributes:
        value: the value, decoded with the cache's codec.
        stored_at_ms: wall-clock time (ms since the epoch) of the put that stored it.
        expires_at_ms: wall-clock time at which it expires; 0: never.
        stale: its key prefix was invalidated since that put.
    """

    value: Any
    stored_at_ms: int
    expires_at_ms: int
    stale: bool


@dataclass(frozen=True)
class CacheStats:
    """A cache's counters since it was opened, and what it holds now (``lds_cache_statistics``)."""

    hits: int
    misses: int
    evictions: int
    expirations: int
    entries: int
    bytes: int


def _key(key: Key) -> bytes:
    return key.encode("utf-8") if isinstance(key, str) else bytes(key)


def _free_cache(runtime_core: Any, cache_id: int) -> None:
    if not runtime_core.closed:
        runtime_core.dll.lds_cache_free(runtime_core.c_handle, cache_id)


class Cache:
    """A bounded key-value cache of a runtime; make one with :meth:`Runtime.memory_cache` or
    :meth:`Runtime.persistent_cache`.

    Keys are ``bytes`` or ``str`` (stored as UTF-8); values go through the
    cache's codec. When a put takes the cache over a bound, the least
    recently used entries are evicted. Close it with :meth:`close` (or
    ``with``); the runtime's close frees every cache still open.
    """

    def __init__(self, runtime: "Runtime", cache_id: c_uint64, codec: Codec) -> None:
        core = runtime._core
        self._runtime = runtime
        self._core = core
        #: The cache's id in its runtime.
        self.id: int = cache_id.value
        self._c_id = cache_id
        #: How values are encoded and decoded.
        self.codec = codec
        self._finalizer = weakref.finalize(self, _free_cache, core, self.id)
        self._finalizer.atexit = False

    @classmethod
    def _memory(cls, runtime: "Runtime", name: Optional[str], max_entries: int, max_bytes: int,
                ttl: Optional[float], codec: Codec) -> "Cache":
        options = MemoryCacheOptionsC(sizeof(MemoryCacheOptionsC), name.encode("utf-8") if name is not None else None,
                                      max_entries, max_bytes, _milliseconds("ttl", ttl))
        out = c_uint64()
        core = runtime._core
        core.check(core.dll.lds_memory_cache_new(core.c_handle, byref(options), byref(out)), "memory cache")
        return cls(runtime, out, codec)

    @classmethod
    def _persistent(cls, runtime: "Runtime", path: Union[str, "os.PathLike[str]"], max_bytes: int,
                    ttl: Optional[float], replace_damaged: bool, codec: Codec) -> "Cache":
        options = PersistentCacheOptionsC(sizeof(PersistentCacheOptionsC),
                                          CACHE_REPLACE_DAMAGED if replace_damaged else 0, os.fsencode(path),
                                          max_bytes, _milliseconds("ttl", ttl))
        out = c_uint64()
        core = runtime._core
        core.check(core.dll.lds_persistent_cache_new(core.c_handle, byref(options), byref(out)),
                   f"persistent cache {os.fspath(path)!r}")
        return cls(runtime, out, codec)

    def put(self, key: Key, value: Any) -> None:
        """Stores ``value`` under ``key`` (replacing any entry), then evicts to stay within the bounds."""
        data = self.codec.encode(value)
        raw = _key(key)
        self._core.check(self._core.dll.lds_cache_put(self._core.c_handle, self._c_id, raw, len(raw), data,
                                                      len(data)), "cache put")

    def get(self, key: Key) -> Optional[CacheEntry]:
        """The entry under ``key``, or ``None`` on a miss (an expired entry is dropped and missed)."""
        raw = _key(key)
        out = CacheValueC()
        rc = self._core.dll.lds_cache_get(self._core.c_handle, self._c_id, raw, len(raw), byref(out))
        self._core.check(rc, "cache get")
        if rc == 0:
            return None
        try:
            data = string_at(out.value, out.value_len) if out.value_len else b""
            return CacheEntry(self.codec.decode(data), out.stored_at_ms, out.expires_at_ms, bool(out.stale))
        finally:
            self._core.dll.lds_cache_value_clear(byref(out))

    def __getitem__(self, key: Key) -> Any:
        entry = self.get(key)
        if entry is None:
            raise KeyError(key)
        return entry.value

    def __setitem__(self, key: Key, value: Any) -> None:
        self.put(key, value)

    def __delitem__(self, key: Key) -> None:
        if not self.remove(key):
            raise KeyError(key)

    def __contains__(self, key: Key) -> bool:
        return self.get(key) is not None

    def remove(self, key: Key) -> bool:
        """Drops the entry under ``key``; returns whether there was one."""
        raw = _key(key)
        return self._core.check(self._core.dll.lds_cache_remove(self._core.c_handle, self._c_id, raw, len(raw)),
                                "cache remove") == 1

    def clear(self) -> None:
        """Drops every entry (the counters are kept)."""
        self._core.check(self._core.dll.lds_cache_clear(self._core.c_handle, self._c_id), "cache clear")

    def invalidate(self, prefix: Key = b"") -> None:
        """Marks the entries whose key begins with ``prefix`` (all by default) stale; every cell showing one
        of them (loaded through this cache, no load running) reloads it silently, flagged ``STALE`` and
        ``REFRESHING`` meanwhile."""
        raw = _key(prefix)
        self._core.check(self._core.dll.lds_cache_invalidate(self._core.c_handle, self._c_id, raw, len(raw)),
                         "cache invalidate")

    def stats(self) -> CacheStats:
        """The cache's counters and contents now."""
        out = CacheStatisticsC()
        self._core.check(self._core.dll.lds_cache_stats(self._core.c_handle, self._c_id, byref(out)), "cache stats")
        return CacheStats(out.hits, out.misses, out.evictions, out.expirations, out.entries, out.bytes)

    def close(self) -> None:
        """Frees the cache: a memory cache drops its entries, a persistent one closes its file."""
        if not self._finalizer.alive:
            return
        self._finalizer.detach()
        if not self._core.closed:
            rc = self._core.dll.lds_cache_free(self._core.c_handle, self._c_id)
            if rc < 0 and rc != -7:
                raise self._core.lib.error(rc, "cache close")

    def __enter__(self) -> "Cache":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<loadstate.Cache {self.id}>"
