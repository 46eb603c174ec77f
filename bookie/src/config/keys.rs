//! `keys`: what the loader does with the keys it was given beyond reading them: refuses the
//! security features bookie-rs does not implement, and sorts every key set into "no effect"
//! (named at start-up with its reason) or "unknown", after the table of
//! [`super::stock_keys`].
//!
//! Guarantees:
//! * a key set to a non-empty value whose table entry is [`KeyEffect::NoEffect`] is
//!   reported in [`LoadReport::ignored_keys`], whether or not a section read (validated) it;
//!   [`no_effect_line`] is the one start-up line naming it and its reason;
//! * a key that is in no table entry and that no section read is reported as unknown (a
//!   typo, or another product's key); a key in the table is never unknown;
//! * `zkEnableSecurity=true`, whose silent absence would leave znodes open, fails start-up
//!   (TLS and authorization classes other than the implemented ones are refused by
//!   `tls::settings`).

use super::props::Props;
use super::stock_keys::{effect_of, KeyEffect};
use super::{ConfigError, LoadReport};

/// Refuses the security feature bookie-rs does not implement: `zkEnableSecurity=true`.
/// (`tlsProviderFactoryClass` and `bookieAuthProviderFactoryClass` accept their one
/// implemented class and refuse any other in `tls::settings`.)
pub(crate) fn refuse_insecure(p: &mut Props) -> Result<(), ConfigError> {
    if p.bool("zkEnableSecurity", false)? {
        return Err(ConfigError::Unsupported {
            key: "zkEnableSecurity".into(),
            reason: "true is not supported: it makes every znode the bookie creates \
                     CREATOR_ALL (scheme auth), which needs a ZooKeeper SASL login, and \
                     bookie-rs has no ZooKeeper SASL login; without one Java's bookie fails \
                     too (ZooKeeper answers InvalidACL). Set zkEnableSecurity=false (the \
                     znodes are then open, as with Java's default)"
                .into(),
        });
    }
    Ok(())
}

/// Sorts the keys set into `report`'s no-effect and unknown lists (key order).
pub(crate) fn classify_set_keys(p: &Props, report: &mut LoadReport) {
    for key in p.keys() {
        match effect_of(key) {
            Some(KeyEffect::NoEffect(_)) if p.is_set(key) => report.ignored_keys.push(key.clone()),
            Some(_) => {}
            None if !p.is_used(key) => report.unknown_keys.push(key.clone()),
            None => {}
        }
    }
}

/// The start-up line for a key that is set and has no effect, with its reason.
pub fn no_effect_line(key: &str) -> String {
    let reason = effect_of(key).map_or("", KeyEffect::text);
    format!("config: {key} has no effect in bookie-rs: {reason} (docs/config.md §5)")
}
