//! proto2 `required`-field and closed-enum checks that prost does not do.
//!
//! prost decodes a message with absent `required` fields into defaults, but protobuf-java (the
//! stock BookKeeper client and the Java bookie) rejects it. [`check_required`] walks the raw
//! wire bytes with a schema of which field numbers are required in which message and recurses
//! into nested messages, so presence is judged on the wire, not on decoded defaults.
//! Invariant: never panics; recursion depth is bounded by the (static, two-level) schema and
//! group skipping by [`MAX_GROUP_DEPTH`].
use crate::ProtoError;

/// One message type: its required field numbers (with `Message.field` names for errors) and
/// its message-typed fields to recurse into.
pub(crate) struct Schema {
    pub(crate) required: &'static [(u32, &'static str)],
    pub(crate) children: &'static [(u32, &'static Schema)],
}

/// prost's (and protobuf-java's) recursion limit, so both layers accept the same nesting.
const MAX_GROUP_DEPTH: usize = 100;

const fn leaf(required: &'static [(u32, &'static str)]) -> Schema {
    Schema {
        required,
        children: &[],
    }
}

static HEADER: Schema = leaf(&[
    (1, "BKPacketHeader.version"),
    (2, "BKPacketHeader.operation"),
    (3, "BKPacketHeader.txnId"),
]);
static CONTEXT_PAIR: Schema = leaf(&[(1, "ContextPair.key"), (2, "ContextPair.value")]);
static READ_REQUEST: Schema = leaf(&[(1, "ReadRequest.ledgerId"), (2, "ReadRequest.entryId")]);
static ADD_REQUEST: Schema = leaf(&[
    (1, "AddRequest.ledgerId"),
    (2, "AddRequest.entryId"),
    (3, "AddRequest.masterKey"),
    (4, "AddRequest.body"),
]);
pub(crate) static AUTH_MESSAGE: Schema = leaf(&[
    (1, "AuthMessage.authPluginName"),
    (2, "AuthMessage.payload"),
]);
static WRITE_LAC_REQUEST: Schema = leaf(&[
    (1, "WriteLacRequest.ledgerId"),
    (2, "WriteLacRequest.lac"),
    (3, "WriteLacRequest.masterKey"),
    (4, "WriteLacRequest.body"),
]);
static READ_LAC_REQUEST: Schema = leaf(&[(1, "ReadLacRequest.ledgerId")]);
static GET_BOOKIE_INFO_REQUEST: Schema = leaf(&[]);
static START_TLS: Schema = leaf(&[]);
static FORCE_LEDGER_REQUEST: Schema = leaf(&[(1, "ForceLedgerRequest.ledgerId")]);
static LIST_OF_ENTRIES_REQUEST: Schema = leaf(&[(1, "GetListOfEntriesOfLedgerRequest.ledgerId")]);

pub(crate) static REQUEST: Schema = Schema {
    required: &[(1, "Request.header")],
    children: &[
        (1, &HEADER),
        (100, &READ_REQUEST),
        (101, &ADD_REQUEST),
        (102, &AUTH_MESSAGE),
        (103, &WRITE_LAC_REQUEST),
        (104, &READ_LAC_REQUEST),
        (105, &GET_BOOKIE_INFO_REQUEST),
        (106, &START_TLS),
        (107, &FORCE_LEDGER_REQUEST),
        (108, &LIST_OF_ENTRIES_REQUEST),
        (200, &CONTEXT_PAIR),
    ],
};

static READ_RESPONSE: Schema = leaf(&[
    (1, "ReadResponse.status"),
    (2, "ReadResponse.ledgerId"),
    (3, "ReadResponse.entryId"),
]);
static ADD_RESPONSE: Schema = leaf(&[
    (1, "AddResponse.status"),
    (2, "AddResponse.ledgerId"),
    (3, "AddResponse.entryId"),
]);
static WRITE_LAC_RESPONSE: Schema = leaf(&[
    (1, "WriteLacResponse.status"),
    (2, "WriteLacResponse.ledgerId"),
]);
static READ_LAC_RESPONSE: Schema = leaf(&[
    (1, "ReadLacResponse.status"),
    (2, "ReadLacResponse.ledgerId"),
]);
static GET_BOOKIE_INFO_RESPONSE: Schema = leaf(&[(1, "GetBookieInfoResponse.status")]);
static FORCE_LEDGER_RESPONSE: Schema = leaf(&[
    (1, "ForceLedgerResponse.status"),
    (2, "ForceLedgerResponse.ledgerId"),
]);
static LIST_OF_ENTRIES_RESPONSE: Schema = leaf(&[
    (1, "GetListOfEntriesOfLedgerResponse.status"),
    (2, "GetListOfEntriesOfLedgerResponse.ledgerId"),
]);

