//! Task placement on wakeup and fork (kernel/sched/fair.c):
//! select_task_rq_fair(), wake_wide(), wake_affine(), the fork/exec slow path
//! (sched_balance_find_dst_group/cpu) and select_idle_sibling() with its scans.

use crate::event::TaskId;
use crate::fair::balance::{classify, GroupStats, GroupType};
use crate::features::Feat;
use crate::sim::{Sim, WF_EXEC, WF_FORK, WF_SYNC, WF_TTWU};
use schedlab_topo::{CpuId, CpuMask, SdFlags};

/// NUMA_IMBALANCE_MIN: small NUMA imbalances are allowed.
pub const NUMA_IMBALANCE_MIN: u32 = 2;

impl Sim {
    /// Chooses the CPU for a waking or new task (mirrors select_task_rq_fair()).
    pub(crate) fn select_task_rq_fair(
        &mut self,
        t: TaskId,
        prev: CpuId,
        this_cpu: CpuId,
        waker: Option<TaskId>,
        wake_flags: u32,
    ) -> CpuId {
        if let Some(cpu) = self.hmp_select_task_rq(t, prev, wake_flags & WF_FORK != 0) {
            return cpu;
        }
        let sync = wake_flags & WF_SYNC != 0;
        let sd_flag = if wake_flags & WF_FORK != 0 {
            SdFlags::BALANCE_FORK
        } else if wake_flags & WF_EXEC != 0 {
            SdFlags::BALANCE_EXEC
        } else {
            SdFlags::BALANCE_WAKE
        };
        let affinity = self.tasks[t as usize].affinity;
        let mut want_affine = false;
        if wake_flags & WF_TTWU != 0 {
            want_affine = !self.wake_wide(t, waker) && affinity.test(this_cpu);
        }
        let mut new_cpu = prev;
        // S2: both LLCs full, no idle CPU to search for (wake_llc.rs).
        let mut skip_search = false;
        let mut slow_sd: Option<usize> = None;
        let n_dom = self.domains.cpus[this_cpu as usize].domains.len();
        for i in 0..n_dom {
            // Under an HMP scheme the cluster-spanning levels do not balance
            // (3.10 skips domains without SD_LOAD_BALANCE here).
            if self.hmp_skip_level(this_cpu, i) {
                continue;
            }
            let d = &self.domains.cpus[this_cpu as usize].domains[i];
            if want_affine && d.flags.contains(SdFlags::WAKE_AFFINE) && d.span.test(prev) {
                if this_cpu != prev {
                    if self.feat(Feat::WA_IDLER_LLC) {
                        (new_cpu, skip_search) = self.wake_affine_llc(i, t, this_cpu, prev, sync);
                    } else {
                        new_cpu = self.wake_affine(i, t, this_cpu, prev, sync);
                    }
                }
                slow_sd = None;
                break;
            }
            if d.flags.contains(sd_flag) {
                slow_sd = Some(i);
            } else if !want_affine {
                break;
            }
        }
        let cpu = if let Some(level) = slow_sd {
            self.counters.wake_slow_path += 1;
            self.find_dst_cpu(this_cpu, level, t, prev, sd_flag)
        } else if wake_flags & WF_TTWU != 0 {
            if new_cpu != prev {
                self.counters.wakeups_affine += 1;
            }
            self.select_idle_sibling_scan(t, prev, new_cpu, this_cpu, waker, !skip_search)
        } else {
            new_cpu
        };
        let cpu = self.linaro_keep_cluster(prev, cpu);
        if affinity.test(cpu) {
            cpu
        } else {
            // select_fallback_rq(): any allowed CPU.
            affinity.first().unwrap_or(prev)
        }
    }

    /// Does the waker switch wakees so often that wakeups should spread
    /// (mirrors wake_wide())?
    fn wake_wide(&self, t: TaskId, waker: Option<TaskId>) -> bool {
        let Some(w) = waker else {
            return false;
        };
        let master = self.tasks[w as usize].wakee_flips;
        let slave = self.tasks[t as usize].wakee_flips;
        let factor = self.domains.cpus[self.tasks[w as usize].cpu as usize]
            .llc_size
            .max(1);
        let (master, slave) = if master < slave {
            (slave, master)
        } else {
            (master, slave)
        };
        !(slave < factor || master < slave * factor)
    }

