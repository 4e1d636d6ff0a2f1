//! DayTrader (a Java EE stock-trading web application) on J JVMs, driven by
//! JMeter users (`daytrader7.jmx`), with a DB2-like database.
//!
//! What it models, per request: a user (JMeter thread) sends an HTTP request
//! over its keep-alive connection and waits for the page; a web-container
//! thread of the user's JVM reads it, runs the servlet/EJB code, makes
//! `db_calls` JDBC round trips to its database agent (DB2 runs one agent
//! thread per connection, in the database process), renders the page and
//! writes it back. Users are spread evenly over the JVMs (JMeter instance per
//! JVM, `users` in total). Each JVM also has GC helper threads that run a
//! parallel nursery collection every `gc_period_ms` (J9 gencon's scavenger:
//! as many helpers as CPUs by default) and a JIT compilation thread with
//! periodic work. Every send wakes the blocked reader with WF_SYNC
//! (tcp_data_ready → sock_def_readable), so a request is a chain of four
//! synchronous wakeups: user → web thread → agent → web thread (× db_calls)
//! → user.
//!
//! The users stand for JMeter on a separate client machine: they cost only
//! the server-side network processing of a request and its response
//! ([`NET_NS`]), their wakeups stand for the network receive path that
//! wakes the web thread, and they wait the wire's round trip
//! ([`NET_RTT_NS`]) per request.
//!
//! What it leaves out: JMeter's own CPU time; a real thread pool (here a web
//! thread and a DB agent per connection, which is what the pool converges to
//! with `users` keep-alive connections and zero think time, but a real pool
//! hands a queued request to whichever thread is free); GC's stop-the-world
//! pause (helpers run beside the mutators, they do not stop them); lock
//! contention inside the application and the database; disk I/O (the
//! database fits in the buffer pool). All costs are ESTIMATES (constants
//! below), in ns on a capacity-1024 CPU.

use crate::marks::{MarkFold, PerTask};
use crate::program::{Step, SyncObject, ThreadTemplate, WorkloadSpec, SOCKET_CAPACITY};
use crate::spec::{BuiltinSpec, SpecError};
use schedlab_topo::CpuMask;

/// Server-side network processing of one request and of its response (TCP
/// receive softirq and send path), charged to the user stand-in, ns
/// (ESTIMATE: ~10 µs each way for a small HTTP exchange).
pub const NET_NS: u64 = 10_000;
/// Wire round trip between the JMeter machine and the server, ns (ESTIMATE:
/// a 10 GbE LAN through one switch, with NIC interrupt moderation, ~50 µs);
/// half before the request reaches the server, half after the response
/// leaves it, inside JMeter's response time.
pub const NET_RTT_NS: u64 = 50_000;
/// Web-container work before the first JDBC call (HTTP parsing, servlet,
/// session, EJB logic), ns (ESTIMATE: DayTrader serves roughly 1000-2000
/// requests/s per core, ~0.5-1 ms of CPU per request in total).
pub const APP_PRE_NS: u64 = 300_000;
/// Web-container work after the last JDBC call (JSP rendering of the page), ns
/// (ESTIMATE).
pub const APP_POST_NS: u64 = 300_000;
/// JDBC driver cost per call in the web thread (statement set-up, socket
/// send/receive, result decoding), ns (ESTIMATE).
pub const JDBC_NS: u64 = 20_000;
/// DB2 agent work per SQL call (single-row indexed queries and updates from
/// the buffer pool), ns (ESTIMATE).
pub const DB_NS: u64 = 60_000;
/// Working set touched by a web-container thread per request (JIT-compiled
/// code paths, session and request objects), bytes (ESTIMATE).
pub const APP_WSS_BYTES: u64 = 512 * 1024;
/// Working set of a DB agent per call (agent heap, buffer-pool pages), bytes
/// (ESTIMATE).
pub const DB_WSS_BYTES: u64 = 256 * 1024;
/// HTTP request size, bytes (ESTIMATE: a GET with cookies).
pub const HTTP_REQ_BYTES: u64 = 600;
/// HTTP response size, bytes (ESTIMATE: a DayTrader page of ~8 KB).
pub const HTTP_RESP_BYTES: u64 = 8 * 1024;
/// JDBC request / result sizes, bytes (ESTIMATE).
pub const SQL_REQ_BYTES: u64 = 300;
pub const SQL_RESP_BYTES: u64 = 1024;
/// CPU work of one nursery collection, summed over its helpers, ns
/// (ESTIMATE: ~20 ms of CPU to copy the survivors of a few hundred MB of
/// nursery).
pub const GC_WORK_NS: u64 = 20_000_000;
/// Working set of a GC helper (its share of the nursery's survivors), bytes
/// (ESTIMATE).
pub const GC_WSS_BYTES: u64 = 1024 * 1024;
/// JIT compiler thread: one compilation of this much work every period
/// (ESTIMATE: steady state after warm-up, little left to compile).
pub const JIT_WORK_NS: u64 = 2_000_000;
pub const JIT_PERIOD_NS: u64 = 100_000_000;

