//! `server`: owned by the request-path engineer; being written.
