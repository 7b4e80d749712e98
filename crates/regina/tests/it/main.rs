//! End-to-end tests of the `regina` client verbs: the real binary, run as a process against a
//! real broker (regina-testkit, port 0) on a fresh database per test.

// Tests fail loudly: unwrapping is the point.
#![allow(clippy::unwrap_used)]

mod support;

mod admin;
mod auth;
mod dlq;
mod errors;
mod pop_ack;
mod push;
mod serve;
mod tail;
