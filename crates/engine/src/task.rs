//! Tasks (`struct task_struct` + `struct sched_entity`) and their per-task counters.

use crate::event::TaskId;
use crate::fair::pelt::SchedAvg;
use schedlab_topo::{CpuId, CpuMask};
use schedlab_workload::Step;

/// Scheduling state of a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskState {
    /// On a runqueue and currently running (`rq->curr`).
    Running,
    /// On a runqueue, waiting to run.
    Runnable,
    /// Not runnable (sleeping). A `sched_delayed` task is blocked but still
    /// queued on its runqueue until it becomes eligible.
    Blocked,
    /// Woken and on a CPU's wake list (`TASK_WAKING` with its `wake_entry`
    /// queued by ttwu_queue_wakelist()): on no runqueue until that CPU's
    /// IPI activates it (sched_ttwu_pending()).
    Waking,
    /// Exited; never runs again.
    Dead,
}

/// What a running task's current step consumes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activity {
    /// Not executing a timed step.
    Idle,
    /// Calibrated CPU work.
    Compute,
    /// Memory streaming.
    Memory,
    /// Active wait (barrier spin, flag poll, lock spin): burns CPU, makes no
    /// progress; `remaining` is the spin budget left, in work-ns like
    /// Compute (infinite for a lock spin, which has no bound).
    Spin,
    /// Busy for wall time whatever the CPU's speed: progresses at rate 1
    /// while running; a `Step::RunWall` ends at a fixed time
    /// (`Task::wall_until_ns`), preempted or not.
    Wall,
}

/// What a task in [`Activity::Spin`] waits for, other than a barrier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpinWait {
    /// `Step::Poll`: a counter used as a flag (sync id).
    Flag(u32),
    /// `Step::SpinLock`: a mutex (sync id).
    Lock(u32),
}

/// The fair-class scheduling entity (`struct sched_entity`).
#[derive(Clone, Copy, Debug, Default)]
pub struct SchedEntity {
    /// Load weight from the nice level (nice 0 = 1024).
    pub weight: u64,
    pub vruntime: u64,
    pub deadline: u64,
    /// Requested slice, ns.
    pub slice: u64,
    /// The slice was set by sched_setattr() (`se->custom_slice`) and is not
    /// reset to the base slice.
    pub custom_slice: bool,
    /// Virtual lag saved at dequeue.
    pub vlag: i64,
    /// RUN_TO_PARITY protection: the vruntime up to which curr is not preempted.
    pub vprot: u64,
    /// When the entity last started running (`exec_start`), ns.
    pub exec_start: u64,
    pub sum_exec_runtime: u64,
    pub prev_sum_exec_runtime: u64,
    pub on_rq: bool,
    pub sched_delayed: bool,
    /// The deadline is kept relative to vruntime while migrating
    /// (PLACE_REL_DEADLINE).
    pub rel_deadline: bool,
    /// Without EEVDF (3.10's CFS): the CPU whose `min_vruntime` `vruntime`
    /// is measured against; an enqueue elsewhere moves it by the difference
    /// of the two floors, as task_waking_fair() and a migration's dequeue
    /// and enqueue do.
    pub vrt_cpu: CpuId,
    /// Without EEVDF, when `vrt_floor_saved`: the floor `vruntime` was made
    /// relative to when the entity left a runqueue other than for sleep
    /// (3.10's dequeue_entity() subtracts `min_vruntime` before it updates
    /// the floor); otherwise the current floor of `vrt_cpu` counts, as
    /// task_waking_fair() reads it. (Two fields rather than an `Option`:
    /// a Task stays under 1 KiB.)
    pub vrt_floor: u64,
    pub vrt_floor_saved: bool,
}

/// Per-task counters, as schedstat keeps them.
#[derive(Clone, Copy, Debug, Default)]
pub struct TaskStats {
    pub cpu_time_ns: u64,
    pub wait_time_ns: u64,
    /// When the task last became runnable-but-not-running.
    pub wait_start_ns: u64,
    /// The part of the running task's current stretch already counted in
    /// `cpu_time_ns` by a look at the run between events
    /// ([`crate::Sim::run_until`]), which charges no class state.
    pub cpu_settled_ns: u64,
    pub migrations: u64,
    pub wakeups: u64,
    pub wakeups_local: u64,
    pub wakeups_remote: u64,
    pub nr_switches: u64,
}

