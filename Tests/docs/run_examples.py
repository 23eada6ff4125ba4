#!/usr/bin/env python3
"""Runs every code example of the documentation.

The documentation shows code only through ```{literalinclude} of files, so
that every program a reader sees is one the tests run. This script:

1. scans the Markdown pages (docs/**/*.md) and fails on a code block
   written inline (```c, ```python, ```rust, ```swift, ```sh and their
   aliases, or a code-block directive of those languages); ```console and
   ```text blocks, for commands and their output, are fine;
2. collects every literalinclude target; one outside the examples folder
   (docs/examples/) is allowed only when another test runs that file
   (OUTSIDE_RUN_ELSEWHERE below); a target that does not exist fails;
3. runs every example of the examples folder: `*.c` compiled with
   `cc -std=c11 -Wall -Wextra -Werror -Iinclude` against the debug
   library (.build/debug/libloadstate.so, found through an rpath) and run;
   `*.py` run by the python3 on PATH with PYTHONPATH=bindings/python and
   LOADSTATE_LIBRARY set; `*.rs` built by cargo (warnings as errors) as
   programs of a package that depends on the crate of bindings/rust
   (build/docs-examples/rust), linked with the same library. Each gets the base URL of a local test server
   (Tests/support/http_server.py) as its first argument, must exit 0
   within the time limit (60 s), and when `<file>.expected` (hello.c.expected)
   or `<stem>.expected` (hello.expected) sits beside it, must print
   exactly that on its standard output. A program in another language
   (Swift, shell, ...) fails: it would not be run; show it from a file
   another test runs (OUTSIDE_RUN_ELSEWHERE). Other files of the folder
   (outputs shown with literalinclude, data) are not run.

   usage: python3 Tests/docs/run_examples.py [--docs DIR] [--examples DIR] [--timeout S]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent.parent
LIBRARY_DIR = ROOT / ".build" / "debug"

# Languages whose code must come from a file, by the names a fence or a
# code-block directive may give them.
CODE_LANGUAGES = {
    "c", "h", "cpp", "c++", "python", "py", "python3", "py3", "pycon", "rust", "rs", "swift",
    "sh", "bash", "shell", "zsh",
}

# Files outside docs/examples/ that a page may include, because another test
# runs them as they are.
OUTSIDE_RUN_ELSEWHERE = {
    "examples/hello.c": "make test-c (c-hello) builds and runs it; readme-check compares it with the README",
    "examples/batch.c": "make test-c (c-hello) builds and runs it",
    "examples/trace.c": "make test-c (c-trace) runs it and checks its spans",
    "examples/demo.c": "make demo-check runs it",
    "examples/swift-tour/Tour.swift": "make readme-swift-check runs it against the test server",
    "examples/swift/Example.swift": "make test-swift runs it (swift run LoadstateExample)",
    "bindings/rust/examples/tour.rs": "make test-rust runs it (cargo run --example tour)",
    "examples/gtk/loadstate-gtk.c": "make test-gui-gtk (part of make test) builds it and runs it under Xvfb",
    "examples/swift-gtk/Sources/LoadstateGTK/main.swift": "make test-gui-swift builds it and runs it under Xvfb (part of make test)",
    "Tests/gui/swift-gtk.expected": "the output make test-gui-swift compares the Swift GTK example's with",
    "Tests/gui/gtk.expected": "the output make test-gui-gtk compares the GTK example's with",
    "bindings/python/examples/gui_tk.py": "make test-python (tests/test_gui_examples.py) runs it under Xvfb",
    "bindings/python/examples/gui_qt.py": "make test-python (tests/test_gui_examples.py) runs it under Xvfb",
}

RUNNABLE = (".c", ".py", ".rs")
# Programs the runner cannot run, so they may not sit among the examples.
NOT_RUNNABLE = {".swift", ".sh", ".bash", ".h", ".cpp", ".cc", ".cxx", ".m", ".go", ".js", ".ts", ".rb", ".pl"}

FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,}|:{3,})\s*(?P<info>.*)$")
RST_CODE = re.compile(r"^\s*\.\.\s+(code-block|code|sourcecode|literalinclude)::\s*(.*)$")


class Problems(list):
    def add(self, where: str, what: str) -> None:
        self.append(f"{where}: {what}")


def _blocks(lines: List[str], start: int = 0, end: Optional[int] = None):
    """(line number, fence info, content lines) of each fenced block of a
    Markdown text, directives' content included (it is Markdown too)."""
    end = len(lines) if end is None else end
    i = start
    while i < end:
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        fence, info = match.group("fence"), match.group("info").strip()
        j = i + 1
        while j < end:
            closing = FENCE.match(lines[j])
            if closing and closing.group("fence")[0] == fence[0] and len(closing.group("fence")) >= len(fence) \
                    and not closing.group("info").strip():
                break
            j += 1
        yield i + 1, info, lines[i + 1:j]
        if info.startswith("{") and not info.startswith(("{eval-rst}", "{literalinclude}", "{code")):
            yield from _blocks(lines, i + 1, j)
        i = j + 1


