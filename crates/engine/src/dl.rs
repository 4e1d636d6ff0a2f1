//! The deadline class: SCHED_DEADLINE after 7.3's deadline.c and
//! cpudeadline.c.
//!
//! A deadline task is a constant bandwidth server (CBS): `dl_runtime` of
//! execution in every `dl_period`, due `dl_deadline` after the period
//! starts. The class runs the task of earliest absolute deadline (EDF),
//! above the RT class. Its pieces:
//!
//! - **Admission** (sched_dl_overflow()): the root domain admits deadline
//!   bandwidth up to its CPUs' capacity (7.3's `sched_rt_runtime_us` equals
//!   the period, so 100% of each CPU), the fair servers' 5% per CPU
//!   counted from boot; a sched_setattr() beyond that fails with EBUSY.
//! - **Accounting** (update_curr_dl_se()): a running task's budget drains
//!   by its execution scaled by the CPU's capacity (and frequency, always
//!   the highest here); at 0 or below it is throttled (off the tree) until
//!   its replenishment timer at the next period, which adds `dl_runtime`
//!   per period until the budget is positive again, so an overrun is paid
//!   back. The check runs at the tick and at every other update, and with
//!   HRTICK_DL (7.3's with `CONFIG_HRTIMER_REARM_DEFERRED`, on x86) at a
//!   timer armed for the budget left when the task is picked.
//! - **Wakeup** (update_dl_entity()): a task whose deadline passed, or
//!   whose budget left would exceed its bandwidth over the time left,
//!   starts a new period (deadline = now + `dl_deadline`, full budget); a
//!   task with a deadline shorter than its period keeps its deadline with
//!   a budget cut to its density (the revised wakeup rule), or waits for
//!   its next period if it woke between its deadline and that period
//!   (dl_check_constrained_dl()).
//! - **Placement** (select_task_rq_dl(), find_later_rq(), cpudl): a waking
//!   task that would not run at once on its CPU goes to a CPU without
//!   deadline work or, failing that, to the CPU whose earliest deadline is
//!   the latest, if its own deadline is earlier; queued tasks are pushed
//!   and pulled the same way.
//! - **The fair server** (fair_server.rs) is a deadline entity of the same
//!   tree while it runs: it competes with deadline tasks by deadline.
//!
//! - **Priority inheritance** (pi.rs): an entity may run by another
//!   task's parameters (`pi_se`); it is then never throttled, and a fair
//!   or RT task boosted into the class has no parameters and no admitted
//!   bandwidth of its own.
//!
//! Not modelled: GRUB reclaiming (SCHED_FLAG_RECLAIM), the running and
//! per-runqueue bandwidth it and schedutil use (no frequency scaling
//! here), SCHED_FLAG_DL_OVERRUN, cpusets and hotplug (one root domain
//! over all CPUs).

use crate::event::TaskId;
use crate::event::{EventKind, LazyTimer};
use crate::fair_server::{FAIR_SERVER_PERIOD_NS, FAIR_SERVER_RUNTIME_NS};
use crate::sim::{EnqueueKind, Sim, WF_RQ_SELECTED, WF_TTWU};
use schedlab_topo::{CpuId, CpuMask, SdFlags};
use schedlab_workload::{Attrs, SchedPolicy};
use std::collections::{BTreeMap, BTreeSet};

/// Bandwidth fixed point: `1 << BW_SHIFT` is a whole CPU (`BW_SHIFT`).
pub const BW_SHIFT: u32 = 20;
/// A whole CPU's bandwidth (`BW_UNIT`).
pub const BW_UNIT: u64 = 1 << BW_SHIFT;
/// Precision shift of the CBS overflow test (`DL_SCALE`).
pub const DL_SCALE: u32 = 10;
/// The tree's name for the fair server (it is no task).
pub const SERVER: TaskId = TaskId::MAX;
/// The cpupri level of a CPU with deadline work (`CPUPRI_HIGHER`).
pub const CPUPRI_HIGHER: usize = 100;

/// `runtime / period` in bandwidth units (mirrors to_ratio()).
pub fn to_ratio(period_ns: u64, runtime_ns: u64) -> u64 {
    if period_ns == 0 {
        return 0;
    }
    ((u128::from(runtime_ns) << BW_SHIFT) / u128::from(period_ns)) as u64
}

/// The fair server's bandwidth (50 ms per 1000 ms: 52,428), admitted on
/// every CPU from boot (sched_init_dl_servers()).
pub const FAIR_SERVER_BW: u64 =
    ((FAIR_SERVER_RUNTIME_NS as u64) << BW_SHIFT) / FAIR_SERVER_PERIOD_NS;

/// One task's deadline entity (`struct sched_dl_entity`).
#[derive(Clone, Debug, Default)]
pub struct DlEntity {
    /// The parameters (`dl_runtime`, `dl_deadline`, `dl_period`), ns.
    pub dl_runtime_ns: u64,
    pub dl_deadline_ns: u64,
    pub dl_period_ns: u64,
    /// `dl_runtime / dl_period` and `dl_runtime / dl_deadline` in
    /// bandwidth units (`dl_bw`, `dl_density`).
    pub dl_bw: u64,
    pub dl_density: u64,
    /// Budget left in the current period (`runtime`), ns; below 0 after an
    /// overrun.
    pub runtime_ns: i64,
    /// Absolute deadline of the current period (`deadline`), ns.
    pub deadline_ns: u64,
    /// Out of budget: off the tree until its timer replenishes it.
    pub throttled: bool,
    /// It called sched_yield(): the rest of the budget is given up.
    pub yielded: bool,
    /// Queued in the class (`p->on_rq`), throttled or not.
    pub on_rq: bool,
    /// Its place in its CPU's deadline tree (deadline, insertion number).
    pub key: Option<(u64, u64)>,
    /// Boosted by priority inheritance: the parameters of the deadline
    /// task it inherits from (`pi_se` pointing at another entity); `None`
    /// when they are its own (`pi_se == &p->dl`).
    pub pi_se: Option<DlParams>,
}

/// A deadline entity's parameters (`dl_runtime`, `dl_deadline`,
/// `dl_period`), ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DlParams {
    pub runtime_ns: u64,
    pub deadline_ns: u64,
    pub period_ns: u64,
}

/// A task's deadline timers (kept on the task, not the entity, so their
/// generations never restart while an event of theirs is queued).
#[derive(Clone, Copy, Debug, Default)]
pub struct DlTimers {
    /// The replenishment timer (`dl_timer`).
    pub replenish: LazyTimer,
    /// The 0-lag timer (`inactive_timer`) of a task that died or left the
    /// class with bandwidth still owed: its expiry releases `dl_bw`.
    pub inactive: LazyTimer,
}

impl DlEntity {
    /// An entity with `policy`'s parameters and no period started yet.
    pub fn new(policy: SchedPolicy) -> Option<Self> {
        let mut e = DlEntity::default();
        e.set_params(policy)?;
        Some(e)
    }

