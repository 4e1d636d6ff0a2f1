//! Hardware costs of running a task beyond its compute and bandwidth rates:
//! cache sharing between co-running working sets, cache-line transfers from a
//! waker to its wakee, and working-set refills after a migration.
//!
//! Model (the formulas live in `schedlab-hw`, with their hardware.md sources):
//! - A step may declare a working set (`Step::Work`). Each such step sweeps its
//!   working set once; while it runs, co-runners on the same last-level cache
//!   hold shares proportional to their working sets, and the bytes lost
//!   beyond what misses alone are fetched from memory at the core's
//!   single-stream bandwidth (`contention_miss_bytes`, `memory_fetch_ns`).
//! - The working set lives where the task last ran. Running elsewhere refills
//!   it from the closest shared cache, or from memory (`migration_refill`).
//! - A wakee consuming data its waker wrote (`Sim::note_data_transfer`) pays
//!   the line transfers at the core-to-core latency of their distance
//!   (`transfer_ns`); `HwState::wake_transfer_lines` adds dependent line
//!   transfers to every cross-CPU wakeup (0 by default; the pipe calibration
//!   sets it).
//!
//! Every cost is a stall in ns, paid when the task next starts a timed
//! activity on a CPU: it is added to the activity's remaining amount at the
//! current rate (compute work, or bytes at the core's stream bandwidth).

use crate::event::TaskId;
use crate::sim::Sim;
use schedlab_hw::{CacheModel, RefillSource};
use schedlab_topo::{CpuId, Machine};

/// Per-task hardware-cost state.
#[derive(Clone, Copy, Debug, Default)]
pub struct TaskHw {
    /// Slot of the task's memory flow while it streams.
    pub mem_slot: Option<u32>,
    /// Working set of the current/last `Work` step, bytes.
    pub ws_bytes: u64,
    /// The CPU whose caches hold the working set.
    pub ws_cpu: Option<CpuId>,
    /// A `Work` step just started: charge its cache-sharing misses once.
    pub ws_fresh: bool,
    /// (LLC, bytes) counted in `HwState::llc_ws` while running.
    pub ws_counted: Option<(u32, u64)>,
    /// Data written by another CPU that the task will consume: (from, bytes).
    pub xfer: Option<(CpuId, u64)>,
    /// `stats.wakeups` already charged for `wake_transfer_lines`.
    pub wakeups_seen: u64,
}

/// Totals of the charged costs, ns (and counts).
#[derive(Clone, Copy, Debug, Default)]
pub struct HwStats {
    pub transfer_ns: u64,
    pub transfers: u64,
    pub refill_ns: u64,
    pub refills: u64,
    pub contention_ns: u64,
}

/// Machine-wide hardware-cost state.
#[derive(Clone, Debug)]
pub struct HwState {
    pub caches: CacheModel,
    /// Sum of the working sets of the tasks running on each cache instance.
    pub llc_ws: Vec<u64>,
    /// Dependent cache lines every cross-CPU wakeup moves from the waker to
    /// the wakee (kernel wakeup data, a pipe's token); 0 = none.
    pub wake_transfer_lines: u64,
    pub stats: HwStats,
    /// Scratch for memory re-sharing results.
    pub(crate) mem_out: Vec<(u32, f64)>,
}

impl HwState {
    pub fn new(m: &Machine) -> Self {
        let caches = CacheModel::new(m);
        HwState {
            llc_ws: vec![0; caches.len()],
            caches,
            wake_transfer_lines: 0,
            stats: HwStats::default(),
            mem_out: Vec::new(),
        }
    }
}

impl Sim {
    /// The wakee will consume `bytes` that were written on `from_cpu` (a
    /// channel message, a shared buffer): it pays their transfer when it next
    /// runs. Several notes before it runs add up (the last CPU counts).
    pub fn note_data_transfer(&mut self, wakee: TaskId, from_cpu: CpuId, bytes: u64) {
        let h = &mut self.tasks[wakee as usize].hw;
        let prev = h.xfer.map_or(0, |x| x.1);
        h.xfer = Some((from_cpu, prev.saturating_add(bytes)));
    }