def _directive(info: str) -> Tuple[str, str]:
    match = re.match(r"^\{([\w:-]+)\}\s*(.*)$", info)
    return (match.group(1), match.group(2).strip()) if match else ("", info.split()[0] if info else "")


def scan_pages(docs: Path, problems: Problems) -> List[Tuple[str, Path]]:
    """Checks the pages for inline code; returns (where, target) of every literalinclude."""
    includes = []
    for page in sorted(docs.rglob("*.md")):
        if "_build" in page.parts:
            continue
        lines = page.read_text().split("\n")
        for line_no, info, content in _blocks(lines):
            where = f"{page.relative_to(ROOT) if ROOT in page.parents else page}:{line_no}"
            name, argument = _directive(info)
            if not name:
                language = argument.lower()
                if language in CODE_LANGUAGES:
                    problems.add(where, f"a ```{language} block written inline: show code with ```{{literalinclude}} "
                                        "of a file under docs/examples/ (```console or ```text for commands and output)")
            elif name in ("code-block", "code", "sourcecode", "code-cell"):
                if argument.lower() in CODE_LANGUAGES:
                    problems.add(where, f"a {{{name}}} {argument} block written inline: use {{literalinclude}}")
            elif name == "literalinclude":
                includes.append((where, _resolve(docs, page, argument)))
            elif name == "eval-rst":
                for offset, rst_line in enumerate(content):
                    rst = RST_CODE.match(rst_line)
                    if not rst:
                        continue
                    rst_where = f"{where.rsplit(':', 1)[0]}:{line_no + 1 + offset}"
                    if rst.group(1) == "literalinclude":
                        includes.append((rst_where, _resolve(docs, page, rst.group(2).strip())))
                    elif rst.group(2).strip().lower() in CODE_LANGUAGES:
                        problems.add(rst_where, f".. {rst.group(1)}:: {rst.group(2).strip()} written inline: "
                                                "use literalinclude")
    return includes


def _resolve(docs: Path, page: Path, argument: str) -> Path:
    # As Sphinx reads it: relative to the page, or to the source folder when it begins with /.
    if argument.startswith("/"):
        return (docs / argument.lstrip("/")).resolve()
    return (page.parent / argument).resolve()


def check_includes(includes: List[Tuple[str, Path]], examples: Path, problems: Problems) -> None:
    for where, target in includes:
        if not target.is_file():
            problems.add(where, f"literalinclude of {target}: no such file")
        elif examples.resolve() in target.parents:
            continue
        else:
            relative = target.relative_to(ROOT).as_posix() if ROOT in target.parents else str(target)
            if relative not in OUTSIDE_RUN_ELSEWHERE:
                problems.add(where, f"literalinclude of {relative}, outside {examples}: put the example in "
                                    "docs/examples/ (where it is run), or add it to OUTSIDE_RUN_ELSEWHERE of "
                                    "Tests/docs/run_examples.py with the test that runs it")


