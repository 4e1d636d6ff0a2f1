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
//! finds no fair task, or when its timer finds none queued. It is kept only
//! while the RT class is in use ([`Sim::rt_in_use`]): without RT tasks it
//! never changes a pick, and runs without RT stay as they were.

use crate::event::EventKind;
use crate::sim::Sim;
use schedlab_topo::CpuId;

/// The fair server's runtime per period (`fair_server` dl_runtime, 50 ms).
pub const FAIR_SERVER_RUNTIME_NS: i64 = 50_000_000;
/// Its period (`dl_period`, 1000 ms).
pub const FAIR_SERVER_PERIOD_NS: u64 = 1_000_000_000;

/// One CPU's fair server.
#[derive(Clone, Debug, Default)]
pub struct FairServer {
    /// Started (`dl_server_active`).
    pub active: bool,
    /// Enqueued and not throttled: it runs fair tasks ahead of RT ones.
    pub running: bool,
    /// It has had to run once (`dl_defer_running`): a replenishment runs it
    /// at once instead of deferring again. A stop keeps it.
    pub defer_running: bool,
    /// Budget left in the period (`dl_se->runtime`), ns; may overrun below 0.
    pub runtime_ns: i64,
    /// Absolute deadline = end of the current period.
    pub deadline_ns: u64,
    /// Its timer (zero-laxity point while deferred, the next period while throttled).
    pub timer: crate::event::LazyTimer,
}

impl Sim {
    /// The fair server of `cpu` runs fair tasks ahead of RT ones now.
    pub(crate) fn fair_server_runs(&self, cpu: CpuId) -> bool {
        self.rt_in_use && self.rqs[cpu as usize].fair_server.running
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

    /// The first fair task is queued on `cpu` (mirrors dl_server_start()
    /// → enqueue_dl_entity() → update_dl_entity()): a passed deadline, or a
    /// budget the time left cannot hold at the server's bandwidth, starts a
    /// new period; the server then waits for its zero-laxity point, or runs
    /// at once if it has had to run before.
    pub(crate) fn fair_server_start(&mut self, cpu: CpuId) {
        if !self.rt_in_use || self.rqs[cpu as usize].fair_server.active {
            return;
        }
        let now = self.now;
        let fs = &self.rqs[cpu as usize].fair_server;
        let left = fs.deadline_ns.saturating_sub(now);
        // The CBS overflow test: runtime / left > dl_runtime / dl_period.
        let overflow = fs.runtime_ns.max(0) as u128 * FAIR_SERVER_PERIOD_NS as u128
            > FAIR_SERVER_RUNTIME_NS as u128 * left as u128;
        if now >= fs.deadline_ns || overflow {
            self.fair_server_new_period(cpu);
        }
        let fs = &mut self.rqs[cpu as usize].fair_server;
        fs.active = true;
        if fs.defer_running && fs.runtime_ns > 0 {
            fs.running = true;
            self.fair_server_preempt(cpu);
        } else {
            let at = self.fair_server_zero_laxity(cpu);
            self.fair_server_arm(cpu, at);
        }
    }

    /// The server stops (mirrors dl_server_stop()).
    pub(crate) fn fair_server_stop(&mut self, cpu: CpuId) {
        let fs = &mut self.rqs[cpu as usize].fair_server;
        fs.active = false;
        fs.running = false;
        fs.timer.cancel();
    }

    /// The server now outranks an RT task running on `cpu`: reschedule it.
    fn fair_server_preempt(&mut self, cpu: CpuId) {
        let rq = &self.rqs[cpu as usize];
        if rq.curr.is_some_and(|c| self.tasks[c as usize].is_rt()) {
            self.update_curr_rt(cpu);
            self.resched_cpu(cpu, cpu);
        }
    }

    /// Charges `delta_ns` of fair execution to `cpu`'s server (mirrors
    /// dl_server_update() → update_curr_dl_se()): while it runs, a spent
    /// budget throttles it until the end of its period and reschedules;
    /// while it waits, a budget the fair class used up on its own starts a
    /// new period and moves the zero-laxity point.
    pub(crate) fn fair_server_charge(&mut self, cpu: CpuId, delta_ns: u64) {
        let fs = &mut self.rqs[cpu as usize].fair_server;
        if !fs.active {
            return;
        }
        fs.runtime_ns -= delta_ns as i64;
        if fs.runtime_ns > 0 {
            return;
        }
        if fs.running {
            fs.running = false;
            let at = fs.deadline_ns;
            self.fair_server_arm(cpu, at);
            if self.rqs[cpu as usize].rt.nr_running > 0 {
                self.resched_cpu(cpu, cpu);
            }
        } else {
            self.fair_server_new_period(cpu);
            let at = self.fair_server_zero_laxity(cpu);
            self.fair_server_arm(cpu, at);
        }
    }

    /// The server's timer (mirrors dl_server_timer()): with no fair task
    /// queued the server stops; a zero-laxity point that charging moved
    /// later is waited for; otherwise a fresh period runs the server now,
    /// ahead of RT tasks.
    pub(crate) fn fair_server_timer(&mut self, cpu: CpuId) {
        if !self.rqs[cpu as usize].fair_server.active {
            return;
        }
        self.update_rq_clock(cpu);
        self.update_curr(cpu);
        if self.rqs[cpu as usize].cfs.nr_queued == 0 {
            self.fair_server_stop(cpu);
            return;
        }
        let fs = &self.rqs[cpu as usize].fair_server;
        if fs.running {
            return;
        }
        if !fs.defer_running {
            let at = self.fair_server_zero_laxity(cpu);
            if self.now < at {
                self.fair_server_arm(cpu, at);
                return;
            }
        }
        // A fresh period, enqueued at once.
        self.fair_server_new_period(cpu);
        let fs = &mut self.rqs[cpu as usize].fair_server;
        fs.defer_running = true;
        fs.running = true;
        self.counters.fair_server_runs += 1;
        self.fair_server_preempt(cpu);
    }
}
