//! Patch set S2 (fair/wake_llc.rs) in hand-built situations: the idle-core
//! identity, wake_affine_idler_llc()'s choices, and a sync wakeup that uses
//! the fallback LLC's idle core. Every simulator checks invariants
//! (`checked: true`), which include nr_busy_cpus and the idle-core rule.

use super::wake_llc::IdlerLlc;
use super::*;
use crate::scenarios::pinned_thread;
use crate::sim::{EnqueueKind, Sim, SimConfig, StopReason, WF_SYNC};
use crate::task::Task;
use schedlab_topo::{build_domains, preset, CpuMask, DomainConfig};
use schedlab_workload::{Step, WorkloadSpec};

const S2: [&str; 4] = [
    "IDLE_CORE_ID",
    "NR_BUSY_ON_IDLE",
    "WA_IDLER_LLC",
    "FALLBACK_LLC",
];

fn s2_sim(machine: &str, config: &str, spec: WorkloadSpec) -> Sim {
    let m = preset(machine).expect("preset");
    let d = build_domains(&m, &DomainConfig::named(config).expect("config")).expect("domains");
    let mut cfg = SimConfig {
        noise: false,
        checked: true,
        ..SimConfig::default()
    };
    for f in S2 {
        cfg.features.set(f, true).unwrap();
    }
    Sim::new(m, d, spec, cfg)
}

fn empty() -> WorkloadSpec {
    WorkloadSpec {
        name: "none".into(),
        templates: vec![],
        initial: vec![],
        sync: vec![],
        mem_node: None,
        max_time_ns: u64::MAX,
    }
}

/// A blocked nice-0 task allowed everywhere, last on `cpu`.
fn add_task(s: &mut Sim, cpu: u16) -> TaskId {
    let id = s.tasks.len() as TaskId;
    let mut t = Task::new(id, "t", 1, 0, 0, s.machine.all_cpus());
    t.cpu = cpu;
    s.tasks.push(t);
    // A workload thread, as Sim::spawn() counts one.
    s.live += 1;
    id
}

/// A new task running on the idle `cpu`, with the idle-exit bookkeeping
/// (nr_busy_cpus, the idle-core identity) done as the core does it.
fn run_on(s: &mut Sim, cpu: u16) -> TaskId {
    let t = add_task(s, cpu);
    s.update_rq_clock(cpu);
    s.enqueue_task(cpu, t, EnqueueKind::New);
    s.set_next_entity(cpu, t);
    s.rqs[cpu as usize].curr = Some(t);
    s.tasks[t as usize].state = crate::task::TaskState::Running;
    s.idle_exit(cpu);
    t
}

#[test]
fn idle_core_is_set_on_idle_entry_and_cleared_when_the_core_runs() {
    // POWER10: CPU 0's LLC is its 4-thread small core {0, 2, 4, 6}. One
    // thread pinned to CPU 0 runs 1 ms, sleeps 1 ms, runs 1 ms.
    let steps = vec![
        Step::RunWall { ns: 1_000_000 },
        Step::Sleep { ns: 1_000_000 },
        Step::RunWall { ns: 1_000_000 },
        Step::Exit,
    ];
    let spec = pinned_thread("blink", 0, steps, 10_000_000);
    let mut s = s2_sim("power10", "patchset", spec);
    s.run_until(500_000);
    assert!(s.rqs[0].curr.is_some());
    assert_eq!(s.llc[0].idle_core, None, "the core runs a task");
    assert_eq!(s.llc[0].nr_busy_cpus, 1);
    s.run_until(1_500_000);
    assert!(s.rqs[0].curr.is_none(), "the thread sleeps");
    assert_eq!(s.llc[0].idle_core, Some(0), "the whole core went idle");
    assert_eq!(s.llc[0].nr_busy_cpus, 0);
    s.run_until(2_500_000);
    assert_eq!(s.llc[0].idle_core, None, "cleared when the core runs again");
    assert_eq!(s.run(), StopReason::Finished);
    assert_eq!(s.llc[0].idle_core, Some(0));
    assert!(s.counters.s2.idle_core_set_idle >= 2);
    assert!(s.counters.s2.idle_core_cleared_busy >= 1);
    // Without the feature nothing is remembered.
    let mut v = s2_sim("power10", "vanilla", empty());
    v.cfg.features.set("IDLE_CORE_ID", false).unwrap();
    let t = run_on(&mut v, 0);
    v.block_current(t, false);
    assert_eq!(v.llc[0].idle_core, None);
}

