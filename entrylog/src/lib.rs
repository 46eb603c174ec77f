//! bk-entrylog: placeholder; the owning issue fills this crate in.
