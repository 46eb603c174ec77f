//! `args`: the `bookie` command-line flags ([`BookieArgs`]) and how they become property
//! overrides.
//!
//! Guarantees: every flag is written into the property store *before* typed parsing, with the
//! flag's name as the value's origin, so a bad flag value is reported exactly like a bad file
//! value. Order of application (a later write wins): `--set key=value` (repeatable, in order),
//! then `--data-dir`, then the dedicated flags. `--standalone` is not a property: the caller
//! passes it to the key sections.

use std::path::PathBuf;

use super::props::Props;
use super::ConfigError;

/// Command-line flags of the `bookie` binary. Flag names follow the Java `Main` where one exists
/// (`-c`, `-p`, `-j`, `-l`, `-i`, `-z`, `-m`, `-r`), long names are ours.
#[derive(clap::Parser, Debug, Clone, Default)]
#[command(
    name = "bookie",
    about = "BookKeeper-compatible bookie (reads stock bk_server.conf)"
)]
pub struct BookieArgs {
    /// Config file (Java properties, stock bk_server.conf keys). Default: env BOOKIE_CONF, else none.
    #[arg(short = 'c', long = "conf")]
    pub conf: Option<PathBuf>,
    /// bookiePort.
    #[arg(short = 'p', long = "port", alias = "bookieport")]
    pub port: Option<String>,
    /// journalDirectories (comma separated).
    #[arg(short = 'j', long = "journal-dirs", alias = "journal")]
    pub journal_dirs: Option<String>,
    /// ledgerDirectories (comma separated).
    #[arg(short = 'l', long = "ledger-dirs", alias = "ledgerdirs")]
    pub ledger_dirs: Option<String>,
    /// indexDirectories (comma separated).
    #[arg(short = 'i', long = "index-dirs", alias = "indexdirs")]
    pub index_dirs: Option<String>,
    /// metadataServiceUri, e.g. zk+hierarchical://localhost:2181/ledgers.
    #[arg(long = "metadata-service-uri")]
    pub metadata_service_uri: Option<String>,
    /// zkServers (used when metadataServiceUri is unset).
    #[arg(short = 'z', long = "zk-servers", alias = "zkserver")]
    pub zk_servers: Option<String>,
    /// zkLedgersRootPath.
    #[arg(short = 'm', long = "zk-ledgers-root-path", alias = "zkledgerpath")]
    pub zk_ledgers_root_path: Option<String>,
    /// Run without ZooKeeper: no registration, no cookie in ZooKeeper, no GC scan.
    #[arg(long = "standalone")]
    pub standalone: bool,
    /// Put journal (<dir>/journal) and ledger (<dir>/ledgers) directories under one directory,
    /// unless --journal-dirs / --ledger-dirs are given.
    #[arg(long = "data-dir")]
    pub data_dir: Option<PathBuf>,
    /// prometheusStatsHttpPort.
    #[arg(long = "metrics-port")]
    pub metrics_port: Option<String>,
    /// httpServerPort.
    #[arg(long = "http-port", alias = "httpport")]
    pub http_port: Option<String>,
    /// bookieId (custom bookie id).
    #[arg(long = "bookie-id")]
    pub bookie_id: Option<String>,
    /// advertisedAddress.
    #[arg(long = "advertised-address")]
    pub advertised_address: Option<String>,
    /// allowLoopback=true.
    #[arg(long = "allow-loopback")]
    pub allow_loopback: bool,
    /// forceReadOnlyBookie=true.
    #[arg(short = 'r', long = "readonly")]
    pub readonly: bool,
    /// Log line format: text (default) or json; default: env BOOKIE_LOG_FORMAT. Not a property.
    #[arg(long = "log-format", value_name = "text|json")]
    pub log_format: Option<String>,
    /// Any key: --set key=value (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

/// Writes `args` into `props` as overrides of the file's values.
pub(crate) fn apply(props: &mut Props, args: &BookieArgs) -> Result<(), ConfigError> {
    for kv in &args.set {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| ConfigError::BadOverride(kv.clone()))?;
        let k = k.trim();
        if k.is_empty() {
            return Err(ConfigError::BadOverride(kv.clone()));
        }
        props.set(k, v.trim().to_string(), format!("--set {k}"));
    }
    if let Some(d) = &args.data_dir {
        let under = |sub: &str| d.join(sub).display().to_string();
        props.set("journalDirectories", under("journal"), "--data-dir".into());
        props.set("ledgerDirectories", under("ledgers"), "--data-dir".into());
    }
    // (key, value, flag) in the order of application.
    let flags: [(&str, &Option<String>, &str); 11] = [
        ("bookiePort", &args.port, "--port"),
        ("journalDirectories", &args.journal_dirs, "--journal-dirs"),
        ("ledgerDirectories", &args.ledger_dirs, "--ledger-dirs"),
        ("indexDirectories", &args.index_dirs, "--index-dirs"),
        (
            "metadataServiceUri",
            &args.metadata_service_uri,
            "--metadata-service-uri",
        ),
        ("zkServers", &args.zk_servers, "--zk-servers"),
        (
            "zkLedgersRootPath",
            &args.zk_ledgers_root_path,
            "--zk-ledgers-root-path",
        ),
        (
            "prometheusStatsHttpPort",
            &args.metrics_port,
            "--metrics-port",
        ),
        ("httpServerPort", &args.http_port, "--http-port"),
        ("bookieId", &args.bookie_id, "--bookie-id"),
        (
            "advertisedAddress",
            &args.advertised_address,
            "--advertised-address",
        ),
    ];
    for (key, value, name) in flags {
        if key == "zkServers" && value.is_some() && args.metadata_service_uri.is_none() {
            // A flag beats the file: --zk-servers must win over a metadataServiceUri in the file.
            props.set("metadataServiceUri", String::new(), name.into());
        }
        if let Some(v) = value {
            props.set(key, v.clone(), name.to_string());
        }
    }
    if args.allow_loopback {
        props.set("allowLoopback", "true".into(), "--allow-loopback".into());
    }
    if args.readonly {
        props.set("forceReadOnlyBookie", "true".into(), "--readonly".into());
    }
    Ok(())
}
