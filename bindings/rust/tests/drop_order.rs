//! Dropping the runtime, cells and loaders in every order, with work in
//! flight.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, TryRecvError};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;

use common::{DEADLINE, DropSignal, Watch, dispatch_until_event, job_queue, wait_readable};
use loadstate::{Delivery, ErrorKind, Job, Loadable, Runtime, Status};

fn closed<T: std::fmt::Debug>(result: loadstate::Result<T>) {
    assert_eq!(result.unwrap_err().kind(), ErrorKind::Closed);
}

#[test]
fn dropping_the_runtime_with_jobs_in_flight_cancels_them_and_frees_the_loader() {
    for delivery in [Delivery::Loop, Delivery::Poll] {
        drop_with_jobs_in_flight(delivery);
    }
}

fn drop_with_jobs_in_flight(delivery: Delivery) {
    const CELLS: usize = 3;
    let runtime = Runtime::with_delivery(delivery).unwrap();
    let (dropped_tx, dropped_rx) = mpsc::channel();
    let guard = DropSignal(dropped_tx);
    let (jobs_tx, jobs_rx) = mpsc::channel::<Job>();
    let loader = runtime
        .loader(move |job| {
            let _owned = &guard;
            jobs_tx.send(job).unwrap();
        })
        .unwrap();
    let hooks_run = Arc::new(AtomicUsize::new(0));
    let mut cells = Vec::new();
    let mut jobs = Vec::new();
    for _ in 0..CELLS {
        let (cell, events) = runtime.loadable().unwrap();
        cell.load(&loader, b"").unwrap();
        let job = match delivery {
            Delivery::Loop => jobs_rx.recv_timeout(DEADLINE).unwrap(),
            Delivery::Poll => loop {
                if let Ok(job) = jobs_rx.try_recv() {
                    break job;
                }
                wait_readable(runtime.fd().unwrap());
                runtime.dispatch(0).unwrap();
            },
        };
        let mut watch = Watch::new(events);
        assert_eq!(watch.next().status, Status::Loading);
        let count = Arc::clone(&hooks_run);
        job.on_cancel(move || {
            count.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
        cells.push((cell, watch));
        jobs.push(job);
    }

    drop(runtime);

    // Everything happened before the drop returned, on this thread in POLL
    // mode: no waiting, no dispatch.
    assert_eq!(hooks_run.load(Ordering::SeqCst), CELLS, "every running job's hooks ran ({delivery:?})");
    assert_eq!(dropped_rx.try_recv(), Ok(()), "the loader closure was dropped ({delivery:?})");
    for job in &jobs {
        assert!(job.is_cancelled());
        closed(job.succeed(b"late"));
        closed(job.on_cancel(|| {}));
    }
    for (cell, watch) in &mut cells {
        watch.expect_end();
        closed(cell.load(&loader, b""));
        closed(cell.get());
    }
    drop(cells);
    drop(loader);
    drop(jobs);
    assert_eq!(dropped_rx.try_recv(), Err(TryRecvError::Disconnected), "dropped exactly once");
    assert_eq!(hooks_run.load(Ordering::SeqCst), CELLS);
}

#[test]
fn a_loader_dropped_while_its_job_runs_is_freed_when_the_job_ends() {
    let runtime = Runtime::new().unwrap();
    let (dropped_tx, dropped_rx) = mpsc::channel();
    let guard = DropSignal(dropped_tx);
    let (jobs_tx, jobs_rx) = mpsc::channel::<Job>();
    let loader = runtime
        .loader(move |job| {
            let _owned = &guard;
            jobs_tx.send(job).unwrap();
        })
        .unwrap();
    let (cell, events) = runtime.loadable().unwrap();
    let mut watch = Watch::new(events);
    cell.load(&loader, b"").unwrap();
    watch.next();
    let job = jobs_rx.recv_timeout(DEADLINE).unwrap();
    drop(loader);

    // A round trip through the loop: the loader's free has been handled
    // by the time another cell's event arrives.
    let (other, other_events) = runtime.loadable().unwrap();
    other.set_loaded(b"barrier").unwrap();
    Watch::new(other_events).next();
    assert_eq!(dropped_rx.try_recv(), Err(TryRecvError::Empty), "kept while its job runs");

    job.succeed(b"done").unwrap();
    assert_eq!(watch.next().value.as_deref(), Some(&b"done"[..]));
    dropped_rx.recv_timeout(DEADLINE).expect("freed after its last job");
    drop(runtime);
    assert_eq!(dropped_rx.try_recv(), Err(TryRecvError::Disconnected), "dropped exactly once");
}

#[test]
fn a_loader_dropped_without_jobs_is_freed_and_refused_afterwards() {
    let runtime = Runtime::new().unwrap();
    let (dropped_tx, dropped_rx) = mpsc::channel();
    let guard = DropSignal(dropped_tx);
    let loader = runtime
        .loader(move |_job| {
            let _owned = &guard;
        })
        .unwrap();
    let other = runtime.loader(|job| job.finish().unwrap()).unwrap();
    let (cell, _events) = runtime.loadable().unwrap();
    let id = loader.id();
    drop(loader);
    dropped_rx.recv_timeout(DEADLINE).expect("the closure is dropped");
    // SAFETY: valid runtime handle; the id names the freed loader.
    let rc = unsafe {
        loadstate::sys::lds_loadable_load(runtime.as_ptr(), cell.id(), id, std::ptr::null(), 0, std::ptr::null())
    };
    assert_eq!(rc, loadstate::sys::LDS_ENOENT);
    cell.load(&other, b"").unwrap();
}

#[test]
fn cells_and_loaders_dropped_after_the_runtime_return_closed() {
    let runtime = Runtime::new().unwrap();
    let (loader, jobs) = job_queue(&runtime);
    let (cell, events) = runtime.loadable().unwrap();
    let (process, process_events) = runtime.process().unwrap();
    cell.load(&loader, b"").unwrap();
    let job = jobs.next();
    process.run(1, &loader, b"").unwrap();
    let process_job = jobs.next();
    drop(runtime);

    closed(cell.load(&loader, b""));
    closed(cell.refresh());
    closed(cell.cancel());
    closed(cell.reset());
    closed(cell.set_loaded(b""));
    closed(cell.set_error(1, None));
    closed(cell.get());
    closed(process.run(1, &loader, b""));
    closed(process.cancel());
    closed(job.yield_value(b""));
    closed(job.progress(0, 0));
    closed(job.finish());
    closed(job.fail(1, ""));
    closed(job.cancel_self());
    closed(job.reset_self());
    closed(process_job.succeed(b""));
    assert!(job.is_cancelled());
    Watch::new(events).expect_end();
    Watch::new(process_events).expect_end();
    drop(loader);
    drop(cell);
    drop(process);
}

#[test]
fn handles_dropped_before_the_runtime_leave_it_working() {
    let runtime = Runtime::new().unwrap();
    let (loader, jobs) = job_queue(&runtime);
    let (cell, events) = runtime.loadable().unwrap();
    cell.load(&loader, b"").unwrap();
    let job = jobs.next();
    let (tx, rx) = mpsc::channel();
    job.on_cancel(move || tx.send(()).unwrap()).unwrap();
    drop(cell);
    Watch::new(events).expect_end();
    rx.recv_timeout(DEADLINE).expect("freeing the cell cancels its job");
    assert_eq!(job.succeed(b"").unwrap_err().kind(), ErrorKind::Cancelled);
    drop(job);
    drop(loader);

    let (loader, jobs) = job_queue(&runtime);
    let (cell, events) = runtime.loadable().unwrap();
    let mut watch = Watch::new(events);
    cell.load(&loader, b"").unwrap();
    jobs.next().succeed(b"still works").unwrap();
    watch.next();
    assert_eq!(watch.next().value.as_deref(), Some(&b"still works"[..]));
}

#[test]
fn dropping_the_runtime_while_other_threads_call_it() {
    const THREADS: usize = 4;
    let runtime = Runtime::new().unwrap();
    let (loader, jobs) = job_queue(&runtime);
    let (cell, _events) = runtime.loadable().unwrap();
    cell.load(&loader, b"").unwrap();
    let job = jobs.next();
    let cell = Arc::new(cell);
    let started = Arc::new(Barrier::new(THREADS + 1));
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let (cell, job, started) = (Arc::clone(&cell), job.clone(), Arc::clone(&started));
            thread::spawn(move || {
                started.wait();
                let mut ok = 0u64;
                loop {
                    let result = if t % 2 == 0 { job.progress(ok, 0) } else { cell.get().map(|_| ()) };
                    match result {
                        Ok(()) => ok += 1,
                        Err(e) => {
                            assert_eq!(e.kind(), ErrorKind::Closed, "only Closed may appear");
                            break;
                        }
                    }
                }
                // Once closed, always closed.
                assert_eq!(cell.get().unwrap_err().kind(), ErrorKind::Closed);
                ok
            })
        })
        .collect();
    started.wait();
    drop(runtime);
    for worker in workers {
        worker.join().unwrap();
    }
}

