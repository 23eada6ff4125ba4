"""Finding libloadstate.so and declaring its functions for ctypes.

The library is looked for, in order, at:

1. the path given to :func:`load_library` (or ``Runtime(library=...)``);
2. the path in the ``LOADSTATE_LIBRARY`` environment variable;
3. the package's own library. Installed (from the wheel, or with
   ``pip install bindings/python``), that is the copy inside the package,
   ``loadstate/_lib/libloadstate.so``. In a development checkout (this
   package is ``bindings/python/loadstate`` of a loadstate repository, as
   with ``pip install -e bindings/python`` or ``PYTHONPATH``), that is the
   checkout's build, ``.build/debug/libloadstate.so`` (``make lib``) then
   ``dist/libloadstate.so`` (``make dist``); a ``loadstate/_lib`` copy is
   not used there, so a stale one never hides a newer build;
4. the system's library path, through ``ctypes.util.find_library``: a
   library installed by a Debian package or ``make install``.

An explicit path or the environment variable, when given, must work: the
search stops there with an error rather than silently taking another copy.
A checkout's build comes before the system's library because the checkout
is where the binding and the library are being changed together.

CA certificates: the http loader verifies servers with the CA certificates
libcurl was built to use, a path of the machine that built it. A wheel's
libcurl was built elsewhere, so before loading a library this module
chooses the host's own (see :func:`host_ca_certificates`) and hands them to
the library through ``LOADSTATE_CA_FILE`` and ``LOADSTATE_CA_DIR``, unless
those are set already.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import ssl
import struct
import threading
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char, c_char_p, c_int, c_int32, c_size_t, c_uint32,
                    c_uint64, c_void_p)
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

from .errors import Error, LibraryNotFound, error_for_code

__all__ = ["Library", "load_library", "host_ca_certificates", "ENV_VAR", "LIBRARY_NAME"]

ENV_VAR = "LOADSTATE_LIBRARY"
LIBRARY_NAME = "libloadstate.so"

# The version this binding is written against: same major, at least this minor.
_VERSION_MAJOR = 0
_VERSION_MINOR = 4

_PACKAGE_DIR = Path(__file__).resolve().parent

# The library's variables for its default CA certificates (include/loadstate.h, lds_http_loader_new).
CA_FILE_VAR = "LOADSTATE_CA_FILE"
CA_DIR_VAR = "LOADSTATE_CA_DIR"
# Where distributions keep their CA bundle and hashed certificate folder, most common first: Debian,
# Ubuntu, Arch and Gentoo; Fedora and RHEL; openSUSE; RHEL's extracted bundle; Alpine.
_CA_FILES = ("/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/ca-bundle.pem",
             "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", "/etc/ssl/cert.pem")
_CA_DIRS = ("/etc/ssl/certs", "/etc/pki/tls/certs")


def host_ca_certificates() -> Tuple[Optional[str], Optional[str]]:
    """The host's CA certificates, as ``(file, folder)``; either is ``None`` when none was found.

    Each is chosen on its own, the first that applies: the ``SSL_CERT_FILE``
    (``SSL_CERT_DIR``) environment variable, as OpenSSL reads it; the file
    (folder) of Python's own ``ssl.get_default_verify_paths()`` when it
    exists; the first that exists of the places distributions use
    (``/etc/ssl/certs/ca-certificates.crt``, ``/etc/pki/tls/certs/ca-bundle.crt``,
    ``/etc/ssl/ca-bundle.pem``, ``/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem``,
    ``/etc/ssl/cert.pem``; ``/etc/ssl/certs``, ``/etc/pki/tls/certs``).
    An environment variable is taken as it is, even when it names nothing
    (the loads then fail, saying that the file cannot be read).
    """
    defaults = ssl.get_default_verify_paths()
    file = os.environ.get("SSL_CERT_FILE") or defaults.cafile or \
        next((path for path in _CA_FILES if os.path.isfile(path)), None)
    folder = os.environ.get("SSL_CERT_DIR") or (defaults.capath if defaults.capath and os.path.isdir(defaults.capath)
                                                else None) or \
        next((path for path in _CA_DIRS if os.path.isdir(path)), None)
    return file, folder


def _export_host_ca() -> None:
    """Sets ``LOADSTATE_CA_FILE`` and ``LOADSTATE_CA_DIR`` to the host's CA certificates, each unless already set."""
    if os.environ.get(CA_FILE_VAR) or os.environ.get(CA_DIR_VAR):
        return
    file, folder = host_ca_certificates()
    if file:
        os.environ[CA_FILE_VAR] = file
    if folder:
        os.environ[CA_DIR_VAR] = folder


_strings = POINTER(c_char_p)  # const char *const *