/// One thread pinned to CPU 0 of POWER10 runs 10 ms, sleeps 1 ms and
/// runs 10 ms.
fn pinned_runner() -> WorkloadSpec {
    let steps = vec![
        Step::RunWall { ns: 10_000_000 },
        Step::Sleep { ns: 1_000_000 },
        Step::RunWall { ns: 10_000_000 },
        Step::Exit,
    ];
    pinned_thread("runner", 0, steps, 100_000_000)
}

#[test]
fn nr_busy_cpus_follows_the_tick_in_vanilla_and_idle_entry_with_the_series() {
    // Vanilla: CPU 0 runs from t = 0 but stays in the nohz idle mask, and out
    // of its LLC's busy count, until its first busy tick
    // (nohz_balance_exit_idle()); it rejoins both at once when it sleeps and
    // its tick stops (here always: IDLE_GOV_TICK off).
    let mut v = s2_sim("power10", "vanilla", pinned_runner());
    for f in S2 {
        v.cfg.features.set(f, false).unwrap();
    }
    v.cfg.features.set("IDLE_GOV_TICK", false).unwrap();
    let first_tick = v.tick_ns;
    v.run_until(first_tick - 1);
    assert!(v.rqs[0].curr.is_some(), "the thread runs");
    assert!(v.nohz_idle.test(0), "no busy tick yet");
    assert_eq!(v.llc[0].nr_busy_cpus, 0);
    v.run_until(first_tick + 1);
    assert!(!v.nohz_idle.test(0), "the first busy tick left nohz");
    assert_eq!(v.llc[0].nr_busy_cpus, 1);
    v.run_until(10_500_000);
    assert!(v.rqs[0].curr.is_none(), "the thread sleeps");
    assert!(v.nohz_idle.test(0));
    assert_eq!(v.llc[0].nr_busy_cpus, 0);
    assert_eq!(v.run(), StopReason::Finished);
    // With the idle governor the 1 ms sleep timer is due within the tick:
    // the tick keeps running, and the CPU stays out of the mask and counted.
    let mut g = s2_sim("power10", "vanilla", pinned_runner());
    for f in S2 {
        g.cfg.features.set(f, false).unwrap();
    }
    g.run_until(10_500_000);
    assert!(g.rqs[0].curr.is_none() && g.rqs[0].tick_running);
    assert!(!g.nohz_idle.test(0));
    assert_eq!(g.llc[0].nr_busy_cpus, 1);
    // With the series' accounting the count follows idle exit at once; the
    // nohz mask still waits for the tick.
    let mut s = s2_sim("power10", "patchset", pinned_runner());
    s.run_until(first_tick - 1);
    assert!(s.nohz_idle.test(0));
    assert_eq!(s.llc[0].nr_busy_cpus, 1);
    s.run_until(first_tick + 1);
    assert!(!s.nohz_idle.test(0));
    assert_eq!(s.llc[0].nr_busy_cpus, 1);
    assert_eq!(s.run(), StopReason::Finished);
}

/// The idle-core identity as the patch keeps it ("Maintain the identity of
/// idle-core", "Update idle-core more often"): recorded at idle entry (the
/// CPU's own core, else the first wholly idle core of the LLC), the first
/// record stays, it replaces has_idle_cores for the scan, a search that
/// takes the recorded core clears it, and a search that finds none (here: a
/// wakee not allowed on it) leaves it.
#[test]
fn the_idle_core_identity_follows_the_patch() {
    // Genoa: LLC 0 is CPUs 0-15, cores {0,1}, {2,3}, ... CPUs 0, 2 and the
    // even CPUs 6-14 run, so core {4,5} is the only wholly idle core.
    let mut s = s2_sim("genoa", "vanilla", empty());
    run_on(&mut s, 0);
    run_on(&mut s, 2);
    for c in (6..16).step_by(2) {
        run_on(&mut s, c);
    }
    s.llc[0].idle_core = None;
    // CPU 1 goes idle with its sibling busy: the LLC search records {4,5}.
    s.update_idle_core_id(1);
    assert_eq!(s.llc[0].idle_core, Some(4));
    assert_eq!(s.counters.s2.idle_core_set_search, 1);
    // The first record stays.
    s.update_idle_core_id(3);
    assert_eq!(s.llc[0].idle_core, Some(4));
    // A wakee not allowed on {4,5}: the idle-core scan finds none, takes an
    // idle CPU, and the record stays (mainline would clear its flag).
    s.llc[0].has_idle_cores = false;
    let pinned = add_task(&mut s, 0);
    s.tasks[pinned as usize].affinity = s.machine.all_cpus().and_not(&CpuMask::from_cpus([4, 5]));
    let cpu = s.select_idle_sibling(pinned, 0, 0, 0, None);
    assert!(cpu != 4 && cpu != 5 && s.is_idle_cpu(cpu), "{cpu}");
    assert_eq!(s.llc[0].idle_core, Some(4), "a failed search leaves it");
    // A wakee allowed there: the scan (idle-core mode because a core is
    // recorded, whatever has_idle_cores says) takes {4,5} and clears it.
    let p = add_task(&mut s, 0);
    let cpu = s.select_idle_sibling(p, 0, 0, 0, None);
    assert_eq!(cpu, 4, "first whole idle core after the target");
    assert_eq!(s.llc[0].idle_core, None);
    assert_eq!(s.counters.s2.idle_core_cleared_search, 1);
    s.check_invariants().unwrap();
}

