"""Request cache directives, the heuristic-freshness flag, and the Age and Cache-Status of a response, read
through the binding. No server: encodings and header parsing only."""

from __future__ import annotations

import pytest

import loadstate
from loadstate import CacheControl, CacheVerdict, HttpRequest, HttpResponse


def test_cache_control_gives_the_header_value_in_a_fixed_order():
    assert str(CacheControl(max_age=60)) == "max-age=60"
    assert str(CacheControl(max_stale=True)) == "max-stale"
    assert str(CacheControl(max_stale=30)) == "max-stale=30"
    assert str(CacheControl(max_stale=0)) == "max-stale=0"
    assert str(CacheControl(min_fresh=5, no_cache=True, no_store=True, only_if_cached=True, max_age=0)) == \
        "max-age=0, min-fresh=5, no-cache, no-store, only-if-cached"
    assert str(CacheControl()) == "" and not CacheControl()
    assert CacheControl(max_stale=False) == CacheControl()


@pytest.mark.parametrize("kwargs, error", [
    ({"max_age": -1}, loadstate.InvalidArgument),
    ({"min_fresh": -5}, loadstate.InvalidArgument),
    ({"max_stale": -1}, loadstate.InvalidArgument),
    ({"max_age": 1.5}, TypeError),
    ({"max_age": "60"}, TypeError),
    ({"max_age": True}, TypeError),
    ({"min_fresh": False}, TypeError),
    ({"max_stale": "yes"}, TypeError),
    ({"no_cache": 1}, TypeError),
    ({"only_if_cached": "true"}, TypeError),
])
def test_cache_control_refuses_what_is_not_seconds_or_a_bool(kwargs, error):
    with pytest.raises(error):
        CacheControl(**kwargs)


def test_cache_control_parse_reads_its_own_directives_and_nothing_else():
    assert CacheControl.parse("max-age=60, no-cache") == CacheControl(max_age=60, no_cache=True)
    assert CacheControl.parse("  MAX-STALE ,only-if-cached ") == CacheControl(max_stale=True, only_if_cached=True)
    assert CacheControl.parse("max-stale=10,min-fresh=3,no-store") == CacheControl(max_stale=10, min_fresh=3,
                                                                                   no_store=True)
    assert CacheControl.parse("max-age=99999999999") == CacheControl(max_age=2**31)
    for other in ("max-age", "max-age=", "max-age=-1", "max-age=1.5", 'max-age="5"', "no-cache=x",
                  "no-transform", "max-age=1, max-age=2", "stale-if-error=5", "max-age =5"):
        assert CacheControl.parse(other) is None, other


def test_an_http_request_sends_its_directives_as_the_last_cache_control_line():
    request = HttpRequest("http://127.0.0.1/", headers=[("Accept", "text/plain")],
                          cache_control=CacheControl(max_age=0, only_if_cached=True))
    decoded = HttpRequest.decode(request.encode())
    assert decoded.headers == ("Accept: text/plain",)
    assert decoded.cache_control == CacheControl(max_age=0, only_if_cached=True)
    assert b"Cache-Control: max-age=0, only-if-cached" in request.encode()


def test_a_cache_control_string_is_read_into_directives_or_kept_as_it_is():
    assert HttpRequest("http://x/", cache_control="no-cache").cache_control == CacheControl(no_cache=True)
    kept = HttpRequest("http://x/", cache_control="no-cache, no-transform")
    assert kept.cache_control == "no-cache, no-transform"
    assert b"Cache-Control: no-cache, no-transform" in kept.encode()
    assert HttpRequest.decode(kept.encode()).headers == ("Cache-Control: no-cache, no-transform",)
    assert HttpRequest.decode(kept.encode()).cache_control is None
    assert HttpRequest("http://x/", cache_control="").cache_control is None
    assert HttpRequest("http://x/", cache_control=CacheControl()).cache_control is None
    assert b"Cache-Control" not in HttpRequest("http://x/", cache_control=CacheControl()).encode()


def test_cache_control_in_both_places_is_refused_and_two_lines_stay_in_headers():
    with pytest.raises(loadstate.InvalidArgument, match="Cache-Control"):
        HttpRequest("http://x/", headers={"cache-control": "no-store"}, cache_control=CacheControl(no_cache=True))
    with pytest.raises(TypeError, match="cache_control"):
        HttpRequest("http://x/", cache_control=60)  # type: ignore[arg-type]
    two = HttpRequest("http://x/", headers=["Cache-Control: no-cache", "Cache-Control: max-age=5"])
    assert HttpRequest.decode(two.encode()).headers == two.headers
    assert HttpRequest.decode(two.encode()).cache_control is None
    removal = HttpRequest("http://x/", headers=["Cache-Control:"], max_redirects=5)
    assert HttpRequest.decode(removal.encode()) == removal
    one = HttpRequest("http://x/", headers=["Cache-Control: max-age=5"], max_redirects=5)
    assert HttpRequest.decode(one.encode()) == HttpRequest("http://x/", cache_control=CacheControl(max_age=5),
                                                           max_redirects=5)


