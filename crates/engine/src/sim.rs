//! The simulator: state, the event loop, and the core scheduler (kernel/sched/core.c).
//!
//! [`Sim`] owns the machine, its domains, the runqueues and the tasks. The core
//! here is class-independent mechanism: `schedule()`, the tick, wakeups
//! (`try_to_wake_up()`), fork (`wake_up_new_task()`), context switches and
//! idle entry/exit. Policy lives in `fair/`.

use crate::event::{EventKind, EventQueue, TaskId};
use crate::features::{Feat, Features};
use crate::rng;
use crate::rq::Rq;
use crate::stats::Counters;
use crate::task::{Activity, Task, TaskState};
use crate::timeline::{ListLink, RunNode};
use rand::Rng;
use rand_pcg::Pcg64;
use schedlab_hw::{Flow, MemModel};
use schedlab_topo::{CpuId, CpuMask, Domains, Machine, SdFlags};
use schedlab_workload::{Step, WorkloadSpec};

/// Wake flags (`WF_*`).
pub const WF_EXEC: u32 = 1 << 1;
pub const WF_TTWU: u32 = 1 << 3;
pub const WF_FORK: u32 = 1 << 2;
pub const WF_SYNC: u32 = 1 << 4;
/// select_task_rq() chose the wakee's CPU (it may run on more than one).
pub const WF_RQ_SELECTED: u32 = 1 << 7;
/// Engine-only wake flag (no kernel counterpart): the wakeup comes from a
/// timer interrupt that found the waking CPU idle, so whatever it starts
/// waits for that CPU's idle exit first.
pub(crate) const WF_IRQ_FROM_IDLE: u32 = 1 << 16;

/// Run configuration.
#[derive(Clone, Debug)]
pub struct SimConfig {
    pub seed: u64,
    pub features: Features,
    /// CONFIG_HZ.
    pub hz: u32,
    /// Check invariants after every event (slow; tests use it).
    pub checked: bool,
    /// Per-CPU system kthreads that wake at random (OS noise).
    pub noise: bool,
    /// Events and switch-ins in a row at one instant that stop the run as a
    /// livelock ([`StopReason::Livelock`]).
    pub livelock_events: u64,
    /// Tasks the run may create ([`crate::MAX_TASKS`]; tests lower it).
    pub max_tasks: usize,
    /// The numeric tunables (debugfs sched/ files).
    pub tunables: crate::tunables::Tunables,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            seed: 1,
            features: Features::default(),
            hz: 250,
            checked: cfg!(debug_assertions),
            noise: true,
            livelock_events: LIVELOCK_EVENTS,
            max_tasks: crate::MAX_TASKS,
            tunables: Default::default(),
        }
    }
}

/// Balancing state of one domain of one CPU (the mutable part of `struct sched_domain`).
#[derive(Clone, Copy, Debug, Default)]
pub struct SdState {
    pub balance_interval_ms: u32,
    pub last_balance_ns: u64,
    pub nr_balance_failed: u32,
    pub max_newidle_lb_cost_ns: u64,
    pub last_decay_ns: u64,
    /// NI_RANDOM bookkeeping (`newidle_call`, `newidle_success`,
    /// `newidle_ratio` out of 1024, `newidle_stamp`).
    pub newidle_call: u32,
    pub newidle_success: u32,
    pub newidle_ratio: u32,
    pub newidle_stamp_ns: u64,
}

/// Per-LLC shared state (`struct sched_domain_shared`).
#[derive(Clone, Copy, Debug, Default)]
pub struct LlcShared {
    pub nr_busy_cpus: u32,
    pub has_idle_cores: bool,
    pub nr_idle_scan: u32,
    /// S2: a CPU of an idle core of this LLC (`sds->idle_core`, -1 = `None`);
    /// kept only with IDLE_CORE_ID (fair/wake_llc.rs).
    pub idle_core: Option<CpuId>,
    /// S2: the paired LLC under an SD_FALLBACK_LLC parent (`fallback_llc_id`).
    pub fallback_llc: Option<u32>,
    /// First CPU of the LLC (its `sd_llc_id` CPU), the target on the LLC's behalf.
    pub first_cpu: CpuId,
}

/// The shared state of an asymmetric-capacity domain that is not the LLC
/// (7.3 gives the lowest SD_ASYM_CPUCAPACITY_FULL domain its own
/// `struct sched_domain_shared` unless it is built from NUMA distances):
/// select_idle_capacity()'s scan depth and, as `sd_balance_shared`, the
/// idle-core hint of its CPUs.
#[derive(Clone, Copy, Debug, Default)]
pub struct AsymShared {
    /// The domain's index in the hierarchy of each CPU of its span.
    pub level: usize,
    pub has_idle_cores: bool,
    pub nr_idle_scan: u32,
}

/// A reusable barrier's runtime state.
#[derive(Clone, Debug, Default)]
pub struct BarrierState {
    pub parties: u32,
    pub arrived: u32,
    pub gen: u32,
    /// Tasks blocked (not spinning) on the current generation, in futex
    /// wait-list order (by priority, then arrival: `pi::futex_enqueue()`).
    pub sleepers: std::collections::VecDeque<TaskId>,
    pub spinners: Vec<TaskId>,
}

/// Running sums behind the placement counters.
#[derive(Clone, Debug, Default)]
pub(crate) struct PlacementSums {
    pub(crate) cluster_sq: u64,
    pub(crate) llc_sq: u64,
    pub(crate) busy: u64,
    /// Per core type: Σ busy² over its clusters, and its busy CPUs.
    pub(crate) type_cluster_sq: Vec<u64>,
    pub(crate) type_busy: Vec<u64>,
}

/// Why a run stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// Every workload thread exited.
    Finished,
    /// The workload's time limit was reached.
    TimeLimit,
    /// Every live workload thread is blocked with no timer of its own:
    /// none can run again, since only another of them could wake it (a
    /// deadlock in the workload, e.g. an rt-app `suspend` that nothing
    /// resumes). Also when no event is left at all while threads remain.
    Stalled,
    /// [`LIVELOCK_EVENTS`] events or switch-ins in a row at one instant:
    /// threads keep switching without simulated time passing (a program loop
    /// whose steps all take zero time, e.g. yields that cost nothing), so the
    /// run would never end. Also one thread that runs
    /// [`crate::MAX_INSTANT_STEPS`] such steps in a row
    /// ([`Sim::livelock_task`]).
    Livelock,
    /// The workload's process exited on a failed system call, as rt-app
    /// exits when the kernel refuses a SCHED_DEADLINE thread's
    /// sched_setattr() (admission control, an affinity narrower than the
    /// root domain), its sched_setaffinity() to such a mask, or its fork
    /// ([`Sim::exit_reason`] says which).
    Exited,
}

/// Nested schedule() calls a chain of instantly blocking tasks may make
/// before the next switch-in waits for the event loop ([`Sim::start_running`]).
pub const MAX_SWITCH_NESTING: u32 = 256;

/// Events and switch-ins in a row at the same simulated nanosecond after
/// which a run is stopped as a livelock. Far above what a burst of real work
/// makes at one instant (every thread of the largest workload forked at time
/// 0 is a few events each, and a run may create at most 200,000 threads).
pub const LIVELOCK_EVENTS: u64 = 5_000_000;

/// The shortest HRTICK delay (hrtick_start(): shorter slices are not worth
/// a timer and could flood the CPU with interrupts), ns.
pub const HRTICK_MIN_NS: u64 = 10_000;

/// A queued HRTICK timer is re-armed only when its expiry moves by more than
/// this (hrtick_needs_rearm()), ns.
pub const HRTICK_REARM_SLACK_NS: u64 = 5_000;

/// Takes a run's benchmark marks as they are made, in place of
/// [`Sim::marks`]: a workload whose metrics need only a summary of the marks
/// (counts, a histogram) keeps a long run's memory bounded this way.
pub trait MarkSink: Send {
    /// One mark: `task` (made from `template`) passed a `Mark`/`MarkWoken`
    /// step with `tag` at `at_ns`.
    fn mark(&mut self, task: TaskId, template: u32, tag: u32, at_ns: u64);
    /// For the workload that installed the sink to read it back.
    fn as_any(&self) -> &dyn std::any::Any;
}

/// The simulator.
pub struct Sim {
    pub machine: Machine,
    pub domains: Domains,
    pub cfg: SimConfig,
    pub now: u64,
    pub(crate) q: EventQueue,
    pub tasks: Vec<Task>,
    /// Timeline nodes (`se.run_node`) and `cfs_tasks` links (`se.group_node`)
    /// by task id, grown on first enqueue.
    pub(crate) run_nodes: Vec<RunNode>,
    pub(crate) group_links: Vec<ListLink>,
    pub rqs: Vec<Rq>,
    /// `[cpu][domain index]`.
    pub sd: Vec<Vec<SdState>>,
    /// By LLC id.
    pub llc: Vec<LlcShared>,
    /// Asymmetric-capacity domains with their own shared state, and each
    /// CPU's (its `sd_balance_shared` when `Some`, else its LLC's).
    pub asym_shared: Vec<AsymShared>,
    pub(crate) asym_shared_of: Vec<Option<u32>>,
    pub(crate) spec: WorkloadSpec,
    pub(crate) barriers: Vec<BarrierState>,
    /// Mutexes, condition variables, channels and semaphores (exec.rs).
    pub(crate) ipc: crate::exec::Ipc,
    pub(crate) mem: MemModel,
    /// Hardware costs beyond rates: caches, transfers, refills (hwcost.rs).
    pub hw: crate::hwcost::HwState,
    pub counters: Counters,
    /// Benchmark timer marks: (task, tag, time), unless a [`MarkSink`]
    /// takes them.
    pub marks: Vec<(TaskId, u32, u64)>,
    /// Threads each thread created per template at rt-app fork guards
    /// (`Step::ForkLimit`): (thread, template) → count.
    pub(crate) fork_counts: std::collections::BTreeMap<(TaskId, u32), u32>,
    /// Where marks go as they are made instead of [`Sim::marks`], when set.
    pub mark_sink: Option<Box<dyn MarkSink>>,
    /// When the first thread of the workload began its program (rt-app's
    /// `t_zero`, taken by its thread 0 before the start barrier).
    pub(crate) prog_zero_ns: Option<u64>,
    /// Workload threads not yet exited.
    pub live: u32,
    /// Workload threads blocked with no sleep timer ([`Task::parked`]): when
    /// they are all of `live`, the run has stalled.
    pub parked: u32,
    pub events: u64,
    /// Events in a row at the current `now` (livelock guard).
    events_at_now: u64,
    /// The CPU whose event is being handled: the `smp_processor_id()` of the
    /// code that runs, for telling local from remote reschedules.
    pub(crate) this_cpu: CpuId,
    /// Nested switch-ins in progress ([`Sim::start_running`]).
    switch_nesting: u32,
    pub(crate) tick_ns: u64,
    /// Draws the order in which the CPUs' simultaneous ticks are handled.
    rng_tick_order: Pcg64,
    pub(crate) rng_noise: Pcg64,
    pub(crate) rng_fork: Pcg64,
    /// The workloads' own random sleeps (`Step::NanosleepJitter`).
    pub(crate) rng_jitter: Pcg64,
    /// Nohz: earliest `next_balance` among idle CPUs.
    pub(crate) nohz_next_balance: u64,
    /// Some tick-stopped CPU may carry blocked load (`nohz.has_blocked_load`).
    pub(crate) nohz_has_blocked: bool,
    /// A CPU stopped its tick since the idle CPUs' next balance times were
    /// last collated (`nohz.needs_update`).
    pub(crate) nohz_needs_update: bool,
    /// The jiffy after which a kick also updates the idle CPUs' blocked
    /// averages (`nohz.next_blocked`).
    pub(crate) nohz_next_blocked_j: u64,
    /// `rd->overloaded`: set when a runqueue reaches two tasks (a stopper
    /// queued behind a running task counts), recomputed only by balancing at
    /// the root domain.
    pub(crate) rd_overloaded: bool,
    /// A task has been in the RT or deadline class during the run: the
    /// fair servers keep their state from then on (fair_server.rs).
    pub(crate) rt_dl_in_use: bool,
    /// The root domain's cpupri and RT overload mask (rt.rs).
    pub(crate) cpupri: crate::rt::CpuPri,
    /// The root domain's cpudl (dl.rs).
    pub(crate) cpudl: crate::dl::CpuDl,
    /// CPUs with pushable deadline tasks (`rd->dlo_mask`).
    pub(crate) dlo_mask: CpuMask,
    /// Deadline bandwidth admitted in the root domain (`dl_bw->total_bw`):
    /// the fair servers' from the start, and every deadline task's until
    /// its 0-lag time after it leaves the class.
    pub(crate) dl_total_bw: u64,
    /// Numbers insertions into the deadline trees (equal deadlines keep
    /// their order).
    pub(crate) dl_seq: u64,
    /// The CPU running a newly idle pass after its task stopped: in the
    /// kernel that task is still `rq->curr` until the switch, so idle_cpu()
    /// is false for the balancing CPU during the pass, and its PELT clock does
    /// not resynchronise (the lag becomes lost idle time at idle entry).
    pub(crate) newidle_after_task: Option<CpuId>,
    /// `sched_balance_running`: the CPU whose softirq holds the machine-wide
    /// SD_SERIALIZE balancing lock, and until when.
    pub(crate) sched_balance_running: Option<(CpuId, u64)>,
    /// Per-cluster / per-LLC busy CPU counts for placement statistics.
    pub(crate) busy_in_cluster: Vec<u32>,
    /// Busy CPUs per (cluster, core type), at `cluster × types + type`.
    pub(crate) busy_in_cluster_type: Vec<u32>,
    pub(crate) busy_in_llc: Vec<u32>,
    /// Σ busy², per cluster and per LLC, and Σ busy (placement statistics).
    pub(crate) placement: PlacementSums,
    pub(crate) last_placement_ns: u64,
    pub stop: Option<StopReason>,
    /// The thread that ran [`crate::MAX_INSTANT_STEPS`] steps in a row
    /// without one taking time, when that stopped the run as a livelock.
    pub livelock_task: Option<TaskId>,
    /// The thread whose program ran last ([`Sim::livelock_task`] when
    /// threads pass steps that take no time to each other through events).
    pub(crate) last_stepped: Option<TaskId>,
    /// The step being run made a futex system call that woke no one (an
    /// unlock of a word marked contended), which returns to user space
    /// all the same ([`crate::exec`]'s `enters_kernel()`).
    pub(crate) futex_syscall: bool,
    /// Why the workload exited, when that stopped the run
    /// ([`StopReason::Exited`]).
    pub exit_reason: Option<String>,
    started: bool,
    /// CPU capacities as the kernel sees them (`arch_scale_cpu_capacity()`,
    /// from `schedlab_topo::kernel_capacities`): scheduling decisions use
    /// these, the hardware model uses `CpuInfo.capacity`.
    pub(crate) kcap: Vec<u64>,
    /// The highest of them (the big CPUs' capacity under HMP).
    pub(crate) kcap_max: u64,
    /// Per CPU and domain level: what the balancer reads of a domain and its
    /// groups that never changes during a run (see [`SdConsts`]).
    pub(crate) sd_consts: Vec<Vec<SdConsts>>,
    /// Per CPU, a bit per domain level whose name the CPU's balancing has
    /// already entered in [`Counters::levels`] (the first pass names it).
    pub(crate) lb_named: Vec<u16>,
    /// `sched_smt_active()`: some core has more than one hardware thread.
    pub(crate) smt_active: bool,
    /// SMT siblings of each CPU, including itself (precomputed `cpu_smt_mask()`).
    pub(crate) smt_masks: Vec<CpuMask>,
    /// The same siblings as lists, ascending (the mask's iteration order):
    /// CPU `c`'s are `smt_list[smt_range[c].0..smt_range[c].1]`. The hot
    /// paths (compute rates, idle-core checks) walk these instead of the
    /// 512-bit masks.
    smt_list: Vec<CpuId>,
    smt_range: Vec<(u32, u32)>,
    /// Tick-stopped idle CPUs (`nohz.idle_cpus_mask`) and their number.
    pub(crate) nohz_idle: CpuMask,
    pub(crate) nr_nohz_idle: u32,
    /// `sgc->imbalance` flags, by (topology level, first CPU of the group).
    pub(crate) sg_imbalance: Vec<bool>,
    /// NI_RANDOM's draws (`sched_rng()`).
    pub(crate) rng_newidle: Pcg64,
    /// HPERF_HMP: when the next HMP balancing step is due (fair/hmp.rs).
    pub(crate) hmp_next_balance: u64,
    /// Some task asked for a custom slice (sched_setattr): runqueues'
    /// min/max slices must then be computed, not assumed.
    pub(crate) custom_slices: bool,
    /// Some task has asked for utilisation clamps (the kernel's
    /// `sched_uclamp_used` static key, never turned off again): from then
    /// on the fitness tests take clamps into account.
    pub(crate) uclamp_used: bool,
    /// sysctl_sched_base_slice and normalized_sysctl_sched_base_slice for
    /// this machine and the tunables.
    pub(crate) base_slice_ns: u64,
    pub(crate) normalized_base_slice_ns: u64,
    /// 3.10's CFS knobs, read with feature EEVDF off.
    pub(crate) cfs310: crate::tunables::Cfs310,
    /// An HMP move is in progress (no nested idle pulls).
    pub(crate) hmp_in_balance: bool,
    /// HPERF_HMP: the queued (not running) fair tasks of the little [0] and
    /// big [1] CPUs by (druntime, id). A queued task's druntime does not
    /// change (only the running task accrues it), so HPERF's picks find the
    /// lowest/highest druntime in O(log n) instead of walking every queue.
    pub(crate) hperf_queued: [std::collections::BTreeSet<(i64, TaskId)>; 2],
    /// SCHED_CACHE state (fair/cache_aware.rs).
    pub cache: crate::fair::cache_aware::CacheState,
    /// Recorded tracepoints, when tracing is on (trace.rs).
    pub trace: Option<Box<crate::trace::Trace>>,
}

