//! Heterogeneous multi-processing (big.LITTLE) schedulers of patch set S5:
//! the Linaro MP baseline (`HMP_LINARO`) and Krasnov's HPERF_HMP
//! (`HMP_HPERF`). Both replace the generic balancing between the two
//! clusters (the top, asymmetric-capacity domain) with their own logic, and
//! keep the stock MC balancing inside each cluster.
//!
//! The "big" CPUs are those with the highest kernel capacity; the others
//! are "little". Neither scheme exists in mainline; the functions below are
//! written from the mechanisms' descriptions (patch-sets.md S5,
//! kernel-mechanics.md section 6), and each names the piece it mirrors.
//!
//! Constants chosen here (the cover letters leave them open):
//! - Linaro MP up/down thresholds 700/1024 and 256/1024: the published
//!   defaults of the Linaro/ARM big.LITTLE MP patches (`hmp_up_threshold`,
//!   `hmp_down_threshold`). The load they compare is Linaro's
//!   `load_avg_ratio`, the task's runnable fraction (not capacity-invariant,
//!   waiting time counts), i.e. the task entity's PELT `runnable_avg`.
//! - Linaro MP's offload (`hmp_offload_down()`), its settle delays
//!   (`hmp_next_up/down_threshold`, 4096 × 1024 ns) and the 3.10
//!   idle_balance() gate before its idle pull (average idle period at least
//!   `sysctl_sched_migration_cost`, 500 µs) follow the LSK 3.10 code the S5
//!   baseline ran. HPERF_HMP's idle pull is not gated: the cover letter says
//!   idle big CPUs always pull from little ones.
//! - HPERF balance interval: the top (cross-cluster) domain's minimum
//!   balance interval, one ms per CPU of its span (sd_init's
//!   `min_interval = sd_weight`), as the cover letter runs it from the
//!   balancing softirq like the domain it replaces.
//! - HPERF swap hysteresis: a pair is swapped only when the big task's
//!   druntime exceeds the little task's by more than one balance interval,
//!   so that the swap always moves at least one interval of big-core time.
//! - HPERF druntime rate: ±1 ns per ns run, weighted like vruntime
//!   (`calc_delta_fair`), so equal-weight tasks with equal time on both
//!   cluster types end near zero.

use crate::event::TaskId;
use crate::fair::calc_delta_fair;
use crate::fair::pelt::{SchedAvg, LOAD_AVG_MAX};
use crate::features::Feat;
use crate::sim::Sim;
use crate::task::TaskState;
use schedlab_topo::CpuId;

/// Linaro MP `hmp_up_threshold` (of 1024).
pub const HMP_UP_THRESHOLD: u64 = 700;
/// Linaro MP `hmp_down_threshold` (of 1024).
pub const HMP_DOWN_THRESHOLD: u64 = 256;
/// Linaro MP `hmp_next_up_threshold` / `hmp_next_down_threshold`: a task
/// is not moved up (down) again within 4096 × 1024 ns of its last up (down)
/// migration, so its load settles first.
pub const HMP_NEXT_MIGRATION_DELAY_NS: u64 = 4096 << 10;
/// Linaro MP's offload rule: a task running less than 768/1024 of its
/// runnable time is starving (`hmp_task_starvation() > 768` aborts).
pub const HMP_STARVATION_LIMIT: u64 = 768;
/// `sysctl_sched_migration_cost` (500 µs): 3.10's idle_balance() returns
/// early, before Linaro's idle pull, when the CPU's average idle period is
/// shorter.
pub const SCHED_MIGRATION_COST_NS: u64 = 500_000;

/// Per-task HMP state and placement counters.
#[derive(Clone, Copy, Debug, Default)]
pub struct HmpTask {
    /// HPERF_HMP druntime: grows while running on a big CPU, shrinks on a
    /// little one (ns, weighted like vruntime).
    pub druntime: i64,
    /// CPU time on big / little CPUs (ns), kept under either HMP feature.
    pub big_ns: u64,
    pub little_ns: u64,
    /// Linaro MP's load signal, kept as 3.10's per-entity load tracking kept
    /// it (see `hmp_track`): `load_sum` is the decayed period, `runnable_sum`
    /// and `util_sum` the decayed runnable and running time (<< 10).
    pub ratio_avg: SchedAvg,
    /// Linaro: when the task last moved up / down (`hmp_last_up_migration`,
    /// `hmp_last_down_migration`); `None` before its first move.
    pub last_up_ns: Option<u64>,
    pub last_down_ns: Option<u64>,
}

