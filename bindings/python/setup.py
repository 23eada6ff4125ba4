"""The loadstate wheel: the package with the repository's dist/libloadstate.so, tagged for this platform.

Configuration is in pyproject.toml; this file marks the distribution as not pure
Python (so that it installs to platlib) and adds two build steps.

* ``build_py`` copies ``dist/libloadstate.so`` (built by ``make dist``) to
  ``loadstate/_lib/`` in the build, and fails when it is missing: a wheel
  without the library would install and then fail on import. An editable
  install needs no copy: the package then finds the checkout's build.
* ``bdist_wheel`` tags the wheel ``py3-none-<platform>``: the package is
  plain Python for any Python 3, the library it carries is for one platform.
"""

import shutil
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py
from setuptools.errors import SetupError

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools older than 70.1
    from wheel.bdist_wheel import bdist_wheel

LIBRARY_NAME = "libloadstate.so"
# bindings/python -> the repository root, two levels up.
LIBRARY = Path(__file__).resolve().parent.parent.parent / "dist" / LIBRARY_NAME


class build_py_with_library(build_py):
    """build_py, plus the library in ``loadstate/_lib/``."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        if not LIBRARY.is_file():
            raise SetupError(f"{LIBRARY} does not exist: the loadstate wheel carries the library; "
                             "build it first with `make dist` (or build the wheel with `make python-wheel`)")
        target = Path(self.build_lib) / "loadstate" / "_lib"
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(LIBRARY, target / LIBRARY_NAME)


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
      cmdclass={"build_py": build_py_with_library, "bdist_wheel": bdist_wheel_for_platform})
