use std::collections::{HashMap, VecDeque};
use std::ffi::c_void;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::Duration;

use crate::cell::{CellFlavor, Events, Loadable, Process, Sink};
use crate::error::{Error, Result, check};
use crate::loader::{Job, Loader};
use crate::observer::CurrentObserver;
use crate::options::{Delivery, Limits, LoadOptions};
use crate::sys;

/// A loadstate runtime: one event loop on its own thread, which owns cells,
/// loaders and jobs.
///
/// # Threading
///
/// The header makes every `lds_*` function safe to call from any thread,
/// including from inside a callback, with one exception: `lds_runtime_free`,
/// which joins the loop thread and refuses to run inside a callback. So:
///
/// * `Runtime`, [`Loadable`], [`Process`], [`Loader`] and [`Job`] are
///   `Send + Sync`: their methods only call functions of the first kind.
/// * Dropping the `Runtime` calls `lds_runtime_free`. Drop needs the
///   `Runtime` by value, so no method of the `Runtime` itself (such as
///   [`dispatch`](Runtime::dispatch)) can run at the same time. Cells,
///   loaders and jobs keep working from other threads while it is dropped:
///   the library keeps the runtime handle's memory valid after the free,
///   and their calls return [`ErrorKind::Closed`](crate::ErrorKind::Closed).
///   Those handles also keep the crate's own bookkeeping alive (an `Arc`),
///   so they may outlive the `Runtime` in any order.
/// * If the last `Runtime` handle is dropped inside a callback (for instance
///   by a loader closure that owned an `Arc<Runtime>`), `lds_runtime_free`
///   would return `LDS_ESTATE`; the free is then handed to a new thread, and
///   callbacks may still run until that thread has freed the runtime.
///
/// Closures given to the crate run on the delivery thread (see
/// [`Delivery`]); they must be `Send + Sync + 'static` because that thread
/// is not the caller's.
///
/// Dropping the runtime cancels every running job (their
/// [`Job::on_cancel`] hooks run), drops every loader closure and joins the
/// loop thread; every [`Events`] stream of the runtime then ends.
pub struct Runtime {
    shared: Arc<Shared>,
}

/// What every handle of one runtime shares.
pub(crate) struct Shared {
    raw: NonNull<sys::lds_runtime>,
    /// Made with `LDS_RUNTIME_KEEP_FD` (see [`Runtime::poll_keeping_fd`]).
    keeps_fd: bool,
    /// A loadable cell whose events free the sinks of dropped cells.
    janitor: AtomicU64,
    graveyard: Mutex<Graveyard>,
    hooks: Mutex<HashMap<u64, VecDeque<CancelHook>>>,
    /// The observer set by [`Runtime::observe`], if any.
    pub(crate) observer: CurrentObserver,
}

type CancelHook = Box<dyn FnOnce() + Send + 'static>;

#[derive(Default)]
struct Graveyard {
    /// Set once `lds_runtime_free` has returned: no callback runs any more.
    closed: bool,
    /// Whether a janitor event has been requested and not yet run.
    scheduled: bool,
    /// The sinks of live cells, closed when the runtime is freed so that
    /// their streams end.
    live: HashMap<u64, SinkPtr>,
    /// The sinks of freed cells, waiting for the janitor.
    sinks: Vec<SinkPtr>,
}

/// A sink whose cell was freed, waiting until no callback can use it.
struct SinkPtr(NonNull<Sink>);

// SAFETY: a sink is only touched through shared references (its fields
// are Sync) and freed once; the pointer may move between threads.
unsafe impl Send for SinkPtr {}

// SAFETY: the header allows every function except lds_runtime_free to be
// called from any thread at any time, and lds_runtime_free is only called
// from `Runtime`'s Drop (see the Threading section above). The other fields
// are Mutex/atomics.
unsafe impl Send for Shared {}
unsafe impl Sync for Shared {}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Runtime {
    /// A runtime whose callbacks run on its loop thread.
    pub fn new() -> Result<Runtime> {
        Runtime::with_delivery(Delivery::Loop)
    }

