use std::ffi::{CStr, c_char, c_void};
use std::fmt;
use std::ops::{BitAnd, BitOr, BitOrAssign};

use crate::sys;

/// The status of a cell after an event.
///
/// Loadable cells use the first four, process cells the last four.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// Loadable: nothing loaded (`LDS_ABSENT`).
    Absent,
    /// Loadable: a load runs and no value is shown (`LDS_LOADING`).
    Loading,
    /// Loadable: a value is shown (`LDS_LOADED`).
    Loaded,
    /// Loadable: the last load failed (`LDS_ERROR`).
    Error,
    /// Process: nothing ran yet, or it was reset (`LDS_IDLE`).
    Idle,
    /// Process: a job of some kind runs (`LDS_RUNNING`).
    Running,
    /// Process: the last job finished (`LDS_FINISHED`).
    Finished,
    /// Process: the last job failed (`LDS_FAILED`).
    Failed,
    /// A status this version of the crate does not know.
    Unknown(i32),
}

impl Status {
    /// The status for a raw `LDS_*` status value.
    #[must_use]
    pub const fn from_raw(raw: i32) -> Status {
        match raw {
            sys::LDS_ABSENT => Status::Absent,
            sys::LDS_LOADING => Status::Loading,
            sys::LDS_LOADED => Status::Loaded,
            sys::LDS_ERROR => Status::Error,
            sys::LDS_IDLE => Status::Idle,
            sys::LDS_RUNNING => Status::Running,
            sys::LDS_FINISHED => Status::Finished,
            sys::LDS_FAILED => Status::Failed,
            other => Status::Unknown(other),
        }
    }

    /// The raw `LDS_*` value.
    #[must_use]
    pub const fn raw(self) -> i32 {
        match self {
            Status::Absent => sys::LDS_ABSENT,
            Status::Loading => sys::LDS_LOADING,
            Status::Loaded => sys::LDS_LOADED,
            Status::Error => sys::LDS_ERROR,
            Status::Idle => sys::LDS_IDLE,
            Status::Running => sys::LDS_RUNNING,
            Status::Finished => sys::LDS_FINISHED,
            Status::Failed => sys::LDS_FAILED,
            Status::Unknown(raw) => raw,
        }
    }
}

/// The `LDS_FLAG_*` bits of an event.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Flags(u32);

impl Flags {
    /// No flag.
    pub const NONE: Flags = Flags(0);
    /// A silent load or refresh runs over this state.
    pub const REFRESHING: Flags = Flags(sys::LDS_FLAG_REFRESHING);
    /// The value is a partial one yielded by a running job.
    pub const PARTIAL: Flags = Flags(sys::LDS_FLAG_PARTIAL);
    /// The value came from a cache and is older than its fresh time, or
    /// its entry was invalidated.
    pub const STALE: Flags = Flags(sys::LDS_FLAG_STALE);
    /// The value came from a cache.
    pub const FROM_CACHE: Flags = Flags(sys::LDS_FLAG_FROM_CACHE);
    /// This state was restored because a load was cancelled.
    pub const CANCELLED: Flags = Flags(sys::LDS_FLAG_CANCELLED);
    /// The load waits for its loader's [`Limits`](crate::Limits): the
    /// loader has not been called yet.
    pub const QUEUED: Flags = Flags(sys::LDS_FLAG_QUEUED);
    /// With `FROM_CACHE`: the cached value was confirmed current by its
    /// loader (an HTTP 304).
    pub const REVALIDATED: Flags = Flags(sys::LDS_FLAG_REVALIDATED);
    /// The value is an optimistic one of a write still running (see
    /// [`Process::mutate`](crate::Process::mutate)).
    pub const OPTIMISTIC: Flags = Flags(sys::LDS_FLAG_OPTIMISTIC);
    /// This state came back because a write failed or was cancelled.
    pub const ROLLED_BACK: Flags = Flags(sys::LDS_FLAG_ROLLED_BACK);
    /// The value answers an earlier request (the event's `request` is that
    /// request), kept while a load of another request runs
    /// ([`LoadOptions::keep_previous`](crate::LoadOptions::keep_previous));
    /// always with `REFRESHING`.
    pub const PREVIOUS: Flags = Flags(sys::LDS_FLAG_PREVIOUS);
    /// The value is the running load's placeholder
    /// ([`LoadOptions::placeholder`](crate::LoadOptions::placeholder)),
    /// never stored in a cache; always with `REFRESHING`.
    pub const PLACEHOLDER: Flags = Flags(sys::LDS_FLAG_PLACEHOLDER);
    /// A pages cell's event about a page loaded before the first one.
    pub const PAGE_PREVIOUS: Flags = Flags(sys::LDS_FLAG_PAGE_PREVIOUS);
    /// A pages cell dropped pages: by its cap, from the other end; or, in a
    /// refresh, the pages after this one.
    pub const PAGES_DROPPED: Flags = Flags(sys::LDS_FLAG_PAGES_DROPPED);
    /// The load waits for the runtime to be online
    /// ([`Runtime::set_online`](crate::Runtime::set_online)): its loader has
    /// not been called for this attempt.
    pub const PAUSED: Flags = Flags(sys::LDS_FLAG_PAUSED);
    /// The load's job finished without a value (it yielded nothing): this
    /// is the state from before the load, whatever request it answers
    /// (an earlier request's value, or absent), never the load's answer
    /// ([`LoadWaitError::NoValue`](crate::LoadWaitError::NoValue)).
    pub const NO_VALUE: Flags = Flags(sys::LDS_FLAG_NO_VALUE);

