//! The `bookie` binary: parses flags and `bk_server.conf` (config module), then runs the
//! bookie (`node::run`) on a tokio runtime until SIGTERM/SIGINT: a current-thread runtime
//! (one network thread) on machines of one or two cores, a multi-thread runtime with one
//! thread per core above that (ARCHITECTURE.md "One network thread").
//!
//! `bookie --conf bk_server.conf [flags]`, or with no file:
//! `bookie --standalone --data-dir ./data` (journal and ledgers under one directory, no
//! ZooKeeper). Exit code: 0 after an orderly shutdown, non-zero on start-up failure, a fatal
//! storage error or a refused ZooKeeper authentication, 75 when the final flush at shutdown
//! could not finish in time (the journal is replayed at the next start). `BOOKIE_IO_THREADS=n` sets the number of network
//! threads (1 = a single current-thread runtime; the default on one or two cores, one per
//! core otherwise). `--version` prints the version and git commit; `--log-format json` (or
//! `BOOKIE_LOG_FORMAT=json`) logs JSON lines (`logging`).
//!
//! `bookie inspect <lastmark|journal|segments|segment|ledger|verify> [flags]` reads those
//! directories without writing (bookie/src/inspect/).

use clap::{CommandFactory, FromArgMatches};

mod allocator;

fn main() {
    // `bookie inspect ...`: read-only tools over the bookie's files (bookie/src/inspect/).
    if std::env::args_os().nth(1).is_some_and(|a| a == "inspect") {
        std::process::exit(bookie::inspect::main(std::env::args_os().skip(1)));
    }
    use bookie::build_info;
    // `--version` prints `bookie <version> (git <commit>)` and exits 0.
    let matches = bookie::config::BookieArgs::command()
        .version(build_info::VERSION_LINE)
        .get_matches();
    let args = match bookie::config::BookieArgs::from_arg_matches(&matches) {
        Ok(a) => a,
        Err(e) => e.exit(),
    };
    let env_format = std::env::var("BOOKIE_LOG_FORMAT").ok();
    match bookie::logging::LogFormat::choose(args.log_format.as_deref(), env_format.as_deref()) {
        Ok(format) => bookie::logging::init(format),
        Err(e) => {
            eprintln!("bookie: {e}");
            std::process::exit(2);
        }
    }
    tracing::info!(
        version = build_info::VERSION,
        git_commit = build_info::GIT_COMMIT,
        "bookie-rs {}",
        build_info::VERSION_LINE
    );
    let cfg = match bookie::config::BookieConfig::load(&args) {
        Ok(cfg) => cfg,
        Err(e) => {
            eprintln!("bookie: configuration error: {e}");
            std::process::exit(2);
        }
    };
    // TLS contexts (docs/tls.md §2): a bad key, store, password or certificate is a
    // configuration error naming its key.
    let tls = match bookie::tls::contexts::TlsContexts::from_config(&cfg) {
        Ok(tls) => tls,
        Err(e) => {
            eprintln!("bookie: configuration error: {e}");
            std::process::exit(2);
        }
    };
    // BOOKIE_IO_THREADS: network threads; 1 = a current-thread runtime. Default: one
    // per core, except on machines of one or two cores, where a single network thread
    // leaves the other core to the journal committer, the entry-log flusher and the
    // readers. On 2 cores it measured +17 % durable 1 KiB adds, +20 % tailing reads,
    // +7 % mixed and the same 5 MiB bandwidth as two threads (ARCHITECTURE.md).
    let io_threads = std::env::var("BOOKIE_IO_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|n| *n > 0)
        .or_else(|| {
            std::thread::available_parallelism()
                .ok()
                .filter(|n| n.get() <= 2)
                .map(|_| 1)
        });
    let built = match io_threads {
        Some(1) => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
        Some(n) => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(n)
            .enable_all()
            .thread_name("bookie-io")
            .build(),
        None => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_name("bookie-io")
            .build(),
    };
    let runtime = match built {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("bookie: cannot start the runtime: {e}");
            std::process::exit(1);
        }
    };
    let code = match runtime.block_on(bookie::node::run_with_tls(cfg, tls)) {
        Ok(code) => code,
        Err(e) => {
            tracing::error!(error = %e, "bookie failed");
            eprintln!("bookie: {e}");
            1
        }
    };
    // At most 1 s for blocking tasks still running (a final flush given up on): with
    // node::SHUTDOWN_BUDGET the process is gone within 10 s of SIGTERM.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    std::process::exit(code);
}
