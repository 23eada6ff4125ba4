use std::time::Duration;

use crate::sys;

/// How a load or a run behaves: silent, timeout, interrupts, retries.
///
/// ```
/// use std::time::Duration;
/// let options = loadstate::LoadOptions::new()
///     .silent(true)
///     .timeout(Duration::from_secs(5))
///     .interrupts([Duration::from_millis(500), Duration::from_secs(2)])
///     .retries(3);
/// # let _ = options;
/// ```
///
/// Durations are passed to the library in whole milliseconds (rounded
/// down, capped at `u32::MAX`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadOptions {
    silent: bool,
    share: bool,
    timeout_ms: u32,
    interrupts_ms: Vec<u32>,
    retries: u32,
    retry_base_ms: u32,
    retry_max_ms: u32,
}

fn millis(duration: Duration) -> u32 {
    u32::try_from(duration.as_millis()).unwrap_or(u32::MAX)
}

impl LoadOptions {
    /// The defaults: not silent, no timeout, no interrupts, no retries.
    pub fn new() -> LoadOptions {
        LoadOptions::default()
    }

    /// Keeps the current state visible while loading, flagged
    /// [`Flags::REFRESHING`](crate::Flags::REFRESHING) (`LDS_LOAD_SILENT`).
    pub fn silent(mut self, silent: bool) -> LoadOptions {
        self.silent = silent;
        self
    }

    /// Shares one job with the running loads of the same loader and request
    /// (`LDS_LOAD_SHARE`): the loader runs once, every waiting cell gets
    /// the same events, and the job is cancelled only when every cell has
    /// left it.
    pub fn share(mut self, share: bool) -> LoadOptions {
        self.share = share;
        self
    }

    /// Cancels the job after `timeout`; the cell becomes an error with
    /// [`ErrorKind::TimedOut`](crate::ErrorKind::TimedOut)'s code in the loadstate domain.
    /// A zero duration means no timeout.
    pub fn timeout(mut self, timeout: Duration) -> LoadOptions {
        self.timeout_ms = millis(timeout);
        self
    }

    /// Delays between [`EventType::Interrupt`](crate::EventType::Interrupt)
    /// events (at most 64; the library rejects more with `LDS_EINVAL`).
    pub fn interrupts(mut self, delays: impl IntoIterator<Item = Duration>) -> LoadOptions {
        self.interrupts_ms = delays.into_iter().map(millis).collect();
        self
    }

    /// Extra attempts after a failure.
    pub fn retries(mut self, retries: u32) -> LoadOptions {
        self.retries = retries;
        self
    }

    /// Back-off before the first retry (the library's default, 100 ms, when zero).
    pub fn retry_base(mut self, delay: Duration) -> LoadOptions {
        self.retry_base_ms = millis(delay);
        self
    }

    /// Upper bound of any back-off (the library's default, 30 s, when zero).
    pub fn retry_max(mut self, delay: Duration) -> LoadOptions {
        self.retry_max_ms = millis(delay);
        self
    }

    /// The C struct; it borrows the interrupt delays of `self`.
    pub(crate) fn to_raw(&self) -> sys::lds_load_options {
        sys::lds_load_options {
            flags: if self.silent { sys::LDS_LOAD_SILENT } else { 0 }
                | if self.share { sys::LDS_LOAD_SHARE } else { 0 },
            timeout_ms: self.timeout_ms,
            interrupts_ms: if self.interrupts_ms.is_empty() { std::ptr::null() } else { self.interrupts_ms.as_ptr() },
            interrupt_count: self.interrupts_ms.len(),
            retries: self.retries,
            retry_base_ms: self.retry_base_ms,
            retry_max_ms: self.retry_max_ms,
            ..sys::lds_load_options::INIT
        }
    }
}

/// On which thread callbacks run (`LDS_DELIVER_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Delivery {
    /// On the runtime's loop thread (the default).
    #[default]
    Loop,
    /// On the thread that calls [`Runtime::dispatch`](crate::Runtime::dispatch),
    /// when [`Runtime::fd`](crate::Runtime::fd) is readable.
    Poll,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_fill_the_c_struct() {
        let options = LoadOptions::new()
            .silent(true)
            .share(true)
            .timeout(Duration::from_millis(1500))
            .interrupts([Duration::from_millis(10), Duration::from_secs(1)])
            .retries(2)
            .retry_base(Duration::from_millis(5))
            .retry_max(Duration::from_secs(u64::MAX));
        let raw = options.to_raw();
        assert_eq!(raw.size as usize, std::mem::size_of::<sys::lds_load_options>());
        assert_eq!(raw.flags, sys::LDS_LOAD_SILENT | sys::LDS_LOAD_SHARE);
        assert_eq!(raw.timeout_ms, 1500);
        assert_eq!(raw.interrupt_count, 2);
        // SAFETY: the delays live in `options`.
        assert_eq!(unsafe { std::slice::from_raw_parts(raw.interrupts_ms, 2) }, [10, 1000]);
        assert_eq!((raw.retries, raw.retry_base_ms, raw.retry_max_ms), (2, 5, u32::MAX));

        let defaults = LoadOptions::new().to_raw();
        assert_eq!((defaults.flags, defaults.timeout_ms, defaults.interrupt_count), (0, 0, 0));
        assert!(defaults.interrupts_ms.is_null());
    }
}
