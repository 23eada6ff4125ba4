"""The loadstate wheel and sdist: the package with libloadstate.so, tagged for this platform.

Configuration is in pyproject.toml; this file marks the distribution as not pure
Python (so that it installs to platlib) and adds three build steps.

* ``build_py`` puts the library in ``loadstate/_lib/`` of the build. From a
  checkout it copies ``dist/libloadstate.so`` (built by ``make dist``), and
  fails when it is missing: a wheel without the library would install and
  then fail on import. From an sdist (which carries the library's sources in
  ``native/``) it builds the library with ``swift build``, as ``make dist``
  does, and fails, naming what is missing, without a Swift toolchain or the
  C libraries' headers. An editable install needs no copy: the package then
  finds the checkout's build.
* ``sdist`` adds the library's sources to the sdist, in ``native/``:
  Package.swift and the folders it names, and include/.
* ``bdist_wheel`` tags the wheel ``py3-none-<platform>``: the package is
  plain Python for any Python 3, the library it carries is for one platform.
  ``make python-wheel`` then turns it into a manylinux wheel (auditwheel).
"""

import glob
import os
import shutil
import subprocess
from pathlib import Path
from typing import List

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist
from setuptools.errors import SetupError

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools older than 70.1
    from wheel.bdist_wheel import bdist_wheel

LIBRARY_NAME = "libloadstate.so"
HERE = Path(__file__).resolve().parent
# bindings/python -> the repository root, two levels up.
REPOSITORY = HERE.parent.parent
LIBRARY = REPOSITORY / "dist" / LIBRARY_NAME
# In an sdist: the library's sources.
NATIVE = HERE / "native"
# What the sdist carries of the repository: the manifest, every folder it names, the C header.
NATIVE_SOURCES = ("Package.swift", "Sources", "include", "examples/swift", "examples/swift-tour",
                  "Tests/LoadstateTests")
# The C libraries' headers the Swift build includes, with the Debian packages that have them.
HEADERS = (("uv.h", "libuv1-dev"), ("curl/curl.h", "libcurl4-openssl-dev"), ("sqlite3.h", "libsqlite3-dev"),
           ("hiredis/hiredis.h", "libhiredis-dev"))


def _version_major() -> str:
    for line in (NATIVE / "include" / "loadstate.h").read_text().splitlines():
        if line.startswith("#define LDS_VERSION_MAJOR "):
            return line.split()[2]
    raise SetupError("include/loadstate.h has no LDS_VERSION_MAJOR")


def build_from_source(scratch: Path) -> Path:
    """Builds the release library from ``native/`` as ``make dist`` does; returns the built file."""
    swift = shutil.which("swift")
    missing: List[str] = []
    if swift is None:
        missing.append("the Swift toolchain (swift 6.0 or later on PATH)")
    include_dirs = [Path("/usr/include"), Path("/usr/local/include")] + \
        [Path(p) for p in glob.glob("/usr/include/*-linux-gnu*")] + \
        [Path(p) for p in os.environ.get("CPATH", "").split(os.pathsep) if p]
    for header, package in HEADERS:
        if not any((folder / header).is_file() for folder in include_dirs):
            missing.append(f"{header} (Debian: {package})")
    if missing:
        raise SetupError("building loadstate from its sources needs " + "; ".join(missing) +
                         ". Install what is missing, or install the manylinux wheel, which needs none of it")
    flags = ["-Xswiftc", "-static-stdlib", "-Xswiftc", "-cross-module-optimization",
             "-Xswiftc", "-enforce-exclusivity=unchecked", "-Xlinker", f"-soname=libloadstate.so.{_version_major()}",
             "-Xlinker", f"--version-script={NATIVE / 'Sources' / 'LoadstateC' / 'exports.map'}"]
    command = [str(swift), "build", "-c", "release", "--product", "loadstate", "--package-path", str(NATIVE),
               "--scratch-path", str(scratch)] + flags
    print("building libloadstate.so:", " ".join(command), flush=True)
    if subprocess.run(command).returncode != 0:
        raise SetupError("swift build of libloadstate.so failed (its output is above)")
    built = scratch / "release" / LIBRARY_NAME
    if shutil.which("strip"):
        subprocess.run(["strip", "--strip-unneeded", str(built)], check=True)
    return built


class build_py_with_library(build_py):
    """build_py, plus the library in ``loadstate/_lib/``."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        if (NATIVE / "Package.swift").is_file():
            library = build_from_source(Path(self.build_lib).parent / "swift")
        elif LIBRARY.is_file():
            library = LIBRARY
        else:
            raise SetupError(f"{LIBRARY} does not exist: the loadstate wheel carries the library; "
                             "build it first with `make dist` (or build the wheel with `make python-wheel`)")
        target = Path(self.build_lib) / "loadstate" / "_lib"
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(library, target / LIBRARY_NAME)


class sdist_with_sources(sdist):
    """sdist, plus the library's sources in ``native/`` (from a checkout; an sdist's own are kept)."""

    def make_release_tree(self, base_dir: str, files: List[str]) -> None:
        super().make_release_tree(base_dir, files)
        source = NATIVE if (NATIVE / "Package.swift").is_file() else REPOSITORY
        if not (source / "Package.swift").is_file():
            raise SetupError(f"no library sources at {source}: make the sdist from a loadstate checkout")
        for name in NATIVE_SOURCES:
            origin, copy = source / name, Path(base_dir) / "native" / name
            copy.parent.mkdir(parents=True, exist_ok=True)
            if origin.is_dir():
                shutil.copytree(origin, copy, ignore=shutil.ignore_patterns(".build*", "__pycache__"))
            else:
                shutil.copy(origin, copy)


class DistributionWithLibrary(Distribution):
    """A distribution that is not pure Python: it installs to platlib, its wheel is not for any platform."""

    def has_ext_modules(self) -> bool:
        return True


class bdist_wheel_for_platform(bdist_wheel):
    """bdist_wheel for a package that carries a native library but no extension module."""

    def get_tag(self) -> "tuple[str, str, str]":
        platform = super().get_tag()[2]
        return "py3", "none", platform


setup(distclass=DistributionWithLibrary,
      cmdclass={"build_py": build_py_with_library, "sdist": sdist_with_sources,
                "bdist_wheel": bdist_wheel_for_platform})
