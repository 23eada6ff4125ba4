"""Caches of the runtime: in memory, or persisted in an SQLite file (a Redis cache, in
:mod:`loadstate.redis_cache`, is one of them too).

Unlike cell operations, cache operations do their work on the calling
thread and return when it is done; they may be called from any thread,
including from callbacks (a Redis cache's, which wait for the loop, not from
callbacks of a ``Delivery.LOOP`` runtime).
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import ItemsView, MutableMapping, ValuesView
from ctypes import byref, c_char, c_char_p, c_int, c_size_t, c_uint64, sizeof, string_at
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, Generic, Iterable, Iterator, List, Optional, Tuple, TypeVar, Union, overload

from ._checks import U64_MAX, c_string, flag, instance, integer, milliseconds, path as path_bytes
from ._library import CacheKeyListC, CacheStatisticsC, CacheValueC, MemoryCacheOptionsC, PersistentCacheOptionsC
from .codec import BYTES, Codec
from .enums import CACHE_GET_MANY_MAX, VALUE_MAX, CacheFlags, Code
from .errors import Error

if TYPE_CHECKING:
    from .runtime import Runtime

__all__ = ["Cache", "CacheEntry", "CacheStats"]

Key = Union[bytes, str]
V = TypeVar("V")
D = TypeVar("D")


@dataclass(frozen=True)
class CacheEntry(Generic[V]):
    """An entry found by :meth:`Cache.entry`.

    Attributes:
        value: the value, decoded with the cache's codec.
        stored_at_ms: wall-clock time (ms since the epoch) of the put that stored it.
        expires_at_ms: wall-clock time at which it expires; 0: never.
        stale: its key prefix was invalidated since that put.
    """

    value: V
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


# No entry under a key.
_MISSING: Any = object()

# The bytes of each cache's read buffer: values up to this size are read with one call into the library.
_READ_BUFFER = 16 * 1024

# The largest value a memory cache's put copies without releasing the GIL.
_PUT_HOLDING_GIL_MAX = 64 * 1024


def _key(key: Key, name: str = "key") -> bytes:
    if isinstance(key, str):
        return key.encode("utf-8")
    if isinstance(key, (bytes, bytearray, memoryview)):
        return bytes(key)
    raise TypeError(f"{name} must be bytes or str, not {type(key).__name__}")


def _reader(raises: bool) -> Callable[["Cache[Any]", Key], Any]:
    """A read of a memory or persistent cache, written once for ``cache[key]`` (``raises``: a miss raises
    :class:`KeyError`) and for :meth:`Cache.get` (a miss returns ``_MISSING``): the value under ``key``,
    decoded.

    One call into the library (``lds_cache_read``, without argument conversion: see ``_raw_cache_calls``)
    copies the value into the cache's buffer, and one slice copies it from there into ``bytes``. Both happen
    under the cache's ``_lock``, since another thread may run between them. A value larger than the buffer
    is read again into one of its size."""

    def read(self: "Cache[Any]", key: Key) -> Any:
        # The hot path of every read, in one frame for cache[key]: a Python call and ctypes' conversion of
        # each argument cost per read about as much as the library's work, so the key is taken as it is when
        # it is str or bytes and lds_cache_read is called without argument conversion. Its parameters are
        # exactly (self, key): CPython 3.11 and later then run a __getitem__ in the frame of the subscript
        # (BINARY_SUBSCR_GETITEM), which a default parameter would prevent. Measured on a memory cache, one
        # key read over and over (best of 41): 1.38 us a read through __getitem__ -> _lookup, 1.37 in one
        # function with a default parameter, 1.33 here; 100,000 keys read in random order take 2.1 us a read,
        # where the difference is within the noise.
        if key.__class__ is str:
            raw = key.encode("utf-8")
        elif key.__class__ is bytes:
            raw = key
        else:
            raw = _key(key)
        size = len(raw)
        if size > VALUE_MAX:
            raise self._error(Code.ETOOBIG, "cache get")
        buffer: Any = self._buffer  # a c_char array: a slice of it is bytes
        with self._lock:
            rc = self._read_value(self._c_handle, self._c_id, raw, size, buffer, _READ_BUFFER, self._length_ref)
            if rc != 1:
                if rc != 0:
                    raise self._error(rc, "cache get")
                if raises:
                    raise KeyError(key)
                return _MISSING
            length = self._length.value
            data = buffer[:length] if length <= _READ_BUFFER else self._read_large(raw, length)
        if data is None:
            if raises:
                raise KeyError(key)
            return _MISSING
        codec = self.codec
        return data if codec is BYTES else codec.decode(data)

    read.__name__ = "__getitem__" if raises else "_get"
    read.__qualname__ = f"Cache.{read.__name__}"
    read.__doc__ = ("The value under ``key``; :class:`KeyError` on a miss (an expired entry is dropped and missed)."
                    if raises else "The value under ``key``, or ``_MISSING`` on a miss.")
    return read


def _free_cache(runtime_core: Any, cache_id: int) -> None:
    if not runtime_core.closed:
        runtime_core.dll.lds_cache_free(runtime_core.c_handle, cache_id)


class Cache(MutableMapping[Key, V]):
    """A bounded key-value cache of a runtime, of values ``V``; make one with
    :meth:`Runtime.memory_cache`, :meth:`Runtime.persistent_cache` or
    :meth:`Runtime.redis_cache` (a :class:`~loadstate.RedisCache`).

    A mutable mapping: ``cache[key] = value``, ``cache[key]``, ``del cache[key]``,
    ``key in cache``, ``len(cache)``, ``iter(cache)``, ``cache.get(key, default)``,
    ``cache.pop(key)``, ``cache.items()``, ``cache.setdefault(...)``,
    ``cache.update(...)``. Keys are given as ``bytes`` or ``str`` (a ``str``
    is stored as its UTF-8 bytes) and are listed as ``bytes``; values go
    through the cache's codec. When a put takes the cache over a bound, the
    least recently used entries are evicted, and an expired entry counts as
    missing. Close it with :meth:`close` (or ``with``); the runtime's close
    frees every cache still open.

    Iterating lists the keys of a snapshot taken when it begins
    (:meth:`keys_with_prefix`): a memory cache from the most to the least
    recently used, a persistent cache in byte order. Changing the cache
    while iterating is allowed; ``items()`` and ``values()`` skip an entry
    removed meanwhile. ``len()``, ``bool()`` and iteration agree: all three
    count only live entries (see :meth:`__len__` for what counting costs).

    ``cache == other`` is mapping equality, as :class:`~collections.abc.Mapping`
    defines it: ``other`` is a mapping with the same keys (``bytes``, as the
    cache lists them: a ``dict`` with ``str`` keys is not equal) and equal
    values. It reads every entry, each a get (counted, and made the most
    recently used); an empty cache equals ``{}``. Like every mutable mapping,
    a cache is not hashable.
    """

    def __init__(self, runtime: "Runtime", cache_id: c_uint64, codec: Codec[V], memory: bool = True,
                 expires: bool = True) -> None:
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
        # Whether an entry may expire: when none can, the cache's count of its
        # entries (lds_cache_stats) is the count of its live ones.
        self._expires = expires
        # Reads and puts call the library without ctypes' argument conversion
        # (see _raw_cache_calls in _library). A memory cache's calls never
        # wait, so they keep the GIL (cheaper); a persistent or Redis cache's
        # release it while SQLite works or Redis answers. Reads (see _reader)
        # go through a buffer for the value and one for its length, used under
        # the lock from the call until the value is copied out.
        lib = core.lib
        self._read_value = lib._raw_read_holding_gil if memory else lib._raw_read
        self._put_value = lib._raw_put_holding_gil if memory else lib._raw_put
        self._put_large = lib._raw_put  # a large value's copy lets other threads run meanwhile
        self._c_handle = core.c_handle
        self._buffer = (c_char * _READ_BUFFER)()
        self._length = c_size_t()
        self._length_ref = byref(self._length)
        self._lock = threading.Lock()

    @classmethod
    def _memory(cls, runtime: "Runtime", name: Optional[str], max_entries: int, max_bytes: int,
                ttl: Optional[float], codec: Codec[V], unobserved: Optional[float] = None) -> "Cache[V]":
        options = MemoryCacheOptionsC(sizeof(MemoryCacheOptionsC), c_string("name", name, none=True),
                                      integer("max_entries", max_entries, 0, U64_MAX),
                                      integer("max_bytes", max_bytes, 0, U64_MAX), milliseconds("ttl", ttl, U64_MAX),
                                      milliseconds("unobserved", unobserved, U64_MAX))
        instance("codec", codec, Codec, "a loadstate.Codec")
        out = c_uint64()
        core = runtime._core
        core.check(core.dll.lds_memory_cache_new(core.c_handle, byref(options), byref(out)), "memory cache")
        # Every entry of a memory cache gets the cache's time to live: without one (and without a grace for
        # unobserved entries), none expires.
        return cls(runtime, out, codec, memory=True, expires=options.ttl_ms != 0 or options.unobserved_ms != 0)

    @classmethod
    def _persistent(cls, runtime: "Runtime", path: Union[str, "os.PathLike[str]"], max_bytes: int,
                    ttl: Optional[float], replace_damaged: bool, codec: Codec[V]) -> "Cache[V]":
        options = PersistentCacheOptionsC(sizeof(PersistentCacheOptionsC),
                                          CacheFlags.REPLACE_DAMAGED if flag("replace_damaged", replace_damaged) else 0,
                                          path_bytes("path", path), integer("max_bytes", max_bytes, 0, U64_MAX),
                                          milliseconds("ttl", ttl, U64_MAX))
        instance("codec", codec, Codec, "a loadstate.Codec")
        out = c_uint64()
        core = runtime._core
        core.check(core.dll.lds_persistent_cache_new(core.c_handle, byref(options), byref(out)),
                   f"persistent cache {os.fspath(path)!r}")
        # Entries stored in the file with another time to live (by an earlier opening) may expire, whatever
        # this opening's ttl.
        return cls(runtime, out, codec, memory=False, expires=True)

    def _error(self, rc: int, detail: str) -> Error:
        """The exception for the return code ``rc`` of a call on this cache."""
        return self._core.lib.error(rc, detail)

    def _check(self, rc: int, detail: str) -> int:
        """``rc`` when it is not an error; raises :meth:`_error` otherwise."""
        if rc < 0:
            raise self._error(rc, detail)
        return rc

    def put(self, key: Key, value: V) -> None:
        """Stores ``value`` under ``key`` (replacing any entry), then evicts to stay within the bounds.

        ``cache[key] = value`` is this very function."""
        # The hot path of every write, in one frame: a Python call and ctypes' conversion of each argument
        # cost per put about as much as the library's work. So a str or bytes key is taken as it is, a bytes
        # value skips the BYTES codec, and lds_cache_put is called without argument conversion (see
        # _raw_cache_calls). Measured, 100,000 puts of 32-byte values to a memory cache in random order
        # (median of 31): 2.04 us a put through __setitem__ -> put -> _key -> codec.encode, 1.85 us in this
        # one function (bytes keys: 2.26 and 1.74 us).
        if key.__class__ is str:
            raw = key.encode("utf-8")
        elif key.__class__ is bytes:
            raw = key
        else:
            raw = _key(key)
        codec = self.codec
        if value.__class__ is bytes and codec is BYTES:
            data: bytes = value  # type: ignore[assignment]
        else:
            try:
                data = codec.encode(value)
            except TypeError as exc:
                raise TypeError(f"value: {exc}") from None
            if data.__class__ is not bytes:
                data = bytes(data)
        size = len(data)
        if size > VALUE_MAX or len(raw) > VALUE_MAX:
            raise self._error(Code.ETOOBIG, "cache put")
        put = self._put_value if size <= _PUT_HOLDING_GIL_MAX else self._put_large
        rc = put(self._c_handle, self._c_id, raw, len(raw), data, size)
        if rc < 0:
            raise self._error(rc, "cache put")

    __setitem__ = put

    @overload
    def get(self, key: Key) -> Optional[V]: ...

    @overload
    def get(self, key: Key, default: D) -> Union[V, D]: ...

    def get(self, key: Key, default: Any = None) -> Any:
        """The value under ``key``, or ``default`` on a miss (an expired entry is dropped and missed)."""
        value = self._get(key)
        return default if value is _MISSING else value

    if TYPE_CHECKING:
        def __getitem__(self, key: Key) -> V:
            """The value under ``key``; :class:`KeyError` on a miss."""

        def _get(self, key: Key) -> Any:
            """The value under ``key``, or ``_MISSING`` on a miss."""
    else:
        __getitem__ = _reader(raises=True)
        _get = _reader(raises=False)

    def _read_large(self, raw: bytes, length: int) -> Optional[bytes]:
        """A value larger than the cache's buffer: read again into one of its size (again if the entry grew
        meanwhile)."""
        while True:
            buffer: Any = (c_char * length)()
            rc = self._read_value(self._c_handle, self._c_id, raw, len(raw), buffer, length, self._length_ref)
            if rc == 0:
                return None
            if rc != 1:
                raise self._error(rc, "cache get")
            if self._length.value <= length:
                data: bytes = buffer[:self._length.value]
                return data
            length = self._length.value

    def get_many(self, keys: Iterable[Key]) -> Dict[Key, V]:
        """The values under ``keys``, looked up together (``lds_cache_get_many``, one call per
        :data:`~loadstate.CACHE_GET_MANY_MAX` keys): a dict that has the keys found, as they were given,
        each with its value; a missing key is left out. Each key counts as a get (a hit becomes the most
        recently used, an expired entry is dropped). A memory or persistent cache looks a batch up under one
        lock; a Redis cache sends a batch's ``GET`` commands in one pipeline and waits once for the replies (its
        front tier answers what it holds).

        Raises the error of the whole call (:class:`~loadstate.NotFound` for a closed cache,
        :class:`~loadstate.WrongState` for a Redis cache on the loop thread, ...), and otherwise, once the
        batch is done, the error of the first key that failed: :class:`~loadstate.TooBig` (a key over
        :data:`~loadstate.VALUE_MAX`), :class:`~loadstate.RedisError` (Redis could not answer for it)."""
        given = list(keys)
        found: Dict[Key, V] = {}
        for start in range(0, len(given), CACHE_GET_MANY_MAX):
            self._get_batch(given[start:start + CACHE_GET_MANY_MAX], found)
        return found

    def _get_batch(self, keys: List[Key], found: Dict[Key, V]) -> None:
        """One ``lds_cache_get_many`` of at most ``CACHE_GET_MANY_MAX`` keys, its hits put in ``found``."""
        raws = [_key(key) for key in keys]
        count = len(raws)
        out = (CacheValueC * count)()
        results = (c_int * count)()
        rc = self._core.dll.lds_cache_get_many(self._core.c_handle, self._c_id, count, (c_char_p * count)(*raws),
                                               (c_size_t * count)(*map(len, raws)), out, results)
        self._check(rc, "cache get many")
        failure: Optional[Error] = None
        try:
            for i, result in enumerate(results):
                if result == 1:
                    data = string_at(out[i].value, out[i].value_len) if out[i].value_len else b""
                    found[keys[i]] = self.codec.decode(data)
                elif result < 0 and failure is None:
                    failure = self._error(result, f"cache get many: key {i}")
        finally:
            for i, result in enumerate(results):
                if result == 1:
                    self._core.dll.lds_cache_value_clear(byref(out[i]))
        if failure is not None:
            raise failure

    def entry(self, key: Key) -> Optional[CacheEntry[V]]:
        """The entry under ``key`` with its times and staleness, or ``None`` on a miss."""
        raw = _key(key)
        out = CacheValueC()
        rc = self._core.dll.lds_cache_get(self._core.c_handle, self._c_id, raw, len(raw), byref(out))
        self._check(rc, "cache get")
        if rc == 0:
            return None
        try:
            data = string_at(out.value, out.value_len) if out.value_len else b""
            return CacheEntry(self.codec.decode(data), out.stored_at_ms, out.expires_at_ms, bool(out.stale))
        finally:
            self._core.dll.lds_cache_value_clear(byref(out))

    def __delitem__(self, key: Key) -> None:
        if not self.remove(key):
            raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        """Whether a live entry is under ``key``: a get (counted, and a hit becomes the most recently used)
        that copies no value out."""
        if not isinstance(key, (bytes, str, bytearray, memoryview)):
            return False
        raw = _key(key)  # type: ignore[arg-type]
        if len(raw) > VALUE_MAX:
            raise self._error(Code.ETOOBIG, "cache get")
        with self._lock:  # the call writes the shared length
            rc: int = self._read_value(self._c_handle, self._c_id, raw, len(raw), None, 0, self._length_ref)
        if rc < 0:
            raise self._error(rc, "cache get")
        return rc == 1

    def __len__(self) -> int:
        """How many live entries the cache holds now: as many as iterating lists.

        A memory cache without a ``ttl`` answers from its count (``lds_cache_stats``). The count of a
        memory cache with one, or of a persistent cache (whose file may hold entries stored with an
        earlier opening's ``ttl``), includes the entries that expired and that no get has dropped yet, so
        these count their live entries instead (``lds_cache_count``: a walk over the entries that copies
        nothing, about 5 ms for a memory cache of 1,000,000 entries)."""
        if not self._expires:
            return self.stats().entries
        return self._live_count(0)

    def __bool__(self) -> bool:
        """Whether the cache holds a live entry: ``len(cache) > 0``, counted up to the first one."""
        return self._live_count(1) > 0

    def _live_count(self, limit: int) -> int:
        """How many live entries the cache holds, up to ``limit`` (0: no limit; ``lds_cache_count``)."""
        count = c_uint64()
        self._check(self._core.dll.lds_cache_count(self._core.c_handle, self._c_id, b"", 0, limit, byref(count)),
                    "cache count")
        return count.value

    def popitem(self) -> Tuple[bytes, V]:
        """Removes an entry and returns it as ``(key, value)``: the first that iterating lists (a memory
        cache's most recently used, a persistent cache's first key in byte order), or the next one when it
        expired or was removed meanwhile. Raises :class:`KeyError` when no live entry is left."""
        for key in self.keys_with_prefix():
            value = self._get(key)
            if value is not _MISSING and self.remove(key):
                return key, value
        raise KeyError("popitem(): the cache has no live entry")

    def __iter__(self) -> Iterator[Key]:
        return iter(self.keys_with_prefix())

    def keys_with_prefix(self, prefix: Key = b"") -> List[bytes]:
        """The keys of the live entries that begin with ``prefix`` (all by default), listed in one call
        (``lds_cache_keys``): a memory cache from the most to the least recently used, a persistent cache
        in byte order. Listing is no use of an entry: it changes neither the counters nor the eviction
        order, and expired entries are left out."""
        raw = _key(prefix, "prefix")
        out = CacheKeyListC()
        self._check(self._core.dll.lds_cache_keys(self._core.c_handle, self._c_id, raw, len(raw), byref(out)),
                    "cache keys")
        try:
            return [string_at(out.keys[i], out.lengths[i]) for i in range(out.count)]
        finally:
            self._core.dll.lds_cache_key_list_clear(byref(out))

    def items(self) -> ItemsView[Key, V]:
        """The entries as ``(key, value)`` pairs, keys as ``bytes``; an entry removed or expired while
        iterating is skipped."""
        return _CacheItems(self)

    def values(self) -> ValuesView[V]:
        """The values of the entries; an entry removed or expired while iterating is skipped."""
        return _CacheValues(self)

    def remove(self, key: Key) -> bool:
        """Drops the entry under ``key``; returns whether there was one."""
        raw = _key(key)
        return self._check(self._core.dll.lds_cache_remove(self._core.c_handle, self._c_id, raw, len(raw)),
                           "cache remove") == 1

    def clear(self) -> None:
        """Drops every entry (the counters are kept)."""
        self._check(self._core.dll.lds_cache_clear(self._core.c_handle, self._c_id), "cache clear")

    def invalidate(self, prefix: Key = b"") -> None:
        """Marks the entries whose key begins with ``prefix`` (all by default) stale; every cell showing one
        of them (loaded through this cache, no load running) reloads it silently, flagged ``STALE`` and
        ``REFRESHING`` meanwhile."""
        raw = _key(prefix, "prefix")
        self._check(self._core.dll.lds_cache_invalidate(self._core.c_handle, self._c_id, raw, len(raw)),
                    "cache invalidate")

    def stats(self) -> CacheStats:
        """The cache's counters and contents now."""
        out = CacheStatisticsC()
        self._check(self._core.dll.lds_cache_stats(self._core.c_handle, self._c_id, byref(out)), "cache stats")
        return CacheStats(out.hits, out.misses, out.evictions, out.expirations, out.entries, out.bytes)

    def close(self) -> None:
        """Frees the cache: a memory cache drops its entries, a persistent one closes its file."""
        if not self._finalizer.alive:
            return
        self._finalizer.detach()
        if not self._core.closed:
            rc = self._core.dll.lds_cache_free(self._core.c_handle, self._c_id)
            if rc < 0 and rc != Code.ECLOSED:
                raise self._error(rc, "cache close")

    def __enter__(self) -> "Cache[V]":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<loadstate.Cache {self.id}>"


class _CacheItems(ItemsView[Key, V]):
    """``Cache.items()``: a live view that reads each value as it goes, skipping entries gone meanwhile."""

    _mapping: Cache[V]

    def __iter__(self) -> Iterator[Tuple[Key, V]]:
        for key in self._mapping:
            value = self._mapping._get(key)
            if value is not _MISSING:
                yield key, value


class _CacheValues(ValuesView[V]):
    """``Cache.values()``: like :class:`_CacheItems`, values only."""

    _mapping: Cache[V]

    def __iter__(self) -> Iterator[V]:
        for key in self._mapping:
            value = self._mapping._get(key)
            if value is not _MISSING:
                yield value
