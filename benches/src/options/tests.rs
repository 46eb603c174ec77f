//! Unit tests of `options` (kept beside it, out of its source file).

use super::*;

fn cli(k: &str, v: &str) -> RawOption {
    RawOption {
        key: k.into(),
        value: Some(v.into()),
        origin: Origin::CommandLine,
    }
}

#[test]
fn sizes() {
    assert_eq!(parse_size("4096"), Ok(4096));
    assert_eq!(parse_size("1k"), Ok(1024));
    assert_eq!(parse_size("1K"), Ok(1024));
    assert_eq!(parse_size("64kb"), Ok(65536));
    assert_eq!(parse_size("5m"), Ok(5 * 1024 * 1024));
    assert_eq!(parse_size("5MiB"), Ok(5 * 1024 * 1024));
    assert_eq!(parse_size("2g"), Ok(2 << 30));
    assert!(parse_size("1x").is_err());
    assert!(parse_size("").is_err());
    assert!(parse_size("99999999999999t").is_err());
}

#[test]
fn counts_and_times() {
    assert_eq!(parse_count("10k"), Ok(10_000));
    assert_eq!(parse_count("2m"), Ok(2_000_000));
    assert_eq!(parse_time("10"), Ok(Duration::from_secs(10)));
    assert_eq!(parse_time("10s"), Ok(Duration::from_secs(10)));
    assert_eq!(parse_time("500ms"), Ok(Duration::from_millis(500)));
    assert_eq!(parse_time("250us"), Ok(Duration::from_micros(250)));
    assert_eq!(parse_time("2m"), Ok(Duration::from_secs(120)));
    assert_eq!(parse_time("1.5s"), Ok(Duration::from_millis(1500)));
    assert!(parse_time("-1s").is_err());
    assert!(parse_time("soon").is_err());
}

#[test]
fn distributions() {
    let r = parse_bs_range("1k-64k").unwrap();
    assert_eq!(
        r,
        BlockSize::Range {
            min: 1024,
            max: 65536
        }
    );
    for x in [0u64, 1, 12345, u64::MAX] {
        let p = r.pick(x);
        assert!((1024..=65536).contains(&p));
    }
    let s = parse_bssplit("1k/50:64k/50").unwrap();
    assert_eq!(s.mean(), (1024.0 + 65536.0) / 2.0);
    assert_eq!(s.pick(0), 1024);
    assert_eq!(s.pick(49), 1024);
    assert_eq!(s.pick(50), 65536);
    assert_eq!(s.pick(99), 65536);
    assert!(parse_bssplit("1k/50:64k/40").is_err());
    assert!(parse_bs_range("64k-1k").is_err());
}

#[test]
fn build_applies_in_order_and_defaults_runtime() {
    let j = JobSpec::build(
        "j",
        &[
            cli("bs", "4k"),
            cli("bs", "8k"),
            cli("iodepth", "32"),
            cli("protocol", "v3"),
        ],
    )
    .unwrap();
    assert_eq!(j.bs, BlockSize::Fixed { bytes: 8192 });
    assert_eq!(j.iodepth, 32);
    assert_eq!(j.protocol, Protocol::V3);
    assert_eq!(j.runtime, Some(Duration::from_secs(10)));
}

#[test]
fn errors_name_the_option() {
    let e = JobSpec::build("j", &[cli("iodepht", "4")]).unwrap_err();
    assert!(e.to_string().contains("unknown option 'iodepht'"), "{e}");
    let e = JobSpec::build("j", &[cli("bs", "4q")]).unwrap_err();
    assert!(e.to_string().contains("option 'bs'"), "{e}");
    assert!(e.to_string().contains("command line"), "{e}");
    let e = JobSpec::build(
        "j",
        &[
            cli("batch_read", "8"),
            cli("rw", "mixed"),
            cli("protocol", "v3"),
        ],
    )
    .unwrap_err();
    assert!(e.to_string().contains("batch_read"), "{e}");
    assert!(e.to_string().contains("protocol"), "{e}");
    let e = JobSpec::build(
        "j",
        &[
            cli("rw", "read"),
            cli("read_pattern", "tailing"),
            cli("prefill", "1m"),
        ],
    )
    .unwrap_err();
    assert!(e.to_string().contains("read_pattern"), "{e}");
    let e = JobSpec::build("j", &[cli("rw", "read")]).unwrap_err();
    assert!(e.to_string().contains("prefill"), "{e}");
    let e = JobSpec::build("j", &[cli("bookie", "nohostport")]).unwrap_err();
    assert!(e.to_string().contains("'bookie'"), "{e}");
    let e = JobSpec::build("j", &[cli("bs", "6m")]).unwrap_err();
    assert!(e.to_string().contains("bs"), "{e}");
}

#[test]
fn tls_keys_in_either_spelling_and_their_combinations() {
    let s = JobSpec::build(
        "j",
        &[
            cli("tls-ca", "ca.pem"),
            cli("tls_cert", "c.pem"),
            cli("TLS_KEY", "k.pem"),
        ],
    )
    .unwrap();
    assert_eq!(s.tls_ca.as_deref(), Some("ca.pem"));
    assert_eq!(s.tls_cert.as_deref(), Some("c.pem"));
    assert_eq!(s.tls_key.as_deref(), Some("k.pem"));
    let plain = JobSpec::build("j", &[]).unwrap();
    assert_eq!(plain.tls_ca, None);
    // Server-only TLS needs just the CA.
    assert!(JobSpec::build("j", &[cli("tls_ca", "ca.pem")]).is_ok());
    let e = JobSpec::build("j", &[cli("tls_ca", "ca.pem"), cli("tls_cert", "c.pem")])
        .unwrap_err()
        .to_string();
    assert!(e.contains("tls_key"), "{e}");
    let e = JobSpec::build("j", &[cli("tls_cert", "c.pem"), cli("tls_key", "k.pem")])
        .unwrap_err()
        .to_string();
    assert!(e.contains("tls_ca"), "{e}");
}
