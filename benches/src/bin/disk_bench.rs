//! disk_bench: write+fdatasync latency and throughput of the bk-disk backends.
//!
//! For each batch size (4 KiB, 64 KiB, 1 MiB, 5 MiB) and each backend (io_uring,
//! syscall) it issues `WriteDatasync` operations one at a time (queue depth 1, as the
//! journal's group commit does) into a file pre-written with zeros (how the journal
//! preallocates), cycling over 8 batch-sized slots, and prints p50/p99 latency
//! and MB/s (bytes written / wall time, one operation in flight).
//!
//! Usage: `disk_bench [--dir DIR] [--backend uring|syscall|both] [--scale F]`
//! `--scale` multiplies the default iteration counts (200/200/50/20); keep it small.
//! DIR must be on the file system to measure (default: the current directory).

// A benchmark tool, not the bookie: it writes reports and scratch directories with std::fs
// directly, so it is exempt from ARCHITECTURE.md invariant 1 (see clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use bk_disk::{run_one, AlignedBuf, Disk, DiskConfig, DiskKind, Op, OpenOptions};
use std::path::PathBuf;
use std::time::Instant;

/// The file holds this many batch-sized slots, cycled over (overwrites of
/// pre-written blocks, as the journal does after preallocation).
const SLOTS: u64 = 8;

struct Args {
    dir: PathBuf,
    backends: Vec<DiskKind>,
    scale: f64,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        dir: PathBuf::from("."),
        backends: vec![DiskKind::Uring, DiskKind::Syscall],
        scale: 1.0,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut val = || it.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--dir" => args.dir = PathBuf::from(val()?),
            "--backend" => {
                let v = val()?;
                args.backends = if v == "both" {
                    vec![DiskKind::Uring, DiskKind::Syscall]
                } else {
                    vec![v.parse()?]
                }
            }
            "--scale" => args.scale = val()?.parse().map_err(|e| format!("--scale: {e}"))?,
            "-h" | "--help" => {
                return Err(
                    "usage: disk_bench [--dir DIR] [--backend uring|syscall|both] [--scale F]"
                        .into(),
                )
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(args)
}

fn percentile(sorted_us: &[f64], p: f64) -> f64 {
    if sorted_us.is_empty() {
        return 0.0;
    }
    let i = ((sorted_us.len() as f64 - 1.0) * p).round() as usize;
    sorted_us[i.min(sorted_us.len() - 1)]
}

fn bench(
    disk: &mut dyn Disk,
    path: &std::path::Path,
    size: usize,
    iters: usize,
) -> std::io::Result<(f64, f64, f64)> {
    let opts = OpenOptions {
        create: true,
        write: true,
        direct: true,
        ..Default::default()
    };
    let f = disk.open(path, opts)?;
    // Pre-write the file with zeros and sync it (the journal's preallocation).
    let chunk = 1 << 20;
    let file_bytes = (SLOTS * size as u64).div_ceil(chunk as u64) * chunk as u64;
    let mut off = 0u64;
    while off < file_bytes {
        let mut buf = AlignedBuf::with_capacity(chunk);
        buf.set_len(chunk);
        run_one(
            disk,
            Op::Write {
                file: f,
                offset: off,
                buf,
            },
        )
        .result?;
        off += chunk as u64;
    }
    run_one(disk, Op::Fdatasync { file: f }).result?;

    let mut lat_us = Vec::with_capacity(iters);
    let mut buf = AlignedBuf::with_capacity(size);
    buf.set_len(size);
    buf.as_mut_slice().fill(0x5a);
    let start = Instant::now();
    for i in 0..iters as u64 {
        let offset = (i % SLOTS) * size as u64;
        let t = Instant::now();
        let c = run_one(
            disk,
            Op::WriteDatasync {
                file: f,
                offset,
                buf,
            },
        );
        lat_us.push(t.elapsed().as_secs_f64() * 1e6);
        c.result?;
        buf = c
            .buf
            .ok_or_else(|| std::io::Error::other("buffer not handed back"))?;
    }
    let secs = start.elapsed().as_secs_f64();
    disk.close(f)?;
    lat_us.sort_by(f64::total_cmp);
    let mbs = (iters * size) as f64 / secs / 1e6;
    Ok((percentile(&lat_us, 0.5), percentile(&lat_us, 0.99), mbs))
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let sizes: [(usize, usize, &str); 4] = [
        (4 << 10, 200, "4KiB"),
        (64 << 10, 200, "64KiB"),
        (1 << 20, 50, "1MiB"),
        (5 << 20, 20, "5MiB"),
    ];
    println!("backend  size    iters  p50_us    p99_us    MB/s");
    for kind in &args.backends {
        let cfg = DiskConfig {
            kind: *kind,
            queue_depth: 8,
            inline_sync: false,
        };
        let mut opened = match bk_disk::open_disk(&cfg) {
            Ok(o) => o,
            Err(e) => {
                eprintln!("{kind:?}: cannot open: {e}");
                continue;
            }
        };
        for (size, base_iters, name) in sizes {
            let iters = ((base_iters as f64 * args.scale).ceil() as usize).max(1);
            let path = args
                .dir
                .join(format!("disk_bench.{}.{name}", std::process::id()));
            let r = bench(opened.disk.as_mut(), &path, size, iters);
            let _ = opened.disk.remove(&path);
            match r {
                Ok((p50, p99, mbs)) => println!(
                    "{:<8} {name:<7} {iters:<6} {p50:<9.0} {p99:<9.0} {mbs:.1}",
                    format!("{:?}", opened.kind).to_lowercase()
                ),
                Err(e) => eprintln!("{kind:?} {name}: {e}"),
            }
        }
    }
}