    /// A pages cell's first event of a [`Pages::load`](crate::Pages::load):
    /// exactly one for each load (its first page's first event, or the
    /// event that ends a load replaced or reset before it showed anything).
    /// Events before it belong to earlier loads.
    pub const PAGES_LOAD: Flags = Flags(sys::LDS_FLAG_PAGES_LOAD);

    const NAMES: [(Flags, &'static str); 16] = [
        (Flags::REFRESHING, "REFRESHING"),
        (Flags::PARTIAL, "PARTIAL"),
        (Flags::STALE, "STALE"),
        (Flags::FROM_CACHE, "FROM_CACHE"),
        (Flags::CANCELLED, "CANCELLED"),
        (Flags::QUEUED, "QUEUED"),
        (Flags::REVALIDATED, "REVALIDATED"),
        (Flags::OPTIMISTIC, "OPTIMISTIC"),
        (Flags::ROLLED_BACK, "ROLLED_BACK"),
        (Flags::PREVIOUS, "PREVIOUS"),
        (Flags::PLACEHOLDER, "PLACEHOLDER"),
        (Flags::PAGE_PREVIOUS, "PAGE_PREVIOUS"),
        (Flags::PAGES_DROPPED, "PAGES_DROPPED"),
        (Flags::PAUSED, "PAUSED"),
        (Flags::NO_VALUE, "NO_VALUE"),
        (Flags::PAGES_LOAD, "PAGES_LOAD"),
    ];

    /// The flags of raw bits, unknown bits included.
    #[must_use]
    pub const fn from_bits(bits: u32) -> Flags {
        Flags(bits)
    }

    /// The raw bits.
    #[must_use]
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// Whether every bit of `other` is set.
    #[must_use]
    pub const fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether no bit is set.
    #[must_use]
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl BitOr for Flags {
    type Output = Flags;
    fn bitor(self, other: Flags) -> Flags {
        Flags(self.0 | other.0)
    }
}

impl BitOrAssign for Flags {
    fn bitor_assign(&mut self, other: Flags) {
        self.0 |= other.0;
    }
}

impl BitAnd for Flags {
    type Output = Flags;
    fn bitand(self, other: Flags) -> Flags {
        Flags(self.0 & other.0)
    }
}

impl fmt::Debug for Flags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("NONE");
        }
        let mut rest = self.0;
        let mut first = true;
        for (flag, name) in Flags::NAMES {
            if self.contains(flag) {
                if !first {
                    f.write_str(" | ")?;
                }
                f.write_str(name)?;
                rest &= !flag.0;
                first = false;
            }
        }
        if rest != 0 {
            if !first {
                f.write_str(" | ")?;
            }
            write!(f, "{rest:#x}")?;
        }
        Ok(())
    }
}

