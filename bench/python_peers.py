"""loadstate from Python against what Python users pick instead, in one run.

Sections (``--only`` picks some, comma-separated):

* ``http1k``, ``http1m``: GETs of a 1 KiB and a 1 MiB file from a local
  nginx (Debian's, started here on 127.0.0.1 with a configuration of its
  own), N requests at concurrency C, every answer checked (status 200, the
  body's length). loadstate: the http loader (libcurl on the runtime's
  loop), C asyncio workers each awaiting ``cell.get(url)`` on a cell of its
  own. pycurl: a ``CurlMulti`` driven from Python the way pycurl's own
  example does it (``perform``, ``info_read``, ``select``), C easy handles
  reused, each body written into a ``BytesIO``. aiohttp and httpx: one
  client session with a pool of C connections, C asyncio workers.
* ``flight``: K concurrent awaits of one key, with sharing, timed from the
  first call (making loadstate's cells included) to the last result.
  loadstate: K cells each loading the key with ``share=True``, awaited
  together; and K awaits of the one-shot ``loader.fetch(key)``. An ``async
  def`` loader that waits until every await has been asked for. asyncio:
  the plain single flight (the first caller starts the fetch with
  ``ensure_future`` and keeps the future in a dict, the others await that
  future), with the same loader. Each checks that the loader ran once and
  that every await got the value.
* ``memory``: M keys in a memory cache, 100-byte and 10 KiB values: puts
  into a new cache, puts that replace every entry, and gets:
  ``rt.memory_cache()`` (as a mapping) against ``cachetools.TTLCache``.
* ``persistent``: the same in a file: ``rt.persistent_cache(path)`` against
  ``diskcache.Cache(dir)``.

Every variant runs R rounds, interleaved (round 1 of each variant, then
round 2, ...). Printed per variant: the median rate, the median wall time
and the median CPU time of the whole process (every thread: the runtime's
loop thread counts; nginx's does not) per round, and the ratio of
loadstate's median rate to each peer's.

Peers come from PyPI (``pip install pycurl aiohttp httpx cachetools
diskcache``) and nginx from Debian (``apt-get install nginx``); ``--setup``
installs what is missing, as ``make bench-python-peers`` does.

Usage: python3 bench/python_peers.py [--only SECTIONS] [-n REQUESTS] [--big-requests N] [-c CONCURRENCY]
       [-k AWAITS] [-m KEYS] [-r ROUNDS] [--setup]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import io
import os
import platform
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bindings" / "python"))

import loadstate  # noqa: E402

PEERS = {"pycurl": "pycurl", "aiohttp": "aiohttp", "httpx": "httpx", "cachetools": "cachetools",
         "diskcache": "diskcache"}


def setup() -> None:
    """Installs the peers from PyPI and nginx from Debian when they are missing."""
    missing = []
    for module, package in PEERS.items():
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(package)
    if missing:
        print("installing from PyPI:", " ".join(missing), flush=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", *missing], check=True)
    if not (PYCURL_SYSTEM / "pycurl").exists():
        # pycurl's wheel carries a libcurl of its own (8.x); this one is built against the
        # system's (Debian's libcurl4-openssl-dev), the libcurl loadstate uses.
        print("building pycurl against the system's libcurl", flush=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-binary", "pycurl", "--no-deps",
                        "--target", str(PYCURL_SYSTEM), "pycurl"], check=True,
                       env=dict(os.environ, PYCURL_SSL_LIBRARY="openssl"))
    if shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists():
        print("installing nginx (apt-get)", flush=True)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "update", "-q"], check=True, env=env, stdout=subprocess.DEVNULL)
        subprocess.run(["apt-get", "install", "-y", "-q", "nginx"], check=True, env=env, stdout=subprocess.DEVNULL)


# -- nginx ---------------------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Nginx:
    """Debian's nginx on 127.0.0.1 and a free port, serving the files of a folder of its own."""

    def __init__(self, files: Dict[str, bytes]) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="lds-bench-nginx-"))
        self.dir.chmod(0o755)  # nginx's workers drop root and must read the files
        (self.dir / "www").mkdir(mode=0o755)
        for name, data in files.items():
            (self.dir / "www" / name).write_bytes(data)
        self.port = free_port()
        conf = self.dir / "nginx.conf"
        conf.write_text(f"""
worker_processes 1;
daemon off;
pid {self.dir}/nginx.pid;
error_log {self.dir}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    keepalive_timeout 60s;
    types {{ }}
    default_type application/octet-stream;
    server {{
        listen 127.0.0.1:{self.port} backlog=4096;
        root {self.dir}/www;
    }}
}}
""")
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        self.process = subprocess.Popen([binary, "-c", str(conf), "-p", str(self.dir), "-e", str(self.dir / "error.log")],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"nginx did not start: {self.process.stderr.read() if self.process.stderr else ''}")
                time.sleep(0.02)

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"

    def close(self) -> None:
        self.process.send_signal(signal.SIGQUIT)
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


