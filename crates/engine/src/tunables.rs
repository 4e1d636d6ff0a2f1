//! The scheduler's numeric tunables, like the files of a Linux 7.3 kernel's
//! /sys/kernel/debug/sched/ (kernel/sched/debug.c, sched_debug_init()).
//!
//! Every entry has the name of its debugfs file (relative to
//! /sys/kernel/debug/sched/), the kernel's default, and a one-line meaning;
//! `schedlab tunables` lists them and a configuration sets them by name
//! (`vanilla+migration_cost_ns=250000`, `run --tunable nr_migrate=8`).
//! Three entries are 3.10's /proc/sys/kernel files instead, the knobs of
//! its CFS, which the fair class reads only with feature EEVDF off. The
//! per-domain files (`domains/...`) and the `relax_domain_level=` boot
//! parameter change the sched domains and live with the domain builder
//! (schedlab_topo::DomainTunable); CONFIG_HZ is the configuration's.

/// One tunable's description.
#[derive(Clone, Copy, Debug)]
pub struct TunableInfo {
    /// The debugfs file, relative to /sys/kernel/debug/sched/.
    pub name: &'static str,
    /// The kernel's default, as text.
    pub default: &'static str,
    pub meaning: &'static str,
}

/// The engine's tunables, in the order `schedlab tunables` lists them.
pub const TUNABLES: &[TunableInfo] = &[
    TunableInfo {
        name: "base_slice_ns",
        default: "700000 × factor",
        meaning: "sysctl_sched_base_slice: the slice (request size) of a task without a custom one; at boot 0.7 ms times 1 + log2(CPUs, at most 8) (update_sysctl()); a write sets it (100000-100000000) and leaves the normalized 0.7 ms that slice protection uses alone",
    },
    TunableInfo {
        name: "tunable_scaling",
        default: "1",
        meaning: "sysctl_sched_tunable_scaling (0 none, 1 log, 2 linear; none/log/linear accepted): a write keeps the base slice and sets the normalized slice to it over the new factor (sched_update_scaling(): 1, 1 + log2(n), n for n CPUs, at most 8), which set_protect_slice() uses without RUN_TO_PARITY; written after base_slice_ns it divides the written value",
    },
    TunableInfo {
        name: "migration_cost_ns",
        default: "500000",
        meaning: "sysctl_sched_migration_cost: a task that ran this recently is cache hot to the balancer (task_hot(); 0 = never, 4294967295 = always); a newly idle CPU whose avg_idle is below it does not ask for the idle CPUs' blocked-load update (nohz_newidle_balance()); the floor max_idle_balance_cost decays to; NEXT_BUDDY's sync threshold",
    },
    TunableInfo {
        name: "nr_migrate",
        default: "32",
        meaning: "sysctl_sched_nr_migrate: at most this many tasks of the busiest runqueue are looked at per balance attempt (loop_max), with a breather every 32 (LBF_NEED_BREAK)",
    },
    TunableInfo {
        name: "sched_latency_ns",
        default: "6000000 × factor",
        meaning: "(3.10's /proc/sys/kernel file, read only with feature EEVDF off) sysctl_sched_latency: the period in which each of up to sched_nr_latency runnable tasks runs once (sched_slice()), and twice the sleeper credit of a waking task; at boot 6 ms times the tunable_scaling factor; a write (100000-1000000000) sets sched_nr_latency to latency/min_granularity rounded up",
    },
    TunableInfo {
        name: "sched_min_granularity_ns",
        default: "750000 × factor",
        meaning: "(3.10, EEVDF off) sysctl_sched_min_granularity: a task's shortest turn before the tick compares it with the leftmost, and the period's stretch per task beyond sched_nr_latency; at boot 0.75 ms times the factor; 100000-1000000000",
    },
    TunableInfo {
        name: "sched_wakeup_granularity_ns",
        default: "1000000 × factor",
        meaning: "(3.10, EEVDF off) sysctl_sched_wakeup_granularity: how far (at nice 0) curr's vruntime must lead a wakee's for the wakee to preempt (wakeup_preempt_entity()); at boot 1 ms times the factor; 0-1000000000",
    },
    TunableInfo {
        name: "llc_balancing/aggr_tolerance",
        default: "1",
        meaning: "SCHED_CACHE: how far a process may exceed an LLC's size and keep its preference (0 = never aggregate, 1 = its threads fit the LLC's cores, 100 and more = no limit)",
    },
    TunableInfo {
        name: "llc_balancing/epoch_period",
        default: "HZ/100",
        meaning: "SCHED_CACHE: the occupancy epoch in jiffies; by default HZ/100; 0 is accepted and acts as 1, as the kernel's readers take max(epoch_period, 1)",
    },
    TunableInfo {
        name: "llc_balancing/epoch_affinity_timeout",
        default: "5",
        meaning: "SCHED_CACHE: epochs without an occupancy scan before a process's preferred LLC lapses",
    },
    TunableInfo {
        name: "llc_balancing/overaggr_pct",
        default: "50",
        meaning: "SCHED_CACHE: an LLC whose utilisation is below this percentage of its capacity (×1.5 without SMT) has room for a preferred process (fits_llc_capacity())",
    },
    TunableInfo {
        name: "llc_balancing/imb_pct",
        default: "20",
        meaning: "SCHED_CACHE: one LLC's utilisation counts as greater than another's when it exceeds it by more than this percentage (can_migrate_llc())",
    },
];

