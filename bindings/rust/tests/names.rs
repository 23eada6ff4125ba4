//! Names of loaders and cells: checked when given, kept by the handles,
//! shown by the metrics text (escaped) and the inspector's snapshot.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::Watch;
use loadstate::{
    ErrorKind, ExecOptions, FileOptions, HttpOptions, InspectorOptions, Limits, NAME_MAX, Runtime, Status,
};

fn echo(runtime: &Runtime, name: &str) -> loadstate::Loader {
    runtime
        .named_loader(name, Limits::new(), |job| {
            let request = job.request().to_vec();
            job.succeed(&request).unwrap();
        })
        .unwrap()
}

#[test]
fn names_are_checked_and_kept() {
    let runtime = Runtime::new().unwrap();
    let longest = "n".repeat(NAME_MAX);
    assert_eq!(echo(&runtime, &longest).name(), Some(longest.as_str()));
    for bad in ["n".repeat(NAME_MAX + 1), "a\nb".into(), "nul\0".into(), "c1\u{85}".into()] {
        let err = runtime.named_loader(&bad, Limits::new(), |_| {}).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{bad:?}");
        assert_eq!(runtime.named_loadable(&bad).unwrap_err().kind(), ErrorKind::InvalidArgument);
        let err = runtime.file_loader(&FileOptions::new().name(bad.clone())).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    }
    assert_eq!(echo(&runtime, "").name(), None);
    assert_eq!(runtime.loader(|_| {}).unwrap().name(), None);
    assert_eq!(runtime.named_loadable("profile").unwrap().0.name(), Some("profile"));
    assert_eq!(runtime.named_process("save").unwrap().0.name(), Some("save"));
    assert_eq!(runtime.loadable().unwrap().0.name(), None);
    assert_eq!(runtime.exec_loader(&ExecOptions::new().name("cmds")).unwrap().name(), Some("cmds"));
    assert_eq!(runtime.http_loader(&HttpOptions::new().name("api")).unwrap().name(), Some("api"));
}

#[test]
fn the_metrics_text_labels_loaders_by_name_escaped() {
    let runtime = Runtime::new().unwrap();
    let quoted = echo(&runtime, "say \"hi\" \\ caf\u{e9}");
    let twins = [echo(&runtime, "twin"), echo(&runtime, "twin")];
    let plain = runtime.loader(|job| job.succeed(b"p").unwrap()).unwrap();
    let (cell, events) = runtime.named_loadable("cell").unwrap();
    let mut watch = Watch::new(events);
    for loader in [&quoted, &twins[0], &twins[1], &twins[1], &plain] {
        cell.load(loader, b"r").unwrap();
        assert_eq!(watch.wait_settled().status, Status::Loaded);
    }
    let text = runtime.metrics_text().unwrap();
    assert!(text.contains("\nloadstate_loads_started_total{loader=\"say \\\"hi\\\" \\\\ caf\u{e9}\"} 1\n"), "{text}");
    assert_eq!(text.matches("\nloadstate_loads_started_total{loader=\"twin\"} 3\n").count(), 1, "{text}");
    assert!(text.contains(&format!("\nloadstate_loads_started_total{{loader=\"{}\"}} 1\n", plain.id())));
    assert!(!text.contains(&format!("loader=\"{}\"", twins[0].id())));
}

#[test]
fn the_inspector_snapshot_names_cells_and_loaders() {
    let runtime = Runtime::new().unwrap();
    let loader = echo(&runtime, "users <v2>");
    let (cell, events) = runtime.named_loadable("profile").unwrap();
    let mut watch = Watch::new(events);
    cell.load(&loader, b"r").unwrap();
    assert_eq!(watch.wait_settled().status, Status::Loaded);
    let url = runtime.start_inspector("127.0.0.1:0", &InspectorOptions::new()).unwrap();
    let rest = url.strip_prefix("http://127.0.0.1:").unwrap();
    let (port, token) = rest.split_once("/?token=").unwrap();
    let port: u16 = port.parse().unwrap();
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(stream, "GET /snapshot?token={token} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n").unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
    assert!(answer.contains(&format!("{{\"id\":{},\"name\":\"profile\"", cell.id())), "{answer}");
    // Markup is escaped in the JSON.
    assert!(answer.contains(&format!("{{\"id\":{},\"name\":\"users \\u003cv2\\u003e\"", loader.id())), "{answer}");
}
