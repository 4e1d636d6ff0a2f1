//! Workloads: task programs and the built-in benchmarks.
//!
//! This crate describes *what* threads do ([`program`]) and provides built-in
//! benchmark models ([`stream`], [`hackbench`], [`pipe`], [`schbench`],
//! [`parsec`], [`pbzip2`], [`pixz`], [`kernbench`], [`mobile`], [`chacha20`],
//! [`daytrader`], [`ycsb`], [`phoronix`])
//! together with the code that turns a finished run's timestamps into the
//! benchmark's own metric, and imports rt-app JSON files ([`rtapp`]). It knows nothing about
//! scheduling: the engine interprets the programs.

pub mod chacha20;
pub mod daytrader;
pub mod hackbench;
pub mod hist;
pub mod kernbench;
pub mod marks;
pub mod mobile;
pub mod parsec;
pub mod pbzip2;
pub mod phoronix;
pub mod pipe;
pub mod pixz;
pub mod program;
pub mod rtapp;
pub mod schbench;
pub mod spec;
pub mod stream;
pub mod ycsb;

pub use program::{
    check_deadline_params, unix_skb_truesize, Attrs, SchedPolicy, Step, SyncId, SyncObject,
    TemplateId, ThreadTemplate, WorkloadSpec,
};
pub use spec::{parse_spec, BuiltinSpec, SpecError};
