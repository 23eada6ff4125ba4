//! The POLL-mode descriptor when the runtime goes: closed with it by
//! default, handed over open and quiet by `close_keeping_fd`.

use std::ffi::c_int;
use std::os::fd::{AsRawFd, RawFd};

use loadstate::{Delivery, ErrorKind, Events, Loadable, Runtime};

#[repr(C)]
struct PollFd {
    fd: c_int,
    events: i16,
    revents: i16,
}

const POLLIN: i16 = 0x001;
const F_GETFD: c_int = 1;

unsafe extern "C" {
    fn poll(fds: *mut PollFd, nfds: u64, timeout: c_int) -> c_int;
    fn fcntl(fd: c_int, cmd: c_int, ...) -> c_int;
}

fn readable(fd: RawFd, timeout_ms: c_int) -> bool {
    let mut p = PollFd { fd, events: POLLIN, revents: 0 };
    // SAFETY: one valid pollfd.
    unsafe { poll(&raw mut p, 1, timeout_ms) == 1 }
}

fn is_open(fd: RawFd) -> bool {
    // SAFETY: F_GETFD reads a descriptor's flags; any number is allowed.
    unsafe { fcntl(fd, F_GETFD) >= 0 }
}

/// A runtime with one event pending (not dispatched): its descriptor is readable.
fn pending(rt: &Runtime) -> (RawFd, Loadable, Events) {
    let (cell, events) = rt.loadable().unwrap();
    cell.set_loaded(b"v").unwrap();
    let fd = rt.fd().unwrap();
    assert!(readable(fd, 10_000));
    (fd, cell, events)
}

#[test]
fn close_keeping_fd_hands_over_an_open_quiet_descriptor() {
    let rt = Runtime::poll_keeping_fd().unwrap();
    let (fd, cell, _events) = pending(&rt);
    drop(cell);
    let owned = rt.close_keeping_fd().unwrap();
    assert_eq!(owned.as_raw_fd(), fd);
    assert!(is_open(fd));
    assert!(!readable(fd, 200));
    drop(owned);
    assert!(!is_open(fd));
}

#[test]
fn dropping_a_runtime_closes_its_descriptor() {
    let rt = Runtime::with_delivery(Delivery::Poll).unwrap();
    let (fd, cell, _events) = pending(&rt);
    drop(cell);
    drop(rt);
    assert!(!is_open(fd));
}

#[test]
fn dropping_a_keeping_runtime_leaves_its_descriptor_quiet() {
    let rt = Runtime::poll_keeping_fd().unwrap();
    let (fd, cell, _events) = pending(&rt);
    drop(cell);
    drop(rt);
    assert!(is_open(fd));
    assert!(!readable(fd, 200));
    // SAFETY: the library gave the descriptor up at the free; close it here.
    drop(unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) });
}

#[test]
fn close_keeping_fd_needs_a_keeping_runtime() {
    let rt = Runtime::with_delivery(Delivery::Poll).unwrap();
    assert_eq!(rt.close_keeping_fd().unwrap_err().kind(), ErrorKind::State);
    let rt = Runtime::new().unwrap();
    assert_eq!(rt.close_keeping_fd().unwrap_err().kind(), ErrorKind::State);
}