    /// Takes `policy`'s parameters (mirrors __setparam_dl()).
    pub fn set_params(&mut self, policy: SchedPolicy) -> Option<()> {
        let SchedPolicy::Deadline {
            runtime_ns,
            deadline_ns,
            period_ns,
        } = policy
        else {
            return None;
        };
        self.dl_runtime_ns = runtime_ns;
        self.dl_deadline_ns = deadline_ns;
        self.dl_period_ns = period_ns;
        self.dl_bw = to_ratio(period_ns, runtime_ns);
        self.dl_density = to_ratio(deadline_ns, runtime_ns);
        Some(())
    }

    /// Its own parameters (all 0 for a task boosted into the class).
    pub fn own_params(&self) -> DlParams {
        DlParams {
            runtime_ns: self.dl_runtime_ns,
            deadline_ns: self.dl_deadline_ns,
            period_ns: self.dl_period_ns,
        }
    }

    /// The parameters its budget and deadline follow (mirrors pi_of()):
    /// inherited while boosted, else its own.
    pub fn pi_of(&self) -> DlParams {
        self.pi_se.unwrap_or_else(|| self.own_params())
    }

    /// Boosted by priority inheritance (mirrors is_dl_boosted()).
    pub fn boosted(&self) -> bool {
        self.pi_se.is_some()
    }

    /// Its own parameters are set: the task's policy is SCHED_DEADLINE (a
    /// task boosted into the class from another has none).
    pub fn own_policy(&self) -> bool {
        self.dl_runtime_ns > 0
    }

    /// The deadline equals the period (`dl_is_implicit()`).
    pub fn implicit(&self) -> bool {
        self.dl_deadline_ns == self.dl_period_ns
    }

    /// Start of the next period (`dl_next_period()`).
    pub fn next_period_ns(&self) -> u64 {
        (self.deadline_ns + self.dl_period_ns).saturating_sub(self.dl_deadline_ns)
    }

    /// A fresh period from `now` (mirrors replenish_dl_new_period()), by
    /// the inherited parameters while boosted.
    fn new_period(&mut self, now: u64) {
        let p = self.pi_of();
        self.deadline_ns = now + p.deadline_ns;
        self.runtime_ns = p.runtime_ns as i64;
    }

    /// The CBS test: the budget left, run from `now` to the deadline, would
    /// exceed the task's density (mirrors dl_entity_overflow(), its
    /// operands shifted by `DL_SCALE` as the kernel's are).
    fn overflows(&self, now: u64) -> bool {
        let p = self.pi_of();
        let left = (p.deadline_ns >> DL_SCALE) as u128
            * ((self.runtime_ns.max(0) as u64) >> DL_SCALE) as u128;
        let right = (self.deadline_ns.saturating_sub(now) >> DL_SCALE) as u128
            * (p.runtime_ns >> DL_SCALE) as u128;
        right < left
    }
}

/// One CPU's deadline runqueue (`struct dl_rq`).
#[derive(Clone, Debug, Default)]
pub struct DlRq {
    /// Entities by absolute deadline, equal ones in insertion order (the
    /// rb-tree): tasks that are not throttled, the running one included,
    /// and [`SERVER`] while the fair server runs.
    pub tree: BTreeMap<(u64, u64), TaskId>,
    /// Queued tasks that do not run and may run elsewhere, by deadline
    /// (`pushable_dl_tasks_root`); the CPU is overloaded while there are any.
    pub pushable: BTreeMap<(u64, u64), TaskId>,
    /// Tasks in the tree (`dl_nr_running` less the server).
    pub nr_running: u32,
    /// The deadline task running here (`dl_rq->curr`).
    pub curr: Option<TaskId>,
}

impl DlRq {
    /// The earliest deadline queued (`earliest_dl.curr`), with its entity.
    pub fn earliest(&self) -> Option<(u64, TaskId)> {
        self.tree.first_key_value().map(|(k, &t)| (k.0, t))
    }

    /// The earliest deadline of a pushable task (`earliest_dl.next`).
    pub fn earliest_pushable(&self) -> Option<u64> {
        self.pushable.first_key_value().map(|(k, _)| k.0)
    }
}

/// The root domain's deadline view of its CPUs (`struct cpudl`): each CPU's
/// earliest deadline, ordered so the latest is found in O(log n), and the
/// CPUs with no deadline entity (`free_cpus`).
#[derive(Clone, Debug)]
pub struct CpuDl {
    /// (earliest deadline, CPU) of every CPU with deadline entities.
    pub elements: BTreeSet<(u64, CpuId)>,
    /// Each CPU's earliest deadline, if it has deadline entities.
    pub dl: Vec<Option<u64>>,
    /// CPUs with no deadline entity.
    pub free: CpuMask,
}

impl CpuDl {
    /// All CPUs free.
    pub fn new(nr_cpus: usize) -> Self {
        CpuDl {
            elements: BTreeSet::new(),
            dl: vec![None; nr_cpus],
            free: CpuMask::first_n(nr_cpus),
        }
    }

    /// `cpu`'s earliest deadline is now `dl` (mirrors cpudl_set()), or it
    /// has no deadline entity (`None`, cpudl_clear()).
    fn set(&mut self, cpu: CpuId, dl: Option<u64>) {
        if let Some(old) = self.dl[cpu as usize] {
            self.elements.remove(&(old, cpu));
        }
        self.dl[cpu as usize] = dl;
        match dl {
            Some(d) => {
                self.elements.insert((d, cpu));
                self.free.clear(cpu);
            }
            None => self.free.set(cpu),
        }
    }
}

/// What put a deadline entity on its runqueue (the ENQUEUE_* flags that
/// matter to the class).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DlEnqueue {
    /// A wakeup (ENQUEUE_WAKEUP): the CBS wakeup rule.
    Wakeup,
    /// The replenishment timer or an immediate replenishment (ENQUEUE_REPLENISH).
    Replenish,
    /// Back after a change of attributes (ENQUEUE_RESTORE | ENQUEUE_MOVE): a
    /// passed deadline starts a new period.
    Restore,
    /// Moved by push or pull (ENQUEUE_MIGRATING): as it was.
    Migrating,
}

/// A change of class or parameters under way (dl_change_begin() to
/// dl_change_end()): what the task was before it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DlChange {
    cpu: CpuId,
    running: bool,
    queued: bool,
    old_rt: Option<crate::task::RtEntity>,
    old_dl: bool,
    old_deadline: u64,
}

impl Sim {
    /// Task `t` is in the deadline class.
    #[inline]
    pub(crate) fn task_is_dl(&self, t: TaskId) -> bool {
        self.rt_dl_in_use && self.tasks[t as usize].dl.is_some()
    }

    /// The deadline of `t`'s current period (0 for a task of another class,
    /// whose `p->dl.deadline` is never set).
    fn dl_deadline_of(&self, t: TaskId) -> u64 {
        self.tasks[t as usize]
            .dl
            .as_ref()
            .map_or(0, |e| e.deadline_ns)
    }

    /// `a` preempts `b` by deadline (mirrors dl_entity_preempt()).
    fn dl_entity_preempt(&self, a: TaskId, b: TaskId) -> bool {
        self.dl_deadline_of(a) < self.dl_deadline_of(b)
    }

    // ----- bandwidth ------------------------------------------------------------

    /// The capacity the root domain's deadline bandwidth is scaled by
    /// (mirrors dl_bw_capacity(): its CPUs' capacities summed, 1024 each on
    /// a symmetric machine).
    fn dl_bw_capacity(&self) -> u64 {
        self.kcap.iter().sum()
    }

