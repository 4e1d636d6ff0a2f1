//! Load balancing (kernel/sched/fair.c): periodic (sched_balance_domains()),
//! newly idle (sched_balance_newidle()) and nohz idle balancing, all through
//! sched_balance_rq() with group statistics, classification, busiest-group and
//! busiest-runqueue selection, imbalance calculation, detach with
//! can_migrate_task()/task_hot(), and active balance.

use crate::event::{EventKind, TaskId};
use crate::fair::wakeup::NUMA_IMBALANCE_MIN;
use crate::fair::{capacity_greater, SCHED_CAPACITY_SCALE};
use crate::features::Feat;
use crate::sim::{EnqueueKind, Sim};
use rand::Rng;
use schedlab_topo::{CpuId, CpuMask, SdFlags};

/// Idle-balance work a kick asks for (`NOHZ_STATS_KICK`,
/// `NOHZ_BALANCE_KICK`).
pub const NOHZ_STATS_KICK: u8 = 1;
pub const NOHZ_BALANCE_KICK: u8 = 2;
/// A CPU going idle asks itself for a blocked-average update
/// (`NOHZ_NEWILB_KICK`).
pub const NOHZ_NEWILB_KICK: u8 = 4;
/// The idle CPUs' next balance times need collating into
/// `nohz.next_balance` (`NOHZ_NEXT_KICK`).
pub const NOHZ_NEXT_KICK: u8 = 8;
/// The work a kick's IPI carries (`NOHZ_KICK_MASK`).
pub const NOHZ_KICK_MASK: u8 = NOHZ_STATS_KICK | NOHZ_BALANCE_KICK | NOHZ_NEXT_KICK;

/// SCHED_NR_MIGRATE_BREAK: detach_tasks() takes a breather (attaches what
/// it has, then goes on) after this many tasks looked at.
pub const NR_MIGRATE_BREAK: u32 = 32;
/// MAX_PINNED_INTERVAL: the longest back-off when every task is pinned, ms.
pub const MAX_PINNED_INTERVAL_MS: u32 = 512;

/// Group types, in increasing order of need to balance (`enum group_type`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum GroupType {
    #[default]
    HasSpare,
    FullyBusy,
    MisfitTask,
    SmtBalance,
    AsymPacking,
    Imbalanced,
    LlcBalance,
    Overloaded,
}

/// Migration types (`enum migration_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MigrationType {
    Load,
    Util,
    Task,
    Misfit,
    /// `migrate_llc_task` (SCHED_CACHE): move tasks preferring the dst LLC.
    LlcTask,
}

/// Idle state of the balancing CPU (`enum cpu_idle_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdleType {
    NotIdle,
    Idle,
    NewlyIdle,
}

/// Statistics of one group (`struct sg_lb_stats`), plus the group data the
/// comparisons need (`sg->flags`, `sg->cores`, `sgc->min/max_capacity`,
/// the priority of `sg->asym_prefer_cpu`).
#[derive(Clone, Copy, Debug, Default)]
pub struct GroupStats {
    pub avg_load: u64,
    pub group_load: u64,
    pub group_capacity: u64,
    pub group_util: u64,
    pub group_runnable: u64,
    pub sum_nr_running: u32,
    pub sum_h_nr_running: u32,
    pub idle_cpus: u32,
    pub group_weight: u32,
    pub group_type: GroupType,
    pub misfit_task_load: u64,
    /// Some CPU of the group runs more than one task, or (outside the
    /// local group, on asymmetric capacities) a misfit task: what makes
    /// balancing at the root domain set `rd->overloaded`.
    pub overloads_rd: bool,
    /// `sgs->group_asym_packing`: an idle dst of higher priority can take the work.
    pub asym_packing: bool,
    /// `sgs->group_smt_balance`: an SMT group running more than one task.
    pub smt_balance: bool,
    /// `sgc->imbalance`: a child balance failed because of affinity.
    pub imbalanced: bool,
    /// The group's flags (its child domain's flags).
    pub flags: SdFlags,
    pub cores: u32,
    pub max_capacity: u64,
    pub min_capacity: u64,
    /// asym priority of the group's preferred CPU.
    pub asym_prefer_prio: u32,
    /// SCHED_CACHE: queued tasks of the group (outside the dst LLC) that
    /// prefer the dst LLC (`sgs->nr_pref_dst_llc`).
    pub nr_pref_dst_llc: u32,
    /// `sgs->group_llc_balance`.
    pub llc_balance: bool,
}

/// group_has_capacity(): the group can take more work.
pub fn has_capacity(pct: u32, s: &GroupStats) -> bool {
    if s.sum_nr_running < s.group_weight {
        return true;
    }
    if s.group_capacity * (pct as u64) < s.group_runnable * 100 {
        return false;
    }
    s.group_capacity * 100 > s.group_util * pct as u64
}

/// group_is_overloaded(): more tasks than CPUs and no spare capacity.
pub fn is_overloaded(pct: u32, s: &GroupStats) -> bool {
    if s.sum_nr_running <= s.group_weight {
        return false;
    }
    if s.group_capacity * 100 < s.group_util * pct as u64 {
        return true;
    }
    s.group_capacity * (pct as u64) < s.group_runnable * 100
}

/// Classifies a group (mirrors group_classify(); llc_balance comes from
/// SCHED_CACHE, fair/cache_aware.rs).
pub fn classify(pct: u32, s: &GroupStats) -> GroupType {
    if is_overloaded(pct, s) {
        GroupType::Overloaded
    } else if s.llc_balance {
        GroupType::LlcBalance
    } else if s.imbalanced {
        GroupType::Imbalanced
    } else if s.asym_packing {
        GroupType::AsymPacking
    } else if s.smt_balance {
        GroupType::SmtBalance
    } else if s.misfit_task_load > 0 {
        GroupType::MisfitTask
    } else if !has_capacity(pct, s) {
        GroupType::FullyBusy
    } else {
        GroupType::HasSpare
    }
}

/// `smt_vs_nonsmt_groups()`: exactly one of the two groups is an SMT group.
pub fn smt_vs_nonsmt_groups(a: SdFlags, b: SdFlags) -> bool {
    a.contains(SdFlags::SHARE_CPUCAPACITY) != b.contains(SdFlags::SHARE_CPUCAPACITY)
}

/// `sibling_imbalance()`: tasks to move so both groups run tasks in proportion to their cores.
pub fn sibling_imbalance(idle: bool, b_nr: u32, b_cores: u32, l_nr: u32, l_cores: u32) -> u64 {
    if !idle || b_nr == 0 {
        return 0;
    }
    if b_cores == l_cores {
        return b_nr.saturating_sub(l_nr) as u64;
    }
    let mut imb = (l_cores as u64 * b_nr as u64).saturating_sub(b_cores as u64 * l_nr as u64);
    imb = (2 * imb + l_cores as u64 + b_cores as u64) / (l_cores as u64 + b_cores as u64);
    if imb <= 1 && l_nr == 0 && b_nr > 1 {
        imb = 2;
    }
    imb
}

/// Which of patch set S3's load-balancer fixes are in force (features
/// ASYM_IDLE_CORE, SMT_ACTIVE_BALANCE, SMT_BUSIEST_PICK, SMT_SIBLING_IMBALANCE);
/// all on is Linux 7.3, all off is 5.16's balancer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SmtFixes {
    /// Neri 6.5: a fully busy SMT group stays busiest on equal load.
    pub keep_smt_busiest: bool,
    /// Tim Chen 6.6: group_smt_balance and its forced pull to a non-SMT group.
    pub smt_balance: bool,
    /// Tim Chen 6.6: no has_spare SMT group with one task over a non-SMT group.
    pub busiest_pick: bool,
    /// Tim Chen 6.6: sibling_imbalance() by cores, idle dst only.
    pub sibling_imbalance: bool,
}

impl SmtFixes {
    /// Every fix on (Linux 7.3).
    pub const ALL: SmtFixes = SmtFixes {
        keep_smt_busiest: true,
        smt_balance: true,
        busiest_pick: true,
        sibling_imbalance: true,
    };
}

/// 5.16's prefer-sibling amount (calculate_imbalance() before 6.6): half the
/// difference in running tasks, whatever the groups' core counts.
pub fn sibling_imbalance_516(b_nr: u32, l_nr: u32) -> u64 {
    b_nr.saturating_sub(l_nr) as u64
}

/// 5.16's asym_smt_can_pull_tasks() (Ricardo Neri, 5.16; replaced in 6.5): may
/// an idle dst pull from candidate group `sg` by asym packing? `prefer` is
/// sched_asym_prefer(dst, sg's preferred CPU). Only when the local or the
/// candidate group is an SMT group (by its `flags`) do busy-CPU counts matter:
/// a non-SMT dst pulls from a group with two or more busy CPUs, or by
/// priority; an SMT dst compares busy CPUs with an SMT candidate (pull by
/// priority when the candidate has exactly one more), and pulls from a non-SMT
/// candidate only while its own group runs nothing.
pub fn asym_smt_can_pull_tasks_516(prefer: bool, local: &GroupStats, sg: &GroupStats) -> bool {
    let local_smt = local.flags.contains(SdFlags::SHARE_CPUCAPACITY);
    let sg_smt = sg.flags.contains(SdFlags::SHARE_CPUCAPACITY);
    if !local_smt && !sg_smt {
        return prefer;
    }
    let sg_busy = sg.group_weight.saturating_sub(sg.idle_cpus);
    if !local_smt {
        return sg_busy >= 2 || prefer;
    }
    if sg_smt {
        let local_busy = local.group_weight.saturating_sub(local.idle_cpus);
        return sg_busy as i64 - local_busy as i64 == 1 && prefer;
    }
    local.sum_nr_running == 0 && prefer
}

/// What the busiest-group comparison needs to know about the balancing CPU
/// and domain (parts of `struct lb_env` / `struct sd_lb_stats`).
#[derive(Clone, Copy, Debug)]
pub struct PickCtx {
    pub sd_flags: SdFlags,
    /// capacity_of(dst_cpu).
    pub dst_capacity: u64,
    /// `env->dst_core_idle`.
    pub dst_core_idle: bool,
    pub local_type: GroupType,
    pub fixes: SmtFixes,
}

