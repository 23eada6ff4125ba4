"""A cache on a Redis server, shared by every process that opens it (``lds_redis_cache_new``).

The runtime's own loop talks to Redis (hiredis on libuv): no thread of its
own. Cache calls wait for the loop, so unlike those of the other caches they
may not be made from a callback of a ``Delivery.LOOP`` runtime (they raise
:class:`~loadstate.WrongState` there).
"""

from __future__ import annotations

from ctypes import byref, c_uint64, sizeof
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional, TypeVar, Union, overload

from ._checks import U64_MAX, c_string, instance, integer, milliseconds
from ._library import RedisCacheOptionsC, RedisStatusC
from .cache import _MISSING, Cache, Key
from .codec import BYTES, Codec
from .enums import VALUE_MAX, Code
from .errors import Error, RedisError, error_for_code, redis_reason

if TYPE_CHECKING:
    from .runtime import Runtime

__all__ = ["RedisCache", "RedisStatus"]

V = TypeVar("V")


@dataclass(frozen=True)
class RedisStatus:
    """A Redis cache's connection state and counters (``lds_redis_status``), from :meth:`RedisCache.status`.

    Attributes:
        connected: the command connection is up.
        subscribed: the message connection listens (invalidations and results of other processes).
        last_error_code: the :class:`~loadstate.RedisCode` of the last failure; ``None`` before any.
        connects: connections made, first ones and reconnections, of both connections.
        errors: commands that failed.
        leases_taken: shared loads that took a lease and called their loader.
        leases_waited: shared loads that waited for another process's result.
        results_received: waits that ended with another process's result.
        takeovers: waits that ended by taking an expired or released lease.
        published: results stored and published under a lease.
        fenced: results not stored because the lease had passed to a newer holder.
        invalidations: invalidation messages received from other processes.
        last_error: the last failure's message; ``""`` before any.
    """

    connected: bool
    subscribed: bool
    last_error_code: Optional[int]
    connects: int
    errors: int
    leases_taken: int
    leases_waited: int
    results_received: int
    takeovers: int
    published: int
    fenced: int
    invalidations: int
    last_error: str


