#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz harnesses: Tests/fuzz/corpus/<harness>/.

Each seed is a small input that drives its harness down one path the
fuzzer would take long to find alone (a load that succeeds, a shared
load, a cache policy, a valid http or exec encoding). The byte layout
follows the harnesses' readers: fuzz_api.c's steps and fuzz_parsers.c's
targets. Run it again after changing either; `make fuzz-merge` adds what
a fuzzing run found.
"""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


# ---------------------------------------------------------------- api
# Steps of fuzz_api.c: an opcode byte (its value modulo 16 picks the
# step), then the step's argument bytes.

def new_cell(process=False):
    return bytes([0, 1 if process else 0])


def free_cell(sel=0):
    return bytes([1, sel])


def opts_none():
    return bytes([0])


def opts(flags=0, timeout=0, retries=0, interrupts=(), cache=None, policy=0, key=None, size_kind=0, signals=0,
         placeholder=None, throttle=None):
    """Load options as pick_options reads them; flags: 1 silent, 2 share. signals (since 0.5): 1
    KEEP_PREVIOUS, 2 REFRESH_ON_FOREGROUND, 4 OFFLINE_FAIL, 8 OFFLINE_RUN, 0x10 POLL_IN_BACKGROUND;
    placeholder: up to 3 bytes; throttle: foreground_throttle_ms 0-2 (not with a placeholder: both
    share a bit)."""
    f = 1 | (flags << 2) | (size_kind << 6)
    if cache is not None:
        f |= 0x10
        if key is not None:
            f |= 0x20
    g = signals
    extra = b""
    if placeholder is not None:
        g |= 0x20 | (len(placeholder) << 6)
        extra += placeholder
    if throttle is not None:
        g |= 0x40
        extra += bytes([throttle])
    out = bytes([f, g]) + extra + bytes([timeout, retries, len(interrupts)]) + bytes(interrupts)
    if cache is not None:
        out += bytes([cache, policy, 3, 0])
        if key is not None:
            out += bytes([key])
    return out


def load(cell=0, loader=0, req=b"r", options=opts_none()):
    return bytes([2, cell, loader, len(req)]) + req + bytes([0]) + options


def run(cell=0, loader=0, req=b"p", kind=3, options=opts_none()):
    return bytes([2, cell, loader, len(req)]) + req + bytes([1]) + options + bytes([kind])


def cell_call(what, cell=0, extra=b""):
    """what: 0 refresh, 1 cancel, 2 reset, 3 set_loaded, 4 set_error, 5 get,
    6 process cancel, 7 process reset."""
    return bytes([4, cell, what]) + extra


def new_loader(mode=0, ex=False, cancel=False):
    """mode: 0 record, 1 succeed, 2 fail, 3 yield, 4 on_cancel, 5 cancel_self,
    6 reset_self, 7 progress and finish (all inside start)."""
    return bytes([6, mode | (0x80 if ex else 0) | (0x40 if cancel else 0)])


def free_loader(sel=0):
    return bytes([7, sel])


def job(what, sel=0, extra=b""):
    """what: 0 yield, 1 succeed, 2 finish, 3 fail, 4 fail_final, 5 progress,
    6 cancel_self, 7 reset_self, 8 is_cancelled, 9 on_cancel."""
    return bytes([8, sel, what]) + extra


def value(v):
    return bytes([len(v)]) + v


def submit(*ops):
    out = bytes([10, len(ops)])
    for kind, target, data in ops:
        out += bytes([kind, target])
        if kind == 1:
            out += bytes([0])
        if kind == 6:
            out += bytes([4])
        out += value(data)
    return out


def cache_new():
    return bytes([11, 0, 3, 24, 0])


def cache_op(what, key=b"k", val=None, sel=0):
    """what: 1 put, 3 get, 4 remove, 5 invalidate, 6 stats and clear, 7 free."""
    out = bytes([11, what, sel]) + value(key)
    if val is not None:
        out += value(val)
    return out


def bad(which, cell=0):
    return bytes([12, cell, which]) + (bytes([5]) if which == 10 else b"")


def action(a, cell=0):
    """a: 1 free the cell, 2 cancel, 3 set_loaded, 4 load (from the callback)."""
    return bytes([13, cell, a])


def helper(*steps):
    """A second host thread running steps: 0 load, 1 cell call, 2 job call, 3 submit
    (each step's bytes as for the main thread, its opcode replaced by 0-3)."""
    body = b"".join(steps)
    return bytes([0x89, len(body)]) + body


def deliver(records=False, max_events=0, cap=0):
    """cap: the records buffer's size in units of 4 bytes (0: all of it)."""
    return bytes([14 | (0x10 if records else 0) | (max_events << 5)]) + (bytes([cap]) if records else b"")


def wait(ms=1):
    return bytes([15 | (ms << 4)])


def limited_loader(mode=0, max_concurrent=True, rate=False):
    """A loader from lds_loader_new_ex with limits: max_concurrent 1 (2 for odd modes), a 1000/s token bucket."""
    return bytes([6, 0x80 | mode | (0x10 if max_concurrent else 0) | (0x08 if rate else 0)])


def schedule(what, *args):
    """A scheduling step: what & 7 is 0 set_priority, 1 pause, 2 resume, 3 prefetch, 4 bad arguments,
    5-7 a polling load; bit 3: process (set_priority) or POLL_ON_ERROR, bit 4: process (polling load)."""
    return bytes([0x8E, what]) + bytes(args)


def set_priority(cell, priority, process=False):
    return schedule(8 if process else 0, cell, priority & 0xFF)


def prefetch(loader=0, cache=0, policy=0, req=b"k", priority=0):
    return schedule(3, loader, cache, policy, 0, priority & 0xFF) + value(req)


def poll_load(cell=0, loader=0, priority=0, interval=0, on_error=False, process=False):
    what = 5 | (8 if on_error else 0) | (0x10 if process else 0)
    return schedule(what, cell, loader, priority & 0xFF, interval)


def pages_new(max_pages=0, bad=False):
    """A pages cell (lds_pages_new; it joins the cells), or with bad: the calls that must fail."""
    return bytes([0x80, max_pages | (0x80 if bad else 0)])


def pages(what, cell=0, extra=b""):
    """A pages call; what: 0 load (extra: loader, request, options), 2 next, 3 previous, 4 refresh,
    5 cancel, 6 reset, 7 count and get, 8 has_more (58: next), 9 bad arguments; what % 10 picks."""
    return bytes([0x8F, cell, what]) + extra


def pages_load(cell=0, loader=0, req=b"q", options=opts_none()):
    return pages(0, cell, bytes([loader]) + value(req) + options)


def page_job(sel=0, v=b"v", nxt=None, prev=None, plan=None, raw=None, raw_tagged=True):
    """lds_job_succeed_page with cursors: None, bytes, "long" (over LDS_CURSOR_MAX) or "null" (NULL
    with a length); or, with raw, lds_job_succeed of raw bytes ("\\0LPV" first when raw_tagged). plan:
    the cursors a page loader's start answers with from then on (2 bits each, next then previous at
    bit 4: 0 none, 1 the page's cursor and a byte, 2 empty, 3 too long)."""
    if raw is not None:
        return bytes([0x88, sel, 0x80 | (0 if raw_tagged else 0x40)]) + value(v) + value(raw)
    what, extra = 0, b""
    for i, c in enumerate((nxt, prev)):
        if c is None:
            continue
        if c == "long":
            what |= 2 << (2 * i)
            extra += b"\x00"
        elif c == "null":
            what |= 3 << (2 * i)
            extra += b"\x01"
        else:
            what |= 1 << (2 * i)
            extra += value(c)
    if plan is not None:
        what |= 0x20
        extra += bytes([plan])
    return bytes([0x88, sel, what]) + value(v) + extra


def signal(what):
    """what: 0 set_online, 1 set_foreground, 2 stats, 3 NULL runtime; the value (what >> 2) % 3: 0, 1 or 7."""
    return bytes([0x8B, what])


def online(v):
    return signal(4 if v else 0)


def page_decode(raw=None, tagged=False, req=b"r", cur=b"c", direction=1, absent=False):
    """lds_page_request_decode: raw bytes (tagged: "\\0LPQ" first), or an encoding of the fields."""
    if raw is not None:
        return bytes([0xCB, 1 if tagged else 2]) + value(raw)
    what = ((direction + 1) << 2) | (0x80 if absent else 0)
    return bytes([0xCB, what]) + value(b"") + value(req) + value(cur)


def mutate(cell=0, loader=0, req=b"w", options=opts_none(), updates=(), prefixes=(), populate=False,
           persistent=False, bad=0, no_mutation=False, kind=5):
    """lds_process_mutate; updates: (cache selector, key, value), the selector 0x40 being the persistent
    cache (made first with persistent); prefixes: (cache selector, prefix); bad: 1-6 a bad field."""
    what = (7 if persistent else 0) | (8 if populate else 0) | (bad << 4) | (0x80 if no_mutation else 0)
    out = bytes([0x8A, cell, loader, what]) + value(req) + options + bytes([len(updates), len(prefixes)])
    for sel, key, val in updates:
        out += bytes([sel]) + value(key) + value(val)
    for sel, prefix in prefixes:
        out += bytes([sel]) + value(prefix)
    return out + bytes([kind])


def cache_new_unobserved(ms=1):
    return bytes([11, 0x10, 3, 24, 0, ms])


API_SEEDS = {
    "load_succeed": new_cell() + new_loader() + load() + wait() + job(1, extra=value(b"v")) + wait(),
    "succeed_in_start": new_cell() + new_loader(1) + load() + wait() + cell_call(0) + wait() + cell_call(2),
    "fail_with_retries": new_cell() + new_loader(2) + load(options=opts(retries=2)) + wait(2) + wait(2),
    "process_run": new_cell(True) + new_loader(7) + run() + wait() + cell_call(7) + run(kind=9) + wait(),
    "process_fail_retry": new_cell(True) + new_loader(2) + run(options=opts(retries=1)) + wait(2),
    "timeout_interrupts": new_cell() + new_loader() + load(options=opts(timeout=2, interrupts=(1, 1))) + wait(2) + wait(2),
    "silent_refresh": new_cell() + new_loader(1) + load() + wait() + load(options=opts(flags=1)) + wait(),
    "share": new_cell() + new_cell() + new_loader() + load(0, options=opts(flags=2))
    + load(1, options=opts(flags=2)) + wait() + job(1, extra=value(b"s")) + wait(),
    "share_cancel_one": new_cell() + new_cell() + new_loader(4) + load(0, options=opts(flags=2))
    + load(1, options=opts(flags=2)) + wait() + cell_call(1, 0) + wait() + cell_call(1, 1) + wait(),
    "cache_first": new_cell() + cache_new() + new_loader(1) + load(options=opts(cache=0, policy=1))
    + wait() + load(options=opts(cache=0, policy=1)) + wait(),
    "cache_then_load": new_cell() + cache_new() + cache_op(1, b"r", b"cached") + new_loader(2)
    + load(options=opts(cache=0, policy=2)) + wait(),
    "cache_only_key": new_cell() + cache_new() + new_loader() + load(options=opts(cache=0, policy=3, key=7)) + wait(),
    "cache_invalidate": new_cell() + cache_new() + new_loader(1) + load(options=opts(cache=0))
    + wait() + cache_op(5, b"") + wait() + cache_op(3, b"r") + cache_op(6) + cache_op(7),
    "cache_calls": cache_new() + cache_op(1, b"a", b"1") + cache_op(1, b"b", b"22") + cache_op(3, b"a")
    + cache_op(4, b"b") + cache_op(6) + cache_op(7) + cache_op(3, b"a"),
    "submit_batch": new_cell() + new_cell() + new_loader() + submit((1, 0, b"x"), (1, 1, b"y")) + wait()
    + submit((3, 0, b"p"), (4, 1, b"q"), (6, 0, b"err")) + wait(),
    "job_calls": new_cell() + new_loader() + load() + wait() + job(0, extra=value(b"part")) + job(5, extra=b"\x01\x04")
    + job(9) + job(8) + job(2) + wait() + job(1, extra=value(b"late")),
    "job_fail_final": new_cell() + new_loader() + load(options=opts(retries=2)) + wait() + job(4) + wait(),
    "job_cancel_self": new_cell() + new_loader(0, ex=True, cancel=True) + load() + wait() + job(6) + wait(),
    "job_reset_self": new_cell(True) + new_loader(6) + run() + wait(),
    "free_during_load": new_cell() + new_loader(4, ex=True, cancel=True) + load() + wait() + free_cell() + wait()
    + job(1, extra=value(b"v")) + free_cell(),
    "free_loader_with_job": new_cell() + new_loader() + load() + wait() + free_loader() + job(1, extra=value(b"v"))
    + wait() + load() + free_loader(),
    "callback_frees": new_cell() + new_loader(1) + action(1) + load() + wait() + load(),
    "callback_loads": new_cell() + new_loader(1) + action(4) + cell_call(3, extra=value(b"x")) + wait() + wait(),
    "set_calls": new_cell() + cell_call(3, extra=value(b"x")) + cell_call(4, extra=b"\x05") + cell_call(5)
    + cell_call(2) + cell_call(0) + wait(),
    "bad_args": b"".join(bad(i) for i in range(12)) + new_cell() + b"".join(bad(i) for i in range(12)),
    "stray_ids": new_cell() + new_loader() + free_cell(0xF1) + load(0xF0, 0xF3) + job(1, 0xE1)
    + cache_op(3, sel=0xF2) + free_loader(0xF3),
    "records": new_cell() + new_loader(3) + load() + deliver(True) + wait() + job(1, extra=value(b"v")) + deliver(True, 1)
    + deliver(True) + deliver(False, 2),
    "records_small_buffer": new_cell() + new_loader(1) + load(req=b"abcdef") + wait() + deliver(True, 0, 10)
    + deliver(True, 1, 30) + deliver(True),
    "helper_thread": new_cell() + new_cell() + new_loader() + helper(
        b"\x00" + load(0, req=b"h")[1:], b"\x01" + cell_call(3, 1, value(b"x"))[1:],
        b"\x02" + job(1, extra=value(b"v"))[1:], b"\x00" + load(1, req=b"g")[1:], b"\x01" + cell_call(1, 0)[1:])
    + load(1) + job(1, extra=value(b"m")) + wait() + job(1, extra=value(b"n")) + wait(),
    "loader_ex_bad_size": bytes([6, 0xA0]) + new_loader(0, ex=True) + new_cell() + load() + wait(),
    "queued_priorities": limited_loader() + new_cell() + new_cell() + new_cell() + load(0, req=b"a")
    + load(1, req=b"b") + load(2, req=b"c") + set_priority(2, 5) + wait() + job(1, extra=value(b"v")) + wait()
    + cell_call(1, 1) + job(1, extra=value(b"w")) + wait(),
    "queued_shared_rate": limited_loader(1, rate=True) + new_cell() + new_cell() + new_cell(True)
    + load(0, options=opts(flags=2)) + load(1, options=opts(flags=2)) + run(2) + set_priority(2, 3, True) + wait(2),
    "polling": new_cell() + new_cell(True) + new_loader(1) + poll_load(0, interval=1) + poll_load(1, process=True)
    + wait(2) + schedule(1) + wait(2) + schedule(2) + wait() + cell_call(1, 0),
    "polling_errors": new_cell() + new_loader(2) + poll_load(0, interval=1, on_error=True) + wait(2) + cell_call(2),
    "prefetch": cache_new() + new_cell() + new_loader(1) + prefetch(policy=1) + load(options=opts(cache=0, policy=1))
    + wait() + prefetch() + schedule(4) + wait(),
    # Since 0.5.
    "pages_start_answers": new_loader(1) + page_job(0xF0, plan=0x11) + pages_new() + pages_load() + wait()
    + pages(2) + wait() + pages(2) + wait() + pages(3) + wait() + pages(7) + pages(8) + pages(58)
    + pages(4) + wait(2) + pages(6),
    "pages_host_answers": new_loader() + pages_new(2) + pages_load() + wait() + page_job(nxt=b"n1", prev=b"")
    + wait() + pages(2) + wait() + page_job(nxt=b"n2") + wait() + pages(2) + wait() + page_job(nxt="long")
    + wait() + pages(7) + pages(5),
    "pages_bad_cursors": new_loader() + pages_new() + pages_load() + wait() + page_job(nxt="null", prev="long")
    + page_job(nxt=b"x") + wait() + pages(9) + pages_new(bad=True),
    "pages_raw_value": new_loader() + pages_new() + pages_load() + wait()
    + page_job(raw=b"\x01\x00\x00\x00v\x01\x00\x00\x00n\xff\xff\xff\xff") + wait() + pages(2) + wait()
    + page_job(raw=b"\x05\x00") + wait(),
    "pages_cached_refresh": cache_new() + new_loader(1) + page_job(0xF0, plan=0x01) + pages_new()
    + pages_load(options=opts(cache=0)) + wait() + pages(2) + wait() + pages(4) + wait(2) + cache_op(5, b"q")
    + pages_load(options=opts(cache=0, policy=1)) + wait(),
    "pages_shared_cancel": new_loader(4) + pages_new() + new_cell() + pages_load(options=opts(flags=2))
    + load(1, req=b"q", options=opts(flags=2)) + wait() + pages(5) + action(1) + wait(),
    "page_request_decode": page_decode() + page_decode(direction=0, absent=True) + page_decode(direction=-1, cur=b"")
    + page_decode(raw=b"\x01\x01\x00\x00\x00r\xff\xff\xff\xff", tagged=True) + page_decode(raw=b"junk"),
    "mutate_rollback": cache_new() + new_cell() + new_cell(True) + new_loader(1) + new_loader()
    + load(0, 0, options=opts(cache=0)) + wait() + mutate(1, 1, updates=[(0, b"r", b"opt")], prefixes=[(0, b"")])
    + wait() + job(3, extra=b"\x05") + wait(),
    "mutate_populate": cache_new() + new_cell() + new_cell(True) + new_loader(1) + load(0, 0, options=opts(cache=0))
    + wait() + mutate(1, 0, updates=[(0, b"r", b"opt"), (0x40, b"r", b"p")], populate=True, persistent=True)
    + wait(),
    "mutate_cancel_reset": cache_new() + new_cell(True) + new_loader() + mutate(0, 0, updates=[(0, b"k", b"o")])
    + wait() + cell_call(6) + mutate(0, 0, updates=[(0, b"k", b"p")]) + wait() + cell_call(7) + wait()
    + mutate(0, 0, no_mutation=True) + wait() + cell_call(1),
    "mutate_bad": cache_new() + new_cell(True) + new_loader() + b"".join(
        mutate(0, 0, updates=[(0, b"k", b"v")], prefixes=[(0, b"p")], bad=i) for i in range(1, 7))
    + mutate(0, 0, updates=[(0xF1, b"k", b"v")]) + mutate(0, 0, options=opts(cache=0)),
    "offline_fail_run": new_cell() + new_cell() + new_loader(1) + online(False)
    + load(0, options=opts(signals=4)) + load(1, options=opts(signals=8)) + wait() + load(0) + signal(2)
    + online(True) + wait(),
    "offline_paused_retry": new_cell() + new_loader(2) + load(options=opts(retries=2)) + online(False) + wait(2)
    + online(True) + wait(2),
    "background_polls": new_cell() + new_cell() + new_loader(1) + signal(1) + poll_load(0, interval=1)
    + load(1, options=opts(signals=0x12, throttle=1)) + wait(2) + signal(1 | 4) + wait(2) + signal(3),
    "keep_previous_placeholder": new_cell() + new_loader() + cell_call(3, extra=value(b"old"))
    + load(options=opts(signals=1)) + wait() + cell_call(1) + load(req=b"s", options=opts(placeholder=b"ph"))
    + wait() + job(1, extra=value(b"new")) + load(req=b"t", options=opts(signals=1, placeholder=b"")) + wait()
    + job(3, extra=b"\x02"),
    "unobserved_cache": cache_new_unobserved(1) + new_cell() + new_loader(1) + load(options=opts(cache=0)) + wait()
    + cell_call(2) + wait(2) + cache_op(3, b"r") + cache_op(6),
}


# ------------------------------------------------------------ parsers
# Inputs of fuzz_parsers.c: a target byte, then the target's bytes.

def field(b):
    return b"\xff\xff\xff\xff" if b is None else struct.pack("<I", len(b)) + b


def lst(items):
    return b"\xff\xff\xff\xff" if items is None else struct.pack("<I", len(items)) + b"".join(field(i) for i in items)


def http_req(method=b"GET", url=b"http://127.0.0.1:1/x", headers=(), body=b"", timeout=100, max_body=0, redirects=5, flags=0):
    return (b"LDH1" + field(method) + field(url) + lst(None if headers is None else list(headers)) + field(body)
            + struct.pack("<IQII", timeout, max_body, redirects, flags))


def exec_req(argv, env=None, cwd=None):
    return b"LDX1" + lst(argv) + lst(env) + field(cwd)


def response(status, headers, body):
    return b"LDR1" + struct.pack("<i", status) + field(headers) + body


def text(s, null=False):
    return b"\xff" if null else bytes([len(s)]) + s


def http_encode(method, url, headers, body, shape=0, timeout=0, redirects=0, max_body=0, shift=0, flags=0):
    out = bytes([0, shape]) + text(method or b"", method is None) + text(url or b"", url is None)
    out += bytes([len(headers)]) + b"".join(text(h) for h in headers) + text(body)
    return out + struct.pack("<I", timeout) + bytes([redirects]) + struct.pack("<I", max_body) + bytes([shift, flags])


def exec_encode(argv, env, cwd, shape=0):
    out = bytes([3, shape, len(argv), len(env)])
    out += b"".join(text(a) for a in argv) + b"".join(text(e) for e in env)
    return out + text(cwd or b"", cwd is None)


PARSER_SEEDS = {
    "http_encode_get": http_encode(None, b"http://example.invalid/", [], b""),
    "http_encode_post": http_encode(b"POST", b"https://h/p?q", [b"Type: a/b", b"X: y"], b"body",
                                    timeout=1000, redirects=3, max_body=4096, shift=4, flags=1),
    "http_encode_crlf_header": http_encode(b"GET", b"http://h/", [b"A: b\r\nC: d"], b""),
    "http_encode_no_url": http_encode(b"GET", None, [], b"", shape=1),
    "http_encode_bad_size": http_encode(b"GET", b"http://h/", [], b"", shape=6),
    "http_encode_no_redirects": http_encode(b"PUT", b"http://h/", [], b"x", redirects=7, flags=2),
    "http_encode_utf8": http_encode("GÉT".encode(), "http://h/é".encode(), ["X: ü".encode()], b"\xff"),
    "response_ok": bytes([1]) + response(200, b"Content-Type: text/plain\r\n", b"hello"),
    "response_empty": bytes([1]) + response(204, b"", b""),
    "response_absent_headers": bytes([1]) + b"LDR1" + struct.pack("<i", 200) + b"\xff\xff\xff\xff",
    "response_short": bytes([1]) + b"LDR1" + struct.pack("<iI", 500, 40) + b"abc",
    "response_fields": bytes([2]) + struct.pack("<I", 404) + text(b"A: b\r\n") + b"not found",
    "exec_encode": exec_encode([b"echo", b"hi"], [b"A=1"], b"/tmp"),
    "exec_encode_no_env": exec_encode([b"ls"], [], None, shape=1),
    "exec_encode_empty": exec_encode([], [], None),
    "http_load": bytes([4]) + http_req(),
    "http_load_post": bytes([4]) + http_req(b"POST", headers=[b"A: b"], body=b"data", flags=1, max_body=10),
    "http_load_absent": bytes([4]) + http_req(None, headers=None, body=None),
    "http_load_bad_url": bytes([4]) + http_req(url=b"ftp://127.0.0.1:1/"),
    "http_load_truncated": bytes([4]) + http_req()[:30],
    "exec_load": bytes([5]) + exec_req([b"true", b"x"]),
    "exec_load_env_cwd": bytes([5]) + exec_req([b"env"], [b"A=1", b"B"], b"/nonexistent"),
    "exec_load_bad_tail": bytes([5]) + exec_req([b"true"])[:-2],
    "exec_load_empty_argv": bytes([5]) + exec_req([]),
    # The request decoders (targets 4 and 5 run them first): a ca_file after
    # the flags, a byte after it, lines the encoder refuses, text that is
    # not UTF-8, bytes after an exec request's last field.
    "decode_http_ca_file": bytes([4]) + http_req(b"PUT", headers=[b"A: b", b"C:"], body=b"x\0y", flags=0x7d)
    + field(b"/ca.pem"),
    "decode_http_ca_file_trailing": bytes([4]) + http_req() + field(b"/ca.pem") + b"\0",
    "decode_http_crlf_header": bytes([4]) + http_req(headers=[b"A: b\r\nC: d"]),
    "decode_http_bad_method": bytes([4]) + http_req(b"G T"),
    "decode_http_not_utf8": bytes([4]) + http_req(url=b"http://127.0.0.1:1/\xff"),
    "decode_exec_trailing": bytes([5]) + exec_req([b"true"], [], b"") + b"tail",
    "decode_exec_not_utf8": bytes([5]) + exec_req([b"true", b"\xc3"]),
    "file_load": bytes([6]) + b"a",
    "file_load_empty": bytes([6]) + b"empty",
    "file_load_dir": bytes([6]) + b"d",
    "file_load_missing": bytes([6]) + b"missing",
    "file_load_nul": bytes([6]) + b"a\x00b",
}


def responses(first, second):
    """Target 8: two raw HTTP responses, the split byte pointing between them."""
    data = first + second
    return bytes([8, min(255, (len(first) * 256 + len(data) - 1) // len(data))]) + data


def answer(status, headers, body=b""):
    lines = b"".join(h + b"\r\n" for h in headers)
    return b"HTTP/1.1 " + status + b"\r\n" + lines + b"Content-Length: %d\r\n\r\n" % len(body) + body


PARSER_SEEDS.update({
    "cached_max_age": responses(answer(b"200 OK", [b"Cache-Control: max-age=60, stale-if-error=5"], b"v"),
                                answer(b"200 OK", [], b"w")),
    "cached_etag_304": responses(answer(b"200 OK", [b"ETag: \"e\"", b"Cache-Control: no-cache"], b"v"),
                                 answer(b"304 Not Modified", [b"ETag: \"e\"", b"X-New: 1"])),
    "cached_vary_expires": responses(
        answer(b"200 OK", [b"Vary: X-Lang, Accept", b"Date: Sun, 06 Nov 1994 08:49:37 GMT",
                           b"Expires: Sun, 06 Nov 1994 09:49:37 GMT", b"Age: 99999999999999999999"], b"v"),
        answer(b"200 OK", [b"Cache-Control: no-store"], b"w")),
    "cached_swr_gzip": responses(
        answer(b"200 OK", [b"Cache-Control: max-age=0, stale-while-revalidate=60", b"Last-Modified: yesterday"],
               b"v"),
        answer(b"200 OK", [b"Content-Encoding: gzip"], b"\x1f\x8b\x08\x00garbage")),
})


# Persistent cache files (target 7): SQLite databases with small pages.
# The schema is the library's (Sources/Loadstate/Cache/PersistentCacheSchema.swift).
CACHE_SCHEMA = """
CREATE TABLE entries (key BLOB NOT NULL PRIMARY KEY, size INTEGER NOT NULL, stored_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL, last_access INTEGER NOT NULL, stale INTEGER NOT NULL, value BLOB NOT NULL);
CREATE INDEX entries_by_access ON entries (last_access);
CREATE TABLE totals (id INTEGER PRIMARY KEY CHECK (id = 1), entries INTEGER NOT NULL, bytes INTEGER NOT NULL);
CREATE TRIGGER entries_inserted AFTER INSERT ON entries BEGIN
    UPDATE totals SET entries = entries + 1, bytes = bytes + new.size; END;
CREATE TRIGGER entries_deleted AFTER DELETE ON entries BEGIN
    UPDATE totals SET entries = entries - 1, bytes = bytes - old.size; END;
CREATE TRIGGER entries_resized AFTER UPDATE OF size ON entries BEGIN
    UPDATE totals SET bytes = bytes - old.size + new.size; END;
"""


def sqlite_file(script, version=1):
    import sqlite3
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "c.db")
        db = sqlite3.connect(path)
        db.executescript(f"PRAGMA page_size = 512; PRAGMA journal_mode = DELETE; {script} PRAGMA user_version = {version};")
        db.commit()
        db.execute("VACUUM")
        db.close()
        with open(path, "rb") as f:
            return f.read()


def cache_seeds():
    row = "INSERT INTO entries VALUES ({k}, {size}, {stored}, {expires}, {access}, {stale}, {value});"
    sound = CACHE_SCHEMA + "INSERT INTO totals VALUES (1, 0, 0);" + row.format(
        k="x'6b'", size=6, stored=1, expires=0, access=1, stale=0, value="x'7631'") + row.format(
        k="x'61'", size=3, stored=2, expires=0, access=2, stale=1, value="x'3132'")
    odd = CACHE_SCHEMA + "INSERT INTO totals VALUES (1, 5, -100);" + row.format(
        k="'k'", size="'big'", stored=-1, expires=9223372036854775807, access=-5, stale=7, value="'text'") + row.format(
        k="x'61'", size=-40, stored="1.5", expires="x'00'", access=0, stale="NULL", value=3)
    return {
        "cache_sound": bytes([7, 0]) + sqlite_file(sound),
        "cache_sound_small": bytes([7, 2 | 8]) + sqlite_file(sound),
        "cache_odd_rows": bytes([7, 2]) + sqlite_file(odd.replace("stale INTEGER NOT NULL", "stale INTEGER")),
        "cache_no_totals_row": bytes([7, 2]) + sqlite_file(CACHE_SCHEMA + row.format(
            k="x'6b'", size=6, stored=1, expires=0, access=1, stale=0, value="x'7631'")),
        "cache_other_tables": bytes([7, 0]) + sqlite_file("CREATE TABLE entries (key TEXT); CREATE TABLE t (a);"),
        "cache_other_version": bytes([7, 1]) + sqlite_file(CACHE_SCHEMA, version=9),
        "cache_no_version": bytes([7, 0]) + sqlite_file("CREATE TABLE t (a);", version=0),
        "cache_new_file": bytes([7, 4]),
        "cache_garbage": bytes([7, 1]) + b"SQLite format 3\x00" + bytes(range(64)),
    }


# -------------------------------------------------------------- redis
# Inputs of fuzz_redis.c: the URL form, the cache's options, the URL's
# parts, replies queued before the cache connects, then operations.
# Reply classes: 0 AUTH, 1 SELECT, 2 SUBSCRIBE, 3 GET, 4 SET, 5 DEL,
# 6 PUBLISH, 7 lease script, 8 publish script, 9 release script, 10 sweep
# script, 11 keys script, 12 others.
R_AUTH, R_SUBSCRIBE, R_GET, R_ACQUIRE = 0, 2, 3, 7


def redis_input(records=(), ops=b"", form=0, o1=0, url=b"\x00", cmd=8):
    """o1: 1 front tier, 8 small max_value_bytes; the timeouts are cmd + 2 ms,
    20 ms to connect, a lease of 5 ms."""
    out = bytes([form, o1, cmd, 15, 4, 10]) + url
    return out + bytes([len(records)]) + b"".join(records) + ops


def reply(cls, spec, push=None):
    """A queued reply of class cls; push: a message (its spec) sent to the subscribers after it."""
    body = bytes([1 if push is not None else 0]) + spec + (push or b"")
    return bytes([cls, len(body)]) + body


def r_raw(b):
    return bytes([8, len(b)]) + b


def r_int(sel):
    return bytes([2, sel])


def r_array(*items):
    return bytes([6, len(items)]) + b"".join(items)


def r_entry(how=0, stored=0, expires=0, token=0, meta=b"", value=b"v", meta_len=3):
    """A stored entry: how 1 another format byte, 2 a stale byte, 4 repeated, 8 cut;
    meta_len 3 the right length, 1 0xffffffff, 2 2^31, 0 right + 0."""
    return bytes([7, how, stored, expires, token, len(meta)]) + meta + bytes([len(value)]) + value + bytes([meta_len])


def r_lease_wait(pttl):
    return bytes([12, 2, pttl])


SILENCE, CLOSE = bytes([11]), bytes([10])


def get(key=0):
    return bytes([0, key])


def put(value, key=0):
    return bytes([2, key, len(value)]) + value


def redis_load(share, policy=0, mode=0, two=False, timeout=1, cell=0, key=0):
    """mode: 0 succeed, 1 fail, 2 succeed later, 3 fail later, 4 a big value, 5 yield first;
    timeout: the byte whose t % 4 == 0 gives 1 + t / 16 ms."""
    how = (1 if two else 0) | (mode << 1) | (policy << 4)
    return bytes([8 if share else 9, how, key, timeout, cell])


STATUS = bytes([12])

REDIS_SEEDS = {
    "hit": redis_input(ops=put(b"value") + get() + redis_load(False, policy=1) + STATUS),
    "miss": redis_input(ops=get() + redis_load(False, policy=1) + redis_load(False, policy=3) + STATUS),
    "lease_taken": redis_input(ops=redis_load(True, two=True) + redis_load(True, mode=2) + get() + STATUS),
    "lease_wait": redis_input([reply(R_ACQUIRE, r_lease_wait(3)), reply(R_ACQUIRE, r_lease_wait(2), push=b"\x80")],
                              redis_load(True, policy=1, two=True) + STATUS),
    "lease_odd_replies": redis_input([reply(R_ACQUIRE, r_int(1)), reply(R_ACQUIRE, r_array(r_int(2))),
                                      reply(R_ACQUIRE, r_array(r_int(1), r_entry(meta_len=1)))],
                                     redis_load(True) * 3 + STATUS),
    "timeout": redis_input([reply(R_GET, SILENCE)], get() + redis_load(False, policy=1) + STATUS, cmd=1),
    "closed": redis_input([reply(R_GET, CLOSE)], get() + bytes([14]) * 4 + get() + STATUS),
    "malformed": redis_input([reply(R_GET, r_raw(b"+OK\r\n+OK\r\n")), reply(R_GET, r_raw(b"%1\r\n"))],
                             get() + get() + STATUS),
    "entry_meta_past_end": redis_input([reply(R_GET, r_entry(meta=b"m", meta_len=0)),
                                        reply(R_GET, r_entry(how=8, value=b"cut"))],
                                       get() + redis_load(False, policy=2) + STATUS, o1=1),
    "entry_too_big": redis_input([reply(R_GET, r_entry(how=4, value=b"0123456789abcdef"))],
                                 get() + put(b"x" * 30) + redis_load(True, mode=4) + STATUS, o1=8),
    "auth_refused": redis_input([reply(R_AUTH, bytes([1, 4]) + b"WRONG")], get() + STATUS, form=1, url=b"\x03"),
    "subscribe_odd": redis_input([reply(R_SUBSCRIBE, r_array(r_int(1)))], bytes([14]) + get() + STATUS),
    "auth_answered_twice": redis_input([reply(R_AUTH, r_raw(b"+OK\r\n:1\r\n"))] * 2, get() + bytes([14]) + STATUS,
                                       form=1, url=b"\x00"),
    "refresh_after_cancel": redis_input(ops=bytes([10 | 0x10, 3 << 4, 0, 1, 0]) + bytes([11, 0, 0]) + STATUS),
    "unix": redis_input(ops=put(b"v") + redis_load(True, policy=1) + STATUS, form=2, url=b"\x01"),
    "url_fuzzed": redis_input(ops=get(), form=3, url=bytes([0, 3]) + b"u:p" + bytes([8, 1]) + b"2"),
    "url_unix_escaped": redis_input(ops=get(), form=3, url=bytes([1, 0, 3 | 8, 4]) + b"db=1"),
}


def page_request(direction, request, cursor=None):
    out = b"\x00LPQ" + bytes([direction & 0xFF]) + struct.pack("<I", len(request)) + request
    return out + (struct.pack("<I", len(cursor)) + cursor if cursor is not None else b"\xff\xff\xff\xff")


def page_value(v, nxt=None, prev=None):
    out = b"\x00LPV" + struct.pack("<I", len(v)) + v
    for c in (nxt, prev):
        out += struct.pack("<I", len(c)) + c if c is not None else b"\xff\xff\xff\xff"
    return out


# Since 0.5: target 9 reads a page request (bit 0 of the next byte: fields
# from the input, bits 1-2 the direction, bits 3-4 the cursor's form), target
# 10 completes a pages cell's first page with the bytes (bit 0: "\0LPV" first).
PAGE_SEEDS = {
    "page_request_first": bytes([9, 0]) + page_request(0, b"r"),
    "page_request_next": bytes([9, 0]) + page_request(1, b"r", b"cur"),
    "page_request_previous_empty": bytes([9, 0]) + page_request(-1, b"", b""),
    "page_request_long_cursor": bytes([9, 0]) + page_request(1, b"r", b"c" * 4097),
    "page_request_trailing": bytes([9, 0]) + page_request(1, b"r", b"c") + b"x",
    "page_request_fields": bytes([9, 1 | (1 << 1) | (2 << 3), 2]) + b"rq" + bytes([3]) + b"cur",
    "page_request_fields_long": bytes([9, 1 | (1 << 3) | (1 << 5), 1]) + b"r" + bytes([0]),
    "page_value_plain": bytes([10, 0]) + b"plain",
    "page_value_cursors": bytes([10, 0]) + page_value(b"v", b"n", b"p"),
    "page_value_no_cursors": bytes([10, 0]) + page_value(b"v"),
    "page_value_long_cursor": bytes([10, 0]) + page_value(b"v", b"n" * 4097),
    "page_value_truncated": bytes([10, 0]) + page_value(b"value", b"n")[:-1],
    "page_value_tagged": bytes([10, 1]) + struct.pack("<I", 2) + b"ab" + b"\xff\xff\xff\xff" + struct.pack("<I", 0),
}


def write(harness, seeds):
    d = os.path.join(HERE, "corpus", harness)
    os.makedirs(d, exist_ok=True)
    for name in os.listdir(d):
        if name.startswith("seed_"):
            os.remove(os.path.join(d, name))
    for name, data in seeds.items():
        with open(os.path.join(d, "seed_" + name), "wb") as f:
            f.write(data)


def main():
    # Each api seed runs in one delivery mode, LOOP and POLL in turn (the
    # fuzzer flips the first byte to try the other); records need POLL.
    api = {}
    for i, (name, data) in enumerate(API_SEEDS.items()):
        mode = 1 if name.startswith("records") else i % 2
        api[f"{name}_{'poll' if mode else 'loop'}"] = bytes([mode]) + data
    write("api", api)
    PARSER_SEEDS.update(cache_seeds())
    PARSER_SEEDS.update(PAGE_SEEDS)
    write("parsers", PARSER_SEEDS)
    write("redis", REDIS_SEEDS)
    print(f"{len(api)} api seeds, {len(PARSER_SEEDS)} parser seeds, {len(REDIS_SEEDS)} redis seeds", file=sys.stderr)


if __name__ == "__main__":
    main()
