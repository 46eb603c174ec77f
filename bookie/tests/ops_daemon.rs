//! The `bookie` binary's daemon habits (issue 12): `--version`; no ANSI escape bytes in a log
//! redirected to a file; `--log-format json` / `BOOKIE_LOG_FORMAT=json` lines that parse; no
//! warning about its own `journal/current/VERSION` on a second start; listening dual-stack
//! (127.0.0.1 and ::1 both connect); and the bookie-id refusals Java makes, naming the keys.
//! Standalone bookies only: no ZooKeeper needed.

// Test code reads log files and sets up directories directly (clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod host_disk;
mod ports;
use ports::free_port;

fn bookie() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_bookie"));
    c.env_remove("BOOKIE_LOG_FORMAT").env_remove("NO_COLOR");
    c
}

/// A standalone bookie on `data`, its stdout (the log) into `log`.
fn start(data: &Path, port: u16, log: &Path, extra: &[&str], env: &[(&str, &str)]) -> Child {
    let file = std::fs::File::create(log).unwrap();
    bookie()
        .args(["--standalone", "--data-dir"])
        .arg(data)
        .args(["--port", &port.to_string()])
        .args(["--metrics-port", &free_port().to_string()])
        .args([
            "--set",
            "dbStorage_writeCacheMaxSizeMb=16",
            "--set",
            "dbStorage_readAheadCacheMaxSizeMb=8",
        ])
        .args(host_disk::ARGS)
        .args(extra)
        .envs(env.iter().copied())
        .env("RUST_LOG", "info")
        .stdout(Stdio::from(file))
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn bookie")
}

fn read(log: &Path) -> String {
    String::from_utf8_lossy(&std::fs::read(log).unwrap_or_default()).into_owned()
}

fn wait_ready(child: &mut Child, log: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !read(log).contains("bookie ready") {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("bookie exited early ({status}):\n{}", read(log));
        }
        assert!(
            Instant::now() < deadline,
            "not ready in 60 s:\n{}",
            read(log)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn stop(child: &mut Child) {
    // SAFETY: plain kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert!(status.success(), "clean SIGTERM exit: {status}");
}

#[test]
fn version_prints_version_and_commit() {
    let out = bookie().arg("--version").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let prefix = format!("bookie {} (git ", env!("CARGO_PKG_VERSION"));
    let commit = text
        .trim_end()
        .strip_prefix(&prefix)
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or_else(|| panic!("unexpected --version output {text:?}"));
    assert!(
        commit == "unknown"
            || (commit.len() == 12 && commit.bytes().all(|b| b.is_ascii_hexdigit())),
        "commit {commit:?}"
    );
}

#[test]
fn text_log_to_a_file_has_no_escapes_and_no_warning_about_our_version_file() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let log1 = dir.path().join("first.log");
    let log2 = dir.path().join("second.log");
    let data = dir.path().join("data");
    let mut b = start(&data, port, &log1, &[], &[]);
    wait_ready(&mut b, &log1);
    // Dual-stack: both loopbacks reach the one listener (Java's wildcard bind).
    for addr in ["127.0.0.1", "::1"] {
        let a = std::net::SocketAddr::new(addr.parse().unwrap(), port);
        std::net::TcpStream::connect_timeout(&a, Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("connect {a}: {e}"));
    }
    stop(&mut b);
    assert!(
        data.join("journal/current/VERSION").exists(),
        "the cookie is there"
    );
    let mut b = start(&data, port, &log2, &[], &[]);
    wait_ready(&mut b, &log2);
    stop(&mut b);
    for log in [&log1, &log2] {
        let text = read(log);
        assert!(
            !text.contains('\u{1b}'),
            "ESC byte in {}:\n{text}",
            log.display()
        );
        assert!(
            text.contains(&format!("bookie-rs {}", env!("CARGO_PKG_VERSION"))),
            "version logged at start:\n{text}"
        );
    }
    let second = read(&log2);
    let warned: Vec<&str> = second
        .lines()
        .filter(|l| l.contains("WARN") && (l.contains("VERSION") || l.contains("unknown file")))
        .collect();
    assert!(warned.is_empty(), "warned about our own files: {warned:?}");
}

#[test]
fn json_log_lines_parse() {
    let dir = tempfile::tempdir().unwrap();
    for (i, (extra, env)) in [
        (&["--log-format", "json"][..], &[][..]),
        (&[][..], &[("BOOKIE_LOG_FORMAT", "json")][..]),
    ]
    .into_iter()
    .enumerate()
    {
        let log = dir.path().join(format!("{i}.log"));
        let data = dir.path().join(format!("data{i}"));
        let mut b = start(&data, free_port(), &log, extra, env);
        wait_ready(&mut b, &log);
        stop(&mut b);
        let text = read(&log);
        let mut messages = Vec::new();
        for line in text.lines() {
            let v: serde_json::Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
            assert!(
                v["level"].is_string() && v["timestamp"].is_string(),
                "{line}"
            );
            messages.push(v["message"].as_str().unwrap_or_default().to_string());
            if v["message"] == "starting bookie" {
                assert!(v["bookie_id"].is_string(), "fields at top level: {line}");
            }
        }
        assert!(messages.iter().any(|m| m == "bookie ready"), "{text}");
        assert!(
            messages.iter().any(|m| m.starts_with("bookie-rs ")),
            "{text}"
        );
    }
    let bad = bookie()
        .args(["--log-format", "xml", "--standalone"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--log-format"));
}

/// A cluster configuration (ZooKeeper at a closed port: the id is derived, and refused,
/// before any connection).
fn cluster_conf(dir: &Path, extra: &str) -> std::path::PathBuf {
    let conf = dir.join("bk_server.conf");
    std::fs::write(
        &conf,
        format!(
            "bookiePort={}\njournalDirectories={}\nledgerDirectories={}\n\
             metadataServiceUri=zk+hierarchical://127.0.0.1:1/ledgers\nzkTimeout=2000\n{extra}",
            free_port(),
            dir.join("journal").display(),
            dir.join("ledgers").display(),
        ),
    )
    .unwrap();
    conf
}

fn refused(conf: &Path) -> String {
    let out = bookie().arg("--conf").arg(conf).output().unwrap();
    assert!(!out.status.success(), "must refuse to start");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn a_listening_interface_that_is_no_interface_is_refused_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    for iface in ["no-such-if0", "127.0.0.1"] {
        let text = refused(&cluster_conf(
            dir.path(),
            &format!("listeningInterface={iface}\nallowLoopback=true\n"),
        ));
        assert!(
            text.contains(&format!(
                "listeningInterface={iface}: no such network interface"
            )),
            "{text}"
        );
    }
}

#[test]
fn a_host_name_on_loopback_is_refused_as_java_refuses_it() {
    let host = {
        let mut buf = [0u8; 256];
        // SAFETY: buf is writable for its length.
        assert_eq!(
            unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) },
            0
        );
        let end = buf.iter().position(|&b| b == 0).unwrap();
        String::from_utf8_lossy(&buf[..end]).into_owned()
    };
    use std::net::ToSocketAddrs;
    let first_v4 = (host.as_str(), 0)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.find(|a| a.is_ipv4()));
    if !first_v4.is_some_and(|a| a.ip().is_loopback()) {
        println!("host name {host} does not resolve to loopback here ({first_v4:?}): this host cannot show the refusal; the fake-host unit tests cover it");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let text = refused(&cluster_conf(dir.path(), ""));
    for key in ["loopback", "advertisedAddress", "allowLoopback"] {
        assert!(text.contains(key), "names {key}: {text}");
    }
}
