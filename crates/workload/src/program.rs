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
    /// Read `bytes` of a data set of `footprint_bytes` that the program
    /// reads again on every pass (a thread's slice of an array swept over and
    /// over). If the whole data set fits in the last-level cache of the CPU
    /// the thread runs on, the pass hits in cache and takes no time of its
    /// own (the `Compute` that goes with it is the cost); otherwise it
    /// streams from memory exactly like `Memory { bytes }`.
    Sweep { bytes: u64, footprint_bytes: u64 },
    /// Sleep for a fixed time (a wait the program does not time itself: I/O,
    /// a network round trip, a modelled external delay).
    Sleep { ns: u64 },
    /// Sleep through nanosleep()/usleep()/clock_nanosleep(): the hrtimer
    /// expires `ns` later plus the task's timer slack (hrtimer_nanosleep()
    /// sets the range [ns, ns + timer_slack_ns], and on an otherwise quiet CPU
    /// the timer fires at its end).
    Nanosleep { ns: u64 },
    /// `Nanosleep` for `ns` plus a random extra of 0 to `jitter_ns` − 1
    /// (`usleep(t + rand_r() % jitter)`), drawn from the run's `jitter`
    /// stream.
    NanosleepJitter { ns: u64, jitter_ns: u64 },
    /// rt-app's `delay`: sleep until `ns` after the workload's start (the
    /// first thread's, rt-app's `t_zero`, shared by every thread, forked
    /// ones too), by an absolute clock_nanosleep() (with the timer slack),
    /// and count the thread's periodic timers (`Timer`) from that point on;
    /// at once if that point has passed.
    Delay { ns: u64 },
    /// Wait at a barrier: spin up to `spin_ns` (OpenMP/libgomp's active wait,
    /// PARSEC's spin barrier), then block; the last arrival wakes every sleeper.
    /// Spin loops are bounded by an iteration count, so `spin_ns` is work (ns on
    /// a capacity-1024 CPU, like `Compute`): it is used up only while the waiter
    /// runs, and more slowly on a slower CPU or beside a busy SMT sibling.
    Barrier { id: SyncId, spin_ns: u64 },
    /// Create a new thread from a template (pthread_create / clone).
    Spawn { template: TemplateId },
    /// rt-app's guard before a `fork` (FORKS_LIMIT): when this thread has
    /// passed such a guard for `template` `limit` times already, the
    /// workload exits with an error (rt-app's exit(EXIT_FAILURE)); else the
    /// thread's count for `template` goes up by one. Counted per thread: a
    /// forked thread starts from zero.
    ForkLimit { template: TemplateId, limit: u32 },
    /// Record the current time under `tag` (the benchmark's own timer calls).
    Mark { tag: u32 },
    /// Jump back to step `start` until this step has been reached `count` times
    /// in total; `slot` names the loop counter (per task).
    Loop { start: u32, count: u32, slot: u8 },
    /// End the thread.
    Exit,
    /// Busy for `ns` of wall time whatever the CPU's speed (rt-app `runtime`).
    RunWall { ns: u64 },
    /// Write `bytes` into a [`SyncObject::Channel`], [`SyncObject::Pipe`] or
    /// [`SyncObject::UnixStream`]: blocks while there is no room, wakes a
    /// sleeping reader with WF_SYNC (each object's rules say when).
    Send { chan: SyncId, bytes: u64 },
    /// [`Step::Send`] to channel `first + stride·i`, where `i` is the passes
    /// loop `slot` has completed (0 in its first pass): inside that loop a
    /// thread writes to each of a row of channels in turn, as a loop over
    /// file descriptors does, with one step instead of one per channel.
    SendNext {
        first: SyncId,
        stride: u32,
        slot: u8,
        bytes: u64,
    },
    /// Read exactly `bytes` from a channel, pipe or socket (a read loop until
    /// the message is complete): blocks while it is empty, wakes blocked
    /// writers when the object's rules say the read made room for them.
    Recv { chan: SyncId, bytes: u64 },
    /// Acquire a [`SyncObject::Mutex`] (futex semantics: a contended lock
    /// sleeps; a woken waiter retries and may lose to a lock stealer).
    Lock { mutex: SyncId },
    /// Release a mutex and wake its first waiter (FIFO).
    Unlock { mutex: SyncId },
    /// schbench's lock_this_cpu(): look up the CPU the thread runs on
    /// (sched_getcpu()) and busy-wait in a trylock loop, without sleeping, on
    /// that CPU's mutex `first + cpu % count` (as [`Step::SpinLock`]); once
    /// it is taken, look the CPU up again and, if the thread was migrated
    /// while it spun, release that mutex and start over with the new CPU's.
    LockPerCpu { first: SyncId, count: u32 },
    /// Release the mutex taken by the last `LockPerCpu`.
    UnlockPerCpu,
    /// pthread_cond_wait: release `mutex` (if any), sleep on `cond`, then
    /// re-acquire the mutex. With `mutex: None` it is a bare futex wait.
    Wait { cond: SyncId, mutex: Option<SyncId> },
    /// Wake one waiter of a [`SyncObject::Cond`] (lost when none waits).
    Signal { cond: SyncId },
    /// Wake every waiter of a condition.
    Broadcast { cond: SyncId },
    /// Wake every waiter of a condition with WF_SYNC: a write into a pipe
    /// that all the waiters poll() (hackbench's GO). anon_pipe_write() wakes
    /// the pipe's read wait queue with wake_up_interruptible_sync_poll(), and
    /// each poller's entry there (pollwake() in fs/select.c) hands the sync
    /// flag on to try_to_wake_up().
    BroadcastSync { cond: SyncId },
    /// Post a [`SyncObject::Semaphore`] (count + 1, wake one waiter).
    SemPost { sem: SyncId },
    /// Wait on a semaphore: take a count or sleep until one is posted.
    SemWait { sem: SyncId },
    /// Set a semaphore's count to zero, waking nobody: posts made before
    /// are forgotten (a futex word reset to BLOCKED, as schbench's messenger
    /// does at the top of its loop).
    SemReset { sem: SyncId },
    /// sched_yield(): the caller gives up the rest of its request (the
    /// engine's yield_task_fair()) and the CPU reschedules; then the call's
    /// own `syscall_ns` of CPU work (on a
    /// capacity-1024 CPU, like `Compute`: kernel entry and exit and the
    /// pass through schedule()) runs before the next step, whether or not
    /// another task ran in between. Linux always pays for the call, so a
    /// loop of yields takes time even on a CPU with nothing else to run.
    Yield { syscall_ns: u64 },
    /// sched_setattr() with `sched_runtime` on a fair task: request a custom
    /// slice of `ns` (clamped to 0.1-100 ms as the kernel does); 0 returns
    /// to the base slice. rt-app's `dl-runtime` on SCHED_OTHER/BATCH/IDLE.
    SetSlice { ns: u64 },
    /// sched_setattr() on itself (rt-app's `policy`, `priority`,
    /// `dl-runtime`, `util_min` and `util_max`): the policy (an RT one
    /// carries its RT priority and moves the thread to the RT class), a
    /// new nice value, a new `sched_runtime` (0: the base slice; both for
    /// fair policies only) and new utilisation clamps (0-1024), each
    /// `None` to keep the current one.
    /// The kernel dequeues and requeues the thread around the change (its
    /// lag kept, its weight and load average rescaled); no change, no cost.
    /// Clamps with the minimum above the maximum fail (EINVAL) and change
    /// nothing.
    SetAttr(Box<Attrs>),
    /// sched_setaffinity() on the thread itself (rt-app's `cpus`, which its
    /// threads set through pthread_setaffinity_np()): the thread may run only on `cpus`
    /// (those of them the machine has), or with `None` again on the CPUs it
    /// started with. If its CPU is no longer allowed, the stopper moves it to
    /// one that is before the next step. No change, no cost. (Boxed: the
    /// 512-bit mask would make every step of every program 72 bytes.)
    SetAffinity { cpus: Option<Box<CpuMask>> },
    /// The thread becomes its own process (fork without threads: a new
    /// thread-group id), as hackbench's or perf's child processes are.
    NewProcess,
    /// The thread becomes its own process and starts a new program (a forked
    /// child's execve(), as make's compiler jobs or a test harness's
    /// benchmark binary): a new thread-group id, then exec balancing
    /// (sched_exec()): the SD_BALANCE_EXEC slow path picks a CPU from the
    /// thread's own, and if it is another one the stopper moves the thread
    /// there before the next step.
    Exec,
    /// Take the next ticket of a [`SyncObject::Counter`] (an atomic
    /// fetch-and-add on a shared work counter): when the counter is below
    /// `limit` go on with the next step, otherwise jump to step `exit_to`.
    /// Dynamic work distribution (PARSEC's ticket dispensers, job queues).
    Grab {
        counter: SyncId,
        limit: u32,
        exit_to: u32,
    },
    /// Reset a counter to zero (the next batch of tickets).
    ResetCounter { counter: SyncId },
    /// Read a [`SyncObject::Counter`] without taking a ticket (a shared
    /// flag or progress word): go on while it is below `below`, otherwise
    /// jump to step `else_to`.
    TestCounter {
        counter: SyncId,
        below: u32,
        else_to: u32,
    },
    /// Busy-poll a [`SyncObject::Counter`] used as a flag while it equals
    /// `value`, for at most `spin_ns` of work (a bounded polling loop, like
    /// a barrier spin: used up only while the task runs, at its CPU's speed),
    /// then go on whether or not the flag changed. A change of the counter
    /// reaches the poller after the cache line does.
    Poll {
        counter: SyncId,
        value: u32,
        spin_ns: u64,
    },
    /// `while (pthread_mutex_trylock(m) == EBUSY);`: busy-wait, without
    /// bound and without sleeping, until the mutex is free, then take it. A
    /// spinner that is preempted tries again when it next runs.
    SpinLock { mutex: SyncId },
    /// Add `delta` to a counter (saturating at 0); if the new value equals
    /// `reached`, jump to step `jump_to` (an atomic or lock-protected
    /// `++n == max` / `--n == 0` test).
    Count {
        counter: SyncId,
        delta: i32,
        reached: u32,
        jump_to: u32,
    },
    /// Set a counter (a shared flag) to `value`.
    SetCounter { counter: SyncId, value: u32 },
    /// Continue at step `to`.
    Jump { to: u32 },
    /// pthread_cond_broadcast() as glibc before 2.25 did it for a waiter
    /// whose mutex the caller holds: wake one waiter and requeue the others
    /// onto `mutex` (FUTEX_CMP_REQUEUE), where each unlock wakes the next.
    /// When there are waiters the call enters the kernel: `syscall_ns` of
    /// CPU work (on a capacity-1024 CPU, like `Compute`) that the caller does
    /// before its next step, still holding the mutex, so it can be preempted
    /// inside its critical section (at the syscall's return in Linux, e.g. by
    /// the waiter it just woke). Without waiters the call is free.
    BroadcastRequeue {
        cond: SyncId,
        mutex: SyncId,
        syscall_ns: u64,
    },
    /// Periodic timer (rt-app `timer`): sleep until the next expiry, anchored
    /// to the previous expiry (the first is one period after the thread
    /// started). `id` names the timer (per thread). When the expiry has
    /// already passed: `absolute` keeps the grid and goes on without
    /// sleeping; relative mode re-anchors at the current time.
    Timer {
        id: u32,
        period_ns: u64,
        absolute: bool,
    },
    /// Record, under `tag`, the time at which the thread was last woken by a
    /// synchronisation object (the waker's timestamp; schbench's `wake_time`)
    /// or at which its last `Timer` expired (rt-app's wakeup-latency base).
    MarkWoken { tag: u32 },
    /// CPU work (as `Compute`) over a working set of `working_set_bytes`: it
    /// competes for its last-level cache with co-runners and is refilled
    /// after a migration (hardware model, engine hwcost.rs).
    Work {
        work_ns: u64,
        working_set_bytes: u64,
    },
    /// Touch `bytes` of chunk `chunk` of a [`SyncObject::Shared`] region
    /// (data shared by the threads of a process: signals, queues, shared
    /// heap objects), reading it or, with `write`, writing it. Instantaneous
    /// itself: the cache-line transfers it causes (from the CPU that wrote
    /// the chunk last, or from a copy already in the reader's LLC; a write
    /// also takes ownership back from readers elsewhere) are a stall paid
    /// by the thread's next `Compute`/`Work`/`Memory` step, so put it right
    /// before the step that uses the data (engine hwcost.rs).
    Share {
        region: SyncId,
        chunk: u32,
        bytes: u64,
        write: bool,
    },
}

