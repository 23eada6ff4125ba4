"""first_load.py: a loader written in Python, a cell, and the events of a
load and of a refresh (the old value stays visible, flagged REFRESHING)."""
import sys

import loadstate


def show(event):
    flags = f" [{event.flags}]" if event.flags else ""
    value = f" {event.value!r}" if event.status is loadstate.Status.LOADED else ""
    print(f"#{event.seq} {event.status.name}{value} request={event.request!r}{flags}")


with loadstate.Runtime() as rt:
    @rt.loader(codec=loadstate.TEXT)
    def greet(job):  # runs on a worker thread: it may block
        return f"hello, {job.request}"

    cell = rt.loadable(greet)
    cell.subscribe(show)  # called on the delivery thread, for every event

    print("value:", cell.load("world").value(timeout=10))
    state = cell.refresh().state(timeout=10)
    print("after the refresh:", state.status.name, repr(state.value))
    sys.stdout.flush()