/// Is `s` busier than the current busiest `b` (mirrors update_sd_pick_busiest())?
/// `b` is `None` before any group was picked (the kernel's initial busiest
/// stats: has_spare with "infinitely many" idle CPUs).
pub fn pick_busiest(ctx: &PickCtx, s: &GroupStats, b: Option<&GroupStats>) -> bool {
    if s.sum_h_nr_running == 0 {
        return false;
    }
    let asym_cap = ctx.sd_flags.contains(SdFlags::ASYM_CPUCAPACITY);
    // A misfit group the dst cannot help: dst not on an idle core, not
    // clearly bigger, or the local group has no spare capacity.
    if asym_cap
        && s.group_type == GroupType::MisfitTask
        && (!ctx.dst_core_idle
            || !capacity_greater(ctx.dst_capacity, s.max_capacity)
            || ctx.local_type != GroupType::HasSpare)
    {
        return false;
    }
    // Never pull from a not-overloaded group of clearly bigger CPUs.
    if asym_cap
        && s.group_type <= GroupType::FullyBusy
        && capacity_greater(s.min_capacity, ctx.dst_capacity)
    {
        return false;
    }
    let Some(b) = b else {
        return true;
    };
    if s.group_type != b.group_type {
        return s.group_type > b.group_type;
    }
    let has_spare_rule = |s: &GroupStats, b: &GroupStats| {
        if s.idle_cpus > b.idle_cpus {
            return false;
        }
        !(s.idle_cpus == b.idle_cpus && s.sum_nr_running <= b.sum_nr_running)
    };
    let fully_busy_rule = |s: &GroupStats, b: &GroupStats| {
        if s.avg_load < b.avg_load {
            return false;
        }
        !(ctx.fixes.keep_smt_busiest
            && s.avg_load == b.avg_load
            && b.flags.contains(SdFlags::SHARE_CPUCAPACITY))
    };
    match s.group_type {
        GroupType::Overloaded => s.avg_load > b.avg_load,
        // Most tasks preferring the dst LLC (update_llc_busiest()).
        GroupType::LlcBalance => s.nr_pref_dst_llc > b.nr_pref_dst_llc,
        GroupType::Imbalanced => false,
        // Prefer moving work away from the lowest-priority preferred CPU.
        GroupType::AsymPacking => b.asym_prefer_prio > s.asym_prefer_prio,
        GroupType::MisfitTask => s.misfit_task_load > b.misfit_task_load,
        GroupType::SmtBalance => {
            if s.idle_cpus != 0 || b.idle_cpus != 0 {
                has_spare_rule(s, b)
            } else {
                fully_busy_rule(s, b)
            }
        }
        GroupType::FullyBusy => fully_busy_rule(s, b),
        GroupType::HasSpare => {
            // Do not empty an SMT core running one task for a non-SMT group.
            if ctx.fixes.busiest_pick && smt_vs_nonsmt_groups(b.flags, s.flags) {
                return !(s.flags.contains(SdFlags::SHARE_CPUCAPACITY) && s.sum_h_nr_running <= 1);
            }
            has_spare_rule(s, b)
        }
    }
}

/// Domain-wide results of update_sd_lb_stats() (`struct sd_lb_stats`).
#[derive(Clone, Copy, Debug, Default)]
pub struct SdLbStats {
    pub local: GroupStats,
    pub busiest: GroupStats,
    pub total_load: u64,
    pub total_capacity: u64,
    /// The busiest group's SD_PREFER_SIBLING.
    pub prefer_sibling: bool,
}

/// The balancing domain's parameters used by the decision functions.
#[derive(Clone, Copy, Debug)]
pub struct DecideCtx {
    pub sd_flags: SdFlags,
    pub imbalance_pct: u32,
    pub imb_numa_nr: u32,
    /// The dst CPU is idle or newly idle (`env->idle != CPU_NOT_IDLE`).
    pub idle: bool,
    pub fixes: SmtFixes,
}

/// mirrors calculate_imbalance(): the migration type and amount.
pub fn calculate_imbalance(ctx: &DecideCtx, sds: &SdLbStats) -> (MigrationType, u64) {
    let (l, b) = (&sds.local, &sds.busiest);
    match b.group_type {
        GroupType::MisfitTask => {
            return if ctx.sd_flags.contains(SdFlags::ASYM_CPUCAPACITY) {
                (MigrationType::Misfit, 1)
            } else {
                (MigrationType::Load, b.misfit_task_load)
            };
        }
        GroupType::AsymPacking => return (MigrationType::Task, b.sum_h_nr_running as u64),
        GroupType::LlcBalance => return (MigrationType::LlcTask, 1),
        GroupType::SmtBalance | GroupType::Imbalanced => return (MigrationType::Task, 1),
        _ => {}
    }
    if l.group_type == GroupType::HasSpare {
        if b.group_type > GroupType::FullyBusy && !ctx.sd_flags.contains(SdFlags::SHARE_LLC) {
            // Fill the local group's spare capacity.
            let imb = l.group_capacity.max(l.group_util) - l.group_util;
            if ctx.idle && imb == 0 {
                return (MigrationType::Task, 1);
            }
            return (MigrationType::Util, imb);
        }
        let mut imb = if !ctx.fixes.sibling_imbalance && (b.group_weight == 1 || sds.prefer_sibling)
        {
            sibling_imbalance_516(b.sum_nr_running, l.sum_nr_running)
        } else if b.group_weight == 1 || sds.prefer_sibling {
            sibling_imbalance(
                ctx.idle,
                b.sum_nr_running,
                b.cores,
                l.sum_nr_running,
                l.cores,
            )
        } else {
            l.idle_cpus.saturating_sub(b.idle_cpus) as u64
        };
        // adjust_numa_imbalance(): a lightly used local node keeps a small imbalance.
        if ctx.sd_flags.contains(SdFlags::NUMA)
            && l.sum_nr_running < ctx.imb_numa_nr
            && imb <= NUMA_IMBALANCE_MIN as u64
        {
            imb = 0;
        }
        return (MigrationType::Task, imb >> 1);
    }
    let avg_load = sds.total_load * SCHED_CAPACITY_SCALE / sds.total_capacity.max(1);
    let mut local_avg = l.avg_load;
    if l.group_type < GroupType::Overloaded {
        local_avg = l.group_load * SCHED_CAPACITY_SCALE / l.group_capacity.max(1);
        if local_avg >= b.avg_load || local_avg >= avg_load {
            return (MigrationType::Load, 0);
        }
    }
    // The kernel computes both terms in unsigned long: a busiest group below
    // the domain average wraps to a huge first term, so the second decides.
    let imb = (b
        .avg_load
        .wrapping_sub(avg_load)
        .wrapping_mul(b.group_capacity))
    .min(
        avg_load
            .wrapping_sub(local_avg)
            .wrapping_mul(l.group_capacity),
    ) / SCHED_CAPACITY_SCALE;
    (MigrationType::Load, imb)
}

/// mirrors the decision part of sched_balance_find_src_group(): `None` when
/// balanced, else the migration type and imbalance from calculate_imbalance().
/// `smt_vs_nonsmt` tells whether exactly one of local and busiest is an SMT group.
pub fn find_src_group_decide(ctx: &DecideCtx, sds: &SdLbStats) -> Option<(MigrationType, u64)> {
    let (l, b) = (&sds.local, &sds.busiest);
    let force = match b.group_type {
        GroupType::MisfitTask | GroupType::AsymPacking | GroupType::Imbalanced => true,
        _ => {
            if l.group_type > b.group_type {
                return None;
            }
            if l.group_type == GroupType::Overloaded {
                if l.avg_load >= b.avg_load {
                    return None;
                }
                let avg = sds.total_load * SCHED_CAPACITY_SCALE / sds.total_capacity.max(1);
                if l.avg_load >= avg {
                    return None;
                }
                if 100 * b.avg_load <= ctx.imbalance_pct as u64 * l.avg_load {
                    return None;
                }
            }
            // 5.16: move excess tasks to the sibling whenever the busiest
            // runs two more than the local group, idle dst or not.
            let legacy_spread =
                !ctx.fixes.sibling_imbalance && b.sum_nr_running > l.sum_nr_running + 1;
            sds.prefer_sibling
                && l.group_type == GroupType::HasSpare
                && (b.group_type == GroupType::LlcBalance
                    || legacy_spread
                    || ctx.fixes.sibling_imbalance
                        && sibling_imbalance(
                            ctx.idle,
                            b.sum_nr_running,
                            b.cores,
                            l.sum_nr_running,
                            l.cores,
                        ) > 1)
        }
    };
    if !force && b.group_type != GroupType::Overloaded {
        if !ctx.idle {
            return None;
        }
        let smt_force = ctx.fixes.smt_balance
            && b.group_type == GroupType::SmtBalance
            && smt_vs_nonsmt_groups(l.flags, b.flags);
        if !smt_force {
            if b.group_weight > 1 && l.idle_cpus <= b.idle_cpus + 1 {
                return None;
            }
            if b.sum_h_nr_running == 1 {
                return None;
            }
        }
    }
    let (mt, imb) = calculate_imbalance(ctx, sds);
    (imb > 0).then_some((mt, imb))
}

/// The balancing environment (`struct lb_env`).
struct LbEnv {
    /// The CPU running the balance (`this_cpu`); `sd` state belongs to it.
    this_cpu: CpuId,
    dst: CpuId,
    level: usize,
    sd_flags: SdFlags,
    idle: IdleType,
    cpus: CpuMask,
    /// `env->dst_grpmask`: the local group's span.
    dst_grpmask: CpuMask,
    imbalance: u64,
    mt: MigrationType,
    src: CpuId,
    loop_max: u32,
    /// `env->loop`: tasks looked at on this source since the last reset;
    /// `env->loop_break`: when the next breather is due; LBF_NEED_BREAK.
    loop_count: u32,
    loop_break: u32,
    need_break: bool,
    /// LBF_ALL_PINNED, LBF_SOME_PINNED, LBF_DST_PINNED.
    all_pinned: bool,
    some_pinned: bool,
    dst_pinned: bool,
    new_dst_cpu: CpuId,
    /// LBF_LLC_PINNED: a task stayed for its LLC preference.
    llc_pinned: bool,
}

impl LbEnv {
    /// The environment sched_balance_rq() starts with for `cpu`'s domain at
    /// `level` (its flags and span): `cpu` pulls, nothing found or moved yet.
    fn new(cpu: CpuId, level: usize, sd_flags: SdFlags, span: CpuMask, idle: IdleType) -> LbEnv {
        LbEnv {
            this_cpu: cpu,
            dst: cpu,
            level,
            sd_flags,
            idle,
            cpus: span,
            dst_grpmask: CpuMask::default(),
            imbalance: 0,
            mt: MigrationType::Load,
            src: cpu,
            loop_max: 0,
            loop_count: 0,
            loop_break: NR_MIGRATE_BREAK,
            need_break: false,
            all_pinned: false,
            some_pinned: false,
            dst_pinned: false,
            new_dst_cpu: cpu,
            llc_pinned: false,
        }
    }

    fn is_idle(&self) -> bool {
        self.idle != IdleType::NotIdle
    }
}

