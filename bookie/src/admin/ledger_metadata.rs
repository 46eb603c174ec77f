//! Decoding a ledger's metadata znode (format version 3, what 4.x clients write) into the
//! JSON the Java admin API prints for it (Jackson over `LedgerMetadataImpl`'s getters).
//!
//! Znode format (BookKeeper's `LedgerMetadataSerDe`, version 3):
//! ```text
//! "BookieMetadataFormatVersion\t3\n" | varint length | LedgerMetadataFormat (protobuf)
//! ```
//! `LedgerMetadataFormat` (DataFormats.proto): 1 quorumSize int32 (required),
//! 2 ensembleSize int32 (required), 3 length int64 (required), 4 lastEntryId int64,
//! 5 state enum {1 OPEN, 2 IN_RECOVERY, 3 CLOSED} (required), 6 segment repeated
//! {1 ensembleMember repeated string, 2 firstEntryId int64 (required)}, 7 digestType enum
//! {1 CRC32, 2 HMAC, 3 CRC32C, 4 DUMMY}, 8 password bytes, 9 ackQuorumSize int32,
//! 10 ctime int64, 11 customMetadata repeated {1 key string, 2 value bytes}, 12 cToken int64.
//!
//! JSON keys (Java's bean names): `ledgerId`, `metadataFormatVersion`, `ensembleSize`,
//! `writeQuorumSize`, `ackQuorumSize`, `lastEntryId`, `length`, `digestType` (`CRC32`,
//! `MAC`, `CRC32C`, `DUMMY`), `password` and `customMetadata` values (base64, as Jackson
//! writes `byte[]`), `state`, `closed`, `ctime`, `ctoken`, `allEnsembles`
//! (`{"<first entry>": [{"id": "<bookie id>"}, ...]}`). Versions 1 and 2 (text formats of
//! pre-4.0 clients) are refused with an error, never guessed at.
//!
//! This is the bookie's one parse of ledger metadata: the garbage collector's over-replication
//! check and `verifyMetadataOnGC` read state and ensembles through [`ensembles`].

use serde_json::{json, Map, Value};

/// Header before the format version number.
const VERSION_KEY: &[u8] = b"BookieMetadataFormatVersion\t";