/// The asymmetric-capacity domains that get their own shared state (mirrors
/// claim_asym_sched_domain_shared() and update_top_cache_domain()): each
/// CPU's lowest SD_ASYM_CPUCAPACITY_FULL domain unless it is a NUMA level or
/// is the LLC domain itself (whose state then serves both), one record per
/// span, idle after boot (every CPU may be scanned, every core is idle).
/// The constant part of a domain as the balancer sees it: its span's
/// weight and, per group, the weight and the sum, maximum and minimum of
/// the CPUs' capacities (`sgc->capacity`, `max_capacity`, `min_capacity`).
/// The kernel refreshes the capacities in update_group_capacity(); with no
/// RT, IRQ or thermal pressure modelled they never change, so they are
/// computed once rather than on every balancing pass.
#[derive(Clone, Debug, Default)]
pub(crate) struct SdConsts {
    pub span_weight: u32,
    pub groups: Vec<GroupConsts>,
}

/// One group's part of [`SdConsts`].
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct GroupConsts {
    pub weight: u32,
    pub cap_sum: u64,
    pub cap_max: u64,
    pub cap_min: u64,
}

/// [`Sim::sd_consts`] for every CPU's domains.
fn sd_constants(domains: &Domains, kcap: &[u64]) -> Vec<Vec<SdConsts>> {
    let cap = |c: CpuId| kcap.get(c as usize).copied().unwrap_or(0);
    let group = |g: &schedlab_topo::SchedGroup| GroupConsts {
        weight: g.span.weight(),
        cap_sum: g.span.iter().map(cap).sum(),
        cap_max: g.span.iter().map(cap).max().unwrap_or(0),
        cap_min: g.span.iter().map(cap).min().unwrap_or(0),
    };
    domains
        .cpus
        .iter()
        .map(|cd| {
            cd.domains
                .iter()
                .map(|d| SdConsts {
                    span_weight: d.span.weight(),
                    groups: d.groups.iter().map(group).collect(),
                })
                .collect()
        })
        .collect()
}

fn asym_shared_state(domains: &Domains) -> (Vec<AsymShared>, Vec<Option<u32>>) {
    let mut shared: Vec<AsymShared> = Vec::new();
    let mut first_cpus: Vec<CpuId> = Vec::new();
    let of = domains
        .cpus
        .iter()
        .map(|cd| {
            let level = cd.sd_asym_cpucapacity?;
            let d = &cd.domains[level];
            if d.flags.contains(SdFlags::NUMA) || cd.sd_llc == Some(level) {
                return None;
            }
            let first = d.span.first().unwrap_or(cd.cpu);
            let i = match first_cpus.iter().position(|&f| f == first) {
                Some(i) => i,
                None => {
                    first_cpus.push(first);
                    shared.push(AsymShared {
                        level,
                        has_idle_cores: true,
                        nr_idle_scan: d.span.weight(),
                    });
                    shared.len() - 1
                }
            };
            Some(i as u32)
        })
        .collect();
    (shared, of)
}

/// Mean time between a system kthread's wakeups, ns (ESTIMATE: a quiet
/// server's per-CPU kworker/ksoftirqd/rcu activity, tens of ms apart).
const NOISE_PERIOD_MEAN_NS: u64 = 40_000_000;
/// Work of one system kthread burst, ns (ESTIMATE).
const NOISE_BURST_NS: u64 = 20_000;

impl Sim {
    /// A simulator for `spec` on `machine` with `domains`.
    pub fn new(machine: Machine, domains: Domains, spec: WorkloadSpec, cfg: SimConfig) -> Sim {
        // The ITMT priorities the topology was built with (pre-6.5 SMT scaling
        // under `itmt_legacy_smt`).
        let machine = if domains.config.itmt_legacy_smt {
            schedlab_topo::with_itmt_priorities(&machine, &domains.config)
        } else {
            machine
        };
        let n = machine.nr_cpus();
        let n_states = machine.wakeup.idle_states.len();
        let tick_ns = 1_000_000_000 / cfg.hz.max(1) as u64;
        // Every CPU starts idle for long, its tick stopped, in its deepest
        // enabled idle state.
        let deepest = machine
            .wakeup
            .idle_states
            .iter()
            .rposition(|s| !s.disabled)
            .unwrap_or(0) as u8;
        let mut rqs: Vec<Rq> = (0..n)
            .map(|c| Rq {
                cpu: c as CpuId,
                // sched_init(): twice the migration cost, and the cost
                // itself, at boot: before any debugfs write.
                avg_idle: 2 * crate::tunables::MIGRATION_COST_NS,
                max_idle_balance_cost_ns: crate::tunables::MIGRATION_COST_NS,
                idle_state: deepest,
                idle_state_since_ns: Some(0),
                menu: crate::idle_gov::MenuState::idle_for_long(),
                ..Default::default()
            })
            .collect();
        let sd = domains
            .cpus
            .iter()
            .map(|cd| {
                cd.domains
                    .iter()
                    .map(|d| SdState {
                        // sd_init(): the first interval is the level's
                        // weight; a written min_interval is used only
                        // once a balance resets the interval.
                        balance_interval_ms: d.weight.max(1),
                        // sd_init(): newidle balancing starts at 50% success.
                        newidle_call: 512,
                        newidle_success: 256,
                        newidle_ratio: 512,
                        ..Default::default()
                    })
                    .collect()
            })
            .collect();
        let n_llc = domains.nr_llc_ids();
        let mut llc = vec![LlcShared::default(); n_llc];
        for cd in domains.cpus.iter().rev() {
            // An idle machine after boot: every CPU may be scanned (SIS_UTIL's
            // nr_idle_scan for zero utilisation is the LLC's weight).
            llc[cd.llc_id as usize].nr_idle_scan = cd.llc_size;
            llc[cd.llc_id as usize].has_idle_cores = true;
            llc[cd.llc_id as usize].first_cpu = cd.cpu;
        }
        crate::fair::wake_llc::pair_fallback_llcs(&domains, &mut llc);
        let (asym_shared, asym_shared_of) = asym_shared_state(&domains);
        let n_clusters = machine.nr_clusters();
        let n_types = machine.core_types.len().max(1);
        let n_llcs = machine.nr_llcs();
        let barriers = spec
            .sync
            .iter()
            .map(|s| match s {
                schedlab_workload::SyncObject::Barrier { parties } => BarrierState {
                    parties: *parties,
                    ..Default::default()
                },
                _ => BarrierState::default(),
            })
            .collect();
        let ipc = crate::exec::Ipc::new(&spec.sync);
        let mem = MemModel::new(&machine);
        let mut hw = crate::hwcost::HwState::new(&machine);
        hw.init_regions(&spec.sync);
        let kcap: Vec<u64> = schedlab_topo::kernel_capacities(&machine)
            .into_iter()
            .map(u64::from)
            .collect();
        let sd_consts = sd_constants(&domains, &kcap);
        // sched_init(): every CPU's capacity is its own until RT time is
        // taken off it (update_cpu_capacity()).
        for (rq, &k) in rqs.iter_mut().zip(&kcap) {
            rq.cpu_capacity = k;
        }
        let smt_masks: Vec<CpuMask> = (0..n).map(|c| machine.smt_mask(c as CpuId)).collect();
        let smt_active = smt_masks.iter().any(|m| m.weight() > 1);
        let smt_threads = smt_masks.iter().map(|m| m.weight()).max().unwrap_or(1) as u64;
        let mut smt_list = Vec::new();
        let smt_range = smt_masks
            .iter()
            .map(|m| {
                let from = smt_list.len() as u32;
                smt_list.extend(m.iter());
                (from, smt_list.len() as u32)
            })
            .collect();
        let cache = crate::fair::cache_aware::CacheState::new(
            cfg.features.enabled(Feat::SCHED_CACHE),
            &domains,
            smt_threads,
        );
        Sim {
            cache,
            trace: None,
            nohz_idle: CpuMask::first_n(n),
            lb_named: vec![0; n],
            nr_nohz_idle: n as u32,
            smt_masks,
            smt_list,
            smt_range,
            sg_imbalance: Vec::new(),
            rng_newidle: rng::stream(cfg.seed, "newidle"),
            hmp_next_balance: 0,
            custom_slices: false,
            uclamp_used: false,
            base_slice_ns: cfg.tunables.base_slice_ns(n),
            normalized_base_slice_ns: cfg.tunables.normalized_base_slice_ns(n),
            cfs310: cfg.tunables.cfs310(n),
            hmp_in_balance: false,
            hperf_queued: Default::default(),
            kcap_max: kcap.iter().copied().max().unwrap_or(1024),
            kcap,
            sd_consts,
            smt_active,
            rng_noise: rng::stream(cfg.seed, "noise"),
            rng_fork: rng::stream(cfg.seed, "fork"),
            rng_jitter: rng::stream(cfg.seed, "jitter"),
            prog_zero_ns: None,
            machine,
            domains,
            now: 0,
            q: EventQueue::default(),
            tasks: Vec::new(),
            run_nodes: Vec::new(),
            group_links: Vec::new(),
            rqs,
            sd,
            llc,
            asym_shared,
            asym_shared_of,
            spec,
            barriers,
            ipc,
            mem,
            hw,
            counters: Counters {
                idle_state_usage: vec![0; n_states],
                type_cluster_sq_ns: vec![0.0; n_types],
                type_busy_sq_ns: vec![0.0; n_types],
                idle_state_ns: vec![0; n_states],
                ..Counters::default()
            },
            marks: Vec::new(),
            fork_counts: Default::default(),
            mark_sink: None,
            live: 0,
            parked: 0,
            events: 0,
            events_at_now: 0,
            this_cpu: 0,
            switch_nesting: 0,
            tick_ns,
            rng_tick_order: rng::stream(cfg.seed, "tick-order"),
            nohz_next_balance: 0,
            nohz_has_blocked: false,
            nohz_needs_update: false,
            nohz_next_blocked_j: 0,
            rd_overloaded: false,
            rt_dl_in_use: false,
            cpupri: crate::rt::CpuPri::new(n),
            cpudl: crate::dl::CpuDl::new(n),
            dlo_mask: CpuMask::default(),
            dl_total_bw: n as u64 * crate::dl::FAIR_SERVER_BW,
            dl_seq: 0,
            newidle_after_task: None,
            sched_balance_running: None,
            busy_in_cluster: vec![0; n_clusters],
            busy_in_cluster_type: vec![0; n_clusters * n_types],
            busy_in_llc: vec![0; n_llcs],
            placement: PlacementSums {
                type_cluster_sq: vec![0; n_types],
                type_busy: vec![0; n_types],
                ..PlacementSums::default()
            },
            last_placement_ns: 0,
            stop: None,
            livelock_task: None,
            last_stepped: None,
            futex_syscall: false,
            exit_reason: None,
            started: false,
            cfg,
        }
    }

