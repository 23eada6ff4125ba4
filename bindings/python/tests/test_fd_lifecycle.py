"""The POLL-mode descriptor at close: closed by default, kept open and quiet with ``keep_fd=True``."""
import errno
import fcntl
import os
import select

import pytest

import loadstate


def _readable(fd: int, timeout_s: float) -> bool:
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(int(timeout_s * 1000)))


def _pending_runtime(**options):
    """A POLL-mode runtime whose descriptor is readable: one event queued, not dispatched.

    Returns the runtime, its descriptor, the list of event seqs seen, and the cell.
    """
    rt = loadstate.Runtime(loadstate.Delivery.POLL, **options)
    seen = []
    cell = rt.loadable(on_event=lambda event: seen.append(event.seq))
    cell.set_loaded(b"v")
    fd = rt.fd
    assert _readable(fd, 10.0)
    # The cell is returned too: one no longer referenced is freed, its events dropped.
    return rt, fd, seen, cell


def test_keep_fd_leaves_the_descriptor_open_and_never_readable():
    rt, fd, seen, _cell = _pending_runtime(keep_fd=True)
    rt.close()
    assert seen == []
    assert fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC
    assert not _readable(fd, 0.2)
    os.close(fd)
    with pytest.raises(OSError) as caught:
        fcntl.fcntl(fd, fcntl.F_GETFD)
    assert caught.value.errno == errno.EBADF


def test_without_keep_fd_close_closes_the_descriptor():
    rt, fd, _, _cell = _pending_runtime()
    rt.close()
    with pytest.raises(OSError) as caught:
        fcntl.fcntl(fd, fcntl.F_GETFD)
    assert caught.value.errno == errno.EBADF


def test_keep_fd_runtime_delivers_as_usual_until_closed():
    rt, fd, seen, _cell = _pending_runtime(keep_fd=True)
    assert rt.dispatch() == 1
    assert len(seen) == 1
    assert not _readable(fd, 0)
    rt.close()
    os.close(fd)


def test_keep_fd_needs_poll_mode_and_a_bool():
    with pytest.raises(ValueError):
        loadstate.Runtime(keep_fd=True)
    with pytest.raises(TypeError):
        loadstate.Runtime(loadstate.Delivery.POLL, keep_fd=1)
