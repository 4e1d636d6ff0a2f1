//! Patch set S2 (Srikar Dronamraju, "sched/fair: wake_affine improvements",
//! LKML 2021-04-22, unmerged): wakeups that prefer an idle CPU of another
//! LLC to cache affinity, for machines whose LLC is small (POWER10: one
//! 4-thread small core).
//!
//! Pieces, each switched by a feature (on in the `patchset` configuration):
//! - IDLE_CORE_ID ("Maintain the identity of idle-core", "Update idle-core
//!   more often"): each LLC keeps the identity of one idle core
//!   (`sds->idle_core`, the core's first thread), which replaces
//!   `has_idle_cores`. A CPU entering idle records its own core if it is
//!   wholly idle, else the first wholly idle core of the LLC, unless a core
//!   is already recorded (the first record stays). It is cleared when a
//!   thread of that core runs a task or when a wakeup's idle-core search
//!   takes it; a search that finds no idle core leaves it.
//! - NR_BUSY_ON_IDLE: `nr_busy_cpus` changes at every idle entry and exit
//!   (the series' "Move busy_cpu accounting to idle callback"), so the busy
//!   ratios below are current; without it the kernel counts a CPU busy
//!   from its first busy tick until its tick stops (sim.rs).
//! - WA_IDLER_LLC: wake_affine() rework: within one LLC only WA_IDLE (prev
//!   idle, then waker idle); across LLCs wake_affine_idler_llc() compares
//!   idle CPUs, idle cores, then busy ratios of the two LLCs; when both are
//!   full, WA_WEIGHT decides and the idle search is skipped; the sync
//!   "waker runs alone" stacking moved from WA_IDLE to WA_WEIGHT;
//!   wake_affine() is not called when it cannot change the outcome.
//! - FALLBACK_LLC: under a parent domain flagged SD_FALLBACK_LLC each LLC is
//!   paired with one sibling LLC; a sync wakeup whose prev CPU lies outside
//!   that parent may use the fallback LLC's idle core, and the fallback LLC
//!   replaces the waker's side when it is less busy.

use crate::event::TaskId;
use crate::features::Feat;
use crate::sim::{LlcShared, Sim};
use schedlab_topo::{CpuId, Domains, SdFlags};

/// What wake_affine_idler_llc() decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IdlerLlc {
    /// Wake on (or search from) this CPU.
    Cpu(CpuId),
    /// Equal busy ratios: no preference, WA_WEIGHT decides.
    NoPreference,
    /// Both LLCs are fully busy: WA_WEIGHT decides, skip the idle search.
    BothFull,
}

/// Pairs every LLC with a fallback LLC (mirrors the S2 patch "sched/topology:
/// Introduce fallback LLC" in update_top_cache_domain()): for each CPU in
/// order whose LLC is unpaired and whose LLC's parent domain carries
/// SD_FALLBACK_LLC, the first CPU of that parent's span (in CPU order) lying
/// in another unpaired LLC names the partner; the pairing is mutual.
pub(crate) fn pair_fallback_llcs(domains: &Domains, llc: &mut [LlcShared]) {
    for cd in &domains.cpus {
        let me = cd.llc_id as usize;
        if llc[me].fallback_llc.is_some() {
            continue;
        }
        let Some(parent) = fallback_parent(domains, cd.cpu) else {
            continue;
        };
        let span = domains.cpus[cd.cpu as usize].domains[parent].span;
        for c in span.iter() {
            let other = domains.cpus[c as usize].llc_id as usize;
            if other != me && llc[other].fallback_llc.is_none() {
                llc[me].fallback_llc = Some(other as u32);
                llc[other].fallback_llc = Some(me as u32);
                break;
            }
        }
    }
}

