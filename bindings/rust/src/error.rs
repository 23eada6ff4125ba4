use std::ffi::{CStr, c_int};
use std::fmt;

use crate::sys;

/// The result of every fallible call of the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A failed call: the library's negative `LDS_E*` code and its message
/// from `lds_strerror`. A failed call of a [`RedisCache`](crate::RedisCache)
/// ([`ErrorKind::Redis`]) also carries the reason the cache reported,
/// [`Error::redis_kind`]; the cache's message for it is in
/// [`RedisCache::status`](crate::RedisCache::status).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Error {
    code: c_int,
    /// The `LDS_REDIS_E*` reason of an `LDS_EREDIS` error; 0 when unknown.
    redis: i32,
}

/// What an [`Error`] code means, one variant per `LDS_E*` code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// `LDS_EINVAL`: an argument is invalid.
    InvalidArgument,
    /// `LDS_ENOENT`: no object of that kind has this id.
    NotFound,
    /// `LDS_ESTATE`: the call is not allowed in the current state.
    State,
    /// `LDS_ECANCELED`: the job no longer runs.
    Cancelled,
    /// `LDS_ETIMEDOUT`: a load took longer than its timeout.
    TimedOut,
    /// `LDS_ENOMEM`: out of memory or of an operating-system resource.
    OutOfMemory,
    /// `LDS_ECLOSED`: the runtime is being freed or has been freed.
    Closed,
    /// `LDS_ETOOBIG`: a value, request or message is over [`VALUE_MAX`](crate::VALUE_MAX).
    TooBig,
    /// `LDS_EIO`: an operating-system call failed.
    Io,
    /// `LDS_EAGAIN`: too many operations wait for the loop thread
    /// ([`QUEUE_MAX`](crate::QUEUE_MAX)); nothing was done, try again later.
    Busy,
    /// `LDS_EREDIS`: a call of a Redis cache failed: Redis is unreachable,
    /// did not answer in time, refused, or the value is too large
    /// ([`Error::redis_kind`] says which).
    Redis,
    /// `LDS_ENOTSUP`: a feature this build of the library lacks, such as
    /// `rediss://` (TLS to Redis).
    NotSupported,
    /// `LDS_EOFFLINE`: the runtime is offline ([`Runtime::set_online`](crate::Runtime::set_online))
    /// and the load asked to fail then ([`OfflineMode::Fail`](crate::OfflineMode::Fail)); seen as
    /// the code of a load's error in [`ErrorDomain::Loadstate`](crate::ErrorDomain::Loadstate).
    Offline,
    /// A code this version of the crate does not know.
    Other(i32),
}

/// Why a Redis cache failed (`LDS_REDIS_E*`): the [`Error::redis_kind`]
/// of an [`ErrorKind::Redis`] error, the [`RedisStatus::last_error_kind`](crate::RedisStatus::last_error_kind)
/// of a cache, and the code of a load's error in the
/// [`ErrorDomain::Redis`](crate::ErrorDomain::Redis) domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RedisErrorKind {
    /// `LDS_REDIS_ECONNECT`: the connection could not be made or was lost.
    Connect,
    /// `LDS_REDIS_ETIMEDOUT`: no reply (or connection) in time.
    TimedOut,
    /// `LDS_REDIS_EAUTH`: AUTH or SELECT was refused.
    Auth,
    /// `LDS_REDIS_EREPLY`: Redis answered with an error, or with a reply of another shape.
    Reply,
    /// `LDS_REDIS_ETOOBIG`: the value is larger than the cache's `max_value_bytes`; not stored.
    TooBig,
    /// `LDS_REDIS_EDOWN`: not connected; the cache waits to try again.
    Down,
    /// `LDS_REDIS_ECLOSED`: the cache was freed while the command waited.
    Closed,
    /// `LDS_REDIS_EQUEUE`: more than [`sys::LDS_REDIS_PENDING_MAX`] commands wait.
    Queue,
    /// `LDS_REDIS_EREFUSED`: the server refused the connection (nothing listens there).
    Refused,
    /// `LDS_REDIS_EUNREACHABLE`: the host could not be reached (its name does not resolve, no route
    /// leads to it, no such unix socket).
    Unreachable,
    /// `LDS_REDIS_EPROTO`: the server broke a bound (a reply over `max_value_bytes` +
    /// [`sys::LDS_REDIS_REPLY_SLACK`] bytes, or one still incomplete a command timeout after it began);
    /// the connection was dropped.
    Proto,
    /// A code this version of the crate does not know.
    Other(i32),
}

impl RedisErrorKind {
    /// The reason of a raw `LDS_REDIS_E*` code; `None` for 0 (no failure).
    #[must_use]
    pub const fn from_raw(raw: i32) -> Option<RedisErrorKind> {
        Some(match raw {
            0 => return None,
            sys::LDS_REDIS_ECONNECT => RedisErrorKind::Connect,
            sys::LDS_REDIS_ETIMEDOUT => RedisErrorKind::TimedOut,
            sys::LDS_REDIS_EAUTH => RedisErrorKind::Auth,
            sys::LDS_REDIS_EREPLY => RedisErrorKind::Reply,
            sys::LDS_REDIS_ETOOBIG => RedisErrorKind::TooBig,
            sys::LDS_REDIS_EDOWN => RedisErrorKind::Down,
            sys::LDS_REDIS_ECLOSED => RedisErrorKind::Closed,
            sys::LDS_REDIS_EQUEUE => RedisErrorKind::Queue,
            sys::LDS_REDIS_EPROTO => RedisErrorKind::Proto,
            sys::LDS_REDIS_EREFUSED => RedisErrorKind::Refused,
            sys::LDS_REDIS_EUNREACHABLE => RedisErrorKind::Unreachable,
            other => RedisErrorKind::Other(other),
        })
    }

