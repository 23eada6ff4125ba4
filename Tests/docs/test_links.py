"""Every internal link of the built site resolves (run after `make docs`)."""

from docsite import SITE
from links import broken_links


def test_every_internal_link_resolves():
    assert (SITE / "index.html").is_file(), f"{SITE}: build the site first (make docs)"
    problems = broken_links(SITE)
    assert not problems, "broken links:\n" + "\n".join(problems[:50])


def test_the_references_link_to_the_api_archives():
    rust = (SITE / "reference" / "rust.html").read_text()
    swift = (SITE / "reference" / "swift.html").read_text()
    assert 'href="../api/rust/loadstate/index.html"' in rust
    assert 'href="../api/swift/documentation/loadstate/index.html"' in swift


def test_the_checker_finds_broken_links(tmp_path):
    (tmp_path / "api" / "rust").mkdir(parents=True)
    (tmp_path / "api" / "rust" / "index.html").write_text("<p id='x'>")
    (tmp_path / "b.html").write_text('<h1 id="here">b</h1>')
    (tmp_path / "index.html").write_text(
        '<a href="b.html#here">ok</a> <a href="b.html#gone">anchor</a> <a href="c.html">file</a>'
        ' <img src="_static/none.png"> <a href="https://example.org/x">external</a>'
        ' <a href="api/rust/index.html#made-by-script">archive</a> <a href="#top">self</a>')
    problems = broken_links(tmp_path)
    assert problems == ["index.html: b.html#gone (no anchor #gone in b.html)",
                        "index.html: c.html (no such file)",
                        "index.html: _static/none.png (no such file)",
                        "index.html: #top (no anchor #top in index.html)"], problems
