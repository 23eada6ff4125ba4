"""The GUI example programs (examples/gui_tk.py, examples/gui_qt.py) and the pictures of their states that
the documentation shows (docs/images/gui/, made by make gui-screenshots-python with tests/gui_states.py).

On a virtual display (Xvfb), each body in a python3 of its own (see xvfb.py).
"""

from __future__ import annotations

import re
import struct
import tempfile
import zlib
from pathlib import Path
from typing import Any, List

import pytest

import loadstate

import gui_states
import xvfb

ROOT = Path(__file__).resolve().parents[3]
IMAGES = ROOT / "docs" / "images" / "gui"
PAGES = [ROOT / "docs" / "guide" / "gui.md", ROOT / "docs" / "languages" / "python.md",
         ROOT / "bindings" / "python" / "README.md"]

if xvfb.missing():
    pytest.skip(xvfb.missing() or "", allow_module_level=True)


def qt_missing() -> str:
    try:
        import loadstate.qt
        loadstate.qt.binding()
    except ImportError as exc:
        return str(exc)
    return ""


def tk_missing() -> str:
    try:
        import tkinter  # noqa: F401
    except ImportError as exc:
        return f"{exc} (Debian: python3-tk)"
    return ""


@pytest.fixture(scope="module")
def display() -> Any:
    yield from xvfb.display()


def png_problem(path: Path) -> str:
    """Why ``path`` is not a whole PNG image (signature, chunks and their CRCs, IHDR first, IEND last,
    image data that inflates to the size IHDR gives), or ""."""
    data = path.read_bytes()
    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "no PNG signature"
    at, chunks, idat = 8, [], b""
    while at < len(data):
        if at + 12 > len(data):
            return "a truncated chunk"
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        if len(body) != length or at + 12 + length > len(data):
            return f"a truncated {kind!r} chunk"
        (crc,) = struct.unpack(">I", data[at + 8 + length:at + 12 + length])
        if zlib.crc32(kind + body) != crc:
            return f"a bad CRC in {kind!r}"
        chunks.append((kind, body))
        if kind == b"IDAT":
            idat += body
        at += 12 + length
    if not chunks or chunks[0][0] != b"IHDR" or chunks[-1][0] != b"IEND":
        return "IHDR is not first or IEND not last"
    width, height, depth, colour = struct.unpack(">IIBB", chunks[0][1][:10])
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}.get(colour)
    if channels is None or width == 0 or height == 0:
        return "a bad IHDR"
    try:
        pixels = zlib.decompress(idat)
    except zlib.error as exc:
        return f"image data that does not inflate: {exc}"
    if len(pixels) != height * (1 + (width * channels * depth + 7) // 8):
        return "image data of the wrong size"
    return ""


def drive_and_check(toolkit: str) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        pictures = toolkit == "qt" or not qt_missing()  # Tk's pictures are grabbed with Qt
        seen = (gui_states.drive_tk if toolkit == "tk" else gui_states.drive_qt)(directory if pictures else None)
        assert seen == [text for _, text in gui_states.STATES]
        if pictures:
            for name, _ in gui_states.STATES:
                problem = png_problem(directory / f"{toolkit}-{name}.png")
                assert not problem, f"{toolkit}-{name}.png: {problem}"


@xvfb.in_child
def test_the_tk_example_shows_every_state() -> None:
    if tk_missing():
        pytest.skip(tk_missing())
    drive_and_check("tk")


@xvfb.in_child
def test_the_qt_example_shows_every_state() -> None:
    if qt_missing():
        pytest.skip(qt_missing())
    drive_and_check("qt")


@xvfb.in_child
def test_the_tk_example_with_its_own_loader() -> None:
    """The program as a user runs it: its slow loader on a worker thread, its buttons."""
    if tk_missing():
        pytest.skip(tk_missing())
    import tkinter

    import gui_tk
    import loadstate.tk

    gui_tk.SLOW_SECONDS = 0.01
    root = tkinter.Tk()
    with loadstate.Runtime(loadstate.Delivery.POLL) as runtime:
        loadstate.tk.attach(root, runtime)
        window = gui_tk.Window(root, runtime, runtime.loader(gui_tk.greet, codec=loadstate.TEXT))
        for button, expected in ((window.load_button, "hello, world"),
                                 (window.fail_button, "error 404: nobody to greet")):
            texts: List[str] = []
            window.cell.subscribe(lambda event: (texts.append(gui_tk.describe(event)),
                                                 root.quit() if not event.loading else None))
            button.invoke()
            watchdog = root.after(10_000, root.quit)
            root.mainloop()
            root.after_cancel(watchdog)
            assert window.label["text"] == expected, texts
    root.destroy()


@xvfb.in_child
def test_the_qt_example_with_its_own_loader() -> None:
    if qt_missing():
        pytest.skip(qt_missing())
    import gui_qt
    import loadstate.qt

    gui_qt.SLOW_SECONDS = 0.01
    app = gui_qt.QtWidgets.QApplication(["test"])
    with loadstate.Runtime(loadstate.Delivery.POLL) as runtime:
        loadstate.qt.attach(runtime)
        window = gui_qt.Window(runtime, runtime.loader(gui_qt.greet, codec=loadstate.TEXT))
        window.show()
        for button, expected in ((window.load_button, "hello, world"),
                                 (window.fail_button, "error 404: nobody to greet")):
            texts: List[str] = []
            window.cell.subscribe(lambda event: (texts.append(gui_qt.describe(event)),
                                                 app.quit() if not event.loading else None))
            button.click()
            gui_qt.QtCore.QTimer.singleShot(10_000, app.quit)
            app.exec()
            assert window.label.text() == expected, texts
        window.close()
        gui_states.delete(gui_qt.QtCore, app, window)


def shown_pictures() -> List[str]:
    names: List[str] = []
    for page in PAGES:
        names += re.findall(r"images/gui/([\w.-]+\.png)", page.read_text())
    return sorted(set(names))


def test_every_picture_the_docs_show_is_a_png() -> None:
    names = shown_pictures()
    expected = [f"{toolkit}-{state}.png" for toolkit in ("qt", "tk") for state, _ in gui_states.STATES]
    assert set(expected) <= set(names), f"not shown: {sorted(set(expected) - set(names))}"
    for name in names:
        path = IMAGES / name
        assert path.is_file(), f"{path} does not exist (make gui-screenshots-python)"
        problem = png_problem(path)
        assert not problem, f"{path}: {problem}"
        assert path.stat().st_size < 50_000, f"{path}: {path.stat().st_size} bytes"


def test_the_png_check_sees_a_broken_picture(tmp_path: Path) -> None:
    good = sorted(IMAGES.glob("*.png"))
    assert good, f"no picture in {IMAGES}"
    data = good[0].read_bytes()
    assert png_problem(good[0]) == ""
    for broken in (data[:-20], data[:40] + bytes([data[40] ^ 1]) + data[41:], b"GIF89a" + data[6:]):
        (tmp_path / "broken.png").write_bytes(broken)
        assert png_problem(tmp_path / "broken.png"), broken[:8]
