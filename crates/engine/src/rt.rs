//! The RT scheduling class (SCHED_FIFO, SCHED_RR; kernel/sched/rt.c and
//! cpupri.c) and the core's dispatch between it and the fair class.
//!
//! An RT runqueue keeps one FIFO list per kernel priority (0 most important
//! ..= 98); the head of the best non-empty list runs, and stays in its list
//! while it runs. RT tasks run before any fair task, preempt a fair task at
//! once, and a higher priority preempts a lower one. SCHED_RR adds a 100 ms
//! slice, counted in ticks, among tasks of one priority. Placement is by
//! priority, not load: a waking RT task that would wait goes to a CPU of the
//! lowest priority level (cpupri: idle and fair-only CPUs are level 0),
//! queued RT tasks that wait are pushed to such CPUs, and a CPU whose RT
//! priority drops pulls waiting ones. The fair balancer never moves an RT
//! task. Fair tasks keep a share of a CPU an RT task monopolises through the
//! fair server (fair_server.rs), and the fair balancer sees the CPU's
//! capacity less its RT utilisation (`avg_rt`, scale_rt_capacity()), so it
//! moves fair tasks off CPUs busy with RT work.
//!
//! Priority inheritance (pi.rs) moves tasks between the fair class and RT
//! priorities through the same class change as sched_setattr()
//! ([`Sim::change_rt_state`]). Not modelled: RT group scheduling,
//! `RT_PUSH_IPI` (off by default outside PREEMPT_RT).

use crate::event::TaskId;
use crate::sim::{EnqueueKind, Sim, WF_FORK, WF_RQ_SELECTED, WF_TTWU};
use crate::task::RtEntity;
use schedlab_topo::{CpuId, CpuMask};
use schedlab_workload::{Attrs, SchedPolicy};

/// The kernel priority that stands for "no RT task" (`MAX_RT_PRIO - 1`).
pub const RT_PRIO_NONE: u8 = 99;
/// SCHED_RR's time slice (`RR_TIMESLICE`, `sched_rr_timeslice_ms` 100).
pub const RR_TIMESLICE_NS: u64 = 100_000_000;
/// cpupri levels: 0 (no RT task), one per RT priority and
/// `CPUPRI_HIGHER` for deadline work (`CPUPRI_NR_PRIORITIES`).
pub const CPUPRI_LEVELS: usize = 101;

/// The cpupri level of a runqueue whose best RT priority is `prio`
/// (mirrors convert_prio()): 0 without RT tasks, `99 - prio` otherwise.
pub(crate) fn cpupri_level(prio: u8) -> usize {
    if prio >= RT_PRIO_NONE {
        0
    } else {
        (RT_PRIO_NONE - prio) as usize
    }
}

/// The root domain's RT view of its CPUs (`struct cpupri` and `rd->rto_mask`).
#[derive(Clone, Debug)]
pub struct CpuPri {
    /// The CPUs at each level.
    pub masks: Vec<CpuMask>,
    /// Each CPU's level.
    pub level: Vec<u8>,
    /// CPUs with RT tasks waiting to be pushed (`rto_mask`).
    pub rto_mask: CpuMask,
}

impl CpuPri {
    /// Every CPU at level 0 (`cpupri_init()` and the CPUs coming online).
    pub fn new(nr_cpus: usize) -> Self {
        let mut masks = vec![CpuMask::default(); CPUPRI_LEVELS];
        for c in 0..nr_cpus {
            masks[0].set(c as CpuId);
        }
        CpuPri {
            masks,
            level: vec![0; nr_cpus],
            rto_mask: CpuMask::default(),
        }
    }
}

impl Sim {
    // ----- the core's class dispatch ------------------------------------------

    /// Task `t` is in the fair class (neither RT nor deadline).
    #[inline]
    pub(crate) fn task_is_fair(&self, t: TaskId) -> bool {
        !self.rt_dl_in_use
            || (self.tasks[t as usize].rt.is_none() && self.tasks[t as usize].dl.is_none())
    }

    /// Task `t` is in the RT class. No task is before the first one enters
    /// it ([`Sim::rt_dl_in_use`]), which keeps the fair-only hot paths off the
    /// task's RT state.
    #[inline]
    pub(crate) fn task_is_rt(&self, t: TaskId) -> bool {
        self.rt_dl_in_use && self.tasks[t as usize].is_rt()
    }

    /// Puts a task on `cpu`'s runqueue of its class (mirrors enqueue_task()).
    pub(crate) fn enqueue_task(&mut self, cpu: CpuId, t: TaskId, kind: EnqueueKind) {
        if self.task_is_dl(t) {
            let how = match kind {
                EnqueueKind::Restore => crate::dl::DlEnqueue::Restore,
                EnqueueKind::Migrated => crate::dl::DlEnqueue::Migrating,
                EnqueueKind::New | EnqueueKind::Wakeup => crate::dl::DlEnqueue::Wakeup,
            };
            self.enqueue_task_dl(cpu, t, how);
        } else if self.task_is_rt(t) {
            self.enqueue_task_rt(cpu, t, false);
        } else {
            self.enqueue_task_fair(cpu, t, kind);
        }
    }

    /// Takes a task off `cpu`'s runqueue of its class (mirrors
    /// dequeue_task()); false when the fair class delays the dequeue.
    pub(crate) fn dequeue_task(&mut self, cpu: CpuId, t: TaskId, sleep: bool) -> bool {
        if self.task_is_dl(t) {
            self.dequeue_task_dl(cpu, t);
            true
        } else if self.task_is_rt(t) {
            self.dequeue_task_rt(cpu, t);
            true
        } else {
            self.dequeue_task_fair(cpu, t, sleep)
        }
    }