    pub fn nr_cpus(&self) -> usize {
        self.rqs.len()
    }

    /// The workload threads blocked with no timer of their own (all of them
    /// when the run [`StopReason::Stalled`]), each as its name and the program
    /// step it waits in (its index and the step), in task order.
    pub fn parked_threads(&self) -> Vec<(String, u32, Option<Step>)> {
        self.tasks
            .iter()
            .filter(|t| t.parked)
            .map(|t| {
                // A barrier waiter has moved past its step; the others sleep
                // on theirs, to run it again when woken.
                let pc = if t.barrier_wait.is_some() {
                    t.pc.saturating_sub(1)
                } else {
                    t.pc
                };
                (
                    t.name.to_string(),
                    pc,
                    self.step_at(t.template, pc).cloned(),
                )
            })
            .collect()
    }

    /// Step `pc` of template `template`'s program, if both exist (kernel
    /// threads have no template).
    pub(crate) fn step_at(&self, template: u32, pc: u32) -> Option<&Step> {
        self.spec
            .templates
            .get(template as usize)
            .and_then(|tp| tp.steps.get(pc as usize))
    }

    pub(crate) fn feat(&self, f: Feat) -> bool {
        self.cfg.features.enabled(f)
    }

    /// Runs the workload to completion (or its time limit).
    pub fn run(&mut self) -> StopReason {
        self.run_until(self.spec.max_time_ns)
    }

    /// Runs until `limit_ns` (or the end of the workload); a later call
    /// continues from there, as if it had not stopped (the statistics are
    /// brought up to the stop; class state is not charged). Returns
    /// `TimeLimit` when stopped by `limit_ns`.
    pub fn run_until(&mut self, limit_ns: u64) -> StopReason {
        // events & u64::MAX is never 0 after the first event: no callback.
        self.run_loop(limit_ns, u64::MAX, &mut |_, _| {})
    }

    /// Runs the workload to completion (or its time limit) like [`Sim::run`],
    /// calling `progress(now_ns, events)` every `every_events` events
    /// (rounded up to a power of two). The callback only observes: the run
    /// is the same as without it.
    pub fn run_with_progress(
        &mut self,
        every_events: u64,
        progress: &mut impl FnMut(u64, u64),
    ) -> StopReason {
        let mask = every_events.max(1).next_power_of_two() - 1;
        self.run_loop(self.spec.max_time_ns, mask, progress)
    }

    /// The event loop; `progress` is called when `events & progress_mask` is 0.
    fn run_loop(
        &mut self,
        limit_ns: u64,
        progress_mask: u64,
        progress: &mut impl FnMut(u64, u64),
    ) -> StopReason {
        if !self.started {
            self.started = true;
            self.start();
        }
        let limit = limit_ns.min(self.spec.max_time_ns);
        while self.stop.is_none() {
            let Some((t, _)) = self.q.peek() else {
                self.stop = Some(StopReason::Stalled);
                break;
            };
            if t > limit {
                self.now = limit;
                let end = limit >= self.spec.max_time_ns;
                self.finish_accounting(end);
                if end {
                    self.stop = Some(StopReason::TimeLimit);
                }
                return StopReason::TimeLimit;
            }
            let Some((t, ev)) = self.q.pop() else {
                break;
            };
            debug_assert!(t >= self.now, "event in the past (seed {})", self.cfg.seed);
            if t == self.now {
                self.events_at_now += 1;
                if self.events_at_now >= self.cfg.livelock_events {
                    self.stop = Some(StopReason::Livelock);
                    if self.livelock_task.is_none() {
                        self.livelock_task = self.last_stepped;
                    }
                }
            } else {
                self.events_at_now = 0;
            }
            self.now = t;
            self.events += 1;
            self.dispatch(ev);
            if self.stop == Some(StopReason::Exited) {
                break;
            }
            if self.live == 0 {
                self.stop = Some(StopReason::Finished);
            } else if self.parked == self.live {
                self.stop = Some(StopReason::Stalled);
            }
            if self.events & progress_mask == 0 {
                progress(self.now, self.events);
            }
            if self.cfg.checked {
                if let Err(e) = self.check_invariants() {
                    panic!(
                        "invariant violated at {} ns (seed {}): {e}",
                        self.now, self.cfg.seed
                    );
                }
            }
        }
        self.finish_accounting(true);
        self.stop.unwrap_or(StopReason::Stalled)
    }

    fn start(&mut self) {
        if self.cfg.noise {
            for c in 0..self.nr_cpus() {
                let id = self.tasks.len() as TaskId;
                let mut t = Task::new(
                    id,
                    &format!("kworker/{c}"),
                    0,
                    u32::MAX,
                    0,
                    CpuMask::from_cpus([c as CpuId]),
                );
                t.kthread = true;
                t.cpu = c as CpuId;
                t.recent_used_cpu = c as CpuId;
                self.tasks.push(t);
                let first = self.rng_noise.gen_range(0..NOISE_PERIOD_MEAN_NS);
                self.q.push(first, EventKind::NoiseWake { task: id });
                self.rqs[c].noise_next_ns = Some(first);
            }
        }
        let initial = self.spec.initial.clone();
        for tpl in initial {
            self.spawn(tpl, None, 0);
        }
    }

    pub(crate) fn dispatch(&mut self, ev: EventKind) {
        self.this_cpu = match ev {
            EventKind::Tick { cpu, .. }
            | EventKind::HrTick { cpu, .. }
            | EventKind::Resched { cpu }
            | EventKind::WakeList { cpu }
            | EventKind::NohzBalance { ilb: cpu }
            | EventKind::PollTimeout { cpu, .. }
            | EventKind::FairServer { cpu, .. }
            | EventKind::ActiveBalance { src: cpu, .. } => cpu,
            EventKind::StepDone { task, .. }
            | EventKind::Timer { task, .. }
            | EventKind::SpinEnd { task, .. }
            | EventKind::DlTimer { task, .. }
            | EventKind::DlInactive { task, .. }
            | EventKind::NoiseWake { task } => self.tasks[task as usize].cpu,
        };
        match ev {
            EventKind::Tick { cpu, gen } => {
                if self.rqs[cpu as usize].tick_gen == gen {
                    self.tick(cpu);
                }
            }
            EventKind::HrTick { cpu, gen } => {
                let rq = &mut self.rqs[cpu as usize];
                if rq
                    .hrtick
                    .fire(&mut self.q, gen, |gen| EventKind::HrTick { cpu, gen })
                {
                    self.hrtick(cpu);
                    self.expire_soft_timers(cpu);
                }
            }
            EventKind::Resched { cpu } => {
                let rq = &mut self.rqs[cpu as usize];
                rq.resched_pending = false;
                let (need, lazy, idle) = (rq.need_resched, rq.need_resched_lazy, rq.curr.is_none());
                self.trace_idle_state_exit(cpu);
                if need {
                    self.schedule(cpu);
                } else if idle {
                    // A schedule() since served the request: scheduler_ipi()
                    // folds nothing and do_idle() sleeps again, no
                    // schedule_idle(), no newidle balance.
                    self.idle_rewake(cpu);
                } else if lazy {
                    // The interrupt's return to user space acts on it.
                    self.schedule(cpu);
                }
            }
            EventKind::WakeList { cpu } => self.sched_ttwu_pending(cpu),
            EventKind::DlTimer { task, gen } => self.dl_task_timer(task, gen),
            EventKind::DlInactive { task, gen } => self.dl_inactive_timer(task, gen),
            EventKind::FairServer { cpu, gen } => {
                let rq = &mut self.rqs[cpu as usize];
                if rq
                    .fair_server
                    .timer
                    .fire(&mut self.q, gen, |gen| EventKind::FairServer { cpu, gen })
                {
                    self.fair_server_timer(cpu);
                }
            }
            EventKind::PollTimeout { cpu, gen } => {
                let rq = &mut self.rqs[cpu as usize];
                let expired = rq
                    .poll_limit
                    .fire(&mut self.q, gen, |gen| EventKind::PollTimeout { cpu, gen });
                if expired && self.is_idle_cpu(cpu) && !self.rqs[cpu as usize].need_resched {
                    // (A CPU that a wakeup or reschedule has reached left its
                    // polling loop on need_resched, not at the limit.)
                    self.poll_timeout(cpu);
                }
            }
            EventKind::StepDone { task, gen } => {
                if self.tasks[task as usize].gen == gen {
                    self.step_done(task);
                }
            }
            EventKind::Timer { task, gen } => {
                let tk = &self.tasks[task as usize];
                if tk.gen == gen && tk.state == TaskState::Blocked {
                    let cpu = tk.cpu;
                    self.sleep_timer_fires(cpu, task);
                    self.expire_soft_timers(cpu);
                }
            }
            EventKind::SpinEnd { task, gen } => {
                if self.tasks[task as usize].gen == gen {
                    self.spin_end(task);
                }
            }
            EventKind::ActiveBalance { src, dst } => self.active_balance_stop(src, dst),
            EventKind::NohzBalance { ilb } => self.nohz_kick_arrives(ilb),
            EventKind::NoiseWake { task } => {
                let t = &self.tasks[task as usize];
                if t.state == TaskState::Blocked && !t.se.on_rq {
                    let cpu = t.cpu;
                    self.tasks[task as usize].remaining = NOISE_BURST_NS as f64;
                    self.irq_wakeup(task, cpu);
                }
                let gap = self.rng_noise.gen_range(1..2 * NOISE_PERIOD_MEAN_NS);
                self.q.push(self.now + gap, EventKind::NoiseWake { task });
                let cpu = self.tasks[task as usize].cpu;
                self.rqs[cpu as usize].noise_next_ns = Some(self.now + gap);
            }
        }
    }

    // ----- clocks -------------------------------------------------------

    /// Advances `rq->clock` and `rq->clock_pelt` (mirrors update_rq_clock() and
    /// update_rq_clock_pelt()): PELT time runs at capacity speed while busy and
    /// resynchronises when idle.
    pub(crate) fn update_rq_clock(&mut self, cpu: CpuId) {
        let now = self.now;
        // The kernel scales PELT time by its own view of capacity (on x86
        // with SMT every CPU is 1024 to the scheduler).
        let cap = self.kcap[cpu as usize];
        let rq = &mut self.rqs[cpu as usize];
        let delta = now.saturating_sub(rq.clock);
        rq.clock = now;
        // (During a newly idle pass after a task stopped, that task is still
        // the kernel's curr: no resync yet.)
        if rq.curr.is_none() && self.newidle_after_task != Some(cpu) {
            rq.clock_pelt = now - rq.lost_idle_time_ns;
        } else {
            rq.clock_pelt += delta * cap / 1024;
        }
    }

    /// The runqueue is about to idle (mirrors update_idle_rq_clock_pelt()):
    /// if its utilisation is saturated it counted as always running, so the
    /// PELT clock's lag behind `clock` is lost rather than caught up; then
    /// the PELT clock resyncs.
    fn update_idle_rq_clock_pelt(&mut self, cpu: CpuId) {
        let rq = &mut self.rqs[cpu as usize];
        let divider =
            ((crate::fair::pelt::LOAD_AVG_MAX - 1024) << 10) - crate::fair::pelt::LOAD_AVG_MAX;
        // The fair, RT and deadline utilisation together: a CPU kept full
        // by them.
        if rq.cfs.avg.util_sum + rq.avg_rt.util_sum + rq.avg_dl.util_sum >= divider {
            rq.lost_idle_time_ns = rq.clock.saturating_sub(rq.clock_pelt);
        }
        rq.clock_pelt = rq.clock - rq.lost_idle_time_ns;
    }

    // ----- idle entry/exit and placement statistics ----------------------

    fn account_placement(&mut self) {
        let dt = self.now - self.last_placement_ns;
        if dt > 0 {
            let p = &self.placement;
            self.counters.cluster_corun_ns += p.cluster_sq * dt;
            self.counters.llc_corun_ns += p.llc_sq * dt;
            self.counters.busy_cpu_ns += p.busy * dt;
            let c = &mut self.counters;
            for (t, &b) in p.type_busy.iter().enumerate() {
                c.type_cluster_sq_ns[t] += p.type_cluster_sq[t] as f64 * dt as f64;
                c.type_busy_sq_ns[t] += (b * b) as f64 * dt as f64;
            }
            c.placement_ns += dt;
            self.last_placement_ns = self.now;
        }
    }

    /// `cpu` became busy (`+1`) or idle (`-1`): keep the busy counts of its
    /// cluster, LLC and core type and their sums of squares up to date in O(1)
    /// ((b ± 1)² = b² ± 2b + 1).
    pub(crate) fn placement_change(&mut self, cpu: CpuId, busy: bool) {
        let c = &self.machine.cpus[cpu as usize];
        let (cluster, llc, ty) = (c.cluster as usize, c.llc as usize, c.core_type as usize);
        // The type's busy CPUs in this cluster (a cluster may mix types).
        let slot = cluster * self.placement.type_busy.len() + ty;
        let b = self.busy_in_cluster_type[slot] as u64;
        let p = &mut self.placement;
        if busy {
            p.type_cluster_sq[ty] += 2 * b + 1;
            p.type_busy[ty] += 1;
            self.busy_in_cluster_type[slot] += 1;
        } else {
            p.type_cluster_sq[ty] -= 2 * b - 1;
            p.type_busy[ty] -= 1;
            self.busy_in_cluster_type[slot] -= 1;
        }
        let step = |count: &mut u32, sq: &mut u64| {
            let b = *count as u64;
            if busy {
                *sq += 2 * b + 1;
                *count += 1;
            } else {
                *sq -= 2 * b - 1;
                *count -= 1;
            }
        };
        step(
            &mut self.busy_in_cluster[cluster],
            &mut self.placement.cluster_sq,
        );
        step(&mut self.busy_in_llc[llc], &mut self.placement.llc_sq);
        if busy {
            self.placement.busy += 1;
        } else {
            self.placement.busy -= 1;
        }
    }

