//! The `availabilityOfEntriesOfLedger` encoding of GET_LIST_OF_ENTRIES_OF_LEDGER
//! (semantics.md §13, Java `AvailabilityOfEntriesOfLedger`).
//!
//! Format (all integers big-endian):
//! ```text
//! header (64 bytes):  version:i32 = 0 | groups:i32 | 56 zero bytes
//! per group (24 bytes): firstSequenceStart:i64 | lastSequenceStart:i64
//!                       | sequenceSize:i32 | sequencePeriod:i32
//! ```
//! A group holds runs of `sequenceSize` consecutive entry ids starting at
//! `firstSequenceStart + k * sequencePeriod` up to `lastSequenceStart` (period 0 for a
//! single run). Groups are sorted by `firstSequenceStart`.

use bytes::{BufMut, Bytes, BytesMut};

pub const HEADER_LEN: usize = 64;
pub const GROUP_LEN: usize = 24;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Group {
    first: i64,
    last: i64,
    size: i64,
    period: i64,
}

/// Encodes a sorted, duplicate-free list of entry ids. Runs longer than `i32::MAX` or
/// periods beyond `i32::MAX` start new groups so every field fits its width.
pub fn encode(ids: &[i64]) -> Bytes {
    let mut groups: Vec<Group> = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let start = ids[i];
        let mut len: i64 = 1;
        while i + (len as usize) < ids.len()
            && ids[i + len as usize] == start.wrapping_add(len)
            && len < i32::MAX as i64
        {
            len += 1;
        }
        i += len as usize;
        let extend = match groups.last_mut() {
            Some(g) if g.size == len => {
                let period = start - g.last;
                if g.first == g.last && period <= i32::MAX as i64 {
                    g.period = period;
                    g.last = start;
                    true
                } else if g.period == period {
                    g.last = start;
                    true
                } else {
                    false
                }
            }
            _ => false,
        };
        if !extend {
            groups.push(Group {
                first: start,
                last: start,
                size: len,
                period: 0,
            });
        }
    }
    let mut out = BytesMut::with_capacity(HEADER_LEN + GROUP_LEN * groups.len());
    out.put_i32(0);
    out.put_i32(groups.len() as i32);
    out.put_bytes(0, HEADER_LEN - 8);
    for g in &groups {
        out.put_i64(g.first);
        out.put_i64(g.last);
        out.put_i32(g.size as i32);
        out.put_i32(g.period as i32);
    }
    out.freeze()
}

/// Decodes the encoding back into entry ids (tests and tools); `None` if malformed.
pub fn decode(bytes: &[u8]) -> Option<Vec<i64>> {
    let header = bytes.get(..HEADER_LEN)?;
    let groups = i32::from_be_bytes(header.get(4..8)?.try_into().ok()?);
    let mut ids = Vec::new();
    for g in 0..usize::try_from(groups).ok()? {
        let at = HEADER_LEN + g * GROUP_LEN;
        let raw = bytes.get(at..at + GROUP_LEN)?;
        let first = i64::from_be_bytes(raw[0..8].try_into().ok()?);
        let last = i64::from_be_bytes(raw[8..16].try_into().ok()?);
        let size = i32::from_be_bytes(raw[16..20].try_into().ok()?) as i64;
        let period = i32::from_be_bytes(raw[20..24].try_into().ok()?) as i64;
        let mut start = first;
        loop {
            ids.extend(start..start + size);
            if start >= last || period <= 0 {
                break;
            }
            start += period;
        }
    }
    Some(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let cases: Vec<Vec<i64>> = vec![
            vec![],
            vec![0],
            vec![0, 1, 2, 3],
            vec![0, 1, 5, 6, 10, 11, 20],
            vec![0, 2, 4, 6, 7, 9, 100],
            vec![3, 4, 5, 10, 11, 12, 17, 18, 19, 30],
        ];
        for ids in cases {
            let enc = encode(&ids);
            assert_eq!(decode(&enc).as_deref(), Some(ids.as_slice()), "{ids:?}");
        }
    }

    #[test]
    fn layout_of_one_run() {
        let enc = encode(&[5, 6, 7]);
        assert_eq!(enc.len(), HEADER_LEN + GROUP_LEN);
        assert_eq!(&enc[0..8], &[0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(&enc[64..72], &5i64.to_be_bytes());
        assert_eq!(&enc[72..80], &5i64.to_be_bytes());
        assert_eq!(&enc[80..84], &3i32.to_be_bytes());
        assert_eq!(&enc[84..88], &0i32.to_be_bytes());
    }

    #[test]
    fn periodic_runs_share_a_group() {
        let enc = encode(&[0, 1, 10, 11, 20, 21]);
        assert_eq!(enc.len(), HEADER_LEN + GROUP_LEN);
        assert_eq!(&enc[88 - 4..88], &10i32.to_be_bytes());
    }
}
