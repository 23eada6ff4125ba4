use std::ffi::{CString, c_int, c_void};
use std::fmt;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::ptr::{self, NonNull};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::error::{Error, Result, check};
use crate::event::Event;
use crate::loader::Loader;
use crate::options::LoadOptions;
use crate::runtime::Shared;
use crate::sys;

/// Where a cell's callback sends its events: the `user_data` of the cell.
pub(crate) struct Sink {
    tx: Mutex<Option<Sender<Event>>>,
    waker: Arc<WakerSlot>,
}

/// The waker of the task polling an [`Events`] stream, shared by the stream
/// and the cell's callback: the callback wakes it after each event it
/// sends, and once more when the stream ends.
#[derive(Default)]
pub(crate) struct WakerSlot {
    waker: Mutex<Option<Waker>>,
}

impl WakerSlot {
    fn register(&self, waker: &Waker) {
        let mut slot = self.waker.lock().unwrap_or_else(PoisonError::into_inner);
        match slot.as_ref() {
            Some(current) if current.will_wake(waker) => {}
            _ => *slot = Some(waker.clone()),
        }
    }

    fn wake(&self) {
        let waker = self.waker.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl Sink {
    /// Frees a sink made by `Cell::new`.
    ///
    /// # Safety
    /// No callback may use the sink any more, and it is freed only once.
    pub(crate) unsafe fn free(sink: NonNull<Sink>) {
        // SAFETY: the sink came from Box::into_raw (caller's contract).
        drop(unsafe { Box::from_raw(sink.as_ptr()) });
    }

    pub(crate) fn close(&self) {
        let sender = self.tx.lock().unwrap_or_else(PoisonError::into_inner).take();
        drop(sender);
        self.waker.wake();
    }
}

/// A new sink and the stream it feeds (for cells made elsewhere in the crate).
pub(crate) fn sink_and_events() -> (NonNull<Sink>, Events) {
    let (tx, rx) = mpsc::channel();
    let waker = Arc::new(WakerSlot::default());
    let sink = NonNull::from(Box::leak(Box::new(Sink { tx: Mutex::new(Some(tx)), waker: Arc::clone(&waker) })));
    (sink, Events { rx, waker })
}

pub(crate) unsafe extern "C" fn cell_event(event: *const sys::lds_event, user_data: *mut c_void) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: user_data is the cell's Sink, alive while callbacks of the
        // cell can run (see Shared::bury); the event is valid during the call.
        let (sink, event) = unsafe { (&*user_data.cast::<Sink>(), Event::from_raw(&*event)) };
        if let Some(tx) = sink.tx.lock().unwrap_or_else(PoisonError::into_inner).as_ref() {
            // The stream may have been dropped: its events are not wanted.
            let _ = tx.send(event);
        }
        sink.waker.wake();
    }));
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum CellFlavor {
    Loadable,
    Process,
}

/// What loadable and process cells have in common.
pub(crate) struct Cell {
    shared: Arc<Shared>,
    id: u64,
    flavor: CellFlavor,
    sink: NonNull<Sink>,
    name: Option<String>,
}

// SAFETY: the sink is only used through `&Sink` (Mutex inside) and freed
// once, by Drop; the library calls are thread-safe (see Runtime).
unsafe impl Send for Cell {}
unsafe impl Sync for Cell {}

impl Cell {
    pub(crate) fn new(shared: &Arc<Shared>, flavor: CellFlavor, name: Option<&str>) -> Result<(Cell, Events)> {
        let c_name = crate::loader::c_name(name)?;
        let (tx, rx) = mpsc::channel();
        let waker = Arc::new(WakerSlot::default());
        let sink = NonNull::from(Box::leak(Box::new(Sink { tx: Mutex::new(Some(tx)), waker: Arc::clone(&waker) })));
        let mut id = 0;
        let rc = if let Some(c_name) = &c_name {
            let options = sys::lds_cell_options {
                on_event: Some(cell_event),
                user_data: sink.as_ptr().cast(),
                name: c_name.as_ptr(),
                ..sys::lds_cell_options::INIT
            };
            let new = match flavor {
                CellFlavor::Loadable => sys::lds_loadable_new_ex,
                CellFlavor::Process => sys::lds_process_new_ex,
            };
            // SAFETY: valid handle and options; the library copies the name;
            // the sink stays alive until Cell's Drop buries it.
            unsafe { new(shared.raw(), &raw const options, &raw mut id) }
        } else {
            let new = match flavor {
                CellFlavor::Loadable => sys::lds_loadable_new,
                CellFlavor::Process => sys::lds_process_new,
            };
            // SAFETY: valid handle; the sink stays alive until Cell's Drop buries it.
            unsafe { new(shared.raw(), Some(cell_event), sink.as_ptr().cast(), &raw mut id) }
        };
        if rc != sys::LDS_OK {
            // SAFETY: a failed call causes no callback; the sink is unused.
            unsafe { Sink::free(sink) };
            return Err(Error::from_code(rc));
        }
        shared.adopt(id, sink);
        let name = c_name.map(|_| name.unwrap_or_default().to_owned());
        Ok((Cell { shared: Arc::clone(shared), id, flavor, sink, name }, Events { rx, waker }))
    }

