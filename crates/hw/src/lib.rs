//! Hardware performance model: how fast a running thread makes progress.
//!
//! Given where threads run, this crate answers "at what rate does each one
//! progress" and "what does moving data cost": compute speed from CPU
//! capacity and SMT sharing, memory bandwidth from max-min fair sharing of
//! every limit a stream crosses (its core, its cluster link, the socket link,
//! its node's memory controllers), cache sharing between co-running working
//! sets, cache-line transfers between cores and working-set refills after a
//! migration. It is calibrated only against hardware facts
//! (shared/reference/hardware.md), which live in the machine files, plus the
//! few generic constants below, each with its hardware.md source key. It knows
//! nothing about scheduling: the engine tells it which CPUs are busy with what.

use schedlab_topo::{CpuId, Machine};

/// One memory stream: a running thread on `cpu` streaming from `mem_node`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flow {
    pub cpu: CpuId,
    pub mem_node: u32,
}

/// Remote memory latency relative to local: `1 + REMOTE_HOP + REMOTE_PER_SLIT · (d − 10)`
/// for SLIT distance `d > 10`. A single stream is latency-bound (fixed misses in
/// flight), so its bandwidth divides by this factor.
///
/// Least-squares fit to the [WAYCA] remote STREAM copy figures of Kunpeng 920
/// (4 threads on node 0, one per cluster: node1 37.4, node2 31.4, node3 29.0 GB/s
/// against 12.4 GB/s per core, SLIT 12/20/22 [LKML-KP]); the model gives 37.6,
/// 30.8, 29.4 GB/s. The fixed part is the home-agent/interconnect hop every
/// remote access pays; the SLIT part grows with the distance. For the other
/// machines it is an ESTIMATE by extension (no published remote STREAM).
pub const REMOTE_HOP: f64 = 0.2468;
/// See [`REMOTE_HOP`] ([WAYCA] fit).
pub const REMOTE_PER_SLIT: f64 = 0.0365;

/// Latency factor of a memory access at SLIT distance `d` (see [`REMOTE_HOP`]).
pub fn remote_latency_factor(d: u32) -> f64 {
    if d <= 10 {
        1.0
    } else {
        1.0 + REMOTE_HOP + REMOTE_PER_SLIT * (d - 10) as f64
    }
}

/// A `[[link]]` whose name starts with this prefix is a socket interconnect: it
/// limits only streams between a CPU and memory in another package (Kunpeng's
/// Hydra ports, UPI, xGMI), not the package's local traffic.
pub const SOCKET_LINK_PREFIX: &str = "socket";

const NS_PER_S: f64 = 1e9;
const NONE: u32 = u32::MAX;

/// A live flow of the incremental allocator.
#[derive(Clone, Debug, Default)]
struct Slot {
    flow: Option<Flow>,
    /// The caller's tag (the engine's task id).
    tag: u32,
    /// The flow's own limit (its core's bandwidth shrunk by the remote latency).
    cap: f64,
    rate: f64,
    frozen: bool,
    /// Shared constraints it crosses: [core, links..., node].
    cons: Vec<u32>,
}

/// Memory-bandwidth model of a machine.
///
/// Limits: each physical core (its core type's single-stream bandwidth, shared
/// by SMT siblings), each shared link (cluster bus; a socket link only for
/// cross-package streams) and each node's memory. A node's memory behaves as a
/// closed queue: with `n` concurrent streams it delivers `peak · n / (n + k)`
/// (Little's law with latency growing under load), which reproduces the
/// measured concave scaling of node bandwidth. A stream to a remote node is
/// latency-bound: its own limit is its core's divided by
/// [`remote_latency_factor`].
///
/// Flows are kept incrementally ([`MemModel::add_flow`], [`MemModel::remove_flow`]):
/// a change re-shares only the connected component of the changed flow (the
/// flows linked to it through shared limits), so the cost depends on how many
/// streams share a node, not on the machine's size. Iteration orders are
/// fixed (slot and insertion order), so results are deterministic.
#[derive(Clone, Debug)]
pub struct MemModel {
    cpu_core: Vec<u32>,
    cpu_core_bw: Vec<f64>,
    cpu_links: Vec<Vec<u32>>,
    cpu_node: Vec<u32>,
    cpu_package: Vec<u32>,
    node_package: Vec<u32>,
    core_bw: Vec<f64>,
    link_bw: Vec<f64>,
    link_remote_only: Vec<bool>,
    node_peak: Vec<f64>,
    node_k: Vec<f64>,
    distance: Vec<Vec<u32>>,
    n_cores: usize,
    // Incremental state.
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// Per constraint [cores | links | nodes]: live slots, in insertion order.
    members: Vec<Vec<u32>>,
    // Scratch (no allocation per event once warm).
    epoch: u32,
    cons_mark: Vec<u32>,
    slot_mark: Vec<u32>,
    comp_cons: Vec<u32>,
    comp_slots: Vec<u32>,
    used: Vec<f64>,
    active: Vec<u32>,
    capv: Vec<f64>,
    seeds: Vec<u32>,
}