impl Sim {
    /// Either HMP scheme is on (cross-cluster generic balancing is replaced).
    pub(crate) fn hmp_active(&self) -> bool {
        self.feat(Feat::HMP_LINARO) || self.feat(Feat::HMP_HPERF)
    }

    /// The highest kernel capacity (the big CPUs').
    fn hmp_max_cap(&self) -> u64 {
        self.kcap.iter().copied().max().unwrap_or(1024)
    }

    /// Is `cpu` in the fast (big) domain (Linaro's `hmp_cpu_is_fastest()`)?
    pub(crate) fn hmp_is_big(&self, cpu: CpuId) -> bool {
        self.kcap[cpu as usize] >= self.hmp_max_cap()
    }

    /// Does domain `level` of `cpu` span more than the CPU's cluster? Under
    /// an HMP scheme such a domain is not balanced by the generic balancer
    /// (Linaro and HPERF clear load balancing on the cluster-spanning level).
    pub(crate) fn hmp_skip_level(&self, cpu: CpuId, level: usize) -> bool {
        if !self.hmp_active() {
            return false;
        }
        let Some(d) = self.domains.cpus[cpu as usize].domains.get(level) else {
            return false;
        };
        let cl = self.machine.cpus[cpu as usize].cluster;
        d.span
            .iter()
            .any(|c| self.machine.cpus[c as usize].cluster != cl)
    }

    /// Runtime accounting hook of update_curr(): HPERF's druntime update and
    /// the big/little time counters.
    pub(crate) fn hmp_account(&mut self, cpu: CpuId, t: TaskId, delta: u64) {
        let big = self.hmp_is_big(cpu);
        let tk = &mut self.tasks[t as usize];
        let d = calc_delta_fair(delta, tk.se.weight).min(i64::MAX as u64) as i64;
        if big {
            tk.hmp.big_ns += delta;
            tk.hmp.druntime = tk.hmp.druntime.saturating_add(d);
            self.counters.hmp_big_ns += delta;
        } else {
            tk.hmp.little_ns += delta;
            tk.hmp.druntime = tk.hmp.druntime.saturating_sub(d);
            self.counters.hmp_little_ns += delta;
        }
    }

    /// Accumulates Linaro's load signal up to now (called from
    /// update_load_avg() under HMP_LINARO, before the task's state changes).
    /// Mirrors 3.10's __update_entity_runnable_avg(): the signal runs on the
    /// task clock, so it is the runnable fraction in wall time. It is neither
    /// capacity- nor (at the top frequency the S5 runs use) frequency-scaled,
    /// unlike the 7.3 `runnable_avg`, whose PELT clock runs at 377/1024 speed
    /// on a busy A7 and would hide a crowded little CPU's load.
    pub(crate) fn hmp_track(&mut self, t: TaskId, runnable: bool, running: bool) {
        let now = self.now;
        let a = &mut self.tasks[t as usize].hmp.ratio_avg;
        a.update_sum(now, 1, runnable as u64, running);
    }

    /// Linaro's start at full load (the HMP variant of
    /// init_task_runnable_average()): a new task's history is one of
    /// permanent runnable and running time, which decays as its own
    /// accumulates.
    fn hmp_track_fork(&mut self, t: TaskId) {
        let now = self.now;
        let a = &mut self.tasks[t as usize].hmp.ratio_avg;
        *a = SchedAvg {
            load_sum: LOAD_AVG_MAX,
            runnable_sum: LOAD_AVG_MAX << 10,
            util_sum: LOAD_AVG_MAX << 10,
            last_update_time: now,
            ..SchedAvg::default()
        };
    }

    /// Linaro's `load_avg_ratio` (of 1024): decayed runnable time over
    /// decayed time, as of the task's last update.
    pub(crate) fn hmp_load_ratio(&self, t: TaskId) -> u64 {
        let a = &self.tasks[t as usize].hmp.ratio_avg;
        (a.runnable_sum / (a.load_sum + 1)).min(1024)
    }

