//! Program interpretation: what a running thread does next.
//!
//! This is the "user space" of the simulation. It walks a task's steps,
//! starts timed activities (compute, memory, wall-time busy loops), and
//! implements the synchronisation objects (barriers, futex mutexes, condition
//! variables, semaphores, pipes and sockets) on top of the core's block and
//! wakeup primitives. It never makes scheduling decisions.
//!
//! Blocking steps follow the futex pattern: a waiter queues itself and sleeps
//! with its program counter still on the step; the waker removes the first
//! waiter(s) from the queue and wakes them; a woken task re-executes the step
//! and queues again if it lost the race. A wakeup can therefore never be lost:
//! whoever changes an object's state wakes a queued waiter whenever that
//! waiter could now proceed.

use crate::event::{EventKind, TaskId};
use crate::sim::{Sim, StopReason, WF_SYNC};
use crate::task::{Activity, SpinWait};
use rand::Rng;
use schedlab_topo::{CpuId, CpuMask};
use schedlab_workload::{Step, SyncObject};
use std::collections::VecDeque;

/// Runtime state of the non-barrier synchronisation objects, by sync id.
#[derive(Clone, Debug, Default)]
pub struct Ipc {
    objs: Vec<Obj>,
}

#[derive(Clone, Debug)]
enum Obj {
    /// A barrier (its state lives in `Sim::barriers`).
    Other,
    Mutex {
        owner: Option<TaskId>,
        /// Futex waiters by priority (pi.rs); for a PI mutex the rt_mutex's
        /// waiters, by their queued keys.
        waiters: VecDeque<TaskId>,
        /// Tasks busy-waiting in a trylock loop (`Step::SpinLock`).
        spinners: Vec<TaskId>,
        /// The CPU that released it last: its cache line is there.
        last_cpu: Option<schedlab_topo::CpuId>,
        /// Priority inheritance (`PTHREAD_PRIO_INHERIT`, pi.rs).
        pi: bool,
        /// The futex word says a waiter may sleep on it (glibc's 2, the
        /// FUTEX_WAITERS bit of a PI word): a locker slept on it, or its
        /// owner took it on the way out of a wait, so the unlock is a
        /// system call even when it finds no one to wake.
        contended: bool,
    },
    Cond {
        waiters: VecDeque<TaskId>,
    },
    Chan {
        capacity: u64,
        used: u64,
        readers: VecDeque<TaskId>,
        writers: VecDeque<TaskId>,
        /// CPU of the last write: a reader elsewhere pulls the lines over.
        writer_cpu: Option<schedlab_topo::CpuId>,
    },
    /// An anonymous pipe (fs/pipe.c): its ring of page slots, oldest first.
    Pipe {
        buffers: usize,
        page_bytes: u64,
        bufs: VecDeque<PipeBuf>,
        readers: VecDeque<TaskId>,
        writers: VecDeque<TaskId>,
        /// CPU of the last write: a reader elsewhere pulls the lines over.
        writer_cpu: Option<schedlab_topo::CpuId>,
    },
    /// One direction of an AF_UNIX stream socket (net/unix/af_unix.c).
    Sock {
        sndbuf: u64,
        /// Truesize of the queued messages (`sk_wmem_alloc` less its base).
        queued: u64,
        skbs: VecDeque<Skb>,
        readers: VecDeque<TaskId>,
        writers: VecDeque<TaskId>,
        /// CPU of the last write: a reader elsewhere pulls the lines over.
        writer_cpu: Option<schedlab_topo::CpuId>,
    },
    Sem {
        count: u64,
        waiters: VecDeque<TaskId>,
    },
    Counter {
        value: u32,
        /// Tasks polling the counter as a flag (`Step::Poll`), each while
        /// the value equals the one it holds here.
        pollers: Vec<(TaskId, u32)>,
    },
}

/// One slot of a pipe's ring (`struct pipe_buffer`): `len` unread bytes
/// that end `end` bytes into the slot's page (`offset + len`; a read moves
/// the offset up, so a read does not make room for merged writes).
#[derive(Clone, Copy, Debug)]
struct PipeBuf {
    len: u64,
    end: u64,
}

/// A queued message of a unix stream socket: `left` unread bytes of an skb
/// charged `truesize` to the writer's send buffer until the reader has
/// consumed it all.
#[derive(Clone, Copy, Debug)]
struct Skb {
    left: u64,
    truesize: u64,
}

impl Ipc {
    pub fn new(sync: &[SyncObject]) -> Ipc {
        let objs = sync
            .iter()
            .map(|s| match *s {
                SyncObject::Barrier { .. } | SyncObject::Shared { .. } => Obj::Other,
                SyncObject::Mutex | SyncObject::PiMutex => Obj::Mutex {
                    owner: None,
                    waiters: VecDeque::new(),
                    spinners: Vec::new(),
                    last_cpu: None,
                    pi: matches!(s, SyncObject::PiMutex),
                    contended: false,
                },
                SyncObject::Cond => Obj::Cond {
                    waiters: VecDeque::new(),
                },
                SyncObject::Channel { capacity } => Obj::Chan {
                    capacity: capacity.max(1),
                    used: 0,
                    readers: VecDeque::new(),
                    writers: VecDeque::new(),
                    writer_cpu: None,
                },
                SyncObject::Pipe {
                    buffers,
                    page_bytes,
                } => Obj::Pipe {
                    buffers: buffers.max(1) as usize,
                    page_bytes: page_bytes.max(1),
                    bufs: VecDeque::new(),
                    readers: VecDeque::new(),
                    writers: VecDeque::new(),
                    writer_cpu: None,
                },
                SyncObject::UnixStream { sndbuf } => Obj::Sock {
                    sndbuf: sndbuf.max(1),
                    queued: 0,
                    skbs: VecDeque::new(),
                    readers: VecDeque::new(),
                    writers: VecDeque::new(),
                    writer_cpu: None,
                },
                SyncObject::Semaphore { initial } => Obj::Sem {
                    count: initial as u64,
                    waiters: VecDeque::new(),
                },
                SyncObject::Counter => Obj::Counter {
                    value: 0,
                    pollers: Vec::new(),
                },
            })
            .collect();
        Ipc { objs }
    }

    /// The waiters of PI mutex `id`, first first.
    pub(crate) fn pi_waiters(&self, id: u32) -> Option<&VecDeque<TaskId>> {
        match self.objs.get(id as usize) {
            Some(Obj::Mutex {
                pi: true, waiters, ..
            }) => Some(waiters),
            _ => None,
        }
    }

    /// PI mutex `id`'s owner and its waiters, taken out to be reordered.
    pub(crate) fn take_pi_waiters(
        &mut self,
        id: u32,
    ) -> Option<(Option<TaskId>, VecDeque<TaskId>)> {
        match self.objs.get_mut(id as usize) {
            Some(Obj::Mutex {
                pi: true,
                owner,
                waiters,
                ..
            }) => Some((*owner, std::mem::take(waiters))),
            _ => None,
        }
    }

    /// Puts back the waiters [`Ipc::take_pi_waiters`] took.
    pub(crate) fn put_pi_waiters(&mut self, id: u32, q: VecDeque<TaskId>) {
        if let Some(Obj::Mutex { waiters, .. }) = self.objs.get_mut(id as usize) {
            *waiters = q;
        }
    }

    /// The wait lists of plain futexes (mutexes without PI, condition
    /// variables, semaphores), for the invariant checks.
    pub(crate) fn futex_lists(&self) -> Vec<&VecDeque<TaskId>> {
        self.objs
            .iter()
            .filter_map(|o| match o {
                Obj::Mutex {
                    pi: false, waiters, ..
                }
                | Obj::Cond { waiters }
                | Obj::Sem { waiters, .. } => Some(waiters),
                _ => None,
            })
            .collect()
    }

    /// Every PI mutex: (id, owner, waiters), for the invariant checks.
    pub(crate) fn pi_mutexes(&self) -> Vec<(u32, Option<TaskId>, Vec<TaskId>)> {
        self.objs
            .iter()
            .enumerate()
            .filter_map(|(i, o)| match o {
                Obj::Mutex {
                    pi: true,
                    owner,
                    waiters,
                    ..
                } => Some((i as u32, *owner, waiters.iter().copied().collect())),
                _ => None,
            })
            .collect()
    }

    /// A mutex's owner (for tests).
    #[cfg(test)]
    pub fn mutex_owner(&self, id: u32) -> Option<TaskId> {
        match self.objs.get(id as usize) {
            Some(Obj::Mutex { owner, .. }) => *owner,
            _ => None,
        }
    }

    /// A counter's value (for tests).
    #[cfg(test)]
    pub fn counter(&self, id: u32) -> Option<u32> {
        match self.objs.get(id as usize) {
            Some(Obj::Counter { value, .. }) => Some(*value),
            _ => None,
        }
    }

    /// Mutexes each task owns, indexed by task id (`n` tasks).
    pub fn owned_mutexes(&self, n: usize) -> Vec<u32> {
        let mut owned = vec![0u32; n];
        for o in &self.objs {
            if let Obj::Mutex { owner: Some(t), .. } = o {
                if let Some(c) = owned.get_mut(*t as usize) {
                    *c += 1;
                }
            }
        }
        owned
    }

    /// The tasks asleep on the byte queues (channels, pipes, unix stream
    /// sockets): `(object, task, is_writer)`.
    pub fn byte_queue_sleepers(&self) -> Vec<(u32, TaskId, bool)> {
        let mut out = Vec::new();
        for (id, o) in self.objs.iter().enumerate() {
            if let Obj::Chan {
                readers, writers, ..
            }
            | Obj::Pipe {
                readers, writers, ..
            }
            | Obj::Sock {
                readers, writers, ..
            } = o
            {
                out.extend(readers.iter().map(|&t| (id as u32, t, false)));
                out.extend(writers.iter().map(|&t| (id as u32, t, true)));
            }
        }
        out
    }

    /// Is object `id` a byte queue (channel, pipe or socket)?
    pub fn is_byte_queue(&self, id: u32) -> bool {
        matches!(
            self.objs.get(id as usize),
            Some(Obj::Chan { .. } | Obj::Pipe { .. } | Obj::Sock { .. })
        )
    }

    /// Tasks queued, spinning or polling on any object (for tests).
    #[cfg(test)]
    pub fn nr_waiters(&self) -> usize {
        self.objs
            .iter()
            .map(|o| match o {
                Obj::Other => 0,
                Obj::Counter { pollers, .. } => pollers.len(),
                Obj::Mutex {
                    waiters, spinners, ..
                } => waiters.len() + spinners.len(),
                Obj::Cond { waiters } | Obj::Sem { waiters, .. } => waiters.len(),
                Obj::Chan {
                    readers, writers, ..
                }
                | Obj::Pipe {
                    readers, writers, ..
                }
                | Obj::Sock {
                    readers, writers, ..
                } => readers.len() + writers.len(),
            })
            .sum()
    }
}

/// Cache lines of a channel's bookkeeping a reader pulls, one after the
/// other, from the CPU that wrote last (pipe mutex, `pipe_inode_info`, the
/// `pipe_buffer`, the wait-queue head; ESTIMATE).
const CHAN_META_LINES: u64 = 4;

/// What a synchronisation step did.
enum Flow {
    /// Done at once: go on with the next step.
    Next,
    /// The task blocked or started a timed activity.
    Stop,
}

/// Tasks a run may create by default (`SimConfig::max_tasks`): clone()
/// fails beyond, like a full pid space; `Counters::forks_failed` counts the
/// failures.
pub const MAX_TASKS: usize = 200_000;

/// A thread that runs this many steps in a row without one that takes time
/// (a `Loop` over lock/unlock, say) would keep simulated time standing
/// still: the run stops as a [`StopReason::Livelock`], like threads that
/// pass such steps to each other (`Sim::livelock_task` names the thread).
pub const MAX_INSTANT_STEPS: u32 = 1_000_000;

/// Whether `step`, having neither blocked nor taken time, was a system call
/// that returns to user space (its return checks for a reschedule): a read
/// or write (a pipe write that wakes pollers, `BroadcastSync`, among them),
/// sched_setattr(), sched_setaffinity(), sched_yield(), exec, a
/// clock_nanosleep() whose expiry has passed (hrtimer_sleeper_start_expires()
/// finds it expired: no sleep), a barrier's release, always; another
/// futex-based step only when it
/// woke someone, since glibc calls futex_wake() only for a waiter
/// (an uncontended unlock, a signal or post without waiters stay in user
/// space and must not act on a lazy reschedule), or when it unlocked a
/// mutex whose futex word is marked contended (glibc's 2, a PI word's
/// FUTEX_WAITERS), which glibc unlocks in the kernel even when the wait
/// list has emptied (`Sim::futex_syscall`).
fn enters_kernel(step: &Step) -> KernelEntry {
    match step {
        Step::Send { .. }
        | Step::SendNext { .. }
        | Step::Recv { .. }
        | Step::SetAttr(_)
        | Step::SetAffinity { .. }
        | Step::SetSlice { .. }
        | Step::NewProcess
        | Step::Exec
        | Step::Yield { .. }
        | Step::BroadcastSync { .. }
        | Step::Timer { .. }
        | Step::Delay { .. }
        // The last arriver's futex_wake(INT_MAX), which glibc's and
        // libgomp's barriers make whoever waits (the others block or spin).
        | Step::Barrier { .. } => KernelEntry::Always,
        Step::Unlock { .. }
        | Step::UnlockPerCpu
        | Step::Signal { .. }
        | Step::Broadcast { .. }
        | Step::BroadcastRequeue { .. }
        | Step::SemPost { .. }
        | Step::SemWait { .. } => KernelEntry::IfWoke,
        _ => KernelEntry::Never,
    }
}

/// Whether a step that neither blocked nor took time ends with a return to
/// user space ([`enters_kernel`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum KernelEntry {
    Always,
    /// Only when the step woke someone (a futex_wake() glibc makes only for
    /// a waiter) or unlocked a contended futex word.
    IfWoke,
    Never,
}

/// A fair task's timer slack (`timer_slack_ns`, init_task.c's default): a
/// nanosleep() hrtimer may fire this much after the requested time, and on a
/// CPU with no other timer in that range it does.
pub(crate) const TIMER_SLACK_NS: u64 = 50_000;

impl Sim {
    /// The timer slack of task `t` (`timer_slack_ns`): 0 under an RT or
    /// deadline policy (7.3's __setscheduler_params() sets it so), otherwise its default,
    /// which it returns to when it goes back to a fair policy.
    pub(crate) fn timer_slack_ns(&self, t: TaskId) -> u64 {
        // By policy (__setscheduler_params()): a boost leaves it.
        if !self.normal_is_fair(t) {
            0
        } else {
            self.tasks[t as usize].default_timer_slack_ns
        }
    }

    /// Runs the task's program from its program counter until a step takes
    /// time or the task blocks. The task must be running.
    pub(crate) fn advance(&mut self, t: TaskId) {
        self.advance_from(t, false);
    }

