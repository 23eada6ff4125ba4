//! The runtime observer (`lds_runtime_observe`): every cell event, job
//! start and job end of a runtime.

use std::ffi::c_void;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::event::{ErrorDomain, Event};
use crate::runtime::{Runtime, Shared};
use crate::sys;

/// One thing a runtime observer is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    /// What happened.
    pub kind: ObservationKind,
    /// When it happened: `CLOCK_MONOTONIC`, in nanoseconds.
    pub time_ns: u64,
}

/// What a runtime observer is told of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ObservationKind {
    /// A cell event, as the cell's own [`Events`](crate::Events) stream gets it
    /// (the observer hears of it after the cell).
    Event(Event),
    /// A job starts: just before its loader is called (a job its loader's
    /// [`Limits`](crate::Limits) queued: when it is admitted).
    JobStart {
        /// The job's id.
        job: u64,
        /// Its loader's id.
        loader: u64,
        /// The first cell waiting for it (others that share it are not named).
        cell: u64,
        /// 1 for the first try, 2 for the first retry, ...
        attempt: u32,
        /// The job's request.
        request: Vec<u8>,
    },
    /// A job ended.
    JobEnd {
        /// The job's id.
        job: u64,
        /// Its loader's id.
        loader: u64,
        /// 1 for the first try, 2 for the first retry, ...
        attempt: u32,
        /// The job's request.
        request: Vec<u8>,
        /// How it ended.
        outcome: JobOutcome,
        /// How long it ran, from its start.
        duration: Duration,
    },
    /// An observation this version of the crate does not know (its `LDS_OBSERVE_*` value).
    Unknown(u32),
}

/// How a job ended (`lds_observation.outcome`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobOutcome {
    /// It succeeded or finished.
    Succeeded,
    /// It failed (a retry is a new job).
    Failed {
        /// Where the error comes from; `None` when the library named no domain.
        domain: Option<ErrorDomain>,
        /// The error's code in its domain.
        code: i32,
    },
    /// It was cancelled: its last cell left it (cancel, reset, newer load,
    /// timeout, drop), it cancelled or reset itself, or the runtime was dropped.
    Cancelled,
    /// An outcome this version of the crate does not know (its `LDS_JOB_*` value).
    Unknown(u32),
}

type ObserveFn = Box<dyn Fn(&Observation) + Send + Sync + 'static>;

/// What the library's `user_data` points to (one strong count of the `Arc`).
pub(crate) struct ObserverData {
    callback: ObserveFn,
    /// Cleared when the [`Observer`] is dropped: the callback is not called after.
    active: AtomicBool,
}

/// The runtime's observer, as [`Runtime::observe`] returns it.
///
/// Dropping it removes the observer (unless a later one replaced it); its
/// callback is not called after the drop returns, but for a call running
/// on another thread at that moment. It may outlive the [`Runtime`]: the
/// runtime's drop ends the observer, and the guard's drop then does nothing.
#[must_use = "dropping the Observer removes the observer"]
pub struct Observer {
    shared: Arc<Shared>,
    data: Arc<ObserverData>,
}

impl Runtime {
    /// Calls `observe` for every cell event, job start and job end of the
    /// runtime (`lds_runtime_observe`), for logging and tracing: a job's end
    /// carries its [`JobOutcome`] and its duration.
    ///
    /// `observe` runs on the delivery thread, like the cells' callbacks: on
    /// the loop thread in [`Delivery::Loop`](crate::Delivery::Loop) (it must
    /// not block), inside [`Runtime::dispatch`] in
    /// [`Delivery::Poll`](crate::Delivery::Poll), in the order of the
    /// runtime's steps (a load's first event, then its job's start; the
    /// job's end, then the event it causes). One observer per runtime: a new
    /// one replaces the last. Loads made after this call are observed from
    /// their first event; a job that started before it is not reported when
    /// it ends. A panic in `observe` is caught and ignored.
    ///
    /// Keep the returned [`Observer`]: dropping it removes the observer.
    pub fn observe<F>(&self, observe: F) -> Result<Observer>
    where
        F: Fn(&Observation) + Send + Sync + 'static,
    {
        let shared = self.shared();
        let data = Arc::new(ObserverData { callback: Box::new(observe), active: AtomicBool::new(true) });
        let mut current = shared.observer.lock().unwrap_or_else(PoisonError::into_inner);
        let user_data = Arc::into_raw(Arc::clone(&data)).cast_mut();
        // SAFETY: valid handle; the library owns one count of `data` from
        // here on and gives it back exactly once to `free_observer`.
        let rc = unsafe {
            sys::lds_runtime_observe(shared.raw(), Some(observe_call), user_data.cast(), Some(free_observer))
        };
        if rc != sys::LDS_OK {
            // A failed call causes no callback: the count is still ours.
            // SAFETY: from Arc::into_raw above, not taken.
            drop(unsafe { Arc::from_raw(user_data) });
            return Err(Error::from_code(rc));
        }
        if let Some(previous) = current.replace(Arc::downgrade(&data)).and_then(|weak| weak.upgrade()) {
            previous.active.store(false, Ordering::Release);
        }
        drop(current);
        Ok(Observer { shared: Arc::clone(shared), data })
    }
}