#[derive(Clone, PartialEq, prost::Message)]
struct LedgerMetadataFormat {
    #[prost(int32, required, tag = "1")]
    quorum_size: i32,
    #[prost(int32, required, tag = "2")]
    ensemble_size: i32,
    #[prost(int64, required, tag = "3")]
    length: i64,
    #[prost(int64, optional, tag = "4")]
    last_entry_id: Option<i64>,
    #[prost(int32, required, tag = "5")]
    state: i32,
    #[prost(message, repeated, tag = "6")]
    segment: Vec<Segment>,
    #[prost(int32, optional, tag = "7")]
    digest_type: Option<i32>,
    #[prost(bytes = "vec", optional, tag = "8")]
    password: Option<Vec<u8>>,
    #[prost(int32, optional, tag = "9")]
    ack_quorum_size: Option<i32>,
    #[prost(int64, optional, tag = "10")]
    ctime: Option<i64>,
    #[prost(message, repeated, tag = "11")]
    custom_metadata: Vec<CustomEntry>,
    #[prost(int64, optional, tag = "12")]
    c_token: Option<i64>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Segment {
    #[prost(string, repeated, tag = "1")]
    ensemble_member: Vec<String>,
    #[prost(int64, required, tag = "2")]
    first_entry_id: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
struct CustomEntry {
    #[prost(string, optional, tag = "1")]
    key: Option<String>,
    #[prost(bytes = "vec", optional, tag = "2")]
    value: Option<Vec<u8>>,
}

/// What reading a ledger's entries needs from its metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadParams {
    /// DataFormats `DigestType` number (1 CRC32, 2 HMAC, 3 CRC32C, 4 DUMMY).
    pub digest_type: i32,
    pub password: Vec<u8>,
    /// `Some(last entry id)` once the ledger is closed.
    pub closed_last_entry: Option<i64>,
}

/// The digest, password and (when closed) last entry of a metadata znode's `data`.
pub fn read_params(data: &[u8]) -> Result<ReadParams, String> {
    let (_, md) = decode(data)?;
    Ok(ReadParams {
        digest_type: md.digest_type.unwrap_or(1),
        password: md.password.unwrap_or_default(),
        closed_last_entry: (md.state == 3).then(|| md.last_entry_id.unwrap_or(-1)),
    })
}

/// The znode of a new, open ledger on the one bookie `bookie_id` (ensemble, write and ack
/// quorum 1), as a 4.x client writes it (format version 3, `ctime` stored) — the sanity
/// test's ledger (sanity.rs).
pub fn encode_open_single(
    bookie_id: &str,
    digest_type: i32,
    password: &[u8],
    ctime_ms: i64,
) -> Vec<u8> {
    let md = LedgerMetadataFormat {
        quorum_size: 1,
        ensemble_size: 1,
        length: 0,
        last_entry_id: None,
        state: 1,
        segment: vec![Segment {
            ensemble_member: vec![bookie_id.to_string()],
            first_entry_id: 0,
        }],
        digest_type: Some(digest_type),
        password: Some(password.to_vec()),
        ack_quorum_size: Some(1),
        ctime: Some(ctime_ms),
        custom_metadata: Vec::new(),
        c_token: None,
    };
    let mut out = VERSION_KEY.to_vec();
    out.extend(b"3\n");
    out.extend(prost::Message::encode_length_delimited_to_vec(&md));
    out
}

/// Decodes a metadata znode (module docs): its format version and the protobuf. The one
/// parse of ledger metadata in the bookie (the admin API and GC both go through it).
fn decode(data: &[u8]) -> Result<(u32, LedgerMetadataFormat), String> {
    let rest = data
        .strip_prefix(VERSION_KEY)
        .ok_or("not ledger metadata (no format version header)")?;
    let nl = rest
        .iter()
        .position(|&b| b == b'\n')
        .ok_or("format version header without a newline")?;
    let version = std::str::from_utf8(&rest[..nl])
        .ok()
        .and_then(|v| v.trim().parse::<u32>().ok())
        .ok_or("format version is not a number")?;
    if version != 3 {
        return Err(format!(
            "metadata format version {version} is not supported"
        ));
    }
    let md = <LedgerMetadataFormat as prost::Message>::decode_length_delimited(&rest[nl + 1..])
        .map_err(|e| format!("ledger metadata protobuf: {e}"))?;
    Ok((version, md))
}

/// A ledger's state as its metadata records it (`LedgerMetadataFormat.state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LedgerState {
    Open,
    InRecovery,
    Closed,
}

impl LedgerState {
    fn from_wire(state: i32) -> Result<LedgerState, String> {
        match state {
            1 => Ok(LedgerState::Open),
            2 => Ok(LedgerState::InRecovery),
            3 => Ok(LedgerState::Closed),
            s => Err(format!("unknown ledger state {s}")),
        }
    }

    fn name(self) -> &'static str {
        match self {
            LedgerState::Open => "OPEN",
            LedgerState::InRecovery => "IN_RECOVERY",
            LedgerState::Closed => "CLOSED",
        }
    }
}

/// What the garbage collector needs of a ledger's metadata: its state and every ensemble of
/// the ensembles map (first entry id, bookie ids as written), in znode order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerEnsembles {
    pub state: LedgerState,
    pub ensembles: Vec<(i64, Vec<String>)>,
}

impl LedgerEnsembles {
    /// Whether `bookie_id` is a member of any ensemble (exact id match, as Java's
    /// `BookieId.equals`).
    pub fn has_member(&self, bookie_id: &str) -> bool {
        self.ensembles
            .iter()
            .any(|(_, members)| members.iter().any(|m| m == bookie_id))
    }
}

