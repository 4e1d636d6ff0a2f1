//! hackbench (rt-tests) / `perf bench sched messaging`.
//!
//! What it models: the main thread creates, per group, `fds` receivers and
//! then `fds` senders (threads or processes); each receiver has one channel,
//! which every sender of its group writes to: a pipe (`ipc=pipe`: 16 slots of a 4 KiB
//! page, small writes merged into the last page, so 40 messages of 100 bytes
//! fill a slot and 640 the pipe) or a unix stream socket pair (`ipc=socket`,
//! the default; a 208 KiB send buffer that charges each message its skb
//! truesize, 768 bytes for a 100-byte message, so 278 of them fit). Each
//! worker writes a byte to the ready pipe (or socket) and waits for GO;
//! the main thread times from GO until every worker has been reaped. Every sender does `for loops: for each receiver: write datasize
//! bytes`; every receiver reads `fds·loops` messages of `datasize` bytes. A
//! full buffer puts the writer to sleep until the reader drains it; an empty
//! one puts the reader to sleep; the peer is woken with WF_SYNC, as
//! pipe_write()/unix_stream_sendmsg() do; a pipe's reader wakes a writer
//! only when it frees a slot of a full pipe (anon_pipe_read()), a socket's
//! reader wakes all its sleeping writers once the queued messages are down
//! to a quarter of the send buffer (unix_write_space()). In total
//! `groups·fds²·loops` messages. Output ends `Time: X.XXX` (seconds), like
//! hackbench.
//!
//! What it leaves out: the cost of the socket/pipe code beyond a per-call CPU
//! cost (`SYSCALL_*`, ESTIMATES) plus a copy cost per byte, cache-line
//! transfer of the message data, poll() on the GO descriptor (a futex-style
//! wait here, woken with WF_SYNC as pipe_write() wakes its pollers), the
//! reaping (a semaphore each worker posts before it exits, so the main
//! thread is woken by whichever worker ends, where pthread_join() waits for
//! them in creation order and a process's exit wakes its parent's wait()
//! with WF_SYNC), the different fork cost of processes vs threads
//! (`mode` only changes the names), and TCP (`-i`).

use crate::program::{
    unix_skb_truesize, Step, SyncObject, ThreadTemplate, WorkloadSpec, PAGE_BYTES,
    PIPE_DEF_BUFFERS, SOCKET_CAPACITY,
};
use crate::spec::{BuiltinSpec, SpecError};
use schedlab_topo::CpuMask;

/// CPU cost of one write() or read() on a pipe, ns (ESTIMATE: ~1 µs syscall
/// with pipe locking and the wait-queue walk on a modern core).
pub const SYSCALL_PIPE_NS: u64 = 1_000;
/// CPU cost of one send/recv on a unix stream socket, ns (ESTIMATE: skb
/// allocation makes it about twice a pipe's).
pub const SYSCALL_SOCKET_NS: u64 = 2_000;
/// Copy cost per byte, ns ×1000 (ESTIMATE: ~10 GB/s memcpy → 0.1 ns/B).
const COPY_PS_PER_BYTE: u64 = 100;

/// hackbench parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct HackbenchParams {
    pub groups: u32,
    pub fds: u32,
    pub loops: u32,
    pub datasize: u64,
    /// Pipes (true) or unix sockets (false).
    pub pipe: bool,
    /// Threads (true) or processes (false).
    pub threads: bool,
}

impl Default for HackbenchParams {
    fn default() -> Self {
        HackbenchParams {
            groups: 10,
            fds: 20,
            loops: 100,
            datasize: 100,
            pipe: false,
            threads: false,
        }
    }
}

/// Keys `hackbench:` accepts.
pub const KEYS: &[&str] = &["groups", "fds", "loops", "datasize", "ipc", "mode"];