    /// The `LDS_REDIS_E*` code.
    #[must_use]
    pub const fn code(self) -> i32 {
        match self {
            RedisErrorKind::Connect => sys::LDS_REDIS_ECONNECT,
            RedisErrorKind::TimedOut => sys::LDS_REDIS_ETIMEDOUT,
            RedisErrorKind::Auth => sys::LDS_REDIS_EAUTH,
            RedisErrorKind::Reply => sys::LDS_REDIS_EREPLY,
            RedisErrorKind::TooBig => sys::LDS_REDIS_ETOOBIG,
            RedisErrorKind::Down => sys::LDS_REDIS_EDOWN,
            RedisErrorKind::Closed => sys::LDS_REDIS_ECLOSED,
            RedisErrorKind::Queue => sys::LDS_REDIS_EQUEUE,
            RedisErrorKind::Proto => sys::LDS_REDIS_EPROTO,
            RedisErrorKind::Refused => sys::LDS_REDIS_EREFUSED,
            RedisErrorKind::Unreachable => sys::LDS_REDIS_EUNREACHABLE,
            RedisErrorKind::Other(code) => code,
        }
    }
}

impl ErrorKind {
    /// The library's `LDS_E*` code for this kind (also the `error_code` of
    /// an event's error in the [`ErrorDomain::Loadstate`](crate::ErrorDomain::Loadstate) domain).
    #[must_use]
    pub const fn code(self) -> c_int {
        match self {
            ErrorKind::InvalidArgument => sys::LDS_EINVAL,
            ErrorKind::NotFound => sys::LDS_ENOENT,
            ErrorKind::State => sys::LDS_ESTATE,
            ErrorKind::Cancelled => sys::LDS_ECANCELED,
            ErrorKind::TimedOut => sys::LDS_ETIMEDOUT,
            ErrorKind::OutOfMemory => sys::LDS_ENOMEM,
            ErrorKind::Closed => sys::LDS_ECLOSED,
            ErrorKind::TooBig => sys::LDS_ETOOBIG,
            ErrorKind::Io => sys::LDS_EIO,
            ErrorKind::Busy => sys::LDS_EAGAIN,
            ErrorKind::Redis => sys::LDS_EREDIS,
            ErrorKind::NotSupported => sys::LDS_ENOTSUP,
            ErrorKind::Offline => sys::LDS_EOFFLINE,
            ErrorKind::Other(code) => code,
        }
    }
}

impl Error {
    /// The error for a library return code (normally negative).
    #[must_use]
    pub const fn from_code(code: c_int) -> Error {
        Error { code, redis: 0 }
    }

    /// An `LDS_EREDIS` error with the cache's `LDS_REDIS_E*` reason (0: unknown).
    pub(crate) const fn redis(reason: i32) -> Error {
        Error { code: sys::LDS_EREDIS, redis: reason }
    }

    /// For an [`ErrorKind::Redis`] error, why the cache failed, as it
    /// reported when the error was returned; `None` for other errors or
    /// when the reason is unknown.
    #[must_use]
    pub const fn redis_kind(&self) -> Option<RedisErrorKind> {
        if self.code == sys::LDS_EREDIS { RedisErrorKind::from_raw(self.redis) } else { None }
    }

    /// The library's return code, an `LDS_E*` value.
    #[must_use]
    pub const fn code(&self) -> c_int {
        self.code
    }

    /// The library's message for the code (`lds_strerror`).
    #[must_use]
    pub fn message(&self) -> &'static str {
        strerror(self.code)
    }

    /// The code as an enum.
    #[must_use]
    pub const fn kind(&self) -> ErrorKind {
        match self.code {
            sys::LDS_EINVAL => ErrorKind::InvalidArgument,
            sys::LDS_ENOENT => ErrorKind::NotFound,
            sys::LDS_ESTATE => ErrorKind::State,
            sys::LDS_ECANCELED => ErrorKind::Cancelled,
            sys::LDS_ETIMEDOUT => ErrorKind::TimedOut,
            sys::LDS_ENOMEM => ErrorKind::OutOfMemory,
            sys::LDS_ECLOSED => ErrorKind::Closed,
            sys::LDS_ETOOBIG => ErrorKind::TooBig,
            sys::LDS_EIO => ErrorKind::Io,
            sys::LDS_EAGAIN => ErrorKind::Busy,
            sys::LDS_EREDIS => ErrorKind::Redis,
            sys::LDS_ENOTSUP => ErrorKind::NotSupported,
            sys::LDS_EOFFLINE => ErrorKind::Offline,
            other => ErrorKind::Other(other),
        }
    }
}

#[allow(clippy::missing_fields_in_debug)] // `redis` is printed as redis_kind, when known
impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("Error");
        debug.field("code", &self.code).field("message", &self.message());
        if let Some(reason) = self.redis_kind() {
            debug.field("redis_kind", &reason);
        }
        debug.finish()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message(), self.code)?;
        if let Some(reason) = self.redis_kind() {
            write!(f, ": {reason:?}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

/// The library's static message for a return code or for an error code of
/// the loadstate domain. Unknown codes give "unknown error".
#[must_use]
pub fn strerror(code: c_int) -> &'static str {
    // SAFETY: lds_strerror never returns NULL and its strings are static.
    let text = unsafe { CStr::from_ptr(sys::lds_strerror(code)) };
    text.to_str().unwrap_or("unknown error")
}

/// Turns a return code into a `Result`: `Ok` with the code when it is not
/// negative.
pub(crate) fn check(code: c_int) -> Result<c_int> {
    if code < 0 { Err(Error::from_code(code)) } else { Ok(code) }
}
