"""Every image the guide shows is a whole, small PNG of a plausible size.

The pictures (the GUI examples' windows, docs/images/) are committed, made
by `make gui-screenshots-gtk` and the like, never by the tests; this reads
each one a page shows (Markdown `![alt](path)` or an image / figure
directive) and checks it as a PNG decoder would: the signature, every
chunk's CRC, an IHDR first and an IEND last, and image data that inflates
to exactly the rows its header announces."""

import re
import struct
import zlib
from pathlib import Path
from typing import List, Tuple

import pytest

from docsite import ROOT

DOCS = ROOT / "docs"
SIGNATURE = b"\x89PNG\r\n\x1a\n"
# A window of an example: wider than a button, smaller than a screen.
WIDTH = (100, 1600)
HEIGHT = (50, 1200)
# Bytes of one file: more than an empty picture, a few tens of KB at most.
FILE_BYTES = (1_000, 150_000)
# Channels of each PNG colour type.
CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}

MARKDOWN_IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)")
DIRECTIVE_IMAGE = re.compile(r"^\s*(?:```|:::)\{(?:image|figure)\}\s+(\S+)", re.M)


def shown_images(docs: Path = DOCS) -> List[Tuple[str, Path]]:
    """(page, image) for every image a page of docs shows."""
    found = []
    for page in sorted(docs.rglob("*.md")):
        if "_build" in page.parts:
            continue
        text = page.read_text()
        for target in MARKDOWN_IMAGE.findall(text) + DIRECTIVE_IMAGE.findall(text):
            if "://" in target:
                continue
            path = (docs / target.lstrip("/")) if target.startswith("/") else (page.parent / target)
            found.append((str(page.relative_to(docs)), path.resolve()))
    return found


def png_problems(path: Path) -> List[str]:
    """What is wrong with the PNG file at path; [] when nothing."""
    if not path.is_file():
        return ["no such file"]
    data = path.read_bytes()
    problems = []
    if not FILE_BYTES[0] <= len(data) <= FILE_BYTES[1]:
        problems.append(f"{len(data)} bytes, not within {FILE_BYTES}")
    if not data.startswith(SIGNATURE):
        return problems + ["not a PNG (signature)"]
    chunks, at = [], len(SIGNATURE)
    while at + 12 <= len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        if len(body) != length or at + 12 + length > len(data):
            return problems + [f"chunk {kind!r} cut short"]
        (crc,) = struct.unpack(">I", data[at + 8 + length:at + 12 + length])
        if zlib.crc32(kind + body) != crc:
            return problems + [f"chunk {kind!r}: bad CRC"]
        chunks.append((kind, body))
        at += 12 + length
    if not chunks or chunks[0][0] != b"IHDR" or chunks[-1][0] != b"IEND" or at != len(data):
        return problems + ["chunks: IHDR first, IEND last, nothing after it"]
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    if not (WIDTH[0] <= width <= WIDTH[1] and HEIGHT[0] <= height <= HEIGHT[1]):
        problems.append(f"{width}x{height} pixels, not within {WIDTH}x{HEIGHT}")
    try:
        pixels = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))
    except zlib.error as error:
        return problems + [f"image data does not inflate: {error}"]
    if colour not in CHANNELS:
        return problems + [f"colour type {colour}"]
    row = 1 + (width * CHANNELS[colour] * depth + 7) // 8
    if interlace == 0 and len(pixels) != row * height:
        problems.append(f"image data inflates to {len(pixels)} bytes, not {height} rows of {row}")
    return problems


def test_the_guide_shows_the_gtk_windows():
    names = {path.name for _, path in shown_images()}
    for state in ("nothing-loaded", "loading", "loaded", "interrupt", "error", "cancelled"):
        assert f"gtk-{state}.png" in names, f"no page shows gtk-{state}.png"


@pytest.mark.parametrize("page,image", shown_images(), ids=lambda v: v.name if isinstance(v, Path) else v)
def test_every_image_shown_is_a_whole_small_png(page, image):
    assert png_problems(image) == [], f"{page}: {image.relative_to(ROOT)}"


def _with_ihdr_size(data: bytes, width: int, height: int) -> bytes:
    """data with IHDR's width and height replaced (and its CRC made again)."""
    body = struct.pack(">II", width, height) + data[24:29]
    return data[:16] + body + struct.pack(">I", zlib.crc32(b"IHDR" + body)) + data[33:]


def test_the_checker_finds_broken_pictures(tmp_path):
    good = ROOT / "docs" / "images" / "gui" / "gtk-loaded.png"
    data = good.read_bytes()
    assert png_problems(good) == []
    cases = {
        "missing.png": None,
        "text.png": b"not a picture at all, but long enough to pass the size bound. " * 40,
        "cut.png": data[: len(data) // 2],
        "crc.png": data[:40] + bytes([data[40] ^ 0xFF]) + data[41:],
        "tiny.png": _with_ihdr_size(data, 10, 10),
        "bad-ihdr-crc.png": data[:16] + struct.pack(">II", 10, 10) + data[24:],
    }
    for name, content in cases.items():
        if content is not None:
            (tmp_path / name).write_bytes(content)
    found = {name: png_problems(tmp_path / name) for name in cases}
    assert found["missing.png"] == ["no such file"]
    assert found["text.png"] == ["not a PNG (signature)"]
    assert found["cut.png"] and "cut short" in found["cut.png"][-1]
    assert found["crc.png"] and "bad CRC" in found["crc.png"][-1]
    assert found["tiny.png"][0].startswith("10x10 pixels"), found["tiny.png"]
    assert "image data inflates to" in found["tiny.png"][1], found["tiny.png"]
    assert found["bad-ihdr-crc.png"] == ["chunk b'IHDR': bad CRC"]
    page = tmp_path / "page.md"
    page.write_text("![a window](pics/w.png)\n\n```{figure} /pics/f.png\n```\n![remote](https://example.org/x.png)\n")
    assert [p for _, p in shown_images(tmp_path)] == [tmp_path / "pics" / "w.png", tmp_path / "pics" / "f.png"]