/// The values of the engine's tunables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tunables {
    /// `base_slice_ns` as written; `None` = the boot value, 0.7 ms × the
    /// log factor.
    pub base_slice_ns: Option<u64>,
    /// `tunable_scaling` as written (0 none, 1 log, 2 linear); `None` = not
    /// written (log, and the normalized slice 0.7 ms).
    pub tunable_scaling: Option<u32>,
    /// `tunable_scaling` was written after `base_slice_ns`, so its
    /// normalization divides the written base slice.
    pub scaling_after_base: bool,
    pub migration_cost_ns: u64,
    pub nr_migrate: u32,
    pub llc_aggr_tolerance: u32,
    /// `llc_balancing/epoch_period` in jiffies; `None` = HZ/100.
    pub llc_epoch_period: Option<u64>,
    pub llc_epoch_affinity_timeout: u64,
    pub llc_overaggr_pct: u64,
    pub llc_imb_pct: u64,
    /// 3.10's `sched_latency_ns`, `sched_min_granularity_ns` and
    /// `sched_wakeup_granularity_ns` as written; `None` = the boot value
    /// (the default × the tunable_scaling factor).
    pub cfs_latency_ns: Option<u64>,
    pub cfs_min_granularity_ns: Option<u64>,
    pub cfs_wakeup_granularity_ns: Option<u64>,
}

impl Default for Tunables {
    fn default() -> Self {
        Tunables {
            base_slice_ns: None,
            tunable_scaling: None,
            scaling_after_base: false,
            migration_cost_ns: MIGRATION_COST_NS,
            nr_migrate: 32,
            llc_aggr_tolerance: 1,
            llc_epoch_period: None,
            llc_epoch_affinity_timeout: 5,
            llc_overaggr_pct: 50,
            llc_imb_pct: 20,
            cfs_latency_ns: None,
            cfs_min_granularity_ns: None,
            cfs_wakeup_granularity_ns: None,
        }
    }
}

/// The scaled CFS knobs of a 3.10 kernel ([`Tunables::cfs310`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cfs310 {
    /// sysctl_sched_latency: the period in which each of up to
    /// `latency_ns / min_granularity_ns` tasks runs once.
    pub latency_ns: u64,
    /// sysctl_sched_min_granularity: a task's shortest turn; the period
    /// stretches by it per task beyond sched_nr_latency.
    pub min_granularity_ns: u64,
    /// sysctl_sched_wakeup_granularity: how far (at nice 0) curr's vruntime
    /// must lead a wakee's for the wakee to preempt it.
    pub wakeup_granularity_ns: u64,
    /// sched_nr_latency: how many runnable tasks the latency period serves
    /// before it stretches, and the runqueue size from which a preempted
    /// curr becomes the last buddy.
    pub nr_latency: u64,
}

