//! `metadataServiceUri` (and its `zkServers` + `zkLedgersRootPath` fallback) parsed into the
//! ZooKeeper connect string and the ledgers root path (docs/registration.md §1).
//!
//! Accepted forms:
//! * `zk+<type>://<host:port>[;<host:port>...]/<root>` with `<type>` one of `hierarchical`,
//!   `longhierarchical`, `flat`, `ms`, `null` (`;` becomes `,` in the connect string);
//! * `zk://<hosts>/<root>` (same as type `null`: the cluster's LAYOUT decides);
//! * `metadata-store:zk:<host:port>[,<host:port>...]/<root>` (Pulsar's form; same znodes).
//!
//! Invariants: the connect string is non-empty and has no path; the root path starts with `/`,
//! has no trailing `/` (except the root `/` itself), and no empty components.

use std::fmt;

/// The ledger manager named by the URI scheme. Only the scan of the ledger tree (GC) cares;
/// the hierarchical and long-hierarchical trees are both scanned by `gc_scan`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LedgerManagerType {
    Hierarchical,
    LongHierarchical,
    Flat,
    Ms,
    /// Not named in the URI: the cluster's `LAYOUT` znode decides.
    Unspecified,
}

/// A parsed metadata service location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataServiceUri {
    pub ledger_manager: LedgerManagerType,
    /// ZooKeeper connect string, `host:port,host:port`.
    pub zk_connect: String,
    /// Ledgers root path, e.g. `/ledgers`.
    pub ledgers_root: String,
}

impl fmt::Display for MetadataServiceUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = match self.ledger_manager {
            LedgerManagerType::Hierarchical => "hierarchical",
            LedgerManagerType::LongHierarchical => "longhierarchical",
            LedgerManagerType::Flat => "flat",
            LedgerManagerType::Ms => "ms",
            LedgerManagerType::Unspecified => "null",
        };
        write!(
            f,
            "zk+{}://{}{}",
            t,
            self.zk_connect.replace(',', ";"),
            self.ledgers_root
        )
    }
}

fn parse_manager(name: &str) -> Result<LedgerManagerType, String> {
    match name.to_ascii_lowercase().as_str() {
        "hierarchical" => Ok(LedgerManagerType::Hierarchical),
        "longhierarchical" => Ok(LedgerManagerType::LongHierarchical),
        "flat" => Ok(LedgerManagerType::Flat),
        "ms" => Ok(LedgerManagerType::Ms),
        "null" | "" => Ok(LedgerManagerType::Unspecified),
        other => Err(format!("unknown ledger manager type \"{other}\"")),
    }
}

/// Validates and normalises a ledgers root path.
pub fn normalise_root(path: &str) -> Result<String, String> {
    if !path.starts_with('/') {
        return Err(format!("ledgers root path \"{path}\" must start with '/'"));
    }
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        return Ok("/".to_string());
    }
    if trimmed[1..].split('/').any(|c| c.is_empty()) {
        return Err(format!(
            "ledgers root path \"{path}\" has an empty component"
        ));
    }
    Ok(trimmed.to_string())
}

fn check_hosts(hosts: &str) -> Result<String, String> {
    let parts: Vec<&str> = hosts
        .split([',', ';'])
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .collect();
    if parts.is_empty() {
        return Err("no ZooKeeper host given".to_string());
    }
    for h in &parts {
        if h.contains('/') || h.chars().any(char::is_whitespace) {
            return Err(format!("bad ZooKeeper host \"{h}\""));
        }
    }
    Ok(parts.join(","))
}