    /// A runtime with the given delivery mode.
    pub fn with_delivery(delivery: Delivery) -> Result<Runtime> {
        Runtime::create(delivery, 0, 0)
    }

    /// A runtime that counts nothing (`LDS_RUNTIME_NO_METRICS`): its
    /// [`Runtime::stats`] stay at zero, and its loads read no clock for them.
    pub fn without_metrics(delivery: Delivery) -> Result<Runtime> {
        Runtime::create(delivery, 0, sys::LDS_RUNTIME_NO_METRICS)
    }

    /// A POLL-mode runtime whose descriptor outlives it
    /// (`LDS_RUNTIME_KEEP_FD`): for a main loop (a GUI toolkit's) that
    /// watches [`Runtime::fd`]. Free it with [`Runtime::close_keeping_fd`],
    /// which hands the descriptor over, drained and never readable again:
    /// remove the watch, then drop the returned `OwnedFd`. A watch left
    /// behind by mistake sees a quiet descriptor, never a closed or reused
    /// one. Dropped instead, the runtime leaves its descriptor open (quiet)
    /// until the process ends.
    pub fn poll_keeping_fd() -> Result<Runtime> {
        Runtime::create(Delivery::Poll, 0, sys::LDS_RUNTIME_KEEP_FD)
    }