    fn raw(&self) -> *mut sys::lds_runtime {
        self.shared.raw()
    }

    fn cancel(&self) -> Result<()> {
        self.call(sys::lds_loadable_cancel, sys::lds_process_cancel)
    }

    fn reset(&self) -> Result<()> {
        self.call(sys::lds_loadable_reset, sys::lds_process_reset)
    }

    /// Calls the loadable or the process variant of a function of the cell.
    fn call(
        &self,
        loadable: unsafe extern "C" fn(*mut sys::lds_runtime, sys::lds_id) -> c_int,
        process: unsafe extern "C" fn(*mut sys::lds_runtime, sys::lds_id) -> c_int,
    ) -> Result<()> {
        let function = match self.flavor {
            CellFlavor::Loadable => loadable,
            CellFlavor::Process => process,
        };
        // SAFETY: valid handle.
        check(unsafe { function(self.raw(), self.id) })?;
        Ok(())
    }
}

impl Drop for Cell {
    fn drop(&mut self) {
        let free = match self.flavor {
            CellFlavor::Loadable => sys::lds_loadable_free,
            CellFlavor::Process => sys::lds_process_free,
        };
        // SAFETY: valid handle. After the runtime is gone this returns
        // LDS_ECLOSED, which is fine.
        unsafe { free(self.raw(), self.id) };
        // SAFETY: the sink is alive until buried below.
        unsafe { self.sink.as_ref() }.close();
        self.shared.bury(self.id, self.sink);
    }
}

fn request_ptr(request: &[u8]) -> *const c_void {
    if request.is_empty() { ptr::null() } else { request.as_ptr().cast() }
}

/// A loadable cell: absent → loading → loaded | error.
///
/// Its events go to the [`Events`] stream returned with it. Dropping the
/// cell frees it: a running job is cancelled (its hooks run) and the stream
/// ends after the events already delivered.
pub struct Loadable {
    cell: Cell,
}

impl Loadable {
    pub(crate) fn from_cell(cell: Cell) -> Loadable {
        Loadable { cell }
    }

    /// The cell's id in its runtime.
    #[must_use]
    pub fn id(&self) -> u64 {
        self.cell.id
    }

    /// The name the cell was made with, if any (see
    /// [`Runtime::named_loadable`](crate::Runtime::named_loadable)).
    #[must_use]
    pub fn name(&self) -> Option<&str> {
        self.cell.name.as_deref()
    }

    /// Loads with default options: cancels the running job, shows
    /// [`Status::Loading`](crate::Status::Loading) carrying `request`, and
    /// starts a job of `loader`.
    pub fn load(&self, loader: &Loader, request: &[u8]) -> Result<()> {
        self.load_with(loader, request, &LoadOptions::new())
    }

    /// Loads with options (silent, shared, timeout, interrupts, retries, cache).
    /// With a [`CachePolicy`](crate::CachePolicy) that finds what it needs
    /// in the cache, the cached value is shown without a loading state.
    pub fn load_with(&self, loader: &Loader, request: &[u8], options: &LoadOptions) -> Result<()> {
        let raw = options.to_raw();
        // SAFETY: valid handle, buffer and options (borrowing `options`).
        check(unsafe {
            sys::lds_loadable_load(
                self.cell.raw(),
                self.cell.id,
                loader.id(),
                request_ptr(request),
                request.len(),
                &raw const raw,
            )
        })?;
        Ok(())
    }

