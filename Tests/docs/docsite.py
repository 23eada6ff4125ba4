"""Where the documentation checks find the repository and the built site."""

import os
import zlib
from pathlib import Path
from typing import Dict, Set

ROOT = Path(__file__).resolve().parent.parent.parent
SITE = Path(os.environ.get("LOADSTATE_SITE", ROOT / "build" / "site" / "html"))
LIBRARY = Path(os.environ.get("LOADSTATE_LIBRARY", ROOT / ".build" / "debug" / "libloadstate.so"))


def inventory(site: Path = SITE) -> Dict[str, Set[str]]:
    """The names the site defines, by domain and role ("c:function": {...}),
    read from Sphinx's objects.inv (format version 2: four header lines,
    then zlib-compressed lines `name domain:role priority uri display`)."""
    data = (site / "objects.inv").read_bytes()
    header_end = 0
    for _ in range(4):
        header_end = data.index(b"\n", header_end) + 1
    assert data.startswith(b"# Sphinx inventory version 2"), data[:40]
    names: Dict[str, Set[str]] = {}
    for line in zlib.decompress(data[header_end:]).decode().splitlines():
        name, kind = line.split(" ", 2)[:2]
        names.setdefault(kind, set()).add(name)
    return names
