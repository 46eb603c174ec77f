//! Fuzz target `journal_record`: decoding arbitrary bytes as a journal record, record
//! header, group header (+ its records), checkpoint file, newest-segment record and typed payload never
//! panics, and whatever decodes re-encodes to the same bytes
//! (harness: `bk_journal::fuzz_support::record_target`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    bk_journal::fuzz_support::record_target(data);
});
