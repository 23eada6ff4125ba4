#!/usr/bin/env python3
"""Checks that every copy of the version agrees with include/loadstate.h.

The LDS_VERSION_MAJOR/MINOR/PATCH macros of the header are the one source:
the library is compiled from them (lds_version), and the Makefile takes the
SONAME, loadstate.pc and the Debian packages' version from them. The files
below cannot be generated from it, so they keep their own copy, checked
here. Run from the repository root; exits 1 when a copy disagrees.
"""

import re
import sys
import tomllib
from pathlib import Path


def header_version(text):
    parts = []
    for part in ("MAJOR", "MINOR", "PATCH"):
        match = re.search(rf"^#define LDS_VERSION_{part} (\d+)$", text, re.M)
        if not match:
            sys.exit(f"version-check: include/loadstate.h has no LDS_VERSION_{part}")
        parts.append(match.group(1))
    return ".".join(parts)


def rust_sys_version(text):
    parts = []
    for part in ("MAJOR", "MINOR", "PATCH"):
        match = re.search(rf"^pub const LDS_VERSION_{part}: u32 = (\d+);$", text, re.M)
        parts.append(match.group(1) if match else "?")
    return ".".join(parts)


def cargo_lock_version(text):
    lock = tomllib.loads(text)
    versions = [p["version"] for p in lock.get("package", []) if p.get("name") == "loadstate"]
    return versions[0] if versions else None


def pyproject_version(text):
    project = tomllib.loads(text).get("project", {})
    if "version" in project:
        return project["version"]
    if "version" in project.get("dynamic", []):
        return "dynamic"
    return None


def python_init_version(text):
    match = re.search(r'^__version__ = "([^"]+)"$', text, re.M)
    return match.group(1) if match else None


def debian_changelog_version(text):
    match = re.match(r"^\S+ \(([^)]+)\)", text)
    return match.group(1) if match else None


def main():
    root = Path.cwd()
    expected = header_version((root / "include/loadstate.h").read_text())
    copies = [
        ("bindings/rust/Cargo.toml", lambda t: tomllib.loads(t)["package"]["version"]),
        ("bindings/rust/Cargo.lock", cargo_lock_version),
        ("bindings/rust/src/sys.rs", rust_sys_version),
        ("bindings/python/pyproject.toml", pyproject_version),
        ("bindings/python/loadstate/__init__.py", python_init_version),
        ("debian/changelog", debian_changelog_version),
    ]
    failed = False
    print(f"version-check: include/loadstate.h says {expected}")
    for path, read in copies:
        found = read((root / path).read_text())
        if found == "dynamic":
            print(f"  ok    {path}: version is dynamic (read from the package itself)")
        elif found == expected:
            print(f"  ok    {path}: {found}")
        else:
            print(f"  FAIL  {path}: {found}")
            failed = True
    if failed:
        print("version-check: the copies above must say what include/loadstate.h says")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