    /// The next task of `cpu` by class (mirrors __pick_next_task()): the
    /// deadline entity of earliest deadline (a task, or the fair server
    /// while it runs, which picks a fair task), then the best RT task, then
    /// fair's pick.
    pub(crate) fn pick_next_task(&mut self, cpu: CpuId) -> Option<TaskId> {
        while self.rt_dl_in_use {
            match self.rqs[cpu as usize].dl.earliest() {
                None => break,
                Some((_, crate::dl::SERVER)) => {
                    if let Some(t) = self.pick_next_entity(cpu) {
                        return Some(t);
                    }
                    // __pick_task_dl(): the server found nothing and stops.
                    self.fair_server_stop(cpu);
                }
                Some((_, t)) => return Some(t),
            }
        }
        let rt = &self.rqs[cpu as usize].rt;
        if self.rt_dl_in_use && rt.active != 0 {
            return rt.queues[rt.highest_prio() as usize].front().copied();
        }
        self.pick_next_entity(cpu)
    }

    /// The running task goes back to its class's queue (put_prev_task()).
    pub(crate) fn put_prev_task(&mut self, cpu: CpuId, t: TaskId) {
        if self.task_is_dl(t) {
            self.put_prev_task_dl(cpu, t);
        } else if self.task_is_rt(t) {
            self.put_prev_task_rt(cpu, t);
        } else {
            self.put_prev_entity(cpu, t);
        }
    }

    /// Charges the running task of either class (update_curr()).
    pub(crate) fn update_curr_any(&mut self, cpu: CpuId) {
        self.update_curr(cpu);
        if self.rt_dl_in_use {
            self.update_curr_rt(cpu);
            self.update_curr_dl(cpu);
        }
    }

    /// Preemption check for a task queued on `cpu` (mirrors the core's
    /// wakeup_preempt()): a wakee of a higher class reschedules at once,
    /// one of a lower class never, one of the same class asks its class.
    pub(crate) fn wakeup_preempt(
        &mut self,
        cpu: CpuId,
        wakee: TaskId,
        from: CpuId,
        wake_flags: u32,
    ) {
        let Some(curr) = self.rqs[cpu as usize].curr else {
            self.resched_cpu(cpu, from);
            return;
        };
        if !self.rt_dl_in_use {
            self.wakeup_preempt_fair(cpu, wakee, from, wake_flags);
            return;
        }
        match (self.task_is_dl(wakee), self.task_is_dl(curr)) {
            (true, true) => return self.wakeup_preempt_dl(cpu, wakee, from),
            // A deadline wakee over RT or fair work (while the fair server
            // runs a fair task too: the pick then compares deadlines).
            (true, false) => {
                self.update_curr_any(cpu);
                self.resched_cpu(cpu, from);
                return;
            }
            (false, true) => return,
            (false, false) => {}
        }
        match (self.tasks[wakee as usize].rt, self.tasks[curr as usize].rt) {
            (None, None) => self.wakeup_preempt_fair(cpu, wakee, from, wake_flags),
            // Fair under RT.
            (None, Some(_)) => {}
            // RT over fair: reschedule (while the fair server runs, its pick
            // still goes to a fair task).
            (Some(_), None) => {
                self.update_curr(cpu);
                self.resched_cpu(cpu, from);
            }
            (Some(w), Some(c)) => {
                if w.prio < c.prio {
                    self.update_curr_rt(cpu);
                    self.resched_cpu(cpu, from);
                } else if w.prio == c.prio && !self.rqs[cpu as usize].need_resched {
                    self.check_preempt_equal_prio(cpu, wakee, from);
                }
            }
        }
    }

    /// After a wakeup or fork put `t` on `cpu` (mirrors task_woken_rt()): an
    /// RT wakee that has to wait behind the RT or deadline task running there is pushed
    /// on to a CPU of lower priority at once.
    pub(crate) fn task_woken(&mut self, cpu: CpuId, t: TaskId) {
        if !self.rt_dl_in_use {
            return;
        }
        if self.task_is_dl(t) {
            self.task_woken_dl(cpu, t);
            return;
        }
        let Some(w) = self.tasks[t as usize].rt else {
            return;
        };
        let rq = &self.rqs[cpu as usize];
        let Some(curr) = rq.curr else {
            return;
        };
        if curr == t || rq.need_resched || self.tasks[t as usize].affinity.weight() < 2 {
            return;
        }
        // Behind a deadline task (priority -1) or an RT one of its
        // priority or better.
        let curr_prio = if self.task_is_dl(curr) {
            -1
        } else if let Some(c) = self.tasks[curr as usize].rt {
            i32::from(c.prio)
        } else {
            return;
        };
        if self.tasks[curr as usize].affinity.weight() < 2 || curr_prio <= i32::from(w.prio) {
            self.push_rt_tasks(cpu);
        }
    }

    // ----- the RT runqueue --------------------------------------------------------