    /// Waker's CPU or the previous one (mirrors wake_affine(): WA_IDLE, then WA_WEIGHT).
    fn wake_affine(
        &mut self,
        level: usize,
        t: TaskId,
        this_cpu: CpuId,
        prev: CpuId,
        sync: bool,
    ) -> CpuId {
        let mut target = None;
        if self.feat(Feat::WA_IDLE) {
            target = self.wake_affine_idle(this_cpu, prev, sync);
        }
        if target.is_none() && self.feat(Feat::WA_WEIGHT) {
            let pct = self.domains.cpus[this_cpu as usize].domains[level].imbalance_pct;
            target = self.wake_affine_weight(t, this_cpu, prev, sync, pct);
        }
        match target {
            Some(c) if c == this_cpu => {
                self.counters.wake_affine_this += 1;
                this_cpu
            }
            _ => prev,
        }
    }

    /// mirrors wake_affine_idle().
    fn wake_affine_idle(&self, this_cpu: CpuId, prev: CpuId, sync: bool) -> Option<CpuId> {
        if self.is_idle_cpu(this_cpu) && self.cpus_share_cache(this_cpu, prev) {
            return Some(if self.is_idle_cpu(prev) {
                prev
            } else {
                this_cpu
            });
        }
        if sync && self.rqs[this_cpu as usize].cfs.nr_runnable() == 1 {
            return Some(this_cpu);
        }
        if self.is_idle_cpu(prev) {
            return Some(prev);
        }
        None
    }

    /// mirrors wake_affine_weight(); `imbalance_pct` is the affine domain's.
    pub(crate) fn wake_affine_weight(
        &self,
        t: TaskId,
        this_cpu: CpuId,
        prev: CpuId,
        sync: bool,
        imbalance_pct: u32,
    ) -> Option<CpuId> {
        let task_load = self.task_h_load(t) as i128;
        let mut this_eff_load = self.cpu_load(this_cpu) as i128;
        if sync {
            if let Some(cur) = self.rqs[this_cpu as usize].curr {
                let current_load = self.task_h_load(cur) as i128;
                if current_load > this_eff_load {
                    return Some(this_cpu);
                }
                this_eff_load -= current_load;
            }
        }
        if this_eff_load > 0 {
            this_eff_load += task_load;
        } else {
            this_eff_load = task_load;
        }
        let pct = imbalance_pct as i128;
        if self.feat(Feat::WA_BIAS) {
            this_eff_load *= 100;
        }
        this_eff_load *= self.capacity_of(prev) as i128;
        let mut prev_eff_load = self.cpu_load(prev) as i128 - task_load;
        if self.feat(Feat::WA_BIAS) {
            prev_eff_load *= 100 + (pct - 100) / 2;
        }
        prev_eff_load *= self.capacity_of(this_cpu) as i128;
        if sync {
            prev_eff_load += 1;
        }
        if this_eff_load < prev_eff_load {
            Some(this_cpu)
        } else {
            None
        }
    }

    pub(crate) fn cpus_share_cache(&self, a: CpuId, b: CpuId) -> bool {
        a == b || self.domains.cpus[a as usize].llc_id == self.domains.cpus[b as usize].llc_id
    }

    /// `cpus_share_resources()`: same cluster (or same LLC without clusters).
    fn cpus_share_resources(&self, a: CpuId, b: CpuId) -> bool {
        a == b || self.domains.cpus[a as usize].share_id == self.domains.cpus[b as usize].share_id
    }

    /// mirrors test_idle_cores(): the idle-core hint of `cpu`'s
    /// `sd_balance_shared` (its asym-capacity domain's state when that has
    /// its own, else its LLC's).
    /// With S2's idle-core identity (IDLE_CORE_ID), the recorded idle core
    /// replaces the flag: "has an idle core" is "an idle core is recorded".
    pub(crate) fn test_idle_cores(&self, cpu: CpuId) -> bool {
        if self.feat(Feat::IDLE_CORE_ID) && self.asym_shared_of[cpu as usize].is_none() {
            let l = self.domains.cpus[cpu as usize].llc_id as usize;
            return self.llc[l].idle_core.is_some();
        }
        match self.asym_shared_of[cpu as usize] {
            Some(a) => self.asym_shared[a as usize].has_idle_cores,
            None => self.llc[self.domains.cpus[cpu as usize].llc_id as usize].has_idle_cores,
        }
    }