/// Index of the domain right above `cpu`'s LLC domain if it has
/// SD_FALLBACK_LLC (the patch tests `sd_llc->parent->flags`).
fn fallback_parent(domains: &Domains, cpu: CpuId) -> Option<usize> {
    let cd = &domains.cpus[cpu as usize];
    let p = cd.sd_llc? + 1;
    cd.domains
        .get(p)
        .filter(|d| d.flags.contains(SdFlags::FALLBACK_LLC))
        .map(|_| p)
}

impl Sim {
    /// Records `cpu`'s core as its LLC's idle core, by the core's first
    /// thread (the patch's `set_idle_core(cpu, per_cpu(smt_id, cpu))`).
    pub(crate) fn set_idle_core(&mut self, cpu: CpuId) {
        let l = self.domains.cpus[cpu as usize].llc_id as usize;
        let first = self.smt_masks[cpu as usize].first().unwrap_or(cpu);
        self.llc[l].idle_core = Some(first);
    }

    /// `cpu` went idle (mirrors the patch's __update_idle_core() with
    /// set_next_idle_core(), "sched/fair: Maintain the identity of idle-core"
    /// and "Update idle-core more often"): unless its LLC already has an idle
    /// core recorded (the first one stays), record `cpu`'s core if it is
    /// wholly idle, else the first wholly idle core of the LLC from `cpu`
    /// on.
    pub(crate) fn update_idle_core_id(&mut self, cpu: CpuId) {
        let l = self.domains.cpus[cpu as usize].llc_id as usize;
        if self.llc[l].idle_core.is_some() {
            return;
        }
        // (The patch skips `cpu` itself, which is entering idle.)
        if self.is_core_idle(cpu) {
            self.set_idle_core(cpu);
            self.counters.s2.idle_core_set_idle += 1;
            return;
        }
        let Some(li) = self.domains.cpus[cpu as usize].sd_llc else {
            return;
        };
        let span = self.domains.cpus[cpu as usize].domains[li].span;
        let mut cpus = span.and_not(&self.smt_masks[cpu as usize]);
        for c in span.iter_wrap(cpu) {
            if !cpus.test(c) {
                continue;
            }
            if self.smt_siblings(c).iter().all(|&s| self.is_idle_cpu(s)) {
                self.set_idle_core(c);
                self.counters.s2.idle_core_set_search += 1;
                return;
            }
            cpus = cpus.and_not(&self.smt_masks[c as usize]);
        }
    }

    /// `cpu` starts running a task: if the LLC's idle core is `cpu`'s core,
    /// forget it (mirrors the patch's check in the idle-exit path).
    pub(crate) fn idle_core_busy(&mut self, cpu: CpuId) {
        let l = self.domains.cpus[cpu as usize].llc_id as usize;
        if let Some(c) = self.llc[l].idle_core {
            if self.smt_masks[cpu as usize].test(c) {
                self.llc[l].idle_core = None;
                self.counters.s2.idle_core_cleared_busy += 1;
            }
        }
    }

    /// select_idle_cpu() found the idle core of `core_cpu` in LLC `llc_id`:
    /// if it is the recorded one, the wakee takes it and the record is
    /// cleared (the patch's `set_idle_core(i, -1)` when `smt_id` matches). A
    /// search that finds none leaves the record as it is: the patch drops
    /// mainline's clearing of has_idle_cores after a failed search.
    pub(crate) fn idle_core_found(&mut self, llc_id: usize, core_cpu: CpuId) {
        if let Some(c) = self.llc[llc_id].idle_core {
            if self.smt_masks[core_cpu as usize].test(c) {
                self.llc[llc_id].idle_core = None;
                self.counters.s2.idle_core_cleared_search += 1;
            }
        }
    }

    /// The LLC's idle core as a wakeup target for `t`: the idle core if `t`
    /// may run there, else `fallback` (the patch returns this_cpu/prev_cpu
    /// when the idle core is outside the task's affinity).
    fn llc_idle_core_for(&self, t: TaskId, cpu: CpuId, fallback: CpuId) -> Option<CpuId> {
        let l = self.domains.cpus[cpu as usize].llc_id as usize;
        let core = self.llc[l].idle_core?;
        Some(if self.tasks[t as usize].affinity.test(core) {
            core
        } else {
            fallback
        })
    }