    /// Admitting `new_bw` in place of `old_bw` would overflow the root
    /// domain (mirrors __dl_overflow(); 7.3's default `sched_rt_runtime_us`
    /// equals its period, so each CPU may carry a whole CPU's bandwidth).
    fn dl_overflow(&self, old_bw: u64, new_bw: u64) -> bool {
        let cap = (u128::from(BW_UNIT) * u128::from(self.dl_bw_capacity())) >> 10;
        cap < u128::from(self.dl_total_bw - old_bw + new_bw)
    }

    /// The 0-lag time of `e` has passed: its bandwidth may go at once
    /// (task_non_contending()'s test).
    fn dl_zerolag_passed(&self, e: &DlEntity) -> bool {
        let owed = (i128::from(e.runtime_ns) * i128::from(e.dl_period_ns))
            / i128::from(e.dl_runtime_ns.max(1));
        let zerolag = i128::from(e.deadline_ns) - owed;
        zerolag < i128::from(self.now)
    }

    /// The 0-lag time of `e`, when its bandwidth is released.
    fn dl_zerolag_ns(&self, e: &DlEntity) -> u64 {
        let owed = (i128::from(e.runtime_ns) * i128::from(e.dl_period_ns))
            / i128::from(e.dl_runtime_ns.max(1));
        (i128::from(e.deadline_ns) - owed).max(i128::from(self.now)) as u64
    }

    /// `t`'s entity `e` leaves the class, dead or for another policy, with
    /// its bandwidth still admitted (mirrors task_non_contending() for a
    /// dead task and switched_from_dl()): released now if its 0-lag time
    /// has passed, else when the task's inactive timer fires then. True
    /// when the bandwidth is still owed (the timer is armed). Its
    /// replenishment timer runs on, as the kernel's does.
    fn dl_release_bw(&mut self, t: TaskId, e: &DlEntity) -> bool {
        if !e.own_policy() {
            // Boosted into the class: it was never admitted.
            return false;
        }
        if self.dl_zerolag_passed(e) {
            self.dl_total_bw -= e.dl_bw;
            return false;
        }
        let at = self.dl_zerolag_ns(e);
        self.tasks[t as usize]
            .dl_timers_mut()
            .inactive
            .arm(&mut self.q, at, |gen| EventKind::DlInactive {
                task: t,
                gen,
            });
        true
    }

    /// A task's inactive timer fired (mirrors inactive_task_timer() for a
    /// task that died or left the class): its bandwidth is released.
    pub(crate) fn dl_inactive_timer(&mut self, t: TaskId, gen: u32) {
        let tk = &mut self.tasks[t as usize];
        if !tk
            .dl_timers_mut()
            .inactive
            .fire(&mut self.q, gen, |gen| EventKind::DlInactive {
                task: t,
                gen,
            })
        {
            return;
        }
        let bw = match (tk.dl_left.take(), tk.state == crate::task::TaskState::Dead) {
            (Some(e), _) => e.dl_bw,
            (None, true) => tk.dl.as_ref().map_or(0, |e| e.dl_bw),
            (None, false) => 0,
        };
        self.dl_total_bw -= bw;
    }

    // ----- the tree, cpudl and cpupri -----------------------------------------------

    /// Puts `who` (a task or [`SERVER`]) in `cpu`'s tree at `deadline_ns`,
    /// after any equal deadline; returns its key (mirrors
    /// __enqueue_dl_entity() with inc_dl_deadline()).
    pub(crate) fn dl_tree_insert(
        &mut self,
        cpu: CpuId,
        deadline_ns: u64,
        who: TaskId,
    ) -> (u64, u64) {
        self.dl_seq += 1;
        let key = (deadline_ns, self.dl_seq);
        let rq = &mut self.rqs[cpu as usize].dl;
        let was_empty = rq.tree.is_empty();
        rq.tree.insert(key, who);
        if who != SERVER {
            rq.nr_running += 1;
        }
        if was_empty {
            // A CPU with deadline work is above every RT priority.
            self.cpupri_set_level(cpu, CPUPRI_HIGHER);
        }
        self.dl_sync_cpudl(cpu);
        key
    }

    /// Takes the entity at `key` off `cpu`'s tree (mirrors
    /// __dequeue_dl_entity() with dec_dl_deadline()).
    pub(crate) fn dl_tree_remove(&mut self, cpu: CpuId, key: (u64, u64)) {
        let rq = &mut self.rqs[cpu as usize].dl;
        let Some(who) = rq.tree.remove(&key) else {
            return;
        };
        if who != SERVER {
            rq.nr_running -= 1;
        }
        if rq.tree.is_empty() {
            // Back to the RT class's view of the CPU.
            let level = crate::rt::cpupri_level(self.rqs[cpu as usize].rt.highest_prio());
            self.cpupri_set_level(cpu, level);
        }
        self.dl_sync_cpudl(cpu);
    }

    /// cpudl follows `cpu`'s earliest deadline.
    fn dl_sync_cpudl(&mut self, cpu: CpuId) {
        let d = self.rqs[cpu as usize].dl.earliest().map(|(d, _)| d);
        if self.cpudl.dl[cpu as usize] != d {
            self.cpudl.set(cpu, d);
        }
    }

    /// Adds `t` to `cpu`'s pushable tasks (mirrors enqueue_pushable_dl_task()).
    fn dl_enqueue_pushable(&mut self, cpu: CpuId, t: TaskId) {
        let Some(key) = self.tasks[t as usize].dl.as_ref().and_then(|e| e.key) else {
            return;
        };
        self.rqs[cpu as usize].dl.pushable.insert(key, t);
        self.dlo_mask.set(cpu);
    }

    /// Mirrors dequeue_pushable_dl_task().
    fn dl_dequeue_pushable(&mut self, cpu: CpuId, t: TaskId) {
        let Some(key) = self.tasks[t as usize].dl.as_ref().and_then(|e| e.key) else {
            return;
        };
        let rq = &mut self.rqs[cpu as usize].dl;
        rq.pushable.remove(&key);
        if rq.pushable.is_empty() {
            self.dlo_mask.clear(cpu);
        }
    }

    // ----- enqueue, dequeue, accounting -------------------------------------------------

    /// Arms `t`'s replenishment timer for the start of its next period;
    /// false when that is already past by a microsecond or more (mirrors
    /// start_dl_timer(), which then leaves the caller to replenish at once).
    fn dl_start_timer(&mut self, t: TaskId) -> bool {
        let now = self.now;
        self.prune_dl_timers(self.tasks[t as usize].cpu);
        let tk = &mut self.tasks[t as usize];
        let act = tk.dl.as_ref().expect("a deadline task").next_period_ns();
        if act + 1000 <= now {
            return false;
        }
        let at = act.max(now);
        tk.dl_timers_mut()
            .replenish
            .arm(&mut self.q, at, |gen| EventKind::DlTimer { task: t, gen });
        // The idle governor of the CPU it is armed on sees it.
        let cpu = tk.cpu;
        self.rqs[cpu as usize].dl_timers.insert((at, t));
        true
    }

