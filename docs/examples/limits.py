"""limits.py: a loader held to one job at a time. Three cells load at
once: one job runs, the others wait in the loader's queue, flagged QUEUED,
and start by priority (higher first) as the running one ends."""
import threading

import loadstate

with loadstate.Runtime() as rt:
    gate = threading.Semaphore(0)
    order = []

    @rt.loader(codec=loadstate.TEXT, limits=loadstate.Limits(max_concurrent=1))
    def report(job):
        order.append(job.request)
        gate.acquire(timeout=10)  # the work
        return f"report {job.request}"

    queued = []
    cells = [rt.loadable(report) for _ in range(3)]
    for cell in cells:
        cell.subscribe(lambda event: event.queued and queued.append(event.request))
    loads = [cell.load(name, priority=priority)
             for cell, name, priority in zip(cells, ["a", "b", "c"], [0, 1, 5])]
    for _ in loads:
        gate.release()
    print([load.value(timeout=10) for load in loads])
    print("queued:", sorted(queued), "ran in order:", order)
