//! CFS as Linux 3.10 had it, the fair class of the S5 kernels (feature
//! `EEVDF` off).
//!
//! EEVDF (6.6) replaced CFS's pick, placement and preemption rules; the
//! runqueue, the timeline, PELT, the wakeup path and the balancer stay as
//! the rest of the fair class has them (the balancer skips EEVDF's
//! eligibility test and counts the last buddy as cache hot). With `EEVDF`
//! off:
//!
//! - the timeline is ordered by vruntime (each fair entity's `deadline` is
//!   kept equal to its `vruntime`, so the timeline's order is CFS's), and the
//!   pick takes the smallest vruntime, curr included, before the buddies
//!   (skip, last, next) may change it;
//! - `min_vruntime` is each runqueue's monotonic floor; a task's vruntime
//!   is measured against the floor of the CPU it was last queued on
//!   (`SchedEntity::vrt_cpu`) and moves with the floors when it is queued
//!   elsewhere;
//! - a wakeup is placed no further back than half the latency period behind
//!   the floor (GENTLE_FAIR_SLEEPERS), a new task at its parent's vruntime
//!   but no earlier than one virtual slice past the floor (START_DEBIT);
//! - a wakeup preempts when curr's vruntime leads the wakee's by more than
//!   the wakeup granularity; the tick preempts when curr ran its
//!   sched_slice() share of the period, or (after the minimum granularity)
//!   leads the leftmost by more than that share;
//! - there is no lag, no deadline, no slice protection and no delayed
//!   dequeue; HRTICK does nothing (3.10 had it off by default).
//!
//! The knobs are 3.10's defaults with the log scaling ([`crate::tunables::Cfs310`]).

use crate::event::TaskId;
use crate::fair::calc_delta_fair;
use crate::features::Feat;
use crate::sim::{EnqueueKind, Sim};
use schedlab_topo::CpuId;

/// `a` before `b` in vruntime's wrapping order (entity_before()).
fn before(a: u64, b: u64) -> bool {
    (a.wrapping_sub(b) as i64) < 0
}

impl Sim {
    /// The fair class runs 3.10's CFS (feature `EEVDF` off).
    #[inline]
    pub(crate) fn cfs_mode(&self) -> bool {
        !self.feat(Feat::EEVDF)
    }

    /// Raises the runqueue's floor to the smaller of curr's and the
    /// leftmost's vruntime, never lowering it (mirrors 3.10's
    /// update_min_vruntime()). `curr_v` is the vruntime the kernel reads
    /// through `cfs_rq->curr`: curr's, or that of a curr leaving for sleep.
    pub(crate) fn update_min_vruntime_with(&mut self, cpu: CpuId, curr_v: Option<u64>) {
        let cfs = &self.rqs[cpu as usize].cfs;
        let mut v = curr_v.unwrap_or(cfs.min_vruntime);
        if let Some(l) = cfs.timeline.first() {
            let lv = self.tasks[l as usize].se.vruntime;
            if curr_v.is_none() || before(lv, v) {
                v = lv;
            }
        }
        let cfs = &mut self.rqs[cpu as usize].cfs;
        if before(cfs.min_vruntime, v) {
            cfs.min_vruntime = v;
        }
    }

    /// [`Sim::update_min_vruntime_with`] for the runqueue's curr.
    pub(crate) fn update_min_vruntime(&mut self, cpu: CpuId) {
        let curr_v = self.rqs[cpu as usize]
            .cfs
            .curr
            .map(|c| self.tasks[c as usize].se.vruntime);
        self.update_min_vruntime_with(cpu, curr_v);
    }

    /// sched_nr_latency: how many tasks the latency period serves before
    /// it stretches.
    fn sched_nr_latency(&self) -> u64 {
        self.cfs310.nr_latency
    }