    /// mirrors set_idle_cores() on `cpu`'s `sd_balance_shared`.
    pub(crate) fn set_idle_cores(&mut self, cpu: CpuId, val: bool) {
        match self.asym_shared_of[cpu as usize] {
            Some(a) => self.asym_shared[a as usize].has_idle_cores = val,
            None => {
                let l = self.domains.cpus[cpu as usize].llc_id as usize;
                self.llc[l].has_idle_cores = val;
            }
        }
    }

    /// SIS_UTIL's scan depth from the shared state of domain `level` of
    /// `cpu` (`sd->shared->nr_idle_scan`), `None` when that domain has none
    /// (a NUMA-built asym-capacity domain).
    pub(crate) fn nr_idle_scan_of(&self, cpu: CpuId, level: usize) -> Option<u32> {
        let cd = &self.domains.cpus[cpu as usize];
        if cd.sd_llc == Some(level) {
            return Some(self.llc[cd.llc_id as usize].nr_idle_scan);
        }
        let a = &self.asym_shared[self.asym_shared_of[cpu as usize]? as usize];
        (a.level == level).then_some(a.nr_idle_scan)
    }

    pub(crate) fn idle_or_sched_idle(&self, cpu: CpuId) -> bool {
        self.is_idle_cpu(cpu) || self.sched_idle_cpu(cpu)
    }

    /// mirrors choose_sched_idle_rq(): `cpu` runs only SCHED_IDLE tasks and
    /// `t` is not one (a SCHED_IDLE task would only share the CPU).
    fn choose_sched_idle_rq(&self, cpu: CpuId, t: TaskId) -> bool {
        self.sched_idle_cpu(cpu) && !self.tasks[t as usize].idle_policy
    }

    /// mirrors choose_idle_cpu(): `cpu` is idle, or runs only SCHED_IDLE
    /// tasks and `t` is not one.
    pub(crate) fn choose_idle_cpu(&self, cpu: CpuId, t: TaskId) -> bool {
        self.is_idle_cpu(cpu) || self.choose_sched_idle_rq(cpu, t)
    }

    /// Finds an idle CPU near `target` (mirrors select_idle_sibling()).
    #[cfg(test)]
    pub(crate) fn select_idle_sibling(
        &mut self,
        t: TaskId,
        prev: CpuId,
        target: CpuId,
        this_cpu: CpuId,
        waker: Option<TaskId>,
    ) -> CpuId {
        self.select_idle_sibling_scan(t, prev, target, this_cpu, waker, true)
    }