    /// Fair tasks of `cpu` that may be moved by HMP (not delayed, not a
    /// kthread, allowed on some CPU of the other type is checked later).
    fn hmp_movable(&self, cpu: CpuId) -> Vec<TaskId> {
        let cfs = &self.rqs[cpu as usize].cfs;
        self.queued_entities(cpu)
            .into_iter()
            .chain(cfs.curr)
            .filter(|&t| {
                let tk = &self.tasks[t as usize];
                !tk.se.sched_delayed && !tk.kthread && tk.state != TaskState::Blocked
            })
            .collect()
    }

    /// The allowed CPU of the given type with the fewest runnable tasks
    /// (idle first), ties to the lowest number (Linaro's
    /// `hmp_domain_min_load()` on a task count).
    fn hmp_least_loaded(&self, t: TaskId, big: bool, exclude: Option<CpuId>) -> Option<CpuId> {
        let aff = self.tasks[t as usize].affinity;
        (0..self.nr_cpus() as CpuId)
            .filter(|&c| self.hmp_is_big(c) == big && aff.test(c) && Some(c) != exclude)
            .min_by_key(|&c| {
                (
                    !self.is_idle_cpu(c),
                    self.rqs[c as usize].nr_running(),
                    self.cpu_load(c),
                    c,
                )
            })
    }

    /// Wakeup/fork placement hook of select_task_rq_fair(); `None` when no
    /// HMP scheme is on.
    pub(crate) fn hmp_select_task_rq(
        &mut self,
        t: TaskId,
        prev: CpuId,
        fork: bool,
    ) -> Option<CpuId> {
        if self.feat(Feat::HMP_HPERF) {
            return Some(self.hperf_select_cpu(t, prev));
        }
        if self.feat(Feat::HMP_LINARO) {
            return Some(self.linaro_select_cpu(t, prev, fork));
        }
        None
    }

    /// Linaro MP's hmp_select_task_rq_fair(): new tasks start on the big
    /// cluster (their load is assumed full); a woken task on a little CPU
    /// whose load ratio exceeds the up threshold goes to a big CPU when one
    /// is not fully loaded; a task on a big CPU below the down threshold goes
    /// little; otherwise it stays in its cluster, on its previous CPU if idle,
    /// else the cluster's least loaded CPU.
    fn linaro_select_cpu(&mut self, t: TaskId, prev: CpuId, fork: bool) -> CpuId {
        let ratio = self.hmp_load_ratio(t);
        let prev_big = self.hmp_is_big(prev);
        let mut want_big = prev_big;
        if fork {
            self.hmp_track_fork(t);
            want_big = true;
        } else if !prev_big && ratio > HMP_UP_THRESHOLD && self.hmp_settled(t, true) {
            if let Some(c) = self.hmp_least_loaded(t, true, None) {
                if self.is_idle_cpu(c) {
                    want_big = true;
                }
            }
        } else if prev_big && ratio < HMP_DOWN_THRESHOLD && self.hmp_settled(t, false) {
            want_big = false;
        }
        let aff = self.tasks[t as usize].affinity;
        if want_big == prev_big && aff.test(prev) && self.is_idle_cpu(prev) {
            return prev;
        }
        let cpu = self
            .hmp_least_loaded(t, want_big, None)
            .or_else(|| self.hmp_least_loaded(t, !want_big, None))
            .unwrap_or(prev);
        // Count only real moves between clusters (not a fork's first placement).
        if !fork && self.hmp_is_big(cpu) != prev_big {
            self.hmp_note_move(t, !prev_big);
        }
        cpu
    }

    /// HPERF_HMP wakeup: the least loaded allowed CPU, where load is the
    /// runnable count scaled by the slowdown of the CPU (big/own capacity);
    /// an idle CPU always wins, big before little.
    fn hperf_select_cpu(&self, t: TaskId, prev: CpuId) -> CpuId {
        let aff = self.tasks[t as usize].affinity;
        let maxcap = self.hmp_max_cap();
        (0..self.nr_cpus() as CpuId)
            .filter(|&c| aff.test(c))
            .min_by_key(|&c| {
                let idle = self.is_idle_cpu(c);
                let nr = self.rqs[c as usize].nr_running() as u64 + 1;
                let scaled = nr * maxcap * 1024 / self.kcap[c as usize].max(1);
                (
                    !idle,
                    if idle { 0 } else { scaled },
                    !self.hmp_is_big(c),
                    c != prev,
                    c,
                )
            })
            .unwrap_or(prev)
    }