    /// Reloads the last request silently: the current state stays, flagged
    /// [`Flags::REFRESHING`](crate::Flags::REFRESHING). Fails with
    /// [`ErrorKind::State`](crate::ErrorKind::State) if the cell was never
    /// loaded, [`ErrorKind::NotFound`](crate::ErrorKind::NotFound) if the
    /// last loader was dropped.
    pub fn refresh(&self) -> Result<()> {
        // SAFETY: valid handle.
        check(unsafe { sys::lds_loadable_refresh(self.cell.raw(), self.cell.id) })?;
        Ok(())
    }

    /// Cancels the running job, if any: the state before the load comes
    /// back, flagged [`Flags::CANCELLED`](crate::Flags::CANCELLED).
    pub fn cancel(&self) -> Result<()> {
        self.cell.cancel()
    }

    /// Gives the load under way another priority: a job still waiting for
    /// its loader's [`Limits`](crate::Limits) moves to its place for the
    /// new priority; a running job is not affected. Kept for
    /// [`refresh`](Loadable::refresh).
    pub fn set_priority(&self, priority: i32) -> Result<()> {
        // SAFETY: valid handle.
        check(unsafe { sys::lds_loadable_set_priority(self.cell.raw(), self.cell.id, priority) })?;
        Ok(())
    }

    /// Turns the cell's [`EventType::Progress`](crate::EventType::Progress)
    /// events on (the default) or off (`lds_loadable_set_progress`). Off,
    /// progress its jobs report is dropped and takes no
    /// [`seq`](crate::Event::seq) number; progress events already waiting
    /// for delivery are still delivered.
    pub fn set_progress(&self, enabled: bool) -> Result<()> {
        // SAFETY: valid handle.
        check(unsafe { sys::lds_loadable_set_progress(self.cell.raw(), self.cell.id, c_int::from(enabled)) })?;
        Ok(())
    }

    /// Cancels the running job, if any, and makes the cell absent.
    pub fn reset(&self) -> Result<()> {
        self.cell.reset()
    }

    /// Cancels the running job, if any, and shows `value`.
    pub fn set_loaded(&self, value: &[u8]) -> Result<()> {
        // SAFETY: valid handle and buffer.
        check(unsafe {
            sys::lds_loadable_set_loaded(self.cell.raw(), self.cell.id, value.as_ptr().cast(), value.len())
        })?;
        Ok(())
    }

    /// Cancels the running job, if any, and shows an error in the host
    /// domain. A message holding a NUL byte is refused with
    /// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument).
    pub fn set_error(&self, code: i32, message: Option<&str>) -> Result<()> {
        let message = message.map(|m| CString::new(m).map_err(|_| Error::from_code(sys::LDS_EINVAL))).transpose()?;
        let message_ptr = message.as_ref().map_or(ptr::null(), |m| m.as_ptr());
        // SAFETY: valid handle; NULL or a valid string.
        check(unsafe { sys::lds_loadable_set_error(self.cell.raw(), self.cell.id, code, message_ptr) })?;
        Ok(())
    }

    /// The cell's latest state (seq 0 and absent before the first event).
    /// It may be ahead of the events received so far; compare `seq`. It
    /// may also lag a call just made: a load or cancel shows once the
    /// runtime's loop thread has run it.
    pub fn get(&self) -> Result<Event> {
        let mut snapshot = sys::lds_snapshot::zeroed();
        // SAFETY: valid handle and out pointer.
        let rc = unsafe { sys::lds_loadable_get(self.cell.raw(), self.cell.id, &raw mut snapshot) };
        // SAFETY: on success the snapshot holds the library's copies.
        let event = (rc == sys::LDS_OK).then(|| unsafe { Event::from_snapshot(&snapshot) });
        // SAFETY: clearing a filled or zeroed snapshot is allowed.
        unsafe { sys::lds_snapshot_clear(&raw mut snapshot) };
        event.ok_or(Error::from_code(rc))
    }
}