    /// [`Sim::advance`], with `from_kernel` when the task comes back from a
    /// system call that took time (a fork, a read's copy, a yield's or a
    /// requeue's own cost): its return to user space comes first.
    fn advance_from(&mut self, t: TaskId, from_kernel: bool) {
        if self.tasks[t as usize].kthread {
            self.advance_kthread(t);
            return;
        }
        let tpl = self.tasks[t as usize].template as usize;
        self.last_stepped = Some(t);
        let mut from_kernel = from_kernel;
        for _ in 0..MAX_INSTANT_STEPS {
            if from_kernel && self.return_to_user(t) {
                return;
            }
            let pc = self.tasks[t as usize].pc as usize;
            let Some(step) = self.spec.templates[tpl].steps.get(pc).cloned() else {
                self.exit_task(t);
                return;
            };
            self.tasks[t as usize].pc += 1;
            let wakeups = self.counters.wakeups;
            self.futex_syscall = false;
            let entry = enters_kernel(&step);
            from_kernel = false;
            if self.tasks[t as usize].prog_start_ns.is_none() {
                self.tasks[t as usize].prog_start_ns = Some(self.now);
                self.prog_zero_ns.get_or_insert(self.now);
            }
            match step {
                Step::RunWall { ns } => {
                    self.start_activity(t, Activity::Wall, ns as f64);
                    self.tasks[t as usize].wall_until_ns = Some(self.now.saturating_add(ns));
                    return;
                }
                Step::Send { bytes, .. } | Step::SendNext { bytes, .. } => {
                    // write_chan() names the channel of both kinds.
                    if let Some(chan) = self.tasks[t as usize].write_chan(&step) {
                        if let Flow::Stop = self.chan_send(t, chan, bytes) {
                            return;
                        }
                    }
                }
                Step::Recv { chan, bytes } => {
                    if let Flow::Stop = self.chan_recv(t, chan, bytes) {
                        return;
                    }
                }
                Step::Lock { mutex } => {
                    if let Flow::Stop = self.mutex_lock(t, mutex) {
                        return;
                    }
                }
                Step::Unlock { mutex } => self.mutex_unlock(t, mutex),
                Step::LockPerCpu { first, count } => {
                    if let Flow::Stop = self.lock_this_cpu(t, first, count) {
                        return;
                    }
                }
                Step::UnlockPerCpu => {
                    if let Some(m) = self.tasks[t as usize].percpu_lock.take() {
                        self.mutex_unlock(t, m);
                    }
                }
                Step::Wait { cond, mutex } => {
                    if let Flow::Stop = self.cond_wait(t, cond, mutex) {
                        return;
                    }
                }
                Step::Signal { cond } => {
                    self.cond_wake(t, cond, false, 0);
                }
                Step::Broadcast { cond } => {
                    self.cond_wake(t, cond, true, 0);
                    if !self.tasks[t as usize].wake_q.is_empty() {
                        return;
                    }
                }
                Step::BroadcastSync { cond } => {
                    self.cond_wake(t, cond, true, WF_SYNC);
                }
                Step::SemPost { sem } => self.sem_post(t, sem),
                Step::SemReset { sem } => {
                    if let Some(Obj::Sem { count, .. }) = self.obj(sem) {
                        *count = 0;
                    }
                }
                Step::SemWait { sem } => {
                    if let Flow::Stop = self.sem_wait(t, sem) {
                        return;
                    }
                }
                Step::Grab {
                    counter,
                    limit,
                    exit_to,
                } => {
                    let got = match self.obj(counter) {
                        Some(Obj::Counter { value, .. }) if *value < limit => {
                            *value += 1;
                            true
                        }
                        _ => false,
                    };
                    if got {
                        self.counter_changed(t, counter);
                    } else {
                        self.tasks[t as usize].pc = exit_to;
                    }
                }
                Step::TestCounter {
                    counter,
                    below,
                    else_to,
                } => {
                    let go_on = matches!(self.obj(counter), Some(Obj::Counter { value, .. }) if *value < below);
                    if !go_on {
                        self.tasks[t as usize].pc = else_to;
                    }
                }
                Step::ResetCounter { counter } => self.counter_set(t, counter, 0),
                Step::SetCounter { counter, value } => self.counter_set(t, counter, value),
                Step::Count {
                    counter,
                    delta,
                    reached,
                    jump_to,
                } => {
                    let Some(Obj::Counter { value, .. }) = self.obj(counter) else {
                        continue;
                    };
                    let v = (i64::from(*value) + i64::from(delta)).clamp(0, i64::from(u32::MAX));
                    let v = v as u32;
                    *value = v;
                    self.counter_changed(t, counter);
                    if v == reached {
                        self.tasks[t as usize].pc = jump_to;
                    }
                }
                Step::Jump { to } => self.tasks[t as usize].pc = to,
                Step::Poll {
                    counter,
                    value,
                    spin_ns,
                } => {
                    if let Flow::Stop = self.poll_flag(t, counter, value, spin_ns) {
                        return;
                    }
                }
                Step::SpinLock { mutex } => {
                    if let Flow::Stop = self.spin_lock(t, mutex) {
                        return;
                    }
                }
                Step::BroadcastRequeue {
                    cond,
                    mutex,
                    syscall_ns,
                } => {
                    let woke = self.cond_broadcast_requeue(t, cond, mutex);
                    if !self.tasks[t as usize].wake_q.is_empty() {
                        // Switched out among its wakes: the cost follows them.
                        self.tasks[t as usize].wake_q_cost_ns = syscall_ns;
                        return;
                    }
                    if woke && syscall_ns > 0 {
                        self.start_syscall_activity(t, Activity::Compute, syscall_ns as f64);
                        return;
                    }
                }
                Step::NewProcess => self.become_process(t),
                Step::Exec => {
                    self.become_process(t);
                    if let Flow::Stop = self.sched_exec(t) {
                        return;
                    }
                }
                Step::SetSlice { ns } => self.set_custom_slice(t, ns),
                Step::SetAttr(a) => {
                    self.sched_setattr(t, &a);
                    if self.stop == Some(StopReason::Exited) {
                        return;
                    }
                }
                Step::SetAffinity { cpus } => {
                    if let Flow::Stop = self.set_cpus_allowed(t, cpus.map(|m| *m)) {
                        return;
                    }
                }
                Step::Yield { syscall_ns } => {
                    let switched = matches!(self.yield_task(t), Flow::Stop);
                    if syscall_ns > 0 {
                        self.start_syscall_activity(t, Activity::Compute, syscall_ns as f64);
                        return;
                    }
                    if switched {
                        return;
                    }
                }
                Step::Timer {
                    id,
                    period_ns,
                    absolute,
                } => {
                    if let Flow::Stop = self.timer_wait(t, id, period_ns, absolute) {
                        return;
                    }
                }
                Step::MarkWoken { tag } => {
                    let w = self.tasks[t as usize].woken_at_ns;
                    self.record_mark(t, tag, w);
                }
                Step::Compute { work_ns } => {
                    self.start_activity(t, Activity::Compute, work_ns as f64);
                    return;
                }
                Step::Work {
                    work_ns,
                    working_set_bytes,
                } => {
                    self.set_working_set(t, working_set_bytes);
                    self.start_activity(t, Activity::Compute, work_ns as f64);
                    return;
                }
                Step::Share {
                    region,
                    chunk,
                    bytes,
                    write,
                } => {
                    self.share_access(t, region, chunk, bytes, write);
                }
                Step::Memory { bytes } => {
                    self.start_activity(t, Activity::Memory, bytes as f64);
                    return;
                }
                Step::Sweep {
                    bytes,
                    footprint_bytes,
                } => {
                    let cpu = self.tasks[t as usize].cpu;
                    if !self.fits_llc(cpu, footprint_bytes) {
                        self.start_activity(t, Activity::Memory, bytes as f64);
                        return;
                    }
                }
                Step::Sleep { ns } => {
                    self.sleep_for(t, ns, 0);
                    return;
                }
                Step::Nanosleep { ns } => {
                    self.hrtimer_sleep(t, ns);
                    return;
                }
                Step::NanosleepJitter { ns, jitter_ns } => {
                    let extra = if jitter_ns > 0 {
                        self.rng_jitter.gen_range(0..jitter_ns)
                    } else {
                        0
                    };
                    self.hrtimer_sleep(t, ns + extra);
                    return;
                }
                Step::Delay { ns } => {
                    let zero = self.prog_zero_ns.unwrap_or(self.now);
                    let until = zero.saturating_add(ns);
                    self.tasks[t as usize].timer_origin_ns = Some(until);
                    if until > self.now {
                        self.hrtimer_sleep(t, until - self.now);
                        return;
                    }
                }
                Step::Barrier { id, spin_ns } => {
                    if !self.barrier_arrive(t, id, spin_ns) {
                        return;
                    }
                }
                Step::Spawn { template } => {
                    // clone() costs the parent time before the child exists.
                    let cost_ns = self.fork_jitter_ns();
                    self.tasks[t as usize].pending_spawn = Some(template);
                    self.start_activity(t, Activity::Compute, cost_ns as f64);
                    return;
                }
                Step::Mark { tag } => self.record_mark(t, tag, self.now),
                Step::ForkLimit { template, limit } => {
                    if !self.fork_allowed(t, template, limit) {
                        return;
                    }
                }
                Step::Loop { start, count, slot } => {
                    let s = (slot as usize).min(3);
                    let tk = &mut self.tasks[t as usize];
                    tk.loop_counts[s] += 1;
                    if tk.loop_counts[s] < count {
                        tk.pc = start;
                    } else {
                        tk.loop_counts[s] = 0;
                    }
                }
                Step::Exit => {
                    self.exit_task(t);
                    return;
                }
            }
            let futex_syscall = std::mem::take(&mut self.futex_syscall);
            from_kernel = match entry {
                KernelEntry::Always => true,
                KernelEntry::IfWoke => self.counters.wakeups != wakeups || futex_syscall,
                KernelEntry::Never => false,
            };
            // A lock just taken whose line is on another CPU: the transfer is
            // time the new owner spends holding it, a latency in ns whatever
            // the CPU's speed.
            let xfer = std::mem::take(&mut self.tasks[t as usize].lock_xfer_ns);
            if xfer > 0 {
                self.start_activity(t, Activity::Wall, xfer as f64);
                return;
            }
        }
        // Left where it is, due to continue at this instant; the run stops.
        self.stop = Some(StopReason::Livelock);
        self.livelock_task = Some(t);
        self.start_activity(t, Activity::Compute, 0.0);
    }

    fn exit_task(&mut self, t: TaskId) {
        // futex_exit_release() → exit_pi_state_list(): each PI mutex the
        // task still owns with waiters (a kernel pi_state) passes to its
        // first waiter. One without waiters was taken in user space: its
        // futex word keeps the dead owner's TID, and a later locker waits
        // forever (FUTEX_LOCK_PI fails with ESRCH, glibc then sleeps).
        let with_waiters: Vec<u32> = self.tasks[t as usize]
            .pi
            .as_deref()
            .map(|p| p.owned.clone())
            .unwrap_or_default()
            .into_iter()
            .filter(|&m| self.ipc.pi_waiters(m).is_some_and(|q| !q.is_empty()))
            .collect();
        for m in with_waiters {
            self.mutex_unlock(t, m);
        }
        self.tasks[t as usize].activity = Activity::Idle;
        self.block_current(t, true);
    }

    /// [`Sim::start_activity`] for the timed part of a system call (a
    /// read's copy, a yield's or a requeue's own cost, a switch-out inside
    /// the kernel): its end returns to user space ([`Sim::step_done`]).
    fn start_syscall_activity(&mut self, t: TaskId, a: Activity, amount: f64) {
        self.tasks[t as usize].syscall_return = true;
        self.start_activity(t, a, amount);
    }

    pub(crate) fn start_activity(&mut self, t: TaskId, a: Activity, amount: f64) {
        let tk = &mut self.tasks[t as usize];
        tk.activity = a;
        tk.remaining = amount;
        tk.settled_ns = self.now;
        self.begin_activity(t);
    }

    /// The return to user space after a system call (mirrors
    /// exit_to_user_mode_loop()): a lazy reschedule request is acted on, and
    /// a reschedule due on the task's CPU switches it out before its next
    /// step, which goes on when it runs again (from an event at this
    /// instant). True when it is switched out. A request from another CPU
    /// counts at once, its IPI still in flight: resched_curr() set the
    /// task's TIF_NEED_RESCHED before sending it.
    fn return_to_user(&mut self, t: TaskId) -> bool {
        let cpu = self.tasks[t as usize].cpu;
        if self.rqs[cpu as usize].curr != Some(t) {
            return false;
        }
        self.resched_lazy_honour(cpu);
        let rq = &self.rqs[cpu as usize];
        if rq.need_resched {
            if rq.resched_at_ns > self.now {
                // The IPI is still on its way: the flag it carries is read
                // now, and the IPI then finds the request served.
                self.resched_after(cpu, 0);
            }
            // (Wall: a placeholder that pays no hardware stall of the next step.)
            self.start_activity(t, Activity::Wall, 0.0);
            return true;
        }
        false
    }

    /// Wakes `wakees` in order for the running task `t` (mirrors
    /// wake_up_q() after futex_wake() has taken them off the futex): every
    /// try_to_wake_up() ends with a preempt_enable(), so a wakee that makes
    /// a non-lazy reschedule of `t`'s CPU due (an RT or deadline wakee, a
    /// fair one under preempt=full; [`Sim::preempt_due`]) switches `t` out
    /// there, before it wakes the rest. They wait in `Task::wake_q` until
    /// `t` runs again ([`Sim::step_done`]). True when `t` was switched out.
    pub(crate) fn wake_up_q(&mut self, t: TaskId, mut wakees: VecDeque<TaskId>) -> bool {
        while let Some(w) = wakees.pop_front() {
            self.wake_waiter(w, t, 0);
            if !wakees.is_empty() && self.feat(crate::Feat::WAKE_Q) && self.preempt_due(t) {
                self.counters.wake_q_preemptions += 1;
                self.tasks[t as usize].wake_q = wakees;
                // Switched out inside the system call: its return to user
                // space comes when the wakes are done.
                self.start_syscall_activity(t, Activity::Wall, 0.0);
                return true;
            }
        }
        false
    }

    /// A per-CPU system kthread: one compute burst per wakeup, then sleep.
    fn advance_kthread(&mut self, t: TaskId) {
        let tk = &mut self.tasks[t as usize];
        if tk.pc == 0 && tk.remaining > 0.0 {
            tk.pc = 1;
            let r = tk.remaining;
            self.start_activity(t, Activity::Compute, r);
        } else {
            tk.pc = 0;
            tk.remaining = 0.0;
            tk.activity = Activity::Idle;
            self.block_current(t, false);
        }
    }

    /// The running task's timed step finished.
    pub(crate) fn step_done(&mut self, t: TaskId) {
        self.stop_running(t);
        let tk = &mut self.tasks[t as usize];
        tk.remaining = 0.0;
        tk.activity = Activity::Idle;
        tk.wall_until_ns = None;
        let syscall_return = std::mem::take(&mut tk.syscall_return);
        if !tk.wake_q.is_empty() {
            // Back from preempt_schedule() inside wake_up_q(): the rest of
            // the wakes, then the system call's own cost if it has one.
            let rest = std::mem::take(&mut tk.wake_q);
            if self.wake_up_q(t, rest) {
                return;
            }
            let cost_ns = std::mem::take(&mut self.tasks[t as usize].wake_q_cost_ns);
            if cost_ns > 0 {
                self.start_syscall_activity(t, Activity::Compute, cost_ns as f64);
                return;
            }
            self.advance_from(t, true);
            return;
        }
        let spawn = tk
            .pending_spawn
            .take()
            .filter(|&tpl| (tpl as usize) < self.spec.templates.len());
        // A fork bomb (rt-app `fork` in an endless loop) must not exhaust
        // memory: beyond `max_tasks`, clone() fails.
        let spawn = spawn.filter(|_| {
            let ok = self.tasks.len() < self.cfg.max_tasks;
            if !ok {
                self.counters.forks_failed += 1;
            }
            ok
        });
        if let (Some(_), true) = (spawn, self.dl_policy(t)) {
            // sched_fork(): a SCHED_DEADLINE task cannot fork (EAGAIN, no
            // reset-on-fork; its policy's priority counts, not a boost),
            // and rt-app exits.
            self.workload_exits(
                t,
                "clone() failed with EAGAIN: a SCHED_DEADLINE thread cannot fork".to_string(),
            );
            return;
        }
        if let Some(tpl) = spawn {
            let cpu = self.tasks[t as usize].cpu;
            self.spawn(tpl, Some(t), cpu);
            // The child may have preempted us on this CPU; then we continue later.
            if self.rqs[cpu as usize].curr != Some(t) {
                return;
            }
            self.advance_from(t, true);
            return;
        }
        self.advance_from(t, syscall_return);
    }

    /// Arrives at a barrier. Returns true when the task goes on at once (it
    /// was the last to arrive), false when it spins or blocks, or when a
    /// wakeup of its release switched it out ([`Sim::wake_up_q`]).
    fn barrier_arrive(&mut self, t: TaskId, id: u32, spin_ns: u64) -> bool {
        let id = id as usize;
        if id >= self.barriers.len() {
            return true;
        }
        let b = &mut self.barriers[id];
        b.arrived += 1;
        if b.arrived >= b.parties {
            b.arrived = 0;
            b.gen = b.gen.wrapping_add(1);
            let sleepers = std::mem::take(&mut b.sleepers);
            let spinners = std::mem::take(&mut b.spinners);
            let waker_cpu = self.tasks[t as usize].cpu;
            self.counters.barrier_releases += 1;
            for s in spinners {
                self.release_spinner(s, waker_cpu);
            }
            for &s in &sleepers {
                self.tasks[s as usize].barrier_wait = None;
            }
            // The last arriver's futex_wake(INT_MAX).
            return !self.wake_up_q(t, sleepers);
        }
        let gen = b.gen;
        let tk = &mut self.tasks[t as usize];
        tk.barrier_wait = Some((id as u32, gen));
        if spin_ns > 0 {
            // The spin is a loop with a bounded iteration count: its budget is
            // work, consumed only while the waiter runs and at its CPU's speed.
            self.barriers[id].spinners.push(t);
            let tk = &mut self.tasks[t as usize];
            tk.activity = Activity::Spin;
            tk.remaining = spin_ns as f64;
            tk.settled_ns = self.now;
            self.begin_activity(t);
        } else {
            crate::pi::futex_enqueue(&self.tasks, &mut self.barriers[id].sleepers, t);
            self.tasks[t as usize].activity = Activity::Idle;
            self.block_current(t, false);
        }
        false
    }

    /// A spinning waiter sees the release after the cache line reaches it.
    fn release_spinner(&mut self, s: TaskId, waker_cpu: schedlab_topo::CpuId) {
        self.tasks[s as usize].barrier_wait = None;
        self.tasks[s as usize].spin_wait = None;
        let tk = &self.tasks[s as usize];
        let running = self.rqs[tk.cpu as usize].curr == Some(s);
        let lat = self.machine.c2c_ns(waker_cpu, tk.cpu) as f64;
        // The line's latency is wall time, not work at the CPU's speed.
        if running {
            self.settle(s);
            let tk = &mut self.tasks[s as usize];
            tk.activity = Activity::Wall;
            tk.remaining = lat.max(1.0);
            self.begin_activity(s);
        } else {
            // Preempted while spinning: it goes on when it next runs.
            let tk = &mut self.tasks[s as usize];
            tk.activity = Activity::Wall;
            tk.remaining = lat.max(1.0);
        }
    }

    /// A spinning waiter's budget ran out: at a barrier it sleeps (futex
    /// wait); a flag poller goes on with its next step.
    pub(crate) fn spin_end(&mut self, t: TaskId) {
        if let Some(SpinWait::Flag(c)) = self.tasks[t as usize].spin_wait {
            self.tasks[t as usize].spin_wait = None;
            if let Some(Obj::Counter { pollers, .. }) = self.obj(c) {
                pollers.retain(|&(p, _)| p != t);
            }
            self.counters.spin_timeouts += 1;
            self.step_done(t);
            return;
        }
        let Some((id, gen)) = self.tasks[t as usize].barrier_wait else {
            return;
        };
        let b = &mut self.barriers[id as usize];
        if b.gen != gen {
            return;
        }
        if let Some(i) = b.spinners.iter().position(|&x| x == t) {
            b.spinners.remove(i);
        }
        crate::pi::futex_enqueue(&self.tasks, &mut b.sleepers, t);
        self.counters.spin_timeouts += 1;
        self.tasks[t as usize].activity = Activity::Idle;
        self.block_current(t, false);
    }
}

// ----- futex-style objects --------------------------------------------------

impl Sim {
    /// Puts the running task to sleep with its program counter back on the
    /// current step, so that it re-executes it when woken.
    fn sleep_on_step(&mut self, t: TaskId) -> Flow {
        let tk = &mut self.tasks[t as usize];
        tk.pc = tk.pc.saturating_sub(1);
        tk.activity = Activity::Idle;
        self.block_current(t, false);
        Flow::Stop
    }

    /// Wakes a waiter taken off an object's queue.
    fn wake_waiter(&mut self, w: TaskId, waker: TaskId, flags: u32) {
        let waker_cpu = self.tasks[waker as usize].cpu;
        self.tasks[w as usize].woken_at_ns = self.now;
        self.try_to_wake_up(w, waker_cpu, Some(waker), flags);
    }

    fn obj(&mut self, id: u32) -> Option<&mut Obj> {
        self.ipc.objs.get_mut(id as usize)
    }

    /// `Send` on a generic `Channel`: copy what fits, wake a reader with
    /// WF_SYNC, sleep while the buffer is full. A `Pipe` goes to
    /// [`Sim::pipe_write`], a `UnixStream` to [`Sim::unix_stream_send`].
    fn chan_send(&mut self, t: TaskId, chan: u32, bytes: u64) -> Flow {
        let left = match self.tasks[t as usize].io_left {
            0 => bytes,
            n => n,
        };
        if left == 0 {
            return Flow::Next;
        }
        match self.obj(chan) {
            Some(Obj::Pipe { .. }) => return self.pipe_write(t, chan, left),
            Some(Obj::Sock { .. }) => return self.unix_stream_send(t, chan, left),
            _ => {}
        }
        let cpu = self.tasks[t as usize].cpu;
        let Some(Obj::Chan {
            capacity,
            used,
            readers,
            writers,
            writer_cpu,
        }) = self.obj(chan)
        else {
            return Flow::Next;
        };
        let n = (*capacity - *used).min(left);
        *used += n;
        if n > 0 {
            *writer_cpu = Some(cpu);
        }
        let left = left - n;
        let reader = if n > 0 { readers.pop_front() } else { None };
        let next_writer = if left == 0 && *used < *capacity {
            writers.pop_front()
        } else {
            None
        };
        if left > 0 {
            writers.push_back(t);
        }
        self.tasks[t as usize].io_left = left;
        if let Some(r) = reader {
            self.wake_waiter(r, t, WF_SYNC);
        }
        if let Some(w) = next_writer {
            self.wake_waiter(w, t, WF_SYNC);
        }
        if left > 0 {
            return self.sleep_on_step(t);
        }
        Flow::Next
    }

