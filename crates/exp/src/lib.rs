//! Experiments: the reference tables (shared/contract.md), named
//! configurations, built-in workload glue, and the parallel runner.
//!
//! This crate knows which machine, workload and configurations each
//! experiment uses and how to turn runs into results; it knows nothing about
//! how the scheduler decides (that is `schedlab-engine`) and never feeds a
//! published figure into a simulation (`published` is for display only).

pub mod bench;
pub mod calibrate;
pub mod configs;
pub mod experiments;
pub mod published;
pub mod sensitivity;
pub mod workloads;

#[cfg(test)]
mod fuzz_tests;

pub use experiments::{get, names, run_all, run_point, ExperimentDef, Options, Point, RunOutcome};
