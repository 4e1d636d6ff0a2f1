//! Scheduler tracepoints: a recorder of the `sched:*` events a kernel would
//! emit (sched_switch, sched_waking, sched_wakeup, sched_wakeup_new,
//! sched_migrate_task, sched_process_exit) and two writers, tracefs text
//! (what `cat /sys/kernel/tracing/trace` prints) and the Perfetto protobuf
//! trace format (ftrace event bundles plus a process tree). Both open in
//! ui.perfetto.dev with real CPU tracks.
//!
//! Recording is off unless [`Sim::enable_trace`] is called; the hooks in the
//! core then cost one branch each. The recorder keeps, per CPU, the task it
//! last reported as running, so every switch it writes is consistent with the
//! previous one on that CPU (a task taken off a CPU by a migration appears to
//! switch out before it migrates, as a kernel trace shows it switching to the
//! stopper).
//!
//! Identifiers in a trace: a task's pid is its task id + 1 (0 is the idle
//! task, `swapper/N`, as in Linux); a process's pid is the pid of its first
//! thread; a kernel thread is its own process. Priorities are the kernel's `p->prio`:
//! `120 + nice` for a fair task, 99 − `sched_priority` for an RT one.

use crate::event::TaskId;
use crate::sim::Sim;
use crate::task::TaskState;
use schedlab_topo::CpuId;
use std::io::{self, Write};

/// One recorded tracepoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceRecord {
    pub ts_ns: u64,
    /// The CPU whose ring buffer holds the event.
    pub cpu: CpuId,
    /// The task running on `cpu` when the event fired (the event's
    /// `common_pid`), `None` for idle.
    pub current: Option<TaskId>,
    pub kind: TraceKind,
    /// The kernel priorities (`p->prio`) of the event's tasks when it fired
    /// (a switch's prev and next, or the one task of the others; 120 for
    /// idle), for the `prio` fields: sched_setattr() may change them during
    /// the run.
    pub prio: [i16; 2],
}

/// A tracepoint and its fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceKind {
    /// sched_switch: `prev` (or idle) leaves the CPU in `prev_state`, `next`
    /// (or idle) runs.
    Switch {
        prev: Option<TaskId>,
        prev_state: PrevState,
        next: Option<TaskId>,
    },
    /// sched_waking: fired in the waker's context, before a CPU is chosen;
    /// `target` is the CPU the task last ran on.
    Waking { task: TaskId, target: CpuId },
    /// sched_wakeup: the task is runnable on `target`.
    Wakeup { task: TaskId, target: CpuId },
    /// sched_wakeup_new: a new task is runnable on `target`.
    WakeupNew { task: TaskId, target: CpuId },
    /// sched_migrate_task.
    Migrate {
        task: TaskId,
        from: CpuId,
        to: CpuId,
    },
    /// sched_process_exit.
    Exit { task: TaskId },
    /// sched_pi_setprio: a priority-inheritance boost of `task` or its end;
    /// the record's `prio` holds the old and the new priority.
    PiSetprio { task: TaskId },
    /// power:cpu_idle (recorded only with [`Trace::cpu_idle`]): the CPU enters
    /// idle state `state` (its index in the machine's table), or leaves it
    /// (`state` = [`PWR_EVENT_EXIT`]).
    CpuIdle { state: u32 },
}

/// cpu_idle's `state` for leaving an idle state (`PWR_EVENT_EXIT`, (u32)-1).
pub const PWR_EVENT_EXIT: u32 = u32::MAX;

/// The priority a sched_pi_setprio event gives a task (`newprio`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrioTo {
    /// Its fair priority, 120 + nice.
    Fair,
    /// An RT kernel priority, 0..=98.
    Rt(u8),
    /// The deadline class, -1.
    Dl,
}

/// The `prev_state` of a sched_switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrevState {
    /// The idle task leaving the CPU, or a task that yielded ("R",
    /// TASK_RUNNING).
    Running,
    /// Preempted while runnable ("R+", TASK_REPORT_MAX).
    Preempted,
    /// Went to sleep ("S", TASK_INTERRUPTIBLE).
    Sleeping,
    /// Exited ("X", EXIT_DEAD).
    Dead,
}

impl PrevState {
    /// The letter(s) tracefs prints.
    pub fn letter(self) -> &'static str {
        match self {
            PrevState::Running => "R",
            PrevState::Preempted => "R+",
            PrevState::Sleeping => "S",
            PrevState::Dead => "X",
        }
    }

    /// The bitmask the tracepoint records (`__trace_sched_switch_state()`):
    /// one bit per reported state, TASK_REPORT_MAX for preemption.
    pub fn bits(self) -> i64 {
        match self {
            PrevState::Running => 0,
            PrevState::Preempted => 0x100,
            PrevState::Sleeping => 0x1,
            PrevState::Dead => 0x10,
        }
    }
}

/// The recorder: records in event order, up to a limit.
#[derive(Clone, Debug)]
pub struct Trace {
    pub records: Vec<TraceRecord>,
    /// At most this many records are kept; later ones are counted in `dropped`.
    pub limit: usize,
    pub dropped: u64,
    /// Only events at `from_ns..=to_ns` are kept.
    pub from_ns: u64,
    pub to_ns: u64,
    /// Per CPU, the task the trace last showed running (kept up to date
    /// outside the window too, so the first switch in it names the right prev).
    shown: Vec<Option<TaskId>>,
    /// Also record power:cpu_idle, each idle state's entry and exit (off by
    /// default: a kernel enables the power events separately).
    pub cpu_idle: bool,
}

impl Trace {
    pub fn new(nr_cpus: usize, limit: usize) -> Trace {
        Trace {
            records: Vec::new(),
            limit,
            dropped: 0,
            from_ns: 0,
            to_ns: u64::MAX,
            shown: vec![None; nr_cpus],
            cpu_idle: false,
        }
    }

    fn push(&mut self, r: TraceRecord) {
        if r.ts_ns < self.from_ns || r.ts_ns > self.to_ns {
            return;
        }
        if self.records.len() < self.limit {
            self.records.push(r);
        } else {
            self.dropped += 1;
        }
    }

