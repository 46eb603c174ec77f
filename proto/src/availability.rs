//! `availabilityOfEntriesOfLedger` bytes of the GET_LIST_OF_ENTRIES_OF_LEDGER response
//! (docs/semantics.md §13; Java `AvailabilityOfEntriesOfLedger`).
//!
//! Format (all big-endian):
//! * header, 64 bytes: `version: i32 (0) | groupCount: i32 | 56 zero bytes`
//! * `groupCount` sequence groups of 24 bytes, sorted by `firstSequenceStart`:
//!   `firstSequenceStart: i64 | lastSequenceStart: i64 | sequenceSize: i32 | sequencePeriod: i32`.
//!   A group stands for the runs of `sequenceSize` consecutive entry ids starting at
//!   `firstSequenceStart + k * sequencePeriod` up to `lastSequenceStart` (period 0: one run).
//!
//! Encoding matches the Java bookie byte for byte. Note that Java (4.17 / master) never merges
//! two runs into one group: a new group's `lastSequenceStart` equals its first start and its
//! period is 0, so the "belongs to the current group" test (`start - last == period`) never
//! holds. Each maximal run of consecutive ids therefore becomes its own group with period 0;
//! we do the same. The decoder accepts any period, as the Java client does.
use std::collections::BTreeMap;

use bytes::{BufMut, Bytes, BytesMut};

use crate::ProtoError;

pub const AVAILABILITY_HEADER_BYTES: usize = 64;
pub const SEQUENCE_GROUP_BYTES: usize = 24;
pub const AVAILABILITY_VERSION: i32 = 0;

/// One sequence group (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SequenceGroup {
    pub first_sequence_start: i64,
    pub last_sequence_start: i64,
    pub sequence_size: i32,
    pub sequence_period: i32,
}

impl SequenceGroup {
    /// Java `isEntryAvailable` for one group.
    pub fn contains(&self, entry_id: i64) -> bool {
        let upper = self
            .last_sequence_start
            .saturating_add(i64::from(self.sequence_size));
        if entry_id < self.first_sequence_start || entry_id > upper {
            return false;
        }
        let offset = entry_id.saturating_sub(self.first_sequence_start);
        if self.sequence_period == 0 {
            offset < i64::from(self.sequence_size)
        } else {
            offset % i64::from(self.sequence_period) < i64::from(self.sequence_size)
        }
    }
}

/// Encodes the entry ids a bookie holds for a ledger. `entry_ids` should be ascending (as the
/// storage index yields them); duplicates are ignored; negative ids are skipped (Java uses -1
/// as "no current run" and real entry ids are >= 0).
pub fn encode_availability(entry_ids: impl IntoIterator<Item = i64>) -> Bytes {
    // Runs keyed by start; a later run with the same start replaces an earlier one (Java
    // TreeMap.put), which only matters for unsorted input.
    let mut groups: BTreeMap<i64, i64> = BTreeMap::new();
    let mut run: Option<(i64, i64)> = None; // (start, size)
    for id in entry_ids.into_iter().filter(|&id| id >= 0) {
        match run {
            None => run = Some((id, 1)),
            Some((start, size)) if id >= start && id < start.saturating_add(size) => {}
            Some((start, size)) if start.checked_add(size) == Some(id) => {
                run = Some((start, size + 1))
            }
            Some((start, size)) => {
                groups.insert(start, size);
                run = Some((id, 1));
            }
        }
    }
    if let Some((start, size)) = run {
        groups.insert(start, size);
    }
    let mut out =
        BytesMut::with_capacity(AVAILABILITY_HEADER_BYTES + groups.len() * SEQUENCE_GROUP_BYTES);
    out.put_i32(AVAILABILITY_VERSION);
    out.put_i32(i32::try_from(groups.len()).unwrap_or(i32::MAX));
    out.put_bytes(0, AVAILABILITY_HEADER_BYTES - 8);
    for (start, size) in groups.into_iter().take(i32::MAX as usize) {
        out.put_i64(start);
        out.put_i64(start);
        // Java keeps the run size in an int.
        out.put_i32(size as i32);
        out.put_i32(0);
    }
    out.freeze()
}

