//! Runqueues (`struct rq` and its `struct cfs_rq`).

use crate::event::{LazyTimer, TaskId};
use crate::fair::pelt::SchedAvg;
use crate::timeline::{TaskList, Timeline};
use schedlab_topo::CpuId;

/// The fair class's runqueue of one CPU.
#[derive(Clone, Debug, Default)]
pub struct CfsRq {
    /// Queued entities other than `curr`, ordered by (deadline, insertion)
    /// (`tasks_timeline`).
    pub timeline: Timeline,
    /// The fair task currently running, if any (kept out of the timeline).
    pub curr: Option<TaskId>,
    /// The next buddy (`cfs_rq->next`): a task a PREEMPT_SHORT wakeup
    /// preemption nominated, picked first while eligible (PICK_BUDDY).
    pub next: Option<TaskId>,
    /// Without EEVDF (3.10's CFS, fair/cfs.rs): the last buddy, a task a
    /// wakeup preempted on a crowded runqueue (`cfs_rq->last`), and the skip
    /// buddy, a task that yielded (`cfs_rq->skip`). Always `None` with EEVDF.
    pub last: Option<TaskId>,
    pub skip: Option<TaskId>,
    /// Without EEVDF: the runqueue's monotonic floor of vruntime
    /// (`cfs_rq->min_vruntime`), what placement and migration measure
    /// vruntimes against. Not kept up with EEVDF.
    pub min_vruntime: u64,
    /// Entities on the runqueue including curr and delayed ones (`h_nr_queued`).
    pub nr_queued: u32,
    /// Delayed-dequeue entities among them.
    pub nr_delayed: u32,
    /// SCHED_IDLE tasks among them (`h_nr_idle`).
    pub nr_idle: u32,
    /// Σ weight of queued entities including curr and delayed (`load.weight`).
    pub load_weight: u64,
    /// Reference point of the vruntime keys.
    pub zero_vruntime: u64,
    /// Σ w·(v − zero) and Σ w over the timeline (curr is added on the fly).
    pub sum_w_key: i128,
    pub sum_weight: i128,
    pub avg: SchedAvg,
    /// Averages of tasks that left while blocked (a wakeup elsewhere, an
    /// exit), taken off `avg` at its next update (`cfs_rq->removed`).
    pub removed: Removed,
    /// Σ util_est of enqueued tasks.
    pub util_est: u64,
    /// The root group's hierarchical load (`cfs_rq->h_load`): `avg.load_avg`
    /// as the first task_h_load() of jiffy `h_load_jiffy` found it
    /// (update_cfs_rq_h_load()). Cells: the kernel refreshes it from
    /// readers too.
    pub h_load: std::cell::Cell<u64>,
    pub h_load_jiffy: std::cell::Cell<Option<u64>>,
}

/// What remove_entity_load_avg() queued for a runqueue's next update.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Removed {
    pub nr: u32,
    pub load_avg: u64,
    pub util_avg: u64,
    pub runnable_avg: u64,
}

impl CfsRq {
    /// Runnable (not delayed) entities (`h_nr_runnable`).
    pub fn nr_runnable(&self) -> u32 {
        self.nr_queued - self.nr_delayed
    }
}

/// The RT class's runqueue of one CPU (`struct rt_rq`).
#[derive(Clone, Debug, Default)]
pub struct RtRq {
    /// One FIFO list per kernel priority (index 0..=98), allocated at the
    /// first RT enqueue; the running task stays in its list, at the head.
    pub queues: Vec<std::collections::VecDeque<TaskId>>,
    /// Bit `p` set when list `p` is not empty (the priority bitmap).
    pub active: u128,
    /// Queued RT tasks, the running one included (`rt_nr_running`).
    pub nr_running: u32,
    /// SCHED_RR tasks among them (`rr_nr_running`).
    pub rr_nr_running: u32,
    /// Queued tasks that are not running and may run elsewhere, by priority
    /// then insertion (`pushable_tasks`); the CPU is overloaded while there
    /// are any.
    pub pushable: Vec<TaskId>,
    /// The RT task running here, if any.
    pub curr: Option<TaskId>,
}

