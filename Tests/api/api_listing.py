#!/usr/bin/env python3
"""The public API of the Loadstate module, from the symbol graph the
compiler emits (swift-symbolgraph-extract over the built module).

  api_listing.py SYMBOLS.json            print the listing: one line per public
                                         or open declaration, sorted
  api_listing.py SYMBOLS.json --undocumented
                                         print the public declarations without a
                                         documentation comment; exit 1 if any

Each public type's conformances are listed too ("Type  conforms to P"),
so that adding or dropping one (Observable, Sendable) shows in the diff.

Declarations under @_spi (what Sources/LoadstateC reaches) and package or
internal ones are not part of the public API and are not listed. Members a
type gets from a protocol's extension (`!=` from Equatable, for instance)
are left out: they belong to the protocol.
"""
import json
import sys


def declaration(symbol):
    text = "".join(f["spelling"] for f in symbol.get("declarationFragments", []))
    text = " ".join(text.split())
    constraints = symbol.get("swiftExtension", {}).get("constraints", [])
    if constraints:
        where = ", ".join(f'{c["lhs"]} {":" if c["kind"] == "conformance" else "=="} {c["rhs"]}'
                          for c in constraints)
        text += f"  [where {where}]"
    return text


def public_symbols(path):
    with open(path) as f:
        graph = json.load(f)
    for symbol in graph["symbols"]:
        if symbol.get("accessLevel") not in ("public", "open"):
            continue
        if symbol.get("spi"):
            continue
        if "::SYNTHESIZED::" in symbol["identifier"]["precise"]:
            continue
        yield symbol


def conformances(path):
    """"Type  conforms to Protocol" for every public type's conformance."""
    with open(path) as f:
        graph = json.load(f)
    public = {s["identifier"]["precise"]: s for s in public_symbols(path)}
    everything = {s["identifier"]["precise"]: s for s in graph["symbols"]}
    out = set()
    for r in graph["relationships"]:
        if r["kind"] != "conformsTo" or r["source"] not in public:
            continue
        target = everything.get(r["target"])
        name = ".".join(target["pathComponents"]) if target else r.get("targetFallback", r["target"])
        if target and (target.get("accessLevel") not in ("public", "open") or target.get("spi")):
            continue
        constraints = r.get("swiftConstraints", [])
        where = ""
        if constraints:
            where = "  [where " + ", ".join(
                f'{c["lhs"]} {":" if c["kind"] == "conformance" else "=="} {c["rhs"]}' for c in constraints) + "]"
        out.add(".".join(public[r["source"]]["pathComponents"]) + "  conforms to " + name + where)
    return sorted(out)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    symbols = list(public_symbols(sys.argv[1]))
    if "--undocumented" in sys.argv[2:]:
        missing = sorted(".".join(s["pathComponents"]) + "  " + declaration(s)
                         for s in symbols if not s.get("docComment"))
        for line in missing:
            print(line)
        sys.exit(1 if missing else 0)
    lines = [".".join(s["pathComponents"]) + "  " + declaration(s) for s in symbols]
    lines += conformances(sys.argv[1])
    lines.sort()
    for line in lines:
        print(line)


main()