/// Decodes availability bytes into their sequence groups.
pub fn decode_availability(bytes: &[u8]) -> Result<Vec<SequenceGroup>, ProtoError> {
    let header = bytes
        .get(..AVAILABILITY_HEADER_BYTES)
        .ok_or(ProtoError::Truncated {
            what: "availability header",
            need: AVAILABILITY_HEADER_BYTES,
            have: bytes.len(),
        })?;
    let version = i32::from_be_bytes([header[0], header[1], header[2], header[3]]);
    if version > AVAILABILITY_VERSION {
        return Err(ProtoError::InvalidLength {
            what: "availability header version",
            len: i64::from(version),
        });
    }
    let count = i32::from_be_bytes([header[4], header[5], header[6], header[7]]);
    let count = usize::try_from(count).map_err(|_| ProtoError::InvalidLength {
        what: "availability group count",
        len: i64::from(count),
    })?;
    let need = count
        .checked_mul(SEQUENCE_GROUP_BYTES)
        .and_then(|n| n.checked_add(AVAILABILITY_HEADER_BYTES))
        .ok_or(ProtoError::InvalidLength {
            what: "availability group count",
            len: count as i64,
        })?;
    let body = bytes
        .get(AVAILABILITY_HEADER_BYTES..need)
        .ok_or(ProtoError::Truncated {
            what: "availability groups",
            need,
            have: bytes.len(),
        })?;
    Ok(body
        .chunks_exact(SEQUENCE_GROUP_BYTES)
        .map(|g| {
            let mut a = [0u8; 8];
            let mut b = [0u8; 8];
            let mut c = [0u8; 4];
            let mut d = [0u8; 4];
            a.copy_from_slice(&g[0..8]);
            b.copy_from_slice(&g[8..16]);
            c.copy_from_slice(&g[16..20]);
            d.copy_from_slice(&g[20..24]);
            SequenceGroup {
                first_sequence_start: i64::from_be_bytes(a),
                last_sequence_start: i64::from_be_bytes(b),
                sequence_size: i32::from_be_bytes(c),
                sequence_period: i32::from_be_bytes(d),
            }
        })
        .collect())
}

/// Java `isEntryAvailable`: the group with the greatest first start `<= entry_id` decides.
pub fn is_entry_available(groups: &[SequenceGroup], entry_id: i64) -> bool {
    groups
        .iter()
        .filter(|g| g.first_sequence_start <= entry_id)
        .max_by_key(|g| g.first_sequence_start)
        .is_some_and(|g| g.contains(entry_id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_ledger_is_a_bare_header() {
        let b = encode_availability([]);
        assert_eq!(b.len(), 64);
        assert!(b.iter().all(|&x| x == 0));
        assert_eq!(decode_availability(&b).unwrap(), vec![]);
    }

    #[test]
    fn each_run_is_one_group_like_java() {
        let b = encode_availability([0, 1, 2, 5, 6, 7, 10, 11, 11, 12, 20]);
        assert_eq!(b.len(), 64 + 4 * 24);
        assert_eq!(&b[..8], &[0, 0, 0, 0, 0, 0, 0, 4]);
        let g = decode_availability(&b).unwrap();
        let runs: Vec<_> = g
            .iter()
            .map(|g| {
                (
                    g.first_sequence_start,
                    g.last_sequence_start,
                    g.sequence_size,
                    g.sequence_period,
                )
            })
            .collect();
        assert_eq!(
            runs,
            vec![(0, 0, 3, 0), (5, 5, 3, 0), (10, 10, 3, 0), (20, 20, 1, 0)]
        );
        for e in 0..25 {
            let expect = [0, 1, 2, 5, 6, 7, 10, 11, 12, 20].contains(&e);
            assert_eq!(is_entry_available(&g, e), expect, "entry {e}");
        }
    }

    #[test]
    fn periodic_groups_from_other_encoders_decode() {
        let g = SequenceGroup {
            first_sequence_start: 0,
            last_sequence_start: 20,
            sequence_size: 3,
            sequence_period: 10,
        };
        assert!(g.contains(21) && !g.contains(23) && g.contains(22) && !g.contains(30));
    }

    #[test]
    fn truncated_or_negative_counts_are_errors() {
        let mut b = encode_availability([1, 2, 3]).to_vec();
        b.pop();
        assert!(decode_availability(&b).is_err());
        let mut neg = vec![0u8; 64];
        neg[4] = 0xff;
        assert!(decode_availability(&neg).is_err());
        assert!(decode_availability(&[0u8; 10]).is_err());
    }
}
