//! YCSB (the Yahoo! Cloud Serving Benchmark Java client) driving a
//! MongoDB-like key-value server over loopback sockets.
//!
//! What it models: the YCSB process's main thread starts `clients` client
//! threads (`-threads N`) and joins them; the operation count is split over
//! them as YCSB's `Client` does (`operationcount / threads`, the remainder to
//! the first threads). Each client thread issues its operations
//! synchronously on its own connection: build the request, send it, wait
//! for the reply, record the latency. The mix is workload A's 50% reads, 50%
//! updates (`read_pct`), in a fixed interleaving per client derived from a
//! hash of the client's index (not the run seed). The server runs one thread
//! per connection (mongod's thread-per-connection service model): a read
//! finds a 10-field record (1 KB) in the cache and returns it; an update
//! modifies one field and appends its journal record under the journal's
//! lock. A journal flusher thread writes the log every 100 ms
//! (`commitIntervalMs`) under the same lock. At the end each client thread
//! runs `cleanup()`: the YCSB MongoDB binding decrements a shared counter
//! and the last thread closes the client, i.e. every connection (the server
//! threads see the close and exit). Metrics as YCSB prints them: `[OVERALL]
//! Throughput(ops/sec)` (operations over the run time from the threads'
//! start to the last join) and `AverageLatency(us)` of `[READ]`, `[UPDATE]`
//! and `[CLEANUP]`.
//!
//! What it leaves out: the key distribution (zipfian keys, hot documents:
//! no document-level write conflicts), WiredTiger's internals (eviction,
//! checkpoints), the network stack beyond per-call CPU costs, JVM GC and JIT
//! of the client, the load phase. All costs are ESTIMATES (constants below),
//! in ns on a capacity-1024 CPU.

use crate::marks::{MarkFold, PerTask};
use crate::program::{Step, SyncObject, ThreadTemplate, WorkloadSpec, SOCKET_CAPACITY};
use crate::spec::{BuiltinSpec, SpecError};
use schedlab_topo::CpuMask;

/// Client work before sending an operation (key choice, value generation,
/// BSON encoding, driver, socket write), ns (ESTIMATE).
pub const CLIENT_PRE_NS: u64 = 15_000;
/// Client work after the reply (decoding, latency histogram), ns (ESTIMATE).
pub const CLIENT_POST_NS: u64 = 5_000;
/// Server work of a read: parse, find by `_id` in the cache, encode 1 KB, ns
/// (ESTIMATE).
pub const READ_NS: u64 = 25_000;
/// Server work of an update outside the journal lock, ns (ESTIMATE).
pub const UPDATE_NS: u64 = 30_000;
/// Journal record append under the journal lock, ns (ESTIMATE).
pub const JOURNAL_APPEND_NS: u64 = 2_000;
/// The journal flusher: period (MongoDB's `storage.journal.commitIntervalMs`
/// default, 100 ms), work under the lock (ESTIMATE), then the write's wait
/// (ESTIMATE: 1 ms of fsync).
pub const JOURNAL_PERIOD_NS: u64 = 100_000_000;
pub const JOURNAL_FLUSH_NS: u64 = 100_000;
pub const JOURNAL_SYNC_NS: u64 = 1_000_000;
/// Working set a server thread touches per operation (cache pages, BSON
/// buffers), bytes (ESTIMATE).
pub const SERVER_WSS_BYTES: u64 = 128 * 1024;
/// Message sizes, bytes: requests (`_id` lookup; one 100-byte field for an
/// update) and replies (a 10 × 100-byte record; an acknowledgement)
/// (ESTIMATE from workload A's fieldcount=10, fieldlength=100).
pub const READ_REQ_BYTES: u64 = 150;
pub const READ_RESP_BYTES: u64 = 1_200;
pub const UPDATE_REQ_BYTES: u64 = 250;
pub const UPDATE_RESP_BYTES: u64 = 80;
/// cleanup(): the shared counter's decrement, ns; the last thread's close of
/// each connection, ns per connection (ESTIMATE).
pub const CLEANUP_NS: u64 = 1_000;
pub const CLOSE_NS: u64 = 10_000;
/// Server thread's teardown of a closed connection, ns (ESTIMATE).
pub const SERVER_CLOSE_NS: u64 = 20_000;