/// Where an error comes from (`LDS_DOMAIN_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorDomain {
    /// The library itself; the code is an `LDS_E*` code (see [`Error`](crate::Error)).
    Loadstate,
    /// Reported by the host: [`Job::fail`](crate::Job::fail), [`Loadable::set_error`](crate::Loadable::set_error).
    Host,
    /// An operating-system error; the code is an errno value.
    Os,
    /// An HTTP status outside 2xx.
    Http,
    /// A child process exited non-zero; the code is its status.
    Exit,
    /// A Redis cache failed (a cache-only load whose cache could not
    /// answer); the code is an `LDS_REDIS_E*` code ([`RedisErrorKind::from_raw`](crate::RedisErrorKind::from_raw)).
    Redis,
    /// A domain this version of the crate does not know.
    Unknown(i32),
}

impl ErrorDomain {
    /// The domain of a raw `LDS_DOMAIN_*` value; `None` for 0 (no error).
    #[must_use]
    pub const fn from_raw(raw: i32) -> Option<ErrorDomain> {
        Some(match raw {
            0 => return None,
            sys::LDS_DOMAIN_LOADSTATE => ErrorDomain::Loadstate,
            sys::LDS_DOMAIN_HOST => ErrorDomain::Host,
            sys::LDS_DOMAIN_OS => ErrorDomain::Os,
            sys::LDS_DOMAIN_HTTP => ErrorDomain::Http,
            sys::LDS_DOMAIN_EXIT => ErrorDomain::Exit,
            sys::LDS_DOMAIN_REDIS => ErrorDomain::Redis,
            other => ErrorDomain::Unknown(other),
        })
    }
}

/// The error a cell shows in [`Status::Error`] or [`Status::Failed`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LoadError {
    /// Who reported it.
    pub domain: ErrorDomain,
    /// The code in its domain.
    pub code: i32,
    /// The message, when there is one (invalid UTF-8 is replaced).
    pub message: Option<String>,
}

/// What an event reports, with the data of its type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    /// The state changed, or a refresh began ([`Flags::REFRESHING`]).
    State,
    /// The running job reported progress; the state is unchanged.
    Progress {
        /// Units done.
        done: u64,
        /// Units in all; 0 when unknown.
        total: u64,
    },
    /// The load runs longer than one of its interrupt delays.
    Interrupt {
        /// Milliseconds since the load began, measured.
        elapsed_ms: u64,
    },
    /// An event type this version of the crate does not know.
    Unknown(u32),
}

/// One event of a cell, or a cell's latest state ([`Loadable::get`](crate::Loadable::get)),
/// with owned copies of the library's data.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Event {
    /// What the event reports.
    pub event_type: EventType,
    /// The id of the cell.
    pub cell: u64,
    /// 1 for the cell's first event, +1 for each one after it, of every
    /// type: [`EventType::Progress`] and [`EventType::Interrupt`] events
    /// take numbers too, so a reader sees at once that it missed an event.
    /// Count [`EventType::State`] events, not `seq`, to count states (the
    /// header's contract: a cell whose progress is off, `LDS_LOAD_NO_PROGRESS`
    /// or `lds_loadable_set_progress`, has no gaps from it). 0 for the
    /// initial state returned by `get`.
    pub seq: u64,
    /// The cell's status after the event.
    pub status: Status,
    /// Process cells: the kind of the current or last run; 0 for loadable cells.
    pub kind: i32,
    /// `LDS_FLAG_*` bits.
    pub flags: Flags,
    /// [`Status::Loaded`] only: the value (`Some(vec![])` for a loaded empty value).
    pub value: Option<Vec<u8>>,
    /// The request of the load this state belongs to, when there is one.
    pub request: Option<Vec<u8>>,
    /// [`Status::Error`] and [`Status::Failed`]: the error. Also set on a
    /// [`Status::Loaded`] cached value whose revalidation failed
    /// ([`CachePolicy::CacheThenLoad`](crate::CachePolicy::CacheThenLoad)):
    /// the value stays and the error says why it could not be renewed.
    pub error: Option<LoadError>,
    /// 1 for the first try of the load, 2 for the first retry, ...; 0 when
    /// no load is involved.
    pub attempt: u32,
    /// Wall-clock time (ms since the Unix epoch) at which the value or
    /// error of this status was produced.
    pub updated_at_ms: u64,
}

impl Event {
    /// Whether the event is a [`EventType::State`] event.
    #[must_use]
    pub fn is_state(&self) -> bool {
        self.event_type == EventType::State
    }

    /// Whether the value came from a cache ([`Flags::FROM_CACHE`]).
    #[must_use]
    pub fn is_from_cache(&self) -> bool {
        self.flags.contains(Flags::FROM_CACHE)
    }