impl Sim {
    /// Periodic balancing of every domain of `cpu` that is due (mirrors
    /// sched_balance_domains()); also decays the newidle costs.
    pub(crate) fn sched_balance_domains(&mut self, cpu: CpuId, idle_cpu: bool) {
        let now = self.jiffies_ns();
        let jiffy = self.tick_ns;
        // A CPU running only SCHED_IDLE tasks balances with idle intervals,
        // but as a busy CPU (its tick saw idle_cpu() false).
        let mut idle_cpu = idle_cpu;
        let mut busy = !idle_cpu && !self.sched_idle_cpu(cpu);
        let mut next_balance = now + 60 * jiffy * self.cfg.hz as u64;
        let n = self.domains.cpus[cpu as usize].domains.len();
        let ncpus = self.nr_cpus() as u64;
        let mut continue_balancing = true;
        // need_decay is the last visited level's answer, as in the kernel.
        let (mut max_cost, mut need_decay) = (0u64, false);
        for level in 0..n {
            need_decay = self.update_newidle_cost(cpu, level, 0, 0);
            max_cost += self.sd[cpu as usize][level].max_newidle_lb_cost_ns;
            if !continue_balancing {
                if need_decay {
                    continue;
                }
                break;
            }
            let interval = self.balance_interval_ns(cpu, level, busy, ncpus);
            let st = self.sd[cpu as usize][level];
            if now >= st.last_balance_ns + interval {
                let idle = if idle_cpu {
                    IdleType::Idle
                } else {
                    IdleType::NotIdle
                };
                let (moved, cont) = self.sched_balance_rq(cpu, level, idle);
                continue_balancing = cont;
                if moved > 0 {
                    idle_cpu = self.is_idle_cpu(cpu);
                    busy = !idle_cpu && !self.sched_idle_cpu(cpu);
                }
                self.sd[cpu as usize][level].last_balance_ns = now;
            }
            let interval = self.balance_interval_ns(cpu, level, busy, ncpus);
            let due = self.sd[cpu as usize][level].last_balance_ns + interval;
            next_balance = next_balance.min(due);
        }
        self.rqs[cpu as usize].next_balance = next_balance;
        // The rq's idle-balance cost decays with its domains' costs, but
        // never below the migration cost.
        if need_decay {
            self.rqs[cpu as usize].max_idle_balance_cost_ns =
                max_cost.max(self.cfg.tunables.migration_cost_ns);
        }
    }

    /// get_sd_balance_interval(): the interval in ns, ×busy_factor when busy,
    /// clamped to [1 jiffy, HZ·ncpus/10 jiffies].
    fn balance_interval_ns(&self, cpu: CpuId, level: usize, busy: bool, ncpus: u64) -> u64 {
        let d = &self.domains.cpus[cpu as usize].domains[level];
        let mut ms = self.sd[cpu as usize][level].balance_interval_ms as u64;
        if busy {
            ms *= d.busy_factor as u64;
        }
        let hz = self.cfg.hz as u64;
        let jiffies = (ms * hz).div_ceil(1000);
        let max_j = (hz * ncpus / 10).max(1);
        // The busy interval less one jiffy, unsigned: 0 (a busy_factor of 0
        // written to debugfs) wraps to the largest interval.
        let jiffies = match (busy, jiffies) {
            (true, 0) => max_j,
            (true, j) => j - 1,
            (false, j) => j,
        };
        jiffies.clamp(1, max_j) * self.tick_ns
    }

    /// Records one newidle pass of `cost` ns at `level` (mirrors
    /// update_newidle_cost() with update_newidle_stats()): the max cost
    /// decays by 253/256 per second; the success ratio drives NI_RANDOM.
    /// Returns true when the cost decayed.
    fn update_newidle_cost(&mut self, cpu: CpuId, level: usize, cost: u64, success: u32) -> bool {
        let now = self.jiffies_ns();
        if cost > 0 {
            self.update_newidle_stats(cpu, level, success);
        }
        let st = &mut self.sd[cpu as usize][level];
        if cost > st.max_newidle_lb_cost_ns {
            st.max_newidle_lb_cost_ns = cost;
            st.last_decay_ns = now;
        } else if now > st.last_decay_ns + 1_000_000_000 {
            st.max_newidle_lb_cost_ns = st.max_newidle_lb_cost_ns * 253 / 256;
            st.last_decay_ns = now;
            return true;
        }
        false
    }

    /// Counts one newidle attempt and its success weight; every 1024 calls
    /// the success ratio is recomputed and the counts halve (mirrors
    /// update_newidle_stats()).
    fn update_newidle_stats(&mut self, cpu: CpuId, level: usize, success: u32) {
        let now = self.now;
        let ni_rate = self.feat(Feat::NI_RATE);
        let st = &mut self.sd[cpu as usize][level];
        st.newidle_call += 1;
        st.newidle_success += success;
        if st.newidle_call >= 1024 {
            let delta = now.saturating_sub(st.newidle_stamp_ns);
            st.newidle_stamp_ns = now;
            // NI_RATE: a balancer called rarely (~4 ms apart) counts as
            // successful.
            let rate = if ni_rate { (delta >> 22) as u32 } else { 0 };
            st.newidle_ratio = (rate + st.newidle_success).min(1024);
            st.newidle_call /= 2;
            st.newidle_success /= 2;
        }
    }

    /// The earliest due time of `level`'s idle balance, folded into
    /// `next` (mirrors update_next_balance()).
    fn update_next_balance(&self, cpu: CpuId, level: usize, next: &mut u64) {
        let ncpus = self.nr_cpus() as u64;
        let due = self.sd[cpu as usize][level].last_balance_ns
            + self.balance_interval_ns(cpu, level, false, ncpus);
        *next = (*next).min(due);
    }

    /// Newly idle balancing (mirrors sched_balance_newidle()): only when some
    /// CPU is overloaded and the expected idle time covers the cost; walks the
    /// domains while the accumulated cost stays below avg_idle, stops on a
    /// pull; NI_RANDOM skips a level at random by its past success.
    /// Returns the number of tasks pulled.
    pub(crate) fn sched_balance_newidle(&mut self, cpu: CpuId) -> u32 {
        self.update_misfit_status(cpu, None);
        if self.rqs[cpu as usize].ttwu_pending > 0 {
            return 0;
        }
        // The idle period is measured from this pass, also when an idle CPU
        // passes again (a reschedule that found nothing), and not at all if
        // the pass finds work.
        self.rqs[cpu as usize].idle_stamp = self.now;
        let avg_idle = self.rqs[cpu as usize].avg_idle;
        let n = self.domains.cpus[cpu as usize].domains.len();
        if n == 0 {
            return 0;
        }
        // Going idle: the CPU's next periodic balance uses idle intervals.
        let mut next_balance = self.jiffies_ns() + self.tick_ns * self.cfg.hz as u64;
        if !self.rd_overloaded || avg_idle < self.sd[cpu as usize][0].max_newidle_lb_cost_ns {
            self.update_next_balance(cpu, 0, &mut next_balance);
            let rq = &mut self.rqs[cpu as usize];
            rq.next_balance = rq.next_balance.min(next_balance);
            self.nohz_newidle_balance(cpu);
            return 0;
        }
        self.update_blocked_averages(cpu);
        let mut curr_cost = 0u64;
        let mut pulled = 0;
        for level in 0..n {
            self.update_next_balance(cpu, level, &mut next_balance);
            let st = self.sd[cpu as usize][level];
            if avg_idle < curr_cost + st.max_newidle_lb_cost_ns {
                break;
            }
            let d = &self.domains.cpus[cpu as usize].domains[level];
            let mut cont = true;
            if d.flags.contains(SdFlags::BALANCE_NEWIDLE) {
                let mut weight = 1u32;
                if self.feat(Feat::NI_RANDOM) && st.newidle_ratio < 1024 {
                    let d1k = self.rng_newidle.gen_range(0..1024u32);
                    weight = 1 + st.newidle_ratio;
                    if d1k > weight {
                        self.update_newidle_stats(cpu, level, 0);
                        continue;
                    }
                    weight = (1024 + weight / 2) / weight;
                }
                // (A newly idle CPU always passes should_we_balance(), so a
                // pass refused for SD_SERIALIZE is known beforehand.)
                let cost = if self.serialize_refuses(d.flags) {
                    u64::from(self.machine.wakeup.balance_refused_ns)
                } else {
                    self.machine
                        .wakeup
                        .balance_pass_ns_for(self.span_weight(cpu, level))
                };
                let (moved, c) = self.sched_balance_rq(cpu, level, IdleType::NewlyIdle);
                cont = c;
                curr_cost += cost;
                self.counters.newidle_balance += 1;
                pulled += moved;
                self.update_newidle_cost(cpu, level, cost, weight * (moved > 0) as u32);
            }
            if pulled > 0 || !cont {
                break;
            }
        }
        let rq = &mut self.rqs[cpu as usize];
        rq.max_idle_balance_cost_ns = rq.max_idle_balance_cost_ns.max(curr_cost);
        rq.next_balance = rq.next_balance.min(next_balance);
        if pulled == 0 && self.rqs[cpu as usize].nr_running() > 0 {
            pulled = 1;
        }
        if pulled == 0 {
            self.nohz_newidle_balance(cpu);
        } else {
            self.rqs[cpu as usize].idle_stamp = 0;
        }
        pulled
    }

    /// Decides whether the busy tick should kick an idle CPU to balance on
    /// behalf of tick-stopped CPUs (mirrors nohz_balancer_kick()): when the
    /// idle CPUs' blocked averages are due for an update (every
    /// LOAD_AVG_PERIOD), a stats kick; when their balance is due, a balance
    /// kick for two or more tasks, an idle CPU of higher asym-packing
    /// priority, a misfit task on asymmetric capacities, else more than one
    /// busy CPU in the LLC; and when a CPU stopped its tick since the idle
    /// CPUs' next balance times were collated, a next kick that collates them.
    pub(crate) fn nohz_balancer_kick(&mut self, cpu: CpuId) {
        let mut flags = 0u8;
        if self.nohz_has_blocked && self.jiffies() > self.nohz_next_blocked_j {
            flags = NOHZ_STATS_KICK;
        }
        if self.now >= self.nohz_next_balance
            && self.nr_nohz_idle > 0
            && self.balance_kick_wanted(cpu)
        {
            flags |= NOHZ_STATS_KICK | NOHZ_BALANCE_KICK;
        }
        if self.nohz_needs_update {
            flags |= NOHZ_NEXT_KICK;
        }
        if flags != 0 {
            self.kick_ilb(cpu, flags);
        }
    }

    /// The balance part of nohz_balancer_kick()'s decision.
    fn balance_kick_wanted(&self, cpu: CpuId) -> bool {
        let cd = &self.domains.cpus[cpu as usize];
        if self.rqs[cpu as usize].nr_running() >= 2 {
            return true;
        }
        // A runnable fair task on a CPU whose capacity RT time has reduced:
        // an idle CPU may run it better.
        if let Some(d) = cd.domains.first() {
            if self.rqs[cpu as usize].cfs.nr_runnable() >= 1
                && self.check_cpu_capacity(cpu, d.imbalance_pct)
            {
                return true;
            }
        }
        if let Some(l) = cd.sd_asym_packing {
            let d = &cd.domains[l];
            if d.span
                .iter()
                .any(|i| i != cpu && self.nohz_idle.test(i) && self.sched_asym(d.flags, i, cpu))
            {
                return true;
            }
        }
        if cd.sd_asym_cpucapacity.is_some() {
            self.rqs[cpu as usize].misfit_task_load > 0
        } else {
            self.llc[cd.llc_id as usize].nr_busy_cpus > 1
        }
    }

