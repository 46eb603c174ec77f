//! `handlers`: owned by the request-path engineer; being written.
