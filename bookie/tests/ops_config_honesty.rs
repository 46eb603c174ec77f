//! Stock keys through the real `bookie` binary (docs/config.md §5): a key that is set but
//! has no effect is named at start-up in one line with its reason, and
//! `persistBookieStatusEnabled=true` keeps a read-only state set through the admin API
//! (`PUT /api/v1/bookie/state/readonly`) across a restart, in Java's `BOOKIE_STATUS` file.
//! Standalone bookies: no ZooKeeper needed.

// Test code sets up and inspects real directories directly; only production code is bound
// by ARCHITECTURE.md invariant 1 (see clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod host_disk;
mod ports;
use ports::free_port;

/// One HTTP/1.1 request; `None` when the connection is refused or fails.
fn http(addr: SocketAddr, method: &str, path: &str, body: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(20))).ok()?;
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: bookie\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).ok()?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf).to_string();
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, body.to_string()))
}

/// A standalone bookie with the admin API on; its log (stdout) is collected.
struct Bookie {
    child: Child,
    admin: SocketAddr,
    log: Arc<Mutex<String>>,
}

impl Bookie {
    /// `port`: the bookie port, the same across restarts of one bookie (it is in the id).
    fn spawn(data: &Path, port: u16, extra: &[&str]) -> Bookie {
        let http_port = free_port();
        let mut child = Command::new(env!("CARGO_BIN_EXE_bookie"))
            .args(host_disk::ARGS)
            .args(["--standalone", "--data-dir"])
            .arg(data)
            .args(["--port", &port.to_string()])
            .args([
                "--set",
                "httpServerEnabled=true",
                "--set",
                "httpServerHost=127.0.0.1",
            ])
            .args(["--set", &format!("httpServerPort={http_port}")])
            .args(extra)
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn bookie");
        let log = Arc::new(Mutex::new(String::new()));
        let stdout = child.stdout.take().unwrap();
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let mut l = sink.lock().unwrap();
                l.push_str(&line);
                l.push('\n');
            }
        });
        Bookie {
            child,
            admin: SocketAddr::from(([127, 0, 0, 1], http_port)),
            log,
        }
    }

    /// Waits until `is_ready` answers 200 (storage open, port serving).
    fn wait_ready(&mut self) {
        let start = Instant::now();
        while http(self.admin, "GET", "/api/v1/bookie/is_ready", "").map(|r| r.0) != Some(200) {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("bookie exited early: {status}\n{}", self.log());
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "bookie never ready\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn read_only(&self) -> bool {
        let (status, body) = http(self.admin, "GET", "/api/v1/bookie/state", "").unwrap();
        assert_eq!(status, 200, "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        v["readOnly"].as_bool().unwrap_or_else(|| panic!("{body}"))
    }

    fn set_read_only(&self, on: bool) {
        let (status, body) = http(
            self.admin,
            "PUT",
            "/api/v1/bookie/state/readonly",
            &format!(r#"{{"readOnly":{on}}}"#),
        )
        .unwrap();
        assert_eq!(status, 200, "{body}");
        assert!(self.read_only() == on, "PUT readOnly={on}: {body}");
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// SIGTERM, then waits for a clean exit.
    fn stop(mut self) {
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "exit {status}\n{}", self.log());
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "bookie did not stop on SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Bookie {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts, checks the read-only state after a restart, for `persist` on or off.
fn read_only_after_restart(persist: bool) -> bool {
    let tmp = tempfile::tempdir().unwrap();
    let key = format!("persistBookieStatusEnabled={persist}");
    let args = ["--set", key.as_str()];
    let port = free_port();
    let mut b = Bookie::spawn(tmp.path(), port, &args);
    b.wait_ready();
    assert!(!b.read_only(), "a new bookie is writable");
    b.set_read_only(true);
    b.stop();
    let mut b = Bookie::spawn(tmp.path(), port, &args);
    b.wait_ready();
    let read_only = b.read_only();
    if persist {
        let status = std::fs::read_to_string(tmp.path().join("ledgers/current/BOOKIE_STATUS"))
            .expect("BOOKIE_STATUS in the ledger directory's current/");
        assert!(
            status.starts_with("1,READ_ONLY,") && status.ends_with(",true\n"),
            "Java's format: {status:?}"
        );
        // Made writable by the operator, it stays writable after the next restart.
        b.set_read_only(false);
        b.stop();
        let mut b = Bookie::spawn(tmp.path(), port, &args);
        b.wait_ready();
        assert!(
            !b.read_only(),
            "writable again after a restart\n{}",
            b.log()
        );
        b.stop();
    } else {
        b.stop();
    }
    read_only
}

#[test]
fn persist_bookie_status_keeps_a_manual_read_only_state_across_restart() {
    assert!(
        read_only_after_restart(true),
        "persistBookieStatusEnabled=true: read-only after restart"
    );
    assert!(
        !read_only_after_restart(false),
        "persistBookieStatusEnabled=false (Java's default): writable after restart"
    );
}

#[test]
fn a_key_set_without_effect_is_named_once_at_start_up_with_its_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let mut b = Bookie::spawn(
        tmp.path(),
        free_port(),
        &[
            "--set",
            "numAddWorkerThreads=4",
            "--set",
            "httpServerTrustStorePassword=secret",
        ],
    );
    b.wait_ready();
    let log = b.log();
    b.stop();
    let line =
        "config: numAddWorkerThreads has no effect in bookie-rs: adds run on the async runtime";
    assert_eq!(log.matches(line).count(), 1, "{log}");
    assert_eq!(
        log.matches(
            "config: httpServerTrustStorePassword has no effect in bookie-rs: never read, as in Java"
        )
        .count(),
        1,
        "{log}"
    );
    assert!(!log.contains("unknown config key"), "{log}");
}
