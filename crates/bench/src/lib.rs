//! keel-bench: a load generator and report tool for any RESP server.
//!
//! It exists because keel's claims are about behaviour under saturation and
//! over time — eviction storms, expired-key build-up, tail latency when the
//! cache is full — which averages from closed-loop tools hide. The pieces,
//! one file per concern:
//!
//! - [`workload`]: the load model (keys, values, TTLs, command mix) and the
//!   coordinated-omission note; [`schedule`]: open-loop arrival times;
//! - [`driver`]: connection tasks; [`client`]: request/reply helper;
//! - [`sampler`]: INFO polling; [`timeline`]: HDR histograms per second;
//! - [`csv`], [`summary`], [`report`] (HTML), [`compare`]: outputs;
//! - [`scenario`]: TOML scenario files; [`cli`]: the command line;
//!   [`run`]: one scenario against one server.

pub mod cli;
pub mod client;
pub mod compare;
pub mod csv;
pub mod driver;
pub mod report;
pub mod run;
pub mod sampler;
pub mod scenario;
pub mod schedule;
pub mod summary;
pub mod timeline;
pub mod workload;
