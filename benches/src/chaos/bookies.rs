//! The bookies of a drill: processes `bkchaos` starts, each on its own directories and ports,
//! which the schedule kills, stops, restarts and injects faults into (through the admin API of
//! docs/chaos.md §3). bookie-rs bookies run standalone, or registered in the drill's ZooKeeper
//! (`zookeeper = true`, zookeeper.rs) as `127.0.0.1:<port>`; stock Java bookies (`--impl
//! java`, the reference for the side-by-side table) always register there, have no chaos
//! layer and no admin API here, and are started from a `bk_server.conf` written per start.
//! An attached bookie (`--attach`, a running bookie of another cluster) is only an address
//! and an admin address: bkchaos never starts, signals or stops it.
//!
//! Invariants:
//! - A bookie keeps its port, admin port and directories across restarts, so clients
//!   reconnect to the same address and a restart sees what the previous process left.
//! - Every start appends to `<dir>/bookie-N.log`; a bookie's core dumps are off (a power cut
//!   aborts it on purpose).
//! - Nothing here waits without a deadline.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::filesystem::LoopFilesystem;
use crate::ports::free_port;

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
    /// Of the last start.
    implementation: Implementation,
    /// The ZooKeeper session its registration had after its last start (mod.rs
    /// `wait_ready`).
    pub registered_owner: Option<i64>,
    /// Its own filesystem on `data` (drill key `filesystem =`); unmounted when dropped,
    /// after `Drop` killed the process.
    filesystem: Option<LoopFilesystem>,
    /// A bookie bkchaos did not start (`--attach`): never started, signalled or waited for
    /// as a process; only its ports are used.
    attached: Option<Attached>,
}

/// A running bookie of someone else's cluster, given by `--attach ADDR[=ADMIN]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attached {
    /// Its bookie address, `host:port`: the load connects there.
    pub addr: String,
    /// Its admin HTTP address, `host:port` (the chaos API of docs/chaos.md §3); None: no
    /// admin requests (a drill with `chaos = true` needs it).
    pub admin: Option<String>,
}

impl Attached {
    /// Parses one `ADDR[=ADMIN]` of `--attach`.
    pub fn parse(text: &str) -> Result<Attached, String> {
        let (addr, admin) = match text.split_once('=') {
            Some((a, m)) => (a.trim(), Some(m.trim())),
            None => (text.trim(), None),
        };
        let valid = |a: &str| {
            a.rsplit_once(':')
                .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok_and(|p| p > 0))
        };
        if !valid(addr) || admin.is_some_and(|m| !valid(m)) {
            return Err(format!(
                "--attach expects host:port[=adminhost:adminport] per bookie, got '{text}'"
            ));
        }
        Ok(Attached {
            addr: addr.to_string(),
            admin: admin.map(str::to_string),
        })
    }
}

fn resolve(addr: &str) -> Result<SocketAddr, String> {
    use std::net::ToSocketAddrs;
    addr.to_socket_addrs()
        .map_err(|e| format!("cannot resolve {addr}: {e}"))?
        .next()
        .ok_or_else(|| format!("{addr} resolves to no address"))
}

/// Which bookie a drill runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Implementation {
    /// bookie-rs (`--bookie-bin`).
    Rust,
    /// The stock Java bookie, `org.apache.bookkeeper.server.Main` on `--java-classpath`.
    Java,
}

impl Implementation {
    pub fn name(self) -> &'static str {
        match self {
            Implementation::Rust => "bookie-rs",
            Implementation::Java => "Java",
        }
    }
}

