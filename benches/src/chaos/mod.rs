//! `bkchaos`, the drill runner (issue 14, docs/chaos.md §7): starts the drill's bookies, puts
//! its load on them, applies its schedule of faults, then verifies every acknowledged entry on
//! every bookie that acknowledged it, and reports.
//!
//! Map: drill.rs (the drill file) -> bookies.rs (the processes and their admin API) and
//! zookeeper.rs (the drill's ZooKeeper, `zookeeper = true`) and filesystem.rs (each bookie's
//! own filesystem and its ballast, `filesystem =`) -> load.rs (adds at W/A, reads,
//! per-phase counts) -> verify.rs (the read-back) -> report.rs (text, JSON, SVG). This file
//! runs one drill from start to verdict.
//!
//! A drill passes when every acknowledged copy reads back (verify.rs), every scheduled step
//! did what it says, and nothing else went wrong on the way: no bookie exited that no step
//! ended (kill, power_cut, restart), and with a ZooKeeper every bookie is registered at the
//! end.

pub mod bookies;
pub mod drill;
pub mod filesystem;
pub mod load;
pub mod report;
pub mod verify;
pub mod zookeeper;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bookies::{Attached, Bookie, Implementation, StartConfig};
use drill::{Action, Drill, Step};
use load::Load;
use report::{DrillReport, StepOutcome};
use zookeeper::ZooKeeper;

/// The fault bkchaos posts for `power_cut N`: it fires on that bookie's 20th write after, so
/// writes not yet synced are in flight when it does.
const POWER_CUT_SPEC: &str = r#"{"op": "write", "fault": "power_cut", "trigger": {"every": 20}}"#;
/// Arms power-cut bookkeeping from start-up without cutting (docs/chaos.md §2a): what is lost
/// at the cut is then everything unsynced since the process started.
const ARM_PLAN: &str = r#"[{"file": "no-file-has-this-name", "fault": "power_cut"}]"#;
/// How long a power cut may take to fire and the bookie to exit.
const POWER_CUT_WAIT: Duration = Duration::from_secs(30);

/// How bkchaos runs a drill (from its command line).
pub struct RunOptions {
    /// bookie-rs (`bookie_bin`) or the stock Java bookie (`java_classpath`).
    pub implementation: Implementation,
    pub bookie_bin: PathBuf,
    pub java_classpath: String,
    /// Directories, logs and plans of the bookies.
    pub dir: PathBuf,
    /// Extra `KEY=VALUE` bookie settings, after the drill's own.
    pub sets: Vec<String>,
    /// Running bookies to drill instead of starting any (`--attach`): one per drill bookie,
    /// in index order.
    pub attach: Vec<Attached>,
}

type Bookies = Arc<Vec<Mutex<Bookie>>>;
/// The drill's ZooKeeper, when it has one.
type Zk = Arc<Mutex<Option<ZooKeeper>>>;

