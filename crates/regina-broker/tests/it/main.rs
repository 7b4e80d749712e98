//! Integration tests of the Regina broker over HTTP, one module per area of the Regina HTTP API v1
//! specification. Every test starts its own broker on a fresh database.

// Tests fail loudly: unwrapping is the point.
#![allow(clippy::unwrap_used)]

mod support;

mod ack;
mod ack_effects;
mod concurrency;
mod configure;
mod health;
mod http_edges;
mod lease;
mod limits;
mod longpoll;
mod message_admin;
mod messages;
mod multi_instance;
mod options;
mod ordering;
mod pop;
mod push;
mod query;
mod resources;
mod retry_dlq;
mod selector;
mod sql;
mod subscription;
mod visibility;
