use std::any::Any;
use std::ffi::{CString, c_void};
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use crate::error::{Error, Result, check};
use crate::options::Limits;
use crate::runtime::Shared;
use crate::sys;

/// The host error code a job fails with when its loader closure panics
/// (the exit status of a Rust program that panics). The message is
/// `"loader panicked: "` followed by the panic's message.
pub const PANIC_ERROR_CODE: i32 = 101;

type StartFn = Box<dyn Fn(Job) + Send + Sync + 'static>;

/// What the library holds as a loader's `loader_data`.
struct LoaderData {
    shared: Arc<Shared>,
    start: StartFn,
}

/// A loader: a closure that runs one job per load or run.
///
/// Dropping the loader frees it (`lds_loader_free`): new loads with it fail
/// with [`ErrorKind::NotFound`](crate::ErrorKind::NotFound), its running
/// jobs go on, and the closure is dropped once the last of them has ended.
/// Dropping it after the runtime is harmless (the runtime already dropped
/// the closure).
pub struct Loader {
    shared: Arc<Shared>,
    id: u64,
    name: Option<String>,
}

/// A loader's or cell's name as the C string the library takes: none for
/// `""`; a NUL inside fails with `InvalidArgument` (the library checks the
/// rest: [`NAME_MAX`](crate::NAME_MAX), control characters).
pub(crate) fn c_name(name: Option<&str>) -> Result<Option<CString>> {
    match name {
        None | Some("") => Ok(None),
        Some(text) => CString::new(text).map(Some).map_err(|_| Error::from_code(sys::LDS_EINVAL)),
    }
}

impl Loader {
    pub(crate) fn new(shared: &Arc<Shared>, start: StartFn, limits: Limits, name: Option<&str>) -> Result<Loader> {
        let c_name = c_name(name)?;
        let data = Box::into_raw(Box::new(LoaderData { shared: Arc::clone(shared), start }));
        let mut id = 0;
        let options = sys::lds_loader_options {
            name: c_name.as_ref().map_or(std::ptr::null(), |n| n.as_ptr()),
            start: Some(start_job),
            free_data: Some(free_loader),
            loader_data: data.cast(),
            max_concurrent: limits.max_concurrent,
            rate_per_s: limits.rate_per_s,
            burst: limits.burst,
            ..sys::lds_loader_options::INIT
        };
        // SAFETY: valid handle and options; the library owns `data` from
        // here on and gives it back exactly once to `free_loader`.
        let rc = unsafe { sys::lds_loader_new_ex(shared.raw(), &raw const options, &raw mut id) };
        if rc != sys::LDS_OK {
            // A failed call causes no callback: the data is still ours.
            // SAFETY: `data` came from Box::into_raw above and was not taken.
            drop(unsafe { Box::from_raw(data) });
            return Err(Error::from_code(rc));
        }
        Ok(Loader { shared: Arc::clone(shared), id, name: c_name.map(|_| name.unwrap_or_default().to_owned()) })
    }

    /// A built-in loader the library created with id `id`, named `name`.
    pub(crate) fn built_in(shared: &Arc<Shared>, id: u64, name: Option<&str>) -> Loader {
        let name = name.filter(|n| !n.is_empty()).map(str::to_owned);
        Loader { shared: Arc::clone(shared), id, name }
    }

    /// The loader's id in its runtime.
    #[must_use]
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The name the loader was made with, if any: what the metrics text
    /// labels its series with (`loader="users"`) and the inspector shows.
    #[must_use]
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }
}

impl Drop for Loader {
    fn drop(&mut self) {
        // SAFETY: valid handle. LDS_ECLOSED after the runtime is gone is fine.
        unsafe { sys::lds_loader_free(self.shared.raw(), self.id) };
    }
}

#[allow(clippy::missing_fields_in_debug)] // the runtime handle is not worth printing: the id says which loader
impl fmt::Debug for Loader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Loader").field("id", &self.id).field("name", &self.name).finish()
    }
}