    /// select_idle_sibling() with S2's `idle` argument ("sched/fair: Dont
    /// iterate if no idle CPUs"): when wake_affine_idler_llc() found both
    /// LLCs full, `scan` is false and the function returns `target` where
    /// it would look up the LLC domain, after its target, prev, kthread,
    /// recent_used_cpu and asymmetric-capacity checks.
    pub(crate) fn select_idle_sibling_scan(
        &mut self,
        t: TaskId,
        prev: CpuId,
        target: CpuId,
        this_cpu: CpuId,
        waker: Option<TaskId>,
        scan: bool,
    ) -> CpuId {
        // sched_cluster_active(), with the cluster-aware wakeup (CLUSTER_SCAN).
        let cluster_active = self.domains.cluster_active && self.feat(Feat::CLUSTER_SCAN);
        let util = self.tasks[t as usize].util_est();
        if self.choose_idle_cpu(target, t) && self.asym_fits_cpu(t, util, target) {
            self.counters.sis_target += 1;
            return target;
        }
        let mut prev_aff: Option<CpuId> = None;
        if prev != target
            && self.cpus_share_cache(prev, target)
            && self.choose_idle_cpu(prev, t)
            && self.asym_fits_cpu(t, util, prev)
        {
            if !cluster_active || self.cpus_share_resources(prev, target) {
                self.counters.sis_prev += 1;
                return prev;
            }
            prev_aff = Some(prev);
        }
        // A per-CPU kthread waking its partner on its own CPU: stack them.
        if let Some(w) = waker {
            if self.tasks[w as usize].kthread
                && prev == this_cpu
                && self.rqs[this_cpu as usize].nr_running() <= 1
                && self.asym_fits_cpu(t, util, prev)
            {
                return prev;
            }
        }
        let recent = self.tasks[t as usize].recent_used_cpu;
        self.tasks[t as usize].recent_used_cpu = prev;
        let mut recent_aff = None;
        if recent != prev
            && recent != target
            && self.cpus_share_cache(recent, target)
            && self.choose_idle_cpu(recent, t)
            && self.tasks[t as usize].affinity.test(recent)
            && self.asym_fits_cpu(t, util, recent)
        {
            if !cluster_active || self.cpus_share_resources(recent, target) {
                self.counters.sis_recent += 1;
                return recent;
            }
            recent_aff = Some(recent);
        }
        // Asymmetric capacities: look for an idle CPU that fits the task.
        if self.sis_asym_cpucap() {
            if let Some(l) = self.domains.cpus[target as usize].sd_asym_cpucapacity {
                let i = self.select_idle_capacity(t, l, target);
                self.counters.sis_scan_found += i.is_some() as u64;
                return i.unwrap_or(target);
            }
        }
        if !scan {
            return target;
        }
        let Some(llc_idx) = self.domains.cpus[target as usize].sd_llc else {
            return target;
        };
        // sched_smt_active() is machine-wide: an E-core target on a hybrid
        // machine still scans for idle cores.
        let mut has_idle_core = false;
        if self.smt_active {
            has_idle_core = self.test_idle_cores(target);
            if !has_idle_core && self.cpus_share_cache(prev, target) {
                if let Some(i) = self.select_idle_smt(t, prev) {
                    self.counters.sis_smt += 1;
                    return i;
                }
            }
        }
        if let Some(i) = self.select_idle_cpu(t, target, llc_idx, has_idle_core) {
            self.counters.sis_scan_found += 1;
            return i;
        }
        self.counters.sis_scan_failed += 1;
        prev_aff.or(recent_aff).unwrap_or(target)
    }

    /// Whether select_idle_sibling() takes the asymmetric-capacity search
    /// and fit tests: with asymmetric capacities, except under Linaro MP
    /// (HMP_LINARO). Its stock wakeup path, 3.10's select_idle_sibling(),
    /// looked for an idle CPU in the target's LLC with no capacity test, and
    /// its own up/down rules move tasks between the clusters.
    fn sis_asym_cpucap(&self) -> bool {
        self.asym_cpucap_active() && !self.feat(Feat::HMP_LINARO)
    }

    /// mirrors asym_fits_cpu(): with asymmetric capacities, `cpu` must fit
    /// `util` within task `t`'s clamps and (with SMT) sit on an idle core;
    /// otherwise any CPU fits.
    fn asym_fits_cpu(&self, t: TaskId, util: u64, cpu: CpuId) -> bool {
        if !self.sis_asym_cpucap() {
            return true;
        }
        let tk = &self.tasks[t as usize];
        let (lo, hi) = (u64::from(tk.uclamp_min), u64::from(tk.uclamp_max));
        (!self.smt_active || self.is_core_idle(cpu)) && self.util_fits_cpu(util, lo, hi, cpu) > 0
    }

