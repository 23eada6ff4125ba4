//! The runtime's web inspector (`lds_inspector_start`, `lds_inspector_url`,
//! `lds_inspector_stop`).

use std::ffi::CString;
use std::time::Duration;

use crate::error::{Error, Result, check};
use crate::runtime::Runtime;
use crate::sys;

/// How the inspector serves (`lds_inspector_options`). The default shows
/// no values, refuses the page's actions, binds loopback only and leaves
/// every bound at the library's default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct InspectorOptions {
    flags: u32,
    max_clients: u32,
    interval_ms: u32,
    idle_timeout_ms: u32,
    max_cells: u32,
}

/// Milliseconds of `d`, saturated (the library refuses what is out of its range).
fn millis(d: Duration) -> u32 {
    u32::try_from(d.as_millis()).unwrap_or(u32::MAX)
}

impl InspectorOptions {
    /// The defaults.
    #[must_use]
    pub fn new() -> InspectorOptions {
        InspectorOptions::default()
    }

    fn flag(mut self, flag: u32, on: bool) -> InspectorOptions {
        if on {
            self.flags |= flag;
        } else {
            self.flags &= !flag;
        }
        self
    }

    /// Show the cells' values (`LDS_INSPECTOR_SHOW_VALUES`); otherwise they
    /// read "(hidden)". Requests and errors are always shown.
    #[must_use]
    pub fn show_values(self, on: bool) -> InspectorOptions {
        self.flag(sys::LDS_INSPECTOR_SHOW_VALUES, on)
    }

    /// Accept the page's actions: cancel, refresh, invalidate a cache key
    /// prefix (`LDS_INSPECTOR_ACTIONS`).
    #[must_use]
    pub fn actions(self, on: bool) -> InspectorOptions {
        self.flag(sys::LDS_INSPECTOR_ACTIONS, on)
    }

    /// Allow an IPv4 address other than loopback (`LDS_INSPECTOR_ALLOW_REMOTE`).
    #[must_use]
    pub fn allow_remote(self, on: bool) -> InspectorOptions {
        self.flag(sys::LDS_INSPECTOR_ALLOW_REMOTE, on)
    }

    /// The most live pages (event streams) at once; more are answered 503
    /// (0: the library's default, 8).
    #[must_use]
    pub fn max_clients(mut self, clients: u32) -> InspectorOptions {
        self.max_clients = clients;
        self
    }

    /// How often the live page is updated (zero: 500 ms; at least 50 ms,
    /// at most a minute).
    #[must_use]
    pub fn interval(mut self, interval: Duration) -> InspectorOptions {
        self.interval_ms = millis(interval);
        self
    }

    /// The head timeout: a connection without a complete request head this
    /// long after it was accepted is answered 408 and closed (zero: 3 s).
    #[must_use]
    pub fn idle_timeout(mut self, timeout: Duration) -> InspectorOptions {
        self.idle_timeout_ms = millis(timeout);
        self
    }

    /// The most cells listed, newest first (0: 200; at most 10,000).
    #[must_use]
    pub fn max_cells(mut self, cells: u32) -> InspectorOptions {
        self.max_cells = cells;
        self
    }

    fn to_raw(self) -> sys::lds_inspector_options {
        sys::lds_inspector_options {
            flags: self.flags,
            max_clients: self.max_clients,
            interval_ms: self.interval_ms,
            idle_timeout_ms: self.idle_timeout_ms,
            max_cells: self.max_cells,
            ..sys::lds_inspector_options::INIT
        }
    }
}

impl Runtime {
    /// Starts the runtime's web inspector (`lds_inspector_start`) and
    /// returns its URL, token included (`http://127.0.0.1:PORT/?token=...`).
    ///
    /// A small HTTP server on the runtime's own loop serves one page that
    /// shows the cells, jobs in flight, loaders (with the jobs waiting in
    /// their queue) and caches live. `address` is `"127.0.0.1:PORT"` or
    /// `"localhost:PORT"` (port 0: a free one). Only requests carrying the
    /// token and a `Host` header naming the bound address are answered. It
    /// serves until [`stop_inspector`](Runtime::stop_inspector) or the
    /// runtime's drop. For development; see the header for its bounds.
    ///
    /// Fails with [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument)
    /// (a malformed address, one other than loopback without
    /// [`allow_remote`](InspectorOptions::allow_remote), options out of
    /// range), [`ErrorKind::State`](crate::ErrorKind::State) (an inspector
    /// already serves) or [`ErrorKind::Io`](crate::ErrorKind::Io) (the
    /// address cannot be bound).
    pub fn start_inspector(&self, address: &str, options: &InspectorOptions) -> Result<String> {
        let address = CString::new(address).map_err(|_| Error::from_code(sys::LDS_EINVAL))?;
        let raw = options.to_raw();
        // SAFETY: valid handle, NUL-terminated address and options.
        check(unsafe { sys::lds_inspector_start(self.as_ptr(), address.as_ptr(), &raw const raw) })?;
        self.inspector_url()?.ok_or(Error::from_code(sys::LDS_ENOENT))
    }

    /// The inspector's URL, token included (`lds_inspector_url`); `None`
    /// when none serves.
    pub fn inspector_url(&self) -> Result<Option<String>> {
        // 64 bytes always hold the URL and its NUL (see the header).
        let mut buf = [0u8; 128];
        let mut len = 0usize;
        // SAFETY: valid handle; buf holds its length in bytes.
        let rc = unsafe { sys::lds_inspector_url(self.as_ptr(), buf.as_mut_ptr().cast(), buf.len(), &raw mut len) };
        if rc == sys::LDS_ENOENT {
            return Ok(None);
        }
        check(rc)?;
        Ok(Some(String::from_utf8_lossy(&buf[..len]).into_owned()))
    }

    /// Stops the inspector (`lds_inspector_stop`): it closes its
    /// connections and no longer listens. Returns whether one was serving.
    pub fn stop_inspector(&self) -> Result<bool> {
        // SAFETY: valid handle.
        let rc = unsafe { sys::lds_inspector_stop(self.as_ptr()) };
        if rc == sys::LDS_ENOENT {
            return Ok(false);
        }
        check(rc)?;
        Ok(true)
    }
}
