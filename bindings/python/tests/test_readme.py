"""The examples of README.md run as written."""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
from pathlib import Path

import pytest
import xvfb
from redis_server import RedisServer

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```", README.read_text(), re.M | re.S)


def test_the_readme_has_examples():
    assert len(BLOCKS) >= 4


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example(index, monkeypatch):
    code = compile(BLOCKS[index], f"{README.name} example {index + 1}", "exec")
    with contextlib.ExitStack() as stack:
        if "import tkinter" in BLOCKS[index]:
            # An example of a Tk application: on a virtual display, in a python3 of its own (Tk must not
            # outlive its display in this process: see xvfb.py).
            pytest.importorskip("tkinter", reason="this python3 has no tkinter (Debian: python3-tk)")
            if xvfb.missing():
                pytest.skip(xvfb.missing() or "")
            stack.enter_context(contextlib.contextmanager(xvfb.display)())
            result = subprocess.run([sys.executable, "-c", BLOCKS[index]], capture_output=True, text=True,
                                    timeout=xvfb.CHILD_TIMEOUT, cwd=str(README.parent))
            assert result.returncode == 0, result.stdout + result.stderr
            return
        if "REDIS_URL" in BLOCKS[index]:  # an example of the Redis cache: a server of its own
            monkeypatch.setenv("REDIS_URL", stack.enter_context(RedisServer()).url)
        exec(code, {"__name__": f"readme_example_{index + 1}"})