impl HackbenchParams {
    /// Reads a `hackbench:...` spec.
    pub fn from_spec(s: &BuiltinSpec) -> Result<Self, SpecError> {
        s.check_keys(KEYS)?;
        let choice = |key: &str, a: &str, b: &str, default_a: bool| -> Result<bool, SpecError> {
            match s.params.get(key).map(String::as_str) {
                None => Ok(default_a),
                Some(v) if v == a => Ok(true),
                Some(v) if v == b => Ok(false),
                Some(v) => Err(SpecError::BadValue {
                    workload: s.name.clone(),
                    key: key.to_string(),
                    reason: format!("'{v}' is not {a} or {b}"),
                }),
            }
        };
        let p = HackbenchParams {
            groups: s.get_u64("groups", 10, 1, 1024)? as u32,
            fds: s.get_u64("fds", 20, 1, 512)? as u32,
            loops: s.get_u64("loops", 100, 1, 1_000_000)? as u32,
            datasize: s.get_u64("datasize", 100, 1, 1 << 20)?,
            pipe: choice("ipc", "pipe", "socket", false)?,
            threads: choice("mode", "threads", "process", false)?,
        };
        // Every worker is a task, and a run makes at most 200,000.
        let workers = 2 * u64::from(p.groups) * u64::from(p.fds);
        if workers > MAX_WORKERS {
            return Err(SpecError::BadValue {
                workload: s.name.clone(),
                key: "fds".into(),
                reason: format!(
                    "2·groups·fds = {workers} workers is above {MAX_WORKERS} \
                     (each worker is a thread or process: fewer groups or fds)"
                ),
            });
        }
        Ok(p)
    }

    /// Messages the run passes: groups·fds²·loops.
    pub fn messages(&self) -> u64 {
        self.groups as u64 * (self.fds as u64).pow(2) * self.loops as u64
    }

    /// CPU cost of one write() / send call, ns: the syscall plus the copy.
    pub fn write_ns(&self) -> u64 {
        let base = if self.pipe {
            SYSCALL_PIPE_NS
        } else {
            SYSCALL_SOCKET_NS
        };
        base + self.datasize * COPY_PS_PER_BYTE / 1000
    }

    /// CPU cost of one read() / recv call, ns: cheaper than a write, which also
    /// allocates and walks the wait queue (ESTIMATE: 3/4 of the syscall), so
    /// receivers drain faster than senders fill and sleep on empty buffers.
    pub fn read_ns(&self) -> u64 {
        let base = if self.pipe {
            SYSCALL_PIPE_NS
        } else {
            SYSCALL_SOCKET_NS
        };
        base * 3 / 4 + self.datasize * COPY_PS_PER_BYTE / 1000
    }
}

/// The most workers (2·groups·fds) a run may have: half the engine's task
/// cap, e.g. 1024 groups of 48 fds or 97 groups of 512. A sender's program
/// holds one write step whatever the group's size (`Step::SendNext`).
pub const MAX_WORKERS: u64 = 100_000;

/// Sync ids: 0 = ready pipe or socket, 1 = GO condition, 2 = done semaphore,
/// then one channel per receiver.
const READY: u32 = 0;
const GO: u32 = 1;
const DONE: u32 = 2;
/// Mark tags of the main thread: GO and all workers reaped.
pub const TAG_START: u32 = 0;
pub const TAG_END: u32 = 1;