    /// The CPU starts running tasks after idling.
    pub(crate) fn idle_exit(&mut self, cpu: CpuId) {
        self.account_placement();
        let now = self.now;
        self.placement_change(cpu, true);
        let rq = &mut self.rqs[cpu as usize];
        rq.idle_ns += now - rq.last_busy_change;
        // update_rq_avg_idle(): 1/8 EWMA, capped at 2 × max_idle_balance_cost,
        // for an idle period the newidle pass stamped.
        if rq.idle_stamp != 0 {
            let idle_for = now - rq.idle_stamp;
            let ai = rq.avg_idle as i64 + (idle_for as i64 - rq.avg_idle as i64) / 8;
            rq.avg_idle = (ai.max(0) as u64).min(2 * rq.max_idle_balance_cost_ns);
        }
        rq.last_busy_change = now;
        rq.idle_stamp = 0;
        // The polling loop's limit, if it runs one, no longer applies.
        rq.poll_limit.cancel();
        self.trace_idle_state_exit(cpu);
        self.leave_idle_state(cpu);
        // The governor learns how long this idle period lasted.
        self.menu_period_end(cpu, false);
        // The CPU stays in the nohz idle mask until its first busy tick
        // (nohz_balance_exit_idle()); S2 counts it busy at once.
        if self.feat(Feat::NR_BUSY_ON_IDLE) {
            self.llc_busy_count(cpu, true);
        }
        if self.feat(Feat::IDLE_CORE_ID) {
            self.idle_core_busy(cpu);
        }
        self.start_tick(cpu);
        self.smt_sibling_changed(cpu);
    }

    /// The CPU goes idle (mirrors the idle entry bookkeeping: idle_stamp,
    /// nohz tick stop, nr_busy_cpus and has_idle_cores).
    pub(crate) fn idle_enter(&mut self, cpu: CpuId) {
        self.account_placement();
        let now = self.now;
        self.placement_change(cpu, false);
        let rq = &mut self.rqs[cpu as usize];
        rq.busy_ns += now - rq.last_busy_change;
        rq.last_busy_change = now;
        // sched_balance_newidle() stamps the idle period unless a queued
        // wakeup is on its way (it returns before the stamp; no avg_idle
        // sample is taken then).
        rq.idle_stamp = if rq.ttwu_pending > 0 { 0 } else { now };
        rq.menu_since_ns = now;
        if self.feat(Feat::NR_BUSY_ON_IDLE) {
            self.llc_busy_count(cpu, false);
        }
        // __update_idle_core(): the core is idle when its other threads are;
        // this CPU counts as idle even with a queued wakeup on its way.
        if self.is_core_idle(cpu) {
            self.set_idle_cores(cpu, true);
        }
        if self.feat(Feat::IDLE_CORE_ID) {
            self.update_idle_core_id(cpu);
        }
        self.idle_loop_turn(cpu, false);
        self.smt_sibling_changed(cpu);
    }

    /// One turn of do_idle()'s loop on idle `cpu` (mirrors
    /// cpuidle_idle_call()): whether the tick stops and which idle state
    /// the CPU enters. With two or more idle states the menu governor
    /// decides both ([`MenuState::select_state`]); with one, 7.3 skips the
    /// governor and stops the tick only when the last idle period ended by
    /// the tick (`got_tick`, tick_nohz_idle_got_tick()). Before 4.17
    /// (`IDLE_GOV_TICK` off) the tick stopped at every idle entry and the
    /// governor chose the state with the tick stopped.
    ///
    /// [`MenuState::select_state`]: crate::idle_gov::MenuState::select_state
    fn idle_loop_turn(&mut self, cpu: CpuId, got_tick: bool) {
        let governor = self.feat(Feat::IDLE_GOV_TICK);
        if !governor && self.rqs[cpu as usize].tick_running {
            self.stop_idle_tick(cpu);
        }
        let n_states = self.machine.wakeup.idle_states.len();
        let (state, stop) = if n_states > 1 {
            let next_timer = self.next_timer_in(cpu);
            let (tick_ns, now) = (self.tick_ns, self.now);
            let to_tick_ns = (self.jiffies() + 1) * tick_ns - now;
            let rq = &mut self.rqs[cpu as usize];
            rq.menu.select_state(
                &self.machine.wakeup.idle_states,
                next_timer,
                !rq.tick_running,
                tick_ns,
                to_tick_ns,
            )
        } else {
            (0, got_tick)
        };
        if stop && self.rqs[cpu as usize].tick_running {
            self.stop_idle_tick(cpu);
        }
        self.enter_idle_state(cpu, state);
    }

    /// Idle `cpu` enters idle state `state`; a polling loop arms its time
    /// limit ([`Sim::poll_timeout`]): the limit the machine gives
    /// (pseries' snooze_timeout), or cpuidle_poll_time()'s, the first
    /// enabled deeper state's target residency of at least 10 µs, at most a
    /// sixteenth of a tick.
    pub(crate) fn enter_idle_state(&mut self, cpu: CpuId, state: usize) {
        let states = &self.machine.wakeup.idle_states;
        let st = &states[state];
        let limit_ns = if !st.poll_loop {
            None
        } else if st.poll_limit_ns > 0 {
            Some(st.poll_limit_ns as u64)
        } else {
            let max_ns = self.tick_ns / 16;
            Some(
                states[1..]
                    .iter()
                    .find(|s| !s.disabled && s.residency_ns >= 10_000)
                    .map_or(max_ns, |s| (s.residency_ns as u64).min(max_ns)),
            )
        };
        let now = self.now;
        self.trace_idle_state_exit(cpu);
        self.leave_idle_state(cpu);
        self.trace_cpu_idle(cpu, state as u32);
        self.rqs[cpu as usize].idle_exit_traced = false;
        self.counters.idle_state_usage[state] += 1;
        let rq = &mut self.rqs[cpu as usize];
        rq.idle_state = state as u8;
        rq.idle_state_since_ns = Some(now);
        match limit_ns {
            Some(limit_ns) => {
                rq.poll_limit
                    .arm(&mut self.q, now + limit_ns, |gen| EventKind::PollTimeout {
                        cpu,
                        gen,
                    })
            }
            None => rq.poll_limit.cancel(),
        }
    }

    /// `cpu` leaves the idle state it was counted in (idle exit, a new
    /// selection, the end of the run): the time joins that state's total.
    fn leave_idle_state(&mut self, cpu: CpuId) {
        let now = self.now;
        let rq = &mut self.rqs[cpu as usize];
        if let Some(since) = rq.idle_state_since_ns.take() {
            self.counters.idle_state_ns[rq.idle_state as usize] += now - since;
        }
    }

    /// The trace shows idle `cpu` leaving its idle state (power:cpu_idle with
    /// PWR_EVENT_EXIT, as cpuidle_enter_state() emits it when the state's
    /// enter routine returns), once per stay: at the interrupt or IPI that
    /// woke it, before the work it does then, or when it leaves idle.
    pub(crate) fn trace_idle_state_exit(&mut self, cpu: CpuId) {
        // (Only an idle CPU is in a state: idle_exit() ends the stay.)
        let rq = &self.rqs[cpu as usize];
        if rq.idle_state_since_ns.is_some() && !rq.idle_exit_traced {
            self.trace_cpu_idle(cpu, crate::trace::PWR_EVENT_EXIT);
            self.rqs[cpu as usize].idle_exit_traced = true;
        }
    }

    /// The exit latency of the idle state idle `cpu` is in.
    pub(crate) fn idle_exit_ns(&self, cpu: CpuId) -> u64 {
        let st = self.rqs[cpu as usize].idle_state as usize;
        self.machine.wakeup.idle_states[st].exit_ns as u64
    }

    /// Whether idle `cpu` is in a polling loop (POLL, snooze).
    fn in_poll_loop(&self, cpu: CpuId) -> bool {
        let st = self.rqs[cpu as usize].idle_state as usize;
        self.rqs[cpu as usize].curr.is_none() && self.machine.wakeup.idle_states[st].poll_loop
    }

    /// Whether the idle state of idle `cpu` polls its need-resched flag
    /// now (TIF_POLLING_NRFLAG, see [`Sim::enter_idle_state`]).
    pub(crate) fn idle_polling(&self, cpu: CpuId) -> bool {
        let rq = &self.rqs[cpu as usize];
        rq.curr.is_none() && self.machine.wakeup.idle_states[rq.idle_state as usize].polls
    }

    /// The polling loop of idle `cpu` gave up at its limit (poll_idle() or
    /// snooze_loop() timing out): the governor records the period as
    /// lasting until the next timer (or, when a tick came during the loop,
    /// as a tick wakeup) and the next turn of the idle loop selects again.
    pub(crate) fn poll_timeout(&mut self, cpu: CpuId) {
        let tick_ns = self.tick_ns;
        let rq = &mut self.rqs[cpu as usize];
        let got_tick = std::mem::take(&mut rq.got_idle_tick);
        rq.menu.update_poll_timeout(got_tick, tick_ns);
        rq.menu_since_ns = self.now;
        self.idle_loop_turn(cpu, got_tick);
    }

    /// The idle CPU stops its tick (a pending tick event is dropped by its
    /// generation) and joins the nohz idle mask.
    fn stop_idle_tick(&mut self, cpu: CpuId) {
        let rq = &mut self.rqs[cpu as usize];
        rq.tick_gen = rq.tick_gen.wrapping_add(1);
        rq.tick_running = false;
        self.nohz_balance_enter_idle(cpu);
    }

    /// One more CPU of `cpu`'s LLC counts as busy (`busy`) or one fewer
    /// (`nr_busy_cpus`).
    fn llc_busy_count(&mut self, cpu: CpuId, busy: bool) {
        let llc = &mut self.llc[self.domains.cpus[cpu as usize].llc_id as usize];
        if busy {
            llc.nr_busy_cpus += 1;
        } else {
            llc.nr_busy_cpus -= 1;
        }
    }

    /// For `cpu`'s idle governor the idle period that began at
    /// `menu_since_ns` ends now, by the tick or by something else, and the
    /// next one begins. A period that ends where it began never entered an
    /// idle state (do_idle() leaves its loop on need_resched before asking
    /// the governor, e.g. when a tick's balance pulled a task), so the
    /// governor learns nothing from it.
    fn menu_period_end(&mut self, cpu: CpuId, tick_wakeup: bool) {
        let now = self.now;
        let rq = &mut self.rqs[cpu as usize];
        // A tick taken inside a polling loop counts as the period's tick
        // wakeup (menu_reflect() reads tick_nohz_idle_got_tick()).
        let tick_wakeup = tick_wakeup || std::mem::take(&mut rq.got_idle_tick);
        if now == rq.menu_since_ns {
            return;
        }
        let exit_ns = self.machine.wakeup.idle_states[rq.idle_state as usize].exit_ns as u64;
        rq.menu
            .update(now - rq.menu_since_ns, tick_wakeup, self.tick_ns, exit_ns);
        rq.menu_since_ns = now;
    }

    /// The tick stopped on an idle CPU: it joins the nohz idle mask unless it
    /// never left it, and without S2's accounting leaves its LLC's busy count
    /// (mirrors nohz_balance_enter_idle() and set_cpu_sd_state_idle()).
    fn nohz_balance_enter_idle(&mut self, cpu: CpuId) {
        // Each time: the CPU may carry blocked load, and the idle CPUs'
        // averages need periodic updates again.
        self.rqs[cpu as usize].has_blocked_load = true;
        self.nohz_has_blocked = true;
        if !self.nohz_idle.test(cpu) {
            self.nohz_idle.set(cpu);
            self.nr_nohz_idle += 1;
            if !self.feat(Feat::NR_BUSY_ON_IDLE) {
                self.llc_busy_count(cpu, false);
            }
            // Its next balance joins `nohz.next_balance` when a busy
            // CPU's tick sends a NOHZ_NEXT_KICK.
            self.nohz_needs_update = true;
        }
    }

    /// Brings the statistics up to now, at the end of the run (`end`) or at
    /// a look between events ([`Sim::run_until`]). Only the end charges the
    /// running tasks through their classes (update_curr()); a look counts
    /// their CPU time without touching class state, so that looking at a
    /// run does not change it (a deadline budget spent would otherwise be
    /// caught at the look rather than at the next tick).
    fn finish_accounting(&mut self, end: bool) {
        self.account_placement();
        for cpu in 0..self.rqs.len() {
            // Count the time so far; a later run_until() goes on counting.
            if self.rqs[cpu].idle_state_since_ns.is_some() {
                self.leave_idle_state(cpu as CpuId);
                self.rqs[cpu].idle_state_since_ns = Some(self.now);
            }
        }
        let now = self.now;
        for rq in &mut self.rqs {
            if rq.curr.is_some() {
                rq.busy_ns += now - rq.last_busy_change;
            } else {
                rq.idle_ns += now - rq.last_busy_change;
            }
            rq.last_busy_change = now;
        }
        for i in 0..self.tasks.len() {
            match self.tasks[i].state {
                TaskState::Running if end => self.update_curr_any(self.tasks[i].cpu),
                TaskState::Running => {
                    let tk = &mut self.tasks[i];
                    let stretch = now.saturating_sub(tk.se.exec_start);
                    let more = stretch.saturating_sub(tk.stats.cpu_settled_ns);
                    tk.stats.cpu_time_ns += more;
                    tk.stats.cpu_settled_ns += more;
                }
                // A wait still open counts up to now (the kernel's
                // run_delay would add it only when the task runs), so that
                // a task starved to the end shows its wait.
                TaskState::Runnable => {
                    let st = &mut self.tasks[i].stats;
                    st.wait_time_ns += now - st.wait_start_ns;
                    st.wait_start_ns = now;
                }
                _ => {}
            }
        }
    }

    /// `idle_cpu()`: the idle task runs, nothing is queued and no wakeup is on its way.
    pub(crate) fn is_idle_cpu(&self, cpu: CpuId) -> bool {
        let rq = &self.rqs[cpu as usize];
        rq.curr.is_none() && rq.nr_running() == 0 && rq.ttwu_pending == 0
    }

    // ----- the tick -------------------------------------------------------

    fn start_tick(&mut self, cpu: CpuId) {
        let rq = &mut self.rqs[cpu as usize];
        if rq.tick_running {
            return;
        }
        rq.tick_running = true;
        rq.tick_gen = rq.tick_gen.wrapping_add(1);
        let next = (self.jiffies() + 1) * self.tick_ns;
        self.push_tick(cpu, next);
    }