    /// Scans the asym-capacity domain for an idle CPU that fits the task
    /// (mirrors select_idle_capacity()): the first fitting CPU on an idle core
    /// wins; otherwise the best by (idle core, fits, capacity). SIS_UTIL
    /// limits the scan by the domain's own `nr_idle_scan` (set by its
    /// periodic balance) or, when the domain is the LLC, the LLC's.
    fn select_idle_capacity(&mut self, t: TaskId, level: usize, target: CpuId) -> Option<CpuId> {
        // Ranks, lower is better (enum asym_fits_state): a CPU that fits but
        // whose capacity is below the task's boost is THREAD_UCLAMP_MISFIT
        // (-1), util_fits_cpu()'s own value.
        const THREAD_FITS: i32 = -2;
        const THREAD_MISFIT: i32 = 0;
        const CORE_BIAS: i32 = -3;
        const COMPLETE_MISFIT: i32 = -3;
        let has_idle_core = self.smt_active && self.test_idle_cores(target);
        let d = &self.domains.cpus[target as usize].domains[level];
        let cpus = d.span.and(&self.tasks[t as usize].affinity);
        let util = self.tasks[t as usize].util_est();
        let (lo, hi) = (
            u64::from(self.tasks[t as usize].uclamp_min),
            u64::from(self.tasks[t as usize].uclamp_max),
        );
        let mut nr: i64 = i64::MAX;
        if self.feat(Feat::SIS_UTIL) {
            if let Some(scan) = self.nr_idle_scan_of(target, level) {
                nr = scan as i64 + 1;
                if nr == 1 {
                    return None;
                }
            }
        }
        let (mut best_cpu, mut best_fits, mut best_cap) = (None, THREAD_MISFIT, 0u64);
        let mut scanned = 0;
        for c in cpus.iter_wrap(target) {
            let preferred_core = !has_idle_core || self.is_core_idle(c);
            if !has_idle_core {
                nr -= 1;
                if nr <= 0 {
                    break;
                }
            }
            scanned += 1;
            if !self.choose_idle_cpu(c, t) {
                continue;
            }
            let mut cap = self.capacity_of(c);
            let fits = self.util_fits_cpu(util, lo, hi, c);
            if fits > 0 && preferred_core {
                self.counters.sis_scanned += scanned;
                return Some(c);
            }
            // Only the boost does not fit: rank by the actual capacity
            // (get_actual_cpu_capacity(), no pressure modelled).
            if fits < 0 {
                cap = self.kcap[c as usize];
            }
            let mut rank = match fits {
                1.. => THREAD_FITS,
                0 => THREAD_MISFIT,
                _ => i32::from(fits),
            };
            if preferred_core {
                rank += CORE_BIAS;
            }
            if rank < best_fits || (rank == best_fits && cap > best_cap) {
                best_cap = cap;
                best_cpu = Some(c);
                best_fits = rank;
            }
        }
        self.counters.sis_scanned += scanned;
        if has_idle_core && best_fits > COMPLETE_MISFIT {
            self.set_idle_cores(target, false);
        }
        best_cpu
    }

    /// An idle SMT sibling of `prev` (mirrors select_idle_smt()).
    fn select_idle_smt(&self, t: TaskId, prev: CpuId) -> Option<CpuId> {
        let aff = self.tasks[t as usize].affinity;
        self.smt_siblings(prev)
            .iter()
            .copied()
            .find(|&c| c != prev && aff.test(c) && self.choose_idle_cpu(c, t))
    }

    /// A core whose every SMT thread is idle (mirrors select_idle_core()):
    /// remembers the first idle (or SCHED_IDLE-only) CPU seen in `idle_cpu`,
    /// and removes a busy core's threads from `cpus` so it is checked once.
    fn select_idle_core(
        &self,
        t: TaskId,
        core_cpu: CpuId,
        cpus: &mut CpuMask,
        idle_cpu: &mut Option<CpuId>,
    ) -> Option<CpuId> {
        let mut idle = true;
        for &s in self.smt_siblings(core_cpu) {
            if !self.is_idle_cpu(s) {
                idle = false;
                if idle_cpu.is_none() {
                    if self.choose_sched_idle_rq(s, t) && cpus.test(s) {
                        *idle_cpu = Some(s);
                        break;
                    }
                    continue;
                }
                break;
            }
            if idle_cpu.is_none() && cpus.test(s) {
                *idle_cpu = Some(s);
            }
        }
        if idle {
            return Some(core_cpu);
        }
        *cpus = cpus.and_not(&self.smt_masks[core_cpu as usize]);
        None
    }