class RuntimeOptions(Structure):
    """``lds_runtime_options``."""

    _fields_ = [("size", c_uint32), ("delivery", c_uint32), ("spin_us", c_uint32), ("queue_max", c_uint32),
                ("flags", c_uint32)]


class LoadOptionsC(Structure):
    """``lds_load_options``."""

    _fields_ = [
        ("size", c_uint32),
        ("flags", c_uint32),
        ("timeout_ms", c_uint32),
        ("interrupts_ms", POINTER(c_uint32)),
        ("interrupt_count", c_size_t),
        ("retries", c_uint32),
        ("retry_base_ms", c_uint32),
        ("retry_max_ms", c_uint32),
        ("cache", c_uint64),
        ("cache_key", c_char_p),
        ("cache_key_len", c_size_t),
        ("cache_policy", c_uint32),
        ("fresh_ms", c_uint32),
        ("max_age_ms", c_uint64),
        ("priority", c_int32),
        ("refresh_interval_ms", c_uint32),
        ("placeholder", c_void_p),
        ("placeholder_len", c_size_t),
        ("foreground_throttle_ms", c_uint32),
    ]


_EVENT_FIELDS: Any = [
    ("type", c_uint32),
    ("cell", c_uint64),
    ("seq", c_uint64),
    ("status", c_int32),
    ("kind", c_int32),
    ("flags", c_uint32),
    ("value", c_void_p),
    ("value_len", c_size_t),
    ("request", c_void_p),
    ("request_len", c_size_t),
    ("error_domain", c_int32),
    ("error_code", c_int32),
    ("error_message", c_void_p),
    ("attempt", c_uint32),
    ("elapsed_ms", c_uint64),
    ("progress_done", c_uint64),
    ("progress_total", c_uint64),
    ("updated_at_ms", c_uint64),
]


class EventC(Structure):
    """``lds_event`` (the callback reads it in one go through :data:`EVENT_LAYOUT`)."""

    _fields_ = _EVENT_FIELDS


class SnapshotC(Structure):
    """``lds_snapshot``: the same layout as ``lds_event``, with owned pointers."""

    _fields_ = _EVENT_FIELDS


# The event struct as one native-aligned struct format, so a callback can
# read every field with a single unpack instead of one ctypes access each.
EVENT_LAYOUT = struct.Struct("@IQQiiIPNPNiiPIQQQQ")
if EVENT_LAYOUT.size != ctypes.sizeof(EventC):  # pragma: no cover - a platform ABI we do not know
    raise ImportError("lds_event layout differs between struct and ctypes on this platform")


class RecordC(Structure):
    """``lds_record``: a cell event or a loader start handed over as data."""

    _fields_ = [("size", c_uint32), ("what", c_uint32), ("user_data", c_void_p), ("job", c_uint64),
                ("event", EventC)]


RECORD_EVENT = 1
RECORD_START = 2
RECORD_CANCEL = 3
# The fixed part of a record before its lds_event, read with one unpack.
RECORD_HEAD = struct.Struct("@IIPQ")
# A whole record's fixed part, its lds_event included, read with one unpack.
RECORD_LAYOUT = struct.Struct("@IIPQ" + EVENT_LAYOUT.format.lstrip("@"))
# A record's request pointer and length, from the start of the record.
RECORD_REQUEST = struct.Struct("@PN")
RECORD_REQUEST_OFFSET = RecordC.event.offset + EventC.request.offset
if RECORD_HEAD.size != RecordC.event.offset or RECORD_LAYOUT.size != ctypes.sizeof(RecordC):  # pragma: no cover
    raise ImportError("lds_record layout differs between struct and ctypes on this platform")


class OpC(Structure):
    """``lds_op``: one call of a batch given to ``lds_runtime_submit``."""

    _fields_ = [("op", c_uint32), ("code", c_int32), ("target", c_uint64), ("loader", c_uint64),
                ("data", c_void_p), ("data_len", c_size_t)]


OP_LOAD = 1
OP_CANCEL = 2
OP_YIELD = 3
OP_SUCCEED = 4
OP_FINISH = 5
OP_FAIL = 6
# An lds_op written with one pack.
OP_LAYOUT = struct.Struct("@IiQQPN")
if OP_LAYOUT.size != ctypes.sizeof(OpC):  # pragma: no cover - a platform ABI we do not know
    raise ImportError("lds_op layout differs between struct and ctypes on this platform")


class FileOptionsC(Structure):
    """``lds_file_options``."""

    _fields_ = [("size", c_uint32), ("chunk_size", c_uint32), ("max_size", c_uint64), ("max_concurrent", c_uint32),
                ("rate_per_s", c_uint32), ("burst", c_uint32), ("name", c_char_p)]


