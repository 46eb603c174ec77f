//! `bkchaos`: runs a chaos drill (docs/chaos.md §7) and exits non-zero when an acknowledged
//! entry was lost.
//!
//! ```text
//! bkchaos [--impl rust|java] [--zookeeper] [--bookie-bin PATH] [--java-classpath CP]
//!         [--attach ADDR[=ADMIN],...] [--dir DIR] [--keep] [--set KEY=VALUE]...
//!         [--json FILE] [--svg FILE] DRILL
//! ```
//!
//! Exit status: 0 every acknowledged copy verified (or its corruption detected), every step
//! done and no problem; 1 a copy lost, unverifiable, a read served wrong bytes, nothing
//! acknowledged, a failed step or a problem (a bookie that exited unasked, one not registered
//! again); 2 the drill could not run (usage, drill file, a bookie that does not start, a
//! drill that injects faults given `--impl java`).

// A tool, not the bookie: it writes reports and scratch directories with std::fs directly
// (ARCHITECTURE.md invariant 1 binds the bookie's crates; see clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use bkbench::chaos::bookies::{Attached, Implementation};
use bkbench::chaos::{drill::parse_drill, run_drill, RunOptions};

const USAGE: &str = "usage: bkchaos [--impl rust|java] [--zookeeper] [--bookie-bin PATH] \
[--java-classpath CP] [--attach ADDR[=ADMIN],...] [--dir DIR] [--keep] [--set KEY=VALUE]... \
[--json FILE] [--svg FILE] DRILL
  --impl        the bookies to drill: rust (bookie-rs, the default) or java (the stock Java
                bookie, registered in a ZooKeeper bkchaos starts; drills without chaos = true)
  --zookeeper   register the bookies in a ZooKeeper of the drill's own even when the drill
                does not ask for one (zookeeper = true), as Java bookies always are: the
                side-by-side runs (benches/chaos/side-by-side.sh) start both kinds alike
  --bookie-bin  the bookie binary (default: $BOOKIE_BIN, else `bookie` beside bkchaos)
  --java-classpath  the stock bookie's classpath (default: $BKCHAOS_JAVA_CP, else the jars
                of tests/interop's Maven build: tests/interop/target/lib/*)
  --attach      drill running bookies instead of starting any: host:port of each (the
                drill's bookies, in index order), =host:port of its admin HTTP server for
                inject/clear (bookies started with chaosEnabled=true); only inject and clear
                steps; a test cluster only: the load writes ledgers of its own to them
  --dir         where the bookies' directories and logs go (default: a new one in $TMPDIR,
                removed after a passing drill unless --keep)
  --set         a bookie setting for every bookie, after the drill's own (repeatable)
  --json, --svg write the report as JSON / the timeline as SVG too";

struct Args {
    drill: PathBuf,
    implementation: Implementation,
    java_classpath: Option<String>,
    zookeeper: bool,
    bookie_bin: Option<PathBuf>,
    dir: Option<PathBuf>,
    keep: bool,
    sets: Vec<String>,
    attach: Vec<Attached>,
    json: Option<PathBuf>,
    svg: Option<PathBuf>,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let mut a = Args {
        drill: PathBuf::new(),
        implementation: Implementation::Rust,
        java_classpath: None,
        zookeeper: false,
        bookie_bin: None,
        dir: None,
        keep: false,
        sets: Vec::new(),
        attach: Vec::new(),
        json: None,
        svg: None,
    };
    let mut drill = None;
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--bookie-bin" => a.bookie_bin = Some(value("--bookie-bin")?.into()),
            "--impl" => {
                a.implementation = match value("--impl")?.as_str() {
                    "rust" => Implementation::Rust,
                    "java" => Implementation::Java,
                    other => return Err(format!("--impl expects rust or java, got '{other}'")),
                }
            }
            "--java-classpath" => a.java_classpath = Some(value("--java-classpath")?),
            "--zookeeper" => a.zookeeper = true,
            "--dir" => a.dir = Some(value("--dir")?.into()),
            "--keep" => a.keep = true,
            "--set" => {
                let kv = value("--set")?;
                if !kv.contains('=') {
                    return Err(format!("--set expects KEY=VALUE, got '{kv}'"));
                }
                a.sets.push(kv);
            }
            "--attach" => {
                for one in value("--attach")?
                    .split(',')
                    .filter(|s| !s.trim().is_empty())
                {
                    a.attach.push(Attached::parse(one)?);
                }
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

/// `$BKCHAOS_JAVA_CP`, else tests/interop's Maven build (bookkeeper-server and its
/// dependencies in target/lib); Err with how to build it when it is missing.
fn default_java_classpath() -> Result<String, String> {
    if let Ok(cp) = std::env::var("BKCHAOS_JAVA_CP") {
        return Ok(cp);
    }
    let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/interop/target/lib");
    let has_server = std::fs::read_dir(&lib).is_ok_and(|d| {
        d.flatten().any(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("bookkeeper-server-")
        })
    });
    if !has_server {
        return Err(format!(
            "no stock bookie jars in {}: build them with `(cd tests/interop && mvn -q package)`, \
             or give --java-classpath / $BKCHAOS_JAVA_CP",
            lib.display()
        ));
    }
    Ok(format!("{}/*", lib.display()))
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
        Ok(mut d) => {
            d.zookeeper |= args.zookeeper;
            d
        }
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
    let java_classpath = match (&args.java_classpath, args.implementation) {
        (Some(cp), _) => cp.clone(),
        (None, Implementation::Java) => match default_java_classpath() {
            Ok(cp) => cp,
            Err(e) => {
                eprintln!("bkchaos: {e}");
                return ExitCode::from(2);
            }
        },
        (None, Implementation::Rust) => String::new(),
    };
    let opts = RunOptions {
        implementation: args.implementation,
        java_classpath,
        bookie_bin: args.bookie_bin.clone().unwrap_or_else(default_bookie_bin),
        dir: dir.clone(),
        sets: args.sets.clone(),
        attach: args.attach.clone(),
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