    /// `Recv` on a generic `Channel`, in a loop until `bytes` arrived: take
    /// what is there, wake a writer with WF_SYNC, sleep while empty. A `Pipe`
    /// goes to [`Sim::pipe_read`], a `UnixStream` to
    /// [`Sim::unix_stream_recv`].
    fn chan_recv(&mut self, t: TaskId, chan: u32, bytes: u64) -> Flow {
        let left = match self.tasks[t as usize].io_left {
            0 => bytes,
            n => n,
        };
        if left == 0 {
            return Flow::Next;
        }
        match self.obj(chan) {
            Some(Obj::Pipe { .. }) => return self.pipe_read(t, chan, bytes, left),
            Some(Obj::Sock { .. }) => return self.unix_stream_recv(t, chan, bytes, left),
            _ => {}
        }
        let Some(Obj::Chan {
            used,
            readers,
            writers,
            writer_cpu,
            ..
        }) = self.obj(chan)
        else {
            return Flow::Next;
        };
        let from = *writer_cpu;
        let n = (*used).min(left);
        *used -= n;
        let left = left - n;
        let writer = if n > 0 { writers.pop_front() } else { None };
        let next_reader = if left == 0 && *used > 0 {
            readers.pop_front()
        } else {
            None
        };
        if left > 0 {
            readers.push_back(t);
        }
        self.tasks[t as usize].io_left = left;
        if let Some(w) = writer {
            self.wake_waiter(w, t, WF_SYNC);
        }
        if let Some(r) = next_reader {
            self.wake_waiter(r, t, WF_SYNC);
        }
        if left > 0 {
            return self.sleep_on_step(t);
        }
        self.pull_message(t, from, n, bytes)
    }

    /// A read completed `bytes`, `n` of them in its last pass: the data and
    /// the pipe's bookkeeping come from the writer's CPU, the whole message,
    /// also the bytes earlier passes took before the reader slept for the
    /// rest (each read() copies what it gets).
    fn pull_message(
        &mut self,
        t: TaskId,
        from: Option<schedlab_topo::CpuId>,
        n: u64,
        bytes: u64,
    ) -> Flow {
        let cpu = self.tasks[t as usize].cpu;
        match from {
            Some(f) if f != cpu && n > 0 => {
                let line = self.machine.caches.first().map_or(64, |c| c.line_bytes);
                let ns = schedlab_hw::transfer_ns(&self.machine, f, cpu, bytes, line)
                    + schedlab_hw::dependent_transfer_ns(&self.machine, f, cpu, CHAN_META_LINES);
                self.start_syscall_activity(t, Activity::Wall, ns as f64);
                Flow::Stop
            }
            _ => Flow::Next,
        }
    }

    /// anon_pipe_write() (fs/pipe.c) of the `left` bytes a write still has to
    /// copy. A write that has not slept yet first appends the part of its
    /// length that is not a whole number of pages to the last slot's page,
    /// if the pipe is not empty and that page has room; then it copies page
    /// after page into free slots. While every slot is in use it sleeps
    /// (exclusively, at the tail of the queue) with the rest. Into a pipe
    /// that was empty when it started (or woke) it wakes a sleeping reader;
    /// after having slept, if it leaves a slot free it wakes the next
    /// sleeping writer (`wake_next_writer`); both with WF_SYNC
    /// (wake_up_interruptible_sync_poll()).
    fn pipe_write(&mut self, t: TaskId, chan: u32, left: u64) -> Flow {
        // The step runs again after each sleep with what is left in io_left.
        let resumed = self.tasks[t as usize].io_left > 0;
        let cpu = self.tasks[t as usize].cpu;
        let Some(Obj::Pipe {
            buffers,
            page_bytes,
            bufs,
            readers,
            writers,
            writer_cpu,
        }) = self.obj(chan)
        else {
            return Flow::Next;
        };
        let (buffers, page) = (*buffers, *page_bytes);
        let was_empty = bufs.is_empty();
        let mut rest = left;
        let chars = rest % page;
        if !resumed && !was_empty && chars > 0 {
            if let Some(last) = bufs.back_mut() {
                if last.end + chars <= page {
                    last.len += chars;
                    last.end += chars;
                    rest -= chars;
                }
            }
        }
        while rest > 0 && bufs.len() < buffers {
            let c = rest.min(page);
            bufs.push_back(PipeBuf { len: c, end: c });
            rest -= c;
        }
        if rest < left {
            *writer_cpu = Some(cpu);
        }
        let reader = if was_empty && rest < left {
            readers.pop_front()
        } else {
            None
        };
        let next_writer = if rest == 0 && resumed && bufs.len() < buffers {
            writers.pop_front()
        } else {
            None
        };
        if rest > 0 {
            writers.push_back(t);
        }
        self.tasks[t as usize].io_left = rest;
        if let Some(r) = reader {
            self.wake_waiter(r, t, WF_SYNC);
        }
        if let Some(w) = next_writer {
            self.wake_waiter(w, t, WF_SYNC);
        }
        if rest > 0 {
            return self.sleep_on_step(t);
        }
        Flow::Next
    }

    /// anon_pipe_read() in a loop until the message's `bytes` arrived (`left`
    /// of them still to come): take what the slots hold, oldest first; a
    /// slot emptied while every slot was in use makes the read wake one
    /// sleeping writer with WF_SYNC (`wake_writer`: a read from a pipe that
    /// was not full wakes nobody). With nothing to take it sleeps; a read
    /// that slept and leaves data behind wakes the next sleeping reader.
    fn pipe_read(&mut self, t: TaskId, chan: u32, bytes: u64, left: u64) -> Flow {
        let resumed = self.tasks[t as usize].io_left > 0;
        let Some(Obj::Pipe {
            buffers,
            bufs,
            readers,
            writers,
            writer_cpu,
            ..
        }) = self.obj(chan)
        else {
            return Flow::Next;
        };
        let from = *writer_cpu;
        let mut rest = left;
        let mut wake_writer = false;
        while rest > 0 {
            let full = bufs.len() >= *buffers;
            let Some(b) = bufs.front_mut() else {
                break;
            };
            let c = b.len.min(rest);
            b.len -= c;
            rest -= c;
            if b.len == 0 {
                wake_writer |= full;
                bufs.pop_front();
            }
        }
        let n = left - rest;
        let writer = if wake_writer {
            writers.pop_front()
        } else {
            None
        };
        let next_reader = if rest == 0 && resumed && !bufs.is_empty() {
            readers.pop_front()
        } else {
            None
        };
        if rest > 0 {
            readers.push_back(t);
        }
        self.tasks[t as usize].io_left = rest;
        if let Some(w) = writer {
            self.wake_waiter(w, t, WF_SYNC);
        }
        if let Some(r) = next_reader {
            self.wake_waiter(r, t, WF_SYNC);
        }
        if rest > 0 {
            return self.sleep_on_step(t);
        }
        self.pull_message(t, from, n, bytes)
    }

    /// unix_stream_sendmsg() of the `left` bytes (skb truesize) a write still
    /// has to queue: while the queued truesize is below the send buffer
    /// (sock_alloc_send_pskb()'s test) it queues a message, at most
    /// `sndbuf / 2 - 64` bytes ("keep two messages in the pipe"), whole even
    /// if that overshoots the buffer, and each one wakes every sleeping
    /// reader (sk_data_ready = sock_def_readable(), WF_SYNC; readers wait
    /// non-exclusively in unix_stream_data_wait()). With the buffer full it
    /// sleeps in sock_wait_for_wmem(), a non-exclusive wait: every such
    /// writer is woken together by [`Sim::unix_stream_recv`].
    fn unix_stream_send(&mut self, t: TaskId, chan: u32, left: u64) -> Flow {
        let cpu = self.tasks[t as usize].cpu;
        let Some(Obj::Sock {
            sndbuf,
            queued,
            skbs,
            readers,
            writers,
            writer_cpu,
        }) = self.obj(chan)
        else {
            return Flow::Next;
        };
        let max_skb = (*sndbuf / 2).saturating_sub(64).max(1);
        let mut rest = left;
        while rest > 0 && *queued < *sndbuf {
            let c = rest.min(max_skb);
            skbs.push_back(Skb {
                left: c,
                truesize: c,
            });
            *queued += c;
            rest -= c;
        }
        let readers: Vec<TaskId> = if rest < left {
            *writer_cpu = Some(cpu);
            readers.drain(..).collect()
        } else {
            Vec::new()
        };
        if rest > 0 {
            writers.push_back(t);
        }
        self.tasks[t as usize].io_left = rest;
        for r in readers {
            self.wake_waiter(r, t, WF_SYNC);
        }
        if rest > 0 {
            return self.sleep_on_step(t);
        }
        Flow::Next
    }

    /// unix_stream_read_generic() in a loop until the message's `bytes`
    /// arrived (`left` still to come): take the queued messages' bytes,
    /// oldest first; a message read to its end is freed (consume_skb() →
    /// sock_wfree()), and unix_write_space() then wakes every sleeping
    /// writer, with WF_SYNC, if the socket is writable: unix_writable(),
    /// 4 × `sk_wmem_alloc` ≤ `sk_sndbuf`, where the counter holds the
    /// queued truesize plus its base of 1 and the 1 sock_wfree() keeps
    /// until the call returns. Until then a read wakes no writer. With
    /// nothing queued the reader sleeps (non-exclusively).
    fn unix_stream_recv(&mut self, t: TaskId, chan: u32, bytes: u64, left: u64) -> Flow {
        let Some(Obj::Sock {
            sndbuf,
            queued,
            skbs,
            readers,
            writers,
            writer_cpu,
        }) = self.obj(chan)
        else {
            return Flow::Next;
        };
        let from = *writer_cpu;
        let mut rest = left;
        let mut writable = false;
        while rest > 0 {
            let Some(skb) = skbs.front_mut() else {
                break;
            };
            let c = skb.left.min(rest);
            skb.left -= c;
            rest -= c;
            if skb.left == 0 {
                *queued -= skb.truesize;
                skbs.pop_front();
                writable |= 4 * (*queued + 2) <= *sndbuf;
            }
        }
        let n = left - rest;
        let writers: Vec<TaskId> = if writable {
            writers.drain(..).collect()
        } else {
            Vec::new()
        };
        if rest > 0 {
            readers.push_back(t);
        }
        self.tasks[t as usize].io_left = rest;
        for w in writers {
            self.wake_waiter(w, t, WF_SYNC);
        }
        if rest > 0 {
            return self.sleep_on_step(t);
        }
        self.pull_message(t, from, n, bytes)
    }

    /// pthread_mutex_lock(): take a free lock, otherwise futex-wait. The
    /// mutex is not recursive (glibc's default type): its owner locking it
    /// again waits for itself forever.
    fn mutex_lock(&mut self, t: TaskId, m: u32) -> Flow {
        let Some(&Obj::Mutex {
            owner,
            last_cpu,
            pi,
            ..
        }) = self.ipc.objs.get(m as usize)
        else {
            return Flow::Next;
        };
        // A locker back from a futex wait takes the word with the waiters
        // mark (glibc's __lll_lock_wait() and the condition variable's
        // re-lock exchange in 2).
        let waited = std::mem::take(&mut self.tasks[t as usize].futex_waited);
        match owner {
            None => {
                if let Some(Obj::Mutex {
                    owner, contended, ..
                }) = self.obj(m)
                {
                    *owner = Some(t);
                    *contended |= waited;
                }
                self.tasks[t as usize].lock_xfer_ns = self.take_lock_line(t, last_cpu);
                if pi {
                    self.pi_took(t, m);
                }
                Flow::Next
            }
            // Woken by an unlock that handed it the PI mutex: the futex
            // word names it, and only the lock's cache line is to move.
            Some(o) if o == t && pi && self.pi_take_handed(t, m) => {
                self.tasks[t as usize].lock_xfer_ns = self.lock_line_ns(t, last_cpu);
                Flow::Next
            }
            Some(o) => {
                if pi && self.tasks[o as usize].state == crate::task::TaskState::Dead {
                    // FUTEX_LOCK_PI on a mutex whose owner died fails with
                    // ESRCH (handle_exit_race()) and glibc sleeps for good:
                    // no rt_mutex waiter, no boost.
                } else if pi {
                    let cpu = self.tasks[t as usize].cpu;
                    self.pi_block(t, m, o, cpu);
                } else if let Some(Obj::Mutex { waiters, .. }) = self.ipc.objs.get_mut(m as usize) {
                    crate::pi::futex_enqueue(&self.tasks, waiters, t);
                }
                if let Some(Obj::Mutex { contended, .. }) = self.obj(m) {
                    *contended = true;
                }
                self.tasks[t as usize].futex_waited = true;
                self.sleep_on_step(t)
            }
        }
    }

    /// pthread_mutex_unlock(): release and futex-wake the first waiter (by
    /// priority, pi.rs). A task spinning on the lock on a CPU right now
    /// takes it first (the one the lock's cache line reaches soonest); the
    /// woken waiter then finds it taken and queues again, as a futex waiter
    /// does. A PI mutex with waiters passes to the first of them instead,
    /// and its old owner's boost ends (wake_futex_pi()); only its owner can
    /// unlock it.
    fn mutex_unlock(&mut self, t: TaskId, m: u32) {
        let from = self.tasks[t as usize].cpu;
        let (pi, handoff) = match self.ipc.objs.get(m as usize) {
            // FUTEX_UNLOCK_PI by a task that does not own the PI mutex
            // fails (EPERM), and the program goes on.
            Some(Obj::Mutex {
                pi: true, owner, ..
            }) if *owner != Some(t) => return,
            Some(Obj::Mutex { pi, waiters, .. }) => (*pi, *pi && !waiters.is_empty()),
            _ => return,
        };
        let taker = match self.ipc.objs.get(m as usize) {
            Some(Obj::Mutex { spinners, .. }) if !handoff => spinners
                .iter()
                .copied()
                .filter(|&s| self.rqs[self.tasks[s as usize].cpu as usize].curr == Some(s))
                .min_by_key(|&s| self.machine.c2c_ns(from, self.tasks[s as usize].cpu)),
            _ => None,
        };
        let Some(Obj::Mutex {
            owner,
            waiters,
            spinners,
            last_cpu,
            contended,
            ..
        }) = self.obj(m)
        else {
            return;
        };
        *last_cpu = Some(from);
        // Only a word with the waiters mark makes the unlock a system call
        // (glibc's lll_unlock() on 2, FUTEX_UNLOCK_PI); wake_futex_pi()
        // leaves the mark in the word it gives the new owner.
        let syscall = std::mem::replace(contended, handoff);
        // The owner loses the lock (an unlock by another thread, which a
        // program may do, releases it all the same).
        let released = owner.take();
        // lll_unlock() calls futex_wake() only when the word was 2: a word
        // of 1 (taken by a compare-and-swap after the last unlock, before
        // the waiter that unlock woke re-locked) wakes no one.
        let woken = if syscall || pi {
            waiters.pop_front()
        } else {
            None
        };
        let next = if handoff { woken } else { taker };
        *owner = next;
        if let Some(s) = taker {
            spinners.retain(|&x| x != s);
        }
        if taker.is_some() && woken.is_some() {
            self.counters.lock_steals += 1;
        }
        if let Some(o) = released {
            let held = &mut self.tasks[o as usize].locks_held;
            *held = held.saturating_sub(1);
        }
        if let Some(n) = next {
            self.tasks[n as usize].locks_held += 1;
        }
        if pi {
            if let Some(s) = taker {
                self.pi_took(s, m);
            }
            self.pi_release(released, m, woken.filter(|_| handoff), from);
        }
        if let Some(s) = taker {
            self.release_spinner(s, from);
        }
        if let Some(w) = woken {
            self.wake_waiter(w, t, 0);
        }
        self.futex_syscall |= syscall;
    }

    /// `while (pthread_mutex_trylock(m) == EBUSY);`: take the lock if it is
    /// free, otherwise spin (no bound, no sleep) until an unlock hands it over
    /// or, if preempted meanwhile, until the spinner runs again and finds it
    /// free ([`Sim::lock_spinner_resumes`]).
    fn spin_lock(&mut self, t: TaskId, m: u32) -> Flow {
        let Some(Obj::Mutex {
            owner,
            spinners,
            last_cpu,
            ..
        }) = self.obj(m)
        else {
            return Flow::Next;
        };
        match *owner {
            None => {
                *owner = Some(t);
                let from = *last_cpu;
                self.tasks[t as usize].lock_xfer_ns = self.take_lock_line(t, from);
                self.pi_took_if(t, m);
                Flow::Next
            }
            Some(o) if o == t => Flow::Next,
            Some(_) => {
                spinners.push(t);
                self.tasks[t as usize].spin_wait = Some(SpinWait::Lock(m));
                self.start_activity(t, Activity::Spin, f64::INFINITY);
                Flow::Stop
            }
        }
    }

    /// schbench's lock_this_cpu(): sched_getcpu(), then `while
    /// (pthread_mutex_trylock(lock) != 0) nop;` on that CPU's lock — a spin
    /// ([`Sim::spin_lock`]), never a sleep — then sched_getcpu() again: a
    /// thread migrated while it spun releases the lock it got and starts over
    /// with its new CPU's. A spinning thread leaves its program counter on
    /// the step, so that once it has the lock the step runs again and makes
    /// that second check (`percpu_lock` names the lock it went for).
    fn lock_this_cpu(&mut self, t: TaskId, first: u32, count: u32) -> Flow {
        let cpu = self.tasks[t as usize].cpu as u32;
        let want = first.saturating_add(cpu % count.max(1));
        if let Some(m) = self.tasks[t as usize].percpu_lock {
            let held = matches!(
                self.ipc.objs.get(m as usize),
                Some(Obj::Mutex { owner: Some(o), .. }) if *o == t
            );
            if held {
                if m == want {
                    return Flow::Next;
                }
                // Got the lock, but on another CPU: unlock, again.
                self.tasks[t as usize].percpu_lock = None;
                self.mutex_unlock(t, m);
            }
        }
        self.tasks[t as usize].percpu_lock = Some(want);
        match self.spin_lock(t, want) {
            Flow::Next => Flow::Next,
            Flow::Stop => {
                let tk = &mut self.tasks[t as usize];
                tk.pc = tk.pc.saturating_sub(1);
                Flow::Stop
            }
        }
    }

    /// A lock spinner is switched back in: if the lock was released while it
    /// was preempted and nobody took it, its next trylock succeeds. Returns
    /// true when it took the lock (it then goes on with its program).
    pub(crate) fn lock_spinner_resumes(&mut self, t: TaskId) -> bool {
        let Some(SpinWait::Lock(m)) = self.tasks[t as usize].spin_wait else {
            return false;
        };
        let Some(Obj::Mutex {
            owner,
            spinners,
            last_cpu,
            ..
        }) = self.obj(m)
        else {
            return false;
        };
        if owner.is_some() {
            return false;
        }
        *owner = Some(t);
        spinners.retain(|&x| x != t);
        let from = *last_cpu;
        self.pi_took_if(t, m);
        self.tasks[t as usize].spin_wait = None;
        let xfer = self.take_lock_line(t, from);
        let tk = &mut self.tasks[t as usize];
        tk.activity = Activity::Wall;
        tk.remaining = (xfer as f64).max(1.0);
        true
    }

