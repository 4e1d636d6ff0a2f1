//! The fair server (7.3's per-CPU `rq->fair_server`, a deferred
//! SCHED_DEADLINE server; kernel/sched/deadline.c): what keeps fair tasks
//! from starving under RT tasks, now that RT throttling is off by default.
//!
//! It reserves 50 ms of every 1000 ms for the fair class. Fair execution
//! (and idle time while it waits) uses its budget up in the background;
//! only when the fair class has had less than the budget by the
//! zero-laxity point (deadline − remaining budget) does the server run: it
//! then outranks RT tasks, runs fair tasks for a fresh 50 ms, and from then
//! on takes 50 ms at the start of every period while it stays active. A
//! CPU-bound SCHED_FIFO task and a fair task on one CPU share it 95% / 5%,
//! the fair task's first turn coming after 950 ms.
//!
//! The server starts when a CPU's first fair task is queued
//! (dl_server_start() from enqueue_task_fair()) and stops when its pick
//! finds no fair task, or when its timer finds none queued. While it runs
//! it is an entity of the CPU's deadline tree (dl.rs), ordered by its
//! deadline among deadline tasks. It is kept only once the RT or deadline
//! class is in use ([`Sim::rt_dl_in_use`]): without such tasks it never
//! changes a pick, and fair-only runs stay as they were.

use crate::event::EventKind;
use crate::sim::Sim;
use schedlab_topo::CpuId;

/// The fair server's runtime per period (`fair_server` dl_runtime, 50 ms).
pub const FAIR_SERVER_RUNTIME_NS: i64 = 50_000_000;
/// Its period (`dl_period`, 1000 ms).
pub const FAIR_SERVER_PERIOD_NS: u64 = 1_000_000_000;

/// A deferred timer is not pushed out for less than this
/// (`dl_server_min_res`, 1 ms).
pub const FAIR_SERVER_MIN_RES_NS: u64 = 1_000_000;

/// One CPU's fair server.
#[derive(Clone, Debug, Default)]
pub struct FairServer {
    /// Started (`dl_server_active`).
    pub active: bool,
    /// Enqueued and not throttled: it runs fair tasks ahead of RT ones.
    pub running: bool,
    /// Waiting for its zero-laxity point (`dl_defer_armed`); otherwise a
    /// throttled server waits for its next period.
    pub armed: bool,
    /// It has had to run (`dl_defer_running`): a replenishment or a start
    /// within the period runs it at once instead of deferring again.
    pub defer_running: bool,
    /// Idle time used its budget up (`dl_defer_idle`): its timer stops it.
    pub defer_idle: bool,
    /// Budget left in the period (`dl_se->runtime`), ns; may overrun below 0.
    pub runtime_ns: i64,
    /// Absolute deadline = end of the current period.
    pub deadline_ns: u64,
    /// Idle time up to here has been charged.
    pub idle_charged_ns: u64,
    /// Its timer (zero-laxity point while armed, the next period while throttled after running).
    pub timer: crate::event::LazyTimer,
    /// Its place in the CPU's deadline tree while it runs (dl.rs).
    pub key: Option<(u64, u64)>,
}

impl Sim {
    /// The server starts or stops running: it joins the CPU's deadline
    /// tree at its deadline, where it competes with deadline tasks, or
    /// leaves it (enqueue_dl_entity() / dequeue_dl_entity()).
    fn fair_server_set_running(&mut self, cpu: CpuId, running: bool) {
        let fs = &mut self.rqs[cpu as usize].fair_server;
        fs.running = running;
        match (running, fs.key) {
            (true, None) => {
                let d = fs.deadline_ns;
                let key = self.dl_tree_insert(cpu, d, crate::dl::SERVER);
                self.rqs[cpu as usize].fair_server.key = Some(key);
            }
            (false, Some(key)) => {
                self.rqs[cpu as usize].fair_server.key = None;
                self.dl_tree_remove(cpu, key);
            }
            _ => {}
        }
    }

    /// A fresh period from now (mirrors replenish_dl_new_period()).
    fn fair_server_new_period(&mut self, cpu: CpuId) {
        let now = self.now;
        let fs = &mut self.rqs[cpu as usize].fair_server;
        fs.deadline_ns = now + FAIR_SERVER_PERIOD_NS;
        fs.runtime_ns = FAIR_SERVER_RUNTIME_NS;
    }

    /// Arms the server's timer for `at_ns`.
    fn fair_server_arm(&mut self, cpu: CpuId, at_ns: u64) {
        let at = at_ns.max(self.now);
        self.rqs[cpu as usize]
            .fair_server
            .timer
            .arm(&mut self.q, at, |gen| EventKind::FairServer { cpu, gen });
    }

