//! The scrubber's check of one finished segment, and its pacing: every byte a segment
//! holds that anything relies on is read back and checked — the trailer (magic, CRC,
//! version, layout, the segment id against the file name), the footer (its CRC from the
//! trailer, its layout, its entry count) and every entry's length and CRC32C against its
//! footer record (`format::check_entry`, the check of the read path). The background
//! pass over the whole log (`EntryLog::scrub`, lib.rs) and `bookie inspect verify` (the
//! offline form) both call [`check_segment`].
//!
//! Guarantees:
//! - bounded memory: the data area is read in chunks of at most `chunk` bytes (entries
//!   in file order, several to a chunk); an entry longer than a chunk is read alone, so a
//!   read holds at most `max(chunk, largest entry)` bytes plus a sector;
//! - each entry is judged on its own: a corrupt entry is one [`Finding`], its neighbours
//!   in the same chunk are still checked;
//! - a trailer or footer that does not check out is one [`Finding`] at its offset (the
//!   entries cannot be located then, so none are checked);
//! - pacing: before each read, [`Pace::wait`] is told the bytes and entries the pass will
//!   have read once that read is done, and returns whether to go on (false: cancelled,
//!   the check stops); so a rated pass is never ahead of its rate;
//! - an I/O error is returned as `Err` (a vanished file is `NotFound`: the caller skips a
//!   segment removed by GC or compaction meanwhile), never judged as corruption.

use crate::format::{self, EntryLoc, Trailer, TRAILER_LEN};
use crate::segment::read_span;
use bk_disk::{Disk, FileId, SECTOR};
use std::io;
use std::time::Duration;

/// Bytes read at a time by a scrub (1 MiB: about one 4 KiB read per entry of a small
/// entry at queue depth 1 would be far slower; more would only add memory).
pub const SCRUB_CHUNK_BYTES: usize = 1 << 20;

/// Something in a segment that fails its check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Finding {
    /// The trailer or the footer: the whole index of the segment.
    Index { offset: u64, detail: String },
    /// One entry's bytes fail their footer record.
    Entry {
        ledger: u64,
        loc: EntryLoc,
        detail: String,
    },
}

/// What one segment's check read and found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SegmentCheck {
    /// Bytes read (trailer, footer and data area).
    pub bytes: u64,
    /// Entries checked.
    pub entries: u64,
    pub findings: Vec<Finding>,
    /// The pace said stop part way.
    pub cancelled: bool,
}

/// Paces a pass: `wait(bytes, entries)` is called before each read with the totals of
/// the pass once that read is done (this segment's and the ones before it) and returns
/// whether to go on.
pub trait Pace {
    fn wait(&mut self, bytes: u64, entries: u64) -> bool;
}

/// Goes on at once, never cancels (`bookie inspect verify`).
pub struct Unpaced;

impl Pace for Unpaced {
    fn wait(&mut self, _: u64, _: u64) -> bool {
        true
    }
}

/// Rate limits of a pass (0 = no limit of that kind): stock `localScrubRateLimit`
/// (entries/s) and bookie-rs `localScrubRateLimitBytes` (bytes/s).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ScrubRate {
    pub bytes_per_sec: u64,
    pub entries_per_sec: f64,
}

impl ScrubRate {
    /// How long after its start a pass may have read `bytes` and checked `entries`:
    /// a token bucket without burst, refilled at the rates (the slower kind decides).
    pub fn due(&self, bytes: u64, entries: u64) -> Duration {
        let by_bytes = if self.bytes_per_sec == 0 {
            0.0
        } else {
            bytes as f64 / self.bytes_per_sec as f64
        };
        let by_entries = if self.entries_per_sec <= 0.0 {
            0.0
        } else {
            entries as f64 / self.entries_per_sec
        };
        Duration::from_secs_f64(by_bytes.max(by_entries))
    }
}