pub(crate) static RESPONSE: Schema = Schema {
    required: &[(1, "Response.header"), (2, "Response.status")],
    children: &[
        (1, &HEADER),
        (100, &READ_RESPONSE),
        (101, &ADD_RESPONSE),
        (102, &AUTH_MESSAGE),
        (103, &WRITE_LAC_RESPONSE),
        (104, &READ_LAC_RESPONSE),
        (105, &GET_BOOKIE_INFO_RESPONSE),
        (106, &START_TLS),
        (107, &FORCE_LEDGER_RESPONSE),
        (108, &LIST_OF_ENTRIES_RESPONSE),
    ],
};

fn bad(msg: &str) -> ProtoError {
    ProtoError::BadProtobuf(msg.to_string())
}

fn varint(buf: &[u8], pos: &mut usize) -> Result<u64, ProtoError> {
    let mut value: u64 = 0;
    for i in 0..10 {
        let b = *buf.get(*pos).ok_or_else(|| bad("truncated varint"))?;
        *pos += 1;
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(bad("varint longer than 10 bytes"))
}

fn skip(buf: &[u8], pos: &mut usize, n: u64) -> Result<(), ProtoError> {
    let n = usize::try_from(n).map_err(|_| bad("length overflows usize"))?;
    let end = pos
        .checked_add(n)
        .filter(|&e| e <= buf.len())
        .ok_or_else(|| bad("field runs past the end of the message"))?;
    *pos = end;
    Ok(())
}

/// Reads one key; returns (field number, wire type).
fn key(buf: &[u8], pos: &mut usize) -> Result<(u32, u8), ProtoError> {
    let k = varint(buf, pos)?;
    let field = u32::try_from(k >> 3).map_err(|_| bad("field number out of range"))?;
    if field == 0 {
        return Err(bad("field number 0"));
    }
    Ok((field, (k & 7) as u8))
}

/// Skips the value of a field of `wire` type (the key already read). Groups nest.
fn skip_value(
    buf: &[u8],
    pos: &mut usize,
    field: u32,
    wire: u8,
    depth: usize,
) -> Result<(), ProtoError> {
    match wire {
        0 => varint(buf, pos).map(|_| ()),
        1 => skip(buf, pos, 8),
        2 => {
            let len = varint(buf, pos)?;
            skip(buf, pos, len)
        }
        3 => {
            if depth >= MAX_GROUP_DEPTH {
                return Err(bad("groups nested too deep"));
            }
            loop {
                let (f, w) = key(buf, pos)?;
                if w == 4 {
                    return if f == field {
                        Ok(())
                    } else {
                        Err(bad("mismatched end group"))
                    };
                }
                skip_value(buf, pos, f, w, depth + 1)?;
            }
        }
        5 => skip(buf, pos, 4),
        _ => Err(bad("invalid wire type")),
    }
}

/// Checks that every required field of `schema` (and of each nested message present) occurs
/// on the wire in `buf`.
pub(crate) fn check_required(buf: &[u8], schema: &Schema) -> Result<(), ProtoError> {
    let mut seen: u64 = 0;
    let mut pos = 0;
    while pos < buf.len() {
        let (field, wire) = key(buf, &mut pos)?;
        let child = schema
            .children
            .iter()
            .find(|(f, _)| *f == field)
            .map(|(_, s)| *s);
        match (wire, child) {
            (2, Some(child)) => {
                let len = varint(buf, &mut pos)?;
                let start = pos;
                skip(buf, &mut pos, len)?;
                check_required(&buf[start..pos], child)?;
            }
            (4, _) => return Err(bad("unexpected end group")),
            _ => skip_value(buf, &mut pos, field, wire, 0)?,
        }
        if field < 64 {
            seen |= 1u64 << field;
        }
    }
    for &(field, name) in schema.required {
        if seen & (1u64 << field) == 0 {
            return Err(ProtoError::MissingRequiredField(name));
        }
    }
    Ok(())
}