    /// Moves task `t` (running or queued) to `dst` (an HMP migration, like
    /// the stopper-driven move of a running task); `kick` reschedules `dst`.
    fn hmp_migrate(&mut self, t: TaskId, dst: CpuId, kick: bool) {
        let src = self.tasks[t as usize].cpu;
        if src == dst || !self.tasks[t as usize].affinity.test(dst) {
            return;
        }
        self.update_rq_clock(src);
        self.update_rq_clock(dst);
        let running = self.rqs[src as usize].curr == Some(t);
        if running {
            self.update_curr(src);
            self.stop_running(t);
            self.put_prev_entity(src, t);
            self.rqs[src as usize].curr = None;
            let tk = &mut self.tasks[t as usize];
            tk.state = TaskState::Runnable;
            tk.stats.wait_start_ns = self.now;
        }
        self.move_queued_task(t, src, dst);
        if kick {
            if self.rqs[dst as usize].curr.is_none() {
                self.resched_cpu(dst, src);
            } else {
                self.wakeup_preempt(dst, t, src);
            }
        }
        if running {
            self.pick_and_switch(src, Some(t));
        }
    }

    /// Tick hook: Linaro's forced up/down migration of the running task, and
    /// HPERF's balancing step when due.
    pub(crate) fn hmp_tick(&mut self, cpu: CpuId) {
        if self.feat(Feat::HMP_HPERF) {
            if self.now >= self.hmp_next_balance {
                self.hmp_next_balance = self.now + self.hperf_interval_ns();
                self.hperf_balance();
            }
            return;
        }
        if !self.feat(Feat::HMP_LINARO) {
            return;
        }
        let Some(t) = self.rqs[cpu as usize].curr else {
            return;
        };
        if self.tasks[t as usize].kthread {
            return;
        }
        let ratio = self.hmp_load_ratio(t);
        if !self.hmp_is_big(cpu) && ratio > HMP_UP_THRESHOLD {
            // hmp_force_up_migration() with hmp_up_migration(): only to an
            // idle big CPU, and not again before the load has settled.
            if !self.hmp_settled(t, true) {
                return;
            }
            if let Some(c) = self.hmp_least_loaded(t, true, None) {
                if self.is_idle_cpu(c) {
                    self.hmp_note_move(t, true);
                    self.hmp_migrate(t, c, true);
                }
            }
        } else if self.hmp_is_big(cpu) && ratio < HMP_DOWN_THRESHOLD {
            // Down-migration of a light task (hmp_down_migration()).
            if !self.hmp_settled(t, false) {
                return;
            }
            if let Some(c) = self.hmp_least_loaded(t, false, None) {
                self.hmp_note_move(t, false);
                self.hmp_migrate(t, c, true);
            }
        } else if let Some(c) = self.linaro_offload_target(cpu, t) {
            self.hmp_note_move(t, false);
            self.counters.hmp_offloads += 1;
            self.hmp_migrate(t, c, true);
        }
    }

    /// Counts a move between the clusters (up = little to big) and notes
    /// when it happened (Linaro's `hmp_last_up/down_migration`, read by
    /// `hmp_settled`; HPERF_HMP never reads them).
    fn hmp_note_move(&mut self, t: TaskId, up: bool) {
        let h = &mut self.tasks[t as usize].hmp;
        if up {
            self.counters.hmp_up += 1;
            h.last_up_ns = Some(self.now);
        } else {
            self.counters.hmp_down += 1;
            h.last_down_ns = Some(self.now);
        }
    }

    /// Linaro: has the task's load settled since its last up (`up`) or
    /// down migration (the `hmp_next_up/down_threshold` checks)?
    fn hmp_settled(&self, t: TaskId, up: bool) -> bool {
        let h = &self.tasks[t as usize].hmp;
        let last = if up { h.last_up_ns } else { h.last_down_ns };
        last.is_none_or(|l| self.now.saturating_sub(l) >= HMP_NEXT_MIGRATION_DELAY_NS)
    }

