"""Building the wheel: it carries the repository's dist/libloadstate.so and is tagged for this platform, or fails.

Each test builds from a copy of the package in a repository of its own,
with pip, offline and without build isolation, as ``make python-wheel``
does.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
VERSION = re.search(r'^__version__ = "([^"]+)"', (PACKAGE_ROOT / "loadstate" / "__init__.py").read_text(),
                    re.M).group(1)
PLATFORM = sysconfig.get_platform().replace("-", "_").replace(".", "_")
SHIPPED = "loadstate/_lib/libloadstate.so"

def repository_copy(tree: Path) -> Path:
    """tree/bindings/python: the package's sources as pip sees them, without a build and without dist/."""
    source = tree / "bindings" / "python"
    shutil.copytree(PACKAGE_ROOT / "loadstate", source / "loadstate", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(PACKAGE_ROOT / name, source / name)
    return source


def build_wheel(source: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-index", "--no-deps",
                           "-w", str(out), str(source)], capture_output=True, text=True, timeout=300)


def test_building_the_wheel_without_the_library_fails_saying_so(tmp_path):
    source = repository_copy(tmp_path)
    result = build_wheel(source, tmp_path / "wheels")
    assert result.returncode != 0
    assert f"{tmp_path / 'dist' / 'libloadstate.so'} does not exist" in result.stdout + result.stderr
    assert "make dist" in result.stdout + result.stderr
    assert not list((tmp_path / "wheels").glob("*.whl"))


def test_the_wheel_carries_dist_library_not_a_copy_left_in_the_package(tmp_path):
    source = repository_copy(tmp_path)
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist" / "libloadstate.so").write_bytes(b"the library of make dist")
    (source / "loadstate" / "_lib").mkdir()
    (source / "loadstate" / "_lib" / "libloadstate.so").write_bytes(b"left by an older build")
    result = build_wheel(source, tmp_path / "wheels")
    assert result.returncode == 0, result.stdout + result.stderr
    wheels = list((tmp_path / "wheels").glob("*.whl"))
    assert [wheel.name for wheel in wheels] == [f"loadstate-{VERSION}-py3-none-{PLATFORM}.whl"]
    with zipfile.ZipFile(wheels[0]) as archive:
        assert archive.read(SHIPPED) == b"the library of make dist"
        assert "loadstate/py.typed" in archive.namelist()
        assert "Root-Is-Purelib: false" in archive.read(f"loadstate-{VERSION}.dist-info/WHEEL").decode()
