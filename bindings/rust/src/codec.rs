//! Typed values: how Rust values become the bytes the library stores.
//!
//! The library's requests and values are bytes. [`Encode`] turns a request
//! or value into bytes and [`Decode`] turns a value's bytes back; a
//! [`TypedLoadable`] cell encodes its requests and decodes its values with
//! them, and a [`TypedCache`] its keys and values. The crate implements
//! them for bytes (`[u8]`, `Vec<u8>`: as they are), text (`str`, `String`:
//! UTF-8; decoding refuses invalid UTF-8), [`HttpRequest`] and
//! [`ExecRequest`] (encode) and [`HttpResponse`] (decode); implement them
//! for your own types (JSON, ...).

use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use crate::builtin::{ExecRequest, HttpRequest, HttpResponse};
use crate::cache::Cache;
use crate::cell::{Events, LoadFuture, LoadWaitError, Loadable};
use crate::error::Error;
use crate::event::{Event, LoadError, Status};
use crate::loader::{Job, Loader};
use crate::options::LoadOptions;

/// A value that can be turned into the bytes of a request, key or value.
pub trait Encode {
    /// The value's bytes.
    ///
    /// # Errors
    ///
    /// A [`CodecError`] when the value has no encoding (an HTTP request
    /// whose URL holds a NUL byte, ...).
    fn encode(&self) -> Result<Vec<u8>, CodecError>;
}

/// A value that can be read back from bytes the library stored.
pub trait Decode: Sized {
    /// The value the bytes hold.
    ///
    /// # Errors
    ///
    /// A [`CodecError`] when the bytes are not an encoding of the type
    /// (invalid UTF-8 for a `String`, ...).
    fn decode(bytes: &[u8]) -> Result<Self, CodecError>;
}

/// Bytes that could not be encoded or decoded: which type and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodecError {
    /// The type whose encoding failed, as `"String"` or `"HttpResponse"`.
    pub codec: &'static str,
    /// What went wrong.
    pub message: String,
}

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} codec: {}", self.codec, self.message)
    }
}

impl std::error::Error for CodecError {}

impl<T: Encode + ?Sized> Encode for &T {
    fn encode(&self) -> Result<Vec<u8>, CodecError> {
        (**self).encode()
    }
}

impl Encode for [u8] {
    fn encode(&self) -> Result<Vec<u8>, CodecError> {
        Ok(self.to_vec())
    }
}

impl Encode for Vec<u8> {
    fn encode(&self) -> Result<Vec<u8>, CodecError> {
        Ok(self.clone())
    }
}

impl Decode for Vec<u8> {
    fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
        Ok(bytes.to_vec())
    }
}

impl Encode for str {
    fn encode(&self) -> Result<Vec<u8>, CodecError> {
        Ok(self.as_bytes().to_vec())
    }
}

impl Encode for String {
    fn encode(&self) -> Result<Vec<u8>, CodecError> {
        Ok(self.as_bytes().to_vec())
    }
}

impl Decode for String {
    fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
        String::from_utf8(bytes.to_vec()).map_err(|e| CodecError { codec: "String", message: e.to_string() })
    }
}

impl Encode for HttpRequest {
    fn encode(&self) -> Result<Vec<u8>, CodecError> {
        HttpRequest::encode(self).map_err(|e| CodecError { codec: "HttpRequest", message: e.to_string() })
    }
}

impl Encode for ExecRequest {
    fn encode(&self) -> Result<Vec<u8>, CodecError> {
        ExecRequest::encode(self).map_err(|e| CodecError { codec: "ExecRequest", message: e.to_string() })
    }
}

impl Decode for HttpResponse {
    fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
        HttpResponse::decode(bytes)
            .map_err(|e| CodecError { codec: "HttpResponse", message: format!("not the value of an http job ({e})") })
    }
}

/// Why a typed call gave no value.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TypedError {
    /// A call into the library failed.
    Call(Error),
    /// A request, key or value could not be encoded or decoded.
    Codec(CodecError),
    /// The load ended in an error state: the error, and the value the
    /// failed load produced, if its loader gives one (the http loader's
    /// response of a status outside 2xx: see [`TypedError::http_response`]).
    Load {
        /// The error the cell shows.
        error: LoadError,
        /// The failed load's value, when there is one.
        value: Option<Vec<u8>>,
    },
    /// The load gave no outcome: superseded, cancelled, timed out or
    /// disconnected.
    Wait(LoadWaitError),
}

impl TypedError {
    /// For a [`TypedError::Load`] of the http loader that carries the
    /// response (a status outside 2xx): that response.
    #[must_use]
    pub fn http_response(&self) -> Option<HttpResponse> {
        match self {
            TypedError::Load { value: Some(value), .. } => HttpResponse::decode(value).ok(),
            _ => None,
        }
    }
}

