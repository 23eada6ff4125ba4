"""The Python reference page documents every public name of the package:
its __all__, and the __all__ of each public submodule (a name there is
documented at the package when the package exports it, otherwise under its
module). Run after `make docs`."""

import importlib
import os
import pkgutil
import sys

from docsite import LIBRARY, ROOT, SITE, inventory

sys.path.insert(0, str(ROOT / "bindings" / "python"))
os.environ.setdefault("LOADSTATE_LIBRARY", str(LIBRARY))
import loadstate  # noqa: E402


def documented():
    return set().union(*(names for kind, names in inventory().items() if kind.startswith("py:")))


def test_every_name_of_the_package_is_documented():
    assert len(loadstate.__all__) > 50
    missing = sorted(name for name in loadstate.__all__ if f"loadstate.{name}" not in documented())
    assert not missing, f"loadstate names missing from {SITE}/reference/python.html: {missing}"


def test_every_name_of_the_public_submodules_is_documented():
    names = documented()
    missing = []
    for info in pkgutil.iter_modules(loadstate.__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"loadstate.{info.name}")
        assert f"loadstate.{info.name}" in names, f"module loadstate.{info.name} is not in the reference"
        for name in getattr(module, "__all__", []):
            if f"loadstate.{name}" not in names and f"loadstate.{info.name}.{name}" not in names:
                missing.append(f"loadstate.{info.name}.{name}")
    assert not missing, f"submodule names missing from the Python reference: {missing}"


def test_members_are_documented_with_their_class():
    names = documented()
    for name in ("loadstate.Runtime.loadable", "loadstate.Loadable.load", "loadstate.Event.status",
                 "loadstate.Cache.invalidate", "loadstate.Status.LOADED"):
        assert name in names, name
