"""The C reference page documents every declaration of include/loadstate.h.

The declarations are found here independently of the site's extension (a
pass of regular expressions over the header, and the lds_* functions the
built library exports), then looked up in the names the built site
defines (objects.inv). Run after `make docs`.
"""

import re
import subprocess

import pytest

from docsite import LIBRARY, ROOT, SITE, inventory

HEADER = ROOT / "include" / "loadstate.h"


def header_declarations():
    text = HEADER.read_text()
    found = {
        "c:macro": set(re.findall(r"^#define\s+(LDS_\w+)", text, re.M)),
        "c:function": set(re.findall(r"^(?!typedef)[a-z][\w\s*]*?\b(lds_\w+)\s*\(", text, re.M)),
        "c:struct": set(re.findall(r"^typedef struct (\w+)", text, re.M)),
        "c:type": set(re.findall(r"^typedef [^(;]*\(\*\s*(\w+)\)", text, re.M))
        | set(re.findall(r"^typedef (?!struct)\w+ (\w+);", text, re.M)),
    }
    members = set()
    for struct, body in re.findall(r"^typedef struct (\w+) \{(.*?)^\} \1;", text, re.M | re.S):
        body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
        for declaration in body.split(";"):
            declaration = declaration.strip()
            if declaration:
                name = re.search(r"\(\*\s*(\w+)\)|(\w+)\s*(?:\[[^\]]*\])?$", declaration)
                members.add(f"{struct}.{name.group(1) or name.group(2)}")
    found["c:member"] = members
    return found


def test_the_header_is_read():
    found = header_declarations()
    # A floor, so that a broken pattern cannot make the test pass on nothing.
    assert len(found["c:function"]) >= 80 and len(found["c:macro"]) >= 100
    assert len(found["c:struct"]) >= 30 and len(found["c:member"]) >= 200
    assert {"lds_event_fn", "lds_id"} <= found["c:type"]


@pytest.mark.parametrize("kind", ["c:function", "c:macro", "c:struct", "c:type", "c:member"])
def test_every_declaration_is_in_the_reference(kind):
    defined = inventory().get(kind, set())
    missing = sorted(header_declarations()[kind] - defined)
    assert not missing, f"{kind} missing from the C reference ({SITE}/reference/c.html): {missing}"


def test_every_exported_function_is_in_the_reference():
    assert LIBRARY.exists(), f"{LIBRARY}: build it first (make lib)"
    nm = subprocess.run(["nm", "-D", "--defined-only", str(LIBRARY)],
                        check=True, capture_output=True, text=True).stdout
    exported = {line.split()[-1] for line in nm.splitlines() if line.split()[-1].startswith("lds_")}
    assert len(exported) >= 80, exported
    missing = sorted(exported - inventory().get("c:function", set()))
    assert not missing, f"functions the library exports, missing from the C reference: {missing}"


def test_the_reference_is_on_the_c_page():
    page = (SITE / "reference" / "c.html").read_text()
    for name in ("lds_runtime_new", "LDS_LOAD_SILENT", "lds_load_options", "lds_id"):
        assert f'id="c.{name}"' in page, name


def header_groups():
    """(title, names declared) of each `/* ---- */ /* Title */ /* ---- */` group, in header order."""
    rule = r"/\* -{20,} \*/\n"
    parts = re.split(rf"{rule}/\* (.*?)\s*\*/\n{rule}", HEADER.read_text())
    groups = []
    for title, body in zip(parts[1::2], parts[2::2]):
        body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
        names = set(re.findall(r"^#define\s+(LDS_\w+)", body, re.M))
        names |= set(re.findall(r"^(?!typedef)[a-z][\w\s*]*?\b(lds_\w+)\s*\(", body, re.M))
        names |= set(re.findall(r"^typedef struct (\w+)", body, re.M))
        names |= set(re.findall(r"^typedef [^(;]*\(\*\s*(\w+)\)", body, re.M))
        names |= set(re.findall(r"^typedef (?!struct)\w+ (\w+);", body, re.M))
        groups.append((title, names))
    return groups


def test_the_reference_is_grouped_as_the_header():
    groups = header_groups()
    assert len(groups) >= 15, [title for title, _ in groups]
    page = (SITE / "reference" / "c.html").read_text()
    chunks = page.split("<h2>")[1:]
    titles = [re.sub(r"<[^>]+>", "", chunk.split("</h2>", 1)[0]).rstrip("#").strip() for chunk in chunks]
    assert titles == [title for title, _ in groups]
    for (title, names), chunk in zip(groups, chunks):
        # The entries between this group's heading and the next one (members have a dotted id).
        entries = set(re.findall(r'id="c\.(\w+)"', chunk))
        assert names == entries, f"group {title!r}: in the header only {sorted(names - entries)}, " \
                                 f"on the page only {sorted(entries - names)}"