    /// Replenishes `t`'s budget (mirrors replenish_dl_entity()): a task
    /// boosted into the class from another (no deadline of its own) starts a
    /// period of the inherited parameters; a yield gives up what was left;
    /// one period's runtime is added per period until the budget is
    /// positive (an overrun is paid back); a deadline still in the past then
    /// starts a new period from now.
    fn dl_replenish(&mut self, t: TaskId) {
        let now = self.now;
        let e = self.tasks[t as usize].dl.as_mut().expect("a deadline task");
        if e.dl_deadline_ns == 0 {
            e.new_period(now);
        }
        if e.yielded && e.runtime_ns > 0 {
            e.runtime_ns = 0;
        }
        let p = e.pi_of();
        while e.runtime_ns <= 0 {
            e.deadline_ns += p.period_ns;
            e.runtime_ns += p.runtime_ns as i64;
        }
        if e.deadline_ns < now {
            e.new_period(now);
        }
        e.yielded = false;
        e.throttled = false;
    }

    /// The CBS wakeup rule (mirrors update_dl_entity()); a boosted task
    /// never takes the revised rule.
    fn dl_update_entity(&mut self, t: TaskId) {
        let now = self.now;
        let e = self.tasks[t as usize].dl.as_mut().expect("a deadline task");
        if e.deadline_ns < now || e.overflows(now) {
            if !e.implicit() && e.deadline_ns >= now && !e.boosted() {
                // update_dl_revised_wakeup(): the deadline stays, the budget
                // is what the density allows in the time left.
                let left = e.deadline_ns - now;
                e.runtime_ns = ((u128::from(e.dl_density) * u128::from(left)) >> BW_SHIFT) as i64;
                return;
            }
            e.new_period(now);
        }
    }

    /// Queues deadline task `t` on `cpu` (mirrors enqueue_task_dl() →
    /// enqueue_dl_entity()): a throttled task stays off the tree until its
    /// timer, unless a boost overrides the throttle; otherwise its budget
    /// and deadline follow `how`, it joins the tree and, if it does not run
    /// and may run elsewhere, the pushable tasks.
    pub(crate) fn enqueue_task_dl(&mut self, cpu: CpuId, t: TaskId, how: DlEnqueue) {
        self.tasks[t as usize].cpu = cpu;
        let now = self.now;
        let was_running = self.rqs[cpu as usize].nr_running();
        let tk = &mut self.tasks[t as usize];
        if tk.dl.as_ref().is_some_and(|e| e.boosted() && e.throttled) {
            // The boost overrides the throttle: the replenishment timer goes.
            tk.dl_timers_mut().replenish.cancel();
            tk.dl.as_mut().expect("a deadline task").throttled = false;
        }
        {
            let e = self.tasks[t as usize].dl.as_mut().expect("a deadline task");
            debug_assert!(e.key.is_none());
            e.on_rq = true;
            if e.deadline_ns == 0 {
                // No period yet (the kernel's clock is never 0 when a task
                // first enters the class, so its zero deadline has passed).
                e.new_period(now);
            }
        }
        // dl_check_constrained_dl(): woken between its deadline and its next
        // period, a constrained task waits for that period.
        let e = self.tasks[t as usize].dl.as_ref().expect("a deadline task");
        if !e.throttled
            && !e.implicit()
            && e.deadline_ns < now
            && now < e.next_period_ns()
            && !e.boosted()
            && self.dl_start_timer(t)
        {
            let e = self.tasks[t as usize].dl.as_mut().expect("a deadline task");
            e.throttled = true;
            e.runtime_ns = e.runtime_ns.min(0);
            self.counters.dl_throttles += 1;
        }
        let e = self.tasks[t as usize].dl.as_ref().expect("a deadline task");
        if e.throttled && how != DlEnqueue::Replenish {
            return;
        }
        match how {
            DlEnqueue::Wakeup => self.dl_update_entity(t),
            DlEnqueue::Replenish => self.dl_replenish(t),
            DlEnqueue::Restore => {
                let e = self.tasks[t as usize].dl.as_mut().expect("a deadline task");
                if e.deadline_ns < now && !e.boosted() {
                    e.new_period(now);
                }
            }
            DlEnqueue::Migrating => {}
        }
        let deadline = self.tasks[t as usize]
            .dl
            .as_ref()
            .expect("a deadline task")
            .deadline_ns;
        let key = self.dl_tree_insert(cpu, deadline, t);
        self.tasks[t as usize]
            .dl
            .as_mut()
            .expect("a deadline task")
            .key = Some(key);
        if was_running < 2 && self.rqs[cpu as usize].nr_running() >= 2 {
            self.rd_overloaded = true;
        }
        if self.rqs[cpu as usize].curr != Some(t) && self.tasks[t as usize].affinity.weight() > 1 {
            self.dl_enqueue_pushable(cpu, t);
        }
    }

    /// Takes deadline task `t` off `cpu`'s runqueue (mirrors
    /// dequeue_task_dl(); for the running task also put_prev_task_dl()'s
    /// update of the deadline utilisation). A task that dies gives up its
    /// bandwidth at its 0-lag time (task_non_contending()).
    pub(crate) fn dequeue_task_dl(&mut self, cpu: CpuId, t: TaskId) {
        self.update_curr_dl(cpu);
        if self.rqs[cpu as usize].dl.curr == Some(t) {
            self.update_dl_rq_load_avg(cpu, true);
            self.rqs[cpu as usize].dl.curr = None;
        }
        self.dl_dequeue_pushable(cpu, t);
        let e = self.tasks[t as usize].dl.as_mut().expect("a deadline task");
        e.on_rq = false;
        if let Some(key) = e.key.take() {
            self.dl_tree_remove(cpu, key);
        }
        if self.tasks[t as usize].state == crate::task::TaskState::Dead {
            // The entity stays with the dead task (it is still of the
            // class), its inactive timer armed if bandwidth is owed.
            let e = self.tasks[t as usize].dl.take().expect("a deadline task");
            self.dl_release_bw(t, &e);
            self.tasks[t as usize].dl = Some(e);
        }
    }

    /// Charges the running deadline task (mirrors update_curr_dl() →
    /// update_curr_dl_se()): its budget drains by its execution scaled by
    /// the CPU's capacity; out of budget (or after a yield) it is
    /// throttled: off the tree until its next period, replenished at once
    /// if that has passed, and the CPU reschedules unless it is still first.
    pub(crate) fn update_curr_dl(&mut self, cpu: CpuId) {
        let Some(t) = self.rqs[cpu as usize].dl.curr else {
            return;
        };
        let delta = self.update_se(t);
        let cap = self.kcap[cpu as usize];
        let e = self.tasks[t as usize].dl.as_mut().expect("a deadline task");
        if delta == 0 && !e.yielded {
            return;
        }
        if e.key.is_none() {
            // Throttled already (a yield's second pass, say).
            return;
        }
        // dl_scaled_delta_exec(): capacity-invariant (the frequency is the
        // highest here).
        let scaled = ((u128::from(delta) * u128::from(cap)) >> 10) as i64;
        e.runtime_ns -= scaled;
        if e.runtime_ns > 0 && !e.yielded {
            return;
        }
        e.throttled = true;
        self.counters.dl_throttles += 1;
        self.dl_dequeue_pushable(cpu, t);
        let key = self.tasks[t as usize]
            .dl
            .as_mut()
            .expect("a deadline task")
            .key
            .take();
        if let Some(key) = key {
            self.dl_tree_remove(cpu, key);
        }
        // A boosted task is never throttled: it is replenished at once.
        let boosted = self.tasks[t as usize]
            .dl
            .as_ref()
            .is_some_and(|e| e.boosted());
        if boosted || !self.dl_start_timer(t) {
            self.enqueue_task_dl(cpu, t, DlEnqueue::Replenish);
        }
        let first = self.rqs[cpu as usize].dl.earliest().map(|(_, w)| w);
        if first != Some(t) {
            self.resched_cpu(cpu, cpu);
        }
    }