    /// Queues an RT task on `cpu` at the tail of its priority's list, or at
    /// the head (mirrors enqueue_task_rt() → enqueue_rt_entity()); a queued
    /// task that does not run and may run elsewhere becomes pushable.
    pub(crate) fn enqueue_task_rt(&mut self, cpu: CpuId, t: TaskId, head: bool) {
        let rt = self.tasks[t as usize].rt.expect("an RT task");
        debug_assert!(!rt.on_rq && !self.tasks[t as usize].se.on_rq);
        let was_running = self.rqs[cpu as usize].nr_running();
        let before = self.rqs[cpu as usize].rt.highest_prio();
        self.tasks[t as usize].cpu = cpu;
        if let Some(r) = self.tasks[t as usize].rt.as_mut() {
            r.on_rq = true;
        }
        let rq = &mut self.rqs[cpu as usize].rt;
        if rq.queues.is_empty() {
            rq.queues = vec![std::collections::VecDeque::new(); RT_PRIO_NONE as usize];
        }
        let list = &mut rq.queues[rt.prio as usize];
        if head {
            list.push_front(t);
        } else {
            list.push_back(t);
        }
        rq.active |= 1u128 << rt.prio;
        rq.nr_running += 1;
        rq.rr_nr_running += u32::from(rt.rr);
        // add_nr_running(): a second task overloads the root domain.
        if was_running < 2 && was_running + 1 >= 2 {
            self.rd_overloaded = true;
        }
        if rt.prio < before {
            self.cpupri_set_level(cpu, cpupri_level(rt.prio));
        }
        if self.rqs[cpu as usize].curr != Some(t) && self.tasks[t as usize].affinity.weight() > 1 {
            self.enqueue_pushable(cpu, t);
        }
    }

    /// Takes an RT task off `cpu`'s lists (mirrors dequeue_task_rt(); for
    /// the running task also put_prev_task_rt()'s update of the RT
    /// utilisation, which the kernel makes as the task switches out).
    pub(crate) fn dequeue_task_rt(&mut self, cpu: CpuId, t: TaskId) {
        let before = self.rqs[cpu as usize].rt.highest_prio();
        self.update_curr_rt(cpu);
        if self.rqs[cpu as usize].rt.curr == Some(t) {
            self.update_rt_rq_load_avg(cpu, true);
        }
        let rt = self.tasks[t as usize].rt.expect("an RT task");
        debug_assert!(rt.on_rq);
        let rq = &mut self.rqs[cpu as usize].rt;
        let list = &mut rq.queues[rt.prio as usize];
        if let Some(i) = list.iter().position(|&x| x == t) {
            list.remove(i);
        }
        if list.is_empty() {
            rq.active &= !(1u128 << rt.prio);
        }
        rq.nr_running -= 1;
        rq.rr_nr_running -= u32::from(rt.rr);
        if rq.curr == Some(t) {
            rq.curr = None;
        }
        if let Some(r) = self.tasks[t as usize].rt.as_mut() {
            r.on_rq = false;
        }
        self.dequeue_pushable(cpu, t);
        // dec_rt_prio_smp(): the level follows a change of the best priority.
        let after = self.rqs[cpu as usize].rt.highest_prio();
        if after != before {
            self.cpupri_set_level(cpu, cpupri_level(after));
        }
    }

    /// Charges the running RT task for the time since it was last charged
    /// (mirrors update_curr_rt() → update_curr_common()).
    pub(crate) fn update_curr_rt(&mut self, cpu: CpuId) {
        if let Some(c) = self.rqs[cpu as usize].rt.curr {
            self.update_se(c);
        }
    }

    /// Updates `cpu`'s RT utilisation signal (mirrors update_rt_rq_load_avg()):
    /// PELT of a binary signal, 1 while an RT task runs, on the runqueue's
    /// PELT clock.
    pub(crate) fn update_rt_rq_load_avg(&mut self, cpu: CpuId, running: bool) {
        let rq = &mut self.rqs[cpu as usize];
        rq.avg_rt.update_running(rq.clock_pelt, running);
    }

    /// The capacity left to the fair class on `cpu` (mirrors
    /// scale_rt_capacity(); no IRQ or thermal pressure): its own less its
    /// RT and deadline utilisation, at least 1.
    pub(crate) fn scale_rt_capacity(&self, cpu: CpuId) -> u64 {
        let max = self.kcap[cpu as usize];
        let rq = &self.rqs[cpu as usize];
        let used = rq.avg_rt.util_avg + rq.avg_dl.util_avg;
        if used >= max {
            1
        } else {
            (max - used).max(1)
        }
    }

    /// Refreshes `cpu`'s capacity as its base domain's local group
    /// capacity is updated (mirrors update_cpu_capacity(), from
    /// update_group_capacity() at the lowest level); `interval_j` is that
    /// domain's balance interval in jiffies, after which a newly idle
    /// balance updates it again.
    pub(crate) fn update_cpu_capacity(&mut self, cpu: CpuId, interval_j: u64) {
        let cap = self.scale_rt_capacity(cpu);
        let j = self.jiffies();
        let rq = &mut self.rqs[cpu as usize];
        rq.cpu_capacity = cap;
        rq.capacity_next_update_j = j + interval_j;
    }

    /// The running RT task stops running but stays queued, keeping its
    /// place at the head of its list (mirrors put_prev_task_rt()); it may
    /// now be pushed elsewhere.
    pub(crate) fn put_prev_task_rt(&mut self, cpu: CpuId, t: TaskId) {
        self.update_curr_rt(cpu);
        self.update_rt_rq_load_avg(cpu, true);
        if self.rqs[cpu as usize].rt.curr == Some(t) {
            self.rqs[cpu as usize].rt.curr = None;
        }
        let tk = &self.tasks[t as usize];
        if tk.rt.is_some_and(|r| r.on_rq) && tk.affinity.weight() > 1 {
            self.enqueue_pushable(cpu, t);
        }
    }

