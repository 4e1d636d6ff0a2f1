//! Scheduler counters, as schedstat keeps them (system-wide totals).

use serde::Serialize;

/// Most domain levels a CPU can have.
pub const MAX_LEVELS: usize = 12;

/// Per domain level: balance attempts, tasks moved, and passes skipped
/// because another CPU's pass held `sched_balance_running` (SD_SERIALIZE).
#[derive(Clone, Debug, Default, Serialize)]
pub struct LevelCounters {
    pub name: String,
    pub lb_count: u64,
    pub lb_moved: u64,
    pub lb_serialized: u64,
}

/// System-wide counters of one run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Counters {
    pub wakeups: u64,
    pub wakeups_local: u64,
    pub wakeups_remote: u64,
    /// The wakee was placed outside the hardware last-level cache of the
    /// waker's CPU (`Machine` llc, whatever the domains call the LLC): its
    /// data crosses caches.
    pub wakeups_cross_llc: u64,
    /// wake_affine() chose the waker's CPU over the previous one.
    pub wakeups_affine: u64,
    pub wake_affine_this: u64,
    /// A woken delayed task was requeued where it was (no placement).
    pub wakeups_delayed: u64,
    /// TTWU_QUEUE sent the wakeup through the target's wake list (an IPI
    /// activates it there).
    pub wakeups_queued: u64,
    pub wake_slow_path: u64,
    /// select_idle_sibling() outcomes.
    pub sis_target: u64,
    pub sis_prev: u64,
    pub sis_recent: u64,
    pub sis_smt: u64,
    pub sis_scan_found: u64,
    pub sis_scan_failed: u64,
    pub sis_scan_skipped: u64,
    pub sis_scanned: u64,
    /// S2 (fair/wake_llc.rs): wake_affine outcomes of the patch set.
    pub s2: S2Counters,
    pub migrations: u64,
    pub forks: u64,
    /// Forks that failed because the run had reached its cap of tasks
    /// (`MAX_TASKS`, a fork bomb): clone() fails, the parent goes on.
    pub forks_failed: u64,
    pub context_switches: u64,
    pub newidle_balance: u64,
    pub nohz_balance: u64,
    /// Balancing softirqs run by the tick of an idle CPU whose idle governor
    /// kept its tick (IDLE_GOV_TICK).
    pub idle_tick_balance: u64,
    /// Reschedules of an idle CPU that found nothing to run (the wakee was
    /// taken by another CPU first).
    pub idle_resched_empty: u64,
    pub active_balance: u64,
    /// RT class (rt.rs): queued RT tasks pushed to a CPU of lower priority,
    /// pulled by a CPU whose RT priority dropped, and SCHED_RR slices that
    /// ran out with another task of their priority waiting.
    pub rt_pushes: u64,
    pub rt_pulls: u64,
    pub rt_rr_rotations: u64,
    /// Times the fair server had to run fair tasks ahead of RT ones
    /// (fair_server.rs).
    pub fair_server_runs: u64,
    /// Deadline class (dl.rs): tasks throttled out of budget (or after a
    /// yield) until their next period, queued deadline tasks pushed to a
    /// CPU where they are the earliest, and pulled by one.
    pub dl_throttles: u64,
    pub dl_pushes: u64,
    pub dl_pulls: u64,
    /// Priority inheritance (pi.rs): an owner of a PI mutex raised to the
    /// RT priority of a task waiting for it, or to a better one.
    pub pi_boosts: u64,
    /// big.LITTLE (S5): HMP up/down migrations, HPERF swaps and balance
    /// steps, task time on big and little CPUs (ns).
    pub hmp_up: u64,
    pub hmp_down: u64,
    /// Linaro MP offloads (hmp_offload_down(), also counted in `hmp_down`).
    pub hmp_offloads: u64,
    pub hmp_swaps: u64,
    pub hmp_balance: u64,
    pub hmp_big_ns: u64,
    pub hmp_little_ns: u64,
    pub barrier_releases: u64,
    pub spin_timeouts: u64,
    /// Sleep timers that another hrtimer interrupt on their CPU (the tick,
    /// HRTICK, another timer) expired inside their slack range.
    pub timers_early: u64,
    /// A task was preempted while it owned a mutex (lock-holder preemption:
    /// threads that need the lock wait, or spin, until it runs again).
    pub lock_holder_preemptions: u64,
    /// A task waking several futex waiters (a broadcast, a barrier's
    /// release) was switched out after one of the wakes, which made a
    /// non-lazy reschedule of its CPU due, before it woke the rest
    /// (`Sim::wake_up_q`).
    pub wake_q_preemptions: u64,
    /// An unlock handed the mutex to a thread spinning on it (trylock) and
    /// woke a sleeping waiter that will find it taken and sleep again.
    pub lock_steals: u64,
    pub mem_reshares: u64,
    /// ∫ Σ_cluster busy² dt: with `busy_cpu_ns` gives the mean number of busy
    /// CPUs in a busy CPU's cluster.
    pub cluster_corun_ns: u64,
    pub llc_corun_ns: u64,
    pub busy_cpu_ns: u64,
    /// Per core type: ∫ Σ_cluster busy² dt over its clusters and ∫ busy² dt
    /// of the type as a whole, over `placement_ns`: see
    /// [`Counters::cluster_gap_rms`].
    pub type_cluster_sq_ns: Vec<f64>,
    pub type_busy_sq_ns: Vec<f64>,
    pub placement_ns: u64,
    pub levels: Vec<LevelCounters>,
    /// Per idle state of the machine, in table order: how often a CPU
    /// entered it and how long CPUs stayed in it, summed over CPUs
    /// (cpuidle's `stateN/usage` and `stateN/time`).
    pub idle_state_usage: Vec<u64>,
    pub idle_state_ns: Vec<u64>,
}

