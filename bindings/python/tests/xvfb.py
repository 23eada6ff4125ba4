"""A virtual X display (Debian's Xvfb) for the GUI tests: started on a free display number, which Xvfb picks
and writes to a pipe once it accepts clients (-displayfd), so nothing waits by sleeping."""

from __future__ import annotations

import os
import select
import shutil
import subprocess
from typing import Iterator, Optional

import pytest

WAIT = 10.0


def missing() -> Optional[str]:
    """Why no virtual display can start here, or None."""
    if shutil.which("Xvfb") is None:
        return "Xvfb is not installed (Debian: apt-get install xvfb)"
    return None


def display() -> Iterator[str]:
    """Starts Xvfb, sets DISPLAY for the duration, yields it, stops Xvfb (for a pytest fixture)."""
    read_end, write_end = os.pipe()
    process = subprocess.Popen(["Xvfb", "-displayfd", str(write_end), "-nolisten", "tcp", "-screen", "0",
                                "640x480x24"], pass_fds=(write_end,), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    os.close(write_end)
    try:
        text = b""
        while not text.endswith(b"\n"):
            ready, _, _ = select.select([read_end], [], [], WAIT)
            if not ready:
                pytest.fail(f"Xvfb did not report its display within {WAIT} s")
            chunk = os.read(read_end, 64)
            if not chunk:
                pytest.fail(f"Xvfb exited before reporting its display (rc {process.wait()})")
            text += chunk
        name = f":{int(text)}"
        old = os.environ.get("DISPLAY")
        os.environ["DISPLAY"] = name
        try:
            yield name
        finally:
            if old is None:
                os.environ.pop("DISPLAY", None)
            else:
                os.environ["DISPLAY"] = old
    finally:
        os.close(read_end)
        process.terminate()
        process.wait(WAIT)
