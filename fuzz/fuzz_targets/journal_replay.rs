//! Fuzz target `journal_replay`: replay over arbitrary segment contents on the
//! simulated disk (the input is a script of valid groups, raw bytes, bit flips and
//! skips across up to three segments, plus a checkpoint mark) either opens, with
//! records above the mark in strictly increasing seq order and a journal that
//! acknowledges a new append, or fails with a typed error; it never panics
//! (harness: `bk_journal::fuzz_support::replay_target`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    bk_journal::fuzz_support::replay_target(data);
});