    /// `t` just took a free mutex that `from` released last: it owns one
    /// more lock. Returns the transfer of the lock's cache line when it is on
    /// another CPU (core-to-core latency, as a lock handed to a spinner pays
    /// in release_spinner()), time `t` spends holding the lock; else 0.
    fn take_lock_line(&mut self, t: TaskId, from: Option<schedlab_topo::CpuId>) -> u64 {
        self.tasks[t as usize].locks_held += 1;
        self.lock_line_ns(t, from)
    }

    /// The transfer of a lock's cache line from `from`, the CPU that
    /// released it last, to `t`'s (core-to-core latency; 0 on the same CPU).
    fn lock_line_ns(&self, t: TaskId, from: Option<schedlab_topo::CpuId>) -> u64 {
        let cpu = self.tasks[t as usize].cpu;
        from.filter(|&f| f != cpu)
            .map_or(0, |f| u64::from(self.machine.c2c_ns(f, cpu)))
    }

    /// `Step::Poll`: spin while the flag equals `value`, at most `spin_ns`.
    fn poll_flag(&mut self, t: TaskId, c: u32, value: u32, spin_ns: u64) -> Flow {
        let Some(Obj::Counter { value: v, pollers }) = self.obj(c) else {
            return Flow::Next;
        };
        if *v != value || spin_ns == 0 {
            return Flow::Next;
        }
        pollers.push((t, value));
        self.tasks[t as usize].spin_wait = Some(SpinWait::Flag(c));
        self.start_activity(t, Activity::Spin, spin_ns as f64);
        Flow::Stop
    }

    /// Sets a counter and releases the pollers it concerns.
    fn counter_set(&mut self, t: TaskId, c: u32, value: u32) {
        if let Some(Obj::Counter { value: v, .. }) = self.obj(c) {
            *v = value;
            self.counter_changed(t, c);
        }
    }

    /// A counter changed: pollers spinning while it held another value see
    /// the change once the cache line reaches them.
    fn counter_changed(&mut self, t: TaskId, c: u32) {
        let Some(Obj::Counter { value, pollers }) = self.obj(c) else {
            return;
        };
        if pollers.is_empty() {
            return;
        }
        let v = *value;
        let mut released = Vec::new();
        pollers.retain(|&(p, want)| {
            let keep = want == v;
            if !keep {
                released.push(p);
            }
            keep
        });
        let from = self.tasks[t as usize].cpu;
        for p in released {
            self.release_spinner(p, from);
        }
    }

    /// pthread_cond_broadcast() in glibc before 2.25 (FUTEX_CMP_REQUEUE):
    /// wake the first waiter and move the others onto the mutex's wait
    /// queue, so that each unlock wakes one of them. With the mutex not held
    /// (the requeue would strand them) every waiter is woken.
    fn cond_broadcast_requeue(&mut self, t: TaskId, cond: u32, m: u32) -> bool {
        if self.ipc.pi_waiters(m).is_some() {
            return self.cond_broadcast_requeue_pi(t, cond, m);
        }
        let held = matches!(
            self.ipc.objs.get(m as usize),
            Some(Obj::Mutex { owner: Some(_), .. })
        );
        if !held {
            return self.cond_wake(t, cond, true, 0);
        }
        let Some(Obj::Cond { waiters }) = self.obj(cond) else {
            return false;
        };
        let first = waiters.pop_front();
        let rest: Vec<TaskId> = waiters.drain(..).collect();
        // futex_requeue() keeps each waiter's key.
        if let Some(Obj::Mutex { waiters, .. }) = self.ipc.objs.get_mut(m as usize) {
            for w in rest {
                crate::pi::futex_enqueue(&self.tasks, waiters, w);
            }
        }
        let Some(w) = first else {
            return false;
        };
        self.wake_waiter(w, t, 0);
        true
    }

    /// The same broadcast onto a PI mutex (FUTEX_CMP_REQUEUE_PI): while the
    /// mutex is held no waiter is woken, every one becomes a waiter of its
    /// rt_mutex (futex_proxy_trylock_atomic() fails, then
    /// rt_mutex_start_proxy_lock() for each) and lends the owner its
    /// priority; a free mutex goes at once to the first waiter, which is
    /// woken, and the others queue behind it. Only a waiter whose wait
    /// names `m` (FUTEX_WAIT_REQUEUE_PI onto it) can be requeued; the kernel
    /// refuses the others (futex_requeue()'s requeue_pi_key check), which
    /// are woken here instead, as a plain wake would, and take no mutex.
    fn cond_broadcast_requeue_pi(&mut self, t: TaskId, cond: u32, m: u32) -> bool {
        let Some(Obj::Cond { waiters }) = self.obj(cond) else {
            return false;
        };
        let (all, plain): (Vec<TaskId>, Vec<TaskId>) = {
            let drained: Vec<TaskId> = waiters.drain(..).collect();
            drained.into_iter().partition(|&w| {
                let tk = &self.tasks[w as usize];
                matches!(
                    self.step_at(tk.template, tk.pc),
                    Some(Step::Wait { mutex: Some(x), .. }) if *x == m
                )
            })
        };
        let any_plain = !plain.is_empty();
        for w in plain {
            self.wake_waiter(w, t, 0);
        }
        let Some(&first) = all.first() else {
            return any_plain;
        };
        let cpu = self.tasks[t as usize].cpu;
        let (owner, queued) = match self.ipc.objs.get_mut(m as usize) {
            Some(Obj::Mutex { owner: Some(o), .. }) => (*o, &all[..]),
            Some(Obj::Mutex { owner, .. }) => {
                *owner = Some(first);
                self.tasks[first as usize].locks_held += 1;
                self.pi_handed_to(first, m);
                (first, &all[1..])
            }
            _ => return false,
        };
        for &w in queued {
            self.pi_block(w, m, owner, cpu);
        }
        if owner == first {
            self.wake_waiter(first, t, 0);
        }
        true
    }

    /// pthread_cond_wait(): release the mutex and sleep on the condition
    /// (phase 0); once woken, re-acquire the mutex (phase 1).
    fn cond_wait(&mut self, t: TaskId, cond: u32, mutex: Option<u32>) -> Flow {
        if self.tasks[t as usize].step_phase == 1 {
            if let Some(m) = mutex {
                // __pthread_mutex_cond_lock(): the re-lock marks the word
                // contended, not knowing whether others wait.
                self.tasks[t as usize].futex_waited = true;
                if let Flow::Stop = self.mutex_lock(t, m) {
                    return Flow::Stop;
                }
            }
            self.tasks[t as usize].step_phase = 0;
            return Flow::Next;
        }
        if !matches!(self.obj(cond), Some(Obj::Cond { .. })) {
            return Flow::Next;
        }
        if let Some(m) = mutex {
            self.mutex_unlock(t, m);
        }
        if let Some(Obj::Cond { waiters }) = self.ipc.objs.get_mut(cond as usize) {
            crate::pi::futex_enqueue(&self.tasks, waiters, t);
        }
        self.tasks[t as usize].step_phase = 1;
        self.sleep_on_step(t)
    }

    /// pthread_cond_signal() / pthread_cond_broadcast(), or with `WF_SYNC`
    /// in `flags` a sync wakeup of every poller (`Step::BroadcastSync`).
    /// Returns whether it woke anyone.
    fn cond_wake(&mut self, t: TaskId, cond: u32, all: bool, flags: u32) -> bool {
        let Some(Obj::Cond { waiters }) = self.obj(cond) else {
            return false;
        };
        if all && flags & WF_SYNC == 0 {
            // futex_wake(INT_MAX): the wakes run from wake_up_q().
            let woken = std::mem::take(waiters);
            let any = !woken.is_empty();
            self.wake_up_q(t, woken);
            return any;
        }
        let woken: Vec<TaskId> = if all {
            waiters.drain(..).collect()
        } else {
            waiters.pop_front().into_iter().collect()
        };
        let any = !woken.is_empty();
        for w in woken {
            self.wake_waiter(w, t, flags);
        }
        any
    }

    /// sem_post().
    fn sem_post(&mut self, t: TaskId, sem: u32) {
        let Some(Obj::Sem { count, waiters }) = self.obj(sem) else {
            return;
        };
        *count += 1;
        if let Some(w) = waiters.pop_front() {
            self.wake_waiter(w, t, 0);
        }
    }

    /// sem_wait().
    fn sem_wait(&mut self, t: TaskId, sem: u32) -> Flow {
        let Some(Obj::Sem { count, waiters }) = self.ipc.objs.get_mut(sem as usize) else {
            return Flow::Next;
        };
        if *count > 0 {
            *count -= 1;
            // Counts left and sleepers queued: pass the wakeup on.
            let next = if *count > 0 {
                waiters.pop_front()
            } else {
                None
            };
            if let Some(w) = next {
                self.wake_waiter(w, t, 0);
            }
            return Flow::Next;
        }
        crate::pi::futex_enqueue(&self.tasks, waiters, t);
        self.sleep_on_step(t)
    }

    /// sched_yield() (mirrors yield_task_fair() of 7.3): with others
    /// runnable, an eligible task forfeits the rest of its request: its
    /// vruntime moves to its deadline and a new deadline is set one slice on
    /// (update_deadline(), the base slice unless the task asked for its own);
    /// an ineligible one keeps both. Then the CPU reschedules. Under 3.10's
    /// CFS (EEVDF off) the task becomes the skip buddy instead
    /// (yield_task_fair() of 3.10, set_skip_buddy()).
    fn yield_task(&mut self, t: TaskId) -> Flow {
        let cpu = self.tasks[t as usize].cpu;
        if self.task_is_dl(t) {
            // yield_task_dl(): the rest of the budget goes, the task waits
            // for its next period; schedule() picks the next entity.
            self.update_rq_clock(cpu);
            self.yield_task_dl(cpu, t);
            self.yield_schedule(cpu, t);
            return Flow::Stop;
        }
        if let Some(rt) = self.tasks[t as usize].rt {
            // yield_task_rt(): to the tail of its list; schedule() then
            // picks it again unless another task shares its priority.
            self.update_rq_clock(cpu);
            self.yield_task_rt(cpu, t);
            if self.rqs[cpu as usize].rt.queues[rt.prio as usize].len() <= 1 {
                return Flow::Next;
            }
            self.yield_schedule(cpu, t);
            return Flow::Stop;
        }
        if self.rqs[cpu as usize].cfs.nr_queued <= 1 {
            return Flow::Next;
        }
        self.clear_buddies(cpu, t);
        self.update_rq_clock(cpu);
        if self.cfs_mode() {
            // 3.10's yield_task_fair(): the task becomes the skip buddy,
            // which the pick passes over for a second close enough to it.
            if !self.tasks[t as usize].batch_policy {
                self.update_curr(cpu);
            }
            self.rqs[cpu as usize].cfs.skip = Some(t);
            self.yield_schedule(cpu, t);
            return Flow::Stop;
        }
        self.update_curr(cpu);
        let vruntime = self.tasks[t as usize].se.vruntime;
        if self.vruntime_eligible(cpu, vruntime) {
            let base = self.base_slice_ns;
            let se = &mut self.tasks[t as usize].se;
            se.vruntime = se.deadline;
            if !se.custom_slice {
                se.slice = base;
            }
            se.deadline = se
                .vruntime
                .wrapping_add(crate::fair::calc_delta_fair(se.slice, se.weight));
        }
        self.yield_schedule(cpu, t);
        Flow::Stop
    }

    /// sched_yield() ends in schedule(): a voluntary switch, which the
    /// trace shows as prev_state R, not a preemption's R+ (`Rq::yielded`).
    fn yield_schedule(&mut self, cpu: CpuId, t: TaskId) {
        self.rqs[cpu as usize].yielded = Some(t);
        self.resched_cpu(cpu, cpu);
    }

    /// rt-app's fork limit (the check of FORKS_LIMIT before a `fork`
    /// event): false, and the workload exits, when thread `t` already
    /// created `limit` threads of `template` at such guards; else its count
    /// goes up by one.
    fn fork_allowed(&mut self, t: TaskId, template: u32, limit: u32) -> bool {
        let count = self.fork_counts.entry((t, template)).or_insert(0);
        if *count >= limit {
            let target = self
                .spec
                .templates
                .get(template as usize)
                .map_or("?", |tpl| tpl.name.as_str())
                .to_string();
            self.workload_exits(
                t,
                format!("reached its fork limit ({limit}) forking '{target}'"),
            );
            return false;
        }
        *count += 1;
        true
    }

    /// Hands a benchmark mark to the run's [`crate::sim::MarkSink`], or keeps it.
    fn record_mark(&mut self, t: TaskId, tag: u32, at_ns: u64) {
        match self.mark_sink.as_deref_mut() {
            Some(sink) => sink.mark(t, self.tasks[t as usize].template, tag, at_ns),
            None => self.marks.push((t, tag, at_ns)),
        }
    }

    /// The task becomes a process of its own. Thread-group ids: 1 for the
    /// workload's first process, then one per task that becomes a process.
    fn become_process(&mut self, t: TaskId) {
        self.cache_thread_leave(self.tasks[t as usize].tgid);
        self.tasks[t as usize].tgid = 2 + t;
        self.cache_thread_join(2 + t);
    }

    /// Exec balancing (mirrors sched_exec()): select_task_rq() with
    /// WF_EXEC from the running task's CPU, which takes the SD_BALANCE_EXEC
    /// slow path; if it picks another CPU, the stopper moves the task there,
    /// and the task goes on with its next step when it runs there.
    fn sched_exec(&mut self, t: TaskId) -> Flow {
        let cpu = self.tasks[t as usize].cpu;
        let mut wake_flags = crate::sim::WF_EXEC;
        let dest = self.select_task_rq(t, cpu, cpu, None, &mut wake_flags);
        if dest == cpu {
            return Flow::Next;
        }
        self.tasks[t as usize].activity = Activity::Idle;
        self.stopper_move_task(t, dest, true);
        Flow::Stop
    }

    /// The running task `t` restricts itself to `cpus` (`None`: the CPUs it
    /// was created with), as sched_setaffinity() on itself does (mirrors
    /// __set_cpus_allowed_ptr_locked() and affine_move_task()): an unchanged
    /// mask does nothing; otherwise cpumask_any_and_distribute() picks a
    /// destination (which advances its per-CPU cursor even when nothing
    /// moves), the mask is recorded, and if the task's CPU is no longer
    /// allowed the stopper on it moves the task to that destination, where
    /// it goes on. A mask with none of the machine's CPUs fails as the
    /// system call does (EINVAL), leaving the affinity as it was.
    fn set_cpus_allowed(&mut self, t: TaskId, cpus: Option<CpuMask>) -> Flow {
        let tk = &self.tasks[t as usize];
        let mask = match cpus {
            Some(m) => m.and(&self.machine.all_cpus()),
            None => tk.start_affinity,
        };
        if mask.is_empty() || mask == tk.affinity {
            return Flow::Next;
        }
        // (By policy, task_has_dl_policy(): a task boosted into the class
        // may narrow its CPUs.)
        if self.dl_policy(t) && !self.machine.all_cpus().is_subset(&mask) {
            // dl_task_check_affinity(): a deadline task's CPUs must span its
            // root domain; sched_setaffinity() fails and rt-app exits.
            self.workload_exits(
                t,
                format!(
                    "sched_setaffinity({}) failed with EBUSY: a SCHED_DEADLINE thread's CPUs must span the root domain ({})",
                    mask.to_list_string(),
                    self.machine.all_cpus().to_list_string()
                ),
            );
            return Flow::Stop;
        }
        let cpu = tk.cpu;
        let dest = self.any_and_distribute(cpu, &mask);
        self.tasks[t as usize].affinity = mask;
        if mask.test(cpu) {
            return Flow::Next;
        }
        self.tasks[t as usize].activity = Activity::Idle;
        self.stopper_move_task(t, dest, true);
        Flow::Stop
    }

    /// Picks a CPU of `mask` for a migration that `cpu` requests (mirrors
    /// cpumask_any_and_distribute()): the first allowed CPU after the one
    /// this CPU picked last time, wrapping around, so successive requests
    /// spread over the mask.
    pub(crate) fn any_and_distribute(&mut self, cpu: CpuId, mask: &CpuMask) -> CpuId {
        let prev = self.rqs[cpu as usize].distribute_prev;
        let next = mask
            .next_from(prev.saturating_add(1))
            .or_else(|| mask.first())
            .unwrap_or(cpu);
        self.rqs[cpu as usize].distribute_prev = next;
        next
    }

    /// The running task `t` sleeps on an hrtimer `ns` from now (nanosleep(),
    /// clock_nanosleep(), a periodic timer): the timer's slack range of the
    /// task's timer slack follows the requested expiry.
    fn hrtimer_sleep(&mut self, t: TaskId, ns: u64) {
        let slack = self.timer_slack_ns(t);
        self.sleep_for(t, ns + slack, slack);
    }

    /// The running task `t` sleeps for `ns`: it arms its timer on its CPU,
    /// the last `slack_ns` of it its slack range, and blocks; the timer
    /// carries the generation blocking gave it.
    fn sleep_for(&mut self, t: TaskId, ns: u64, slack_ns: u64) {
        self.tasks[t as usize].activity = Activity::Idle;
        self.note_sleep_timer(t, self.now + ns, slack_ns);
        self.block_current(t, false);
        let gen = self.tasks[t as usize].gen;
        self.q
            .push(self.now + ns, EventKind::Timer { task: t, gen });
    }

    fn timer_wait(&mut self, t: TaskId, id: u32, period_ns: u64, absolute: bool) -> Flow {
        let now = self.now;
        let tk = &mut self.tasks[t as usize];
        // rt-app anchors its timers at the thread's start, moved on by its
        // initial `delay`.
        let origin = tk.timer_origin_ns.or(tk.prog_start_ns).unwrap_or(now);
        let slot = tk.timers.iter().position(|x| x.0 == id);
        let prev = slot.map_or(origin, |i| tk.timers[i].1);
        let mut next = prev.saturating_add(period_ns);
        if next <= now && !absolute {
            next = now;
        }
        match slot {
            Some(i) => tk.timers[i].1 = next,
            None => tk.timers.push((id, next)),
        }
        // MarkWoken after a timer reports the expiry (rt-app's wu_lat base).
        tk.woken_at_ns = next.max(now);
        if next <= now {
            return Flow::Next;
        }
        // clock_nanosleep(): a slack range from the expiry on.
        self.hrtimer_sleep(t, next - now);
        Flow::Stop
    }
}

#[cfg(test)]
mod tests {
    use crate::rng;
    use crate::sim::{Sim, SimConfig, StopReason};
    use rand::Rng;
    use schedlab_topo::{build_domains, preset, CpuId, CpuMask, DomainConfig};
    use schedlab_workload::{SchedPolicy, Step, SyncObject, ThreadTemplate, WorkloadSpec};

    const SEEDS: [u64; 6] = [1, 2, 3, 17, 99, 12345];

    fn tpl(name: &str, steps: Vec<Step>) -> ThreadTemplate {
        ThreadTemplate {
            idle_policy: false,
            name: name.into(),
            nice: 0,
            affinity: None,
            steps,
        }
    }

