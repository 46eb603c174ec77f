//! The `bookie` binary.
fn main() {}
