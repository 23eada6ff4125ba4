use std::ffi::{CStr, c_int};
use std::fmt;

use crate::sys;

/// The result of every fallible call of the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A failed call: the library's negative `LDS_E*` code and its message
/// from `lds_strerror`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Error {
    code: c_int,
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
    /// A code this version of the crate does not know.
    Other(i32),
}

impl ErrorKind {
    /// The library's `LDS_E*` code for this kind (also the `error_code` of
    /// an event's error in the [`ErrorDomain::Loadstate`](crate::ErrorDomain::Loadstate) domain).
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
            ErrorKind::Other(code) => code,
        }
    }
}

impl Error {
    /// The error for a library return code (normally negative).
    pub const fn from_code(code: c_int) -> Error {
        Error { code }
    }

    /// The library's return code, an `LDS_E*` value.
    pub const fn code(&self) -> c_int {
        self.code
    }

    /// The library's message for the code (`lds_strerror`).
    pub fn message(&self) -> &'static str {
        strerror(self.code)
    }

    /// The code as an enum.
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
            other => ErrorKind::Other(other),
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error").field("code", &self.code).field("message", &self.message()).finish()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message(), self.code)
    }
}

impl std::error::Error for Error {}

/// The library's static message for a return code or for an error code of
/// the loadstate domain. Unknown codes give "unknown error".
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