    /// Queues `cpu`'s next tick at `at_ns`, a jiffy boundary. Every CPU's
    /// tick is on the same boundaries (tick_setup_sched_timer() without
    /// `skew_tick`, and tick_nohz_restart() forwards a stopped tick on the
    /// same grid); the CPUs take their ticks at the same instant, in an
    /// order drawn afresh for each tick (on hardware, an arbitrary one).
    fn push_tick(&mut self, cpu: CpuId, at_ns: u64) {
        debug_assert_eq!(at_ns % self.tick_ns, 0, "tick off the jiffy grid");
        let gen = self.rqs[cpu as usize].tick_gen;
        let rank = self.rng_tick_order.gen_range(1..1u32 << 24);
        self.q
            .push_ranked(at_ns, rank, EventKind::Tick { cpu, gen });
    }

    /// The scheduler tick of a busy CPU (mirrors sched_tick() → task_tick_fair(),
    /// then sched_balance_trigger() and nohz_balancer_kick()).
    fn tick(&mut self, cpu: CpuId) {
        let rq = &self.rqs[cpu as usize];
        if rq.curr.is_none() {
            self.idle_tick(cpu);
            return;
        }
        self.push_tick(cpu, self.now + self.tick_ns);
        self.nohz_balance_exit_idle(cpu);
        // sched_tick(): a pending lazy reschedule becomes a real one.
        self.resched_lazy_honour(cpu);
        self.update_rq_clock(cpu);
        self.update_curr(cpu);
        if self.rqs[cpu as usize]
            .curr
            .is_some_and(|t| self.task_is_dl(t))
        {
            self.task_tick_dl(cpu);
        } else if let Some(t) = self.rqs[cpu as usize].curr.filter(|&t| self.task_is_rt(t)) {
            self.task_tick_rt(cpu, t);
        } else if let Some(t) = self.rqs[cpu as usize].curr {
            self.update_load_avg(cpu, t);
            // entity_tick(): under EEVDF the reschedule, when the request or
            // the protected slice is used up, happens in update_curr(); 3.10's
            // CFS tests curr's share here.
            if self.cfs_mode() && self.rqs[cpu as usize].cfs.nr_queued > 1 {
                self.check_preempt_tick(cpu, t);
            }
            // task_tick_fair(): misfit detection for asymmetric capacities.
            self.update_misfit_status(cpu, Some(t));
            self.task_tick_cache(cpu, t);
        }
        // sched_balance_trigger(): raise the balancing softirq when due, and
        // decide the nohz kick now; the softirq runs as the tick's interrupt
        // returns, after that decision.
        let due = self.now >= self.rqs[cpu as usize].next_balance;
        if self.feat(Feat::NOHZ_BALANCE) {
            self.nohz_balancer_kick(cpu);
        }
        // The tick is an hrtimer: sleep timers in their slack range run in
        // the same interrupt, before its softirq.
        self.expire_soft_timers(cpu);
        if due {
            // The balancing softirq (sched_balance_softirq()).
            self.linaro_force_migration();
            self.update_blocked_averages(cpu);
            self.sched_balance_domains(cpu, false);
        }
        self.hmp_tick();
    }

    /// The tick of an idle CPU whose governor kept it (mirrors sched_tick()
    /// on the idle task: sched_balance_trigger() raises the balancing softirq
    /// when due, which balances as CPU_IDLE, and an idle CPU kicks no one,
    /// while one with work queued behind its idle task does both as busy;
    /// then the next turn of do_idle()'s loop, in which the governor counts
    /// the tick wakeup as a long idle period, and which may stop the tick
    /// now, [`Sim::idle_loop_turn`]).
    pub(crate) fn idle_tick(&mut self, cpu: CpuId) {
        let now = self.now;
        // sched_tick()'s rq->idle_balance = idle_cpu(): not idle while a
        // wakeup is queued here or on its way; the softirq balances with
        // this value.
        let idle = self.is_idle_cpu(cpu);
        // A polling loop (poll_idle(), snooze_loop()) takes the tick with
        // interrupts on and polls on: no new idle period, no new selection,
        // the same time limit.
        let snoozing = self.in_poll_loop(cpu);
        if snoozing {
            self.rqs[cpu as usize].got_idle_tick = true;
        } else {
            self.trace_idle_state_exit(cpu);
            self.menu_period_end(cpu, true);
        }
        // sched_balance_trigger(): the softirq when due; a CPU that is not
        // idle (its idle task still current, with work queued) decides the
        // nohz kick as a busy one does.
        let due = now >= self.rqs[cpu as usize].next_balance;
        if !idle && self.feat(Feat::NOHZ_BALANCE) {
            // nohz_balancer_kick() first leaves the nohz idle mask.
            self.nohz_balance_exit_idle(cpu);
            self.nohz_balancer_kick(cpu);
        }
        self.expire_soft_timers(cpu);
        if due {
            self.update_rq_clock(cpu);
            self.counters.idle_tick_balance += 1;
            self.linaro_force_migration();
            self.update_blocked_averages(cpu);
            self.sched_balance_domains(cpu, idle);
        }
        self.hmp_tick();
        if self.is_idle_cpu(cpu) && !snoozing {
            self.idle_loop_turn(cpu, true);
        }
        if self.rqs[cpu as usize].tick_running {
            self.push_tick(cpu, now + self.tick_ns);
        }
    }

    /// An idle CPU woke (an IPI) and found nothing to run (mirrors the next
    /// turn of do_idle()'s loop): for its governor one idle period ends and
    /// another starts, and a CPU that kept its tick may stop it now; one
    /// whose tick is stopped keeps it stopped.
    pub(crate) fn idle_rewake(&mut self, cpu: CpuId) {
        let got_tick = self.rqs[cpu as usize].got_idle_tick;
        self.menu_period_end(cpu, false);
        self.idle_loop_turn(cpu, got_tick);
    }

    /// Task `t`, about to sleep until `expiry_ns`, arms its timer on its CPU
    /// (do_nanosleep() starts the hrtimer before schedule(), and an hrtimer
    /// started by a running task lands on that task's CPU), so the governor
    /// of that CPU sees it when the CPU goes idle. `slack_ns` before
    /// `expiry_ns` is its soft expiry (hrtimer_set_expires_range_ns()).
    pub(crate) fn note_sleep_timer(&mut self, t: TaskId, expiry_ns: u64, slack_ns: u64) {
        self.tasks[t as usize].sleep_timer_ns = Some(expiry_ns);
        self.tasks[t as usize].sleep_timer_soft_ns = expiry_ns - slack_ns;
        let cpu = self.tasks[t as usize].cpu;
        // Drop expired entries first, so a CPU that never idles keeps only
        // its pending timers.
        self.prune_timers(cpu);
        self.rqs[cpu as usize]
            .timers
            .push(std::cmp::Reverse((expiry_ns, t)));
    }

    /// The time from now to `cpu`'s next timer event, what the idle governor
    /// reads (tick_nohz_get_sleep_length() without the tick): the earliest
    /// sleep timer still armed there, its kthread's next wakeup, or the
    /// replenishment of a throttled deadline task queued there; `NO_TIMER_NS`
    /// when there is none. Drops the entries of tasks that woke. (Timers
    /// whose expiry wakes no task here, a fair server's or a blocked
    /// deadline task's, do not wake an idle CPU in this model, so they do
    /// not count either.)
    pub(crate) fn next_timer_in(&mut self, cpu: CpuId) -> u64 {
        let now = self.now;
        self.prune_timers(cpu);
        let rq = &self.rqs[cpu as usize];
        let sleep = rq.timers.peek().map(|r| r.0 .0);
        let mut next = sleep
            .into_iter()
            .chain(rq.noise_next_ns.filter(|&n| n >= now))
            .min();
        if self.rt_dl_in_use {
            let dl = self.next_dl_timer(cpu);
            next = next.into_iter().chain(dl).min();
        }
        match next {
            None => crate::idle_gov::NO_TIMER_NS,
            Some(at) => at.max(now) - now,
        }
    }

    /// The earliest replenishment timer armed on `cpu` that will queue its
    /// task here (a throttled task queued on `cpu`).
    fn next_dl_timer(&mut self, cpu: CpuId) -> Option<u64> {
        self.prune_dl_timers(cpu);
        self.rqs[cpu as usize]
            .dl_timers
            .iter()
            .find(|&&(at, t)| {
                let tk = &self.tasks[t as usize];
                tk.dl_timers().replenish.expires_ns() == Some(at)
                    && tk.cpu == cpu
                    && tk.dl.as_ref().is_some_and(|e| e.on_rq && e.throttled)
            })
            .map(|&(at, _)| at)
    }

    /// Drops the leading entries of `cpu`'s replenishment-timer set whose
    /// timers fired, were cancelled or re-armed since (the set stays as
    /// large as the timers still armed there).
    pub(crate) fn prune_dl_timers(&mut self, cpu: CpuId) {
        while let Some(&(at, t)) = self.rqs[cpu as usize].dl_timers.first() {
            if self.tasks[t as usize].dl_timers().replenish.expires_ns() == Some(at) {
                return;
            }
            self.rqs[cpu as usize].dl_timers.pop_first();
        }
    }

    /// An hrtimer interrupt on `cpu` (its tick, its HRTICK, a sleep timer's
    /// hard expiry) also runs every sleep timer armed there whose soft
    /// expiry has passed, in expiry order (mirrors __hrtimer_run_queues():
    /// a timer runs from its soft expiry on, while the clock event is
    /// programmed for the earliest hard one). A timer's hard expiry is at
    /// most the timer slack after its soft one, so only the heap's top
    /// entries up to that far ahead are looked at.
    pub(crate) fn expire_soft_timers(&mut self, cpu: CpuId) {
        let now = self.now;
        let horizon = now + crate::exec::TIMER_SLACK_NS;
        let mut due = Vec::new();
        let mut keep = Vec::new();
        while let Some(&std::cmp::Reverse((hard, t))) = self.rqs[cpu as usize].timers.peek() {
            if hard > horizon {
                break;
            }
            self.rqs[cpu as usize].timers.pop();
            let tk = &self.tasks[t as usize];
            if tk.sleep_timer_ns != Some(hard) || hard < now {
                continue; // woke otherwise, or fired already
            }
            if hard > now && tk.sleep_timer_soft_ns <= now {
                due.push(t);
            } else {
                // Its own event (now or later) fires it.
                keep.push((hard, t));
            }
        }
        for (hard, t) in keep {
            self.rqs[cpu as usize]
                .timers
                .push(std::cmp::Reverse((hard, t)));
        }
        for t in due {
            self.counters.timers_early += 1;
            self.sleep_timer_fires(cpu, t);
        }
    }

    /// Task `t`'s sleep timer fires on `cpu`: the interrupt wakes it.
    fn sleep_timer_fires(&mut self, cpu: CpuId, t: TaskId) {
        self.timer_interrupts(cpu, t);
        self.irq_wakeup(t, cpu);
    }

    /// Drops the timer entries at the top of `cpu`'s heap that fired or
    /// whose task woke otherwise.
    fn prune_timers(&mut self, cpu: CpuId) {
        let now = self.now;
        let rq = &mut self.rqs[cpu as usize];
        while let Some(&std::cmp::Reverse((expiry, t))) = rq.timers.peek() {
            if expiry >= now && self.tasks[t as usize].sleep_timer_ns == Some(expiry) {
                break;
            }
            rq.timers.pop();
        }
    }

    /// The first busy tick after idle takes the CPU out of the nohz idle
    /// mask and, without S2's accounting, counts it busy in its LLC again
    /// (mirrors nohz_balance_exit_idle() and set_cpu_sd_state_busy(), which
    /// nohz_balancer_kick() calls first).
    fn nohz_balance_exit_idle(&mut self, cpu: CpuId) {
        if !self.nohz_idle.test(cpu) {
            return;
        }
        self.nohz_idle.clear(cpu);
        self.nr_nohz_idle -= 1;
        if !self.feat(Feat::NR_BUSY_ON_IDLE) {
            self.llc_busy_count(cpu, true);
        }
    }

    // ----- HRTICK ------------------------------------------------------------

    /// The HRTICK timer fired (mirrors hrtick() → task_tick_fair() with
    /// `queued` set): charge the running task and reschedule, without the
    /// periodic tick's other work.
    fn hrtick(&mut self, cpu: CpuId) {
        let Some(t) = self.rqs[cpu as usize].curr else {
            return;
        };
        if self.task_is_dl(t) {
            // task_tick_dl() from the HRTICK: the budget is charged (the
            // task throttled if it is spent) and, while some is left and the
            // task still comes first, the timer is armed for the rest.
            self.update_rq_clock(cpu);
            self.task_tick_dl(cpu);
            self.hrtick_start_dl(cpu, t);
            return;
        }
        if self.task_is_rt(t) {
            // A timer armed for a fair slice, still pending when an RT task
            // took the CPU: task_tick_rt() (a SCHED_RR slice loses a tick).
            self.update_rq_clock(cpu);
            self.task_tick_rt(cpu, t);
            return;
        }
        self.update_rq_clock(cpu);
        self.update_curr(cpu);
        self.update_load_avg(cpu, t);
        self.resched_cpu(cpu, cpu);
    }

    /// Arms the HRTICK timer `delay_ns` from now, at least 10 µs (mirrors
    /// hrtick_start()); a queued timer whose expiry would move by 5 µs or
    /// less is left alone (hrtick_needs_rearm()).
    pub(crate) fn hrtick_start(&mut self, cpu: CpuId, delay_ns: u64) {
        let expires = self.now + delay_ns.max(HRTICK_MIN_NS);
        let rq = &mut self.rqs[cpu as usize];
        if rq
            .hrtick
            .expires_ns()
            .is_some_and(|old| old.abs_diff(expires) <= HRTICK_REARM_SLACK_NS)
        {
            return;
        }
        rq.hrtick
            .arm(&mut self.q, expires, |gen| EventKind::HrTick { cpu, gen });
    }

    /// Cancels a queued HRTICK timer (hrtick_schedule_exit() when the CPU
    /// goes idle).
    pub(crate) fn hrtick_cancel(&mut self, cpu: CpuId) {
        self.rqs[cpu as usize].hrtick.cancel();
    }