    /// The time of the last record kept (0 if none).
    pub fn last_ts_ns(&self) -> u64 {
        self.records.last().map_or(0, |r| r.ts_ns)
    }
}

fn prev_state_of(state: TaskState) -> PrevState {
    match state {
        TaskState::Runnable | TaskState::Running => PrevState::Preempted,
        TaskState::Dead => PrevState::Dead,
        TaskState::Blocked | TaskState::Waking => PrevState::Sleeping,
    }
}

impl Sim {
    /// Starts recording scheduler tracepoints, keeping at most `limit` records.
    pub fn enable_trace(&mut self, limit: usize) {
        self.enable_trace_window(limit, 0, u64::MAX);
    }

    /// Starts recording scheduler tracepoints fired at `from_ns..=to_ns`,
    /// keeping at most `limit` records.
    pub fn enable_trace_window(&mut self, limit: usize, from_ns: u64, to_ns: u64) {
        let mut tr = Trace::new(self.nr_cpus(), limit);
        tr.from_ns = from_ns;
        tr.to_ns = to_ns;
        tr.shown
            .clone_from_slice(&self.rqs.iter().map(|rq| rq.curr).collect::<Vec<_>>());
        self.trace = Some(Box::new(tr));
    }

    /// power:cpu_idle on `cpu`, when the trace records it: idle state
    /// `state` entered, or left ([`PWR_EVENT_EXIT`]).
    pub(crate) fn trace_cpu_idle(&mut self, cpu: CpuId, state: u32) {
        if self.trace.as_deref().is_some_and(|t| t.cpu_idle) {
            self.trace_push(cpu, TraceKind::CpuIdle { state });
        }
    }

    fn trace_push(&mut self, cpu: CpuId, kind: TraceKind) {
        let prio_of =
            |t: Option<TaskId>| t.map_or(120, |t| self.tasks[t as usize].kernel_prio() as i16);
        let prio = match kind {
            TraceKind::Switch { prev, next, .. } => [prio_of(prev), prio_of(next)],
            TraceKind::Waking { task, .. }
            | TraceKind::Wakeup { task, .. }
            | TraceKind::WakeupNew { task, .. }
            | TraceKind::Migrate { task, .. }
            | TraceKind::Exit { task } => [prio_of(Some(task)), 120],
            TraceKind::CpuIdle { .. } | TraceKind::PiSetprio { .. } => [120, 120],
        };
        self.trace_push_prio(cpu, kind, prio);
    }

    fn trace_push_prio(&mut self, cpu: CpuId, kind: TraceKind, prio: [i16; 2]) {
        let now = self.now;
        if let Some(tr) = self.trace.as_deref_mut() {
            let current = tr.shown[cpu as usize];
            tr.push(TraceRecord {
                ts_ns: now,
                cpu,
                current,
                kind,
                prio,
            });
        }
    }

    /// Emits sched_switch if what runs on `cpu` differs from what the trace
    /// last showed there (the tracepoint in __schedule()).
    pub(crate) fn trace_switch(&mut self, cpu: CpuId) {
        if self.trace.is_none() {
            return;
        }
        let next = self.rqs[cpu as usize].curr;
        let Some(tr) = self.trace.as_deref() else {
            return;
        };
        let prev = tr.shown[cpu as usize];
        if prev == next {
            return;
        }
        let yielded = self.rqs[cpu as usize].yielded;
        let prev_state = prev.map_or(PrevState::Running, |p| {
            match prev_state_of(self.tasks[p as usize].state) {
                // sched_yield()'s schedule() is no preemption.
                PrevState::Preempted if yielded == Some(p) => PrevState::Running,
                s => s,
            }
        });
        self.trace_push(
            cpu,
            TraceKind::Switch {
                prev,
                prev_state,
                next,
            },
        );
        if let Some(tr) = self.trace.as_deref_mut() {
            tr.shown[cpu as usize] = next;
        }
    }

    /// sched_waking, in the waker's context on `cpu`.
    pub(crate) fn trace_waking(&mut self, cpu: CpuId, task: TaskId) {
        if self.trace.is_some() {
            let target = self.tasks[task as usize].cpu;
            self.trace_push(cpu, TraceKind::Waking { task, target });
        }
    }

    /// sched_wakeup or sched_wakeup_new (`new`), recorded on `cpu`.
    pub(crate) fn trace_wakeup(&mut self, cpu: CpuId, task: TaskId, target: CpuId, new: bool) {
        if self.trace.is_some() {
            let kind = if new {
                TraceKind::WakeupNew { task, target }
            } else {
                TraceKind::Wakeup { task, target }
            };
            self.trace_push(cpu, kind);
        }
    }

    /// sched_migrate_task. A task the trace still shows running on `from`
    /// (taken off it for this move) first switches out there.
    pub(crate) fn trace_migrate(&mut self, task: TaskId, from: CpuId, to: CpuId) {
        let Some(tr) = self.trace.as_deref() else {
            return;
        };
        if tr.shown[from as usize] == Some(task) {
            self.trace_push(
                from,
                TraceKind::Switch {
                    prev: Some(task),
                    prev_state: PrevState::Preempted,
                    next: None,
                },
            );
            if let Some(tr) = self.trace.as_deref_mut() {
                tr.shown[from as usize] = None;
            }
        }
        self.trace_push(from, TraceKind::Migrate { task, from, to });
    }

    /// sched_pi_setprio on `cpu`: `task`'s RT priority becomes `new` (`None`:
    /// back to its fair one).
    pub(crate) fn trace_pi_setprio(&mut self, cpu: CpuId, task: TaskId, new: PrioTo) {
        if self.trace.is_some() {
            let tk = &self.tasks[task as usize];
            let old = tk.kernel_prio() as i16;
            let new = match new {
                PrioTo::Fair => 120 + i16::from(tk.nice),
                PrioTo::Rt(p) => i16::from(p),
                PrioTo::Dl => -1,
            };
            self.trace_push_prio(cpu, TraceKind::PiSetprio { task }, [old, new]);
        }
    }

