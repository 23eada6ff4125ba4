//! Pages cells: infinite (paginated) loads, each page a job of its own.

use std::ffi::c_void;
use std::fmt;
use std::ptr::{self, NonNull};
use std::sync::Arc;

use crate::cell::{Events, Sink, cell_event, sink_and_events};
use crate::error::{Error, Result, check};
use crate::event::Event;
use crate::loader::{Job, Loader};
use crate::options::LoadOptions;
use crate::runtime::{Runtime, Shared};
use crate::sys;

/// The most pages one [`Pages`] cell holds (1,024).
pub const PAGES_MAX: u32 = sys::LDS_PAGES_MAX;

/// The longest page cursor, in bytes (4,096); a page whose loader returns a
/// longer one fails with [`ErrorKind::TooBig`](crate::ErrorKind::TooBig).
pub const CURSOR_MAX: usize = sys::LDS_CURSOR_MAX;

/// One page's request as a pages cell's loader receives it: the request of
/// [`Pages::load`], the cursor of the page asked for (`None` for the first
/// page) and the direction (0 first page, 1 next, -1 previous).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRequest<'a> {
    /// The request given to [`Pages::load`].
    pub request: &'a [u8],
    /// The cursor of the page asked for; `None` for the first page.
    pub cursor: Option<&'a [u8]>,
    /// 0 for the first page, 1 for the next one, -1 for the previous one.
    pub direction: i32,
}

impl<'a> PageRequest<'a> {
    /// Reads a page's request ([`Job::request`] of a pages cell's job).
    /// Fails with [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument)
    /// for bytes that are not a page request, and
    /// [`ErrorKind::TooBig`](crate::ErrorKind::TooBig) for a cursor longer
    /// than [`CURSOR_MAX`].
    pub fn decode(bytes: &'a [u8]) -> Result<PageRequest<'a>> {
        let mut out = sys::lds_page_request {
            request: ptr::null(),
            request_len: 0,
            cursor: ptr::null(),
            cursor_len: 0,
            direction: 0,
        };
        // SAFETY: a valid buffer and out pointer; the pointers set point into `bytes`.
        check(unsafe { sys::lds_page_request_decode(bytes.as_ptr().cast(), bytes.len(), &raw mut out) })?;
        let start = bytes.as_ptr() as usize;
        // The library returns positions inside `bytes`: take the slices from `bytes` itself.
        let slice = |pointer: *const c_void, len: usize| {
            let offset = (pointer as usize).wrapping_sub(start);
            bytes.get(offset..offset.saturating_add(len)).ok_or(Error::from_code(sys::LDS_EINVAL))
        };
        let request = if out.request_len == 0 { &bytes[..0] } else { slice(out.request, out.request_len)? };
        let cursor = if out.cursor.is_null() {
            None
        } else if out.cursor_len == 0 {
            Some(&bytes[..0])
        } else {
            Some(slice(out.cursor, out.cursor_len)?)
        };
        Ok(PageRequest { request, cursor, direction: out.direction })
    }
}

/// What a page loader (see [`Pages::loader`]) returns: the page's value and
/// the cursors of the pages after and before it (`None`: no page that way,
/// the end of the list).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Page {
    /// The page's value.
    pub value: Vec<u8>,
    /// The cursor of the next page, if there is one.
    pub next: Option<Vec<u8>>,
    /// The cursor of the previous page, if there is one.
    pub previous: Option<Vec<u8>>,
}

impl Page {
    /// A page with `value` and no cursor.
    #[must_use]
    pub fn new(value: impl Into<Vec<u8>>) -> Page {
        Page { value: value.into(), next: None, previous: None }
    }

    /// The page with a next cursor.
    #[must_use]
    pub fn with_next(mut self, cursor: impl Into<Vec<u8>>) -> Page {
        self.next = Some(cursor.into());
        self
    }

    /// The page with a previous cursor.
    #[must_use]
    pub fn with_previous(mut self, cursor: impl Into<Vec<u8>>) -> Page {
        self.previous = Some(cursor.into());
        self
    }
}