class ExecOptionsC(Structure):
    """``lds_exec_options``."""

    _fields_ = [("size", c_uint32), ("flags", c_uint32), ("kill_grace_ms", c_uint32), ("max_output", c_uint64),
                ("max_concurrent", c_uint32), ("rate_per_s", c_uint32), ("burst", c_uint32), ("name", c_char_p)]


class ExecRequestC(Structure):
    """``lds_exec_request``."""

    _fields_ = [("size", c_uint32), ("argv", _strings), ("env", _strings), ("cwd", c_char_p)]


class HttpOptionsC(Structure):
    """``lds_http_options``."""

    _fields_ = [("size", c_uint32), ("max_connections", c_uint32), ("user_agent", c_char_p), ("proxy", c_char_p),
                ("max_concurrent", c_uint32), ("rate_per_s", c_uint32), ("burst", c_uint32),
                ("max_per_host", c_uint32), ("name", c_char_p)]


class HttpRequestC(Structure):
    """``lds_http_request``."""

    _fields_ = [
        ("size", c_uint32),
        ("method", c_char_p),
        ("url", c_char_p),
        ("headers", _strings),
        ("header_count", c_size_t),
        ("body", c_char_p),
        ("body_len", c_size_t),
        ("timeout_ms", c_uint32),
        ("max_redirects", c_uint32),
        ("max_body", c_uint64),
        ("flags", c_uint32),
        ("ca_file", c_char_p),
    ]


class HttpResponseC(Structure):
    """``lds_http_response``."""

    _fields_ = [("status", c_int32), ("headers", c_void_p), ("headers_len", c_size_t), ("body", c_void_p),
                ("body_len", c_size_t)]


class MemoryCacheOptionsC(Structure):
    """``lds_memory_cache_options``."""

    _fields_ = [("size", c_uint32), ("name", c_char_p), ("max_entries", c_uint64), ("max_bytes", c_uint64),
                ("ttl_ms", c_uint64), ("unobserved_ms", c_uint64)]


class PersistentCacheOptionsC(Structure):
    """``lds_persistent_cache_options``."""

    _fields_ = [("size", c_uint32), ("flags", c_uint32), ("path", c_char_p), ("max_bytes", c_uint64),
                ("ttl_ms", c_uint64)]


class CacheValueC(Structure):
    """``lds_cache_value``."""

    _fields_ = [("value", c_void_p), ("value_len", c_size_t), ("stored_at_ms", c_uint64),
                ("expires_at_ms", c_uint64), ("stale", c_uint32)]


class CacheUpdateC(Structure):
    """``lds_cache_update``."""

    _fields_ = [("cache", c_uint64), ("key", c_char_p), ("key_len", c_size_t), ("value", c_char_p),
                ("value_len", c_size_t)]


class CachePrefixC(Structure):
    """``lds_cache_prefix``."""

    _fields_ = [("cache", c_uint64), ("prefix", c_char_p), ("prefix_len", c_size_t)]


class MutationOptionsC(Structure):
    """``lds_mutation_options``."""

    _fields_ = [("size", c_uint32), ("flags", c_uint32), ("optimistic", POINTER(CacheUpdateC)),
                ("optimistic_count", c_size_t), ("invalidate", POINTER(CachePrefixC)), ("invalidate_count", c_size_t)]


#: ``LDS_MUTATE_POPULATE``: the job's value becomes the confirmed value of every key of a write.
MUTATE_POPULATE = 1 << 0


class CacheStatisticsC(Structure):
    """``lds_cache_statistics``."""

    _fields_ = [("hits", c_uint64), ("misses", c_uint64), ("evictions", c_uint64), ("expirations", c_uint64),
                ("entries", c_uint64), ("bytes", c_uint64)]


class RedisCacheOptionsC(Structure):
    """``lds_redis_cache_options``."""

    _fields_ = [("size", c_uint32), ("flags", c_uint32), ("key_prefix", c_char_p), ("ttl_ms", c_uint64),
                ("max_ttl_ms", c_uint64), ("max_value_bytes", c_uint64), ("command_timeout_ms", c_uint32),
                ("connect_timeout_ms", c_uint32), ("lease_ms", c_uint32), ("reconnect_max_ms", c_uint32),
                ("memory_max_entries", c_uint64), ("memory_max_bytes", c_uint64), ("memory_ttl_ms", c_uint64)]


# The length of lds_redis_status.last_error.
REDIS_ERROR_TEXT = 256


class RedisStatusC(Structure):
    """``lds_redis_status``."""

    _fields_ = [("size", c_uint32), ("connected", c_uint32), ("subscribed", c_uint32), ("last_error_code", c_int32),
                ("connects", c_uint64), ("errors", c_uint64), ("leases_taken", c_uint64),
                ("leases_waited", c_uint64), ("results_received", c_uint64), ("takeovers", c_uint64),
                ("published", c_uint64), ("fenced", c_uint64), ("invalidations", c_uint64),
                ("last_error", c_char * REDIS_ERROR_TEXT)]


