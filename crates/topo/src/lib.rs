//! Topology: the machine model, machine files and presets, and sched domains.
//!
//! This crate owns what the hardware looks like and what the kernel's
//! `build_sched_domains()` would make of it. It knows nothing about tasks,
//! runqueues or performance: those live in `schedlab-engine` and `schedlab-hw`.

pub mod cpumask;
pub mod domains;
pub mod machine;

pub use cpumask::{CpuId, CpuMask, MAX_CPUS};
pub use domains::{CpuDomains, DomainConfig, Domains, SchedDomain, SchedGroup, SdFlags};
pub use machine::{
    C2cLatency, CacheInfo, CoreType, CpuInfo, Machine, NodeInfo, SharedLink, WakeupCosts,
};