impl Loadable {
    /// Loads as [`load_with`](Loadable::load_with) and returns a future of
    /// the load's outcome, read from `events`, this cell's stream (as
    /// [`Events::wait_for_load`] reads it, with no timeout). The load is
    /// asked for at once, before the future is first polled.
    ///
    /// Dropping the future before it resolves cancels the load (see
    /// [`LoadFuture`]). Several cells, each with its future, load at once
    /// under one executor; one cell runs one load at a time.
    ///
    /// # Errors
    ///
    /// Those of [`load_with`](Loadable::load_with); the load is then not
    /// started.
    pub fn load_async<'a>(
        &'a self,
        events: &'a Events,
        loader: &Loader,
        request: &[u8],
        options: &LoadOptions,
    ) -> Result<LoadFuture<'a>> {
        self.load_with(loader, request, options)?;
        Ok(LoadFuture { cell: self, outcome: events.load_outcome(request), done: false })
    }
}

impl fmt::Debug for Loadable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Loadable").field("id", &self.cell.id).finish()
    }
}

/// A process cell: idle → running(kind) → finished(kind) | failed(kind).
///
/// The values of its jobs are ignored. Dropping it behaves as for
/// [`Loadable`].
pub struct Process {
    cell: Cell,
}

impl Process {
    pub(crate) fn from_cell(cell: Cell) -> Process {
        Process { cell }
    }

    /// The cell's id in its runtime.
    #[must_use]
    pub fn id(&self) -> u64 {
        self.cell.id
    }

    /// The name the cell was made with, if any (see
    /// [`Runtime::named_loadable`](crate::Runtime::named_loadable)).
    #[must_use]
    pub fn name(&self) -> Option<&str> {
        self.cell.name.as_deref()
    }

    /// Runs a job of `loader` as process `kind` with default options.
    pub fn run(&self, kind: i32, loader: &Loader, request: &[u8]) -> Result<()> {
        self.run_with(kind, loader, request, &LoadOptions::new())
    }

    /// Runs a job of `loader` as process `kind`: cancels the running job,
    /// shows [`Status::Running`](crate::Status::Running) (or, silent, the
    /// current state flagged refreshing), then finished or failed.
    pub fn run_with(&self, kind: i32, loader: &Loader, request: &[u8], options: &LoadOptions) -> Result<()> {
        let raw = options.to_raw();
        // SAFETY: valid handle, buffer and options.
        check(unsafe {
            sys::lds_process_run(
                self.cell.raw(),
                self.cell.id,
                kind,
                loader.id(),
                request_ptr(request),
                request.len(),
                &raw const raw,
            )
        })?;
        Ok(())
    }

    /// Runs a write: [`run`](Process::run) of process `kind` that shows the
    /// optimistic values of `mutation` before `loader` is called, rolls
    /// them back if the run fails, times out, is cancelled or reset (or the
    /// cell is dropped) unless newer data replaced them, and on success
    /// confirms them (or stores the job's value under every key, with
    /// [`Mutation::populate`](crate::Mutation::populate)) and invalidates
    /// its prefixes, all before the run's finished or failed event.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument)
    /// for a cache of another runtime or more than
    /// [`MUTATION_KEYS_MAX`](crate::MUTATION_KEYS_MAX) values or prefixes,
    /// [`ErrorKind::NotFound`](crate::ErrorKind::NotFound) for a freed
    /// cache, [`ErrorKind::TooBig`](crate::ErrorKind::TooBig) for a key or
    /// value over `LDS_VALUE_MAX`; nothing is shown or run then.
    pub fn mutate(&self, kind: i32, loader: &Loader, request: &[u8], mutation: &crate::Mutation) -> Result<()> {
        self.mutate_with(kind, loader, request, &LoadOptions::new(), mutation)
    }

    /// [`mutate`](Process::mutate) with load options (as
    /// [`run_with`](Process::run_with)).
    ///
    /// # Errors
    ///
    /// As [`mutate`](Process::mutate).
    pub fn mutate_with(
        &self,
        kind: i32,
        loader: &Loader,
        request: &[u8],
        options: &LoadOptions,
        mutation: &crate::Mutation,
    ) -> Result<()> {
        if !mutation.same_runtime(&self.cell.shared) {
            check(sys::LDS_EINVAL)?;
        }
        let raw = options.to_raw();
        mutation.with_raw(|m| {
            // SAFETY: valid handle, buffers and options, alive during the call.
            check(unsafe {
                sys::lds_process_mutate(
                    self.cell.raw(),
                    self.cell.id,
                    kind,
                    loader.id(),
                    request_ptr(request),
                    request.len(),
                    &raw const raw,
                    m,
                )
            })
        })?;
        Ok(())
    }