# LDS_RUNTIME_NO_METRICS: lds_runtime_options.flags.
RUNTIME_NO_METRICS = 1 << 0
# LDS_RUNTIME_KEEP_FD (since 0.5): lds_runtime_options.flags.
RUNTIME_KEEP_FD = 1 << 1

# LDS_LATENCY_BUCKETS: the latency buckets of lds_load_metrics.
LATENCY_BUCKETS = 32


class LoadMetricsC(Structure):
    """``lds_load_metrics``."""

    _fields_ = [("started", c_uint64), ("succeeded", c_uint64), ("failed", c_uint64), ("cancelled", c_uint64),
                ("timed_out", c_uint64), ("retried", c_uint64), ("shared", c_uint64), ("jobs_started", c_uint64),
                ("jobs_in_flight", c_uint64), ("latency_count", c_uint64), ("latency_sum_us", c_uint64),
                ("latency_max_us", c_uint64), ("latency_p50_us", c_uint64), ("latency_p90_us", c_uint64),
                ("latency_p99_us", c_uint64), ("latency_buckets", c_uint64 * LATENCY_BUCKETS),
                ("jobs_queued", c_uint64), ("queue_wait_count", c_uint64), ("queue_wait_sum_us", c_uint64),
                ("queue_wait_max_us", c_uint64), ("queue_wait_p50_us", c_uint64), ("queue_wait_p90_us", c_uint64),
                ("queue_wait_p99_us", c_uint64), ("queue_wait_buckets", c_uint64 * LATENCY_BUCKETS)]


class LoaderMetricsC(Structure):
    """``lds_loader_metrics``."""

    _fields_ = [("loader", c_uint64), ("loads", LoadMetricsC)]


class CacheMetricsC(Structure):
    """``lds_cache_metrics``."""

    _fields_ = [("cache", c_uint64), ("persistent", c_uint32), ("reserved", c_uint32), ("stats", CacheStatisticsC)]


class RuntimeStatisticsC(Structure):
    """``lds_runtime_statistics``."""

    _fields_ = [("size", c_uint32), ("enabled", c_uint32), ("cells_alive", c_uint64),
                ("events_delivered", c_uint64), ("loads", LoadMetricsC), ("loaders", POINTER(LoaderMetricsC)),
                ("loaders_cap", c_uint32), ("loader_count", c_uint32), ("caches", POINTER(CacheMetricsC)),
                ("caches_cap", c_uint32), ("cache_count", c_uint32),
                # The second version: loads a cache answered alone, in all and per loader.
                ("loads_from_cache", c_uint64), ("loaders_from_cache", POINTER(c_uint64)),
                # The third version: the host signals.
                ("online", c_uint32), ("foreground", c_uint32), ("loads_paused", c_uint64),
                ("loads_paused_total", c_uint64)]


class InspectorOptionsC(Structure):
    """``lds_inspector_options``."""

    _fields_ = [("size", c_uint32), ("flags", c_uint32), ("max_clients", c_uint32), ("interval_ms", c_uint32),
                ("idle_timeout_ms", c_uint32), ("max_cells", c_uint32)]


# lds_inspector_options.flags (LDS_INSPECTOR_*).
INSPECTOR_SHOW_VALUES = 1 << 0
INSPECTOR_ACTIONS = 1 << 1
INSPECTOR_ALLOW_REMOTE = 1 << 2


class CacheKeyListC(Structure):
    """``lds_cache_key_list``."""

    _fields_ = [("count", c_size_t), ("keys", POINTER(c_void_p)), ("lengths", POINTER(c_size_t)),
                ("block", c_void_p)]


EVENT_FN = CFUNCTYPE(None, c_void_p, c_void_p)
LOADER_FN = CFUNCTYPE(None, c_void_p, c_uint64, c_void_p, c_size_t, c_void_p)
FREE_FN = CFUNCTYPE(None, c_void_p)
OBSERVE_FN = CFUNCTYPE(None, c_void_p, c_void_p)


class ObservationC(Structure):
    """``lds_observation``."""

    _fields_ = [("size", c_uint32), ("what", c_uint32), ("event", POINTER(EventC)), ("job", c_uint64),
                ("loader", c_uint64), ("cell", c_uint64), ("attempt", c_uint32), ("outcome", c_uint32),
                ("error_domain", c_int32), ("error_code", c_int32), ("time_ns", c_uint64),
                ("duration_ns", c_uint64), ("request", c_void_p), ("request_len", c_size_t)]
CANCEL_FN = CFUNCTYPE(None, c_uint64, c_void_p)
LOADER_CANCEL_FN = CFUNCTYPE(None, c_void_p, c_uint64, c_void_p)


