//! `props`: the typed property reader [`Props`] the key sections read through.
//!
//! Owns: the merged key/value store (file entries, then `--set`, then dedicated flags; the last
//! write of a key wins), the origin of every value (`<file> line N`, `--set key`, `--port`, ...),
//! the "used" marks that tell read keys from ignored/unknown ones, the notes of values the loader
//! adjusted, and the typed readers (bool, integer in a range, size in units, milliseconds,
//! fraction, directory list).
//!
//! Guarantees:
//! * an empty value (after trimming) reads as unset, so the reader's default applies;
//! * every reader marks its key used, whether or not the key is set;
//! * a value that does not parse or is out of range is a [`ConfigError::InvalidValue`] naming
//!   the key, the value and its origin; no reader falls back silently.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::time::Duration;

use super::ConfigError;

/// Key/value store with origin tracking and "used" marks.
#[derive(Debug, Default)]
pub(crate) struct Props {
    /// key -> (value, origin).
    values: BTreeMap<String, (String, String)>,
    used: HashSet<String>,
    /// One line per value the loader changed (key named first), logged at load.
    notes: Vec<String>,
}

impl Props {
    /// Sets `key` (a later set of the same key replaces it).
    pub(crate) fn set(&mut self, key: &str, value: String, origin: String) {
        self.values.insert(key.to_string(), (value, origin));
    }

    /// True when `key` has an entry (even an empty one).
    pub(crate) fn contains(&self, key: &str) -> bool {
        self.values.contains_key(key)
    }

    /// Marks `key` read without reading it (an alias superseded by another key).
    pub(crate) fn mark_used(&mut self, key: &str) {
        self.used.insert(key.to_string());
    }

