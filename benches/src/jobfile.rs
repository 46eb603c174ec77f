//! Job definitions from fio-style INI job files and from the command line.
//!
//! Job file syntax (fio's): `[section]` headers, `key=value` or bare `key` (a flag) lines,
//! `#` or `;` comments, blank lines ignored. `[global]` sections set defaults for the jobs that
//! follow them in the same file (several `[global]` sections accumulate, as in fio). Every other
//! section is a job named after the section.
//!
//! Command line: `--key=value` options before the first `--name=` apply to every job and
//! override job files; `--name=X` starts a job and the options after it belong to it (they
//! override the command-line globals). Positional arguments are job files.
//!
//! Grouping (fio's semantics): jobs run concurrently, except that a job with `stonewall` waits
//! for all earlier jobs to finish, starting a new group. `--serial` puts every job in its own
//! group, so they run one after another.

use crate::options::{JobSpec, OptionError, Origin, RawOption};

/// A job before typing: its name and its options in application order (earliest first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobDef {
    pub name: String,
    pub options: Vec<RawOption>,
}

/// Parses one job file. `path` is used only in error messages.
pub fn parse_job_file(path: &str, text: &str) -> Result<Vec<JobDef>, OptionError> {
    let mut globals: Vec<RawOption> = Vec::new();
    let mut jobs: Vec<JobDef> = Vec::new();
    // None = before any section; Some(None) = in [global]; Some(Some(i)) = in job i.
    let mut current: Option<Option<usize>> = None;
    for (i, raw_line) in text.lines().enumerate() {
        let origin = Origin::File {
            path: path.to_string(),
            line: i + 1,
        };
        let line = raw_line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            let name = rest
                .strip_suffix(']')
                .ok_or_else(|| OptionError::Syntax {
                    reason: format!("section header '{line}' has no closing ']'"),
                    origin: origin.clone(),
                })?
                .trim();
            if name.is_empty() {
                return Err(OptionError::Syntax {
                    reason: "empty section name '[]'".into(),
                    origin,
                });
            }
            if name.eq_ignore_ascii_case("global") {
                current = Some(None);
            } else {
                if jobs.iter().any(|j| j.name == name) {
                    return Err(OptionError::Syntax {
                        reason: format!("job '{name}' is defined twice"),
                        origin,
                    });
                }
                jobs.push(JobDef {
                    name: name.to_string(),
                    options: globals.clone(),
                });
                current = Some(Some(jobs.len() - 1));
            }
            continue;
        }
        let opt = parse_key_value(line, origin.clone())?;
        match current {
            None => {
                return Err(OptionError::Syntax {
                    reason: format!(
                        "option '{}' is outside any section (put it under [global] or a [job])",
                        opt.key
                    ),
                    origin,
                })
            }
            Some(None) => globals.push(opt),
            Some(Some(j)) => jobs[j].options.push(opt),
        }
    }
    Ok(jobs)
}

fn parse_key_value(line: &str, origin: Origin) -> Result<RawOption, OptionError> {
    // Trailing comments after a value are allowed when separated by whitespace.
    let line = match line.find(" #").or_else(|| line.find(" ;")) {
        Some(i) => line[..i].trim(),
        None => line,
    };
    let (key, value) = match line.split_once('=') {
        Some((k, v)) => (k.trim(), Some(v.trim().to_string())),
        None => (line.trim(), None),
    };
    if key.is_empty() || key.contains(char::is_whitespace) {
        return Err(OptionError::Syntax {
            reason: format!("expected key=value, got '{line}'"),
            origin,
        });
    }
    Ok(RawOption {
        key: key.to_string(),
        value,
        origin,
    })
}

/// What the command line asked for.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CommandLine {
    pub job_files: Vec<String>,
    /// Options before the first `--name`: apply to every job.
    pub globals: Vec<RawOption>,
    /// Jobs started with `--name`.
    pub jobs: Vec<JobDef>,
    /// `--section=NAME` (repeatable, or comma-separated): run only these jobs.
    pub sections: Vec<String>,
    pub output_format: OutputFormat,
    pub output: Option<String>,
    pub serial: bool,
    pub progress: bool,
    pub help: bool,
    pub cmdhelp: bool,
    pub version: bool,
    /// `--threads=N`: client runtime threads (a runtime option, not a job option; default 1).
    pub threads: usize,
}

