//! The fair class (kernel/sched/fair.c): EEVDF, load tracking, wakeup
//! placement (`wakeup.rs`) and load balancing (`balance.rs`).
//!
//! This module holds the per-runqueue EEVDF mechanics: vruntime accounting,
//! the weighted average V, lag, eligibility, placement, the earliest-eligible-
//! virtual-deadline pick, enqueue/dequeue with delayed dequeue, and the glue
//! between entities and PELT. With feature EEVDF off, the pick, placement
//! and preemption rules are 3.10's CFS instead (`cfs.rs`).

pub mod balance;
pub mod cache_aware;
pub mod cfs;
#[cfg(test)]
mod cfs_tests;
#[cfg(test)]
mod fidelity_tests;
pub mod hmp;
#[cfg(test)]
mod hmp_tests;
#[cfg(test)]
mod hybrid_cls_tests;
pub mod pelt;
pub mod wake_llc;
#[cfg(test)]
mod wake_llc_tests;
pub mod wakeup;

use crate::event::TaskId;
use crate::features::Feat;
use crate::sim::{EnqueueKind, Sim};
use crate::task::TaskState;
use crate::timeline::{ListLink, RunNode};
use schedlab_topo::CpuId;
use schedlab_workload::{Attrs, SchedPolicy};

/// NICE_0_LOAD.
pub const NICE_0_LOAD: u64 = 1024;
/// WEIGHT_IDLEPRIO: the load weight of a SCHED_IDLE task.
pub const WEIGHT_IDLEPRIO: u64 = 3;
/// Capacity scale.
pub const SCHED_CAPACITY_SCALE: u64 = 1024;

/// `delta · NICE_0_LOAD / weight` (mirrors calc_delta_fair()).
pub fn calc_delta_fair(delta: u64, weight: u64) -> u64 {
    if weight == NICE_0_LOAD {
        delta
    } else {
        ((delta as u128 * NICE_0_LOAD as u128) / weight.max(1) as u128) as u64
    }
}

/// fits_capacity(): `util` fits `cap` with a 20% margin (util·1280 < cap·1024).
pub fn fits_capacity(util: u64, cap: u64) -> bool {
    util * 1280 < cap * 1024
}

/// capacity_greater(): `a` is more than ~5% bigger than `b` (a·1024 > b·1078).
pub fn capacity_greater(a: u64, b: u64) -> bool {
    a * 1024 > b * 1078
}

pub use crate::tunables::NORMALIZED_BASE_SLICE_NS;

/// sysctl_sched_base_slice with the default tunables: 0.70 ms scaled by
/// 1 + log2(min(ncpus, 8)) (SCHED_TUNABLESCALING_LOG).
pub fn base_slice_ns(ncpus: usize) -> u64 {
    crate::tunables::Tunables::default().base_slice_ns(ncpus)
}

impl Sim {
    fn key(&self, cpu: CpuId, v: u64) -> i128 {
        v.wrapping_sub(self.rqs[cpu as usize].cfs.zero_vruntime) as i64 as i128
    }

    /// Σ w·key and Σ w including curr (the inputs of avg_vruntime()).
    fn avg_parts(&self, cpu: CpuId) -> (i128, i128) {
        let cfs = &self.rqs[cpu as usize].cfs;
        let (mut avg, mut load) = (cfs.sum_w_key, cfs.sum_weight);
        if let Some(c) = cfs.curr {
            let se = &self.tasks[c as usize].se;
            if se.on_rq {
                let w = se.weight as i128;
                avg += self.key(cpu, se.vruntime) * w;
                load += w;
            }
        }
        (avg, load)
    }

    /// The weighted average vruntime V (mirrors avg_vruntime()).
    pub(crate) fn avg_vruntime(&self, cpu: CpuId) -> u64 {
        let (avg, load) = self.avg_parts(cpu);
        let zero = self.rqs[cpu as usize].cfs.zero_vruntime;
        if load == 0 {
            return match self.rqs[cpu as usize].cfs.curr {
                Some(c) => self.tasks[c as usize].se.vruntime,
                None => zero,
            };
        }
        // Floor division, so V never exceeds the true average; in 64 bits
        // when both fit (the same quotient, a fraction of the cost).
        let q = match (i64::try_from(avg), i64::try_from(load)) {
            (Ok(a), Ok(l)) => i128::from(a.div_euclid(l)),
            _ => avg.div_euclid(load),
        };
        zero.wrapping_add(q as i64 as u64)
    }

    /// v ≤ V, computed without division (mirrors vruntime_eligible()).
    pub(crate) fn vruntime_eligible(&self, cpu: CpuId, v: u64) -> bool {
        let (avg, load) = self.avg_parts(cpu);
        avg >= self.key(cpu, v) * load
    }

    /// Moves the key reference to the current V to keep keys small
    /// (mirrors update_zero_vruntime()).
    fn update_zero_vruntime(&mut self, cpu: CpuId) {
        let v = self.avg_vruntime(cpu);
        let cfs = &mut self.rqs[cpu as usize].cfs;
        let d = v.wrapping_sub(cfs.zero_vruntime) as i64 as i128;
        cfs.sum_w_key -= d * cfs.sum_weight;
        cfs.zero_vruntime = v;
    }

    /// Moves `t`, queued on `cpu`, to the head of the runqueue's `cfs_tasks`
    /// list (the list_move() of the pick).
    fn cfs_tasks_to_head(&mut self, cpu: CpuId, t: TaskId) {
        self.rqs[cpu as usize]
            .cfs_tasks
            .move_to_head(self.group_links.as_mut_slice(), t);
    }

    /// The queued entities other than curr in timeline order. Allocates;
    /// for tests.
    #[cfg(test)]
    pub(crate) fn queued_entities(&self, cpu: CpuId) -> Vec<TaskId> {
        self.rqs[cpu as usize]
            .cfs
            .timeline
            .to_vec(self.run_nodes.as_slice())
    }

    /// The first `limit` queued entities in timeline order (a bounded walk).
    pub(crate) fn queued_first(&self, cpu: CpuId, limit: usize) -> Vec<TaskId> {
        self.rqs[cpu as usize]
            .cfs
            .timeline
            .first_n(self.run_nodes.as_slice(), limit)
    }

    /// Sizes the node arrays to the task array (tasks appear at fork, and
    /// tests add them directly).
    fn grow_run_nodes(&mut self) {
        let n = self.tasks.len();
        if self.run_nodes.len() < n {
            self.run_nodes.resize(n, RunNode::default());
            self.group_links.resize(n, ListLink::default());
        }
    }

    fn queue_insert(&mut self, cpu: CpuId, t: TaskId) {
        self.grow_run_nodes();
        let se = self.tasks[t as usize].se;
        let cfs = &mut self.rqs[cpu as usize].cfs;
        cfs.timeline.insert(
            self.run_nodes.as_mut_slice(),
            t,
            se.deadline,
            se.vruntime,
            se.slice,
        );
        let k = se.vruntime.wrapping_sub(cfs.zero_vruntime) as i64 as i128;
        cfs.sum_w_key += k * se.weight as i128;
        cfs.sum_weight += se.weight as i128;
        self.hperf_track(cpu, t, true);
    }

    /// Takes `t` out of the timeline; it must be there.
    fn queue_remove(&mut self, cpu: CpuId, t: TaskId) {
        let se = self.tasks[t as usize].se;
        let cfs = &mut self.rqs[cpu as usize].cfs;
        cfs.timeline.remove(self.run_nodes.as_mut_slice(), t);
        let k = se.vruntime.wrapping_sub(cfs.zero_vruntime) as i64 as i128;
        cfs.sum_w_key -= k * se.weight as i128;
        cfs.sum_weight -= se.weight as i128;
        self.hperf_track(cpu, t, false);
    }

    /// Charges running task `t` of any class for the time since it last was
    /// (mirrors update_se()): its execution time; returns that time, ns.
    pub(crate) fn update_se(&mut self, t: TaskId) -> u64 {
        let now = self.now;
        let tk = &mut self.tasks[t as usize];
        let delta = now.saturating_sub(tk.se.exec_start);
        if delta > 0 {
            tk.se.exec_start = now;
            tk.se.sum_exec_runtime += delta;
            let settled = std::mem::take(&mut tk.stats.cpu_settled_ns);
            tk.stats.cpu_time_ns += delta - settled.min(delta);
        }
        delta
    }

