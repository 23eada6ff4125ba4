"""The C reference of the site, read from include/loadstate.h.

The header is its own reference manual, written with plain ``/* */``
comments in a few fixed shapes, which this module reads:

- the opening comment: an overview, with ALL-CAPS headings;
- group banners: a ``/* ---- */`` line, ``/* Title */``, a ``/* ---- */`` line;
- a comment right before a declaration (no blank line between) documents it;
  one right before several ``#define``\\ s introduces the group;
- a comment after a ``#define`` or a struct member documents it (it may run
  on over the next lines);
- a comment followed by a blank line is prose of the group it stands in.

Text laid out as a table or an indented list (lines indented past the
comment's margin) is kept as a preformatted block; other text becomes
paragraphs in which the header's names link to their entries.

The ``c-header-reference`` directive renders the header as sections of
Sphinx C-domain entries (``c:function``, ``c:struct`` with ``c:member``,
``c:macro``, ``c:type``), one section per banner in header order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from docutils import nodes
from docutils.parsers.rst import Directive, Parser
from docutils.utils import new_document

BANNER_RULE = re.compile(r"^/\* -{20,} \*/$")
BANNER_TITLE = re.compile(r"^/\* (.*?)\s*\*/$")
DEFINE = re.compile(r"^#define\s+([A-Za-z_][A-Za-z0-9_]*)(\([^)]*\))?\s*(.*)$")
NAME = re.compile(r"\b(lds_[a-z0-9_]+|LDS_[A-Z0-9_]+)(?:\.([a-z_][a-z0-9_]*))?\b")
HEADING = re.compile(r"^[A-Z]{3,}( \(.*\))?$")


@dataclass
class Prose:
    text: str


@dataclass
class Macro:
    name: str
    params: str
    value: str
    doc: str


@dataclass
class Function:
    name: str
    declaration: str
    doc: str


@dataclass
class TypeAlias:
    name: str
    declaration: str
    doc: str


@dataclass
class Member:
    declaration: str
    name: str
    doc: str


@dataclass
class Struct:
    name: str
    members: List[Member]
    doc: str


@dataclass
class Section:
    title: str
    items: list = field(default_factory=list)


@dataclass
class Header:
    overview: str
    sections: List[Section]

    def names(self) -> Dict[str, str]:
        """Every documented name and its C-domain kind."""
        kinds: Dict[str, str] = {}
        for section in self.sections:
            for item in section.items:
                if isinstance(item, Macro):
                    kinds[item.name] = "macro"
                elif isinstance(item, Function):
                    kinds[item.name] = "function"
                elif isinstance(item, Struct):
                    kinds[item.name] = "struct"
                    for member in item.members:
                        kinds[f"{item.name}.{member.name}"] = "member"
                elif isinstance(item, TypeAlias):
                    kinds[item.name] = "type"
        return kinds


def _comment_lines(raw: List[str]) -> List[str]:
    """The text of a block comment, without its delimiters and `` * `` margins."""
    text = "\n".join(raw).strip()
    assert text.startswith("/*") and text.endswith("*/"), text
    body = text[2:-2]
    lines = body.split("\n")
    out = []
    for index, line in enumerate(lines):
        if index > 0:
            stripped = line.lstrip()
            if stripped.startswith("*"):
                line = stripped[1:]
                if line.startswith(" "):
                    line = line[1:]
        out.append(line.rstrip())
    while out and not out[0].strip():
        out.pop(0)
    while out and not out[-1].strip():
        out.pop()
    if out:
        out[0] = out[0].strip()
    return out


def _trailing_comment(first: str, lines: List[str], i: int) -> Tuple[str, int]:
    """A comment that begins on a declaration's line (at ``first``) and may
    continue over the following lines. Returns its text and the index of
    the line after it."""
    parts = [first]
    while "*/" not in parts[-1]:
        parts.append(lines[i])
        i += 1
    text = " ".join(part.strip().lstrip("*").strip() if n else part for n, part in enumerate(parts))
    text = text.strip()
    assert text.startswith("/*") and text.endswith("*/"), text
    return " ".join(text[2:-2].split()), i


def _split_code_comment(line: str) -> Tuple[str, Optional[str]]:
    at = line.find("/*")
    if at < 0:
        return line, None
    return line[:at], line[at:]


def _statement(lines: List[str], i: int) -> Tuple[List[str], int]:
    """Lines from i to the end of a C statement (a ``;`` at brace depth 0)."""
    out = []
    depth = 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        code, _ = _split_code_comment(line)
        depth += code.count("{") - code.count("}")
        if depth == 0 and code.rstrip().endswith(";"):
            break
    return out, i


def _parse_members(body: List[str]) -> List[Member]:
    members: List[Member] = []
    pending: List[str] = []
    i = 0
    while i < len(body):
        line = body[i]
        stripped = line.strip()
        i += 1
        if not stripped:
            continue
        if stripped.startswith("/*"):
            raw = [stripped]
            while "*/" not in raw[-1]:
                raw.append(body[i])
                i += 1
            pending.append(" ".join(" ".join(_comment_lines(raw)).split()))
            continue
        code, comment = _split_code_comment(line)
        trailing = ""
        if comment is not None:
            trailing, i = _trailing_comment(comment, body, i)
        declaration = " ".join(code.strip().rstrip(";").split())
        match = re.search(r"\(\*\s*([A-Za-z_]\w*)\)|([A-Za-z_]\w*)\s*(\[[^\]]*\])?$", declaration)
        assert match, declaration
        name = match.group(1) or match.group(2)
        doc = " ".join(part for part in (*pending, trailing) if part)
        members.append(Member(declaration, name, doc))
        pending = []
    return members


def _read_comment(lines: List[str], i: int) -> Tuple[str, int]:
    """The text of the comment that opens at lines[i], and the index of the
    line after it."""
    raw = []
    while True:
        raw.append(lines[i])
        i += 1
        if "*/" in raw[-1]:
            return "\n".join(_comment_lines(raw)), i


def parse_header(text: str) -> Header:
    lines = text.split("\n")
    i = 0
    # The opening comment is the overview.
    assert lines[0].startswith("/*")
    overview, i = _read_comment(lines, i)
    sections: List[Section] = []
    doc: Optional[str] = None  # a comment waiting for the next line
    guard = None  # the include guard's macro, not part of the interface

    def add(item) -> None:
        if not sections:
            raise ValueError(f"a declaration before the first group banner: {item}")
        sections[-1].items.append(item)

    while i < len(lines):
        line = lines[i]
        if BANNER_RULE.match(line) and i + 2 < len(lines) and BANNER_RULE.match(lines[i + 2]):
            title = BANNER_TITLE.match(lines[i + 1])
            assert title, lines[i + 1]
            if doc is not None:
                add(Prose(doc))
                doc = None
            sections.append(Section(title.group(1)))
            i += 3
            continue
        if not line.strip():
            if doc is not None:
                add(Prose(doc))
                doc = None
            i += 1
            continue
        if line.startswith("/*"):
            if doc is not None:
                add(Prose(doc))
            doc, i = _read_comment(lines, i)
            continue
        if line.startswith("#define"):
            run: List[Macro] = []
            while i < len(lines) and lines[i].startswith("#define"):
                code, comment = _split_code_comment(lines[i])
                i += 1
                while code.rstrip().endswith("\\"):
                    code = code.rstrip()[:-1] + " " + lines[i].strip()
                    i += 1
                trailing = ""
                if comment is not None:
                    trailing, i = _trailing_comment(comment, lines, i)
                match = DEFINE.match(code.strip())
                assert match, code
                name, params, value = match.group(1), match.group(2) or "", " ".join(match.group(3).split())
                if name == guard:
                    continue
                run.append(Macro(name, params, value, trailing))
            if doc is not None and len(run) == 1:
                run[0].doc = "\n\n".join(part for part in (doc, run[0].doc) if part)
            elif doc is not None:
                add(Prose(doc))
            doc = None
            for macro in run:
                add(macro)
            continue
        if line.startswith(("#", "}", 'extern "C"')):
            if line.startswith("#ifndef ") and guard is None:
                guard = line.split()[1]
            i += 1
            continue
        statement, i = _statement(lines, i)
        add(_declaration(statement, doc or ""))
        doc = None
    return Header(overview, sections)


def _declaration(statement: List[str], doc: str):
    first = statement[0]
    struct = re.match(r"^typedef struct (\w+) \{", first)
    if struct:
        last = statement[-1]
        closing = re.match(r"^\}\s*(\w+);", last)
        assert closing and closing.group(1) == struct.group(1), statement
        return Struct(struct.group(1), _parse_members(statement[1:-1]), doc)
    text = " ".join(" ".join(statement).split()).rstrip(";").strip()
    opaque = re.match(r"^typedef struct (\w+) (\w+)$", text)
    if opaque:
        assert opaque.group(1) == opaque.group(2), text
        return Struct(opaque.group(1), [], doc)
    if text.startswith("typedef "):
        declaration = text[len("typedef "):]
        pointer = re.search(r"\(\*\s*(\w+)\)", declaration)
        name = pointer.group(1) if pointer else declaration.split()[-1]
        return TypeAlias(name, declaration, doc)
    function = re.search(r"(\w+)\s*\(", text)
    assert function, text
    return Function(function.group(1), text.replace("( ", "(").replace(" )", ")"), doc)


# ---------------------------------------------------------------- rendering


class Renderer:
    def __init__(self, header: Header) -> None:
        self.header = header
        self.kinds = header.names()

    def inline(self, text: str) -> str:
        """Paragraph text as RST: markup characters escaped, names linked."""
        out = []
        at = 0
        for match in NAME.finditer(text):
            name, member = match.group(1), match.group(2)
            kind = self.kinds.get(name)
            if kind is None:
                continue
            out.append(_escape(text[at:match.start()]))
            after = text[match.end():match.end() + 1]
            if member is not None and self.kinds.get(f"{name}.{member}") == "member":
                out.append(f"\\ :c:member:`{name}.{member}`\\ ")
            else:
                role = {"function": "func", "macro": "macro", "struct": "struct", "type": "type"}[kind]
                if kind == "function" and after == "(":
                    out.append(f"\\ :c:func:`{name} <{name}>`\\ ")
                else:
                    out.append(f"\\ :c:{role}:`{name}`\\ ")
                if member is not None:
                    out.append(_escape("." + member))
            at = match.end()
        out.append(_escape(text[at:]))
        return "".join(out)

    def block(self, text: str, indent: str) -> List[str]:
        """A comment's text as RST lines, each prefixed with indent."""
        lines = text.split("\n")
        paragraphs: List[List[str]] = [[]]
        for line in lines:
            if line.strip():
                paragraphs[-1].append(line.rstrip())
            elif paragraphs[-1]:
                paragraphs.append([])
        paragraphs = [p for p in paragraphs if p]
        out: List[str] = []
        margin = 0
        for index, paragraph in enumerate(paragraphs):
            first_indent = len(paragraph[0]) - len(paragraph[0].lstrip())
            if len(paragraph) == 1 and HEADING.match(paragraph[0].strip()) and first_indent == 0:
                word, _, rest = paragraph[0].strip().partition(" ")
                out += [f"{indent}.. rubric:: {word.capitalize()} {self.inline(rest)}".rstrip(), ""]
                following = paragraphs[index + 1] if index + 1 < len(paragraphs) else [""]
                margin = len(following[0]) - len(following[0].lstrip())
                continue
            if first_indent < margin:
                margin = 0
            body = [line[margin:] if line[:margin].strip() == "" else line.lstrip() for line in paragraph]
            indents = [len(line) - len(line.lstrip()) for line in body]
            if all(n == 0 for n in indents):
                out += [indent + self.inline(line) for line in body] + [""]
            elif body[0].startswith("- ") and all(
                    n >= 2 or line.startswith("- ") for n, line in zip(indents, body)):
                out += [indent + self.inline(line) for line in body] + [""]
            else:
                out += [f"{indent}.. code-block:: text", ""]
                out += [indent + "   " + line for line in body] + [""]
        return out

    def render(self) -> str:
        out: List[str] = []
        out += self.block(self.header.overview, "")
        for section in self.header.sections:
            title = section.title
            out += [title, "=" * len(title), ""]
            for item in section.items:
                out += self.item(item)
        return "\n".join(out) + "\n"

    def item(self, item) -> List[str]:
        if isinstance(item, Prose):
            return self.block(item.text, "")
        if isinstance(item, Macro):
            out = [f".. c:macro:: {item.name}{item.params}", ""]
            if item.value:
                out += [f"   ``#define {item.name}{item.params} {item.value}``", ""]
            return out + self.block(item.doc, "   ")
        if isinstance(item, Function):
            return [f".. c:function:: {item.declaration}", ""] + self.block(item.doc, "   ")
        if isinstance(item, TypeAlias):
            return [f".. c:type:: {item.declaration}", ""] + self.block(item.doc, "   ")
        if isinstance(item, Struct):
            out = [f".. c:struct:: {item.name}", ""] + self.block(item.doc, "   ")
            if not item.members:
                out += ["   An opaque handle: only pointers to it are used.", ""]
            for member in item.members:
                out += [f"   .. c:member:: {member.declaration}", ""]
                out += self.block(member.doc, "      ")
            return out
        raise TypeError(item)


def _escape(text: str) -> str:
    return re.sub(r"([\\*`|_\[\]])", r"\\\1", text)


def render_header(path: Path) -> str:
    return Renderer(parse_header(path.read_text())).render()


class CHeaderReference(Directive):
    """``c-header-reference <path>``: the C reference of a header, the path
    relative to the repository (the parent of the documentation's source)."""

    required_arguments = 1

    def run(self) -> List[nodes.Node]:
        env = self.state.document.settings.env
        path = (Path(env.srcdir).parent / self.arguments[0]).resolve()
        env.note_dependency(str(path))
        text = render_header(path)
        document = new_document(str(path), self.state.document.settings)
        document.reporter = self.state.document.reporter
        Parser().parse(text, document)
        return list(document.children)


def setup(app):
    app.add_directive("c-header-reference", CHeaderReference)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