/// Builds the programs. Template 0 is the main thread.
pub fn build(p: &HackbenchParams, affinity: Option<CpuMask>) -> WorkloadSpec {
    let (g, f) = (p.groups, p.fds);
    let workers = 2 * g * f;
    // A pipe keeps its 16 page slots and merges small writes into pages; a
    // socket charges every message its skb's truesize.
    let (chan_obj, wire) = if p.pipe {
        (
            SyncObject::Pipe {
                buffers: PIPE_DEF_BUFFERS,
                page_bytes: PAGE_BYTES,
            },
            p.datasize,
        )
    } else {
        (
            SyncObject::UnixStream {
                sndbuf: SOCKET_CAPACITY,
            },
            unix_skb_truesize(p.datasize),
        )
    };
    // The ready descriptors are made by the same fdpair() as the message
    // channels: a pipe with `-p`, else a unix socket pair. One byte per
    // worker (a socket charges its skb's truesize).
    let ready_wire = if p.pipe { 1 } else { unix_skb_truesize(1) };
    let ready_call = HackbenchParams {
        datasize: 1,
        ..p.clone()
    };
    let mut sync = vec![
        chan_obj.clone(),
        SyncObject::Cond,
        SyncObject::Semaphore { initial: 0 },
    ];
    sync.extend((0..g * f).map(|_| chan_obj.clone()));
    let chan = |group: u32, r: u32| 3 + group * f + r;
    let read = Step::Compute {
        work_ns: p.read_ns(),
    };
    let write = Step::Compute {
        work_ns: p.write_ns(),
    };
    let mut prologue = vec![
        // ready(): write one byte to the ready descriptor, then poll() for GO.
        Step::Compute {
            work_ns: ready_call.write_ns(),
        },
        Step::Send {
            chan: READY,
            bytes: ready_wire,
        },
        Step::Wait {
            cond: GO,
            mutex: None,
        },
    ];
    if !p.threads {
        prologue.insert(0, Step::NewProcess);
    }
    let kind = if p.threads { "thread" } else { "process" };
    let mut templates = vec![ThreadTemplate {
        idle_policy: false,
        name: "hackbench".into(),
        nice: 0,
        affinity,
        steps: Vec::new(),
    }];
    let mut main = Vec::new();
    for group in 0..g {
        for r in 0..f {
            let mut s = prologue.clone();
            let start = s.len() as u32;
            s.push(Step::Recv {
                chan: chan(group, r),
                bytes: wire,
            });
            s.push(read.clone());
            s.push(Step::Loop {
                start,
                count: f * p.loops,
                slot: 0,
            });
            s.extend([Step::SemPost { sem: DONE }, Step::Exit]);
            main.push(Step::Spawn {
                template: templates.len() as u32,
            });
            templates.push(ThreadTemplate {
                idle_policy: false,
                name: format!("receiver-{kind}-{group}.{r}"),
                nice: 0,
                affinity: None,
                steps: s,
            });
        }
        for w in 0..f {
            let mut s = prologue.clone();
            let start = s.len() as u32;
            // Per loop, a write to each receiver of the group in turn (the
            // inner loop, slot 1, picks the receiver).
            s.push(write.clone());
            s.push(Step::SendNext {
                first: chan(group, 0),
                stride: 1,
                slot: 1,
                bytes: wire,
            });
            s.push(Step::Loop {
                start,
                count: f,
                slot: 1,
            });
            s.push(Step::Loop {
                start,
                count: p.loops,
                slot: 0,
            });
            s.extend([Step::SemPost { sem: DONE }, Step::Exit]);
            main.push(Step::Spawn {
                template: templates.len() as u32,
            });
            templates.push(ThreadTemplate {
                idle_policy: false,
                name: format!("sender-{kind}-{group}.{w}"),
                nice: 0,
                affinity: None,
                steps: s,
            });
        }
    }
    // Wait until every worker is ready, then GO and reap them all.
    let n = main.len() as u32;
    main.extend([
        // read(readyfds[0], &dummy, 1) once per worker.
        Step::Compute {
            work_ns: ready_call.read_ns(),
        },
        Step::Recv {
            chan: READY,
            bytes: ready_wire,
        },
        Step::Loop {
            start: n,
            count: workers,
            slot: 0,
        },
        Step::Mark { tag: TAG_START },
        // write(wakefds[1]): every worker poll()s that pipe.
        Step::BroadcastSync { cond: GO },
        Step::SemWait { sem: DONE },
        Step::Loop {
            start: n + 5,
            count: workers,
            slot: 1,
        },
        Step::Mark { tag: TAG_END },
        Step::Exit,
    ]);
    templates[0].steps = main;
    WorkloadSpec {
        name: format!(
            "hackbench:groups={},fds={},loops={},datasize={},ipc={},mode={}",
            g,
            f,
            p.loops,
            p.datasize,
            if p.pipe { "pipe" } else { "socket" },
            if p.threads { "threads" } else { "process" }
        ),
        templates,
        initial: vec![0],
        sync,
        mem_node: None,
        max_time_ns: 3_600_000_000_000,
    }
}

/// Seconds from GO to the last worker reaped, from the main thread's marks.
pub fn time_s(marks: &[(u32, u64)]) -> Option<f64> {
    let start = marks.iter().find(|m| m.0 == TAG_START)?.1;
    let end = marks.iter().find(|m| m.0 == TAG_END)?.1;
    Some(end.checked_sub(start)? as f64 * 1e-9)
}