/// Mark tags of the user threads.
pub const TAG_SENT: u32 = 0;
pub const TAG_DONE: u32 = 1;

/// Parameters of `daytrader:jvms=J,users=U,...`.
#[derive(Clone, Debug, PartialEq)]
pub struct DaytraderParams {
    pub jvms: u32,
    /// JMeter users in total, spread evenly over the JVMs.
    pub users: u32,
    /// JMeter's MAXTHINKTIME: user i waits a fixed share of it between requests
    /// (uniform over the users, mean half of it); 0 = the script's default.
    pub think_ms: u32,
    /// JDBC round trips per request.
    pub db_calls: u32,
    /// GC helper threads per JVM; 0 = one per CPU (J9's default), resolved by
    /// [`DaytraderParams::resolve`].
    pub gc_threads: u32,
    pub gc_period_ms: u32,
    /// Measured interval after the warm-up, ms.
    pub runtime_ms: u32,
    pub warmup_ms: u32,
}

/// Keys `daytrader:` accepts.
pub const KEYS: &[&str] = &[
    "jvms",
    "users",
    "think_ms",
    "db_calls",
    "gc_threads",
    "gc_period_ms",
    "runtime_ms",
    "warmup_ms",
];

impl DaytraderParams {
    pub fn from_spec(s: &BuiltinSpec) -> Result<Self, SpecError> {
        s.check_keys(KEYS)?;
        let jvms = s.get_u64("jvms", 1, 1, 64)? as u32;
        let p = DaytraderParams {
            jvms,
            users: s.get_u64("users", 60, jvms as u64, 10_000)? as u32,
            think_ms: s.get_u64("think_ms", 0, 0, 60_000)? as u32,
            db_calls: s.get_u64("db_calls", 3, 0, 100)? as u32,
            gc_threads: s.get_u64("gc_threads", 0, 0, 512)? as u32,
            gc_period_ms: s.get_u64("gc_period_ms", 200, 1, 60_000)? as u32,
            runtime_ms: s.get_u64("runtime_ms", 2_000, 1, 3_600_000)? as u32,
            warmup_ms: s.get_u64("warmup_ms", 500, 0, 3_600_000)? as u32,
        };
        Ok(p)
    }

    /// Fills `gc_threads = 0` with the machine's CPU count.
    pub fn resolve(&mut self, nr_cpus: usize) {
        if self.gc_threads == 0 {
            self.gc_threads = (nr_cpus as u32).max(1);
        }
    }

    /// Users of JVM `j` (round-robin).
    pub fn users_of(&self, j: u32) -> u32 {
        self.users / self.jvms + u32::from(j < self.users % self.jvms)
    }
}