    /// `t`'s replenishment timer fired (mirrors dl_task_timer()): a task
    /// that left the class meanwhile is left alone; one that blocked while
    /// throttled is only replenished (its wakeup queues it); a queued one
    /// is replenished, queued and preempts by deadline (any task of a lower
    /// class at once; an idle CPU once out of its idle state), and waiting
    /// tasks are pushed.
    pub(crate) fn dl_task_timer(&mut self, t: TaskId, gen: u32) {
        let tk = &mut self.tasks[t as usize];
        if !tk
            .dl_timers_mut()
            .replenish
            .fire(&mut self.q, gen, |gen| EventKind::DlTimer { task: t, gen })
        {
            return;
        }
        let Some(e) = tk.dl.as_ref() else {
            return;
        };
        if e.boosted() || !e.throttled {
            return;
        }
        let on_rq = e.on_rq;
        let cpu = self.tasks[t as usize].cpu;
        self.update_rq_clock(cpu);
        if !on_rq {
            self.dl_replenish(t);
            return;
        }
        self.update_curr_any(cpu);
        self.enqueue_task_dl(cpu, t, DlEnqueue::Replenish);
        match self.rqs[cpu as usize].curr {
            Some(c) if self.task_is_dl(c) => self.wakeup_preempt_dl(cpu, t, cpu),
            Some(_) => self.resched_cpu(cpu, cpu),
            None => {
                // The timer's interrupt woke the idle CPU.
                self.trace_idle_state_exit(cpu);
                let delay = self.wake_delay_ns(cpu, cpu, crate::sim::WF_IRQ_FROM_IDLE);
                self.resched_after(cpu, delay);
            }
        }
        // __push_dl_task(): one push.
        self.push_dl_task(cpu);
    }

    /// Updates `cpu`'s deadline utilisation signal (mirrors
    /// update_dl_rq_load_avg()): 1 while a deadline task runs.
    pub(crate) fn update_dl_rq_load_avg(&mut self, cpu: CpuId, running: bool) {
        let rq = &mut self.rqs[cpu as usize];
        rq.avg_dl.update_running(rq.clock_pelt, running);
    }

    /// The running deadline task stops running but stays queued (mirrors
    /// put_prev_task_dl()); it may now be pushed elsewhere.
    pub(crate) fn put_prev_task_dl(&mut self, cpu: CpuId, t: TaskId) {
        self.update_curr_dl(cpu);
        self.update_dl_rq_load_avg(cpu, true);
        if self.rqs[cpu as usize].dl.curr == Some(t) {
            self.rqs[cpu as usize].dl.curr = None;
        }
        let tk = &self.tasks[t as usize];
        if tk.dl.as_ref().is_some_and(|e| e.key.is_some()) && tk.affinity.weight() > 1 {
            self.dl_enqueue_pushable(cpu, t);
        }
    }

    /// `t` becomes the running deadline task of `cpu` (mirrors
    /// set_next_task_dl()).
    pub(crate) fn set_next_task_dl(&mut self, cpu: CpuId, t: TaskId) {
        if self.rqs[cpu as usize].dl.curr.is_none() {
            self.update_dl_rq_load_avg(cpu, false);
        }
        self.dl_dequeue_pushable(cpu, t);
        self.rqs[cpu as usize].dl.curr = Some(t);
        self.start_exec(t);
    }

    /// With HRTICK_DL, arms `cpu`'s HRTICK for the budget running deadline
    /// task `t` has left, while it has some and comes first (mirrors
    /// start_hrtick_dl() from set_next_task_dl() and task_tick_dl()).
    pub(crate) fn hrtick_start_dl(&mut self, cpu: CpuId, t: TaskId) {
        if !self.feat(crate::features::Feat::HRTICK_DL) {
            return;
        }
        let Some(e) = self.tasks[t as usize].dl.as_ref() else {
            return;
        };
        let first = self.rqs[cpu as usize].dl.earliest().map(|(_, w)| w) == Some(t);
        if e.runtime_ns > 0 && first {
            let left = e.runtime_ns as u64;
            self.hrtick_start(cpu, left);
        }
    }

    /// The tick of a CPU running a deadline task (mirrors task_tick_dl()).
    pub(crate) fn task_tick_dl(&mut self, cpu: CpuId) {
        self.update_curr_dl(cpu);
        self.update_dl_rq_load_avg(cpu, true);
    }

    /// sched_yield() of a running deadline task (mirrors yield_task_dl()):
    /// it gives up the rest of its budget and waits for its next period.
    pub(crate) fn yield_task_dl(&mut self, cpu: CpuId, t: TaskId) {
        if let Some(e) = self.tasks[t as usize].dl.as_mut() {
            e.yielded = true;
        }
        self.update_curr_dl(cpu);
    }

    // ----- preemption and placement ---------------------------------------------------

    /// A deadline wakee `t` against the deadline task running on `cpu`
    /// (mirrors wakeup_preempt_dl()): an earlier deadline preempts; an
    /// equal one only if the running task could go elsewhere and the wakee
    /// could not (check_preempt_equal_dl()).
    pub(crate) fn wakeup_preempt_dl(&mut self, cpu: CpuId, t: TaskId, from: CpuId) {
        let Some(curr) = self.rqs[cpu as usize].curr else {
            return;
        };
        if self.dl_entity_preempt(t, curr) {
            self.update_curr_dl(cpu);
            self.resched_cpu(cpu, from);
            return;
        }
        if self.dl_deadline_of(t) != self.dl_deadline_of(curr)
            || self.rqs[cpu as usize].need_resched
        {
            return;
        }
        if self.tasks[curr as usize].affinity.weight() == 1 || !self.cpudl_find_top(curr) {
            return;
        }
        if self.tasks[t as usize].affinity.weight() != 1 && self.cpudl_find_top(t) {
            return;
        }
        self.resched_cpu(cpu, from);
    }

    /// cpudl_find() without a mask: whether the CPU whose earliest deadline
    /// is the latest could take `t` (its deadline is earlier there).
    fn cpudl_find_top(&self, t: TaskId) -> bool {
        let Some(&(dl, best)) = self.cpudl.elements.last() else {
            return false;
        };
        self.tasks[t as usize].affinity.test(best) && self.dl_deadline_of(t) < dl
    }

    /// Whether `t` fits `cpu`'s capacity (mirrors dl_task_fits_capacity():
    /// the capacity must reach its density).
    pub(crate) fn dl_task_fits_capacity(&self, t: TaskId, cpu: CpuId) -> bool {
        if !self.asym_cpucap_active() {
            return true;
        }
        let density = self.tasks[t as usize]
            .dl
            .as_ref()
            .map_or(0, |e| e.dl_density);
        self.kcap[cpu as usize] >= density >> (BW_SHIFT - 10)
    }

