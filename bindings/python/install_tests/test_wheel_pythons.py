"""The manylinux wheel of ``make python-wheel``, installed in a fresh venv of every Python 3 >= 3.9 here.

Each venv installs the one wheel of build/python with ``pip install
--no-index --find-links``, then runs ``CHECK`` from a temporary folder with
no checkout on the path and a user's environment: it loads, fetches over
HTTPS from a local TLS server whose certificate is signed by a CA made for
the test, and uses the memory, persistent and Redis caches (a redis-server
started here). The CA reaches the library only through ``SSL_CERT_FILE``,
as the package hands the host's CA certificates to it; without it, the
fetch must fail verification. ``auditwheel show`` (from build/python-venv)
must call the wheel manylinux.
"""

from __future__ import annotations

import glob
import http.server
import os
import re
import ssl
import subprocess
import sys
import threading
from pathlib import Path
from typing import Dict, Iterator, List

import pytest

HERE = Path(__file__).resolve().parent
REPOSITORY = HERE.parent.parent.parent
WHEEL_DIR = REPOSITORY / "build" / "python"
BUILD_VENV = REPOSITORY / "build" / "python-venv"
sys.path.insert(0, str(HERE.parent / "tests"))
from redis_server import RedisServer  # noqa: E402  (the tests' real redis-server)

# Variables of this repository's make and tests, and the CA settings the test sets itself.
NOT_A_USERS = ("LOADSTATE_LIBRARY", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHON", "MAKEFLAGS", "MFLAGS",
               "MAKELEVEL", "MAKEOVERRIDES", "SSL_CERT_FILE", "SSL_CERT_DIR", "LOADSTATE_CA_FILE",
               "LOADSTATE_CA_DIR")
BODY = b"hello over TLS"

CHECK = r"""
import sys, loadstate
url, redis_url, folder, expect = sys.argv[1:5]
library = loadstate.load_library().path
assert library.startswith(sys.prefix), library
with loadstate.Runtime() as rt:
    upper = rt.loadable(rt.loader(lambda job: job.request.upper()))
    assert upper.load(b"installed").value(timeout=10) == b"INSTALLED"
    fetch = rt.loadable(rt.http_loader()).load(url).state(timeout=20)
    if expect == "ok":
        assert fetch.value is not None and fetch.value.body == b"hello over TLS", fetch
    else:
        assert fetch.status == loadstate.Status.ERROR and fetch.error_domain == loadstate.Domain.LOADSTATE, fetch
        print("refused:", fetch.error_message)
    with rt.memory_cache(max_entries=10) as memory:
        memory[b"k"] = b"memory"
        assert memory[b"k"] == b"memory"
    with rt.persistent_cache(folder + "/cache.sqlite") as disk:
        disk[b"k"] = b"disk"
        assert disk[b"k"] == b"disk"
    redis = rt.redis_cache(redis_url, key_prefix=sys.version.split()[0] + ":")
    redis[b"k"] = b"redis"
    assert redis[b"k"] == b"redis"
    assert redis.status().connected
print("ok", sys.version.split()[0], library)
"""


def pythons() -> List[str]:
    """Every Python 3 >= 3.9 of this machine, once each (python3 itself at least)."""
    found: Dict[str, str] = {}
    candidates = [sys.executable] + sorted(glob.glob("/root/.pyenv/versions/*/bin/python3")) + ["/usr/bin/python3.11"]
    for candidate in candidates:
        if not os.access(candidate, os.X_OK):
            continue
        done = subprocess.run([candidate, "-c", "import sys, venv; print('%d.%d' % sys.version_info[:2])"],
                              capture_output=True, text=True)
        if done.returncode != 0:
            continue
        version = done.stdout.strip()
        if tuple(map(int, version.split("."))) >= (3, 9):
            found.setdefault(os.path.realpath(candidate), candidate)
    return list(found.values())


PYTHONS = pythons()