    /// Charges the running task for the time since it last was (mirrors
    /// update_curr()): sum_exec_runtime, vruntime, and a new deadline when the
    /// request is used up.
    pub(crate) fn update_curr(&mut self, cpu: CpuId) {
        let Some(c) = self.rqs[cpu as usize].cfs.curr else {
            return;
        };
        let slice = self.base_slice_ns;
        let delta = self.update_se(c);
        if delta == 0 {
            return;
        }
        if self.rt_dl_in_use {
            self.fair_server_charge(cpu, delta, false);
        }
        if self.hmp_active() {
            self.hmp_account(cpu, c, delta);
        }
        let tk = &mut self.tasks[c as usize];
        tk.se.vruntime = tk
            .se
            .vruntime
            .wrapping_add(calc_delta_fair(delta, tk.se.weight));
        self.account_mm_sched(cpu, c, delta);
        if self.cfs_mode() {
            // 3.10: no deadline; the floor follows curr and the leftmost.
            let se = &mut self.tasks[c as usize].se;
            se.deadline = se.vruntime;
            self.update_min_vruntime(cpu);
            return;
        }
        let tk = &mut self.tasks[c as usize];
        // update_deadline()
        let mut resched = false;
        if tk.se.vruntime.wrapping_sub(tk.se.deadline) as i64 >= 0 {
            if !tk.se.custom_slice {
                tk.se.slice = slice;
            }
            // vruntime is modular (placement with lag may put it below zero).
            tk.se.deadline = tk
                .se
                .vruntime
                .wrapping_add(calc_delta_fair(tk.se.slice, tk.se.weight));
            resched = true;
        }
        let protected = (tk.se.vruntime.wrapping_sub(tk.se.vprot) as i64) < 0;
        // Others wait and the request is used up or the protection is over.
        if self.rqs[cpu as usize].cfs.nr_queued > 1 && (resched || !protected) {
            self.resched_cpu_lazy(cpu, self.this_cpu);
            self.clear_buddies(cpu, c);
        }
    }

    /// Σ w·key and Σ w of the queued entities only, without curr.
    fn queued_avg(&self, cpu: CpuId) -> (i128, i128) {
        let cfs = &self.rqs[cpu as usize].cfs;
        (cfs.sum_w_key, cfs.sum_weight)
    }

    /// The vruntime just past the others' average (mirrors
    /// ineligible_vruntime()): where curr stops being eligible.
    fn ineligible_vruntime(&self, cpu: CpuId) -> u64 {
        let (sum, w) = self.queued_avg(cpu);
        let delta = if w > 0 { sum.div_euclid(w) } else { 0 };
        self.rqs[cpu as usize]
            .cfs
            .zero_vruntime
            .wrapping_add(delta as i64 as u64)
            .wrapping_add(1)
    }

    /// The shortest slice among curr and the queued entities (mirrors
    /// cfs_rq_min_slice()); the base slice when nobody asked for another.
    pub(crate) fn cfs_rq_min_slice(&self, cpu: CpuId) -> u64 {
        self.cfs_rq_slice_bound(cpu, true)
    }

    /// The longest slice among curr and the queued entities (mirrors
    /// cfs_rq_max_slice()).
    pub(crate) fn cfs_rq_max_slice(&self, cpu: CpuId) -> u64 {
        self.cfs_rq_slice_bound(cpu, false)
    }

    /// Min or max slice of a runqueue: curr's and the timeline's augmented
    /// bound. Without custom slices every slice is the base slice.
    fn cfs_rq_slice_bound(&self, cpu: CpuId, min: bool) -> u64 {
        let base = self.base_slice_ns;
        let cfs = &self.rqs[cpu as usize].cfs;
        if !self.custom_slices {
            return base;
        }
        let curr = cfs
            .curr
            .filter(|&c| self.tasks[c as usize].se.on_rq)
            .map(|c| self.tasks[c as usize].se.slice);
        let nodes = self.run_nodes.as_slice();
        let tree = if min {
            cfs.timeline.min_slice(nodes)
        } else {
            cfs.timeline.max_slice(nodes)
        };
        let bound = match (curr, tree) {
            (Some(a), Some(b)) => Some(if min { a.min(b) } else { a.max(b) }),
            (a, b) => a.or(b),
        };
        bound.unwrap_or(base)
    }

    /// sched_setattr() with `sched_runtime` for a fair task, keeping its
    /// policy and nice value: see [`Sim::sched_setattr_fair`].
    pub(crate) fn set_custom_slice(&mut self, t: TaskId, ns: u64) {
        let tk = &self.tasks[t as usize];
        // An RT policy ignores `sched_runtime` (a deadline one takes it
        // only with its deadline and period, through SetAttr).
        if tk.is_rt() || tk.is_dl() {
            return;
        }
        let policy = if tk.idle_policy {
            SchedPolicy::Idle
        } else if tk.batch_policy {
            SchedPolicy::Batch
        } else {
            SchedPolicy::Normal
        };
        let a = Attrs {
            policy,
            nice: None,
            runtime_ns: Some(ns),
            util_min: None,
            util_max: None,
        };
        self.sched_setattr_fair(t, &a);
    }

    /// sched_setattr() of a fair policy on task `t`: the policy, a new nice
    /// value, a new `sched_runtime` and new utilisation clamps (each `None`:
    /// keep the current one). Clamps are checked first (uclamp_validate():
    /// a minimum above the maximum fails the whole call, which changes
    /// nothing; valid ones turn on `uclamp_used`).
    /// Mirrors __sched_setscheduler() inside the sched_change guard
    /// (sched_change_begin(): update_rq_clock(), dequeue_task() with
    /// DEQUEUE_SAVE, put_prev_task(); then __setparam_fair() and
    /// set_load_weight() → reweight_entity(); sched_change_end():
    /// enqueue_task() with ENQUEUE_RESTORE, set_next_task(),
    /// prio_changed_fair()):
    ///
    /// - nothing happens when the policy, the nice value and the slice stay
    ///   (`runtime_ns` 0 asks for the base slice, more for a custom slice
    ///   clamped to 0.1-100 ms);
    /// - a queued task leaves the runqueue saving its lag and its relative
    ///   deadline, takes its new weight (its PELT load average is
    ///   recomputed from its load sum, and its runqueue's with it), and is
    ///   placed again; the enqueue's reweight_eevdf() first rescales the
    ///   saved lag and relative deadline by old/new weight
    ///   (rescale_entity()), so the task keeps its real lag w·vlag and the
    ///   real time left of its request, and place_entity() then scales the
    ///   lag up for the task's own weight as for any placement;
    /// - a running task becomes curr again keeping its protected slice
    ///   (set_next_task() with `first` false); if its nice value rose and
    ///   others are queued, its CPU reschedules; a queued task that is not
    ///   running gets a preemption check instead.
    ///
    /// A task off the runqueue takes the new attributes, its saved lag
    /// rescaled now (the kernel rescales it at the next enqueue, against the
    /// weight it was saved with: the same numbers unless the weight changes
    /// twice before then).
    pub(crate) fn sched_setattr_fair(&mut self, t: TaskId, a: &Attrs) {
        let (policy, nice, runtime_ns, uclamp) = a.parts();
        let Some((umin, umax)) = self.uclamp_request(t, uclamp) else {
            return;
        };
        let idle_policy = policy == SchedPolicy::Idle;
        let batch_policy = policy == SchedPolicy::Batch;
        let base = self.base_slice_ns;
        let tk = &self.tasks[t as usize];
        let cpu = tk.cpu;
        let old_nice = tk.nice;
        let nice = nice.unwrap_or(old_nice);
        let slice = runtime_ns.map(|ns| requested_slice(ns, base));
        if tk.idle_policy == idle_policy
            && tk.batch_policy == batch_policy
            && (tk.uclamp_min, tk.uclamp_max) == (umin, umax)
            && old_nice == nice
            && slice.is_none_or(|(custom, ns)| custom == tk.se.custom_slice && ns == tk.se.slice)
        {
            return;
        }
        let queued = tk.se.on_rq;
        let running = queued && self.rqs[cpu as usize].cfs.curr == Some(t);
        debug_assert!(!tk.se.sched_delayed, "sched_setattr() on a delayed task");
        if queued {
            self.update_rq_clock(cpu);
            self.dequeue_task(cpu, t, false);
        }
        // __setparam_fair() and set_load_weight(): reweight_entity() on an
        // entity that is not queued.
        let old_w = self.tasks[t as usize].se.weight;
        let new_w = policy_weight(idle_policy, nice);
        {
            let tk = &mut self.tasks[t as usize];
            tk.nice = nice;
            tk.idle_policy = idle_policy;
            tk.batch_policy = batch_policy;
            tk.uclamp_min = umin;
            tk.uclamp_max = umax;
            if let Some((custom, ns)) = slice {
                tk.se.custom_slice = custom;
                tk.se.slice = ns;
            }
            tk.se.weight = new_w;
        }
        if slice.is_some_and(|(custom, _)| custom) {
            self.custom_slices = true;
        }
        if old_w != new_w {
            let rq_avg = &mut self.rqs[cpu as usize].cfs.avg;
            rq_avg.reweight(&mut self.tasks[t as usize].avg, old_w, new_w);
            // rescale_entity(): v' = V - vlag·w/w', d' = V + (d - V)·w/w',
            // dividing towards zero as div64_long() does.
            let rescale = |x: i64| (i128::from(x) * i128::from(old_w) / i128::from(new_w)) as i64;
            let se = &mut self.tasks[t as usize].se;
            se.vlag = rescale(se.vlag);
            if se.rel_deadline {
                se.deadline = rescale(se.deadline as i64) as u64;
            }
        }
        if !queued {
            return;
        }
        self.enqueue_task(cpu, t, EnqueueKind::Restore);
        if running {
            self.set_next_task_again(cpu, t);
        }
        // prio_changed_fair(): the priority follows the nice value.
        if nice != old_nice && self.rqs[cpu as usize].cfs.nr_queued > 1 {
            if running {
                if nice > old_nice {
                    self.resched_cpu(cpu, cpu);
                }
            } else if let Some(c) = self.rqs[cpu as usize].curr {
                if c != t {
                    self.wakeup_preempt(cpu, t, cpu, 0);
                }
            }
        }
    }

