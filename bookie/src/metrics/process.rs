//! The `process_*` series the Java bookie exports through the Prometheus client's
//! standard collector (`StandardExports`), with its names and types, read from the
//! kernel at scrape time (docs/metrics.md §3):
//! `process_cpu_seconds_total` (counter: user + system CPU seconds, getrusage),
//! `process_resident_memory_bytes` and `process_virtual_memory_bytes` (gauges:
//! `/proc/self/statm`), `process_open_fds` (gauge: entries of `/proc/self/fd`),
//! `process_max_fds` (gauge: the soft `RLIMIT_NOFILE`) and `process_start_time_seconds`
//! (gauge: Unix time the process started, `/proc/self/stat` field 22 + `/proc/stat`
//! `btime`). Also `bookie_rs_build_info{version,git}` = 1 (ours).
//!
//! Guarantees: a figure the kernel does not give (no /proc) is left out of the scrape,
//! never reported as 0; nothing here blocks beyond reading a /proc file.

use std::path::Path;

use super::Scrape;

/// The crate version and the git commit the binary was built from (`BOOKIE_GIT_SHA` at
/// build time, `unknown` without it).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
pub const GIT_SHA: &str = match option_env!("BOOKIE_GIT_SHA") {
    Some(s) => s,
    None => "unknown",
};

fn proc_text(path: &str) -> Option<String> {
    bk_disk::procfs::read_proc_text(Path::new(path), 64 * 1024).ok()
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no memory effects.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 {
        n as u64
    } else {
        4096
    }
}

fn clock_ticks() -> u64 {
    // SAFETY: sysconf has no memory effects.
    let n = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if n > 0 {
        n as u64
    } else {
        100
    }
}

/// User + system CPU seconds of the whole process.
pub fn cpu_seconds() -> Option<f64> {
    // SAFETY: getrusage writes into the struct we pass; RUSAGE_SELF is always valid.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return None;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some(tv(u.ru_utime) + tv(u.ru_stime))
}

/// (virtual, resident) bytes from the text of `/proc/self/statm`.
pub fn parse_statm(text: &str, page: u64) -> Option<(u64, u64)> {
    let mut f = text.split_whitespace();
    let size: u64 = f.next()?.parse().ok()?;
    let resident: u64 = f.next()?.parse().ok()?;
    Some((size * page, resident * page))
}

/// Start time in Unix seconds from `/proc/self/stat` (field 22, clock ticks after boot)
/// and `/proc/stat` (`btime`).
pub fn parse_start_time(self_stat: &str, stat: &str, ticks: u64) -> Option<f64> {
    // The command name (field 2) may hold spaces and parentheses: count after the last ')'.
    let after = &self_stat[self_stat.rfind(')')? + 1..];
    // Field 3 is the first after ')'; field 22 is the 20th.
    let start_ticks: u64 = after.split_whitespace().nth(19)?.parse().ok()?;
    let btime: u64 = stat
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    Some(btime as f64 + start_ticks as f64 / ticks as f64)
}

fn max_fds() -> Option<u64> {
    // SAFETY: getrlimit writes into the struct we pass.
    let mut r: libc::rlimit = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 {
        return None;
    }
    Some(r.rlim_cur as u64)
}

/// Adds the `process_*` series and `bookie_rs_build_info` (module docs).
pub fn collect(s: &mut Scrape) {
    if let Some(cpu) = cpu_seconds() {
        s.counter_f64("process_cpu_seconds_total", &[], cpu);
    }
    if let Some((virt, res)) =
        proc_text("/proc/self/statm").and_then(|t| parse_statm(&t, page_size()))
    {
        s.gauge("process_resident_memory_bytes", &[], res as f64);
        s.gauge("process_virtual_memory_bytes", &[], virt as f64);
    }
    if let Ok(n) = bk_disk::procfs::count_dir_entries(Path::new("/proc/self/fd")) {
        // The directory handle listing it is one of the entries.
        s.gauge("process_open_fds", &[], n.saturating_sub(1) as f64);
    }
    if let Some(n) = max_fds() {
        s.gauge("process_max_fds", &[], n as f64);
    }
    if let (Some(own), Some(all)) = (proc_text("/proc/self/stat"), proc_text("/proc/stat")) {
        if let Some(t) = parse_start_time(&own, &all, clock_ticks()) {
            s.gauge("process_start_time_seconds", &[], t);
        }
    }
    s.gauge(
        "bookie_rs_build_info",
        &[("version", VERSION), ("git", GIT_SHA)],
        1.0,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_statm_and_start_time() {
        assert_eq!(
            parse_statm("2000 300 10 1 0 50 0\n", 4096),
            Some((2000 * 4096, 300 * 4096))
        );
        assert_eq!(parse_statm("", 4096), None);
        let own = "42 (a) b (c)) S 1 42 42 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 250 1000 10";
        let all = "cpu  1 2 3\nbtime 1700000000\nprocesses 9\n";
        assert_eq!(parse_start_time(own, all, 100), Some(1_700_000_002.5));
        assert_eq!(parse_start_time("garbage", all, 100), None);
    }

    #[test]
    fn live_figures_are_plausible() {
        let mut s = Scrape::default();
        collect(&mut s);
        let text = s.finish();
        let value = |name: &str| -> f64 {
            text.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
                .unwrap_or_else(|| panic!("{name} missing in\n{text}"))
        };
        assert!(text.contains("# TYPE process_cpu_seconds_total counter\n"));
        assert!(value("process_cpu_seconds_total") > 0.0);
        let rss = value("process_resident_memory_bytes");
        assert!(rss > 1e6 && rss <= value("process_virtual_memory_bytes"));
        let open = value("process_open_fds");
        assert!(open >= 3.0 && open <= value("process_max_fds"));
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        let start = value("process_start_time_seconds");
        assert!(
            start <= now + 1.0 && start > now - 86_400.0,
            "{start} vs {now}"
        );
        assert!(text.contains(&format!(
            "bookie_rs_build_info{{version=\"{VERSION}\",git=\"{GIT_SHA}\"}} 1\n"
        )));
    }
}