/// Operations per interleaving block of a client (the block repeats).
const BLOCK: u32 = 20;

/// Mark tags: start/end of a read, of an update, of cleanup; run start/end.
pub const TAG_READ: u32 = 0;
pub const TAG_READ_END: u32 = 1;
pub const TAG_UPDATE: u32 = 2;
pub const TAG_UPDATE_END: u32 = 3;
pub const TAG_CLEANUP: u32 = 4;
pub const TAG_CLEANUP_END: u32 = 5;
pub const TAG_RUN: u32 = 6;
pub const TAG_RUN_END: u32 = 7;

/// Parameters of `ycsb:clients=N,...`.
#[derive(Clone, Debug, PartialEq)]
pub struct YcsbParams {
    pub clients: u32,
    /// `operationcount` (all threads together).
    pub operations: u32,
    /// Percentage of reads (the rest are updates).
    pub read_pct: u32,
}

/// Keys `ycsb:` accepts.
pub const KEYS: &[&str] = &["clients", "operations", "read_pct"];

impl YcsbParams {
    pub fn from_spec(s: &BuiltinSpec) -> Result<Self, SpecError> {
        s.check_keys(KEYS)?;
        let clients = s.get_u64("clients", 1, 1, 2_000)? as u32;
        Ok(YcsbParams {
            clients,
            operations: s.get_u64("operations", 100_000, clients as u64, 100_000_000)? as u32,
            read_pct: s.get_u64("read_pct", 50, 0, 100)? as u32,
        })
    }

    /// Operations of client `i` (YCSB: `opcount / threads`, remainder to the
    /// first threads).
    pub fn ops_of(&self, i: u32) -> u32 {
        self.operations / self.clients + u32::from(i < self.operations % self.clients)
    }

    /// Whether op `k` of a client's block is a read: exactly `read_pct`% of
    /// a block's slots (rounded), ordered by a fixed hash of (client, slot).
    fn block_pattern(&self, client: u32) -> Vec<bool> {
        let reads = ((BLOCK * self.read_pct + 50) / 100) as usize;
        let mut slots: Vec<(u64, u32)> = (0..BLOCK)
            .map(|k| (mix((client as u64) << 32 | k as u64), k))
            .collect();
        slots.sort_unstable();
        let mut pat = vec![false; BLOCK as usize];
        for &(_, k) in slots.iter().take(reads) {
            pat[k as usize] = true;
        }
        pat
    }
}

/// splitmix64's finaliser: a fixed, seed-independent scramble.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Client steps of one operation.
fn client_op(read: bool, req: u32, resp: u32) -> Vec<Step> {
    let (tag, req_b, resp_b) = if read {
        (TAG_READ, READ_REQ_BYTES, READ_RESP_BYTES)
    } else {
        (TAG_UPDATE, UPDATE_REQ_BYTES, UPDATE_RESP_BYTES)
    };
    vec![
        Step::Mark { tag },
        Step::Compute {
            work_ns: CLIENT_PRE_NS,
        },
        Step::Send {
            chan: req,
            bytes: req_b,
        },
        Step::Recv {
            chan: resp,
            bytes: resp_b,
        },
        Step::Compute {
            work_ns: CLIENT_POST_NS,
        },
        Step::Mark { tag: tag + 1 },
    ]
}

/// Server steps of one operation.
fn server_op(read: bool, req: u32, resp: u32, journal: u32) -> Vec<Step> {
    if read {
        vec![
            Step::Recv {
                chan: req,
                bytes: READ_REQ_BYTES,
            },
            Step::Work {
                work_ns: READ_NS,
                working_set_bytes: SERVER_WSS_BYTES,
            },
            Step::Send {
                chan: resp,
                bytes: READ_RESP_BYTES,
            },
        ]
    } else {
        vec![
            Step::Recv {
                chan: req,
                bytes: UPDATE_REQ_BYTES,
            },
            Step::Work {
                work_ns: UPDATE_NS,
                working_set_bytes: SERVER_WSS_BYTES,
            },
            Step::Lock { mutex: journal },
            Step::Compute {
                work_ns: JOURNAL_APPEND_NS,
            },
            Step::Unlock { mutex: journal },
            Step::Send {
                chan: resp,
                bytes: UPDATE_RESP_BYTES,
            },
        ]
    }
}