impl fmt::Display for TypedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TypedError::Call(e) => write!(f, "call failed: {e}"),
            TypedError::Codec(e) => e.fmt(f),
            TypedError::Load { error, .. } => {
                write!(f, "load failed: {:?} error {}", error.domain, error.code)?;
                if let Some(message) = &error.message {
                    write!(f, ": {message}")?;
                }
                Ok(())
            }
            TypedError::Wait(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for TypedError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TypedError::Call(e) => Some(e),
            TypedError::Codec(e) => Some(e),
            TypedError::Wait(e) => Some(e),
            TypedError::Load { .. } => None,
        }
    }
}

impl From<Error> for TypedError {
    fn from(e: Error) -> Self {
        TypedError::Call(e)
    }
}

impl From<CodecError> for TypedError {
    fn from(e: CodecError) -> Self {
        TypedError::Codec(e)
    }
}

impl From<LoadWaitError> for TypedError {
    fn from(e: LoadWaitError) -> Self {
        TypedError::Wait(e)
    }
}

/// The typed outcome of a settled state event: the decoded value of a
/// loaded state, the error of an error state.
fn settle<V: Decode>(event: Event) -> Result<V, TypedError> {
    match (event.status, event.value) {
        (Status::Loaded, Some(value)) => Ok(V::decode(&value)?),
        (Status::Loaded, None) => Ok(V::decode(&[])?),
        (_, value) => match event.error {
            Some(error) => Err(TypedError::Load { error, value }),
            None => Err(TypedError::Wait(LoadWaitError::Cancelled(Box::new(Event { value, ..event })))),
        },
    }
}

/// A loadable cell whose requests are `Req` and whose values are `Val`,
/// with its event stream: made by
/// [`Runtime::typed_loadable`](crate::Runtime::typed_loadable). The
/// byte-level cell and stream stay reachable ([`cell`](TypedLoadable::cell),
/// [`events`](TypedLoadable::events)).
pub struct TypedLoadable<Req: ?Sized, Val> {
    cell: Loadable,
    events: Events,
    #[allow(clippy::type_complexity)] // PhantomData of fn types: variance only, no data
    types: PhantomData<(fn(&Req), fn() -> Val)>,
}

impl<Req: Encode + ?Sized, Val: Decode> TypedLoadable<Req, Val> {
    pub(crate) fn new(cell: Loadable, events: Events) -> Self {
        TypedLoadable { cell, events, types: PhantomData }
    }

    /// The byte-level cell.
    #[must_use]
    pub fn cell(&self) -> &Loadable {
        &self.cell
    }

    /// The cell's byte-level event stream.
    #[must_use]
    pub fn events(&self) -> &Events {
        &self.events
    }

    /// The byte-level cell and stream.
    #[must_use]
    pub fn into_parts(self) -> (Loadable, Events) {
        (self.cell, self.events)
    }

    /// Loads `request` with `loader` and default options, as
    /// [`Loadable::load`].
    ///
    /// # Errors
    ///
    /// [`TypedError::Codec`] when the request does not encode,
    /// [`TypedError::Call`] when the library refuses the load.
    pub fn load(&self, loader: &Loader, request: &Req) -> Result<(), TypedError> {
        self.cell.load(loader, &request.encode()?)?;
        Ok(())
    }

    /// Loads `request` and waits at most `timeout` for its value
    /// ([`Events::wait_for_load`]).
    ///
    /// # Errors
    ///
    /// Those of [`load`](TypedLoadable::load); [`TypedError::Load`] when
    /// the load ends in an error; [`TypedError::Wait`] when it gives no
    /// outcome in time; [`TypedError::Codec`] when the value does not
    /// decode.
    pub fn fetch(&self, loader: &Loader, request: &Req, timeout: Duration) -> Result<Val, TypedError> {
        let bytes = request.encode()?;
        self.cell.load(loader, &bytes)?;
        settle(self.events.wait_for_load(&bytes, timeout)?)
    }

    /// Loads `request` and returns a future of its value: the future form
    /// of [`fetch`](TypedLoadable::fetch), with no timeout. Dropping the
    /// future before it resolves cancels the load, as for
    /// [`Loadable::load_async`].
    ///
    /// # Errors
    ///
    /// Those of [`load`](TypedLoadable::load); the load is then not started.
    pub fn load_async(&self, loader: &Loader, request: &Req) -> Result<TypedLoadFuture<'_, Val>, TypedError> {
        self.load_async_with(loader, request, &LoadOptions::new())
    }

    /// [`load_async`](TypedLoadable::load_async) with options.
    ///
    /// # Errors
    ///
    /// As [`load_async`](TypedLoadable::load_async).
    pub fn load_async_with(
        &self,
        loader: &Loader,
        request: &Req,
        options: &LoadOptions,
    ) -> Result<TypedLoadFuture<'_, Val>, TypedError> {
        let bytes = request.encode()?;
        let inner = self.cell.load_async(&self.events, loader, &bytes, options)?;
        Ok(TypedLoadFuture { inner, types: PhantomData })
    }

    /// The cell's current value, decoded: `None` unless it is loaded.
    ///
    /// # Errors
    ///
    /// [`TypedError::Call`] when the library call fails,
    /// [`TypedError::Codec`] when the value does not decode.
    pub fn get(&self) -> Result<Option<Val>, TypedError> {
        let event = self.cell.get()?;
        match (event.status, event.value) {
            (Status::Loaded, value) => Ok(Some(Val::decode(value.as_deref().unwrap_or_default())?)),
            _ => Ok(None),
        }
    }
}