    /// The clamps a sched_setattr() call asks for, each `None` keeping the
    /// task's (mirrors uclamp_validate()): `None` when they are invalid (a
    /// minimum above the maximum, or above 1024: the call fails with EINVAL
    /// and changes nothing). Valid clamps turn on `uclamp_used`, and a
    /// requested minimum becomes the user's (`uclamp_req[].user_defined`).
    pub(crate) fn uclamp_request(
        &mut self,
        t: TaskId,
        uclamp: (Option<u16>, Option<u16>),
    ) -> Option<(u16, u16)> {
        let tk = &self.tasks[t as usize];
        let (umin, umax) = (
            uclamp.0.unwrap_or(tk.uclamp_min),
            uclamp.1.unwrap_or(tk.uclamp_max),
        );
        if uclamp != (None, None) {
            if umin > umax || umax > 1024 {
                return None;
            }
            self.uclamp_used = true;
        }
        if uclamp.0.is_some() {
            self.tasks[t as usize].uclamp_min_user = true;
        }
        Some((umin, umax))
    }

    /// Sets how long the new curr runs before a switch (mirrors
    /// set_protect_slice()): up to its deadline with RUN_TO_PARITY, or less
    /// when a queued entity has a shorter slice; otherwise only the
    /// normalised base slice (0.70 ms). When the protected slice is shorter
    /// than curr's own, PREEMPT_SHORT protects only until curr becomes
    /// ineligible.
    fn set_protect_slice(&mut self, cpu: CpuId, t: TaskId) {
        let se = self.tasks[t as usize].se;
        let mut slice = self.normalized_base_slice_ns;
        if self.feat(Feat::RUN_TO_PARITY) {
            slice = self.cfs_rq_min_slice(cpu);
        }
        slice = slice.min(se.slice);
        let mut vprot = se.deadline;
        if slice != se.slice {
            let limit = if self.feat(Feat::PREEMPT_SHORT) {
                self.ineligible_vruntime(cpu)
            } else {
                se.vruntime.wrapping_add(calc_delta_fair(slice, se.weight))
            };
            if (limit.wrapping_sub(vprot) as i64) < 0 {
                vprot = limit;
            }
        }
        self.tasks[t as usize].se.vprot = vprot;
    }

    /// Shrinks curr's protection after a wakeup that did not preempt
    /// (mirrors update_protect_slice()): at most the shortest slice past
    /// min(vruntime, V).
    fn update_protect_slice(&mut self, cpu: CpuId, t: TaskId) {
        let v_avg = self.avg_vruntime(cpu);
        let se = self.tasks[t as usize].se;
        let base = if (se.vruntime.wrapping_sub(v_avg) as i64) < 0 {
            se.vruntime
        } else {
            v_avg
        };
        let min_slice = self.cfs_rq_min_slice(cpu);
        let limit = base.wrapping_add(calc_delta_fair(min_slice, se.weight));
        if (limit.wrapping_sub(se.vprot) as i64) < 0 {
            self.tasks[t as usize].se.vprot = limit;
        }
    }

    /// mirrors cancel_protect_slice().
    fn cancel_protect_slice(&mut self, t: TaskId) {
        let se = &mut self.tasks[t as usize].se;
        if (se.vruntime.wrapping_sub(se.vprot) as i64) < 0 {
            se.vprot = se.vruntime;
        }
    }

    /// Earliest eligible virtual deadline first (mirrors pick_eevdf()); with
    /// `protect`, an eligible curr keeps the CPU until its protected vruntime
    /// (set_protect_slice() decides how far that is). With EEVDF off,
    /// 3.10's pick ([`Sim::pick_cfs`]).
    pub(crate) fn pick_eevdf(&self, cpu: CpuId, protect: bool) -> Option<TaskId> {
        if self.cfs_mode() {
            return self.pick_cfs(cpu);
        }
        let cfs = &self.rqs[cpu as usize].cfs;
        let first = cfs.timeline.first();
        let mut curr = cfs.curr.filter(|&c| self.tasks[c as usize].se.on_rq);
        if cfs.nr_queued == 1 {
            return curr.or(first);
        }
        // PICK_BUDDY: the next buddy goes first while it is eligible.
        if let Some(n) = cfs.next {
            if protect
                && self.feat(Feat::PICK_BUDDY)
                && self.vruntime_eligible(cpu, self.tasks[n as usize].se.vruntime)
            {
                return Some(n);
            }
        }
        if let Some(c) = curr {
            if !self.vruntime_eligible(cpu, self.tasks[c as usize].se.vruntime) {
                curr = None;
            }
        }
        if let Some(c) = curr {
            let se = &self.tasks[c as usize].se;
            if protect && (se.vruntime.wrapping_sub(se.vprot) as i64) < 0 {
                return Some(c);
            }
        }
        // vruntime_eligible() with V's parts computed once for the walk.
        let (avg, load) = self.avg_parts(cpu);
        let best = cfs.timeline.pick_eligible(self.run_nodes.as_slice(), |v| {
            avg >= self.key(cpu, v) * load
        });
        match (best, curr) {
            (None, c) => c.or(first),
            (Some(b), Some(c))
                if (self.tasks[c as usize].se.deadline as i64)
                    .wrapping_sub(self.tasks[b as usize].se.deadline as i64)
                    < 0 =>
            {
                Some(c)
            }
            (Some(b), _) => Some(b),
        }
    }