impl Step {
    /// The synchronisation objects of the lock, condition, semaphore and
    /// barrier steps (for messages that name them).
    pub fn sync_refs(&self) -> Vec<SyncId> {
        match *self {
            Step::Lock { mutex } | Step::Unlock { mutex } | Step::SpinLock { mutex } => vec![mutex],
            Step::Wait { cond, mutex } => std::iter::once(cond).chain(mutex).collect(),
            Step::Signal { cond } | Step::Broadcast { cond } | Step::BroadcastSync { cond } => {
                vec![cond]
            }
            Step::BroadcastRequeue { cond, mutex, .. } => vec![cond, mutex],
            Step::SemPost { sem } | Step::SemWait { sem } | Step::SemReset { sem } => vec![sem],
            Step::Barrier { id, .. } => vec![id],
            _ => Vec::new(),
        }
    }
}

/// The attributes of a [`Step::SetAttr`] (boxed there: a thread sets them
/// rarely, and inline they would make every step of every program larger).
#[derive(Clone, Debug, PartialEq)]
pub struct Attrs {
    pub policy: SchedPolicy,
    pub nice: Option<i8>,
    pub runtime_ns: Option<u64>,
    pub util_min: Option<u16>,
    pub util_max: Option<u16>,
}

/// The clamps an [`Attrs`] asks for, (minimum, maximum); `None`: unchanged.
pub type UclampRequest = (Option<u16>, Option<u16>);