    /// Marks `cpu` for rescheduling (mirrors resched_curr()); a request from
    /// another CPU arrives after its IPI, unless `cpu` polls in idle, and an
    /// idle `cpu` then leaves its idle state ([`Sim::wake_delay_ns`]).
    pub(crate) fn resched_cpu(&mut self, cpu: CpuId, from: CpuId) {
        let was_nonlazy = self.rqs[cpu as usize].need_resched_nonlazy();
        let delay = self.wake_delay_ns(cpu, from, 0);
        self.resched_after(cpu, delay);
        if cpu == from && !was_nonlazy {
            self.rqs[cpu as usize].resched_folded = true;
        }
    }

    /// A fair-class reschedule (mirrors resched_curr_lazy()): with
    /// PREEMPT_LAZY, a busy CPU other than the one running this code only
    /// gets `need_resched_lazy`, no IPI; its next tick or its task's next
    /// return from the kernel acts on it ([`Sim::resched_lazy_honour`]). An
    /// idle CPU, the local one, or preempt=full: as resched_curr(). (A
    /// wakeup queued by TTWU_QUEUE runs its check on the target itself, as
    /// the local CPU.)
    pub(crate) fn resched_cpu_lazy(&mut self, cpu: CpuId, from: CpuId) {
        let rq = &mut self.rqs[cpu as usize];
        let lazy = self.cfg.features.enabled(Feat::PREEMPT_LAZY) && rq.curr.is_some();
        if !lazy || cpu == from {
            let was_nonlazy = rq.need_resched_nonlazy();
            self.resched_cpu(cpu, from);
            // The local CPU's own lazy request: the engine acts on it as soon
            // as its task takes time or returns to user space, but a
            // preempt_enable() inside the kernel does not.
            self.rqs[cpu as usize].need_resched_local_lazy = lazy && !was_nonlazy;
            return;
        }
        if !rq.need_resched {
            rq.need_resched_lazy = true;
        }
    }

    /// Whether the running task `t`, inside a system call, is switched out
    /// at its next preempt_enable() (mirrors preempt_schedule()'s
    /// condition): a non-lazy reschedule of its own CPU is due. A lazy one
    /// waits for the return to user space; a remote request whose IPI is
    /// still in flight has not yet been folded into the preempt count.
    pub(crate) fn preempt_due(&self, t: TaskId) -> bool {
        let rq = &self.rqs[self.tasks[t as usize].cpu as usize];
        rq.curr == Some(t) && rq.need_resched_nonlazy() && rq.resched_folded
    }

    /// `cpu` returns to user space or takes its tick: a pending lazy
    /// reschedule is acted on now (exit_to_user_mode_loop(), sched_tick()).
    pub(crate) fn resched_lazy_honour(&mut self, cpu: CpuId) {
        if std::mem::take(&mut self.rqs[cpu as usize].need_resched_lazy) {
            self.resched_cpu(cpu, cpu);
        }
    }

    pub(crate) fn resched_after(&mut self, cpu: CpuId, delay_ns: u64) {
        let rq = &mut self.rqs[cpu as usize];
        rq.need_resched = true;
        rq.need_resched_local_lazy = false;
        // A request due before the pending event (a local one while a remote
        // IPI is in flight) gets its own event; the later one then finds the
        // flag served and does nothing.
        if !rq.resched_pending || self.now + delay_ns < rq.resched_at_ns {
            rq.resched_pending = true;
            rq.resched_at_ns = self.now + delay_ns;
            self.q.push(self.now + delay_ns, EventKind::Resched { cpu });
        }
    }

    /// A system call of thread `t` failed in a way its program does not
    /// survive (rt-app exits the whole process on a refused
    /// SCHED_DEADLINE, for one): the run stops as [`StopReason::Exited`]
    /// with `why`.
    pub(crate) fn workload_exits(&mut self, t: TaskId, why: String) {
        if self.stop == Some(StopReason::Exited) {
            return;
        }
        self.stop = Some(StopReason::Exited);
        self.exit_reason = Some(format!(
            "thread {} at {:.3} ms: {why}",
            self.tasks[t as usize].name,
            self.now as f64 / 1e6
        ));
    }

    // ----- schedule() -----------------------------------------------------

    /// The main scheduler function (mirrors __schedule()): put the previous
    /// task back, pick the next one (balancing newly-idle if there is none),
    /// switch.
    ///
    /// A preempted prev is still the runqueue's current entity during the
    /// pick, as in pick_next_task_fair(); when the pick is prev again, the
    /// kernel's put_prev_set_next_task() does nothing, so prev just goes on
    /// running: its protected slice, its `exec_start` and its hardware
    /// state stay as they were. (Under 3.10's CFS, whose __schedule() always
    /// put prev back and set it again, prev's turn restarts and its buddies
    /// are cleared.)
    pub(crate) fn schedule(&mut self, cpu: CpuId) {
        self.update_rq_clock(cpu);
        let prev = self.rqs[cpu as usize].curr;
        let mut picked = None;
        if let Some(p) = prev {
            self.update_curr_any(cpu);
            if self.tasks[p as usize].state == TaskState::Running {
                // prev_balance(): a deadline task out of the tree or an RT
                // task whose priority dropped pulls.
                self.prev_balance(cpu, p);
                let next = self.pick_next_task(cpu);
                if next == Some(p) {
                    if self.cfs_mode() && self.task_is_fair(p) {
                        // 3.10 put prev back and set it again:
                        // set_next_entity() starts a new turn and the
                        // pick cleared its buddies.
                        self.clear_buddies(cpu, p);
                        let se = &mut self.tasks[p as usize].se;
                        se.prev_sum_exec_runtime = se.sum_exec_runtime;
                    }
                    self.clear_need_resched(cpu);
                    self.rqs[cpu as usize].yielded = None;
                    return;
                }
                picked = next;
                // Preempted: back into the queue.
                if self.tasks[p as usize].locks_held > 0 {
                    self.counters.lock_holder_preemptions += 1;
                }
                self.stop_running(p);
                self.put_prev_task(cpu, p);
                let t = &mut self.tasks[p as usize];
                t.state = TaskState::Runnable;
                t.stats.wait_start_ns = self.now;
            }
            self.rqs[cpu as usize].curr = None;
        }
        match picked {
            Some(n) => {
                self.clear_need_resched(cpu);
                self.switch_to(cpu, prev, n);
            }
            None => self.pick_and_switch(cpu, prev),
        }
        self.rqs[cpu as usize].yielded = None;
    }

    /// The pick is made: the reschedule requests it served are cleared, as
    /// __schedule() clears the flags after pick_next_task(), so that one
    /// made during the pick (a newidle pull's attach, an RT pull) does not
    /// stay with the task picked.
    fn clear_need_resched(&mut self, cpu: CpuId) {
        let rq = &mut self.rqs[cpu as usize];
        rq.need_resched = false;
        rq.need_resched_local_lazy = false;
        rq.resched_folded = false;
        rq.need_resched_lazy = false;
    }

    /// Picks the next task of `cpu` (balancing newly-idle if there is none) and
    /// switches to it or to idle; `prev` is the task that ran before (not
    /// runnable any more).
    pub(crate) fn pick_and_switch(&mut self, cpu: CpuId, prev: Option<TaskId>) {
        // prev_balance(): after a deadline or RT task left, pull waiting ones.
        if let Some(p) = prev {
            self.prev_balance(cpu, p);
        }
        let mut next = self.pick_next_task(cpu);
        // HPERF_HMP's idle big CPU pulls before anything else; Linaro MP's
        // hmp_idle_pull() comes at the end of 3.10's idle_balance(), when the
        // domains' newidle balancing pulled nothing.
        let hperf = self.feat(Feat::HMP_HPERF);
        if next.is_none() && hperf && self.hmp_idle_pull(cpu) {
            next = self.pick_next_entity(cpu);
        }
        if next.is_none() && self.feat(Feat::NEWIDLE_BALANCE) {
            // pick_next_task_fair() balances before the switch: `prev`, if a
            // task, is still the CPU's current task.
            self.newidle_after_task = prev.map(|_| cpu);
            let pulled = self.sched_balance_newidle(cpu);
            self.newidle_after_task = None;
            if pulled > 0 {
                next = self.pick_next_entity(cpu);
            }
        }
        if next.is_none() && !hperf && self.hmp_idle_pull(cpu) {
            next = self.pick_next_entity(cpu);
        }
        self.clear_need_resched(cpu);
        match next {
            Some(n) => self.switch_to(cpu, prev, n),
            None => {
                self.trace_switch(cpu);
                self.update_idle_rq_clock_pelt(cpu);
                self.update_misfit_status(cpu, None);
                self.hrtick_cancel(cpu);
                if prev.is_some() {
                    self.idle_enter(cpu);
                } else {
                    // A reschedule reached the idle CPU and found nothing
                    // (its wakee was taken first): do_idle() goes round
                    // again, with a new governor round.
                    self.counters.idle_resched_empty += 1;
                    self.idle_rewake(cpu);
                }
                self.nohz_run_idle_balance(cpu);
            }
        }
        self.rqs[cpu as usize].nohz_flags &= !crate::fair::balance::NOHZ_NEWILB_KICK;
    }

    /// Makes the picked `next` run on `cpu` after `prev` (set_next_task_fair(),
    /// then the context switch).
    fn switch_to(&mut self, cpu: CpuId, prev: Option<TaskId>, n: TaskId) {
        if prev.is_none() {
            // put_prev_task_idle(): the idle time goes to the fair server.
            self.fair_server_charge_idle(cpu);
        }
        let dl = self.task_is_dl(n);
        let rt = self.task_is_rt(n);
        if dl {
            self.set_next_task_dl(cpu, n);
        } else if rt {
            self.set_next_task_rt(cpu, n);
        } else {
            self.set_next_entity(cpu, n);
        }
        self.rqs[cpu as usize].curr = Some(n);
        if prev.is_none() {
            self.idle_exit(cpu);
        }
        if rt || dl {
            // No fair slice to arm a timer for. 7.3 leaves a pending HRTICK
            // armed across the switch (hrtick_schedule_exit() cancels it only
            // on an idle CPU): it fires into the class's task_tick(). A
            // deadline task's budget may have its own timer (HRTICK_DL).
            if dl {
                self.hrtick_start_dl(cpu, n);
            }
        } else {
            // set_next_task_fair(): the HRTICK timer for the new slice, then
            // the misfit status.
            if self.feat(Feat::HRTICK) {
                self.hrtick_start_fair(cpu, n, false);
            }
            self.update_misfit_status(cpu, Some(n));
        }
        let t = &mut self.tasks[n as usize];
        t.state = TaskState::Running;
        t.stats.wait_time_ns += self.now - t.stats.wait_start_ns;
        if prev != Some(n) {
            t.stats.nr_switches += 1;
            self.counters.context_switches += 1;
        }
        // Before the task resumes: it may block at once (a nested
        // schedule()), which must follow this switch in the trace.
        self.trace_switch(cpu);
        // The balance callback set_next_task_rt() queues: push RT tasks
        // that wait here.
        if rt && self.rqs[cpu as usize].rt.overloaded() {
            self.push_rt_tasks(cpu);
        }
        if dl && !self.rqs[cpu as usize].dl.pushable.is_empty() {
            self.push_dl_tasks(cpu);
        }
        self.start_running(n);
    }

    // ----- wakeups ----------------------------------------------------------

    /// Wakes a blocked task (mirrors try_to_wake_up()): a delayed task is
    /// requeued where it is (ttwu_runnable()), otherwise select_task_rq() picks
    /// a CPU and the task is enqueued there; an idle target is kicked with an
    /// IPI and pays the idle-exit latency.
    pub(crate) fn try_to_wake_up(
        &mut self,
        t: TaskId,
        waker_cpu: CpuId,
        waker: Option<TaskId>,
        wake_flags: u32,
    ) {
        let task = &self.tasks[t as usize];
        if task.state != TaskState::Blocked {
            return;
        }
        let (delayed, prev) = (task.se.sched_delayed, task.cpu);
        if task.parked {
            self.parked -= 1;
        }
        self.tasks[t as usize].parked = false;
        self.tasks[t as usize].sleep_timer_ns = None;
        self.trace_waking(waker_cpu, t);
        self.counters.wakeups += 1;
        self.tasks[t as usize].stats.wakeups += 1;
        self.tasks[t as usize].last_waker_cpu = Some(waker_cpu);
        if delayed {
            let cpu = prev;
            self.update_rq_clock(cpu);
            self.requeue_delayed(cpu, t);
            let tk = &mut self.tasks[t as usize];
            tk.state = TaskState::Runnable;
            tk.stats.wait_start_ns = self.now;
            self.counters.wakeups_delayed += 1;
            self.trace_wakeup(waker_cpu, t, cpu, false);
            self.wakeup_preempt(cpu, t, waker_cpu, wake_flags | WF_TTWU);
            self.irq_return_to_user(waker_cpu, waker);
            return;
        }
        // try_to_wake_up() adds WF_TTWU; select_task_rq() WF_RQ_SELECTED.
        let mut wake_flags = wake_flags | WF_TTWU;
        let cpu = self.select_task_rq(t, prev, waker_cpu, waker, &mut wake_flags);
        if cpu == waker_cpu {
            self.counters.wakeups_local += 1;
            self.tasks[t as usize].stats.wakeups_local += 1;
        } else {
            self.counters.wakeups_remote += 1;
            self.tasks[t as usize].stats.wakeups_remote += 1;
        }
        if self.machine.cpus[cpu as usize].llc != self.machine.cpus[waker_cpu as usize].llc {
            self.counters.wakeups_cross_llc += 1;
        }
        // The target's clock is brought up to date before a moving task's
        // load is attached there (the kernel attaches at enqueue, after
        // update_rq_clock(); a stale clock would decay the task's history
        // over the target's whole idle time).
        self.update_rq_clock(cpu);
        if cpu != prev {
            // (The old CPU's runqueue is neither locked nor updated.)
            self.set_task_cpu(t, prev, cpu, false);
        }
        if self.feat(Feat::TTWU_QUEUE) && self.ttwu_queue_cond(waker_cpu, cpu) {
            self.ttwu_queue_wakelist(t, cpu, waker_cpu, wake_flags);
        } else {
            self.ttwu_do_activate(cpu, t, waker_cpu, wake_flags);
        }
        self.irq_return_to_user(waker_cpu, waker);
    }