    /// Places an entity being enqueued (mirrors place_entity()): keep its lag,
    /// inflated for its own effect on V; new tasks start half a slice early.
    /// (With EEVDF off, [`Sim::place_entity_cfs`] places instead.)
    fn place_entity(&mut self, cpu: CpuId, t: TaskId, initial: bool) {
        let v = self.avg_vruntime(cpu);
        let slice = self.base_slice_ns;
        let (sum_weight, curr_w) = {
            let cfs = &self.rqs[cpu as usize].cfs;
            let cw = cfs
                .curr
                .map(|c| &self.tasks[c as usize].se)
                .filter(|se| se.on_rq)
                .map(|se| se.weight as i128)
                .unwrap_or(0);
            (cfs.sum_weight, cw)
        };
        let nr_queued = self.rqs[cpu as usize].cfs.nr_queued;
        let place_lag = self.feat(Feat::PLACE_LAG);
        let initial_half = self.feat(Feat::PLACE_DEADLINE_INITIAL);
        let rel_deadline = self.feat(Feat::PLACE_REL_DEADLINE);
        let se = &mut self.tasks[t as usize].se;
        if !se.custom_slice {
            se.slice = slice;
        }
        let mut vslice = calc_delta_fair(se.slice, se.weight);
        let mut lag: i64 = 0;
        if place_lag && nr_queued > 0 && se.vlag != 0 {
            let load = (sum_weight + curr_w).max(1);
            lag = ((se.vlag as i128 * (load + se.weight as i128)) / load) as i64;
        }
        se.vruntime = v.wrapping_sub(lag as u64);
        if rel_deadline && se.rel_deadline {
            // A migrated task keeps its remaining request.
            se.deadline = se.deadline.wrapping_add(se.vruntime);
            se.rel_deadline = false;
            return;
        }
        if initial && initial_half {
            vslice /= 2;
        }
        se.deadline = se.vruntime.wrapping_add(vslice);
    }

    /// Saves the lag of an entity, clamped to a slice plus a tick (mirrors
    /// update_entity_lag() with entity_lag()); a delayed entity's negative lag
    /// may not grow, and with DELAY_ZERO it leaves with at most zero lag.
    /// Returns true when the saved lag differs from V − vruntime.
    fn update_entity_lag(&mut self, cpu: CpuId, t: TaskId) -> bool {
        let v = self.avg_vruntime(cpu);
        let max_slice = self.cfs_rq_max_slice(cpu) + self.tick_ns;
        let delay_zero = self.feat(Feat::DELAY_ZERO);
        let se = &mut self.tasks[t as usize].se;
        let limit = calc_delta_fair(max_slice, se.weight) as i64;
        let mut vlag = (v.wrapping_sub(se.vruntime) as i64).clamp(-limit, limit);
        if se.sched_delayed {
            vlag = vlag.max(se.vlag);
            if delay_zero {
                vlag = vlag.min(0);
            }
        }
        se.vlag = vlag;
        v.wrapping_sub(vlag as u64) != se.vruntime
    }

    /// Puts a task on `cpu`'s runqueue (mirrors enqueue_task_fair() →
    /// enqueue_entity()).
    pub(crate) fn enqueue_task_fair(&mut self, cpu: CpuId, t: TaskId, kind: EnqueueKind) {
        debug_assert!(!self.tasks[t as usize].se.on_rq);
        if self.tasks[t as usize].idle_policy {
            // SCHED_IDLE (set_load_weight()): the policy overrides nice.
            self.tasks[t as usize].se.weight = WEIGHT_IDLEPRIO;
        }
        // 3.10's enqueue_entity() adds the floor before update_curr().
        let floor_before = self.rqs[cpu as usize].cfs.min_vruntime;
        self.update_curr(cpu);
        self.tasks[t as usize].cpu = cpu;
        if self.cfs_mode() {
            self.place_entity_cfs(cpu, t, kind, floor_before);
        } else {
            self.place_entity(cpu, t, kind == EnqueueKind::New);
        }
        // Sleeping time decays the task's signals; its blocked contribution is
        // already part of the runqueue's.
        self.update_load_avg(cpu, t);
        // util_est_enqueue()/util_est_dequeue(): the EWMA alone.
        let util_est = self.tasks[t as usize].util_est_ewma;
        let w = self.tasks[t as usize].se.weight;
        self.tasks[t as usize].se.on_rq = true;
        // account_entity_enqueue(): list_add() at the head of cfs_tasks.
        self.grow_run_nodes();
        self.rqs[cpu as usize]
            .cfs_tasks
            .push_head(self.group_links.as_mut_slice(), t);
        self.queue_insert(cpu, t);
        let idle = u32::from(self.tasks[t as usize].idle_policy);
        let was_running = self.rqs[cpu as usize].nr_running();
        let cfs = &mut self.rqs[cpu as usize].cfs;
        cfs.nr_queued += 1;
        // add_nr_running(): a second task overloads the root domain.
        let overloads = was_running == 1;
        let first = cfs.nr_queued == 1;
        cfs.nr_idle += idle;
        cfs.load_weight += w;
        cfs.util_est += util_est;
        if overloads {
            self.rd_overloaded = true;
        }
        if first && self.rt_dl_in_use {
            self.fair_server_start(cpu);
        }
        self.update_cfs_avg(cpu);
        self.update_zero_vruntime(cpu);
        self.account_llc_enqueue(cpu, t);
        if self.feat(Feat::HRTICK) {
            self.hrtick_update(cpu);
        }
    }

    /// Arms the HRTICK timer for the end of `t`'s slice, at its virtual
    /// deadline, when others wait (mirrors hrtick_start_fair()). A deadline
    /// already passed reschedules when `t` runs already (`is_curr`: the
    /// enqueue path); from set_next_task_fair() the kernel's check finds the
    /// previous task still current and does nothing.
    pub(crate) fn hrtick_start_fair(&mut self, cpu: CpuId, t: TaskId, is_curr: bool) {
        if self.rqs[cpu as usize].cfs.nr_queued <= 1 || self.cfs_mode() {
            return;
        }
        let se = &self.tasks[t as usize].se;
        let vdelta = se.deadline.wrapping_sub(se.vruntime) as i64;
        if vdelta < 0 {
            if is_curr {
                self.resched_cpu(cpu, self.this_cpu);
            }
            return;
        }
        // Virtual time back to wall time at the task's weight.
        let delay_ns = (u128::from(se.weight) * vdelta as u128 / u128::from(NICE_0_LOAD)) as u64;
        self.hrtick_start(cpu, delay_ns);
    }

    /// After an enqueue: a running fair task that had the CPU to itself
    /// gets its HRTICK timer now that another task waits (mirrors
    /// hrtick_update(); an RT or deadline task running gets none).
    fn hrtick_update(&mut self, cpu: CpuId) {
        let rq = &self.rqs[cpu as usize];
        if rq.hrtick.expires_ns().is_some() {
            return;
        }
        if let Some(c) = rq.curr.filter(|&c| self.task_is_fair(c)) {
            self.hrtick_start_fair(cpu, c, true);
        }
    }

    /// Takes a task off its runqueue (mirrors dequeue_task_fair()); a
    /// sleeping, not-eligible task is only marked delayed when DELAY_DEQUEUE
    /// is on. Returns false when the dequeue was delayed.
    ///
    /// A runqueue left with only SCHED_IDLE tasks balances at its next tick
    /// (`next_balance` = now), to pull normal work early.
    pub(crate) fn dequeue_task_fair(&mut self, cpu: CpuId, t: TaskId, sleep: bool) -> bool {
        let was_sched_idle = self.sched_idle_cpu(cpu);
        self.clear_buddies(cpu, t);
        self.update_curr(cpu);
        self.update_load_avg(cpu, t);
        let is_curr = self.rqs[cpu as usize].cfs.curr == Some(t);
        self.update_entity_lag(cpu, t);
        let cfs_mode = self.cfs_mode();
        if sleep
            && !cfs_mode
            && self.feat(Feat::DELAY_DEQUEUE)
            && !self.tasks[t as usize].se.sched_delayed
            && !self.vruntime_eligible(cpu, self.tasks[t as usize].se.vruntime)
            && self.rqs[cpu as usize].cfs.nr_queued > 1
        {
            if is_curr {
                // put_prev_entity() puts a delayed curr back into the tree.
                self.rqs[cpu as usize].cfs.curr = None;
                self.queue_insert(cpu, t);
            }
            // Before the task's own estimate is updated.
            self.set_delayed(cpu, t);
            self.update_util_est_dequeue(t);
            self.update_cfs_avg(cpu);
            return false;
        }
        let was_delayed = self.tasks[t as usize].se.sched_delayed;
        if !sleep && cfs_mode {
            let floor = self.rqs[cpu as usize].cfs.min_vruntime;
            let se = &mut self.tasks[t as usize].se;
            se.vrt_floor = floor;
            se.vrt_floor_saved = true;
        }
        if !sleep && !cfs_mode && self.feat(Feat::PLACE_REL_DEADLINE) {
            let se = &mut self.tasks[t as usize].se;
            se.deadline = se.deadline.wrapping_sub(se.vruntime);
            se.rel_deadline = true;
        }
        if is_curr {
            self.rqs[cpu as usize].cfs.curr = None;
        } else {
            self.queue_remove(cpu, t);
        }
        // account_entity_dequeue(): list_del_init() from cfs_tasks.
        self.rqs[cpu as usize]
            .cfs_tasks
            .remove(self.group_links.as_mut_slice(), t);
        // util_est_enqueue()/util_est_dequeue(): the EWMA alone.
        let util_est = self.tasks[t as usize].util_est_ewma;
        let idle = u32::from(self.tasks[t as usize].idle_policy);
        let se = &mut self.tasks[t as usize].se;
        se.on_rq = false;
        se.sched_delayed = false;
        let w = se.weight;
        let cfs = &mut self.rqs[cpu as usize].cfs;
        cfs.nr_queued -= 1;
        cfs.nr_idle -= idle;
        if was_delayed {
            cfs.nr_delayed -= 1;
        }
        cfs.load_weight -= w;
        if !was_sched_idle && self.sched_idle_cpu(cpu) {
            self.rqs[cpu as usize].next_balance = self.jiffies_ns();
        }
        let cfs = &mut self.rqs[cpu as usize].cfs;
        // A delayed task's estimate left the sum when it went to sleep.
        if !was_delayed {
            cfs.util_est = cfs.util_est.saturating_sub(util_est);
        }
        if sleep && !was_delayed {
            self.update_util_est_dequeue(t);
        }
        self.account_llc_dequeue(t);
        self.update_cfs_avg(cpu);
        self.update_zero_vruntime(cpu);
        if cfs_mode {
            // 3.10's dequeue_entity() reads a sleeping curr still as curr; a
            // curr leaving otherwise has had its vruntime made relative
            // first, which leaves the floor where it is.
            if !is_curr {
                self.update_min_vruntime(cpu);
            } else if sleep {
                let v = self.tasks[t as usize].se.vruntime;
                self.update_min_vruntime_with(cpu, Some(v));
            }
        }
        true
    }