    /// Frees a runtime made by [`Runtime::poll_keeping_fd`] and returns its
    /// descriptor, which stays open (never readable) until the `OwnedFd` is
    /// dropped: stop watching it first. `ErrorKind::State` for a runtime
    /// made otherwise, or inside a callback (the runtime is then dropped as
    /// usual and its descriptor stays open).
    pub fn close_keeping_fd(self) -> Result<OwnedFd> {
        let fd = self.fd()?;
        if !self.shared.keeps_fd {
            return Err(Error::from_code(sys::LDS_ESTATE));
        }
        // SAFETY: valid handle; see the Threading section.
        check(unsafe { sys::lds_runtime_free(self.shared.raw()) })?;
        self.shared.after_free();
        // Drop's lds_runtime_free now returns LDS_ECLOSED and does nothing.
        drop(self);
        // SAFETY: the library no longer uses or closes the descriptor once
        // lds_runtime_free has returned with LDS_RUNTIME_KEEP_FD; it is ours.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// A runtime whose loop thread keeps polling for more work for `spin`
    /// (in total per wake-up, at most 100 ms) before it sleeps
    /// (`lds_runtime_options.spin_us`): calls that come a few microseconds
    /// apart then need no wake-up system call each, at the cost of up to
    /// that much CPU time after each burst. `Error::InvalidArgument` above
    /// 100 ms.
    pub fn with_spin(delivery: Delivery, spin: Duration) -> Result<Runtime> {
        let micros = u32::try_from(spin.as_micros()).unwrap_or(u32::MAX);
        Runtime::create(delivery, micros, 0)
    }

    fn create(delivery: Delivery, spin_us: u32, flags: u32) -> Result<Runtime> {
        let options = sys::lds_runtime_options {
            delivery: match delivery {
                Delivery::Loop => sys::LDS_DELIVER_LOOP,
                Delivery::Poll => sys::LDS_DELIVER_POLL,
            },
            spin_us,
            flags,
            ..sys::lds_runtime_options::INIT
        };
        let mut raw = ptr::null_mut();
        // SAFETY: valid options and out pointer.
        check(unsafe { sys::lds_runtime_new(&raw const options, &raw mut raw) })?;
        let raw = NonNull::new(raw).ok_or(Error::from_code(sys::LDS_ENOMEM))?;
        let shared = Arc::new(Shared {
            raw,
            keeps_fd: flags & sys::LDS_RUNTIME_KEEP_FD != 0,
            janitor: AtomicU64::new(0),
            graveyard: Mutex::new(Graveyard::default()),
            hooks: Mutex::new(HashMap::new()),
            observer: Mutex::new(None),
        });
        let runtime = Runtime { shared };
        let mut janitor = 0;
        // SAFETY: the user data is the Shared, which outlives every
        // callback: the Runtime holds it until lds_runtime_free returns.
        check(unsafe {
            sys::lds_loadable_new(
                raw.as_ptr(),
                Some(janitor_event),
                Arc::as_ptr(&runtime.shared).cast_mut().cast(),
                &raw mut janitor,
            )
        })?;
        runtime.shared.janitor.store(janitor, Ordering::Release);
        Ok(runtime)
    }

    /// The raw handle, for calls through [`sys`](crate::sys). It stays
    /// valid (calls return `LDS_ECLOSED`) after the runtime is dropped.
    #[must_use]
    pub fn as_ptr(&self) -> *mut sys::lds_runtime {
        self.shared.raw()
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// A new loadable cell in the absent state, and the stream of its events.
    pub fn loadable(&self) -> Result<(Loadable, Events)> {
        let (cell, events) = crate::cell::Cell::new(&self.shared, CellFlavor::Loadable, None)?;
        Ok((Loadable::from_cell(cell), events))
    }

    /// A new loadable cell typed by codecs: its requests are `Req` and its
    /// values `Val` (see [`Encode`](crate::Encode) and
    /// [`Decode`](crate::Decode)), as in
    /// `runtime.typed_loadable::<HttpRequest, HttpResponse>()` or
    /// `runtime.typed_loadable::<str, String>()`.
    ///
    /// # Errors
    ///
    /// As [`loadable`](Runtime::loadable).
    pub fn typed_loadable<Req, Val>(&self) -> Result<crate::TypedLoadable<Req, Val>>
    where
        Req: crate::Encode + ?Sized,
        Val: crate::Decode,
    {
        let (cell, events) = self.loadable()?;
        Ok(crate::TypedLoadable::new(cell, events))
    }

    /// A new process cell in the idle state, and the stream of its events.
    pub fn process(&self) -> Result<(Process, Events)> {
        let (cell, events) = crate::cell::Cell::new(&self.shared, CellFlavor::Process, None)?;
        Ok((Process::from_cell(cell), events))
    }

    /// A loadable cell like [`loadable`](Runtime::loadable) named `name`
    /// (`lds_loadable_new_ex`), which the inspector shows. `""` is no name.
    /// Fails with [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument)
    /// for a name longer than [`NAME_MAX`](crate::NAME_MAX) bytes or with a
    /// control character.
    pub fn named_loadable(&self, name: &str) -> Result<(Loadable, Events)> {
        let (cell, events) = crate::cell::Cell::new(&self.shared, CellFlavor::Loadable, Some(name))?;
        Ok((Loadable::from_cell(cell), events))
    }

    /// A process cell like [`process`](Runtime::process) named `name`, as
    /// [`named_loadable`](Runtime::named_loadable).
    pub fn named_process(&self, name: &str) -> Result<(Process, Events)> {
        let (cell, events) = crate::cell::Cell::new(&self.shared, CellFlavor::Process, Some(name))?;
        Ok((Process::from_cell(cell), events))
    }

    /// A loader whose jobs run `start` on the delivery thread.
    ///
    /// `start` receives the [`Job`]; it may end the job right away or hand
    /// it to any thread. A panic in `start` is caught and fails the job
    /// with [`PANIC_ERROR_CODE`](crate::PANIC_ERROR_CODE). The closure is
    /// dropped exactly once, on the delivery thread, after the loader is
    /// dropped and its last job has ended, or while the runtime is dropped.
    pub fn loader<F>(&self, start: F) -> Result<Loader>
    where
        F: Fn(Job) + Send + Sync + 'static,
    {
        Loader::new(&self.shared, Box::new(start), Limits::new(), None)
    }

    /// A loader like [`loader`](Runtime::loader) whose jobs are held to
    /// `limits`: a job over them waits in the loader's queue (higher
    /// [priority](LoadOptions::priority) first) and its cells' events carry
    /// [`Flags::QUEUED`](crate::Flags::QUEUED) until it starts. A queued
    /// job that is cancelled, reset, superseded, timed out or dropped never
    /// reaches `start`.
    pub fn loader_with_limits<F>(&self, limits: Limits, start: F) -> Result<Loader>
    where
        F: Fn(Job) + Send + Sync + 'static,
    {
        Loader::new(&self.shared, Box::new(start), limits, None)
    }

    /// A loader like [`loader_with_limits`](Runtime::loader_with_limits)
    /// named `name`: the metrics text labels its series `loader="<name>"`
    /// (escaped) instead of its id, and the inspector shows the name.
    /// Names need not be unique: loaders of one name share one series,
    /// their loads added. `""` is no name. Fails with
    /// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) for a
    /// name longer than [`NAME_MAX`](crate::NAME_MAX) bytes of UTF-8 or
    /// with a control character (a NUL included).
    pub fn named_loader<F>(&self, name: &str, limits: Limits, start: F) -> Result<Loader>
    where
        F: Fn(Job) + Send + Sync + 'static,
    {
        Loader::new(&self.shared, Box::new(start), limits, Some(name))
    }

    /// Pauses the polling of every cell of the runtime
    /// ([`LoadOptions::refresh_interval`]): a refresh that falls due waits
    /// for [`resume_polling`](Runtime::resume_polling). Loads under way, and
    /// loads asked for, go on.
    pub fn pause_polling(&self) -> Result<()> {
        // SAFETY: valid handle.
        check(unsafe { sys::lds_runtime_pause_polling(self.shared.raw()) })?;
        Ok(())
    }

    /// Tells the runtime whether the host is online (`lds_runtime_set_online`;
    /// a runtime starts online). Offline, a load does not call its loader:
    /// by default it waits, its events flagged [`Flags::PAUSED`](crate::Flags::PAUSED),
    /// and starts when the runtime is online again; a retry waits the same
    /// way and polls do not fire. [`OfflineMode::Fail`](crate::OfflineMode::Fail)
    /// fails such a load at once ([`ErrorKind::Offline`](crate::ErrorKind::Offline));
    /// [`OfflineMode::Run`](crate::OfflineMode::Run) ignores the signal. A
    /// running job goes on. Any thread, callbacks included; never blocks;
    /// setting the current value changes nothing.
    pub fn set_online(&self, online: bool) -> Result<()> {
        // SAFETY: valid handle.
        check(unsafe { sys::lds_runtime_set_online(self.shared.raw(), i32::from(online)) })?;
        Ok(())
    }

    /// Tells the runtime whether the host is in the foreground
    /// (`lds_runtime_set_foreground`; a runtime starts in the foreground).
    /// In the background polls do not fire unless their load has
    /// [`LoadOptions::poll_in_background`]; a poll that fell due meanwhile
    /// runs on the return. Back in the foreground, cells loaded with
    /// [`LoadOptions::refresh_on_foreground`] whose value is at least
    /// [`fresh`](LoadOptions::fresh) old refresh silently, at most once per
    /// [`foreground_throttle`](LoadOptions::foreground_throttle). Any thread,
    /// callbacks included; never blocks; setting the current value changes nothing.
    pub fn set_foreground(&self, foreground: bool) -> Result<()> {
        // SAFETY: valid handle.
        check(unsafe { sys::lds_runtime_set_foreground(self.shared.raw(), i32::from(foreground)) })?;
        Ok(())
    }

    /// Whether the runtime is online, as last set by [`set_online`](Runtime::set_online).
    pub fn is_online(&self) -> Result<bool> {
        Ok(self.signals()?.online != 0)
    }

    /// Whether the runtime is in the foreground, as last set by
    /// [`set_foreground`](Runtime::set_foreground).
    pub fn is_foreground(&self) -> Result<bool> {
        Ok(self.signals()?.foreground != 0)
    }

    /// The statistics without loaders or caches: the signals' fields.
    fn signals(&self) -> Result<sys::lds_runtime_statistics> {
        let mut out = sys::lds_runtime_statistics::INIT;
        // SAFETY: valid handle; no arrays are given.
        check(unsafe { sys::lds_runtime_stats(self.shared.raw(), &raw mut out) })?;
        Ok(out)
    }

    /// Resumes polling: cells whose refresh fell due while paused refresh at once.
    pub fn resume_polling(&self) -> Result<()> {
        // SAFETY: valid handle.
        check(unsafe { sys::lds_runtime_resume_polling(self.shared.raw()) })?;
        Ok(())
    }

    /// Loads `request` with `loader` into the cache of `options` (required)
    /// without a cell (`lds_prefetch`). A load of the same loader and cache
    /// key made while the prefetch runs waits for its job, so the loader
    /// runs once. A priority of 0 becomes
    /// [`PRIORITY_PREFETCH`](crate::sys::LDS_PRIORITY_PREFETCH). Fails with
    /// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument)
    /// without a cache.
    pub fn prefetch(&self, loader: &Loader, request: &[u8], options: &LoadOptions) -> Result<()> {
        let raw = options.to_raw();
        let pointer = if request.is_empty() { std::ptr::null() } else { request.as_ptr().cast() };
        // SAFETY: valid handle, buffer and options (borrowing `options`).
        check(unsafe { sys::lds_prefetch(self.shared.raw(), loader.id(), pointer, request.len(), &raw const raw) })?;
        Ok(())
    }

    /// POLL mode: a descriptor that is readable while callbacks are pending.
    /// Do not read, write or close it. Stop watching it before the runtime
    /// is dropped, which closes it (see [`Runtime::poll_keeping_fd`] for a
    /// descriptor that outlives the runtime).
    pub fn fd(&self) -> Result<RawFd> {
        // SAFETY: valid handle.
        check(unsafe { sys::lds_runtime_fd(self.shared.raw()) })
    }

    /// POLL mode: runs up to `max_events` pending callbacks (all of them
    /// when 0) on this thread and returns how many ran. Never waits.
    ///
    /// The count includes the crate's own bookkeeping callbacks, so it may
    /// exceed the number of events the cells' streams receive.
    pub fn dispatch(&self, max_events: usize) -> Result<usize> {
        let max = i32::try_from(max_events).unwrap_or(i32::MAX);
        // SAFETY: valid handle.
        let ran = check(unsafe { sys::lds_runtime_dispatch(self.shared.raw(), max) })?;
        // check() passed: the count is not negative.
        Ok(usize::try_from(ran).unwrap_or(0))
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        // SAFETY: the handle is valid; see the Threading section.
        let rc = unsafe { sys::lds_runtime_free(self.shared.raw()) };
        if rc == sys::LDS_ESTATE {
            // Dropped inside a callback: free it from a thread that is not
            // the delivery thread.
            let shared = Arc::clone(&self.shared);
            let _ = thread::Builder::new().name("loadstate-free".into()).spawn(move || {
                // SAFETY: as above.
                unsafe { sys::lds_runtime_free(shared.raw()) };
                shared.after_free();
            });
        } else if rc != sys::LDS_ECLOSED {
            // (LDS_ECLOSED: already freed by close_keeping_fd.)
            self.shared.after_free();
        }
    }
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime").field("raw", &self.shared.raw).finish()
    }
}

impl Shared {
    pub(crate) fn raw(&self) -> *mut sys::lds_runtime {
        self.raw.as_ptr()
    }