    /// mirrors Linaro MP's hmp_offload_down(): the running task of a big
    /// CPU goes to an idle little CPU when no big CPU is idle, its CPU runs
    /// more than one task, and it is starving (it ran at most 768/1024 of
    /// the time it was runnable: running average over runnable average).
    fn linaro_offload_target(&self, cpu: CpuId, t: TaskId) -> Option<CpuId> {
        if !self.hmp_is_big(cpu) || self.rqs[cpu as usize].nr_running() < 2 {
            return None;
        }
        let big_idle =
            (0..self.nr_cpus() as CpuId).any(|c| self.hmp_is_big(c) && self.is_idle_cpu(c));
        if big_idle {
            return None;
        }
        let avg = &self.tasks[t as usize].hmp.ratio_avg;
        let starvation = avg.util_sum * 1024 / (avg.runnable_sum + 1);
        if starvation > HMP_STARVATION_LIMIT {
            return None;
        }
        let c = self.hmp_least_loaded(t, false, None)?;
        self.is_idle_cpu(c).then_some(c)
    }

    /// Idle hook before newidle balancing: a big CPU about to idle pulls
    /// from a little CPU (HPERF: always, the lowest-druntime task; Linaro's
    /// hmp_idle_pull(): the heaviest task above the up threshold). Returns
    /// true when a task was pulled. Little CPUs never pull from big ones.
    pub(crate) fn hmp_idle_pull(&mut self, cpu: CpuId) -> bool {
        if !self.hmp_active() || self.hmp_in_balance || !self.hmp_is_big(cpu) {
            return false;
        }
        let hperf = self.feat(Feat::HMP_HPERF);
        // Linaro's pull sits at the end of 3.10's idle_balance(), which
        // returns first when the CPU's idle periods are short on average.
        if !hperf && self.rqs[cpu as usize].avg_idle < SCHED_MIGRATION_COST_NS {
            return false;
        }
        let mut best: Option<(i64, TaskId)> = None;
        for c in 0..self.nr_cpus() as CpuId {
            if self.hmp_is_big(c) {
                continue;
            }
            for t in self.hmp_movable(c) {
                if !self.tasks[t as usize].affinity.test(cpu) {
                    continue;
                }
                let key = if hperf {
                    self.tasks[t as usize].hmp.druntime
                } else {
                    let r = self.hmp_load_ratio(t);
                    if r <= HMP_UP_THRESHOLD {
                        continue;
                    }
                    -(r as i64)
                };
                if best.is_none_or(|(k, bt)| (key, t) < (k, bt)) {
                    best = Some((key, t));
                }
            }
        }
        let Some((_, t)) = best else {
            return false;
        };
        self.hmp_in_balance = true;
        self.hmp_note_move(t, true);
        self.hmp_migrate(t, cpu, false);
        self.hmp_in_balance = false;
        true
    }

    /// HPERF balance interval (see the module doc).
    fn hperf_interval_ns(&self) -> u64 {
        (self.nr_cpus() as u64).max(1) * 1_000_000
    }

