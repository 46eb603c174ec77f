//! Bounds-checked big-endian reader over a received frame.
//!
//! Invariant: every read checks the remaining length first and returns
//! [`ProtoError::Truncated`] instead of panicking; byte ranges are returned as zero-copy
//! `Bytes` slices of the frame.
use bytes::Bytes;

use crate::ProtoError;

pub(crate) struct Reader {
    buf: Bytes,
    pos: usize,
}

impl Reader {
    pub(crate) fn new(buf: Bytes) -> Self {
        Self { buf, pos: 0 }
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    fn take_array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], ProtoError> {
        let end = self.pos.checked_add(N).ok_or(ProtoError::Truncated {
            what,
            need: N,
            have: 0,
        })?;
        let slice = self.buf.get(self.pos..end).ok_or(ProtoError::Truncated {
            what,
            need: N,
            have: self.remaining(),
        })?;
        let mut out = [0u8; N];
        out.copy_from_slice(slice);
        self.pos = end;
        Ok(out)
    }

    pub(crate) fn i32(&mut self, what: &'static str) -> Result<i32, ProtoError> {
        self.take_array::<4>(what).map(i32::from_be_bytes)
    }

    pub(crate) fn i64(&mut self, what: &'static str) -> Result<i64, ProtoError> {
        self.take_array::<8>(what).map(i64::from_be_bytes)
    }

    pub(crate) fn array<const N: usize>(
        &mut self,
        what: &'static str,
    ) -> Result<[u8; N], ProtoError> {
        self.take_array::<N>(what)
    }

    /// Zero-copy slice of the next `n` bytes.
    pub(crate) fn bytes(&mut self, n: usize, what: &'static str) -> Result<Bytes, ProtoError> {
        if n > self.remaining() {
            return Err(ProtoError::Truncated {
                what,
                need: n,
                have: self.remaining(),
            });
        }
        let start = self.pos;
        self.pos += n;
        Ok(self.buf.slice(start..self.pos))
    }

    /// Zero-copy slice of everything left.
    pub(crate) fn rest(&mut self) -> Bytes {
        let start = self.pos.min(self.buf.len());
        self.pos = self.buf.len();
        self.buf.slice(start..)
    }
}