    /// The zero-laxity point: the latest start that still gives the budget
    /// left before the deadline.
    fn fair_server_zero_laxity(&self, cpu: CpuId) -> u64 {
        let fs = &self.rqs[cpu as usize].fair_server;
        fs.deadline_ns.saturating_sub(fs.runtime_ns.max(0) as u64)
    }

    /// The server waits for its zero-laxity point (throttled and armed).
    fn fair_server_defer(&mut self, cpu: CpuId) {
        self.fair_server_set_running(cpu, false);
        let fs = &mut self.rqs[cpu as usize].fair_server;
        fs.armed = true;
        let at = self.fair_server_zero_laxity(cpu);
        self.fair_server_arm(cpu, at);
    }

    /// The server runs (enqueued, not throttled): it outranks an RT task
    /// running on `cpu`, and a deadline task of later deadline, which are
    /// rescheduled; so is a fair task (the server's pick is EEVDF's again).
    /// An idle CPU is left alone (the pick would find no fair task).
    fn fair_server_run(&mut self, cpu: CpuId) {
        self.fair_server_set_running(cpu, true);
        let fs = &mut self.rqs[cpu as usize].fair_server;
        fs.armed = false;
        fs.timer.cancel();
        let deadline = fs.deadline_ns;
        let rq = &self.rqs[cpu as usize];
        if rq.curr.is_some_and(|c| self.task_is_rt(c)) {
            self.update_curr_rt(cpu);
            self.resched_cpu(cpu, cpu);
        } else if let Some(c) = rq.curr.filter(|&c| self.task_is_dl(c)) {
            if self.tasks[c as usize]
                .dl
                .as_ref()
                .is_some_and(|e| deadline < e.deadline_ns)
            {
                self.update_curr_dl(cpu);
                self.resched_cpu(cpu, cpu);
            }
        } else if rq.curr.is_some() {
            self.update_curr(cpu);
            self.resched_cpu(cpu, cpu);
        }
    }

    /// The first fair task is queued on `cpu` (mirrors dl_server_start()
    /// → enqueue_dl_entity() → update_dl_entity()): a passed deadline, or a
    /// budget the time left cannot hold at the server's bandwidth, starts a
    /// new period and deferral again, unless the server had to run and its
    /// deadline has not passed (the revised wakeup: the budget shrinks to
    /// the time left at the server's bandwidth, and it runs); within its
    /// period it waits for its zero-laxity point, or runs at once if it had
    /// to run.
    pub(crate) fn fair_server_start(&mut self, cpu: CpuId) {
        if !self.rt_dl_in_use {
            return;
        }
        self.rqs[cpu as usize].fair_server.defer_idle = false;
        if self.rqs[cpu as usize].fair_server.active {
            return;
        }
        self.update_curr_rt(cpu);
        self.update_curr_dl(cpu);
        self.fair_server_charge_idle(cpu);
        let now = self.now;
        let fs = &mut self.rqs[cpu as usize].fair_server;
        fs.active = true;
        let left = fs.deadline_ns.saturating_sub(now);
        // The CBS overflow test: runtime / left > dl_runtime / dl_period.
        let overflow = fs.runtime_ns.max(0) as u128 * FAIR_SERVER_PERIOD_NS as u128
            > FAIR_SERVER_RUNTIME_NS as u128 * left as u128;
        let passed = now >= fs.deadline_ns;
        if passed || overflow {
            if fs.defer_running && !passed {
                // update_dl_revised_wakeup().
                fs.runtime_ns = (left as u128 * FAIR_SERVER_RUNTIME_NS as u128
                    / FAIR_SERVER_PERIOD_NS as u128) as i64;
                self.fair_server_run(cpu);
                return;
            }
            fs.defer_running = false;
            self.fair_server_new_period(cpu);
        }
        if self.rqs[cpu as usize].fair_server.defer_running {
            self.fair_server_run(cpu);
        } else {
            self.fair_server_defer(cpu);
        }
    }

    /// The server stops (mirrors dl_server_stop()); it keeps
    /// `defer_running`, its budget and its deadline.
    pub(crate) fn fair_server_stop(&mut self, cpu: CpuId) {
        self.fair_server_set_running(cpu, false);
        let fs = &mut self.rqs[cpu as usize].fair_server;
        fs.active = false;
        fs.armed = false;
        fs.defer_idle = false;
        fs.timer.cancel();
    }

