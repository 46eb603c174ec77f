//! Fuzz target `journal_replay`: placeholder until its owning crate provides the decoder.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = data;
});