class Server:
    """Tests/support/http_server.py: prints its port, serves until its stdin closes."""

    def __enter__(self) -> str:
        self.process = subprocess.Popen([sys.executable, str(ROOT / "Tests" / "support" / "http_server.py")],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        port = self.process.stdout.readline().strip()
        if not port.isdigit():
            self.process.kill()
            raise RuntimeError(f"the test server printed {port!r}, not its port")
        return f"http://127.0.0.1:{port}"

    def __exit__(self, *exc) -> None:
        self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _expected(example: Path) -> Optional[Path]:
    for candidate in (example.with_name(example.name + ".expected"), example.with_suffix(".expected")):
        if candidate.is_file():
            return candidate
    return None


def build_rust(examples: List[Path], problems: Problems) -> Optional[Path]:
    """Builds the Rust examples as the programs of one package that depends
    on bindings/rust; returns the folder of the binaries."""
    cargo = shutil.which("cargo") or str(Path.home() / ".cargo" / "bin" / "cargo")
    project = ROOT / "build" / "docs-examples" / "rust"
    project.mkdir(parents=True, exist_ok=True)
    bins = "".join(f'\n[[bin]]\nname = "{e.stem}"\npath = "{e}"\n' for e in examples)
    (project / "Cargo.toml").write_text(
        '[package]\nname = "docs-examples"\nversion = "0.0.0"\nedition = "2024"\npublish = false\n\n'
        f'[dependencies]\nloadstate = {{ path = "{ROOT / "bindings" / "rust"}" }}\n\n[workspace]\n{bins}')
    env = dict(os.environ, LOADSTATE_LIB_DIR=str(LIBRARY_DIR), RUSTFLAGS=f"-D warnings -C link-arg=-Wl,-rpath,{LIBRARY_DIR}",
               CARGO_TARGET_DIR=str(project / "target"))
    built = subprocess.run([cargo, "build", "--offline", "--quiet", "--bins"], cwd=project, env=env,
                           capture_output=True, text=True)
    if built.returncode != 0:
        names = ", ".join(e.name for e in examples)
        problems.add(names, f"the Rust examples do not build (cargo, warnings as errors):\n{built.stderr.strip()}")
        return None
    return project / "target" / "debug"


def run_example(example: Path, url: str, scratch: Path, timeout: float, problems: Problems,
                rust_bin: Optional[Path] = None) -> Optional[str]:
    where = str(example.relative_to(ROOT) if ROOT in example.parents else example)
    env = dict(os.environ)
    if example.suffix == ".c":
        binary = scratch / example.stem
        compile_command = ["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", f"-I{ROOT / 'include'}", str(example),
                           "-o", str(binary), f"-L{LIBRARY_DIR}", "-lloadstate", f"-Wl,-rpath,{LIBRARY_DIR}", "-pthread"]
        compiled = subprocess.run(compile_command, capture_output=True, text=True)
        if compiled.returncode != 0:
            problems.add(where, f"does not compile:\n{compiled.stderr.strip()}")
            return None
        command = [str(binary), url]
    elif example.suffix == ".py":
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "bindings" / "python"), env.get("PYTHONPATH")]))
        env.setdefault("LOADSTATE_LIBRARY", str(LIBRARY_DIR / "libloadstate.so"))
        command = ["python3", str(example), url]
    elif example.suffix == ".rs":
        if rust_bin is None:
            return None
        command = [str(rust_bin / example.stem), url]
    else:
        return None
    started = time.monotonic()
    try:
        ran = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        problems.add(where, f"did not end within {timeout:g} s")
        return None
    took = time.monotonic() - started
    if ran.returncode != 0:
        problems.add(where, f"exited with {ran.returncode}:\n{ran.stdout}{ran.stderr}".rstrip())
        return None
    expected = _expected(example)
    if expected is not None and ran.stdout != expected.read_text():
        import difflib

        diff = "".join(difflib.unified_diff(expected.read_text().splitlines(True), ran.stdout.splitlines(True),
                                            str(expected.name), "output"))
        problems.add(where, f"its output differs from {expected.name}:\n{diff}".rstrip())
        return None
    return f"{where}: ran in {took:.2f} s" + (f", output as {expected.name}" if expected else "")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=Path, default=ROOT / "docs")
    parser.add_argument("--examples", type=Path, default=None, help="default: DOCS/examples")
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args(argv)
    docs = args.docs.resolve()
    examples = (args.examples or docs / "examples").resolve()

    problems = Problems()
    includes = scan_pages(docs, problems)
    check_includes(includes, examples, problems)
    files = sorted(p for p in examples.rglob("*") if p.is_file()) if examples.is_dir() else []
    runnable = [p for p in files if p.suffix in RUNNABLE]
    for program in (p for p in files if p.suffix in NOT_RUNNABLE):
        problems.add(str(program.relative_to(ROOT) if ROOT in program.parents else program),
                     f"no runner for {program.suffix} files: examples are C, Python or Rust programs "
                     "(or files another test runs, shown from where they are)")
    if runnable:
        if not (LIBRARY_DIR / "libloadstate.so").is_file():
            problems.add(str(LIBRARY_DIR), "libloadstate.so is not built (make lib)")
        else:
            rust = [p for p in runnable if p.suffix == ".rs"]
            rust_bin = build_rust(rust, problems) if rust else None
            with Server() as url, tempfile.TemporaryDirectory() as scratch:
                for example in runnable:
                    done = run_example(example, url, Path(scratch), args.timeout, problems, rust_bin)
                    if done:
                        print(done)
    for problem in problems:
        print(f"run_examples: {problem}", file=sys.stderr)
    print(f"run_examples: {len(includes)} literalinclude(s), {len(runnable)} example(s) run, "
          f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
