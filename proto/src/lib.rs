//! bk-proto: placeholder; the owning issue fills this crate in.