    /// Scans the LLC for an idle CPU (mirrors select_idle_cpu()): SIS_UTIL limits
    /// the scan, the target's cluster is scanned first when clusters exist, and
    /// in idle-core mode only whole idle cores count.
    fn select_idle_cpu(
        &mut self,
        t: TaskId,
        target: CpuId,
        llc_idx: usize,
        has_idle_core: bool,
    ) -> Option<CpuId> {
        let dom = &self.domains.cpus[target as usize].domains[llc_idx];
        let mut cpus = dom.span.and(&self.tasks[t as usize].affinity);
        let llc_id = self.domains.cpus[target as usize].llc_id as usize;
        let mut nr: i64 = i64::MAX;
        if self.feat(Feat::SIS_UTIL) {
            nr = self.llc[llc_id].nr_idle_scan as i64 + 1;
            if nr == 1 {
                self.counters.sis_scan_skipped += 1;
                return None;
            }
        }
        let mut idle_cpu: Option<CpuId> = None;
        let start = (target + 1) % self.nr_cpus() as CpuId;
        let mut scanned = 0u64;
        if self.domains.cluster_active && self.feat(Feat::CLUSTER_SCAN) {
            let first = &dom.groups[0];
            if first.flags.contains(SdFlags::CLUSTER) {
                let cl_span = first.span;
                for c in cl_span.iter_wrap(start) {
                    if !cpus.test(c) {
                        continue;
                    }
                    scanned += 1;
                    if has_idle_core {
                        if let Some(i) = self.select_idle_core(t, c, &mut cpus, &mut idle_cpu) {
                            self.counters.sis_scanned += scanned;
                            if self.feat(Feat::IDLE_CORE_ID) {
                                self.idle_core_found(llc_id, i);
                            }
                            return Some(i);
                        }
                    } else {
                        nr -= 1;
                        if nr <= 0 {
                            self.counters.sis_scanned += scanned;
                            return None;
                        }
                        if self.choose_idle_cpu(c, t) {
                            self.counters.sis_scanned += scanned;
                            return Some(c);
                        }
                    }
                }
                cpus = cpus.and_not(&cl_span);
            }
        }
        let mut found = None;
        // The scan follows the live mask: select_idle_core() drops busy cores.
        let order = cpus;
        for c in order.iter_wrap(start) {
            if !cpus.test(c) {
                continue;
            }
            scanned += 1;
            if has_idle_core {
                if let Some(i) = self.select_idle_core(t, c, &mut cpus, &mut idle_cpu) {
                    found = Some(i);
                    if self.feat(Feat::IDLE_CORE_ID) {
                        self.idle_core_found(llc_id, i);
                    }
                    break;
                }
            } else {
                nr -= 1;
                if nr <= 0 {
                    break;
                }
                if self.choose_idle_cpu(c, t) {
                    idle_cpu = Some(c);
                    break;
                }
            }
        }
        self.counters.sis_scanned += scanned;
        if found.is_some() {
            return found;
        }
        if has_idle_core {
            self.set_idle_cores(target, false);
        }
        idle_cpu
    }

    // ----- the fork/exec slow path ---------------------------------------------

    /// Walks down from domain `level` of `cpu` choosing the idlest group and
    /// CPU at each level (mirrors sched_balance_find_dst_cpu()).
    fn find_dst_cpu(
        &mut self,
        cpu: CpuId,
        level: usize,
        t: TaskId,
        prev: CpuId,
        sd_flag: SdFlags,
    ) -> CpuId {
        let aff = self.tasks[t as usize].affinity;
        if !self.domains.cpus[cpu as usize].domains[level]
            .span
            .intersects(&aff)
        {
            return prev;
        }
        let mut cpu = cpu;
        let mut new_cpu = cpu;
        let mut sd: Option<usize> = Some(level);
        // Each step descends or moves to a smaller domain: bounded by the depth.
        while let Some(l) = sd {
            let d = &self.domains.cpus[cpu as usize].domains[l];
            if !d.flags.contains(sd_flag) {
                sd = l.checked_sub(1);
                continue;
            }
            let Some(g) = self.find_dst_group(cpu, l, t) else {
                sd = l.checked_sub(1);
                continue;
            };
            let gspan = self.domains.cpus[cpu as usize].domains[l].groups[g].span;
            new_cpu = self.find_dst_group_cpu(&gspan, t, cpu);
            if new_cpu == cpu {
                sd = l.checked_sub(1);
                continue;
            }
            let weight = self.domains.cpus[cpu as usize].domains[l].span.weight();
            cpu = new_cpu;
            sd = None;
            for (i, d2) in self.domains.cpus[cpu as usize].domains.iter().enumerate() {
                if weight <= d2.span.weight() {
                    break;
                }
                if d2.flags.contains(sd_flag) {
                    sd = Some(i);
                }
            }
        }
        new_cpu
    }