/// `--output-format`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    #[default]
    Normal,
    Json,
}

/// Command-line keys that take no value: `--key` alone turns them on.
const FLAG_KEYS: &[&str] = &[
    "help",
    "cmdhelp",
    "version",
    "serial",
    "progress",
    "stonewall",
];

/// Parses the arguments after the program name (and after any subcommand). Options take
/// `--key=value` or, as with fio, `--key value`.
pub fn parse_command_line(args: &[String]) -> Result<CommandLine, OptionError> {
    let mut cl = CommandLine {
        progress: true,
        threads: 1,
        ..Default::default()
    };
    let mut args = args.iter().peekable();
    while let Some(arg) = args.next() {
        let Some(body) = arg.strip_prefix("--") else {
            if arg == "-h" {
                cl.help = true;
            } else if arg.starts_with('-') && arg.len() > 1 {
                return Err(OptionError::Syntax {
                    reason: format!("unknown flag '{arg}' (options are --key=value)"),
                    origin: Origin::CommandLine,
                });
            } else {
                cl.job_files.push(arg.clone());
            }
            continue;
        };
        let (key, value) = match body.split_once('=') {
            Some((k, v)) => (k.to_string(), Some(v.to_string())),
            // `--key value`, as fio takes it, for every key that is not a flag; a flag's
            // optional value is only ever given as `--flag=value`.
            None if !FLAG_KEYS.contains(&body) => {
                let value = args.next_if(|next| !next.starts_with("--")).cloned();
                (body.to_string(), value)
            }
            None => (body.to_string(), None),
        };
        let need = |v: &Option<String>| {
            v.clone().ok_or_else(|| OptionError::MissingValue {
                key: key.clone(),
                origin: Origin::CommandLine,
            })
        };
        match key.as_str() {
            "help" => cl.help = true,
            "cmdhelp" => cl.cmdhelp = true,
            "version" => cl.version = true,
            "serial" => cl.serial = true,
            "output" => cl.output = Some(need(&value)?),
            "threads" => {
                let v = need(&value)?;
                cl.threads = match v.parse::<usize>() {
                    Ok(n) if n >= 1 => n,
                    _ => {
                        return Err(OptionError::BadValue {
                            key,
                            value: v,
                            reason: "expected a whole number >= 1".into(),
                            origin: Origin::CommandLine,
                        })
                    }
                }
            }
            "section" => cl.sections.extend(
                need(&value)?
                    .split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty()),
            ),
            "progress" => {
                cl.progress = !matches!(value.as_deref(), Some("0") | Some("false") | Some("off"))
            }
            "output-format" => {
                let v = need(&value)?;
                cl.output_format = match v.as_str() {
                    "normal" => OutputFormat::Normal,
                    "json" => OutputFormat::Json,
                    _ => {
                        return Err(OptionError::BadValue {
                            key,
                            value: v,
                            reason: "expected normal or json".into(),
                            origin: Origin::CommandLine,
                        })
                    }
                }
            }
            _ => {
                let opt = RawOption {
                    key: key.clone(),
                    value,
                    origin: Origin::CommandLine,
                };
                if key == "name" {
                    let name = need(&opt.value)?;
                    cl.jobs.push(JobDef {
                        name,
                        options: Vec::new(),
                    });
                } else if let Some(job) = cl.jobs.last_mut() {
                    job.options.push(opt);
                } else {
                    cl.globals.push(opt);
                }
            }
        }
    }
    Ok(cl)
}