class LoaderOptionsC(Structure):
    """``lds_loader_options``."""

    _fields_ = [("size", c_uint32), ("start", LOADER_FN), ("cancel", LOADER_CANCEL_FN), ("free_data", FREE_FN),
                ("loader_data", c_void_p), ("max_concurrent", c_uint32), ("rate_per_s", c_uint32),
                ("burst", c_uint32), ("name", c_char_p)]


class CellOptionsC(Structure):
    """``lds_cell_options``."""

    _fields_ = [("size", c_uint32), ("on_event", EVENT_FN), ("user_data", c_void_p), ("name", c_char_p)]


class PagesOptionsC(Structure):
    """``lds_pages_options``."""

    _fields_ = [("size", c_uint32), ("on_event", EVENT_FN), ("user_data", c_void_p), ("name", c_char_p),
                ("max_pages", c_uint32)]


class PageRequestC(Structure):
    """``lds_page_request``."""

    _fields_ = [("request", c_void_p), ("request_len", c_size_t), ("cursor", c_void_p), ("cursor_len", c_size_t),
                ("direction", c_int32)]

_rt = c_void_p
_id = c_uint64
_PROTOTYPES: Dict[str, Tuple[object, List[object]]] = {
    "lds_strerror": (c_char_p, [c_int]),
    "lds_version": (c_uint32, []),
    "lds_runtime_new": (c_int, [POINTER(RuntimeOptions), POINTER(c_void_p)]),
    "lds_runtime_free": (c_int, [_rt]),
    "lds_runtime_fd": (c_int, [_rt]),
    "lds_runtime_dispatch": (c_int, [_rt, c_int]),
    "lds_runtime_dispatch_records": (c_int, [_rt, c_void_p, c_size_t, c_int, POINTER(c_size_t)]),
    "lds_runtime_submit": (c_int, [_rt, c_char_p, c_size_t, c_void_p]),
    "lds_loadable_new": (c_int, [_rt, EVENT_FN, c_void_p, POINTER(c_uint64)]),
    "lds_loadable_new_ex": (c_int, [_rt, POINTER(CellOptionsC), POINTER(c_uint64)]),
    "lds_loadable_free": (c_int, [_rt, _id]),
    "lds_loadable_load": (c_int, [_rt, _id, _id, c_char_p, c_size_t, POINTER(LoadOptionsC)]),
    "lds_loadable_refresh": (c_int, [_rt, _id]),
    "lds_loadable_cancel": (c_int, [_rt, _id]),
    "lds_loadable_reset": (c_int, [_rt, _id]),
    "lds_loadable_set_loaded": (c_int, [_rt, _id, c_char_p, c_size_t]),
    "lds_loadable_set_error": (c_int, [_rt, _id, c_int32, c_char_p]),
    "lds_loadable_get": (c_int, [_rt, _id, POINTER(SnapshotC)]),
    "lds_loadable_set_progress": (c_int, [_rt, _id, c_int]),
    "lds_snapshot_clear": (None, [POINTER(SnapshotC)]),
    "lds_loader_new": (c_int, [_rt, LOADER_FN, c_void_p, FREE_FN, POINTER(c_uint64)]),
    "lds_loader_new_ex": (c_int, [_rt, POINTER(LoaderOptionsC), POINTER(c_uint64)]),
    "lds_loader_free": (c_int, [_rt, _id]),
    "lds_job_yield": (c_int, [_rt, _id, c_char_p, c_size_t]),
    "lds_job_succeed": (c_int, [_rt, _id, c_char_p, c_size_t]),
    "lds_job_finish": (c_int, [_rt, _id]),
    "lds_job_fail": (c_int, [_rt, _id, c_int32, c_char_p]),
    "lds_job_fail_final": (c_int, [_rt, _id, c_int32, c_char_p]),
    "lds_job_progress": (c_int, [_rt, _id, c_uint64, c_uint64]),
    "lds_job_cancel_self": (c_int, [_rt, _id]),
    "lds_job_reset_self": (c_int, [_rt, _id]),
    "lds_job_is_cancelled": (c_int, [_rt, _id]),
    "lds_job_on_cancel": (c_int, [_rt, _id, CANCEL_FN, c_void_p]),
    "lds_free": (None, [c_void_p]),
    "lds_file_loader_new": (c_int, [_rt, POINTER(FileOptionsC), POINTER(c_uint64)]),
    "lds_exec_request_encode": (c_int, [POINTER(ExecRequestC), POINTER(c_void_p), POINTER(c_size_t)]),
    "lds_exec_request_decode": (c_int, [c_char_p, c_size_t, POINTER(ExecRequestC)]),
    "lds_exec_request_clear": (None, [POINTER(ExecRequestC)]),
    "lds_exec_loader_new": (c_int, [_rt, POINTER(ExecOptionsC), POINTER(c_uint64)]),
    "lds_http_request_encode": (c_int, [POINTER(HttpRequestC), POINTER(c_void_p), POINTER(c_size_t)]),
    "lds_http_request_decode": (c_int, [c_char_p, c_size_t, POINTER(HttpRequestC)]),
    "lds_http_request_clear": (None, [POINTER(HttpRequestC)]),
    "lds_http_response_decode": (c_int, [c_char_p, c_size_t, POINTER(HttpResponseC)]),
    "lds_http_loader_new": (c_int, [_rt, POINTER(HttpOptionsC), POINTER(c_uint64)]),
    "lds_memory_cache_new": (c_int, [_rt, POINTER(MemoryCacheOptionsC), POINTER(c_uint64)]),
    "lds_persistent_cache_new": (c_int, [_rt, POINTER(PersistentCacheOptionsC), POINTER(c_uint64)]),
    "lds_cache_free": (c_int, [_rt, _id]),
    "lds_cache_put": (c_int, [_rt, _id, c_char_p, c_size_t, c_char_p, c_size_t]),
    "lds_cache_get": (c_int, [_rt, _id, c_char_p, c_size_t, POINTER(CacheValueC)]),
    "lds_cache_get_many": (c_int, [_rt, _id, c_size_t, POINTER(c_char_p), POINTER(c_size_t), POINTER(CacheValueC),
                                   POINTER(c_int)]),
    "lds_cache_value_clear": (None, [POINTER(CacheValueC)]),
    "lds_cache_remove": (c_int, [_rt, _id, c_char_p, c_size_t]),
    "lds_cache_clear": (c_int, [_rt, _id]),
    "lds_cache_stats": (c_int, [_rt, _id, POINTER(CacheStatisticsC)]),
    "lds_cache_invalidate": (c_int, [_rt, _id, c_char_p, c_size_t]),
    "lds_cache_read": (c_int, [_rt, _id, c_char_p, c_size_t, c_void_p, c_size_t, POINTER(c_size_t)]),
    "lds_cache_keys": (c_int, [_rt, _id, c_char_p, c_size_t, POINTER(CacheKeyListC)]),
    "lds_cache_count": (c_int, [_rt, _id, c_char_p, c_size_t, c_uint64, POINTER(c_uint64)]),
    "lds_cache_key_list_clear": (None, [POINTER(CacheKeyListC)]),
    "lds_runtime_stats": (c_int, [_rt, POINTER(RuntimeStatisticsC)]),
    "lds_runtime_metrics_text": (c_int, [_rt, c_char_p, c_size_t, POINTER(c_size_t)]),
    "lds_runtime_observe": (c_int, [_rt, OBSERVE_FN, c_void_p, FREE_FN]),
    "lds_inspector_start": (c_int, [_rt, c_char_p, POINTER(InspectorOptionsC)]),
    "lds_inspector_url": (c_int, [_rt, c_char_p, c_size_t, POINTER(c_size_t)]),
    "lds_inspector_stop": (c_int, [_rt]),
    "lds_process_new": (c_int, [_rt, EVENT_FN, c_void_p, POINTER(c_uint64)]),
    "lds_process_new_ex": (c_int, [_rt, POINTER(CellOptionsC), POINTER(c_uint64)]),
    "lds_process_free": (c_int, [_rt, _id]),
    "lds_process_run": (c_int, [_rt, _id, c_int32, _id, c_char_p, c_size_t, POINTER(LoadOptionsC)]),
    "lds_process_mutate": (c_int, [_rt, _id, c_int32, _id, c_char_p, c_size_t, POINTER(LoadOptionsC),
                                   POINTER(MutationOptionsC)]),
    "lds_process_cancel": (c_int, [_rt, _id]),
    "lds_process_reset": (c_int, [_rt, _id]),
    "lds_process_set_progress": (c_int, [_rt, _id, c_int]),
    "lds_loadable_set_priority": (c_int, [_rt, _id, c_int32]),
    "lds_process_set_priority": (c_int, [_rt, _id, c_int32]),
    "lds_runtime_pause_polling": (c_int, [_rt]),
    "lds_runtime_resume_polling": (c_int, [_rt]),
    "lds_runtime_set_online": (c_int, [_rt, c_int]),
    "lds_runtime_set_foreground": (c_int, [_rt, c_int]),
    "lds_prefetch": (c_int, [_rt, _id, c_char_p, c_size_t, POINTER(LoadOptionsC)]),
    "lds_redis_cache_new": (c_int, [_rt, c_char_p, POINTER(RedisCacheOptionsC), POINTER(c_uint64)]),
    "lds_redis_cache_status": (c_int, [_rt, _id, POINTER(RedisStatusC)]),
    "lds_pages_new": (c_int, [_rt, POINTER(PagesOptionsC), POINTER(c_uint64)]),
    "lds_pages_free": (c_int, [_rt, _id]),
    "lds_pages_load": (c_int, [_rt, _id, _id, c_char_p, c_size_t, POINTER(LoadOptionsC)]),
    "lds_pages_load_next": (c_int, [_rt, _id]),
    "lds_pages_load_previous": (c_int, [_rt, _id]),
    "lds_pages_refresh": (c_int, [_rt, _id]),
    "lds_pages_cancel": (c_int, [_rt, _id]),
    "lds_pages_reset": (c_int, [_rt, _id]),
    "lds_pages_count": (c_int, [_rt, _id, POINTER(c_size_t)]),
    "lds_pages_has_more": (c_int, [_rt, _id, c_int32]),
    "lds_pages_get": (c_int, [_rt, _id, c_size_t, POINTER(SnapshotC)]),
    "lds_page_request_decode": (c_int, [c_char_p, c_size_t, POINTER(PageRequestC)]),
    "lds_job_succeed_page": (c_int, [_rt, _id, c_char_p, c_size_t, c_char_p, c_size_t, c_char_p, c_size_t]),
}


