"""mypy --strict accepts typed code using the binding and infers the value types of typed loaders."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = Path(__file__).resolve().parent / "typed" / "typed_example.py"
ERRORS = Path(__file__).resolve().parent / "typed" / "typed_errors.py"


@pytest.fixture(scope="module")
def mypy() -> None:
    """mypy, installed from PyPI for this python3 when it cannot import it."""
    try:
        import mypy  # noqa: F401
    except ImportError:
        installed = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "mypy"], capture_output=True,
                                   text=True)
        if installed.returncode != 0:
            pytest.fail(f"mypy is missing and could not be installed:\n{installed.stderr}")


def _mypy(tmp_path: Path, *targets: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"),
                           "--no-error-summary", *targets], cwd=PACKAGE_ROOT, capture_output=True, text=True)


def test_mypy_strict_infers_the_value_types_of_typed_loaders(mypy, tmp_path):
    result = _mypy(tmp_path, str(EXAMPLE))
    expected = {}
    for number, line in enumerate(EXAMPLE.read_text().splitlines(), 1):
        if "reveal_type(" in line:
            expected[number] = line.split("#", 1)[1].strip()
    revealed = {}
    others = []
    for line in result.stdout.splitlines():
        match = re.match(rf".*{EXAMPLE.name}:(\d+): note: Revealed type is \"(.*)\"", line)
        if match:
            revealed[int(match[1])] = match[2].replace("builtins.", "")  # older mypy names builtins so
        else:
            others.append(line)
    assert others == [], result.stdout
    assert revealed == expected


def test_mypy_strict_accepts_the_package(mypy, tmp_path):
    result = _mypy(tmp_path, "loadstate")
    assert (result.returncode, result.stdout) == (0, "")


def test_mypy_strict_refuses_loaders_and_caches_of_the_wrong_value_type(mypy, tmp_path):
    result = _mypy(tmp_path, str(ERRORS))
    expected = {}
    for number, line in enumerate(ERRORS.read_text().splitlines(), 1):
        if "# error: " in line:
            expected[number] = line.split("# error: ", 1)[1].strip()
    assert len(expected) >= 10
    found = {}
    for line in result.stdout.splitlines():
        match = re.match(rf".*{ERRORS.name}:(\d+): error: (.*)", line)
        assert match, result.stdout
        assert int(match[1]) not in found, f"two errors on line {match[1]}:\n{result.stdout}"
        found[int(match[1])] = match[2]
    assert sorted(found) == sorted(expected), result.stdout
    for number, text in expected.items():
        assert text in found[number], (number, found[number])
