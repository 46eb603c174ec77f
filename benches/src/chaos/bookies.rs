//! The bookies of a drill: bookie-rs processes `bkchaos` starts, each on its own directories
//! and ports, which the schedule kills, stops, restarts and injects faults into (through the
//! admin API of docs/chaos.md §3). Standalone, or registered in the drill's ZooKeeper
//! (`zookeeper = true`, zookeeper.rs) as `127.0.0.1:<port>`.
//!
//! Invariants:
//! - A bookie keeps its port, admin port and directories across restarts, so clients
//!   reconnect to the same address and a restart sees what the previous process left.
//! - Every start appends to `<dir>/bookie-N.log`; a bookie's core dumps are off (a power cut
//!   aborts it on purpose).
//! - Nothing here waits without a deadline.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How long a start may take until the bookie serves.
const START_DEADLINE: Duration = Duration::from_secs(60);

/// One bookie process and what it needs to be started again.
pub struct Bookie {
    pub index: usize,
    pub port: u16,
    pub http_port: u16,
    data: PathBuf,
    log: PathBuf,
    child: Option<Child>,
    /// SIGSTOPped and not yet continued.
    pub stopped: bool,
    /// The last exit seen (kill, power cut, crash).
    pub last_exit: Option<ExitStatus>,
}

/// Everything needed to start a bookie.
pub struct StartConfig {
    pub bin: PathBuf,
    pub chaos: bool,
    pub sets: Vec<String>,
    /// The drill's ZooKeeper (`metadataServiceUri`); None: standalone.
    pub metadata_service_uri: Option<String>,
}

/// A free TCP port on loopback (bound, then released).
pub(crate) fn free_port() -> Result<u16, String> {
    let l =
        TcpListener::bind("127.0.0.1:0").map_err(|e| format!("cannot find a free port: {e}"))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("cannot find a free port: {e}"))
}

impl Bookie {
    /// A bookie with data under `dir/bookie-<index>` and fresh ports; not started.
    pub fn new(dir: &Path, index: usize) -> Result<Bookie, String> {
        let data = dir.join(format!("bookie-{index}"));
        std::fs::create_dir_all(&data)
            .map_err(|e| format!("cannot create {}: {e}", data.display()))?;
        Ok(Bookie {
            index,
            port: free_port()?,
            http_port: free_port()?,
            log: dir.join(format!("bookie-{index}.log")),
            data,
            child: None,
            stopped: false,
            last_exit: None,
        })
    }

    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The id it registers with (advertisedAddress=127.0.0.1): its address.
    pub fn bookie_id(&self) -> String {
        self.addr()
    }

