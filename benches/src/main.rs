//! `bkbench`: fio for bookies.
//!
//! Parses fio-style job files and `--key=value` options (options.rs, jobfile.rs), drives one or
//! more bookies over the wire in v2 or v3 with many requests in flight (client.rs, job.rs), and
//! prints fio-like reports as text or JSON (report.rs), with per-second CSV logs and SVG charts
//! (chart.rs). `bkbench compare` turns result files into the side-by-side table of
//! benches/compare.sh (compare.rs).
//!
//! Exit status: 0 when every request succeeded, 1 for a bad option/job file or a bookie that
//! cannot be reached, 2 when the run finished but some requests failed (the report says which).

// A benchmark tool, not the bookie: it writes reports and scratch directories with std::fs
// directly, so it is exempt from ARCHITECTURE.md invariant 1 (see clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use bkbench::{chart, compare, job, jobfile, options, report, stats};

use std::io::{IsTerminal as _, Write as _};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use jobfile::{CommandLine, OutputFormat};
use options::JobSpec;
use report::{JobResult, RunReport};

const USAGE: &str = "\
bkbench: fio for bookies

usage:
  bkbench [--OPTION=VALUE ...] [JOBFILE ...] [--name=JOB --OPTION=VALUE ...]...
  (every --OPTION=VALUE may also be written --OPTION VALUE, as with fio)
  bkbench compare --ours=A.json[,B.json...] [--java=...] [--fio=...] [--rss-ours=KIB] [--rss-java=KIB]

Job files use fio's INI syntax: [global] then one [section] per job, key=value lines.
Options before the first --name apply to every job (overriding job files); --name=X starts a
job whose options follow it. Jobs run concurrently unless a job says `stonewall` (wait for all
earlier jobs) or --serial is given (every job waits for the previous one).

run options:
  --output-format=normal|json   report format (default normal)
  --output=FILE                 write the report to FILE instead of stdout
  --serial                      run jobs one after another
  --section=NAME[,NAME]         run only these jobs of the job files
  --progress=0                  no progress line on stderr
  --threads=N                   client runtime threads (default 1, a current-thread runtime; leaves CPU to a local bookie)
  --cmdhelp                     list every job option
  --help, --version

example:
  bkbench --bookie=127.0.0.1:3181 --name=w --rw=write --bs=1k --iodepth=64 --runtime=10s
  bkbench benches/jobs/standard.fio --bookie=127.0.0.1:3181 --output-format=json --output=r.json
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("compare") {
        return match compare::main(&args[1..]) {
            Ok(text) => {
                print!("{text}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("bkbench compare: {e}");
                ExitCode::from(1)
            }
        };
    }
    let cl = match jobfile::parse_command_line(&args) {
        Ok(cl) => cl,
        Err(e) => {
            eprintln!("bkbench: {e}");
            return ExitCode::from(1);
        }
    };
    if cl.help || args.is_empty() {
        print!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    if cl.version {
        println!("bkbench {}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    if cl.cmdhelp {
        for o in options::OPTIONS {
            println!(
                "{:<14} {:<26} default {:<14} {}",
                o.name,
                o.syntax,
                if o.default.is_empty() { "-" } else { o.default },
                o.help
            );
        }
        return ExitCode::SUCCESS;
    }
    let groups = match load_jobs(&cl) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("bkbench: {e}");
            return ExitCode::from(1);
        }
    };
    if groups.is_empty() {
        eprintln!("bkbench: no jobs defined (give a job file or --name=JOB)");
        return ExitCode::from(1);
    }
    // One thread: a current-thread runtime. It runs woken tasks in order, so the connection
    // writers run after every request a batch of responses released was queued, and send
    // them in one write. Tokio's multi-thread scheduler (even with one worker) runs the last
    // woken task first: a writer woken by one request sent it alone (measured: the bookie
    // read 0.53 times per add from such a client, 0.044 from this one).
    let built = if cl.threads == 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(cl.threads)
            .enable_all()
            .build()
    };
    let rt = match built {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("bkbench: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let report = match rt.block_on(run_all(groups, cl.progress)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("bkbench: {e}");
            return ExitCode::from(1);
        }
    };
    rt.shutdown_timeout(Duration::from_secs(1));
    if let Err(e) = write_logs(&report.jobs) {
        eprintln!("bkbench: {e}");
        return ExitCode::from(1);
    }
    let text = match cl.output_format {
        OutputFormat::Normal => report::run_text(&report),
        OutputFormat::Json => report::run_json(&report) + "\n",
    };
    match &cl.output {
        Some(path) => {
            if let Err(e) = std::fs::write(path, &text) {
                eprintln!("bkbench: cannot write {path}: {e}");
                return ExitCode::from(1);
            }
        }
        None => {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(text.as_bytes());
        }
    }
    if report.jobs.iter().any(|j| j.total_errors() > 0) {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}