    /// The CPUs where `t` would run before what is there (mirrors
    /// cpudl_find()): those free of deadline work (on asymmetric machines
    /// those it fits, else the largest it does not), else the CPU whose
    /// earliest deadline is the latest, if `t`'s is earlier.
    fn cpudl_find(&self, t: TaskId) -> Option<CpuMask> {
        let tk = &self.tasks[t as usize];
        let free = self.cpudl.free.and(&tk.affinity);
        if !free.is_empty() {
            if !self.asym_cpucap_active() {
                return Some(free);
            }
            let mut fit = free;
            let mut best: Option<(u64, CpuId)> = None;
            for c in free.iter() {
                if !self.dl_task_fits_capacity(t, c) {
                    fit.clear(c);
                    let cap = self.kcap[c as usize];
                    let better = match best {
                        None => true,
                        Some((bc, _)) => cap > bc || (cap == bc && c == tk.cpu),
                    };
                    if better {
                        best = Some((cap, c));
                    }
                }
            }
            if fit.is_empty() {
                if let Some((_, c)) = best {
                    fit.set(c);
                }
            }
            return Some(fit);
        }
        self.cpudl_find_top(t)
            .then(|| {
                self.cpudl
                    .elements
                    .last()
                    .map(|&(_, c)| CpuMask::from_cpus([c]))
            })
            .flatten()
    }

    /// A CPU where `t` would run at once, as close to its CPU as the
    /// domains allow (mirrors find_later_rq()).
    fn find_later_rq(&mut self, t: TaskId, this_cpu: CpuId) -> Option<CpuId> {
        if self.tasks[t as usize].affinity.weight() == 1 {
            return None;
        }
        let later = self.cpudl_find(t)?;
        Some(self.affine_pick(t, this_cpu, &later))
    }

    /// `t` would be the earliest deadline on `cpu` (mirrors
    /// dl_task_is_earliest_deadline()).
    fn dl_is_earliest_on(&self, t: TaskId, cpu: CpuId) -> bool {
        match self.rqs[cpu as usize].dl.earliest() {
            None => true,
            Some((d, _)) => self.dl_deadline_of(t) < d,
        }
    }

    /// Where a waking deadline task goes (mirrors select_task_rq_dl()): it
    /// stays unless a deadline task runs on its CPU that it would not
    /// preempt (or one that cannot move), or, on asymmetric machines, it
    /// does not fit there; then to a CPU where it would be the earliest.
    pub(crate) fn select_task_rq_dl(
        &mut self,
        t: TaskId,
        cpu: CpuId,
        this_cpu: CpuId,
        wake_flags: &mut u32,
    ) -> CpuId {
        *wake_flags |= WF_RQ_SELECTED;
        if *wake_flags & WF_TTWU == 0 {
            return cpu;
        }
        let mut select = self.rqs[cpu as usize].curr.is_some_and(|c| {
            self.task_is_dl(c)
                && (self.tasks[c as usize].affinity.weight() < 2 || !self.dl_entity_preempt(t, c))
        }) && self.tasks[t as usize].affinity.weight() > 1;
        if self.asym_cpucap_active() && !self.dl_task_fits_capacity(t, cpu) {
            select = true;
        }
        if !select {
            return cpu;
        }
        match self.find_later_rq(t, this_cpu) {
            Some(target) if self.dl_is_earliest_on(t, target) => target,
            _ => cpu,
        }
    }

    /// After a wakeup put deadline task `t` on `cpu` behind the running
    /// deadline task (mirrors task_woken_dl()): it is pushed on at once.
    pub(crate) fn task_woken_dl(&mut self, cpu: CpuId, t: TaskId) {
        let rq = &self.rqs[cpu as usize];
        let Some(curr) = rq.curr else {
            return;
        };
        if curr == t
            || rq.need_resched
            || self.tasks[t as usize].affinity.weight() < 2
            || !self.task_is_dl(curr)
        {
            return;
        }
        if self.tasks[curr as usize].affinity.weight() < 2 || !self.dl_entity_preempt(t, curr) {
            self.push_dl_tasks(cpu);
        }
    }

    /// Pushes waiting deadline tasks of `cpu` while there are such moves
    /// (mirrors push_dl_tasks()).
    pub(crate) fn push_dl_tasks(&mut self, cpu: CpuId) {
        while self.push_dl_task(cpu) {}
    }

    /// Moves `cpu`'s earliest pushable task to a CPU where it would be the
    /// earliest (mirrors push_dl_task() with find_lock_later_rq()); one
    /// earlier than the running deadline task reschedules here instead.
    pub(crate) fn push_dl_task(&mut self, cpu: CpuId) -> bool {
        let Some((_, &next)) = self.rqs[cpu as usize].dl.pushable.first_key_value() else {
            return false;
        };
        if let Some(curr) = self.rqs[cpu as usize].curr {
            if self.task_is_dl(curr)
                && self.dl_entity_preempt(next, curr)
                && self.tasks[curr as usize].affinity.weight() > 1
            {
                self.resched_cpu(cpu, cpu);
                return false;
            }
        }
        let Some(later) = self.find_later_rq(next, cpu) else {
            return false;
        };
        if later == cpu || !self.dl_is_earliest_on(next, later) {
            return false;
        }
        self.move_queued_dl_task(next, cpu, later);
        self.counters.dl_pushes += 1;
        self.resched_cpu(later, cpu);
        true
    }

    /// Takes queued deadline tasks that wait elsewhere and would be the
    /// earliest here (mirrors pull_dl_task()): from each overloaded CPU,
    /// its earliest pushable task allowed here, each pulled task earlier
    /// than the last, unless its own CPU is about to run it.
    pub(crate) fn pull_dl_task(&mut self, cpu: CpuId) {
        if self.dlo_mask.is_empty() {
            return;
        }
        let mut dmin = u64::MAX;
        let mut pulled = false;
        let dlo = self.dlo_mask;
        for src in dlo.iter() {
            if src == cpu {
                continue;
            }
            let here = self.rqs[cpu as usize].dl.earliest().map(|(d, _)| d);
            let next = self.rqs[src as usize].dl.earliest_pushable();
            if let (Some(h), Some(n)) = (here, next) {
                if h < n {
                    continue;
                }
            }
            if self.rqs[src as usize].dl.tree.len() <= 1 {
                continue;
            }
            let p = self.rqs[src as usize]
                .dl
                .pushable
                .values()
                .copied()
                .find(|&p| self.tasks[p as usize].affinity.test(cpu));
            let Some(p) = p else {
                continue;
            };
            let d = self.dl_deadline_of(p);
            if d >= dmin || !self.dl_is_earliest_on(p, cpu) {
                continue;
            }
            let src_curr = self.rqs[src as usize].curr;
            if src_curr.is_some_and(|c| d < self.dl_deadline_of(c)) {
                continue;
            }
            self.update_rq_clock(src);
            self.move_queued_dl_task(p, src, cpu);
            self.counters.dl_pulls += 1;
            dmin = d;
            pulled = true;
        }
        if pulled {
            self.resched_cpu(cpu, cpu);
        }
    }