/// Jobs in run order, split into groups: the jobs of one group run concurrently, groups run
/// one after another.
pub fn resolve(file_jobs: Vec<JobDef>, cl: &CommandLine) -> Result<Vec<Vec<JobSpec>>, OptionError> {
    let mut defs: Vec<JobDef> = Vec::new();
    for s in &cl.sections {
        if !file_jobs.iter().any(|j| &j.name == s) && !cl.jobs.iter().any(|j| &j.name == s) {
            return Err(OptionError::Syntax {
                reason: format!("--section={s}: no job of that name"),
                origin: Origin::CommandLine,
            });
        }
    }
    let selected = |name: &str| cl.sections.is_empty() || cl.sections.iter().any(|s| s == name);
    let file_jobs: Vec<JobDef> = file_jobs
        .into_iter()
        .filter(|j| selected(&j.name))
        .collect();
    for mut j in file_jobs {
        j.options.extend(cl.globals.iter().cloned());
        defs.push(j);
    }
    for j in cl.jobs.iter().filter(|j| selected(&j.name)) {
        let mut options = cl.globals.clone();
        options.extend(j.options.iter().cloned());
        defs.push(JobDef {
            name: j.name.clone(),
            options,
        });
    }
    if defs.is_empty() && !cl.globals.is_empty() {
        defs.push(JobDef {
            name: "job".into(),
            options: cl.globals.clone(),
        });
    }
    let mut groups: Vec<Vec<JobSpec>> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for d in defs {
        let spec = JobSpec::build(&d.name, &d.options)?;
        if names.contains(&spec.name) {
            return Err(OptionError::Invalid {
                job: spec.name,
                reason: "two jobs have this name; names key the report and logs".into(),
            });
        }
        names.push(spec.name.clone());
        if groups.is_empty() || spec.stonewall || cl.serial {
            groups.push(Vec::new());
        }
        if let Some(g) = groups.last_mut() {
            g.push(spec);
        }
    }
    Ok(groups)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::{BlockSize, Protocol, Workload};
    use std::time::Duration;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    const FILE: &str = "\
# comment
[global]
bookie=127.0.0.1:4000
bs=4k
runtime=5s

[small]
iodepth=64  # trailing comment

[big]
bs=5m
stonewall
; another comment
[global]
protocol=v3
[late]
rw=mixed
prefill=1m
";

    #[test]
    fn sections_and_global_inheritance() {
        let defs = parse_job_file("t.fio", FILE).unwrap();
        assert_eq!(
            defs.iter().map(|d| d.name.as_str()).collect::<Vec<_>>(),
            ["small", "big", "late"]
        );
        let groups = resolve(defs, &CommandLine::default()).unwrap();
        assert_eq!(groups.len(), 2, "stonewall starts a new group");
        let small = &groups[0][0];
        assert_eq!(small.bookies, vec!["127.0.0.1:4000".to_string()]);
        assert_eq!(small.bs, BlockSize::Fixed { bytes: 4096 });
        assert_eq!(small.iodepth, 64);
        assert_eq!(small.runtime, Some(Duration::from_secs(5)));
        assert_eq!(
            small.protocol,
            Protocol::V2,
            "a later [global] does not reach back"
        );
        let big = &groups[1][0];
        assert!(big.stonewall);
        assert_eq!(big.bs, BlockSize::Fixed { bytes: 5 << 20 });
        let late = &groups[1][1];
        assert_eq!(late.protocol, Protocol::V3);
        assert_eq!(late.rw, Workload::Mixed);
        assert_eq!(late.bs, BlockSize::Fixed { bytes: 4096 });
    }

    #[test]
    fn command_line_globals_override_files_and_jobs_override_globals() {
        let cl = parse_command_line(&args(&[
            "--bs=2k",
            "jobs.fio",
            "--serial",
            "--output-format=json",
            "--name=a",
            "--iodepth=8",
            "--name=b",
            "--bs=16k",
        ]))
        .unwrap();
        assert_eq!(cl.job_files, vec!["jobs.fio".to_string()]);
        assert_eq!(cl.output_format, OutputFormat::Json);
        assert!(cl.serial);
        let defs = parse_job_file("t.fio", FILE).unwrap();
        let groups = resolve(defs, &cl).unwrap();
        assert_eq!(groups.len(), 5, "--serial: one group per job");
        let all: Vec<&JobSpec> = groups.iter().flatten().collect();
        assert_eq!(all[0].name, "small");
        assert_eq!(
            all[0].bs,
            BlockSize::Fixed { bytes: 2048 },
            "cli global beats file"
        );
        assert_eq!(all[3].name, "a");
        assert_eq!(all[3].iodepth, 8);
        assert_eq!(all[3].bs, BlockSize::Fixed { bytes: 2048 });
        assert_eq!(
            all[4].bs,
            BlockSize::Fixed { bytes: 16384 },
            "job option beats cli global"
        );
    }

    #[test]
    fn errors_name_file_line_and_option() {
        let e = parse_job_file("x.fio", "[a]\nbs=4k\niodepth=lots\n")
            .and_then(|d| resolve(d, &CommandLine::default()))
            .unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("x.fio:3"), "{msg}");
        assert!(msg.contains("iodepth"), "{msg}");

        let e = parse_job_file("x.fio", "bs=4k\n[a]\n").unwrap_err();
        assert!(e.to_string().contains("x.fio:1"), "{e}");
        assert!(e.to_string().contains("'bs'"), "{e}");

        let e = parse_job_file("x.fio", "[a\n").unwrap_err();
        assert!(e.to_string().contains("x.fio:1"), "{e}");

        let e = parse_job_file("x.fio", "[a]\n[a]\n").unwrap_err();
        assert!(e.to_string().contains("x.fio:2"), "{e}");

        let e = parse_job_file("x.fio", "[a]\n\nfrobnicate=1\n")
            .and_then(|d| resolve(d, &CommandLine::default()))
            .unwrap_err();
        assert!(e.to_string().contains("x.fio:3"), "{e}");
        assert!(e.to_string().contains("frobnicate"), "{e}");

        let e = parse_command_line(&args(&["--output-format=xml"])).unwrap_err();
        assert!(e.to_string().contains("output-format"), "{e}");
    }

    #[test]
    fn sections_select_jobs() {
        let cl = parse_command_line(&args(&["--section=late,small"])).unwrap();
        let groups = resolve(parse_job_file("t.fio", FILE).unwrap(), &cl).unwrap();
        let names: Vec<&str> = groups.iter().flatten().map(|j| j.name.as_str()).collect();
        assert_eq!(names, ["small", "late"]);
        let cl = parse_command_line(&args(&["--section=nope"])).unwrap();
        let e = resolve(parse_job_file("t.fio", FILE).unwrap(), &cl).unwrap_err();
        assert!(e.to_string().contains("--section=nope"), "{e}");
    }

    #[test]
    fn options_take_a_separate_value_as_fio_does() {
        let spaced = parse_command_line(&args(&[
            "--output-format",
            "json",
            "--rw",
            "write",
            "--bs=1k",
            "--serial",
            "--name",
            "a",
            "--iodepth",
            "4",
            "jobs.fio",
        ]))
        .unwrap();
        assert_eq!(spaced.output_format, OutputFormat::Json);
        assert!(spaced.serial);
        assert_eq!(spaced.job_files, vec!["jobs.fio".to_string()]);
        assert_eq!(spaced.jobs.len(), 1);
        assert_eq!(spaced.jobs[0].name, "a");
        let joined = parse_command_line(&args(&[
            "--output-format=json",
            "--rw=write",
            "--bs=1k",
            "--serial",
            "--name=a",
            "--iodepth=4",
            "jobs.fio",
        ]))
        .unwrap();
        let kv = |cl: &CommandLine| {
            let mut v: Vec<(String, Option<String>)> = cl
                .globals
                .iter()
                .chain(cl.jobs.iter().flat_map(|j| j.options.iter()))
                .map(|o| (o.key.clone(), o.value.clone()))
                .collect();
            v.sort();
            v
        };
        assert_eq!(kv(&spaced), kv(&joined));
        // --threads, the one runtime option, takes both spellings too.
        for threads in [&["--threads", "3"][..], &["--threads=3"][..]] {
            assert_eq!(parse_command_line(&args(threads)).unwrap().threads, 3);
        }
        assert_eq!(parse_command_line(&args(&[])).unwrap().threads, 1);
        let e = parse_command_line(&args(&["--threads", "0"])).unwrap_err();
        assert!(e.to_string().contains("threads"), "{e}");
        // A value that is missing is still an error naming the key.
        let e = parse_command_line(&args(&["--output-format", "--serial"])).unwrap_err();
        assert!(e.to_string().contains("output-format"), "{e}");
    }

    #[test]
    fn bare_command_line_makes_one_job() {
        let cl = parse_command_line(&args(&["--rw=write", "--bs=1k", "--runtime=1s"])).unwrap();
        let groups = resolve(Vec::new(), &cl).unwrap();
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0][0].name, "job");
    }
}
