//! The scheduler features table, like kernel/sched/features.h.
//!
//! Every entry has a name, a default and a one-line meaning, and can be switched
//! by name (`schedlab run --feature NAME=off`). Entries marked (schedlab) are
//! the model's own: switches of modelled kernel behaviour (on, as in 7.3), the
//! S2, S4 and S5 mechanisms the experiments compare with a baseline (off;
//! SCHED_CACHE's meaning says how 7.3 builds it) and variants of those
//! mechanisms (HMP_FORK_BOOST, HMP_HPERF_SOFTIRQ: on). Entries marked with a
//! patch set alone (S1, S3) were merged and are on, as in 7.3.

/// One feature's description.
#[derive(Clone, Copy, Debug)]
pub struct FeatureInfo {
    pub name: &'static str,
    pub default: bool,
    pub meaning: &'static str,
}

macro_rules! features {
    ($( $id:ident = $name:literal, $default:expr, $meaning:literal; )*) => {
        /// Feature indices.
        #[allow(non_camel_case_types, clippy::upper_case_acronyms)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Feat { $( $id, )* }

        /// The table, in declaration order.
        pub const FEATURES: &[FeatureInfo] = &[
            $( FeatureInfo { name: $name, default: $default, meaning: $meaning }, )*
        ];
    };
}