    /// sched_process_exit, on the exiting task's CPU.
    pub(crate) fn trace_exit(&mut self, cpu: CpuId, task: TaskId) {
        if self.trace.is_some() {
            self.trace_push(cpu, TraceKind::Exit { task });
        }
    }
}

/// A task's pid in the trace (0 is the idle task).
pub fn trace_pid(task: Option<TaskId>) -> u32 {
    task.map_or(0, |t| t + 1)
}

/// The pid of every task's process in the trace, by task id: its own for a
/// kernel thread, else the pid of the first thread of its thread group.
pub fn trace_tgids(sim: &Sim) -> Vec<u32> {
    // Thread groups: 1 is the workload's first process; a task that became
    // a process of its own has tgid 2 + its id (exec.rs, Step::NewProcess).
    let first_workload_task = sim.tasks.iter().find(|x| !x.kthread && x.tgid == 1);
    let first_pid = trace_pid(first_workload_task.map(|x| x.id));
    sim.tasks
        .iter()
        .map(|t| {
            if t.kthread {
                trace_pid(Some(t.id))
            } else if t.tgid >= 2 {
                trace_pid(Some(t.tgid - 2))
            } else {
                first_pid
            }
        })
        .collect()
}

/// A thread name as the kernel keeps it in `comm`: TASK_COMM_LEN is 16
/// bytes with the terminator, so at most 15 bytes (cut at a character
/// boundary, so that the text stays UTF-8).
fn task_comm(name: &str) -> &str {
    let mut end = name.len().min(15);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

fn comm(sim: &Sim, task: Option<TaskId>, cpu: CpuId) -> String {
    match task {
        // TASK_COMM_LEN: 15 bytes and the terminator (cut at a character
        // boundary, so that the text stays UTF-8).
        Some(t) => task_comm(&sim.tasks[t as usize].name).to_string(),
        None => format!("swapper/{cpu}"),
    }
}

/// The kernel priority a record shows for its `i`-th task (120 + nice for
/// a fair task, 99 − `sched_priority` for an RT one, 120 for idle).
fn prio(r: &TraceRecord, i: usize) -> i32 {
    i32::from(r.prio[i])
}

/// Writes the recorded events as tracefs text (the `trace` file's format:
/// `comm-pid [cpu] flags seconds.micros: event: fields`), which Perfetto,
/// trace-cmd-based tools and grep all read.
pub fn write_ftrace_text(sim: &Sim, out: &mut impl Write) -> io::Result<()> {
    let Some(tr) = sim.trace.as_deref() else {
        return Ok(());
    };
    let n = tr.records.len();
    writeln!(out, "# tracer: nop")?;
    writeln!(out, "#")?;
    writeln!(
        out,
        "# entries-in-buffer/entries-written: {n}/{}   #P:{}",
        n as u64 + tr.dropped,
        sim.nr_cpus()
    )?;
    writeln!(out, "#")?;
    // The irq-info legend of a 7.x tracefs file: five flag columns, the
    // last one migrate-disable.
    for l in [
        "#                                _-----=> irqs-off/BH-disabled",
        "#                               / _----=> need-resched",
        "#                              | / _---=> hardirq/softirq",
        "#                              || / _--=> preempt-depth",
        "#                              ||| / _-=> migrate-disable",
        "#                              |||| /     delay",
        "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION",
        "#              | |         |   |||||     |         |",
    ] {
        writeln!(out, "{l}")?;
    }
    for r in &tr.records {
        let who = comm(sim, r.current, r.cpu);
        let who = if r.current.is_none() {
            "<idle>".to_string()
        } else {
            who
        };
        write!(
            out,
            "{:>16}-{:<7} [{:03}] d..2. {:>5}.{:06}: ",
            who,
            trace_pid(r.current),
            r.cpu,
            r.ts_ns / 1_000_000_000,
            (r.ts_ns % 1_000_000_000) / 1000
        )?;
        match r.kind {
            TraceKind::Switch {
                prev,
                prev_state,
                next,
            } => writeln!(
                out,
                "sched_switch: prev_comm={} prev_pid={} prev_prio={} prev_state={} ==> next_comm={} next_pid={} next_prio={}",
                comm(sim, prev, r.cpu),
                trace_pid(prev),
                prio(r, 0),
                prev_state.letter(),
                comm(sim, next, r.cpu),
                trace_pid(next),
                prio(r, 1)
            )?,
            TraceKind::Waking { task, target }
            | TraceKind::Wakeup { task, target }
            | TraceKind::WakeupNew { task, target } => {
                let name = match r.kind {
                    TraceKind::Waking { .. } => "sched_waking",
                    TraceKind::Wakeup { .. } => "sched_wakeup",
                    _ => "sched_wakeup_new",
                };
                writeln!(
                    out,
                    "{name}: comm={} pid={} prio={} target_cpu={:03}",
                    comm(sim, Some(task), r.cpu),
                    trace_pid(Some(task)),
                    prio(r, 0),
                    target
                )?
            }
            TraceKind::Migrate { task, from, to } => writeln!(
                out,
                "sched_migrate_task: comm={} pid={} prio={} orig_cpu={} dest_cpu={}",
                comm(sim, Some(task), r.cpu),
                trace_pid(Some(task)),
                prio(r, 0),
                from,
                to
            )?,
            TraceKind::Exit { task } => writeln!(
                out,
                "sched_process_exit: comm={} pid={} prio={}",
                comm(sim, Some(task), r.cpu),
                trace_pid(Some(task)),
                prio(r, 0)
            )?,
            TraceKind::PiSetprio { task } => writeln!(
                out,
                "sched_pi_setprio: comm={} pid={} oldprio={} newprio={}",
                comm(sim, Some(task), r.cpu),
                trace_pid(Some(task)),
                prio(r, 0),
                prio(r, 1)
            )?,
            TraceKind::CpuIdle { state } => {
                writeln!(out, "cpu_idle: state={state} cpu_id={}", r.cpu)?
            }
        }
    }
    Ok(())
}

/// A minimal protobuf encoder (varints and length-delimited fields), enough
/// for Perfetto's trace format.
#[derive(Default)]
struct Pb {
    buf: Vec<u8>,
}

impl Pb {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }
    fn key(&mut self, field: u32, wire: u8) {
        self.varint((u64::from(field) << 3) | u64::from(wire));
    }
    /// An integer field (uint32/uint64/int32/int64 with non-negative values,
    /// or int64 as two's complement, as protobuf encodes it).
    fn uint(&mut self, field: u32, v: u64) {
        self.key(field, 0);
        self.varint(v);
    }
    fn bytes(&mut self, field: u32, b: &[u8]) {
        self.key(field, 2);
        self.varint(b.len() as u64);
        self.buf.extend_from_slice(b);
    }
    fn msg(&mut self, field: u32, m: &Pb) {
        self.bytes(field, &m.buf);
    }
}