fn lock(b: &Mutex<Bookie>) -> std::sync::MutexGuard<'_, Bookie> {
    b.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs `drill` to its verdict. Err only when the drill could not be set up (a bookie that
/// does not start); everything after start-up is reported.
pub async fn run_drill(drill: Drill, opts: &RunOptions) -> Result<DrillReport, String> {
    let java = opts.implementation == Implementation::Java;
    if java && drill.chaos {
        return Err(format!(
            "drill {} injects faults (chaos = true): only bookie-rs has the chaos layer, so it \
             cannot run against Java bookies",
            drill.name
        ));
    }
    if !opts.attach.is_empty() {
        attachable(&drill, opts)?;
        if !drill.sets.is_empty() {
            eprintln!(
                "bkchaos: --attach: the drill's settings ({}) are not applied: the bookies run \
                 as they were started",
                drill.sets.join(", ")
            );
        }
    }
    std::fs::create_dir_all(&opts.dir)
        .map_err(|e| format!("cannot create {}: {e}", opts.dir.display()))?;
    let mut sets = drill.sets.clone();
    let cuts = drill
        .schedule
        .iter()
        .any(|s| matches!(s.action, Action::PowerCut));
    if cuts {
        let plan = opts.dir.join("arm-power-cut.json");
        std::fs::write(&plan, ARM_PLAN)
            .map_err(|e| format!("cannot write {}: {e}", plan.display()))?;
        sets.push(format!("chaosFaultPlan={}", plan.display()));
    }
    sets.extend(opts.sets.iter().cloned());
    // A Java bookie has no standalone mode: it always gets the drill's ZooKeeper.
    let zk: Zk = Arc::new(Mutex::new(if drill.zookeeper || java {
        Some(ZooKeeper::start_new(&opts.dir.join("zookeeper")).await?)
    } else {
        None
    }));
    let zk_addr = lock_zk(&zk).as_ref().map(ZooKeeper::addr);
    let cfg = Arc::new(StartConfig {
        implementation: opts.implementation,
        bin: opts.bookie_bin.clone(),
        java_classpath: opts.java_classpath.clone(),
        chaos: drill.chaos,
        sets,
        metadata_service_uri: lock_zk(&zk).as_ref().map(ZooKeeper::metadata_service_uri),
        zk_addr: zk_addr.clone(),
    });
    let mut procs = Vec::new();
    for (i, to) in opts.attach.iter().enumerate() {
        procs.push(Mutex::new(Bookie::attach(&opts.dir, i, to.clone())));
    }
    for i in (0..drill.bookies).filter(|_| opts.attach.is_empty()) {
        let mut b = Bookie::new(&opts.dir, i)?;
        if let Some(size) = drill.filesystem {
            b.own_filesystem(&opts.dir, size)?;
        }
        b.start(&cfg)?;
        procs.push(Mutex::new(b));
    }
    let bookies: Bookies = Arc::new(procs);
    {
        let (bookies, cfg) = (bookies.clone(), cfg.clone());
        tokio::task::spawn_blocking(move || -> Result<(), String> {
            for b in bookies.iter() {
                let mut b = lock(b);
                wait_ready(&mut b, &cfg).map_err(|e| format!("{e}\n{}", b.log_tail(20)))?;
            }
            Ok(())
        })
        .await
        .map_err(|e| e.to_string())??;
    }
    // Only once they serve: an attached bookie may still be starting when bkchaos is run
    // (its admin port then refuses connections, which says nothing about chaos).
    if drill.chaos {
        for b in bookies.iter().filter(|b| lock(b).is_attached()) {
            chaos_enabled(&lock(b))?;
        }
    }
    if let Some(addr) = &zk_addr {
        let ids: Vec<String> = bookies.iter().map(|b| lock(b).bookie_id()).collect();
        zookeeper::wait_registered(addr, &ids)
            .await
            .map_err(|e| format!("before the load: {e}"))?;
    }
    let addrs = bookies.iter().map(|b| lock(b).addr()).collect();
    let load = Load::new(drill.clone(), addrs);

    let schedule = {
        let (load, bookies, cfg, zk) = (load.clone(), bookies.clone(), cfg.clone(), zk.clone());
        tokio::spawn(async move { run_schedule(&load, &bookies, &cfg, &zk).await })
    };
    load.run().await;
    let load_ended = load.t0.elapsed();
    let steps = schedule.await.map_err(|e| e.to_string())?;

    // Settle: every bookie running and serving (and ZooKeeper up) before the read-back.
    let (mut settle, mut problems) = {
        let (bookies, cfg, zk, drill) = (bookies.clone(), cfg.clone(), zk.clone(), drill.clone());
        tokio::task::spawn_blocking(move || settle(&drill, &bookies, &cfg, &zk))
            .await
            .map_err(|e| e.to_string())?
    };
    if let Some(addr) = &zk_addr {
        let ids: Vec<String> = bookies.iter().map(|b| lock(b).bookie_id()).collect();
        match zookeeper::wait_registered(addr, &ids).await {
            Ok(t) => settle.push(format!(
                "every bookie registered in ZooKeeper ({:.2} s)",
                t.as_secs_f64()
            )),
            Err(e) => problems.push(format!("after the load: {e}")),
        }
    }
    let read_faults: Vec<bool> = (0..drill.bookies)
        .map(|b| {
            drill
                .schedule
                .iter()
                .any(|s| s.bookie == b && s.action.injects_read_errors())
        })
        .collect();
    let verify_started = Instant::now();
    let verdict = verify::verify(&load, &read_faults).await;
    let (phases, seconds) = load.measured();
    let comebacks = load
        .comebacks
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    Ok(DrillReport::new(
        &drill,
        if opts.attach.is_empty() {
            opts.implementation.name()
        } else {
            "attached"
        },
        steps,
        settle,
        problems,
        &phases,
        &seconds,
        &comebacks,
        verdict,
        load_ended,
        verify_started.elapsed(),
    ))
}

/// Err unless the attached bookie `b` has its chaos layer on (`chaosEnabled=true`).
fn chaos_enabled(b: &Bookie) -> Result<(), String> {
    match b.admin("GET", "/api/v1/chaos/faults", "")? {
        (200, _) => Ok(()),
        (code, body) => Err(format!(
            "bookie {} ({}): GET /api/v1/chaos/faults answered {code} ({}): start it with \
             chaosEnabled=true for this drill",
            b.index,
            b.addr(),
            body.trim()
        )),
    }
}

/// Whether `drill` can run against running bookies bkchaos did not start: one address per
/// bookie, nothing that needs the process (kill, stop, restart, power cut: its abort and the
/// plan that arms it are the process's), its filesystem or a ZooKeeper of the drill's own.
fn attachable(drill: &Drill, opts: &RunOptions) -> Result<(), String> {
    if opts.attach.len() != drill.bookies {
        return Err(format!(
            "--attach gives {} bookie(s), drill {} has bookies = {}",
            opts.attach.len(),
            drill.name,
            drill.bookies
        ));
    }
    if !opts.sets.is_empty() {
        return Err("--set starts bookies with a setting; --attach starts none".into());
    }
    if drill.zookeeper || drill.filesystem.is_some() || opts.implementation == Implementation::Java
    {
        return Err(
            "--attach drills bookies as they run: no zookeeper = true (or --zookeeper), no \
             filesystem =, no --impl java"
                .into(),
        );
    }
    if let Some(s) = drill
        .schedule
        .iter()
        .find(|s| !matches!(s.action, Action::Inject(_) | Action::Clear))
    {
        return Err(format!(
            "step '{}' needs a bookie bkchaos started; with --attach a schedule may only \
             inject and clear faults",
            s.describe()
        ));
    }
    Ok(())
}

/// Applies each step at its time; returns what each did.
async fn run_schedule(
    load: &Arc<Load>,
    bookies: &Bookies,
    cfg: &Arc<StartConfig>,
    zk: &Zk,
) -> Vec<StepOutcome> {
    let mut out = Vec::new();
    for (i, step) in load.drill.schedule.clone().into_iter().enumerate() {
        tokio::time::sleep_until((load.t0 + step.at).into()).await;
        let at = load.t0.elapsed();
        load.step_started(i);
        if matches!(step.action, Action::Restart) {
            load.restarted(step.bookie);
        }
        let result = if step.action.on_zookeeper() {
            apply_zk(bookies, cfg, zk, &step.action).await
        } else {
            let (bookies, cfg, step) = (bookies.clone(), cfg.clone(), step.clone());
            tokio::task::spawn_blocking(move || apply(&bookies, &cfg, &step))
                .await
                .unwrap_or_else(|e| Err(e.to_string()))
        };
        out.push(StepOutcome {
            planned_s: step.at.as_secs_f64(),
            at_s: at.as_secs_f64(),
            step: step.describe(),
            ok: result.is_ok(),
            result: result.unwrap_or_else(|e| format!("FAILED: {e}")),
        });
    }
    out
}

fn lock_zk(z: &Zk) -> std::sync::MutexGuard<'_, Option<ZooKeeper>> {
    z.lock().unwrap_or_else(|p| p.into_inner())
}

