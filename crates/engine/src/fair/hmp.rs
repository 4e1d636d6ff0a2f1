//! Heterogeneous multi-processing (big.LITTLE) schedulers of patch set S5:
//! the Linaro MP baseline (`HMP_LINARO`) and Krasnov's HPERF_HMP
//! (`HMP_HPERF`). Both replace the generic balancing between the two
//! clusters (the top, asymmetric-capacity domain) with their own logic, and
//! keep the stock MC balancing inside each cluster.
//!
//! The "big" CPUs are those with the highest kernel capacity; the others
//! are "little". Neither scheme exists in mainline. HPERF_HMP is written
//! from its cover letter (patch-sets.md S5, kernel-mechanics.md section 6).
//! Linaro MP is written from the big.LITTLE MP code as shipped for this SoC:
//! kernel/sched/fair.c of Samsung's Exynos 5422 Linux 3.10.9 tree (GitHub
//! kumajaya/android_kernel_samsung_universal5422, defconfig
//! exynos5422-k3g_00: CONFIG_SCHED_HMP, HZ=200, fast CPUs 4-7), plus the
//! later LSK rule for new tasks (commit "HMP: Force new non-kernel tasks
//! onto big CPUs until load stabilises"; ARM's Cortex-A programmer's guide
//! DEN0024A 16.3.1, "fork migration"), which that tree predates. Each
//! function names the piece it mirrors:
//! - wakeup: the stock path, kept inside the cluster (the cluster-spanning
//!   level does not balance, and select_idle_sibling() searches the
//!   target's LLC with no capacity test, as 3.10's did), then
//!   hmp_up_migration() to an idle big CPU
//!   or hmp_down_migration() of a light task, else the stock choice if it
//!   stays in the previous CPU's cluster, else the previous CPU;
//! - hmp_domain_min_load(): any runnable load makes a CPU full, ties go to
//!   the CPU an HMP migration targeted longest ago;
//! - hmp_force_up_migration() from the balancing softirq, for every CPU:
//!   the heaviest of the running and first five queued tasks moves up, or
//!   the lightest queued one is offloaded down (hmp_offload_down());
//! - hmp_idle_pull() at the end of idle_balance(), when the domains'
//!   newidle balancing pulled nothing.
//!
//! Constants (from that code; the cover letter leaves them open):
//! - Linaro MP up/down thresholds 700/1024 and 256/1024 (`hmp_up_threshold`,
//!   `hmp_down_threshold`). The load they compare is Linaro's
//!   `load_avg_ratio`, the task's runnable fraction (not capacity-invariant,
//!   waiting time counts) with the 32 ms half-life (the tree's
//!   `load_avg_period_ms` default; its frequency scaling is a no-op at the
//!   top frequency the S5 runs use).
//! - settle delays `hmp_next_up/down_threshold`, 4096 × 1024 ns; offload
//!   starvation limit 768/1024; five queued tasks looked at
//!   (`hmp_max_tasks`); the 3.10 idle_balance() gate before the idle pull
//!   (average idle period at least `sysctl_sched_migration_cost`, 500 µs).
//!   HPERF_HMP's idle pull is not gated: the cover letter says idle big
//!   CPUs always pull from little ones.
//! - HPERF balance interval (`HMP_HPERF_SOFTIRQ`, on): the cover letter balances
//!   the HMP level "by new logic in the balancing softirq", so its step
//!   takes the place of sched_balance_rq()'s balance of the (lowest)
//!   cross-cluster domain in sched_balance_domains() and inherits that
//!   loop's timing: a CPU runs it when the level is due for that CPU, at
//!   the level's interval (one ms per CPU of its span, sd_init's
//!   `min_interval = sd_weight`, in whole jiffies: 10 ms at HZ=200),
//!   stretched by `busy_factor` (16) while the CPU is busy (125 ms at
//!   HZ=200), from its tick or from nohz idle balancing, and, as every
//!   domain's pass is, only on the CPU that should_we_balance() names in
//!   its group, the CPU's cluster (its first idle CPU, else its first).
//!   The ticks of all CPUs fall on one jiffy, so with both clusters busy
//!   the two clusters' CPUs step in the same jiffy, one after the other.
//!   The step looks at both clusters whichever CPU runs it. The interval's
//!   back-off after balanced passes is sched_balance_rq()'s own and does
//!   not apply. Off: one global step every minimum interval on the first
//!   tick after it is due, busy or not (the eighteenth round's rule).
//! - HPERF swap hysteresis: a pair is swapped only when the big task's
//!   druntime exceeds the little task's by more than the level's minimum
//!   interval, so that the swap always moves at least that much big-core
//!   time.
//! - HPERF druntime rate: ±1 ns per ns run, weighted like vruntime
//!   (`calc_delta_fair`), so equal-weight tasks with equal time on both
//!   cluster types end near zero.

