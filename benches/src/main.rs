//! `bkbench`: a fio-style benchmark harness for bookies.
fn main() {}