    /// Gives the run under way another priority, as [`Loadable::set_priority`].
    pub fn set_priority(&self, priority: i32) -> Result<()> {
        // SAFETY: valid handle.
        check(unsafe { sys::lds_process_set_priority(self.cell.raw(), self.cell.id, priority) })?;
        Ok(())
    }

    /// Cancels the running job; the previous state comes back, flagged
    /// [`Flags::CANCELLED`](crate::Flags::CANCELLED).
    pub fn cancel(&self) -> Result<()> {
        self.cell.cancel()
    }

    /// Turns the cell's progress events on or off, as
    /// [`Loadable::set_progress`].
    pub fn set_progress(&self, enabled: bool) -> Result<()> {
        // SAFETY: valid handle.
        check(unsafe { sys::lds_process_set_progress(self.cell.raw(), self.cell.id, c_int::from(enabled)) })?;
        Ok(())
    }

    /// Cancels the running job and makes the cell idle.
    pub fn reset(&self) -> Result<()> {
        self.cell.reset()
    }
}

impl fmt::Debug for Process {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Process").field("id", &self.cell.id).finish()
    }
}

/// The events of one cell, in order, over an [`mpsc`] channel.
///
/// The stream ends ([`recv`](Events::recv) returns `None`) once the cell or
/// the runtime is dropped and the events delivered before have been read.
/// In [`Delivery::Poll`](crate::Delivery::Poll) mode events arrive only
/// while some thread calls [`Runtime::dispatch`](crate::Runtime::dispatch).
pub struct Events {
    rx: Receiver<Event>,
    waker: Arc<WakerSlot>,
}

impl Events {
    /// The next event, waiting for it; `None` when the stream has ended.
    #[must_use]
    pub fn recv(&self) -> Option<Event> {
        self.rx.recv().ok()
    }

    /// The next event, waiting at most `timeout`.
    pub fn recv_timeout(&self, timeout: Duration) -> std::result::Result<Event, RecvTimeoutError> {
        self.rx.recv_timeout(timeout)
    }

    /// The next event if one is there.
    pub fn try_recv(&self) -> std::result::Result<Event, TryRecvError> {
        self.rx.try_recv()
    }