    /// A thread pinned to one CPU.
    fn pinned(name: &str, cpu: CpuId, steps: Vec<Step>) -> ThreadTemplate {
        let mut t = tpl(name, steps);
        t.affinity = Some(CpuMask::from_cpus([cpu]));
        t
    }

    /// A checked run's configuration with seed `seed`.
    fn checked(seed: u64) -> SimConfig {
        SimConfig {
            seed,
            checked: true,
            ..SimConfig::default()
        }
    }

    /// A simulator of exynos5422 with its default domains running `s`.
    fn exynos(s: WorkloadSpec, cfg: SimConfig) -> Sim {
        let m = preset("exynos5422").unwrap();
        let d = build_domains(&m, &DomainConfig::default()).unwrap();
        Sim::new(m, d, s, cfg)
    }

    fn spec(templates: Vec<ThreadTemplate>, sync: Vec<SyncObject>) -> WorkloadSpec {
        WorkloadSpec {
            name: "t".into(),
            initial: (0..templates.len() as u32).collect(),
            templates,
            sync,
            mem_node: None,
            max_time_ns: 60_000_000_000,
        }
    }

    /// Runs to completion; odd seeds squeeze every thread onto 3 CPUs so that
    /// waiters are preempted and woken tasks queue behind others.
    fn run(machine: &str, mut s: WorkloadSpec, seed: u64) -> Sim {
        if seed % 2 == 1 {
            for t in &mut s.templates {
                t.affinity = Some(CpuMask::first_n(3));
            }
        }
        let m = preset(machine).unwrap();
        let d = build_domains(&m, &DomainConfig::default()).unwrap();
        let mut sim = Sim::new(
            m,
            d,
            s,
            SimConfig {
                seed,
                checked: true,
                ..SimConfig::default()
            },
        );
        let stop = sim.run();
        assert_eq!(stop, StopReason::Finished, "seed {seed}: {stop:?}");
        assert_eq!(sim.ipc.nr_waiters(), 0, "seed {seed}");
        sim
    }

    /// nanosleep() wakes at the end of the task's 50 µs timer slack (on an
    /// otherwise quiet CPU), plus the CPU's idle exit; a modelled wait
    /// (`Sleep`) has no slack.
    #[test]
    fn a_nanosleep_ends_after_the_timer_slack() {
        let woke_after = |sleep: Step| {
            let t = pinned(
                "s",
                1,
                vec![Step::Mark { tag: 0 }, sleep, Step::Mark { tag: 1 }],
            );
            let mut sim = crate::scenarios::quiet_sim("kunpeng920", spec(vec![t], vec![]));
            assert_eq!(sim.run(), StopReason::Finished);
            sim.marks[1].2 - sim.marks[0].2
        };
        let exit = preset("kunpeng920").unwrap().wakeup.idle_states[0].exit_ns as u64;
        assert_eq!(woke_after(Step::Sleep { ns: 1_000_000 }), 1_000_000 + exit);
        assert_eq!(
            woke_after(Step::Nanosleep { ns: 1_000_000 }),
            1_000_000 + super::TIMER_SLACK_NS + exit
        );
    }

    /// sched_setaffinity() on itself: a thread whose CPU leaves its mask is
    /// moved by the stopper to the CPU cpumask_any_and_distribute() picks
    /// (the first allowed one after the CPU's previous pick, so repeated
    /// moves from one CPU spread; a new mask that keeps the CPU moves
    /// nothing but still advances the pick, an unchanged one does neither);
    /// `None` returns to the start affinity.
    #[test]
    fn set_affinity_moves_a_thread_off_a_cpu_it_leaves() {
        let ms = 1_000_000;
        let to = |cpus: &[CpuId]| Step::SetAffinity {
            cpus: Some(Box::new(CpuMask::from_cpus(cpus.iter().copied()))),
        };
        let work = Step::RunWall { ns: ms };
        let steps = vec![
            work.clone(),
            to(&[2, 3]), // cpu0 picks after 0: cpu2
            work.clone(),
            to(&[2, 3]), // unchanged: stays
            work.clone(),
            Step::SetAffinity { cpus: None }, // back to {0}
            work.clone(),
            to(&[0, 1]), // keeps cpu0: stays, but cpu0 picked 0
            work.clone(),
            to(&[2, 3]), // cpu0 picks after 0: cpu2
            work.clone(),
            to(&[3, 511]), // CPUs beyond the machine are dropped: cpu3
            work.clone(),
            to(&[0]), // cpu3 picks cpu0
            work.clone(),
            to(&[2, 3]), // cpu0 picks after 2: cpu3
            work,
        ];
        let mut sim =
            crate::scenarios::quiet_sim("kunpeng920", spec(vec![pinned("a", 0, steps)], vec![]));
        assert_eq!(sim.run(), StopReason::Finished);
        let a = sim.tasks.iter().find(|t| !t.kthread).unwrap();
        assert_eq!(a.stats.migrations, 6);
        assert_eq!((a.cpu, a.affinity), (3, CpuMask::from_cpus([2, 3])));
        let busy_ms = |c: usize| (sim.rqs[c].busy_ns + ms / 2) / ms;
        assert_eq!(
            [busy_ms(0), busy_ms(1), busy_ms(2), busy_ms(3)],
            [4, 0, 3, 2]
        );
    }

    /// sched_setattr() on itself with a new nice value or SCHED_IDLE: the
    /// thread is requeued at its new weight, so from then on two hogs
    /// sharing a CPU split it by weight (nice 5: 335 against 1024), its
    /// load average follows the new weight, and under SCHED_IDLE (weight 3)
    /// it gets almost nothing and counts as an idle-policy task.
    #[test]
    fn set_attr_reweights_a_running_thread() {
        let run = |attr: Step| {
            let hog = |name: &str, first: Option<Step>| {
                let mut steps: Vec<Step> = first.into_iter().collect();
                steps.push(Step::Compute {
                    work_ns: 10_000_000_000,
                });
                pinned(name, 1, steps)
            };
            let mut sim = crate::scenarios::quiet_sim(
                "kunpeng920",
                spec(vec![hog("a", Some(attr)), hog("b", None)], vec![]),
            );
            sim.run_until(1_000_000_000);
            let cpu_ms = |name: &str| {
                let t = sim.tasks.iter().find(|t| &*t.name == name).unwrap();
                t.stats.cpu_time_ns / 1_000_000
            };
            let (a, b) = (cpu_ms("a"), cpu_ms("b"));
            let ta = sim.tasks.iter().find(|t| &*t.name == "a").unwrap().clone();
            (a, b, ta, sim.rqs[1].cfs.nr_idle)
        };
        let (a, b, ta, nr_idle) = run(Step::SetAttr(Box::new(schedlab_workload::Attrs {
            policy: SchedPolicy::Normal,
            nice: Some(5),
            runtime_ns: None,
            util_min: None,
            util_max: None,
        })));
        assert_eq!((ta.nice, ta.se.weight, nr_idle), (5, 335, 0));
        let share = a as f64 / (a + b) as f64;
        assert!((share - 335.0 / 1359.0).abs() < 0.02, "{a} {b}");
        // Always runnable: the load average is near the new weight.
        assert!(
            (300..=335).contains(&ta.avg.load_avg),
            "{}",
            ta.avg.load_avg
        );
        let (a, b, ta, nr_idle) = run(Step::SetAttr(Box::new(schedlab_workload::Attrs {
            policy: SchedPolicy::Idle,
            nice: None,
            runtime_ns: None,
            util_min: None,
            util_max: None,
        })));
        assert_eq!((ta.idle_policy, ta.se.weight, nr_idle), (true, 3, 1));
        assert!(a * 100 < b, "{a} {b}");
        // A custom slice on its own keeps the weight.
        let (a, b, ta, _) = run(Step::SetAttr(Box::new(schedlab_workload::Attrs {
            policy: SchedPolicy::Normal,
            nice: None,
            runtime_ns: Some(300_000),
            util_min: None,
            util_max: None,
        })));
        assert_eq!(
            (ta.se.weight, ta.se.custom_slice, ta.se.slice),
            (1024, true, 300_000)
        );
        assert!(a.abs_diff(b) < 20, "{a} {b}");
    }

    /// SCHED_BATCH (normal_policy() false): a woken batch thread does not
    /// preempt the hog on its CPU, so it waits for the hog's slice or tick
    /// where a normal one runs at once.
    #[test]
    fn a_batch_wakee_does_not_preempt() {
        let sleeper_wait_ms = |policy: SchedPolicy| {
            let mut steps = vec![Step::SetAttr(Box::new(schedlab_workload::Attrs {
                policy,
                nice: None,
                runtime_ns: None,
                util_min: None,
                util_max: None,
            }))];
            steps.extend(crate::scenarios::compute_sleep_rounds(
                50_000, 3_000_000, 100,
            ));
            let hog = pinned(
                "hog",
                1,
                vec![Step::Compute {
                    work_ns: 10_000_000_000,
                }],
            );
            let mut sim = crate::scenarios::quiet_sim(
                "kunpeng920",
                spec(vec![hog, pinned("s", 1, steps)], vec![]),
            );
            sim.run_until(300_000_000);
            let s = sim.tasks.iter().find(|t| &*t.name == "s").unwrap();
            assert_eq!(s.batch_policy, policy == SchedPolicy::Batch);
            s.stats.wait_time_ns / 1_000_000
        };
        let (normal, batch) = (
            sleeper_wait_ms(SchedPolicy::Normal),
            sleeper_wait_ms(SchedPolicy::Batch),
        );
        assert!(normal * 10 < batch, "{normal} ms against {batch} ms");
    }

    /// Utilisation clamps on a big.LITTLE machine (exynos5422: A7s 0-3 at
    /// capacity 377, A15s 4-7): a small periodic task boosted to
    /// util_min 1024 fits no A7 (util_fits_cpu() is -1 there) and wakes on
    /// the A15s, where unboosted it stays on the A7s; a hog left on an A7
    /// is a misfit that the balancer moves to an A15, unless util_max 300
    /// caps it, which fits the A7.
    #[test]
    fn utilisation_clamps_steer_placement_on_big_little() {
        let attr = |util_min, util_max| {
            Step::SetAttr(Box::new(schedlab_workload::Attrs {
                policy: SchedPolicy::Normal,
                nice: None,
                runtime_ns: None,
                util_min,
                util_max,
            }))
        };
        let big_share = |steps: Vec<Step>| {
            let mut sim =
                crate::scenarios::quiet_sim("exynos5422", spec(vec![tpl("t", steps)], vec![]));
            sim.run_until(1_000_000_000);
            let busy =
                |cpus: std::ops::Range<usize>| -> u64 { cpus.map(|c| sim.rqs[c].busy_ns).sum() };
            busy(4..8) as f64 / (busy(0..8) as f64)
        };
        let periodic = |first: Option<Step>| {
            let mut steps: Vec<Step> = first.into_iter().collect();
            steps.extend(crate::scenarios::compute_sleep_rounds(
                300_000, 10_000_000, 200,
            ));
            steps
        };
        let unboosted = big_share(periodic(None));
        let boosted = big_share(periodic(Some(attr(Some(1024), None))));
        assert!(unboosted < 0.1, "{unboosted}");
        assert!(boosted > 0.9, "{boosted}");
        let hog = |clamp: Option<Step>| {
            let mut steps = vec![Step::SetAffinity {
                cpus: Some(Box::new(CpuMask::from_cpus([0]))),
            }];
            steps.extend(clamp);
            steps.push(Step::RunWall { ns: 5_000_000 });
            steps.push(Step::SetAffinity {
                cpus: Some(Box::new(CpuMask::first_n(8))),
            });
            steps.push(Step::Compute {
                work_ns: 10_000_000_000,
            });
            steps
        };
        let misfit = big_share(hog(None));
        let capped = big_share(hog(Some(attr(None, Some(300)))));
        assert!(misfit > 0.9, "{misfit}");
        assert!(capped < 0.1, "{capped}");
    }

    /// A trace shows each event's priority as it was then: 120 before a
    /// thread's sched_setattr() to nice 5, 125 after.
    #[test]
    fn the_trace_shows_the_priority_of_the_moment() {
        let steps = vec![
            Step::Nanosleep { ns: 1_000_000 },
            Step::SetAttr(Box::new(schedlab_workload::Attrs {
                policy: SchedPolicy::Normal,
                nice: Some(5),
                runtime_ns: None,
                util_min: None,
                util_max: None,
            })),
            Step::Nanosleep { ns: 1_000_000 },
        ];
        let mut sim =
            crate::scenarios::quiet_sim("kunpeng920", spec(vec![pinned("r", 1, steps)], vec![]));
        sim.enable_trace(10_000);
        assert_eq!(sim.run(), StopReason::Finished);
        let mut out = Vec::new();
        crate::trace::write_ftrace_text(&sim, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let prios: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("sched_wakeup: comm=r "))
            .filter_map(|l| l.split_whitespace().find(|w| w.starts_with("prio=")))
            .collect();
        assert_eq!(prios, ["prio=120", "prio=125"], "{text}");
    }

    /// A reader that gets its message in two passes (half now, half after
    /// sleeping) pays the transfer of the whole message, as two read()s
    /// copy it all: from the last write to the reader's next step takes as
    /// long as when the message comes in one write.
    #[test]
    fn a_message_read_in_two_passes_costs_its_whole_transfer() {
        let after_last_write = |writes: Vec<u64>| {
            let mut w = vec![Step::Compute { work_ns: 100_000 }];
            for b in writes {
                w.push(Step::Send { chan: 0, bytes: b });
                w.push(Step::Compute { work_ns: 100_000 });
            }
            w.insert(w.len() - 1, Step::Mark { tag: 0 });
            w.push(Step::Exit);
            let r = vec![
                Step::Recv {
                    chan: 0,
                    bytes: 4096,
                },
                Step::Mark { tag: 1 },
                Step::Exit,
            ];
            let s = spec(
                vec![pinned("w", 0, w), pinned("r", 1, r)],
                vec![SyncObject::Channel { capacity: 65536 }],
            );
            let mut sim = crate::scenarios::quiet_sim("kunpeng920", s);
            assert_eq!(sim.run(), StopReason::Finished);
            let at = |tag: u32| sim.marks.iter().find(|m| m.1 == tag).unwrap().2;
            at(1) - at(0)
        };
        assert_eq!(
            after_last_write(vec![2048, 2048]),
            after_last_write(vec![4096])
        );
    }

    /// A nanosleep() whose slack range holds a tick of its (busy) CPU ends at
    /// that tick: the tick's hrtimer interrupt runs every timer past its
    /// soft expiry (__hrtimer_run_queues()). A modelled wait ending at the
    /// same hard expiry has no slack range and sleeps on.
    #[test]
    fn a_tick_inside_the_slack_range_ends_a_nanosleep_early() {
        // (still asleep just after the first tick, timers expired early)
        let after_first_tick = |sleep: Step| {
            // The sleeper runs first on CPU 1 and sleeps at once; the hog
            // keeps CPU 1 busy, so its tick runs.
            let s = pinned("s", 1, vec![sleep, Step::Exit]);
            let hog = pinned(
                "hog",
                1,
                vec![Step::Compute {
                    work_ns: 50_000_000,
                }],
            );
            let mut sim = crate::scenarios::quiet_sim("kunpeng920", spec(vec![s, hog], vec![]));
            sim.run_until(sim.tick_ns + 1);
            let st = sim.tasks.iter().find(|t| &*t.name == "s").unwrap().state;
            (
                st == crate::task::TaskState::Blocked,
                sim.counters.timers_early,
            )
        };
        let tick_ns = crate::scenarios::quiet_sim("kunpeng920", spec(vec![], vec![])).tick_ns;
        // Soft expiry 30 µs before the first tick (the sleeper starts a few
        // µs after 0), hard expiry 20 µs after it.
        let soft = tick_ns - 30_000;
        assert_eq!(
            after_first_tick(Step::Nanosleep { ns: soft }),
            (false, 1),
            "the tick ended the nanosleep"
        );
        assert_eq!(
            after_first_tick(Step::Sleep {
                ns: soft + super::TIMER_SLACK_NS,
            }),
            (true, 0),
            "no slack range: still asleep"
        );
    }

    /// Two nanosleeps on one idle CPU whose slack ranges overlap end
    /// together: the first hard expiry's interrupt also runs the other
    /// timer, already past its soft expiry (the coalescing slack is for).
    #[test]
    fn overlapping_slack_ranges_on_one_cpu_expire_together() {
        let sleeper = |name: &str, ns: u64| {
            pinned(name, 1, vec![Step::Nanosleep { ns }, Step::Mark { tag: 1 }])
        };
        let a = sleeper("a", 1_000_000);
        let b = sleeper("b", 990_000);
        let mut sim = crate::scenarios::quiet_sim("kunpeng920", spec(vec![a, b], vec![]));
        assert_eq!(sim.run(), StopReason::Finished);
        assert_eq!(sim.counters.timers_early, 1);
    }

    /// rt-app's `delay` moves the thread's periodic timers: a 10 ms timer
    /// after a 5 ms delay expires at 15 and 25 ms, not at 10 and 20 ms
    /// (rt-app's t_first = t_zero + delay).
    #[test]
    fn an_rtapp_delay_shifts_the_periodic_timers() {
        let periodic = |name: &str, cpu: u16, delay_ns: u64| {
            let mut steps = Vec::new();
            if delay_ns > 0 {
                steps.push(Step::Delay { ns: delay_ns });
            }
            for tag in 1..=2 {
                steps.push(Step::Timer {
                    id: 0,
                    period_ns: 10_000_000,
                    absolute: true,
                });
                steps.push(Step::Mark { tag });
            }
            pinned(name, cpu, steps)
        };
        let (a, b) = (periodic("a", 1, 0), periodic("b", 2, 5_000_000));
        let mut sim = crate::scenarios::quiet_sim("kunpeng920", spec(vec![a, b], vec![]));
        assert_eq!(sim.run(), StopReason::Finished);
        let ms = |task: u32, tag: u32| {
            let m = sim
                .marks
                .iter()
                .find(|m| m.0 == task && m.1 == tag)
                .unwrap();
            m.2 / 1_000_000
        };
        // Within a millisecond of the expiry (slack and idle exit).
        assert_eq!((ms(0, 1), ms(0, 2)), (10, 20));
        assert_eq!((ms(1, 1), ms(1, 2)), (15, 25));
    }

    /// Random work between 0 and `max` µs (sometimes none).
    fn work(r: &mut rand_pcg::Pcg64, max_us: u64) -> Step {
        Step::Compute {
            work_ns: r.gen_range(0..=max_us) * 1000,
        }
    }

    #[test]
    fn barriers_never_lose_wakeups() {
        for seed in SEEDS {
            let mut r = rng::stream(seed, "test-barrier");
            let n = 6;
            let ts = (0..n)
                .map(|i| {
                    let mut s = Vec::new();
                    for _ in 0..30 {
                        s.push(work(&mut r, 200));
                        s.push(Step::Barrier {
                            id: 0,
                            spin_ns: if i % 2 == 0 { 0 } else { 20_000 },
                        });
                    }
                    tpl("b", s)
                })
                .collect();
            run(
                "exynos5422",
                spec(ts, vec![SyncObject::Barrier { parties: n }]),
                seed,
            );
        }
    }