use crate::event::TaskId;
use crate::fair::calc_delta_fair;
use crate::fair::pelt::{SchedAvg, LOAD_AVG_MAX};
use crate::features::Feat;
use crate::sim::Sim;
use crate::task::TaskState;
use schedlab_topo::{CpuId, CpuMask};

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
/// Linaro MP looks at the running task and at most this many queued tasks
/// of a runqueue when it picks the heaviest or lightest one (`hmp_max_tasks`).
pub const HMP_MAX_TASKS: usize = 5;

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
        self.kcap_max
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
    pub(crate) fn hmp_track_fork(&mut self, t: TaskId) {
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

    /// HPERF_HMP's target in a cluster: the allowed CPU of the given type
    /// with the fewest runnable tasks (idle first), ties to the lowest
    /// number.
    fn hmp_least_loaded(&self, t: TaskId, big: bool) -> Option<CpuId> {
        let aff = self.tasks[t as usize].affinity;
        (0..self.nr_cpus() as CpuId)
            .filter(|&c| self.hmp_is_big(c) == big && aff.test(c))
            .min_by_key(|&c| {
                (
                    !self.is_idle_cpu(c),
                    self.rqs[c as usize].cfs.nr_runnable(),
                    self.cpu_load(c),
                    c,
                )
            })
    }

    /// Wakeup/fork placement hook of select_task_rq_fair(): `Some` when an
    /// HMP scheme decides the CPU. HPERF_HMP always decides; Linaro MP only
    /// for forks and up/down migrations, and otherwise lets the stock path
    /// choose inside the task's cluster (see `linaro_keep_cluster`).
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
            return self.linaro_select_cpu(t, prev, fork);
        }
        None
    }

    /// Linaro MP's part of select_task_rq_fair(). A new task goes to the big
    /// domain's least loaded CPU (`hmp_select_faster_cpu()`) with a
    /// full-load history (HMP_FORK_BOOST; without it, a new task is placed
    /// as a woken one, with the load history it copied from its parent);
    /// a woken task moves up when hmp_up_migration()
    /// finds an idle big CPU, down to the little domain's least loaded CPU
    /// when hmp_down_migration() says it is light; `None` otherwise.
    fn linaro_select_cpu(&mut self, t: TaskId, prev: CpuId, fork: bool) -> Option<CpuId> {
        let aff = self.tasks[t as usize].affinity;
        if fork && self.feat(Feat::HMP_FORK_BOOST) {
            // (spawn() gave the task its full-load history.)
            let (_, cpu) = self.hmp_domain_min_load(true, aff);
            let cpu = cpu?;
            self.linaro_delay(t, cpu, true);
            return Some(cpu);
        }
        if let Some(cpu) = self.hmp_up_migration(prev, t) {
            self.counters.hmp_up += 1;
            self.linaro_delay(t, cpu, true);
            return Some(cpu);
        }
        if self.hmp_down_migration(prev, t) {
            if let (_, Some(cpu)) = self.hmp_domain_min_load(false, aff) {
                self.counters.hmp_down += 1;
                self.linaro_delay(t, cpu, false);
                return Some(cpu);
            }
        }
        None
    }

    /// Linaro MP's last rule of select_task_rq_fair(): the stock path's
    /// choice stands only inside the HMP domain (cluster type) of the task's
    /// previous CPU; otherwise the task stays on its previous CPU.
    pub(crate) fn linaro_keep_cluster(&self, prev: CpuId, cpu: CpuId) -> CpuId {
        if self.feat(Feat::HMP_LINARO) && self.hmp_is_big(cpu) != self.hmp_is_big(prev) {
            prev
        } else {
            cpu
        }
    }

    /// mirrors Linaro MP's hmp_domain_min_load() over the big (`big`) or
    /// little CPUs allowed by `aff`: the load is 0 when one of them has no
    /// runnable fair task and 1023 otherwise (any load counts as full), and
    /// the CPU is the first such idle one or, among equals, the one an HMP
    /// migration targeted longest ago (`hmp_last_up/down_migration` of the
    /// runqueue). `None` when no CPU of the domain is allowed.
    pub(crate) fn hmp_domain_min_load(&self, big: bool, aff: CpuMask) -> (u64, Option<CpuId>) {
        let mut best: Option<(u64, u64, CpuId)> = None;
        for c in 0..self.nr_cpus() as CpuId {
            if self.hmp_is_big(c) != big || !aff.test(c) {
                continue;
            }
            let rq = &self.rqs[c as usize];
            let load = if rq.cfs.nr_runnable() > 0 { 1023 } else { 0 };
            // Never targeted sorts before any time (the kernel's 0).
            let last = rq
                .hmp_last_up_ns
                .or(rq.hmp_last_down_ns)
                .map_or(0, |ns| ns + 1);
            if best.is_none_or(|(bl, bt, _)| (load, last) < (bl, bt)) {
                best = Some((load, last, c));
            }
        }
        match best {
            Some((load, _, c)) => (load, Some(c)),
            None => (1023, None),
        }
    }

    /// mirrors Linaro MP's hmp_up_migration(): a task on a little CPU whose
    /// load ratio reached the up threshold, settled since its last up move,
    /// goes to an idle allowed big CPU (the big domain's minimum load must
    /// be 0).
    fn hmp_up_migration(&self, cpu: CpuId, t: TaskId) -> Option<CpuId> {
        if self.hmp_is_big(cpu)
            || self.hmp_load_ratio(t) < HMP_UP_THRESHOLD
            || !self.hmp_settled(t, true)
        {
            return None;
        }
        match self.hmp_domain_min_load(true, self.tasks[t as usize].affinity) {
            (0, cpu) => cpu,
            _ => None,
        }
    }

    /// mirrors Linaro MP's hmp_down_migration(): a task on a big CPU, settled
    /// since its last down move, allowed on a little CPU, whose load ratio is
    /// below the down threshold.
    fn hmp_down_migration(&self, cpu: CpuId, t: TaskId) -> bool {
        if !self.hmp_is_big(cpu) || !self.hmp_settled(t, false) {
            return false;
        }
        self.hmp_domain_allowed(self.tasks[t as usize].affinity, false)
            && self.hmp_load_ratio(t) < HMP_DOWN_THRESHOLD
    }

    /// Does `aff` allow some CPU of the big (`big`) or little domain?
    fn hmp_domain_allowed(&self, aff: CpuMask, big: bool) -> bool {
        (0..self.nr_cpus() as CpuId).any(|c| self.hmp_is_big(c) == big && aff.test(c))
    }

    /// mirrors Linaro MP's hmp_next_up_delay() / hmp_next_down_delay(): note
    /// the move on the task (for its settle time) and on the target runqueue
    /// (for hmp_domain_min_load()'s choice among equals); the timestamp of
    /// the other direction is cleared on both.
    fn linaro_delay(&mut self, t: TaskId, cpu: CpuId, up: bool) {
        let now = self.now;
        let h = &mut self.tasks[t as usize].hmp;
        let rq = &mut self.rqs[cpu as usize];
        if up {
            (h.last_up_ns, h.last_down_ns) = (Some(now), None);
            (rq.hmp_last_up_ns, rq.hmp_last_down_ns) = (Some(now), None);
        } else {
            (h.last_up_ns, h.last_down_ns) = (None, Some(now));
            (rq.hmp_last_up_ns, rq.hmp_last_down_ns) = (None, Some(now));
        }
    }

    /// Linaro MP's candidates on `cpu` (hmp_get_heaviest_task() /
    /// hmp_get_lightest_task()): the running fair task and the first
    /// `HMP_MAX_TASKS` queued ones in timeline order. The heaviest starts
    /// from the running task and takes a queued task with a higher ratio
    /// that may run in the other domain; the lightest is the queued such
    /// task with the lowest ratio, or the running task if none is queued.
    fn linaro_pick(&self, cpu: CpuId, heaviest: bool) -> Option<TaskId> {
        let curr = self.rqs[cpu as usize].cfs.curr?;
        let big = self.hmp_is_big(cpu);
        // Nothing to move up from the big domain or down from the little one.
        if heaviest == big {
            return Some(curr);
        }
        let mut best: Option<(u64, TaskId)> = heaviest.then(|| (self.hmp_load_ratio(curr), curr));
        for t in self.queued_first(cpu, HMP_MAX_TASKS) {
            let tk = &self.tasks[t as usize];
            if tk.se.sched_delayed || !self.hmp_domain_allowed(tk.affinity, !big) {
                continue;
            }
            let r = self.hmp_load_ratio(t);
            let better = match best {
                None => true,
                Some((br, _)) if heaviest => r > br,
                Some((br, _)) => r < br,
            };
            if better {
                best = Some((r, t));
            }
        }
        Some(best.map_or(curr, |(_, t)| t))
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
                let nr = self.rqs[c as usize].cfs.nr_runnable() as u64 + 1;
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

    /// Tick hook: HPERF's global balancing step when due, with
    /// HMP_HPERF_SOFTIRQ off (on, sched_balance_rq() runs it for the
    /// cluster-spanning level). (Linaro MP's forced migrations run from the
    /// balancing softirq: `linaro_force_migration`.)
    pub(crate) fn hmp_tick(&mut self) {
        if self.feat(Feat::HMP_HPERF)
            && !self.feat(Feat::HMP_HPERF_SOFTIRQ)
            && self.now >= self.hmp_next_balance
        {
            self.hmp_next_balance = self.jiffies_ns() + self.hperf_interval_ns();
            self.hperf_balance();
        }
    }

    /// mirrors Linaro MP's hmp_force_up_migration(), run at the start of the
    /// balancing softirq (run_rebalance_domains()) on whichever CPU runs it:
    /// for every CPU with a running fair task, the heaviest of its candidates
    /// moves up if hmp_up_migration() allows; otherwise the lightest may be
    /// offloaded down (hmp_offload_down()).
    pub(crate) fn linaro_force_migration(&mut self) {
        if !self.feat(Feat::HMP_LINARO) || self.hmp_in_balance {
            return;
        }
        self.hmp_in_balance = true;
        for cpu in 0..self.nr_cpus() as CpuId {
            let Some(t) = self.linaro_pick(cpu, true) else {
                continue;
            };
            if let Some(dst) = self.hmp_up_migration(cpu, t) {
                self.counters.hmp_up += 1;
                self.linaro_delay(t, dst, true);
                self.stopper_move_task(t, dst, true);
                continue;
            }
            let Some(t) = self.linaro_pick(cpu, false) else {
                continue;
            };
            if let Some(dst) = self.linaro_offload_target(cpu, t) {
                self.counters.hmp_down += 1;
                self.counters.hmp_offloads += 1;
                self.linaro_delay(t, dst, false);
                self.stopper_move_task(t, dst, true);
            }
        }
        self.hmp_in_balance = false;
    }

    /// Linaro MP raises the balancing softirq on the next tick when a task
    /// on a little CPU has crossed the up threshold (the hook in its
    /// __update_task_entity_contrib()), so hmp_force_up_migration() runs.
    pub(crate) fn linaro_kick_up(&mut self, cpu: CpuId, t: TaskId) {
        if !self.hmp_is_big(cpu) && self.hmp_load_ratio(t) > HMP_UP_THRESHOLD {
            let now_j = self.jiffies_ns();
            let rq = &mut self.rqs[cpu as usize];
            rq.next_balance = rq.next_balance.min(now_j);
        }
    }

    /// Counts an HPERF_HMP move between the clusters (up = little to big)
    /// and notes when it happened (HPERF_HMP itself never reads the time).
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

    /// mirrors Linaro MP's hmp_offload_down() for candidate `t` of big CPU
    /// `cpu`: no big CPU is idle, `cpu` runs more than one fair task, `t` is
    /// starving (it ran at most 768/1024 of the time it was runnable:
    /// running average over runnable average), and a little CPU it may run
    /// on is idle; that CPU is the target.
    fn linaro_offload_target(&self, cpu: CpuId, t: TaskId) -> Option<CpuId> {
        if !self.hmp_is_big(cpu) {
            return None;
        }
        if self
            .hmp_domain_min_load(true, CpuMask::first_n(self.nr_cpus()))
            .0
            == 0
        {
            return None;
        }
        if self.rqs[cpu as usize].cfs.nr_runnable() < 2 {
            return None;
        }
        let avg = &self.tasks[t as usize].hmp.ratio_avg;
        let starvation = avg.util_sum * 1024 / (avg.runnable_sum + 1);
        if starvation > HMP_STARVATION_LIMIT {
            return None;
        }
        match self.hmp_domain_min_load(false, self.tasks[t as usize].affinity) {
            (0, c) => c,
            _ => None,
        }
    }

    /// Idle hook of a big CPU about to idle: it pulls from a little CPU
    /// (HPERF: always, the lowest-druntime task, before newidle balancing;
    /// Linaro's hmp_idle_pull(): the heaviest task above the up threshold,
    /// after newidle balancing pulled nothing). Returns true when a task was
    /// pulled. Little CPUs never pull from big ones.
    pub(crate) fn hmp_idle_pull(&mut self, cpu: CpuId) -> bool {
        if !self.hmp_active() || self.hmp_in_balance || !self.hmp_is_big(cpu) {
            return false;
        }
        let hperf = self.feat(Feat::HMP_HPERF);
        // Linaro's pull sits at the end of 3.10's idle_balance(), which
        // returns first when the CPU's idle periods are short on average.
        if !hperf && self.rqs[cpu as usize].avg_idle < self.cfg.tunables.migration_cost_ns {
            return false;
        }
        let picked = if hperf {
            self.hperf_idle_pick(cpu)
        } else {
            self.linaro_idle_pick(cpu)
        };
        let Some(t) = picked else {
            return false;
        };
        self.hmp_in_balance = true;
        if hperf {
            self.hmp_note_move(t, true);
        } else {
            self.counters.hmp_up += 1;
            self.linaro_delay(t, cpu, true);
        }
        self.stopper_move_task(t, cpu, false);
        self.hmp_in_balance = false;
        true
    }

    /// Where `t`, queued on `cpu`, belongs in HPERF_HMP's druntime index
    /// (`Sim::hperf_queued`): the CPU type's side and the (druntime, id) key.
    pub(crate) fn hperf_slot(&self, cpu: CpuId, t: TaskId) -> (usize, (i64, TaskId)) {
        let side = usize::from(self.hmp_is_big(cpu));
        (side, (self.tasks[t as usize].hmp.druntime, t))
    }

    /// Keeps HPERF_HMP's druntime index in step with the timelines: called
    /// when `t` enters (`queued`) or leaves `cpu`'s timeline.
    pub(crate) fn hperf_track(&mut self, cpu: CpuId, t: TaskId, queued: bool) {
        if !self.feat(Feat::HMP_HPERF) {
            return;
        }
        let (side, key) = self.hperf_slot(cpu, t);
        if queued {
            self.hperf_queued[side].insert(key);
        } else {
            self.hperf_queued[side].remove(&key);
        }
    }

    /// HPERF_HMP's idle pull takes the little task with the lowest druntime
    /// that may run on `cpu`.
    fn hperf_idle_pick(&self, cpu: CpuId) -> Option<TaskId> {
        self.hperf_extreme(false, false, |t| self.tasks[t as usize].affinity.test(cpu))
    }

    /// HPERF_HMP's task choice on one side: among the movable tasks (running
    /// or queued, not delayed, not kernel threads) of the big (`big`) or
    /// little CPUs that pass `ok`, the one with the lowest druntime, or the
    /// highest when `highest`; ties go to the lowest task id. Queued tasks
    /// come from `hperf_queued` in druntime order (usually the first entry
    /// passes), running ones are looked at per CPU.
    pub(crate) fn hperf_extreme(
        &self,
        big: bool,
        highest: bool,
        ok: impl Fn(TaskId) -> bool,
    ) -> Option<TaskId> {
        let movable = |t: TaskId| {
            let tk = &self.tasks[t as usize];
            !tk.se.sched_delayed && !tk.kthread && tk.state != TaskState::Blocked && ok(t)
        };
        let better = |a: (i64, TaskId), b: (i64, TaskId)| {
            if highest {
                a.0 > b.0 || (a.0 == b.0 && a.1 < b.1)
            } else {
                a < b
            }
        };
        let set = &self.hperf_queued[usize::from(big)];
        let mut best = if highest {
            // The highest druntime that passes, then its lowest id.
            set.iter()
                .rev()
                .find(|&&(_, t)| movable(t))
                .and_then(|&(d, t)| set.range((d, 0)..=(d, t)).find(|&&(_, u)| movable(u)))
                .copied()
        } else {
            set.iter().find(|&&(_, t)| movable(t)).copied()
        };
        for c in 0..self.nr_cpus() as CpuId {
            if self.hmp_is_big(c) != big {
                continue;
            }
            if let Some(t) = self.rqs[c as usize].cfs.curr.filter(|&t| movable(t)) {
                let cand = (self.tasks[t as usize].hmp.druntime, t);
                if best.is_none_or(|b| better(cand, b)) {
                    best = Some(cand);
                }
            }
        }
        best.map(|(_, t)| t)
    }

    /// mirrors the choice in Linaro MP's hmp_idle_pull(): over the little
    /// CPUs in order, each one's heaviest candidate (`linaro_pick`) whose
    /// load ratio is above the up threshold; the highest ratio wins (the
    /// first CPU among equals). No settle time is checked.
    fn linaro_idle_pick(&self, cpu: CpuId) -> Option<TaskId> {
        let mut best: Option<(u64, TaskId)> = None;
        for c in 0..self.nr_cpus() as CpuId {
            if self.hmp_is_big(c) {
                continue;
            }
            let Some(t) = self.linaro_pick(c, true) else {
                continue;
            };
            let tk = &self.tasks[t as usize];
            if tk.kthread || !tk.affinity.test(cpu) {
                continue;
            }
            let r = self.hmp_load_ratio(t);
            if r > HMP_UP_THRESHOLD && best.is_none_or(|(br, _)| r > br) {
                best = Some((r, t));
            }
        }
        best.map(|(_, t)| t)
    }

    /// HPERF's minimum balance interval (see the module doc).
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
    /// Returns the number of tasks moved.
    pub(crate) fn hperf_balance(&mut self) -> u32 {
        debug_assert!(!self.hmp_in_balance, "HPERF step re-entered");
        let n = self.nr_cpus() as CpuId;
        let maxcap = self.hmp_max_cap();
        let (mut nb, mut nl, mut cb, mut cl) = (0u64, 0u64, 0u64, 0u64);
        let mut little_cap = maxcap;
        for c in 0..n {
            let nr = self.rqs[c as usize].cfs.nr_runnable() as u64;
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
            return 0;
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
                self.stopper_move_task(t, dst, true);
                self.hmp_in_balance = false;
                return 1;
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
                if let Some(dst) = self.hmp_least_loaded(t, false) {
                    self.hmp_note_move(t, false);
                    self.stopper_move_task(t, dst, true);
                    self.hmp_in_balance = false;
                    return 1;
                }
            }
        }
        // 3. Little → big: both clusters stay saturated and the scaled
        // loads even out (an idle big CPU was handled by step 1).
        if nl > cl && nb >= cb && lb(nb + 1).max(ll(nl - 1)) < before {
            if let Some(t) = self.hperf_pick(false, CpuId::MAX, false) {
                if let Some(dst) = self.hmp_least_loaded(t, true) {
                    self.hmp_note_move(t, true);
                    self.stopper_move_task(t, dst, true);
                    self.hmp_in_balance = false;
                    return 1;
                }
            }
        }
        // 4. Balanced: swap a pair for fairness.
        let mut moved = 0;
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
                    self.stopper_move_task(b, ca, true);
                    self.stopper_move_task(a, cbp, true);
                    moved = 2;
                }
            }
        }
        self.hmp_in_balance = false;
        moved
    }

    /// HPERF task choice by druntime: on the big cluster the highest, on the
    /// little cluster the lowest; `allowed_on` filters by affinity (when a
    /// CPU), `shared_only` keeps tasks of big CPUs running more than one.
    fn hperf_pick(&self, from_big: bool, allowed_on: CpuId, shared_only: bool) -> Option<TaskId> {
        // Highest druntime from big, lowest from little.
        self.hperf_extreme(from_big, from_big, |t| {
            let tk = &self.tasks[t as usize];
            (!shared_only || self.rqs[tk.cpu as usize].cfs.nr_runnable() >= 2)
                && (allowed_on == CpuId::MAX || tk.affinity.test(allowed_on))
        })
    }
}