/// A pages cell: a list of pages, each loaded by a job of its own with the
/// loader, options and cache of the last [`load`](Pages::load).
///
/// Its events go to the [`Events`] stream returned with it: an event's
/// `kind` is the index of the page it is about (0: the first page shown,
/// after any insertion), its `value` that page's value; a page loaded by
/// [`load_previous`](Pages::load_previous) carries
/// [`Flags::PAGE_PREVIOUS`](crate::Flags::PAGE_PREVIOUS), and the event of
/// a page whose arrival dropped pages carries
/// [`Flags::PAGES_DROPPED`](crate::Flags::PAGES_DROPPED). A next or previous
/// page joins the list once loaded; if it fails or is cancelled the pages
/// already there stay as they are. Dropping the cell frees it.
pub struct Pages {
    shared: Arc<Shared>,
    id: u64,
    sink: NonNull<Sink>,
    name: Option<String>,
}

// SAFETY: the sink is only used through `&Sink` and freed once, by Drop;
// the library calls are thread-safe.
unsafe impl Send for Pages {}
unsafe impl Sync for Pages {}

impl Pages {
    /// A pages cell of `runtime` holding at most `max_pages` pages (0:
    /// [`PAGES_MAX`]; more fails with
    /// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument)),
    /// named `name` for the inspector (`None` or `""`: no name).
    pub fn new(runtime: &Runtime, max_pages: u32, name: Option<&str>) -> Result<(Pages, Events)> {
        let shared = runtime.shared();
        let c_name = crate::loader::c_name(name)?;
        let (sink, events) = sink_and_events();
        let options = sys::lds_pages_options {
            on_event: Some(cell_event),
            user_data: sink.as_ptr().cast(),
            name: c_name.as_ref().map_or(ptr::null(), |n| n.as_ptr()),
            max_pages,
            ..sys::lds_pages_options::INIT
        };
        let mut id = 0;
        // SAFETY: valid handle and options; the sink lives until Drop buries it.
        let rc = unsafe { sys::lds_pages_new(shared.raw(), &raw const options, &raw mut id) };
        if rc != sys::LDS_OK {
            // SAFETY: a failed call causes no callback; the sink is unused.
            unsafe { Sink::free(sink) };
            return Err(Error::from_code(rc));
        }
        shared.adopt(id, sink);
        let name = c_name.map(|_| name.unwrap_or_default().to_owned());
        Ok((Pages { shared: Arc::clone(shared), id, sink, name }, events))
    }