impl MemModel {
    pub fn new(m: &Machine) -> Self {
        let n_cores = m.nr_cores();
        let cpu_links = m
            .cpus
            .iter()
            .map(|c| {
                m.links
                    .iter()
                    .enumerate()
                    .filter(|(_, l)| l.cpus.test(c.id))
                    .map(|(i, _)| i as u32)
                    .collect()
            })
            .collect();
        let max_node = m
            .nodes
            .iter()
            .map(|n| n.id as usize + 1)
            .chain(m.cpus.iter().map(|c| c.node as usize + 1))
            .max()
            .unwrap_or(1);
        let mut node_peak = vec![f64::INFINITY; max_node];
        let mut node_k = vec![0.0; max_node];
        for n in &m.nodes {
            node_peak[n.id as usize] = n.mem_bw_peak_bytes_per_s / NS_PER_S;
            node_k[n.id as usize] = n.mem_half_concurrency.max(0.0);
        }
        // A node without CPUs (CXL memory, a node whose CPUs are offline)
        // belongs to the package Machine::node_package() names: streams to it
        // from that package stay off the socket links.
        let node_package: Vec<u32> = (0..max_node as u32)
            .map(|n| m.node_package(n).unwrap_or(NONE))
            .collect();
        let cpu_core_bw: Vec<f64> = m
            .cpus
            .iter()
            .map(|c| m.core_types[c.core_type as usize].core_bw_bytes_per_s / NS_PER_S)
            .collect();
        let mut core_bw = vec![f64::INFINITY; n_cores];
        for c in &m.cpus {
            core_bw[c.core as usize] = cpu_core_bw[c.id as usize];
        }
        let n_cons = n_cores + m.links.len() + max_node;
        MemModel {
            cpu_core: m.cpus.iter().map(|c| c.core).collect(),
            cpu_core_bw,
            cpu_links,
            cpu_node: m.cpus.iter().map(|c| c.node).collect(),
            cpu_package: m.cpus.iter().map(|c| c.package).collect(),
            node_package,
            core_bw,
            link_bw: m
                .links
                .iter()
                .map(|l| l.bw_bytes_per_s / NS_PER_S)
                .collect(),
            link_remote_only: m
                .links
                .iter()
                .map(|l| l.name.starts_with(SOCKET_LINK_PREFIX))
                .collect(),
            node_peak,
            node_k,
            distance: m.distance.clone(),
            n_cores,
            slots: Vec::new(),
            free: Vec::new(),
            members: vec![Vec::new(); n_cons],
            epoch: 0,
            cons_mark: vec![0; n_cons],
            slot_mark: Vec::new(),
            comp_cons: Vec::new(),
            comp_slots: Vec::new(),
            used: vec![0.0; n_cons],
            active: vec![0; n_cons],
            capv: vec![0.0; n_cons],
            seeds: Vec::new(),
        }
    }

    /// Throughput of a node's memory with `n` concurrent streams, bytes/ns.
    pub fn node_capacity(&self, node: u32, n: usize) -> f64 {
        let n = n as f64;
        let (p, k) = (self.node_peak[node as usize], self.node_k[node as usize]);
        if n == 0.0 {
            0.0
        } else {
            p * n / (n + k)
        }
    }

    /// Single-stream bandwidth of `cpu` reading `mem_node`, bytes/ns (its own
    /// limit: the core's bandwidth over the remote latency factor).
    pub fn stream_cap(&self, cpu: CpuId, mem_node: u32) -> f64 {
        let c = cpu as usize;
        let home = self.cpu_node[c] as usize;
        let d = if mem_node as usize == home {
            10
        } else {
            self.distance
                .get(home)
                .and_then(|r| r.get(mem_node as usize))
                .copied()
                .unwrap_or(20)
        };
        self.cpu_core_bw[c] / remote_latency_factor(d)
    }

    /// Number of live flows.
    pub fn nr_flows(&self) -> usize {
        self.slots.iter().filter(|s| s.flow.is_some()).count()
    }

    /// Current rate of a live flow, bytes/ns.
    pub fn rate(&self, slot: u32) -> f64 {
        self.slots[slot as usize].rate
    }

    fn cons_capacity(&self, ci: usize) -> f64 {
        let base_node = self.n_cores + self.link_bw.len();
        if ci < self.n_cores {
            self.core_bw[ci]
        } else if ci < base_node {
            self.link_bw[ci - self.n_cores]
        } else {
            self.node_capacity((ci - base_node) as u32, self.members[ci].len())
        }
    }

