//! bookie: the server library (request handling, registration, config).
