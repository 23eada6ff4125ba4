"""Makes docs/inspector.png: a runtime with two named loaders and five named cells loading for about 30 s,
then a screenshot of its inspector in headless Chromium. From the repository's root, after `make lib`:

    LOADSTATE_LIBRARY=$PWD/.build/debug/libloadstate.so PYTHONPATH=bindings/python python3 docs/inspector_screenshot.py
"""
import random
import sys
import time

sys.path.insert(0, "bindings/python/tests")
from browser import Browser
import loadstate

with loadstate.Runtime() as rt:
    url = rt.start_inspector(interval=0.2, show_values=True)
    cache = rt.memory_cache(name="users")
    def slow(job):
        time.sleep(random.uniform(0.002, 0.03))
        return job.request.upper()
    users = rt.loader(slow, name="users api", limits=loadstate.Limits(max_concurrent=2))
    pages = rt.loader(lambda job: job.request, name="pages")
    cells = [rt.loadable(users, name=f"profile {i}") for i in range(4)]
    page = rt.loadable(pages, name="front page")
    stop = time.monotonic() + 32
    n = 0
    while time.monotonic() < stop:
        for i, c in enumerate(cells):
            c.load(b"user %d" % (n % 7), cache=cache, cache_key=f"user/{n % 7}")
        page.load(b"page %d" % n)
        n += 1
        time.sleep(random.uniform(0.1, 0.6))
    time.sleep(0.5)
    b = Browser(timeout=30)
    try:
        b.call("Emulation.setDeviceMetricsOverride", width=1280, height=820, deviceScaleFactor=1, mobile=False)
        b.navigate(url)
        time.sleep(1.5)
        b.screenshot("docs/inspector.png")
    finally:
        b.close()
