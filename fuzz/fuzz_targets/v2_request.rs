//! Fuzz target `v2_request`: placeholder until its owning crate provides the decoder.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = data;
});
