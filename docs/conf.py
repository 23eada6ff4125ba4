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
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "python_api",
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

# The Python reference (docs/reference/python.md): the docstrings use
# Google-style sections (Args:, Raises:); members follow each module's
# order (its __all__ for the package).
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
# Attributes: sections as fields: autodoc documents the attributes themselves.
napoleon_use_ivar = True
# Names no page of the site defines: the standard library's (the site is
# built offline, without intersphinx), type variables, and the package's
# private helpers that appear in signatures.
nitpick_ignore_regex = [
    (r"py:.*", r"(os|asyncio|enum|collections|json|ctypes|concurrent|typing|types|pathlib|threading|tkinter)\..*"),
    (r"py:.*", r"(loadstate\.\w+\.)?(T|T_co|V|D|K)"),
    (r"py:.*", r"(loadstate\.)?\w+\._\w+(\.\w+)?"),
    (r"py:.*", r"c_\w+"),
    (r"py:.*", r"(loadstate\.\w+\.)?EventCallback"),
]

html_theme = "furo"
html_title = f"loadstate {release}"
html_static_path = []