    /// Charges the idle time of idle `cpu` not charged yet (mirrors
    /// update_curr_idle() → dl_server_update_idle()).
    pub(crate) fn fair_server_charge_idle(&mut self, cpu: CpuId) {
        let rq = &self.rqs[cpu as usize];
        if !self.rt_dl_in_use || rq.curr.is_some() || !rq.fair_server.active {
            return;
        }
        let from = rq.last_busy_change.max(rq.fair_server.idle_charged_ns);
        let delta = self.now.saturating_sub(from);
        self.rqs[cpu as usize].fair_server.idle_charged_ns = self.now;
        if delta > 0 {
            self.fair_server_charge(cpu, delta, true);
        }
    }

    /// Charges `delta_ns` of fair execution (or, with `idle`, of idle time)
    /// to `cpu`'s server (mirrors update_curr_dl_se() for a server): while
    /// it runs, a spent budget throttles it until its next period and
    /// reschedules; while it waits, a budget used up in the background
    /// returns it to its initial state (a new period, deferred again), and
    /// one used up by idle time marks it idle, so its timer stops it.
    pub(crate) fn fair_server_charge(&mut self, cpu: CpuId, delta_ns: u64, idle: bool) {
        let fs = &mut self.rqs[cpu as usize].fair_server;
        if !fs.active {
            return;
        }
        fs.runtime_ns -= delta_ns as i64;
        if fs.defer_idle && !idle {
            fs.defer_idle = false;
        }
        if fs.runtime_ns > 0 {
            return;
        }
        if !fs.running {
            if fs.defer_idle && idle {
                fs.runtime_ns = 0;
                return;
            }
            fs.defer_running = false;
            self.fair_server_new_period(cpu);
            if idle {
                self.rqs[cpu as usize].fair_server.defer_idle = true;
            }
            self.fair_server_defer(cpu);
            return;
        }
        // Throttled until the next period, which replenishes it; a period
        // already over by a microsecond (deadline tasks of earlier deadline
        // held the server off) gives a fresh one at once, to wait through
        // (start_dl_timer() fails, replenish_dl_new_period()).
        self.fair_server_set_running(cpu, false);
        let now = self.now;
        if self.rqs[cpu as usize].fair_server.deadline_ns + 1000 <= now {
            self.fair_server_new_period(cpu);
        }
        let fs = &mut self.rqs[cpu as usize].fair_server;
        fs.armed = false;
        let at = fs.deadline_ns;
        self.fair_server_arm(cpu, at);
        // Out of the tree, the server is not first: reschedule (an RT or
        // deadline task may run, or EEVDF picks again).
        if self.rqs[cpu as usize].curr.is_some() {
            self.resched_cpu(cpu, cpu);
        }
    }

    /// The server's timer (mirrors dl_server_timer()): a server marked idle
    /// stops; at a zero-laxity point that charging moved later by at least
    /// 1 ms, it waits on; otherwise it runs, with a fresh period at its
    /// zero-laxity point, or with its budget replenished for the next
    /// period (an overrun carried over) after it was throttled.
    pub(crate) fn fair_server_timer(&mut self, cpu: CpuId) {
        if !self.rqs[cpu as usize].fair_server.active || self.rqs[cpu as usize].fair_server.running
        {
            return;
        }
        self.update_rq_clock(cpu);
        self.update_curr_any(cpu);
        self.fair_server_charge_idle(cpu);
        let fs = &self.rqs[cpu as usize].fair_server;
        if fs.defer_idle {
            self.fair_server_stop(cpu);
            return;
        }
        if fs.running || !fs.active {
            return;
        }
        if fs.armed {
            let at = self.fair_server_zero_laxity(cpu);
            if self.now + FAIR_SERVER_MIN_RES_NS < at {
                self.fair_server_arm(cpu, at);
                return;
            }
            self.rqs[cpu as usize].fair_server.defer_running = true;
            // Past its zero-laxity point the overflow test fails: a new period.
            self.fair_server_new_period(cpu);
        } else {
            // replenish_dl_entity(): the next period, the overrun carried.
            let now = self.now;
            let fs = &mut self.rqs[cpu as usize].fair_server;
            while fs.runtime_ns <= 0 {
                fs.deadline_ns += FAIR_SERVER_PERIOD_NS;
                fs.runtime_ns += FAIR_SERVER_RUNTIME_NS;
            }
            if fs.deadline_ns < now {
                self.fair_server_new_period(cpu);
            }
        }
        self.counters.fair_server_runs += 1;
        self.fair_server_run(cpu);
        // __push_dl_task(): a deadline task the server now outranks moves on.
        self.push_dl_task(cpu);
    }
}