    /// Reads events until one matches `predicate` and returns it; the ones
    /// before it are dropped. Fails with
    /// [`RecvTimeoutError::Timeout`] when `timeout` passes first and with
    /// [`RecvTimeoutError::Disconnected`] when the stream ends first.
    pub fn wait_until<P>(&self, mut predicate: P, timeout: Duration) -> std::result::Result<Event, RecvTimeoutError>
    where
        P: FnMut(&Event) -> bool,
    {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let event = self.rx.recv_timeout(left)?;
            if predicate(&event) {
                return Ok(event);
            }
        }
    }

    /// Waits for the outcome of the load of `request` just asked for on
    /// this stream's cell, reading the events from its start on: the
    /// event it settled in (loaded, or an error: see [`Event::error`]).
    /// Call it after [`Loadable::load`] and before any other call on the
    /// cell, with no other reader of the stream; events before the load's
    /// start are skipped.
    ///
    /// # Errors
    ///
    /// - [`LoadWaitError::Superseded`]: a load of another request replaced
    ///   this one before it ended (its request is given): the caller never
    ///   receives another request's value. A load of the same request
    ///   continues it.
    /// - [`LoadWaitError::Cancelled`]: the load was cancelled (the restored
    ///   state is given) or reset.
    /// - [`LoadWaitError::NoValue`]: the load's job finished without a value
    ///   (the restored state from before the load is given, whatever
    ///   request it answers).
    /// - [`LoadWaitError::Timeout`]: `timeout` passed first.
    /// - [`LoadWaitError::Disconnected`]: the cell or runtime was dropped first.
    pub fn wait_for_load(&self, request: &[u8], timeout: Duration) -> std::result::Result<Event, LoadWaitError> {
        let deadline = Instant::now() + timeout;
        let mut tracker = LoadTracker::default();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let event = self.rx.recv_timeout(left).map_err(|error| match error {
                RecvTimeoutError::Timeout => LoadWaitError::Timeout,
                RecvTimeoutError::Disconnected => LoadWaitError::Disconnected,
            })?;
            if let Some(outcome) = tracker.step(event, request) {
                return outcome;
            }
        }
    }

    /// The next event without blocking, in the shape of an async stream's
    /// `poll_next`: `Ready(Some(event))`, `Ready(None)` once the stream has
    /// ended, or `Pending` after registering `cx`'s waker, which the
    /// runtime's delivery wakes when the next event (or the end) arrives.
    /// Any executor can drive it; only the waker of the latest call is
    /// kept, so one task at a time reads a stream.
    pub fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        self.poll_event(cx)
    }

    /// [`poll_next`](Events::poll_next) through a shared reference.
    pub fn poll_event(&self, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        match self.rx.try_recv() {
            Ok(event) => return Poll::Ready(Some(event)),
            Err(TryRecvError::Disconnected) => return Poll::Ready(None),
            Err(TryRecvError::Empty) => {}
        }
        self.waker.register(cx.waker());
        // An event sent between the first look and the registration woke
        // no one: look again now that the waker is in place.
        match self.rx.try_recv() {
            Ok(event) => Poll::Ready(Some(event)),
            Err(TryRecvError::Disconnected) => Poll::Ready(None),
            Err(TryRecvError::Empty) => Poll::Pending,
        }
    }

    /// A future of the next event: `None` once the stream has ended.
    /// Dropping it loses no event.
    pub fn next(&self) -> NextEvent<'_> {
        NextEvent { events: self }
    }

    /// The future form of [`wait_for_load`](Events::wait_for_load), with no
    /// timeout: it resolves to the event the load of `request` settled in,
    /// or to why it has none ([`LoadWaitError::Superseded`],
    /// [`LoadWaitError::Cancelled`], [`LoadWaitError::NoValue`] or
    /// [`LoadWaitError::Disconnected`]).
    /// Dropping it cancels nothing; see [`Loadable::load_async`] for a
    /// future that owns its load.
    pub fn load_outcome(&self, request: &[u8]) -> LoadOutcome<'_> {
        LoadOutcome { events: self, request: request.to_vec(), tracker: LoadTracker::default() }
    }

    /// A blocking iterator over the events, ending with the stream.
    #[must_use]
    pub fn iter(&self) -> mpsc::Iter<'_, Event> {
        self.rx.iter()
    }

    /// The underlying receiver.
    #[must_use]
    pub fn receiver(&self) -> &Receiver<Event> {
        &self.rx
    }

    /// The underlying receiver, by value.
    #[must_use]
    pub fn into_receiver(self) -> Receiver<Event> {
        self.rx
    }
}

impl IntoIterator for Events {
    type Item = Event;
    type IntoIter = mpsc::IntoIter<Event>;
    fn into_iter(self) -> Self::IntoIter {
        self.rx.into_iter()
    }
}

impl<'a> IntoIterator for &'a Events {
    type Item = Event;
    type IntoIter = mpsc::Iter<'a, Event>;
    fn into_iter(self) -> Self::IntoIter {
        self.rx.iter()
    }
}

/// Follows one load through a cell's events (see [`Events::wait_for_load`]).
#[derive(Default)]
struct LoadTracker {
    started: bool,
}

impl LoadTracker {
    /// Reads one event; `Some` once the load's outcome is known.
    fn step(&mut self, event: Event, request: &[u8]) -> Option<std::result::Result<Event, LoadWaitError>> {
        use crate::event::{EventType, Flags, Status};
        if event.event_type != EventType::State {
            return None;
        }
        let ours = event.request.as_deref().unwrap_or_default() == request;
        let starting =
            matches!(event.status, Status::Loading | Status::Running) && !event.flags.contains(Flags::REFRESHING);
        let under_way = starting || event.flags.contains(Flags::PARTIAL) || event.flags.contains(Flags::REFRESHING);
        if !self.started {
            if event.flags.contains(Flags::CANCELLED) {
                return None;
            }
            if (ours && starting) || event.flags.contains(Flags::REFRESHING) {
                self.started = true;
            } else if ours && !under_way && (event.flags.contains(Flags::FROM_CACHE) || event.attempt == 0) {
                return Some(Ok(event)); // answered by its cache, with no load
            }
            return None;
        }
        if under_way {
            if !ours && (starting || event.flags.contains(Flags::PARTIAL)) {
                return Some(Err(LoadWaitError::Superseded { request: event.request }));
            }
            return None;
        }
        if event.flags.contains(Flags::NO_VALUE) {
            return Some(Err(LoadWaitError::NoValue(Box::new(event))));
        }
        if event.flags.contains(Flags::CANCELLED) || matches!(event.status, Status::Absent | Status::Idle) {
            return Some(Err(LoadWaitError::Cancelled(Box::new(event))));
        }
        if !ours {
            return Some(Err(LoadWaitError::Superseded { request: event.request }));
        }
        Some(Ok(event))
    }
}