def _raw_cache_calls(dll: ctypes.CDLL) -> Tuple[Any, Any]:
    """``lds_cache_read`` and ``lds_cache_put`` of ``dll`` as function objects of their own with a
    ``restype`` and no ``argtypes``: the one exception to declaring every function, for the two hot paths of
    :class:`~loadstate.Cache`.

    With ``argtypes``, ctypes calls each argument type's ``from_param`` on every call: for the seven
    arguments of a read, that is more than half the cost of the call (1.78 against 0.95 us measured). Without
    them, ctypes passes a ctypes object as its own C type, ``bytes`` as a pointer to its bytes and an ``int``
    as a C ``int``, which libffi widens to the register's 64 bits (sign-extended), so that the C function's
    ``size_t`` receives it unchanged while it is below ``2**31``. The callers (``_reader`` of ``cache``,
    ``Cache._read_large``, ``Cache.__contains__`` and ``Cache.put``) pass only a ``c_void_p`` runtime handle, a
    ``c_uint64`` cache id, ``bytes``, a ``c_char`` array or ``None`` (a null pointer, with a capacity of 0), a
    ``byref`` of a ``c_size_t``, and lengths they checked against :data:`VALUE_MAX` (256 MiB) first.
    """
    read = dll["lds_cache_read"]  # item access: a new function object, not dll's declared one
    read.restype = c_int
    put = dll["lds_cache_put"]
    put.restype = c_int
    return read, put