features! {
    EEVDF = "EEVDF", true, "the fair class picks the eligible task with the earliest virtual deadline (6.6+; the features down to NEXT_BUDDY refine it); off = CFS as 3.10 had it (fair/cfs.rs): the smallest vruntime runs, a waking task is placed no further back than half the latency period behind min_vruntime (GENTLE_FAIR_SLEEPERS) and a new one a slice ahead of it (START_DEBIT), a wakeup preempts when curr's vruntime leads the wakee's by more than the wakeup granularity, the tick when curr ran its sched_slice() share of the period; no lag, deadlines or delayed dequeue. Its knobs are the tunables sched_latency_ns, sched_min_granularity_ns and sched_wakeup_granularity_ns (3.10's defaults scaled by tunable_scaling; base_slice_ns does not apply). A 3.10-like kernel also wants PREEMPT_LAZY, WAKE_Q, TTWU_QUEUE_IDLE and IDLE_GOV_TICK off, as the S5 configurations have them";
    PLACE_LAG = "PLACE_LAG", true, "keep a waking task's lag (EEVDF placement strategy)";
    PLACE_DEADLINE_INITIAL = "PLACE_DEADLINE_INITIAL", true, "a new task starts with half a slice to its deadline";
    RUN_TO_PARITY = "RUN_TO_PARITY", true, "current runs until its deadline (or the shortest slice) before a switch";
    PREEMPT_SHORT = "PREEMPT_SHORT", true, "a waking task with a shorter slice may preempt";
    DELAY_DEQUEUE = "DELAY_DEQUEUE", true, "a sleeping task with negative lag stays queued until eligible";
    DELAY_ZERO = "DELAY_ZERO", true, "a delayed task leaves with its lag clipped to at most zero";
    PLACE_REL_DEADLINE = "PLACE_REL_DEADLINE", true, "a migrating task keeps its deadline relative to its vruntime";
    WAKEUP_PREEMPTION = "WAKEUP_PREEMPTION", true, "a wakeup may preempt the current task";
    PREEMPT_LAZY = "PREEMPT_LAZY", true, "(schedlab) the preempt=lazy model, 7.3's default on x86, arm64 and powerpc: a fair-class reschedule of another busy CPU sends no IPI and waits for that CPU's next tick or its task's next return from the kernel; off = preempt=full";
    WAKE_Q = "WAKE_Q", true, "(schedlab) a futex wake of several waiters (a condition broadcast, a barrier's release) runs their wakeups from a wake queue after the hash bucket's lock is dropped (wake_up_q(), since 4.2), each ending in preempt_enable(): a wakee that makes a non-lazy reschedule of the waker's CPU due switches the waker out before it wakes the rest; off = 3.10's futex_wake(), which woke every waiter under the lock";
    TTWU_QUEUE_IDLE = "TTWU_QUEUE_IDLE", true, "(with TTWU_QUEUE) a wakeup onto another CPU of the waker's LLC with nothing queued also goes through that CPU's wake list (ttwu_queue_cond()'s nr_running test); off = only into another LLC, as 3.10's ttwu_queue() did";
    TTWU_QUEUE = "TTWU_QUEUE", true, "a wakeup onto a CPU of another LLC, or onto another CPU with nothing queued, is put on that CPU's wake list and activated there when the IPI arrives (ttwu_queue_wakelist(), sched_ttwu_pending()): the wakee is on no runqueue meanwhile, and its preemption check is local to the target";
    HRTICK = "HRTICK", false, "with others queued, a high-resolution timer ends the current slice at its virtual deadline (hrtick_start_fair); on by default on x86 machines, off on arm64 and powerpc ones, as 7.3 builds have it (CONFIG_HRTIMER_REARM_DEFERRED)";
    HRTICK_DL = "HRTICK_DL", false, "a running deadline task's budget ends at a high-resolution timer armed for what is left of it (start_hrtick_dl()) instead of at the next tick; on by default on x86 machines, off on arm64 and powerpc ones, as HRTICK (CONFIG_HRTIMER_REARM_DEFERRED)";
    NEXT_BUDDY = "NEXT_BUDDY", false, "a waking task that does not preempt by PREEMPT_SHORT becomes the next buddy unless the buddy's deadline is earlier (set_preempt_buddy()); with WF_SYNC it then preempts only if its deadline is earlier and the waker ran migration_cost_ns since it was last charged (a quarter with WF_RQ_SELECTED; preempt_sync()), else not at all";
    PICK_BUDDY = "PICK_BUDDY", true, "the pick takes the next buddy (a wakee that preempted by PREEMPT_SHORT) while it is eligible";
    CACHE_HOT_BUDDY = "CACHE_HOT_BUDDY", true, "the next buddy is cache hot: the balancer leaves it where it is";
    WA_IDLE = "WA_IDLE", true, "wake_affine prefers an idle waker or previous CPU";
    WA_WEIGHT = "WA_WEIGHT", true, "wake_affine compares the loads of waker and previous CPU";
    WA_BIAS = "WA_BIAS", true, "wake_affine_weight biases towards the previous CPU by imbalance_pct";
    SIS_UTIL = "SIS_UTIL", true, "select_idle_cpu scans a number of CPUs that shrinks with LLC utilisation";
    UTIL_EST = "UTIL_EST", true, "utilisation estimation keeps a sleeping task's utilisation";
    LB_MIN = "LB_MIN", false, "the balancer ignores tasks with tiny load";
    NI_RANDOM = "NI_RANDOM", true, "newidle balance is skipped at random by its past success";
    NI_RATE = "NI_RATE", true, "newidle balancing that is called rarely counts as more successful";
    NEWIDLE_BALANCE = "NEWIDLE_BALANCE", true, "(schedlab) a CPU about to idle pulls work (sched_balance_newidle)";
    IDLE_GOV_TICK = "IDLE_GOV_TICK", true, "(schedlab) the idle governor decides whether an idle CPU stops its tick (4.17+, the menu governor's rule in idle_gov.rs): the tick keeps running, and the CPU balances itself at it, while the predicted idle time is under a tick; off = the tick stops at every idle entry, as before 4.17";
    GROUP_H_LOAD = "GROUP_H_LOAD", true, "(schedlab) task_h_load() as a CONFIG_FAIR_GROUP_SCHED kernel (Debian's) computes it with every task in the root group: the task's load_avg times the runqueue's load_avg as of the jiffy's first call, over the current load_avg + 1 (update_cfs_rq_h_load()), so within a jiffy load that left makes the rest look heavier; off = the task's load_avg, as without group scheduling";
    NOHZ_BALANCE = "NOHZ_BALANCE", true, "(schedlab) busy CPUs kick an idle CPU to balance for tick-stopped CPUs";
    HMP_LINARO = "HMP_LINARO", false, "(schedlab, S5 baseline) Linaro MP big.LITTLE: per-task load thresholds up/down-migrate between clusters; no generic cross-cluster balancing";
    HMP_FORK_BOOST = "HMP_FORK_BOOST", true, "(schedlab, S5 baseline variant; with HMP_LINARO) a new task starts with a full-load history on the big domain's least loaded CPU (LSK's \"HMP: Force new non-kernel tasks onto big CPUs until load stabilises\"); off = the Exynos 5422 3.10 tree, which predates it: the child keeps its parent's load history and is placed by the stock fork path inside its parent's cluster and the up/down rules, like a wakeup";
    HMP_HPERF = "HMP_HPERF", false, "(schedlab, S5) HPERF_HMP: druntime-fair cluster balancing, idle big CPUs pull from little, wakeups to the least loaded CPU; no generic cross-cluster balancing";
    HMP_HPERF_SOFTIRQ = "HMP_HPERF_SOFTIRQ", true, "(schedlab, S5 choice; with HMP_HPERF) HPERF_HMP's step runs from the balancing softirq in place of the generic balance of the (lowest) cluster-spanning level: when that level is due for a CPU by its own interval (get_sd_balance_interval(): ×busy_factor while the CPU is busy), from the tick or nohz idle balancing, and the CPU is the one should_we_balance() names in its cluster; off = one global step every min_interval on the first tick after it is due, busy or not (before the nineteenth round)";
    SCHED_CACHE = "SCHED_CACHE", false, "(schedlab, S4) cache-aware scheduling: per-process preferred LLC, llc_balance in the load balancer (7.3 SCHED_CACHE, active only with several LLCs under a larger domain); 7.3 builds it on by default, off here = its debugfs llc_balancing/enabled=0, the published baselines' kernels having none";
    CLUSTER_SCAN = "CLUSTER_SCAN", true, "(S1's wakeup part, merged in 6.7) with a CLS level, select_idle_cpu scans the target's cluster first, and an idle prev or recent CPU outside the target's cluster is only a fallback for a failed scan (select_idle_sibling())";
    IDLE_CORE_ID = "IDLE_CORE_ID", false, "(schedlab, S2) each LLC remembers one idle core instead of has_idle_cores: recorded at idle entry (the CPU's own core, else the first wholly idle core of the LLC; the first record stays), cleared when that core runs or a wakeup's idle-core search takes it";
    NR_BUSY_ON_IDLE = "NR_BUSY_ON_IDLE", false, "(schedlab, S2; \"sched/idle: Move busy_cpu accounting to idle callback\") an LLC's nr_busy_cpus changes at every idle entry and exit; off = the kernel's nohz accounting: a CPU leaves the count when its tick stops and rejoins it at its first busy tick";
    WA_IDLER_LLC = "WA_IDLER_LLC", false, "(schedlab, S2) wake_affine: WA_IDLE within an LLC, idle cores then busy ratios across LLCs, sync stacking in WA_WEIGHT, no idle search when both LLCs are full";
    FALLBACK_LLC = "FALLBACK_LLC", false, "(schedlab, S2) sync wakeups from outside an SD_FALLBACK_LLC parent may use the waker's fallback LLC";
    ASYM_IDLE_CORE = "ASYM_IDLE_CORE", true, "(S3 prerequisite; Ricardo Neri, \"sched: Avoid unnecessary migrations within SMT domains\", 6.5) asym packing above SMT uses a CPU's priority only if its whole core is idle (sched_use_asym_prio), an SMT group with other than one busy CPU is never asym, a low-priority idle core may help a busy SMT core, a fully busy SMT group stays busiest; off = 5.16 asym_smt_can_pull_tasks()";
    SWB_IDLE_CORE = "SWB_IDLE_CORE", true, "(S3; Ricardo Neri, \"sched/fair: Consider the idle state of the whole core for load balance\", 6.6) should_we_balance() prefers an idle CPU on an idle core; off = the group's first idle CPU";
    SMT_ACTIVE_BALANCE = "SMT_ACTIVE_BALANCE", true, "(S3; Tim Chen, \"Check whether active load balance is needed in busiest group\", 6.6 group_smt_balance) an idle dst pulls one task from an SMT group running more than one, forced between SMT and non-SMT groups; off = 5.16";
    SMT_BUSIEST_PICK = "SMT_BUSIEST_PICK", true, "(S3; Tim Chen, \"Fix busiest group selection for asym groups\", 6.6) a has_spare SMT group with one task is not picked as busiest over a non-SMT group; off = 5.16";
    SMT_SIBLING_IMBALANCE = "SMT_SIBLING_IMBALANCE", true, "(S3; Tim Chen, \"Skip prefer sibling move between SMT group and non-SMT group\" as merged in 6.6: sibling_imbalance() normalises by cores, only for an idle dst); off = 5.16 prefer-sibling spreading by task counts";
}

