//! Code shared by the integration tests.

#![allow(clippy::cast_possible_truncation)] // casts of small test numbers (counts, sizes, ms) known to fit
#![allow(dead_code)]

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

use loadstate::{Event, Events, Job, Loadable, Loader, Runtime, Status};

pub mod redis_server;

/// A safety deadline for things that happen within milliseconds; only a
/// broken library makes a test wait this long.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// A cell's event stream that checks that seq grows by one per event.
pub struct Watch {
    pub events: Events,
    last_seq: u64,
}

impl Watch {
    pub fn new(events: Events) -> Watch {
        Watch { events, last_seq: 0 }
    }

    /// The next event; panics after the deadline.
    pub fn next(&mut self) -> Event {
        let event = self.events.recv_timeout(DEADLINE).unwrap_or_else(|e| panic!("no event: {e:?}"));
        assert_eq!(event.seq, self.last_seq + 1, "seq must grow by one: {event:?}");
        self.last_seq = event.seq;
        event
    }

    /// Reads events until one ends the load ([`Event::is_settled`]).
    pub fn wait_settled(&mut self) -> Event {
        loop {
            let event = self.next();
            if event.is_settled() {
                return event;
            }
        }
    }

    /// Asserts that the stream has ended (its cell or runtime is gone),
    /// after any events still queued.
    pub fn expect_end(&mut self) {
        loop {
            match self.events.recv_timeout(DEADLINE) {
                Ok(event) => {
                    assert_eq!(event.seq, self.last_seq + 1);
                    self.last_seq = event.seq;
                }
                Err(RecvTimeoutError::Disconnected) => return,
                Err(RecvTimeoutError::Timeout) => panic!("the stream did not end"),
            }
        }
    }

    /// Asserts that nothing is queued right now.
    pub fn expect_nothing_queued(&self) {
        if let Ok(event) = self.events.try_recv() {
            panic!("unexpected event {event:?}");
        }
    }
}

/// A runtime, a loader whose jobs the test ends, and a loadable cell with
/// its watched stream.
pub struct Setup {
    pub runtime: Runtime,
    pub loader: Loader,
    pub jobs: JobQueue,
    pub cell: Loadable,
    pub watch: Watch,
}

pub fn setup() -> Setup {
    let runtime = Runtime::new().expect("runtime");
    let (loader, jobs) = job_queue(&runtime);
    let (cell, events) = runtime.loadable().expect("cell");
    Setup { runtime, loader, jobs, cell, watch: Watch::new(events) }
}

impl Setup {
    /// Loads `request`, succeeds its job with the request as its value and
    /// waits until the cell shows it.
    pub fn load_and_succeed(&mut self, request: &[u8]) {
        self.cell.load(&self.loader, request).unwrap();
        self.jobs.next().succeed(request).unwrap();
        assert_eq!(self.watch.wait_settled().status, Status::Loaded);
    }
}

/// A loader that hands every job to the test through a channel.
pub fn job_queue(runtime: &Runtime) -> (Loader, JobQueue) {
    let (tx, rx) = mpsc::channel::<Job>();
    let loader = runtime
        .loader(move |job| {
            let _ = tx.send(job);
        })
        .expect("loader");
    (loader, JobQueue { rx })
}

pub struct JobQueue {
    rx: Receiver<Job>,
}

impl JobQueue {
    /// The next started job; panics after the deadline.
    pub fn next(&self) -> Job {
        self.rx.recv_timeout(DEADLINE).expect("a job should start")
    }

    pub fn try_next(&self) -> Option<Job> {
        self.rx.try_recv().ok()
    }
}

/// Sends on a channel when dropped: observes when the library drops a
/// closure that owns it.
pub struct DropSignal(pub Sender<()>);

impl Drop for DropSignal {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

/// A counter that hooks increment, readable from the test thread.
#[derive(Clone, Default)]
pub struct Tally(Arc<Mutex<Vec<String>>>);

impl Tally {
    pub fn push(&self, entry: impl Into<String>) {
        self.0.lock().unwrap().push(entry.into());
    }
    pub fn entries(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// A channel whose receiver waits with the deadline.
pub fn signal() -> (Sender<String>, Receiver<String>) {
    mpsc::channel()
}

pub fn wait(rx: &Receiver<String>) -> String {
    rx.recv_timeout(DEADLINE).expect("signal")
}

/// The marker of panics that tests cause on purpose.
pub const EXPECTED_PANIC: &str = "expected panic";

/// Keeps panics that carry [`EXPECTED_PANIC`] out of the test output;
/// every other panic is reported as usual.
pub fn quiet_expected_panics() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let text = payload
                .downcast_ref::<&str>()
                .map(std::string::ToString::to_string)
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            if !text.contains(EXPECTED_PANIC) {
                default(info);
            }
        }));
    });
}

/// Waits until `fd` is readable (POLL mode's descriptor); panics after the
/// deadline.
pub fn wait_readable(fd: i32) {
    #[repr(C)]
    struct PollFd {
        fd: i32,
        events: i16,
        revents: i16,
    }
    unsafe extern "C" {
        fn poll(fds: *mut PollFd, nfds: u64, timeout: i32) -> i32;
    }
    const POLLIN: i16 = 1;
    let mut pfd = PollFd { fd, events: POLLIN, revents: 0 };
    // SAFETY: one valid pollfd.
    let ready = unsafe { poll(&raw mut pfd, 1, DEADLINE.as_millis() as i32) };
    assert_eq!(ready, 1, "the descriptor becomes readable");
}

/// POLL mode: dispatches until `events` yields an event, and returns it.
pub fn dispatch_until_event(runtime: &Runtime, events: &Events) -> Event {
    loop {
        if let Ok(event) = events.try_recv() {
            return event;
        }
        wait_readable(runtime.fd().unwrap());
        runtime.dispatch(0).unwrap();
    }
}
