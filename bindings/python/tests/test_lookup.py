"""The order in which the package looks for libloadstate.so, with stand-in files and a stand-in loader.

Installed: an explicit path, then LOADSTATE_LIBRARY, then the copy inside
the package, then the system's library path. In a checkout: the same, with
the checkout's .build/debug then dist/ in place of the package's copy,
which is never used there.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, List, Optional

import pytest

import loadstate
from loadstate import _library

SONAME = "libloadstate.so.0"


class FakeLibrary:
    """Stands for :class:`loadstate.Library`: any file "loads", and the system's name when the system has one."""

    system: Optional[Path] = None

    def __init__(self, path: str) -> None:
        if os.sep in path:
            self.path = path
        elif path == SONAME and FakeLibrary.system is not None:
            self.path = str(FakeLibrary.system)
        else:
            raise OSError(f"{path}: cannot open shared object file")


class Layout:
    """A package folder, the files the search may find, and a way to run the default search afresh."""

    def __init__(self, root: Path, package: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = root
        self.monkeypatch = monkeypatch
        self.files: Dict[str, Path] = {
            "explicit": root / "elsewhere" / "libloadstate.so",
            "env": root / "from-env" / "libloadstate.so",
            "package copy": package / "_lib" / "libloadstate.so",
            "checkout debug": root / "repository" / ".build" / "debug" / "libloadstate.so",
            "checkout dist": root / "repository" / "dist" / "libloadstate.so",
            "system": root / "usr" / "lib" / SONAME,
        }
        for path in self.files.values():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("")
        monkeypatch.setattr(_library, "_PACKAGE_DIR", package)
        monkeypatch.setattr(_library, "Library", FakeLibrary)
        monkeypatch.setattr(FakeLibrary, "system", self.files["system"])
        monkeypatch.setattr(_library.ctypes.util, "find_library",
                            lambda name: SONAME if name == "loadstate" and FakeLibrary.system else None)
        monkeypatch.setenv(_library.ENV_VAR, str(self.files["env"]))

    def remove(self, name: str) -> None:
        if name == "env":
            self.monkeypatch.delenv(_library.ENV_VAR)
        elif name == "system":
            self.monkeypatch.setattr(FakeLibrary, "system", None)
        else:
            self.files[name].unlink()

    def found(self) -> str:
        """The default search's answer, as if nothing had been loaded yet: which file, by its name here."""
        self.monkeypatch.setattr(_library, "_loaded", {})
        self.monkeypatch.setattr(_library, "_default", None)
        path = Path(loadstate.load_library().path)
        return next(name for name, file in self.files.items() if file == path)

    def places_tried(self) -> List[str]:
        with pytest.raises(loadstate.LibraryNotFound) as info:
            self.found()
        return [place for place, _ in info.value.attempts]


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Layout:
    """The package in a venv's site-packages, with a repository built elsewhere on the machine."""
    return Layout(tmp_path, tmp_path / "venv" / "lib" / "python3" / "site-packages" / "loadstate", monkeypatch)


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Layout:
    """The package at bindings/python/loadstate of a repository, with a stale copy in loadstate/_lib."""
    repository = tmp_path / "repository"
    (repository / "include").mkdir(parents=True)
    (repository / "include" / "loadstate.h").write_text("")
    (repository / "Package.swift").write_text("")
    return Layout(tmp_path, repository / "bindings" / "python" / "loadstate", monkeypatch)


def found_in_turn(layout: Layout, names: list[str]) -> None:
    """Checks that each place is the one found while it exists, then removes it."""
    for name in names:
        assert layout.found() == name
        layout.remove(name)


def test_an_explicit_path_comes_before_the_environment_variable(installed):
    assert loadstate.load_library(installed.files["explicit"]).path == str(installed.files["explicit"])
    assert installed.found() == "env"


def test_installed_the_order_is_env_then_the_package_copy_then_the_system(installed):
    found_in_turn(installed, ["env", "package copy", "system"])
    assert installed.places_tried() == ["$LOADSTATE_LIBRARY", "package copy", "system library path",
                                        "checkout build"]


def test_installed_the_checkout_builds_of_the_machine_are_not_looked_at(installed):
    installed.remove("env")
    installed.remove("package copy")
    installed.remove("system")
    assert installed.files["checkout debug"].is_file() and installed.files["checkout dist"].is_file()
    assert installed.places_tried()[-1] == "checkout build"


def test_in_a_checkout_the_order_is_env_then_debug_then_dist_then_the_system(checkout):
    found_in_turn(checkout, ["env", "checkout debug", "checkout dist", "system"])
    assert checkout.places_tried() == ["$LOADSTATE_LIBRARY", "package copy", "checkout debug build",
                                       "checkout dist build", "system library path"]


def test_in_a_checkout_the_package_copy_is_never_used(checkout):
    checkout.remove("env")
    checkout.remove("checkout debug")
    checkout.remove("checkout dist")
    checkout.remove("system")
    assert checkout.files["package copy"].is_file()
    with pytest.raises(loadstate.LibraryNotFound) as info:
        checkout.found()
    assert ("package copy", f"{checkout.files['package copy']} is not used in a development checkout") in \
        info.value.attempts


def test_a_system_library_that_does_not_load_is_listed_with_the_reason(installed, monkeypatch):
    installed.remove("env")
    installed.remove("package copy")
    monkeypatch.setattr(_library.ctypes.util, "find_library", lambda name: "libloadstate.so.9")
    with pytest.raises(loadstate.LibraryNotFound) as info:
        installed.found()
    assert ("system library path", "libloadstate.so.9: libloadstate.so.9: cannot open shared object file") in \
        info.value.attempts