/// A simulated thread.
///
/// The fields are laid out in declaration order (`repr(C)`), the ones every
/// step of a running task touches first (its program counter, its step's
/// progress and rate, its hardware costs, then its scheduling entity), so a
/// step completion reads a few adjacent cache lines of the task instead of
/// fields the compiler spread over the whole struct: in spr hackbench g8 f20,
/// with 320 tasks, 12% fewer L1 data misses (docs/history.md, twenty-first
/// round). Keep new fields that the step loop reads in the first group.
#[derive(Clone, Debug)]
#[repr(C)]
pub struct Task {
    pub state: TaskState,
    /// CPU whose runqueue holds the task, or where it last ran.
    pub cpu: CpuId,
    /// Template in the workload spec, or `u32::MAX` for system tasks.
    pub template: u32,
    // What a step completion touches: the program, the step, its costs.
    pub pc: u32,
    /// Bumped whenever a pending StepDone/SpinEnd/Timer becomes stale.
    pub gen: u32,
    pub activity: Activity,
    /// A per-CPU kernel thread (`is_per_cpu_kthread()`).
    pub kthread: bool,
    /// Work left in the current step: work-ns (compute) or bytes (memory).
    pub remaining: f64,
    /// Progress rate while running: work-ns or bytes per ns.
    pub rate: f64,
    /// Time up to which `remaining` is accounted.
    pub settled_ns: u64,
    /// When the program first ran (anchor of its periodic timers), ns.
    pub prog_start_ns: Option<u64>,
    /// A thread to create once the running clone cost is paid.
    pub pending_spawn: Option<u32>,
    /// Wakees of this task's futex wake still to be woken (`wake_q`, in
    /// order), left when a wakeup before them switched it out inside the
    /// kernel ([`crate::sim::Sim::step_done`] goes on with them).
    pub wake_q: std::collections::VecDeque<TaskId>,
    /// The cost of the system call whose wakes `wake_q` holds, still to be
    /// paid once they are done (FUTEX_CMP_REQUEUE's `syscall_ns`).
    pub wake_q_cost_ns: u64,
    /// The running timed step is the end of a system call (a read's copy, a
    /// sched_yield()'s or FUTEX_CMP_REQUEUE's own cost): its completion
    /// returns to user space ([`crate::sim::Sim::step_done`]).
    pub syscall_return: bool,
    /// Core-to-core transfer of a lock line just taken, still to be spent
    /// holding the lock (ns).
    pub lock_xfer_ns: u64,
    pub loop_counts: [u32; 4],
    /// Sub-state of a multi-part step (1 = a condition wait re-acquiring its mutex).
    pub step_phase: u8,
    /// When the running `Step::RunWall` ends: its busy loop polls the clock,
    /// so time spent preempted counts ([`crate::sim::Sim::begin_activity`]).
    /// Set by the step, cleared when it is done (`Sim::step_done`): only a
    /// `Wall` activity has one (check.rs).
    pub wall_until_ns: Option<u64>,
    /// The task slept on a mutex's futex (or re-locks one after a condition
    /// wait): the lock it takes next gets the word's waiters mark.
    pub futex_waited: bool,
    /// What a spinning task polls besides a barrier (a flag or a lock).
    pub spin_wait: Option<SpinWait>,
    /// The per-CPU mutex held since the last `LockPerCpu`.
    pub percpu_lock: Option<u32>,
    /// Mutexes the task owns right now (a preempted owner is counted in
    /// `Counters::lock_holder_preemptions`).
    pub locks_held: u32,
    /// Hardware-cost state (hwcost.rs): memory-flow slot, working set, pending transfers.
    pub hw: crate::hwcost::TaskHw,
    pub se: SchedEntity,
    // (Below: identity, attributes, wakeup history, statistics, S4/S5 state.)
    pub id: TaskId,
    pub name: Box<str>,
    /// Process (thread group) id; threads of one process share memory.
    pub tgid: u32,
    pub affinity: CpuMask,
    /// The affinity the task was created with (what an rt-app thread's
    /// phase without `cpus` returns to).
    pub start_affinity: CpuMask,
    pub nice: i8,
    /// SCHED_IDLE policy: weight 3 (WEIGHT_IDLEPRIO) whatever the nice level,
    /// never preempts a normal task, and its CPU counts as idle for placement
    /// (`sched_idle_cpu()`). Set before the task is first enqueued.
    pub idle_policy: bool,
    /// SCHED_BATCH: weighted like a normal task, but its wakeups never
    /// preempt (normal_policy() is false for it). sched_setattr()
    /// (`Step::SetAttr`) sets it; a thread inherits it from its creator.
    pub batch_policy: bool,
    /// The task's utilisation clamps (`p->uclamp_req[]`, which with no
    /// cgroup and the system defaults at 1024 are also its effective
    /// clamps, uclamp_eff_value()): 0 and 1024 unless sched_setattr() set
    /// them; inherited at fork.
    pub uclamp_min: u16,
    pub uclamp_max: u16,
    pub avg: SchedAvg,
    /// util_est: the EWMA of util at dequeue (`se.avg.util_est`, what
    /// `_task_util_est()` reads and the runqueue's sum adds up).
    pub util_est_ewma: u64,
    /// UTIL_AVG_UNCHANGED: util_avg has not been recomputed since the last
    /// util_est update.
    pub util_est_unchanged: bool,
    // Wakeup bookkeeping (record_wakee()).
    pub wakee_flips: u32,
    pub wakee_flip_decay_ns: u64,
    pub last_wakee: Option<TaskId>,
    pub recent_used_cpu: CpuId,
    /// The CPU that last woke this task (for cache-line transfer costs).
    pub last_waker_cpu: Option<CpuId>,
    /// Waiting at barrier `id` with generation `gen`.
    pub barrier_wait: Option<(u32, u32)>,
    pub stats: TaskStats,
    /// Bytes still to send/receive in a blocked channel step (0 = none).
    pub io_left: u64,
    /// Where the periodic timers count from when not from `prog_start_ns`
    /// (after an rt-app `delay`).
    pub timer_origin_ns: Option<u64>,
    /// Periodic timers: (timer id, last expiry) in ns.
    pub timers: Vec<(u32, u64)>,
    /// When a synchronisation object last woke this task, ns.
    pub woken_at_ns: u64,
    /// The expiry of the sleep timer this task is blocked on, if any (the
    /// idle governor of its CPU sees it as a timer there): the hard expiry,
    /// the end of its slack range.
    pub sleep_timer_ns: Option<u64>,
    /// Blocked with no sleep timer: only another thread can wake it (counted
    /// in [`crate::Sim::parked`]).
    pub parked: bool,
    /// The soft expiry of that timer, the start of its slack range: any
    /// hrtimer interrupt on its CPU from then on expires it.
    pub sleep_timer_soft_ns: u64,
    /// big.LITTLE (S5) druntime and time per CPU type (fair/hmp.rs).
    pub hmp: crate::fair::hmp::HmpTask,
    /// SCHED_CACHE (fair/cache_aware.rs): the preferred LLC id
    /// (`p->preferred_llc`, `None` = -1).
    pub preferred_llc: Option<u32>,
    /// Where the task is counted in a base domain's `llc_counts`:
    /// (runqueue CPU, LLC id), set at enqueue, cleared at dequeue.
    pub llc_counted: Option<(CpuId, u32)>,
    /// The RT class's state, `None` while the task is in the fair class (rt.rs).
    pub rt: Option<RtEntity>,
    /// The deadline entity while the task is SCHED_DEADLINE (`p->dl`; dl.rs).
    /// Boxed: most tasks never have one.
    pub dl: Option<Box<crate::dl::DlEntity>>,
    /// A deadline entity the task left the class with before its 0-lag
    /// time: its bandwidth stays admitted until its inactive timer fires
    /// (switched_from_dl() → task_non_contending()), and it is taken back,
    /// deadline and runtime kept, if the task returns before that.
    pub dl_left: Option<Box<crate::dl::DlEntity>>,
    /// Priority-inheritance state (pi.rs), from its first PI mutex on
    /// (boxed: most tasks never take one).
    pub pi: Option<Box<crate::pi::PiState>>,
    /// Its deadline timers (replenishment and 0-lag), from its first
    /// SCHED_DEADLINE on (boxed: most tasks never have them).
    dl_timers: Option<Box<crate::dl::DlTimers>>,
    /// The task's `uclamp_min` was set by sched_setattr() (`uclamp_req[].user_defined`):
    /// an RT policy then keeps it instead of taking the RT default of 1024.
    pub uclamp_min_user: bool,
    /// The timer slack a fair policy gives the task
    /// (`default_timer_slack_ns`): 50 µs, or for a forked thread the slack
    /// its parent had at the fork (0 under an RT policy).
    pub default_timer_slack_ns: u64,
}