    /// Sends the idle-balance work `flags` to an idle CPU (mirrors
    /// kick_ilb()): a balance kick holds further balance kicks back until
    /// the kicked CPU has run; work already asked of that CPU is not asked
    /// again, and one IPI carries all that is asked before it arrives.
    fn kick_ilb(&mut self, kicker: CpuId, flags: u8) {
        if flags & NOHZ_BALANCE_KICK != 0 {
            self.nohz_next_balance = u64::MAX;
        }
        let Some(ilb) = self.find_new_ilb(kicker) else {
            if flags & NOHZ_BALANCE_KICK != 0 {
                self.nohz_next_balance = self.jiffies_ns() + self.tick_ns;
            }
            return;
        };
        let rq = &mut self.rqs[ilb as usize];
        let old = rq.nohz_flags;
        if old & flags == flags {
            return;
        }
        rq.nohz_flags |= flags;
        if old & NOHZ_KICK_MASK == 0 {
            // The call-function IPI (none if the ilb polls in idle), then
            // the ilb's exit from its idle state.
            let delay = self.wake_delay_ns(ilb, kicker, 0);
            self.q
                .push(self.now + delay, EventKind::NohzBalance { ilb });
        }
    }

    /// The CPU to run idle balancing (mirrors find_new_ilb()): the first
    /// idle CPU on a fully idle core, else the first idle CPU.
    fn find_new_ilb(&self, kicker: CpuId) -> Option<CpuId> {
        let mut fallback = None;
        for c in self.nohz_idle.iter() {
            if c == kicker || !self.is_idle_cpu(c) {
                continue;
            }
            if self.smt_active && !self.is_core_idle(c) {
                fallback = fallback.or(Some(c));
                continue;
            }
            return Some(c);
        }
        fallback
    }

    /// The kick's IPI reaches `ilb` (mirrors nohz_csd_func() and
    /// nohz_idle_balance()): if it is still idle, its balancing softirq does
    /// the work the kicks asked for; if not, the work is dropped.
    pub(crate) fn nohz_kick_arrives(&mut self, ilb: CpuId) {
        let rq = &mut self.rqs[ilb as usize];
        let flags = rq.nohz_flags & NOHZ_KICK_MASK;
        rq.nohz_flags &= !NOHZ_KICK_MASK;
        if !self.is_idle_cpu(ilb) {
            if flags & NOHZ_BALANCE_KICK != 0 && self.nohz_next_balance == u64::MAX {
                self.nohz_next_balance = self.jiffies_ns();
            }
            return;
        }
        // The kicked CPU's balancing softirq starts like any other, once it
        // has left its idle state.
        self.trace_idle_state_exit(ilb);
        self.linaro_force_migration();
        self.nohz_idle_balance(ilb, flags);
        // The kick's IPI woke the kicked CPU; with nothing to run it idles
        // again.
        if self.is_idle_cpu(ilb) {
            self.idle_rewake(ilb);
        }
    }

    /// For every tick-stopped idle CPU, from the one after `this_cpu` round
    /// to `this_cpu` itself (mirrors _nohz_idle_balance()): with
    /// `NOHZ_STATS_KICK` its blocked averages are brought up to date, and
    /// with `NOHZ_BALANCE_KICK` its domains are balanced when due; any kick
    /// collates their next balance times into `nohz.next_balance`.
    pub(crate) fn nohz_idle_balance(&mut self, this_cpu: CpuId, flags: u8) {
        let stats = flags & NOHZ_STATS_KICK != 0;
        if stats {
            self.nohz_has_blocked = false;
        }
        if flags & NOHZ_NEXT_KICK != 0 {
            self.nohz_needs_update = false;
        }
        let now_j = self.jiffies();
        let mut has_blocked = false;
        let mut next = u64::MAX;
        let idle = self.nohz_idle;
        // for_each_cpu_wrap() over the idle mask, from the CPU after this one.
        for c in idle.iter_wrap(this_cpu + 1) {
            if !self.is_idle_cpu(c) {
                continue;
            }
            if stats {
                has_blocked |= self.update_nohz_stats(c);
            }
            if self.now >= self.rqs[c as usize].next_balance {
                self.update_rq_clock(c);
                if flags & NOHZ_BALANCE_KICK != 0 {
                    self.counters.nohz_balance += 1;
                    self.sched_balance_domains(c, true);
                }
            }
            next = next.min(self.rqs[c as usize].next_balance);
        }
        if next != u64::MAX {
            self.nohz_next_balance = next;
        } else if self.nohz_next_balance == u64::MAX {
            self.nohz_next_balance = 0;
        }
        if stats {
            self.nohz_next_blocked_j = now_j + self.load_avg_period_jiffies();
        }
        if has_blocked {
            self.nohz_has_blocked = true;
        }
    }

    /// Updates a tick-stopped CPU's blocked averages if it has some and
    /// they were not updated this jiffy (mirrors update_nohz_stats());
    /// returns whether it may still carry blocked load.
    fn update_nohz_stats(&mut self, cpu: CpuId) -> bool {
        let rq = &self.rqs[cpu as usize];
        if !rq.has_blocked_load || !self.nohz_idle.test(cpu) {
            return false;
        }
        if self.jiffies() <= rq.last_blocked_load_update_j {
            return true;
        }
        self.update_blocked_averages(cpu);
        self.rqs[cpu as usize].has_blocked_load
    }

    /// Decays `cpu`'s runqueue averages up to now (mirrors
    /// sched_balance_update_blocked_averages(): the fair class's and, once
    /// RT or deadline tasks exist, the RT and deadline utilisation; no IRQ
    /// time is modelled); a CPU whose averages all reached zero has no
    /// blocked load left.
    pub(crate) fn update_blocked_averages(&mut self, cpu: CpuId) {
        self.update_rq_clock(cpu);
        self.rqs[cpu as usize].last_blocked_load_update_j = self.jiffies();
        self.update_cfs_avg(cpu);
        // __update_blocked_others(): the RT signal decays too.
        if self.rt_dl_in_use {
            let rt_runs = self.rqs[cpu as usize].rt.curr.is_some();
            self.update_rt_rq_load_avg(cpu, rt_runs);
            let dl_runs = self.rqs[cpu as usize].dl.curr.is_some();
            self.update_dl_rq_load_avg(cpu, dl_runs);
        }
        let rq = &mut self.rqs[cpu as usize];
        if rq.cfs.avg.load_avg == 0
            && rq.cfs.avg.util_avg == 0
            && rq.avg_rt.util_avg == 0
            && rq.avg_dl.util_avg == 0
        {
            rq.has_blocked_load = false;
        }
    }

    /// A CPU about to idle after a newidle balance that pulled nothing asks
    /// itself to update the tick-stopped CPUs' blocked averages when they
    /// are due and it expects to stay idle long enough (mirrors
    /// nohz_newidle_balance()); `nohz_run_idle_balance()` does it once the
    /// CPU is idle.
    fn nohz_newidle_balance(&mut self, cpu: CpuId) {
        if self.rqs[cpu as usize].avg_idle < self.cfg.tunables.migration_cost_ns
            || !self.nohz_has_blocked
            || self.jiffies() < self.nohz_next_blocked_j
        {
            return;
        }
        self.rqs[cpu as usize].nohz_flags |= NOHZ_NEWILB_KICK;
    }

    /// The CPU entered idle (mirrors nohz_run_idle_balance() in do_idle()):
    /// if its own newidle balance asked for it and no kick is pending, it
    /// updates the tick-stopped CPUs' blocked averages now.
    pub(crate) fn nohz_run_idle_balance(&mut self, cpu: CpuId) {
        let rq = &mut self.rqs[cpu as usize];
        let flags = rq.nohz_flags;
        if flags & NOHZ_NEWILB_KICK == 0 {
            return;
        }
        rq.nohz_flags &= !NOHZ_NEWILB_KICK;
        if flags == NOHZ_NEWILB_KICK && self.is_idle_cpu(cpu) {
            self.nohz_idle_balance(cpu, NOHZ_STATS_KICK);
        }
    }

    /// `jiffies`.
    pub(crate) fn jiffies(&self) -> u64 {
        self.now / self.tick_ns
    }

    /// `jiffies` as the time of its boundary, in ns: the balancer's times
    /// (`last_balance`, `next_balance`, `last_decay_max_lb_cost`) are kept in
    /// ns but, as the kernel's are in jiffies, always on a jiffy boundary,
    /// so a balance run between two ticks (newidle, nohz ILB) counts from
    /// the last one.
    pub(crate) fn jiffies_ns(&self) -> u64 {
        self.jiffies() * self.tick_ns
    }

    /// msecs_to_jiffies(LOAD_AVG_PERIOD): 32 ms, rounded up to jiffies.
    fn load_avg_period_jiffies(&self) -> u64 {
        (32 * self.cfg.hz as u64).div_ceil(1000)
    }

    /// mirrors sched_use_asym_prio(): between SMT siblings the priority always
    /// counts; between cores only when the whole core of `cpu` is idle.
    pub(crate) fn sched_use_asym_prio(&self, sd_flags: SdFlags, cpu: CpuId) -> bool {
        if !sd_flags.contains(SdFlags::ASYM_PACKING) {
            return false;
        }
        // 5.16 (ASYM_IDLE_CORE off): the priority always counts.
        if !self.feat(Feat::ASYM_IDLE_CORE) {
            return true;
        }
        !self.smt_active || sd_flags.contains(SdFlags::SHARE_CPUCAPACITY) || self.is_core_idle(cpu)
    }

    /// The S3 load-balancer fixes in force (features).
    pub(crate) fn smt_fixes(&self) -> SmtFixes {
        SmtFixes {
            keep_smt_busiest: self.feat(Feat::ASYM_IDLE_CORE),
            smt_balance: self.feat(Feat::SMT_ACTIVE_BALANCE),
            busiest_pick: self.feat(Feat::SMT_BUSIEST_PICK),
            sibling_imbalance: self.feat(Feat::SMT_SIBLING_IMBALANCE),
        }
    }

    /// mirrors sched_asym(): `dst` may pull by asym packing from `src`.
    pub(crate) fn sched_asym(&self, sd_flags: SdFlags, dst: CpuId, src: CpuId) -> bool {
        self.sched_use_asym_prio(sd_flags, dst) && self.sched_asym_prefer(dst, src)
    }

    /// `group_balance_mask()` of the local group of domain `level` of `cpu`:
    /// its span, except in overlapping (NUMA) domains, where only the CPUs
    /// whose own domain at the group's level had a child spanning exactly
    /// the group may balance for it (build_balance_mask(), computed by the
    /// domain builder on the domains before degeneration). An empty mask
    /// (the kernel warns) leaves `cpu` alone.
    fn group_balance_mask(&self, cpu: CpuId, level: usize) -> CpuMask {
        let m = self.domains.cpus[cpu as usize].domains[level].groups[0].balance_mask;
        if m.is_empty() {
            CpuMask::from_cpus([cpu])
        } else {
            m
        }
    }

    /// Index of a group's shared `sgc->imbalance` flag: groups with the same
    /// `sched_group_capacity` (level and CPU, as the domain builder keys
    /// them) share it.
    fn sg_imbalance_idx(&self, sgc: (u8, CpuId)) -> usize {
        sgc.0 as usize * self.nr_cpus() + sgc.1 as usize
    }

    /// `sg_imbalanced()`: the group's `sgc->imbalance` flag.
    pub(crate) fn sg_imbalanced(&self, sgc: (u8, CpuId)) -> bool {
        let i = self.sg_imbalance_idx(sgc);
        self.sg_imbalance.get(i).copied().unwrap_or(false)
    }

