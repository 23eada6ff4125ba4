use std::time::Duration;
use loadstate::{Runtime, TypedError};

fn main() -> Result<(), TypedError> {
    let runtime = Runtime::new()?;
    let greeter = runtime.loader(|job| {
        let mut value = b"hello, ".to_vec();
        value.extend_from_slice(job.request());
        let _ = job.succeed(&value); // refused only if the job no longer runs
    })?;
    let cell = runtime.typed_loadable::<str, String>()?;
    let value = cell.fetch(&greeter, "world", Duration::from_secs(10))?;
    assert_eq!(value, "hello, world");
    Ok(())
}