    /// `t` becomes the running RT task of `cpu` (mirrors set_next_task_rt()):
    /// after a task of another class (or idle), the RT utilisation signal
    /// first accounts the time no RT task ran.
    pub(crate) fn set_next_task_rt(&mut self, cpu: CpuId, t: TaskId) {
        if self.rqs[cpu as usize].rt.curr.is_none() {
            self.update_rt_rq_load_avg(cpu, false);
        }
        self.dequeue_pushable(cpu, t);
        self.rqs[cpu as usize].rt.curr = Some(t);
        self.start_exec(t);
    }

    /// The tick of a CPU running an RT task (mirrors task_tick_rt()):
    /// SCHED_RR's slice runs down by a tick; when it is spent it is refilled,
    /// and the task goes to the tail of its list if another task shares its
    /// priority. SCHED_FIFO is never preempted by the tick.
    pub(crate) fn task_tick_rt(&mut self, cpu: CpuId, t: TaskId) {
        self.update_curr_rt(cpu);
        self.update_rt_rq_load_avg(cpu, true);
        let slice_ticks = self.rr_timeslice_ticks();
        let Some(rt) = self.tasks[t as usize].rt.as_mut() else {
            return;
        };
        if !rt.rr {
            return;
        }
        rt.time_slice_ticks = rt.time_slice_ticks.saturating_sub(1);
        if rt.time_slice_ticks > 0 {
            return;
        }
        rt.time_slice_ticks = slice_ticks;
        let prio = rt.prio as usize;
        if self.rqs[cpu as usize].rt.queues[prio].len() > 1 {
            self.requeue_task_rt(cpu, t, false);
            self.counters.rt_rr_rotations += 1;
            self.resched_cpu(cpu, cpu);
        }
    }

    /// Moves queued RT task `t` to the head or the tail of its priority's
    /// list (mirrors requeue_task_rt()).
    fn requeue_task_rt(&mut self, cpu: CpuId, t: TaskId, head: bool) {
        let Some(rt) = self.tasks[t as usize].rt else {
            return;
        };
        let list = &mut self.rqs[cpu as usize].rt.queues[rt.prio as usize];
        if let Some(i) = list.iter().position(|&x| x == t) {
            list.remove(i);
            if head {
                list.push_front(t);
            } else {
                list.push_back(t);
            }
        }
    }

    /// SCHED_RR's slice in ticks (`sched_rr_timeslice`).
    pub(crate) fn rr_timeslice_ticks(&self) -> u32 {
        (RR_TIMESLICE_NS / self.tick_ns).max(1) as u32
    }

    /// sched_yield() of a running RT task (mirrors yield_task_rt()): to the
    /// tail of its list, so a task of its priority runs next.
    pub(crate) fn yield_task_rt(&mut self, cpu: CpuId, t: TaskId) {
        self.requeue_task_rt(cpu, t, false);
    }

    /// A queued RT task that does not run joins the pushable list, ordered
    /// by priority then arrival (mirrors enqueue_pushable_task()); the CPU
    /// joins the root domain's overload mask.
    fn enqueue_pushable(&mut self, cpu: CpuId, t: TaskId) {
        let prio = self.tasks[t as usize].rt.expect("an RT task").prio;
        let tasks = &self.tasks;
        let list = &mut self.rqs[cpu as usize].rt.pushable;
        if list.contains(&t) {
            return;
        }
        let at = list
            .iter()
            .position(|&x| tasks[x as usize].rt.is_some_and(|r| r.prio > prio))
            .unwrap_or(list.len());
        list.insert(at, t);
        self.cpupri.rto_mask.set(cpu);
    }

    /// Mirrors dequeue_pushable_task().
    fn dequeue_pushable(&mut self, cpu: CpuId, t: TaskId) {
        let list = &mut self.rqs[cpu as usize].rt.pushable;
        if let Some(i) = list.iter().position(|&x| x == t) {
            list.remove(i);
        }
        if list.is_empty() {
            self.cpupri.rto_mask.clear(cpu);
        }
    }

    /// `highest_prio.next`: the best priority among the pushable tasks.
    fn highest_prio_next(&self, cpu: CpuId) -> u8 {
        self.rqs[cpu as usize]
            .rt
            .pushable
            .first()
            .and_then(|&t| self.tasks[t as usize].rt)
            .map_or(RT_PRIO_NONE, |r| r.prio)
    }

    /// Moves `cpu` to cpupri level `level` (mirrors cpupri_set()): the
    /// RT class sets its best priority's level when that changes, the
    /// deadline class `CPUPRI_HIGHER` while it has work there (and an RT
    /// enqueue may overwrite that, as in the kernel).
    pub(crate) fn cpupri_set_level(&mut self, cpu: CpuId, level: usize) {
        let old = self.cpupri.level[cpu as usize] as usize;
        if old != level {
            self.cpupri.masks[old].clear(cpu);
            self.cpupri.masks[level].set(cpu);
            self.cpupri.level[cpu as usize] = level as u8;
        }
    }

    /// The kernel priority of what `cpu` runs: the RT task's, 120 + nice
    /// for a fair one, 140 (below every task) when idle.
    fn curr_prio(&self, cpu: CpuId) -> i32 {
        self.rqs[cpu as usize]
            .curr
            .map_or(140, |c| self.tasks[c as usize].kernel_prio())
    }

    // ----- placement: cpupri, select_task_rq_rt(), push, pull ----------------------