fn load_jobs(cl: &CommandLine) -> Result<Vec<Vec<JobSpec>>, String> {
    let mut defs = Vec::new();
    for path in &cl.job_files {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read job file {path}: {e}"))?;
        defs.extend(jobfile::parse_job_file(path, &text).map_err(|e| e.to_string())?);
    }
    jobfile::resolve(defs, cl).map_err(|e| e.to_string())
}

async fn run_all(groups: Vec<Vec<JobSpec>>, progress: bool) -> Result<RunReport, String> {
    let timestamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let ids = Arc::new(job::LedgerIdAlloc::from_clock());
    let mut results = Vec::new();
    for (gid, group) in groups.into_iter().enumerate() {
        let mut jobs = Vec::new();
        for spec in group {
            jobs.push(job::Job::connect(spec, gid, ids.clone()).await?);
        }
        let mut handles = Vec::new();
        for j in &jobs {
            handles.push(tokio::spawn(j.clone().run()));
        }
        let progress_task = progress.then(|| tokio::spawn(progress_loop(jobs.clone())));
        for h in handles {
            match h.await {
                Ok(r) => results.push(r),
                Err(e) => return Err(format!("a job task failed: {e}")),
            }
        }
        if let Some(p) = progress_task {
            p.abort();
            if std::io::stderr().is_terminal() {
                eprint!("\r\x1b[2K");
            }
        }
    }
    Ok(RunReport {
        version: env!("CARGO_PKG_VERSION").to_string(),
        timestamp,
        jobs: results,
    })
}

/// One line on stderr per second: each running job's last second.
async fn progress_loop(jobs: Vec<Arc<job::Job>>) {
    let t0 = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let mut parts = Vec::new();
        for j in &jobs {
            if j.is_stopped() {
                parts.push(format!("{}: done", j.spec.name));
                continue;
            }
            if !j.is_measuring() {
                parts.push(format!(
                    "{}: {}",
                    j.spec.name,
                    if j.spec.prefill > 0 {
                        "prefill/ramp"
                    } else {
                        "ramp"
                    }
                ));
                continue;
            }
            let rows = j.progress_rows();
            let cells: Vec<String> = rows
                .iter()
                .map(|r| {
                    format!(
                        "{} {} IOPS {}/s p99={:.0}us{}",
                        match r.op {
                            stats::OpKind::Write => "w",
                            stats::OpKind::Read => "r",
                        },
                        report::human_count(r.iops as f64),
                        report::human_bytes(r.bw_bytes as f64),
                        r.lat_p99_us,
                        if r.errors > 0 {
                            format!(" err={}", r.errors)
                        } else {
                            String::new()
                        }
                    )
                })
                .collect();
            if cells.is_empty() {
                parts.push(format!("{}: measuring", j.spec.name));
            } else {
                parts.push(format!("{}: {}", j.spec.name, cells.join(", ")));
            }
        }
        // One line rewritten in place on a terminal; plain lines in a log file.
        let line = format!("[{:>4}s] {}", t0.elapsed().as_secs(), parts.join(" | "));
        if std::io::stderr().is_terminal() {
            eprint!("\r\x1b[2K{line}");
        } else {
            eprintln!("{line}");
        }
        let _ = std::io::stderr().flush();
    }
}

/// `write_lat_log=PREFIX`: PREFIX_<job>.csv and PREFIX_<job>.svg.
fn write_logs(jobs: &[JobResult]) -> Result<(), String> {
    for j in jobs {
        let Some(prefix) = &j.options.write_lat_log else {
            continue;
        };
        let safe: String = j
            .jobname
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let csv = format!("{prefix}_{safe}.csv");
        let svg = format!("{prefix}_{safe}.svg");
        std::fs::write(&csv, report::timeline_csv(&j.timeline))
            .map_err(|e| format!("cannot write {csv}: {e}"))?;
        std::fs::write(&svg, chart::render(&j.jobname, &j.timeline))
            .map_err(|e| format!("cannot write {svg}: {e}"))?;
    }
    Ok(())
}