/// The state and ensembles of a metadata znode, or why it cannot be read (never a guess).
pub fn ensembles(data: &[u8]) -> Result<LedgerEnsembles, String> {
    let (_, md) = decode(data)?;
    Ok(LedgerEnsembles {
        state: LedgerState::from_wire(md.state)?,
        ensembles: md
            .segment
            .into_iter()
            .map(|s| (s.first_entry_id, s.ensemble_member))
            .collect(),
    })
}

/// Whether ledger metadata `data` says some entry of the ledger is stored on `bookie_id`,
/// decided as Java's `BookKeeperAdmin.areEntriesOfLedgerStoredInTheBookie` (what decommission
/// waits on): for each segment whose ensemble holds the bookie, the last segment of a closed
/// ledger that got no entry stores nothing; the last segment of a ledger not closed, or any
/// segment when ensemble size = write quorum, stores on every member; otherwise the bookie
/// stores an entry of the segment iff round-robin striping (entry `e` on ensemble indexes
/// `(e + i) % E`, `i < W`) puts one of its first `E` entries on the bookie's index.
pub fn entries_stored_on(data: &[u8], bookie_id: &str) -> Result<bool, String> {
    let (_, md) = decode(data)?;
    let closed = md.state == 3;
    let last_entry = md.last_entry_id.unwrap_or(-1);
    let (e, w) = (i64::from(md.ensemble_size), i64::from(md.quorum_size));
    let n = md.segment.len();
    for (i, seg) in md.segment.iter().enumerate() {
        let Some(index) = seg.ensemble_member.iter().position(|m| m == bookie_id) else {
            continue;
        };
        let last_segment = i + 1 == n;
        let first = seg.first_entry_id;
        if last_segment && closed && last_entry < first {
            continue;
        }
        if (last_segment && !closed) || e == w {
            return Ok(true);
        }
        if e <= 0 {
            return Err(format!("ensemble size {e}"));
        }
        let last = if last_segment {
            last_entry
        } else {
            md.segment[i + 1].first_entry_id - 1
        };
        let index = index as i64;
        // Java's `getFirstStoredEntryId`: the first `E` entries of the segment, at most.
        let end = last.min(first.saturating_add(e - 1));
        if (first..=end).any(|entry| (0..w).any(|k| (entry + k) % e == index)) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// What re-replicating a ledger needs of its metadata (admin/recovery.rs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveryView {
    pub state: LedgerState,
    pub ensemble_size: i32,
    pub write_quorum: i32,
    /// `ackQuorumSize` (the write quorum when the metadata has none, as Java reads it).
    pub ack_quorum: i32,
    /// The closed ledger's last entry (-1 when it got none, or while not closed).
    pub last_entry_id: i64,
    /// DataFormats `DigestType` number (1 CRC32, 2 HMAC, 3 CRC32C, 4 DUMMY).
    pub digest_type: i32,
    pub password: Vec<u8>,
    /// Every ensemble: first entry id, members, in znode order.
    pub ensembles: Vec<(i64, Vec<String>)>,
}

/// The [`RecoveryView`] of a metadata znode, or why it cannot be read.
pub fn recovery_view(data: &[u8]) -> Result<RecoveryView, String> {
    let (_, md) = decode(data)?;
    Ok(RecoveryView {
        state: LedgerState::from_wire(md.state)?,
        ensemble_size: md.ensemble_size,
        write_quorum: md.quorum_size,
        ack_quorum: md.ack_quorum_size.unwrap_or(md.quorum_size),
        last_entry_id: md.last_entry_id.unwrap_or(-1),
        digest_type: md.digest_type.unwrap_or(1),
        password: md.password.unwrap_or_default(),
        ensembles: md
            .segment
            .into_iter()
            .map(|s| (s.first_entry_id, s.ensemble_member))
            .collect(),
    })
}

/// The znode `data` with the members of the ensemble starting at `first_entry` replaced by
/// `replacements` (old id, new id), every other field kept (Java's
/// `LedgerMetadataBuilder.replaceEnsembleEntry`); `Ok(None)` when that ensemble holds none
/// of the old ids any more (another replicator moved it first: nothing to write) or no
/// ensemble starts there.
pub fn replace_in_ensemble(
    data: &[u8],
    first_entry: i64,
    replacements: &[(String, String)],
) -> Result<Option<Vec<u8>>, String> {
    let (_, mut md) = decode(data)?;
    let Some(seg) = md
        .segment
        .iter_mut()
        .find(|s| s.first_entry_id == first_entry)
    else {
        return Ok(None);
    };
    let mut changed = false;
    for member in &mut seg.ensemble_member {
        if let Some((_, new)) = replacements.iter().find(|(old, _)| old == member) {
            *member = new.clone();
            changed = true;
        }
    }
    if !changed {
        return Ok(None);
    }
    let mut out = VERSION_KEY.to_vec();
    out.extend(b"3\n");
    out.extend(prost::Message::encode_length_delimited_to_vec(&md));
    Ok(Some(out))
}

/// The znode `data` of an OPEN ledger marked IN_RECOVERY, every other field kept (Java's
/// `LedgerMetadataBuilder.withInRecoveryState`, the first step of ledger recovery);
/// `Ok(None)` when the ledger is not OPEN (in recovery already, or closed: nothing to write).
pub fn in_recovery(data: &[u8]) -> Result<Option<Vec<u8>>, String> {
    let (_, mut md) = decode(data)?;
    if LedgerState::from_wire(md.state)? != LedgerState::Open {
        return Ok(None);
    }
    md.state = 2;
    Ok(Some(encode(&md)))
}

/// The znode `data` of a ledger IN_RECOVERY closed at `last_entry_id` with `length`, every
/// other field kept (Java's `closeRecovered`: `withClosedState().withLastEntryId(lac)
/// .withLength(len)`); `Ok(None)` when it is not IN_RECOVERY (someone else closed it: keep
/// theirs).
pub fn closed_after_recovery(
    data: &[u8],
    last_entry_id: i64,
    length: i64,
) -> Result<Option<Vec<u8>>, String> {
    let (_, mut md) = decode(data)?;
    if LedgerState::from_wire(md.state)? != LedgerState::InRecovery {
        return Ok(None);
    }
    md.state = 3;
    md.last_entry_id = Some(last_entry_id);
    md.length = length;
    Ok(Some(encode(&md)))
}

/// Format version 3 bytes of `md` (module docs).
fn encode(md: &LedgerMetadataFormat) -> Vec<u8> {
    let mut out = VERSION_KEY.to_vec();
    out.extend(b"3\n");
    out.extend(prost::Message::encode_length_delimited_to_vec(md));
    out
}

/// The JSON of ledger `id`'s metadata znode `data` (module docs), or why it cannot be read.
/// `ctime` is -1 when the metadata stores none (clients store it only with
/// `storeSystemtimeAsLedgerCreationTime`); see [`to_json_with_znode_ctime`].
pub fn to_json(id: i64, data: &[u8]) -> Result<Value, String> {
    to_json_inner(id, data, None)
}

/// As [`to_json`], for metadata read from ZooKeeper: a metadata without its own `ctime`
/// shows the znode's creation time, as Java's `LedgerMetadataSerDe.parseConfig(..., stat
/// ctime)` does.
pub fn to_json_with_znode_ctime(id: i64, data: &[u8], znode_ctime: i64) -> Result<Value, String> {
    to_json_inner(id, data, Some(znode_ctime))
}

fn to_json_inner(id: i64, data: &[u8], znode_ctime: Option<i64>) -> Result<Value, String> {
    let (version, md) = decode(data)?;
    let state = LedgerState::from_wire(md.state)?.name();
    let digest = match md.digest_type.unwrap_or(1) {
        1 => "CRC32",
        2 => "MAC",
        3 => "CRC32C",
        4 => "DUMMY",
        d => return Err(format!("unknown digest type {d}")),
    };
    let mut ensembles = Map::new();
    for s in &md.segment {
        let members: Vec<Value> = s
            .ensemble_member
            .iter()
            .map(|m| json!({ "id": m }))
            .collect();
        ensembles.insert(s.first_entry_id.to_string(), Value::Array(members));
    }
    let mut custom = Map::new();
    for e in &md.custom_metadata {
        custom.insert(
            e.key.clone().unwrap_or_default(),
            Value::String(base64(e.value.as_deref().unwrap_or_default())),
        );
    }
    Ok(json!({
        "ledgerId": id,
        "metadataFormatVersion": version,
        "ensembleSize": md.ensemble_size,
        "writeQuorumSize": md.quorum_size,
        "ackQuorumSize": md.ack_quorum_size.unwrap_or(md.quorum_size),
        "lastEntryId": md.last_entry_id.unwrap_or(-1),
        "length": md.length,
        "digestType": digest,
        "password": base64(md.password.as_deref().unwrap_or_default()),
        "state": state,
        "closed": state == "CLOSED",
        "ctime": md.ctime.or(znode_ctime).unwrap_or(-1),
        "ctoken": md.c_token.unwrap_or(0),
        "customMetadata": custom,
        "allEnsembles": ensembles,
    }))
}

/// Standard base64 with padding (how Jackson writes `byte[]`).
fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Encodes metadata as a 4.x client writes it (tests of this module and of the endpoint).
pub fn encode_for_tests(ensemble: &[&str], closed_at: Option<i64>) -> Vec<u8> {
    let state = if closed_at.is_some() {
        LedgerState::Closed
    } else {
        LedgerState::Open
    };
    encode_ensembles_for_tests(&[(0, ensemble)], state, closed_at)
}

/// Encodes metadata with several ensembles (first entry id, members) in `state` (tests of
/// this module and of the garbage collector).
pub fn encode_ensembles_for_tests(
    ensembles: &[(i64, &[&str])],
    state: LedgerState,
    last_entry: Option<i64>,
) -> Vec<u8> {
    let md = LedgerMetadataFormat {
        quorum_size: 2,
        ensemble_size: ensembles.first().map_or(0, |(_, e)| e.len() as i32),
        length: last_entry.map_or(0, |e| (e + 1) * 100),
        last_entry_id: last_entry,
        state: match state {
            LedgerState::Open => 1,
            LedgerState::InRecovery => 2,
            LedgerState::Closed => 3,
        },
        segment: ensembles
            .iter()
            .map(|(first, members)| Segment {
                ensemble_member: members.iter().map(|s| s.to_string()).collect(),
                first_entry_id: *first,
            })
            .collect(),
        digest_type: Some(3),
        password: Some(b"pw".to_vec()),
        ack_quorum_size: Some(2),
        ctime: Some(1_700_000_000_000),
        custom_metadata: vec![CustomEntry {
            key: Some("application".into()),
            value: Some(b"pulsar".to_vec()),
        }],
        c_token: None,
    };
    let mut out = b"BookieMetadataFormatVersion\t3\n".to_vec();
    out.extend(prost::Message::encode_length_delimited_to_vec(&md));
    out
}

/// Encodes a closed ledger as a 4.x client writes it: one ensemble, quorums `write` and
/// `ack`, `last_entry`, `length`, digest type number and password (tests of recovery).
pub fn encode_closed_for_tests(
    ensemble: &[&str],
    write: i32,
    ack: i32,
    last_entry: i64,
    length: i64,
    digest_type: i32,
    password: &[u8],
) -> Vec<u8> {
    let md = LedgerMetadataFormat {
        quorum_size: write,
        ensemble_size: ensemble.len() as i32,
        length,
        last_entry_id: Some(last_entry),
        state: 3,
        segment: vec![Segment {
            ensemble_member: ensemble.iter().map(|s| s.to_string()).collect(),
            first_entry_id: 0,
        }],
        digest_type: Some(digest_type),
        password: Some(password.to_vec()),
        ack_quorum_size: Some(ack),
        ctime: Some(1_700_000_000_000),
        custom_metadata: Vec::new(),
        c_token: None,
    };
    let mut out = VERSION_KEY.to_vec();
    out.extend(b"3\n");
    out.extend(prost::Message::encode_length_delimited_to_vec(&md));
    out
}

/// Encodes an OPEN ledger as a 4.x client writes it at creation: one ensemble, quorums
/// `write` and `ack`, digest type number and password (tests of recovery).
pub fn encode_open_for_tests(
    ensemble: &[&str],
    write: i32,
    ack: i32,
    digest_type: i32,
    password: &[u8],
) -> Vec<u8> {
    encode(&LedgerMetadataFormat {
        quorum_size: write,
        ensemble_size: ensemble.len() as i32,
        length: 0,
        last_entry_id: None,
        state: 1,
        segment: vec![Segment {
            ensemble_member: ensemble.iter().map(|s| s.to_string()).collect(),
            first_entry_id: 0,
        }],
        digest_type: Some(digest_type),
        password: Some(password.to_vec()),
        ack_quorum_size: Some(ack),
        ctime: Some(1_700_000_000_000),
        custom_metadata: Vec::new(),
        c_token: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_what_a_client_writes() {
        let data = encode_for_tests(&["127.0.0.1:3181", "127.0.0.1:3182"], Some(9));
        let v = to_json(5, &data).unwrap();
        assert_eq!(v["ledgerId"], 5);
        assert_eq!(v["state"], "CLOSED");
        assert_eq!(v["closed"], true);
        assert_eq!(v["lastEntryId"], 9);
        assert_eq!(v["digestType"], "CRC32C");
        assert_eq!(v["password"], "cHc=");
        assert_eq!(v["customMetadata"]["application"], "cHVsc2Fy");
        assert_eq!(v["allEnsembles"]["0"][1]["id"], "127.0.0.1:3182");
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        assert!(to_json(1, b"garbage").is_err());
        assert!(to_json(1, b"BookieMetadataFormatVersion\t2\nquorumSize: 2\n").is_err());
        let mut data = encode_for_tests(&["a:1"], None);
        data.truncate(data.len() - 3);
        assert!(to_json(1, &data).is_err(), "truncated protobuf");
    }

    #[test]
    fn ensembles_list_every_segment() {
        let data = encode_ensembles_for_tests(
            &[(0, &["a:1", "b:1"]), (10, &["a:1", "c:1"])],
            LedgerState::InRecovery,
            None,
        );
        let e = ensembles(&data).unwrap();
        assert_eq!(e.state, LedgerState::InRecovery);
        assert_eq!(e.ensembles.len(), 2);
        assert!(e.has_member("b:1") && e.has_member("c:1"));
        assert!(!e.has_member("d:1") && !e.has_member("a:"));
        assert!(ensembles(b"garbage").is_err());
        assert_eq!(to_json(1, &data).unwrap()["state"], "IN_RECOVERY");
    }

    #[test]
    fn ctime_falls_back_to_the_znode_as_java() {
        let mut md = <LedgerMetadataFormat as prost::Message>::decode_length_delimited(
            &encode_for_tests(&["a:1"], Some(0))[VERSION_KEY.len() + 2..],
        )
        .unwrap();
        md.ctime = None;
        let mut data = b"BookieMetadataFormatVersion\t3\n".to_vec();
        data.extend(prost::Message::encode_length_delimited_to_vec(&md));
        assert_eq!(to_json(1, &data).unwrap()["ctime"], -1);
        let v = to_json_with_znode_ctime(1, &data, 1_796_000_000_000).unwrap();
        assert_eq!(
            v["ctime"], 1_796_000_000_000i64,
            "no stored ctime: the znode's"
        );
        let stored = encode_for_tests(&["a:1"], Some(0));
        let v = to_json_with_znode_ctime(1, &stored, 5).unwrap();
        assert_eq!(v["ctime"], 1_700_000_000_000i64, "a stored ctime wins");
        let p = read_params(&stored).unwrap();
        assert_eq!((p.digest_type, p.closed_last_entry), (3, Some(0)));
        assert_eq!(p.password, b"pw");
    }

    #[test]
    fn the_sanity_ledger_reads_back_as_an_open_single_bookie_ledger() {
        let data = encode_open_single("127.0.0.1:3181", 2, b"", 7);
        let v = to_json(9, &data).unwrap();
        assert_eq!(v["state"], "OPEN");
        assert_eq!(v["digestType"], "MAC");
        assert_eq!(
            (v["ensembleSize"].clone(), v["ackQuorumSize"].clone()),
            (1.into(), 1.into())
        );
        assert_eq!(v["allEnsembles"]["0"][0]["id"], "127.0.0.1:3181");
        assert_eq!(v["ctime"], 7);
    }

    #[test]
    fn replacing_an_ensemble_member_keeps_every_other_field() {
        let data = encode_ensembles_for_tests(
            &[(0, &["a:1", "b:1"]), (10, &["a:1", "c:1"])],
            LedgerState::Closed,
            Some(19),
        );
        let swap = [("a:1".to_string(), "d:1".to_string())];
        let out = replace_in_ensemble(&data, 10, &swap).unwrap().unwrap();
        let (before, after) = (to_json(1, &data).unwrap(), to_json(1, &out).unwrap());
        assert_eq!(after["allEnsembles"]["10"][0]["id"], "d:1");
        assert_eq!(
            after["allEnsembles"]["0"][0]["id"], "a:1",
            "other ensemble kept"
        );
        let mut expect = before.clone();
        expect["allEnsembles"]["10"][0]["id"] = "d:1".into();
        assert_eq!(after, expect, "nothing else changed");
        assert_eq!(
            replace_in_ensemble(&out, 10, &swap).unwrap(),
            None,
            "done once"
        );
        assert_eq!(
            replace_in_ensemble(&data, 5, &swap).unwrap(),
            None,
            "no such ensemble"
        );
        let v = recovery_view(&out).unwrap();
        assert_eq!(
            (v.state, v.last_entry_id, v.write_quorum),
            (LedgerState::Closed, 19, 2)
        );
        assert_eq!((v.digest_type, v.password.as_slice()), (3, &b"pw"[..]));
    }

    #[test]
    fn ledger_recovery_marks_then_closes_keeping_every_other_field() {
        let open = encode_open_for_tests(&["a:1", "b:1", "c:1"], 3, 2, 3, b"pw");
        let marked = in_recovery(&open).unwrap().unwrap();
        let (before, mid) = (to_json(1, &open).unwrap(), to_json(1, &marked).unwrap());
        let mut expect = before.clone();
        expect["state"] = "IN_RECOVERY".into();
        assert_eq!(mid, expect, "only the state changed");
        assert_eq!(in_recovery(&marked).unwrap(), None, "in recovery already");
        assert_eq!(
            closed_after_recovery(&open, 5, 9).unwrap(),
            None,
            "not in recovery"
        );
        let closed = closed_after_recovery(&marked, 9, 1234).unwrap().unwrap();
        let after = to_json(1, &closed).unwrap();
        expect["state"] = "CLOSED".into();
        expect["closed"] = true.into();
        expect["lastEntryId"] = 9.into();
        expect["length"] = 1234.into();
        assert_eq!(after, expect, "state, last entry and length changed");
        assert_eq!(in_recovery(&closed).unwrap(), None, "closed");
        assert_eq!(
            closed_after_recovery(&closed, 3, 1).unwrap(),
            None,
            "theirs kept"
        );
        assert_eq!(recovery_view(&closed).unwrap().ack_quorum, 2);
    }

    #[test]
    fn base64_matches_the_standard() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }
}
