//! Fuzz target `chaos_spec`: the chaos layer's JSON fault spec and plan parsers
//! (`bk_disk::chaos::FaultSpec::from_json`, `parse_plan`), which read the body of
//! `POST /api/v1/chaos/faults` and the `chaosFaultPlan` file (docs/chaos.md).
//!
//! Input: the JSON text (seeded from `fuzz/seeds/chaos_spec/`).
//!
//! Checks: nothing panics; an accepted spec written back as JSON parses to an equal spec;
//! matching it against names cut from the input and every operation never panics; the
//! glob matcher matches a pattern without `*`/`?` exactly against itself.
#![no_main]
use bk_disk::chaos::{glob_match, parse_plan, DirKind, FaultSpec, OpKind};

const OPS: [OpKind; 6] = [
    OpKind::Read,
    OpKind::Write,
    OpKind::Fdatasync,
    OpKind::Fallocate,
    OpKind::Open,
    OpKind::Rename,
];

fn check(spec: &FaultSpec, names: &[&str]) {
    let text = serde_json::to_vec(spec).expect("a spec serializes");
    let back = FaultSpec::from_json(&text).expect("a written spec parses");
    assert_eq!(&back, spec, "{}", String::from_utf8_lossy(&text));
    for name in names {
        for op in OPS {
            for dir in [
                None,
                Some(DirKind::Journal),
                Some(DirKind::Ledgers),
                Some(DirKind::Index),
            ] {
                let _ = spec.matches(dir, name, op);
            }
        }
    }
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let names: Vec<&str> = text.split('"').take(8).collect();
    if let Ok(spec) = FaultSpec::from_json(data) {
        check(&spec, &names);
    }
    if let Ok(plan) = parse_plan(data) {
        for spec in &plan {
            check(spec, &names);
        }
    }
    for name in &names {
        if !name.contains(['*', '?']) {
            assert!(glob_match(name.as_bytes(), name.as_bytes()), "{name:?}");
        }
        let _ = glob_match(name.as_bytes(), text.as_bytes());
    }
});