    /// Moves a queued deadline task that is not running from `src` to
    /// `dst`, deadline and budget kept (mirrors move_queued_task_locked()).
    fn move_queued_dl_task(&mut self, t: TaskId, src: CpuId, dst: CpuId) {
        self.dequeue_task_dl(src, t);
        self.set_task_cpu(t, src, dst, true);
        self.update_rq_clock(dst);
        self.enqueue_task_dl(dst, t, DlEnqueue::Migrating);
    }

    /// `cpu` schedules after running deadline task `prev`, which left the
    /// tree (it blocked or was throttled): it pulls (mirrors balance_dl()).
    /// True when deadline work is runnable here then.
    pub(crate) fn balance_dl(&mut self, cpu: CpuId, prev: TaskId) -> bool {
        let left = self.tasks[prev as usize]
            .dl
            .as_ref()
            .is_none_or(|e| e.key.is_none());
        if left {
            self.pull_dl_task(cpu);
        }
        !self.rqs[cpu as usize].dl.tree.is_empty()
    }

    // ----- sched_setattr() to, from and within the class ---------------------------------

    /// sched_setattr() of `t` on itself when it is a deadline task or asks to
    /// become one (mirrors __sched_setscheduler() with sched_dl_overflow()
    /// and the class's switched_to/from and prio_changed hooks). Fails as
    /// the kernel does: EINVAL for bad parameters, EPERM for an affinity
    /// narrower than the root domain, EBUSY when admission control refuses
    /// the bandwidth; the task then stays as it was.
    pub(crate) fn sched_setattr_dl(&mut self, t: TaskId, a: &Attrs) -> Result<(), String> {
        let (policy, nice, runtime_ns, uclamp) = a.parts();
        let old_dl = self.tasks[t as usize].dl.is_some();
        let new_dl = policy.is_deadline();
        // Leaving the class, the clamps are checked first: invalid ones fail
        // the call (EINVAL) and change nothing, as for the other classes.
        // (Under SCHED_DEADLINE they are kept but have no effect.)
        let clamps = if new_dl {
            None
        } else {
            match self.uclamp_request(t, uclamp) {
                Some(c) => Some(c),
                None => return Ok(()),
            }
        };
        let old_bw = self.tasks[t as usize].dl.as_ref().map_or(0, |e| e.dl_bw);
        let mut fresh = None;
        if let SchedPolicy::Deadline {
            runtime_ns: r,
            deadline_ns: d,
            period_ns: p,
        } = policy
        {
            let policy = schedlab_workload::check_deadline_params(r, d, p)
                .map_err(|why| format!("EINVAL: {why}"))?;
            let all = CpuMask::first_n(self.rqs.len());
            if !all.is_subset(&self.tasks[t as usize].affinity) {
                return Err(format!(
                    "EPERM: its affinity ({}) does not span the root domain ({}), as SCHED_DEADLINE requires",
                    self.tasks[t as usize].affinity.to_list_string(),
                    all.to_list_string()
                ));
            }
            let e = DlEntity::new(policy).expect("a deadline policy");
            if old_dl {
                let cur = self.tasks[t as usize].dl.as_ref().expect("a deadline task");
                if (cur.dl_runtime_ns, cur.dl_deadline_ns, cur.dl_period_ns)
                    == (e.dl_runtime_ns, e.dl_deadline_ns, e.dl_period_ns)
                {
                    // dl_param_changed(): nothing to do.
                    return Ok(());
                }
            }
            // Admission goes by policy (task_has_dl_policy()): a task boosted
            // into the class has no bandwidth of its own yet.
            let own_dl = self.dl_policy(t);
            if e.dl_bw != old_bw || !own_dl {
                if self.dl_overflow(old_bw, e.dl_bw) {
                    let cap = (u128::from(BW_UNIT) * u128::from(self.dl_bw_capacity())) >> 10;
                    return Err(format!(
                        "EBUSY: admission control: {} more bandwidth units would bring the admitted total to {}, above the root domain's {cap} (2^20 units are a whole CPU of capacity 1024; the fair servers' {FAIR_SERVER_BW} per CPU are admitted from boot)",
                        e.dl_bw,
                        self.dl_total_bw - old_bw + e.dl_bw,
                    ));
                }
                if !own_dl {
                    // A bandwidth still owed from a recent stay in the class
                    // goes first.
                    if let Some(stale) = self.tasks[t as usize].dl_left.as_ref() {
                        self.dl_total_bw -= stale.dl_bw;
                    }
                    if old_dl {
                        // Boosted into the class meanwhile: the entity it
                        // left stays behind, its bandwidth now released.
                        let tk = &mut self.tasks[t as usize];
                        if tk.dl_left.take().is_some() {
                            tk.dl_timers_mut().inactive.cancel();
                        }
                    }
                }
                self.dl_total_bw = self.dl_total_bw - old_bw + e.dl_bw;
            }
            fresh = Some(e);
        }
        // The change proper: off the runqueue, new class or parameters, back.
        let change = self.dl_change_begin(t);
        let cpu = change.cpu;
        if new_dl {
            self.dl_enter_class(t);
            let tk = &mut self.tasks[t as usize];
            tk.idle_policy = false;
            tk.batch_policy = false;
            let e = fresh.expect("checked above");
            match tk.dl.as_mut() {
                Some(cur) => cur.set_params(policy).expect("a deadline policy"),
                None => {
                    // Back before its 0-lag time: deadline and budget kept
                    // (switched_to_dl() cancels the inactive timer).
                    let mut ent = tk.dl_left.take().unwrap_or_else(|| Box::new(e));
                    tk.dl_timers_mut().inactive.cancel();
                    if ent.throttled && tk.dl_timers().replenish.expires_ns().is_none() {
                        // Its replenishment time passed while it was out of
                        // the class: it comes back unthrottled (7.3 would
                        // leave it off the tree with no timer to return it).
                        ent.throttled = false;
                    }
                    ent.set_params(policy).expect("a deadline policy");
                    ent.on_rq = false;
                    ent.key = None;
                    ent.pi_se = None;
                    tk.dl = Some(ent);
                }
            }
        } else {
            // Leaving the class: switched_from_dl() releases the bandwidth
            // now or at the 0-lag time.
            let e = self.tasks[t as usize].dl.take().expect("a deadline task");
            if self.dl_release_bw(t, &e) {
                self.tasks[t as usize].dl_left = Some(e);
            }
            match policy.rt_priority() {
                Some(p) => {
                    let slice = self.rr_timeslice_ticks();
                    let tk = &mut self.tasks[t as usize];
                    tk.rt = Some(crate::task::RtEntity {
                        prio: crate::rt::RT_PRIO_NONE - p,
                        rr: matches!(policy, SchedPolicy::Rr(_)),
                        time_slice_ticks: slice,
                        on_rq: false,
                    });
                }
                None => self.become_fair(cpu, t, policy, nice, runtime_ns),
            }
            if let Some((umin, umax)) = clamps {
                self.setscheduler_uclamp(t, umin, umax);
            }
        }
        self.dl_change_end(t, change, DlEnqueue::Restore);
        Ok(())
    }