    /// `t`'s share of the period on `cpu`'s runqueue, counting `t` there
    /// even when it is not queued yet (mirrors 3.10's sched_slice() with
    /// __sched_period()).
    pub(crate) fn cfs_sched_slice(&self, cpu: CpuId, t: TaskId) -> u64 {
        let cfs = &self.rqs[cpu as usize].cfs;
        let se = &self.tasks[t as usize].se;
        let queued = se.on_rq && self.tasks[t as usize].cpu == cpu;
        let nr = u64::from(cfs.nr_queued) + u64::from(!queued);
        let period = if nr > self.sched_nr_latency() {
            nr * self.cfs310.min_granularity_ns
        } else {
            self.cfs310.latency_ns
        };
        let load = cfs.load_weight + if queued { 0 } else { se.weight };
        (u128::from(period) * u128::from(se.weight) / u128::from(load.max(1))) as u64
    }

    /// Whether `se` is far enough behind `curr` to preempt it: 1 when
    /// curr's vruntime leads by more than the wakeup granularity (in `se`'s
    /// weight), 0 when it leads by less, -1 when it does not lead (mirrors
    /// wakeup_preempt_entity()).
    pub(crate) fn wakeup_preempt_entity(&self, curr: TaskId, se: TaskId) -> i32 {
        let c = &self.tasks[curr as usize].se;
        let s = &self.tasks[se as usize].se;
        let vdiff = c.vruntime.wrapping_sub(s.vruntime) as i64;
        if vdiff <= 0 {
            return -1;
        }
        let gran = calc_delta_fair(self.cfs310.wakeup_granularity_ns, s.weight);
        i32::from(vdiff as u64 > gran)
    }

    /// The smallest vruntime among curr (when queued) and the timeline;
    /// curr loses a tie, as put_prev_entity() put it back behind equal keys.
    fn cfs_leftmost(&self, curr: Option<TaskId>, first: Option<TaskId>) -> Option<TaskId> {
        match (curr, first) {
            (Some(c), Some(f)) => {
                let (cv, fv) = (
                    self.tasks[c as usize].se.vruntime,
                    self.tasks[f as usize].se.vruntime,
                );
                Some(if before(cv, fv) { c } else { f })
            }
            (c, f) => c.or(f),
        }
    }

    /// The next entity to run (mirrors 3.10's pick_next_entity(), with
    /// curr back in the tree as put_prev_task() leaves it): the leftmost,
    /// unless it yielded and the second is within the wakeup granularity of
    /// it; then the last buddy and the next buddy, each if it is within the
    /// granularity of the leftmost.
    pub(crate) fn pick_cfs(&self, cpu: CpuId) -> Option<TaskId> {
        let cfs = &self.rqs[cpu as usize].cfs;
        let curr = cfs.curr.filter(|&c| self.tasks[c as usize].se.on_rq);
        let first = cfs.timeline.first();
        let left = self.cfs_leftmost(curr, first)?;
        let mut se = left;
        if cfs.skip == Some(left) {
            let second = if Some(left) == curr {
                first
            } else {
                let next = cfs
                    .timeline
                    .first_n(self.run_nodes.as_slice(), 2)
                    .get(1)
                    .copied();
                self.cfs_leftmost(curr, next)
            };
            if let Some(s) = second {
                if self.wakeup_preempt_entity(s, left) < 1 {
                    se = s;
                }
            }
        }
        for buddy in [cfs.last, cfs.next].into_iter().flatten() {
            if self.wakeup_preempt_entity(buddy, left) < 1 {
                se = buddy;
            }
        }
        Some(se)
    }