    /// Inserts a flow without re-sharing; returns its slot.
    fn insert(&mut self, flow: Flow, tag: u32) -> u32 {
        let c = flow.cpu as usize;
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(Slot::default());
                self.slot_mark.push(0);
                (self.slots.len() - 1) as u32
            }
        };
        let remote_pkg = self
            .node_package
            .get(flow.mem_node as usize)
            .copied()
            .unwrap_or(NONE)
            != self.cpu_package[c];
        let cap = self.stream_cap(flow.cpu, flow.mem_node);
        let mut cons = std::mem::take(&mut self.slots[slot as usize].cons);
        cons.clear();
        cons.push(self.cpu_core[c]);
        for &l in &self.cpu_links[c] {
            if !self.link_remote_only[l as usize] || remote_pkg {
                cons.push((self.n_cores + l as usize) as u32);
            }
        }
        let n_nodes = self.node_peak.len();
        if (flow.mem_node as usize) < n_nodes {
            cons.push((self.n_cores + self.link_bw.len() + flow.mem_node as usize) as u32);
        }
        for &ci in &cons {
            self.members[ci as usize].push(slot);
        }
        self.slots[slot as usize] = Slot {
            flow: Some(flow),
            tag,
            cap,
            rate: 0.0,
            frozen: false,
            cons,
        };
        slot
    }

    /// Adds a flow tagged `tag` and re-shares its connected component; `out`
    /// receives `(tag, rate)` for every flow of the component (the new one
    /// included), in a fixed order. Returns the flow's slot.
    pub fn add_flow(&mut self, flow: Flow, tag: u32, out: &mut Vec<(u32, f64)>) -> u32 {
        let slot = self.insert(flow, tag);
        let mut seeds = std::mem::take(&mut self.seeds);
        seeds.clear();
        seeds.extend_from_slice(&self.slots[slot as usize].cons);
        self.reshare_from(&seeds, out);
        self.seeds = seeds;
        slot
    }

    /// Removes a flow and re-shares what was its component; `out` receives the
    /// new `(tag, rate)` of the flows whose share may have changed.
    pub fn remove_flow(&mut self, slot: u32, out: &mut Vec<(u32, f64)>) {
        let s = slot as usize;
        if self.slots[s].flow.is_none() {
            out.clear();
            return;
        }
        let cons = std::mem::take(&mut self.slots[s].cons);
        for &ci in &cons {
            let m = &mut self.members[ci as usize];
            if let Some(i) = m.iter().position(|&x| x == slot) {
                m.remove(i);
            }
        }
        self.slots[s].flow = None;
        self.slots[s].rate = 0.0;
        self.free.push(slot);
        self.reshare_from(&cons, out);
        self.slots[s].cons = cons;
    }

    /// Collects the component reachable from the constraints `seeds` and
    /// re-shares it by progressive filling.
    fn reshare_from(&mut self, seeds: &[u32], out: &mut Vec<(u32, f64)>) {
        out.clear();
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.cons_mark.iter_mut().for_each(|x| *x = 0);
            self.slot_mark.iter_mut().for_each(|x| *x = 0);
            self.epoch = 1;
        }
        let ep = self.epoch;
        self.comp_cons.clear();
        self.comp_slots.clear();
        for &c in seeds {
            if self.cons_mark[c as usize] != ep {
                self.cons_mark[c as usize] = ep;
                self.comp_cons.push(c);
            }
        }
        let mut i = 0;
        while i < self.comp_cons.len() {
            let c = self.comp_cons[i] as usize;
            for k in 0..self.members[c].len() {
                let s = self.members[c][k] as usize;
                if self.slot_mark[s] != ep {
                    self.slot_mark[s] = ep;
                    self.comp_slots.push(s as u32);
                    for j in 0..self.slots[s].cons.len() {
                        let c2 = self.slots[s].cons[j] as usize;
                        if self.cons_mark[c2] != ep {
                            self.cons_mark[c2] = ep;
                            self.comp_cons.push(c2 as u32);
                        }
                    }
                }
            }
            i += 1;
        }
        self.fill();
        for &s in &self.comp_slots {
            let sl = &self.slots[s as usize];
            out.push((sl.tag, sl.rate));
        }
    }

    /// Progressive filling over the current component: raise every unfrozen
    /// flow equally until a limit (shared or its own) saturates, freeze the
    /// flows at it, repeat. Each round freezes at least one flow.
    fn fill(&mut self) {
        for k in 0..self.comp_cons.len() {
            let c = self.comp_cons[k] as usize;
            self.used[c] = 0.0;
            self.active[c] = self.members[c].len() as u32;
            self.capv[c] = self.cons_capacity(c);
        }
        for &s in &self.comp_slots {
            let sl = &mut self.slots[s as usize];
            sl.rate = 0.0;
            sl.frozen = false;
        }
        let mut remaining = self.comp_slots.len();
        while remaining > 0 {
            let mut inc = f64::INFINITY;
            for &c in &self.comp_cons {
                let c = c as usize;
                if self.active[c] > 0 {
                    inc = inc.min((self.capv[c] - self.used[c]).max(0.0) / self.active[c] as f64);
                }
            }
            for &s in &self.comp_slots {
                let sl = &self.slots[s as usize];
                if !sl.frozen {
                    inc = inc.min((sl.cap - sl.rate).max(0.0));
                }
            }
            if !inc.is_finite() {
                break;
            }
            for &s in &self.comp_slots {
                let sl = &mut self.slots[s as usize];
                if !sl.frozen {
                    sl.rate += inc;
                }
            }
            for &c in &self.comp_cons {
                let c = c as usize;
                self.used[c] += inc * self.active[c] as f64;
            }
            // Freeze the flows at saturated shared limits, then at their own.
            for k in 0..self.comp_cons.len() {
                let c = self.comp_cons[k] as usize;
                if self.active[c] == 0 || self.used[c] < self.capv[c] * (1.0 - 1e-12) {
                    continue;
                }
                for j in 0..self.members[c].len() {
                    let s = self.members[c][j] as usize;
                    if !self.slots[s].frozen {
                        self.freeze(s);
                        remaining -= 1;
                    }
                }
            }
            for k in 0..self.comp_slots.len() {
                let s = self.comp_slots[k] as usize;
                let sl = &self.slots[s];
                if !sl.frozen && sl.rate >= sl.cap * (1.0 - 1e-12) {
                    self.freeze(s);
                    remaining -= 1;
                }
            }
        }
    }

    fn freeze(&mut self, s: usize) {
        self.slots[s].frozen = true;
        for j in 0..self.slots[s].cons.len() {
            let c = self.slots[s].cons[j] as usize;
            self.active[c] -= 1;
        }
    }

    /// Max-min fair bandwidth for each of `flows` on an otherwise idle machine,
    /// bytes/ns, written to `out` (the reference computation: one component
    /// pass per flow over a fresh copy; tests and calibration use it).
    pub fn share(&mut self, flows: &[Flow], out: &mut Vec<f64>) {
        let mut fresh = MemModel {
            slots: Vec::new(),
            free: Vec::new(),
            members: vec![Vec::new(); self.members.len()],
            slot_mark: Vec::new(),
            ..self.clone_static()
        };
        let slots: Vec<u32> = flows
            .iter()
            .enumerate()
            .map(|(i, &f)| fresh.insert(f, i as u32))
            .collect();
        let mut tmp = Vec::new();
        let n_cons = fresh.members.len() as u32;
        let all: Vec<u32> = (0..n_cons).collect();
        fresh.reshare_from(&all, &mut tmp);
        out.clear();
        out.extend(slots.iter().map(|&s| fresh.rate(s)));
    }

    fn clone_static(&self) -> MemModel {
        MemModel {
            cpu_core: self.cpu_core.clone(),
            cpu_core_bw: self.cpu_core_bw.clone(),
            cpu_links: self.cpu_links.clone(),
            cpu_node: self.cpu_node.clone(),
            cpu_package: self.cpu_package.clone(),
            node_package: self.node_package.clone(),
            core_bw: self.core_bw.clone(),
            link_bw: self.link_bw.clone(),
            link_remote_only: self.link_remote_only.clone(),
            node_peak: self.node_peak.clone(),
            node_k: self.node_k.clone(),
            distance: self.distance.clone(),
            n_cores: self.n_cores,
            slots: Vec::new(),
            free: Vec::new(),
            members: Vec::new(),
            epoch: 0,
            cons_mark: vec![0; self.cons_mark.len()],
            slot_mark: Vec::new(),
            comp_cons: Vec::new(),
            comp_slots: Vec::new(),
            used: vec![0.0; self.used.len()],
            active: vec![0; self.active.len()],
            capv: vec![0.0; self.capv.len()],
            seeds: Vec::new(),
        }
    }
}