    /// A wakeup from an interrupt (no waker task): the interrupt's return
    /// to user space acts on a lazy reschedule of its CPU, unless it
    /// interrupted a system call. A task's wakeup
    /// is a system call, whose return to user space comes when its step is
    /// done ([`Sim::return_to_user`]): a pending lazy request must not turn
    /// into TIF_NEED_RESCHED in between, where the task's further wakeups
    /// (preempt_enable() in wake_up_q(), the need_resched test of
    /// check_preempt_wakeup_fair()) would see it.
    fn irq_return_to_user(&mut self, cpu: CpuId, waker: Option<TaskId>) {
        // An interrupt of a task inside a system call that takes time (a
        // read's copy, a yield's cost) returns to the kernel, which leaves
        // TIF_NEED_RESCHED_LAZY for the system call's own return.
        let in_kernel = self.rqs[cpu as usize]
            .curr
            .is_some_and(|c| self.tasks[c as usize].syscall_return);
        if waker.is_none() && !in_kernel {
            self.resched_lazy_honour(cpu);
        }
    }

    /// Whether a wakeup from `waker_cpu` onto `cpu` goes through `cpu`'s wake
    /// list (mirrors ttwu_queue_cond()): always into another LLC, never onto
    /// the waker's own CPU, and onto a CPU of the same LLC when nothing is
    /// queued there (idle, or its last task is on its way out), which then
    /// does the activation itself.
    fn ttwu_queue_cond(&self, waker_cpu: CpuId, cpu: CpuId) -> bool {
        if !self.cpus_share_cache(waker_cpu, cpu) {
            return true;
        }
        cpu != waker_cpu
            && self.feat(Feat::TTWU_QUEUE_IDLE)
            && self.rqs[cpu as usize].nr_running() == 0
    }

    /// Queues a woken task on `cpu`'s wake list (mirrors
    /// ttwu_queue_wakelist()): `ttwu_pending` keeps the CPU from looking idle,
    /// and the first entry sends the IPI, which arrives after the IPI latency
    /// (plus an idle target's exit latency, and after an interrupt on an idle
    /// waker CPU, that CPU's idle exit first). Later entries ride on it.
    fn ttwu_queue_wakelist(&mut self, t: TaskId, cpu: CpuId, waker_cpu: CpuId, wake_flags: u32) {
        self.tasks[t as usize].state = TaskState::Waking;
        let delay_ns = self.wake_delay_ns(cpu, waker_cpu, wake_flags);
        let rq = &mut self.rqs[cpu as usize];
        rq.ttwu_pending += 1;
        rq.wake_list.push(t);
        if rq.wake_list.len() == 1 {
            self.q
                .push(self.now + delay_ns, EventKind::WakeList { cpu });
        }
        self.counters.wakeups_queued += 1;
    }

    /// The wake-list IPI arrives on `cpu` (mirrors sched_ttwu_pending()):
    /// every queued task is activated in turn, with the preemption checks
    /// local to `cpu`, and the interrupt's return to user space acts on a
    /// pending lazy reschedule. The wakers' flags do not travel with the
    /// tasks (only WF_MIGRATED, which nothing here reads).
    fn sched_ttwu_pending(&mut self, cpu: CpuId) {
        self.trace_idle_state_exit(cpu);
        let mut list = std::mem::take(&mut self.rqs[cpu as usize].wake_list);
        self.rqs[cpu as usize].ttwu_pending -= list.len() as u32;
        for &t in &list {
            debug_assert_eq!(self.tasks[t as usize].state, TaskState::Waking);
            self.ttwu_do_activate(cpu, t, cpu, 0);
        }
        if self.rqs[cpu as usize].curr.is_some() {
            self.resched_lazy_honour(cpu);
        }
        // Keep the list's allocation for the next wakeups, unless the
        // activations queued new ones (their own IPI is on its way).
        let rq = &mut self.rqs[cpu as usize];
        if rq.wake_list.is_empty() {
            list.clear();
            rq.wake_list = list;
        }
    }

    /// Enqueues a woken task on `cpu` and kicks or preempts there (mirrors
    /// ttwu_do_activate()), from `from`: the waker's CPU, or `cpu` itself
    /// for a wake-list activation.
    fn ttwu_do_activate(&mut self, cpu: CpuId, t: TaskId, from: CpuId, wake_flags: u32) {
        self.update_rq_clock(cpu);
        self.enqueue_task(cpu, t, EnqueueKind::Wakeup);
        let tk = &mut self.tasks[t as usize];
        tk.state = TaskState::Runnable;
        tk.stats.wait_start_ns = self.now;
        self.trace_wakeup(from, t, cpu, false);
        self.kick_or_preempt(cpu, t, from, wake_flags);
        self.task_woken(cpu, t);
    }

    /// A timer interrupt on `cpu` wakes `t`. If `cpu` was idle, the
    /// interrupt runs only once the CPU has left its idle state, and so does
    /// whatever the wakeup starts there or sends on.
    fn irq_wakeup(&mut self, t: TaskId, cpu: CpuId) {
        let flags = if self.rqs[cpu as usize].curr.is_none() {
            // (The trace shows the exit at the interrupt, before the
            // wakeup it records, not an exit latency later.)
            self.trace_idle_state_exit(cpu);
            WF_IRQ_FROM_IDLE
        } else {
            0
        };
        self.try_to_wake_up(t, cpu, None, flags);
    }

    /// After enqueueing a woken/new task on `cpu`: an idle CPU is woken (IPI +
    /// idle exit when remote; after an interrupt on an idle waker CPU, that
    /// CPU's idle exit first), a busy one gets a preemption check.
    fn kick_or_preempt(&mut self, cpu: CpuId, t: TaskId, waker_cpu: CpuId, wake_flags: u32) {
        if self.rqs[cpu as usize].curr.is_none() {
            let delay = self.wake_delay_ns(cpu, waker_cpu, wake_flags);
            self.resched_after(cpu, delay);
        } else {
            self.wakeup_preempt(cpu, t, waker_cpu, wake_flags);
        }
    }

    /// How long a wakeup from `waker_cpu` takes to reach `cpu`: after an
    /// interrupt on an idle waker CPU, that CPU's idle exit first; to
    /// another CPU an IPI ([`Sim::ipi_ns_to`]), and an idle target's exit
    /// from its idle state.
    pub(crate) fn wake_delay_ns(&self, cpu: CpuId, waker_cpu: CpuId, wake_flags: u32) -> u64 {
        let mut delay_ns = 0;
        if wake_flags & WF_IRQ_FROM_IDLE != 0 {
            delay_ns += self.idle_exit_ns(waker_cpu);
        }
        if cpu != waker_cpu {
            delay_ns += self.ipi_ns_to(cpu);
            if self.rqs[cpu as usize].curr.is_none() {
                delay_ns += self.idle_exit_ns(cpu);
            }
        }
        delay_ns
    }

    /// The IPI that a request from another CPU costs `cpu` (mirrors
    /// set_nr_and_not_polling() and set_nr_if_polling()): none when `cpu` is
    /// idle in a state that polls its need-resched flag
    /// (an idle state with `polls`: x86 MWAIT and POLL, POWER's snooze,
    /// [`Sim::enter_idle_state`]), where writing the flag ends the idle
    /// state; the machine's `ipi_ns` otherwise.
    pub(crate) fn ipi_ns_to(&self, cpu: CpuId) -> u64 {
        if self.idle_polling(cpu) {
            0
        } else {
            self.machine.wakeup.ipi_ns as u64
        }
    }

    /// Moves a task that is on no runqueue from `from` to `to` (mirrors
    /// set_task_cpu() with migrate_task_rq_fair()): its load leaves `from`
    /// and joins `to`, it stops being cache hot, and the migration is
    /// counted and traced. `migrating` says the task was just taken off
    /// `from`'s runqueue to move it (TASK_ON_RQ_MIGRATING: the balancer, the
    /// stopper), delayed dequeue or not, and its load leaves at once
    /// (dequeue_entity()'s DO_DETACH); a waking task's leaves at `from`'s
    /// next update (remove_entity_load_avg()). The same CPU is no migration
    /// and changes nothing.
    pub(crate) fn set_task_cpu(&mut self, t: TaskId, from: CpuId, to: CpuId, migrating: bool) {
        if from == to {
            return;
        }
        // migrate_task_rq_fair(): an RT or deadline task's fair load is not
        // on any runqueue.
        let fair = self.task_is_fair(t);
        if fair && migrating {
            self.detach_entity_load(from, t);
        } else if fair {
            self.remove_entity_load(from, t, true);
        }
        self.trace_migrate(t, from, to);
        self.tasks[t as usize].cpu = to;
        // enqueue_entity() with ENQUEUE_MIGRATED: a task that moved is no
        // longer cache hot until it runs again (task_hot()).
        self.tasks[t as usize].se.exec_start = 0;
        self.tasks[t as usize].stats.cpu_settled_ns = 0;
        self.tasks[t as usize].stats.migrations += 1;
        self.counters.migrations += 1;
        self.note_migration(from, to);
        if fair {
            self.attach_entity_load(to, t);
        }
    }

    /// A sleep timer fires on `cpu` and wakes `t` from the interrupt: the
    /// task the interrupt found running is `current` for the wakeup, so
    /// select_task_rq_fair()'s record_wakee() counts `t` as its wakee (not
    /// for a wakee allowed on one CPU, which skips the class's placement, nor
    /// for one still queued with its dequeue delayed, which ttwu_runnable()
    /// requeues). Nothing else of the wakeup changes: the CPU is the wakee's
    /// previous one, so wake_affine() has no choice to make, and the kthread
    /// stacking rule does not apply in an interrupt.
    fn timer_interrupts(&mut self, cpu: CpuId, t: TaskId) {
        let tk = &self.tasks[t as usize];
        if tk.state != TaskState::Blocked || tk.se.sched_delayed || tk.affinity.weight() == 1 {
            return;
        }
        if let Some(current) = self.rqs[cpu as usize].curr {
            self.record_wakee(current, t);
        }
    }

    /// record_wakee(): count how often the waker switches wakee; decays by
    /// half every second.
    fn record_wakee(&mut self, waker: TaskId, wakee: TaskId) {
        let now = self.now;
        let w = &mut self.tasks[waker as usize];
        if now > w.wakee_flip_decay_ns + 1_000_000_000 {
            w.wakee_flips >>= 1;
            w.wakee_flip_decay_ns = now;
        }
        if w.last_wakee != Some(wakee) {
            w.last_wakee = Some(wakee);
            w.wakee_flips += 1;
        }
    }

    /// Where a waking or new task goes (mirrors select_task_rq()): a task
    /// allowed on one CPU goes there without the class's placement (no
    /// wakee bookkeeping, no idle search); any other goes through
    /// select_task_rq_fair(), which first records the wakee of a wakeup
    /// (record_wakee()), and `wake_flags` gains WF_RQ_SELECTED.
    pub(crate) fn select_task_rq(
        &mut self,
        t: TaskId,
        prev: CpuId,
        this_cpu: CpuId,
        waker: Option<TaskId>,
        wake_flags: &mut u32,
    ) -> CpuId {
        let affinity = self.tasks[t as usize].affinity;
        if affinity.weight() == 1 {
            return affinity.first().unwrap_or(prev);
        }
        if self.task_is_dl(t) {
            return self.select_task_rq_dl(t, prev, this_cpu, wake_flags);
        }
        if self.task_is_rt(t) {
            return self.select_task_rq_rt(t, prev, this_cpu, wake_flags);
        }
        if *wake_flags & WF_TTWU != 0 {
            if let Some(w) = waker {
                self.record_wakee(w, t);
            }
        }
        let cpu = self.select_task_rq_fair(t, prev, this_cpu, waker, *wake_flags);
        *wake_flags |= WF_RQ_SELECTED;
        cpu
    }

    /// The stopper takes `cpu` (its class runs above every fair task): the
    /// running task, if any, goes back to being a queued one. Returns it.
    pub(crate) fn stopper_preempt(&mut self, cpu: CpuId) -> Option<TaskId> {
        let prev = self.rqs[cpu as usize].curr;
        if let Some(t) = prev {
            self.update_curr_any(cpu);
            self.stop_running(t);
            self.put_prev_task(cpu, t);
            self.rqs[cpu as usize].curr = None;
            let tk = &mut self.tasks[t as usize];
            tk.state = TaskState::Runnable;
            tk.stats.wait_start_ns = self.now;
        }
        prev
    }

    /// Moves task `t` (running or queued) to `dst` as the stopper does
    /// (mirrors migration_cpu_stop() → move_queued_task(): a running task is
    /// preempted on its CPU first); `kick` runs `dst`'s preemption check
    /// (an idle `dst` is woken). Used by exec balancing and the HMP schemes.
    pub(crate) fn stopper_move_task(&mut self, t: TaskId, dst: CpuId, kick: bool) {
        let src = self.tasks[t as usize].cpu;
        if src == dst || !self.tasks[t as usize].affinity.test(dst) {
            return;
        }
        self.update_rq_clock(src);
        self.update_rq_clock(dst);
        let running = self.rqs[src as usize].curr == Some(t);
        if running {
            self.stopper_preempt(src);
        }
        self.move_queued_task(t, src, dst);
        if kick {
            self.kick_moved_task(dst, t, src);
        }
        if running {
            self.pick_and_switch(src, Some(t));
        }
    }

    /// After the stopper on `src` moved `t` to `dst` (move_queued_task()'s
    /// wakeup_preempt()): an idle `dst` is rescheduled by an IPI, a busy one
    /// gets a preemption check.
    pub(crate) fn kick_moved_task(&mut self, dst: CpuId, t: TaskId, src: CpuId) {
        if self.rqs[dst as usize].curr.is_none() {
            self.resched_cpu(dst, src);
        } else {
            self.wakeup_preempt(dst, t, src, 0);
        }
    }

    // ----- fork and exit ------------------------------------------------------

