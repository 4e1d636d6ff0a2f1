//! Task programs: what a simulated thread does, as a list of steps.
//!
//! A [`WorkloadSpec`] is a set of thread templates plus the synchronisation
//! objects they share. The engine interprets the steps; this module only
//! describes them. Work is counted in calibrated units so the same program
//! takes longer on a slower CPU (rt-app's `run`).

use schedlab_topo::CpuMask;

/// Index of a thread template inside a [`WorkloadSpec`].
pub type TemplateId = u32;
/// Index of a synchronisation object (barrier, ...) inside a [`WorkloadSpec`].
pub type SyncId = u32;

/// One step of a thread's program.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// CPU-bound work: nanoseconds it takes on a capacity-1024 CPU running alone.
    Compute { work_ns: u64 },
    /// Stream `bytes` through the memory hierarchy (a STREAM kernel's chunk).
    Memory { bytes: u64 },
    /// Sleep for a fixed time.
    Sleep { ns: u64 },
    /// Wait at a barrier: spin up to `spin_ns` (OpenMP/libgomp's active wait),
    /// then block; the last arrival wakes every sleeper.
    Barrier { id: SyncId, spin_ns: u64 },
    /// Create a new thread from a template (pthread_create / clone).
    Spawn { template: TemplateId },
    /// Record the current time under `tag` (the benchmark's own timer calls).
    Mark { tag: u32 },
    /// Jump back to step `start` until this step has been reached `count` times
    /// in total; `slot` names the loop counter (per task).
    Loop { start: u32, count: u32, slot: u8 },
    /// End the thread.
    Exit,
}

/// A thread template.
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadTemplate {
    pub name: String,
    pub nice: i8,
    /// CPUs the thread may run on (`sched_setaffinity`); inherited by spawned threads
    /// unless the template sets its own.
    pub affinity: Option<CpuMask>,
    pub steps: Vec<Step>,
}

/// A synchronisation object.
#[derive(Clone, Debug, PartialEq)]
pub enum SyncObject {
    /// A barrier for `parties` threads, reusable (generation-counted).
    Barrier { parties: u32 },
}

/// A complete workload: the initial threads and everything they share.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadSpec {
    pub name: String,
    pub templates: Vec<ThreadTemplate>,
    /// Templates started at time 0 (in order; each is forked by the launcher).
    pub initial: Vec<TemplateId>,
    pub sync: Vec<SyncObject>,
    /// NUMA node holding the process's memory (`numactl -m`), `None` = first touch
    /// (the node of the CPU that runs the memory step).
    pub mem_node: Option<u32>,
    /// Stop the simulation at this time even if threads remain (ns).
    pub max_time_ns: u64,
}