/// `x.ceil() as u64` without a call to libm's `ceil` (x86-64's baseline has no
/// rounding instruction, and the engine rounds a duration up at every
/// completion it arms): the same value for every `x`, NaN and negative
/// numbers giving 0 and numbers beyond `u64::MAX` saturating.
#[inline]
pub fn ceil_u64(x: f64) -> u64 {
    // 2^64, the first f64 above u64::MAX.
    const TWO_64: f64 = 18_446_744_073_709_551_616.0;
    if x.is_nan() || x <= 0.0 {
        return 0;
    }
    if x >= TWO_64 {
        return u64::MAX;
    }
    let i = x as u64;
    if (i as f64) < x {
        i + 1
    } else {
        i
    }
}

/// Compute speed of a thread on `cpu`: work-ns per ns. Capacity scales it
/// (capacity is already frequency-invariant at the highest frequency). With
/// `busy_siblings` of the core's other `threads - 1` threads busy, the
/// core's throughput goes linearly (ESTIMATE) from 1 for one thread alone to
/// `threads · smt_thread_speed` with all busy, shared equally by the busy
/// threads; on SMT2 one busy sibling gives `smt_thread_speed` exactly.
pub fn compute_speed(m: &Machine, cpu: CpuId, busy_siblings: u32, threads: u32) -> f64 {
    let c = &m.cpus[cpu as usize];
    let base = c.capacity as f64 / 1024.0;
    if busy_siblings == 0 || threads < 2 {
        return base;
    }
    let speed = m.core_types[c.core_type as usize].smt_thread_speed;
    let n = busy_siblings + 1;
    if n >= threads {
        return base * speed;
    }
    let (n, threads) = (n as f64, threads as f64);
    let total = 1.0 + (n - 1.0) / (threads - 1.0) * (threads * speed - 1.0);
    base * total / n
}

// ----- caches, transfers, refills ----------------------------------------------

/// Refill bandwidth from a shared cache, bytes/ns: 1 MiB in ~17.5 µs, the
/// middle of "streaming from LLC ~10–25 µs per MiB" (hardware.md section 8,
/// ESTIMATE (derived)).
pub const CACHE_REFILL_BYTES_PER_NS: f64 = 1_048_576.0 / 17_500.0;

/// Misses in flight when a core pulls many independent lines (hardware.md
/// section 8: "MLP 10", ESTIMATE).
pub const TRANSFER_MLP: f64 = 10.0;

/// The data caches of a machine as the performance model sees them.
#[derive(Clone, Debug)]
pub struct CacheModel {
    /// Per cache instance (data/unified only): level, size, CPUs.
    level: Vec<u8>,
    size: Vec<u64>,
    line: Vec<u32>,
    cpus: Vec<schedlab_topo::CpuMask>,
    /// Per CPU: its last-level data cache (the largest level containing it).
    cpu_llc: Vec<u32>,
}

impl CacheModel {
    pub fn new(m: &Machine) -> Self {
        let data: Vec<&schedlab_topo::CacheInfo> = m
            .caches
            .iter()
            .filter(|c| c.kind != "Instruction")
            .collect();
        let cpu_llc = m
            .cpus
            .iter()
            .map(|cpu| {
                data.iter()
                    .enumerate()
                    .filter(|(_, c)| c.cpus.test(cpu.id))
                    .max_by_key(|(i, c)| (c.level, std::cmp::Reverse(*i)))
                    .map(|(i, _)| i as u32)
                    .unwrap_or(NONE)
            })
            .collect();
        CacheModel {
            level: data.iter().map(|c| c.level).collect(),
            size: data.iter().map(|c| c.size_bytes).collect(),
            line: data.iter().map(|c| c.line_bytes.max(1)).collect(),
            cpus: data.iter().map(|c| c.cpus).collect(),
            cpu_llc,
        }
    }

    /// Number of cache instances (indices for [`CacheModel::size`] etc.).
    pub fn len(&self) -> usize {
        self.size.len()
    }

    pub fn is_empty(&self) -> bool {
        self.size.is_empty()
    }

    /// The last-level data cache of `cpu`, if the machine lists one.
    pub fn llc(&self, cpu: CpuId) -> Option<u32> {
        self.cpu_llc
            .get(cpu as usize)
            .copied()
            .filter(|&x| x != NONE)
    }

    pub fn size(&self, cache: u32) -> u64 {
        self.size[cache as usize]
    }

    pub fn level(&self, cache: u32) -> u8 {
        self.level[cache as usize]
    }

