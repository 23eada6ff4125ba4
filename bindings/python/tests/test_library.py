"""Finding libloadstate.so, and the declarations of its functions."""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, List, Optional

import pytest

import loadstate
from loadstate import _library

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
    "lds_cache_statistics": "CacheStatisticsC", "lds_cache_key_list": "CacheKeyListC", "lds_record": "RecordC",
    "lds_op": "OpC",
    "lds_loader_options": "LoaderOptionsC",
    "lds_load_metrics": "LoadMetricsC", "lds_loader_metrics": "LoaderMetricsC", "lds_cache_metrics": "CacheMetricsC",
    "lds_runtime_statistics": "RuntimeStatisticsC", "lds_observation": "ObservationC",
    "lds_inspector_options": "InspectorOptionsC",
    "lds_redis_cache_options": "RedisCacheOptionsC", "lds_redis_status": "RedisStatusC",
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


# Header constants and the binding's names for them.
CONSTANTS = {f"LDS_{code.name}": code for code in loadstate.Code} | {
    f"LDS_DOMAIN_{domain.name}": domain for domain in loadstate.Domain if domain.name != "NONE"} | {
    f"LDS_REDIS_{code.name}": code for code in loadstate.RedisCode} | {
    f"LDS_{status.name}": status for status in loadstate.Status} | {
    "LDS_VALUE_MAX": loadstate.VALUE_MAX, "LDS_QUEUE_MAX": loadstate.QUEUE_MAX,
    "LDS_PRIORITY_PREFETCH": loadstate.PRIORITY_PREFETCH, "LDS_REDIS_PENDING_MAX": loadstate.REDIS_PENDING_MAX,
    "LDS_REDIS_KEYS_MAX": loadstate.REDIS_KEYS_MAX, "LDS_CACHE_GET_MANY_MAX": loadstate.CACHE_GET_MANY_MAX}


def test_ctypes_structs_and_enums_match_what_the_c_compiler_makes_of_the_header(tmp_path):
    """A C program prints every struct's size and field offsets, and the constants the enums copy."""
    lines = ["#include <stdio.h>", "#include <stddef.h>", '#include "loadstate.h"', "int main(void) {"]
    for name, fields in _header_structs().items():
        lines.append(f'  printf("size {name} %zu\\n", sizeof({name}));')
        lines += [f'  printf("offset {name}.{field} %zu\\n", offsetof({name}, {field}));' for field in fields]
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