impl RtRq {
    /// `highest_prio.curr`: the best queued priority, 99 when none is.
    pub fn highest_prio(&self) -> u8 {
        if self.active == 0 {
            99
        } else {
            self.active.trailing_zeros() as u8
        }
    }

    /// Tasks wait to be pushed (`rt_rq->overloaded`).
    pub fn overloaded(&self) -> bool {
        !self.pushable.is_empty()
    }
}

/// Per-CPU runqueue.
#[derive(Clone, Debug, Default)]
pub struct Rq {
    pub cpu: CpuId,
    pub cfs: CfsRq,
    /// The RT class's runqueue (rt.rs).
    pub rt: RtRq,
    /// PELT of the time RT tasks run here (`rq->avg_rt`, a binary running signal).
    pub avg_rt: SchedAvg,
    /// The deadline class's runqueue (dl.rs).
    pub dl: crate::dl::DlRq,
    /// Replenishment timers armed on this CPU (expiry, task), for the idle
    /// governor; stale entries (re-armed, fired, cancelled) are dropped when
    /// read.
    pub dl_timers: std::collections::BTreeSet<(u64, crate::event::TaskId)>,
    /// PELT of the time deadline tasks run here (`rq->avg_dl`).
    pub avg_dl: SchedAvg,
    /// The capacity left to the fair class (`rq->cpu_capacity`): the CPU's
    /// own less its RT utilisation, as update_cpu_capacity() last found it.
    pub cpu_capacity: u64,
    /// When the dst CPU's base group capacity is next due for an update
    /// from a newly idle balance (`sgc->next_update`), jiffies.
    pub capacity_next_update_j: u64,
    /// The queued fair tasks, curr and delayed ones included, most recently
    /// enqueued or picked first (`rq->cfs_tasks`).
    pub cfs_tasks: TaskList,
    /// The running task of any class, `None` when the idle task runs.
    pub curr: Option<TaskId>,
    /// `rq->clock`, ns.
    pub clock: u64,
    /// `rq_clock_pelt()`: runs at capacity speed while busy, resyncs when
    /// idle to `clock` less the lost idle time.
    pub clock_pelt: u64,
    /// `rq->lost_idle_time`: the catch-up a saturated runqueue did not get
    /// when it went idle (no idle time is stolen from an always-running rq).
    pub lost_idle_time_ns: u64,
    /// When this CPU last went idle (`rq->idle_stamp`), 0 when busy or when
    /// its newidle pass found a queued wakeup on its way.
    pub idle_stamp: u64,
    /// Next periodic balance, ns.
    pub next_balance: u64,
    pub need_resched: bool,
    /// `need_resched` stands for a lazy request of the running task's own
    /// CPU (resched_curr_lazy() locally sets only TIF_NEED_RESCHED_LAZY):
    /// the return to user space acts on it, preempt_enable() in the kernel
    /// does not ([`crate::sim::Sim::preempt_due`]).
    pub need_resched_local_lazy: bool,
    /// `need_resched` was set by this CPU itself (set_preempt_need_resched()
    /// folds it into the preempt count), so a preempt_enable() in the
    /// kernel acts on it; a remote request whose IPI is in flight has only
    /// set the task's flag, which __resched_curr() then finds set and
    /// leaves alone ([`crate::sim::Sim::preempt_due`]).
    pub resched_folded: bool,
    /// A lazy reschedule is pending (`TIF_NEED_RESCHED_LAZY`), honoured at
    /// the next tick or when the running task returns from the kernel.
    pub need_resched_lazy: bool,
    /// A Resched event is pending (avoid duplicates).
    pub resched_pending: bool,
    /// The running task called sched_yield(): the schedule() it asked for
    /// is voluntary (tracepoint prev_state R, not R+). Cleared by that
    /// schedule().
    pub yielded: Option<TaskId>,
    /// When the pending Resched event fires (the request's IPI arrives).
    pub resched_at_ns: u64,
    /// Tasks on this CPU's wake list (`ttwu_pending`): woken by another
    /// CPU, they are activated by the IPI in flight; the CPU is not idle.
    pub ttwu_pending: u32,
    /// The wake list itself (`rq->wake_list` via the CPU's call-function
    /// queue), in the order the wakeups were queued; the IPI that the first
    /// entry sent activates them all.
    pub wake_list: Vec<TaskId>,
    pub tick_gen: u32,
    pub tick_running: bool,
    /// The idle governor's history (idle_gov.rs) and when the current idle
    /// period began for it (idle entry or the last idle tick).
    pub menu: crate::idle_gov::MenuState,
    pub menu_since_ns: u64,
    /// The idle state (index into the machine's `idle_states`) this CPU
    /// entered last: while idle, the one it is in.
    pub idle_state: u8,
    /// A tick came while this CPU polled in a polling loop, which takes it
    /// without leaving the loop (tick_nohz's `got_idle_tick`); the end of
    /// the idle period reads and clears it.
    pub got_idle_tick: bool,
    /// Since when this CPU has been in `idle_state` (None: not in one, or
    /// not counted yet).
    pub idle_state_since_ns: Option<u64>,
    /// The trace already showed this CPU leaving its idle state (at the
    /// interrupt or IPI that woke it, before the work it then does).
    pub idle_exit_traced: bool,
    /// The time limit of the polling loop this CPU runs, if it runs one
    /// (its PollTimeout event).
    pub poll_limit: LazyTimer,
    /// Sleep timers armed on this CPU (expiry, task): an hrtimer lands on
    /// the CPU of the task that arms it. Entries of tasks that woke are
    /// dropped when looked at.
    pub timers: std::collections::BinaryHeap<std::cmp::Reverse<(u64, TaskId)>>,
    /// When this CPU's system kthread next wakes (its timer), if noise runs.
    pub noise_next_ns: Option<u64>,
    /// The HRTICK timer (`rq->hrtick_timer`; its HrTick event).
    pub hrtick: LazyTimer,
    /// The fair server (`rq->fair_server`, fair_server.rs).
    pub fair_server: crate::fair_server::FairServer,
    /// Average idle period (`rq->avg_idle`), ns.
    pub avg_idle: u64,
    /// Highest recent newidle balance cost (`rq->max_idle_balance_cost`), ns;
    /// `avg_idle` is capped at twice this.
    pub max_idle_balance_cost_ns: u64,
    /// Per-level newidle balance cost (`sd->max_newidle_lb_cost`) is kept per domain.
    pub active_balance: bool,
    /// Load of a running task that does not fit this CPU (`rq->misfit_task_load`),
    /// set only when capacities are asymmetric.
    pub misfit_task_load: u64,
    /// The CPU may still carry decaying (blocked) load and utilisation
    /// (`rq->has_blocked_load`): set when its tick stops, cleared once an
    /// update finds both at zero.
    pub has_blocked_load: bool,
    /// The jiffy of its last blocked-average update
    /// (`rq->last_blocked_load_update_tick`).
    pub last_blocked_load_update_j: u64,
    /// Idle-balance work asked of this CPU by a kick whose IPI has not
    /// arrived yet (`nohz_flags()`: `NOHZ_STATS_KICK`, `NOHZ_BALANCE_KICK`).
    pub nohz_flags: u8,
    /// Linaro MP: when an HMP migration last targeted this CPU moving up
    /// (resp. down) a task, ns; setting one clears the other
    /// (`rq->avg.hmp_last_up_migration` / `hmp_last_down_migration`, where
    /// 0 means never).
    pub hmp_last_up_ns: Option<u64>,
    pub hmp_last_down_ns: Option<u64>,
    /// The CPU this CPU's last cpumask_any_and_distribute() picked
    /// (the per-CPU `distribute_cpu_mask_prev`, 0 at boot).
    pub distribute_prev: CpuId,
    /// Counters.
    pub busy_ns: u64,
    pub idle_ns: u64,
    /// Time up to which `busy_ns`/`idle_ns` are accounted.
    pub last_busy_change: u64,
}

impl Rq {
    /// A non-lazy reschedule is pending (TIF_NEED_RESCHED): `need_resched`
    /// set by anything but the local CPU's own lazy request.
    pub fn need_resched_nonlazy(&self) -> bool {
        self.need_resched && !self.need_resched_local_lazy
    }

    /// `rq->nr_running`: the fair and the RT tasks queued here, and the
    /// deadline tasks that are not throttled.
    pub fn nr_running(&self) -> u32 {
        self.cfs.nr_queued + self.rt.nr_running + self.dl.nr_running
    }
}