    /// Releases, once `lds_runtime_free` has returned, what callbacks
    /// could have used.
    fn after_free(&self) {
        let sinks = {
            let mut graveyard = lock(&self.graveyard);
            graveyard.closed = true;
            for sink in graveyard.live.values() {
                // SAFETY: live sinks are freed only after leaving `live`,
                // under this lock.
                unsafe { sink.0.as_ref() }.close();
            }
            std::mem::take(&mut graveyard.sinks)
        };
        for sink in sinks {
            // SAFETY: no callback runs after lds_runtime_free returned.
            unsafe { Sink::free(sink.0) };
        }
        let hooks = std::mem::take(&mut *lock(&self.hooks));
        let _ = catch_unwind(AssertUnwindSafe(move || drop(hooks)));
    }

    /// Frees the sink of a cell that was just freed, as soon as no callback
    /// can be using it: at once if the runtime is gone, otherwise from a
    /// janitor event. Events are delivered one at a time on one thread,
    /// and no event of the cell starts after its free returned, so when a
    /// later janitor event runs, no callback of the cell is running.
    pub(crate) fn bury(&self, cell: u64, sink: NonNull<Sink>) {
        let schedule = {
            let mut graveyard = lock(&self.graveyard);
            graveyard.live.remove(&cell);
            if graveyard.closed {
                drop(graveyard);
                // SAFETY: no callback runs after lds_runtime_free returned.
                unsafe { Sink::free(sink) };
                return;
            }
            graveyard.sinks.push(SinkPtr(sink));
            !std::mem::replace(&mut graveyard.scheduled, true)
        };
        if schedule {
            let janitor = self.janitor.load(Ordering::Acquire);
            // SAFETY: valid handle; a NULL value with length 0 is allowed.
            let rc = unsafe { sys::lds_loadable_set_loaded(self.raw(), janitor, ptr::null(), 0) };
            if rc != sys::LDS_OK {
                // The runtime is closing: `after_free` frees the sinks.
                lock(&self.graveyard).scheduled = false;
            }
        }
    }