/// Everything needed to start a bookie.
pub struct StartConfig {
    pub implementation: Implementation,
    /// The bookie-rs binary (Rust).
    pub bin: PathBuf,
    /// The classpath of the stock bookie (Java).
    pub java_classpath: String,
    pub chaos: bool,
    pub sets: Vec<String>,
    /// The drill's ZooKeeper (`metadataServiceUri`); None: standalone.
    pub metadata_service_uri: Option<String>,
    /// Its address, for the registration checks.
    pub zk_addr: Option<String>,
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
            implementation: Implementation::Rust,
            registered_owner: None,
            filesystem: None,
            attached: None,
        })
    }

    /// A running bookie bkchaos did not start (`--attach`); `dir` only names its (empty) log.
    pub fn attach(dir: &Path, index: usize, to: Attached) -> Bookie {
        Bookie {
            index,
            port: 0,
            http_port: 0,
            log: dir.join(format!("bookie-{index}.log")),
            data: PathBuf::new(),
            child: None,
            stopped: false,
            last_exit: None,
            implementation: Implementation::Rust,
            registered_owner: None,
            filesystem: None,
            attached: Some(to),
        }
    }

    /// Whether bkchaos did not start it (`--attach`).
    pub fn is_attached(&self) -> bool {
        self.attached.is_some()
    }

    /// Mounts a filesystem of its own, `size` bytes, on its data directory (before the first
    /// start): `dir/bookie-N.img`.
    pub fn own_filesystem(&mut self, dir: &Path, size: u64) -> Result<(), String> {
        let image = dir.join(format!("bookie-{}.img", self.index));
        self.filesystem = Some(LoopFilesystem::create(&image, &self.data, size)?);
        Ok(())
    }

    /// The directory holding its journal and ledger directories.
    pub fn data_dir(&self) -> &Path {
        &self.data
    }

    pub fn addr(&self) -> String {
        match &self.attached {
            Some(a) => a.addr.clone(),
            None => format!("127.0.0.1:{}", self.port),
        }
    }

    /// The id it registers with (advertisedAddress=127.0.0.1): its address.
    pub fn bookie_id(&self) -> String {
        self.addr()
    }

    fn admin_addr(&self) -> Result<SocketAddr, String> {
        match &self.attached {
            Some(Attached {
                admin: Some(admin), ..
            }) => resolve(admin),
            Some(Attached { addr, .. }) => Err(format!(
                "bookie {} ({addr}) has no admin address: give --attach {addr}=HOST:PORT",
                self.index
            )),
            None => Ok(SocketAddr::from(([127, 0, 0, 1], self.http_port))),
        }
    }

    /// The stock Java bookie's command: a `bk_server.conf` in its directory with the same
    /// ports, directories and registration as a bookie-rs of the drill gets, DbLedgerStorage
    /// (what Pulsar's bookkeeper.conf and tests/interop use), then the drill's settings; the
    /// JVM sized as tests/interop sizes its bookies.
    fn java_command(&self, cfg: &StartConfig) -> Result<Command, String> {
        let uri = cfg
            .metadata_service_uri
            .as_deref()
            .ok_or("a Java bookie needs the drill's ZooKeeper")?;
        let zk_servers = uri
            .strip_prefix("zk+hierarchical://")
            .and_then(|r| r.split('/').next())
            .unwrap_or_default();
        let (journal, ledgers) = (self.data.join("journal"), self.data.join("ledgers"));
        for d in [&journal, &ledgers] {
            std::fs::create_dir_all(d)
                .map_err(|e| format!("cannot create {}: {e}", d.display()))?;
        }
        let mut conf = format!(
            "# written by bkchaos for Java bookie {}\nbookiePort={}\nadvertisedAddress=127.0.0.1\n\
             allowLoopback=true\njournalDirectories={}\nledgerDirectories={}\n\
             metadataServiceUri={uri}\nzkServers={zk_servers}\nhttpServerEnabled=false\n\
             journalSyncData=true\nnettyMaxFrameSizeBytes=5253120\n\
             ledgerStorageClass=org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage\n\
             dbStorage_rocksDB_blockCacheSize=16777216\ndbStorage_rocksDB_writeBufferSizeMB=4\n\
             journalPreAllocSizeMB=4\n",
            self.index,
            self.port,
            journal.display(),
            ledgers.display()
        );
        for kv in &cfg.sets {
            conf.push_str(kv);
            conf.push('\n');
        }
        let file = self.data.join("bk_server.conf");
        std::fs::write(&file, conf).map_err(|e| format!("cannot write {}: {e}", file.display()))?;
        let mut cmd = Command::new("java");
        cmd.args([
            "-Xms64m",
            "-Xmx256m",
            "-XX:MaxDirectMemorySize=512m",
            "-XX:+UseSerialGC",
            "-cp",
            &cfg.java_classpath,
            "org.apache.bookkeeper.server.Main",
            "--conf",
        ])
        .arg(&file);
        Ok(cmd)
    }

    /// Starts the process (it must not be running).
    pub fn start(&mut self, cfg: &StartConfig) -> Result<(), String> {
        use std::os::unix::process::CommandExt;
        if let Some(a) = &self.attached {
            return Err(format!(
                "bookie {} ({}) was not started by bkchaos (--attach): it cannot be started",
                self.index, a.addr
            ));
        }
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
        let mut cmd = if cfg.implementation == Implementation::Java {
            self.java_command(cfg)?
        } else {
            self.rust_command(cfg)
        };
        cmd.stdin(Stdio::null())
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
            .map_err(|e| format!("cannot start bookie {}: {e}", self.index))?;
        self.child = Some(child);
        self.stopped = false;
        self.implementation = cfg.implementation;
        Ok(())
    }

    /// bookie-rs's command: flags and `--set`s, no file.
    fn rust_command(&self, cfg: &StartConfig) -> Command {
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
            );
        cmd
    }

    /// Whether the process is alive (a stopped one is alive).
    pub fn is_running(&mut self) -> bool {
        if self.attached.is_some() {
            // Not ours to watch: whether it serves is what wait_serving and the load see.
            return true;
        }
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
        if let Some(a) = &self.attached {
            return Err(format!(
                "bookie {} ({}) was not started by bkchaos (--attach): no process to signal",
                self.index, a.addr
            ));
        }
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

    /// Waits until the bookie port accepts and (bookie-rs) the admin API answers; Err if the
    /// process exited or the deadline passed. (A Java bookie opens its port once its storage
    /// is up; its registration is waited for by the caller, through ZooKeeper.)
    pub fn wait_serving(&mut self) -> Result<Duration, String> {
        let started = Instant::now();
        if let Some(a) = self.attached.clone() {
            let addr = resolve(&a.addr)?;
            loop {
                let port_open =
                    TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_ok();
                let admin_ok =
                    || a.admin.is_none() || self.admin("GET", "/api/v1/bookie/state", "").is_ok();
                if port_open && admin_ok() {
                    return Ok(started.elapsed());
                }
                if started.elapsed() > START_DEADLINE {
                    return Err(format!(
                        "bookie {} ({}) did not answer within {START_DEADLINE:?}",
                        self.index, a.addr
                    ));
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        }
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
            let admin_ok = || {
                self.implementation == Implementation::Java
                    || self.admin("GET", "/api/v1/bookie/state", "").is_ok()
            };
            if port_open && admin_ok() {
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
        http(self.admin_addr()?, method, path, body)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attach_addresses_parse_or_say_what_is_expected() {
        assert_eq!(
            Attached::parse("bk-0.bk:3181=bk-0.bk:8000").unwrap(),
            Attached {
                addr: "bk-0.bk:3181".into(),
                admin: Some("bk-0.bk:8000".into())
            }
        );
        assert_eq!(Attached::parse("10.0.0.1:3181").unwrap().admin, None);
        for bad in ["3181", "host:", ":3181", "h:0", "h:3181=8000", "h:70000"] {
            let e = Attached::parse(bad).unwrap_err();
            assert!(e.contains("host:port"), "{bad}: {e}");
        }
    }
}