/// The bookies' ZooKeeper session timeout: their `zkTimeout` setting (the last one given),
/// else the stock 10 s.
fn session_timeout(cfg: &StartConfig) -> Duration {
    cfg.sets
        .iter()
        .rev()
        .find_map(|kv| kv.strip_prefix("zkTimeout="))
        .and_then(|v| v.trim().parse().ok())
        .map(Duration::from_millis)
        .unwrap_or(Duration::from_secs(10))
}

/// `zk_stop` / `zk_start`; a description of what happened. `zk_start` returns once every
/// bookie that is running and not SIGSTOPped is registered again.
///
/// "Registered again" is checked one session timeout (plus ZooKeeper's expiry tick, 2 s, and
/// a margin) after ZooKeeper answers: a restarted server restores the sessions of before the
/// outage and keeps their ephemeral nodes until they expire, one timeout later, unless their
/// client resumes them. So a registration seen sooner may be the node of a session the
/// bookie gave up (bookie-rs's client declares its session expired during a long outage and
/// registers anew, waiting for the old node to go); one seen after is owned by a live
/// session, resumed or new. The report says which: `zk_stop` notes each node's owner first.
async fn apply_zk(
    bookies: &Bookies,
    cfg: &StartConfig,
    zk: &Zk,
    action: &Action,
) -> Result<String, String> {
    let start = matches!(action, Action::ZkStart);
    if !start {
        // Who owns each registration now, while ZooKeeper still answers.
        let addr = lock_zk(zk).as_ref().map(ZooKeeper::addr);
        if let Some(addr) = addr {
            let ids: Vec<String> = bookies.iter().map(|b| lock(b).bookie_id()).collect();
            let owners = zookeeper::owners(&addr, &ids).await?;
            if let Some(z) = lock_zk(zk).as_mut() {
                z.owners_before_stop = owners;
            }
        }
    }
    let (addr, took) = {
        let zk = zk.clone();
        tokio::task::spawn_blocking(move || {
            let mut g = lock_zk(&zk);
            let z = g
                .as_mut()
                .ok_or("the drill has no ZooKeeper (zookeeper = true)")?;
            let took = if start {
                Some(z.start()?)
            } else {
                z.stop().map(|()| None)?
            };
            Ok::<_, String>((z.addr(), took))
        })
        .await
        .map_err(|e| e.to_string())??
    };
    let Some(took) = took else {
        return Ok(format!("ZooKeeper {addr} stopped"));
    };
    let expiry = session_timeout(cfg) + Duration::from_secs(5);
    tokio::time::sleep(expiry).await;
    let ids: Vec<String> = bookies
        .iter()
        .filter_map(|b| {
            let mut b = lock(b);
            (b.is_running() && !b.stopped).then(|| b.bookie_id())
        })
        .collect();
    let again = zookeeper::wait_registered(&addr, &ids)
        .await
        .map_err(|e| format!("ZooKeeper {addr} serving again: {e}"))?;
    let before = lock_zk(zk)
        .as_ref()
        .map(|z| z.owners_before_stop.clone())
        .unwrap_or_default();
    let now = zookeeper::owners(&addr, &ids).await?;
    for m in bookies.iter() {
        let mut b = lock(m);
        let id = b.bookie_id();
        if let Some((_, owner)) = now.iter().find(|(i, _)| *i == id) {
            b.registered_owner = *owner;
        }
    }
    let resumed = now
        .iter()
        .filter(|(id, owner)| owner.is_some() && before.iter().any(|(b, o)| b == id && o == owner))
        .count();
    Ok(format!(
        "ZooKeeper {addr} serving after {:.2} s; {} bookie(s) registered {:.2} s after it answered (looked from one session timeout on): {} by a new session, {resumed} by a resumed one",
        took.as_secs_f64(),
        ids.len(),
        (expiry + again).as_secs_f64(),
        ids.len() - resumed
    ))
}

