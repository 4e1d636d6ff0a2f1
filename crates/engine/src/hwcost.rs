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
//! - A `Step::Sweep` re-reads part of a data set: it is free when the whole
//!   data set fits the running CPU's last-level cache (`fits_llc`), else it
//!   streams from memory like `Step::Memory` (a capacity test only: the
//!   co-runners' working sets are not counted against it).
//! - The working set lives where the task last ran. Running elsewhere refills
//!   it from the closest shared cache, or from memory (`migration_refill`).
//! - A wakee consuming data its waker wrote (`Sim::note_data_transfer`) pays
//!   the line transfers at the core-to-core latency of their distance
//!   (`transfer_ns`); `HwState::wake_transfer_lines` adds dependent line
//!   transfers to every cross-CPU wakeup (0 by default; the pipe calibration
//!   sets it).
//! - Data shared by the threads of a process (`Step::Share` on a
//!   `SyncObject::Shared` region) is tracked per chunk: the CPU that wrote it
//!   last, the write generation, and per LLC the CPU that last pulled a copy
//!   of that generation into it, and the CPUs holding a copy of it. A reader pays the line transfers from the
//!   nearest holder: nothing when it holds the current copy or wrote it
//!   itself, the LLC-level latency when a copy is already in its LLC (an L3
//!   hit / snoop), else the writer's core-to-core latency (same core, same
//!   LLC, other LLC, other socket: `Machine::c2c_ns`). A writer takes the
//!   lines back from the previous writer or, if it wrote them itself, from
//!   the reader farthest from it (read-for-ownership and invalidation).
//!   Costs use `transfer_ns`: the first line at full latency, the others
//!   `TRANSFER_MLP` at a time. O(1) per access.
//!
//! Every cost is a stall in ns, paid when the task next starts a timed
//! activity on a CPU: it is added to the activity's remaining amount at the
//! current rate (compute work, or bytes at the core's stream bandwidth).

use crate::event::TaskId;
use crate::sim::Sim;
use schedlab_hw::{CacheModel, RefillSource};
use schedlab_topo::{CpuId, CpuMask, Machine};

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
    /// Shared-data transfers (`Step::Share`) not yet paid, ns.
    pub share_ns: u64,
}

/// Totals of the charged costs, ns (and counts).
#[derive(Clone, Copy, Debug, Default)]
pub struct HwStats {
    pub transfer_ns: u64,
    pub transfers: u64,
    pub refill_ns: u64,
    pub refills: u64,
    pub contention_ns: u64,
    /// Shared-data (`Step::Share`) transfer stalls and the accesses that
    /// caused one.
    pub share_ns: u64,
    pub shares: u64,
}

/// Chunks a shared region may have (a larger request is clamped).
pub const MAX_SHARE_CHUNKS: u32 = 4096;

/// Coherence state of one chunk of a shared region.
#[derive(Clone, Copy, Debug, Default)]
struct ShareChunk {
    /// CPU of the last write.
    writer: Option<CpuId>,
    /// Write generation, bumped by every write.
    gen: u32,
    /// Of the CPUs that read this generation, the one farthest from the
    /// writer: the next write takes the lines back from it.
    far_reader: Option<CpuId>,
    /// CPUs holding a copy of this generation (the writer and its readers).
    holders: CpuMask,
}

