//! Fuzz target `segment_index`: decoding an arbitrary byte string as a whole segment
//! file (trailer, footer = the segment's index, and every entry it lists, checked
//! against the footer's CRC32C) never panics, and an accepted index is sorted and within the data.
#![no_main]
use bk_entrylog::format::decode_segment;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok((trailer, runs)) = decode_segment(data) {
        let mut prev_ledger = None;
        for r in &runs {
            assert!(prev_ledger < Some(r.ledger));
            prev_ledger = Some(r.ledger);
            for w in r.entries.windows(2) {
                assert!(w[0].entry < w[1].entry);
            }
            for e in &r.entries {
                assert!(e.offset + e.len as u64 <= trailer.data_len);
            }
        }
    }
});