    /// Every key set (even to an empty value), in key order.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &String> {
        self.values.keys()
    }

    /// True when a reader asked for `key`.
    pub(crate) fn is_used(&self, key: &str) -> bool {
        self.used.contains(key)
    }

    /// True when `key` is set to a non-empty value (without marking it used).
    pub(crate) fn is_set(&self, key: &str) -> bool {
        self.values
            .get(key)
            .is_some_and(|(v, _)| !v.trim().is_empty())
    }

    /// Every key a reader asked for (set or not).
    #[cfg(test)]
    pub(crate) fn used_keys(&self) -> impl Iterator<Item = &String> {
        self.used.iter()
    }

    /// Every key with its value as set (last write wins), in key order.
    pub(crate) fn entries(&self) -> Vec<(String, String)> {
        self.values
            .iter()
            .map(|(k, (v, _))| (k.clone(), v.clone()))
            .collect()
    }

    /// Records a one-line note about a value the loader adjusted.
    pub(crate) fn note(&mut self, line: String) {
        self.notes.push(line);
    }

    /// The notes recorded so far.
    pub(crate) fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }

    /// Raw value; empty (after trim) means unset.
    pub(crate) fn raw(&mut self, key: &str) -> Option<(String, String)> {
        self.used.insert(key.to_string());
        let (v, o) = self.values.get(key)?;
        let v = v.trim();
        if v.is_empty() {
            None
        } else {
            Some((v.to_string(), o.clone()))
        }
    }

    /// An invalid-value error for `key` with an explicit value and origin.
    pub(crate) fn invalid(
        key: &str,
        value: &str,
        origin: &str,
        reason: impl Into<String>,
    ) -> ConfigError {
        ConfigError::InvalidValue {
            key: key.to_string(),
            value: value.to_string(),
            origin: origin.to_string(),
            reason: reason.into(),
        }
    }

    /// An invalid-value error for `key` naming its current value and origin (empty when the
    /// key is unset and a default was refused, e.g. by a cross-key rule).
    pub(crate) fn invalid_here(&self, key: &str, reason: impl Into<String>) -> ConfigError {
        let (v, o) = self.values.get(key).cloned().unwrap_or_default();
        Self::invalid(key, &v, &o, reason)
    }

    pub(crate) fn string(&mut self, key: &str) -> Option<String> {
        self.raw(key).map(|(v, _)| v)
    }

    pub(crate) fn string_or(&mut self, key: &str, default: &str) -> String {
        self.string(key).unwrap_or_else(|| default.to_string())
    }

    pub(crate) fn bool(&mut self, key: &str, default: bool) -> Result<bool, ConfigError> {
        let Some((v, origin)) = self.raw(key) else {
            return Ok(default);
        };
        // commons-configuration (BooleanUtils.toBooleanObject) accepts these spellings.
        match v.to_ascii_lowercase().as_str() {
            "true" | "yes" | "on" | "y" | "t" => Ok(true),
            "false" | "no" | "off" | "n" | "f" => Ok(false),
            _ => Err(Self::invalid(key, &v, &origin, "expected true or false")),
        }
    }

    /// Integer in `[min, max]`, `None` when unset.
    pub(crate) fn opt_int(
        &mut self,
        key: &str,
        min: i64,
        max: i64,
    ) -> Result<Option<i64>, ConfigError> {
        let Some((v, origin)) = self.raw(key) else {
            return Ok(None);
        };
        let n: i64 = v
            .parse()
            .map_err(|_| Self::invalid(key, &v, &origin, "expected an integer"))?;
        if n < min || n > max {
            return Err(Self::invalid(
                key,
                &v,
                &origin,
                format!("must be between {min} and {max}"),
            ));
        }
        Ok(Some(n))
    }

    /// Integer in `[min, max]`.
    pub(crate) fn int(
        &mut self,
        key: &str,
        default: i64,
        min: i64,
        max: i64,
    ) -> Result<i64, ConfigError> {
        Ok(self.opt_int(key, min, max)?.unwrap_or(default))
    }

    pub(crate) fn u64_min(
        &mut self,
        key: &str,
        default: u64,
        min: u64,
    ) -> Result<u64, ConfigError> {
        Ok(self.int(key, default as i64, min as i64, i64::MAX)? as u64)
    }

    pub(crate) fn u32_min(
        &mut self,
        key: &str,
        default: u32,
        min: u32,
    ) -> Result<u32, ConfigError> {
        Ok(self.int(key, default as i64, min as i64, u32::MAX as i64)? as u32)
    }

    pub(crate) fn port(&mut self, key: &str, default: u16) -> Result<u16, ConfigError> {
        Ok(self.int(key, default as i64, 0, u16::MAX as i64)? as u16)
    }

    /// Milliseconds, >= 0.
    pub(crate) fn millis(&mut self, key: &str, default_ms: u64) -> Result<Duration, ConfigError> {
        Ok(Duration::from_millis(self.u64_min(key, default_ms, 0)?))
    }

    /// Size given in `unit_bytes` units, `>= min_units`, returned in bytes (checked
    /// multiplication); `None` when unset.
    pub(crate) fn opt_size(
        &mut self,
        key: &str,
        unit_bytes: u64,
        min_units: u64,
    ) -> Result<Option<u64>, ConfigError> {
        let Some(units) = self.opt_int(key, min_units as i64, i64::MAX)? else {
            return Ok(None);
        };
        match (units as u64).checked_mul(unit_bytes) {
            Some(bytes) => Ok(Some(bytes)),
            None => Err(self.invalid_here(key, "too large")),
        }
    }

    /// Size given in `unit_bytes` units, returned in bytes (checked multiplication).
    pub(crate) fn size(
        &mut self,
        key: &str,
        default_units: u64,
        unit_bytes: u64,
        min_units: u64,
    ) -> Result<u64, ConfigError> {
        match self.opt_size(key, unit_bytes, min_units)? {
            Some(bytes) => Ok(bytes),
            None => default_units
                .checked_mul(unit_bytes)
                .ok_or_else(|| self.invalid_here(key, "default too large")),
        }
    }

    /// [`Props::size`] as an in-memory size (`usize`), for sizes of buffers and caches.
    pub(crate) fn memory_size(
        &mut self,
        key: &str,
        default_units: u64,
        unit_bytes: u64,
        min_units: u64,
    ) -> Result<usize, ConfigError> {
        let bytes = self.size(key, default_units, unit_bytes, min_units)?;
        usize::try_from(bytes).map_err(|_| self.invalid_here(key, "too large for this machine"))
    }

    /// Floating point fraction in `[lo, hi]` (inclusive bounds unless `open`).
    pub(crate) fn fraction(
        &mut self,
        key: &str,
        default: f64,
        lo: f64,
        hi: f64,
        open: bool,
    ) -> Result<f64, ConfigError> {
        let Some((v, origin)) = self.raw(key) else {
            return Ok(default);
        };
        let f: f64 = v
            .parse()
            .map_err(|_| Self::invalid(key, &v, &origin, "expected a number"))?;
        let ok = if open {
            f > lo && f < hi
        } else {
            f >= lo && f <= hi
        };
        if !f.is_finite() || !ok {
            let (l, r) = if open { ('(', ')') } else { ('[', ']') };
            return Err(Self::invalid(
                key,
                &v,
                &origin,
                format!("must be in {l}{lo}, {hi}{r}"),
            ));
        }
        Ok(f)
    }

    /// Comma-separated directories, none listed twice; `None` when unset.
    pub(crate) fn dirs(&mut self, key: &str) -> Result<Option<Vec<PathBuf>>, ConfigError> {
        let Some((v, origin)) = self.raw(key) else {
            return Ok(None);
        };
        let dirs: Vec<PathBuf> = v
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
            .collect();
        if dirs.is_empty() {
            return Err(Self::invalid(key, &v, &origin, "no directory given"));
        }
        let mut seen = HashSet::new();
        for d in &dirs {
            if !seen.insert(d.clone()) {
                return Err(Self::invalid(
                    key,
                    &v,
                    &origin,
                    format!("directory {} listed twice", d.display()),
                ));
            }
        }
        Ok(Some(dirs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> Props {
        let mut p = Props::default();
        for (k, v) in pairs {
            p.set(k, v.to_string(), format!("test {k}"));
        }
        p
    }

    #[test]
    fn empty_value_reads_as_unset_and_every_read_marks_the_key_used() {
        let mut p = props(&[("a", "  "), ("b", "7"), ("c", "x")]);
        assert_eq!(p.int("a", 3, 0, 10).unwrap(), 3);
        assert_eq!(p.opt_int("b", 0, 10).unwrap(), Some(7));
        assert_eq!(p.opt_int("missing", 0, 10).unwrap(), None);
        let unused: Vec<_> = p.keys().filter(|k| !p.is_used(k)).cloned().collect();
        assert_eq!(unused, vec!["c".to_string()]);
    }

    #[test]
    fn sizes_convert_once_and_overflow_is_an_error() {
        let mut p = props(&[("mb", "64"), ("huge", "9223372036854775807")]);
        assert_eq!(p.size("mb", 1, 1 << 20, 1).unwrap(), 64 << 20);
        assert_eq!(p.memory_size("unset", 2, 1 << 20, 1).unwrap(), 2 << 20);
        assert_eq!(p.opt_size("unset", 1 << 20, 1).unwrap(), None);
        let e = p.size("huge", 1, 1 << 20, 1).unwrap_err().to_string();
        assert!(e.contains("huge") && e.contains("too large"), "{e}");
    }
}
