//! v2 error codes ([`ErrorCode`], docs/protocol.md §2.4) and their mapping to and from the v3
//! `StatusCode`, which is one to one.
use crate::v3;

/// v2 error codes (int32 in responses, docs/protocol.md §2.4) and their v3 `StatusCode` twins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum ErrorCode {
    Ok = 0,
    NoLedger = 1,
    NoEntry = 2,
    BadRequest = 100,
    Io = 101,
    Unauthorized = 102,
    BadVersion = 103,
    Fenced = 104,
    ReadOnly = 105,
    TooManyRequests = 106,
    /// The stock Java v2 client cannot decode this code and closes the connection.
    UnknownLedgerState = 107,
}

impl ErrorCode {
    pub fn from_i32(v: i32) -> Option<Self> {
        Some(match v {
            0 => ErrorCode::Ok,
            1 => ErrorCode::NoLedger,
            2 => ErrorCode::NoEntry,
            100 => ErrorCode::BadRequest,
            101 => ErrorCode::Io,
            102 => ErrorCode::Unauthorized,
            103 => ErrorCode::BadVersion,
            104 => ErrorCode::Fenced,
            105 => ErrorCode::ReadOnly,
            106 => ErrorCode::TooManyRequests,
            107 => ErrorCode::UnknownLedgerState,
            _ => return None,
        })
    }

    pub fn as_i32(self) -> i32 {
        self as i32
    }

    /// False only for 107: the stock v2 client maps 0, 1, 2, 100..=106 and closes the
    /// connection on anything else.
    pub fn understood_by_stock_v2_client(self) -> bool {
        self != ErrorCode::UnknownLedgerState
    }

    pub fn to_status(self) -> v3::StatusCode {
        use v3::StatusCode as S;
        match self {
            ErrorCode::Ok => S::Eok,
            ErrorCode::NoLedger => S::Enoledger,
            ErrorCode::NoEntry => S::Enoentry,
            ErrorCode::BadRequest => S::Ebadreq,
            ErrorCode::Io => S::Eio,
            ErrorCode::Unauthorized => S::Eua,
            ErrorCode::BadVersion => S::Ebadversion,
            ErrorCode::Fenced => S::Efenced,
            ErrorCode::ReadOnly => S::Ereadonly,
            ErrorCode::TooManyRequests => S::Etoomanyrequests,
            ErrorCode::UnknownLedgerState => S::Eunknownledgerstate,
        }
    }

    pub fn from_status(s: v3::StatusCode) -> Self {
        use v3::StatusCode as S;
        match s {
            S::Eok => ErrorCode::Ok,
            S::Enoledger => ErrorCode::NoLedger,
            S::Enoentry => ErrorCode::NoEntry,
            S::Ebadreq => ErrorCode::BadRequest,
            S::Eio => ErrorCode::Io,
            S::Eua => ErrorCode::Unauthorized,
            S::Ebadversion => ErrorCode::BadVersion,
            S::Efenced => ErrorCode::Fenced,
            S::Ereadonly => ErrorCode::ReadOnly,
            S::Etoomanyrequests => ErrorCode::TooManyRequests,
            S::Eunknownledgerstate => ErrorCode::UnknownLedgerState,
        }
    }
}

impl From<ErrorCode> for v3::StatusCode {
    fn from(e: ErrorCode) -> Self {
        e.to_status()
    }
}

impl From<v3::StatusCode> for ErrorCode {
    fn from(s: v3::StatusCode) -> Self {
        ErrorCode::from_status(s)
    }
}