    /// The CPUs `t` may run on at the lowest cpupri level below its own
    /// priority, if any (mirrors cpupri_find_fitness(); with `fitness`,
    /// CPUs where it does not fit are left out first, and without any fit
    /// the search is made again ignoring fitness: priority beats capacity).
    pub(crate) fn cpupri_find(&self, t: TaskId, fitness: bool) -> Option<CpuMask> {
        let tk = &self.tasks[t as usize];
        let prio = tk.rt.map_or(RT_PRIO_NONE, |r| r.prio);
        let task_level = cpupri_level(prio);
        for idx in 0..task_level {
            let m = self.cpupri.masks[idx].and(&tk.affinity);
            if m.is_empty() {
                continue;
            }
            if fitness {
                let mut fit = m;
                for c in m.iter() {
                    if !self.rt_task_fits_capacity(t, c) {
                        fit.clear(c);
                    }
                }
                if fit.is_empty() {
                    continue;
                }
                return Some(fit);
            }
            return Some(m);
        }
        if fitness {
            return self.cpupri_find(t, false);
        }
        None
    }

    /// Whether RT task `t` fits `cpu`'s capacity (mirrors
    /// rt_task_fits_capacity()): always on symmetric machines; otherwise
    /// the CPU's capacity must reach its minimum clamp (1024 for RT tasks
    /// by default, `sched_util_clamp_min_rt_default`), capped by its maximum.
    pub(crate) fn rt_task_fits_capacity(&self, t: TaskId, cpu: CpuId) -> bool {
        if !self.asym_cpucap_active() {
            return true;
        }
        let tk = &self.tasks[t as usize];
        let need = u64::from(tk.uclamp_min.min(tk.uclamp_max));
        self.kcap[cpu as usize] >= need
    }

    /// A CPU of lowest RT priority for `t`, as close to its previous CPU as
    /// the domains allow (mirrors find_lowest_rq()): its previous CPU if
    /// that is one; else, walking up its previous CPU's domains that do
    /// affine wakeups, `this_cpu` (the CPU running this code) if it is one
    /// and in the domain, or the next one of the domain after the last this
    /// CPU picked (cpumask_any_and_distribute()).
    pub(crate) fn find_lowest_rq(&mut self, t: TaskId, this_cpu: CpuId) -> Option<CpuId> {
        if self.tasks[t as usize].affinity.weight() == 1 {
            return None;
        }
        let lowest = self.cpupri_find(t, self.asym_cpucap_active())?;
        Some(self.affine_pick(t, this_cpu, &lowest))
    }

    /// Where a waking or new RT task goes (mirrors select_task_rq_rt()): it
    /// stays on its CPU unless an RT task of its priority or better runs
    /// there (or one that cannot move) or, on asymmetric machines, it does
    /// not fit; then to a CPU of lower RT priority, if one has a lower best
    /// priority than the task.
    pub(crate) fn select_task_rq_rt(
        &mut self,
        t: TaskId,
        cpu: CpuId,
        this_cpu: CpuId,
        wake_flags: &mut u32,
    ) -> CpuId {
        *wake_flags |= WF_RQ_SELECTED;
        if *wake_flags & (WF_TTWU | WF_FORK) == 0 {
            return cpu;
        }
        let prio = self.tasks[t as usize].rt.expect("an RT task").prio;
        let test = self.rqs[cpu as usize].curr.is_some_and(|c| {
            let ct = &self.tasks[c as usize];
            ct.rt
                .is_some_and(|r| ct.affinity.weight() < 2 || r.prio <= prio)
        });
        if !test && self.rt_task_fits_capacity(t, cpu) {
            return cpu;
        }
        let Some(target) = self.find_lowest_rq(t, this_cpu) else {
            return cpu;
        };
        if !test && !self.rt_task_fits_capacity(t, target) {
            return cpu;
        }
        if prio < self.rqs[target as usize].rt.highest_prio() {
            target
        } else {
            cpu
        }
    }

    /// A woken RT task of the running RT task's priority (mirrors
    /// check_preempt_equal_prio()): it preempts only if the running task
    /// could go elsewhere and the wakee could not.
    fn check_preempt_equal_prio(&mut self, cpu: CpuId, t: TaskId, from: CpuId) {
        let Some(curr) = self.rqs[cpu as usize].curr else {
            return;
        };
        if self.tasks[curr as usize].affinity.weight() == 1
            || self.cpupri_find(curr, false).is_none()
        {
            return;
        }
        if self.tasks[t as usize].affinity.weight() != 1 && self.cpupri_find(t, false).is_some() {
            return;
        }
        // The wakee runs next.
        self.requeue_task_rt(cpu, t, true);
        self.resched_cpu(cpu, from);
    }

    /// Pushes waiting RT tasks of `cpu` to CPUs of lower priority while
    /// there are such moves (mirrors push_rt_tasks()).
    pub(crate) fn push_rt_tasks(&mut self, cpu: CpuId) {
        // Each push takes a task off this CPU: the loop ends.
        while self.push_rt_task(cpu) {}
    }