#[test]
fn wake_affine_idler_llc_prefers_idle_cpus_then_idle_cores_then_the_less_busy_llc() {
    // Genoa, node 0: LLC 0 = CPUs 0-15, LLC 1 = CPUs 16-31. Waker on CPU 0,
    // wakee last on CPU 16.
    let mut s = s2_sim("genoa", "vanilla", empty());
    let w = run_on(&mut s, 0);
    let p = add_task(&mut s, 16);
    // prev idle, waker busy: prev, sync or not.
    assert_eq!(s.wake_affine_idler_llc(p, 0, 16, true), IdlerLlc::Cpu(16));
    assert_eq!(s.wake_affine_idler_llc(p, 0, 16, false), IdlerLlc::Cpu(16));
    // The waker's LLC has a remembered idle core {2,3}: sync takes it before
    // looking at prev; non-sync takes prev first.
    s.set_idle_core(2);
    assert_eq!(s.wake_affine_idler_llc(p, 0, 16, true), IdlerLlc::Cpu(2));
    assert_eq!(s.wake_affine_idler_llc(p, 0, 16, false), IdlerLlc::Cpu(16));
    // prev busy, prev's LLC has an idle core {18,19}: sync still prefers the
    // waker's idle core, non-sync prev's.
    run_on(&mut s, 16);
    s.set_idle_core(18);
    assert_eq!(s.wake_affine_idler_llc(p, 0, 16, true), IdlerLlc::Cpu(2));
    assert_eq!(s.wake_affine_idler_llc(p, 0, 16, false), IdlerLlc::Cpu(18));
    // No idle core anywhere: non-sync with an idle waker CPU takes it after
    // prev's side failed.
    s.llc[0].idle_core = None;
    s.llc[1].idle_core = None;
    s.block_current(w, false);
    s.llc[0].idle_core = None;
    assert_eq!(s.wake_affine_idler_llc(p, 0, 16, false), IdlerLlc::Cpu(0));
    run_on(&mut s, 0);
    s.llc[0].idle_core = None;
    // Busy ratios: LLC 0 has 1/16 busy, LLC 1 has 1/16 → equal: WA_WEIGHT.
    assert_eq!(
        s.wake_affine_idler_llc(p, 0, 16, false),
        IdlerLlc::NoPreference
    );
    // Two busy in prev's LLC: the waker's LLC is less busy.
    run_on(&mut s, 20);
    s.llc[1].idle_core = None;
    assert_eq!(s.wake_affine_idler_llc(p, 0, 16, true), IdlerLlc::Cpu(0));
    // Three busy in the waker's: prev's LLC is less busy.
    run_on(&mut s, 4);
    run_on(&mut s, 6);
    s.llc[0].idle_core = None;
    assert_eq!(s.wake_affine_idler_llc(p, 0, 16, true), IdlerLlc::Cpu(16));
    s.check_invariants().unwrap();
}