    /// A delayed task is woken while still queued (mirrors ttwu_runnable() →
    /// requeue_delayed_entity()).
    pub(crate) fn requeue_delayed(&mut self, cpu: CpuId, t: TaskId) {
        self.update_curr(cpu);
        if self.update_entity_lag(cpu, t) {
            // The lag was clamped: place the entity again by its saved lag.
            let is_curr = self.rqs[cpu as usize].cfs.curr == Some(t);
            if !is_curr {
                self.queue_remove(cpu, t);
            }
            self.rqs[cpu as usize].cfs.nr_queued -= 1;
            self.place_entity(cpu, t, false);
            self.rqs[cpu as usize].cfs.nr_queued += 1;
            if !is_curr {
                self.queue_insert(cpu, t);
            }
        }
        self.update_load_avg(cpu, t);
        let se = &mut self.tasks[t as usize].se;
        debug_assert!(se.sched_delayed);
        se.sched_delayed = false;
        // enqueue_task_fair(ENQUEUE_DELAYED): the estimate is back in the sum.
        // util_est_enqueue()/util_est_dequeue(): the EWMA alone.
        let util_est = self.tasks[t as usize].util_est_ewma;
        let cfs = &mut self.rqs[cpu as usize].cfs;
        cfs.nr_delayed -= 1;
        cfs.util_est += util_est;
        self.update_cfs_avg(cpu);
    }

    /// Marks `t`, queued on `cpu`, as asleep with its dequeue delayed: it
    /// counts in `nr_delayed`, and its estimate leaves the runqueue's
    /// util_est sum, as dequeue_task_fair() does at every sleep
    /// (util_est_dequeue()). [`Sim::requeue_delayed`] undoes both.
    pub(crate) fn set_delayed(&mut self, cpu: CpuId, t: TaskId) {
        self.tasks[t as usize].se.sched_delayed = true;
        // util_est_enqueue()/util_est_dequeue(): the EWMA alone.
        let util_est = self.tasks[t as usize].util_est_ewma;
        let cfs = &mut self.rqs[cpu as usize].cfs;
        cfs.nr_delayed += 1;
        cfs.util_est = cfs.util_est.saturating_sub(util_est);
    }

    /// A delayed entity reached the front: finish its dequeue.
    fn finish_delayed_dequeue(&mut self, cpu: CpuId, t: TaskId) {
        self.dequeue_task(cpu, t, true);
        debug_assert!(!self.tasks[t as usize].se.on_rq);
        debug_assert_eq!(self.tasks[t as usize].state, TaskState::Blocked);
    }

    /// The next task to run on `cpu`, finishing delayed dequeues on the way
    /// (mirrors pick_next_entity()).
    pub(crate) fn pick_next_entity(&mut self, cpu: CpuId) -> Option<TaskId> {
        self.pick_next_entity_protect(cpu, true)
    }

    /// pick_next_entity() with or without curr's protection, as the wakeup
    /// preemption check calls it: a delayed task it lands on leaves the
    /// runqueue for good and the pick is made again.
    fn pick_next_entity_protect(&mut self, cpu: CpuId, protect: bool) -> Option<TaskId> {
        loop {
            let t = self.pick_eevdf(cpu, protect)?;
            if self.tasks[t as usize].se.sched_delayed {
                self.finish_delayed_dequeue(cpu, t);
                continue;
            }
            return Some(t);
        }
    }

    /// Makes `t` the runqueue's current entity (mirrors set_next_task_fair()
    /// → set_next_entity()): a picked buddy stops being the buddy.
    pub(crate) fn set_next_entity(&mut self, cpu: CpuId, t: TaskId) {
        self.set_next_task_again(cpu, t);
        if !self.cfs_mode() {
            self.set_protect_slice(cpu, t);
        }
    }

    /// Makes the task that was running on `cpu` curr again after a change
    /// of its attributes (set_next_task_fair() with `first` false, as
    /// sched_change_end() calls it): as [`Sim::set_next_entity`] but without
    /// a new protected slice (nor an HRTICK timer), so `vprot` stays.
    fn set_next_task_again(&mut self, cpu: CpuId, t: TaskId) {
        self.clear_buddies(cpu, t);
        if self.rqs[cpu as usize].cfs.curr != Some(t) {
            self.queue_remove(cpu, t);
        }
        self.update_load_avg(cpu, t);
        self.rqs[cpu as usize].cfs.curr = Some(t);
        self.cfs_tasks_to_head(cpu, t);
        self.start_exec(t);
    }

    /// Puts the running task back into the tree (mirrors put_prev_entity()).
    pub(crate) fn put_prev_entity(&mut self, cpu: CpuId, t: TaskId) {
        self.update_load_avg(cpu, t);
        if self.rqs[cpu as usize].cfs.curr == Some(t) {
            self.rqs[cpu as usize].cfs.curr = None;
            if self.tasks[t as usize].se.on_rq {
                self.queue_insert(cpu, t);
            }
        }
    }

