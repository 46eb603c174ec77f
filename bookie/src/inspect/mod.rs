//! `bookie inspect ...`: read-only inspection of a bookie's own directories, the
//! equivalents of the Java shell's local-file commands for our formats (docs/operations.md
//! §1): `lastmark`, `journal` (`readjournal`), `segments` (`listfilesondisc`), `segment`
//! (`readlog`), `ledger` (`ledger`) and `verify` (the offline scrubber).
//!
//! Guarantees:
//! - the directories are the ones the bookie would use with the same `--conf` and flags
//!   (the same `BookieConfig` loader, then `config::mapping`'s `current/` subdirectories);
//! - nothing is written, created, renamed or locked ([`files`] opens read-only), so it
//!   is safe beside a running bookie; a file that vanishes meanwhile is skipped;
//! - text goes to stdout in the Java tools' line shapes; `--json` prints one JSON
//!   document instead; logs go to stderr;
//! - exit codes: 0 done (for `verify`: no problem found), 1 a finding (`verify` found a
//!   problem, `lastmark` a damaged checkpoint, `segment` an entry failing its check,
//!   `ledger` a ledger this bookie holds nothing of), 2 bad arguments or configuration,
//!   3 the files could not be read (a configured directory is missing, an I/O error).

mod entrylog_scan;
mod files;
mod journal;
mod journal_scan;
mod lastmark;
mod ledger;
mod segment;
mod segments;
mod verify;

use std::ffi::OsString;

use clap::{Parser, Subcommand};

use crate::config::{BookieArgs, BookieConfig};
pub use files::Dirs;

/// `bookie inspect`: flags of the bookie (the same configuration), then a subcommand.
#[derive(Parser, Debug)]
#[command(
    name = "bookie inspect",
    about = "Read a bookie's journal and ledger directories without writing (safe beside a live bookie)"
)]
struct InspectArgs {
    #[command(flatten)]
    bookie: BookieArgs,
    /// Print one JSON document instead of text.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// The journal checkpoint of every journal directory (Java: `lastmark`).
    Lastmark,
    /// Journal segments and their records (Java: `readjournal`).
    Journal {
        /// Only this segment id (the hex of its file name, or decimal).
        #[arg(long)]
        segment: Option<String>,
    },
    /// Journal and entry-log files with sizes, entry counts and ledgers (Java: `listfilesondisc`).
    Segments,
    /// The entries of one entry-log segment (Java: `readlog`).
    Segment {
        /// Segment id (the hex of its file name, or decimal).
        id: String,
        /// Only entries of this ledger.
        #[arg(short = 'l', long = "ledger")]
        ledger: Option<u64>,
        /// Only this entry (with --ledger).
        #[arg(short = 'e', long = "entry")]
        entry: Option<u64>,
    },
    /// Where a ledger's entries are and its state (Java: `ledger`).
    Ledger {
        /// Ledger id.
        id: u64,
    },
    /// Read every segment and journal record and check every CRC, footer and chain.
    Verify,
}

/// What a subcommand produced.
pub struct Output {
    pub text: String,
    pub json: serde_json::Value,
    pub code: i32,
}

/// A failure to do the inspection at all (not a finding).
#[derive(Debug, thiserror::Error)]
pub enum InspectError {
    #[error("{0}")]
    Usage(String),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

impl InspectError {
    fn io(what: impl std::fmt::Display, source: std::io::Error) -> InspectError {
        InspectError::Io {
            what: what.to_string(),
            source,
        }
    }
}

/// Parses a segment id: 16 hex digits as in file names (or with `0x`), else decimal.
fn parse_id(s: &str) -> Result<u64, InspectError> {
    let t = s.trim();
    let parsed = if let Some(h) = t.strip_prefix("0x") {
        u64::from_str_radix(h, 16).ok()
    } else if t.len() == 16 {
        u64::from_str_radix(t, 16).ok()
    } else {
        t.parse::<u64>().ok()
    };
    parsed.ok_or_else(|| InspectError::Usage(format!("not a segment id: {s:?}")))
}

/// Runs `bookie inspect` with `argv` (starting with "inspect"); returns the exit code.
pub fn main(argv: impl IntoIterator<Item = OsString>) -> i32 {
    let args = match InspectArgs::try_parse_from(argv) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    // Logs (configuration warnings) go to stderr: stdout is the report.
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .try_init();
    let mut bookie_args = args.bookie.clone();
    // The metadata service is not needed to read files.
    bookie_args.standalone = true;
    let cfg = match BookieConfig::load(&bookie_args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("bookie inspect: configuration error: {e}");
            return 2;
        }
    };
    let dirs = Dirs::from_config(&cfg);
    match run(&dirs, &args.command) {
        Ok(out) => {
            let report = if args.json {
                serde_json::to_string_pretty(&out.json).unwrap_or_default() + "\n"
            } else {
                out.text
            };
            // A closed pipe (`| head`) is not a failure of the inspection.
            use std::io::Write;
            let mut stdout = std::io::stdout().lock();
            match stdout
                .write_all(report.as_bytes())
                .and_then(|()| stdout.flush())
            {
                Ok(()) => out.code,
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => out.code,
                Err(e) => {
                    eprintln!("bookie inspect: writing the report: {e}");
                    3
                }
            }
        }
        Err(InspectError::Usage(m)) => {
            eprintln!("bookie inspect: {m}");
            2
        }
        Err(e) => {
            eprintln!("bookie inspect: {e}");
            3
        }
    }
}

fn run(dirs: &Dirs, cmd: &Command) -> Result<Output, InspectError> {
    match cmd {
        Command::Lastmark => lastmark::run(dirs),
        Command::Journal { segment } => {
            let seg = segment.as_deref().map(parse_id).transpose()?;
            journal::run(dirs, seg)
        }
        Command::Segments => segments::run(dirs),
        Command::Segment { id, ledger, entry } => {
            if entry.is_some() && ledger.is_none() {
                return Err(InspectError::Usage("--entry needs --ledger".into()));
            }
            segment::run(dirs, parse_id(id)?, *ledger, *entry)
        }
        Command::Ledger { id } => ledger::run(dirs, *id),
        Command::Verify => verify::run(dirs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_ids_parse_as_file_names_show_them() {
        assert_eq!(parse_id("000000000000001f").unwrap(), 31);
        assert_eq!(parse_id("0x1f").unwrap(), 31);
        assert_eq!(parse_id("31").unwrap(), 31);
        assert!(parse_id("x").is_err());
    }

    #[test]
    fn flags_come_before_or_after_the_subcommand() {
        let a =
            InspectArgs::try_parse_from(["inspect", "--data-dir", "/d", "ledger", "5", "--json"])
                .unwrap();
        assert!(a.json);
        assert!(matches!(a.command, Command::Ledger { id: 5 }));
        let a =
            InspectArgs::try_parse_from(["inspect", "segment", "3", "-l", "1", "-e", "2"]).unwrap();
        assert!(matches!(
            a.command,
            Command::Segment {
                ledger: Some(1),
                entry: Some(2),
                ..
            }
        ));
    }
}