    /// Whether the cached value is older than its fresh time or was
    /// invalidated ([`Flags::STALE`]).
    #[must_use]
    pub fn is_stale(&self) -> bool {
        self.flags.contains(Flags::STALE)
    }

    /// Whether the value is an optimistic one of a running write
    /// ([`Flags::OPTIMISTIC`]).
    #[must_use]
    pub fn is_optimistic(&self) -> bool {
        self.flags.contains(Flags::OPTIMISTIC)
    }

    /// Whether the state came back because a write failed or was cancelled
    /// ([`Flags::ROLLED_BACK`]).
    #[must_use]
    pub fn is_rolled_back(&self) -> bool {
        self.flags.contains(Flags::ROLLED_BACK)
    }

    /// Whether the load's job finished without a value, bringing back the
    /// state from before the load ([`Flags::NO_VALUE`]).
    #[must_use]
    pub fn is_no_value(&self) -> bool {
        self.flags.contains(Flags::NO_VALUE)
    }

    /// Whether the value answers an earlier request, kept while a load of
    /// another request runs ([`Flags::PREVIOUS`]).
    #[must_use]
    pub fn is_previous(&self) -> bool {
        self.flags.contains(Flags::PREVIOUS)
    }

    /// Whether the value is the running load's placeholder
    /// ([`Flags::PLACEHOLDER`]).
    #[must_use]
    pub fn is_placeholder(&self) -> bool {
        self.flags.contains(Flags::PLACEHOLDER)
    }

    /// Whether this is a state event that ends a load or run: loaded
    /// without the partial flag, error, finished or failed, with no
    /// refresh running. Handy as a [`Events::wait_until`](crate::Events::wait_until) predicate.
    ///
    /// Under [`CachePolicy::CacheThenLoad`](crate::CachePolicy::CacheThenLoad)
    /// the cached value is shown flagged [`Flags::REFRESHING`] while it is
    /// revalidated, so it is not settled until the revalidation ends.
    #[must_use]
    pub fn is_settled(&self) -> bool {
        self.is_state()
            && !self.flags.contains(Flags::PARTIAL)
            && !self.flags.contains(Flags::REFRESHING)
            && matches!(self.status, Status::Loaded | Status::Error | Status::Finished | Status::Failed)
    }

    /// Copies a library event.
    ///
    /// # Safety
    /// Every pointer of `raw` must be valid as the header describes
    /// (true inside an event callback).
    pub(crate) unsafe fn from_raw(raw: &sys::lds_event) -> Event {
        unsafe {
            Event::from_parts(
                parts!(raw),
                (raw.value, raw.value_len),
                (raw.request, raw.request_len),
                raw.error_message,
            )
        }
    }

    /// Copies a snapshot filled by `lds_loadable_get`.
    ///
    /// # Safety
    /// `raw` must have been filled by a successful `lds_loadable_get`.
    pub(crate) unsafe fn from_snapshot(raw: &sys::lds_snapshot) -> Event {
        unsafe {
            Event::from_parts(
                parts!(raw),
                (raw.value.cast_const(), raw.value_len),
                (raw.request.cast_const(), raw.request_len),
                raw.error_message.cast_const(),
            )
        }
    }

    #[allow(clippy::needless_pass_by_value)] // Parts is built for this call only and read field by field
    unsafe fn from_parts(
        p: Parts,
        value: (*const c_void, usize),
        request: (*const c_void, usize),
        message: *const c_char,
    ) -> Event {
        let event_type = match p.event_type {
            sys::LDS_EVENT_STATE => EventType::State,
            sys::LDS_EVENT_PROGRESS => EventType::Progress { done: p.progress_done, total: p.progress_total },
            sys::LDS_EVENT_INTERRUPT => EventType::Interrupt { elapsed_ms: p.elapsed_ms },
            other => EventType::Unknown(other),
        };
        let error = ErrorDomain::from_raw(p.error_domain).map(|domain| LoadError {
            domain,
            code: p.error_code,
            // SAFETY: a non-NULL message is a NUL-terminated string (caller's contract).
            message: (!message.is_null()).then(|| unsafe { CStr::from_ptr(message) }.to_string_lossy().into_owned()),
        });
        Event {
            event_type,
            cell: p.cell,
            seq: p.seq,
            status: Status::from_raw(p.status),
            kind: p.kind,
            flags: Flags::from_bits(p.flags),
            value: unsafe { copy_bytes(value.0, value.1) },
            request: unsafe { copy_bytes(request.0, request.1) },
            error,
            attempt: p.attempt,
            updated_at_ms: p.updated_at_ms,
        }
    }
}