// Field numbers of perfetto/protos (trace.proto, trace_packet.proto,
// ftrace_event_bundle.proto, ftrace_event.proto, sched.proto,
// process_tree.proto).
const TRACE_PACKET: u32 = 1;
const PACKET_FTRACE_EVENTS: u32 = 1;
const PACKET_PROCESS_TREE: u32 = 2;
const PACKET_TIMESTAMP: u32 = 8;
const PACKET_SYSTEM_INFO: u32 = 45;
const INFO_UTSNAME: u32 = 1;
const INFO_HZ: u32 = 3;
const INFO_NUM_CPUS: u32 = 8;
const INFO_MACHINE_NAME: u32 = 17;
const UTS_SYSNAME: u32 = 1;
const UTS_VERSION: u32 = 2;
const UTS_RELEASE: u32 = 3;
const BUNDLE_CPU: u32 = 1;
const BUNDLE_EVENT: u32 = 2;
const EVENT_TIMESTAMP: u32 = 1;
const EVENT_PID: u32 = 2;
const EVENT_SCHED_SWITCH: u32 = 4;
const EVENT_CPU_IDLE: u32 = 13;
const EVENT_SCHED_WAKEUP: u32 = 17;
const EVENT_SCHED_WAKING: u32 = 20;
const EVENT_SCHED_WAKEUP_NEW: u32 = 114;
const EVENT_SCHED_PROCESS_EXIT: u32 = 238;
const EVENT_SCHED_PI_SETPRIO: u32 = 353;
const EVENT_SCHED_MIGRATE_TASK: u32 = 491;
const TREE_PROCESSES: u32 = 1;
const TREE_THREADS: u32 = 2;

/// Events per ftrace bundle (one bundle holds one CPU's events in time order).
const BUNDLE_EVENTS: usize = 1024;

/// Writes the recorded events as a Perfetto protobuf trace: a system-info
/// packet (kernel release, CPUs, HZ, machine), a process-tree packet naming
/// every process and thread, then the events as per-CPU ftrace bundles in
/// time order.
pub fn write_perfetto(sim: &Sim, out: &mut impl Write) -> io::Result<()> {
    let Some(tr) = sim.trace.as_deref() else {
        return Ok(());
    };
    // What the trace was taken on: the kernel release decides how Perfetto
    // decodes prev_state (7.3's TASK_REPORT bits).
    let mut uts = Pb::default();
    uts.bytes(UTS_SYSNAME, b"Linux");
    uts.bytes(UTS_VERSION, b"schedlab simulation");
    uts.bytes(UTS_RELEASE, b"7.3.0-schedlab");
    let mut info = Pb::default();
    info.msg(INFO_UTSNAME, &uts);
    info.uint(INFO_HZ, u64::from(sim.cfg.hz));
    info.uint(INFO_NUM_CPUS, sim.nr_cpus() as u64);
    info.bytes(INFO_MACHINE_NAME, sim.machine.name.as_bytes());
    let mut packet = Pb::default();
    packet.msg(PACKET_SYSTEM_INFO, &info);
    let mut file = Pb::default();
    file.msg(TRACE_PACKET, &packet);
    out.write_all(&file.buf)?;

    // The process tree.
    let tgids = trace_tgids(sim);
    let mut tree = Pb::default();
    let mut seen_process = vec![false; sim.tasks.len() + 1];
    for t in &sim.tasks {
        let tgid = tgids[t.id as usize];
        if !seen_process[tgid as usize] {
            seen_process[tgid as usize] = true;
            let leader = &sim.tasks[(tgid - 1) as usize];
            let mut p = Pb::default();
            p.uint(1, u64::from(tgid)); // pid
            p.bytes(3, leader.name.as_bytes()); // cmdline
            if t.kthread {
                p.uint(8, 1); // is_kthread
            }
            tree.msg(TREE_PROCESSES, &p);
        }
        let mut th = Pb::default();
        th.uint(1, u64::from(trace_pid(Some(t.id)))); // tid
        th.bytes(2, t.name.as_bytes()); // name
        th.uint(3, u64::from(tgid)); // tgid
        tree.msg(TREE_THREADS, &th);
    }
    let mut packet = Pb::default();
    packet.uint(PACKET_TIMESTAMP, 0);
    packet.msg(PACKET_PROCESS_TREE, &tree);
    let mut file = Pb::default();
    file.msg(TRACE_PACKET, &packet);
    out.write_all(&file.buf)?;

    // Per-CPU record lists, each in time order.
    let mut per_cpu: Vec<Vec<&TraceRecord>> = vec![Vec::new(); sim.nr_cpus()];
    for r in &tr.records {
        per_cpu[r.cpu as usize].push(r);
    }
    for (cpu, recs) in per_cpu.iter().enumerate() {
        for chunk in recs.chunks(BUNDLE_EVENTS) {
            let mut bundle = Pb::default();
            bundle.uint(BUNDLE_CPU, cpu as u64);
            for r in chunk {
                bundle.msg(BUNDLE_EVENT, &ftrace_event(sim, &tgids, r));
            }
            let mut packet = Pb::default();
            packet.msg(PACKET_FTRACE_EVENTS, &bundle);
            let mut file = Pb::default();
            file.msg(TRACE_PACKET, &packet);
            out.write_all(&file.buf)?;
        }
    }
    Ok(())
}