    /// Places an entity being queued on `cpu` (mirrors 3.10's
    /// task_fork_fair() and place_entity(), with the min_vruntime shifts of
    /// task_waking_fair() and of a migration's dequeue and enqueue): its
    /// vruntime moves from the floor it was measured against (the one its
    /// non-sleep dequeue saved, else its last CPU's current floor) to
    /// `cpu`'s as it was before the enqueue's update_curr()
    /// (`floor_before`); a new task then starts no earlier than one virtual
    /// slice (of its parent's runqueue) past that floor, and a waking one no
    /// earlier than half the latency period before `cpu`'s floor after the
    /// update.
    pub(crate) fn place_entity_cfs(
        &mut self,
        cpu: CpuId,
        t: TaskId,
        kind: EnqueueKind,
        floor_before: u64,
    ) {
        let se = self.tasks[t as usize].se;
        let base = if se.vrt_floor_saved {
            se.vrt_floor
        } else {
            self.rqs[se.vrt_cpu as usize].cfs.min_vruntime
        };
        let mut rel = se.vruntime.wrapping_sub(base) as i64;
        if kind == EnqueueKind::New {
            // START_DEBIT, on the runqueue the child was forked on
            // (task_fork_fair() placed it there before the child was made
            // relative).
            let slice = self.cfs_sched_slice(se.vrt_cpu, t);
            rel = rel.max(calc_delta_fair(slice, se.weight) as i64);
        }
        let mut v = floor_before.wrapping_add(rel as u64);
        match kind {
            EnqueueKind::Wakeup => {
                // GENTLE_FAIR_SLEEPERS: half the latency period of credit.
                let floor = self.rqs[cpu as usize].cfs.min_vruntime;
                let credit = floor.wrapping_sub(self.cfs310.latency_ns / 2);
                if before(v, credit) {
                    v = credit;
                }
            }
            EnqueueKind::New | EnqueueKind::Migrated | EnqueueKind::Restore => {}
        }
        let se = &mut self.tasks[t as usize].se;
        se.vruntime = v;
        se.deadline = v;
        se.vrt_cpu = cpu;
        se.vrt_floor_saved = false;
    }

    /// The wakeup preemption test of 3.10 (mirrors check_preempt_wakeup()
    /// after its SCHED_IDLE rules): nothing while curr already has a
    /// reschedule due or when the wakee is SCHED_BATCH; otherwise the wakee
    /// preempts when curr's vruntime leads its own by more than the wakeup
    /// granularity, becoming the next buddy, and on a runqueue of
    /// sched_nr_latency tasks or more curr becomes the last buddy
    /// (LAST_BUDDY). The caller has charged curr.
    pub(crate) fn check_preempt_wakeup_cfs(
        &mut self,
        cpu: CpuId,
        curr: TaskId,
        wakee: TaskId,
        from: CpuId,
    ) {
        if self.rqs[cpu as usize].need_resched || self.tasks[wakee as usize].batch_policy {
            return;
        }
        if self.wakeup_preempt_entity(curr, wakee) != 1 {
            return;
        }
        let scale = u64::from(self.rqs[cpu as usize].cfs.nr_queued) >= self.sched_nr_latency();
        let cfs = &mut self.rqs[cpu as usize].cfs;
        cfs.next = Some(wakee);
        let c = &self.tasks[curr as usize];
        if scale && c.se.on_rq && !c.idle_policy {
            cfs.last = Some(curr);
        }
        self.resched_cpu_lazy(cpu, from);
    }

    /// The tick's preemption test of 3.10 (mirrors check_preempt_tick(),
    /// called with others queued): curr is rescheduled once it ran its
    /// sched_slice() since it was picked, or, after the minimum granularity,
    /// when its vruntime leads the leftmost's by more than that slice.
    pub(crate) fn check_preempt_tick(&mut self, cpu: CpuId, curr: TaskId) {
        let ideal_ns = self.cfs_sched_slice(cpu, curr);
        let se = self.tasks[curr as usize].se;
        let ran_ns = se.sum_exec_runtime - se.prev_sum_exec_runtime;
        if ran_ns > ideal_ns {
            self.resched_cpu_lazy(cpu, cpu);
            self.clear_buddies(cpu, curr);
            return;
        }
        if ran_ns < self.cfs310.min_granularity_ns {
            return;
        }
        let Some(left) = self.rqs[cpu as usize].cfs.timeline.first() else {
            return;
        };
        let delta = se
            .vruntime
            .wrapping_sub(self.tasks[left as usize].se.vruntime) as i64;
        if delta > 0 && delta as u64 > ideal_ns {
            self.resched_cpu_lazy(cpu, cpu);
        }
    }
}
