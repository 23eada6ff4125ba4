"""Internal links of a built site: every href and src of every HTML page
Sphinx wrote must reach a file of the site, and its #anchor an id (or a
name) in that file. Links into the API archives (api/rust, api/swift) are
checked to the file: their pages build anchors with scripts. External links
(http, https, mailto) are not fetched."""

from html.parser import HTMLParser
from pathlib import Path
from typing import Dict, List, Optional, Set
from urllib.parse import unquote, urlsplit

ARCHIVES = ("api/rust", "api/swift")


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: List[str] = []
        self.anchors: Set[str] = set()

    def handle_starttag(self, tag: str, attrs) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name in ("href", "src") and not (tag == "link" and ("rel", "preconnect") in attrs):
                self.links.append(value)
            elif name == "id" or (name == "name" and tag == "a"):
                self.anchors.add(value)


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(errors="replace"))
    return page


def broken_links(site: Path) -> List[str]:
    """Every broken internal link of the site, as "page: link (why)"."""
    site = site.resolve()
    parsed: Dict[Path, _Page] = {}

    def page(path: Path) -> _Page:
        if path not in parsed:
            parsed[path] = _parse(path)
        return parsed[path]

    problems = []
    pages = [p for p in sorted(site.rglob("*.html"))
             if not any(p.relative_to(site).as_posix().startswith(a + "/") for a in ARCHIVES)]
    for source in pages:
        for link in page(source).links:
            why = _check(site, source, link, page)
            if why:
                problems.append(f"{source.relative_to(site)}: {link} ({why})")
    return problems


def _check(site: Path, source: Path, link: str, page) -> Optional[str]:
    parts = urlsplit(link)
    if parts.scheme or parts.netloc:
        return None if parts.scheme in ("http", "https", "mailto", "data") else f"scheme {parts.scheme}"
    if not parts.path:
        target = source
    elif parts.path.startswith("/"):
        return "an absolute path: the site must work under any base path"
    else:
        target = (source.parent / unquote(parts.path)).resolve()
    if site not in target.parents and target != site:
        return "outside the site"
    if target.is_dir():
        target = target / "index.html"
    if not target.is_file():
        return "no such file"
    if not parts.fragment:
        return None
    relative = target.relative_to(site).as_posix()
    if any(relative.startswith(a + "/") for a in ARCHIVES) or target.suffix != ".html":
        return None
    if unquote(parts.fragment) not in page(target).anchors:
        return f"no anchor #{parts.fragment} in {relative}"
    return None