class RedisCache(Cache[V]):
    """A cache whose entries live in a Redis server (5.0 or later), shared by every process and machine
    that opens one on the same server, database and ``key_prefix``; also made by
    :meth:`Runtime.redis_cache <loadstate.Runtime.redis_cache>`.

    It works wherever a cache does: the mapping interface and the other calls of :class:`~loadstate.Cache`,
    the ``cache`` of a load (policies, ``fresh``, ``max_age``), :meth:`Runtime.prefetch
    <loadstate.Runtime.prefetch>` and :meth:`invalidate`. Across processes:

    * a shared load (``share=True``) takes a lease on its key in Redis before it calls its loader, so
      that one process among all those loading the key calls it; the others wait for its result (their
      cells show ``LOADING``) and take over when the lease expires unused (its holder died);
    * :meth:`invalidate` marks the entries under a prefix stale in Redis and tells every process, whose
      cells showing them then reload.

    Creating it does not wait for the connection: a server that is down is no error here. While Redis
    cannot answer, cache calls raise :class:`~loadstate.RedisError` (with the reason in its
    ``redis_code`` and ``redis_message``) and loads call their loaders as if there were no cache; the
    cache reconnects by itself (back-off up to ``reconnect_max``). :meth:`status` tells the connection's
    state and counts leases, results and invalidations.

    Cache calls wait for the runtime's loop (at most about twice ``command_timeout``): any thread may
    make them except the loop thread, so not from a callback of a ``Delivery.LOOP`` runtime (there they
    raise :class:`~loadstate.WrongState`). Under asyncio a call holds the event loop for its round trip
    (``await asyncio.to_thread(cache.get, key)`` does not). ``len()`` and ``bool()`` count the keys in Redis
    (a listing, as ``iter()``); :meth:`stats` counts this process's hits and misses, and its ``entries`` and ``bytes`` are
    those of the front memory tier.

    Args:
        runtime: the runtime whose loop drives the cache.
        url: ``redis://[[user]:password@]host[:port][/db]`` (port 6379, database 0) or
            ``unix://[[user]:password@]/path/to/redis.sock[?db=N]``; ``rediss://`` (TLS) is refused.
        key_prefix: the namespace of every Redis key of the cache (``None``: ``"lds:"``).
        ttl: seconds an entry lives in Redis (``None``: ``max_ttl``).
        max_ttl: the bound on every entry's time to live (``None``: one day).
        max_value_bytes: a larger value is not stored (0: 8 MiB; at most :data:`~loadstate.VALUE_MAX`).
        command_timeout: seconds a reply may take (``None``: 2); a late one fails its command and drops
            the connection.
        connect_timeout: seconds a connection may take (``None``: 2).
        lease: seconds a shared load's lease lasts (``None``: 10).
        reconnect_max: the ceiling, in seconds, of the reconnection back-off (``None``: 5).
        memory_max_entries: with more than 0, a front tier in memory keeps entries read or written, at
            most this many (0: no front tier).
        memory_max_bytes: the front tier's bound in bytes (0: 64 MiB).
        memory_ttl: seconds a front entry is used (``None``: 60).
        codec: how values are encoded.

    Raises:
        InvalidArgument: a URL that does not parse, or an option out of range.
    """

    @overload
    def __init__(self: "RedisCache[bytes]", runtime: "Runtime", url: str, *,
                 key_prefix: Union[str, bytes, None] = ..., ttl: Optional[float] = ...,
                 max_ttl: Optional[float] = ..., max_value_bytes: int = ...,
                 command_timeout: Optional[float] = ..., connect_timeout: Optional[float] = ...,
                 lease: Optional[float] = ..., reconnect_max: Optional[float] = ..., memory_max_entries: int = ...,
                 memory_max_bytes: int = ..., memory_ttl: Optional[float] = ...) -> None: ...

    @overload
    def __init__(self, runtime: "Runtime", url: str, *, key_prefix: Union[str, bytes, None] = ...,
                 ttl: Optional[float] = ..., max_ttl: Optional[float] = ..., max_value_bytes: int = ...,
                 command_timeout: Optional[float] = ..., connect_timeout: Optional[float] = ...,
                 lease: Optional[float] = ..., reconnect_max: Optional[float] = ..., memory_max_entries: int = ...,
                 memory_max_bytes: int = ..., memory_ttl: Optional[float] = ..., codec: Codec[V]) -> None: ...

    def __init__(self, runtime: "Runtime", url: str, *, key_prefix: Union[str, bytes, None] = None,
                 ttl: Optional[float] = None, max_ttl: Optional[float] = None, max_value_bytes: int = 0,
                 command_timeout: Optional[float] = None, connect_timeout: Optional[float] = None,
                 lease: Optional[float] = None, reconnect_max: Optional[float] = None, memory_max_entries: int = 0,
                 memory_max_bytes: int = 0, memory_ttl: Optional[float] = None, codec: Codec[Any] = BYTES) -> None:
        raw_url = c_string("url", url)
        options = RedisCacheOptionsC(
            size=sizeof(RedisCacheOptionsC), flags=0, key_prefix=c_string("key_prefix", key_prefix, none=True),
            ttl_ms=milliseconds("ttl", ttl, U64_MAX), max_ttl_ms=milliseconds("max_ttl", max_ttl, U64_MAX),
            max_value_bytes=integer("max_value_bytes", max_value_bytes, 0, VALUE_MAX),
            command_timeout_ms=milliseconds("command_timeout", command_timeout),
            connect_timeout_ms=milliseconds("connect_timeout", connect_timeout),
            lease_ms=milliseconds("lease", lease), reconnect_max_ms=milliseconds("reconnect_max", reconnect_max),
            memory_max_entries=integer("memory_max_entries", memory_max_entries, 0, U64_MAX),
            memory_max_bytes=integer("memory_max_bytes", memory_max_bytes, 0, U64_MAX),
            memory_ttl_ms=milliseconds("memory_ttl", memory_ttl, U64_MAX))
        instance("codec", codec, Codec, "a loadstate.Codec")
        out = c_uint64()
        core = runtime._core
        rc = core.dll.lds_redis_cache_new(core.c_handle, raw_url, byref(options), byref(out))
        if rc == Code.ENOTSUP:
            raise error_for_code(rc, core.lib.strerror(rc),
                                 "rediss:// (TLS) is not supported: this build's hiredis has no TLS; reach a TLS-only "
                                 "Redis through a local TLS tunnel (stunnel, socat) and a redis:// URL to it")
        core.check(rc, "redis cache")
        super().__init__(runtime, out, codec, memory=False)

    def status(self) -> RedisStatus:
        """The connection's state and the cache's counters now; never waits for the loop."""
        out = self._status()
        if isinstance(out, int):
            raise self._core.lib.error(out, "redis cache status")
        return RedisStatus(bool(out.connected), bool(out.subscribed), redis_reason(out.last_error_code),
                           out.connects, out.errors, out.leases_taken, out.leases_waited, out.results_received,
                           out.takeovers, out.published, out.fenced, out.invalidations,
                           out.last_error.decode("utf-8", "replace"))

    def _status(self) -> Union[RedisStatusC, int]:
        """``lds_redis_cache_status``: the filled struct, or the negative code of its failure."""
        out = RedisStatusC()
        out.size = sizeof(RedisStatusC)
        rc: int = self._core.dll.lds_redis_cache_status(self._core.c_handle, self._c_id, byref(out))
        return rc if rc < 0 else out

    def _error(self, rc: int, detail: str) -> Error:
        """A :class:`RedisError` carries the reason the cache reports for its last failure."""
        if rc != Code.EREDIS:
            return super()._error(rc, detail)
        status = self._status()
        if isinstance(status, int):
            return RedisError(rc, self._core.lib.strerror(rc), detail)
        return RedisError(rc, self._core.lib.strerror(rc), detail, status.last_error_code,
                          status.last_error.decode("utf-8", "replace"))

    def _get(self, key: Key) -> Any:
        """A read waits for a round trip to Redis: each one gets a copy of its own (``lds_cache_get``)
        instead of holding the lock of the cache's shared read buffer meanwhile, so that threads reading
        at once wait together, not in turn."""
        entry = self.entry(key)
        return _MISSING if entry is None else entry.value

    def __getitem__(self, key: Key) -> V:
        value = self._get(key)
        if value is _MISSING:
            raise KeyError(key)
        return value  # type: ignore[no-any-return]

    def __len__(self) -> int:
        """How many keys the cache holds in Redis, as many as :meth:`keys_with_prefix` lists (its front tier
        and :meth:`stats` count only what this process holds)."""
        return self._live_count(0)

    def __repr__(self) -> str:
        return f"<loadstate.RedisCache {self.id}>"