impl Attrs {
    /// The policy, nice value, `sched_runtime` and clamps, as the engine's
    /// sched_setattr() family reads them.
    pub fn parts(&self) -> (SchedPolicy, Option<i8>, Option<u64>, UclampRequest) {
        (
            self.policy,
            self.nice,
            self.runtime_ns,
            (self.util_min, self.util_max),
        )
    }
}

/// Scheduling policies: the fair class's (`SCHED_NORMAL`, `SCHED_BATCH`,
/// `SCHED_IDLE`), the RT class's (`SCHED_FIFO`, `SCHED_RR`, each with
/// its `sched_priority`, 1..=99, higher is more important) and the
/// deadline class's (`SCHED_DEADLINE` with its runtime, relative deadline
/// and period).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SchedPolicy {
    #[default]
    Normal,
    /// SCHED_BATCH: weighted by its nice value like SCHED_NORMAL, but its
    /// wakeups never preempt the running task (7.3's
    /// check_preempt_wakeup_fair() tests normal_policy()).
    Batch,
    /// SCHED_IDLE: weight 3 whatever the nice value.
    Idle,
    /// SCHED_FIFO at this `sched_priority` (1..=99): runs until it blocks,
    /// yields or a higher priority preempts it.
    Fifo(u8),
    /// SCHED_RR at this `sched_priority` (1..=99): SCHED_FIFO with a
    /// 100 ms time slice among tasks of its priority.
    Rr(u8),
    /// SCHED_DEADLINE: `runtime_ns` of execution in every `period_ns`,
    /// due `deadline_ns` after each period starts (a constant bandwidth
    /// server; [`check_deadline_params`] gives the kernel's limits).
    Deadline {
        runtime_ns: u64,
        deadline_ns: u64,
        period_ns: u64,
    },
}