/// Appends `ops` operations following `pat` (a block loop plus the rest).
fn ops_steps(ops: u32, pat: &[bool], one: &dyn Fn(bool) -> Vec<Step>, s: &mut Vec<Step>) {
    let blocks = ops / BLOCK;
    if blocks > 0 {
        let start = s.len() as u32;
        for &r in pat {
            s.extend(one(r));
        }
        s.push(Step::Loop {
            start,
            count: blocks,
            slot: 0,
        });
    }
    for &r in pat.iter().take((ops % BLOCK) as usize) {
        s.extend(one(r));
    }
}

/// Builds the threads: template 0 is YCSB's main thread, 1..=N its client
/// threads, then mongod's launcher, its N connection threads and the journal
/// flusher.
pub fn build(p: &YcsbParams, affinity: Option<CpuMask>) -> WorkloadSpec {
    let n = p.clients;
    let tpl = |name: String, steps: Vec<Step>| ThreadTemplate {
        name,
        nice: 0,
        idle_policy: false,
        affinity,
        steps,
    };
    let mut sync = Vec::new();
    let chans: Vec<(u32, u32)> = (0..n)
        .map(|i| (2 * i, 2 * i + 1))
        .inspect(|_| {
            sync.push(SyncObject::Channel {
                capacity: SOCKET_CAPACITY,
            });
            sync.push(SyncObject::Channel {
                capacity: SOCKET_CAPACITY,
            });
        })
        .collect();
    let journal = sync.len() as u32;
    sync.push(SyncObject::Mutex);
    let done = sync.len() as u32;
    sync.push(SyncObject::Semaphore { initial: 0 });
    let init_count = sync.len() as u32;
    sync.push(SyncObject::Counter);
    let stop_flag = sync.len() as u32;
    sync.push(SyncObject::Counter);

    let mut templates = Vec::new();
    // YCSB main: start the clients, join them.
    let mut main = vec![Step::Mark { tag: TAG_RUN }];
    main.extend((0..n).map(|i| Step::Spawn { template: 1 + i }));
    main.extend([
        Step::SemWait { sem: done },
        Step::Loop {
            start: n + 1,
            count: n,
            slot: 0,
        },
        Step::Mark { tag: TAG_RUN_END },
        Step::Exit,
    ]);
    templates.push(tpl("ycsb-main".into(), main));
    for i in 0..n {
        let (req, resp) = chans[i as usize];
        let pat = p.block_pattern(i);
        let mut s = Vec::new();
        ops_steps(p.ops_of(i), &pat, &|r| client_op(r, req, resp), &mut s);
        // cleanup(): the last thread to decrement closes every connection.
        s.push(Step::Mark { tag: TAG_CLEANUP });
        s.push(Step::Compute {
            work_ns: CLEANUP_NS,
        });
        let close_at = s.len() as u32 + 2;
        s.push(Step::Grab {
            counter: init_count,
            limit: n - 1,
            exit_to: close_at,
        });
        let after_close = close_at + 4;
        // Not the last: skip the close (a Grab with limit 0 never takes a
        // ticket and always jumps).
        s.push(Step::Grab {
            counter: init_count,
            limit: 0,
            exit_to: after_close,
        });
        debug_assert_eq!(s.len() as u32, close_at);
        // Close every connection in turn: the request channels are every
        // other object from 0 (loop slot 1 picks the connection).
        s.push(Step::Compute { work_ns: CLOSE_NS });
        s.push(Step::SendNext {
            first: chans[0].0,
            stride: 2,
            slot: 1,
            bytes: 1,
        });
        s.push(Step::Loop {
            start: close_at,
            count: n,
            slot: 1,
        });
        // Stop the journal flusher (it exits when it finds the flag taken).
        s.push(Step::Grab {
            counter: stop_flag,
            limit: 1,
            exit_to: after_close,
        });
        debug_assert_eq!(s.len() as u32, after_close);
        s.push(Step::Mark {
            tag: TAG_CLEANUP_END,
        });
        s.push(Step::SemPost { sem: done });
        s.push(Step::Exit);
        templates.push(tpl(format!("ycsb-client-{i}"), s));
    }
    // mongod: one thread per connection plus the journal flusher.
    let first = templates.len() as u32 + 1;
    let mut launcher = vec![Step::NewProcess];
    launcher.extend((0..=n).map(|k| Step::Spawn {
        template: first + k,
    }));
    launcher.push(Step::Exit);
    templates.push(tpl("mongod".into(), launcher));
    for i in 0..n {
        let (req, resp) = chans[i as usize];
        let pat = p.block_pattern(i);
        let mut s = Vec::new();
        ops_steps(
            p.ops_of(i),
            &pat,
            &|r| server_op(r, req, resp, journal),
            &mut s,
        );
        s.extend([
            Step::Recv {
                chan: req,
                bytes: 1,
            },
            Step::Compute {
                work_ns: SERVER_CLOSE_NS,
            },
            Step::Exit,
        ]);
        templates.push(tpl(format!("conn{}", i + 1), s));
    }
    templates.push(tpl(
        "journal-flusher".into(),
        vec![
            Step::Timer {
                id: 0,
                period_ns: JOURNAL_PERIOD_NS,
                absolute: false,
            },
            // Exit once the closer has taken the flag; otherwise take and
            // give it back at once (no step runs in between).
            Step::Grab {
                counter: stop_flag,
                limit: 1,
                exit_to: 8,
            },
            Step::ResetCounter { counter: stop_flag },
            Step::Lock { mutex: journal },
            Step::Compute {
                work_ns: JOURNAL_FLUSH_NS,
            },
            Step::Unlock { mutex: journal },
            Step::Sleep {
                ns: JOURNAL_SYNC_NS,
            },
            Step::Loop {
                start: 0,
                count: u32::MAX,
                slot: 0,
            },
            Step::Exit,
        ],
    ));
    WorkloadSpec {
        name: format!(
            "ycsb:clients={},operations={},read_pct={}",
            p.clients, p.operations, p.read_pct
        ),
        templates,
        initial: vec![0, 1 + n],
        sync,
        mem_node: None,
        max_time_ns: 3_600_000_000_000,
    }
}