class Library:
    """A loaded ``libloadstate.so`` with every function declared.

    Attributes:
        path: the file that was loaded.
        dll: the :class:`ctypes.CDLL`; its ``lds_*`` functions have
            ``argtypes`` and ``restype`` set.
        version: ``lds_version()``, as ``(major, minor, patch)``.
    """

    def __init__(self, path: str) -> None:
        """Loads ``path``: a file, or a bare name the dynamic loader looks up."""
        self.dll = ctypes.CDLL(path)
        for name, (restype, argtypes) in _PROTOTYPES.items():
            function = getattr(self.dll, name)  # AttributeError: not a loadstate library
            function.restype = restype
            function.argtypes = argtypes
        # lds_cache_read and lds_cache_put without argtypes, for the two hot paths of Cache (see
        # _raw_cache_calls): through the CDLL, which releases the GIL while a persistent or Redis cache
        # waits, and through a PyDLL, which keeps it, for memory caches, whose calls never wait.
        self._raw_read, self._raw_put = _raw_cache_calls(self.dll)
        self._raw_read_holding_gil, self._raw_put_holding_gil = _raw_cache_calls(ctypes.PyDLL(path))
        self.path = path if os.sep in path else _file_of(self.dll, path)
        raw = self.dll.lds_version()
        self.version = (raw >> 16, (raw >> 8) & 0xFF, raw & 0xFF)
        if self.version[0] != _VERSION_MAJOR or self.version[1] < _VERSION_MINOR:
            raise OSError(f"{path} is loadstate {'.'.join(map(str, self.version))}; "
                          f"this binding needs {_VERSION_MAJOR}.{_VERSION_MINOR} or a later {_VERSION_MAJOR}.x")
        self._messages: Dict[int, str] = {}

    def strerror(self, code: int) -> str:
        """The library's message for a return code."""
        message = self._messages.get(code)
        if message is None:
            message = self.dll.lds_strerror(code).decode("utf-8", "replace")
            self._messages[code] = message
        return message

    def error(self, code: int, detail: Optional[str] = None) -> Error:
        """The exception for a negative return code."""
        return error_for_code(code, self.strerror(code), detail)

    def __repr__(self) -> str:
        return f"<loadstate.Library {self.path!r} version {'.'.join(map(str, self.version))}>"


