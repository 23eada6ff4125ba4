"""Reading the docstrings of the ``loadstate`` Python package as they are written.

Three adjustments to autodoc and napoleon for this package:

- An attribute's or property's docstring is text, not ``type: text``:
  napoleon would read "POLL mode: the descriptor..." as the type
  "POLL mode". The package's attributes have annotations for their types.
- Module constants are documented with ``#:`` comments in the submodule
  that defines them (``loadstate.enums``, ``loadstate.builtin``); the
  package re-exports them, so their comment is looked up there.
- Names are documented where users import them, at the package
  (``loadstate.Runtime``): a reference written in a submodule
  (``:class:`PagesCell``` in ``loadstate.pages``, or a signature's
  ``loadstate.cells.Loadable``) resolves to the package's entry.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from docutils import nodes
from sphinx.ext.napoleon.docstring import GoogleDocstring
from sphinx.pycode import ModuleAnalyzer

PACKAGE = "loadstate"


def _attribute_docstring_as_written(self: GoogleDocstring) -> List[str]:
    return type(self)(self._consume_to_end(), self._config).lines()


GoogleDocstring._parse_attribute_docstring = _attribute_docstring_as_written  # type: ignore[assignment]

_comments: Optional[Dict[str, List[str]]] = None


def _constant_comments() -> Dict[str, List[str]]:
    """The ``#:`` comments of the package's modules' top-level names."""
    global _comments
    if _comments is None:
        import importlib
        import pkgutil

        package = importlib.import_module(PACKAGE)
        _comments = {}
        for module in pkgutil.iter_modules(package.__path__):
            analyzer = ModuleAnalyzer.for_module(f"{PACKAGE}.{module.name}")
            for (scope, name), lines in analyzer.find_attr_docs().items():
                if scope == "":
                    _comments.setdefault(name, list(lines))
    return _comments


def _process_docstring(app, what: str, name: str, obj, options, lines: List[str]) -> None:
    if what != "data" or not name.startswith(PACKAGE + "."):
        return
    comment = _constant_comments().get(name.rsplit(".", 1)[-1])
    if comment is not None:
        lines[:] = comment


def _inherited(owner: str, member: str) -> List[str]:
    """``loadstate.Base.member`` for each class ``loadstate.owner`` derives from."""
    import importlib

    package = importlib.import_module(PACKAGE)
    cls = getattr(package, owner, None)
    if not isinstance(cls, type):
        return []
    return [f"{PACKAGE}.{base.__name__}.{member}" for base in cls.__mro__
            if getattr(package, base.__name__, None) is base]


def _candidates(target: str, node: nodes.Element) -> List[str]:
    if target.startswith(PACKAGE + "."):
        parts = target.split(".")
        target = ".".join(parts[2:]) if len(parts) > 2 else ""
        if not target:
            return []
    out = [f"{PACKAGE}.{target}"]
    if "." in target:
        owner, member = target.rsplit(".", 1)
        out += _inherited(owner.rsplit(".", 1)[-1], member)
    context = node.get("py:class")
    if context:
        out += _inherited(context.rsplit(".", 1)[-1], target)
    return out


def _attribute_of_instances(target: str) -> Optional[str]:
    """``loadstate.Loader`` for ``Loader.id`` when id is an instance attribute
    that the class's docstring lists (napoleon makes it an :ivar: field of
    the class's entry, with no entry of its own)."""
    import importlib
    import inspect

    owner, _, member = target.removeprefix(PACKAGE + ".").rpartition(".")
    cls = getattr(importlib.import_module(PACKAGE), owner, None)
    doc = inspect.getdoc(cls) if isinstance(cls, type) else None
    if doc and re.search(rf"^Attributes:\n(?:    .*\n|\n)*?    {re.escape(member)}: ", doc, re.M):
        return f"{PACKAGE}.{owner}"
    return None


def _missing_reference(app, env, node: nodes.Element, contnode: nodes.Element):
    if node.get("refdomain") != "py":
        return None
    domain = env.get_domain("py")
    for candidate in _candidates(node["reftarget"], node):
        found: List[Tuple[str, object]] = domain.find_obj(env, None, None, candidate, node["reftype"], 1)
        if found:
            return domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"],
                                       found[0][0], node, contnode)
    if node["reftype"] == "attr":
        owner = _attribute_of_instances(node["reftarget"])
        if owner is not None:
            return domain.resolve_xref(env, node["refdoc"], app.builder, "class", owner, node, contnode)
    return None


def setup(app):
    app.connect("autodoc-process-docstring", _process_docstring)
    app.connect("missing-reference", _missing_reference)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