/// The features of patch set S3 and its prerequisites (Ricardo Neri's
/// whole-core asym packing, 6.5, and should_we_balance() idle-core choice,
/// 6.6; Tim Chen's SMT active balance, busiest-group fix and core-normalised
/// prefer-sibling, 6.6): all on in 7.3, all off restores 5.16 (the
/// `cluster-naive` configuration).
pub const S3_FIXES: &[&str] = &[
    "ASYM_IDLE_CORE",
    "SWB_IDLE_CORE",
    "SMT_ACTIVE_BALANCE",
    "SMT_BUSIEST_PICK",
    "SMT_SIBLING_IMBALANCE",
];

/// The on/off state of every feature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Features {
    on: Vec<bool>,
}

impl Default for Features {
    fn default() -> Self {
        Features {
            on: FEATURES.iter().map(|f| f.default).collect(),
        }
    }
}

impl Features {
    /// The table's defaults as a Linux 7.3 build for `arch` sets them: the
    /// Kconfig-dependent entries follow the architecture. HRTICK and
    /// HRTICK_DL are on where
    /// CONFIG_HRTIMER_REARM_DEFERRED is (it needs GENERIC_ENTRY and
    /// HAVE_GENERIC_TIF_BITS, which 7.3 selects on x86 only; arm64 lacks
    /// generic entry, powerpc the generic TIF bits).
    pub fn for_arch(arch: schedlab_topo::Arch) -> Features {
        let mut f = Features::default();
        f.on[Feat::HRTICK as usize] = arch == schedlab_topo::Arch::X86;
        f.on[Feat::HRTICK_DL as usize] = arch == schedlab_topo::Arch::X86;
        f
    }