impl SchedPolicy {
    /// The RT priority of an RT policy (`sched_priority`), `None` for a fair one.
    pub fn rt_priority(self) -> Option<u8> {
        match self {
            SchedPolicy::Fifo(p) | SchedPolicy::Rr(p) => Some(p),
            _ => None,
        }
    }

    /// SCHED_DEADLINE.
    pub fn is_deadline(self) -> bool {
        matches!(self, SchedPolicy::Deadline { .. })
    }

    /// A fair policy (SCHED_NORMAL, SCHED_BATCH, SCHED_IDLE).
    pub fn is_fair(self) -> bool {
        matches!(
            self,
            SchedPolicy::Normal | SchedPolicy::Batch | SchedPolicy::Idle
        )
    }
}

/// The shortest SCHED_DEADLINE period (`sched_deadline_period_min_us`,
/// 100 µs by default), ns.
pub const DL_PERIOD_MIN_NS: u64 = 100_000;
/// The longest (`sched_deadline_period_max_us`, 2^22 µs by default), ns.
pub const DL_PERIOD_MAX_NS: u64 = (1 << 22) * 1000;
/// The smallest runtime (`1 << DL_SCALE` ns).
pub const DL_RUNTIME_MIN_NS: u64 = 1 << 10;

/// SCHED_DEADLINE's parameters as sched_setattr() takes them, checked as the
/// kernel does (mirrors __checkparam_dl()): a deadline is given, the runtime
/// is at least 1024 ns, a period of 0 stands for the deadline, runtime ≤
/// deadline ≤ period, and the period lies within 100 µs..=2^22 µs. Returns
/// the policy with its period filled in, or why the call fails (EINVAL).
pub fn check_deadline_params(
    runtime_ns: u64,
    deadline_ns: u64,
    period_ns: u64,
) -> Result<SchedPolicy, String> {
    if deadline_ns == 0 {
        return Err("a SCHED_DEADLINE deadline of 0".to_string());
    }
    if runtime_ns < DL_RUNTIME_MIN_NS {
        return Err(format!(
            "a SCHED_DEADLINE runtime of {runtime_ns} ns, below {DL_RUNTIME_MIN_NS} ns"
        ));
    }
    if (deadline_ns | period_ns) >> 63 != 0 {
        return Err("a SCHED_DEADLINE deadline or period of 2^63 ns or more".to_string());
    }
    let period = if period_ns == 0 {
        deadline_ns
    } else {
        period_ns
    };
    if period < deadline_ns || deadline_ns < runtime_ns {
        return Err(format!(
            "SCHED_DEADLINE needs runtime <= deadline <= period, found {runtime_ns} / {deadline_ns} / {period} ns"
        ));
    }
    if !(DL_PERIOD_MIN_NS..=DL_PERIOD_MAX_NS).contains(&period) {
        return Err(format!(
            "a SCHED_DEADLINE period of {period} ns, outside {DL_PERIOD_MIN_NS}..={DL_PERIOD_MAX_NS} ns"
        ));
    }
    Ok(SchedPolicy::Deadline {
        runtime_ns,
        deadline_ns,
        period_ns: period,
    })
}