    #[test]
    fn mutexes_exclude_and_never_lose_wakeups() {
        for seed in SEEDS {
            let mut r = rng::stream(seed, "test-mutex");
            let ts = (0..7)
                .map(|_| {
                    let mut s = Vec::new();
                    for _ in 0..40 {
                        s.push(work(&mut r, 50));
                        s.push(Step::Lock { mutex: 0 });
                        s.push(Step::Mark { tag: 1 });
                        s.push(work(&mut r, 30));
                        if r.gen_bool(0.3) {
                            s.push(Step::Yield { syscall_ns: 0 });
                        }
                        s.push(Step::Mark { tag: 2 });
                        s.push(Step::Unlock { mutex: 0 });
                    }
                    tpl("m", s)
                })
                .collect();
            let sim = run("exynos5422", spec(ts, vec![SyncObject::Mutex]), seed);
            // Critical sections never overlap: marks alternate 1, 2 by one task.
            let mut inside: Option<u32> = None;
            // Marks are recorded in the order they happen.
            for &(t, tag, _) in &sim.marks {
                match tag {
                    1 => {
                        assert_eq!(inside, None, "seed {seed}");
                        inside = Some(t);
                    }
                    _ => {
                        assert_eq!(inside, Some(t), "seed {seed}");
                        inside = None;
                    }
                }
            }
            assert_eq!(sim.marks.len(), 7 * 40 * 2);
        }
    }

    #[test]
    fn condvars_never_lose_wakeups() {
        for seed in SEEDS {
            let mut r = rng::stream(seed, "test-cond");
            // Sync ping-pong (rt-app `sync`: signal + wait atomically).
            let pp = |r: &mut rand_pcg::Pcg64| {
                let mut s = vec![work(r, 100), Step::Lock { mutex: 0 }];
                for _ in 0..30 {
                    s.push(work(r, 20));
                    s.push(Step::Signal { cond: 1 });
                    s.push(Step::Wait {
                        cond: 1,
                        mutex: Some(0),
                    });
                }
                s.push(Step::Signal { cond: 1 });
                s.push(Step::Unlock { mutex: 0 });
                tpl("pp", s)
            };
            // Broadcast: waiters announce themselves under the mutex.
            let n = 5;
            let rounds = 15;
            let waiter = |r: &mut rand_pcg::Pcg64| {
                let mut s = Vec::new();
                for _ in 0..rounds {
                    s.push(work(r, 100));
                    s.push(Step::Lock { mutex: 2 });
                    s.push(Step::SemPost { sem: 4 });
                    s.push(Step::Wait {
                        cond: 3,
                        mutex: Some(2),
                    });
                    s.push(Step::Unlock { mutex: 2 });
                }
                tpl("w", s)
            };
            let mut bc = Vec::new();
            for _ in 0..rounds {
                for _ in 0..n {
                    bc.push(Step::SemWait { sem: 4 });
                }
                bc.push(work(&mut r, 50));
                bc.push(Step::Lock { mutex: 2 });
                bc.push(Step::Broadcast { cond: 3 });
                bc.push(Step::Unlock { mutex: 2 });
            }
            let mut ts = vec![pp(&mut r), pp(&mut r), tpl("bc", bc)];
            for _ in 0..n {
                ts.push(waiter(&mut r));
            }
            run(
                "exynos5422",
                spec(
                    ts,
                    vec![
                        SyncObject::Mutex,
                        SyncObject::Cond,
                        SyncObject::Mutex,
                        SyncObject::Cond,
                        SyncObject::Semaphore { initial: 0 },
                    ],
                ),
                seed,
            );
        }
    }

    /// 4 readers of `chan`, each 9 reads of 5000 B with random work between.
    fn readers(r: &mut rand_pcg::Pcg64, chan: u32, name: &str) -> Vec<ThreadTemplate> {
        (0..4)
            .map(|_| {
                let mut s = Vec::new();
                for _ in 0..9 {
                    s.push(Step::Recv { chan, bytes: 5000 });
                    s.push(work(r, 30));
                }
                tpl(name, s)
            })
            .collect()
    }

    /// 3 writers of `chan`, each 20 writes of random sizes then the rest of
    /// its 60000 B, with random work between.
    fn random_writers(r: &mut rand_pcg::Pcg64, chan: u32, name: &str) -> Vec<ThreadTemplate> {
        (0..3)
            .map(|_| {
                let mut s = Vec::new();
                let mut sent = 0;
                for _ in 0..20 {
                    let bytes = r.gen_range(1..3000);
                    sent += bytes;
                    s.push(work(r, 30));
                    s.push(Step::Send { chan, bytes });
                }
                s.push(Step::Send {
                    chan,
                    bytes: 60_000 - sent,
                });
                tpl(name, s)
            })
            .collect()
    }

    #[test]
    fn channels_never_lose_wakeups() {
        for seed in SEEDS {
            let mut r = rng::stream(seed, "test-chan");
            let mut ts = Vec::new();
            // 3 writers × 20 × 3000 B = 180000 B; 4 readers × 9 × 5000 B.
            for _ in 0..3 {
                let mut s = Vec::new();
                for _ in 0..20 {
                    s.push(work(&mut r, 30));
                    s.push(Step::Send {
                        chan: 0,
                        bytes: 3000,
                    });
                }
                ts.push(tpl("wr", s));
            }
            ts.extend(readers(&mut r, 0, "rd"));
            // The same over a kernel-style pipe of 4 slots of 1 KiB pages:
            // writes merge into a page, span several, and wait for slots.
            ts.extend(random_writers(&mut r, 3, "pw"));
            ts.extend(readers(&mut r, 3, "pr"));
            // And over a unix stream socket of an 8 KiB send buffer: skbs
            // of at most 4032 B, writers woken all at once.
            ts.extend(random_writers(&mut r, 4, "sw"));
            ts.extend(readers(&mut r, 4, "sr"));
            // A ping-pong pair over two small pipes.
            for i in 0..2u32 {
                let mut s = Vec::new();
                for _ in 0..50 {
                    if i == 0 {
                        s.push(Step::Send { chan: 1, bytes: 8 });
                        s.push(Step::Recv { chan: 2, bytes: 8 });
                    } else {
                        s.push(Step::Recv { chan: 1, bytes: 8 });
                        s.push(Step::Send { chan: 2, bytes: 8 });
                    }
                }
                ts.push(tpl("pp", s));
            }
            let sim = run(
                "alderlake",
                spec(
                    ts,
                    vec![
                        SyncObject::Channel { capacity: 4096 },
                        SyncObject::Channel { capacity: 64 },
                        SyncObject::Channel { capacity: 64 },
                        SyncObject::Pipe {
                            buffers: 4,
                            page_bytes: 1024,
                        },
                        SyncObject::UnixStream { sndbuf: 8192 },
                    ],
                ),
                seed,
            );
            assert!(sim.counters.wakeups > 100);
        }
    }

    /// A mutex is not recursive: its owner locking it again waits for
    /// itself, as with glibc's default mutex (rt-app's), and the run stalls
    /// naming the step; another thread's second lock of a free mutex goes on.
    #[test]
    fn an_owner_locking_its_mutex_again_deadlocks() {
        let relock = vec![
            Step::Lock { mutex: 0 },
            Step::Compute { work_ns: 10_000 },
            Step::Lock { mutex: 0 },
            Step::Unlock { mutex: 0 },
            Step::Exit,
        ];
        let twice = vec![
            Step::Lock { mutex: 1 },
            Step::Unlock { mutex: 1 },
            Step::Lock { mutex: 1 },
            Step::Unlock { mutex: 1 },
            Step::Exit,
        ];
        let mut sim = crate::scenarios::quiet_sim(
            "kunpeng920",
            spec(
                vec![pinned("relock", 0, relock), pinned("twice", 1, twice)],
                vec![SyncObject::Mutex, SyncObject::Mutex],
            ),
        );
        assert_eq!(sim.run(), StopReason::Stalled);
        let parked = sim.parked_threads();
        assert_eq!(parked.len(), 1);
        assert_eq!(parked[0].0, "relock");
        assert_eq!(parked[0].2, Some(Step::Lock { mutex: 0 }));
    }

    /// A workload deadlock stops the run at once, kernel threads or not: one
    /// thread waits on a semaphore that the other, which exits, never posts.
    /// A thread asleep on its own timer is not stuck, nor are threads whose
    /// waker still runs.
    #[test]
    fn a_run_whose_threads_all_wait_for_each_other_stops_as_stalled() {
        for noise in [false, true] {
            let stuck = vec![
                Step::Compute { work_ns: 100_000 },
                Step::SemWait { sem: 0 },
                Step::Exit,
            ];
            let quitter = vec![Step::Compute { work_ns: 300_000 }, Step::Exit];
            let mut sim = crate::scenarios::quiet_sim(
                "kunpeng920",
                spec(
                    vec![pinned("stuck", 0, stuck), pinned("quitter", 1, quitter)],
                    vec![SyncObject::Semaphore { initial: 0 }],
                ),
            );
            sim.cfg.noise = noise;
            assert_eq!(sim.run(), StopReason::Stalled, "noise {noise}");
            // Stopped when the last runnable thread exited, not at the limit.
            assert!(sim.now < 1_000_000, "{}", sim.now);
            let parked = sim.parked_threads();
            assert_eq!(parked.len(), 1);
            assert_eq!(parked[0].0, "stuck");
            assert_eq!(parked[0].2, Some(Step::SemWait { sem: 0 }));
        }
        // The same waiter, posted by a thread that first sleeps 5 ms: no stall
        // while the poster sleeps on its timer.
        let waiter = vec![Step::SemWait { sem: 0 }, Step::Exit];
        let poster = vec![
            Step::Sleep { ns: 5_000_000 },
            Step::SemPost { sem: 0 },
            Step::Exit,
        ];
        let mut sim = crate::scenarios::quiet_sim(
            "kunpeng920",
            spec(
                vec![pinned("waiter", 0, waiter), pinned("poster", 1, poster)],
                vec![SyncObject::Semaphore { initial: 0 }],
            ),
        );
        sim.cfg.noise = true;
        assert_eq!(sim.run(), StopReason::Finished);
        assert!(sim.now >= 5_000_000);
        assert!(sim.parked_threads().is_empty());
    }

    /// A writer on CPU 0 sending `n` messages of `bytes` far faster than a
    /// reader on CPU 1 takes them, through channel object `obj`: the
    /// writer's and the reader's wakeups once every message arrived.
    fn writer_ahead_of_reader_wakeups(n: u32, bytes: u64, obj: SyncObject) -> (u64, u64) {
        let w = pinned(
            "w",
            0,
            vec![
                Step::Compute { work_ns: 1_000 },
                Step::Send { chan: 0, bytes },
                Step::Loop {
                    start: 0,
                    count: n,
                    slot: 0,
                },
                Step::Exit,
            ],
        );
        let r = pinned(
            "r",
            1,
            vec![
                Step::Compute { work_ns: 20_000 },
                Step::Recv { chan: 0, bytes },
                Step::Compute { work_ns: 50_000 },
                Step::Loop {
                    start: 1,
                    count: n,
                    slot: 0,
                },
                Step::Exit,
            ],
        );
        let mut sim = crate::scenarios::quiet_sim("kunpeng920", spec(vec![w, r], vec![obj]));
        assert_eq!(sim.run(), StopReason::Finished);
        assert_eq!(sim.ipc.nr_waiters(), 0);
        let wakeups = |name: &str| {
            let t = sim.tasks.iter().find(|t| &*t.name == name).unwrap();
            t.stats.wakeups
        };
        (wakeups("w"), wakeups("r"))
    }

    /// A kernel pipe of 16 slots of a 4 KiB page (fs/pipe.c): a writer far
    /// ahead of a slow reader merges 40 messages of 100 bytes into each page,
    /// so 640 fill the pipe, and then sleeps. The reader wakes it only when
    /// it empties a slot of the full pipe (every 40th read), not on every
    /// read; the woken writer's message takes a slot of its own (no merge
    /// after a sleep) and the next 39 merge into it: 700 messages cost the
    /// writer two sleeps, and the reader, never short of data, none.
    #[test]
    fn a_pipe_wakes_its_writer_only_when_a_slot_of_a_full_pipe_frees() {
        let wakeups = |pipe| writer_ahead_of_reader_wakeups(700, 100, pipe);
        let pipe = SyncObject::Pipe {
            buffers: 16,
            page_bytes: 4096,
        };
        assert_eq!(wakeups(pipe), (2, 0));
        // A byte buffer of the same 64 KiB wakes the writer on every read
        // that finds it asleep.
        let (w_bytes, _) = wakeups(SyncObject::Channel { capacity: 65536 });
        assert!(w_bytes > 20, "{w_bytes}");
    }

    /// anon_pipe_read() wakes one writer, and only for the slot it freed
    /// while every slot was in use: a read that empties both slots of a full
    /// 2-slot pipe wakes the first sleeping writer; that writer, having
    /// slept, finds a slot still free after its write and wakes the next one
    /// (`wake_next_writer`), with the sync flag.
    #[test]
    fn a_woken_pipe_writer_that_leaves_a_slot_free_wakes_the_next() {
        // Pages of 100 bytes: a 100-byte message fills a slot, no merging.
        let send = Step::Send {
            chan: 0,
            bytes: 100,
        };
        let late = |name: &str, cpu: CpuId, ns: u64| {
            pinned(
                name,
                cpu,
                vec![Step::Compute { work_ns: ns }, send.clone(), Step::Exit],
            )
        };
        let fill = pinned("fill", 0, vec![send.clone(), send.clone(), Step::Exit]);
        let recv = Step::Recv {
            chan: 0,
            bytes: 200,
        };
        let reader = pinned(
            "r",
            3,
            vec![
                Step::Sleep { ns: 1_000_000 },
                recv.clone(),
                recv,
                Step::Exit,
            ],
        );
        let s = spec(
            vec![fill, late("w1", 1, 10_000), late("w2", 2, 20_000), reader],
            vec![SyncObject::Pipe {
                buffers: 2,
                page_bytes: 100,
            }],
        );
        let mut sim = crate::scenarios::quiet_sim("kunpeng920", s);
        assert_eq!(sim.run(), StopReason::Finished);
        assert_eq!(sim.ipc.nr_waiters(), 0);
        let task = |name: &str| sim.tasks.iter().find(|t| &*t.name == name).unwrap();
        assert_eq!(task("w1").stats.wakeups, 1);
        assert_eq!(task("w1").last_waker_cpu, Some(3));
        assert_eq!(task("w2").stats.wakeups, 1);
        assert_eq!(task("w2").last_waker_cpu, Some(1));
    }

    /// A unix stream socket (net/unix/af_unix.c) with hackbench's messages
    /// (100 bytes charged 768 of truesize) and `wmem_default`'s 212992-byte
    /// send buffer: a writer far ahead of a slow reader queues 278 messages
    /// (until 277 × 768 B is below the buffer and the 278th overshoots it)
    /// and sleeps; unix_write_space() wakes it only once the reader has
    /// brought the queue down to 69 messages (4 × (69 × 768 + 2) ≤ 212992),
    /// 209 reads later. 600 messages cost the writer two sleeps.
    #[test]
    fn a_unix_socket_wakes_its_writer_once_a_quarter_of_the_buffer_is_left() {
        let msg = schedlab_workload::unix_skb_truesize(100);
        assert_eq!(msg, 768);
        let wakeups = |sock| writer_ahead_of_reader_wakeups(600, msg, sock);
        assert_eq!(wakeups(SyncObject::UnixStream { sndbuf: 212_992 }), (2, 0));
        // A byte buffer of that size wakes the writer on every read that
        // finds it asleep.
        let (w_bytes, _) = wakeups(SyncObject::Channel { capacity: 212_992 });
        assert!(w_bytes > 20, "{w_bytes}");
    }

    /// unix_write_space() wakes every writer sleeping on a full socket at
    /// once (they wait non-exclusively), and only when the read leaves the
    /// socket writable: a read that leaves more than a quarter of the send
    /// buffer queued wakes nobody.
    #[test]
    fn a_unix_socket_wakes_all_its_writers_once_it_is_writable() {
        let send = Step::Send {
            chan: 0,
            bytes: 100,
        };
        let fill = pinned("fill", 0, vec![send.clone(); 10]);
        let writer = |name: &str, cpu: CpuId| {
            pinned(
                name,
                cpu,
                vec![
                    Step::Compute { work_ns: 10_000 },
                    send.clone(),
                    Step::Mark { tag: 1 },
                    Step::Exit,
                ],
            )
        };
        let recv = |bytes| Step::Recv { chan: 0, bytes };
        let reader = pinned(
            "r",
            4,
            vec![
                Step::Sleep { ns: 1_000_000 },
                // 300 B left: 4 × 302 > 1000, not writable.
                recv(700),
                Step::Mark { tag: 0 },
                Step::Compute { work_ns: 100_000 },
                // 200 B left: writable.
                recv(100),
                recv(500),
                Step::Exit,
            ],
        );
        let s = spec(
            vec![
                fill,
                writer("w1", 1),
                writer("w2", 2),
                writer("w3", 3),
                reader,
            ],
            vec![SyncObject::UnixStream { sndbuf: 1000 }],
        );
        let mut sim = crate::scenarios::quiet_sim("kunpeng920", s);
        assert_eq!(sim.run(), StopReason::Finished);
        assert_eq!(sim.ipc.nr_waiters(), 0);
        let first_read = sim.marks.iter().find(|m| m.1 == 0).unwrap().2;
        let sent: Vec<u64> = sim.marks.iter().filter(|m| m.1 == 1).map(|m| m.2).collect();
        assert_eq!(sent.len(), 3);
        assert!(sent.iter().all(|&at| at > first_read + 100_000), "{sent:?}");
        for name in ["w1", "w2", "w3"] {
            let t = sim.tasks.iter().find(|t| &*t.name == name).unwrap();
            assert_eq!(t.stats.wakeups, 1, "{name}");
            assert_eq!(t.last_waker_cpu, Some(4), "{name}");
        }
    }

    /// A sync broadcast (a write into the pipe every waiter poll()s) wakes
    /// its waiters with WF_SYNC: with the waker alone on its CPU and the
    /// waiter's previous CPU busy, wake_affine_idle() takes the waker's CPU
    /// (`sync && nr_running == 1`); after a plain broadcast
    /// wake_affine_weight() keeps the freshly forked waiter's (still heavy)
    /// load on its previous CPU. The waiter is forked while the waker's CPU
    /// is busy, so it starts on the other one.
    #[test]
    fn a_sync_broadcast_wakes_its_waiters_with_wf_sync() {
        let affine = |bc: Step| {
            let both = CpuMask::from_cpus([0, 1]);
            let mut waiter = tpl(
                "waiter",
                vec![
                    Step::Wait {
                        cond: 0,
                        mutex: None,
                    },
                    Step::Exit,
                ],
            );
            waiter.affinity = Some(both);
            let hog = pinned(
                "hog",
                1,
                vec![
                    Step::Sleep { ns: 100_000 },
                    Step::Compute { work_ns: 5_000_000 },
                ],
            );
            let main = pinned(
                "main",
                0,
                vec![Step::Compute { work_ns: 1_000_000 }, bc, Step::Exit],
            );
            let s = spec(vec![main, hog, waiter], vec![SyncObject::Cond]);
            let mut sim = crate::scenarios::quiet_sim("kunpeng920", s);
            assert_eq!(sim.run(), StopReason::Finished);
            sim.counters.wake_affine_this
        };
        assert_eq!(affine(Step::BroadcastSync { cond: 0 }), 1);
        assert_eq!(affine(Step::Broadcast { cond: 0 }), 0);
    }