    fn set_sg_imbalanced(&mut self, sgc: (u8, CpuId), v: bool) {
        let i = self.sg_imbalance_idx(sgc);
        if i >= self.sg_imbalance.len() {
            self.sg_imbalance.resize(i + 1, false);
        }
        self.sg_imbalance[i] = v;
    }

    /// Group statistics for balancing (mirrors update_sg_lb_stats()).
    fn sg_lb_stats(&self, env: &LbEnv, gi: usize, local_stats: &GroupStats) -> GroupStats {
        let d = &self.domains.cpus[env.this_cpu as usize].domains[env.level];
        let g = &d.groups[gi];
        let local = g.span.test(env.this_cpu);
        let pct = d.imbalance_pct;
        let gc = self.sd_consts[env.this_cpu as usize][env.level].groups[gi];
        // With RT time taking capacity, the group's is its CPUs' capacities
        // as update_cpu_capacity() last found them (the kernel keeps the
        // sums in `sched_group_capacity`, refreshed by each group's own
        // balancing CPU); without, the CPUs' own capacities.
        let (cap_sum, cap_min, cap_max) = if self.rt_dl_in_use {
            self.group_capacity_now(&g.span)
        } else {
            (gc.cap_sum, gc.cap_min, gc.cap_max)
        };
        let mut s = GroupStats {
            group_capacity: cap_sum,
            group_weight: gc.weight,
            flags: g.flags,
            cores: g.cores,
            max_capacity: cap_max,
            min_capacity: cap_min,
            asym_prefer_prio: self.machine.cpus[g.asym_prefer_cpu as usize].asym_prio,
            imbalanced: self.sg_imbalanced((g.sgc_level, g.sgc_cpu)),
            ..Default::default()
        };
        let dst_cap = self.capacity_of(env.dst);
        for c in g.span.and(&env.cpus).iter() {
            s.group_load += self.cpu_load(c);
            s.group_util += self.cpu_util(c);
            s.group_runnable += self.cpu_runnable(c);
            let rq = &self.rqs[c as usize];
            s.sum_h_nr_running += rq.cfs.nr_runnable();
            let nr = rq.nr_running();
            s.sum_nr_running += nr;
            s.nr_pref_dst_llc += self.nr_pref_dst_llc(c, env.dst);
            // idle_cpu(): during a newly idle pass after a task stopped, that
            // task is still the balancing CPU's `curr`, so it is not idle.
            let curr_is_prev = c == env.this_cpu
                && env.idle == IdleType::NewlyIdle
                && self.newidle_after_task == Some(c);
            if nr == 0 && self.is_idle_cpu(c) && !curr_is_prev {
                s.idle_cpus += 1;
                continue;
            }
            if nr > 1 {
                s.overloads_rd = true;
            }
            if local {
                continue;
            }
            if d.flags.contains(SdFlags::ASYM_CPUCAPACITY) {
                if rq.misfit_task_load > 0 {
                    s.overloads_rd = true;
                    // Misfit load counts only if dst is clearly bigger than the group.
                    if capacity_greater(dst_cap, s.max_capacity) {
                        s.misfit_task_load = s.misfit_task_load.max(rq.misfit_task_load);
                    }
                }
            } else if env.is_idle() && rq.cfs.nr_runnable() == 1 && self.check_cpu_capacity(c, pct)
            {
                // sched_reduced_capacity(): a task running on a CPU whose
                // capacity RT time has reduced counts as misfit.
                s.misfit_task_load = s.misfit_task_load.max(self.cpu_load(c));
            }
        }
        if !local {
            // sched_group_asym(): an SMT group with other than one busy CPU
            // has no meaningful priority.
            let smt_group = g.flags.contains(SdFlags::SHARE_CPUCAPACITY);
            let asym = if self.feat(Feat::ASYM_IDLE_CORE) {
                !(smt_group && s.group_weight - s.idle_cpus != 1)
                    && self.sched_asym(d.flags, env.dst, g.asym_prefer_cpu)
            } else {
                d.flags.contains(SdFlags::ASYM_PACKING)
                    && asym_smt_can_pull_tasks_516(
                        self.sched_asym_prefer(env.dst, g.asym_prefer_cpu),
                        local_stats,
                        &s,
                    )
            };
            if env.is_idle() && s.sum_h_nr_running > 0 && asym {
                s.asym_packing = true;
            }
            // smt_balance()
            if self.feat(Feat::SMT_ACTIVE_BALANCE)
                && env.is_idle()
                && smt_group
                && s.sum_h_nr_running > 1
            {
                s.smt_balance = true;
            }
            let failed = self.sd[env.this_cpu as usize][env.level].nr_balance_failed;
            s.llc_balance =
                self.llc_balance(env.dst, d.flags, failed, d.cache_nice_tries, &s, &g.span);
        }
        s.group_type = classify(pct, &s);
        if s.group_type == GroupType::Overloaded {
            s.avg_load = s.group_load * SCHED_CAPACITY_SCALE / s.group_capacity.max(1);
        }
        s
    }

    /// Finds the busiest group and the imbalance (mirrors
    /// sched_balance_find_src_group() with update_sd_lb_stats() and
    /// calculate_imbalance()). Returns the group's span.
    fn find_src_group(&mut self, env: &mut LbEnv) -> Option<CpuMask> {
        let cpu = env.this_cpu;
        // update_group_capacity() of the local group at the lowest level:
        // dst's capacity less its RT time, at once unless newly idle, then
        // not before the domain's balance interval has passed.
        if self.rt_dl_in_use
            && env.level == 0
            && (env.idle != IdleType::NewlyIdle
                || self.jiffies() >= self.rqs[env.dst as usize].capacity_next_update_j)
        {
            let interval_ns = self.balance_interval_ns(cpu, 0, false, self.nr_cpus() as u64);
            self.update_cpu_capacity(env.dst, interval_ns / self.tick_ns);
        }
        // Only scalars of the domain are needed here: no clone per balance pass.
        let (n_groups, d_flags, d_pct, d_imb_numa_nr) = {
            let d = &self.domains.cpus[cpu as usize].domains[env.level];
            (d.groups.len(), d.flags, d.imbalance_pct, d.imb_numa_nr)
        };
        let mut sds = SdLbStats::default();
        let mut busiest: Option<usize> = None;
        let mut sum_util = 0u64;
        let mut sg_overloaded = false;
        let dst_core_idle = !self.smt_active || self.is_core_idle(env.dst);
        // The local group comes first, so its type is known for the others.
        for gi in 0..n_groups {
            let s = self.sg_lb_stats(env, gi, &sds.local);
            sds.total_load += s.group_load;
            sds.total_capacity += s.group_capacity;
            sum_util += s.group_util;
            sg_overloaded |= s.overloads_rd;
            if self.sched_cache_enabled() {
                let first = self.domains.cpus[cpu as usize].domains[env.level].groups[gi]
                    .span
                    .first()
                    .unwrap_or(cpu);
                self.record_sg_llc_stats(
                    env.dst,
                    env.level,
                    env.idle,
                    first,
                    s.group_util,
                    s.group_capacity,
                );
            }
            if gi == 0 {
                sds.local = s;
                continue;
            }
            let ctx = PickCtx {
                sd_flags: d_flags,
                dst_capacity: self.capacity_of(env.dst),
                dst_core_idle,
                local_type: sds.local.group_type,
                fixes: self.smt_fixes(),
            };
            if pick_busiest(&ctx, &s, busiest.map(|_| &sds.busiest)) {
                busiest = Some(gi);
                sds.busiest = s;
            }
        }
        // Balancing at the root domain recomputes rd->overloaded.
        if env.level + 1 == self.domains.cpus[cpu as usize].domains.len() {
            self.rd_overloaded = sg_overloaded;
        }
        // SIS_UTIL: the periodic balance of a domain with shared state (the
        // LLC, or an asym-capacity domain with its own) sets its scan depth
        // (mirrors update_idle_cpu_scan()).
        if env.idle != IdleType::NewlyIdle && self.feat(Feat::SIS_UTIL) {
            let cd = &self.domains.cpus[cpu as usize];
            if cd.sd_llc == Some(env.level) {
                let llc = cd.llc_id as usize;
                self.llc[llc].nr_idle_scan = nr_idle_scan(sum_util, cd.llc_size, d_pct);
            } else if let Some(a) = self.asym_shared_of[cpu as usize] {
                let weight = self.span_weight(cpu, env.level);
                let a = &mut self.asym_shared[a as usize];
                if a.level == env.level {
                    a.nr_idle_scan = nr_idle_scan(sum_util, weight, d_pct);
                }
            }
        }
        let bgi = busiest?;
        sds.prefer_sibling = self.domains.cpus[cpu as usize].domains[env.level].groups[bgi]
            .flags
            .contains(SdFlags::PREFER_SIBLING);
        let ctx = DecideCtx {
            sd_flags: d_flags,
            imbalance_pct: d_pct,
            imb_numa_nr: d_imb_numa_nr,
            idle: env.is_idle(),
            fixes: self.smt_fixes(),
        };
        let (mt, imb) = find_src_group_decide(&ctx, &sds)?;
        env.mt = mt;
        env.imbalance = imb;
        Some(self.domains.cpus[cpu as usize].domains[env.level].groups[bgi].span)
    }

    /// The busiest runqueue of the busiest group (mirrors sched_balance_find_src_rq()).
    fn find_src_rq(&self, env: &LbEnv, span: &CpuMask) -> Option<CpuId> {
        let mut best: Option<CpuId> = None;
        let (mut b_load, mut b_cap, mut b_util, mut b_nr) = (0u64, 1u64, 0u64, 0u32);
        let dst_cap = self.capacity_of(env.dst);
        let pct = self.domains.cpus[env.this_cpu as usize].domains[env.level].imbalance_pct;
        for c in span.and(&env.cpus).iter() {
            let nr = self.rqs[c as usize].cfs.nr_runnable();
            if nr == 0 {
                continue;
            }
            let cap = self.capacity_of(c);
            // Asymmetric capacities: leave a single task where it is unless
            // dst is clearly bigger (or the source core is shared, or the
            // two CPUs are of equal capacity in a cluster system).
            if env.sd_flags.contains(SdFlags::ASYM_CPUCAPACITY) && nr == 1 {
                let cluster_equal_cap = self.domains.cluster_active && dst_cap == cap;
                let smt_degraded = self.smt_active && !self.is_core_idle(c);
                if !smt_degraded && !cluster_equal_cap && !capacity_greater(dst_cap, cap) {
                    continue;
                }
            }
            // A single task on a CPU of higher asym priority stays there.
            if nr == 1 && self.sched_asym(env.sd_flags, c, env.dst) {
                continue;
            }
            match env.mt {
                MigrationType::Load => {
                    let load = self.cpu_load(c);
                    if nr == 1 && load > env.imbalance && !self.check_cpu_capacity(c, pct) {
                        continue;
                    }
                    if load * b_cap > b_load * cap {
                        b_load = load;
                        b_cap = cap;
                        best = Some(c);
                    }
                }
                MigrationType::Util => {
                    let util = self.cpu_util_boost(c);
                    if nr <= 1 {
                        continue;
                    }
                    if b_util < util {
                        b_util = util;
                        best = Some(c);
                    }
                }
                MigrationType::Task => {
                    if b_nr < nr {
                        b_nr = nr;
                        best = Some(c);
                    }
                }
                MigrationType::Misfit => {
                    let m = self.rqs[c as usize].misfit_task_load;
                    if m > b_load {
                        b_load = m;
                        best = Some(c);
                    }
                }
                MigrationType::LlcTask => {
                    let dl = self.domains.cpus[env.dst as usize].llc_id;
                    let n = self.llc_count(c, dl);
                    if b_nr < n {
                        b_nr = n;
                        best = Some(c);
                    }
                }
            }
        }
        best
    }