    /// A loader for pages cells around `page`, which reads each
    /// [`PageRequest`] and returns the [`Page`], or `Err((code, message))`
    /// to fail it (an error in the host domain). It runs as
    /// [`Runtime::loader`]'s closures do.
    pub fn loader<F>(runtime: &Runtime, page: F) -> Result<Loader>
    where
        F: Fn(PageRequest<'_>) -> std::result::Result<Page, (i32, String)> + Send + Sync + 'static,
    {
        runtime.loader(move |job: Job| {
            let outcome = match PageRequest::decode(job.request()) {
                Ok(request) => page(request),
                Err(error) => Err((error.code(), "not a page request".to_owned())),
            };
            let _ = match outcome {
                Ok(p) => job.succeed_page(&p.value, p.next.as_deref(), p.previous.as_deref()),
                Err((code, message)) => job.fail(code, &message),
            };
        })
    }

    /// The cell's id in its runtime.
    #[must_use]
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The name the cell was made with, if any.
    #[must_use]
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    fn call(&self, function: unsafe extern "C" fn(*mut sys::lds_runtime, sys::lds_id) -> i32) -> Result<()> {
        // SAFETY: valid handle.
        check(unsafe { function(self.shared.raw(), self.id) })?;
        Ok(())
    }

    /// Drops the pages and loads the first one with `loader` and `request`.
    pub fn load(&self, loader: &Loader, request: &[u8]) -> Result<()> {
        self.load_with(loader, request, &LoadOptions::new())
    }

    /// Like [`load`](Pages::load), with options used for every page of this
    /// load (timeouts, retries, sharing, cache, priority; not polling).
    pub fn load_with(&self, loader: &Loader, request: &[u8], options: &LoadOptions) -> Result<()> {
        let raw = options.to_raw();
        let pointer = if request.is_empty() { ptr::null() } else { request.as_ptr().cast() };
        // SAFETY: valid handle, buffer and options (borrowing `options`).
        check(unsafe {
            sys::lds_pages_load(self.shared.raw(), self.id, loader.id(), pointer, request.len(), &raw const raw)
        })?;
        Ok(())
    }

    /// Loads the page after the last one. Fails with
    /// [`ErrorKind::State`](crate::ErrorKind::State) before a page
    /// loaded or when the last page has no next cursor; asked again while
    /// it loads, nothing new starts.
    pub fn load_next(&self) -> Result<()> {
        self.call(sys::lds_pages_load_next)
    }

    /// Loads the page before the first one, inserted at index 0 (as
    /// [`load_next`](Pages::load_next) for the first page's previous cursor).
    pub fn load_previous(&self) -> Result<()> {
        self.call(sys::lds_pages_load_previous)
    }

    /// Reloads the pages silently, in order, each only once the one before
    /// it has loaded; stops at a failure, at the end, or at a page whose next
    /// cursor changed (the pages after it are dropped).
    pub fn refresh(&self) -> Result<()> {
        self.call(sys::lds_pages_refresh)
    }

    /// Cancels every page load under way.
    pub fn cancel(&self) -> Result<()> {
        self.call(sys::lds_pages_cancel)
    }

    /// Cancels every page load and drops all pages.
    pub fn reset(&self) -> Result<()> {
        self.call(sys::lds_pages_reset)
    }

    /// The number of pages in the list (a next or previous page still
    /// loading not counted).
    pub fn len(&self) -> Result<usize> {
        let mut count = 0;
        // SAFETY: valid handle and out pointer.
        check(unsafe { sys::lds_pages_count(self.shared.raw(), self.id, &raw mut count) })?;
        Ok(count)
    }

    /// Whether the list has no page.
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// The latest state of the page at `index` (its `kind` is the index);
    /// [`ErrorKind::NotFound`](crate::ErrorKind::NotFound) past the end.
    pub fn get(&self, index: usize) -> Result<Event> {
        let mut snapshot = sys::lds_snapshot::zeroed();
        // SAFETY: valid handle and out pointer.
        let rc = unsafe { sys::lds_pages_get(self.shared.raw(), self.id, index, &raw mut snapshot) };
        // SAFETY: on success the snapshot holds the library's copies.
        let event = (rc == sys::LDS_OK).then(|| unsafe { Event::from_snapshot(&snapshot) });
        // SAFETY: clearing a filled or zeroed snapshot is allowed.
        unsafe { sys::lds_snapshot_clear(&raw mut snapshot) };
        event.ok_or(Error::from_code(rc))
    }

    /// The values of the pages in order (`None` for a page without one).
    pub fn values(&self) -> Result<Vec<Option<Vec<u8>>>> {
        (0..self.len()?).map(|index| self.get(index).map(|event| event.value)).collect()
    }

    fn has_more(&self, direction: i32) -> Result<bool> {
        // SAFETY: valid handle.
        let rc = unsafe { sys::lds_pages_has_more(self.shared.raw(), self.id, direction) };
        check(rc)?;
        Ok(rc == 1)
    }

    /// Whether the last page has a next cursor ([`load_next`](Pages::load_next) would start a page).
    pub fn has_next(&self) -> Result<bool> {
        self.has_more(1)
    }

    /// Whether the first page has a previous cursor.
    pub fn has_previous(&self) -> Result<bool> {
        self.has_more(-1)
    }
}

impl Drop for Pages {
    fn drop(&mut self) {
        // SAFETY: valid handle; after the runtime is gone this returns LDS_ECLOSED.
        unsafe { sys::lds_pages_free(self.shared.raw(), self.id) };
        // SAFETY: the sink is alive until buried below.
        unsafe { self.sink.as_ref() }.close();
        self.shared.bury(self.id, self.sink);
    }
}

impl fmt::Debug for Pages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pages").field("id", &self.id).field("name", &self.name).finish_non_exhaustive()
    }
}