    /// The task's next timed step touches a working set of `bytes` (a `Work`
    /// step): it competes for its LLC while running and must be refilled
    /// after a migration.
    pub fn set_working_set(&mut self, t: TaskId, bytes: u64) {
        let h = &mut self.tasks[t as usize].hw;
        h.ws_bytes = bytes;
        h.ws_fresh = bytes > 0;
    }

    /// Stall (ns) the task pays before its activity on `cpu` makes progress;
    /// also starts counting its working set on `cpu`'s LLC.
    pub(crate) fn hw_stall_ns(&mut self, t: TaskId, cpu: CpuId) -> u64 {
        let mut stall = 0u64;
        let line = self
            .hw
            .caches
            .llc(cpu)
            .map_or(64, |c| self.hw.caches.line(c));
        // Wakeup data (dependent lines).
        let wakeups = self.tasks[t as usize].stats.wakeups;
        if self.tasks[t as usize].hw.wakeups_seen != wakeups {
            self.tasks[t as usize].hw.wakeups_seen = wakeups;
            if self.hw.wake_transfer_lines > 0 {
                if let Some(w) = self.tasks[t as usize].last_waker_cpu {
                    let ns = schedlab_hw::dependent_transfer_ns(
                        &self.machine,
                        w,
                        cpu,
                        self.hw.wake_transfer_lines,
                    );
                    if ns > 0 {
                        stall += ns;
                        self.hw.stats.transfer_ns += ns;
                        self.hw.stats.transfers += 1;
                    }
                }
            }
        }
        // Noted data.
        if let Some((from, bytes)) = self.tasks[t as usize].hw.xfer.take() {
            let ns = schedlab_hw::transfer_ns(&self.machine, from, cpu, bytes, line);
            if ns > 0 {
                stall += ns;
                self.hw.stats.transfer_ns += ns;
                self.hw.stats.transfers += 1;
            }
        }
        let h = self.tasks[t as usize].hw;
        if h.ws_bytes > 0 {
            let mem_node = self.mem_node_of(cpu);
            // Migration refill.
            if let Some(home) = h.ws_cpu {
                let (src, ns) = schedlab_hw::migration_refill(
                    &self.machine,
                    &self.hw.caches,
                    home,
                    cpu,
                    h.ws_bytes,
                    mem_node,
                );
                if src != RefillSource::None && ns > 0 {
                    stall += ns;
                    self.hw.stats.refill_ns += ns;
                    self.hw.stats.refills += 1;
                }
            }
            self.tasks[t as usize].hw.ws_cpu = Some(cpu);
            if let Some(llc) = self.hw.caches.llc(cpu) {
                // Cache sharing, once per Work step.
                if h.ws_fresh {
                    let others = self.hw.llc_ws[llc as usize]
                        - h.ws_counted
                            .map_or(0, |(l, b)| if l == llc { b } else { 0 });
                    let miss = schedlab_hw::contention_miss_bytes(
                        self.hw.caches.size(llc),
                        h.ws_bytes,
                        others,
                    );
                    let ns = schedlab_hw::memory_fetch_ns(&self.machine, cpu, mem_node, miss);
                    stall += ns;
                    self.hw.stats.contention_ns += ns;
                }
                if h.ws_counted.is_none() {
                    self.hw.llc_ws[llc as usize] += h.ws_bytes;
                    self.tasks[t as usize].hw.ws_counted = Some((llc, h.ws_bytes));
                }
            }
        }
        self.tasks[t as usize].hw.ws_fresh = false;
        stall
    }

    /// The task stops running: its working set no longer competes.
    pub(crate) fn hw_stop(&mut self, t: TaskId) {
        if let Some((llc, b)) = self.tasks[t as usize].hw.ws_counted.take() {
            self.hw.llc_ws[llc as usize] -= b;
        }
    }

    /// The memory node a stream or refill on `cpu` uses.
    pub(crate) fn mem_node_of(&self, cpu: CpuId) -> u32 {
        self.spec
            .mem_node
            .unwrap_or(self.machine.cpus[cpu as usize].node)
    }

    /// Single-stream bandwidth of `cpu`, bytes/ns (converts a stall to bytes).
    pub(crate) fn core_stream_bw(&self, cpu: CpuId) -> f64 {
        let c = &self.machine.cpus[cpu as usize];
        self.machine.core_types[c.core_type as usize].core_bw_bytes_per_s / 1e9
    }
}