/// hackbench's report.
pub fn report(p: &HackbenchParams, time: Option<f64>) -> String {
    let mut s = format!(
        "Running in {} mode with {} groups using {} file descriptors each (== {} tasks)\nEach sender will pass {} messages of {} bytes\n",
        if p.threads { "threaded" } else { "process" },
        p.groups,
        2 * p.fds,
        2 * p.fds * p.groups,
        p.loops,
        p.datasize
    );
    match time {
        Some(t) => s.push_str(&format!("Time: {t:.3}\n")),
        None => s.push_str("(incomplete run: no time)\n"),
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::parse_spec;

    /// The channel operations a program makes, in order: (write?, channel,
    /// bytes), walking its loops (nested ones included) as the engine runs
    /// them; the other steps do not branch in these programs.
    fn walk(steps: &[Step]) -> Vec<(bool, u32, u64)> {
        let mut out = Vec::new();
        let mut counts = [0u32; 4];
        let mut pc = 0;
        while pc < steps.len() {
            match steps[pc] {
                Step::Loop { start, count, slot } => {
                    counts[slot as usize] += 1;
                    if counts[slot as usize] < count {
                        pc = start as usize;
                        continue;
                    }
                    counts[slot as usize] = 0;
                }
                Step::Send { chan, bytes } => out.push((true, chan, bytes)),
                Step::SendNext {
                    first,
                    stride,
                    slot,
                    bytes,
                } => out.push((true, first + stride * counts[slot as usize], bytes)),
                Step::Recv { chan, bytes } => out.push((false, chan, bytes)),
                Step::Exit => break,
                _ => {}
            }
            pc += 1;
        }
        out
    }

    /// Executed count of `pred` channel operations per template.
    fn executed(steps: &[Step], pred: impl Fn(&(bool, u32, u64)) -> bool) -> u64 {
        walk(steps).iter().filter(|op| pred(op)).count() as u64
    }

    #[test]
    fn passes_groups_fds_squared_loops_messages() {
        let s = parse_spec("hackbench:groups=3,fds=4,loops=7,datasize=64,ipc=pipe").unwrap();
        let p = HackbenchParams::from_spec(&s).unwrap();
        let spec = build(&p, None);
        let sends: u64 = spec
            .templates
            .iter()
            .map(|t| executed(&t.steps, |&(write, chan, _)| write && chan != READY))
            .sum();
        let recvs: u64 = spec
            .templates
            .iter()
            .map(|t| executed(&t.steps, |&(write, chan, _)| !write && chan != READY))
            .sum();
        assert_eq!(sends, 3 * 16 * 7);
        assert_eq!(recvs, sends);
        // A sender of group 1 writes to its group's receivers in turn, the
        // row once per loop.
        let sender = spec
            .templates
            .iter()
            .find(|t| t.name == "sender-process-1.2")
            .unwrap();
        let order: Vec<u32> = walk(&sender.steps)
            .into_iter()
            .filter(|op| op.0 && op.1 != READY)
            .map(|op| op.1)
            .collect();
        let row: Vec<u32> = (0..4).map(|r| 3 + 4 + r).collect();
        assert_eq!(order, row.repeat(7));
        assert_eq!(p.messages(), sends);
        assert_eq!(spec.templates.len(), 1 + 2 * 3 * 4);
        // Every worker writes one byte into the ready pipe; the main thread
        // reads them one by one.
        let ready = |t: &ThreadTemplate, recv: bool| {
            executed(&t.steps, |&(write, chan, bytes)| {
                write != recv && chan == READY && bytes == 1
            })
        };
        assert_eq!(ready(&spec.templates[0], true), 24);
        assert!(spec.templates[1..].iter().all(|t| ready(t, false) == 1));
        assert!(matches!(spec.sync[READY as usize], SyncObject::Pipe { .. }));
        let sock = parse_spec("hackbench:groups=1,fds=2,loops=1").unwrap();
        let sock = build(&HackbenchParams::from_spec(&sock).unwrap(), None);
        assert!(matches!(
            sock.sync[READY as usize],
            SyncObject::UnixStream { .. }
        ));
        // GO is a write into the pipe every worker poll()s: a sync wakeup.
        assert!(spec.templates[0]
            .steps
            .contains(&Step::BroadcastSync { cond: GO }));
        // Pipes: 16 slots of a 4 KiB page.
        assert!(spec.sync.contains(&SyncObject::Pipe {
            buffers: 16,
            page_bytes: 4096
        }));
        // Defaults: 400k messages over sockets, processes.
        let d = HackbenchParams::from_spec(&parse_spec("hackbench").unwrap()).unwrap();
        assert!(build(&d, None).sync.contains(&SyncObject::UnixStream {
            sndbuf: SOCKET_CAPACITY
        }));
        assert_eq!(d.messages(), 400_000);
        assert!(!d.pipe && !d.threads);
        assert!(HackbenchParams::from_spec(&parse_spec("hackbench:ipc=tcp").unwrap()).is_err());
        // 2·groups·fds is bounded: 1024·48 fits, 1024·49 does not.
        let p2 = |g: u32, f: u32| {
            HackbenchParams::from_spec(
                &parse_spec(&format!("hackbench:groups={g},fds={f}")).unwrap(),
            )
        };
        assert!(p2(1024, 48).is_ok() && p2(97, 512).is_ok());
        let e = p2(1024, 49).unwrap_err().to_string();
        assert!(e.contains("fds") && e.contains("100352"), "{e}");
        assert!(report(&p, Some(0.1234)).ends_with("Time: 0.123\n"));
    }
}
