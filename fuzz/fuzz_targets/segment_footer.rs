//! Fuzz target `segment_footer`: decoding arbitrary bytes as a segment trailer, as a
//! segment footer (with the data length taken from the input), and as a ledger-state
//! file never panics; whatever decodes re-encodes to an equal value.
#![no_main]
use bk_entrylog::format::{decode_footer, encode_footer, StateFile, Trailer};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(t) = Trailer::decode(data, data.len() as u64) {
        assert_eq!(Trailer::decode(&t.encode(), 1 << 40).ok(), Some(t));
    }
    if data.len() >= 8 {
        let mut n = [0u8; 8];
        n.copy_from_slice(&data[..8]);
        let data_len = u64::from_le_bytes(n);
        if let Ok(runs) = decode_footer(&data[8..], data_len) {
            let mut enc = Vec::new();
            encode_footer(&runs, &mut enc);
            assert_eq!(decode_footer(&enc, data_len).ok(), Some(runs));
        }
    }
    if let Ok(s) = StateFile::decode(data) {
        assert_eq!(StateFile::decode(&s.encode()).ok(), Some(s));
    }
});