    /// mirrors should_we_balance(): newidle balances unless work arrived;
    /// otherwise only the first idle CPU of the local group on an idle core
    /// (any idle CPU at the SMT level), else the first idle SMT thread, else
    /// the group's first CPU.
    fn should_we_balance(&self, env: &LbEnv) -> bool {
        if !env.cpus.test(env.dst) {
            return false;
        }
        if env.idle == IdleType::NewlyIdle {
            let rq = &self.rqs[env.dst as usize];
            return rq.nr_running() == 0 && rq.ttwu_pending == 0;
        }
        let mut cand = env.dst_grpmask.and(&env.cpus);
        let mut idle_smt = None;
        while let Some(c) = cand.first() {
            cand.clear(c);
            if !self.is_idle_cpu(c) {
                continue;
            }
            if self.smt_active
                && self.feat(Feat::SWB_IDLE_CORE)
                && !env.sd_flags.contains(SdFlags::SHARE_CPUCAPACITY)
                && !self.is_core_idle(c)
            {
                if idle_smt.is_none() {
                    idle_smt = Some(c);
                }
                cand = cand.and_not(&self.smt_masks[c as usize]);
                continue;
            }
            return c == env.dst;
        }
        match idle_smt {
            Some(c) => c == env.dst,
            None => env.dst_grpmask.first() == Some(env.dst),
        }
    }