/// Builds the threads. Template order: users (0..users), then per JVM its
/// launcher, web threads, GC helpers and JIT thread, then the database
/// launcher and its agents.
pub fn build(p: &DaytraderParams, affinity: Option<CpuMask>) -> WorkloadSpec {
    let mut p = p.clone();
    p.resolve(1);
    let mut templates = Vec::new();
    let mut sync = Vec::new();
    let chan = |sync: &mut Vec<SyncObject>| {
        sync.push(SyncObject::Channel {
            capacity: SOCKET_CAPACITY,
        });
        sync.len() as u32 - 1
    };
    let tpl = |name: String, steps: Vec<Step>| ThreadTemplate {
        name,
        nice: 0,
        idle_policy: false,
        affinity,
        steps,
    };
    // Per user: its JVM, HTTP request/response channels, JDBC channels.
    struct Conn {
        jvm: u32,
        http_req: u32,
        http_resp: u32,
        sql_req: u32,
        sql_resp: u32,
    }
    let mut conns = Vec::new();
    for u in 0..p.users {
        conns.push(Conn {
            jvm: u % p.jvms,
            http_req: chan(&mut sync),
            http_resp: chan(&mut sync),
            sql_req: chan(&mut sync),
            sql_resp: chan(&mut sync),
        });
    }
    // Users: think, send, wait for the page.
    for (u, c) in conns.iter().enumerate() {
        let think_ns =
            p.think_ms as u64 * 1_000_000 * (2 * u as u64 + 1) / (2 * p.users as u64).max(1);
        let mut s = Vec::new();
        if think_ns > 0 {
            s.push(Step::Sleep { ns: think_ns });
        }
        s.extend([
            Step::Mark { tag: TAG_SENT },
            Step::Sleep { ns: NET_RTT_NS / 2 },
            Step::Compute { work_ns: NET_NS },
            Step::Send {
                chan: c.http_req,
                bytes: HTTP_REQ_BYTES,
            },
            Step::Recv {
                chan: c.http_resp,
                bytes: HTTP_RESP_BYTES,
            },
            Step::Compute { work_ns: NET_NS },
            Step::Sleep { ns: NET_RTT_NS / 2 },
            Step::Mark { tag: TAG_DONE },
            Step::Loop {
                start: 0,
                count: u32::MAX,
                slot: 0,
            },
        ]);
        templates.push(tpl(format!("jmeter-{u}"), s));
    }
    let mut initial: Vec<u32> = (0..p.users).collect();
    // JVMs.
    for j in 0..p.jvms {
        let first = templates.len() as u32 + 1;
        let mut children = Vec::new();
        for (u, c) in conns.iter().enumerate().filter(|(_, c)| c.jvm == j) {
            let mut s = vec![
                Step::Recv {
                    chan: c.http_req,
                    bytes: HTTP_REQ_BYTES,
                },
                Step::Work {
                    work_ns: APP_PRE_NS,
                    working_set_bytes: APP_WSS_BYTES,
                },
            ];
            if p.db_calls > 0 {
                let start = s.len() as u32;
                s.extend([
                    Step::Compute { work_ns: JDBC_NS },
                    Step::Send {
                        chan: c.sql_req,
                        bytes: SQL_REQ_BYTES,
                    },
                    Step::Recv {
                        chan: c.sql_resp,
                        bytes: SQL_RESP_BYTES,
                    },
                    Step::Loop {
                        start,
                        count: p.db_calls,
                        slot: 1,
                    },
                ]);
            }
            s.extend([
                Step::Work {
                    work_ns: APP_POST_NS,
                    working_set_bytes: APP_WSS_BYTES,
                },
                Step::Send {
                    chan: c.http_resp,
                    bytes: HTTP_RESP_BYTES,
                },
                Step::Loop {
                    start: 0,
                    count: u32::MAX,
                    slot: 0,
                },
            ]);
            children.push(tpl(format!("jvm{j}-WebContainer-{u}"), s));
        }
        let barrier = sync.len() as u32;
        sync.push(SyncObject::Barrier {
            parties: p.gc_threads,
        });
        let gc_share = GC_WORK_NS / p.gc_threads as u64;
        for g in 0..p.gc_threads {
            children.push(tpl(
                format!("jvm{j}-GC-Worker-{g}"),
                vec![
                    Step::Timer {
                        id: 0,
                        period_ns: p.gc_period_ms as u64 * 1_000_000,
                        absolute: false,
                    },
                    Step::Work {
                        work_ns: gc_share,
                        working_set_bytes: GC_WSS_BYTES,
                    },
                    Step::Barrier {
                        id: barrier,
                        spin_ns: 0,
                    },
                    Step::Loop {
                        start: 0,
                        count: u32::MAX,
                        slot: 0,
                    },
                ],
            ));
        }
        children.push(tpl(
            format!("jvm{j}-JIT-Compilation"),
            vec![
                Step::Timer {
                    id: 0,
                    period_ns: JIT_PERIOD_NS,
                    absolute: false,
                },
                Step::Compute {
                    work_ns: JIT_WORK_NS,
                },
                Step::Loop {
                    start: 0,
                    count: u32::MAX,
                    slot: 0,
                },
            ],
        ));
        let mut main = vec![Step::NewProcess];
        main.extend((0..children.len() as u32).map(|i| Step::Spawn {
            template: first + i,
        }));
        main.push(Step::Exit);
        initial.push(templates.len() as u32);
        templates.push(tpl(format!("java-{j}"), main));
        templates.extend(children);
    }
    // The database: one agent per connection.
    let first = templates.len() as u32 + 1;
    let mut main = vec![Step::NewProcess];
    main.extend((0..p.users).map(|i| Step::Spawn {
        template: first + i,
    }));
    main.push(Step::Exit);
    initial.push(templates.len() as u32);
    templates.push(tpl("db2sysc".into(), main));
    for (u, c) in conns.iter().enumerate() {
        templates.push(tpl(
            format!("db2agent-{u}"),
            vec![
                Step::Recv {
                    chan: c.sql_req,
                    bytes: SQL_REQ_BYTES,
                },
                Step::Work {
                    work_ns: DB_NS,
                    working_set_bytes: DB_WSS_BYTES,
                },
                Step::Send {
                    chan: c.sql_resp,
                    bytes: SQL_RESP_BYTES,
                },
                Step::Loop {
                    start: 0,
                    count: u32::MAX,
                    slot: 0,
                },
            ],
        ));
    }
    WorkloadSpec {
        name: format!(
            "daytrader:jvms={},users={},think_ms={},db_calls={},gc_threads={}",
            p.jvms, p.users, p.think_ms, p.db_calls, p.gc_threads
        ),
        templates,
        initial,
        sync,
        mem_node: None,
        max_time_ns: (p.warmup_ms as u64 + p.runtime_ms as u64) * 1_000_000,
    }
}