    /// Records the sink of a new cell; closes it at once if the runtime was
    /// freed since the cell was created.
    pub(crate) fn adopt(&self, cell: u64, sink: NonNull<Sink>) {
        let mut graveyard = lock(&self.graveyard);
        if graveyard.closed {
            // SAFETY: no callback runs after lds_runtime_free returned.
            unsafe { sink.as_ref() }.close();
        }
        graveyard.live.insert(cell, SinkPtr(sink));
    }

    fn sweep(&self) {
        let sinks = {
            let mut graveyard = lock(&self.graveyard);
            graveyard.scheduled = false;
            std::mem::take(&mut graveyard.sinks)
        };
        for sink in sinks {
            // SAFETY: see `bury`.
            unsafe { Sink::free(sink.0) };
        }
    }

    /// Registers a cancel hook for `job`, in order with the job's others.
    pub(crate) fn add_cancel_hook(&self, job: u64, hook: CancelHook) -> Result<()> {
        let mut hooks = lock(&self.hooks);
        hooks.entry(job).or_default().push_back(hook);
        // The lock is held across the call so that the order of the queue
        // is the order of registration in the library, which runs hooks in
        // that order; each run of `run_cancel_hook` pops one.
        // SAFETY: valid handle; the data is the Shared, alive while any
        // callback of the runtime can run.
        let rc = unsafe {
            sys::lds_job_on_cancel(self.raw(), job, Some(run_cancel_hook), ptr::from_ref(self).cast_mut().cast())
        };
        if rc != sys::LDS_OK {
            let queue = hooks.get_mut(&job).expect("queue inserted above");
            let hook = queue.pop_back();
            if queue.is_empty() {
                hooks.remove(&job);
            }
            drop(hooks);
            drop(hook);
            return Err(Error::from_code(rc));
        }
        Ok(())
    }