/// After a start: waits until the bookie serves, and with a ZooKeeper until it is registered
/// by a new session (zookeeper::wait_new_owner); how long in all. Blocking: call it from a
/// blocking thread of the runtime.
fn wait_ready(b: &mut Bookie, cfg: &StartConfig) -> Result<Duration, String> {
    let t = Instant::now();
    b.wait_serving()?;
    if let Some(addr) = &cfg.zk_addr {
        let (owner, _) = tokio::runtime::Handle::current().block_on(zookeeper::wait_new_owner(
            addr,
            &b.bookie_id(),
            b.registered_owner,
        ))?;
        b.registered_owner = Some(owner);
    }
    Ok(t.elapsed())
}

/// One step, blocking; a description of what happened.
fn apply(bookies: &Bookies, cfg: &StartConfig, step: &Step) -> Result<String, String> {
    let mut b = lock(&bookies[step.bookie]);
    match &step.action {
        Action::Inject(spec) => post_fault(&b, spec),
        Action::Clear => match b.admin("DELETE", "/api/v1/chaos/faults", "")? {
            (200, body) => Ok(
                match serde_json::from_str::<serde_json::Value>(&body)
                    .ok()
                    .and_then(|v| v["cleared"].as_u64())
                {
                    Some(n) => format!("{n} fault(s) cleared"),
                    None => format!("cleared: {}", body.trim()),
                },
            ),
            (code, body) => Err(format!("DELETE answered {code}: {}", body.trim())),
        },
        Action::PowerCut => {
            let posted = post_fault(&b, POWER_CUT_SPEC)?;
            let t = Instant::now();
            match b.wait_exit(POWER_CUT_WAIT) {
                Some(status) => Ok(format!(
                    "{posted}; the bookie exited {:.2} s later ({status})",
                    t.elapsed().as_secs_f64()
                )),
                None => Err(format!(
                    "{posted}; the bookie was still running {POWER_CUT_WAIT:?} later (no write reached it?)"
                )),
            }
        }
        Action::Kill => {
            b.kill()?;
            Ok("SIGKILLed".into())
        }
        Action::Stop => {
            b.signal(libc::SIGSTOP)?;
            Ok("SIGSTOPped".into())
        }
        Action::Cont => {
            b.signal(libc::SIGCONT)?;
            Ok("SIGCONTinued".into())
        }
        Action::Restart => {
            let was = if b.is_running() {
                b.kill()?;
                "SIGKILLed, started again".to_string()
            } else {
                format!(
                    "started again (it had exited: {})",
                    b.last_exit.map(|s| s.to_string()).unwrap_or_default()
                )
            };
            b.start(cfg)?;
            let took = wait_ready(&mut b, cfg)?;
            Ok(format!("{was}; serving after {:.2} s", took.as_secs_f64()))
        }
        Action::Fill => {
            let (ballast, left) = filesystem::fill(b.data_dir())?;
            Ok(format!(
                "ballast of {:.1} MiB, {} KiB left free",
                ballast as f64 / (1u64 << 20) as f64,
                left >> 10
            ))
        }
        Action::Free => {
            let freed = filesystem::free(b.data_dir())?;
            let (free, total) = filesystem::free_and_total(b.data_dir())?;
            Ok(format!(
                "ballast of {:.1} MiB deleted, {:.0} % of the filesystem free",
                freed as f64 / (1u64 << 20) as f64,
                100.0 * free as f64 / total.max(1) as f64
            ))
        }
        Action::ZkStop | Action::ZkStart => Err("a ZooKeeper action has no bookie".into()),
    }
}