    /// (busy CPUs, LLC size) of `cpu`'s LLC.
    fn llc_busy(&self, cpu: CpuId) -> (u64, u64) {
        let cd = &self.domains.cpus[cpu as usize];
        (
            self.llc[cd.llc_id as usize].nr_busy_cpus as u64,
            cd.llc_size.max(1) as u64,
        )
    }

    /// wake_affine() with the S2 patch set (mirrors the patched wake_affine()):
    /// returns the target CPU and whether the idle search is to be skipped.
    ///
    /// "Call wake_affine only when needed": when prev is idle and shares the
    /// LLC with the waker, WA_IDLE would return prev and select_idle_sibling()
    /// takes an idle prev anyway, so nothing is evaluated.
    pub(crate) fn wake_affine_llc(
        &mut self,
        level: usize,
        t: TaskId,
        this_cpu: CpuId,
        prev: CpuId,
        sync: bool,
    ) -> (CpuId, bool) {
        if self.cpus_share_cache(this_cpu, prev) && self.idle_or_sched_idle(prev) {
            self.counters.s2.wa_skipped += 1;
            return (prev, false);
        }
        let mut skip_search = false;
        let mut target = None;
        if self.cpus_share_cache(this_cpu, prev) {
            if self.feat(Feat::WA_IDLE) {
                target = self.wake_affine_idle_llc(this_cpu, prev);
            }
        } else {
            match self.wake_affine_idler_llc(t, this_cpu, prev, sync) {
                IdlerLlc::Cpu(c) => target = Some(c),
                IdlerLlc::NoPreference => {}
                IdlerLlc::BothFull => skip_search = true,
            }
        }
        if target.is_none() && self.feat(Feat::WA_WEIGHT) {
            let pct = self.domains.cpus[this_cpu as usize].domains[level].imbalance_pct;
            target = self.wake_affine_weight_sync(t, this_cpu, prev, sync, pct);
        }
        let cpu = target.unwrap_or(prev);
        if cpu == this_cpu {
            self.counters.wake_affine_this += 1;
        }
        (cpu, skip_search)
    }

    /// WA_IDLE for a waker and prev in the same LLC (mirrors the patched
    /// wake_affine_idle()): prev if idle, else the waker if idle; sync makes
    /// no difference inside an LLC.
    fn wake_affine_idle_llc(&mut self, this_cpu: CpuId, prev: CpuId) -> Option<CpuId> {
        if self.idle_or_sched_idle(prev) {
            self.counters.s2.wa_idle_prev += 1;
            return Some(prev);
        }
        if self.idle_or_sched_idle(this_cpu) {
            self.counters.s2.wa_idle_this += 1;
            return Some(this_cpu);
        }
        None
    }

    /// WA_WEIGHT with the sync stacking moved in from WA_IDLE (mirrors the
    /// patched wake_affine_weight()): a sync waker running alone takes the
    /// wakee; otherwise the load comparison of wake_affine_weight().
    fn wake_affine_weight_sync(
        &mut self,
        t: TaskId,
        this_cpu: CpuId,
        prev: CpuId,
        sync: bool,
        pct: u32,
    ) -> Option<CpuId> {
        if sync && self.rqs[this_cpu as usize].cfs.nr_runnable() == 1 {
            self.counters.s2.sync_stack += 1;
            return Some(this_cpu);
        }
        self.wake_affine_weight(t, this_cpu, prev, sync, pct)
    }

