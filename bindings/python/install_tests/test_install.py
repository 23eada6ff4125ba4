"""The README's install commands and the wheel, each in a fresh venv, from outside the repository.

``make test-python-install`` runs these after ``make lib`` and
``make python-wheel``. Each test makes a venv in a temporary folder, runs
what a user runs there (the repository is reached through a link at
``path/to/loadstate``, the clone's path in the README), then imports
loadstate from that folder, makes one load and prints which files it used.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path
from typing import Dict, List

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
REPOSITORY = PACKAGE_ROOT.parent.parent
README = PACKAGE_ROOT / "README.md"
WHEEL_DIR = REPOSITORY / "build" / "python"
DIST_LIBRARY = REPOSITORY / "dist" / "libloadstate.so"
DEBUG_LIBRARY = REPOSITORY / ".build" / "debug" / "libloadstate.so"
VERSION = re.search(r'^__version__ = "([^"]+)"', (PACKAGE_ROOT / "loadstate" / "__init__.py").read_text(),
                    re.M).group(1)
ARCH = sysconfig.get_platform().split("-")[-1]
SHIPPED = Path("loadstate") / "_lib" / "libloadstate.so"

# What a user's shell does not have: the settings of this repository's make and tests.
NOT_A_USERS = ("LOADSTATE_LIBRARY", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHON", "MAKEFLAGS", "MFLAGS",
               "MAKELEVEL", "MAKEOVERRIDES")

CHECK = """
import loadstate
with loadstate.Runtime() as rt:
    upper = rt.loader(lambda job: job.request.upper())
    state = rt.loadable(upper).load(b"installed").result(timeout=10)
print(state.value.decode())
print(".".join(map(str, loadstate.version())))
print(loadstate.__file__)
print(loadstate.load_library().path)
"""


def install_blocks() -> List[str]:
    """The shell blocks of the README's Install section, one way of installing each."""
    section = re.search(r"^## Install\n(.*?)^## ", README.read_text(), re.M | re.S)
    assert section is not None, "README.md has no Install section"
    return re.findall(r"^```sh\n(.*?)^```", section.group(1), re.M | re.S)


BLOCKS = install_blocks()


def user_environment(venv: Path) -> Dict[str, str]:
    """The environment of a user's shell with ``venv`` activated."""
    env = {name: value for name, value in os.environ.items() if name not in NOT_A_USERS}
    env["VIRTUAL_ENV"] = str(venv)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def make_venv(where: Path) -> Path:
    venv = where / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    return venv


def run(command: List[str], cwd: Path, env: Dict[str, str]) -> str:
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, f"{command} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def check_import(venv: Path, cwd: Path) -> List[str]:
    """Imports loadstate in ``venv`` from ``cwd`` and loads once: the value, version, package and library files."""
    lines = run([str(venv / "bin" / "python"), "-c", CHECK], cwd, user_environment(venv)).splitlines()
    value, version, package, library = lines[-4:]
    assert value == "INSTALLED"
    assert version == VERSION
    return [package, library]


def the_wheel() -> Path:
    wheels = sorted(WHEEL_DIR.glob("*.whl"))
    assert len(wheels) == 1, f"expected one wheel in {WHEEL_DIR}: {wheels}"
    return wheels[0]


def wheel_library() -> bytes:
    """The library inside the wheel: dist's, with auditwheel's RPATH."""
    with zipfile.ZipFile(the_wheel()) as archive:
        return archive.read(str(SHIPPED))


def assert_the_installed_copy_was_loaded(venv: Path, package: str, library: str, expected: bytes) -> None:
    assert Path(package).is_relative_to(venv), f"{package} is not the installed package"
    assert Path(library) == Path(package).parent / "_lib" / "libloadstate.so"
    assert Path(library).read_bytes() == expected, "the installed library is not the one expected"


def test_the_readme_has_install_commands():
    assert len(BLOCKS) >= 3
    assert any("python-wheel" in block for block in BLOCKS)
    assert any("pip install -e" in block for block in BLOCKS)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_install_commands(tmp_path, index):
    block = BLOCKS[index]
    venv = make_venv(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    (work / "path" / "to").mkdir(parents=True)
    (work / "path" / "to" / "loadstate").symlink_to(REPOSITORY)
    run(["bash", "-e", "-c", block], work, user_environment(venv))
    package, library = check_import(venv, work)
    if "pip install -e" in block:
        assert Path(library) == DEBUG_LIBRARY.resolve(), f"the editable install loaded {library}"
    elif "python-wheel" in block:
        assert_the_installed_copy_was_loaded(venv, package, library, wheel_library())
    else:
        assert_the_installed_copy_was_loaded(venv, package, library, DIST_LIBRARY.read_bytes())


def test_the_wheel_is_manylinux_carries_the_library_and_its_dependencies_and_installs_offline(tmp_path):
    wheel = the_wheel()
    match = re.fullmatch(rf"loadstate-{re.escape(VERSION)}-py3-none-(manylinux_\d+_\d+_{ARCH})\.whl", wheel.name)
    assert match is not None, wheel.name
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        assert str(SHIPPED) in names
        tags = archive.read(f"loadstate-{VERSION}.dist-info/WHEEL").decode()
    assert "Root-Is-Purelib: false" in tags.splitlines()
    assert f"Tag: py3-none-{match.group(1)}" in tags.splitlines()
    vendored = [Path(name).name.split("-")[0] for name in names if name.startswith("loadstate.libs/")]
    for needed in ("libuv", "libcurl", "libsqlite3", "libhiredis", "libssl", "libcrypto"):
        assert needed in vendored, f"{needed} is not in loadstate.libs: {vendored}"
    assert not [name for name in names if ".data/" in name or name.endswith(".pyc")]
    venv = make_venv(tmp_path)
    run([str(venv / "bin" / "pip"), "install", "-q", "--no-index", str(wheel)], tmp_path, user_environment(venv))
    package, library = check_import(venv, tmp_path)
    assert_the_installed_copy_was_loaded(venv, package, library, wheel_library())
    # Every library it needs resolves from the wheel or the system, with nothing on LD_LIBRARY_PATH.
    linked = subprocess.run(["ldd", library], env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True)
    assert linked.returncode == 0 and "not found" not in linked.stdout, linked.stdout
    assert re.search(r"libcurl-[0-9a-f]+\.so\S* => \S*/loadstate\.libs/", linked.stdout), linked.stdout