    /// HPERF_HMP's balancing step over the two clusters (the new HMP level
    /// of the balancing softirq). Cluster loads are runnable counts per CPU,
    /// the little cluster's scaled by the slowdown coefficient (big/little
    /// capacity; frequencies are fixed at maximum in the model). Moves, in
    /// order: fill an idle big CPU from little; big → little when a big task
    /// waits while a little CPU idles, or, with both clusters saturated,
    /// when that lowers the heavier of the two scaled loads; little → big
    /// likewise; else swap the big task with the highest druntime and the
    /// little task with the lowest, one pair per balance. (Our reading of
    /// "too loaded": a move must never leave a CPU idle while tasks wait.)
    pub(crate) fn hperf_balance(&mut self) {
        let n = self.nr_cpus() as CpuId;
        let maxcap = self.hmp_max_cap();
        let (mut nb, mut nl, mut cb, mut cl) = (0u64, 0u64, 0u64, 0u64);
        let mut little_cap = maxcap;
        for c in 0..n {
            let nr = self.rqs[c as usize].nr_running() as u64;
            if self.hmp_is_big(c) {
                nb += nr;
                cb += 1;
            } else {
                nl += nr;
                cl += 1;
                little_cap = little_cap.min(self.kcap[c as usize].max(1));
            }
        }
        if cb == 0 || cl == 0 {
            return;
        }
        self.counters.hmp_balance += 1;
        // Loads in 1/1024 task per CPU, little scaled by the slowdown.
        let slow = maxcap * 1024 / little_cap;
        let lb = |nb: u64| nb * 1024 * 1024 / cb;
        let ll = |nl: u64| nl * slow * 1024 / cl;
        self.hmp_in_balance = true;
        // 1. An idle big CPU pulls from little.
        let idle_big = (0..n).find(|&c| self.hmp_is_big(c) && self.is_idle_cpu(c));
        if let (Some(dst), true) = (idle_big, nl > 0) {
            if let Some(t) = self.hperf_pick(false, dst, false) {
                self.hmp_note_move(t, true);
                self.hmp_migrate(t, dst, true);
                self.hmp_in_balance = false;
                return;
            }
        }
        let before = lb(nb).max(ll(nl));
        let idle_little = (0..n).any(|c| !self.hmp_is_big(c) && self.is_idle_cpu(c));
        // 2. Big → little: the big cluster is too loaded, i.e. a big task
        // waits while a little CPU idles (more total capacity in use), or
        // both clusters are saturated and the move evens the scaled loads.
        let big_over = nb > cb && idle_little;
        let even_down = nb > cb && nl >= cl && lb(nb - 1).max(ll(nl + 1)) < before;
        if big_over || even_down {
            if let Some(t) = self.hperf_pick(true, CpuId::MAX, true) {
                if let Some(dst) = self.hmp_least_loaded(t, false, None) {
                    self.hmp_note_move(t, false);
                    self.hmp_migrate(t, dst, true);
                    self.hmp_in_balance = false;
                    return;
                }
            }
        }
        // 3. Little → big: both clusters stay saturated and the scaled
        // loads even out (an idle big CPU was handled by step 1).
        if nl > cl && nb >= cb && lb(nb + 1).max(ll(nl - 1)) < before {
            if let Some(t) = self.hperf_pick(false, CpuId::MAX, false) {
                if let Some(dst) = self.hmp_least_loaded(t, true, None) {
                    self.hmp_note_move(t, true);
                    self.hmp_migrate(t, dst, true);
                    self.hmp_in_balance = false;
                    return;
                }
            }
        }
        // 4. Balanced: swap a pair for fairness.
        if nb > 0 && nl > 0 {
            let a = self.hperf_pick(true, CpuId::MAX, false);
            let b = self.hperf_pick(false, CpuId::MAX, false);
            if let (Some(a), Some(b)) = (a, b) {
                let da = self.tasks[a as usize].hmp.druntime;
                let db = self.tasks[b as usize].hmp.druntime;
                let hyst = self.hperf_interval_ns() as i64;
                let (ca, cbp) = (self.tasks[a as usize].cpu, self.tasks[b as usize].cpu);
                let allowed = self.tasks[a as usize].affinity.test(cbp)
                    && self.tasks[b as usize].affinity.test(ca);
                if allowed && da.saturating_sub(db) > hyst {
                    self.counters.hmp_swaps += 1;
                    // Little → big first, so the big CPU never goes idle.
                    self.hmp_migrate(b, ca, true);
                    self.hmp_migrate(a, cbp, true);
                }
            }
        }
        self.hmp_in_balance = false;
    }

    /// HPERF task choice by druntime: on the big cluster the highest, on the
    /// little cluster the lowest; `allowed_on` filters by affinity (when a
    /// CPU), `shared_only` keeps tasks of big CPUs running more than one.
    fn hperf_pick(&self, from_big: bool, allowed_on: CpuId, shared_only: bool) -> Option<TaskId> {
        let mut best: Option<(i64, TaskId)> = None;
        for c in 0..self.nr_cpus() as CpuId {
            if self.hmp_is_big(c) != from_big {
                continue;
            }
            if shared_only && self.rqs[c as usize].nr_running() < 2 {
                continue;
            }
            for t in self.hmp_movable(c) {
                let tk = &self.tasks[t as usize];
                if allowed_on != CpuId::MAX && !tk.affinity.test(allowed_on) {
                    continue;
                }
                // Highest druntime from big, lowest from little.
                let key = if from_big {
                    tk.hmp.druntime.saturating_neg()
                } else {
                    tk.hmp.druntime
                };
                if best.is_none_or(|(k, bt)| (key, t) < (k, bt)) {
                    best = Some((key, t));
                }
            }
        }
        best.map(|(_, t)| t)
    }
}