fn post_fault(b: &Bookie, spec: &str) -> Result<String, String> {
    match b.admin("POST", "/api/v1/chaos/faults", spec)? {
        (200 | 201, body) => {
            let id = serde_json::from_str::<serde_json::Value>(&body)
                .ok()
                .and_then(|v| v["id"].as_u64());
            Ok(match id {
                Some(id) => format!("fault #{id} injected"),
                None => format!("fault injected: {}", body.trim()),
            })
        }
        (code, body) => Err(format!("POST {spec} answered {code}: {}", body.trim())),
    }
}

/// Starts a stopped ZooKeeper, continues stopped bookies and starts exited ones: what it did
/// (one line each), and the problems found: a bookie that exited though no step ended it.
fn settle(
    drill: &Drill,
    bookies: &Bookies,
    cfg: &StartConfig,
    zk: &Zk,
) -> (Vec<String>, Vec<String>) {
    let mut out = Vec::new();
    let mut problems = Vec::new();
    if let Some(z) = lock_zk(zk).as_mut().filter(|z| z.stopped) {
        match z.start() {
            Ok(t) => out.push(format!(
                "ZooKeeper: started again, serving after {:.2} s",
                t.as_secs_f64()
            )),
            Err(e) => problems.push(format!("ZooKeeper: cannot start it again: {e}")),
        }
    }
    for m in bookies.iter() {
        let mut b = lock(m);
        let i = b.index;
        if b.stopped {
            match b.signal(libc::SIGCONT) {
                Ok(()) => out.push(format!("bookie {i}: SIGCONTinued")),
                Err(e) => out.push(format!("bookie {i}: {e}")),
            }
        }
        if !b.is_running() {
            let why = b.last_exit.map(|s| s.to_string()).unwrap_or_default();
            let ended_by_a_step = drill
                .schedule
                .iter()
                .any(|s| s.bookie == i && s.action.ends_the_process());
            if !ended_by_a_step {
                problems.push(format!(
                    "bookie {i} exited ({why}) though no step ended it; the end of its log:\n{}",
                    b.log_tail(12)
                ));
            }
            match b.start(cfg).and_then(|()| wait_ready(&mut b, cfg)) {
                Ok(t) => out.push(format!(
                    "bookie {i}: had exited ({why}), started again, serving after {:.2} s",
                    t.as_secs_f64()
                )),
                Err(e) => out.push(format!("bookie {i}: had exited ({why}), cannot start: {e}")),
            }
        }
    }
    (out, problems)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chaos::drill::parse_drill;

    fn opts(attach: usize) -> RunOptions {
        RunOptions {
            implementation: Implementation::Rust,
            bookie_bin: PathBuf::new(),
            java_classpath: String::new(),
            dir: PathBuf::new(),
            sets: Vec::new(),
            attach: (0..attach)
                .map(|i| Attached::parse(&format!("h:{}=h:{}", 3181 + i, 8000 + i)).unwrap())
                .collect(),
        }
    }

    #[test]
    fn attached_bookies_take_only_inject_and_clear() {
        let faults = parse_drill(
            "eio",
            "[drill]\nchaos = true\n[schedule]\n1s = inject 0 {\"fault\": \"eio\"}\n2s = clear 0\n",
        )
        .unwrap();
        assert_eq!(attachable(&faults, &opts(3)), Ok(()));
        let e = attachable(&faults, &opts(2)).unwrap_err();
        assert!(e.contains("--attach gives 2 bookie(s)"), "{e}");
        let kill = parse_drill("k", "[drill]\n[schedule]\n1s = kill 1\n").unwrap();
        let e = attachable(&kill, &opts(3)).unwrap_err();
        assert!(e.contains("'kill 1' needs a bookie bkchaos started"), "{e}");
        let zk = parse_drill("z", "[drill]\nzookeeper = true\n").unwrap();
        assert!(attachable(&zk, &opts(3)).is_err());
        let mut with_set = opts(3);
        with_set.sets.push("flushInterval=1".into());
        assert!(attachable(&faults, &with_set).is_err());
    }
}