    /// The class part of switched_to_dl() for a task that changes class or
    /// is already in it (between dl_change_begin() and dl_change_end()):
    /// the class is in use from now on, a fair task's load leaves the fair
    /// runqueue (switched_from_fair()), and an RT task's entity comes off;
    /// it is returned.
    pub(crate) fn dl_enter_class(&mut self, t: TaskId) -> Option<crate::task::RtEntity> {
        self.dl_class_used();
        let tk = &self.tasks[t as usize];
        if tk.dl.is_none() && tk.rt.is_none() {
            let cpu = tk.cpu;
            self.detach_entity_load(cpu, t);
        }
        self.tasks[t as usize].rt.take()
    }

    /// The first half of a change of class or parameters that involves the
    /// deadline class (mirrors sched_change_begin() with DEQUEUE_SAVE |
    /// DEQUEUE_MOVE, for sched_setattr() and rt_mutex_setprio()): a
    /// delayed fair task completes its dequeue (switching_from_fair()), a
    /// running deadline task is charged before its deadline is noted
    /// (get_prio_dl()), and the task leaves its runqueue and, if it runs,
    /// its class's current slot. The caller then changes the class.
    pub(crate) fn dl_change_begin(&mut self, t: TaskId) -> DlChange {
        let cpu = self.tasks[t as usize].cpu;
        let running = self.rqs[cpu as usize].curr == Some(t);
        let old_rt = self.tasks[t as usize].rt;
        let old_dl = self.tasks[t as usize].dl.is_some();
        self.update_rq_clock(cpu);
        if !old_dl && old_rt.is_none() && self.tasks[t as usize].se.sched_delayed {
            self.dequeue_task(cpu, t, true);
        }
        let queued = if old_dl {
            self.tasks[t as usize].dl.as_ref().is_some_and(|e| e.on_rq)
        } else if let Some(r) = old_rt {
            r.on_rq
        } else {
            self.tasks[t as usize].se.on_rq
        };
        if old_dl && running {
            self.update_curr_dl(cpu);
        }
        let old_deadline = self.dl_deadline_of(t);
        if queued {
            self.dequeue_task(cpu, t, false);
        }
        if running {
            if old_dl {
                self.put_prev_task_dl(cpu, t);
            } else if old_rt.is_some() {
                self.put_prev_task_rt(cpu, t);
            }
            // A pending HRTICK stays armed (sched_change_begin()/end() leave
            // it; it fires into the new class's task_tick()).
        }
        DlChange {
            cpu,
            running,
            queued,
            old_rt,
            old_dl,
            old_deadline,
        }
    }

    /// The second half (mirrors sched_change_end() and the classes'
    /// switched_from/switched_to/prio_changed hooks): the task is queued in
    /// its new class (a deadline task as `how` says; an RT one at the head
    /// of its list when it comes down from the deadline class, ENQUEUE_HEAD)
    /// and takes the current slot back if it ran; then preemption, push and
    /// pull follow the change.
    pub(crate) fn dl_change_end(&mut self, t: TaskId, change: DlChange, how: DlEnqueue) {
        let DlChange {
            cpu,
            running,
            queued,
            old_rt,
            old_dl,
            old_deadline,
        } = change;
        let new_dl = self.tasks[t as usize].dl.is_some();
        if queued {
            if new_dl {
                self.enqueue_task_dl(cpu, t, how);
            } else if self.tasks[t as usize].rt.is_some() {
                self.enqueue_task_rt(cpu, t, old_dl);
            } else {
                self.enqueue_task_fair(cpu, t, EnqueueKind::Restore);
            }
        }
        if running {
            if new_dl {
                self.set_next_task_dl(cpu, t);
            } else if self.tasks[t as usize].rt.is_some() {
                self.set_next_task_rt(cpu, t);
            } else {
                self.set_next_entity(cpu, t);
            }
        }
        let new_deadline = self.dl_deadline_of(t);
        if old_dl && new_dl {
            // prio_changed_dl(): only a changed deadline matters (a task
            // throttled by the dequeue's accounting rescheduled then).
            if queued && new_deadline != old_deadline {
                if new_deadline > old_deadline {
                    self.pull_dl_task(cpu);
                }
                let resched = if running {
                    self.rqs[cpu as usize]
                        .dl
                        .earliest()
                        .is_some_and(|(d, _)| d < new_deadline)
                } else {
                    self.rqs[cpu as usize]
                        .curr
                        .is_none_or(|c| !self.task_is_dl(c) || self.dl_entity_preempt(t, c))
                };
                if resched {
                    self.resched_cpu(cpu, cpu);
                }
            }
        } else if new_dl {
            // switched_to_dl(), then sched_change_end()'s check of the
            // upgraded class: a running task reschedules, which matters when
            // an entity of earlier deadline (the fair server's, say) is
            // queued; otherwise its pick is the task again, and no event is
            // spent on it.
            if running {
                let first = self.rqs[cpu as usize].dl.earliest().map(|(_, w)| w);
                if first != Some(t) {
                    self.resched_cpu(cpu, cpu);
                }
            } else if queued {
                if !self.rqs[cpu as usize].dl.pushable.is_empty() {
                    self.push_dl_tasks(cpu);
                }
                if self.tasks[t as usize].cpu == cpu {
                    self.wakeup_preempt(cpu, t, cpu, 0);
                }
            }
        } else if running {
            // Out of the class, a lower one: the pick decides again.
            self.resched_cpu(cpu, cpu);
        } else if queued {
            self.wakeup_preempt(cpu, t, cpu, 0);
        }
        if old_dl && !new_dl && queued && self.rqs[cpu as usize].dl.tree.is_empty() {
            self.pull_dl_task(cpu);
        }
        if old_rt.is_some() && self.rqs[cpu as usize].rt.nr_running == 0 {
            self.pull_rt_task(cpu);
        }
    }

    /// The first task enters the deadline class: the fair servers keep their
    /// state from now on, as for the RT class.
    pub(crate) fn dl_class_used(&mut self) {
        self.rt_class_used();
    }

    /// Chooses among `mask` for `t` as find_lowest_rq() and find_later_rq()
    /// do: `t`'s CPU if it is there; else, walking up that CPU's domains
    /// that do affine wakeups, `this_cpu` if it is in the mask and the
    /// domain, or the next one of the domain after the last this CPU
    /// picked (cpumask_any_and_distribute()); else `this_cpu` if in the
    /// mask, else any of it.
    pub(crate) fn affine_pick(&mut self, t: TaskId, this_cpu: CpuId, mask: &CpuMask) -> CpuId {
        let cpu = self.tasks[t as usize].cpu;
        if mask.test(cpu) {
            return cpu;
        }
        let this = mask.test(this_cpu).then_some(this_cpu);
        let n_dom = self.domains.cpus[cpu as usize].domains.len();
        for i in 0..n_dom {
            let d = &self.domains.cpus[cpu as usize].domains[i];
            if !d.flags.contains(SdFlags::WAKE_AFFINE) {
                continue;
            }
            if let Some(tc) = this.filter(|&c| d.span.test(c)) {
                return tc;
            }
            let m = mask.and(&d.span);
            if !m.is_empty() {
                return self.any_and_distribute(this_cpu, &m);
            }
        }
        if let Some(tc) = this {
            return tc;
        }
        self.any_and_distribute(this_cpu, mask)
    }
}

#[cfg(test)]
#[path = "dl_tests.rs"]
mod tests;
