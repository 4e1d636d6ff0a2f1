//! Workloads: task programs and the built-in benchmarks.
//!
//! This crate describes *what* threads do ([`program`]) and provides built-in
//! benchmark models ([`stream`]) together with the code that turns a finished
//! run's timestamps into the benchmark's own metric. It knows nothing about
//! scheduling: the engine interprets the programs.

pub mod program;
pub mod spec;
pub mod stream;

pub use program::{Step, SyncId, SyncObject, TemplateId, ThreadTemplate, WorkloadSpec};
pub use spec::{parse_spec, BuiltinSpec, SpecError};