    /// Moves `cpu`'s best pushable RT task to a CPU where it would run
    /// (mirrors push_rt_task() with find_lock_lowest_rq()); a task better
    /// than the running one reschedules here instead. True when one moved.
    fn push_rt_task(&mut self, cpu: CpuId) -> bool {
        let Some(&next) = self.rqs[cpu as usize].rt.pushable.first() else {
            return false;
        };
        let prio = self.tasks[next as usize].rt.expect("an RT task").prio;
        if i32::from(prio) < self.curr_prio(cpu) {
            self.resched_cpu(cpu, cpu);
            return false;
        }
        let Some(lowest) = self.find_lowest_rq(next, cpu) else {
            return false;
        };
        if lowest == cpu || self.rqs[lowest as usize].rt.highest_prio() <= prio {
            return false;
        }
        self.move_queued_rt_task(next, cpu, lowest);
        self.counters.rt_pushes += 1;
        self.resched_cpu(lowest, cpu);
        true
    }

    /// Takes queued RT tasks that wait elsewhere and would run here (mirrors
    /// pull_rt_task()): from each overloaded CPU, its best pushable task
    /// allowed here if it beats this CPU's best RT priority and is not about
    /// to preempt its own CPU's running task. Called as `cpu` schedules
    /// after an RT task left it.
    pub(crate) fn pull_rt_task(&mut self, cpu: CpuId) {
        let rto = self.cpupri.rto_mask;
        let n = rto.weight();
        if n == 0 || (n == 1 && rto.test(cpu)) {
            return;
        }
        for src in rto.iter() {
            if src == cpu {
                continue;
            }
            let here = self.rqs[cpu as usize].rt.highest_prio();
            if self.highest_prio_next(src) >= here {
                continue;
            }
            let p = self.rqs[src as usize]
                .rt
                .pushable
                .iter()
                .copied()
                .find(|&p| self.tasks[p as usize].affinity.test(cpu));
            let Some(p) = p else {
                continue;
            };
            let prio = self.tasks[p as usize].rt.expect("an RT task").prio;
            if prio >= here || i32::from(prio) < self.curr_prio(src) {
                continue;
            }
            self.update_rq_clock(src);
            self.move_queued_rt_task(p, src, cpu);
            self.counters.rt_pulls += 1;
        }
    }

    /// Moves a queued RT task that is not running from `src` to the tail of
    /// its list on `dst` (mirrors move_queued_task_locked()).
    fn move_queued_rt_task(&mut self, t: TaskId, src: CpuId, dst: CpuId) {
        self.dequeue_task_rt(src, t);
        self.set_task_cpu(t, src, dst, true);
        self.update_rq_clock(dst);
        self.enqueue_task_rt(dst, t, false);
    }

    /// `cpu` schedules after running `prev` (mirrors prev_balance()): the
    /// classes from `prev`'s down to RT balance in turn until one has work
    /// to run here: after a deadline task, balance_dl(); after a deadline
    /// or RT task, balance_rt().
    pub(crate) fn prev_balance(&mut self, cpu: CpuId, prev: TaskId) {
        if !self.rt_dl_in_use {
            return;
        }
        if self.tasks[prev as usize].dl.is_some() && self.balance_dl(cpu, prev) {
            return;
        }
        self.balance_rt(cpu, prev);
    }

    /// `cpu` schedules after running RT or deadline task `prev` (mirrors
    /// balance_rt()): if its best RT priority is now worse than `prev`'s
    /// (a deadline task's, -1, is above them all), it pulls.
    fn balance_rt(&mut self, cpu: CpuId, prev: TaskId) {
        let tk = &self.tasks[prev as usize];
        let prio = if tk.dl.is_some() {
            -1
        } else if let Some(rt) = tk.rt {
            i32::from(rt.prio)
        } else {
            return;
        };
        // A task still queued keeps the best priority at or above its own.
        if i32::from(self.rqs[cpu as usize].rt.highest_prio()) > prio {
            self.pull_rt_task(cpu);
        }
    }

    /// The first task enters the RT class: from now on the fair servers
    /// keep their state, starting on the CPUs that have fair tasks queued.
    pub(crate) fn rt_class_used(&mut self) {
        if self.rt_dl_in_use {
            return;
        }
        self.rt_dl_in_use = true;
        for c in 0..self.rqs.len() {
            if self.rqs[c].cfs.nr_queued > 0 {
                self.fair_server_start(c as CpuId);
            }
        }
    }

    // ----- sched_setattr() across classes --------------------------------------------

    /// `t`, out of the RT or deadline class, takes fair `policy` with its
    /// nice value and requested slice, and its load joins `cpu`'s fair
    /// runqueue again (__setparam_fair(), switched_to_fair()).
    pub(crate) fn become_fair(
        &mut self,
        cpu: CpuId,
        t: TaskId,
        policy: SchedPolicy,
        nice: Option<i8>,
        runtime_ns: Option<u64>,
    ) {
        self.setparam_fair(t, policy, nice, runtime_ns);
        self.attach_entity_load(cpu, t);
    }

    /// A fair `policy`'s parameters, outside the fair class (mirrors
    /// __setparam_fair() and set_load_weight() on a task not queued there).
    pub(crate) fn setparam_fair(
        &mut self,
        t: TaskId,
        policy: SchedPolicy,
        nice: Option<i8>,
        runtime_ns: Option<u64>,
    ) {
        let tk = &mut self.tasks[t as usize];
        tk.idle_policy = policy == SchedPolicy::Idle;
        tk.batch_policy = policy == SchedPolicy::Batch;
        if let Some(n) = nice {
            tk.nice = n;
        }
        tk.se.weight = crate::fair::policy_weight(tk.idle_policy, tk.nice);
        if let Some(ns) = runtime_ns {
            let (custom, slice) = crate::fair::requested_slice(ns, self.base_slice_ns);
            (tk.se.custom_slice, tk.se.slice) = (custom, slice);
            self.custom_slices |= custom;
        }
    }