    /// Wakeup preemption (mirrors wakeup_preempt_fair()): a delayed wakee
    /// never preempts; a wakee with a shorter slice than curr (PREEMPT_SHORT)
    /// preempts when the pick that ignores curr's protection is the wakee,
    /// or when it is merely eligible, and becomes the next buddy, which the
    /// following pick takes; a new task (WF_FORK) otherwise does
    /// not; else reschedule when the pick that respects curr's protection is
    /// the wakee. The picks are pick_next_entity()'s: delayed tasks they meet
    /// are dequeued for good on the way. Without preemption, curr's
    /// protection shrinks to the shortest slice (update_protect_slice()).
    /// With EEVDF off, after the same SCHED_IDLE rules and nothing while a
    /// reschedule is due, 3.10's test ([`Sim::check_preempt_wakeup_cfs`]).
    pub(crate) fn wakeup_preempt_fair(
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
        if curr == wakee || !self.feat(Feat::WAKEUP_PREEMPTION) {
            return;
        }
        // A per-CPU kthread (system noise) is short: it stands for work that
        // does not wait for curr's slice (interrupt-like noise), so curr's
        // protection ends and the pick decides by eligibility and deadline
        // alone. (A real kworker would follow the rules below.) Under
        // 3.10's CFS it takes the granularity test like any wakee, which
        // its sleeper credit passes unless curr is itself far behind.
        let kthread = self.tasks[wakee as usize].kthread && !self.cfs_mode();
        self.update_curr(cpu);
        if kthread {
            self.cancel_protect_slice(curr);
            self.resched_cpu(cpu, from);
            return;
        }
        // SCHED_IDLE: a normal wakee preempts an idle-policy curr at once; an
        // idle-policy wakee never preempts a normal one.
        let (c_idle, p_idle) = (
            self.tasks[curr as usize].idle_policy,
            self.tasks[wakee as usize].idle_policy,
        );
        let cfs_mode = self.cfs_mode();
        if cfs_mode && self.rqs[cpu as usize].need_resched {
            return;
        }
        if c_idle && !p_idle {
            self.cancel_protect_slice(curr);
            self.resched_cpu_lazy(cpu, from);
            return;
        }
        if cfs_mode {
            if !p_idle {
                self.check_preempt_wakeup_cfs(cpu, curr, wakee, from);
            }
            return;
        }
        let wk = &self.tasks[wakee as usize];
        // wake_up_new_task() passes WF_FORK; the balancer's attach_task()
        // passes no flags.
        let forked = wake_flags & crate::sim::WF_FORK != 0;
        // normal_policy(): SCHED_BATCH wakees do not preempt either.
        let normal = !wk.se.sched_delayed && !p_idle && !c_idle && !wk.batch_policy;
        let short = normal
            && self.feat(Feat::PREEMPT_SHORT)
            && wk.se.slice < self.tasks[curr as usize].se.slice;
        let preempt = if short {
            self.pick_next_entity_protect(cpu, false) == Some(wakee)
                || self.vruntime_eligible(cpu, self.tasks[wakee as usize].se.vruntime)
        } else if forked || !normal {
            false
        } else if self.feat(Feat::NEXT_BUDDY)
            && self.set_preempt_buddy(cpu, wakee)
            && wake_flags & crate::sim::WF_SYNC != 0
        {
            // preempt_sync(): a new buddy of a sync wakeup preempts at once
            // or not at all (no pick, no protection update).
            if !self.preempt_sync(wakee, curr, wake_flags) {
                return;
            }
            true
        } else {
            self.pick_next_entity_protect(cpu, true) == Some(wakee)
        };
        if preempt {
            self.cancel_protect_slice(curr);
            if short {
                self.set_short_buddy(cpu, wakee);
            }
            self.resched_cpu_lazy(cpu, from);
        } else if self.feat(Feat::RUN_TO_PARITY) && self.rqs[cpu as usize].cfs.curr == Some(curr) {
            self.update_protect_slice(cpu, curr);
        }
    }

    /// NEXT_BUDDY: the wakee becomes the next buddy unless the current
    /// buddy's deadline is earlier (mirrors set_preempt_buddy()); true when
    /// it was nominated (set_next_buddy() may still refuse a delayed or
    /// SCHED_IDLE task, as the kernel's does, and report true).
    fn set_preempt_buddy(&mut self, cpu: CpuId, t: TaskId) -> bool {
        if let Some(n) = self.rqs[cpu as usize].cfs.next {
            let (nd, td) = (
                self.tasks[n as usize].se.deadline,
                self.tasks[t as usize].se.deadline,
            );
            if (nd.wrapping_sub(td) as i64) < 0 {
                return false;
            }
        }
        let tk = &self.tasks[t as usize];
        if tk.se.on_rq && !tk.se.sched_delayed && !tk.idle_policy {
            self.rqs[cpu as usize].cfs.next = Some(t);
        }
        true
    }

    /// Whether a WF_SYNC wakeup's new buddy preempts `curr` now (mirrors
    /// preempt_sync()): its deadline must be earlier and the waker must have
    /// run migration_cost_ns (a quarter of it when select_task_rq() chose
    /// the CPU, WF_RQ_SELECTED) since its runtime was last charged, which
    /// update_curr() just did: unless migration_cost_ns is 0 the waker's
    /// hint is obeyed and the buddy runs when the waker blocks.
    fn preempt_sync(&self, wakee: TaskId, curr: TaskId, wake_flags: u32) -> bool {
        let mut threshold = self.cfg.tunables.migration_cost_ns;
        if wake_flags & crate::sim::WF_RQ_SELECTED != 0 {
            threshold >>= 2;
        }
        let c = &self.tasks[curr as usize].se;
        let delta = self.now.saturating_sub(c.exec_start);
        let before = (self.tasks[wakee as usize]
            .se
            .deadline
            .wrapping_sub(c.deadline) as i64)
            < 0;
        before && delta >= threshold
    }

    /// A short-slice wakee that preempted becomes the next buddy unless the
    /// current buddy's slice is shorter still (mirrors set_short_buddy() and
    /// set_next_buddy(): only a queued, non-delayed, non-idle-policy task).
    fn set_short_buddy(&mut self, cpu: CpuId, t: TaskId) {
        let slice = self.tasks[t as usize].se.slice;
        if let Some(n) = self.rqs[cpu as usize].cfs.next {
            if self.tasks[n as usize].se.slice < slice {
                return;
            }
        }
        let tk = &self.tasks[t as usize];
        if !tk.se.on_rq || tk.se.sched_delayed || tk.idle_policy {
            return;
        }
        self.rqs[cpu as usize].cfs.next = Some(t);
    }

    /// `t` stops being the next buddy (mirrors clear_buddies()): its slice
    /// ran out, it leaves the runqueue, or it yields.
    pub(crate) fn clear_buddies(&mut self, cpu: CpuId, t: TaskId) {
        let cfs = &mut self.rqs[cpu as usize].cfs;
        if cfs.next == Some(t) {
            cfs.next = None;
        }
        // 3.10's last and skip buddies (never set with EEVDF).
        if cfs.last == Some(t) {
            cfs.last = None;
        }
        if cfs.skip == Some(t) {
            cfs.skip = None;
        }
    }

    // ----- load tracking glue ---------------------------------------------

    /// Updates a task's PELT signals and then its runqueue's (mirrors
    /// update_load_avg()).
    pub(crate) fn update_load_avg(&mut self, cpu: CpuId, t: TaskId) {
        let now = self.rqs[cpu as usize].clock_pelt;
        let is_curr = self.rqs[cpu as usize].cfs.curr == Some(t);
        if self.feat(Feat::HMP_LINARO) && self.tasks[t as usize].cpu == cpu {
            let se = &self.tasks[t as usize].se;
            let runnable = se.on_rq && !se.sched_delayed;
            self.hmp_track(t, runnable, is_curr);
            self.linaro_kick_up(cpu, t);
        }
        let tk = &mut self.tasks[t as usize];
        if tk.cpu == cpu {
            let on = tk.se.on_rq as u64;
            let runnable = (tk.se.on_rq && !tk.se.sched_delayed) as u64;
            if tk.avg.update_sum(now, on, runnable, is_curr) {
                tk.avg.update_avg(tk.se.weight);
                // cfs_se_util_change(): util_avg moved, util_est may update.
                tk.util_est_unchanged = false;
            }
        }
        self.update_cfs_avg(cpu);
    }

    /// Updates the runqueue's own signals (mirrors update_cfs_rq_load_avg()):
    /// first the averages of tasks removed since the last update go, then
    /// the sums decay and accrue up to the PELT clock.
    pub(crate) fn update_cfs_avg(&mut self, cpu: CpuId) {
        let rq = &mut self.rqs[cpu as usize];
        if rq.cfs.removed.nr > 0 {
            let r = std::mem::take(&mut rq.cfs.removed);
            rq.cfs.avg.remove(r.load_avg, r.util_avg, r.runnable_avg);
        }
        let now = rq.clock_pelt;
        let load = rq.cfs.load_weight;
        let runnable = rq.cfs.nr_runnable() as u64;
        let running = rq.cfs.curr.is_some();
        if rq.cfs.avg.update_sum(now, load, runnable, running) {
            rq.cfs.avg.update_avg(1);
        }
    }