impl Counters {
    pub(crate) fn lb_count(&mut self, level: usize, name: &str) {
        let l = self.level(level, name);
        l.lb_count += 1;
    }

    /// [`Counters::lb_count`] for a level whose name this CPU has recorded.
    pub(crate) fn lb_count_again(&mut self, level: usize) {
        if let Some(l) = self.levels.get_mut(level.min(MAX_LEVELS - 1)) {
            l.lb_count += 1;
        }
    }

    pub(crate) fn lb_serialized(&mut self, level: usize) {
        if let Some(l) = self.levels.get_mut(level) {
            l.lb_serialized += 1;
        }
    }

    pub(crate) fn lb_moved(&mut self, level: usize, n: u64) {
        if let Some(l) = self.levels.get_mut(level) {
            l.lb_moved += n;
        }
    }

    fn level(&mut self, level: usize, name: &str) -> &mut LevelCounters {
        let level = level.min(MAX_LEVELS - 1);
        while self.levels.len() <= level {
            self.levels.push(LevelCounters::default());
        }
        let l = &mut self.levels[level];
        if l.name.is_empty() {
            l.name = name.to_string();
        } else if l.name != name && !l.name.split('/').any(|n| n == name) {
            l.name = format!("{}/{}", l.name, name);
        }
        l
    }

    /// Mean number of busy CPUs in the cluster of a busy CPU (1 = alone).
    pub fn mean_cluster_corunners(&self) -> f64 {
        if self.busy_cpu_ns == 0 {
            0.0
        } else {
            self.cluster_corun_ns as f64 / self.busy_cpu_ns as f64
        }
    }

    /// How evenly the busy CPUs of core type `ty` spread over its `k`
    /// clusters: the root mean square, over time and over pairs of those
    /// clusters, of the difference of their busy CPU counts (0 when they
    /// always run as many busy CPUs each; 4 for two clusters of four run
    /// 4/0). From Σ_{i<j} (b_i − b_j)² = k·Σ b_i² − (Σ b_i)². `None` with
    /// fewer than two clusters or no time accounted.
    pub fn cluster_gap_rms(&self, ty: usize, k: usize) -> Option<f64> {
        if k < 2 || self.placement_ns == 0 {
            return None;
        }
        let sq = *self.type_cluster_sq_ns.get(ty)?;
        let b2 = *self.type_busy_sq_ns.get(ty)?;
        let pairs = (k * (k - 1) / 2) as f64;
        let mean = (k as f64 * sq - b2) / pairs / self.placement_ns as f64;
        Some(mean.max(0.0).sqrt())
    }

    /// Mean number of busy CPUs in the LLC of a busy CPU.
    pub fn mean_llc_corunners(&self) -> f64 {
        if self.busy_cpu_ns == 0 {
            0.0
        } else {
            self.llc_corun_ns as f64 / self.busy_cpu_ns as f64
        }
    }
}

/// Outcomes of the S2 patch set's wakeup path (all zero without its features).
#[derive(Clone, Debug, Default, Serialize)]
pub struct S2Counters {
    /// wake_affine() not called: prev idle in the waker's LLC.
    pub wa_skipped: u64,
    /// Same LLC, WA_IDLE: prev idle / waker idle.
    pub wa_idle_prev: u64,
    pub wa_idle_this: u64,
    /// wake_affine_idler_llc(): waker idle, waker-LLC idle core.
    pub idler_this_idle: u64,
    pub idler_this_core: u64,
    /// wake_affine_idler_llc(): prev idle, prev-LLC idle core.
    pub idler_prev_idle: u64,
    pub idler_prev_core: u64,
    /// Busy ratio: the waker's (or fallback) LLC is less busy / prev's is.
    pub idler_ratio_this: u64,
    pub idler_ratio_prev: u64,
    /// Equal ratios: WA_WEIGHT decides.
    pub idler_ratio_equal: u64,
    /// Both LLCs full: WA_WEIGHT decides, no idle search.
    pub both_full: u64,
    /// Fallback LLC: its idle core used; its lower busy ratio replaced the waker's.
    pub fallback_core: u64,
    pub fallback_ratio: u64,
    /// WA_WEIGHT's sync stacking (moved there from WA_IDLE) chose the waker.
    pub sync_stack: u64,
    /// Idle-core identity: recorded at idle entry (own core; another core
    /// found by the LLC search), cleared when the core runs, cleared when a
    /// wakeup's idle-core search takes it.
    pub idle_core_set_idle: u64,
    pub idle_core_set_search: u64,
    pub idle_core_cleared_busy: u64,
    pub idle_core_cleared_search: u64,
}