/// YCSB's figures: run time, throughput, and per operation type the count
/// and average latency (µs).
#[derive(Clone, Debug, PartialEq)]
pub struct YcsbResult {
    pub runtime_ms: f64,
    pub ops_per_s: f64,
    /// (name, operations, average µs, min µs, max µs) for READ, UPDATE, CLEANUP.
    pub ops: Vec<(&'static str, u64, f64, f64, f64)>,
}

/// From marks `(task, tag, time)`.
pub fn result(p: &YcsbParams, marks: &[(u32, u32, u64)]) -> Option<YcsbResult> {
    Recorder::new(p).fold(marks).result()
}

/// [`result`] one mark at a time, as the run makes them: memory bounded by
/// the number of clients, however many operations.
#[derive(Clone, Debug)]
pub struct Recorder {
    operations: u64,
    clients: u64,
    /// The first run start and end marks.
    run_ns: Option<u64>,
    run_end_ns: Option<u64>,
    /// Per task: when its open operation started.
    open: PerTask,
    /// Per operation kind (read, update, cleanup): count, sum, min, max (ns).
    stats: [(u64, u64, u64, u64); 3],
}

impl Recorder {
    pub fn new(p: &YcsbParams) -> Recorder {
        Recorder {
            operations: p.operations as u64,
            clients: p.clients as u64,
            run_ns: None,
            run_end_ns: None,
            open: PerTask::default(),
            stats: [(0, 0, u64::MAX, 0); 3],
        }
    }