    /// Group statistics as the wakeup path sees them, without `t`'s own
    /// contribution (mirrors update_sg_wakeup_stats()).
    pub(crate) fn sg_wakeup_stats(
        &self,
        span: &CpuMask,
        capacity: u64,
        d_flags: SdFlags,
        sgc: (u8, CpuId),
        pct: u32,
        t: TaskId,
    ) -> GroupStats {
        let aff = self.tasks[t as usize].affinity;
        let asym_cap = d_flags.contains(SdFlags::ASYM_CPUCAPACITY);
        let mut s = GroupStats {
            group_capacity: capacity,
            group_weight: span.weight(),
            max_capacity: span.iter().map(|c| self.capacity_of(c)).max().unwrap_or(0),
            // With asymmetric capacities the group is "misfit" for the task
            // unless one of its CPUs fits it.
            misfit_task_load: asym_cap as u64,
            imbalanced: self.sg_imbalanced(sgc),
            ..Default::default()
        };
        for c in span.and(&aff).iter() {
            s.group_load += self.cpu_load_without(c, t);
            s.group_util += self.cpu_util_without(c, t);
            s.group_runnable += self.cpu_runnable_without(c, t);
            // h_nr_runnable and nr_running (which counts delayed-dequeue
            // tasks) without the task itself.
            let tk = &self.tasks[t as usize];
            let local = u32::from(tk.cpu == c && tk.se.on_rq);
            let rq = &self.rqs[c as usize];
            s.sum_h_nr_running += rq.cfs.nr_runnable().saturating_sub(local);
            let nr = rq.nr_running().saturating_sub(local);
            s.sum_nr_running += nr;
            // idle_cpu_without(): idle but for the task itself (an exec
            // balance's task runs on its CPU).
            let curr = self.rqs[c as usize].curr;
            if nr == 0 && (curr.is_none() || curr == Some(t)) && rq.ttwu_pending == 0 {
                s.idle_cpus += 1;
            }
            if asym_cap && s.misfit_task_load > 0 && self.task_fits_cpu(t, c) {
                s.misfit_task_load = 0;
            }
        }
        s.group_type = classify(pct, &s);
        if matches!(s.group_type, GroupType::FullyBusy | GroupType::Overloaded) {
            s.avg_load = s.group_load * 1024 / s.group_capacity.max(1);
        }
        s
    }