    /// schbench's lock_this_cpu(): the per-CPU lock is a trylock spin, not a
    /// sleep, and a thread that migrated while it spun gives the lock it got
    /// back and takes its new CPU's. `t` is forked onto CPU 0, whose lock
    /// `h` holds for 10 ms of work: it spins there in turns with `h` (never
    /// sleeping; HZ=250 slices, 4-8 ms its turn), is pulled to CPU 1 when
    /// that CPU's hog exits at 9 ms while it waits for its next turn
    /// (newly idle balance), spins on for CPU 0's lock from there, gets it
    /// when `h` unlocks, sees it runs on CPU 1, unlocks it and enters its
    /// request under CPU 1's lock. (With the hog exiting at 5 ms, while `t`
    /// runs, nothing pulls `t` before it takes CPU 0's lock; the test passed
    /// with that set-up only while its looks at the run changed the run.)
    #[test]
    fn a_per_cpu_lock_spins_and_follows_a_migration() {
        let lock = Step::LockPerCpu { first: 0, count: 4 };
        let h = pinned(
            "h",
            0,
            vec![
                lock.clone(),
                Step::Spawn { template: 2 },
                Step::Compute {
                    work_ns: 10_000_000,
                },
                Step::UnlockPerCpu,
                Step::Exit,
            ],
        );
        let hog = pinned("hog", 1, vec![Step::Compute { work_ns: 9_000_000 }]);
        let mut t = tpl(
            "t",
            vec![
                lock,
                Step::Mark { tag: 0 },
                Step::Compute { work_ns: 5_000_000 },
                Step::UnlockPerCpu,
                Step::Exit,
            ],
        );
        t.affinity = Some(CpuMask::from_cpus([0, 1]));
        let mut sp = spec(vec![h, hog, t], vec![SyncObject::Mutex; 4]);
        sp.initial = vec![0, 1];
        let mut sim = crate::scenarios::quiet_sim("kunpeng920", sp);
        let owner = |sim: &Sim, m: usize| match &sim.ipc.objs[m] {
            super::Obj::Mutex { owner, .. } => *owner,
            _ => None,
        };
        let mut spun_after_migrating = false;
        let mut now = 0;
        while sim.marks.is_empty() {
            now += 50_000;
            assert!(now < 20_000_000, "t never took a lock");
            sim.run_until(now);
            let Some(t) = sim.tasks.iter().find(|x| &*x.name == "t") else {
                continue;
            };
            spun_after_migrating |= t.cpu == 1 && t.percpu_lock == Some(0);
        }
        assert!(spun_after_migrating);
        let t = sim.tasks.iter().find(|x| &*x.name == "t").unwrap();
        let id = t.id;
        assert_eq!(t.cpu, 1);
        assert_eq!(t.percpu_lock, Some(1));
        assert_eq!(owner(&sim, 1), Some(id));
        assert_ne!(owner(&sim, 0), Some(id));
        // It spun (CPU time while `h` held the lock), it never slept.
        assert_eq!(t.stats.wakeups, 0);
        assert!(t.stats.cpu_time_ns > 1_000_000, "{}", t.stats.cpu_time_ns);
        assert_eq!(sim.run(), StopReason::Finished);
        assert_eq!(sim.ipc.nr_waiters(), 0);
    }

    /// lat_pipe between two pinned CPUs: µs per round trip.
    fn pipe_round_trip_us(machine: &str, a: u16, b: u16) -> f64 {
        let loops = 2000;
        let pin = |c: u16, steps| {
            let mut t = tpl("p", steps);
            t.affinity = Some(CpuMask::from_cpus([c]));
            t
        };
        let ping = pin(
            a,
            vec![
                Step::Mark { tag: 0 },
                Step::Send { chan: 0, bytes: 4 },
                Step::Recv { chan: 1, bytes: 4 },
                Step::Loop {
                    start: 1,
                    count: loops,
                    slot: 0,
                },
                Step::Mark { tag: 1 },
            ],
        );
        let pong = pin(
            b,
            vec![
                Step::Recv { chan: 0, bytes: 4 },
                Step::Send { chan: 1, bytes: 4 },
                Step::Loop {
                    start: 0,
                    count: loops,
                    slot: 0,
                },
            ],
        );
        let s = spec(
            vec![ping, pong],
            vec![
                SyncObject::Channel { capacity: 65536 },
                SyncObject::Channel { capacity: 65536 },
            ],
        );
        let sim = run(machine, s, 2);
        let t0 = sim.marks.iter().find(|m| m.1 == 0).unwrap().2;
        let t1 = sim.marks.iter().find(|m| m.1 == 1).unwrap().2;
        (t1 - t0) as f64 / 1e3 / loops as f64
    }

    #[test]
    fn channel_data_crosses_the_cache_hierarchy() {
        let near = pipe_round_trip_us("kunpeng920", 0, 1);
        let far = pipe_round_trip_us("kunpeng920", 0, 64);
        assert!(far > near, "{near} {far}");
    }

    #[test]
    fn wall_time_ignores_capacity_and_timers_keep_their_grid() {
        let m = preset("exynos5422").unwrap();
        // The slowest CPU: the one with the smallest capacity.
        let little = (0..m.nr_cpus())
            .min_by_key(|&c| m.cpus[c].capacity)
            .unwrap() as schedlab_topo::CpuId;
        let mut t = tpl(
            "x",
            vec![
                Step::Mark { tag: 0 },
                Step::RunWall { ns: 1_000_000 },
                Step::Mark { tag: 1 },
                Step::Compute { work_ns: 200_000 },
                Step::Timer {
                    id: 0,
                    period_ns: 5_000_000,
                    absolute: false,
                },
                Step::Mark { tag: 2 },
                Step::Loop {
                    start: 3,
                    count: 4,
                    slot: 0,
                },
            ],
        );
        t.affinity = Some(CpuMask::from_cpus([little]));
        let mut s = spec(vec![t], vec![]);
        s.name = "wall".into();
        let m2 = preset("exynos5422").unwrap();
        let d = build_domains(&m2, &DomainConfig::default()).unwrap();
        let mut sim = Sim::new(
            m2,
            d,
            s,
            SimConfig {
                seed: 3,
                checked: true,
                noise: false,
                ..SimConfig::default()
            },
        );
        assert_eq!(sim.run(), StopReason::Finished);
        let at = |tag| {
            sim.marks
                .iter()
                .filter(|m| m.1 == tag)
                .map(|m| m.2)
                .collect::<Vec<_>>()
        };
        let (t0, t1) = (at(0)[0], at(1)[0]);
        assert!((t1 - t0).abs_diff(1_000_000) <= 1, "{t0} {t1}");
        let ticks = at(2);
        assert_eq!(ticks.len(), 4);
        for (k, w) in ticks.iter().enumerate() {
            // Expiries at start + k·5 ms (plus the wakeup path's latency).
            let due = t0 + (k as u64 + 1) * 5_000_000;
            assert!(*w >= due && *w < due + 200_000, "{k}: {w} vs {due}");
        }
    }

    /// A barrier spin is a bounded loop: its budget is work, used up only
    /// while the waiter runs, and more slowly on a slower CPU. The spinner
    /// shares its CPU with two other threads; it gives up after `spin_ns`
    /// work-ns of its own CPU time, whatever the wall time.
    #[test]
    fn barrier_spin_budget_is_cpu_work() {
        let spin_ns = 1_000_000u64;
        let m = preset("exynos5422").unwrap();
        let slowest = (0..m.nr_cpus())
            .min_by_key(|&c| m.cpus[c].capacity)
            .unwrap();
        let fastest = (0..m.nr_cpus())
            .max_by_key(|&c| m.cpus[c].capacity)
            .unwrap();
        for cpu in [slowest, fastest] {
            let pin = |mut t: ThreadTemplate| {
                t.affinity = Some(CpuMask::from_cpus([cpu as schedlab_topo::CpuId]));
                t
            };
            let ts = vec![
                pin(tpl(
                    "hog",
                    vec![Step::Compute {
                        work_ns: 20_000_000,
                    }],
                )),
                pin(tpl("spinner", vec![Step::Barrier { id: 0, spin_ns }])),
                pin(tpl(
                    "late",
                    vec![
                        Step::Compute {
                            work_ns: 20_000_000,
                        },
                        Step::Barrier { id: 0, spin_ns: 0 },
                    ],
                )),
            ];
            let s = spec(ts, vec![SyncObject::Barrier { parties: 2 }]);
            let m = preset("exynos5422").unwrap();
            let speed = schedlab_hw::compute_speed(&m, cpu as schedlab_topo::CpuId, 0, 1);
            let d = build_domains(&m, &DomainConfig::default()).unwrap();
            let mut sim = Sim::new(
                m,
                d,
                s,
                SimConfig {
                    seed: 5,
                    checked: true,
                    noise: false,
                    ..SimConfig::default()
                },
            );
            assert_eq!(sim.run(), StopReason::Finished);
            assert_eq!(sim.counters.spin_timeouts, 1, "cpu {cpu}");
            let spinner = sim.tasks.iter().find(|t| &*t.name == "spinner").unwrap();
            let want = spin_ns as f64 / speed;
            let got = spinner.stats.cpu_time_ns as f64;
            assert!(
                (got - want).abs() < 0.02 * want,
                "cpu {cpu}: spun {got} ns of CPU time, budget {want}"
            );
        }
    }

    /// Trylock spinners and futex lockers on one mutex held across work:
    /// critical sections never overlap, every thread finishes (odd seeds
    /// squeeze the threads onto 3 CPUs, so spinners are preempted and must
    /// take the lock when they run again).
    #[test]
    fn spin_locks_exclude_and_hand_over() {
        for seed in SEEDS {
            let mut r = rng::stream(seed, "test-spinlock");
            let ts = (0..7)
                .map(|i| {
                    let mut s = Vec::new();
                    for _ in 0..40 {
                        s.push(work(&mut r, 50));
                        s.push(if i % 2 == 0 {
                            Step::SpinLock { mutex: 0 }
                        } else {
                            Step::Lock { mutex: 0 }
                        });
                        s.push(Step::Mark { tag: 1 });
                        s.push(work(&mut r, 30));
                        s.push(Step::Mark { tag: 2 });
                        s.push(Step::Unlock { mutex: 0 });
                    }
                    tpl("s", s)
                })
                .collect();
            let sim = run("exynos5422", spec(ts, vec![SyncObject::Mutex]), seed);
            let mut inside: Option<u32> = None;
            for &(t, tag, _) in &sim.marks {
                if tag == 1 {
                    assert_eq!(inside, None, "seed {seed}");
                    inside = Some(t);
                } else {
                    assert_eq!(inside, Some(t), "seed {seed}");
                    inside = None;
                }
            }
            assert_eq!(sim.marks.len(), 7 * 40 * 2, "seed {seed}");
        }
    }

    /// Lock-holder preemption: a trylock spinner shares its CPU with the
    /// lock holder, so it burns its turns while the holder is preempted, and
    /// it is not running when the holder unlocks: it takes the lock on its
    /// next turn.
    #[test]
    fn a_preempted_lock_spinner_takes_the_lock_when_it_runs_again() {
        let pin = |name: &str, steps| {
            let mut t = tpl(name, steps);
            t.affinity = Some(CpuMask::from_cpus([4]));
            t
        };
        let holder = pin(
            "holder",
            vec![
                Step::Lock { mutex: 0 },
                Step::Compute {
                    work_ns: 10_000_000,
                },
                Step::Unlock { mutex: 0 },
            ],
        );
        let spinner = pin(
            "spinner",
            vec![
                Step::Compute { work_ns: 100_000 },
                Step::SpinLock { mutex: 0 },
                Step::Mark { tag: 1 },
                Step::Unlock { mutex: 0 },
            ],
        );
        let sim = run(
            "exynos5422",
            spec(vec![holder, spinner], vec![SyncObject::Mutex]),
            2,
        );
        let s = sim.tasks.iter().find(|t| &*t.name == "spinner").unwrap();
        // It spun for whole turns of the CPU while the holder waited.
        assert!(s.stats.cpu_time_ns > 2_000_000, "{}", s.stats.cpu_time_ns);
        assert_eq!(sim.marks.len(), 1);
        assert!(sim.marks[0].2 > 10_000_000 + s.stats.cpu_time_ns - 200_000);
    }

    /// A flag poller on an A15 goes on as soon as the flag changes (after
    /// the cache line's trip), or after its budget of work if it never does.
    #[test]
    fn poll_sees_the_flag_change_or_gives_up_after_its_budget() {
        let pin = |c: u16, name: &str, steps| {
            let mut t = tpl(name, steps);
            t.affinity = Some(CpuMask::from_cpus([c]));
            t
        };
        for (set_after_ns, budget_ns) in [(30_000u64, 100_000u64), (300_000, 100_000)] {
            let poller = pin(
                4,
                "poller",
                vec![
                    Step::Poll {
                        counter: 0,
                        value: 0,
                        spin_ns: budget_ns,
                    },
                    Step::Mark { tag: 1 },
                ],
            );
            let setter = pin(
                5,
                "setter",
                vec![
                    Step::Compute {
                        work_ns: set_after_ns,
                    },
                    Step::SetCounter {
                        counter: 0,
                        value: 1,
                    },
                ],
            );
            let sim = run(
                "exynos5422",
                spec(vec![poller, setter], vec![SyncObject::Counter]),
                2,
            );
            let p = sim.tasks.iter().find(|t| &*t.name == "poller").unwrap();
            let spun = p.stats.cpu_time_ns;
            if set_after_ns < budget_ns {
                assert_eq!(sim.counters.spin_timeouts, 0);
                // It spun until the change (both started together, ± fork jitter).
                assert!(
                    spun > set_after_ns - 30_000 && spun < set_after_ns + 30_000,
                    "{spun}"
                );
            } else {
                assert_eq!(sim.counters.spin_timeouts, 1);
                assert!(spun >= budget_ns && spun < budget_ns + 5_000, "{spun}");
            }
        }
    }

    /// `Count` adds and jumps when the new value is the one named.
    #[test]
    fn count_jumps_when_the_value_is_reached() {
        let steps = vec![
            // 0: n += 1; at 3 jump to 3.
            Step::Count {
                counter: 0,
                delta: 1,
                reached: 3,
                jump_to: 3,
            },
            Step::Mark { tag: 1 },
            Step::Jump { to: 0 },
            // 3: count back down to 0, marking each pass.
            Step::Mark { tag: 2 },
            Step::Count {
                counter: 0,
                delta: -1,
                reached: 0,
                jump_to: 6,
            },
            Step::Jump { to: 3 },
            Step::Mark { tag: 3 },
        ];
        let sim = run(
            "exynos5422",
            spec(vec![tpl("c", steps)], vec![SyncObject::Counter]),
            2,
        );
        let tags: Vec<u32> = sim.marks.iter().map(|m| m.1).collect();
        assert_eq!(tags, vec![1, 1, 2, 2, 2, 3]);
    }

    /// glibc's requeueing broadcast wakes one waiter; the others are woken
    /// one by one by the unlocks, so each waiter is woken exactly once. A
    /// plain broadcast wakes them all, and those that find the mutex taken
    /// sleep and are woken again.
    #[test]
    fn requeue_broadcast_wakes_each_waiter_once() {
        let n = 5u32;
        let wakeups = |requeue: bool| {
            let mut ts: Vec<ThreadTemplate> = (0..n)
                .map(|_| {
                    tpl(
                        "w",
                        vec![
                            Step::Lock { mutex: 0 },
                            Step::SemPost { sem: 2 },
                            Step::Wait {
                                cond: 1,
                                mutex: Some(0),
                            },
                            Step::Compute { work_ns: 20_000 },
                            Step::Unlock { mutex: 0 },
                        ],
                    )
                })
                .collect();
            let mut b: Vec<Step> = (0..n).map(|_| Step::SemWait { sem: 2 }).collect();
            b.push(Step::Lock { mutex: 0 });
            b.push(if requeue {
                Step::BroadcastRequeue {
                    cond: 1,
                    mutex: 0,
                    syscall_ns: 0,
                }
            } else {
                Step::Broadcast { cond: 1 }
            });
            b.push(Step::Compute { work_ns: 5_000 });
            b.push(Step::Unlock { mutex: 0 });
            ts.push(tpl("b", b));
            let sync = vec![
                SyncObject::Mutex,
                SyncObject::Cond,
                SyncObject::Semaphore { initial: 0 },
            ];
            let sim = run("exynos5422", spec(ts, sync), 2);
            sim.tasks
                .iter()
                .filter(|t| &*t.name == "w")
                .map(|t| t.stats.wakeups)
                .sum::<u64>()
        };
        // Each waiter blocks once on the condition (and possibly once on the
        // mutex before it: the broadcaster may hold it when a waiter arrives).
        let requeued = wakeups(true);
        let plain = wakeups(false);
        assert!(requeued < plain, "requeue {requeued}, plain {plain}");
    }

    /// A requeueing broadcast that has a waiter enters the kernel: the caller
    /// spends `syscall_ns` of CPU work on it before its next step, still
    /// holding the mutex, so the waiter gets the mutex only after that. With
    /// nobody waiting the call is free.
    #[test]
    fn a_requeue_broadcast_with_waiters_costs_its_futex_call_inside_the_lock() {
        let syscall_ns = 10_000;
        let waiter = pinned(
            "w",
            5,
            vec![
                Step::Lock { mutex: 0 },
                Step::SemPost { sem: 2 },
                Step::Wait {
                    cond: 1,
                    mutex: Some(0),
                },
                Step::Mark { tag: 9 },
                Step::Unlock { mutex: 0 },
            ],
        );
        let broadcast = Step::BroadcastRequeue {
            cond: 1,
            mutex: 0,
            syscall_ns,
        };
        // An A15 (capacity 1024): work-ns are ns.
        let b = pinned(
            "b",
            4,
            vec![
                Step::SemWait { sem: 2 },
                Step::Lock { mutex: 0 },
                Step::Mark { tag: 0 },
                broadcast.clone(),
                Step::Mark { tag: 1 },
                Step::Unlock { mutex: 0 },
                // Nobody waits any more: no system call.
                Step::Lock { mutex: 0 },
                Step::Mark { tag: 2 },
                broadcast,
                Step::Mark { tag: 3 },
                Step::Unlock { mutex: 0 },
            ],
        );
        let sync = vec![
            SyncObject::Mutex,
            SyncObject::Cond,
            SyncObject::Semaphore { initial: 0 },
        ];
        let sim = run("exynos5422", spec(vec![waiter, b], sync), 2);
        let at = |tag: u32| sim.marks.iter().find(|m| m.1 == tag).unwrap().2;
        assert_eq!(at(1) - at(0), syscall_ns);
        assert_eq!(at(3), at(2));
        assert!(at(9) >= at(1), "the waiter took the mutex inside the call");
    }