/// The time a [`RatedPace`] reads and sleeps on (the wall clock in the bookie, a
/// simulated one in tests).
pub trait Clock {
    /// Time since the pass started.
    fn elapsed(&self) -> Duration;
    /// Sleeps up to `d`; returns false when the pass is cancelled.
    fn sleep(&mut self, d: Duration) -> bool;
    /// Whether the pass is cancelled (asked before every read, even an unpaced one).
    fn cancelled(&self) -> bool;
}

/// Paces a pass to a [`ScrubRate`]: before each read it waits until the pass is due to
/// have read what it will have read after it (sleeps of at most 100 ms, so a cancel is seen soon).
pub struct RatedPace<C: Clock> {
    pub rate: ScrubRate,
    pub clock: C,
}

impl<C: Clock> Pace for RatedPace<C> {
    fn wait(&mut self, bytes: u64, entries: u64) -> bool {
        if self.clock.cancelled() {
            return false;
        }
        let due = self.rate.due(bytes, entries);
        loop {
            let now = self.clock.elapsed();
            if due <= now {
                return true;
            }
            if !self
                .clock
                .sleep((due - now).min(Duration::from_millis(100)))
            {
                return false;
            }
        }
    }
}

/// Checks the segment open as `file` (of `file_len` bytes, named for `segment_id`)
/// through `disk`; `done_*` are the pass's totals before it (for [`Pace::wait`]).
pub fn check_segment(
    disk: &mut dyn Disk,
    file: FileId,
    segment_id: u64,
    chunk: usize,
    pace: &mut dyn Pace,
    done_bytes: u64,
    done_entries: u64,
) -> io::Result<SegmentCheck> {
    let mut out = SegmentCheck::default();
    let file_len = disk.file_len(file)?;
    if file_len < SECTOR as u64 || !file_len.is_multiple_of(SECTOR as u64) {
        out.findings.push(Finding::Index {
            offset: file_len,
            detail: format!("segment length {file_len} is not a positive multiple of {SECTOR}"),
        });
        return Ok(out);
    }
    if !pace.wait(done_bytes + TRAILER_LEN as u64, done_entries) {
        out.cancelled = true;
        return Ok(out);
    }
    let at = file_len - TRAILER_LEN as u64;
    let (buf, skip) = read_span(disk, file, at, TRAILER_LEN)?;
    out.bytes += TRAILER_LEN as u64;
    let trailer = match Trailer::decode(&buf.as_slice()[skip..skip + TRAILER_LEN], file_len) {
        Ok(t) => t,
        Err(e) => {
            out.findings.push(Finding::Index {
                offset: at,
                detail: format!("trailer: {e}"),
            });
            return Ok(out);
        }
    };
    drop(buf);
    if trailer.segment_id != segment_id {
        out.findings.push(Finding::Index {
            offset: at,
            detail: format!(
                "trailer names segment {}, the file name {segment_id}",
                trailer.segment_id
            ),
        });
        return Ok(out);
    }
    if !pace.wait(
        done_bytes + out.bytes + trailer.footer_len as u64,
        done_entries,
    ) {
        out.cancelled = true;
        return Ok(out);
    }
    let (fbuf, fskip) = read_span(
        disk,
        file,
        trailer.footer_offset,
        trailer.footer_len as usize,
    )?;
    out.bytes += trailer.footer_len as u64;
    let footer = &fbuf.as_slice()[fskip..fskip + trailer.footer_len as usize];
    let runs = match format::decode_checked_footer(&trailer, footer) {
        Ok(r) => r,
        Err(e) => {
            out.findings.push(Finding::Index {
                offset: trailer.footer_offset,
                detail: format!("footer: {e}"),
            });
            return Ok(out);
        }
    };
    drop(fbuf);
    // Every entry in file order, with its ledger.
    let mut entries: Vec<(u64, EntryLoc)> = runs
        .iter()
        .flat_map(|r| r.entries.iter().map(move |l| (r.ledger, *l)))
        .collect();
    drop(runs);
    entries.sort_by_key(|(_, l)| l.offset);
    let mut i = 0;
    while i < entries.len() {
        // One chunk: entries from i while they fit (at least one).
        let start = entries[i].1.offset;
        let mut j = i + 1;
        let mut end = start + entries[i].1.stored_len();
        while j < entries.len() {
            let e = entries[j].1.offset + entries[j].1.stored_len();
            if e.saturating_sub(start) > chunk as u64 || entries[j].1.offset < end {
                break;
            }
            end = e;
            j += 1;
        }
        if !pace.wait(
            done_bytes + out.bytes + (end - start),
            done_entries + out.entries + (j - i) as u64,
        ) {
            out.cancelled = true;
            return Ok(out);
        }
        let (buf, skip) = match read_span(disk, file, start, (end - start) as usize) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                // The footer promises bytes the file does not have: a truncated file
                // (the trailer's layout check makes this unlikely; kept as a finding).
                out.findings.push(Finding::Index {
                    offset: start,
                    detail: format!("data area: {e}"),
                });
                return Ok(out);
            }
            Err(e) => return Err(e),
        };
        let data = buf.as_slice();
        for (ledger, loc) in &entries[i..j] {
            let at = skip + (loc.offset - start) as usize;
            if let Err(e) = format::check_entry(&data[at..], *ledger, loc) {
                out.findings.push(Finding::Entry {
                    ledger: *ledger,
                    loc: *loc,
                    detail: e.to_string(),
                });
            }
        }
        out.bytes += end - start;
        out.entries += (j - i) as u64;
        i = j;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    //! The check on segments written by the flush path on the simulated disk: a clean one
    //! has no finding; a flipped byte in an entry is that entry only; a flipped footer
    //! byte is an index finding; the pace sees the bytes it is asked to pace.
    use super::*;
    use crate::segment::{segment_name, write_segment, SegmentInput};
    use crate::write_cache::CachedEntry;
    use bk_disk::{OpenOptions, SimFs};
    use bytes::Bytes;
    use std::path::{Path, PathBuf};

    /// Writes segment 3 holding entries 0..n of ledger 7, `len` bytes each; returns its path.
    fn segment(fs: &SimFs, n: u64, len: usize) -> PathBuf {
        let mut d = fs.disk();
        let dir = Path::new("/d");
        d.create_dir_all(dir).unwrap();
        let data: Vec<CachedEntry> = (0..n)
            .map(|e| {
                let data = Bytes::from(vec![(e % 251) as u8; len]);
                CachedEntry {
                    crc: crate::format::entry_crc(7, e, &data),
                    data,
                }
            })
            .collect();
        let input = SegmentInput {
            ledgers: vec![(
                7,
                data.iter()
                    .enumerate()
                    .map(|(e, b)| (e as u64, b))
                    .collect(),
            )],
        };
        write_segment(&mut d, dir, 3, 1, &input, 1 << 20, 4, false, &|_| {}).unwrap();
        dir.join(segment_name(3))
    }

    fn check(fs: &SimFs, path: &Path, chunk: usize, pace: &mut dyn Pace) -> SegmentCheck {
        let mut d = fs.disk();
        let f = d.open(path, OpenOptions::default()).unwrap();
        let r = check_segment(&mut d, f, 3, chunk, pace, 0, 0).unwrap();
        d.close(f).unwrap();
        r
    }

    fn flip(fs: &SimFs, path: &Path, offset: u64) {
        fs.flip_bit(path, offset, 3).unwrap();
    }

    /// Records what it was told; stops after `stop_after` calls.
    #[derive(Default)]
    struct Recorder {
        calls: Vec<(u64, u64)>,
        stop_after: Option<usize>,
    }

    impl Pace for Recorder {
        fn wait(&mut self, bytes: u64, entries: u64) -> bool {
            self.calls.push((bytes, entries));
            self.stop_after.is_none_or(|n| self.calls.len() <= n)
        }
    }

    #[test]
    fn a_clean_segment_has_no_finding_and_every_entry_is_checked() {
        let fs = SimFs::new(1);
        let p = segment(&fs, 100, 3000);
        let mut rec = Recorder::default();
        let r = check(&fs, &p, 64 * 1024, &mut rec);
        assert_eq!(r.findings, vec![]);
        assert_eq!(r.entries, 100);
        assert!(r.bytes >= 300_000, "{}", r.bytes);
        // 300 000 bytes in chunks of at most 64 KiB: trailer, footer, then >= 5 chunks.
        assert!(rec.calls.len() >= 2 + 5, "{:?}", rec.calls);
    }

    #[test]
    fn a_flipped_entry_byte_is_that_entry_only() {
        let fs = SimFs::new(1);
        let p = segment(&fs, 100, 3000);
        let loc = entry_loc(&fs, &p, 50);
        flip(&fs, &p, loc.offset + 10);
        let r = check(&fs, &p, 64 * 1024, &mut Unpaced);
        assert_eq!(r.entries, 100);
        assert_eq!(r.findings.len(), 1, "{:?}", r.findings);
        match &r.findings[0] {
            Finding::Entry { ledger, loc: l, .. } => assert_eq!((*ledger, l.entry), (7, 50)),
            f => panic!("{f:?}"),
        }
    }

    #[test]
    fn a_flipped_footer_byte_is_an_index_finding() {
        let fs = SimFs::new(1);
        let p = segment(&fs, 10, 100);
        let t = trailer(&fs, &p);
        flip(&fs, &p, t.footer_offset + 5);
        let r = check(&fs, &p, 64 * 1024, &mut Unpaced);
        assert_eq!(r.entries, 0);
        match &r.findings[..] {
            [Finding::Index { offset, detail }] => {
                assert_eq!(*offset, t.footer_offset);
                assert!(detail.contains("footer checksum mismatch"), "{detail}");
            }
            f => panic!("{f:?}"),
        }
        // And a flipped trailer byte.
        let p = segment(&fs, 10, 100);
        let len = fs.volatile_contents(&p).unwrap().len() as u64;
        flip(&fs, &p, len - 10);
        let r = check(&fs, &p, 64 * 1024, &mut Unpaced);
        assert!(
            matches!(&r.findings[..], [Finding::Index { detail, .. }] if detail.contains("trailer")),
            "{:?}",
            r.findings
        );
    }

    #[test]
    fn the_pace_can_stop_a_check_part_way() {
        let fs = SimFs::new(1);
        let p = segment(&fs, 100, 3000);
        let mut rec = Recorder {
            stop_after: Some(3),
            ..Default::default()
        };
        let r = check(&fs, &p, 16 * 1024, &mut rec);
        assert!(r.cancelled);
        assert!(r.entries < 100 && r.entries > 0, "{}", r.entries);
    }

    #[test]
    fn the_rate_is_the_slower_of_its_two_limits() {
        let r = ScrubRate {
            bytes_per_sec: 1_000_000,
            entries_per_sec: 100.0,
        };
        assert_eq!(r.due(2_000_000, 10), Duration::from_secs(2));
        assert_eq!(r.due(1_000, 300), Duration::from_secs(3));
        assert_eq!(ScrubRate::default().due(u64::MAX, u64::MAX), Duration::ZERO);
    }

    fn trailer(fs: &SimFs, p: &Path) -> Trailer {
        let mut d = fs.disk();
        crate::segment::load_index(&mut d, p).unwrap().0
    }

    fn entry_loc(fs: &SimFs, p: &Path, entry: u64) -> EntryLoc {
        let mut d = fs.disk();
        let (_, runs, _) = crate::segment::load_index(&mut d, p).unwrap();
        *runs[0].entries.iter().find(|l| l.entry == entry).unwrap()
    }
}