/// sysctl_sched_migration_cost's default, 0.5 ms (also sched_init()'s seed
/// of every runqueue's avg_idle and max_idle_balance_cost).
pub const MIGRATION_COST_NS: u64 = 500_000;

/// The unscaled base slice (normalized_sysctl_sched_base_slice), 0.7 ms.
pub const NORMALIZED_BASE_SLICE_NS: u64 = 700_000;

/// The largest value a debugfs u32 file takes.
const U32_MAX: u64 = u32::MAX as u64;

impl Tunables {
    /// Is `name` one of [`TUNABLES`]?
    pub fn knows(name: &str) -> bool {
        TUNABLES.iter().any(|t| t.name == name)
    }

    /// get_update_sysctl_factor() for `scaling` on `ncpus` CPUs.
    fn factor(scaling: u32, ncpus: usize) -> u64 {
        let n = ncpus.clamp(1, 8) as u64;
        match scaling {
            0 => 1,
            2 => n,
            _ => 1 + (63 - n.leading_zeros() as u64),
        }
    }

    /// 3.10's CFS knobs (sysctl_sched_latency, _min_granularity and
    /// _wakeup_granularity: 6, 0.75 and 1 ms at boot) with the factor of
    /// `tunable_scaling` (log by default), as its update_sysctl() scaled
    /// them. A 7.3 kernel has no such files; the fair class reads them only
    /// with feature EEVDF off.
    pub fn cfs310(&self, ncpus: usize) -> Cfs310 {
        let f = Self::factor(self.tunable_scaling.unwrap_or(1), ncpus);
        let latency_ns = self.cfs_latency_ns.unwrap_or(6_000_000 * f);
        let min_granularity_ns = self.cfs_min_granularity_ns.unwrap_or(750_000 * f);
        // sched_nr_latency: 8 at boot; a write of either knob recomputes it
        // (sched_proc_update_handler()).
        let written = self.cfs_latency_ns.is_some() || self.cfs_min_granularity_ns.is_some();
        let nr_latency = if written {
            latency_ns.div_ceil(min_granularity_ns)
        } else {
            8
        };
        Cfs310 {
            latency_ns,
            min_granularity_ns,
            wakeup_granularity_ns: self.cfs_wakeup_granularity_ns.unwrap_or(1_000_000 * f),
            nr_latency,
        }
    }

    /// sysctl_sched_base_slice on a machine of `ncpus` CPUs: the written
    /// value, else the boot value update_sysctl() sets with the default log
    /// scaling (a later tunable_scaling write does not change it).
    pub fn base_slice_ns(&self, ncpus: usize) -> u64 {
        self.base_slice_ns
            .unwrap_or(NORMALIZED_BASE_SLICE_NS * Self::factor(1, ncpus))
    }

    /// normalized_sysctl_sched_base_slice (set_protect_slice()'s slice
    /// without RUN_TO_PARITY): 0.7 ms, or after a tunable_scaling write the
    /// base slice of that moment over the new factor (sched_update_scaling()).
    pub fn normalized_base_slice_ns(&self, ncpus: usize) -> u64 {
        match self.tunable_scaling {
            None => NORMALIZED_BASE_SLICE_NS,
            Some(sc) => {
                let base = if self.scaling_after_base {
                    self.base_slice_ns(ncpus)
                } else {
                    NORMALIZED_BASE_SLICE_NS * Self::factor(1, ncpus)
                };
                base / Self::factor(sc, ncpus)
            }
        }
    }

