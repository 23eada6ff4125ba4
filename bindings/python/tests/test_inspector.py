"""The web inspector spoken to in raw HTTP/1.1: the token, the Host check, the bounds, the live stream, actions."""

from __future__ import annotations

import json
import socket
import time
from typing import Dict, Iterator, Optional, Tuple
from urllib.parse import urlsplit

import pytest
from conftest import WAIT

import loadstate
from loadstate import Status


def parts(url: str) -> Tuple[str, int, str]:
    u = urlsplit(url)
    assert u.hostname and u.port
    return u.hostname, u.port, u.query.split("token=", 1)[1]


def exchange(url: str, raw: bytes) -> Tuple[int, Dict[str, str], bytes]:
    """Sends raw bytes to the inspector of url; returns the status, headers and body of the answer."""
    host, port, _ = parts(url)
    with socket.create_connection((host, port), timeout=WAIT) as s:
        s.sendall(raw)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return int(lines[0].split(" ")[1]), headers, body


def get(url: str, target: str, host: Optional[str] = None) -> Tuple[int, Dict[str, str], bytes]:
    h, port, _ = parts(url)
    return exchange(url, f"GET {target} HTTP/1.1\r\nHost: {host or f'{h}:{port}'}\r\n\r\n".encode())


def snapshots(url: str) -> Iterator[dict]:
    """The snapshots of the event stream, as they come."""
    host, port, token = parts(url)
    s = socket.create_connection((host, port), timeout=WAIT)
    try:
        s.sendall(f"GET /events?token={token} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        buffer = b""
        while b"\r\n\r\n" not in buffer:
            buffer += s.recv(65536)
        head, _, buffer = buffer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 ") and b"Content-Type: text/event-stream" in head
        while True:
            while b"\n\n" not in buffer:
                chunk = s.recv(65536)
                assert chunk, "the stream ended"
                buffer += chunk
            event, _, buffer = buffer.partition(b"\n\n")
            lines = event.decode().split("\n")
            assert lines[0] == "event: snapshot"
            yield json.loads(lines[1].removeprefix("data: "))
    finally:
        s.close()


def test_requests_need_the_token_and_the_bound_host(rt):
    url = rt.start_inspector(interval=0.05)
    host, port, token = parts(url)
    assert url == rt.inspector_url() and len(token) == 32
    status, headers, body = get(url, f"/?token={token}")
    assert status == 200 and b"<title>loadstate inspector</title>" in body
    assert headers["Content-Type"].startswith("text/html")
    assert "connect-src 'self'" in headers["Content-Security-Policy"]
    assert headers["Referrer-Policy"] == "no-referrer" and headers["Cache-Control"] == "no-store"
    # No external resources in the page.
    assert b"src=" not in body and b"href=" not in body and b"@import" not in body
    assert get(url, "/")[0] == 403
    assert get(url, "/?token=" + "0" * 32)[0] == 403
    assert get(url, f"/?token={token[:-1]}")[0] == 403
    assert get(url, f"/?token={token}&token={token}")[0] == 400
    assert get(url, f"/?token={token}", host=f"evil.example:{port}")[0] == 421
    assert get(url, f"/?token={token}", host=f"{host}:{port + 1}")[0] == 421
    assert get(url, f"/?token={token}", host=f"localhost:{port}")[0] == 200
    assert exchange(url, f"GET /?token={token} HTTP/1.1\r\n\r\n".encode())[0] == 421
    assert get(url, f"/nowhere?token={token}")[0] == 404
    status, _, body = get(url, f"/metrics?token={token}")
    assert status == 200 and b"# TYPE loadstate_loads_started_total counter" in body


def test_malformed_and_oversized_requests_are_refused(rt):
    url = rt.start_inspector()
    host, port, token = parts(url)
    authority = f"{host}:{port}"
    assert exchange(url, b"GET / HTTP/1.1\r\nHost: " + authority.encode() + b"\r\nX: " + b"a" * 9000)[0] == 431
    many = b"".join(b"X-%d: 1\r\n" % i for i in range(70))
    assert exchange(url, f"GET /?token={token} HTTP/1.1\r\nHost: {authority}\r\n".encode() + many + b"\r\n")[0] == 431
    assert exchange(url, f"GET /?token={token} HTTP/2.0\r\nHost: {authority}\r\n\r\n".encode())[0] == 505
    assert exchange(url, f"GET /?token={token}\r\nHost: {authority}\r\n\r\n".encode())[0] == 400
    assert exchange(url, f"GET /?token={token} HTTP/1.1\r\nHost: {authority}\r\nHost: {authority}\r\n\r\n"
                    .encode())[0] == 400
    assert exchange(url, f"POST /action?token={token} HTTP/1.1\r\nHost: {authority}\r\nContent-Length: 5\r\n\r\n"
                    .encode())[0] == 413
    assert exchange(url, f"DELETE /?token={token} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode())[0] == 405
    assert exchange(url, f"GET /?token=%zz HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode())[0] == 400
    assert exchange(url, b"GET /\x00 HTTP/1.1\r\nHost: " + authority.encode() + b"\r\n\r\n")[0] == 400
    # Still serving.
    assert get(url, f"/snapshot?token={token}")[0] == 200


def _answer(s: socket.socket) -> bytes:
    """Everything a connection gets until the server closes it."""
    answer = b""
    while True:
        chunk = s.recv(4096)
        if not chunk:
            return answer
        answer += chunk


def test_live_pages_are_bounded_and_idle_connections_answered_408():
    with loadstate.Runtime() as rt:
        url = rt.start_inspector(max_clients=2, idle_timeout=0.2, interval=0.05)
        host, port, token = parts(url)
        started = time.monotonic()
        idle = [socket.create_connection((host, port), timeout=WAIT) for _ in range(3)]
        # No head within the head timeout, counted from the connection's start: 408, then closed.
        for s in idle:
            assert _answer(s).startswith(b"HTTP/1.1 408 ")
            s.close()
        assert time.monotonic() - started < 0.2 + 1.0
        streams = [socket.create_connection((host, port), timeout=WAIT) for _ in range(3)]
        for s in streams:
            s.sendall(f"GET /events?token={token} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        heads = [s.recv(12) for s in streams]
        assert sorted(heads) == [b"HTTP/1.1 200", b"HTTP/1.1 200", b"HTTP/1.1 503"]
        for s in streams:
            s.close()
        assert get(url, f"/snapshot?token={token}")[0] == 200


@pytest.mark.parametrize("raw, status", [
    (b"GET /\r\n", 400),                                  # HTTP/0.9
    (b"GET / HTTP/1.1\nHost: x\n", 400),                  # bare line feeds
    (b"GET / HTTP/2.0\r\nHost: x\r\n", 505),
    (b"GET /\x01", 400),
])
def test_a_head_that_cannot_become_valid_is_answered_at_once(raw, status):
    with loadstate.Runtime() as rt:
        url = rt.start_inspector()  # the head timeout is 3 s
        host, port, _ = parts(url)
        with socket.create_connection((host, port), timeout=WAIT) as s:
            started = time.monotonic()
            s.sendall(raw)
            assert _answer(s).startswith(b"HTTP/1.1 %d " % status)
            assert time.monotonic() - started < 1.0


def test_half_a_head_then_the_end_is_answered_400_at_once():
    with loadstate.Runtime() as rt:
        url = rt.start_inspector()
        host, port, token = parts(url)
        with socket.create_connection((host, port), timeout=WAIT) as s:
            started = time.monotonic()
            s.sendall(f"GET /snapshot?token={token} HTT".encode())
            s.shutdown(socket.SHUT_WR)
            assert _answer(s).startswith(b"HTTP/1.1 400 ")
            assert time.monotonic() - started < 1.0


def test_a_slowloris_does_not_keep_out_a_request_with_the_token():
    # 200 connections trickling a byte of a head each 0.1 s (more than INSPECTOR_WAITING_MAX): a request
    # sent at once is answered within a second, again and again while they last.
    with loadstate.Runtime() as rt:
        url = rt.start_inspector(idle_timeout=30)
        host, port, token = parts(url)
        attackers = [socket.create_connection((host, port), timeout=WAIT) for _ in range(200)]
        head = b"GET / HTTP/1.1\r\nHost: " + f"{host}:{port}".encode() + b"\r\nX-Slow: "
        answered = []
        for round in range(10):
            for s in attackers:
                try:
                    s.send(head[round:round + 1] if round < len(head) else b"a")
                except OSError:
                    pass  # closed to make room: it keeps its place no more
            started = time.monotonic()
            assert get(url, f"/snapshot?token={token}")[0] == 200
            answered.append(time.monotonic() - started)
            time.sleep(0.1)
        assert max(answered) < 1.0, answered
        for s in attackers:
            s.close()
        assert loadstate.INSPECTOR_WAITING_MAX == 64


def test_the_stream_shows_a_cell_go_from_loading_to_loaded(rt, jobs):
    url = rt.start_inspector(interval=0.05, show_values=True)
    cell = rt.loadable(jobs.loader)
    load = cell.load(b"GET /users/7")
    job = jobs.next()
    stream = snapshots(url)
    first = next(stream)
    shown = {c["id"]: c for c in first["cells"]}
    assert shown[cell.id]["status"] == "loading" and shown[cell.id]["request"] == "GET /users/7"
    assert [j["request"] for j in first["jobs"]] == ["GET /users/7"]
    assert first["loaders"][0]["loads"]["jobs_in_flight"] == 1
    job.succeed(b"Ada")
    assert load.value(WAIT) == b"Ada"
    for snapshot in stream:
        c = {c["id"]: c for c in snapshot["cells"]}[cell.id]
        if c["status"] == "loaded":
            break
    assert c["value"] == "Ada" and snapshot["jobs"] == []
    assert snapshot["loaders"][0]["loads"]["succeeded"] == 1


def test_values_are_hidden_unless_allowed(rt):
    cell = rt.loadable(rt.loader(lambda job: b"secret"))
    assert cell.load(b"r").value(WAIT) == b"secret"
    url = rt.start_inspector()
    _, _, token = parts(url)
    snapshot = json.loads(get(url, f"/snapshot?token={token}")[2])
    assert snapshot["cells"][0]["value"] == "(hidden)" and snapshot["values"] is False
    assert b"secret" not in get(url, f"/snapshot?token={token}")[2]


def test_actions_are_off_unless_enabled(rt, jobs):
    cell = rt.loadable(jobs.loader)
    load = cell.load(b"slow")
    jobs.next()
    url = rt.start_inspector()
    host, port, token = parts(url)
    request = f"POST /action?token={token}&do=cancel&cell={cell.id} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n"
    assert exchange(url, request.encode())[0] == 403
    assert cell.snapshot().status == Status.LOADING
    rt.stop_inspector()
    assert rt.inspector_url() is None
    url = rt.start_inspector(actions=True)
    host, port, token = parts(url)
    request = f"POST /action?token={token}&do=cancel&cell={cell.id} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n"
    assert exchange(url, request.encode())[0] == 200
    assert load.state(WAIT).status == Status.ABSENT
    missing = f"POST /action?token={token}&do=cancel&cell=12345 HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n"
    assert exchange(url, missing.encode())[0] == 404


def test_start_refuses_bad_addresses_and_a_second_inspector(rt):
    for address in ("0.0.0.0:0", "10.1.2.3:0", "127.0.0.1", "127.0.0.1:99999", "example.com:80", "::1:0", ""):
        with pytest.raises(loadstate.InvalidArgument):
            rt.start_inspector(address)
    rt.start_inspector()
    with pytest.raises(loadstate.WrongState):
        rt.start_inspector()
    rt.stop_inspector()
    rt.stop_inspector()


def test_the_runtime_closes_its_inspector():
    rt = loadstate.Runtime()
    url = rt.start_inspector()
    host, port, _ = parts(url)
    rt.close()
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        try:
            socket.create_connection((host, port), timeout=1).close()
        except ConnectionRefusedError:
            return
    pytest.fail("the inspector still listens after the runtime closed")


def test_the_snapshot_lists_jobs_waiting_for_a_loaders_limits_with_their_age(rt):
    import queue
    started: "queue.Queue[loadstate.Job]" = queue.Queue()

    def hold(job):
        job.detach()
        started.put(job)

    limited = rt.loader(hold, inline=True, limits=loadstate.Limits(max_concurrent=1))
    cells = [rt.loadable(limited) for _ in range(3)]
    before = time.monotonic()
    loads = [cell.load(b"r%d" % i, priority=i) for i, cell in enumerate(cells)]
    first = started.get(timeout=WAIT)
    queued_by = time.monotonic()
    # The start runs on the loop after the loads queued before it: the two
    # later jobs are in the loader's queue by then.
    url = rt.start_inspector()
    _, _, token = parts(url)
    assert all(cell.snapshot().queued for cell in cells[1:])
    snapshot = json.loads(get(url, f"/snapshot?token={token}")[2])
    loader = [l for l in snapshot["loaders"] if l["id"] == limited.id][0]
    assert loader["queued_now"] == 2 and loader["loads"]["queued"] == 2
    assert [j["request"] for j in snapshot["jobs"]] == ["r0"]
    # The waiting jobs themselves, in the order they would start (higher priority first), with their age.
    assert loader["queued_jobs_total"] == 2
    assert [(j["request"], j["priority"], j["loader"]) for j in loader["queued_jobs"]] == \
        [("r2", 2, limited.id), ("r1", 1, limited.id)]
    time.sleep(0.2)
    least = (time.monotonic() - queued_by) * 1000
    later = json.loads(get(url, f"/snapshot?token={token}")[2])
    most = (time.monotonic() - before) * 1000
    queued = [l for l in later["loaders"] if l["id"] == limited.id][0]["queued_jobs"]
    assert len(queued) == 2
    assert all(least - 2 <= j["age_ms"] <= most + 2 and j["cells"] == 1 for j in queued), (least, queued, most)
    flags = {c["id"]: c["flags"] for c in snapshot["cells"]}
    assert flags[cells[0].id] == [] and flags[cells[1].id] == ["queued"] and flags[cells[2].id] == ["queued"]
    first.succeed(b"done")
    assert loads[0].value(WAIT) == b"done"
    for cell in cells[1:]:
        cell.cancel()


def test_the_snapshot_has_each_cells_last_events_and_each_loaders_series(rt):
    echo = rt.loader(lambda job: job.request, name="echo")
    before = rt.loadable(echo)
    assert before.load(b"before").value(WAIT) == b"before"
    url = rt.start_inspector(interval=0.1)
    _, _, token = parts(url)
    cell = rt.loadable(echo)
    for i in range(20):
        assert cell.load(b"%d" % i).value(WAIT) == b"%d" % i
    snapshot = json.loads(get(url, f"/snapshot?token={token}")[2])
    cells = {c["id"]: c for c in snapshot["cells"]}
    # Events are kept from the inspector's start, at most 16 a cell, oldest first.
    assert cells[before.id]["events"] == [] and "events_from_ms" not in cells[before.id]
    events = cells[cell.id]["events"]  # [status, duration_ms, flag...]
    assert len(events) == 16
    assert [e[0] for e in events] == ["loading", "loaded"] * 8
    assert all(len(e) == 2 and e[1] >= 0 for e in events)
    started = cells[cell.id]["events_from_ms"]
    assert abs(started - snapshot["now_ms"]) < 60_000
    assert started + sum(e[1] for e in events) >= snapshot["now_ms"] - 1000
    # The loader's series: the loads since the inspector started, in the point of now.
    series = {l["id"]: l["series"] for l in snapshot["loaders"]}[echo.id]
    assert series["every_ms"] == 5000
    now = series["points"][-1]
    assert now["loads"] == 20 and now["p50_us"] <= now["p90_us"] <= now["max_us"] and now["queued"] == 0


def test_a_stopped_inspector_drops_the_events_it_kept(rt):
    echo = rt.loader(lambda job: job.request)
    cell = rt.loadable(echo)
    rt.start_inspector()
    assert cell.load(b"one").value(WAIT) == b"one"
    rt.stop_inspector()
    url = rt.start_inspector()
    _, _, token = parts(url)
    snapshot = json.loads(get(url, f"/snapshot?token={token}")[2])
    assert {c["id"]: c for c in snapshot["cells"]}[cell.id]["events"] == []
    assert cell.load(b"two").value(WAIT) == b"two"
    snapshot = json.loads(get(url, f"/snapshot?token={token}")[2])
    assert [e[0] for e in {c["id"]: c for c in snapshot["cells"]}[cell.id]["events"]] == ["loading", "loaded"]


def test_the_snapshot_names_the_flags_of_writes_kept_values_placeholders_and_paused_loads(rt):
    from loadstate import Flags
    from conftest import Jobs, Recorder

    url = rt.start_inspector()
    _, _, token = parts(url)

    def shown(cell: loadstate.Cell) -> Tuple[list, list]:
        """The cell's flags and its last timeline event's [status, flag...], as the snapshot has them."""
        c = {c["id"]: c for c in json.loads(get(url, f"/snapshot?token={token}")[2])["cells"]}[cell.id]
        last = c["events"][-1]
        return c["flags"], [last[0]] + last[2:]

    reads = Jobs(rt)
    cache = rt.memory_cache()
    # A write's optimistic value, then its rollback.
    view = rt.loadable(reads.loader)
    log = Recorder(view)
    view.load(b"v0", cache=cache, cache_key=b"k")
    reads.next().succeed(b"v0")
    log.until(lambda e: e.status is Status.LOADED)
    writes = Jobs(rt)
    run = rt.process(writes.loader).mutate(request=b"save", optimistic={b"k": b"opt"}, cache=cache)
    log.until(lambda e: bool(e.flags & Flags.OPTIMISTIC))
    write = writes.next()
    assert shown(view) == (["optimistic"], ["loaded", "optimistic"])
    write.fail(7, "refused")
    assert run.state(WAIT).status is Status.FAILED
    log.until(lambda e: bool(e.flags & Flags.ROLLED_BACK))
    assert shown(view) == (["rolled back"], ["loaded", "rolled back"])
    # The previous value kept while another request loads.
    kept = rt.loadable(reads.loader)
    kept_log = Recorder(kept)
    kept.load(b"a")
    reads.next().succeed(b"a")
    kept_log.until(lambda e: e.status is Status.LOADED)
    kept.load(b"b", keep_previous=True)
    kept_log.until(lambda e: bool(e.flags & Flags.PREVIOUS))
    assert shown(kept) == (["refreshing", "previous"], ["loaded", "refreshing", "previous"])
    # A placeholder.
    holder = rt.loadable(reads.loader)
    holder_log = Recorder(holder)
    holder.load(b"p", placeholder=b"...")
    holder_log.until(lambda e: bool(e.flags & Flags.PLACEHOLDER))
    assert shown(holder) == (["refreshing", "placeholder"], ["loaded", "refreshing", "placeholder"])
    # A load paused while offline.
    rt.set_online(False)
    paused = rt.loadable(reads.loader)
    paused_log = Recorder(paused)
    paused.load(b"x")
    paused_log.until(lambda e: bool(e.flags & Flags.PAUSED))
    assert shown(paused) == (["paused"], ["loading", "paused"])
    rt.set_online(True)
    for cell in (kept, holder, paused):
        cell.cancel()


def test_the_snapshot_lists_pages_cells_with_their_page_count(rt, jobs):
    from loadstate import PagesCell, succeed_page

    url = rt.start_inspector()
    _, _, token = parts(url)
    cell = PagesCell(rt, name="feed")

    def listed() -> dict:
        snapshot = json.loads(get(url, f"/snapshot?token={token}")[2])
        # A pages cell is not among the cells (its pages are not cells of the runtime).
        assert cell.id not in {c["id"] for c in snapshot["cells"]}
        return {p["id"]: p for p in snapshot["pages_cells"]}[cell.id]

    assert listed() == {"id": cell.id, "name": "feed", "pages": 0, "has_next": False, "has_previous": False}
    load = cell.load(b"q", jobs.loader)
    succeed_page(jobs.next(), b"p0", b"c1", None)
    load.state(WAIT)
    load = cell.load_next()
    succeed_page(jobs.next(), b"p1", b"c2", None)
    load.state(WAIT)
    assert listed() == {"id": cell.id, "name": "feed", "pages": 2, "has_next": True, "has_previous": False}
    cell.close()
    snapshot = json.loads(get(url, f"/snapshot?token={token}")[2])
    assert cell.id not in {p["id"] for p in snapshot["pages_cells"]}