/// A thread template.
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadTemplate {
    pub name: String,
    /// The nice value of a thread the workload starts (`initial`). A thread
    /// spawned by another (`Step::Spawn`) inherits its creator's nice value,
    /// policy and process, as fork does; it changes them with `Step::SetAttr`.
    pub nice: i8,
    /// SCHED_IDLE for a thread the workload starts: the lowest weight (3),
    /// and CPUs running only such tasks count as idle for wakeup placement
    /// (`sched_idle_cpu()`). Spawned threads inherit their creator's policy.
    pub idle_policy: bool,
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
    /// A futex-based mutex.
    Mutex,
    /// A futex-based mutex with priority inheritance (glibc's
    /// `PTHREAD_PRIO_INHERIT`: FUTEX_LOCK_PI and FUTEX_UNLOCK_PI over a
    /// kernel rt_mutex): its owner runs at the priority of its best RT
    /// waiter, and an unlock hands it to the first waiter.
    PiMutex,
    /// A condition variable (or a bare futex wait queue).
    Cond,
    /// A byte stream with a bounded buffer of `capacity` bytes: a writer
    /// copies what fits and sleeps while it is full; a read that takes bytes
    /// wakes the first sleeping writer. A generic stream; [`SyncObject::Pipe`]
    /// and [`SyncObject::UnixStream`] follow the kernel's own rules.
    Channel { capacity: u64 },
    /// An anonymous pipe as fs/pipe.c keeps it: a ring of `buffers` slots
    /// (`struct pipe_buffer`), each holding part of one page of `page_bytes`.
    /// A write first appends to the last slot's page while that page has room
    /// and the pipe is not empty (anon_pipe_write()'s merge of small writes),
    /// then fills new pages in free slots; it sleeps (exclusively) only while
    /// every slot is in use. A read wakes one sleeping writer, with WF_SYNC,
    /// only when it emptied a slot of a pipe whose slots were all in use
    /// (anon_pipe_read()'s `wake_writer`); a writer that slept, wrote and
    /// leaves a slot free wakes the next one. A write into an empty pipe wakes
    /// a sleeping reader with WF_SYNC.
    Pipe { buffers: u32, page_bytes: u64 },
    /// One direction of an AF_UNIX stream socket (net/unix/af_unix.c): the
    /// writing socket's send buffer `sndbuf` (`sk_sndbuf`) limits the bytes
    /// of its queued messages (`sk_wmem_alloc`, each message's skb truesize:
    /// a workload passes the truesize as `Send`'s bytes). A write queues a
    /// whole message (an skb of up to `sndbuf / 2 - 64` bytes, a longer write
    /// several) whenever the queued bytes are below `sndbuf`
    /// (sock_alloc_send_pskb()), so the last one may overshoot; otherwise the
    /// writer sleeps, non-exclusively. Every queued message wakes every
    /// sleeping reader with WF_SYNC (sock_def_readable()). A read that
    /// consumes a whole message frees its truesize and, if then 4 × queued ≤
    /// `sndbuf` (unix_writable() in unix_write_space()), wakes every sleeping
    /// writer with WF_SYNC.
    UnixStream { sndbuf: u64 },
    /// A counting semaphore.
    Semaphore { initial: u32 },
    /// A shared atomic counter (work tickets), starting at 0.
    Counter,
    /// A region of process-shared data in `chunks` independently written
    /// parts (each chunk remembers the CPU that wrote it last); see
    /// [`Step::Share`].
    Shared { chunks: u32 },
}

