//! Integration tests of the Regina broker over HTTP, one module per area of the Regina HTTP API v1
//! specification. Every test starts its own broker on a fresh database.

// Tests fail loudly: unwrapping is the point.
#![allow(clippy::unwrap_used)]

mod jwt;
mod support;
mod target;

mod ack;
mod ack_effects;
mod analytics;
mod auth;
mod auth_jwks;
mod auth_producer_sub;
mod auth_scopes;
mod auth_tokens;
mod background_jobs;
mod capacity;
mod compat;
mod concurrency;
mod configure;
mod consumer_groups;
mod contract;
mod encryption;
mod health;
mod http_edges;
mod lease;
mod limits;
mod longpoll;
mod maintenance;
mod message_admin;
mod messages;
mod metrics_history;
mod modules;
mod multi_instance;
mod options;
mod ordering;
mod outage;
mod plans;
mod pool;
mod pop;
mod prometheus;
mod push;
mod query;
mod resources;
mod retry_dlq;
mod seek;
mod selector;
mod shutdown;
mod sql;
mod stats_refresh;
mod stats_support;
mod status;
mod streams;
mod streams_cycle;
mod subscription;
mod trace_deletion;
mod trace_visibility;
mod traces;
mod transaction;
mod visibility;
mod webapp;