class _DlInfo(Structure):
    """``Dl_info`` of ``<dlfcn.h>``."""

    _fields_ = [("dli_fname", c_char_p), ("dli_fbase", c_void_p), ("dli_sname", c_char_p), ("dli_saddr", c_void_p)]


def _file_of(dll: ctypes.CDLL, name: str) -> str:
    """The file the dynamic loader opened for ``name``, asked of ``dladdr``; ``name`` when it cannot tell."""
    try:
        dladdr = ctypes.CDLL(None).dladdr
    except AttributeError:  # pragma: no cover - a C library without dladdr
        return name
    dladdr.argtypes = [c_void_p, POINTER(_DlInfo)]
    dladdr.restype = c_int
    info = _DlInfo()
    if dladdr(ctypes.cast(dll.lds_version, c_void_p), ctypes.byref(info)) == 0 or not info.dli_fname:
        return name  # pragma: no cover - dladdr knows every loaded library on glibc
    return str(Path(os.fsdecode(info.dli_fname)).resolve())


_lock = threading.Lock()
_loaded: Dict[str, Library] = {}
_default: Optional[Library] = None

PathLike = Union[str, "os.PathLike[str]"]
Attempts = List[Tuple[str, str]]


def _try(place: str, path: Path, attempts: Attempts) -> Optional[Library]:
    if not path.is_file():
        attempts.append((place, f"{path} does not exist"))
        return None
    key = str(path.resolve())
    if key in _loaded:
        return _loaded[key]
    try:
        library = Library(key)
    except (OSError, AttributeError) as exc:
        attempts.append((place, f"{path}: {exc}"))
        return None
    _loaded[key] = library
    return library


def _try_system(attempts: Attempts) -> Optional[Library]:
    place = "system library path"
    name = ctypes.util.find_library("loadstate")
    if name is None:
        attempts.append((place, 'ctypes.util.find_library("loadstate") found nothing'))
        return None
    try:
        library = Library(name)
    except (OSError, AttributeError) as exc:
        attempts.append((place, f"{name}: {exc}"))
        return None
    return _loaded.setdefault(library.path, library)


def _checkout() -> Optional[Path]:
    """The loadstate repository this package sits in, or ``None`` when it is installed.

    The package is ``bindings/python/loadstate`` of a repository whose root
    holds ``Package.swift`` and ``include/loadstate.h``.
    """
    root = _PACKAGE_DIR.parent.parent.parent
    if _PACKAGE_DIR.parent.parent.name == "bindings" and (root / "Package.swift").is_file() and \
            (root / "include" / "loadstate.h").is_file():
        return root
    return None


def _search(attempts: Attempts) -> Optional[Library]:
    """The default search after the environment variable: the package's own library, then the system's."""
    shipped = _PACKAGE_DIR / "_lib" / LIBRARY_NAME
    root = _checkout()
    if root is None:
        places = [("package copy", shipped)]
    else:
        attempts.append(("package copy", f"{shipped} is not used in a development checkout"))
        places = [("checkout debug build", root / ".build" / "debug" / LIBRARY_NAME),
                  ("checkout dist build", root / "dist" / LIBRARY_NAME)]
    for place, path in places:
        library = _try(place, path, attempts)
        if library is not None:
            return library
    library = _try_system(attempts)
    if library is None and root is None:
        attempts.append(("checkout build", f"{_PACKAGE_DIR} is not inside a loadstate checkout"))
    return library


def load_library(path: Optional[PathLike] = None) -> Library:
    """Loads libloadstate.so and returns it (loading each file once).

    Args:
        path: the library to load. Without it the default search runs
            (``LOADSTATE_LIBRARY``, the package's own library, the system's
            library path; see this module's documentation) and its result
            is remembered.

    Raises:
        LibraryNotFound: no place worked; the error lists every place tried
            and why it failed.
    """
    global _default
    with _lock:
        _export_host_ca()
        attempts: Attempts = []
        if path is not None:
            library = _try("path argument", Path(os.fspath(path)), attempts)
            if library is None:
                raise LibraryNotFound(attempts)
            return library
        if _default is not None:
            return _default
        from_env = os.environ.get(ENV_VAR)
        if from_env:
            library = _try(f"${ENV_VAR}", Path(from_env), attempts)
        else:
            attempts.append((f"${ENV_VAR}", "not set"))
            library = _search(attempts)
        if library is None:
            raise LibraryNotFound(attempts)
        _default = library
        return library
