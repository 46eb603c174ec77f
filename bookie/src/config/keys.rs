//! `keys`: the table of stock keys that are not read into [`super::BookieConfig`]: the keys
//! we accept and ignore, the keys we refuse, and the classification of every key no section
//! read.
//!
//! Guarantees:
//! * a key listed in [`IGNORED_KEYS`] (or starting `dbStorage_rocksDB_`) and not read by a
//!   section is reported as "ignored" (stock, no effect in bookie-rs); any other key no section
//!   read is reported as "unknown" (a typo, or another product's key);
//! * no key is both read by a section and listed here (a test sets each listed key and checks
//!   it is reported as ignored);
//! * features whose silent absence would downgrade security (`tlsProviderFactoryClass`,
//!   `bookieAuthProviderFactoryClass`, `zkEnableSecurity=true`) fail start-up.

use super::props::Props;
use super::{ConfigError, LoadReport};

/// Stock keys we accept but ignore (no equivalent in bookie-rs). Logged as "ignored".
pub(crate) const IGNORED_KEYS: &[&str] = &[
    "serverTcpLinger",
    "serverNumIOThreads",
    "byteBufAllocatorSizeInitial",
    "byteBufAllocatorSizeMin",
    "byteBufAllocatorSizeMax",
    "serverWriteBufferLowWaterMark",
    "serverWriteBufferHighWaterMark",
    "numHighPriorityWorkerThreads",
    "numLongPollWorkerThreads",
    "numJournalCallbackThreads",
    "readWorkerThreadsThrottlingEnabled",
    "requestTimerTickDurationMs",
    "requestTimerNumTicks",
    "waitTimeoutOnResponseBackpressureMs",
    "tlsProvider",
    "tlsClientAuthentication",
    "tlsKeyStoreType",
    "tlsKeyStore",
    "tlsKeyStorePasswordPath",
    "tlsTrustStoreType",
    "tlsTrustStore",
    "tlsTrustStorePasswordPath",
    "tlsCertificatePath",
    "tlsCertFilesRefreshDurationSeconds",
    "allowMultipleDirsUnderSameDiskPartition",
    "dbStorage_directIOEntryLogger",
    "dbStorage_directIOEntryLoggerTotalWriteBufferSizeMB",
    "dbStorage_directIOEntryLoggerTotalReadBufferSizeMB",
    "dbStorage_directIOEntryLoggerReadBufferSizeMB",
    "dbStorage_directIOEntryLoggerMaxFdCacheTimeSeconds",
    "defaultRocksdbConf",
    "entryLocationRocksdbConf",
    "ledgerMetadataRocksdbConf",
    "entryLogPerLedgerEnabled",
    "fileInfoFormatVersionToWrite",
    "openFileLimit",
    "pageLimit",
    "pageSize",
    "sortedLedgerStorageEnabled",
    "skipListSizeLimit",
    "gcOverreplicatedLedgerMaxConcurrentRequests",
    "gcMetadataOpRateLimit",
    "useTransactionalCompaction",
    "gcEntryLogMetadataCacheEnabled",
    "entryLocationCompactionInterval",
    "zkRetryBackoffStartMs",
    "zkRetryBackoffMaxMs",
    "httpServerClass",
    "httpServerTlsEnable",
    "prometheusStatsLatencyRolloverSeconds",
    "exposeDefaultJVMMetrics",
    "bookieDeathWatchInterval",
    "autoRecoveryDaemonEnabled",
    "useV2WireProtocol",
    "dataIntegrityChecking",
    "localConsistencyCheckOnStartup",
    "extraServerComponents",
    "preserveMdcForTaskExecution",
    "ledgerManagerFactoryClass",
    "lostBookieRecoveryDelay",
    "rereplicationEntryBatchSize",
    "auditorPeriodicCheckInterval",
    "auditorPeriodicBookieCheckInterval",
    "openLedgerRereplicationGracePeriod",
    "numEntriesInReplicationTaskBatch",
    "zkRequestRateLimit",
    "limitStatsLogging",
    "ensemblePlacementPolicy",
    "reppDnsResolverClass",
    "enableBusyWait",
    "stickyReadSEnabled",
    "reorderReadSequenceEnabled",
    "enableLocalTransport",
    "disableServerSocketBind",
    "skipListArenaChunkSize",
    "skipListArenaMaxAllocSize",
    "ledgerManagerType",
    "allowShadedLedgerManagerFactoryClass",
    "shadedLedgerManagerFactoryClassPrefix",
];

/// Refuses the security features bookie-rs does not implement.
pub(crate) fn refuse_insecure(p: &mut Props) -> Result<(), ConfigError> {
    for key in ["tlsProviderFactoryClass", "bookieAuthProviderFactoryClass"] {
        if let Some(v) = p.string(key) {
            return Err(ConfigError::Unsupported {
                key: key.into(),
                reason: format!(
                    "\"{v}\" is set but bookie-rs supports neither TLS nor authentication; unset it"
                ),
            });
        }
    }
    if p.bool("zkEnableSecurity", false)? {
        return Err(ConfigError::Unsupported {
            key: "zkEnableSecurity".into(),
            reason: "ZooKeeper ACL security (SASL) is not supported by bookie-rs".into(),
        });
    }
    Ok(())
}

/// Sorts the keys no section read into `report`'s ignored and unknown lists (key order).
pub(crate) fn classify_unused(p: &Props, report: &mut LoadReport) {
    for key in p.unused_keys() {
        if IGNORED_KEYS.contains(&key.as_str()) || key.starts_with("dbStorage_rocksDB_") {
            report.ignored_keys.push(key.clone());
        } else {
            report.unknown_keys.push(key.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{BookieArgs, BookieConfig};

    #[test]
    fn every_listed_key_is_reported_as_ignored_and_read_by_no_section() {
        let args = BookieArgs {
            standalone: true,
            set: IGNORED_KEYS.iter().map(|k| format!("{k}=1")).collect(),
            ..Default::default()
        };
        let (_, report) = BookieConfig::from_text_and_args(None, None, &args).unwrap();
        let mut listed: Vec<String> = IGNORED_KEYS.iter().map(|k| k.to_string()).collect();
        listed.sort();
        assert_eq!(report.ignored_keys, listed);
        assert!(report.unknown_keys.is_empty(), "{report:?}");
    }
}