    /// The idlest group of domain `level` of `this_cpu`, or `None` to stay local
    /// (mirrors sched_balance_find_dst_group() with update_pick_idlest()).
    fn find_dst_group(&self, this_cpu: CpuId, level: usize, t: TaskId) -> Option<usize> {
        let d = &self.domains.cpus[this_cpu as usize].domains[level];
        let aff = self.tasks[t as usize].affinity;
        let mut idlest: Option<(usize, GroupStats)> = None;
        let mut local: Option<GroupStats> = None;
        for (gi, g) in d.groups.iter().enumerate() {
            if !g.span.intersects(&aff) {
                continue;
            }
            // `sgc->capacity`: less RT time once RT tasks exist (as the
            // balancer's group capacity, balance.rs).
            let capacity = if self.rt_dl_in_use {
                self.group_capacity_now(&g.span).0
            } else {
                g.capacity as u64
            };
            let s = self.sg_wakeup_stats(
                &g.span,
                capacity,
                d.flags,
                (g.sgc_level, g.sgc_cpu),
                d.imbalance_pct,
                t,
            );
            if g.span.test(this_cpu) {
                local = Some(s);
                continue;
            }
            let better = match &idlest {
                None => true,
                Some((_, is)) => pick_idlest(is, &s),
            };
            if better {
                idlest = Some((gi, s));
            }
        }
        let (gi, is) = idlest?;
        let Some(ls) = local else {
            return Some(gi);
        };
        if ls.group_type < is.group_type {
            return None;
        }
        if ls.group_type > is.group_type {
            return Some(gi);
        }
        match ls.group_type {
            GroupType::Overloaded | GroupType::FullyBusy => {
                let imbalance = 1024 * (d.imbalance_pct as u64 - 100) / 100;
                // Across nodes, the remote side carries the imbalance margin.
                if d.flags.contains(SdFlags::NUMA) && is.avg_load + imbalance >= ls.avg_load {
                    return None;
                }
                if is.avg_load >= ls.avg_load + imbalance {
                    return None;
                }
                if 100 * ls.avg_load <= d.imbalance_pct as u64 * is.avg_load {
                    return None;
                }
            }
            GroupType::HasSpare => {
                if d.flags.contains(SdFlags::NUMA) {
                    // Allow a small imbalance while the local node is lightly used
                    // (adjust_numa_imbalance()); a task restricted to fewer CPUs
                    // allows only as many as it may use locally.
                    // (p->nr_cpus_allowed is never NR_CPUS in practice, so
                    // the allowance is always capped by the usable local CPUs.)
                    let local_span = d
                        .groups
                        .iter()
                        .find(|g| g.span.test(this_cpu))
                        .map(|g| g.span);
                    let w = local_span.map(|sp| sp.and(&aff).weight()).unwrap_or(0);
                    let imb_numa_nr = d.imb_numa_nr.min(w);
                    let imb = is.idle_cpus.abs_diff(ls.idle_cpus);
                    if ls.sum_nr_running < imb_numa_nr && imb <= NUMA_IMBALANCE_MIN {
                        return None;
                    }
                }
                if ls.idle_cpus >= is.idle_cpus {
                    return None;
                }
            }
            GroupType::MisfitTask => {
                if ls.max_capacity >= is.max_capacity {
                    return None;
                }
            }
            _ => return None,
        }
        Some(gi)
    }

    /// The idlest CPU of a group: an idle one in the shallowest idle state
    /// (the least exit latency, in whole µs as the kernel's table has it),
    /// of those the one that went idle most recently, else the least loaded
    /// (mirrors sched_balance_find_dst_group_cpu()).
    pub(crate) fn find_dst_group_cpu(&self, span: &CpuMask, t: TaskId, this_cpu: CpuId) -> CpuId {
        if span.weight() == 1 {
            return span.first().unwrap_or(this_cpu);
        }
        let aff = self.tasks[t as usize].affinity;
        let mut shallowest: Option<CpuId> = None;
        let mut min_depth = u64::MAX;
        let mut latest_idle = 0u64;
        let mut least: Option<CpuId> = None;
        let mut min_load = u64::MAX;
        for c in span.and(&aff).iter() {
            if self.choose_sched_idle_rq(c, t) {
                return c;
            }
            if self.is_idle_cpu(c) {
                let stamp = self.rqs[c as usize].idle_stamp;
                let depth = self.idle_exit_ns(c) / 1000;
                if depth < min_depth || (depth == min_depth && stamp > latest_idle) {
                    min_depth = depth;
                    latest_idle = stamp;
                    shallowest = Some(c);
                }
            } else if shallowest.is_none() {
                let l = self.cpu_load(c);
                if l < min_load {
                    min_load = l;
                    least = Some(c);
                }
            }
        }
        shallowest.or(least).unwrap_or(this_cpu)
    }
}

/// Is `s` a better idlest group than `best` (mirrors update_pick_idlest())?
fn pick_idlest(best: &GroupStats, s: &GroupStats) -> bool {
    if s.group_type < best.group_type {
        return true;
    }
    if s.group_type > best.group_type {
        return false;
    }
    match s.group_type {
        GroupType::Overloaded | GroupType::FullyBusy => s.avg_load < best.avg_load,
        GroupType::MisfitTask => best.max_capacity < s.max_capacity,
        GroupType::HasSpare => {
            if best.idle_cpus > s.idle_cpus {
                return false;
            }
            !(best.idle_cpus == s.idle_cpus && best.group_util <= s.group_util)
        }
        _ => false,
    }
}