    /// Drops the hooks of a job that ended by succeed, finish or fail: the
    /// library will not call them.
    pub(crate) fn forget_cancel_hooks(&self, job: u64) {
        let removed = lock(&self.hooks).remove(&job);
        let _ = catch_unwind(AssertUnwindSafe(move || drop(removed)));
    }
}

unsafe extern "C" fn janitor_event(_event: *const sys::lds_event, user_data: *mut c_void) {
    // SAFETY: user_data is the runtime's Shared (see Runtime::with_delivery).
    let shared = unsafe { &*user_data.cast::<Shared>() };
    let _ = catch_unwind(AssertUnwindSafe(|| shared.sweep()));
}

unsafe extern "C" fn run_cancel_hook(job: u64, data: *mut c_void) {
    // SAFETY: data is the runtime's Shared (see add_cancel_hook).
    let shared = unsafe { &*data.cast::<Shared>() };
    let hook = {
        let mut hooks = lock(&shared.hooks);
        let hook = hooks.get_mut(&job).and_then(VecDeque::pop_front);
        if hooks.get(&job).is_some_and(VecDeque::is_empty) {
            hooks.remove(&job);
        }
        hook
    };
    if let Some(hook) = hook {
        let _ = catch_unwind(AssertUnwindSafe(hook));
    }
}