    fn admin_addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.http_port))
    }

    /// Starts the process (it must not be running).
    pub fn start(&mut self, cfg: &StartConfig) -> Result<(), String> {
        use std::os::unix::process::CommandExt;
        if self.is_running() {
            return Err(format!("bookie {} is already running", self.index));
        }
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|e| format!("cannot open {}: {e}", self.log.display()))?;
        let err_log = log
            .try_clone()
            .map_err(|e| format!("{}: {e}", self.log.display()))?;
        let mut cmd = Command::new(&cfg.bin);
        match &cfg.metadata_service_uri {
            None => {
                cmd.arg("--standalone");
            }
            Some(uri) => {
                cmd.args(["--metadata-service-uri", uri])
                    .args(["--set", "advertisedAddress=127.0.0.1"])
                    .args(["--set", "allowLoopback=true"]);
            }
        }
        cmd.arg("--data-dir")
            .arg(&self.data)
            .args(["--port", &self.port.to_string()])
            .args(["--set", "httpServerEnabled=true"])
            .args(["--set", "httpServerHost=127.0.0.1"])
            .args(["--set", &format!("httpServerPort={}", self.http_port)])
            .args(["--set", &format!("chaosEnabled={}", cfg.chaos)])
            .args(cfg.sets.iter().flat_map(|kv| ["--set", kv.as_str()]))
            .env(
                "RUST_LOG",
                std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(err_log));
        // SAFETY: setrlimit is async-signal-safe; a power cut aborts the bookie on purpose and
        // its core file is of no use.
        unsafe {
            cmd.pre_exec(|| {
                let none = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                libc::setrlimit(libc::RLIMIT_CORE, &none);
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", cfg.bin.display()))?;
        self.child = Some(child);
        self.stopped = false;
        Ok(())
    }

    /// Whether the process is alive (a stopped one is alive).
    pub fn is_running(&mut self) -> bool {
        let Some(child) = self.child.as_mut() else {
            return false;
        };
        match child.try_wait() {
            Ok(None) => true,
            Ok(Some(status)) => {
                self.last_exit = Some(status);
                self.child = None;
                self.stopped = false;
                false
            }
            Err(_) => false,
        }
    }

    /// Sends `sig` to the process, if running.
    pub fn signal(&mut self, sig: i32) -> Result<(), String> {
        if !self.is_running() {
            return Err(format!("bookie {} is not running", self.index));
        }
        let pid = self.child.as_ref().map(|c| c.id()).unwrap_or_default() as i32;
        // SAFETY: kill(2) on our own child's pid, which try_wait just saw alive.
        if unsafe { libc::kill(pid, sig) } != 0 {
            return Err(format!(
                "kill({pid}, {sig}): {}",
                std::io::Error::last_os_error()
            ));
        }
        match sig {
            libc::SIGSTOP => self.stopped = true,
            libc::SIGCONT => self.stopped = false,
            _ => {}
        }
        Ok(())
    }

    /// SIGKILL (continuing a stopped process first is not needed) and wait for the exit.
    pub fn kill(&mut self) -> Result<(), String> {
        self.signal(libc::SIGKILL)?;
        self.wait_exit(Duration::from_secs(10))
            .map(|_| ())
            .ok_or_else(|| format!("bookie {} did not exit 10 s after SIGKILL", self.index))
    }

    /// Waits up to `limit` for the process to exit; its status, or None if still running.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            if !self.is_running() {
                return self.last_exit;
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until the bookie port accepts and the admin API answers; Err if the process
    /// exited or the deadline passed.
    pub fn wait_serving(&mut self) -> Result<Duration, String> {
        let started = Instant::now();
        loop {
            if !self.is_running() {
                return Err(format!(
                    "bookie {} exited while starting ({}); its log: {}",
                    self.index,
                    self.last_exit.map(|s| s.to_string()).unwrap_or_default(),
                    self.log.display()
                ));
            }
            let port_open = TcpStream::connect_timeout(
                &SocketAddr::from(([127, 0, 0, 1], self.port)),
                Duration::from_millis(500),
            )
            .is_ok();
            if port_open && self.admin("GET", "/api/v1/bookie/state", "").is_ok() {
                return Ok(started.elapsed());
            }
            if started.elapsed() > START_DEADLINE {
                return Err(format!(
                    "bookie {} did not serve within {START_DEADLINE:?}; its log: {}",
                    self.index,
                    self.log.display()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// One admin request: (status, body).
    pub fn admin(&self, method: &str, path: &str, body: &str) -> Result<(u16, String), String> {
        http(self.admin_addr(), method, path, body)
    }

    /// The last lines of the bookie's log, for error messages.
    pub fn log_tail(&self, lines: usize) -> String {
        let mut text = String::new();
        if let Ok(mut f) = File::open(&self.log) {
            let _ = f.read_to_string(&mut text);
        }
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

impl Drop for Bookie {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A minimal HTTP/1.1 request (Connection: close), 20 s limit.
fn http(addr: SocketAddr, method: &str, path: &str, body: &str) -> Result<(u16, String), String> {
    let what = format!("{method} http://{addr}{path}");
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))
        .map_err(|e| format!("{what}: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(20)))
        .map_err(|e| format!("{what}: {e}"))?;
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: bookie\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes())
        .map_err(|e| format!("{what}: {e}"))?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf)
        .map_err(|e| format!("{what}: {e}"))?;
    let text = String::from_utf8_lossy(&buf).to_string();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("{what}: no HTTP answer"))?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("{what}: bad status line"))?;
    Ok((status, body.to_string()))
}