/// A SCHED_FIFO or SCHED_RR task's scheduling state (`struct sched_rt_entity`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtEntity {
    /// Kernel priority `p->prio`: 99 − `sched_priority`, 0 (most important)..=98.
    pub prio: u8,
    /// SCHED_RR rather than SCHED_FIFO.
    pub rr: bool,
    /// SCHED_RR: ticks left of the time slice (`rt.time_slice`), refilled
    /// only at fork and when it runs out.
    pub time_slice_ticks: u32,
    /// On its CPU's RT runqueue (queued or running: an RT task stays in its
    /// priority list while it runs).
    pub on_rq: bool,
}

/// Nice level to load weight (mirrors sched_prio_to_weight[]).
pub const PRIO_TO_WEIGHT: [u64; 40] = [
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904,
    3906, 3121, 2501, 1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87,
    70, 56, 45, 36, 29, 23, 18, 15,
];

/// The weight of a nice level (clamped to -20..=19).
pub fn nice_to_weight(nice: i8) -> u64 {
    PRIO_TO_WEIGHT[(nice.clamp(-20, 19) + 20) as usize]
}

impl Task {
    /// The channel `step` writes to if this task runs it now: a `Send`'s
    /// own, or for a `SendNext` in loop `slot`, `first` plus `stride` for
    /// each pass that loop has completed. `None` for other steps.
    pub(crate) fn write_chan(&self, step: &Step) -> Option<u32> {
        match *step {
            Step::Send { chan, .. } => Some(chan),
            Step::SendNext {
                first,
                stride,
                slot,
                ..
            } => {
                let passes = self.loop_counts[(slot as usize).min(3)];
                Some(first.saturating_add(stride.saturating_mul(passes)))
            }
            _ => None,
        }
    }