#[test]
fn both_llcs_full_leave_it_to_wa_weight_and_skip_the_idle_search() {
    // POWER10 with the patch set: LLC {0,2,4,6} and LLC {8,10,12,14} full.
    let mut s = s2_sim("power10", "patchset", empty());
    for c in [0u16, 2, 4, 6, 8, 10, 12, 14] {
        run_on(&mut s, c);
    }
    let p = add_task(&mut s, 8);
    assert_eq!(s.wake_affine_idler_llc(p, 0, 8, false), IdlerLlc::BothFull);
    // The sync waker runs alone: WA_WEIGHT's sync stacking takes the waker,
    // and no idle search follows (CPU 1's idle LLC is not looked at). The
    // patch skips only the LLC scan: select_idle_sibling()'s earlier checks
    // run, and the recent_used_cpu step records prev.
    let w = s.rqs[0].curr.unwrap();
    s.tasks[p as usize].recent_used_cpu = 3;
    let cpu = s.select_task_rq_fair(p, 8, 0, Some(w), WF_SYNC | crate::sim::WF_TTWU);
    assert_eq!(cpu, 0);
    assert_eq!(s.tasks[p as usize].recent_used_cpu, 8);
    assert_eq!(s.counters.s2.both_full, 2);
    assert_eq!(s.counters.s2.sync_stack, 1);
    // Vanilla wake_affine() on the same state: the waker stacks too, but
    // select_idle_sibling() then scans the waker's LLC (all busy here).
    s.check_invariants().unwrap();
}

#[test]
fn same_llc_wakeups_use_wa_idle_and_skip_wake_affine_when_prev_is_idle() {
    let mut s = s2_sim("power10", "patchset", empty());
    let w = run_on(&mut s, 0);
    let p = add_task(&mut s, 2);
    // prev idle in the waker's LLC: wake_affine() is not called.
    let (cpu, skip) = s.wake_affine_llc(0, p, 0, 2, true);
    assert_eq!((cpu, skip), (2, false));
    assert_eq!(s.counters.s2.wa_skipped, 1);
    // prev busy: the sync stacking is WA_WEIGHT's now (waker runs alone).
    run_on(&mut s, 2);
    let (cpu, _) = s.wake_affine_llc(0, p, 0, 2, true);
    assert_eq!(cpu, 0);
    assert_eq!(s.counters.s2.sync_stack, 1);
    let _ = w;
    s.check_invariants().unwrap();
}

#[test]
fn a_sync_wakeup_from_the_other_hemisphere_uses_the_fallback_llcs_idle_core() {
    // POWER10 patch set: MC (0-39) carries SD_FALLBACK_LLC; LLC {0,2,4,6}
    // is paired with {1,3,5,7} (the other half of the SMT8 core).
    let mut s = s2_sim("power10", "patchset", empty());
    assert_eq!(s.llc[0].fallback_llc, Some(1));
    assert_eq!(s.llc[1].fallback_llc, Some(0));
    let l8 = s.domains.cpus[8].llc_id as usize;
    let l9 = s.domains.cpus[9].llc_id as usize;
    assert_eq!(s.llc[l8].fallback_llc, Some(l9 as u32));
    // Waker on CPU 0 (its LLC half busy), wakee last ran on CPU 40 in the
    // other hemisphere, whose LLC is half busy too; LLC {1,3,5,7} went idle.
    let w = run_on(&mut s, 0);
    run_on(&mut s, 2);
    run_on(&mut s, 40);
    run_on(&mut s, 42);
    let p = add_task(&mut s, 40);
    s.set_idle_core(1);
    assert_eq!(s.wake_affine_idler_llc(p, 0, 40, true), IdlerLlc::Cpu(1));
    let cpu = s.select_task_rq_fair(p, 40, 0, Some(w), WF_SYNC | crate::sim::WF_TTWU);
    assert_eq!(cpu, 1, "the fallback LLC's idle core");
    assert_eq!(s.counters.s2.fallback_core, 2);
    // Not for non-sync wakeups (equal ratios: WA_WEIGHT decides).
    assert_eq!(
        s.wake_affine_idler_llc(p, 0, 40, false),
        IdlerLlc::NoPreference
    );
    // Not when prev lies inside the parent (CPU 8 in the same hemisphere).
    run_on(&mut s, 8);
    run_on(&mut s, 10);
    let q = add_task(&mut s, 8);
    assert_eq!(
        s.wake_affine_idler_llc(q, 0, 8, true),
        IdlerLlc::NoPreference
    );
    // No idle core but a less busy fallback LLC: it replaces the waker's side.
    run_on(&mut s, 3);
    assert_eq!(s.llc[1].idle_core, None);
    assert_eq!(s.wake_affine_idler_llc(p, 0, 40, true), IdlerLlc::Cpu(1));
    assert_eq!(s.counters.s2.fallback_ratio, 1);
    s.check_invariants().unwrap();
}