impl Observer {
    /// Whether the callback may still be called: false once a later
    /// observer replaced this one, or once the runtime was dropped.
    #[must_use]
    pub fn is_active(&self) -> bool {
        self.data.active.load(Ordering::Acquire)
    }
}

impl Drop for Observer {
    fn drop(&mut self) {
        self.data.active.store(false, Ordering::Release);
        let mut current = self.shared.observer.lock().unwrap_or_else(PoisonError::into_inner);
        let mine = current.as_ref().is_some_and(|weak| ptr::eq(weak.as_ptr(), Arc::as_ptr(&self.data)));
        if mine {
            *current = None;
            // SAFETY: valid handle; removing takes no data. LDS_ECLOSED after
            // the runtime is gone is fine.
            unsafe { sys::lds_runtime_observe(self.shared.raw(), None, ptr::null_mut(), None) };
        }
    }
}

impl fmt::Debug for Observer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Observer").field("active", &self.is_active()).finish()
    }
}

/// The runtime's current observer, for [`Observer`]'s drop and [`Runtime::observe`].
pub(crate) type CurrentObserver = Mutex<Option<std::sync::Weak<ObserverData>>>;

/// Copies `len` bytes at `data` (none when NULL).
///
/// # Safety
/// `data` must be NULL or point to `len` readable bytes.
unsafe fn copy(data: *const c_void, len: usize) -> Vec<u8> {
    if data.is_null() || len == 0 {
        Vec::new()
    } else {
        // SAFETY: the caller's guarantee.
        unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) }.to_vec()
    }
}

impl Observation {
    /// Copies a library observation.
    ///
    /// # Safety
    /// Every pointer of `raw` must be valid as the header describes (true
    /// inside an observer call).
    unsafe fn from_raw(raw: &sys::lds_observation) -> Observation {
        let kind = match raw.what {
            // SAFETY: the event pointer is valid during the call.
            sys::LDS_OBSERVE_EVENT if !raw.event.is_null() => {
                ObservationKind::Event(unsafe { Event::from_raw(&*raw.event) })
            }
            sys::LDS_OBSERVE_JOB_START => ObservationKind::JobStart {
                job: raw.job,
                loader: raw.loader,
                cell: raw.cell,
                attempt: raw.attempt,
                // SAFETY: as above.
                request: unsafe { copy(raw.request, raw.request_len) },
            },
            sys::LDS_OBSERVE_JOB_END => ObservationKind::JobEnd {
                job: raw.job,
                loader: raw.loader,
                attempt: raw.attempt,
                // SAFETY: as above.
                request: unsafe { copy(raw.request, raw.request_len) },
                outcome: match raw.outcome {
                    sys::LDS_JOB_SUCCEEDED => JobOutcome::Succeeded,
                    sys::LDS_JOB_FAILED => {
                        JobOutcome::Failed { domain: ErrorDomain::from_raw(raw.error_domain), code: raw.error_code }
                    }
                    sys::LDS_JOB_CANCELLED => JobOutcome::Cancelled,
                    other => JobOutcome::Unknown(other),
                },
                duration: Duration::from_nanos(raw.duration_ns),
            },
            other => ObservationKind::Unknown(other),
        };
        Observation { kind, time_ns: raw.time_ns }
    }
}

unsafe extern "C" fn observe_call(observation: *const sys::lds_observation, user_data: *mut c_void) {
    // SAFETY: user_data is the ObserverData given to lds_runtime_observe,
    // alive until free_observer, which never runs during a call.
    let data = unsafe { &*user_data.cast::<ObserverData>() };
    if observation.is_null() || !data.active.load(Ordering::Acquire) {
        return;
    }
    // SAFETY: the library passes a valid observation for the call.
    let observation = unsafe { Observation::from_raw(&*observation) };
    let _ = catch_unwind(AssertUnwindSafe(|| (data.callback)(&observation)));
}

unsafe extern "C" fn free_observer(user_data: *mut c_void) {
    // SAFETY: the library calls this once with the pointer given to
    // lds_runtime_observe, a count from Arc::into_raw.
    let data = unsafe { Arc::from_raw(user_data.cast::<ObserverData>().cast_const()) };
    data.active.store(false, Ordering::Release);
    let _ = catch_unwind(AssertUnwindSafe(move || drop(data)));
}