    pub fn line(&self, cache: u32) -> u32 {
        self.line[cache as usize]
    }

    /// The lowest-level cache shared by `a` and `b` that can hold `bytes`.
    pub fn shared_holding(&self, a: CpuId, b: CpuId, bytes: u64) -> Option<u32> {
        (0..self.size.len())
            .filter(|&i| self.cpus[i].test(a) && self.cpus[i].test(b) && self.size[i] >= bytes)
            .min_by_key(|&i| (self.level[i], i))
            .map(|i| i as u32)
    }

    /// The largest of `from`'s caches that `to` does not share: what a task
    /// moving from `from` to `to` leaves behind (0 when they share all).
    pub fn left_behind(&self, from: CpuId, to: CpuId) -> u64 {
        (0..self.size.len())
            .filter(|&i| self.cpus[i].test(from) && !self.cpus[i].test(to))
            .map(|i| self.size[i])
            .max()
            .unwrap_or(0)
    }
}

/// Cache sharing: bytes of working set `ws` that miss a cache of `size` bytes
/// because co-running working sets totalling `others` compete for it, beyond
/// what misses when running alone. Each co-runner holds a share of the cache
/// proportional to its working set (LRU under uniform reuse).
pub fn contention_miss_bytes(size: u64, ws: u64, others: u64) -> u64 {
    let total = ws.saturating_add(others);
    if ws == 0 || total <= size {
        return 0;
    }
    let share = (size as f64 * ws as f64 / total as f64) as u64;
    ws.min(size).saturating_sub(share.min(ws))
}

/// Time to bring `bytes` from memory node `mem_node` to `cpu` as one stream:
/// the first line's latency plus the bytes at the core's (latency-bound)
/// single-stream bandwidth.
pub fn memory_fetch_ns(m: &Machine, cpu: CpuId, mem_node: u32, bytes: u64) -> u64 {
    if bytes == 0 {
        return 0;
    }
    let c = &m.cpus[cpu as usize];
    let d = m.node_distance(c.node, mem_node);
    let f = remote_latency_factor(if c.node == mem_node { 10 } else { d });
    let lat = m
        .nodes
        .iter()
        .find(|n| n.id == mem_node)
        .or_else(|| m.nodes.iter().find(|n| n.id == c.node))
        .map(|n| n.mem_latency_ns as f64)
        .unwrap_or(100.0)
        * f;
    let bw = m.core_types[c.core_type as usize].core_bw_bytes_per_s / NS_PER_S / f;
    ceil_u64(lat + bytes as f64 / bw)
}

/// Cost of `cpu` consuming `bytes` that `from` wrote (cache-line transfers at
/// the core-to-core latency of their distance, [`Machine::c2c_ns`]): the first
/// line pays the full latency, the others overlap `TRANSFER_MLP` at a time.
pub fn transfer_ns(m: &Machine, from: CpuId, cpu: CpuId, bytes: u64, line: u32) -> u64 {
    if bytes == 0 || from == cpu {
        return 0;
    }
    let lines = bytes.div_ceil(line.max(1) as u64) as f64;
    let c2c = m.c2c_ns(from, cpu) as f64;
    ceil_u64(c2c * (1.0 + (lines - 1.0) / TRANSFER_MLP))
}

/// Cost of `lines` dependent cache-line transfers (pointer chasing through
/// data another CPU wrote: each miss waits for the previous one).
pub fn dependent_transfer_ns(m: &Machine, from: CpuId, cpu: CpuId, lines: u64) -> u64 {
    if from == cpu {
        return 0;
    }
    lines * m.c2c_ns(from, cpu) as u64
}

/// Where a migrated working set is refilled from, and at what cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefillSource {
    /// Same core: the private caches come along; nothing to refill.
    None,
    /// A cache both CPUs share (index into [`CacheModel`]).
    Cache(u32),
    /// Memory (no shared cache holds it).
    Memory,
}

