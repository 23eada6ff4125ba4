"""keep_previous.py: a search box. While the query "bob" loads, the cell
keeps showing the results of "ada", flagged PREVIOUS, with ada's request,
so that nobody takes them for bob's."""
import threading

import loadstate

with loadstate.Runtime() as rt:
    release = threading.Event()

    @rt.loader(codec=loadstate.TEXT)
    def search(job):
        release.wait(10)  # the server's answer takes a while
        return f"results for {job.request}"

    cell = rt.loadable(search)
    release.set()
    print(cell.load("ada").value(timeout=10))

    release.clear()
    shown = threading.Event()
    cell.subscribe(lambda event: event.previous and shown.set())
    load = cell.load("bob", keep_previous=True)
    shown.wait(10)
    kept = cell.snapshot()
    print(f"while bob loads: {kept.value!r} for {kept.request!r} [{kept.flags}]")
    release.set()
    print(load.value(timeout=10))
