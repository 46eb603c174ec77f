//! `config`: owned by the operations engineer; being written.
