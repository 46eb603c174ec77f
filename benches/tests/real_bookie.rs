//! bkbench against the real `bookie` binary (standalone mode): writes, tailing reads, batch
//! reads and v3 all complete with zero errors; the same over TLS with mutual TLS (START_TLS,
//! docs/tls.md §1), and clear errors naming the bookie when the client trusts another CA or
//! the bookie has no TLS.
//!
//! Ignored by default because it needs a built bookie: run it with
//! `BOOKIE_BIN=$CARGO_TARGET_DIR/release/bookie cargo test -p bkbench --test real_bookie -- --ignored`.
//! Without BOOKIE_BIN the test fails (it is never silently skipped).

// Test code sets up and inspects real directories directly; only production code is bound
// by ARCHITECTURE.md invariant 1 (see clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Bookie {
    child: Child,
    dir: std::path::PathBuf,
}

impl Drop for Bookie {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[path = "../../bookie/tests/ports/mod.rs"]
mod ports;
use ports::free_port;

fn start_bookie() -> (Bookie, String) {
    start_bookie_with(&[])
}

/// Starts the bookie with extra `--set KEY=VALUE` settings.
fn start_bookie_with(settings: &[String]) -> (Bookie, String) {
    let bin = std::env::var("BOOKIE_BIN")
        .expect("set BOOKIE_BIN to the bookie binary (this test runs only with --ignored)");
    let dir = std::env::temp_dir().join(format!(
        "bkbench-real-{}-{}",
        std::process::id(),
        free_port()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("data dir");
    let port = free_port();
    let child = Command::new(bin)
        .args(["--standalone", "--data-dir"])
        .arg(&dir)
        .args([
            "--port",
            &port.to_string(),
            "--metrics-port",
            &free_port().to_string(),
        ])
        // The machine's disk may be fuller than the default read-only threshold.
        .args([
            "--set",
            "diskUsageThreshold=0.999",
            "--set",
            "diskUsageWarnThreshold=0.998",
        ])
        .args(settings.iter().flat_map(|s| ["--set", s.as_str()]))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start bookie");
    let addr = format!("127.0.0.1:{port}");
    let t0 = Instant::now();
    while std::net::TcpStream::connect(&addr).is_err() {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "bookie did not listen on {addr}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    (Bookie { child, dir }, addr)
}

fn bkbench(args: &[String]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_bkbench"))
        .args(args)
        .args(["--output-format=json", "--progress=0"])
        .output()
        .expect("run bkbench")
}

fn bkbench_json(args: &[String]) -> serde_json::Value {
    let out = bkbench(args);
    assert!(
        out.status.success(),
        "bkbench failed ({}): {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_slice(&out.stdout).expect("JSON report")
}

#[test]
#[ignore = "needs BOOKIE_BIN (a built bookie binary)"]
fn standard_shapes_against_the_real_bookie() {
    let (_bookie, addr) = start_bookie();
    let b = format!("--bookie={addr}");
    let v = bkbench_json(&[
        b.clone(),
        "--number_ios=2000".into(),
        "--runtime=20s".into(),
        "--serial".into(),
        "--name=w-v2".into(),
        "--iodepth=64".into(),
        "--ledgers=4".into(),
        "--name=w-v3".into(),
        "--protocol=v3".into(),
        "--iodepth=16".into(),
        "--bs_range=100-64k".into(),
        "--name=tail".into(),
        "--rw=mixed".into(),
        "--read_pattern=tailing".into(),
        "--iodepth=16".into(),
        "--name=batch".into(),
        "--rw=read".into(),
        "--prefill=2m".into(),
        "--bs=4k".into(),
        "--batch_read=16".into(),
        "--iodepth=4".into(),
    ]);
    let jobs = v["jobs"].as_array().expect("jobs");
    assert_eq!(jobs.len(), 4);
    for j in jobs {
        for op in ["write", "read"] {
            if !j[op].is_null() {
                assert_eq!(
                    j[op]["total_errors"], 0,
                    "{} {op}: {}",
                    j["jobname"], j[op]["errors"]
                );
            }
        }
    }
    assert!(jobs[2]["read"]["total_ios"].as_u64().unwrap_or(0) > 0);
    assert_eq!(
        jobs[3]["read"]["entries"].as_u64(),
        Some(512),
        "every prefilled entry batch-read once"
    );
}

// ------------------------------------------------------------------ TLS

/// PEM files of a CA, a bookie certificate it signed (IP SAN 127.0.0.1) and a client
/// certificate it signed, in `dir` (both leaves carry OU `0:bench`).
struct Pki {
    ca: String,
    bookie_cert: String,
    bookie_key: String,
    client_cert: String,
    client_key: String,
}

fn write_pki(dir: &std::path::Path, tag: &str) -> Pki {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    std::fs::create_dir_all(dir).expect("pki dir");
    let file = |name: &str, pem: String| {
        let p = dir.join(format!("{tag}-{name}.pem"));
        std::fs::write(&p, pem).expect("write pem");
        p.to_string_lossy().into_owned()
    };
    let ca_key = KeyPair::generate().expect("ca key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, format!("{tag} CA"));
    let ca_cert = ca_params.self_signed(&ca_key).expect("ca cert");
    let issuer = Issuer::new(ca_params, ca_key);
    let leaf = |cn: &str, sans: &[&str]| {
        let key = KeyPair::generate().expect("leaf key");
        let mut params =
            CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .expect("leaf params");
        params.distinguished_name.push(DnType::CommonName, cn);
        // BookieAuthZFactory's roles (docs/tls.md §4): role "bench".
        params
            .distinguished_name
            .push(DnType::OrganizationalUnitName, "0:bench");
        let cert = params.signed_by(&key, &issuer).expect("leaf cert");
        (
            file(&format!("{cn}-cert"), cert.pem()),
            file(&format!("{cn}-key"), key.serialize_pem()),
        )
    };
    let (bookie_cert, bookie_key) = leaf("bookie", &["127.0.0.1", "localhost"]);
    let (client_cert, client_key) = leaf("client", &[]);
    Pki {
        ca: file("ca", ca_cert.pem()),
        bookie_cert,
        bookie_key,
        client_cert,
        client_key,
    }
}

/// The stock keys of a PEM-configured TLS bookie requiring client certificates with role
/// "bench". The authorizer makes the test prove TLS was used: without it the bookie also
/// serves clients that never send START_TLS, in clear (as Java does); with it they get EUA.
fn tls_settings(pki: &Pki) -> Vec<String> {
    vec![
        "bookieAuthProviderFactoryClass=org.apache.bookkeeper.tls.BookieAuthZFactory".into(),
        "authorizedRoles=bench".into(),
        "tlsProviderFactoryClass=org.apache.bookkeeper.tls.TLSContextFactory".into(),
        "tlsKeyStoreType=PEM".into(),
        format!("tlsKeyStore={}", pki.bookie_key),
        format!("tlsCertificatePath={}", pki.bookie_cert),
        "tlsTrustStoreType=PEM".into(),
        format!("tlsTrustStore={}", pki.ca),
        "tlsClientAuthentication=true".into(),
    ]
}

fn pki_dir(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("bkbench-pki-{}-{name}", std::process::id()))
}

#[test]
#[ignore = "needs BOOKIE_BIN (a built bookie binary)"]
fn v2_and_v3_jobs_over_mutual_tls() {
    let dir = pki_dir("mtls");
    let pki = write_pki(&dir, "good");
    let (_bookie, addr) = start_bookie_with(&tls_settings(&pki));
    let v = bkbench_json(&[
        format!("--bookie={addr}"),
        // Command-line spelling; the job-file keys are tls_ca / tls_cert / tls_key.
        format!("--tls-ca={}", pki.ca),
        format!("--tls-cert={}", pki.client_cert),
        format!("--tls-key={}", pki.client_key),
        "--number_ios=500".into(),
        "--runtime=20s".into(),
        "--serial".into(),
        "--name=tls-v2".into(),
        "--iodepth=32".into(),
        "--connections=2".into(),
        "--ledgers=2".into(),
        "--name=tls-v3".into(),
        "--protocol=v3".into(),
        "--bs_range=100-64k".into(),
        "--iodepth=8".into(),
        "--name=tls-read".into(),
        "--rw=mixed".into(),
        "--read_pattern=tailing".into(),
        "--iodepth=8".into(),
    ]);
    let jobs = v["jobs"].as_array().expect("jobs");
    assert_eq!(jobs.len(), 3);
    for j in jobs {
        assert_eq!(
            j["write"]["total_errors"], 0,
            "{}: {}",
            j["jobname"], j["write"]["errors"]
        );
        assert!(
            j["write"]["total_ios"].as_u64().unwrap_or(0) > 0,
            "{}",
            j["jobname"]
        );
    }
    assert_eq!(
        jobs[2]["read"]["total_errors"], 0,
        "{}",
        jobs[2]["read"]["errors"]
    );
    assert!(jobs[2]["read"]["total_ios"].as_u64().unwrap_or(0) > 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[ignore = "needs BOOKIE_BIN (a built bookie binary)"]
fn a_client_trusting_another_ca_fails_naming_the_bookie() {
    let dir = pki_dir("other-ca");
    let pki = write_pki(&dir, "good");
    let other = write_pki(&dir, "other");
    let (_bookie, addr) = start_bookie_with(&tls_settings(&pki));
    let out = bkbench(&[
        format!("--bookie={addr}"),
        format!("--tls-ca={}", other.ca),
        format!("--tls-cert={}", pki.client_cert),
        format!("--tls-key={}", pki.client_key),
        "--number_ios=10".into(),
        "--name=w".into(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "must fail: {stderr}");
    assert!(
        stderr.contains(&format!("bookie {addr}: TLS handshake failed")),
        "names the bookie and the handshake: {stderr}"
    );
    assert!(stderr.contains("UnknownIssuer"), "says why: {stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[ignore = "needs BOOKIE_BIN (a built bookie binary)"]
fn start_tls_refused_by_a_plain_bookie_is_a_clear_error() {
    let dir = pki_dir("plain");
    let pki = write_pki(&dir, "good");
    let (_bookie, addr) = start_bookie();
    let out = bkbench(&[
        format!("--bookie={addr}"),
        format!("--tls-ca={}", pki.ca),
        "--number_ios=10".into(),
        "--name=w".into(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "must fail: {stderr}");
    assert!(
        stderr.contains(&format!("bookie {addr}: refused START_TLS (EBADREQ)")),
        "names the bookie and the refusal: {stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
