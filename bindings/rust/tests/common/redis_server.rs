//! A real redis-server for the tests: on 127.0.0.1, a free port and its own
//! temporary folder, never 6379. Installed with apt-get (as the Makefile
//! installs what it needs) when missing; the test fails saying why when
//! that fails.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const STARTUP: Duration = Duration::from_secs(10);

/// A reply of redis-server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Status(String),
    Integer(i64),
    Bulk(Option<Vec<u8>>),
    Array(Vec<Reply>),
}

/// One redis-server process; killed and its folder removed when dropped.
pub struct RedisServer {
    program: PathBuf,
    folder: PathBuf,
    pub port: u16,
    pub url: String,
    child: Option<Child>,
    started_once: bool,
}

/// The redis-server program, installed from Debian's package when missing.
fn program() -> PathBuf {
    static INSTALL: Mutex<()> = Mutex::new(());
    let _once = INSTALL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let find = || {
        std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path).map(|dir| dir.join("redis-server")).find(|file| file.is_file())
        })
    };
    if let Some(found) = find() {
        return found;
    }
    let root = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout == b"0\n");
    for args in [&["apt-get", "update", "-qq"][..], &["apt-get", "install", "-y", "-qq", "redis-server"][..]] {
        let mut command = if root { Command::new(args[0]) } else { Command::new("sudo") };
        if !root {
            command.arg(args[0]);
        }
        let output = command
            .args(&args[1..])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .output()
            .unwrap_or_else(|e| panic!("redis-server is missing and {args:?} could not run: {e}"));
        assert!(
            output.status.success(),
            "redis-server is missing and {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    find().expect("redis-server is still missing after apt-get install redis-server")
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl RedisServer {
    /// A started server.
    pub fn new() -> RedisServer {
        let port = free_port();
        let folder = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("redis-{}-{port}", std::process::id()));
        let _ = std::fs::remove_dir_all(&folder);
        std::fs::create_dir_all(&folder).unwrap();
        let mut server = RedisServer {
            program: program(),
            folder,
            port,
            url: format!("redis://127.0.0.1:{port}/0"),
            child: None,
            started_once: false,
        };
        server.start();
        server
    }

    /// Starts the server (again) on its port; returns once it answers as
    /// the process started. The first start takes another free port when
    /// the one chosen was taken meanwhile (by a server of another test,
    /// which would otherwise answer in its place).
    pub fn start(&mut self) {
        assert!(self.child.is_none(), "the server runs already");
        for _ in 0..10 {
            if self.start_once() {
                self.started_once = true;
                return;
            }
            if self.started_once {
                break;
            }
            self.port = free_port();
            self.url = format!("redis://127.0.0.1:{}/0", self.port);
        }
        let text = std::fs::read_to_string(self.folder.join("redis.log")).unwrap_or_default();
        panic!("redis-server did not start on port {}:\n{text}", self.port);
    }

    /// One start on `self.port`: whether this process answers there.
    fn start_once(&mut self) -> bool {
        let child = Command::new(&self.program)
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string(), "--save", "", "--appendonly", "no"])
            .args(["--daemonize", "no", "--dir"])
            .arg(&self.folder)
            .arg("--logfile")
            .arg(self.folder.join("redis.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", self.program.display()));
        let ours = format!("process_id:{}\r\n", child.id());
        self.child = Some(child);
        let deadline = Instant::now() + STARTUP;
        while Instant::now() < deadline && self.child.as_mut().unwrap().try_wait().unwrap().is_none() {
            if let Ok(Reply::Bulk(Some(info))) = self.try_command(&["INFO", "server"]) {
                if String::from_utf8_lossy(&info).contains(&ours) {
                    return true;
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.end("-KILL");
        false
    }

    /// Stops the server with SIGTERM and waits for it to exit.
    pub fn stop(&mut self) {
        self.end("-TERM");
    }

    /// Kills the server with SIGKILL and waits for it to exit.
    pub fn kill(&mut self) {
        self.end("-KILL");
    }

    fn end(&mut self, signal: &str) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill").arg(signal).arg(child.id().to_string()).status();
            child.wait().unwrap();
        }
    }

    /// Sends one command on a new connection; panics on an error reply.
    pub fn command(&self, args: &[&str]) -> Reply {
        self.try_command(args).unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    /// The Redis keys of the entries under `prefix` (the names with the
    /// entry mark after their hash tag), sorted.
    pub fn entry_names(&self, prefix: &str) -> Vec<Vec<u8>> {
        let mut names = self.keys(&format!("{prefix}*"));
        names.retain(|k| k.windows(3).any(|w| w == b"}v:"));
        names
    }

    /// The keys that match `pattern`, sorted.
    pub fn keys(&self, pattern: &str) -> Vec<Vec<u8>> {
        let Reply::Array(items) = self.command(&["KEYS", pattern]) else { panic!("KEYS answers an array") };
        let mut keys: Vec<Vec<u8>> =
            items.into_iter().map(|item| if let Reply::Bulk(Some(key)) = item { key } else { panic!() }).collect();
        keys.sort();
        keys
    }

    fn try_command(&self, args: &[&str]) -> Result<Reply, String> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).map_err(|e| e.to_string())?;
        stream.set_read_timeout(Some(STARTUP)).unwrap();
        let mut request = format!("*{}\r\n", args.len()).into_bytes();
        for arg in args {
            request.extend_from_slice(format!("${}\r\n{arg}\r\n", arg.len()).as_bytes());
        }
        stream.write_all(&request).map_err(|e| e.to_string())?;
        read_reply(&mut BufReader::new(stream))
    }
}

fn read_reply(reader: &mut BufReader<TcpStream>) -> Result<Reply, String> {
    let mut line = String::new();
    reader.read_line(&mut line).map_err(|e| e.to_string())?;
    let rest = line.get(1..line.len().saturating_sub(2)).ok_or("the connection closed")?.to_owned();
    match line.as_bytes().first() {
        Some(b'+') => Ok(Reply::Status(rest)),
        Some(b'-') => Err(rest),
        Some(b':') => Ok(Reply::Integer(rest.parse().unwrap())),
        Some(b'$') => {
            let Ok(length) = usize::try_from(rest.parse::<i64>().unwrap()) else { return Ok(Reply::Bulk(None)) };
            let mut data = vec![0; length + 2];
            reader.read_exact(&mut data).map_err(|e| e.to_string())?;
            data.truncate(length);
            Ok(Reply::Bulk(Some(data)))
        }
        Some(b'*') => {
            let count: i64 = rest.parse().unwrap();
            (0..count.max(0)).map(|_| read_reply(reader)).collect::<Result<_, _>>().map(Reply::Array)
        }
        _ => Err(format!("unexpected reply {line:?}")),
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.folder);
    }
}

/// The Redis key under which a cache with `prefix` keeps `key`'s entry
/// (mark `"v:"`) or lease (`"l:"`): the prefix, a hash tag of three hex
/// digits computed from the key (FNV-1a folded to 12 bits), the mark, the key.
#[allow(dead_code)]
pub fn redis_name(prefix: &str, mark: &str, key: &str) -> Vec<u8> {
    let mut h: u32 = 2_166_136_261;
    for b in key.bytes() {
        h = (h ^ u32::from(b)).wrapping_mul(16_777_619);
    }
    let tag = (h ^ (h >> 12) ^ (h >> 24)) & 0xfff;
    format!("{prefix}{{{tag:03x}}}{mark}{key}").into_bytes()
}