    /// One balancing pass of domain `level` of `cpu` (mirrors
    /// sched_balance_rq()). Returns (tasks moved, continue balancing).
    pub(crate) fn sched_balance_rq(
        &mut self,
        cpu: CpuId,
        level: usize,
        idle: IdleType,
    ) -> (u32, bool) {
        if self.hmp_skip_level(cpu, level) {
            // HPERF_HMP's own logic balances the lowest cluster-spanning
            // level from the softirq, on the CPU that should_we_balance()
            // names for the cluster (one pass per group, as for any level).
            if idle != IdleType::NewlyIdle
                && self.feat(Feat::HMP_HPERF)
                && self.feat(Feat::HMP_HPERF_SOFTIRQ)
                && (level == 0 || !self.hmp_skip_level(cpu, level - 1))
            {
                let d = &self.domains.cpus[cpu as usize].domains[level];
                let mut env = LbEnv::new(cpu, level, d.flags, d.span, idle);
                env.dst_grpmask = self.group_balance_mask(cpu, level);
                if self.should_we_balance(&env) {
                    return (self.hperf_balance(), true);
                }
            }
            return (0, true);
        }
        let d = &self.domains.cpus[cpu as usize].domains[level];
        let parent = self.domains.cpus[cpu as usize]
            .domains
            .get(level + 1)
            .map(|p| (p.groups[0].sgc_level, p.groups[0].sgc_cpu));
        let mut env = LbEnv::new(cpu, level, d.flags, d.span, idle);
        // The level's name is recorded on a CPU's first pass at that level.
        let bit = 1u16 << level.min(15);
        if self.lb_named[cpu as usize] & bit == 0 {
            self.lb_named[cpu as usize] |= bit;
            self.counters.lb_count(level, &d.name);
        } else {
            self.counters.lb_count_again(level);
        }
        env.dst_grpmask = self.group_balance_mask(cpu, level);
        let mut continue_balancing = true;
        let mut moved = 0;
        let serialize = d.flags.contains(SdFlags::SERIALIZE);
        // How long the pass takes (the machine's `balance_pass_ns`, ESTIMATE).
        let pass_ns = self
            .machine
            .wakeup
            .balance_pass_ns_for(self.span_weight(cpu, level));
        let mut holds_running = false;
        // Each redo removes a fully pinned source CPU: bounded by the span.
        let outcome = 'redo: loop {
            if !self.should_we_balance(&env) {
                continue_balancing = false;
                break 'redo Outcome::Balanced;
            }
            if serialize && !holds_running {
                if !self.take_sched_balance_running(pass_ns) {
                    self.counters.lb_serialized(level);
                    break 'redo Outcome::Balanced;
                }
                holds_running = true;
            }
            let Some(gspan) = self.find_src_group(&mut env) else {
                break 'redo Outcome::Balanced;
            };
            let Some(src) = self.find_src_rq(&env, &gspan) else {
                break 'redo Outcome::Balanced;
            };
            env.src = src;
            env.all_pinned = true;
            if self.rqs[src as usize].nr_running() > 1 {
                env.loop_max = self
                    .cfg
                    .tunables
                    .nr_migrate
                    .min(self.rqs[src as usize].nr_running());
                // Each breather advances env.loop_count towards loop_max and
                // each dst retry removes a CPU from env.cpus: bounded.
                loop {
                    moved += self.detach_attach(&mut env);
                    if env.need_break {
                        // LBF_NEED_BREAK: the tasks so far are attached; go on
                        // with the same source (more_balance).
                        env.need_break = false;
                        continue;
                    }
                    if env.dst_pinned && env.imbalance > 0 {
                        // LBF_DST_PINNED: retry with another CPU of the local group.
                        env.cpus.clear(env.dst);
                        env.dst = env.new_dst_cpu;
                        env.dst_pinned = false;
                        env.loop_count = 0;
                        env.loop_break = NR_MIGRATE_BREAK;
                        continue;
                    }
                    break;
                }
                // Affinity kept us from balancing: tell the parent level.
                if let Some(psgc) = parent {
                    if env.some_pinned && env.imbalance > 0 {
                        self.set_sg_imbalanced(psgc, true);
                    }
                }
                if env.all_pinned {
                    env.cpus.clear(src);
                    if !env.cpus.is_subset(&env.dst_grpmask) {
                        env.loop_count = 0;
                        env.loop_break = NR_MIGRATE_BREAK;
                        continue 'redo;
                    }
                    break 'redo Outcome::AllPinned;
                }
            }
            if moved > 0 {
                self.sd[cpu as usize][level].nr_balance_failed = 0;
                break 'redo Outcome::Unbalanced;
            }
            if idle != IdleType::NewlyIdle && env.mt != MigrationType::Misfit && !env.llc_pinned {
                self.sd[cpu as usize][level].nr_balance_failed += 1;
            }
            if !self.need_active_balance(&env) {
                break 'redo Outcome::Unbalanced;
            }
            // No current task: src's curr is its idle task, which may run
            // nowhere else, so the stopper is not kicked (out_one_pinned,
            // with LBF_ALL_PINNED as it stands).
            let Some(cur) = self.rqs[src as usize].curr else {
                break 'redo Outcome::OnePinned;
            };
            if !self.tasks[cur as usize].affinity.test(cpu) {
                break 'redo Outcome::OnePinned;
            }
            env.all_pinned = false;
            if !self.rqs[src as usize].active_balance {
                self.rqs[src as usize].active_balance = true;
                // stop_one_cpu_nowait() enqueues src's stopper at once (the
                // stop class never goes through the wake list): add_nr_running()
                // overloads the root domain when src goes from one task to two.
                if self.rqs[src as usize].nr_running() == 1 {
                    self.rd_overloaded = true;
                }
                // LBF_ACTIVE_LB_LLC: the stopper moves only tasks preferring dst's LLC.
                self.cache.active_llc[src as usize] = env.mt == MigrationType::LlcTask;
                // stop_one_cpu_nowait() wakes src's stopper with an IPI; until
                // it runs, `active_balance` keeps other balancers off src.
                let at = self.now + self.machine.wakeup.ipi_ns as u64;
                self.q.push(at, EventKind::ActiveBalance { src, dst: cpu });
            }
            break 'redo Outcome::Unbalanced;
        };
        let d = &self.domains.cpus[cpu as usize].domains[level];
        let (min_i, max_i) = (d.min_interval_ms.max(1), d.max_interval_ms.max(1));
        match outcome {
            Outcome::Unbalanced => {
                self.sd[cpu as usize][level].balance_interval_ms = min_i;
                if moved > 0 {
                    self.counters.lb_moved(level, moved as u64);
                }
                return (moved, continue_balancing);
            }
            Outcome::Balanced => {
                // Balanced despite affinity: the others had their chance.
                if let Some(psgc) = parent {
                    if !env.all_pinned && self.sg_imbalanced(psgc) {
                        self.set_sg_imbalanced(psgc, false);
                    }
                }
                self.sd[cpu as usize][level].nr_balance_failed = 0;
            }
            Outcome::AllPinned => self.sd[cpu as usize][level].nr_balance_failed = 0,
            Outcome::OnePinned => {}
        }
        // out_one_pinned: back off (not for newidle or misfit balancing).
        if env.idle != IdleType::NewlyIdle && env.mt != MigrationType::Misfit {
            let st = &mut self.sd[cpu as usize][level];
            if (env.all_pinned && st.balance_interval_ms < MAX_PINNED_INTERVAL_MS)
                || st.balance_interval_ms < max_i
            {
                st.balance_interval_ms *= 2;
            }
        }
        (0, continue_balancing)
    }

    /// Takes `sched_balance_running` for a pass of `pass_ns` over an
    /// SD_SERIALIZE (NUMA) domain: one such pass runs at a time machine-wide,
    /// and a pass that finds another CPU's still running is skipped, not
    /// retried (sched_balance_rq()). Passes take no simulated time, so the
    /// lock counts as held for `pass_ns` after it was taken; the passes one
    /// softirq makes one after another (the nohz ILB's, for each idle CPU)
    /// queue behind each other on the CPU that runs them.
    fn take_sched_balance_running(&mut self, pass_ns: u64) -> bool {
        if self.sched_balance_running_elsewhere() {
            return false;
        }
        let runner = self.this_cpu;
        self.sched_balance_running = match self.sched_balance_running {
            Some((holder, until)) if self.now < until => Some((holder, until + pass_ns)),
            _ => Some((runner, self.now + pass_ns)),
        };
        true
    }

    /// Would a pass over a domain with `flags`, run now by this CPU's
    /// softirq, find `sched_balance_running` held by another CPU's?
    fn serialize_refuses(&self, flags: SdFlags) -> bool {
        flags.contains(SdFlags::SERIALIZE) && self.sched_balance_running_elsewhere()
    }

    /// Does another CPU's softirq hold `sched_balance_running` now?
    fn sched_balance_running_elsewhere(&self) -> bool {
        self.sched_balance_running
            .is_some_and(|(holder, until)| holder != self.this_cpu && self.now < until)
    }

    /// mirrors need_active_balance() with asym_active_balance() and
    /// imbalanced_active_balance(): push the running task of the source?
    fn need_active_balance(&self, env: &LbEnv) -> bool {
        let st = self.sd[env.this_cpu as usize][env.level];
        let tries = self.domains.cpus[env.this_cpu as usize].domains[env.level].cache_nice_tries;
        // asym packing: an idle dst of higher priority, or a source whose
        // priority does not count (its core has busy siblings).
        if env.is_idle()
            && self.sched_use_asym_prio(env.sd_flags, env.dst)
            && (self.sched_asym_prefer(env.dst, env.src)
                || !self.sched_use_asym_prio(env.sd_flags, env.src))
        {
            return true;
        }
        if self.alb_break_llc(env.sd_flags, env.mt, env.src, env.dst) {
            return false;
        }
        if env.mt == MigrationType::Task && st.nr_balance_failed > tries + 2 {
            return true;
        }
        // An idle dst takes the one fair task of a source whose capacity RT
        // time has reduced, if more capacity stays available on dst.
        let pct =
            u64::from(self.domains.cpus[env.this_cpu as usize].domains[env.level].imbalance_pct);
        if env.is_idle()
            && self.rqs[env.src as usize].cfs.nr_runnable() == 1
            && self.check_cpu_capacity(env.src, pct as u32)
            && self.capacity_of(env.src) * pct < self.capacity_of(env.dst) * 100
        {
            return true;
        }
        env.mt == MigrationType::Misfit || env.mt == MigrationType::LlcTask
    }

    /// No first-try move (`failed` balance attempts 0) of a task that is not
    /// eligible on `src` to a busy `dst` (mirrors
    /// task_is_ineligible_on_dst_cpu(), with PLACE_LAG). An EEVDF rule: 3.10's
    /// CFS has no eligibility.
    pub(crate) fn ineligible_on_dst(&self, src: CpuId, dst: CpuId, t: TaskId, failed: u32) -> bool {
        failed == 0
            && self.feat(Feat::PLACE_LAG)
            && !self.cfs_mode()
            && self.rqs[dst as usize].cfs.nr_queued > 0
            && !self.vruntime_eligible(src, self.tasks[t as usize].se.vruntime)
    }

    /// Can `t` move from env.src to env.dst (mirrors can_migrate_task())?
    fn can_migrate_task(&self, env: &mut LbEnv, t: TaskId) -> bool {
        let tk = &self.tasks[t as usize];
        if tk.se.sched_delayed && env.mt != MigrationType::Load {
            return false;
        }
        let failed = self.sd[env.this_cpu as usize][env.level].nr_balance_failed;
        if self.ineligible_on_dst(env.src, env.dst, t, failed) {
            return false;
        }
        if tk.kthread {
            return false;
        }
        if !tk.affinity.test(env.dst) {
            env.some_pinned = true;
            if env.idle == IdleType::NewlyIdle || env.dst_pinned {
                return false;
            }
            // Remember another CPU of the local group the task may use.
            let alt = env.dst_grpmask.and(&env.cpus).and(&tk.affinity).first();
            if let Some(c) = alt {
                env.dst_pinned = true;
                env.new_dst_cpu = c;
            }
            return false;
        }
        env.all_pinned = false;
        if self.rqs[env.src as usize].curr == Some(t) {
            return false;
        }
        let tries = self.domains.cpus[env.this_cpu as usize].domains[env.level].cache_nice_tries;
        // SCHED_CACHE (no NUMA-locality degradation is modelled): keep a task
        // on its preferred LLC before task_hot() is asked.
        if self.migrate_degrades_llc(
            env.sd_flags,
            env.is_idle(),
            env.mt,
            failed,
            tries,
            t,
            env.src,
            env.dst,
        ) {
            if env.mt != MigrationType::LlcTask {
                env.llc_pinned = true;
            }
            return false;
        }
        !self.task_hot(env.sd_flags, env.src, env.dst, t) || failed > tries
    }

    /// Did `t` run on its CPU so recently that moving it loses a warm cache
    /// (mirrors task_hot())? Never for SCHED_IDLE tasks or within an SMT domain;
    /// always for the next (or, under 3.10's CFS, last) buddy when the
    /// destination has work.
    pub(crate) fn task_hot(&self, sd_flags: SdFlags, src: CpuId, dst: CpuId, t: TaskId) -> bool {
        if self.tasks[t as usize].idle_policy || sd_flags.contains(SdFlags::SHARE_CPUCAPACITY) {
            return false;
        }
        // CACHE_HOT_BUDDY: the next buddy stays where it was nominated (and
        // under 3.10's CFS the last buddy too; EEVDF has none).
        let cfs = &self.rqs[src as usize].cfs;
        if self.feat(Feat::CACHE_HOT_BUDDY)
            && self.rqs[dst as usize].nr_running() > 0
            && (cfs.next == Some(t) || cfs.last == Some(t))
        {
            return true;
        }
        // migration_cost_ns: -1 (as a u32) makes every task hot, 0 none.
        let cost = self.cfg.tunables.migration_cost_ns;
        if cost == u64::from(u32::MAX) {
            return true;
        }
        if cost == 0 {
            return false;
        }
        // A task that migrated and has not run since has exec_start 0 (on a
        // real machine seconds after boot, so never within the cost).
        let exec_start = self.tasks[t as usize].se.exec_start;
        exec_start != 0 && self.now.saturating_sub(exec_start) < cost
    }

    /// Detaches tasks from the source runqueue's tail and attaches them to the
    /// destination until the imbalance is met (mirrors detach_tasks() and
    /// attach_tasks()).
    fn detach_attach(&mut self, env: &mut LbEnv) -> u32 {
        let src = env.src;
        let dst = env.dst;
        if self.rqs[src as usize].nr_running() <= 1 {
            env.all_pinned = false;
            return 0;
        }
        if env.imbalance == 0 {
            return 0;
        }
        self.update_rq_clock(src);
        self.update_rq_clock(dst);
        // cfs_tasks from the tail, the running task included: can_migrate_task()
        // refuses it, but it clears LBF_ALL_PINNED as in the kernel. Walking
        // by `prev` while moving passed-over tasks to the head visits the
        // same tasks as the kernel's repeated list_last_entry(): loop_max is
        // at most the list's length, so the walk never reaches a moved task.
        let failed = self.sd[env.this_cpu as usize][env.level].nr_balance_failed;
        let lb_min = self.feat(Feat::LB_MIN);
        let mut moved = 0;
        // A breather every NR_MIGRATE_BREAK tasks looked at bounds what one
        // call detaches.
        let mut detached = [(0 as TaskId, false); NR_MIGRATE_BREAK as usize];
        let mut next = self.rqs[src as usize].cfs_tasks.tail();
        while let Some(t) = next {
            next = self.rqs[src as usize]
                .cfs_tasks
                .prev_of(self.group_links.as_slice(), t);
            if env.is_idle() && self.rqs[src as usize].nr_running() <= 1 {
                break;
            }
            env.loop_count += 1;
            if env.loop_count > env.loop_max {
                break;
            }
            if env.loop_count > env.loop_break {
                env.loop_break += NR_MIGRATE_BREAK;
                env.need_break = true;
                break;
            }
            let take = 'check: {
                if !self.can_migrate_task(env, t) {
                    break 'check false;
                }
                let tk = &self.tasks[t as usize];
                match env.mt {
                    MigrationType::Load => {
                        let load = self.task_h_load(t).max(1);
                        if lb_min && load < 16 && failed == 0 {
                            break 'check false;
                        }
                        if (load >> failed.min(63)) > env.imbalance {
                            break 'check false;
                        }
                        env.imbalance = env.imbalance.saturating_sub(load);
                    }
                    MigrationType::Util => {
                        let u = tk.util_est();
                        if (u >> failed.min(63)) > env.imbalance {
                            break 'check false;
                        }
                        env.imbalance = env.imbalance.saturating_sub(u);
                    }
                    MigrationType::Task => env.imbalance -= 1,
                    MigrationType::LlcTask => {
                        env.imbalance = env.imbalance.saturating_sub(1);
                        self.cache.llc_task_moves += 1;
                    }
                    MigrationType::Misfit => {
                        // Only a task that does not fit where it is.
                        if self.task_fits_cpu(t, src) {
                            break 'check false;
                        }
                        env.imbalance = 0;
                    }
                }
                true
            };
            if !take {
                // A task passed over goes to the head, so the next pass
                // starts with others.
                self.rqs[src as usize]
                    .cfs_tasks
                    .move_to_head(self.group_links.as_mut_slice(), t);
                continue;
            }
            detached[moved as usize] = (t, self.detach_task(t, src, dst));
            moved += 1;
            if env.idle == IdleType::NewlyIdle || env.imbalance == 0 {
                break;
            }
        }
        // attach_tasks(): the last detached first, each with its preemption
        // check on dst (attach_task()).
        for &(t, delayed) in detached[..moved as usize].iter().rev() {
            self.attach_task(t, dst, delayed);
            self.wakeup_preempt(dst, t, env.this_cpu, 0);
        }
        moved
    }

    /// Moves a queued (not running) task between runqueues (detach_task()
    /// and attach_task()). `src` and `dst` may be the same CPU: with
    /// overlapping NUMA groups, an LBF_DST_PINNED retry can name the source
    /// CPU itself as the new destination; set_task_cpu() to the same CPU is
    /// no migration, so the task is only dequeued and enqueued again.
    pub(crate) fn move_queued_task(&mut self, t: TaskId, src: CpuId, dst: CpuId) {
        let delayed = self.detach_task(t, src, dst);
        self.attach_task(t, dst, delayed);
    }

    /// Takes a queued task off `src` for `dst` (mirrors detach_task());
    /// returns whether its dequeue was delayed.
    fn detach_task(&mut self, t: TaskId, src: CpuId, dst: CpuId) -> bool {
        let delayed = self.tasks[t as usize].se.sched_delayed;
        self.dequeue_task(src, t, false);
        self.set_task_cpu(t, src, dst, true);
        delayed
    }

    /// Queues a detached task on `dst` (mirrors attach_task() without its
    /// preemption check).
    fn attach_task(&mut self, t: TaskId, dst: CpuId, delayed: bool) {
        self.enqueue_task(dst, t, EnqueueKind::Migrated);
        if delayed {
            // A delayed task moved for load (migrate_load) stays delayed on
            // dst: enqueue_task_fair() without ENQUEUE_DELAYED keeps
            // sched_delayed and leaves its estimate out of util_est. A pick
            // on dst finishes its dequeue; a wakeup requeues it there.
            self.set_delayed(dst, t);
            self.update_cfs_avg(dst);
        }
    }

    /// The stopper of `src` pushes one task to `dst` (mirrors
    /// active_load_balance_cpu_stop() with detach_one_task()): it preempts
    /// the running task, then takes the first movable task from the tail of
    /// the task list (the preempted one comes last), ignoring cache hotness
    /// (LBF_ACTIVE_LB). On success the balancing domain's failure count resets.
    pub(crate) fn active_balance_stop(&mut self, src: CpuId, dst: CpuId) {
        self.rqs[src as usize].active_balance = false;
        if self.rqs[src as usize].cfs.nr_queued == 0 {
            return;
        }
        let Some(level) = self.domains.cpus[dst as usize]
            .domains
            .iter()
            .position(|d| d.span.test(src))
        else {
            return;
        };
        // The stopper preempts the running task.
        self.update_rq_clock(src);
        let prev = self.stopper_preempt(src);
        let failed = self.sd[dst as usize][level].nr_balance_failed;
        // detach_one_task() walks cfs_tasks from the tail.
        let llc_only = std::mem::take(&mut self.cache.active_llc[src as usize]);
        let dst_llc = self.domains.cpus[dst as usize].llc_id;
        let list = &self.rqs[src as usize].cfs_tasks;
        let tasks = self.group_links.as_slice();
        let mut pick = list.tail();
        while let Some(t) = pick {
            let tk = &self.tasks[t as usize];
            // migrate_llc_task_wrong_dst() under LBF_ACTIVE_LB_LLC.
            let wrong_llc =
                llc_only && self.sched_cache_enabled() && tk.preferred_llc != Some(dst_llc);
            // task_is_ineligible_on_dst_cpu() before any failure.
            let ineligible = self.ineligible_on_dst(src, dst, t, failed);
            if !wrong_llc && !ineligible && !tk.kthread && tk.affinity.test(dst) {
                break;
            }
            pick = list.prev_of(tasks, t);
        }
        if let Some(t) = pick {
            self.counters.active_balance += 1;
            self.sd[dst as usize][level].nr_balance_failed = 0;
            let was_delayed = self.tasks[t as usize].se.sched_delayed;
            self.move_queued_task(t, src, dst);
            if !was_delayed {
                self.kick_moved_task(dst, t, src);
            }
        }
        // src picks its next task (it may go idle).
        self.pick_and_switch(src, prev);
    }
}