/// The scalar fields of an `lds_event` or an `lds_snapshot` (same names).
macro_rules! parts {
    ($raw:expr) => {
        Parts {
            event_type: $raw.r#type,
            cell: $raw.cell,
            seq: $raw.seq,
            status: $raw.status,
            kind: $raw.kind,
            flags: $raw.flags,
            attempt: $raw.attempt,
            elapsed_ms: $raw.elapsed_ms,
            progress_done: $raw.progress_done,
            progress_total: $raw.progress_total,
            updated_at_ms: $raw.updated_at_ms,
            error_domain: $raw.error_domain,
            error_code: $raw.error_code,
        }
    };
}
use parts;

struct Parts {
    event_type: u32,
    cell: u64,
    seq: u64,
    status: i32,
    kind: i32,
    flags: u32,
    attempt: u32,
    elapsed_ms: u64,
    progress_done: u64,
    progress_total: u64,
    updated_at_ms: u64,
    error_domain: i32,
    error_code: i32,
}

/// `None` for a NULL pointer, otherwise a copy of `len` bytes.
unsafe fn copy_bytes(ptr: *const c_void, len: usize) -> Option<Vec<u8>> {
    if ptr.is_null() {
        return None;
    }
    if len == 0 {
        return Some(Vec::new());
    }
    // SAFETY: the caller guarantees `len` readable bytes at `ptr`.
    Some(unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) }.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_combine_and_print_their_names() {
        let flags = Flags::REFRESHING | Flags::PARTIAL;
        assert!(flags.contains(Flags::PARTIAL));
        assert!(!flags.contains(Flags::CANCELLED));
        assert_eq!(flags.bits(), sys::LDS_FLAG_REFRESHING | sys::LDS_FLAG_PARTIAL);
        assert_eq!(format!("{flags:?}"), "REFRESHING | PARTIAL");
        assert_eq!(format!("{:?}", Flags::NONE), "NONE");
        assert_eq!(format!("{:?}", Flags::from_bits(0x10_0000 | sys::LDS_FLAG_STALE)), "STALE | 0x100000");
        assert_eq!(flags & Flags::PARTIAL, Flags::PARTIAL);
    }

    #[test]
    fn statuses_and_domains_round_trip_their_raw_values() {
        for raw in -1..10 {
            assert_eq!(Status::from_raw(raw).raw(), raw);
        }
        assert_eq!(Status::from_raw(sys::LDS_FAILED), Status::Failed);
        assert_eq!(ErrorDomain::from_raw(0), None);
        assert_eq!(ErrorDomain::from_raw(sys::LDS_DOMAIN_HTTP), Some(ErrorDomain::Http));
        assert_eq!(ErrorDomain::from_raw(99), Some(ErrorDomain::Unknown(99)));
    }

    #[test]
    fn an_event_copies_what_the_library_hands_out() {
        let value = b"v";
        let message = c"oops";
        let raw = sys::lds_event {
            r#type: sys::LDS_EVENT_PROGRESS,
            cell: 9,
            seq: 3,
            status: sys::LDS_LOADED,
            kind: 0,
            flags: sys::LDS_FLAG_PARTIAL,
            value: value.as_ptr().cast(),
            value_len: 1,
            request: std::ptr::null(),
            request_len: 0,
            error_domain: sys::LDS_DOMAIN_OS,
            error_code: 2,
            error_message: message.as_ptr(),
            attempt: 1,
            elapsed_ms: 0,
            progress_done: 5,
            progress_total: 6,
            updated_at_ms: 7,
        };
        // SAFETY: every pointer of `raw` is valid.
        let event = unsafe { Event::from_raw(&raw) };
        assert_eq!(event.event_type, EventType::Progress { done: 5, total: 6 });
        assert_eq!(event.value.as_deref(), Some(&b"v"[..]));
        assert_eq!(event.request, None);
        assert_eq!(event.error, Some(LoadError { domain: ErrorDomain::Os, code: 2, message: Some("oops".to_owned()) }));
        assert_eq!((event.cell, event.seq, event.attempt, event.updated_at_ms), (9, 3, 1, 7));
    }
}