    /// A task preempted while it owns a mutex is counted: here the tick
    /// preempts a lock holder that shares its CPU with a CPU hog.
    #[test]
    fn preempted_lock_holders_are_counted() {
        let holder = pinned(
            "holder",
            0,
            vec![
                Step::Lock { mutex: 0 },
                Step::Compute {
                    work_ns: 50_000_000,
                },
                Step::Unlock { mutex: 0 },
            ],
        );
        let hog = pinned(
            "hog",
            0,
            vec![Step::Compute {
                work_ns: 50_000_000,
            }],
        );
        let sim = run(
            "exynos5422",
            spec(vec![holder, hog.clone()], vec![SyncObject::Mutex]),
            2,
        );
        assert!(sim.counters.lock_holder_preemptions > 0);
        assert!(sim.tasks.iter().all(|t| t.locks_held == 0));
        // Without the lock, the same run counts none.
        let free = pinned(
            "free",
            0,
            vec![Step::Compute {
                work_ns: 50_000_000,
            }],
        );
        let sim = run("exynos5422", spec(vec![free, hog], vec![]), 2);
        assert_eq!(sim.counters.lock_holder_preemptions, 0);
    }

    /// An unlock by a thread that does not own the mutex releases it (glibc's
    /// default mutex does not check the owner); the owner's count of held
    /// locks follows (checked mode compares it with the owners after every
    /// event).
    #[test]
    fn an_unlock_by_another_thread_releases_the_owners_count() {
        let owner = pinned(
            "owner",
            4,
            vec![
                Step::Lock { mutex: 0 },
                Step::Compute { work_ns: 2_000_000 },
            ],
        );
        let other = pinned(
            "other",
            5,
            vec![
                Step::Compute { work_ns: 1_000_000 },
                Step::Unlock { mutex: 0 },
            ],
        );
        let sim = run(
            "exynos5422",
            spec(vec![owner, other], vec![SyncObject::Mutex]),
            2,
        );
        assert!(sim.tasks.iter().all(|t| t.locks_held == 0));
    }

    /// A spinner on a CPU takes a released mutex ahead of the sleeping waiter
    /// the unlock wakes (which then finds it taken and sleeps again): one
    /// lock steal.
    #[test]
    fn a_running_spinner_steals_the_lock_from_the_woken_sleeper() {
        let holder = pinned(
            "holder",
            4,
            vec![
                Step::Lock { mutex: 0 },
                Step::SemPost { sem: 1 },
                Step::SemPost { sem: 1 },
                Step::Compute { work_ns: 1_000_000 },
                Step::Unlock { mutex: 0 },
            ],
        );
        let sleeper = pinned(
            "sleeper",
            5,
            vec![
                Step::SemWait { sem: 1 },
                Step::Lock { mutex: 0 },
                Step::Unlock { mutex: 0 },
            ],
        );
        let spinner = pinned(
            "spinner",
            6,
            vec![
                Step::SemWait { sem: 1 },
                Step::Compute { work_ns: 500_000 },
                Step::SpinLock { mutex: 0 },
                Step::Compute { work_ns: 100_000 },
                Step::Unlock { mutex: 0 },
            ],
        );
        let sync = vec![SyncObject::Mutex, SyncObject::Semaphore { initial: 0 }];
        let sim = run("exynos5422", spec(vec![holder, sleeper, spinner], sync), 2);
        assert_eq!(sim.counters.lock_steals, 1);
    }

    /// Taking a free mutex that another CPU released last pulls its cache
    /// line from there: the core-to-core latency, spent holding the lock (as a
    /// spinner handed the lock pays it). Taking it again on the same CPU is
    /// free.
    #[test]
    fn taking_a_lock_released_on_another_cpu_costs_the_line_transfer() {
        // Two A15s (capacity 1024), then two A7s (377): the line's latency is
        // wall time, the same on a slow CPU.
        for (a, b) in [(4u16, 5u16), (0, 1)] {
            let first = pinned(
                "first",
                a,
                vec![
                    Step::Lock { mutex: 0 },
                    Step::Compute { work_ns: 10_000 },
                    Step::Unlock { mutex: 0 },
                ],
            );
            let second = pinned(
                "second",
                b,
                vec![
                    Step::Compute { work_ns: 1_000_000 },
                    Step::Mark { tag: 0 },
                    Step::Lock { mutex: 0 },
                    Step::Mark { tag: 1 },
                    Step::Unlock { mutex: 0 },
                    Step::Mark { tag: 2 },
                    Step::Lock { mutex: 0 },
                    Step::Mark { tag: 3 },
                    Step::Unlock { mutex: 0 },
                ],
            );
            let sim = run(
                "exynos5422",
                spec(vec![first, second], vec![SyncObject::Mutex]),
                2,
            );
            let at = |tag: u32| sim.marks.iter().find(|m| m.1 == tag).unwrap().2;
            assert_eq!(
                at(1) - at(0),
                u64::from(sim.machine.c2c_ns(a, b)),
                "{a}->{b}"
            );
            assert!(sim.machine.c2c_ns(a, b) > 0);
            assert_eq!(at(3), at(2));
        }
    }

    /// A `Sweep` costs nothing when its data set fits in the CPU's last-level
    /// cache, and streams from memory at the core's bandwidth when it does not:
    /// on exynos5422 a 1 MiB data set fits the A15s' 2 MiB L2, not the A7s'
    /// 512 KiB one.
    #[test]
    fn sweeps_hit_in_a_cache_that_holds_the_data_set_and_stream_otherwise() {
        const MIB: u64 = 1 << 20;
        let took_us = |cpu: CpuId, footprint_bytes: u64| {
            let mut t = tpl(
                "sweep",
                vec![
                    Step::Mark { tag: 0 },
                    Step::Sweep {
                        bytes: MIB,
                        footprint_bytes,
                    },
                    Step::Mark { tag: 1 },
                ],
            );
            t.affinity = Some(CpuMask::from_cpus([cpu]));
            let sim = run("exynos5422", spec(vec![t], Vec::new()), 2);
            (sim.marks[1].2 - sim.marks[0].2) / 1000
        };
        // A15 (CPU 4): 4.57 GB/s per core, so 1 MiB takes ~229 us from memory.
        assert_eq!(took_us(4, MIB), 0);
        let a15 = took_us(4, 4 * MIB);
        assert!((215..=250).contains(&a15), "{a15} us");
        // A7 (CPU 0): 0.66 GB/s; 1 MiB does not fit its 512 KiB L2.
        let a7 = took_us(0, MIB);
        assert!((1500..=1700).contains(&a7), "{a7} us");
    }

    /// parsec_barrier_wait() as streamcluster runs it: no thread passes
    /// barrier k+1 before every thread has passed barrier k, and the
    /// barrier ends in its arrival phase with nobody inside.
    #[test]
    fn parsec_barrier_keeps_threads_in_step() {
        use schedlab_workload::parsec::ParsecBarrier;
        let n = 6u32;
        let rounds = 25u32;
        for seed in SEEDS {
            let mut r = rng::stream(seed, "test-parsec-barrier");
            let bar = ParsecBarrier::at(0, n);
            let ts = (0..n)
                .map(|i| {
                    let mut s = Vec::new();
                    for k in 0..rounds {
                        s.push(work(&mut r, 150));
                        s.push(Step::Mark { tag: k });
                        // Half the threads spin long, half hardly at all.
                        bar.wait(&mut s, if i % 2 == 0 { 100_000 } else { 1_000 });
                    }
                    tpl("p", s)
                })
                .collect();
            let sim = run(
                "exynos5422",
                spec(ts, ParsecBarrier::objects().to_vec()),
                seed,
            );
            let tags: Vec<u32> = sim.marks.iter().map(|m| m.1).collect();
            assert_eq!(tags.len(), (n * rounds) as usize, "seed {seed}");
            assert!(
                tags.windows(2).all(|w| w[0] <= w[1]),
                "seed {seed}: {tags:?}"
            );
            assert!(
                (0..rounds).all(|k| tags.iter().filter(|&&t| t == k).count() == n as usize),
                "seed {seed}"
            );
            assert_eq!(sim.ipc.counter(bar.count), Some(0), "seed {seed}");
            assert_eq!(sim.ipc.counter(bar.departing), Some(0), "seed {seed}");
        }
    }

    /// parsec_barrier_wait() with more threads than CPUs: while the last
    /// arrival makes the broadcast's futex call under the mutex, threads the
    /// flag released find the mutex held and trylock-spin, and a spinner
    /// takes it from the sleeper the unlock wakes. With the call free, the
    /// lock is held only for its line transfers, and here no spinner finds
    /// it held.
    #[test]
    fn the_futex_call_inside_the_barrier_lock_lets_spinners_steal_it() {
        use schedlab_workload::parsec::ParsecBarrier;
        let n = 6u32;
        let rounds = 40u32;
        let steals = |syscall_ns: u64| -> Vec<u64> {
            SEEDS
                .iter()
                .map(|&seed| {
                    let mut r = rng::stream(seed, "test-parsec-steal");
                    let bar = ParsecBarrier::at(0, n).with_syscall_ns(syscall_ns);
                    let ts = (0..n)
                        .map(|_| {
                            let mut s = Vec::new();
                            for _ in 0..rounds {
                                s.push(work(&mut r, 150));
                                bar.wait(&mut s, 20_000);
                            }
                            let mut t = tpl("p", s);
                            // Six threads on two A7s.
                            t.affinity = Some(CpuMask::first_n(2));
                            t
                        })
                        .collect();
                    let sim = run(
                        "exynos5422",
                        spec(ts, ParsecBarrier::objects().to_vec()),
                        2 * seed,
                    );
                    sim.counters.lock_steals
                })
                .collect()
        };
        let without_call = steals(0);
        assert!(without_call.iter().all(|&s| s == 0), "{without_call:?}");
        let with_call = steals(1_000);
        assert!(with_call.iter().all(|&s| s > 0), "{with_call:?}");
    }

    /// Two threads that only yield, sharing one CPU.
    fn yielders(syscall_ns: u64, livelock_events: u64) -> Sim {
        let prog = vec![
            Step::Yield { syscall_ns },
            Step::Loop {
                start: 0,
                count: u32::MAX,
                slot: 0,
            },
            Step::Exit,
        ];
        let mut s = spec(
            vec![pinned("y0", 1, prog.clone()), pinned("y1", 1, prog)],
            vec![],
        );
        s.max_time_ns = 10_000_000;
        exynos(
            s,
            SimConfig {
                livelock_events,
                ..checked(1)
            },
        )
    }

    /// sched_yield() costs its system call: yielding threads take turns and
    /// simulated time passes, the CPU busy with them throughout.
    #[test]
    fn yields_cost_their_system_call_and_take_turns() {
        let mut sim = yielders(500, crate::sim::LIVELOCK_EVENTS);
        assert_eq!(sim.run(), StopReason::TimeLimit);
        let cpu: Vec<u64> = sim
            .tasks
            .iter()
            .filter(|t| !t.kthread)
            .map(|t| t.stats.cpu_time_ns)
            .collect();
        assert_eq!(cpu.len(), 2);
        // Both run for most of the 10 ms between them. (Not equally: the two
        // start alike, so their forfeited deadlines tie, and a tie goes to
        // the entity queued first, as in the kernel's tree.)
        assert!(cpu.iter().all(|&c| c > 3_000_000), "{cpu:?}");
        assert!(cpu.iter().sum::<u64>() > 9_900_000, "{cpu:?}");
        // CPU 1 is an A7 (capacity 377): a 500 ns call takes ~1.36 us
        // there, so about 7,350 yields fit in 10 ms, at least every second
        // one a switch.
        let switches = sim.counters.context_switches;
        assert!((3_600..7_700).contains(&switches), "{switches}");
    }

    /// yield_task_fair() of 7.3: an eligible task forfeits the rest of its
    /// request (vruntime to its deadline, a new deadline one slice on); an
    /// ineligible one keeps both.
    #[test]
    fn an_eligible_yielder_forfeits_its_request() {
        let mut sim = yielders(500, crate::sim::LIVELOCK_EVENTS);
        sim.run_until(50_000);
        let cpu = 1;
        let t = sim.rqs[cpu].curr.expect("a yielder runs");
        sim.update_curr(cpu as CpuId);
        let before = sim.tasks[t as usize].se;
        let eligible = sim.vruntime_eligible(cpu as CpuId, before.vruntime);
        assert!(matches!(sim.yield_task(t), super::Flow::Stop));
        let after = &sim.tasks[t as usize].se;
        if eligible {
            let slice = crate::fair::calc_delta_fair(after.slice, after.weight);
            assert_eq!(after.vruntime, before.deadline);
            assert_eq!(after.deadline, before.deadline + slice);
        } else {
            assert_eq!(
                (after.vruntime, after.deadline),
                (before.vruntime, before.deadline)
            );
        }
        // Both cases occur over a run of two yielders.
        let mut seen = [false; 2];
        let mut sim = yielders(500, crate::sim::LIVELOCK_EVENTS);
        for k in 1..200u64 {
            sim.run_until(8_000 + k * 700);
            let Some(t) = sim.rqs[cpu].curr else { continue };
            sim.update_curr(cpu as CpuId);
            let v = sim.tasks[t as usize].se.vruntime;
            seen[usize::from(sim.vruntime_eligible(cpu as CpuId, v))] = true;
        }
        assert_eq!(seen, [true, true]);
    }

    /// Yields that cost nothing switch forever at one instant: the run stops
    /// as a livelock instead of never returning.
    #[test]
    fn zero_cost_yields_stop_as_a_livelock() {
        let mut sim = yielders(0, 20_000);
        assert_eq!(sim.run(), StopReason::Livelock);
        assert!(sim.now < 10_000_000);
    }

    /// Threads on one CPU that do nothing but pass a barrier block and wake
    /// each other at one instant forever, each switch-in nested in the
    /// schedule() of the thread that just blocked. The nesting is bounded
    /// (no stack overflow; fuzzing found one with HPERF_HMP's idle pull, see
    /// the exp crate's fuzz regressions) and the run stops as a livelock.
    #[test]
    fn zero_time_barrier_loops_stop_as_a_livelock_without_deep_recursion() {
        let prog = vec![
            Step::Barrier { id: 0, spin_ns: 0 },
            Step::Loop {
                start: 0,
                count: u32::MAX,
                slot: 0,
            },
            Step::Exit,
        ];
        let mut s = spec(
            (0..4)
                .map(|i| pinned(&format!("b{i}"), 0, prog.clone()))
                .collect(),
            vec![SyncObject::Barrier { parties: 4 }],
        );
        s.max_time_ns = 10_000_000;
        let mut sim = exynos(
            s,
            SimConfig {
                livelock_events: 50_000,
                ..checked(3)
            },
        );
        assert_eq!(sim.run(), StopReason::Livelock);
        assert!(sim.counters.context_switches >= 50_000);
        assert!(sim.now < 10_000_000);
    }

    /// One thread looping over steps that take no time (a lock and an
    /// unlock) stops the whole run as a livelock after MAX_INSTANT_STEPS,
    /// naming the thread, instead of silently exiting it.
    #[test]
    fn a_lone_zero_time_loop_stops_the_run_as_a_livelock() {
        let spin = vec![
            Step::Lock { mutex: 0 },
            Step::Unlock { mutex: 0 },
            Step::Loop {
                start: 0,
                count: u32::MAX,
                slot: 0,
            },
            Step::Exit,
        ];
        let work = vec![Step::Compute { work_ns: 1_000_000 }, Step::Exit];
        let s = spec(
            vec![pinned("spin", 0, spin), pinned("work", 1, work)],
            vec![SyncObject::Mutex],
        );
        let mut sim = exynos(s, checked(1));
        assert_eq!(sim.run(), StopReason::Livelock);
        let t = sim.livelock_task.expect("the looping thread is named");
        assert_eq!(&*sim.tasks[t as usize].name, "spin");
        assert_eq!(sim.live, 2);
        assert!(sim.now < 1_000_000, "{}", sim.now);
        sim.check_time_conservation().unwrap();
    }

    /// Forks beyond the task cap fail and are counted; the parent goes on
    /// and the run finishes.
    #[test]
    fn forks_beyond_the_task_cap_fail_and_are_counted() {
        let parent = vec![
            Step::Spawn { template: 1 },
            Step::Loop {
                start: 0,
                count: 200,
                slot: 0,
            },
            Step::Exit,
        ];
        let child = vec![Step::Compute { work_ns: 10_000 }, Step::Exit];
        let run = |max_tasks| {
            let mut s = spec(
                vec![tpl("parent", parent.clone()), tpl("child", child.clone())],
                vec![],
            );
            s.initial = vec![0];
            let mut sim = exynos(
                s,
                SimConfig {
                    max_tasks,
                    ..checked(2)
                },
            );
            assert_eq!(sim.run(), StopReason::Finished);
            sim
        };
        // `forks` counts the parent's own creation too.
        let free = run(crate::MAX_TASKS);
        assert_eq!(free.counters.forks, 201);
        assert_eq!(free.counters.forks_failed, 0);
        // 8 kworkers (exynos5422's CPUs) and the parent leave room for 91.
        let capped = run(100);
        assert_eq!(capped.tasks.len(), 100);
        assert_eq!(capped.counters.forks, 92);
        assert_eq!(capped.counters.forks_failed, 109);
    }

    /// rt-app's fork limit counts per thread and target: a parent may fork
    /// `limit` children of a template at its guards, and the next pass
    /// makes the workload exit; each child, forking at the same guard,
    /// starts from zero.
    #[test]
    fn a_thread_past_its_fork_limit_ends_the_workload() {
        let fork = |template| {
            [
                Step::ForkLimit { template, limit: 3 },
                Step::Spawn { template },
            ]
        };
        let mut parent: Vec<Step> = fork(1).to_vec();
        parent.push(Step::Loop {
            start: 0,
            count: 10,
            slot: 0,
        });
        parent.push(Step::Exit);
        // Each child forks two grandchildren of its own (within its limit).
        let mut child: Vec<Step> = fork(2).to_vec();
        child.extend(fork(2));
        child.push(Step::Exit);
        let grandchild = vec![Step::Compute { work_ns: 10_000 }, Step::Exit];
        let mut s = spec(
            vec![
                tpl("parent", parent),
                tpl("child", child),
                tpl("grandchild", grandchild),
            ],
            vec![],
        );
        s.initial = vec![0];
        let mut sim = exynos(s, checked(2));
        assert_eq!(sim.run(), StopReason::Exited);
        let why = sim.exit_reason.clone().unwrap();
        assert!(
            why.contains("thread parent") && why.contains("fork limit (3) forking 'child'"),
            "{why}"
        );
        let children = sim.tasks.iter().filter(|t| t.template == 1).count();
        assert_eq!(children, 3);
        let parent = sim.tasks.iter().find(|t| t.template == 0).unwrap();
        assert_eq!(sim.fork_counts.get(&(parent.id, 1)), Some(&3));
        for c in sim.tasks.iter().filter(|t| t.template == 1) {
            assert!(sim
                .fork_counts
                .iter()
                .filter(|(k, _)| k.0 == c.id)
                .all(|(&(_, tpl), &n)| tpl == 2 && n <= 2));
        }
    }
}