/// JMeter's summary over the measured interval: (requests, seconds,
/// requests/s, average / min / max response time in ms). `marks` are
/// `(task, tag, time)`; a request counts when its response arrived inside the
/// interval.
pub fn summary(p: &DaytraderParams, marks: &[(u32, u32, u64)]) -> Option<Summary> {
    Summariser::new(p).fold(marks).summary()
}

/// [`summary`] one mark at a time, as the run makes them: memory bounded by
/// the number of users, however long the run.
#[derive(Clone, Debug)]
pub struct Summariser {
    from_ns: u64,
    to_ns: u64,
    /// Last send per task, so each completion pairs with its own request.
    sent: PerTask,
    n: u64,
    sum_ns: u64,
    min_ns: u64,
    max_ns: u64,
}

impl Summariser {
    pub fn new(p: &DaytraderParams) -> Summariser {
        let from_ns = p.warmup_ms as u64 * 1_000_000;
        Summariser {
            from_ns,
            to_ns: from_ns + p.runtime_ms as u64 * 1_000_000,
            sent: PerTask::default(),
            n: 0,
            sum_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
        }
    }

    /// The summariser's figures so far (`None` before any request completed).
    pub fn summary(&self) -> Option<Summary> {
        if self.n == 0 {
            return None;
        }
        let secs = (self.to_ns - self.from_ns) as f64 * 1e-9;
        Some(Summary {
            requests: self.n,
            secs,
            tput: self.n as f64 / secs,
            avg_ms: self.sum_ns as f64 / self.n as f64 / 1e6,
            min_ms: self.min_ns as f64 / 1e6,
            max_ms: self.max_ns as f64 / 1e6,
        })
    }
}