unsafe extern "C" fn start_job(
    _rt: *mut sys::lds_runtime,
    id: sys::lds_id,
    request: *const c_void,
    request_len: usize,
    data: *mut c_void,
) {
    // SAFETY: `data` is the LoaderData given to lds_loader_new, alive until
    // free_loader, which never runs during a start call.
    let data = unsafe { &*data.cast::<LoaderData>() };
    let request: Arc<[u8]> = if request.is_null() || request_len == 0 {
        Arc::from(&[][..])
    } else {
        // SAFETY: the library passes `request_len` readable bytes.
        Arc::from(unsafe { std::slice::from_raw_parts(request.cast::<u8>(), request_len) })
    };
    let job = Job { shared: Arc::clone(&data.shared), id, request };
    let fallback = job.clone();
    if let Err(payload) = catch_unwind(AssertUnwindSafe(|| (data.start)(job))) {
        // A C string cannot hold NUL bytes.
        let message = format!("loader panicked: {}", panic_message(payload.as_ref())).replace('\0', "\\0");
        // The job may have ended before the panic: then this changes nothing.
        let _ = fallback.fail(PANIC_ERROR_CODE, &message);
    }
}

unsafe extern "C" fn free_loader(data: *mut c_void) {
    // SAFETY: the library calls this once with the pointer given to
    // lds_loader_new.
    let data = unsafe { Box::from_raw(data.cast::<LoaderData>()) };
    let _ = catch_unwind(AssertUnwindSafe(move || drop(data)));
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}

/// One run of a loader on behalf of a cell.
///
/// Cloning is cheap; every clone names the same job. A job may be ended
/// from any thread, from inside the loader closure or later, with
/// [`succeed`](Job::succeed), [`finish`](Job::finish), [`fail`](Job::fail),
/// [`cancel_self`](Job::cancel_self) or [`reset_self`](Job::reset_self).
/// Once the job no longer runs (ended, cancelled, superseded, timed out,
/// its cell freed), every call returns
/// [`ErrorKind::Cancelled`](crate::ErrorKind::Cancelled) and changes
/// nothing; after the runtime is dropped they return
/// [`ErrorKind::Closed`](crate::ErrorKind::Closed).
///
/// A job whose handles are all dropped without ending it keeps the cell
/// loading until the cell is cancelled, reset, loaded again or freed.
#[derive(Clone)]
pub struct Job {
    shared: Arc<Shared>,
    id: u64,
    request: Arc<[u8]>,
}

impl Job {
    /// The job's id in its runtime.
    #[must_use]
    pub fn id(&self) -> u64 {
        self.id
    }

    /// A copy of the request the load was started with.
    #[must_use]
    pub fn request(&self) -> &[u8] {
        &self.request
    }

    /// Shows a partial value: the cell becomes loaded, flagged
    /// [`Flags::PARTIAL`](crate::Flags::PARTIAL). The job goes on.
    pub fn yield_value(&self, value: &[u8]) -> Result<()> {
        // SAFETY: valid handle and buffer.
        check(unsafe { sys::lds_job_yield(self.shared.raw(), self.id, value.as_ptr().cast(), value.len()) })?;
        Ok(())
    }

    /// Reports progress; the cell gets an
    /// [`EventType::Progress`](crate::EventType::Progress) event. A `total`
    /// of 0 means unknown.
    pub fn progress(&self, done: u64, total: u64) -> Result<()> {
        // SAFETY: valid handle.
        check(unsafe { sys::lds_job_progress(self.shared.raw(), self.id, done, total) })?;
        Ok(())
    }

    /// Ends the job with a final value (process cells: finished; the value
    /// is ignored).
    pub fn succeed(&self, value: &[u8]) -> Result<()> {
        // SAFETY: valid handle and buffer.
        let rc = unsafe { sys::lds_job_succeed(self.shared.raw(), self.id, value.as_ptr().cast(), value.len()) };
        self.ended(rc)
    }

    /// Ends the job keeping the last yielded value, without
    /// [`Flags::PARTIAL`](crate::Flags::PARTIAL); with nothing yielded the
    /// cell returns to its state before the load.
    pub fn finish(&self) -> Result<()> {
        // SAFETY: valid handle.
        let rc = unsafe { sys::lds_job_finish(self.shared.raw(), self.id) };
        self.ended(rc)
    }

    /// Ends the job with an error in the host domain. When the load has
    /// retries left, the cell stays loading and a new job starts the next
    /// attempt after a back-off; see [`fail_final`](Job::fail_final).
    /// A message holding a NUL byte is refused with
    /// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument).
    pub fn fail(&self, code: i32, message: &str) -> Result<()> {
        let message = CString::new(message).map_err(|_| Error::from_code(sys::LDS_EINVAL))?;
        // SAFETY: valid handle and string.
        let rc = unsafe { sys::lds_job_fail(self.shared.raw(), self.id, code, message.as_ptr()) };
        self.ended(rc)
    }