    /// A blocked task leaves `cpu` (mirrors remove_entity_load_avg(), and
    /// with `pelt_lag` migrate_se_pelt_lag(), for a wakeup on another CPU;
    /// task_dead_fair() for an exit): its averages, brought up to the
    /// runqueue's last update, are queued for removal at the runqueue's
    /// next update, which the old CPU's lock is not needed for. A task
    /// waking elsewhere from an idle CPU then decays on to that CPU's
    /// present (the kernel estimates the idle time its clock missed).
    pub(crate) fn remove_entity_load(&mut self, cpu: CpuId, t: TaskId, pelt_lag: bool) {
        let rq = &mut self.rqs[cpu as usize];
        let lut = rq.cfs.avg.last_update_time;
        let idle_now = (pelt_lag && rq.curr.is_none()).then(|| self.now - rq.lost_idle_time_ns);
        let tk = &mut self.tasks[t as usize];
        let w = tk.se.weight;
        if lut > tk.avg.last_update_time && tk.avg.update_sum(lut, 0, 0, false) {
            tk.avg.update_avg(w);
        }
        let r = &mut rq.cfs.removed;
        r.nr += 1;
        r.load_avg += tk.avg.load_avg;
        r.util_avg += tk.avg.util_avg;
        r.runnable_avg += tk.avg.runnable_avg;
        let decayed = tk.avg.load_sum == 0 && tk.avg.util_sum == 0 && tk.avg.runnable_sum == 0;
        if let Some(now) = idle_now {
            if !decayed && now > tk.avg.last_update_time && tk.avg.update_sum(now, 0, 0, false) {
                tk.avg.update_avg(w);
            }
        }
    }

    /// Removes a queued task's signals from its runqueue at once (mirrors
    /// detach_entity_load_avg(): the balancer's and the stopper's
    /// migrations hold both runqueues' locks).
    pub(crate) fn detach_entity_load(&mut self, cpu: CpuId, t: TaskId) {
        let now = self.rqs[cpu as usize].clock_pelt;
        let tk = &mut self.tasks[t as usize];
        if tk.avg.update_sum(now, 0, 0, false) {
            tk.avg.update_avg(tk.se.weight);
        }
        let (avg, w) = (tk.avg, tk.se.weight);
        self.update_cfs_avg(cpu);
        self.rqs[cpu as usize].cfs.avg.detach(&avg, w);
    }

    /// Adds a task's signals to its new runqueue (attach_entity_load_avg()
    /// after the runqueue's own update).
    pub(crate) fn attach_entity_load(&mut self, cpu: CpuId, t: TaskId) {
        self.update_cfs_avg(cpu);
        let tk = &mut self.tasks[t as usize];
        let w = tk.se.weight;
        self.rqs[cpu as usize].cfs.avg.attach(&mut tk.avg, w);
    }

    /// Initial signals of a new task (mirrors init_entity_runnable_average()
    /// and post_init_entity_util_avg()): full load, and half the spare
    /// capacity of the runqueue as utilisation.
    pub(crate) fn init_entity_util(&mut self, cpu: CpuId, t: TaskId) {
        // wake_up_new_task() updates the rq clock, not the runqueue's
        // averages: post_init_entity_util_avg() reads them as last updated.
        let cap = self.kcap[cpu as usize];
        let rq_avg = self.rqs[cpu as usize].cfs.avg;
        let tk = &mut self.tasks[t as usize];
        let w = tk.se.weight;
        let half_spare = (cap as i64 - rq_avg.util_avg as i64) / 2;
        let mut util = 0;
        if half_spare > 0 {
            util = if rq_avg.util_avg != 0 {
                (rq_avg.util_avg * w / (rq_avg.load_avg + 1)).min(half_spare as u64)
            } else {
                half_spare as u64
            };
        }
        let div = tk.avg.divider();
        tk.avg.util_avg = util;
        tk.avg.util_sum = util * div;
        tk.avg.runnable_avg = util;
        tk.avg.runnable_sum = util * div;
        tk.avg.load_avg = w;
        tk.avg.load_sum = div;
        self.attach_entity_load(cpu, t);
    }

    /// util_est update at dequeue (mirrors util_est_update()): skipped when
    /// util_avg did not change since the last update; a rise is taken at
    /// once; a drop within 1% is ignored, as is one while the task waited
    /// (runnable above util); otherwise an EWMA with weight 1/4.
    pub(crate) fn update_util_est_dequeue(&mut self, t: TaskId) {
        if !self.feat(Feat::UTIL_EST) {
            return;
        }
        const UTIL_EST_MARGIN: u64 = SCHED_CAPACITY_SCALE / 100;
        let tk = &mut self.tasks[t as usize];
        if tk.util_est_unchanged {
            return;
        }
        let dequeued = tk.avg.util_avg;
        let ewma = tk.util_est_ewma;
        let new = if ewma <= dequeued {
            dequeued
        } else {
            let diff = ewma - dequeued;
            if diff < UTIL_EST_MARGIN || dequeued + UTIL_EST_MARGIN < tk.avg.runnable_avg {
                ewma
            } else {
                ((ewma << 2) - diff) >> 2
            }
        };
        tk.util_est_ewma = new;
        tk.util_est_unchanged = true;
    }

    // ----- per-CPU load and utilisation accessors ---------------------------

    /// mirrors sched_idle_cpu(): the CPU runs only SCHED_IDLE tasks (and at
    /// least one).
    pub(crate) fn sched_idle_cpu(&self, cpu: CpuId) -> bool {
        let rq = &self.rqs[cpu as usize];
        if rq.nr_running() == 0 {
            return false;
        }
        rq.cfs.nr_idle == rq.nr_running()
    }

    /// `cpu_load()`.
    pub(crate) fn cpu_load(&self, cpu: CpuId) -> u64 {
        self.rqs[cpu as usize].cfs.avg.load_avg
    }

    /// `cpu_runnable()`.
    pub(crate) fn cpu_runnable(&self, cpu: CpuId) -> u64 {
        self.rqs[cpu as usize].cfs.avg.runnable_avg
    }

    /// `capacity_of()`: the capacity left to the fair class
    /// (`rq->cpu_capacity`): the CPU's own (`arch_scale_cpu_capacity()`)
    /// less the RT utilisation update_cpu_capacity() last saw (rt.rs); no
    /// IRQ or thermal pressure is modelled.
    pub(crate) fn capacity_of(&self, cpu: CpuId) -> u64 {
        self.rqs[cpu as usize].cpu_capacity
    }

    /// The sum, minimum and maximum of the capacities of `span`'s CPUs as
    /// update_cpu_capacity() last found them (a group's `sgc->capacity`,
    /// `min_capacity`, `max_capacity` once RT time takes capacity).
    pub(crate) fn group_capacity_now(&self, span: &schedlab_topo::CpuMask) -> (u64, u64, u64) {
        span.iter()
            .map(|c| self.capacity_of(c))
            .fold((0, u64::MAX, 0), |(sum, min, max), cap| {
                (sum + cap, min.min(cap), max.max(cap))
            })
    }

    /// Whether side activity (RT tasks here) has noticeably reduced `cpu`'s
    /// capacity, by the domain's imbalance_pct (mirrors check_cpu_capacity()).
    pub(crate) fn check_cpu_capacity(&self, cpu: CpuId, imbalance_pct: u32) -> bool {
        self.capacity_of(cpu) * u64::from(imbalance_pct) < self.kcap[cpu as usize] * 100
    }

    /// The weight of domain `level` of `cpu`'s span (`sd->span_weight`).
    pub(crate) fn span_weight(&self, cpu: CpuId, level: usize) -> u32 {
        self.sd_consts[cpu as usize][level].span_weight
    }

    /// `sched_asym_cpucap_active()`: CPUs of different kernel capacity exist.
    pub(crate) fn asym_cpucap_active(&self) -> bool {
        self.domains.asym_cpucapacity
    }

    /// Does `util` fit `cpu` (mirrors util_fits_cpu()): 1 if it fits
    /// capacity_of() with the 20% margin
    /// and the clamps `uclamp_min`/`uclamp_max`, 0 if it does not fit, -1 if it
    /// fits but the boost `uclamp_min` exceeds the CPU's capacity. Until
    /// some task has set clamps (`uclamp_used`, the kernel's
    /// sched_uclamp_used key) only the plain test counts. A capped task
    /// (`uclamp_max` at most the CPU's original capacity, unless both are
    /// 1024) fits whatever its utilisation; a boosted one (`util` below
    /// `uclamp_min`, itself at most `uclamp_max`) needs the boost to fit
    /// the CPU's capacity without the 20% margin. No thermal or cpufreq
    /// pressure is modelled, so the actual capacity is the original one.
    pub(crate) fn util_fits_cpu(
        &self,
        util: u64,
        uclamp_min: u64,
        uclamp_max: u64,
        cpu: CpuId,
    ) -> i8 {
        let fits = fits_capacity(util, self.capacity_of(cpu));
        if !self.uclamp_used {
            return i8::from(fits);
        }
        let cap_orig = self.kcap[cpu as usize];
        let unclamped = cap_orig == 1024 && uclamp_max == 1024;
        let max_fits = !unclamped && uclamp_max <= cap_orig;
        let fits = fits || max_fits;
        let uclamp_min = uclamp_min.min(uclamp_max);
        if fits && util < uclamp_min && uclamp_min > cap_orig {
            return -1;
        }
        i8::from(fits)
    }

