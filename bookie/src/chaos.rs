//! `chaos`: the bookie's side of the fault-injecting disk layer (`bk_disk::chaos`,
//! docs/chaos.md): building the control from the configuration (`chaosEnabled`,
//! `chaosFaultPlan`), the loud start-up warning, and its metrics.
//!
//! With `chaosEnabled=false` (the default) nothing here runs: [`from_config`] answers
//! `None` and the storage opens its real disks unwrapped.

use std::sync::Arc;

use bk_disk::chaos::{parse_plan, Chaos, DirKind, FaultKind};

use crate::config::BookieConfig;
use crate::metrics::Scrape;

/// Largest fault plan file read (a plan is at most `MAX_FAULTS` small objects).
const PLAN_FILE_BYTES_MAX: u64 = 1 << 20;

/// The chaos control for this bookie, or `None` when chaos is off. With a plan file, its
/// faults are active from the start. Errors name the plan file and what is wrong with it.
pub fn from_config(cfg: &BookieConfig) -> Result<Option<Arc<Chaos>>, String> {
    if !cfg.chaos_enabled {
        return Ok(None);
    }
    let current = |dirs: &[std::path::PathBuf], kind: DirKind| {
        dirs.iter()
            .map(move |d| (kind, d.join(crate::config::mapping::CURRENT_DIR)))
            .collect::<Vec<_>>()
    };
    let mut roots = current(&cfg.journal_dirs, DirKind::Journal);
    roots.extend(current(&cfg.ledger_dirs, DirKind::Ledgers));
    if let Some(index) = &cfg.index_dirs {
        roots.extend(current(index, DirKind::Index));
    }
    let chaos = Arc::new(Chaos::new(roots));
    let mut planned = 0;
    if let Some(path) = &cfg.chaos_fault_plan {
        let text = bk_disk::read_small_text(path, PLAN_FILE_BYTES_MAX)
            .map_err(|e| format!("chaosFaultPlan {}: {e}", path.display()))?;
        let plan = parse_plan(text.as_bytes())
            .map_err(|e| format!("chaosFaultPlan {}: {e}", path.display()))?;
        planned = plan.len();
        for spec in plan {
            chaos
                .add(spec)
                .map_err(|e| format!("chaosFaultPlan {}: {e}", path.display()))?;
        }
    }
    if cfg.chaos_test_only_ack_before_fdatasync {
        // The config refuses the key in a release build; this is a test binary.
        chaos.set_test_only_ack_before_fdatasync(true);
    }
    tracing::warn!(
        planned_faults = planned,
        "CHAOS ENABLED (chaosEnabled=true): this bookie injects disk faults on purpose; \
         never run it with data you need (docs/chaos.md)"
    );
    Ok(Some(chaos))
}

/// The chaos metrics: `bookie_rs_chaos_enabled` (1 while on, 0 when off) and, when on,
/// `bookie_rs_chaos_faults_injected_total{kind=...}` and `bookie_rs_chaos_active_faults`.
pub fn collector(chaos: Option<Arc<Chaos>>) -> impl Fn(&mut Scrape) + Send + Sync + 'static {
    move |s: &mut Scrape| {
        s.gauge(
            "bookie_rs_chaos_enabled",
            &[],
            if chaos.is_some() { 1.0 } else { 0.0 },
        );
        if let Some(c) = &chaos {
            for kind in FaultKind::ALL {
                s.counter(
                    "bookie_rs_chaos_faults_injected_total",
                    &[("kind", kind.name())],
                    c.injected(kind),
                );
            }
            s.gauge("bookie_rs_chaos_active_faults", &[], c.list().len() as f64);
        }
    }
}
