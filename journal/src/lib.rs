//! bk-journal: placeholder; the owning issue fills this crate in.