fn ftrace_event(sim: &Sim, tgids: &[u32], r: &TraceRecord) -> Pb {
    let mut ev = Pb::default();
    ev.uint(EVENT_TIMESTAMP, r.ts_ns);
    ev.uint(EVENT_PID, u64::from(trace_pid(r.current)));
    let task_fields = |task: TaskId, target: Option<CpuId>| {
        let mut m = Pb::default();
        m.bytes(1, comm(sim, Some(task), r.cpu).as_bytes());
        m.uint(2, u64::from(trace_pid(Some(task))));
        m.uint(3, prio(r, 0) as u64);
        if let Some(c) = target {
            m.uint(4, 1); // success
            m.uint(5, u64::from(c)); // target_cpu
        }
        m
    };
    match r.kind {
        TraceKind::Switch {
            prev,
            prev_state,
            next,
        } => {
            let mut m = Pb::default();
            m.bytes(1, comm(sim, prev, r.cpu).as_bytes());
            m.uint(2, u64::from(trace_pid(prev)));
            m.uint(3, prio(r, 0) as u64);
            m.uint(4, prev_state.bits() as u64);
            m.bytes(5, comm(sim, next, r.cpu).as_bytes());
            m.uint(6, u64::from(trace_pid(next)));
            m.uint(7, prio(r, 1) as u64);
            ev.msg(EVENT_SCHED_SWITCH, &m);
        }
        TraceKind::Waking { task, target } => {
            ev.msg(EVENT_SCHED_WAKING, &task_fields(task, Some(target)));
        }
        TraceKind::Wakeup { task, target } => {
            ev.msg(EVENT_SCHED_WAKEUP, &task_fields(task, Some(target)));
        }
        TraceKind::WakeupNew { task, target } => {
            ev.msg(EVENT_SCHED_WAKEUP_NEW, &task_fields(task, Some(target)));
        }
        TraceKind::Migrate { task, from, to } => {
            let mut m = task_fields(task, None);
            m.uint(4, u64::from(from)); // orig_cpu
            m.uint(5, u64::from(to)); // dest_cpu
            ev.msg(EVENT_SCHED_MIGRATE_TASK, &m);
        }
        TraceKind::Exit { task } => {
            let mut m = Pb::default();
            m.bytes(1, comm(sim, Some(task), r.cpu).as_bytes());
            m.uint(2, u64::from(trace_pid(Some(task))));
            m.uint(3, u64::from(tgids[task as usize]));
            m.uint(4, prio(r, 0) as u64);
            ev.msg(EVENT_SCHED_PROCESS_EXIT, &m);
        }
        TraceKind::PiSetprio { task } => {
            let mut m = Pb::default();
            m.bytes(1, comm(sim, Some(task), r.cpu).as_bytes());
            m.uint(2, prio(r, 1) as u64); // newprio
            m.uint(3, prio(r, 0) as u64); // oldprio
            m.uint(4, u64::from(trace_pid(Some(task))));
            ev.msg(EVENT_SCHED_PI_SETPRIO, &m);
        }
        TraceKind::CpuIdle { state } => {
            let mut m = Pb::default();
            m.uint(1, u64::from(state)); // state
            m.uint(2, u64::from(r.cpu)); // cpu_id
            ev.msg(EVENT_CPU_IDLE, &m);
        }
    }
    ev
}

/// A task's state as a trace shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seen {
    Blocked,
    Runnable,
    Running,
    Dead,
}