def the_wheel() -> Path:
    wheels = sorted(WHEEL_DIR.glob("*.whl"))
    assert len(wheels) == 1, f"expected one wheel in {WHEEL_DIR} (make python-wheel): {wheels}"
    return wheels[0]


def openssl(*arguments: str, cwd: Path) -> None:
    subprocess.run(["openssl", *arguments], cwd=cwd, check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory) -> Iterator[Dict[str, str]]:
    """An HTTPS server on 127.0.0.1 whose certificate a test CA signed: its URL and the CA's file."""
    folder = tmp_path_factory.mktemp("tls")
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=loadstate install test CA", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=folder)
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
            "-subj", "/CN=127.0.0.1", cwd=folder)
    (folder / "server.ext").write_text("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
                                       "extendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "server.pem", "-days", "2", "-extfile", "server.ext", cwd=folder)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            self.send_response(200)
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(folder / "server.pem"), str(folder / "server.key"))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield {"url": f"https://127.0.0.1:{server.server_address[1]}/", "ca": str(folder / "ca.pem")}
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


def test_auditwheel_calls_the_wheel_manylinux():
    shown = subprocess.run([str(BUILD_VENV / "bin" / "auditwheel"), "show", str(the_wheel())],
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    tag = re.search(r'platform\s+tag:\s+"([^"]+)"', shown.stdout)
    assert tag is not None and tag.group(1).startswith("manylinux_"), shown.stdout
    assert the_wheel().name.endswith(f"-py3-none-{tag.group(1)}.whl")


def test_there_is_a_python_to_install_into():
    assert PYTHONS and PYTHONS[0] == sys.executable


@pytest.mark.parametrize("python", PYTHONS)
def test_the_wheel_installs_and_works(tmp_path, python, tls_server, redis):
    venv = tmp_path / "venv"
    subprocess.run([python, "-m", "venv", str(venv)], check=True, timeout=300)
    env = {name: value for name, value in os.environ.items() if name not in NOT_A_USERS}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    installed = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-index",
                                "--find-links", str(WHEEL_DIR), "loadstate"],
                               cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stdout + installed.stderr

    def check(expect: str, extra: Dict[str, str]) -> str:
        done = subprocess.run([str(venv / "bin" / "python"), "-c", CHECK, tls_server["url"], redis.url,
                               str(tmp_path), expect], cwd=tmp_path, env=dict(env, **extra),
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    # The test CA through SSL_CERT_FILE, as the host's CA bundle: the fetch is verified and succeeds.
    assert check("ok", {"SSL_CERT_FILE": tls_server["ca"]}).startswith("ok")
    # Without it the host's own CA certificates do not know the test CA: verification fails.
    assert "refused:" in check("refused", {})


def test_the_sdist_without_a_swift_toolchain_fails_naming_it(tmp_path):
    """Building the sdist where ``swift`` is not on PATH stops at once and says what is missing.

    (Where it is, the same build compiles the library; that takes minutes, so it is not run here.)
    """
    sdists = sorted((REPOSITORY / "build" / "python-sdist").glob("loadstate-*.tar.gz"))
    assert len(sdists) == 1, f"expected one sdist (make python-sdist): {sdists}"
    env = {name: value for name, value in os.environ.items() if name not in NOT_A_USERS}
    env["PATH"] = os.pathsep.join(folder for folder in env.get("PATH", "").split(os.pathsep)
                                  if folder and not os.path.exists(os.path.join(folder, "swift")))
    env["PATH"] = f"{BUILD_VENV / 'bin'}{os.pathsep}{env['PATH']}"
    built = subprocess.run([str(BUILD_VENV / "bin" / "pip"), "wheel", "--no-build-isolation", "--no-deps",
                            "--no-index", "-w", str(tmp_path), str(sdists[0])],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert built.returncode != 0
    assert "building loadstate from its sources needs the Swift toolchain (swift 6.0 or later on PATH)" in \
        built.stdout + built.stderr, built.stdout + built.stderr
    assert not list(tmp_path.glob("*.whl"))