    /// Sets one tunable from `NAME=VALUE`; `Err` is one line naming the
    /// tunable and the reason.
    pub fn apply(&mut self, spec: &str) -> Result<(), String> {
        let (name, val) = spec
            .split_once('=')
            .ok_or_else(|| format!("tunable '{spec}': expected NAME=VALUE"))?;
        let (name, val) = (name.trim(), val.trim());
        let num = |lo: u64, hi: u64| -> Result<u64, String> {
            let v: u64 = val
                .parse()
                .map_err(|_| format!("tunable '{name}': '{val}' is not a whole number"))?;
            if v < lo || v > hi {
                return Err(format!("tunable '{name}': {v} is outside {lo}..={hi}"));
            }
            Ok(v)
        };
        match name {
            "base_slice_ns" => {
                self.base_slice_ns = Some(num(100_000, 100_000_000)?);
                self.scaling_after_base = false;
            }
            "tunable_scaling" => {
                self.tunable_scaling = Some(match val {
                    "none" => 0,
                    "log" => 1,
                    "linear" => 2,
                    _ => num(0, 2)? as u32,
                });
                self.scaling_after_base = self.base_slice_ns.is_some();
            }
            "migration_cost_ns" => self.migration_cost_ns = num(0, U32_MAX)?,
            "nr_migrate" => self.nr_migrate = num(0, U32_MAX)? as u32,
            "llc_balancing/aggr_tolerance" => self.llc_aggr_tolerance = num(0, U32_MAX)? as u32,
            "llc_balancing/epoch_period" => self.llc_epoch_period = Some(num(0, 1_000_000)?),
            "llc_balancing/epoch_affinity_timeout" => {
                self.llc_epoch_affinity_timeout = num(0, U32_MAX)?
            }
            "sched_latency_ns" => self.cfs_latency_ns = Some(num(100_000, 1_000_000_000)?),
            "sched_min_granularity_ns" => {
                self.cfs_min_granularity_ns = Some(num(100_000, 1_000_000_000)?)
            }
            "sched_wakeup_granularity_ns" => {
                self.cfs_wakeup_granularity_ns = Some(num(0, 1_000_000_000)?)
            }
            "llc_balancing/overaggr_pct" => self.llc_overaggr_pct = num(0, 100_000)?,
            "llc_balancing/imb_pct" => self.llc_imb_pct = num(0, 100_000)?,
            _ => {
                return Err(format!(
                    "unknown tunable '{name}' (valid: {})",
                    TUNABLES
                        .iter()
                        .map(|t| t.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            }
        }
        Ok(())
    }

    /// `(name, value)` for every tunable, in table order, as the kernel's
    /// files would read on a machine of `ncpus` CPUs at CONFIG_HZ `hz`.
    pub fn list(&self, ncpus: usize, hz: u32) -> Vec<(&'static str, u64)> {
        vec![
            ("base_slice_ns", self.base_slice_ns(ncpus)),
            ("tunable_scaling", self.tunable_scaling.unwrap_or(1) as u64),
            ("migration_cost_ns", self.migration_cost_ns),
            ("nr_migrate", self.nr_migrate as u64),
            ("sched_latency_ns", self.cfs310(ncpus).latency_ns),
            (
                "sched_min_granularity_ns",
                self.cfs310(ncpus).min_granularity_ns,
            ),
            (
                "sched_wakeup_granularity_ns",
                self.cfs310(ncpus).wakeup_granularity_ns,
            ),
            (
                "llc_balancing/aggr_tolerance",
                self.llc_aggr_tolerance as u64,
            ),
            (
                "llc_balancing/epoch_period",
                self.llc_epoch_period.unwrap_or(hz as u64 / 100),
            ),
            (
                "llc_balancing/epoch_affinity_timeout",
                self.llc_epoch_affinity_timeout,
            ),
            ("llc_balancing/overaggr_pct", self.llc_overaggr_pct),
            ("llc_balancing/imb_pct", self.llc_imb_pct),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_slice_is_set_at_boot_and_by_writes_and_scaling_only_normalizes() {
        let mut t = Tunables::default();
        let slices: Vec<u64> = [1, 2, 4, 8, 96]
            .iter()
            .map(|&n| t.base_slice_ns(n))
            .collect();
        assert_eq!(
            slices,
            [700_000, 1_400_000, 2_100_000, 2_800_000, 2_800_000]
        );
        assert_eq!(t.normalized_base_slice_ns(96), 700_000);
        // sched_update_scaling(): the base slice stays, the normalized one
        // is the base over the new factor.
        t.apply("tunable_scaling=linear").unwrap();
        assert_eq!(t.base_slice_ns(96), 2_800_000);
        assert_eq!(t.normalized_base_slice_ns(96), 350_000);
        t.apply("tunable_scaling=0").unwrap();
        assert_eq!(t.normalized_base_slice_ns(96), 2_800_000);
        // A base slice written after the scaling leaves the normalized one.
        t.apply("base_slice_ns=3000000").unwrap();
        assert_eq!(t.base_slice_ns(2), 3_000_000);
        assert_eq!(t.normalized_base_slice_ns(96), 2_800_000);
        // Scaling written after it divides the written value.
        t.apply("tunable_scaling=log").unwrap();
        assert_eq!(t.normalized_base_slice_ns(96), 750_000);
    }

    #[test]
    fn the_310_knobs_scale_at_boot_and_take_writes() {
        let knobs = |t: &Tunables| {
            let k = t.cfs310(8);
            let ns = (k.latency_ns, k.min_granularity_ns, k.wakeup_granularity_ns);
            (ns, k.nr_latency)
        };
        let mut t = Tunables::default();
        assert_eq!(knobs(&t), ((24_000_000, 3_000_000, 4_000_000), 8));
        // sched_proc_update_handler(): sched_nr_latency follows the writes,
        // rounded up.
        t.apply("sched_latency_ns=10000000").unwrap();
        t.apply("sched_wakeup_granularity_ns=0").unwrap();
        assert_eq!(knobs(&t), ((10_000_000, 3_000_000, 0), 4));
        assert!(t
            .apply("sched_min_granularity_ns=50000")
            .unwrap_err()
            .contains("outside 100000..=1000000000"));
        assert_eq!(t.cfs310(8).min_granularity_ns, 3_000_000);
    }

    #[test]
    fn bad_values_are_refused_with_the_reason() {
        let mut t = Tunables::default();
        let e = t.apply("base_slice_ns=0").unwrap_err();
        assert!(e.contains("base_slice_ns") && e.contains("outside"), "{e}");
        assert!(t
            .apply("nr_migrate=-1")
            .unwrap_err()
            .contains("whole number"));
        assert!(t.apply("tunable_scaling=3").is_err());
        assert!(t.apply("migration_cost_ns=4294967296").is_err());
        assert!(t
            .apply("nope=1")
            .unwrap_err()
            .contains("valid: base_slice_ns"));
        assert!(t.apply("nr_migrate").unwrap_err().contains("NAME=VALUE"));
        assert_eq!(t, Tunables::default(), "a refused value changes nothing");
        t.apply("migration_cost_ns=4294967295").unwrap();
        assert_eq!(t.migration_cost_ns, U32_MAX);
    }

    #[test]
    fn every_listed_tunable_can_be_set() {
        let t = Tunables::default();
        let listed = t.list(8, 250);
        assert_eq!(listed.len(), TUNABLES.len());
        for ((name, v), info) in listed.iter().zip(TUNABLES) {
            assert_eq!(*name, info.name);
            let mut u = Tunables::default();
            u.apply(&format!("{name}={v}")).unwrap();
            assert_eq!(u.list(8, 250), listed, "{name}={v} is the default");
        }
    }

    proptest::proptest! {
        /// Whatever the text, a tunable write is applied or refused with a
        /// one-line message naming it, and a refused one changes nothing.
        #[test]
        fn writes_never_panic(s in "[a-z_/]{0,32}=?[-0-9a-z]{0,12}") {
            let mut t = Tunables::default();
            match t.apply(&s) {
                Ok(()) => {
                    let _ = t.base_slice_ns(96);
                    let _ = t.normalized_base_slice_ns(96);
                }
                Err(e) => {
                    proptest::prop_assert!(!e.contains('\n'));
                    proptest::prop_assert!(e.contains("tunable"));
                    proptest::prop_assert_eq!(t, Tunables::default());
                }
            }
        }
    }
}