/// One `SyncObject::Shared` region.
#[derive(Clone, Debug, Default)]
pub struct ShareRegion {
    chunks: Vec<ShareChunk>,
    /// Per (chunk, LLC): the CPU that last pulled the chunk into that LLC and
    /// the generation it pulled (index `chunk * nr_llcs + llc`).
    copies: Vec<Option<(CpuId, u32)>>,
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
    /// Shared regions by sync id (`None` for other objects).
    pub(crate) regions: Vec<Option<ShareRegion>>,
    nr_llcs: usize,
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
            regions: Vec::new(),
            nr_llcs: m.nr_llcs().max(1),
            mem_out: Vec::new(),
        }
    }

    /// Creates the state of the workload's shared regions.
    pub fn init_regions(&mut self, sync: &[schedlab_workload::SyncObject]) {
        let nllc = self.nr_llcs;
        self.regions = sync
            .iter()
            .map(|s| match *s {
                schedlab_workload::SyncObject::Shared { chunks } => {
                    let n = chunks.clamp(1, MAX_SHARE_CHUNKS) as usize;
                    Some(ShareRegion {
                        chunks: vec![ShareChunk::default(); n],
                        copies: vec![None; n * nllc],
                    })
                }
                _ => None,
            })
            .collect();
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

    /// `Step::Share`: the running task `t` reads (or writes) `bytes` of chunk
    /// `chunk` of shared region `region`. Returns the transfer stall (ns),
    /// which is also added to what the task pays at its next timed step.
    /// Mirrors what cache coherence does to a load or store of a line
    /// another core modified (MESI/MOESI): the line comes from the core that
    /// owns it, or from a clean copy in the reader's own LLC. O(1).
    pub fn share_access(
        &mut self,
        t: TaskId,
        region: u32,
        chunk: u32,
        bytes: u64,
        write: bool,
    ) -> u64 {
        let cpu = self.tasks[t as usize].cpu;
        let llc = self.machine.cpus[cpu as usize].llc as usize;
        let nllc = self.hw.nr_llcs;
        let line = self
            .hw
            .caches
            .llc(cpu)
            .map_or(64, |c| self.hw.caches.line(c));
        let m = &self.machine;
        let Some(Some(r)) = self.hw.regions.get_mut(region as usize) else {
            return 0;
        };
        if bytes == 0 || llc >= nllc {
            return 0;
        }
        let ci = chunk as usize % r.chunks.len();
        let c = r.chunks[ci];
        let from = if write {
            // Ownership: the modified lines of another writer, or the copies
            // readers took since this CPU's own last write.
            let a = c.writer.filter(|&w| w != cpu);
            let b = c.far_reader.filter(|&x| x != cpu);
            let from = match (a, b) {
                (Some(a), Some(b)) if m.c2c_ns(b, cpu) > m.c2c_ns(a, cpu) => Some(b),
                (Some(a), _) => Some(a),
                (None, b) => b,
            };
            let ch = &mut r.chunks[ci];
            ch.writer = Some(cpu);
            ch.gen = ch.gen.wrapping_add(1);
            ch.far_reader = None;
            ch.holders = CpuMask::default();
            ch.holders.set(cpu);
            from
        } else {
            match c.writer {
                None => None,
                Some(_) if c.holders.test(cpu) => None,
                Some(w) => {
                    let slot = &mut r.copies[ci * nllc + llc];
                    let from = match *slot {
                        Some((h, g)) if g == c.gen && m.cpus[w as usize].llc as usize != llc => {
                            Some(h)
                        }
                        _ => Some(w),
                    };
                    *slot = Some((cpu, c.gen));
                    let ch = &mut r.chunks[ci];
                    ch.holders.set(cpu);
                    if ch
                        .far_reader
                        .is_none_or(|f| m.c2c_ns(w, cpu) > m.c2c_ns(w, f))
                    {
                        ch.far_reader = Some(cpu);
                    }
                    from
                }
            }
        };
        let ns = from.map_or(0, |f| schedlab_hw::transfer_ns(m, f, cpu, bytes, line));
        if ns > 0 {
            self.tasks[t as usize].hw.share_ns += ns;
            self.hw.stats.share_ns += ns;
            self.hw.stats.shares += 1;
        }
        ns
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
        let mut stall = std::mem::take(&mut self.tasks[t as usize].hw.share_ns);
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

    /// Does a data set of `bytes` fit in the last-level cache of `cpu`? (A
    /// `Sweep` step's test; a machine that lists no cache has none to fit in.)
    pub(crate) fn fits_llc(&self, cpu: CpuId, bytes: u64) -> bool {
        self.hw
            .caches
            .llc(cpu)
            .is_some_and(|c| bytes <= self.hw.caches.size(c))
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

#[cfg(test)]
mod tests {
    use crate::sim::{Sim, SimConfig};
    use crate::task::Task;
    use schedlab_topo::{build_domains, preset, CpuMask, DomainConfig};
    use schedlab_workload::{SyncObject, WorkloadSpec};

    /// A stopped simulator with one shared region of 4 chunks and three
    /// threads of process 1 whose CPUs the tests set by hand.
    fn bare(machine: &str) -> Sim {
        let m = preset(machine).expect("preset");
        let d = build_domains(&m, &DomainConfig::default()).expect("domains");
        let spec = WorkloadSpec {
            name: "share".into(),
            templates: vec![],
            initial: vec![],
            sync: vec![SyncObject::Mutex, SyncObject::Shared { chunks: 4 }],
            mem_node: None,
            max_time_ns: 1,
        };
        let mut s = Sim::new(m, d, spec, SimConfig::default());
        for i in 0..3 {
            let t = Task::new(i, "t", 1, 0, 0, CpuMask::first_n(s.nr_cpus()));
            s.tasks.push(t);
        }
        s
    }

    /// Task 0 writes 4 KiB of chunk 0 on `w`; task 1 reads it on `r`.
    fn read_cost(machine: &str, w: u16, r: u16) -> u64 {
        let mut s = bare(machine);
        s.tasks[0].cpu = w;
        s.tasks[1].cpu = r;
        s.share_access(0, 1, 0, 4096, true);
        s.share_access(1, 1, 0, 4096, false)
    }

    #[test]
    fn sharing_within_an_llc_is_cheaper_than_across_llcs() {
        // Genoa: CPUs 0/1 share a core, 0..15 a CCX, 16 is the next CCX.
        let (core, ccx, other) = (
            read_cost("genoa", 0, 1),
            read_cost("genoa", 0, 2),
            read_cost("genoa", 0, 16),
        );
        assert!(
            0 < core && core < ccx && ccx < other,
            "{core} {ccx} {other}"
        );
        // 64 lines: the first at full latency, 63 overlapped 10 at a time.
        assert_eq!(other, (110.0f64 * (1.0 + 63.0 / 10.0)).ceil() as u64);
        // Sapphire Rapids: other socket (LLC) dearer than the same socket.
        let (same, cross) = (
            read_cost("sapphirerapids", 0, 2),
            read_cost("sapphirerapids", 0, 60),
        );
        assert!(0 < same && same < cross, "{same} {cross}");
    }

    #[test]
    fn no_sharing_costs_nothing() {
        // The writer reading its own data, or data nobody wrote.
        assert_eq!(read_cost("genoa", 5, 5), 0);
        let mut s = bare("genoa");
        s.tasks[1].cpu = 40;
        assert_eq!(s.share_access(1, 1, 2, 4096, false), 0);
        // Rewriting one's own data that nobody read.
        s.tasks[0].cpu = 3;
        s.share_access(0, 1, 3, 4096, true);
        assert_eq!(s.share_access(0, 1, 3, 4096, true), 0);
        // Not a shared region (a mutex), or zero bytes.
        assert_eq!(s.share_access(1, 0, 0, 4096, false), 0);
        assert_eq!(s.share_access(1, 1, 3, 0, false), 0);
        assert_eq!(s.hw.stats.shares, 0);
        assert_eq!(s.tasks[1].hw.share_ns, 0);
    }

    #[test]
    fn copies_in_the_readers_llc_and_ownership() {
        let mut s = bare("genoa");
        s.tasks[0].cpu = 0;
        s.tasks[1].cpu = 16;
        s.tasks[2].cpu = 18;
        s.share_access(0, 1, 0, 4096, true);
        let far = s.share_access(1, 1, 0, 4096, false);
        // A second reader in CCX 1 finds the lines in its own L3.
        let near = s.share_access(2, 1, 0, 4096, false);
        assert!(near > 0 && near < far, "{near} {far}");
        // Reading again without a new write costs nothing.
        assert_eq!(s.share_access(1, 1, 0, 4096, false), 0);
        // The writer takes its lines back from the far reader.
        let own = s.share_access(0, 1, 0, 4096, true);
        assert_eq!(own, far);
        // The stalls wait for the tasks' next timed steps.
        assert_eq!(s.tasks[1].hw.share_ns, far);
        assert_eq!(s.hw.stats.share_ns, 2 * far + near);
        // After the new write the old copy is stale.
        assert_eq!(s.share_access(2, 1, 0, 4096, false), far);
    }
}
