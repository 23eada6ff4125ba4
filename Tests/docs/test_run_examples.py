"""The examples runner (run_examples.py) passes the fixture's examples and
fails, naming the cause, on each kind of defect it exists to catch."""

import os
import subprocess
import sys
from pathlib import Path

from docsite import ROOT

RUNNER = Path(__file__).resolve().parent / "run_examples.py"
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "docs"


def run(*args):
    return subprocess.run([sys.executable, str(RUNNER), *args], capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_the_fixture_examples_run():
    ran = run("--docs", str(FIXTURE))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "version.c: ran" in ran.stdout and "output as version.expected" in ran.stdout
    assert "fetch.py: ran" in ran.stdout and "output as fetch.expected" in ran.stdout
    assert "version.rs: ran" in ran.stdout and "output as version.rs.expected" in ran.stdout
    assert "4 literalinclude(s), 3 example(s) run, 0 problem(s)" in ran.stdout


def page(tmp_path, text, examples=None):
    (tmp_path / "examples").mkdir()
    (tmp_path / "page.md").write_text(text)
    for name, content in (examples or {}).items():
        (tmp_path / "examples" / name).write_text(content)
    return run("--docs", str(tmp_path), "--timeout", "3")


def test_inline_code_fails(tmp_path):
    ran = page(tmp_path, "# p\n\n````{note}\n```python\nprint(1)\n```\n````\n\n```console\n$ make\n```\n")
    assert ran.returncode == 1
    assert "page.md:4: a ```python block written inline" in ran.stderr, ran.stderr
    assert "1 problem(s)" in ran.stdout


def test_an_include_outside_the_examples_fails_unless_run_elsewhere(tmp_path):
    root = os.path.relpath(ROOT, tmp_path)
    ran = page(tmp_path, f"```{{literalinclude}} {root}/README.md\n```\n\n"
                         f"```{{literalinclude}} {root}/examples/hello.c\n```\n\n"
                         "```{literalinclude} examples/missing.c\n```\n")
    assert ran.returncode == 1
    assert "literalinclude of README.md, outside" in ran.stderr, ran.stderr
    assert "examples/missing.c: no such file" in ran.stderr
    assert "hello.c" not in ran.stderr
    assert "2 problem(s)" in ran.stdout


def test_a_failing_example_fails(tmp_path):
    ran = page(tmp_path, "# p\n", {
        "exits.py": "import sys\nprint('to stderr', file=sys.stderr)\nsys.exit(3)\n",
        "differs.py": "print('two')\n", "differs.expected": "one\n",
        "slow.py": "import time\ntime.sleep(30)\n",
        "broken.c": "int main(void) { int unused; return 0; }\n",
        "url.py": "import sys\nassert sys.argv[1].startswith('http://127.0.0.1:'), sys.argv\n",
        "tour.swift": "print(1)\n",
        "warns.rs": "fn main() { let unused = 1; }\n",
    })
    assert ran.returncode == 1
    assert "exits.py: exited with 3:\nto stderr" in ran.stderr, ran.stderr
    assert "differs.py: its output differs from differs.expected" in ran.stderr and "+two" in ran.stderr
    assert "slow.py: did not end within 3 s" in ran.stderr
    assert "broken.c: does not compile" in ran.stderr and "unused" in ran.stderr
    assert "tour.swift: no runner for .swift files" in ran.stderr
    assert "warns.rs: the Rust examples do not build" in ran.stderr and "unused" in ran.stderr
    assert "url.py: ran" in ran.stdout
    assert "6 problem(s)" in ran.stdout
