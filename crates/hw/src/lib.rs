//! Hardware performance model: how fast a running thread makes progress.
//!
//! Given where threads run, this crate answers "at what rate does each one
//! progress": compute speed from CPU capacity and SMT sharing, and memory
//! bandwidth from max-min fair sharing of every limit a stream crosses (its
//! core, its cluster link, its node's memory controllers). It is calibrated only
//! against hardware facts (shared/reference/hardware.md), which live in the
//! machine files. It knows nothing about scheduling: the engine tells it which
//! CPUs are busy with what.

use schedlab_topo::{CpuId, Machine};

/// One memory stream: a running thread on `cpu` streaming from `mem_node`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flow {
    pub cpu: CpuId,
    pub mem_node: u32,
}

/// Memory-bandwidth model of a machine.
///
/// Limits: each physical core (its core type's single-stream bandwidth, shared
/// by SMT siblings), each shared link (cluster bus) and each node's memory.
/// A node's memory behaves as a closed queue: with `n` concurrent streams it
/// delivers `peak · n / (n + k)` (Little's law with latency growing under load),
/// which reproduces the measured concave scaling of node bandwidth. A stream to
/// a remote node is latency-bound: its core limit shrinks by `10 / distance`.
#[derive(Clone, Debug)]
pub struct MemModel {
    /// Per CPU: (core index, core limit bytes/ns, links containing the CPU).
    cpu_core: Vec<u32>,
    cpu_core_bw: Vec<f64>,
    cpu_links: Vec<Vec<u32>>,
    cpu_node: Vec<u32>,
    link_bw: Vec<f64>,
    node_peak: Vec<f64>,
    node_k: Vec<f64>,
    distance: Vec<Vec<u32>>,
    n_cores: usize,
    // Scratch buffers reused across calls (no allocation per event).
    cap: Vec<f64>,
    members: Vec<Vec<u32>>,
    frozen: Vec<bool>,
}

const NS_PER_S: f64 = 1e9;

impl MemModel {
    pub fn new(m: &Machine) -> Self {
        let n_cores = m
            .cpus
            .iter()
            .map(|c| c.core as usize + 1)
            .max()
            .unwrap_or(0);
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
        let max_node = m.nodes.iter().map(|n| n.id as usize + 1).max().unwrap_or(1);
        let mut node_peak = vec![f64::INFINITY; max_node];
        let mut node_k = vec![0.0; max_node];
        for n in &m.nodes {
            node_peak[n.id as usize] = n.mem_bw_peak_bytes_per_s / NS_PER_S;
            node_k[n.id as usize] = n.mem_half_concurrency.max(0.0);
        }
        MemModel {
            cpu_core: m.cpus.iter().map(|c| c.core).collect(),
            cpu_core_bw: m
                .cpus
                .iter()
                .map(|c| m.core_types[c.core_type as usize].core_bw_bytes_per_s / NS_PER_S)
                .collect(),
            cpu_links,
            cpu_node: m.cpus.iter().map(|c| c.node).collect(),
            link_bw: m
                .links
                .iter()
                .map(|l| l.bw_bytes_per_s / NS_PER_S)
                .collect(),
            node_peak,
            node_k,
            distance: m.distance.clone(),
            n_cores,
            cap: Vec::new(),
            members: Vec::new(),
            frozen: Vec::new(),
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

    /// Max-min fair bandwidth for each flow, in bytes/ns, written to `out`
    /// (progressive filling: raise every unfrozen flow equally until a limit
    /// saturates, freeze the flows crossing it, repeat).
    pub fn share(&mut self, flows: &[Flow], out: &mut Vec<f64>) {
        out.clear();
        out.resize(flows.len(), 0.0);
        if flows.is_empty() {
            return;
        }
        // Constraint layout: [cores | links | nodes | per-flow remote caps].
        let n_links = self.link_bw.len();
        let n_nodes = self.node_peak.len();
        let base_link = self.n_cores;
        let base_node = base_link + n_links;
        let base_flow = base_node + n_nodes;
        let n_cons = base_flow + flows.len();
        self.cap.clear();
        self.cap.resize(n_cons, f64::INFINITY);
        if self.members.len() < n_cons {
            self.members.resize_with(n_cons, Vec::new);
        }
        for m in self.members.iter_mut() {
            m.clear();
        }
        for (i, f) in flows.iter().enumerate() {
            let c = f.cpu as usize;
            let core = self.cpu_core[c] as usize;
            self.cap[core] = self.cpu_core_bw[c];
            self.members[core].push(i as u32);
            for &l in &self.cpu_links[c] {
                self.cap[base_link + l as usize] = self.link_bw[l as usize];
                self.members[base_link + l as usize].push(i as u32);
            }
            let mn = f.mem_node as usize;
            if mn < n_nodes {
                self.members[base_node + mn].push(i as u32);
            }
            let home = self.cpu_node[c] as usize;
            if mn != home {
                let d = self
                    .distance
                    .get(home)
                    .and_then(|r| r.get(mn))
                    .copied()
                    .unwrap_or(10)
                    .max(10);
                self.cap[base_flow + i] = self.cpu_core_bw[c] * 10.0 / d as f64;
                self.members[base_flow + i].push(i as u32);
            }
        }
        for node in 0..n_nodes {
            let n = self.members[base_node + node].len();
            if n > 0 {
                self.cap[base_node + node] = self.node_capacity(node as u32, n);
            }
        }
        self.frozen.clear();
        self.frozen.resize(flows.len(), false);
        let mut remaining = flows.len();
        // Each round freezes at least one flow: at most `flows.len()` rounds.
        while remaining > 0 {
            let mut inc = f64::INFINITY;
            for (ci, mem) in self.members.iter().enumerate().take(n_cons) {
                let active = mem.iter().filter(|&&f| !self.frozen[f as usize]).count();
                if active > 0 {
                    let used: f64 = mem.iter().map(|&f| out[f as usize]).sum();
                    inc = inc.min((self.cap[ci] - used).max(0.0) / active as f64);
                }
            }
            if !inc.is_finite() {
                break;
            }
            for (f, o) in out.iter_mut().enumerate() {
                if !self.frozen[f] {
                    *o += inc;
                }
            }
            for (ci, mem) in self.members.iter().enumerate().take(n_cons) {
                if mem.is_empty() {
                    continue;
                }
                let used: f64 = mem.iter().map(|&f| out[f as usize]).sum();
                if used >= self.cap[ci] * (1.0 - 1e-12) {
                    for &f in mem {
                        if !self.frozen[f as usize] {
                            self.frozen[f as usize] = true;
                            remaining -= 1;
                        }
                    }
                }
            }
        }
    }
}

/// Compute speed of a thread on `cpu`: work-ns per ns. Capacity scales it
/// (capacity is already frequency-invariant at the highest frequency); a busy
/// SMT sibling lowers it by the core type's per-thread SMT factor.
pub fn compute_speed(m: &Machine, cpu: CpuId, sibling_busy: bool) -> f64 {
    let c = &m.cpus[cpu as usize];
    let base = c.capacity as f64 / 1024.0;
    if sibling_busy {
        base * m.core_types[c.core_type as usize].smt_thread_speed
    } else {
        base
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
                idle_exit_ns: 1000,
                wakeup_path_ns: 1000,
            },
        }
    }

    fn f(cpu: CpuId) -> Flow {
        Flow { cpu, mem_node: 0 }
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
        assert!((out[0] - 5.0).abs() < 1e-9);
    }
}
