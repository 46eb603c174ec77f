//! Tests of the stock key table (`stock_keys`): no stock key of BookKeeper 4.17.3's
//! `bk_server.conf` is unclassified, the table agrees with what the sections read, and
//! docs/config.md §5 agrees with the table.

use std::collections::BTreeSet;

use super::props::Props;
use super::stock_keys::{effect_of, KeyEffect, STOCK_KEYS};
use super::{keys, sections, BookieArgs, BookieConfig};

/// The key list of the stock file (see its header for the source and the extraction).
const STOCK_FILE_KEYS: &str = include_str!("bk_server_4_17_3.keys");

fn stock_file_keys() -> Vec<&'static str> {
    STOCK_FILE_KEYS
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect()
}

/// Every key some section reads, over the two paths that read different keys (standalone
/// and with ZooKeeper); `journalMaxGroupedEntriesToCommit` is read only as a fallback.
fn keys_read_by_sections() -> BTreeSet<String> {
    let mut read = BTreeSet::new();
    for standalone in [true, false] {
        let mut p = Props::default();
        if !standalone {
            p.set("zkServers", "zk:2181".into(), "test".into());
        }
        sections::from_props(&mut p, standalone).unwrap();
        read.extend(p.used_keys().cloned());
    }
    read
}

#[test]
fn every_key_of_the_stock_bk_server_conf_is_classified() {
    let keys = stock_file_keys();
    assert!(keys.len() > 200, "the fixture lists {} keys", keys.len());
    let missing: Vec<_> = keys.iter().filter(|k| effect_of(k).is_none()).collect();
    assert!(
        missing.is_empty(),
        "stock keys with no entry in config/stock_keys.rs: {missing:?}"
    );
}

#[test]
fn the_table_agrees_with_what_the_sections_read() {
    let read = keys_read_by_sections();
    let unclassified: Vec<_> = read.iter().filter(|k| effect_of(k).is_none()).collect();
    assert!(
        unclassified.is_empty(),
        "keys a section reads but stock_keys.rs does not classify: {unclassified:?}"
    );
    let honoured_unread: Vec<_> = STOCK_KEYS
        .iter()
        .filter(|(k, e)| matches!(e, KeyEffect::Honoured(_)) && !read.contains(*k))
        .map(|(k, _)| k)
        .collect();
    assert!(
        honoured_unread.is_empty(),
        "keys marked honoured that no section reads: {honoured_unread:?}"
    );
    let mut seen = BTreeSet::new();
    for (k, e) in STOCK_KEYS {
        assert!(seen.insert(*k), "{k} is in the table twice");
        assert!(!e.text().is_empty(), "{k} has no how / why");
    }
}

#[test]
fn every_no_effect_key_set_is_reported_and_no_table_key_is_unknown() {
    let set: Vec<String> = stock_file_keys()
        .into_iter()
        .filter(|k| !matches!(effect_of(k), Some(KeyEffect::Refused(_))))
        .map(|k| format!("{k}={}", sample_value(k)))
        .collect();
    let args = BookieArgs {
        standalone: true,
        set,
        ..Default::default()
    };
    let (_, report) = BookieConfig::from_text_and_args(None, None, &args).unwrap();
    assert!(report.unknown_keys.is_empty(), "{:?}", report.unknown_keys);
    let expected: Vec<String> = stock_file_keys()
        .into_iter()
        .filter(|k| matches!(effect_of(k), Some(KeyEffect::NoEffect(_))))
        .map(str::to_string)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(report.ignored_keys, expected);
    for key in &report.ignored_keys {
        let line = keys::no_effect_line(key);
        assert!(
            line.starts_with(&format!("config: {key} has no effect in bookie-rs: "))
                && line.ends_with("(docs/config.md §5)")
                && !line.contains(": (docs"),
            "{line}"
        );
    }
}

/// A valid value for `key`: a specific one where the key's type or a cross-key rule asks
/// for it, else the first of a few candidates the loader accepts alone.
fn sample_value(key: &str) -> &'static str {
    match key {
        "journalDirectories" | "journalDirectory" => "/tmp/bk-txn",
        "ledgerDirectories" | "indexDirectories" => "/tmp/bk-data",
        "minorCompactionThreshold" => "0.2",
        "majorCompactionThreshold" => "0.8",
        "minorCompactionInterval" => "3600",
        "majorCompactionInterval" => "86400",
        "diskUsageThreshold" => "0.95",
        "diskUsageWarnThreshold" | "diskUsageLwmThreshold" => "0.90",
        "journalAlignmentSize" => "512",
        "bookiePort" => "3181",
        "tlsProviderFactoryClass" => crate::tls::settings::TLS_CONTEXT_FACTORY,
        "tlsKeyStoreType" | "tlsTrustStoreType" => "PEM",
        "tlsClientAuthentication" => "false",
        // BookieAuthZFactory alone fails (it needs authorizedRoles; tls::settings tests it).
        "bookieAuthProviderFactoryClass" => "",
        "metadataServiceUri" => "zk+hierarchical://localhost:2181/ledgers",
        _ => ["1", "false", "0.5", "4096", "1073741824", "x"]
            .into_iter()
            .find(|v| {
                let args = BookieArgs {
                    standalone: true,
                    set: vec![format!("{key}={v}")],
                    ..Default::default()
                };
                BookieConfig::from_text_and_args(None, None, &args).is_ok()
            })
            .unwrap_or_else(|| panic!("no sample value for {key}")),
    }
}

#[test]
fn docs_config_section_5_lists_every_key_with_its_effect() {
    let doc = include_str!("../../../docs/config.md");
    let section = doc
        .split("\n## 5 ")
        .nth(1)
        .expect("docs/config.md has a §5")
        .split("\n## ")
        .next()
        .unwrap();
    let mut rows = std::collections::BTreeMap::new();
    for line in section.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let text = cells[3..cells.len() - 1].join("|").replace("\\|", "|");
        rows.insert(
            cells[1].trim_matches('`').to_string(),
            (cells[2].to_string(), text),
        );
    }
    for (k, e) in STOCK_KEYS {
        assert_eq!(
            rows.get(*k),
            Some(&(e.kind().to_string(), e.text().to_string())),
            "docs/config.md §5 row of {k}: effect and how / why as in stock_keys.rs"
        );
    }
    assert_eq!(
        rows.len(),
        STOCK_KEYS.len(),
        "docs rows without a table entry"
    );
}
