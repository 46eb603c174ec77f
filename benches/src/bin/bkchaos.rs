//! `bkchaos`: runs a chaos drill (docs/chaos.md §7) and exits non-zero when an acknowledged
//! entry was lost.
//!
//! ```text
//! bkchaos [--bookie-bin PATH] [--dir DIR] [--keep] [--set KEY=VALUE]... [--json FILE] [--svg FILE] DRILL
//! ```
//!
//! Exit status: 0 every acknowledged copy verified (or its corruption detected); 1 a copy
//! lost, unverifiable, a read served wrong bytes, or nothing acknowledged; 2 the drill could
//! not run (usage, drill file, a bookie that does not start).

// A tool, not the bookie: it writes reports and scratch directories with std::fs directly
// (ARCHITECTURE.md invariant 1 binds the bookie's crates; see clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::PathBuf;
use std::process::ExitCode;

use bkbench::chaos::{drill::parse_drill, run_drill, RunOptions};

const USAGE: &str = "usage: bkchaos [--bookie-bin PATH] [--dir DIR] [--keep] [--set KEY=VALUE]... \
[--json FILE] [--svg FILE] DRILL
  --bookie-bin  the bookie binary (default: $BOOKIE_BIN, else `bookie` beside bkchaos)
  --dir         where the bookies' directories and logs go (default: a new one in $TMPDIR,
                removed after a passing drill unless --keep)
  --set         a bookie setting for every bookie, after the drill's own (repeatable)
  --json, --svg write the report as JSON / the timeline as SVG too";

struct Args {
    drill: PathBuf,
    bookie_bin: Option<PathBuf>,
    dir: Option<PathBuf>,
    keep: bool,
    sets: Vec<String>,
    json: Option<PathBuf>,
    svg: Option<PathBuf>,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let mut a = Args {
        drill: PathBuf::new(),
        bookie_bin: None,
        dir: None,
        keep: false,
        sets: Vec::new(),
        json: None,
        svg: None,
    };
    let mut drill = None;
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--bookie-bin" => a.bookie_bin = Some(value("--bookie-bin")?.into()),
            "--dir" => a.dir = Some(value("--dir")?.into()),
            "--keep" => a.keep = true,
            "--set" => {
                let kv = value("--set")?;
                if !kv.contains('=') {
                    return Err(format!("--set expects KEY=VALUE, got '{kv}'"));
                }
                a.sets.push(kv);
            }
            "--json" => a.json = Some(value("--json")?.into()),
            "--svg" => a.svg = Some(value("--svg")?.into()),
            "-h" | "--help" => return Err(String::new()),
            other if other.starts_with('-') => return Err(format!("unknown option {other}")),
            other => {
                if drill.replace(PathBuf::from(other)).is_some() {
                    return Err("give one drill file".into());
                }
            }
        }
    }
    a.drill = drill.ok_or("no drill file given")?;
    Ok(a)
}

fn default_bookie_bin() -> PathBuf {
    if let Some(b) = std::env::var_os("BOOKIE_BIN") {
        return b.into();
    }
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(|d| d.join("bookie")))
        .unwrap_or_else(|| "bookie".into())
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("bkchaos: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let text = match std::fs::read_to_string(&args.drill) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("bkchaos: cannot read {}: {e}", args.drill.display());
            return ExitCode::from(2);
        }
    };
    let name = args
        .drill
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("drill")
        .to_string();
    let drill = match parse_drill(&name, &text) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("bkchaos: {}: {e}", args.drill.display());
            return ExitCode::from(2);
        }
    };
    let (dir, made_dir) = match &args.dir {
        Some(d) => (d.clone(), false),
        None => (
            std::env::temp_dir().join(format!("bkchaos-{name}-{}", std::process::id())),
            true,
        ),
    };
    let opts = RunOptions {
        bookie_bin: args.bookie_bin.clone().unwrap_or_else(default_bookie_bin),
        dir: dir.clone(),
        sets: args.sets.clone(),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("bkchaos: cannot start the runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let report = match runtime.block_on(run_drill(drill, &opts)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("bkchaos: drill {name} could not run: {e}");
            eprintln!("bkchaos: directories and logs kept in {}", dir.display());
            return ExitCode::from(2);
        }
    };
    // The bookies were killed when run_drill returned (Bookie's Drop).
    drop(runtime);
    print!("{}", report.text());
    for (path, body) in [(&args.json, report.json()), (&args.svg, report.svg())] {
        if let Some(p) = path {
            if let Err(e) = std::fs::write(p, body) {
                eprintln!("bkchaos: cannot write {}: {e}", p.display());
                return ExitCode::from(2);
            }
        }
    }
    if report.passed && made_dir && !args.keep {
        let _ = std::fs::remove_dir_all(&dir);
    } else {
        println!("directories and logs: {}", dir.display());
    }
    if report.passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