    /// mirrors task_fits_cpu(): the task's estimated utilisation fits `cpu`,
    /// its clamps included.
    pub(crate) fn task_fits_cpu(&self, t: TaskId, cpu: CpuId) -> bool {
        let tk = &self.tasks[t as usize];
        let (lo, hi) = (u64::from(tk.uclamp_min), u64::from(tk.uclamp_max));
        self.util_fits_cpu(tk.util_est(), lo, hi, cpu) > 0
    }

    /// `p->max_allowed_capacity`: the biggest capacity among allowed CPUs.
    pub(crate) fn max_allowed_capacity(&self, t: TaskId) -> u64 {
        self.tasks[t as usize]
            .affinity
            .iter()
            .map(|c| self.kcap[c as usize])
            .max()
            .unwrap_or(0)
    }

    /// mirrors is_core_idle(): every SMT sibling of `cpu` other than itself is idle.
    pub(crate) fn is_core_idle(&self, cpu: CpuId) -> bool {
        self.smt_siblings(cpu)
            .iter()
            .all(|&s| s == cpu || self.is_idle_cpu(s))
    }

    /// mirrors sched_asym_prefer(): `a` has a higher ITMT/asym priority than `b`.
    pub(crate) fn sched_asym_prefer(&self, a: CpuId, b: CpuId) -> bool {
        self.machine.cpus[a as usize].asym_prio > self.machine.cpus[b as usize].asym_prio
    }

    /// Recomputes `rq->misfit_task_load` for the task running on `cpu`
    /// (mirrors update_misfit_status()): only with asymmetric capacities, when
    /// the task may run elsewhere, is not already on its biggest allowed CPU
    /// and does not fit this one.
    pub(crate) fn update_misfit_status(&mut self, cpu: CpuId, t: Option<TaskId>) {
        if !self.asym_cpucap_active() {
            return;
        }
        let load = match t {
            Some(t)
                if self.tasks[t as usize].affinity.weight() > 1
                    && self.kcap[cpu as usize] != self.max_allowed_capacity(t)
                    && !self.task_fits_cpu(t, cpu) =>
            {
                self.task_h_load(t).max(1)
            }
            _ => 0,
        };
        self.rqs[cpu as usize].misfit_task_load = load;
    }

    /// `cpu_util_cfs()`: max of util_avg and util_est, capped at capacity.
    pub(crate) fn cpu_util(&self, cpu: CpuId) -> u64 {
        self.cpu_util_boosted(cpu, false)
    }

    /// `cpu_util_cfs_boost()`: as `cpu_util_cfs()`, with runnable_avg
    /// counted as utilisation (queued tasks waiting show as demand).
    pub(crate) fn cpu_util_boost(&self, cpu: CpuId) -> u64 {
        self.cpu_util_boosted(cpu, true)
    }

    /// cpu_util() with no task to add or remove.
    fn cpu_util_boosted(&self, cpu: CpuId, boost: bool) -> u64 {
        let cfs = &self.rqs[cpu as usize].cfs;
        let mut u = cfs.avg.util_avg;
        if boost {
            u = u.max(cfs.avg.runnable_avg);
        }
        if self.feat(Feat::UTIL_EST) {
            u = u.max(cfs.util_est);
        }
        // cpu_util() caps at the CPU's own capacity, not at what RT time leaves.
        u.min(self.kcap[cpu as usize])
    }

    /// Does `t` count in `cpu`'s signals (its last CPU)?
    fn counted_on(&self, cpu: CpuId, t: TaskId) -> bool {
        self.tasks[t as usize].cpu == cpu
    }

    /// `cpu_load_without()`.
    pub(crate) fn cpu_load_without(&self, cpu: CpuId, t: TaskId) -> u64 {
        let l = self.cpu_load(cpu);
        if self.counted_on(cpu, t) {
            l.saturating_sub(self.task_h_load(t))
        } else {
            l
        }
    }

    /// mirrors task_h_load() of a kernel built with CONFIG_FAIR_GROUP_SCHED
    /// (GROUP_H_LOAD), every task being in the root group: the task's
    /// load_avg scaled by the root's `h_load` (the runqueue's load_avg as the
    /// jiffy's first call found it, update_cfs_rq_h_load()) over the current
    /// load_avg + 1. Within a jiffy, load that has left the runqueue since
    /// (a task detached earlier in the same balance pass) makes its other
    /// tasks look heavier, load that arrived lighter. Without the feature,
    /// the task's load_avg.
    pub(crate) fn task_h_load(&self, t: TaskId) -> u64 {
        let tk = &self.tasks[t as usize];
        if !self.feat(Feat::GROUP_H_LOAD) {
            return tk.avg.load_avg;
        }
        let cfs = &self.rqs[tk.cpu as usize].cfs;
        let j = self.jiffies();
        if cfs.h_load_jiffy.get() != Some(j) {
            cfs.h_load.set(cfs.avg.load_avg);
            cfs.h_load_jiffy.set(Some(j));
        }
        tk.avg.load_avg * cfs.h_load.get() / (cfs.avg.load_avg + 1)
    }

    /// `cpu_runnable_without()`.
    pub(crate) fn cpu_runnable_without(&self, cpu: CpuId, t: TaskId) -> u64 {
        let r = self.cpu_runnable(cpu);
        if self.counted_on(cpu, t) {
            r.saturating_sub(self.tasks[t as usize].avg.runnable_avg)
        } else {
            r
        }
    }

    /// `cpu_util_without()`.
    pub(crate) fn cpu_util_without(&self, cpu: CpuId, t: TaskId) -> u64 {
        let cfs = &self.rqs[cpu as usize].cfs;
        let mut u = cfs.avg.util_avg;
        let tk = &self.tasks[t as usize];
        if self.counted_on(cpu, t) {
            u = u.saturating_sub(tk.avg.util_avg);
        }
        if self.feat(Feat::UTIL_EST) {
            let mut e = cfs.util_est;
            if self.counted_on(cpu, t) && tk.se.on_rq {
                e = e.saturating_sub(tk.util_est_ewma);
            }
            u = u.max(e);
        }
        // cpu_util() caps at the CPU's own capacity, not at what RT time leaves.
        u.min(self.kcap[cpu as usize])
    }
}

/// The slice a `sched_runtime` of `ns` asks for: a custom one clamped to
/// 0.1-100 ms, or with 0 the base slice `base_ns` (`(custom, slice)`).
pub(crate) fn requested_slice(ns: u64, base_ns: u64) -> (bool, u64) {
    if ns > 0 {
        (true, ns.clamp(100_000, 100_000_000))
    } else {
        (false, base_ns)
    }
}

/// A fair task's load weight (set_load_weight()): 3 under SCHED_IDLE,
/// whatever the nice value, else its nice level's.
pub(crate) fn policy_weight(idle_policy: bool, nice: i8) -> u64 {
    if idle_policy {
        WEIGHT_IDLEPRIO
    } else {
        crate::task::nice_to_weight(nice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slice_scales_with_log2_cpus() {
        assert_eq!(base_slice_ns(1), 700_000);
        assert_eq!(base_slice_ns(2), 1_400_000);
        assert_eq!(base_slice_ns(4), 2_100_000);
        assert_eq!(base_slice_ns(8), 2_800_000);
        assert_eq!(base_slice_ns(96), 2_800_000);
    }

    #[test]
    fn delta_fair_scales_by_weight() {
        assert_eq!(calc_delta_fair(1000, 1024), 1000);
        assert_eq!(calc_delta_fair(1000, 2048), 500);
        assert_eq!(calc_delta_fair(1000, 512), 2000);
    }
}
