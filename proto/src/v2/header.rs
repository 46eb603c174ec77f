//! The v2 packet header (docs/protocol.md §2.1-§2.3): [`OpCode`], [`Flags`] and [`PacketHeader`],
//! with Java's version checks (a signed version byte; legacy version 0 carries only an
//! opcode).
use super::{CURRENT_PROTOCOL_VERSION, LOWEST_COMPAT_PROTOCOL_VERSION};

/// v2 opcodes (docs/protocol.md §2.2). 4, 5, 6 exist in BookKeeper but have no v2 layout: the Java
/// server's decoder throws on them (connection closed), and so does ours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum OpCode {
    AddEntry = 1,
    ReadEntry = 2,
    Auth = 3,
    ReadLac = 4,
    WriteLac = 5,
    GetBookieInfo = 6,
    BatchReadEntry = 7,
}

impl OpCode {
    pub fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            1 => OpCode::AddEntry,
            2 => OpCode::ReadEntry,
            3 => OpCode::Auth,
            4 => OpCode::ReadLac,
            5 => OpCode::WriteLac,
            6 => OpCode::GetBookieInfo,
            7 => OpCode::BatchReadEntry,
            _ => return None,
        })
    }
}

/// Header flags (low 16 bits of the packet header, docs/protocol.md §2.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Flags(pub u16);

impl Flags {
    pub const NONE: Flags = Flags(0x0000);
    /// READENTRY / BATCH_READ_ENTRY: fence the ledger; a 20-byte master key follows.
    pub const DO_FENCING: Flags = Flags(0x0001);
    /// ADDENTRY: add even if the ledger is fenced.
    pub const RECOVERY_ADD: Flags = Flags(0x0002);
    /// Scheduling hint; also lets adds through on a read-only bookie (if configured).
    pub const HIGH_PRIORITY: Flags = Flags(0x0004);

    pub fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }
    pub fn union(self, other: Flags) -> Flags {
        Flags(self.0 | other.0)
    }
}

/// The first 4 bytes of every v2 packet.
///
/// Format: `i32` big-endian = `version(8) | opcode(8) | flags(16)` (bits 31..24, 23..16, 15..0).
/// Legacy version 0: the whole int is the opcode, flags are 0 (decoding takes the opcode from
/// the low byte and ignores bits 15..8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PacketHeader {
    /// Raw version byte (Java reads it as a signed byte).
    pub version: u8,
    pub opcode: u8,
    pub flags: Flags,
}

impl PacketHeader {
    pub fn new(version: u8, opcode: OpCode, flags: Flags) -> Self {
        Self {
            version,
            opcode: opcode as u8,
            flags,
        }
    }

    pub fn from_i32(h: i32) -> Self {
        let [version, op_hi, f_hi, f_lo] = h.to_be_bytes();
        if version == 0 {
            Self {
                version,
                opcode: f_lo,
                flags: Flags::NONE,
            }
        } else {
            Self {
                version,
                opcode: op_hi,
                flags: Flags(u16::from_be_bytes([f_hi, f_lo])),
            }
        }
    }

    pub fn to_i32(self) -> i32 {
        if self.version == 0 {
            i32::from(self.opcode)
        } else {
            i32::from_be_bytes([
                self.version,
                self.opcode,
                (self.flags.0 >> 8) as u8,
                self.flags.0 as u8,
            ])
        }
    }

    /// Java's check before serving add/read/batch-read: `version` (as a signed byte) in
    /// `LOWEST_COMPAT_PROTOCOL_VERSION..=CURRENT_PROTOCOL_VERSION`; otherwise answer EBADVERSION.
    pub fn version_supported(self) -> bool {
        let v = self.version as i8;
        v >= LOWEST_COMPAT_PROTOCOL_VERSION as i8 && v <= CURRENT_PROTOCOL_VERSION as i8
    }

    /// The master key after READENTRY/BATCH_READ_ENTRY is present only with the fence flag
    /// and version >= 2 (signed comparison, as Java).
    pub(super) fn carries_fence_key(self) -> bool {
        self.flags.contains(Flags::DO_FENCING) && (self.version as i8) >= 2
    }
}