/// Replays a run's trace as a trace viewer would and checks that it is
/// consistent: each switch's prev is what that CPU last switched to, a task
/// runs on one CPU at a time, only a runnable task is switched in, only a
/// sleeping one is woken, a task migrates only while not running, times never
/// go back, the trace ends where the simulation does and it shows as many
/// migrations as the counters (when nothing was dropped). Returns the numbers
/// of switches and migrations it saw. For tests and fuzzing: a trace the
/// engine writes must always pass.
pub fn check_trace(s: &Sim) -> Result<(u64, u64), String> {
    let tr = s.trace.as_deref().ok_or("tracing is off")?;
    let mut on_cpu: Vec<Option<TaskId>> = vec![None; s.nr_cpus()];
    let mut running_on: Vec<Option<CpuId>> = vec![None; s.tasks.len()];
    // Before its first event a task is asleep (kthreads) or unborn.
    let mut seen = vec![Seen::Blocked; s.tasks.len()];
    let mut last_ts = 0;
    let (mut switches, mut migrations) = (0u64, 0u64);
    // Per CPU, the idle state cpu_idle last showed it in: Some(Some(k)) in
    // state k, Some(None) in none, None not known yet (e.g. idle since
    // before the trace began).
    let mut in_idle_state: Vec<Option<Option<u32>>> = vec![None; s.nr_cpus()];
    let states = &s.machine.wakeup.idle_states;
    let fail = |what: &str, r: &TraceRecord| Err(format!("trace: {what} at {r:?}"));
    for r in &tr.records {
        if r.ts_ns < last_ts {
            return fail("time went back", r);
        }
        last_ts = r.ts_ns;
        if r.current != on_cpu[r.cpu as usize] {
            return fail("common_pid is not the CPU's current task", r);
        }
        // A CPU does work (records events) only out of its idle state, or
        // inside a polling loop, which takes interrupts as it polls.
        // (sched_migrate_task goes to the source CPU's buffer, which need
        // not be the CPU doing the move.)
        if let Some(Some(k)) = in_idle_state[r.cpu as usize] {
            let own_work = !matches!(
                r.kind,
                TraceKind::CpuIdle { .. } | TraceKind::Migrate { .. }
            );
            if own_work && !states[k as usize].poll_loop {
                return fail("a CPU records an event while in an idle state", r);
            }
        }
        match r.kind {
            TraceKind::Switch {
                prev,
                prev_state,
                next,
            } => {
                switches += 1;
                if prev != on_cpu[r.cpu as usize] {
                    return fail("prev is not what the CPU last switched to", r);
                }
                if prev == next {
                    return fail("a switch to the same task", r);
                }
                if let Some(p) = prev {
                    running_on[p as usize] = None;
                    seen[p as usize] = match prev_state {
                        PrevState::Preempted => Seen::Runnable,
                        PrevState::Sleeping => Seen::Blocked,
                        PrevState::Dead => Seen::Dead,
                        // A task that yielded leaves runnable too.
                        PrevState::Running => Seen::Runnable,
                    };
                } else if prev_state != PrevState::Running {
                    return fail("the idle task leaves in a task state", r);
                }
                if next.is_some() && matches!(in_idle_state[r.cpu as usize], Some(Some(_))) {
                    return fail("a task runs on a CPU in an idle state", r);
                }
                if let Some(n) = next {
                    if running_on[n as usize].is_some() {
                        return fail("a task runs on two CPUs", r);
                    }
                    if seen[n as usize] != Seen::Runnable {
                        return fail("a task not runnable is switched in", r);
                    }
                    running_on[n as usize] = Some(r.cpu);
                    seen[n as usize] = Seen::Running;
                }
                on_cpu[r.cpu as usize] = next;
            }
            TraceKind::Migrate { task, from, to } => {
                migrations += 1;
                if from == to {
                    return fail("a migration to the same CPU", r);
                }
                if running_on[task as usize].is_some() {
                    return fail("a running task migrates", r);
                }
            }
            TraceKind::Waking { task, .. } => {
                if seen[task as usize] != Seen::Blocked {
                    return fail("a task not sleeping is waking", r);
                }
            }
            TraceKind::Wakeup { task, .. } | TraceKind::WakeupNew { task, .. } => {
                if seen[task as usize] != Seen::Blocked {
                    return fail("a task not sleeping is woken", r);
                }
                seen[task as usize] = Seen::Runnable;
            }
            TraceKind::Exit { task } => {
                if seen[task as usize] != Seen::Running {
                    return fail("a task not running exits", r);
                }
            }
            TraceKind::PiSetprio { task } => {
                if seen[task as usize] == Seen::Dead {
                    return fail("a dead task's priority changes", r);
                }
            }
            TraceKind::CpuIdle { state } => {
                let was = in_idle_state[r.cpu as usize];
                if state == PWR_EVENT_EXIT {
                    if was == Some(None) {
                        return fail("a CPU leaves an idle state it is not in", r);
                    }
                    in_idle_state[r.cpu as usize] = Some(None);
                } else {
                    if matches!(was, Some(Some(_))) {
                        return fail("a CPU enters an idle state while in one", r);
                    }
                    if on_cpu[r.cpu as usize].is_some() {
                        return fail("a CPU running a task enters an idle state", r);
                    }
                    if state as usize >= states.len() {
                        return fail("an idle state the machine does not have", r);
                    }
                    in_idle_state[r.cpu as usize] = Some(Some(state));
                }
            }
        }
    }
    if tr.dropped == 0 {
        let curr: Vec<Option<TaskId>> = s.rqs.iter().map(|rq| rq.curr).collect();
        if on_cpu != curr {
            return Err(format!(
                "trace: ends with {on_cpu:?} on the CPUs, the simulation with {curr:?}"
            ));
        }
        if migrations != s.counters.migrations {
            return Err(format!(
                "trace: {migrations} migrations, the counters {}",
                s.counters.migrations
            ));
        }
    }
    Ok((switches, migrations))
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_topo::preset;
    use schedlab_workload::WorkloadSpec;

    #[test]
    fn a_comm_is_at_most_15_bytes() {
        assert_eq!(task_comm("schbench-w0.12"), "schbench-w0.12");
        assert_eq!(task_comm("xxxxxxxxxxxxxxxxxxxx"), "xxxxxxxxxxxxxxx");
        // 'é' is two bytes: seven of them fit, the eighth would end at 16.
        assert_eq!(task_comm("éééééééééééé-0"), "ééééééé");
    }

    fn sim(machine: &str, feature: Option<&str>, spec: WorkloadSpec, seed: u64) -> Sim {
        let features: Vec<&str> = feature.into_iter().collect();
        crate::scenarios::sim_with_features(machine, &features, spec, seed)
    }

    /// A traced run of [`workload`] on exynos5422 with the default features.
    fn traced_exynos(seed: u64) -> Sim {
        let mut s = sim("exynos5422", None, workload(8), seed);
        s.enable_trace(usize::MAX);
        s.run();
        s
    }

    /// Mixed sleepers and hogs, some of which exit: wakeups, migrations by
    /// wakeup and by the balancer, exits.
    fn workload(n_cpus: usize) -> WorkloadSpec {
        let mut spec = crate::scenarios::mixed_load(n_cpus, 60_000_000);
        let k = spec.templates.len() as u32;
        spec.templates.push(crate::scenarios::thread(
            "short",
            None,
            vec![
                schedlab_workload::Step::Compute { work_ns: 5_000_000 },
                schedlab_workload::Step::Exit,
            ],
        ));
        spec.initial.push(k);
        spec.initial.push(k);
        // A thread that sleeps again as soon as it is switched in (it blocks
        // inside the switch, a nested schedule()).
        spec.templates.push(crate::scenarios::thread(
            "ticker",
            None,
            vec![
                schedlab_workload::Step::Sleep { ns: 150_000 },
                schedlab_workload::Step::Loop {
                    start: 0,
                    count: 10_000,
                    slot: 0,
                },
                schedlab_workload::Step::Exit,
            ],
        ));
        spec.initial.push(k + 1);
        spec
    }

    /// [`check_trace`], plus: a non-trivial trace with migrations, none
    /// dropped.
    fn assert_consistent(s: &Sim) {
        let (switches, migrations) = check_trace(s).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.trace.as_deref().expect("trace on").dropped, 0);
        // A non-trivial trace: 20 ms of this workload make 58 or more switches
        // for every seed of 3000 on each machine (2.6% of runs make 100 or
        // fewer, which made this bound flaky under random seeds).
        assert!(
            switches > 40 && migrations > 0,
            "{switches} switches, {migrations} migrations"
        );
    }

    #[test]
    fn the_trace_replays_consistently_on_smp_asymmetric_and_hmp_machines() {
        for (machine, feature) in [
            ("kunpeng920", None),
            ("exynos5422", None),
            ("exynos5422", Some("HMP_HPERF")),
            ("exynos5422", Some("HMP_LINARO")),
        ] {
            let n = preset(machine).expect("preset").nr_cpus();
            let mut s = sim(machine, feature, workload(n), 3);
            s.enable_trace(usize::MAX);
            s.run();
            assert_consistent(&s);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(12))]
        /// Any seed, machine and big.LITTLE scheme: the trace replays.
        #[test]
        fn traces_replay_consistently_for_any_seed(
            seed in 0u64..1_000_000,
            machine in proptest::sample::select(vec!["exynos5422", "alderlake", "kunpeng920"]),
            feature in proptest::sample::select(vec![None, Some("HMP_HPERF"), Some("HMP_LINARO")]),
        ) {
            let feature = if machine == "exynos5422" { feature } else { None };
            let n = preset(machine).expect("preset").nr_cpus();
            let mut spec = workload(n);
            spec.max_time_ns = 20_000_000;
            let mut s = sim(machine, feature, spec, seed);
            s.enable_trace(usize::MAX);
            s.run();
            assert_consistent(&s);
        }
    }

    /// sched_yield()'s schedule() is voluntary: tracefs shows the yielder
    /// leaving as R, a preempted task as R+.
    #[test]
    fn a_yielding_task_leaves_as_r_and_a_preempted_one_as_r_plus() {
        use schedlab_workload::Step;
        let spec = crate::scenarios::threads_spec(
            "yield",
            vec![
                (
                    "y",
                    Some(vec![4]),
                    vec![
                        Step::Compute { work_ns: 100_000 },
                        Step::Yield { syscall_ns: 500 },
                        Step::Loop {
                            start: 0,
                            count: 100,
                            slot: 0,
                        },
                    ],
                ),
                (
                    "hog",
                    Some(vec![4]),
                    vec![Step::Compute {
                        work_ns: 50_000_000,
                    }],
                ),
            ],
            30_000_000,
        );
        let mut s = sim("exynos5422", None, spec, 1);
        s.enable_trace(usize::MAX);
        s.run();
        check_trace(&s).unwrap_or_else(|e| panic!("{e}"));
        let y = s.tasks.iter().position(|t| &*t.name == "y").unwrap() as TaskId;
        let hog = s.tasks.iter().position(|t| &*t.name == "hog").unwrap() as TaskId;
        let left = |who: TaskId, st: PrevState| {
            s.trace
                .as_deref()
                .unwrap()
                .records
                .iter()
                .filter(|r| {
                    matches!(r.kind, TraceKind::Switch { prev: Some(p), prev_state, .. }
                        if p == who && prev_state == st)
                })
                .count()
        };
        assert!(left(y, PrevState::Running) > 0, "the yielder leaves as R");
        assert_eq!(left(hog, PrevState::Running), 0);
        assert!(left(hog, PrevState::Preempted) > 0, "the hog is preempted");
    }

    #[test]
    fn tracing_does_not_change_the_simulation() {
        let run = |trace: bool| {
            let mut s = sim("exynos5422", Some("HMP_HPERF"), workload(8), 5);
            if trace {
                s.enable_trace(usize::MAX);
            }
            s.run();
            (s.now, s.events, format!("{:?}", s.counters))
        };
        assert_eq!(run(false), run(true));
    }

    #[test]
    fn a_window_keeps_its_events_and_its_first_switches_name_the_right_prev() {
        let full = traced_exynos(4);
        let mut s = sim("exynos5422", None, workload(8), 4);
        s.enable_trace_window(usize::MAX, 20_000_000, 30_000_000);
        s.run();
        let tr = s.trace.as_deref().expect("trace");
        let want: Vec<&TraceRecord> = full
            .trace
            .as_deref()
            .expect("trace")
            .records
            .iter()
            .filter(|r| (20_000_000..=30_000_000).contains(&r.ts_ns))
            .collect();
        assert!(!want.is_empty());
        assert_eq!(tr.records.iter().collect::<Vec<_>>(), want);
    }

    #[test]
    fn the_limit_keeps_the_first_events_and_counts_the_rest() {
        let mut s = sim("exynos5422", None, workload(8), 1);
        s.enable_trace(50);
        s.run();
        let tr = s.trace.as_deref().expect("trace");
        assert_eq!(tr.records.len(), 50);
        assert!(tr.dropped > 0);
    }

    /// A protobuf reader for the test: (field, wire type, value or bytes).
    fn fields(mut b: &[u8]) -> Vec<(u32, u8, u64, Vec<u8>)> {
        fn varint(b: &mut &[u8]) -> u64 {
            let (mut v, mut shift) = (0u64, 0);
            loop {
                let x = b[0];
                *b = &b[1..];
                v |= u64::from(x & 0x7f) << shift;
                if x < 0x80 {
                    return v;
                }
                shift += 7;
            }
        }
        let mut out = Vec::new();
        while !b.is_empty() {
            let key = varint(&mut b);
            let (field, wire) = ((key >> 3) as u32, (key & 7) as u8);
            match wire {
                0 => out.push((field, 0, varint(&mut b), Vec::new())),
                2 => {
                    let n = varint(&mut b) as usize;
                    out.push((field, 2, 0, b[..n].to_vec()));
                    b = &b[n..];
                }
                w => panic!("unexpected wire type {w}"),
            }
        }
        out
    }

    #[test]
    fn varints_encode_as_protobuf_does() {
        let mut pb = Pb::default();
        pb.varint(0);
        pb.varint(1);
        pb.varint(150);
        pb.varint(300);
        pb.varint(u64::MAX);
        let mut want = vec![0x00, 0x01, 0x96, 0x01, 0xac, 0x02];
        want.extend([0xff; 9]);
        want.push(0x01);
        assert_eq!(pb.buf, want);
    }

    #[test]
    fn the_perfetto_trace_nests_packets_bundles_and_sched_events() {
        let s = traced_exynos(2);
        let mut buf = Vec::new();
        write_perfetto(&s, &mut buf).expect("write");
        let packets = fields(&buf);
        assert!(packets.iter().all(|p| p.0 == TRACE_PACKET && p.1 == 2));
        // First packet: the system, with the number of CPUs.
        let info = fields(&packets[0].3);
        assert_eq!(info[0].0, PACKET_SYSTEM_INFO);
        let info = fields(&info[0].3);
        let cpus = info
            .iter()
            .find(|f| f.0 == INFO_NUM_CPUS)
            .expect("num_cpus");
        assert_eq!(cpus.2, 8);
        let packets = &packets[1..];
        // Second: the process tree, one thread per task.
        let first = fields(&packets[0].3);
        let tree = &first
            .iter()
            .find(|f| f.0 == PACKET_PROCESS_TREE)
            .expect("tree")
            .3;
        let threads = fields(tree).iter().filter(|f| f.0 == TREE_THREADS).count();
        assert_eq!(threads, s.tasks.len());
        // Then ftrace bundles; count the switches and check their fields.
        let (mut switches, mut events) = (0, 0);
        for p in &packets[1..] {
            let bundle = fields(&fields(&p.3)[0].3);
            assert_eq!(bundle[0].0, BUNDLE_CPU);
            for ev in bundle.iter().filter(|f| f.0 == BUNDLE_EVENT) {
                events += 1;
                let ev = fields(&ev.3);
                assert_eq!((ev[0].0, ev[1].0), (EVENT_TIMESTAMP, EVENT_PID));
                if ev[2].0 == EVENT_SCHED_SWITCH {
                    switches += 1;
                    let sw = fields(&ev[2].3);
                    let ids: Vec<u32> = sw.iter().map(|f| f.0).collect();
                    assert_eq!(ids, [1, 2, 3, 4, 5, 6, 7]);
                    // prev_pid is the event's common_pid.
                    assert_eq!(sw[1].2, ev[1].2);
                }
            }
        }
        let tr = s.trace.as_deref().expect("trace");
        assert_eq!(events, tr.records.len());
        let want = tr
            .records
            .iter()
            .filter(|r| matches!(r.kind, TraceKind::Switch { .. }))
            .count();
        assert_eq!(switches, want);
    }

    #[test]
    fn the_text_trace_has_one_tracefs_line_per_event() {
        let s = traced_exynos(2);
        let mut buf = Vec::new();
        write_ftrace_text(&s, &mut buf).expect("write");
        let text = String::from_utf8(buf).expect("utf8");
        let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            lines.len(),
            s.trace.as_deref().expect("trace").records.len()
        );
        // 7.x's five flag columns, the last one migrate-disable.
        assert!(text.contains("#                              ||| / _-=> migrate-disable"));
        assert!(text.contains("#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION"));
        assert!(lines.iter().all(|l| l.contains("] d..2. ")), "{}", lines[0]);
        let sw = lines
            .iter()
            .find(|l| l.contains("sched_switch: prev_comm=swapper/"))
            .expect("a switch from idle");
        assert!(sw.trim_start().starts_with("<idle>-0 "), "{sw}");
        assert!(sw.contains("prev_state=R ==> next_comm="), "{sw}");
        assert!(lines.iter().any(|l| l.contains("prev_state=S ==>")));
        assert!(lines.iter().any(|l| l.contains("prev_state=X ==>")));
        assert!(lines
            .iter()
            .any(|l| l.contains(": sched_migrate_task: comm=")));
    }

    /// With `cpu_idle` on, each idle period shows as an idle-state entry and
    /// an exit on its CPU, consistent with the switches (check_trace()), in
    /// both formats: tracefs text lines and Perfetto's CpuIdleFtraceEvent
    /// (field 13: state, cpu_id). POWER10's snooze is state 0, Shared Cede
    /// state 1.
    #[test]
    fn cpu_idle_events_follow_the_idle_states() {
        let mut s = sim("power10", None, workload(8), 3);
        s.enable_trace(usize::MAX);
        s.trace.as_deref_mut().expect("trace").cpu_idle = true;
        s.run();
        check_trace(&s).expect("consistent trace");
        let tr = s.trace.as_deref().expect("trace");
        let idle: Vec<u32> = tr
            .records
            .iter()
            .filter_map(|r| match r.kind {
                TraceKind::CpuIdle { state } => Some(state),
                _ => None,
            })
            .collect();
        let entries = idle.iter().filter(|&&x| x != PWR_EVENT_EXIT).count() as u64;
        assert_eq!(entries, s.counters.idle_state_usage.iter().sum::<u64>());
        assert!(idle.contains(&0) && idle.contains(&1), "both states used");
        let mut text = Vec::new();
        write_ftrace_text(&s, &mut text).expect("text");
        let text = String::from_utf8(text).expect("utf-8");
        assert!(text.contains("cpu_idle: state=4294967295 cpu_id="));
        let mut buf = Vec::new();
        write_perfetto(&s, &mut buf).expect("write");
        let mut seen = 0;
        for p in &fields(&buf)[2..] {
            for ev in fields(&fields(&p.3)[0].3)
                .iter()
                .filter(|f| f.0 == BUNDLE_EVENT)
            {
                let ev = fields(&ev.3);
                if ev[2].0 == EVENT_CPU_IDLE {
                    let m = fields(&ev[2].3);
                    assert_eq!((m[0].0, m[1].0), (1, 2));
                    seen += 1;
                }
            }
        }
        assert_eq!(seen, idle.len());
        // Without the switch, a plain trace has no cpu_idle; neither changes
        // the simulation.
        let mut plain = sim("power10", None, workload(8), 3);
        plain.enable_trace(usize::MAX);
        plain.run();
        let tr = plain.trace.as_deref().expect("trace");
        assert!(!tr
            .records
            .iter()
            .any(|r| matches!(r.kind, TraceKind::CpuIdle { .. })));
        let mut untraced = sim("power10", None, workload(8), 3);
        untraced.run();
        for other in [&plain, &untraced] {
            assert_eq!(other.events, s.events);
            assert_eq!(format!("{:?}", other.counters), format!("{:?}", s.counters));
        }
    }
}
