//! Fuzz target `zk_metadata`: decoders of the other bytes the bookie reads from ZooKeeper:
//! the `BookieServiceInfo` protobuf of the registration znodes
//! (`bookie::registration::BookieServiceInfo::decode`), the `LAYOUT` znode check, and the
//! ledger-tree child names the GC scan follows (`bookie::gc_scan::{classify_root_child,
//! is_tree_dir, leaf_ledger_id}`).
//!
//! Checks: nothing panics on arbitrary bytes; a decoded BookieServiceInfo re-encodes to bytes
//! that decode to an equal value; every ledger id a BookKeeper client can create
//! (`0..=i64::MAX`, taken from the first 8 input bytes) maps through `ledger_path` to a path
//! whose names the scan walks back to exactly that id (also for the legacy flat layout), and
//! larger ids never map to a path the scan reads as another ledger.
#![no_main]
use bookie::gc_scan::{
    classify_root_child, is_tree_dir, layout_is_zk_tree, leaf_ledger_id, ledger_path, RootChild,
};
use bookie::registration::BookieServiceInfo;

/// Walks the names of `path` below `root` the way the scan does; the id found, if any.
fn scan_path(root: &str, path: &str) -> Option<u64> {
    let rest = path.strip_prefix(root)?.strip_prefix('/')?;
    let mut names = rest.split('/');
    let top = names.next()?;
    match classify_root_child(top) {
        RootChild::FlatLedger(id) => return names.next().is_none().then_some(id),
        RootChild::Other => return None,
        RootChild::ShortTree | RootChild::LongTree => {}
    }
    let mut levels = classify_root_child(top).dir_levels()?;
    let mut digits = top.to_string();
    while levels > 0 {
        let d = names.next()?;
        if !is_tree_dir(d) {
            return None;
        }
        digits.push_str(d);
        levels -= 1;
    }
    let leaf = leaf_ledger_id(&digits, names.next()?)?;
    names.next().is_none().then_some(leaf)
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(info) = BookieServiceInfo::decode(data) {
        let enc = info.encode();
        assert_eq!(BookieServiceInfo::decode(&enc).as_ref(), Ok(&info));
        let _ = info.rpc_endpoint();
    }

    let _ = layout_is_zk_tree(data);

    // Arbitrary child names (the input split at '/', as znode names cannot hold one).
    let text = String::from_utf8_lossy(data);
    for name in text.split('/') {
        let _ = classify_root_child(name);
        let _ = is_tree_dir(name);
        let _ = leaf_ledger_id("00", name);
        let _ = leaf_ledger_id(name, name);
    }

    if data.len() >= 8 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&data[..8]);
        let id = u64::from_le_bytes(b);
        let root = "/ledgers";
        let path = ledger_path(root, id);
        let found = scan_path(root, &path);
        if id <= i64::MAX as u64 {
            assert_eq!(found, Some(id), "ledger {id} at {path}");
        } else {
            assert!(
                found.is_none_or(|f| f == id),
                "ledger {id} at {path} reads back as ledger {found:?}"
            );
        }
        if id < 10_000_000_000 {
            let flat = format!("L{id:010}");
            assert_eq!(classify_root_child(&flat), RootChild::FlatLedger(id));
        }
    }
});