/// Refill of working set `ws` (bytes) that lived in `from`'s caches, now that
/// the task runs on `to`; its memory is on `mem_node`. Returns the source and
/// the time in ns. What is lost is what `from`'s caches that `to` does not
/// share could hold (a private L2 within an LLC, the whole LLC's share across
/// LLCs); it comes from the closest shared cache that can hold it, at
/// [`CACHE_REFILL_BYTES_PER_NS`], else from memory ([`memory_fetch_ns`]).
/// (hardware.md section 8: 1 MiB ~10–25 µs from LLC, ~70–100 µs from DRAM.)
pub fn migration_refill(
    m: &Machine,
    caches: &CacheModel,
    from: CpuId,
    to: CpuId,
    ws: u64,
    mem_node: u32,
) -> (RefillSource, u64) {
    if ws == 0 || from == to || m.cpus[from as usize].core == m.cpus[to as usize].core {
        return (RefillSource::None, 0);
    }
    let held = ws.min(caches.left_behind(from, to));
    if held == 0 {
        return (RefillSource::None, 0);
    }
    match caches.shared_holding(from, to, held) {
        Some(c) => (
            RefillSource::Cache(c),
            ceil_u64(held as f64 / CACHE_REFILL_BYTES_PER_NS),
        ),
        _ => (RefillSource::Memory, memory_fetch_ns(m, to, mem_node, held)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_topo::*;

    /// A 1-node machine with 2 clusters of 2 cores: core 10, link 15, node peak 40, k 1.
    pub(crate) fn tiny() -> Machine {
        let cpus = (0..4u16)
            .map(|i| CpuInfo {
                id: i,
                core: i as u32,
                cluster: i as u32 / 2,
                llc: 0,
                die: 0,
                package: 0,
                node: 0,
                capacity: 1024,
                freq_max_mhz: 2000,
                asym_prio: 0,
                core_type: 0,
            })
            .collect();
        Machine {
            name: "tiny".into(),
            arch: Arch::Arm64,
            description: String::new(),
            cpus,
            core_types: vec![CoreType {
                name: "c".into(),
                smt_thread_speed: 1.0,
                core_bw_bytes_per_s: 10e9,
            }],
            caches: vec![],
            nodes: vec![NodeInfo {
                id: 0,
                cpus: CpuMask::first_n(4),
                mem_bw_peak_bytes_per_s: 40e9,
                mem_half_concurrency: 1.0,
                mem_latency_ns: 100,
                package: None,
            }],
            distance: vec![vec![10]],
            links: vec![
                SharedLink {
                    name: "cl0".into(),
                    cpus: CpuMask::from_cpus([0, 1]),
                    bw_bytes_per_s: 15e9,
                },
                SharedLink {
                    name: "cl1".into(),
                    cpus: CpuMask::from_cpus([2, 3]),
                    bw_bytes_per_s: 15e9,
                },
            ],
            c2c: C2cLatency {
                smt_ns: 5,
                cluster_ns: 30,
                llc_ns: 40,
                die_ns: 80,
                node_ns: 80,
                package_ns: 80,
                remote_package_ns: 150,
            },
            wakeup: WakeupCosts {
                ipi_ns: 1000,
                wakeup_path_ns: 1000,
                balance_pass_ns: 2000,
                balance_pass_per_cpu_ns: 50,
                balance_refused_ns: 100,
                idle_states: vec![schedlab_topo::IdleState::new("WFI", 1000, 0, false)],
            },
            booted: None,
        }
    }

    fn f(cpu: CpuId) -> Flow {
        Flow { cpu, mem_node: 0 }
    }

    proptest::proptest! {
        /// ceil_u64 is `ceil() as u64`, on ordinary durations and on any bit
        /// pattern (NaN, infinities, negatives, subnormals, huge values).
        #[test]
        fn ceil_u64_is_ceil_as_u64(x in 0.0f64..1e12, bits in proptest::num::u64::ANY) {
            proptest::prop_assert_eq!(ceil_u64(x), x.ceil() as u64);
            let y = f64::from_bits(bits);
            proptest::prop_assert_eq!(ceil_u64(y), y.ceil() as u64);
        }
    }

    #[test]
    fn ceil_u64_edges() {
        for x in [
            0.0,
            -0.0,
            0.5,
            1.0,
            1.0 + f64::EPSILON,
            // 2^52 - 0.5, the last half below the integers-only range; 2^53;
            // the largest f64 below 2^64; 2^64.
            4_503_599_627_370_495.5,
            9_007_199_254_740_992.0,
            18_446_744_073_709_549_568.0,
            18_446_744_073_709_551_616.0,
            f64::MAX,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            -3.5,
            f64::MIN_POSITIVE,
        ] {
            assert_eq!(ceil_u64(x), x.ceil() as u64, "{x}");
        }
    }

    #[test]
    fn max_min_sharing() {
        let mut mm = MemModel::new(&tiny());
        let mut out = Vec::new();
        // One stream: core-limited (node gives 40*1/2 = 20 > 10).
        mm.share(&[f(0)], &mut out);
        assert!((out[0] - 10.0).abs() < 1e-9);
        // Two streams in one cluster: the link (15) binds: 7.5 each.
        mm.share(&[f(0), f(1)], &mut out);
        assert!((out[0] - 7.5).abs() < 1e-9 && (out[1] - 7.5).abs() < 1e-9);
        // Two streams in two clusters: node gives 40*2/3 = 26.7, so the cores (10) bind.
        mm.share(&[f(0), f(2)], &mut out);
        assert!((out[0] - 10.0).abs() < 1e-9 && (out[1] - 10.0).abs() < 1e-9);
        // Three streams: 0,1 in cl0 (link 15), 2 alone; node 40*3/4 = 30 does not bind.
        mm.share(&[f(0), f(1), f(2)], &mut out);
        assert_eq!(out, vec![7.5, 7.5, 10.0]);
        // Four streams: node 40*4/5 = 32 binds below the links' 30? no: links give 15+15 = 30.
        mm.share(&[f(0), f(1), f(2), f(3)], &mut out);
        assert_eq!(out, vec![7.5; 4]);
    }

    #[test]
    fn remote_stream_is_slower() {
        let mut m = tiny();
        m.nodes.push(NodeInfo {
            id: 1,
            cpus: CpuMask::new(),
            mem_bw_peak_bytes_per_s: 40e9,
            mem_half_concurrency: 1.0,
            mem_latency_ns: 100,
            package: None,
        });
        m.distance = vec![vec![10, 20], vec![20, 10]];
        let mut mm = MemModel::new(&m);
        let mut out = Vec::new();
        mm.share(
            &[Flow {
                cpu: 0,
                mem_node: 1,
            }],
            &mut out,
        );
        let want = 10.0 / remote_latency_factor(20);
        assert!((out[0] - want).abs() < 1e-9, "{} vs {want}", out[0]);
    }

    /// A node without CPUs belongs to the package of the CPU node nearest
    /// to it: with CPUs 0-1 in package 0 and 2-3 in package 1, each package
    /// a node, and a memory-only node 2 at distance 14 from node 0 and 24
    /// from node 1, a stream from CPU 0 to node 2 stays off the socket link
    /// (5e9) and one from CPU 2 crosses it.
    #[test]
    fn a_memory_only_node_hangs_off_its_nearest_package() {
        let mut m = tiny();
        for c in 2..4 {
            m.cpus[c].package = 1;
            m.cpus[c].node = 1;
        }
        m.nodes[0].cpus = CpuMask::from_cpus([0, 1]);
        m.nodes.push(NodeInfo {
            id: 1,
            cpus: CpuMask::from_cpus([2, 3]),
            ..m.nodes[0].clone()
        });
        m.nodes.push(NodeInfo {
            id: 2,
            cpus: CpuMask::new(),
            ..m.nodes[0].clone()
        });
        m.distance = vec![vec![10, 20, 14], vec![20, 10, 24], vec![14, 24, 10]];
        m.links.push(SharedLink {
            name: format!("{SOCKET_LINK_PREFIX}0"),
            cpus: CpuMask::first_n(4),
            bw_bytes_per_s: 5e9,
        });
        let mut mm = MemModel::new(&m);
        let mut out = Vec::new();
        let to2 = |cpu| Flow { cpu, mem_node: 2 };
        mm.share(&[to2(0)], &mut out);
        let near = 10.0 / remote_latency_factor(14);
        assert!(near > 5.0 && (out[0] - near).abs() < 1e-9, "{out:?}");
        mm.share(&[to2(2)], &mut out);
        assert!((out[0] - 5.0).abs() < 1e-9, "{out:?}");
    }

    /// Taking a socket's CPUs offline does not move its memory: with only
    /// nodes 0 and 2 online, node 1's memory stays in package 0 and node
    /// 3's in package 1 (renumbered 1); with socket 1 wholly offline, its
    /// nodes are remote to every online CPU.
    #[test]
    fn offline_cpus_leave_their_nodes_memory_in_its_package() {
        let m = schedlab_topo::resolve_machine("kunpeng920:online=0-23,48-71").unwrap();
        assert_eq!(MemModel::new(&m).node_package, [0, 0, 1, 1]);
        let m = schedlab_topo::resolve_machine("kunpeng920:online=0-47").unwrap();
        let mm = MemModel::new(&m);
        assert_eq!(mm.node_package, [0, 0, 1, 1]);
        assert!(mm.cpu_package.iter().all(|&p| p == 0));
    }

    fn kunpeng() -> Machine {
        schedlab_topo::preset("kunpeng920").unwrap()
    }

    /// Incremental component re-sharing equals the full recomputation after
    /// every change of a deterministic pseudo-random add/remove sequence.
    #[test]
    fn incremental_equals_full_recompute() {
        let m = kunpeng();
        let mut mm = MemModel::new(&m);
        let mut live: Vec<(u32, Flow, u32)> = Vec::new(); // (slot, flow, tag)
        let mut out = Vec::new();
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut rates: Vec<f64> = vec![0.0; 1000];
        for step in 0..600u32 {
            let r = next();
            if live.is_empty() || r % 3 != 0 {
                let f = Flow {
                    cpu: (next() % 96) as CpuId,
                    mem_node: (next() % 4) as u32,
                };
                let slot = mm.add_flow(f, step, &mut out);
                live.push((slot, f, step));
            } else {
                let i = (next() % live.len() as u64) as usize;
                let (slot, _, _) = live.remove(i);
                mm.remove_flow(slot, &mut out);
            }
            for &(tag, rate) in &out {
                rates[tag as usize] = rate;
            }
            let flows: Vec<Flow> = live.iter().map(|l| l.1).collect();
            let mut full = Vec::new();
            mm.share(&flows, &mut full);
            for (l, want) in live.iter().zip(&full) {
                let got = rates[l.2 as usize];
                assert!(
                    (got - want).abs() <= 1e-9 * want.max(1.0),
                    "step {step}: flow {:?} got {got} want {want}",
                    l.1
                );
                assert!((mm.rate(l.0) - got).abs() < 1e-12);
            }
        }
    }

    /// A change re-shares only the flows that share a limit with it.
    #[test]
    fn resharing_is_local_to_the_component() {
        let m = kunpeng();
        let mut mm = MemModel::new(&m);
        let mut out = Vec::new();
        // Node 0 streams (CPUs 0..24) and node 2 streams (CPUs 48..72).
        for c in 0..8u16 {
            mm.add_flow(
                Flow {
                    cpu: c,
                    mem_node: 0,
                },
                c as u32,
                &mut out,
            );
            mm.add_flow(
                Flow {
                    cpu: 48 + c,
                    mem_node: 2,
                },
                100 + c as u32,
                &mut out,
            );
        }
        mm.add_flow(
            Flow {
                cpu: 9,
                mem_node: 0,
            },
            999,
            &mut out,
        );
        assert_eq!(out.len(), 9, "only node 0's flows: {out:?}");
        assert!(out.iter().all(|&(t, _)| t < 100 || t == 999));
    }

    /// Socket link: cross-socket streams share the Hydra ports' 90 GB/s,
    /// local streams do not cross it.
    #[test]
    fn socket_link_limits_only_cross_socket_streams() {
        let m = kunpeng();
        assert!(m
            .links
            .iter()
            .any(|l| l.name.starts_with(SOCKET_LINK_PREFIX)));
        let mut mm = MemModel::new(&m);
        let mut out = Vec::new();
        // Socket 0's 48 CPUs stream from socket 1's two nodes: the nodes could
        // give 2 x 63 GB/s, the socket link allows 90.
        let flows: Vec<Flow> = (0..48u16)
            .map(|c| Flow {
                cpu: c,
                mem_node: 2 + (c as u32 / 24),
            })
            .collect();
        mm.share(&flows, &mut out);
        let total: f64 = out.iter().sum();
        assert!((total - 90.0).abs() < 1e-6, "total {total}");
        // The same 48 streams to their local nodes: no socket link.
        let local: Vec<Flow> = (0..48u16)
            .map(|c| Flow {
                cpu: c,
                mem_node: c as u32 / 24,
            })
            .collect();
        mm.share(&local, &mut out);
        let total: f64 = out.iter().sum();
        assert!(total > 120.0, "total {total}");
    }

    /// [WAYCA] remote STREAM copy, 4 threads (one per cluster of node 0).
    #[test]
    fn remote_stream_matches_wayca() {
        let m = kunpeng();
        let mut mm = MemModel::new(&m);
        let mut out = Vec::new();
        for (node, published) in [(1u32, 37.4), (2, 31.4), (3, 29.0)] {
            let flows: Vec<Flow> = [0u16, 4, 8, 12]
                .iter()
                .map(|&cpu| Flow {
                    cpu,
                    mem_node: node,
                })
                .collect();
            mm.share(&flows, &mut out);
            let total: f64 = out.iter().sum();
            assert!(
                (total / published - 1.0).abs() < 0.05,
                "node {node}: {total} vs {published}"
            );
        }
    }

    #[test]
    fn smt_sibling_slows_compute() {
        let m = schedlab_topo::preset("genoa").unwrap();
        let alone = compute_speed(&m, 0, 0, 2);
        let shared = compute_speed(&m, 0, 1, 2);
        assert_eq!(alone, 1.0);
        assert!((shared - m.core_types[0].smt_thread_speed).abs() < 1e-12);
        let big = schedlab_topo::preset("exynos5422").unwrap();
        let little = compute_speed(&big, 0, 0, 1);
        let a15 = compute_speed(&big, 4, 0, 1);
        assert!((a15 / little - 1024.0 / 377.0).abs() < 1e-9);
        // SMT4 (POWER10's small core, 0.5 per thread with all four busy): the
        // core's throughput goes 1, 4/3, 5/3, 2 with 1-4 busy threads.
        let p10 = schedlab_topo::preset("power10").unwrap();
        let total = |busy: u32| compute_speed(&p10, 0, busy - 1, 4) * busy as f64;
        for (busy, want) in [(1, 1.0), (2, 4.0 / 3.0), (3, 5.0 / 3.0), (4, 2.0)] {
            assert!(
                (total(busy) - want).abs() < 1e-12,
                "{busy}: {}",
                total(busy)
            );
        }
    }

    #[test]
    fn cache_contention_is_proportional() {
        // Alone and fitting: nothing extra. Two 16 MiB sets in 24 MiB: each
        // keeps 12 MiB and misses 4 MiB more than alone.
        let mib = 1u64 << 20;
        assert_eq!(contention_miss_bytes(24 * mib, 16 * mib, 0), 0);
        assert_eq!(contention_miss_bytes(24 * mib, 8 * mib, 8 * mib), 0);
        assert_eq!(contention_miss_bytes(24 * mib, 16 * mib, 16 * mib), 4 * mib);
        // Already larger than the cache alone: only the lost share counts.
        assert_eq!(
            contention_miss_bytes(24 * mib, 48 * mib, 48 * mib),
            12 * mib
        );
    }

    #[test]
    fn refill_costs_follow_the_hierarchy() {
        let m = kunpeng();
        let cm = CacheModel::new(&m);
        let mib = 1u64 << 20;
        // Same die (L3 shared): only the private 512 KiB L2's share is lost,
        // refilled at ~17.5 us per MiB; other die: from memory.
        let (src, ns) = migration_refill(&m, &cm, 0, 5, mib, 0);
        assert!(matches!(src, RefillSource::Cache(_)));
        assert_eq!(
            ns,
            (mib as f64 / 2.0 / CACHE_REFILL_BYTES_PER_NS).ceil() as u64
        );
        let (src, far) = migration_refill(&m, &cm, 0, 30, mib, 0);
        assert_eq!(src, RefillSource::Memory);
        // hardware.md section 8: 70-100 us from DRAM at 10-15 GB/s (remote: slower).
        assert!((70_000..=130_000).contains(&far), "{far}");
        assert_eq!(migration_refill(&m, &cm, 0, 0, mib, 0).1, 0);
        // exynos5422: no cache shared between the clusters.
        let e = schedlab_topo::preset("exynos5422").unwrap();
        let ce = CacheModel::new(&e);
        assert_eq!(
            migration_refill(&e, &ce, 4, 0, mib, 0).0,
            RefillSource::Memory
        );
        assert!(matches!(
            migration_refill(&e, &ce, 4, 5, mib, 0).0,
            RefillSource::Cache(_)
        ));
        // alderlake: a move inside an E-cluster (shared L2) loses less than
        // one to the other E-cluster (shared L3 only), and the larger shared
        // cache serves a working set the nearer one cannot hold.
        let a = schedlab_topo::preset("alderlake").unwrap();
        let ca = CacheModel::new(&a);
        let inside = migration_refill(&a, &ca, 12, 13, 12 * mib, 0);
        let across = migration_refill(&a, &ca, 12, 16, 12 * mib, 0);
        assert!(inside.1 < across.1, "{inside:?} {across:?}");
        assert!(matches!(across.0, RefillSource::Cache(_)));
    }

    #[test]
    fn transfers_cost_by_distance() {
        let m = kunpeng();
        let same_cluster = transfer_ns(&m, 0, 1, 64, 64);
        let other_die = transfer_ns(&m, 0, 24, 64, 64);
        let other_socket = transfer_ns(&m, 0, 48, 64, 64);
        assert_eq!(same_cluster, 34);
        assert!(same_cluster < other_die && other_die < other_socket);
        assert_eq!(transfer_ns(&m, 0, 0, 4096, 64), 0);
        // 64 lines: 1 + 63/10 latencies.
        assert_eq!(
            transfer_ns(&m, 0, 1, 4096, 64),
            (34.0f64 * 7.3).ceil() as u64
        );
    }
}
