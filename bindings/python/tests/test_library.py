"""Finding libloadstate.so, and the declarations of its functions."""

from __future__ import annotations

import ctypes
import enum
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, Iterable, List, Optional

import pytest

import loadstate
from loadstate import _library
from loadstate.enums import CacheFlags, ExecFlags

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
HEADER = PACKAGE_ROOT.parent.parent / "include" / "loadstate.h"


def library_file() -> str:
    return loadstate.load_library().path


# Put first in a child's code: the system's library path holds no loadstate,
# whatever this machine has installed.
NO_SYSTEM_LIBRARY = "import ctypes.util; ctypes.util.find_library = lambda name: None\n"


def run_in(package_parent: Path, code: str, env_library: str = "",
           env: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != _library.ENV_VAR} | (env or {})
    if env_library:
        env[_library.ENV_VAR] = env_library
    env["PYTHONPATH"] = str(package_parent)
    return subprocess.run([sys.executable, "-c", NO_SYSTEM_LIBRARY + textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=60, cwd=package_parent)


def copy_package(tree: Path, checkout: bool = True) -> Path:
    """A copy of the package at tree/bindings/python/loadstate, in a checkout without a build (or not).

    The copy is in a checkout when tree holds Package.swift and include/loadstate.h.
    """
    parent = tree / "bindings" / "python"
    shutil.copytree(PACKAGE_ROOT / "loadstate", parent / "loadstate",
                    ignore=shutil.ignore_patterns("__pycache__", "_lib"))
    if checkout:
        (tree / "Package.swift").write_text("")
        (tree / "include").mkdir()
        (tree / "include" / "loadstate.h").write_text("")
    return parent


def test_every_header_function_is_declared_with_argtypes_and_restype():
    header = HEADER.read_text()
    declared = dict(re.findall(r"^[a-z_0-9 ]*?\**\s*\b(lds_\w+)\(([^;]*?)\);", header, re.M | re.S))
    assert len(declared) >= 30
    dll = loadstate.load_library().dll
    for name, params in declared.items():
        assert name in _library._PROTOTYPES, f"{name} is not declared"
        function = getattr(dll, name)
        count = 0 if params.strip() == "void" else len(re.sub(r"\([^()]*\)", "", params).split(","))
        assert function.argtypes is not None and len(function.argtypes) == count, name
        assert function.restype is _library._PROTOTYPES[name][0], name
    assert set(_library._PROTOTYPES) == set(declared)


STRUCTS = {
    "lds_runtime_options": "RuntimeOptions", "lds_load_options": "LoadOptionsC", "lds_event": "EventC",
    "lds_snapshot": "SnapshotC", "lds_file_options": "FileOptionsC", "lds_exec_options": "ExecOptionsC",
    "lds_exec_request": "ExecRequestC", "lds_http_options": "HttpOptionsC", "lds_http_request": "HttpRequestC",
    "lds_http_response": "HttpResponseC", "lds_memory_cache_options": "MemoryCacheOptionsC",
    "lds_persistent_cache_options": "PersistentCacheOptionsC", "lds_cache_value": "CacheValueC",
    "lds_cache_update": "CacheUpdateC", "lds_cache_prefix": "CachePrefixC", "lds_mutation_options": "MutationOptionsC",
    "lds_cache_statistics": "CacheStatisticsC", "lds_cache_key_list": "CacheKeyListC", "lds_record": "RecordC",
    "lds_op": "OpC",
    "lds_loader_options": "LoaderOptionsC", "lds_cell_options": "CellOptionsC",
    "lds_load_metrics": "LoadMetricsC", "lds_loader_metrics": "LoaderMetricsC", "lds_cache_metrics": "CacheMetricsC",
    "lds_runtime_statistics": "RuntimeStatisticsC", "lds_observation": "ObservationC",
    "lds_inspector_options": "InspectorOptionsC",
    "lds_redis_cache_options": "RedisCacheOptionsC", "lds_redis_status": "RedisStatusC",
    "lds_pages_options": "PagesOptionsC", "lds_page_request": "PageRequestC",
}


def _header_structs() -> Dict[str, List[str]]:
    """Each ``typedef struct`` of the header and its field names, in order."""
    header = re.sub(r"/\*.*?\*/", "", HEADER.read_text(), flags=re.S)
    return {name: re.findall(r"(\w+)\s*(?:\[\w*\])?\s*;", body)
            for name, body in re.findall(r"typedef struct (lds_\w+) \{(.*?)\} \1;", header, re.S)}


def test_every_header_struct_has_a_ctypes_twin_with_the_same_fields():
    structs = _header_structs()
    assert set(structs) == set(STRUCTS)
    for name, fields in structs.items():
        twin = getattr(_library, STRUCTS[name])
        assert [f[0] for f in twin._fields_] == fields, name


def _named(prefix: str, members: Iterable[enum.IntEnum]) -> Dict[str, int]:
    """The header's name of each member of an enum: the family's prefix and the member's name (a set of flags'
    ``NONE``, and ``Domain.NONE``, have no macro)."""
    return {prefix + member.name: member for member in members if member.name != "NONE"}


# The header's families of constants: the pattern of their macros' names, and the binding's copy of each macro.
FAMILIES: Dict[str, Dict[str, int]] = {
    # One word after LDS_: the return codes and the statuses (and LDS_VERSION, in NOT_COPIED).
    r"LDS_[A-Z]+": _named("LDS_", loadstate.Code) | _named("LDS_", loadstate.Status),
    r"LDS_FLAG_\w+": _named("LDS_FLAG_", loadstate.Flags),
    r"LDS_EVENT_\w+": _named("LDS_EVENT_", loadstate.EventType),
    r"LDS_LOAD_\w+": _named("LDS_LOAD_", loadstate.LoadFlags),
    r"LDS_DELIVER_\w+": _named("LDS_DELIVER_", loadstate.Delivery),
    r"LDS_DOMAIN_\w+": _named("LDS_DOMAIN_", loadstate.Domain),
    r"LDS_POLICY_\w+": _named("LDS_POLICY_", loadstate.CachePolicy),
    r"LDS_REDIS_E[A-Z]+": _named("LDS_REDIS_", loadstate.RedisCode),
    r"LDS_HTTP_\w+(?<!_MAX)": _named("LDS_HTTP_", loadstate.HttpFlags),
    r"LDS_EXEC_\w+": _named("LDS_EXEC_", ExecFlags),
    r"LDS_CACHE_\w+(?<!_MAX)": _named("LDS_CACHE_", CacheFlags),
    r"LDS_OBSERVE_\w+": _named("LDS_OBSERVE_", loadstate.Observed),
    r"LDS_JOB_\w+": _named("LDS_JOB_", loadstate.JobOutcome),
    r"LDS_MUTATE_\w+": {"LDS_MUTATE_POPULATE": _library.MUTATE_POPULATE},
    r"LDS_RECORD_\w+": {"LDS_RECORD_EVENT": _library.RECORD_EVENT, "LDS_RECORD_START": _library.RECORD_START,
                        "LDS_RECORD_CANCEL": _library.RECORD_CANCEL},
    r"LDS_OP_\w+": {"LDS_OP_LOAD": _library.OP_LOAD, "LDS_OP_CANCEL": _library.OP_CANCEL,
                    "LDS_OP_YIELD": _library.OP_YIELD, "LDS_OP_SUCCEED": _library.OP_SUCCEED,
                    "LDS_OP_FINISH": _library.OP_FINISH, "LDS_OP_FAIL": _library.OP_FAIL},
    r"LDS_RUNTIME_\w+": {"LDS_RUNTIME_NO_METRICS": _library.RUNTIME_NO_METRICS,
                         "LDS_RUNTIME_KEEP_FD": _library.RUNTIME_KEEP_FD},
    r"LDS_INSPECTOR_\w+": {"LDS_INSPECTOR_SHOW_VALUES": _library.INSPECTOR_SHOW_VALUES,
                           "LDS_INSPECTOR_ACTIONS": _library.INSPECTOR_ACTIONS,
                           "LDS_INSPECTOR_ALLOW_REMOTE": _library.INSPECTOR_ALLOW_REMOTE,
                           "LDS_INSPECTOR_WAITING_MAX": loadstate.INSPECTOR_WAITING_MAX},
}

# The header's single constants the binding copies.
SINGLES: Dict[str, int] = {
    "LDS_VALUE_MAX": loadstate.VALUE_MAX, "LDS_QUEUE_MAX": loadstate.QUEUE_MAX,
    "LDS_PRIORITY_PREFETCH": loadstate.PRIORITY_PREFETCH, "LDS_REDIS_PENDING_MAX": loadstate.REDIS_PENDING_MAX,
    "LDS_REDIS_KEYS_MAX": loadstate.REDIS_KEYS_MAX, "LDS_CACHE_GET_MANY_MAX": loadstate.CACHE_GET_MANY_MAX,
    "LDS_REDIS_REPLY_SLACK": loadstate.REDIS_REPLY_SLACK, "LDS_NAME_MAX": loadstate.NAME_MAX,
    "LDS_MUTATION_KEYS_MAX": loadstate.MUTATION_KEYS_MAX,
    "LDS_PAGES_MAX": loadstate.PAGES_MAX, "LDS_CURSOR_MAX": loadstate.CURSOR_MAX,
    "LDS_LATENCY_BUCKETS": _library.LATENCY_BUCKETS, "LDS_VERSION_MAJOR": _library._VERSION_MAJOR,
}

# Header constants and the binding's copies of them.
CONSTANTS: Dict[str, int] = {name: value for family in FAMILIES.values() for name, value in family.items()} | SINGLES

# The header's integer macros the binding has no copy of, and why.
NOT_COPIED = {
    "LDS_VERSION": "the version as one number; the binding reads the library's with lds_version",
    "LDS_VERSION_MINOR": "the binding asks the library for at least its own minor version (_library._VERSION_MINOR)",
    "LDS_VERSION_PATCH": "any patch release will do",
    "LDS_QUEUE_MAX_LIMIT": "runtimes are made with the default queue_max",
    "LDS_HTTP_STATUS_LINE_MAX": "a bound the library keeps on responses",
    "LDS_HTTP_HEADERS_MAX": "a bound the library keeps on responses",
    "LDS_HTTP_HEADER_LINES_MAX": "a bound the library keeps on responses",
    "LDS_HTTP_TRAILERS_MAX": "a bound the library keeps on responses",
}


def _header_constants() -> List[str]:
    """The names of the header's ``#define LDS_*`` integer constants (not the ``*_INIT`` struct initializers)."""
    return [name for name, value in re.findall(r"^#define (LDS_\w+)[ \t]+(.*)$", HEADER.read_text(), re.M)
            if not value.lstrip().startswith("{")]


def test_every_constant_of_the_header_has_a_copy_in_the_binding():
    """A constant added to the header fails here until the binding copies it (or says why not)."""
    header = _header_constants()
    assert len(header) >= 90
    for pattern, family in FAMILIES.items():
        in_header = {name for name in header if re.fullmatch(pattern, name)} - set(NOT_COPIED)
        assert set(family) == in_header, (pattern, "missing in the binding:", sorted(in_header - set(family)),
                                          "not in the header:", sorted(set(family) - in_header))
    assert set(header) == set(CONSTANTS) | set(NOT_COPIED), (
        "missing in the binding:", sorted(set(header) - set(CONSTANTS) - set(NOT_COPIED)),
        "not in the header:", sorted(set(CONSTANTS) | set(NOT_COPIED) - set(header)))


def test_ctypes_structs_and_enums_match_what_the_c_compiler_makes_of_the_header(tmp_path):
    """A C program prints every struct's size and its fields' offsets and sizes, and every constant the binding
    copies."""
    lines = ["#include <stdio.h>", "#include <stddef.h>", '#include "loadstate.h"', "int main(void) {"]
    for name, fields in _header_structs().items():
        lines.append(f'  printf("size {name} %zu\\n", sizeof({name}));')
        lines += [f'  printf("offset {name}.{field} %zu\\n", offsetof({name}, {field}));' for field in fields]
        lines += [f'  printf("field size {name}.{field} %zu\\n", sizeof((({name} *)0)->{field}));'
                  for field in fields]
    lines += [f'  printf("const {name} %lld\\n", (long long)({name}));' for name in CONSTANTS]
    lines += ["  return 0;", "}"]
    (tmp_path / "probe.c").write_text("\n".join(lines) + "\n")
    compiler = os.environ.get("CC", "cc")
    subprocess.run([compiler, "-std=c11", "-Wall", "-Werror", "-I", str(HEADER.parent), "-o",
                    str(tmp_path / "probe"), str(tmp_path / "probe.c")], check=True, capture_output=True)
    printed = subprocess.run([str(tmp_path / "probe")], check=True, capture_output=True, text=True).stdout
    c_view = dict(line.rsplit(" ", 1) for line in printed.splitlines())
    python_view = {}
    for name, fields in _header_structs().items():
        twin = getattr(_library, STRUCTS[name])
        python_view[f"size {name}"] = str(ctypes.sizeof(twin))
        python_view |= {f"offset {name}.{field}": str(getattr(twin, field).offset) for field in fields}
        python_view |= {f"field size {name}.{field}": str(getattr(twin, field).size) for field in fields}
    python_view |= {f"const {name}": str(int(value)) for name, value in CONSTANTS.items()}
    assert python_view == c_view


def test_version_and_strerror():
    assert loadstate.version()[0] == 0 and loadstate.version() >= (0, 3, 0)
    assert loadstate.strerror(0) == "success"
    assert loadstate.strerror(-12345) == "unknown error"


def test_an_explicit_path_is_used():
    library = loadstate.load_library(library_file())
    assert library.path == library_file()
    with loadstate.Runtime(library=library_file()) as rt:
        assert rt.library is library


def test_an_explicit_path_that_does_not_work_is_an_error_naming_it(tmp_path):
    missing = tmp_path / "nowhere.so"
    with pytest.raises(loadstate.LibraryNotFound) as info:
        loadstate.load_library(missing)
    assert info.value.attempts == [("path argument", f"{missing} does not exist")]
    not_a_library = tmp_path / "text.so"
    not_a_library.write_text("hello")
    with pytest.raises(loadstate.LibraryNotFound) as info:
        loadstate.load_library(not_a_library)
    assert str(not_a_library) in str(info.value)


def test_the_environment_variable_is_used(tmp_path):
    parent = copy_package(tmp_path)
    result = run_in(parent, "import loadstate; print(loadstate.load_library().path)", env_library=library_file())
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(Path(library_file()).resolve())


def test_a_broken_environment_variable_stops_the_search(tmp_path):
    parent = copy_package(tmp_path)
    (parent / "loadstate" / "_lib").mkdir()
    shutil.copy(library_file(), parent / "loadstate" / "_lib" / "libloadstate.so")
    result = run_in(parent, "import loadstate; loadstate.Runtime()", env_library=str(tmp_path / "missing.so"))
    assert result.returncode != 0
    assert "LibraryNotFound" in result.stderr and "$LOADSTATE_LIBRARY" in result.stderr
    assert "missing.so does not exist" in result.stderr


def test_an_installed_package_uses_the_copy_inside_it(tmp_path):
    parent = copy_package(tmp_path, checkout=False)
    (parent / "loadstate" / "_lib").mkdir()
    shipped = parent / "loadstate" / "_lib" / "libloadstate.so"
    shutil.copy(library_file(), shipped)
    (tmp_path / ".build" / "debug").mkdir(parents=True)
    shutil.copy(library_file(), tmp_path / ".build" / "debug" / "libloadstate.so")
    result = run_in(parent, "import loadstate; print(loadstate.load_library().path)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(shipped.resolve())


def test_a_checkout_uses_its_build_and_never_a_stale_package_copy(tmp_path):
    parent = copy_package(tmp_path)
    (parent / "loadstate" / "_lib").mkdir()
    (parent / "loadstate" / "_lib" / "libloadstate.so").write_text("left by an older build")
    built = tmp_path / ".build" / "debug" / "libloadstate.so"
    built.parent.mkdir(parents=True)
    shutil.copy(library_file(), built)
    result = run_in(parent, "import loadstate; print(loadstate.load_library().path)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(built.resolve())


@pytest.mark.parametrize("folder", [".build/debug", "dist"])
def test_the_checkout_builds_are_found_from_the_package_path(tmp_path, folder):
    parent = copy_package(tmp_path)
    built = tmp_path / folder / "libloadstate.so"
    built.parent.mkdir(parents=True)
    shutil.copy(library_file(), built)
    result = run_in(parent, """
        import loadstate
        with loadstate.Runtime() as rt:
            print(rt.library.path)
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(built.resolve())


def test_a_library_on_the_system_path_is_loaded_by_name_and_its_file_named(tmp_path):
    parent = copy_package(tmp_path / "site-packages", checkout=False)
    system = tmp_path / "lib" / "libloadstate.so.0"
    system.parent.mkdir()
    shutil.copy(library_file(), system)
    result = run_in(parent, """
        ctypes.util.find_library = lambda name: "libloadstate.so.0"
        import loadstate
        print(loadstate.load_library().path)
        print(loadstate.version())
    """, env={"LD_LIBRARY_PATH": str(system.parent)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == str(system.resolve())


NOT_FOUND = """
    import loadstate
    try:
        loadstate.Runtime()
    except loadstate.LibraryNotFound as exc:
        print([place for place, _ in exc.attempts])
        print(exc)
"""


def test_no_library_anywhere_in_a_checkout_lists_every_place_tried(tmp_path):
    parent = copy_package(tmp_path)
    result = run_in(parent, NOT_FOUND)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == ("['$LOADSTATE_LIBRARY', 'package copy', 'checkout debug build', 'checkout dist build', "
                        "'system library path']")
    text = "\n".join(lines[1:])
    for reason in ("$LOADSTATE_LIBRARY: not set", "_lib/libloadstate.so is not used in a development checkout",
                   ".build/debug/libloadstate.so does not exist", "dist/libloadstate.so does not exist",
                   'find_library("loadstate") found nothing'):
        assert reason in text


def test_no_library_anywhere_in_an_installed_package_lists_every_place_tried(tmp_path):
    parent = copy_package(tmp_path, checkout=False)
    result = run_in(parent, NOT_FOUND)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "['$LOADSTATE_LIBRARY', 'package copy', 'system library path', 'checkout build']"
    text = "\n".join(lines[1:])
    assert "_lib/libloadstate.so does not exist" in text
    assert "is not inside a loadstate checkout" in text


def test_importing_works_without_a_library(tmp_path):
    parent = copy_package(tmp_path)
    result = run_in(parent, "import loadstate; print(loadstate.Status.LOADED.name)")
    assert result.returncode == 0 and result.stdout.strip() == "LOADED", result.stderr


def test_make_event_builds_what_the_dataclass_builds():
    from loadstate.types import Domain, Event, EventType, Flags, Status, make_event

    values = (EventType.PROGRESS, 7, 3, Status.LOADING, 2, Flags.PARTIAL | Flags.STALE, b"v", b"r", Domain.HTTP,
              404, "not found", 2, 15, 100, 200, 1234567)
    built = make_event(values)
    assert built == Event(*values)
    assert tuple(getattr(built, name) for name in Event.__dataclass_fields__) == values
    with pytest.raises(Exception):
        built.seq = 4  # frozen like any Event