impl<Req: ?Sized, Val> fmt::Debug for TypedLoadable<Req, Val> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedLoadable").field("cell", &self.cell).finish_non_exhaustive()
    }
}

/// The future of [`TypedLoadable::load_async`]: the decoded value of the
/// load. Dropping it before it resolves cancels the load.
#[must_use = "futures do nothing unless polled; dropping this one cancels its load"]
pub struct TypedLoadFuture<'a, Val> {
    inner: LoadFuture<'a>,
    types: PhantomData<fn() -> Val>,
}

impl<Val: Decode> std::future::Future for TypedLoadFuture<'_, Val> {
    type Output = Result<Val, TypedError>;
    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Self::Output> {
        let this = self.get_mut();
        std::pin::Pin::new(&mut this.inner).poll(cx).map(|outcome| settle(outcome?))
    }
}

impl<Val> fmt::Debug for TypedLoadFuture<'_, Val> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedLoadFuture").field("inner", &self.inner).finish()
    }
}

/// A [`Cache`] whose keys are `K` and values `V`: made by
/// [`Cache::typed`]; the byte-level cache stays reachable
/// ([`cache`](TypedCache::cache)).
pub struct TypedCache<'a, K: ?Sized, V> {
    cache: &'a Cache,
    #[allow(clippy::type_complexity)] // PhantomData of fn types: variance only, no data
    types: PhantomData<(fn(&K), fn() -> V)>,
}

impl<K: Encode + ?Sized, V: Encode + Decode> TypedCache<'_, K, V> {
    /// The byte-level cache.
    #[must_use]
    pub fn cache(&self) -> &Cache {
        self.cache
    }

    /// Stores `value` under `key`, as [`Cache::put`].
    ///
    /// # Errors
    ///
    /// [`TypedError::Codec`] when the key or value does not encode,
    /// [`TypedError::Call`] when the cache refuses it.
    pub fn put(&self, key: &K, value: &V) -> Result<(), TypedError> {
        self.cache.put(&key.encode()?, &value.encode()?)?;
        Ok(())
    }

    /// The value stored under `key`, decoded, as [`Cache::get`].
    ///
    /// # Errors
    ///
    /// [`TypedError::Codec`] when the key does not encode or the value does
    /// not decode, [`TypedError::Call`] when the cache call fails.
    pub fn get(&self, key: &K) -> Result<Option<V>, TypedError> {
        match self.cache.get(&key.encode()?)? {
            Some(entry) => Ok(Some(V::decode(&entry.value)?)),
            None => Ok(None),
        }
    }

    /// Removes `key`; whether it was there.
    ///
    /// # Errors
    ///
    /// As [`get`](TypedCache::get).
    pub fn remove(&self, key: &K) -> Result<bool, TypedError> {
        Ok(self.cache.remove(&key.encode()?)?)
    }
}

impl<K: ?Sized, V> fmt::Debug for TypedCache<'_, K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedCache").field("cache", &self.cache.id()).finish_non_exhaustive()
    }
}

impl Cache {
    /// This cache seen through codecs: keys `K`, values `V`.
    #[must_use]
    pub fn typed<K: Encode + ?Sized, V: Encode + Decode>(&self) -> TypedCache<'_, K, V> {
        TypedCache { cache: self, types: PhantomData }
    }
}

impl Job {
    /// The job's request, decoded: the typed side of a loader whose cells
    /// are [`TypedLoadable`]s.
    ///
    /// # Errors
    ///
    /// A [`CodecError`] when the request is not an encoding of `T`.
    pub fn request_as<T: Decode>(&self) -> Result<T, CodecError> {
        T::decode(self.request())
    }

    /// Ends the job with `value`, encoded, as [`Job::succeed`].
    ///
    /// # Errors
    ///
    /// [`TypedError::Codec`] when the value does not encode,
    /// [`TypedError::Call`] when the job no longer runs.
    pub fn succeed_with<T: Encode + ?Sized>(&self, value: &T) -> Result<(), TypedError> {
        self.succeed(&value.encode()?)?;
        Ok(())
    }
}