#[test]
fn dropping_a_cell_inside_a_loader_closure() {
    let runtime = Runtime::new().unwrap();
    let doomed: Arc<Mutex<Option<Loadable>>> = Arc::default();
    let slot = Arc::clone(&doomed);
    let loader = runtime
        .loader(move |job| {
            drop(slot.lock().unwrap().take());
            job.succeed(b"").unwrap();
        })
        .unwrap();
    let (cell, cell_events) = runtime.loadable().unwrap();
    *doomed.lock().unwrap() = Some(cell);
    let (trigger, events) = runtime.loadable().unwrap();
    let mut watch = Watch::new(events);
    trigger.load(&loader, b"").unwrap();
    assert_eq!(watch.next().status, Status::Loading);
    assert_eq!(watch.next().status, Status::Loaded);
    Watch::new(cell_events).expect_end();
}

#[test]
fn dropping_the_last_runtime_handle_inside_a_callback_frees_it_on_another_thread() {
    let runtime = Arc::new(Runtime::new().unwrap());
    let slot: Arc<Mutex<Option<Arc<Runtime>>>> = Arc::new(Mutex::new(Some(Arc::clone(&runtime))));
    let (dropped_tx, dropped_rx) = mpsc::channel();
    let guard = DropSignal(dropped_tx);
    let loader = {
        let slot = Arc::clone(&slot);
        runtime
            .loader(move |_job| {
                let _owned = &guard;
                drop(slot.lock().unwrap().take());
            })
            .unwrap()
    };
    let (cell, events) = runtime.loadable().unwrap();
    drop(runtime);
    cell.load(&loader, b"").unwrap();
    dropped_rx.recv_timeout(DEADLINE).expect("the runtime is freed and drops the loader closure");
    Watch::new(events).expect_end();
    closed(cell.get());
}