/// The future of [`Events::next`]: the stream's next event, `None` once it
/// has ended.
#[must_use = "futures do nothing unless polled"]
#[derive(Debug)]
pub struct NextEvent<'a> {
    events: &'a Events,
}

impl Future for NextEvent<'_> {
    type Output = Option<Event>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        self.events.poll_event(cx)
    }
}

/// The future of [`Events::load_outcome`]: the outcome of one load read
/// from the cell's events. Dropping it cancels nothing.
#[must_use = "futures do nothing unless polled"]
pub struct LoadOutcome<'a> {
    events: &'a Events,
    request: Vec<u8>,
    tracker: LoadTracker,
}

impl Future for LoadOutcome<'_> {
    type Output = std::result::Result<Event, LoadWaitError>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        loop {
            match this.events.poll_event(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => return Poll::Ready(Err(LoadWaitError::Disconnected)),
                Poll::Ready(Some(event)) => {
                    if let Some(outcome) = this.tracker.step(event, &this.request) {
                        return Poll::Ready(outcome);
                    }
                }
            }
        }
    }
}

impl fmt::Debug for LoadOutcome<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoadOutcome").field("started", &self.tracker.started).finish_non_exhaustive()
    }
}

/// The future of [`Loadable::load_async`]: the outcome of the load it
/// started, which it owns.
///
/// Dropping it before it resolves cancels that load
/// ([`Loadable::cancel`]: the cell goes back to its state before the load,
/// flagged cancelled); dropping it after it resolved (or after the load
/// was superseded or cancelled by another call) does nothing to the cell.
#[must_use = "futures do nothing unless polled; dropping this one cancels its load"]
pub struct LoadFuture<'a> {
    cell: &'a Loadable,
    outcome: LoadOutcome<'a>,
    done: bool,
}

impl Future for LoadFuture<'_> {
    type Output = std::result::Result<Event, LoadWaitError>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.outcome).poll(cx);
        if polled.is_ready() {
            this.done = true;
        }
        polled
    }
}

impl Drop for LoadFuture<'_> {
    fn drop(&mut self) {
        if !self.done {
            // The cell may be gone with its runtime: nothing to cancel then.
            let _ = self.cell.cancel();
        }
    }
}

impl fmt::Debug for LoadFuture<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoadFuture").field("cell", &self.cell.id()).field("done", &self.done).finish_non_exhaustive()
    }
}

impl fmt::Debug for Events {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Events").finish_non_exhaustive()
    }
}

/// Why [`Events::wait_for_load`] returned no outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoadWaitError {
    /// A load of another request replaced the awaited one before it ended.
    Superseded {
        /// The request of the load that replaced it.
        request: Option<Vec<u8>>,
    },
    /// The load was cancelled or reset: the state the cell returned to.
    Cancelled(Box<Event>),
    /// The load's job finished without a value: the state from before the
    /// load came back (flagged [`Flags::NO_VALUE`](crate::Flags::NO_VALUE)),
    /// which may show an earlier request's value, never this load's answer.
    NoValue(Box<Event>),
    /// The time given passed first.
    Timeout,
    /// The cell or its runtime was dropped first.
    Disconnected,
}

impl fmt::Display for LoadWaitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadWaitError::Superseded { request: Some(request) } => {
                write!(f, "superseded by a load of {}", String::from_utf8_lossy(request))
            }
            LoadWaitError::Superseded { request: None } => f.write_str("superseded by another load"),
            LoadWaitError::Cancelled(_) => f.write_str("the load was cancelled or reset"),
            LoadWaitError::NoValue(_) => f.write_str("the load's job finished without a value"),
            LoadWaitError::Timeout => f.write_str("timed out waiting for the load"),
            LoadWaitError::Disconnected => f.write_str("the cell or runtime was dropped"),
        }
    }
}

impl std::error::Error for LoadWaitError {}
