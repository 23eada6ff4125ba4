//! typed_fetch.rs: a loader written as a Rust closure and a typed cell (its
//! requests are `str`, its values `String`): a blocking fetch, then a load
//! whose events are read from the cell's stream.
use std::time::Duration;

use loadstate::{Runtime, Status, TypedError};

fn main() -> Result<(), TypedError> {
    let runtime = Runtime::new()?;
    let greeter = runtime.loader(|job| {
        let mut value = b"hello, ".to_vec();
        value.extend_from_slice(job.request());
        let _ = job.succeed(&value); // refused only if the job no longer runs
    })?;
    let cell = runtime.typed_loadable::<str, String>()?;

    // Blocking: load and wait for the value.
    let value = cell.fetch(&greeter, "world", Duration::from_secs(10))?;
    println!("fetched: {value}");

    // The byte-level events of the same cell: LOADING, then LOADED.
    let events = cell.events();
    cell.cell().load(&greeter, b"again")?;
    for event in events.iter() {
        let value = event.value.as_deref().map(String::from_utf8_lossy);
        println!("#{} {:?} {:?}", event.seq, event.status, value);
        if event.status == Status::Loaded {
            break;
        }
    }
    Ok(())
}