#[test]
fn dropping_many_cells_from_other_threads_in_both_delivery_modes() {
    for delivery in [Delivery::Loop, Delivery::Poll] {
        let runtime = Runtime::with_delivery(delivery).unwrap();
        let (loader, _jobs) = job_queue(&runtime);
        let cells: Vec<_> = (0..200)
            .map(|i| {
                let (cell, events) = runtime.loadable().unwrap();
                cell.set_loaded(format!("{i}").as_bytes()).unwrap();
                if i % 2 == 0 {
                    cell.load(&loader, b"").unwrap();
                }
                (cell, events)
            })
            .collect();
        let dropper = thread::spawn(move || {
            for (cell, events) in cells {
                drop(cell);
                // Every stream ends once its cell is gone.
                while events.recv_timeout(DEADLINE).is_ok() {}
            }
        });
        if delivery == Delivery::Poll {
            while !dropper.is_finished() {
                runtime.dispatch(0).unwrap();
                thread::yield_now();
            }
        }
        dropper.join().unwrap();
        if delivery == Delivery::Poll {
            runtime.dispatch(0).unwrap();
        }
        let (cell, events) = runtime.loadable().unwrap();
        cell.set_loaded(b"after").unwrap();
        if delivery == Delivery::Poll {
            assert_eq!(dispatch_until_event(&runtime, &events).value.as_deref(), Some(&b"after"[..]));
        } else {
            assert_eq!(Watch::new(events).next().value.as_deref(), Some(&b"after"[..]));
        }
    }
}

#[test]
fn a_stream_ends_when_its_cell_is_dropped_even_before_a_dispatch() {
    let runtime = Runtime::with_delivery(Delivery::Poll).unwrap();
    let (cell, events) = runtime.loadable().unwrap();
    cell.set_loaded(b"queued").unwrap();
    assert_eq!(dispatch_until_event(&runtime, &events).value.as_deref(), Some(&b"queued"[..]));
    cell.set_loaded(b"never delivered").unwrap();
    drop(cell);
    assert_eq!(events.try_recv().unwrap_err(), TryRecvError::Disconnected);
    runtime.dispatch(0).unwrap();
}