def test_the_heuristic_freshness_flag_is_bit_5_and_round_trips():
    assert loadstate.HTTP_NO_HEURISTIC_FRESHNESS == loadstate.HttpFlags.NO_HEURISTIC_FRESHNESS == 1 << 5
    request = HttpRequest("http://x/", flags=loadstate.HTTP_NO_HEURISTIC_FRESHNESS | loadstate.HTTP_HTTP1,
                          max_redirects=3)
    assert HttpRequest.decode(request.encode()) == request
    assert HttpRequest.decode(HttpRequest("http://x/").encode()).flags & loadstate.HTTP_NO_HEURISTIC_FRESHNESS == 0


def _response(*headers):
    return HttpResponse.decode(HttpResponse(200, list(headers), b"x").encode())


@pytest.mark.parametrize("value, age", [
    ("0", 0), ("118", 118), (" 42 ", 42), ("7200, 0", 7200), ("7200,0", 7200),
    ("99999999999999999999", 2**31), ("2147483648", 2**31), ("2147483647", 2147483647),
    ("-1", None), ("1.5", None), ("abc", None), ("", None), ("12a", None), ("\u00b2", None), (", 5", None),
])
def test_age_reads_the_first_member_and_saturates(value, age):
    assert _response(("Age", value)).age == age


def test_age_is_none_without_the_header_and_the_first_header_counts():
    assert _response(("Date", "x")).age is None
    assert _response(("age", "5"), ("Age", "9")).age == 5


@pytest.mark.parametrize("lines, verdict", [
    ([("Cache-Status", "loadstate; hit; ttl=118; detail=fresh")], CacheVerdict.FRESH),
    ([("Cache-Status", "loadstate; hit; ttl=3600; detail=heuristic")], CacheVerdict.HEURISTIC),
    ([("Cache-Status", "loadstate; hit; ttl=-12; detail=stale")], CacheVerdict.STALE),
    ([("Cache-Status", "loadstate; fwd=stale; fwd-status=304; detail=revalidated")], CacheVerdict.REVALIDATED),
    ([("cache-status", 'loadstate;detail="fresh"')], CacheVerdict.FRESH),
    ([("Cache-Status", "  loadstate ;  hit ;ttl = 5;   detail =  stale  ")], CacheVerdict.STALE),
    ([("Cache-Status", 'ExampleCache; hit; key="a,b;c"; detail="x, loadstate", loadstate; detail=fresh')],
     CacheVerdict.FRESH),
    ([("Cache-Status", "proxy; fwd=miss"), ("Cache-Status", "loadstate; hit; detail=heuristic")],
     CacheVerdict.HEURISTIC),
    ([("Cache-Status", "loadstate; unknown-param=1; ttl=99999999999999999999; detail=fresh; x")], CacheVerdict.FRESH),
    ([("Cache-Status", "loadstate; hit; detail=fresh; detail=stale")], CacheVerdict.FRESH),
    ([("Cache-Status", "loadstate; hit; ttl=5")], None),
    ([("Cache-Status", "loadstate; detail=brilliant")], None),
    ([("Cache-Status", "loadstate; detail=FRESH")], None),
    ([("Cache-Status", "loadstate; detail=5")], None),
    ([("Cache-Status", "loadstate; detail")], None),
    ([("Cache-Status", 'loadstate; detail="fresh')], None),
    ([("Cache-Status", "other; detail=fresh")], None),
    ([("Cache-Status", "loadstatex; detail=fresh")], None),
    ([("Cache-Status", '"loadstate"; detail=fresh')], None),
    ([("Cache-Status", "")], None),
    ([("X-Cache-Status", "loadstate; detail=fresh")], None),
    ([], None),
])
def test_cache_reads_the_loadstate_member_of_cache_status(lines, verdict):
    response = _response(*lines)
    assert response.cache is verdict
    assert HttpResponse(200, lines).cache is verdict


def test_a_cache_verdict_is_a_str():
    assert CacheVerdict.FRESH == "fresh" and str(CacheVerdict.REVALIDATED) == "revalidated"
    assert [v.value for v in CacheVerdict] == ["fresh", "heuristic", "stale", "revalidated"]
