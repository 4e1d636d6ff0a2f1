//! Topology: the machine model, machine files and presets, and sched domains.
//!
//! This crate owns what the hardware looks like and what the kernel's
//! `build_sched_domains()` would make of it. It knows nothing about tasks,
//! runqueues or performance: those live in `schedlab-engine` and `schedlab-hw`.

pub mod build;
pub mod cpumask;
pub mod domains;
pub mod edit;
pub mod error;
pub mod format;
pub mod load;
pub mod machine;
pub mod online;
pub mod presets;
pub mod sysfs;

pub use build::{
    build_domains, itmt_priorities, kernel_capacities, with_itmt_priorities, RECLAIM_DISTANCE,
};
pub use cpumask::{CpuId, CpuMask, MAX_CPUS};
pub use domains::{
    CpuDomains, DomainConfig, Domains, SchedDomain, SchedGroup, SdField, SdFlags, SdTarget,
    SdTunable, CONFIG_NAMES,
};
pub use edit::{
    apply_edits, estimate_keys, load_edited, EditCount, EditOp, EstimateKey, MachineEdit,
};
pub use error::TopoError;
pub use format::{format_cpu, format_machine, format_topo, topo_json};
pub use load::{load_machine_file, load_machine_str};
pub use machine::{
    Arch, C2cLatency, CacheInfo, CoreType, CpuInfo, IdleState, Machine, NodeInfo, SharedLink,
    WakeupCosts,
};
pub use online::{split_online, with_online_cpus, with_online_list};
pub use presets::{
    emit_machine_text, machine_text, preset, preset_text, resolve_machine, resolve_machine_edited,
    HOST_NAMES, PRESET_NAMES,
};
pub use sysfs::{
    guess_arch, host_machine_text, machine_from_sysfs, machine_to_toml, sysfs_machine_text,
};