# -- HTTP clients --------------------------------------------------------------------------------------------------


def http_loadstate(url: str, size: int, n: int, concurrency: int) -> None:
    async def main() -> None:
        async with loadstate.Runtime(delivery=loadstate.Delivery.POLL) as rt:
            http = rt.http_loader(max_connections=concurrency)
            per_worker = [n // concurrency + (1 if i < n % concurrency else 0) for i in range(concurrency)]

            async def worker(count: int) -> None:
                cell = rt.loadable(http)
                for _ in range(count):
                    response = await cell.get(url)
                    if response.status != 200 or len(response.body) != size:
                        raise AssertionError(f"loadstate: {response.status}, {len(response.body)} bytes")
                cell.close()

            await asyncio.gather(*(worker(count) for count in per_worker))

    asyncio.run(main())


def http_loadstate_callbacks(url: str, size: int, n: int, concurrency: int) -> None:
    """The same GETs driven by event callbacks, the way the pycurl program is driven: no coroutine per
    request; each cell starts its next load from the callback that reports the last one, and the
    thread waits in ``rt.poll`` (``select`` on the runtime's descriptor) as pycurl's waits in
    ``multi.select``."""
    with loadstate.Runtime(delivery=loadstate.Delivery.POLL) as rt:
        http = rt.http_loader(max_connections=concurrency)
        left = [n - min(n, concurrency)]
        done = [0]

        def follow(cell: "loadstate.Loadable[loadstate.HttpResponse]") -> Callable[[Any], None]:
            def on_event(event: Any) -> None:
                if event.status == loadstate.Status.LOADING:
                    return
                response = event.value
                if event.status != loadstate.Status.LOADED or len(response.body) != size:
                    raise AssertionError(f"loadstate: {event}")
                done[0] += 1
                if left[0]:
                    left[0] -= 1
                    cell.load(url)
            return on_event

        cells = [rt.loadable(http) for _ in range(min(n, concurrency))]
        for cell in cells:
            cell.subscribe(follow(cell), progress=False)
            cell.load(url)
        while done[0] < n:
            rt.poll(1.0)
        for cell in cells:
            cell.close()


def http_pycurl(url: str, size: int, n: int, concurrency: int) -> None:
    import pycurl

    multi = pycurl.CurlMulti()
    free: List[Any] = []
    for _ in range(min(concurrency, n)):
        easy = pycurl.Curl()
        easy.setopt(pycurl.URL, url)
        free.append(easy)
    started = done = 0
    buffers: Dict[Any, io.BytesIO] = {}
    while done < n:
        while free and started < n:
            easy = free.pop()
            buffer = io.BytesIO()
            buffers[easy] = buffer
            easy.setopt(pycurl.WRITEDATA, buffer)
            multi.add_handle(easy)
            started += 1
        while multi.perform()[0] == pycurl.E_CALL_MULTI_PERFORM:
            pass
        while True:
            queued, ok, failed = multi.info_read()
            for easy in ok:
                status = easy.getinfo(pycurl.RESPONSE_CODE)
                body = buffers.pop(easy).getvalue()
                if status != 200 or len(body) != size:
                    raise AssertionError(f"pycurl: {status}, {len(body)} bytes")
                multi.remove_handle(easy)
                free.append(easy)
                done += 1
            if failed:
                raise AssertionError(f"pycurl: {failed[0][2]}")
            if queued == 0:
                break
        if done < n:
            multi.select(1.0)
    for easy in free:
        easy.close()
    multi.close()


PYCURL_SYSTEM = Path(__file__).resolve().parent.parent / "build" / "bench" / "pycurl-system"


def pycurl_in_child(url: str, size: int, n: int, concurrency: int, path: Optional[Path]) -> Tuple[float, float]:
    """Runs http_pycurl in a child Python (with ``path`` first on its import path: a pycurl built
    against the system's libcurl), which reports the wall and CPU seconds of the GETs alone."""
    code = ("import sys, time; sys.path.insert(0, sys.argv[1]) if sys.argv[1] else None; "
            "sys.path.insert(1, sys.argv[2]); import python_peers as p; "
            "w, c = time.perf_counter(), time.process_time(); "
            "p.http_pycurl(sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])); "
            "print(time.perf_counter() - w, time.process_time() - c)")
    out = subprocess.run([sys.executable, "-c", code, str(path) if path else "", str(Path(__file__).parent), url,
                          str(size), str(n), str(concurrency)], check=True, capture_output=True, text=True).stdout
    wall, cpu = out.split()
    return float(wall), float(cpu)


def http_aiohttp(url: str, size: int, n: int, concurrency: int) -> None:
    import aiohttp

    async def main() -> None:
        connector = aiohttp.TCPConnector(limit=concurrency)
        async with aiohttp.ClientSession(connector=connector) as session:
            async def worker(count: int) -> None:
                for _ in range(count):
                    async with session.get(url) as response:
                        body = await response.read()
                        if response.status != 200 or len(body) != size:
                            raise AssertionError(f"aiohttp: {response.status}, {len(body)} bytes")

            await asyncio.gather(*(worker(n // concurrency + (1 if i < n % concurrency else 0))
                                   for i in range(concurrency)))

    asyncio.run(main())


def http_httpx(url: str, size: int, n: int, concurrency: int) -> None:
    import httpx

    async def main() -> None:
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        async with httpx.AsyncClient(limits=limits) as client:
            async def worker(count: int) -> None:
                for _ in range(count):
                    response = await client.get(url)
                    if response.status_code != 200 or len(response.content) != size:
                        raise AssertionError(f"httpx: {response.status_code}, {len(response.content)} bytes")

            await asyncio.gather(*(worker(n // concurrency + (1 if i < n % concurrency else 0))
                                   for i in range(concurrency)))

    asyncio.run(main())


# -- single flight -------------------------------------------------------------------------------------------------


def flight_loadstate(k: int) -> Callable[[], None]:
    """K cells, each awaiting ``cell.load(key, share=True)``; timed from making the cells to the last
    result."""
    def run() -> None:
        async def main() -> None:
            async with loadstate.Runtime(delivery=loadstate.Delivery.POLL) as rt:
                release = asyncio.Event()
                calls = 0

                @rt.loader
                async def slow(job: loadstate.Job[bytes]) -> bytes:
                    nonlocal calls
                    calls += 1
                    await release.wait()
                    return b"the value"

                global _timed_start
                _timed_start = (time.perf_counter(), time.process_time())
                cells = [rt.loadable(slow) for _ in range(k)]
                gathered = asyncio.gather(*(cell.load(b"key", share=True) for cell in cells))
                await asyncio.sleep(0)
                release.set()
                values = await gathered
                _timed_end.append((time.perf_counter(), time.process_time()))
                if calls != 1 or any(v.value != b"the value" for v in values):
                    raise AssertionError(f"loadstate: {calls} loader calls")
                for cell in cells:
                    cell.close()

        asyncio.run(main())
    return run


def flight_fetch(k: int) -> Callable[[], None]:
    """K awaits of the one-shot ``loader.fetch(key)`` (shared by default): no cell."""
    def run() -> None:
        async def main() -> None:
            async with loadstate.Runtime(delivery=loadstate.Delivery.POLL) as rt:
                release = asyncio.Event()
                calls = 0

                @rt.loader
                async def slow(job: loadstate.Job[bytes]) -> bytes:
                    nonlocal calls
                    calls += 1
                    await release.wait()
                    return b"the value"

                global _timed_start
                _timed_start = (time.perf_counter(), time.process_time())
                gathered = asyncio.gather(*(slow.fetch(b"key") for _ in range(k)))
                await asyncio.sleep(0)
                release.set()
                values = await gathered
                _timed_end.append((time.perf_counter(), time.process_time()))
                if calls != 1 or any(v != b"the value" for v in values):
                    raise AssertionError(f"loadstate fetch: {calls} loader calls")

        asyncio.run(main())
    return run


def flight_asyncio(k: int) -> Callable[[], None]:
    """The plain asyncio single flight: the first caller starts the fetch with ``ensure_future`` and
    keeps the future in a dict; the others await that future."""
    def run() -> None:
        async def main() -> None:
            release = asyncio.Event()
            calls = 0
            inflight: Dict[bytes, asyncio.Future[bytes]] = {}

            async def slow(key: bytes) -> bytes:
                nonlocal calls
                calls += 1
                await release.wait()
                return b"the value"

            async def get(key: bytes) -> bytes:
                future = inflight.get(key)
                if future is None:
                    future = asyncio.ensure_future(slow(key))
                    inflight[key] = future
                    future.add_done_callback(lambda _: inflight.pop(key, None))
                return await future

            global _timed_start
            _timed_start = (time.perf_counter(), time.process_time())
            gathered = asyncio.gather(*(get(b"key") for _ in range(k)))
            await asyncio.sleep(0)
            release.set()
            values = await gathered
            _timed_end.append((time.perf_counter(), time.process_time()))
            if calls != 1 or any(v != b"the value" for v in values):
                raise AssertionError(f"asyncio: {calls} loader calls")

        asyncio.run(main())
    return run


_timed_start: Tuple[float, float] = (0.0, 0.0)
_timed_end: List[Tuple[float, float]] = []


# -- caches --------------------------------------------------------------------------------------------------------


def cache_ops(make: Callable[[], Any], close: Callable[[Any], None], keys: List[str], value: bytes,
              what: str) -> Callable[[], None]:
    """A round on a new cache: puts every key (timed when ``what`` is "put"), then, timed, puts every key
    again ("replace") or gets every key ("get")."""

    def run() -> None:
        cache = make()
        global _timed_start
        _timed_start = (time.perf_counter(), time.process_time())
        for key in keys:
            cache[key] = value
        if what == "replace":
            _timed_start = (time.perf_counter(), time.process_time())
            for key in keys:
                cache[key] = value
        elif what == "get":
            _timed_start = (time.perf_counter(), time.process_time())
            for key in keys:
                if cache[key] is None:
                    raise AssertionError("a miss")
        _timed_end.append((time.perf_counter(), time.process_time()))
        if len(cache[keys[-1]]) != len(value):
            raise AssertionError("a wrong value")
        close(cache)

    return run


# -- rounds --------------------------------------------------------------------------------------------------------


def measure(variants: List[Tuple[str, Callable[[], Any], bool]], rounds: int, ops: int,
            unit: str) -> Dict[str, float]:
    """Runs each variant ``rounds`` times, interleaved; prints medians; returns the median rates.

    A variant flagged True times only the part it marks with ``_timed_start`` / ``_timed_end``; one
    whose run returns ``(wall, cpu)`` measured itself (in a child process)."""
    walls: Dict[str, List[float]] = {name: [] for name, _, _ in variants}
    cpus: Dict[str, List[float]] = {name: [] for name, _, _ in variants}
    for _ in range(rounds):
        for name, run, marked in variants:
            gc.collect()
            _timed_end.clear()
            wall0, cpu0 = time.perf_counter(), time.process_time()
            measured = run()
            wall1, cpu1 = time.perf_counter(), time.process_time()
            if measured is not None:
                (wall0, cpu0), (wall1, cpu1) = (0.0, 0.0), measured
            elif marked:
                (wall0, cpu0), (wall1, cpu1) = _timed_start, _timed_end[-1]
            walls[name].append(wall1 - wall0)
            cpus[name].append(cpu1 - cpu0)
    rates = {}
    print(f"  {'variant':34} {unit + '/s':>12} {'wall s':>9} {'cpu s':>9} {'cpu us/op':>10}")
    for name, _, _ in variants:
        wall, cpu = statistics.median(walls[name]), statistics.median(cpus[name])
        rates[name] = ops / wall
        print(f"  {name:34} {ops / wall:12.0f} {wall:9.3f} {cpu:9.3f} {cpu / ops * 1e6:10.2f}")
    return rates


def ratios(rates: Dict[str, float], ours: str) -> None:
    for name, rate in rates.items():
        if name != ours:
            print(f"  {ours} / {name}: {rates[ours] / rate:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="http1k,http1m,flight,memory,persistent")
    parser.add_argument("-n", type=int, default=10_000, help="HTTP requests per round (1 KiB)")
    parser.add_argument("--big-requests", type=int, default=10_000, help="HTTP requests per round (1 MiB)")
    parser.add_argument("-c", type=int, default=100, help="HTTP concurrency")
    parser.add_argument("-k", type=int, default=10_000, help="concurrent awaits of one key")
    parser.add_argument("-m", type=int, default=100_000, help="cache keys (memory)")
    parser.add_argument("--disk-keys", type=int, default=10_000, help="cache keys (persistent)")
    parser.add_argument("-r", type=int, default=5, help="rounds")
    parser.add_argument("--setup", action="store_true", help="install the peers and nginx when missing")
    args = parser.parse_args()
    if args.setup:
        setup()
    sections = args.only.split(",")
    library = loadstate.load_library()
    print("reproduce: python3 " + " ".join(shlex.quote(a) for a in sys.argv))
    print(f"library: {library.path}; Python {platform.python_version()}; {os.cpu_count()} CPUs")
    versions = []
    for module in PEERS:
        try:
            versions.append(f"{module} {importlib.import_module(module).__version__}")
        except (ImportError, AttributeError):
            pass
    print("peers: " + ", ".join(versions))

    http = [s for s in sections if s.startswith("http")]
    if http:
        files = {"1k": os.urandom(1024), "1m": os.urandom(1 << 20)}
        nginx = Nginx(files)
        print(f"nginx on 127.0.0.1:{nginx.port}")
        try:
            for section in http:
                name = section[4:]
                size = len(files[name])
                n = args.n if name == "1k" else args.big_requests
                url = nginx.url(name)
                print(f"\nHTTP GET of {size} bytes: {n} requests, concurrency {args.c}")
                variants: List[Tuple[str, Callable[[], Any], bool]] = [
                    ("loadstate (asyncio)", lambda: http_loadstate(url, size, n, args.c), False),
                    ("loadstate (callbacks)", lambda: http_loadstate_callbacks(url, size, n, args.c), False),
                    ("pycurl CurlMulti", lambda: http_pycurl(url, size, n, args.c), False),
                    ("pycurl CurlMulti, system libcurl", lambda: pycurl_in_child(url, size, n, args.c, PYCURL_SYSTEM),
                     False),
                    ("aiohttp", lambda: http_aiohttp(url, size, n, args.c), False),
                ]
                if name == "1k":
                    variants.append(("httpx", lambda: http_httpx(url, size, n, args.c), False))
                ratios(measure(variants, args.r, n, "req"), "loadstate (asyncio)")
        finally:
            nginx.close()

    if "flight" in sections:
        print(f"\nsingle flight: {args.k} concurrent awaits of one key (loadstate's cells made in the timing)")
        variants = [("loadstate cells, share=True", flight_loadstate(args.k), True),
                    ("asyncio dict of futures", flight_asyncio(args.k), True)]
        if hasattr(loadstate.Loader, "fetch"):
            variants.insert(1, ("loadstate loader.fetch", flight_fetch(args.k), True))
        rates = measure(variants, args.r, args.k, "await")
        base = rates["asyncio dict of futures"]
        for name, rate in rates.items():
            if name != "asyncio dict of futures":
                print(f"  {name}: {base / rate:.2f}x the time of the asyncio dict of futures")

    if "memory" in sections:
        import cachetools

        keys = [f"key:{i}" for i in range(args.m)]
        for size in (100, 10 * 1024):
            value = os.urandom(size)
            with loadstate.Runtime() as rt:
                for what in ("put", "replace", "get"):
                    print(f"\nmemory cache {what}s: {args.m} keys, {size}-byte values"
                          + (" (puts into a new cache)" if what == "put" else ""))
                    variants = [
                        ("loadstate memory_cache", cache_ops(
                            lambda: rt.memory_cache(max_entries=args.m * 2, max_bytes=1 << 34, ttl=600),
                            lambda c: c.close(), keys, value, what), True),
                        ("cachetools TTLCache", cache_ops(
                            lambda: cachetools.TTLCache(maxsize=args.m * 2, ttl=600), lambda c: None, keys, value,
                            what), True),
                    ]
                    ratios(measure(variants, args.r, args.m, what), "loadstate memory_cache")

    if "persistent" in sections:
        import diskcache

        keys = [f"key:{i}" for i in range(args.disk_keys)]
        for size in (100, 10 * 1024):
            value = os.urandom(size)
            with loadstate.Runtime() as rt, tempfile.TemporaryDirectory(prefix="lds-bench-disk-") as tmp:
                counter = [0]

                def fresh(kind: str) -> str:
                    counter[0] += 1
                    return os.path.join(tmp, f"{kind}-{counter[0]}")

                for what in ("put", "replace", "get"):
                    print(f"\npersistent cache {what}s: {args.disk_keys} keys, {size}-byte values"
                          + (" (puts into a new file)" if what == "put" else ""))
                    variants = [
                        ("loadstate persistent_cache", cache_ops(
                            lambda: rt.persistent_cache(fresh("lds") + ".db", max_bytes=1 << 34),
                            lambda c: c.close(), keys, value, what), True),
                        ("diskcache Cache", cache_ops(
                            lambda: diskcache.Cache(fresh("diskcache"), size_limit=1 << 34),
                            lambda c: c.close(), keys, value, what), True),
                    ]
                    ratios(measure(variants, args.r, args.disk_keys, what), "loadstate persistent_cache")


if __name__ == "__main__":
    main()