    pub fn new(
        id: TaskId,
        name: &str,
        tgid: u32,
        template: u32,
        nice: i8,
        affinity: CpuMask,
    ) -> Self {
        Task {
            id,
            name: name.into(),
            tgid,
            template,
            state: TaskState::Blocked,
            cpu: 0,
            affinity,
            start_affinity: affinity,
            nice,
            kthread: false,
            idle_policy: false,
            batch_policy: false,
            uclamp_min: 0,
            uclamp_max: 1024,
            se: SchedEntity {
                weight: nice_to_weight(nice),
                ..Default::default()
            },
            avg: SchedAvg::default(),
            util_est_ewma: 0,
            util_est_unchanged: false,
            wakee_flips: 0,
            wakee_flip_decay_ns: 0,
            last_wakee: None,
            recent_used_cpu: 0,
            last_waker_cpu: None,
            pc: 0,
            loop_counts: [0; 4],
            remaining: 0.0,
            rate: 0.0,
            settled_ns: 0,
            gen: 0,
            activity: Activity::Idle,
            preferred_llc: None,
            llc_counted: None,
            pending_spawn: None,
            wake_q: std::collections::VecDeque::new(),
            wake_q_cost_ns: 0,
            syscall_return: false,
            barrier_wait: None,
            spin_wait: None,
            stats: TaskStats::default(),
            io_left: 0,
            step_phase: 0,
            wall_until_ns: None,
            futex_waited: false,
            prog_start_ns: None,
            timer_origin_ns: None,
            timers: Vec::new(),
            woken_at_ns: 0,
            sleep_timer_ns: None,
            parked: false,
            sleep_timer_soft_ns: 0,
            hw: crate::hwcost::TaskHw::default(),
            percpu_lock: None,
            locks_held: 0,
            lock_xfer_ns: 0,
            hmp: crate::fair::hmp::HmpTask::default(),
            rt: None,
            dl: None,
            dl_left: None,
            dl_timers: None,
            pi: None,
            uclamp_min_user: false,
            default_timer_slack_ns: crate::exec::TIMER_SLACK_NS,
        }
    }

    /// The task is in the RT class (`rt_task()`).
    pub fn is_rt(&self) -> bool {
        self.rt.is_some()
    }

    /// Its deadline timers (unarmed ones if it never had any).
    pub fn dl_timers(&self) -> crate::dl::DlTimers {
        self.dl_timers.as_deref().copied().unwrap_or_default()
    }

    /// Its deadline timers, to arm, fire or cancel.
    pub fn dl_timers_mut(&mut self) -> &mut crate::dl::DlTimers {
        self.dl_timers.get_or_insert_with(Default::default)
    }

    /// The task is in the deadline class (`dl_task()`).
    pub fn is_dl(&self) -> bool {
        self.dl.is_some()
    }

    /// Its own policy is SCHED_DEADLINE (`task_has_dl_policy()`): a task
    /// boosted into the class by priority inheritance has none.
    pub fn has_dl_policy(&self) -> bool {
        self.dl
            .as_deref()
            .is_some_and(crate::dl::DlEntity::own_policy)
    }

    /// The kernel priority trace events show (`p->prio`): -1 for a deadline
    /// task, 99 − `sched_priority` for an RT one, 120 + nice for a fair one.
    pub fn kernel_prio(&self) -> i32 {
        if self.dl.is_some() {
            return -1;
        }
        match self.rt {
            Some(rt) => i32::from(rt.prio),
            None => 120 + i32::from(self.nice),
        }
    }

    /// task_util_est(): max of the running average and the estimate.
    pub fn util_est(&self) -> u64 {
        self.avg.util_avg.max(self.util_est_ewma)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_follow_the_kernel_table() {
        assert_eq!(nice_to_weight(0), 1024);
        assert_eq!(nice_to_weight(-20), 88761);
        assert_eq!(nice_to_weight(19), 15);
        assert_eq!(nice_to_weight(100), 15);
        let size = std::mem::size_of::<Task>();
        assert!(size < 1024, "a Task takes {size} bytes");
    }
}