    /// Creates a thread from template `tpl` and wakes it (mirrors
    /// wake_up_new_task(): fork balancing through select_task_rq_fair()).
    pub(crate) fn spawn(&mut self, tpl: u32, parent: Option<TaskId>, parent_cpu: CpuId) -> TaskId {
        let id = self.tasks.len() as TaskId;
        let tmpl = &self.spec.templates[tpl as usize];
        let all = self.machine.all_cpus();
        let affinity = match (tmpl.affinity, parent) {
            (Some(a), _) => a.and(&all),
            (None, Some(p)) => self.tasks[p as usize].affinity,
            (None, None) => all,
        };
        let affinity = if affinity.is_empty() { all } else { affinity };
        // dup_task_struct() copies the parent: a thread created by another
        // belongs to its process and starts with its policy, nice value and
        // weight (sched_fork() recomputes the weight only under
        // sched_reset_on_fork, not modelled). The template's nice value and
        // SCHED_IDLE describe only the threads the workload starts itself,
        // as a shell's `nice`/`chrt -i` would start them.
        let (tgid, nice, idle_policy, batch_policy) = match parent {
            Some(p) => {
                let pt = &self.tasks[p as usize];
                (pt.tgid, pt.nice, pt.idle_policy, pt.batch_policy)
            }
            None => (1, tmpl.nice, tmpl.idle_policy, false),
        };
        let mut t = Task::new(id, &tmpl.name, tgid, tpl, nice, affinity);
        t.idle_policy = idle_policy;
        t.batch_policy = batch_policy;
        if t.idle_policy {
            t.se.weight = crate::fair::WEIGHT_IDLEPRIO;
        }
        // __sched_fork() leaves the wakee history alone: the child starts
        // with its parent's flips. It also keeps the parent's
        // sched_setattr() slice (only sched_reset_on_fork would reset it).
        if let Some(p) = parent {
            let pt = &self.tasks[p as usize];
            t.wakee_flips = pt.wakee_flips;
            t.wakee_flip_decay_ns = pt.wakee_flip_decay_ns;
            t.last_wakee = pt.last_wakee;
            t.se.custom_slice = pt.se.custom_slice;
            // uclamp_fork(): the requested clamps are inherited.
            t.uclamp_min = pt.uclamp_min;
            t.uclamp_max = pt.uclamp_max;
            t.uclamp_min_user = pt.uclamp_min_user;
            // copy_process(): the child's default slack is the parent's
            // current one.
            t.default_timer_slack_ns = self.timer_slack_ns(p);
            // sched_fork(): an RT parent's child is RT at its priority
            // (`normal_prio`: a boost is not inherited), with a full
            // SCHED_RR slice (sched_reset_on_fork is not modelled).
            t.rt = self.normal_rt(p).map(|n| crate::task::RtEntity {
                prio: n.prio,
                rr: n.rr,
                time_slice_ticks: self.rr_timeslice_ticks(),
                on_rq: false,
            });
            if pt.se.custom_slice {
                t.se.slice = pt.se.slice;
            }
            // 3.10 with CONFIG_SCHED_HMP: __sched_fork() resets only the
            // last HMP migration times, so Linaro's load history is the
            // parent's (HMP_FORK_BOOST then overrides it).
            t.hmp.ratio_avg = pt.hmp.ratio_avg;
        }
        t.cpu = parent_cpu;
        t.recent_used_cpu = parent_cpu;
        if self.cfs_mode() {
            // 3.10's task_fork_fair(): the child starts at its running
            // parent's vruntime (else at the floor), measured on the
            // parent's runqueue; placement adds START_DEBIT.
            let running = parent.filter(|&p| self.rqs[parent_cpu as usize].cfs.curr == Some(p));
            t.se.vruntime = match running {
                Some(p) => {
                    self.update_rq_clock(parent_cpu);
                    self.update_curr(parent_cpu);
                    self.tasks[p as usize].se.vruntime
                }
                None => self.rqs[parent_cpu as usize].cfs.min_vruntime,
            };
            t.se.vrt_cpu = parent_cpu;
        }
        t.settled_ns = self.now;
        let tgid = t.tgid;
        self.tasks.push(t);
        // LSK's fork boost sets the history at fork, pinned child or not
        // (hmp_task_should_forkboost(): any user task).
        if self.feat(Feat::HMP_LINARO) && self.feat(Feat::HMP_FORK_BOOST) {
            self.hmp_track_fork(id);
        }
        self.cache_thread_join(tgid);
        self.live += 1;
        self.counters.forks += 1;
        let mut wake_flags = WF_FORK;
        let cpu = self.select_task_rq(id, parent_cpu, parent_cpu, parent, &mut wake_flags);
        self.tasks[id as usize].cpu = cpu;
        self.update_rq_clock(cpu);
        // post_init_entity_util_avg(): only a fair task's averages start here.
        if self.task_is_fair(id) {
            self.init_entity_util(cpu, id);
        }
        self.enqueue_task(cpu, id, EnqueueKind::New);
        let tk = &mut self.tasks[id as usize];
        tk.state = TaskState::Runnable;
        tk.stats.wait_start_ns = self.now;
        self.trace_wakeup(parent_cpu, id, cpu, true);
        self.kick_or_preempt(cpu, id, parent_cpu, wake_flags);
        self.task_woken(cpu, id);
        if parent.is_some() {
            // The parent returns to user space from clone().
            self.resched_lazy_honour(parent_cpu);
        }
        id
    }

    /// The running task blocks (sleep, barrier, exit): dequeue and reschedule.
    pub(crate) fn block_current(&mut self, t: TaskId, dead: bool) {
        let cpu = self.tasks[t as usize].cpu;
        debug_assert_eq!(self.rqs[cpu as usize].curr, Some(t));
        self.update_rq_clock(cpu);
        self.update_curr_any(cpu);
        self.stop_running(t);
        self.tasks[t as usize].state = if dead {
            TaskState::Dead
        } else {
            TaskState::Blocked
        };
        self.dequeue_task(cpu, t, !dead);
        let tk = &mut self.tasks[t as usize];
        if !dead && !tk.kthread && tk.template != u32::MAX && tk.sleep_timer_ns.is_none() {
            tk.parked = true;
            self.parked += 1;
        }
        if dead {
            self.trace_exit(cpu, t);
            self.cache_thread_leave(self.tasks[t as usize].tgid);
            if self.task_is_fair(t) {
                self.remove_entity_load(cpu, t, false);
            }
            if self.tasks[t as usize].template != u32::MAX {
                self.live -= 1;
            }
        }
        self.schedule(cpu);
    }

    // ----- running-task progress ------------------------------------------------

    /// Accounts the progress of a running task up to now.
    pub(crate) fn settle(&mut self, t: TaskId) {
        let now = self.now;
        let tk = &mut self.tasks[t as usize];
        let dt = now.saturating_sub(tk.settled_ns);
        if dt > 0
            && matches!(
                tk.activity,
                Activity::Compute | Activity::Memory | Activity::Wall | Activity::Spin
            )
        {
            tk.remaining = (tk.remaining - tk.rate * dt as f64).max(0.0);
        }
        tk.settled_ns = now;
    }

    /// (Re)arms the completion event of a running task at its current rate.
    pub(crate) fn arm(&mut self, t: TaskId) {
        let now = self.now;
        let tk = &mut self.tasks[t as usize];
        tk.gen = tk.gen.wrapping_add(1);
        let gen = tk.gen;
        match tk.activity {
            Activity::Compute | Activity::Memory | Activity::Wall | Activity::Spin => {
                if tk.rate > 0.0 {
                    let dt = tk.remaining / tk.rate;
                    let dt = if dt.is_finite() {
                        schedlab_hw::ceil_u64(dt)
                    } else {
                        u64::MAX / 4
                    };
                    let at = now.saturating_add(dt);
                    // An event past the end of the run never fires: keep the
                    // queue small (a CPU-bound step would re-arm on every switch).
                    if at <= self.spec.max_time_ns {
                        let kind = if tk.activity == Activity::Spin {
                            EventKind::SpinEnd { task: t, gen }
                        } else {
                            EventKind::StepDone { task: t, gen }
                        };
                        self.q.push(at, kind);
                    }
                }
            }
            Activity::Idle => {}
        }
    }

    /// The task starts running on its CPU: resume its step.
    ///
    /// A task switched in between steps continues its program at once, and
    /// if it blocks again the CPU schedules again inside this call (a nested
    /// schedule()). Steps that take no time can chain such switches without
    /// end (threads that only pass a barrier or a lock to each other, an
    /// idle CPU pulling each in turn); past [`MAX_SWITCH_NESTING`] nested
    /// switches the task instead continues from an event at the same
    /// instant, so the chain unwinds through the event loop, where the
    /// livelock guard sees it.
    pub(crate) fn start_running(&mut self, t: TaskId) {
        self.tasks[t as usize].settled_ns = self.now;
        if self.tasks[t as usize].activity == Activity::Idle {
            if self.switch_nesting >= MAX_SWITCH_NESTING {
                self.start_activity(t, Activity::Compute, 0.0);
                return;
            }
            // Each switch-in counts towards the livelock guard like an
            // event: a chain of them is work done without time passing.
            self.events_at_now += 1;
            self.switch_nesting += 1;
            self.advance(t);
            self.switch_nesting -= 1;
            return;
        }
        self.begin_activity(t);
    }

    /// Sets the rate of the running task's current activity and arms its event.
    /// Hardware stalls (transfers, refills, cache sharing: hwcost.rs) are paid
    /// first, as extra work at the activity's rate.
    pub(crate) fn begin_activity(&mut self, t: TaskId) {
        let cpu = self.tasks[t as usize].cpu;
        match self.tasks[t as usize].activity {
            Activity::Compute => {
                let rate = self.compute_rate(cpu);
                let stall = self.hw_stall_ns(t, cpu);
                let tk = &mut self.tasks[t as usize];
                tk.rate = rate;
                tk.remaining += stall as f64 * rate;
                self.arm(t);
            }
            Activity::Memory => {
                let stall = self.hw_stall_ns(t, cpu);
                let bw = self.core_stream_bw(cpu);
                self.tasks[t as usize].remaining += stall as f64 * bw;
                let flow = Flow {
                    cpu,
                    mem_node: self.mem_node_of(cpu),
                };
                let mut out = std::mem::take(&mut self.hw.mem_out);
                let slot = self.mem.add_flow(flow, t, &mut out);
                self.tasks[t as usize].hw.mem_slot = Some(slot);
                self.hw.mem_out = out;
                self.recompute_mem_rates(Some(t));
            }
            Activity::Spin => {
                if self.lock_spinner_resumes(t) {
                    // Its first trylock on this run succeeded: go on.
                    self.begin_activity(t);
                    return;
                }
                self.tasks[t as usize].rate = self.compute_rate(cpu);
                self.arm(t);
            }
            Activity::Wall => {
                let now = self.now;
                let tk = &mut self.tasks[t as usize];
                tk.rate = 1.0;
                // A busy loop that polls the clock (rt-app's `runtime`,
                // schbench's usec_spin()) ends when the clock says so: time
                // spent preempted counts, and one resumed past its end stops.
                if let Some(until) = tk.wall_until_ns {
                    tk.remaining = until.saturating_sub(now) as f64;
                }
                self.arm(t);
            }
            Activity::Idle => {}
        }
    }

    /// The task stops running (preempted or blocked): account and park its step.
    pub(crate) fn stop_running(&mut self, t: TaskId) {
        self.settle(t);
        self.hw_stop(t);
        let tk = &mut self.tasks[t as usize];
        tk.gen = tk.gen.wrapping_add(1);
        if let Some(slot) = tk.hw.mem_slot.take() {
            let mut out = std::mem::take(&mut self.hw.mem_out);
            self.mem.remove_flow(slot, &mut out);
            self.hw.mem_out = out;
            self.recompute_mem_rates(None);
        }
    }

    /// The SMT siblings of `cpu`, itself included, ascending
    /// (`cpu_smt_mask()` as a list).
    pub(crate) fn smt_siblings(&self, cpu: CpuId) -> &[CpuId] {
        let (from, to) = self.smt_range[cpu as usize];
        &self.smt_list[from as usize..to as usize]
    }

    fn compute_rate(&self, cpu: CpuId) -> f64 {
        let siblings = self.smt_siblings(cpu);
        let busy = siblings
            .iter()
            .filter(|&&s| s != cpu && self.rqs[s as usize].curr.is_some())
            .count() as u32;
        schedlab_hw::compute_speed(&self.machine, cpu, busy, siblings.len() as u32)
    }

    /// An SMT sibling of `cpu` changed busy state: re-rate compute on the siblings.
    fn smt_sibling_changed(&mut self, cpu: CpuId) {
        let (from, to) = self.smt_range[cpu as usize];
        if to - from < 2 {
            return;
        }
        for i in from..to {
            let s = self.smt_list[i as usize];
            if s == cpu {
                continue;
            }
            if let Some(t) = self.rqs[s as usize].curr {
                if matches!(
                    self.tasks[t as usize].activity,
                    Activity::Compute | Activity::Spin
                ) {
                    self.settle(t);
                    self.tasks[t as usize].rate = self.compute_rate(s);
                    self.arm(t);
                }
            }
        }
    }

    /// Applies a memory re-sharing (`hw.mem_out`: the connected component of
    /// the flow that started or stopped, see `MemModel::add_flow`): re-arms
    /// the streams whose rate changed, and `started` (which has no completion
    /// event yet) in any case.
    pub(crate) fn recompute_mem_rates(&mut self, started: Option<TaskId>) {
        let out = std::mem::take(&mut self.hw.mem_out);
        for &(t, rate) in &out {
            if self.tasks[t as usize].rate != rate || started == Some(t) {
                self.settle(t);
                self.tasks[t as usize].rate = rate;
                self.arm(t);
            }
        }
        self.hw.mem_out = out;
        self.counters.mem_reshares += 1;
    }

    /// Random fork-path jitter (pthread_create and clone costs vary), ns.
    pub(crate) fn fork_jitter_ns(&mut self) -> u64 {
        self.rng_fork.gen_range(5_000..30_000)
    }
}

/// How an entity is enqueued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnqueueKind {
    /// A new task (ENQUEUE_INITIAL).
    New,
    /// A woken task (ENQUEUE_WAKEUP).
    Wakeup,
    /// A migrated runnable task (ENQUEUE_MIGRATED).
    Migrated,
    /// Put back after a change of its attributes (ENQUEUE_RESTORE).
    Restore,
}