    /// The clamps after a change of class (mirrors __setscheduler_uclamp()):
    /// a minimum the user never set takes its class's default (1024 for an
    /// RT task, 0 for a fair one).
    pub(crate) fn setscheduler_uclamp(&mut self, t: TaskId, umin: u16, umax: u16) {
        let tk = &mut self.tasks[t as usize];
        tk.uclamp_min = match (tk.uclamp_min_user, tk.rt.is_some()) {
            (true, _) => umin,
            (false, true) => 1024,
            (false, false) => 0,
        };
        tk.uclamp_max = umax;
    }

    /// `t` starts running: its execution is charged from now
    /// (set_next_task_*()'s `exec_start`).
    pub(crate) fn start_exec(&mut self, t: TaskId) {
        let now = self.now;
        let tk = &mut self.tasks[t as usize];
        tk.stats.cpu_settled_ns = 0;
        let se = &mut tk.se;
        se.exec_start = now;
        se.prev_sum_exec_runtime = se.sum_exec_runtime;
    }

    /// sched_setattr() of `t` on itself (mirrors __sched_setscheduler()):
    /// within the fair class [`Sim::sched_setattr_fair`]; to, from or
    /// within the RT class the task leaves its runqueue, changes class or
    /// priority and is queued again, and the classes' switched_from/to and
    /// prio_changed hooks move load, preempt, push and pull. A task that
    /// owns PI mutexes keeps the priority its waiters lend it (pi.rs).
    pub(crate) fn sched_setattr(&mut self, t: TaskId, a: &Attrs) {
        let policy = a.policy;
        let to_dl = policy.is_deadline() || self.dl_policy(t);
        if !to_dl && (self.pi_boosted(t) || self.pi_lent(t)) {
            self.sched_setattr_pi(t, a);
            return;
        }
        if policy.is_deadline() && self.pi_boosted(t) && self.tasks[t as usize].dl.is_some() {
            // Boosted into the deadline class, it takes deadline parameters
            // of its own in one change and goes on inheriting until its
            // waiters change (__setscheduler_dl_pi() leaves `pi_se` to a
            // deadline policy).
            self.sched_setattr_unboosted(t, a);
            if self.dl_policy(t) {
                self.pi_own_dl_policy(t);
            }
            return;
        }
        if self.pi_boosted(t) {
            self.pi_unboost_for_setattr(t);
        }
        self.sched_setattr_unboosted(t, a);
        // Out of the deadline class, a priority its waiters lend applies.
        if self.pi_owns_any(t) {
            self.pi_setprio_after_setattr(t);
        }
    }

    /// sched_setattr() of a task that runs at its own priority and whose
    /// waiters lend it none (or that moves into or out of SCHED_DEADLINE).
    fn sched_setattr_unboosted(&mut self, t: TaskId, a: &Attrs) {
        let (policy, nice, runtime_ns, uclamp) = a.parts();
        if self.tasks[t as usize].dl.is_some() || policy.is_deadline() {
            if let Err(why) = self.sched_setattr_dl(t, a) {
                let shown = match policy {
                    SchedPolicy::Deadline {
                        runtime_ns,
                        deadline_ns,
                        period_ns,
                    } => format!(
                        "SCHED_DEADLINE, runtime/deadline/period {}/{}/{} µs",
                        runtime_ns as f64 / 1e3,
                        deadline_ns as f64 / 1e3,
                        period_ns as f64 / 1e3
                    ),
                    other => format!("{other:?}"),
                };
                self.workload_exits(t, format!("sched_setattr({shown}) failed with {why}"));
            }
            return;
        }
        let old = self.tasks[t as usize].rt;
        let new_prio = policy.rt_priority();
        if old.is_none() && new_prio.is_none() {
            self.sched_setattr_fair(t, a);
            return;
        }
        // Clamps first: invalid ones fail the call (EINVAL) and change nothing.
        let Some((umin, umax)) = self.uclamp_request(t, uclamp) else {
            return;
        };
        let rr = matches!(policy, SchedPolicy::Rr(_));
        if let (Some(o), Some(p)) = (old, new_prio) {
            if o.prio == RT_PRIO_NONE - p {
                // The priority stays: no requeue, the task keeps its place
                // in its list (__sched_setscheduler() drops DEQUEUE_MOVE);
                // only the policy (FIFO or RR) and the clamps change.
                self.set_rr_in_place(t, rr);
                let tk = &mut self.tasks[t as usize];
                (tk.uclamp_min, tk.uclamp_max) = (umin, umax);
                return;
            }
        }
        let new = new_prio.map(|p| RtEntity {
            prio: RT_PRIO_NONE - p,
            rr,
            time_slice_ticks: old.map_or(self.rr_timeslice_ticks(), |o| o.time_slice_ticks),
            on_rq: false,
        });
        self.change_rt_state(
            t,
            new,
            PrioChange::SetAttr {
                policy,
                nice,
                runtime_ns,
                umin,
                umax,
            },
        );
    }

    /// SCHED_FIFO and SCHED_RR share an RT priority: switches `t`'s
    /// policy between them without requeueing it.
    pub(crate) fn set_rr_in_place(&mut self, t: TaskId, rr: bool) {
        let Some(o) = self.tasks[t as usize].rt else {
            return;
        };
        let cpu = self.tasks[t as usize].cpu;
        if o.rr != rr && o.on_rq {
            let rq = &mut self.rqs[cpu as usize].rt;
            rq.rr_nr_running = rq.rr_nr_running + u32::from(rr) - u32::from(o.rr);
        }
        if let Some(e) = self.tasks[t as usize].rt.as_mut() {
            e.rr = rr;
        }
    }

