//! Load balancing (kernel/sched/fair.c): periodic (sched_balance_domains()),
//! newly idle (sched_balance_newidle()) and nohz idle balancing, all through
//! sched_balance_rq() with group statistics, classification, busiest-group and
//! busiest-runqueue selection, imbalance calculation, detach with
//! can_migrate_task()/task_hot(), and active balance.

use crate::event::{EventKind, TaskId};
use crate::features::Feat;
use crate::sim::{EnqueueKind, Sim};
use crate::task::TaskState;
use schedlab_topo::{CpuId, CpuMask, SdFlags};

/// sysctl_sched_migration_cost: a task that ran this recently is cache hot.
pub const MIGRATION_COST_NS: u64 = 500_000;
/// sysctl_sched_nr_migrate.
pub const NR_MIGRATE: u32 = 32;
/// Newidle balance needs at least this much expected idle time.
pub const MAX_IDLE_BALANCE_COST_NS: u64 = 500_000;

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
}

/// Idle state of the balancing CPU (`enum cpu_idle_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdleType {
    NotIdle,
    Idle,
    NewlyIdle,
}

/// Statistics of one group (`struct sg_lb_stats`).
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
    pub overloaded_cpu: bool,
}

/// group_has_capacity(): the group can take more work.
pub fn has_capacity(pct: u32, s: &GroupStats) -> bool {
    if s.sum_nr_running < s.group_weight {
        return true;
    }
    if s.group_capacity * pct as u64 <= s.group_runnable * 100 {
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

/// Classifies a group (mirrors group_classify(); the asym, SMT, LLC and
/// imbalanced types need inputs this simulator does not model yet).
pub fn classify(pct: u32, s: &GroupStats) -> GroupType {
    if is_overloaded(pct, s) {
        GroupType::Overloaded
    } else if s.misfit_task_load > 0 {
        GroupType::MisfitTask
    } else if !has_capacity(pct, s) {
        GroupType::FullyBusy
    } else {
        GroupType::HasSpare
    }
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

/// The balancing environment (`struct lb_env`).
struct LbEnv {
    dst: CpuId,
    level: usize,
    idle: IdleType,
    cpus: CpuMask,
    imbalance: u64,
    mt: MigrationType,
    src: CpuId,
    loop_max: u32,
    all_pinned: bool,
}

impl Sim {
    /// Periodic balancing of every domain of `cpu` that is due (mirrors
    /// sched_balance_domains()).
    pub(crate) fn sched_balance_domains(&mut self, cpu: CpuId, idle_cpu: bool) {
        let now = self.now;
        let jiffy = self.tick_ns;
        let mut busy = !idle_cpu;
        let mut next_balance = now + 60 * jiffy * 250 / self.cfg.hz as u64;
        let n = self.domains.cpus[cpu as usize].domains.len();
        let ncpus = self.nr_cpus() as u64;
        for level in 0..n {
            let interval = self.balance_interval_ns(cpu, level, busy, ncpus);
            let st = self.sd[cpu as usize][level];
            let mut continue_balancing = true;
            if now >= st.last_balance_ns + interval {
                let idle = if busy {
                    IdleType::NotIdle
                } else {
                    IdleType::Idle
                };
                let (moved, cont) = self.sched_balance_rq(cpu, level, idle);
                continue_balancing = cont;
                if moved > 0 {
                    busy = !self.is_idle_cpu(cpu);
                }
                self.sd[cpu as usize][level].last_balance_ns = now;
            }
            let interval = self.balance_interval_ns(cpu, level, busy, ncpus);
            let due = self.sd[cpu as usize][level].last_balance_ns + interval;
            next_balance = next_balance.min(due);
            if !continue_balancing {
                break;
            }
        }
        self.rqs[cpu as usize].next_balance = next_balance;
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
        let mut jiffies = (ms * hz).div_ceil(1000);
        if busy {
            jiffies = jiffies.saturating_sub(1);
        }
        let max_j = (hz * ncpus / 10).max(1);
        jiffies.clamp(1, max_j) * self.tick_ns
    }

    /// Newly idle balancing (mirrors sched_balance_newidle()): pull one task
    /// from the nearest busy domain while the expected idle time exceeds the
    /// cost of balancing. Returns the number of tasks pulled.
    pub(crate) fn sched_balance_newidle(&mut self, cpu: CpuId) -> u32 {
        let avg_idle = self.rqs[cpu as usize].avg_idle;
        let n = self.domains.cpus[cpu as usize].domains.len();
        if n == 0 {
            return 0;
        }
        // The root domain is "overloaded" when some CPU has more than one task.
        if !self.rqs.iter().any(|rq| rq.nr_running() > 1) {
            return 0;
        }
        if avg_idle < self.sd[cpu as usize][0].max_newidle_lb_cost_ns {
            return 0;
        }
        let mut curr_cost = 0u64;
        let mut pulled = 0;
        for level in 0..n {
            let st = self.sd[cpu as usize][level];
            if avg_idle < curr_cost + st.max_newidle_lb_cost_ns {
                break;
            }
            let d = &self.domains.cpus[cpu as usize].domains[level];
            if !d.flags.contains(SdFlags::BALANCE_NEWIDLE) {
                continue;
            }
            // Cost of one balance pass: proportional to the CPUs it looks at
            // (ESTIMATE: ~50 ns per CPU of the span).
            let cost = 2_000 + 50 * d.span.weight() as u64;
            let (moved, _) = self.sched_balance_rq(cpu, level, IdleType::NewlyIdle);
            let st = &mut self.sd[cpu as usize][level];
            st.max_newidle_lb_cost_ns = st.max_newidle_lb_cost_ns.max(cost);
            curr_cost += cost;
            self.counters.newidle_balance += 1;
            pulled += moved;
            if pulled > 0 || self.rqs[cpu as usize].nr_running() > 0 {
                break;
            }
        }
        pulled
    }

    /// Decides whether the busy tick should kick an idle CPU to balance on
    /// behalf of tick-stopped CPUs (mirrors nohz_balancer_kick()).
    pub(crate) fn nohz_balancer_kick(&mut self, cpu: CpuId) {
        if self.now < self.nohz_next_balance {
            return;
        }
        let rq = &self.rqs[cpu as usize];
        let llc = self.domains.cpus[cpu as usize].llc_id as usize;
        let kick = rq.nr_running() >= 2 || self.llc[llc].nr_busy_cpus > 1;
        if !kick {
            return;
        }
        let ilb = (0..self.nr_cpus() as CpuId).find(|&c| c != cpu && self.is_idle_cpu(c));
        if let Some(ilb) = ilb {
            self.nohz_next_balance = u64::MAX;
            let delay = self.machine.wakeup.ipi_ns as u64;
            self.q
                .push(self.now + delay, EventKind::NohzBalance { ilb });
        }
    }

    /// The kicked CPU balances every idle CPU whose balance is due, itself
    /// last (mirrors _nohz_idle_balance()).
    pub(crate) fn nohz_idle_balance(&mut self, ilb: CpuId) {
        let n = self.nr_cpus() as CpuId;
        let mut next = u64::MAX;
        for c in (0..n).filter(|&c| c != ilb).chain(std::iter::once(ilb)) {
            if !self.is_idle_cpu(c) {
                continue;
            }
            if self.now >= self.rqs[c as usize].next_balance {
                self.update_rq_clock(c);
                self.counters.nohz_balance += 1;
                self.sched_balance_domains(c, true);
            }
            if self.is_idle_cpu(c) {
                next = next.min(self.rqs[c as usize].next_balance);
            }
        }
        self.nohz_next_balance = if next == u64::MAX { 0 } else { next };
    }

    /// Group statistics for balancing (mirrors update_sg_lb_stats()).
    fn sg_lb_stats(&self, env: &LbEnv, span: &CpuMask, capacity: u64, pct: u32) -> GroupStats {
        let mut s = GroupStats {
            group_capacity: capacity,
            group_weight: span.weight(),
            ..Default::default()
        };
        for c in span.and(&env.cpus).iter() {
            s.group_load += self.cpu_load(c);
            s.group_util += self.cpu_util(c);
            s.group_runnable += self.cpu_runnable(c);
            let rq = &self.rqs[c as usize];
            s.sum_h_nr_running += rq.cfs.nr_runnable();
            let nr = rq.nr_running();
            s.sum_nr_running += nr;
            if nr > 1 {
                s.overloaded_cpu = true;
            }
            if nr == 0 && self.is_idle_cpu(c) {
                s.idle_cpus += 1;
            }
        }
        s.group_type = classify(pct, &s);
        if s.group_type == GroupType::Overloaded {
            s.avg_load = s.group_load * 1024 / s.group_capacity.max(1);
        }
        s
    }

    /// Finds the busiest group and the imbalance (mirrors
    /// sched_balance_find_src_group() with update_sd_lb_stats() and
    /// calculate_imbalance()). Returns the group's span.
    fn find_src_group(&mut self, env: &mut LbEnv) -> Option<CpuMask> {
        let cpu = env.dst;
        let d = self.domains.cpus[cpu as usize].domains[env.level].clone();
        let pct = d.imbalance_pct;
        let prefer_sibling = env.level > 0
            && self.domains.cpus[cpu as usize].domains[env.level - 1]
                .flags
                .contains(SdFlags::PREFER_SIBLING);
        let mut local = GroupStats::default();
        let mut local_cores = 1;
        let mut busiest: Option<(usize, GroupStats)> = None;
        let (mut total_load, mut total_capacity, mut sum_util) = (0u64, 0u64, 0u64);
        for (gi, g) in d.groups.iter().enumerate() {
            let s = self.sg_lb_stats(env, &g.span, g.capacity as u64, pct);
            total_load += s.group_load;
            total_capacity += s.group_capacity;
            sum_util += s.group_util;
            if g.span.test(cpu) {
                local = s;
                local_cores = g.cores;
                continue;
            }
            if s.sum_h_nr_running == 0 {
                continue;
            }
            let pick = match &busiest {
                None => true,
                Some((bgi, b)) => pick_busiest(&s, b, d.groups[*bgi].flags),
            };
            if pick {
                busiest = Some((gi, s));
            }
        }
        // SIS_UTIL: the LLC domain's periodic balance sets the scan depth.
        if env.idle != IdleType::NewlyIdle && self.feat(Feat::SIS_UTIL) {
            let cd = &self.domains.cpus[cpu as usize];
            if cd.sd_llc == Some(env.level) {
                let llc_weight = cd.llc_size.max(1) as u64;
                let x = sum_util / llc_weight;
                let tmp = (x * x * pct as u64 * pct as u64 / (10_000 * 1024)).min(1024);
                let y = (1024 - tmp) * llc_weight / 1024;
                let llc = cd.llc_id as usize;
                self.llc[llc].nr_idle_scan = y as u32;
            }
        }
        let (bgi, b) = busiest?;
        let b_cores = d.groups[bgi].cores;
        let b_span = d.groups[bgi].span;
        let idle = env.idle != IdleType::NotIdle;
        let mut force =
            b.group_type == GroupType::MisfitTask || b.group_type == GroupType::Imbalanced;
        let mut sds_avg_load = 0;
        if !force {
            if local.group_type > b.group_type {
                return None;
            }
            if local.group_type == GroupType::Overloaded {
                if local.avg_load >= b.avg_load {
                    return None;
                }
                sds_avg_load = total_load * 1024 / total_capacity.max(1);
                if local.avg_load >= sds_avg_load {
                    return None;
                }
                if 100 * b.avg_load <= pct as u64 * local.avg_load {
                    return None;
                }
            }
            if prefer_sibling
                && local.group_type == GroupType::HasSpare
                && sibling_imbalance(
                    idle,
                    b.sum_nr_running,
                    b_cores,
                    local.sum_nr_running,
                    local_cores,
                ) > 1
            {
                force = true;
            }
        }
        if !force && b.group_type != GroupType::Overloaded {
            if !idle {
                return None;
            }
            if b.group_weight > 1 && local.idle_cpus <= b.idle_cpus + 1 {
                return None;
            }
            if b.sum_h_nr_running == 1 {
                return None;
            }
        }
        // calculate_imbalance()
        if b.group_type == GroupType::MisfitTask {
            env.mt = MigrationType::Misfit;
            env.imbalance = 1;
        } else if b.group_type == GroupType::Imbalanced {
            env.mt = MigrationType::Task;
            env.imbalance = 1;
        } else if local.group_type == GroupType::HasSpare {
            if b.group_type > GroupType::FullyBusy && !d.flags.contains(SdFlags::SHARE_LLC) {
                env.mt = MigrationType::Util;
                env.imbalance = local.group_capacity.max(local.group_util) - local.group_util;
                if idle && env.imbalance == 0 {
                    env.mt = MigrationType::Task;
                    env.imbalance = 1;
                }
            } else {
                env.mt = MigrationType::Task;
                env.imbalance = if b.group_weight == 1 || prefer_sibling {
                    sibling_imbalance(
                        idle,
                        b.sum_nr_running,
                        b_cores,
                        local.sum_nr_running,
                        local_cores,
                    )
                } else {
                    local.idle_cpus.saturating_sub(b.idle_cpus) as u64
                };
                // adjust_numa_imbalance(): a lightly used local node keeps a
                // small imbalance.
                if d.flags.contains(SdFlags::NUMA)
                    && local.sum_nr_running < d.imb_numa_nr
                    && env.imbalance <= 2
                {
                    env.imbalance = 0;
                }
                env.imbalance >>= 1;
            }
        } else {
            let mut local_avg = local.avg_load;
            if local.group_type < GroupType::Overloaded {
                local_avg = local.group_load * 1024 / local.group_capacity.max(1);
                if local_avg >= b.avg_load {
                    return None;
                }
                sds_avg_load = total_load * 1024 / total_capacity.max(1);
                if local_avg >= sds_avg_load {
                    return None;
                }
            }
            env.mt = MigrationType::Load;
            env.imbalance = (b.avg_load.saturating_sub(sds_avg_load) * b.group_capacity)
                .min(sds_avg_load.saturating_sub(local_avg) * local.group_capacity)
                / 1024;
        }
        if env.imbalance == 0 {
            return None;
        }
        Some(b_span)
    }

    /// The busiest runqueue of the busiest group (mirrors sched_balance_find_src_rq()).
    fn find_src_rq(&self, env: &LbEnv, span: &CpuMask) -> Option<CpuId> {
        let mut best: Option<CpuId> = None;
        let (mut b_load, mut b_cap, mut b_util, mut b_nr) = (0u64, 1u64, 0u64, 0u32);
        for c in span.and(&env.cpus).iter() {
            let nr = self.rqs[c as usize].cfs.nr_runnable();
            if nr == 0 {
                continue;
            }
            let cap = self.capacity_of(c);
            match env.mt {
                MigrationType::Load => {
                    let load = self.cpu_load(c);
                    if nr == 1 && load > env.imbalance {
                        continue;
                    }
                    if load * b_cap > b_load * cap {
                        b_load = load;
                        b_cap = cap;
                        best = Some(c);
                    }
                }
                MigrationType::Util => {
                    let util = self.cpu_util(c);
                    if nr <= 1 {
                        continue;
                    }
                    if b_util < util {
                        b_util = util;
                        best = Some(c);
                    }
                }
                MigrationType::Task | MigrationType::Misfit => {
                    if b_nr < nr {
                        b_nr = nr;
                        best = Some(c);
                    }
                }
            }
        }
        best
    }

    /// mirrors should_we_balance(): newidle always; otherwise only the first
    /// idle CPU of the local group (preferring one on an idle core), or the
    /// group's first CPU when none is idle.
    fn should_we_balance(&self, env: &LbEnv) -> bool {
        if env.idle == IdleType::NewlyIdle {
            return true;
        }
        let d = &self.domains.cpus[env.dst as usize].domains[env.level];
        let local = d.groups[0].span.and(&env.cpus);
        let mut first_idle = None;
        for c in local.iter() {
            if !self.is_idle_cpu(c) {
                continue;
            }
            let core_idle = self.machine.smt_mask(c).iter().all(|s| self.is_idle_cpu(s));
            if core_idle {
                return c == env.dst;
            }
            if first_idle.is_none() {
                first_idle = Some(c);
            }
        }
        match first_idle {
            Some(c) => c == env.dst,
            None => local.first() == Some(env.dst),
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
        let d = &self.domains.cpus[cpu as usize].domains[level];
        let span = d.span;
        let name_idx = level;
        let mut env = LbEnv {
            dst: cpu,
            level,
            idle,
            cpus: span,
            imbalance: 0,
            mt: MigrationType::Load,
            src: cpu,
            loop_max: 0,
            all_pinned: true,
        };
        self.counters.lb_count(name_idx, &d.name);
        if !self.should_we_balance(&env) {
            return (0, false);
        }
        let mut moved = 0;
        // Each round removes a fully pinned source CPU: bounded by the span.
        loop {
            let Some(gspan) = self.find_src_group(&mut env) else {
                self.balanced(cpu, level, idle, false);
                return (0, true);
            };
            let Some(src) = self.find_src_rq(&env, &gspan) else {
                self.balanced(cpu, level, idle, false);
                return (0, true);
            };
            env.src = src;
            env.all_pinned = true;
            if self.rqs[src as usize].nr_running() > 1 {
                env.loop_max = NR_MIGRATE.min(self.rqs[src as usize].nr_running());
                moved += self.detach_attach(&mut env);
                if env.all_pinned && moved == 0 {
                    env.cpus.clear(src);
                    let local = self.domains.cpus[cpu as usize].domains[level].groups[0].span;
                    if !env.cpus.is_subset(&local) {
                        continue;
                    }
                    self.balanced(cpu, level, idle, true);
                    return (0, true);
                }
            }
            break;
        }
        let st_tries = self.domains.cpus[cpu as usize].domains[level].cache_nice_tries;
        if moved == 0 {
            if idle != IdleType::NewlyIdle {
                self.sd[cpu as usize][level].nr_balance_failed += 1;
            }
            let failed = self.sd[cpu as usize][level].nr_balance_failed;
            // need_active_balance(): after enough failures, push the running task.
            let need_active = (env.mt == MigrationType::Task && failed > st_tries + 2)
                || env.mt == MigrationType::Misfit;
            if need_active && idle != IdleType::NewlyIdle {
                let src = env.src;
                if let Some(cur) = self.rqs[src as usize].curr {
                    if self.tasks[cur as usize].affinity.test(cpu)
                        && !self.rqs[src as usize].active_balance
                    {
                        self.rqs[src as usize].active_balance = true;
                        self.q
                            .push(self.now, EventKind::ActiveBalance { src, dst: cpu });
                        self.sd[cpu as usize][level].nr_balance_failed = st_tries + 1;
                    }
                }
            }
        } else {
            self.sd[cpu as usize][level].nr_balance_failed = 0;
            self.counters.lb_moved(name_idx, moved as u64);
        }
        let min = self.domains.cpus[cpu as usize].domains[level]
            .min_interval_ms
            .max(1);
        self.sd[cpu as usize][level].balance_interval_ms = min;
        (moved, true)
    }

    /// out_balanced / out_one_pinned bookkeeping: back off the interval.
    fn balanced(&mut self, cpu: CpuId, level: usize, idle: IdleType, all_pinned: bool) {
        let d = &self.domains.cpus[cpu as usize].domains[level];
        let max = d.max_interval_ms.max(1);
        let st = &mut self.sd[cpu as usize][level];
        if !all_pinned {
            st.nr_balance_failed = 0;
        }
        if idle == IdleType::NewlyIdle
            || (all_pinned && st.balance_interval_ms < 512)
            || st.balance_interval_ms < max
        {
            st.balance_interval_ms =
                (st.balance_interval_ms * 2).min(max.max(if all_pinned { 512 } else { 0 }));
        }
    }

    /// Can `t` move from env.src to env.dst (mirrors can_migrate_task())?
    fn can_migrate_task(&self, env: &mut LbEnv, t: TaskId) -> bool {
        let tk = &self.tasks[t as usize];
        if tk.se.sched_delayed && env.mt != MigrationType::Load {
            return false;
        }
        if tk.kthread {
            return false;
        }
        if !tk.affinity.test(env.dst) {
            return false;
        }
        env.all_pinned = false;
        if self.rqs[env.src as usize].curr == Some(t) {
            return false;
        }
        let failed = self.sd[env.dst as usize][env.level].nr_balance_failed;
        let tries = self.domains.cpus[env.dst as usize].domains[env.level].cache_nice_tries;
        if !self.task_hot(env, t) || failed > tries {
            return true;
        }
        false
    }

    /// Did `t` run on its CPU so recently that moving it loses a warm cache
    /// (mirrors task_hot())?
    fn task_hot(&self, env: &LbEnv, t: TaskId) -> bool {
        let d = &self.domains.cpus[env.dst as usize].domains[env.level];
        if d.flags.contains(SdFlags::SHARE_CPUCAPACITY) {
            return false;
        }
        let delta = self
            .now
            .saturating_sub(self.tasks[t as usize].se.exec_start);
        delta < MIGRATION_COST_NS
    }

    /// Detaches tasks from the source runqueue's tail and attaches them to the
    /// destination until the imbalance is met (mirrors detach_tasks() and
    /// attach_tasks()).
    fn detach_attach(&mut self, env: &mut LbEnv) -> u32 {
        let src = env.src;
        let dst = env.dst;
        self.update_rq_clock(src);
        self.update_rq_clock(dst);
        let candidates: Vec<TaskId> = self.rqs[src as usize]
            .cfs
            .queue
            .iter()
            .rev()
            .copied()
            .collect();
        let mut moved = 0;
        for (i, t) in candidates.into_iter().enumerate() {
            if i as u32 >= env.loop_max || env.imbalance == 0 {
                break;
            }
            if self.rqs[src as usize].nr_running() <= 1 {
                break;
            }
            if !self.can_migrate_task(env, t) {
                continue;
            }
            let tk = &self.tasks[t as usize];
            match env.mt {
                MigrationType::Load => {
                    let load = tk.avg.load_avg.max(1);
                    let failed = self.sd[dst as usize][env.level].nr_balance_failed;
                    if (load >> failed.min(63)) > env.imbalance {
                        continue;
                    }
                    env.imbalance = env.imbalance.saturating_sub(load);
                }
                MigrationType::Util => {
                    let u = tk.util_est();
                    if u > env.imbalance {
                        continue;
                    }
                    env.imbalance -= u;
                }
                MigrationType::Task | MigrationType::Misfit => env.imbalance -= 1,
            }
            self.move_queued_task(t, src, dst);
            moved += 1;
            if env.idle == IdleType::NewlyIdle {
                break;
            }
        }
        if moved > 0 && self.rqs[dst as usize].curr.is_none() {
            self.resched_cpu(dst, dst);
        } else if moved > 0 {
            let first = self.rqs[dst as usize].cfs.queue.first().copied();
            if let Some(f) = first {
                self.wakeup_preempt(dst, f, dst);
            }
        }
        moved
    }

    /// Moves a queued (not running) task between runqueues.
    pub(crate) fn move_queued_task(&mut self, t: TaskId, src: CpuId, dst: CpuId) {
        let delayed = self.tasks[t as usize].se.sched_delayed;
        self.dequeue_task(src, t, false);
        self.detach_entity_load(src, t);
        self.tasks[t as usize].cpu = dst;
        self.tasks[t as usize].stats.migrations += 1;
        self.counters.migrations += 1;
        self.attach_entity_load(dst, t);
        if delayed {
            // A delayed task that was moved for load stays asleep.
            self.tasks[t as usize].state = TaskState::Blocked;
            return;
        }
        self.enqueue_task(dst, t, EnqueueKind::Migrated);
    }

    /// The stopper pushes the running task of `src` to `dst` (mirrors
    /// active_load_balance_cpu_stop()).
    pub(crate) fn active_balance_stop(&mut self, src: CpuId, dst: CpuId) {
        self.rqs[src as usize].active_balance = false;
        let Some(t) = self.rqs[src as usize].curr else {
            return;
        };
        if !self.tasks[t as usize].affinity.test(dst) || !self.is_idle_cpu(dst) {
            return;
        }
        // The stopper preempts the task; then it is moved while queued.
        self.update_rq_clock(src);
        self.update_curr(src);
        self.stop_running(t);
        self.put_prev_entity(src, t);
        self.rqs[src as usize].curr = None;
        let tk = &mut self.tasks[t as usize];
        tk.state = TaskState::Runnable;
        tk.stats.wait_start_ns = self.now;
        self.counters.active_balance += 1;
        self.move_queued_task(t, src, dst);
        // src picks its next task (it may go idle); dst starts the moved one.
        self.pick_and_switch(src, Some(t));
        self.resched_cpu(dst, src);
    }
}

/// Is `s` busier than the current busiest `b` (mirrors update_sd_pick_busiest()
/// for the group types modelled)?
fn pick_busiest(s: &GroupStats, b: &GroupStats, b_flags: SdFlags) -> bool {
    if s.group_type != b.group_type {
        return s.group_type > b.group_type;
    }
    match s.group_type {
        GroupType::Overloaded => s.avg_load > b.avg_load,
        GroupType::Imbalanced => false,
        GroupType::MisfitTask => s.misfit_task_load > b.misfit_task_load,
        GroupType::FullyBusy | GroupType::SmtBalance => {
            if s.avg_load < b.avg_load {
                return false;
            }
            if s.avg_load == b.avg_load && b_flags.contains(SdFlags::SHARE_CPUCAPACITY) {
                return false;
            }
            true
        }
        GroupType::HasSpare => {
            if s.idle_cpus > b.idle_cpus {
                return false;
            }
            if s.idle_cpus == b.idle_cpus && s.sum_nr_running <= b.sum_nr_running {
                return false;
            }
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
