//! Fuzz target `ledger_state`: decoding arbitrary bytes as the entry log's `ledgers.state`
//! file (the fencing, master-key, LAC and tombstone records and the segment list the bookie
//! relies on at start-up) never panics, and a decoded file re-encodes to bytes that decode to
//! the same state.
#![no_main]
use bk_entrylog::format::StateFile;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(state) = StateFile::decode(data) {
        let again = StateFile::decode(&state.encode()).expect("a re-encoded state file decodes");
        assert_eq!(again, state);
    }
});