impl MarkFold for Summariser {
    /// One user mark.
    fn mark(&mut self, t: u32, tag: u32, at: u64) {
        match tag {
            TAG_SENT => self.sent.set(t, at),
            TAG_DONE if at >= self.from_ns && at <= self.to_ns => {
                if let Some(s) = self.sent.get(t) {
                    let rt = at - s;
                    self.n += 1;
                    self.sum_ns += rt;
                    self.min_ns = self.min_ns.min(rt);
                    self.max_ns = self.max_ns.max(rt);
                }
            }
            _ => {}
        }
    }
}

/// JMeter's summariser figures.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub requests: u64,
    pub secs: f64,
    pub tput: f64,
    pub avg_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
}

/// JMeter's non-GUI summariser line (`summary = N in hh:mm:ss = X/s Avg: ...`).
pub fn report(p: &DaytraderParams, s: Option<&Summary>) -> String {
    let mut out = format!(
        "DayTrader: {} JVM{}, {} JMeter users (simulated)\n",
        p.jvms,
        if p.jvms == 1 { "" } else { "s" },
        p.users
    );
    match s {
        Some(s) => {
            let whole = s.secs.round() as u64;
            out.push_str(&format!(
                "summary = {:>7} in {:02}:{:02}:{:02} = {:>7.1}/s Avg: {:>5.0} Min: {:>5.0} Max: {:>5.0} Err: {:>5} (0.00%)\n",
                s.requests,
                whole / 3600,
                whole / 60 % 60,
                whole % 60,
                s.tput,
                s.avg_ms,
                s.min_ms,
                s.max_ms,
                0
            ));
        }
        None => out.push_str("(incomplete run: no requests completed)\n"),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::parse_spec;

    #[test]
    fn structure_and_keys() {
        let mut p =
            DaytraderParams::from_spec(&parse_spec("daytrader:jvms=2,users=5").unwrap()).unwrap();
        p.resolve(4);
        assert_eq!((p.users_of(0), p.users_of(1)), (3, 2));
        let spec = build(&p, None);
        // 5 users + 2 × (launcher + web threads + 4 GC + JIT) + db + 5 agents.
        assert_eq!(
            spec.templates.len(),
            5 + (1 + 3 + 4 + 1) + (1 + 2 + 4 + 1) + 1 + 5
        );
        assert!(DaytraderParams::from_spec(&parse_spec("daytrader:bogus=1").unwrap()).is_err());
        assert!(
            DaytraderParams::from_spec(&parse_spec("daytrader:jvms=4,users=2").unwrap()).is_err()
        );
    }

    #[test]
    fn summary_counts_completions_in_the_interval() {
        let p = DaytraderParams {
            jvms: 1,
            users: 2,
            think_ms: 0,
            db_calls: 1,
            gc_threads: 1,
            gc_period_ms: 100,
            runtime_ms: 1000,
            warmup_ms: 100,
        };
        let ms = 1_000_000;
        let marks = vec![
            (0, TAG_SENT, 50 * ms),
            (0, TAG_DONE, 60 * ms), // warm-up: not counted
            (0, TAG_SENT, 200 * ms),
            (1, TAG_SENT, 210 * ms),
            (0, TAG_DONE, 202 * ms),
            (1, TAG_DONE, 214 * ms),
        ];
        let s = summary(&p, &marks).unwrap();
        assert_eq!(s.requests, 2);
        assert!((s.tput - 2.0).abs() < 1e-9);
        assert!((s.avg_ms - 3.0).abs() < 1e-9 && s.min_ms == 2.0 && s.max_ms == 4.0);
        let r = report(&p, Some(&s));
        assert!(
            r.contains("summary =       2 in 00:00:01 =     2.0/s Avg:     3"),
            "{r}"
        );
    }
}