    /// Waker and prev in different LLCs: prefer the side with an idle CPU or
    /// idle core, then the less busy LLC (mirrors the patch's
    /// wake_affine_idler_llc(), with the fallback LLC of "sched/fair: Use
    /// fallback LLC"). Order: sync: waker idle, waker-LLC idle core,
    /// [fallback idle core]; prev idle, prev-LLC idle core; non-sync: waker
    /// idle, waker-LLC idle core; then busy/size ratios (the fallback LLC
    /// replaces the waker's when lower); both full → [`IdlerLlc::BothFull`].
    pub(crate) fn wake_affine_idler_llc(
        &mut self,
        t: TaskId,
        this_cpu: CpuId,
        prev: CpuId,
        sync: bool,
    ) -> IdlerLlc {
        // The fallback LLC applies to sync wakeups whose prev lies outside
        // the waker's SD_FALLBACK_LLC parent.
        let fallback = if sync && self.feat(Feat::FALLBACK_LLC) {
            fallback_parent(&self.domains, this_cpu).and_then(|p| {
                let span = &self.domains.cpus[this_cpu as usize].domains[p].span;
                if span.test(prev) {
                    return None;
                }
                let l = self.domains.cpus[this_cpu as usize].llc_id as usize;
                self.llc[l]
                    .fallback_llc
                    .map(|f| self.llc[f as usize].first_cpu)
            })
        } else {
            None
        };
        if sync {
            if let Some(c) = self.idler_this_side(t, this_cpu) {
                return IdlerLlc::Cpu(c);
            }
            if let Some(fcpu) = fallback {
                let l = self.domains.cpus[fcpu as usize].llc_id as usize;
                if let Some(core) = self.llc[l].idle_core {
                    if self.tasks[t as usize].affinity.test(core) {
                        self.counters.s2.fallback_core += 1;
                        return IdlerLlc::Cpu(core);
                    }
                }
            }
        }
        if self.idle_or_sched_idle(prev) {
            self.counters.s2.idler_prev_idle += 1;
            return IdlerLlc::Cpu(prev);
        }
        if let Some(c) = self.llc_idle_core_for(t, prev, prev) {
            self.counters.s2.idler_prev_core += 1;
            return IdlerLlc::Cpu(c);
        }
        if !sync {
            if let Some(c) = self.idler_this_side(t, this_cpu) {
                return IdlerLlc::Cpu(c);
            }
        }
        let (mut tnr, mut tsize) = self.llc_busy(this_cpu);
        let (pnr, psize) = self.llc_busy(prev);
        let mut this_side = this_cpu;
        if let Some(fcpu) = fallback {
            let (fnr, fsize) = self.llc_busy(fcpu);
            // fnr/fsize < tnr/tsize
            if fnr * tsize < tnr * fsize && self.tasks[t as usize].affinity.test(fcpu) {
                self.counters.s2.fallback_ratio += 1;
                (tnr, tsize, this_side) = (fnr, fsize, fcpu);
            }
        }
        if pnr >= psize && tnr >= tsize {
            self.counters.s2.both_full += 1;
            return IdlerLlc::BothFull;
        }
        // pnr/psize vs tnr/tsize, cross-multiplied.
        let (p_ratio, t_ratio) = (pnr * tsize, tnr * psize);
        if p_ratio > t_ratio {
            self.counters.s2.idler_ratio_this += 1;
            IdlerLlc::Cpu(this_side)
        } else if p_ratio < t_ratio {
            self.counters.s2.idler_ratio_prev += 1;
            IdlerLlc::Cpu(prev)
        } else {
            self.counters.s2.idler_ratio_equal += 1;
            IdlerLlc::NoPreference
        }
    }

    /// The waker's side of wake_affine_idler_llc(): the waker's CPU if idle,
    /// else its LLC's idle core.
    fn idler_this_side(&mut self, t: TaskId, this_cpu: CpuId) -> Option<CpuId> {
        if self.idle_or_sched_idle(this_cpu) {
            self.counters.s2.idler_this_idle += 1;
            return Some(this_cpu);
        }
        let c = self.llc_idle_core_for(t, this_cpu, this_cpu)?;
        self.counters.s2.idler_this_core += 1;
        Some(c)
    }
}