/// Slots of a new pipe (`PIPE_DEF_BUFFERS`, include/linux/pipe_fs_i.h).
pub const PIPE_DEF_BUFFERS: u32 = 16;
/// The page a pipe slot holds: `PAGE_SIZE` of x86-64 and of arm64's default
/// 4 KiB granule (ppc64 distribution kernels use 64 KiB pages).
pub const PAGE_BYTES: u64 = 4096;
/// The kernel's default pipe buffer: 16 pages (`PIPE_DEF_BUFFERS`).
pub const PIPE_CAPACITY: u64 = PIPE_DEF_BUFFERS as u64 * PAGE_BYTES;
/// A unix stream socket's send buffer: `net.core.wmem_default` (208 KiB).
/// The limit counts each message's skb truesize, not its payload: see
/// [`unix_skb_truesize`].
pub const SOCKET_CAPACITY: u64 = 212_992;

/// The truesize a unix stream message of `payload` bytes is charged on a
/// Linux 7.3 x86-64 or arm64 kernel built with CONFIG_MEMCG (every
/// distribution's): unix sockets allocate with GFP_KERNEL_ACCOUNT, so
/// kmalloc_reserve() skips the small-head cache and kmallocs the head, the
/// payload aligned to 64 bytes plus the 320-byte skb_shared_info, rounded
/// up to a kmalloc size; the 256-byte struct sk_buff comes on top
/// (SKB_TRUESIZE()). 100 bytes → 768. (Writes above 3776 bytes put the rest
/// in page fragments in the kernel; the head formula is continued for them.)
pub fn unix_skb_truesize(payload: u64) -> u64 {
    const SHINFO: u64 = 320;
    const SKB: u64 = 256;
    let need = payload.div_ceil(64) * 64 + SHINFO;
    let head = [64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192]
        .into_iter()
        .find(|&k| k >= need)
        .unwrap_or_else(|| need.next_power_of_two());
    head + SKB
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

#[cfg(test)]
mod tests {
    use super::unix_skb_truesize;

    #[test]
    fn unix_skb_truesize_is_the_kmalloc_head_plus_the_sk_buff() {
        // 100 → 128 + 320 = 448 → kmalloc-512; 192 → 512 too; 200 → 576 →
        // 1024; 1000 → 1344 → 2048; 1 → 384 → 512.
        let t: Vec<u64> = [1, 100, 192, 200, 1000]
            .iter()
            .map(|&b| unix_skb_truesize(b))
            .collect();
        assert_eq!(t, [768, 768, 768, 1280, 2304]);
        assert!(unix_skb_truesize(100_000) >= 100_000);
    }
}

#[cfg(test)]
mod size_tests {
    /// Steps are fetched and copied once per program step, so their size is
    /// the interpreter's memory traffic: no variant may carry a CPU mask
    /// inline.
    #[test]
    fn a_step_stays_small() {
        assert!(
            std::mem::size_of::<super::Step>() <= 32,
            "{}",
            std::mem::size_of::<super::Step>()
        );
    }
}