impl MetadataServiceUri {
    /// Parses a `metadataServiceUri` value.
    pub fn parse(uri: &str) -> Result<Self, String> {
        let uri = uri.trim();
        if let Some(rest) = uri.strip_prefix("metadata-store:") {
            let rest = rest.strip_prefix("zk:").ok_or_else(|| {
                format!("only ZooKeeper metadata stores are supported, got \"{uri}\"")
            })?;
            let rest = rest.strip_prefix("//").unwrap_or(rest);
            let (hosts, root) = match rest.find('/') {
                Some(i) => (&rest[..i], &rest[i..]),
                None => (rest, "/ledgers"),
            };
            return Ok(Self {
                ledger_manager: LedgerManagerType::Unspecified,
                zk_connect: check_hosts(hosts)?,
                ledgers_root: normalise_root(root)?,
            });
        }
        let (scheme, rest) = uri.split_once("://").ok_or_else(|| {
            format!("\"{uri}\" is not a URI (expected zk+hierarchical://host:port/ledgers)")
        })?;
        let scheme = scheme.to_ascii_lowercase();
        let manager = if scheme == "zk" {
            LedgerManagerType::Unspecified
        } else if let Some(t) = scheme.strip_prefix("zk+") {
            parse_manager(t)?
        } else {
            return Err(format!(
                "unsupported metadata service scheme \"{scheme}\" (only zk+<type> is supported)"
            ));
        };
        let (hosts, root) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => return Err(format!("\"{uri}\" has no ledgers root path")),
        };
        Ok(Self {
            ledger_manager: manager,
            zk_connect: check_hosts(hosts)?,
            ledgers_root: normalise_root(root)?,
        })
    }

    /// Builds the location from the deprecated `zkServers` + `zkLedgersRootPath` pair.
    pub fn from_zk_servers(zk_servers: &str, ledgers_root: &str) -> Result<Self, String> {
        Ok(Self {
            ledger_manager: LedgerManagerType::Unspecified,
            zk_connect: check_hosts(zk_servers)?,
            ledgers_root: normalise_root(ledgers_root)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stock_uri() {
        let u = MetadataServiceUri::parse("zk+hierarchical://localhost:2181/ledgers").unwrap();
        assert_eq!(u.ledger_manager, LedgerManagerType::Hierarchical);
        assert_eq!(u.zk_connect, "localhost:2181");
        assert_eq!(u.ledgers_root, "/ledgers");
        assert_eq!(u.to_string(), "zk+hierarchical://localhost:2181/ledgers");
    }

    #[test]
    fn multiple_hosts_and_nested_root() {
        let u = MetadataServiceUri::parse(
            "zk+longhierarchical://zk1:2181;zk2:2181;zk3:2181/pulsar/ledgers/",
        )
        .unwrap();
        assert_eq!(u.ledger_manager, LedgerManagerType::LongHierarchical);
        assert_eq!(u.zk_connect, "zk1:2181,zk2:2181,zk3:2181");
        assert_eq!(u.ledgers_root, "/pulsar/ledgers");
        let u = MetadataServiceUri::parse("zk://a:1/ledgers").unwrap();
        assert_eq!(u.ledger_manager, LedgerManagerType::Unspecified);
        let u = MetadataServiceUri::parse("zk+null://a:1/ledgers").unwrap();
        assert_eq!(u.ledger_manager, LedgerManagerType::Unspecified);
    }

    #[test]
    fn pulsar_metadata_store_form() {
        let u = MetadataServiceUri::parse("metadata-store:zk:zk1:2181,zk2:2181/ledgers").unwrap();
        assert_eq!(u.zk_connect, "zk1:2181,zk2:2181");
        assert_eq!(u.ledgers_root, "/ledgers");
    }

    #[test]
    fn zk_servers_fallback() {
        let u = MetadataServiceUri::from_zk_servers("a:1, b:2", "/ledgers").unwrap();
        assert_eq!(u.zk_connect, "a:1,b:2");
        assert!(MetadataServiceUri::from_zk_servers("a:1", "ledgers").is_err());
        assert!(MetadataServiceUri::from_zk_servers("", "/ledgers").is_err());
    }

    #[test]
    fn bad_uris_are_rejected() {
        for bad in [
            "etcd://localhost:2379/ledgers",
            "zk+hierarchical://localhost:2181",
            "zk+weird://h:1/ledgers",
            "localhost:2181",
            "zk+hierarchical:///ledgers",
            "zk+hierarchical://h:1/a//b",
            "metadata-store:etcd:h:1/x",
        ] {
            assert!(
                MetadataServiceUri::parse(bad).is_err(),
                "{bad} should be rejected"
            );
        }
    }
}
