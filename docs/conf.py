# Sphinx configuration of the loadstate documentation site (`make docs`).
# Built with Debian's Sphinx, MyST and furo; the output goes to build/site/html.
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
sys.path.insert(0, str(ROOT / "bindings" / "python"))


def _version() -> str:
    numbers = {}
    for line in (ROOT / "include" / "loadstate.h").read_text().splitlines():
        for part in ("MAJOR", "MINOR", "PATCH"):
            prefix = f"#define LDS_VERSION_{part} "
            if line.startswith(prefix):
                numbers[part] = line[len(prefix):].strip()
    return "{MAJOR}.{MINOR}.{PATCH}".format(**numbers)


project = "loadstate"
author = "the loadstate authors"
copyright = "loadstate authors"
version = release = _version()

extensions = [
    "myst_parser",
    "sphinx.ext.graphviz",
    "c_header",
]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["examples/**", "_ext/**", "_build"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
graphviz_output_format = "svg"
nitpicky = True
# The C reference names the C standard's types, which no page defines.
nitpick_ignore = [
    ("c:identifier", name)
    for name in ("size_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t",
                 "int8_t", "int16_t", "int32_t", "int64_t")
]

html_theme = "furo"
html_title = f"loadstate {release}"
html_static_path = []