    /// Moves `t` into the RT class at `new`'s priority, within it, or (with
    /// `new` `None`) back to the fair class (the sched_change guard of
    /// __sched_setscheduler() and rt_mutex_setprio(), then
    /// check_class_changed()): the task leaves its runqueue, changes, is
    /// queued again, and the classes' switched_from/to and prio_changed
    /// hooks move load, preempt, push and pull.
    pub(crate) fn change_rt_state(&mut self, t: TaskId, new: Option<RtEntity>, how: PrioChange) {
        let old = self.tasks[t as usize].rt;
        let cpu = self.tasks[t as usize].cpu;
        let running = self.rqs[cpu as usize].curr == Some(t);
        self.update_rq_clock(cpu);
        // switching_from_fair(): a delayed task completes its dequeue first.
        if old.is_none() && self.tasks[t as usize].se.sched_delayed {
            self.dequeue_task(cpu, t, true);
        }
        let queued = match old {
            Some(r) => r.on_rq,
            None => self.tasks[t as usize].se.on_rq,
        };
        if queued {
            self.dequeue_task(cpu, t, false);
        }
        // (A pending HRTICK stays armed: sched_change_begin()/end() leave
        // it, and it fires into the new class's task_tick().)
        if running && old.is_some() {
            self.put_prev_task_rt(cpu, t);
        }
        match (old, new) {
            (None, Some(n)) => {
                self.rt_class_used();
                // switched_from_fair(): the task's load leaves the fair runqueue.
                self.detach_entity_load(cpu, t);
                let tk = &mut self.tasks[t as usize];
                tk.rt = Some(n);
                if let PrioChange::SetAttr { .. } = how {
                    tk.idle_policy = false;
                    tk.batch_policy = false;
                }
            }
            (Some(_), None) => {
                self.tasks[t as usize].rt = None;
                match how {
                    PrioChange::SetAttr {
                        policy,
                        nice,
                        runtime_ns,
                        ..
                    } => self.become_fair(cpu, t, policy, nice, runtime_ns),
                    // switched_to_fair() alone: the policy never changed.
                    PrioChange::Pi => self.attach_entity_load(cpu, t),
                }
            }
            (Some(_), Some(n)) => self.tasks[t as usize].rt = Some(n),
            (None, None) => {}
        }
        if let PrioChange::SetAttr { umin, umax, .. } = how {
            self.setscheduler_uclamp(t, umin, umax);
        }
        let new = self.tasks[t as usize].rt;
        // ENQUEUE_HEAD when an RT priority was lowered (a larger number).
        let head = matches!((old, new), (Some(o), Some(n)) if n.prio > o.prio);
        if queued {
            match new {
                Some(_) => self.enqueue_task_rt(cpu, t, head),
                None => self.enqueue_task_fair(cpu, t, EnqueueKind::Restore),
            }
        }
        if running {
            match new {
                Some(_) => self.set_next_task_rt(cpu, t),
                None => self.set_next_entity(cpu, t),
            }
        }
        match (old, new) {
            // A running task whose class went up reschedules
            // (sched_change_end()'s wakeup_preempt()), which matters when a
            // deadline entity is queued (the fair server's pick comes first);
            // otherwise the pick is the task again, and no event is spent.
            (None, Some(_)) if running && !self.rqs[cpu as usize].dl.tree.is_empty() => {
                self.resched_cpu(cpu, cpu);
            }
            // switched_to_rt(): a queued task that does not run is pushed if
            // the CPU is overloaded, and preempts if it beats the running one.
            (None, Some(n)) if !running && queued => {
                if self.rqs[cpu as usize].rt.overloaded() {
                    self.push_rt_tasks(cpu);
                }
                if self.tasks[t as usize].cpu == cpu && i32::from(n.prio) < self.curr_prio(cpu) {
                    self.resched_cpu(cpu, cpu);
                }
            }
            // The class went down: reschedule; switched_from_rt() pulls
            // when no RT task is left here.
            (Some(_), None) => {
                if running {
                    self.resched_cpu(cpu, cpu);
                } else if queued {
                    self.wakeup_preempt(cpu, t, cpu, 0);
                }
                if self.rqs[cpu as usize].rt.nr_running == 0 {
                    self.pull_rt_task(cpu);
                }
            }
            // prio_changed_rt().
            (Some(o), Some(n)) if queued => {
                if running {
                    if n.prio > o.prio {
                        self.pull_rt_task(cpu);
                    }
                    if n.prio > self.rqs[cpu as usize].rt.highest_prio() {
                        self.resched_cpu(cpu, cpu);
                    }
                } else if i32::from(n.prio) < self.curr_prio(cpu) {
                    self.resched_cpu(cpu, cpu);
                }
            }
            _ => {}
        }
    }
}

/// Who changes a task's class or RT priority.
#[derive(Clone, Copy, Debug)]
pub(crate) enum PrioChange {
    /// sched_setattr(): a new policy, with its fair parameters and clamps.
    SetAttr {
        policy: SchedPolicy,
        nice: Option<i8>,
        runtime_ns: Option<u64>,
        umin: u16,
        umax: u16,
    },
    /// rt_mutex_setprio(): a boost or its end; policy and clamps stay.
    Pi,
}

#[cfg(test)]
#[path = "rt_tests.rs"]
mod tests;