/// How a sched_balance_rq() pass ended (its exit labels).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Unbalanced,
    Balanced,
    AllPinned,
    OnePinned,
}

/// SIS_UTIL's scan depth for an LLC of `llc_weight` CPUs with total
/// utilisation `sum_util` (mirrors update_idle_cpu_scan()):
/// x = util/weight, y = weight·(1024 − min(1024, x²·pct²/(10⁴·1024)))/1024.
pub fn nr_idle_scan(sum_util: u64, llc_weight: u32, pct: u32) -> u32 {
    let w = llc_weight.max(1) as u64;
    let x = sum_util / w;
    let tmp = (x * x * pct as u64 * pct as u64 / (10_000 * 1024)).min(1024);
    ((1024 - tmp) * w / 1024) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// idle_cpu() during a newly idle pass: the task that just stopped is
    /// still the balancing CPU's `rq->curr` until the switch, so the local
    /// group counts one idle CPU fewer than after an idle CPU's reschedule
    /// (whose `curr` is the idle task) or in an idle CPU's periodic pass.
    #[test]
    fn a_newly_idle_cpu_whose_task_just_stopped_is_not_an_idle_cpu() {
        let mut s = crate::fair::fidelity_tests::bare("kunpeng920");
        let cpu = 0;
        let level = 0;
        let d = &s.domains.cpus[cpu as usize].domains[level];
        let (flags, span) = (d.flags, d.span);
        let local = d.groups.iter().position(|g| g.span.test(cpu)).unwrap();
        let weight = d.groups[local].span.weight();
        let idle_cpus = |s: &Sim, idle: IdleType| {
            let env = LbEnv::new(cpu, level, flags, span, idle);
            s.sg_lb_stats(&env, local, &GroupStats::default()).idle_cpus
        };
        assert_eq!(idle_cpus(&s, IdleType::NewlyIdle), weight);
        s.newidle_after_task = Some(cpu);
        assert_eq!(idle_cpus(&s, IdleType::NewlyIdle), weight - 1);
        assert_eq!(idle_cpus(&s, IdleType::Idle), weight);
    }

    fn stats(nr: u32, weight: u32, util: u64, cap: u64) -> GroupStats {
        GroupStats {
            sum_nr_running: nr,
            sum_h_nr_running: nr,
            group_weight: weight,
            group_util: util,
            group_runnable: util,
            group_capacity: cap,
            ..Default::default()
        }
    }

    #[test]
    fn group_classification_follows_the_kernel() {
        // Fewer tasks than CPUs: spare.
        assert_eq!(classify(117, &stats(3, 4, 3000, 4096)), GroupType::HasSpare);
        // As many tasks as CPUs and busy: fully busy (cap·100 ≤ util·pct).
        assert_eq!(
            classify(117, &stats(4, 4, 4000, 4096)),
            GroupType::FullyBusy
        );
        // As many tasks as CPUs but mostly idle: still has capacity.
        assert_eq!(classify(117, &stats(4, 4, 1000, 4096)), GroupType::HasSpare);
        // More tasks than CPUs and busy: overloaded.
        assert_eq!(
            classify(117, &stats(5, 4, 4000, 4096)),
            GroupType::Overloaded
        );
        // More tasks than CPUs but light: not overloaded.
        assert_eq!(classify(117, &stats(5, 4, 500, 4096)), GroupType::HasSpare);
    }

    #[test]
    fn sibling_imbalance_normalises_by_cores() {
        // Equal core counts: the difference in tasks.
        assert_eq!(sibling_imbalance(true, 4, 4, 0, 4), 4);
        assert_eq!(sibling_imbalance(true, 4, 4, 3, 4), 1);
        // Not idle: nothing.
        assert_eq!(sibling_imbalance(false, 4, 4, 0, 4), 0);
        // 2 tasks on a 1-core group vs an empty 4-core group:
        // (2·(4·2 − 1·0) + 5) / 5 = 4.
        assert_eq!(sibling_imbalance(true, 2, 1, 0, 4), 4);
        // Small imbalance with an empty local group is raised to 2.
        assert_eq!(sibling_imbalance(true, 2, 4, 0, 1), 2);
    }

    /// detach_tasks() moves every task it passes over to the head of
    /// cfs_tasks, so the next balance starts with the others.
    #[test]
    fn detach_tasks_moves_passed_over_tasks_to_the_head() {
        use crate::sim::EnqueueKind;
        use crate::task::{Task, TaskState};
        let mut s = crate::fair::fidelity_tests::bare("kunpeng920");
        // r runs on CPU 0; p (pinned to CPU 0), q and x wait there, enqueued
        // in that order; picking r moved it to the head, so cfs_tasks from the
        // tail is p, q, x, r.
        let mut ids = vec![];
        for pinned in [false, true, false, false] {
            let id = s.tasks.len() as TaskId;
            let affinity = if pinned {
                CpuMask::from_cpus([0])
            } else {
                s.machine.all_cpus()
            };
            s.tasks.push(Task::new(id, "t", 1, 0, 0, affinity));
            s.update_rq_clock(0);
            s.enqueue_task(0, id, EnqueueKind::New);
            s.tasks[id as usize].state = TaskState::Runnable;
            ids.push(id);
        }
        let [r, p, q, x] = ids[..] else {
            unreachable!()
        };
        s.set_next_entity(0, r);
        s.rqs[0].curr = Some(r);
        s.tasks[r as usize].state = TaskState::Running;
        assert_eq!(
            s.rqs[0].cfs_tasks.from_tail(s.group_links.as_slice()),
            [p, q, x, r]
        );
        // Nobody ran recently: no task is cache-hot.
        s.now = 50_000_000;
        let level = 1; // MC above CLS
        let flags = s.domains.cpus[1].domains[level].flags;
        let mut env = LbEnv::new(1, level, flags, s.machine.all_cpus(), IdleType::Idle);
        (env.imbalance, env.mt, env.src, env.loop_max) = (1, MigrationType::Task, 0, 4);
        env.all_pinned = true;
        assert_eq!(s.detach_attach(&mut env), 1);
        assert_eq!(
            s.tasks[q as usize].cpu, 1,
            "the first movable task from the tail"
        );
        // p (pinned) was passed over and went to the head: the next walk
        // starts with x, then r (without the move it would be p again).
        assert_eq!(
            s.rqs[0].cfs_tasks.from_tail(s.group_links.as_slice()),
            [x, r, p]
        );
        assert!(env.some_pinned && !env.all_pinned);
        for rq in &s.rqs[..2] {
            assert_eq!(
                rq.cfs_tasks.walk_checked(s.group_links.as_slice(), |_| ()),
                Ok(())
            );
            assert_eq!(
                rq.cfs.timeline.walk_checked(s.run_nodes.as_slice(), |_| ()),
                Ok(())
            );
        }
    }

    /// With nr_migrate above SCHED_NR_MIGRATE_BREAK, detach_tasks() stops
    /// after 32 tasks looked at (LBF_NEED_BREAK), the caller attaches them
    /// and calls again; the 33rd look is spent on the breather, as
    /// env->loop counts it.
    #[test]
    fn detach_tasks_takes_a_breather_every_32_tasks() {
        use crate::sim::EnqueueKind;
        use crate::task::{Task, TaskState};
        let mut s = crate::fair::fidelity_tests::bare("kunpeng920");
        for _ in 0..70 {
            let id = s.tasks.len() as TaskId;
            let all = s.machine.all_cpus();
            s.tasks.push(Task::new(id, "t", 1, 0, 0, all));
            s.update_rq_clock(0);
            s.enqueue_task(0, id, EnqueueKind::New);
            s.tasks[id as usize].state = TaskState::Runnable;
        }
        s.set_next_entity(0, 0);
        s.rqs[0].curr = Some(0);
        s.tasks[0].state = TaskState::Running;
        s.now = 50_000_000;
        let level = 0;
        let flags = s.domains.cpus[1].domains[level].flags;
        let mut env = LbEnv::new(1, level, flags, s.machine.all_cpus(), IdleType::Idle);
        (env.imbalance, env.mt, env.src, env.loop_max) = (100, MigrationType::Task, 0, 64);
        env.all_pinned = true;
        assert_eq!(s.detach_attach(&mut env), 32);
        assert!(env.need_break);
        assert_eq!((env.loop_count, env.loop_break), (33, 64));
        env.need_break = false;
        assert_eq!(
            s.detach_attach(&mut env),
            31,
            "looks 34..=64, then loop_max"
        );
        assert!(!env.need_break);
        assert_eq!(s.rqs[1].nr_running(), 63);
        assert_eq!(env.imbalance, 100 - 63);
    }

    /// task_hot() follows migration_cost_ns: hot within it, never at 0,
    /// always at -1 (4294967295).
    #[test]
    fn task_hot_follows_migration_cost_ns() {
        use crate::task::Task;
        let mut s = crate::fair::fidelity_tests::bare("kunpeng920");
        let all = s.machine.all_cpus();
        s.tasks.push(Task::new(0, "t", 1, 0, 0, all));
        let mc = s.domains.cpus[0].domains[0].flags;
        s.now = 10_000_000;
        s.tasks[0].se.exec_start = s.now - 300_000;
        let hot = |s: &Sim| s.task_hot(mc, 0, 1, 0);
        assert!(hot(&s), "ran 0.3 ms ago, within the default 0.5 ms");
        s.cfg.tunables.migration_cost_ns = 200_000;
        assert!(!hot(&s));
        s.cfg.tunables.migration_cost_ns = 0;
        s.tasks[0].se.exec_start = s.now;
        assert!(!hot(&s), "0: never hot");
        s.cfg.tunables.migration_cost_ns = u64::from(u32::MAX);
        s.tasks[0].se.exec_start = 1;
        assert!(hot(&s), "-1: always hot");
    }
}