    pub fn enabled(&self, f: Feat) -> bool {
        self.on[f as usize]
    }

    /// Switches a feature by name; `Err` lists the valid names.
    pub fn set(&mut self, name: &str, on: bool) -> Result<(), String> {
        match FEATURES
            .iter()
            .position(|f| f.name.eq_ignore_ascii_case(name))
        {
            Some(i) => {
                self.on[i] = on;
                Ok(())
            }
            None => Err(format!(
                "unknown feature '{name}' (valid: {})",
                FEATURES
                    .iter()
                    .map(|f| f.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    /// Parses `NAME=on|off` (also `true/false/1/0`).
    pub fn apply(&mut self, spec: &str) -> Result<(), String> {
        let (name, val) = spec
            .split_once('=')
            .ok_or_else(|| format!("feature '{spec}': expected NAME=on|off"))?;
        let on = match val.trim().to_ascii_lowercase().as_str() {
            "on" | "true" | "1" => true,
            "off" | "false" | "0" => false,
            v => return Err(format!("feature '{name}': value '{v}' is not on/off")),
        };
        self.set(name.trim(), on)
    }

    /// `(name, on)` for every feature, in table order.
    pub fn list(&self) -> Vec<(&'static str, bool)> {
        FEATURES
            .iter()
            .zip(&self.on)
            .map(|(f, &o)| (f.name, o))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switch_by_name() {
        let mut f = Features::default();
        assert!(f.enabled(Feat::SIS_UTIL));
        f.apply("sis_util=off").unwrap();
        assert!(!f.enabled(Feat::SIS_UTIL));
        assert!(f.apply("NOPE=on").unwrap_err().contains("valid"));
        assert!(f.apply("SIS_UTIL=maybe").is_err());
        assert_eq!(FEATURES.len(), f.list().len());
    }

    #[test]
    fn hrtick_follows_the_architecture() {
        use schedlab_topo::Arch;
        assert!(!Features::default().enabled(Feat::HRTICK));
        assert!(Features::for_arch(Arch::X86).enabled(Feat::HRTICK));
        assert!(!Features::for_arch(Arch::Arm64).enabled(Feat::HRTICK));
        assert!(!Features::for_arch(Arch::PowerPc).enabled(Feat::HRTICK));
        // HRTICK_DL goes with it (the same Kconfig switch).
        for arch in [Arch::X86, Arch::Arm64, Arch::PowerPc] {
            let f = Features::for_arch(arch);
            assert_eq!(f.enabled(Feat::HRTICK_DL), f.enabled(Feat::HRTICK));
        }
        // Everything else is the table's default.
        let (x, d) = (
            Features::for_arch(Arch::X86).list(),
            Features::default().list(),
        );
        assert_eq!(x.iter().zip(&d).filter(|(a, b)| a != b).count(), 2);
    }
}