    /// Ends the job with an error that retrying cannot fix: the cell shows
    /// the error at once even when the load has retries left.
    pub fn fail_final(&self, code: i32, message: &str) -> Result<()> {
        let message = CString::new(message).map_err(|_| Error::from_code(sys::LDS_EINVAL))?;
        // SAFETY: valid handle and string.
        let rc = unsafe { sys::lds_job_fail_final(self.shared.raw(), self.id, code, message.as_ptr()) };
        self.ended(rc)
    }

    /// Cancels the job from inside: the cell returns to its state before
    /// the load, flagged [`Flags::CANCELLED`](crate::Flags::CANCELLED); the
    /// cancel hooks run.
    pub fn cancel_self(&self) -> Result<()> {
        // SAFETY: valid handle.
        check(unsafe { sys::lds_job_cancel_self(self.shared.raw(), self.id) })?;
        Ok(())
    }

    /// Ends the job and makes the cell absent (process cells: idle); the
    /// cancel hooks run.
    pub fn reset_self(&self) -> Result<()> {
        // SAFETY: valid handle.
        check(unsafe { sys::lds_job_reset_self(self.shared.raw(), self.id) })?;
        Ok(())
    }

    /// Whether work on the job should stop: true once it no longer runs,
    /// and also when the runtime is gone.
    #[must_use]
    pub fn is_cancelled(&self) -> bool {
        // SAFETY: valid handle.
        let rc = unsafe { sys::lds_job_is_cancelled(self.shared.raw(), self.id) };
        rc != 0
    }

    /// Runs `hook` once, on the delivery thread, when the job is cancelled
    /// (from outside or inside), superseded, timed out, or its cell or the
    /// runtime is freed; not when it ends by succeed, finish or fail. Hooks
    /// run in the order they were added. A panic in a hook is caught and
    /// ignored.
    ///
    /// Returns [`ErrorKind::Cancelled`](crate::ErrorKind::Cancelled), and
    /// drops `hook` without running it, when the job no longer runs.
    pub fn on_cancel<F>(&self, hook: F) -> Result<()>
    where
        F: FnOnce() + Send + 'static,
    {
        self.shared.add_cancel_hook(self.id, Box::new(hook))
    }

    /// After succeed, finish, fail or `fail_final`: the library drops the job's cancel
    /// hooks, and so does the crate.
    /// Ends a page's job (see [`Pages`](crate::Pages)) with its value and
    /// the cursors of the pages after it (`next`) and before it
    /// (`previous`); `None`: no page that way. A cursor longer than
    /// [`CURSOR_MAX`](crate::CURSOR_MAX) bytes fails the page instead (its
    /// error is [`ErrorKind::TooBig`](crate::ErrorKind::TooBig)) and this
    /// returns that error.
    pub fn succeed_page(&self, value: &[u8], next: Option<&[u8]>, previous: Option<&[u8]>) -> Result<()> {
        let cursor = |c: Option<&[u8]>| c.map_or((std::ptr::null(), 0), |c| (c.as_ptr().cast::<c_void>(), c.len()));
        let ((next_ptr, next_len), (previous_ptr, previous_len)) = (cursor(next), cursor(previous));
        // SAFETY: valid handle and buffers (a cursor's pointer is not null when given, even empty).
        let rc = unsafe {
            sys::lds_job_succeed_page(
                self.shared.raw(),
                self.id,
                value.as_ptr().cast(),
                value.len(),
                next_ptr,
                next_len,
                previous_ptr,
                previous_len,
            )
        };
        if rc == sys::LDS_ETOOBIG {
            self.shared.forget_cancel_hooks(self.id);
        }
        self.ended(rc)
    }

    fn ended(&self, rc: i32) -> Result<()> {
        check(rc)?;
        self.shared.forget_cancel_hooks(self.id);
        Ok(())
    }
}

#[allow(clippy::missing_fields_in_debug)] // the runtime handle is not worth printing: the id says which job
impl fmt::Debug for Job {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Job").field("id", &self.id).field("request_len", &self.request.len()).finish()
    }
}