    /// The run's figures (`None` unless every operation and cleanup finished).
    pub fn result(&self) -> Option<YcsbResult> {
        let run = self.run_end_ns?.checked_sub(self.run_ns?)?;
        let stats = self.stats;
        let done = stats[0].0 + stats[1].0;
        if done != self.operations || stats[2].0 != self.clients {
            return None;
        }
        let row = |name, e: (u64, u64, u64, u64)| {
            let avg = if e.0 > 0 {
                e.1 as f64 / e.0 as f64 / 1e3
            } else {
                0.0
            };
            let min = if e.0 > 0 { e.2 as f64 / 1e3 } else { 0.0 };
            (name, e.0, avg, min, e.3 as f64 / 1e3)
        };
        Some(YcsbResult {
            runtime_ms: run as f64 / 1e6,
            ops_per_s: done as f64 / (run as f64 * 1e-9),
            ops: vec![
                row("READ", stats[0]),
                row("UPDATE", stats[1]),
                row("CLEANUP", stats[2]),
            ],
        })
    }
}

impl MarkFold for Recorder {
    /// One client mark.
    fn mark(&mut self, t: u32, tag: u32, time: u64) {
        match tag {
            TAG_RUN => {
                self.run_ns.get_or_insert(time);
            }
            TAG_RUN_END => {
                self.run_end_ns.get_or_insert(time);
            }
            TAG_READ | TAG_UPDATE | TAG_CLEANUP => self.open.set(t, time),
            TAG_READ_END | TAG_UPDATE_END | TAG_CLEANUP_END => {
                let Some(s) = self.open.take(t) else {
                    return;
                };
                let k = ((tag - 1) / 2) as usize;
                let d = time - s;
                let e = &mut self.stats[k];
                e.0 += 1;
                e.1 += d;
                e.2 = e.2.min(d);
                e.3 = e.3.max(d);
            }
            _ => {}
        }
    }
}

/// YCSB's text output (`[OVERALL], RunTime(ms), ...`).
pub fn report(r: Option<&YcsbResult>) -> String {
    let Some(r) = r else {
        return "(incomplete run: not every operation finished)\n".into();
    };
    let mut s = format!(
        "[OVERALL], RunTime(ms), {:.0}\n[OVERALL], Throughput(ops/sec), {:.1}\n",
        r.runtime_ms, r.ops_per_s
    );
    for &(name, n, avg, min, max) in &r.ops {
        if n == 0 {
            continue;
        }
        s.push_str(&format!(
            "[{name}], Operations, {n}\n[{name}], AverageLatency(us), {avg:.3}\n[{name}], MinLatency(us), {min:.0}\n[{name}], MaxLatency(us), {max:.0}\n"
        ));
        if name != "CLEANUP" {
            s.push_str(&format!("[{name}], Return=OK, {n}\n"));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::parse_spec;

    #[test]
    fn split_and_mix() {
        let p =
            YcsbParams::from_spec(&parse_spec("ycsb:clients=3,operations=100").unwrap()).unwrap();
        assert_eq!((p.ops_of(0), p.ops_of(1), p.ops_of(2)), (34, 33, 33));
        let pat = p.block_pattern(1);
        assert_eq!(pat.iter().filter(|&&r| r).count(), 10);
        assert_ne!(p.block_pattern(0), p.block_pattern(1));
        assert!(YcsbParams::from_spec(&parse_spec("ycsb:threads=3").unwrap()).is_err());
        let spec = build(&p, None);
        // main + 3 clients + mongod + 3 connections + journal flusher.
        assert_eq!(spec.templates.len(), 9);
    }

    #[test]
    fn result_and_report() {
        let p = YcsbParams {
            clients: 1,
            operations: 2,
            read_pct: 50,
        };
        let marks = vec![
            (0, TAG_RUN, 0),
            (1, TAG_READ, 1_000),
            (1, TAG_READ_END, 101_000),
            (1, TAG_UPDATE, 101_000),
            (1, TAG_UPDATE_END, 301_000),
            (1, TAG_CLEANUP, 301_000),
            (1, TAG_CLEANUP_END, 305_000),
            (0, TAG_RUN_END, 1_000_000),
        ];
        let r = result(&p, &marks).unwrap();
        assert!((r.ops_per_s - 2000.0).abs() < 1e-6);
        let s = report(Some(&r));
        assert!(s.contains("[READ], AverageLatency(us), 100.000"), "{s}");
        assert!(s.contains("[UPDATE], AverageLatency(us), 200.000"), "{s}");
        assert!(s.contains("[CLEANUP], AverageLatency(us), 4.000"), "{s}");
        assert!(s.starts_with("[OVERALL], RunTime(ms), 1\n"), "{s}");
    }
}
