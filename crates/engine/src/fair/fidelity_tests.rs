//! Hand-computed kernel cases for the fair class: SIS_UTIL scan depth,
//! wake_affine_weight(), group classification, busiest-group choice,
//! calculate_imbalance(), EEVDF pick order and lag across a sleep, misfit
//! detection and select_idle_capacity().

use super::balance::*;
use super::*;
use crate::event::EventKind;
use crate::sim::{EnqueueKind, Sim, SimConfig};
use crate::task::Task;
use schedlab_topo::{build_domains, preset, CpuMask, DomainConfig, SdFlags};
use schedlab_workload::WorkloadSpec;

/// An idle simulator of `machine` without noise and without workload, in
/// checked mode (also used by other test modules of the fair class).
pub(super) fn bare(machine: &str) -> Sim {
    let m = preset(machine).expect("preset");
    let d = build_domains(&m, &DomainConfig::default()).expect("domains");
    let spec = WorkloadSpec {
        name: "none".into(),
        templates: vec![],
        initial: vec![],
        sync: vec![],
        mem_node: None,
        max_time_ns: u64::MAX,
    };
    Sim::new(
        m,
        d,
        spec,
        SimConfig {
            noise: false,
            checked: true,
            ..SimConfig::default()
        },
    )
}

/// Adds a blocked nice-0 task allowed everywhere, last on `cpu`.
fn add_task(s: &mut Sim, cpu: u16) -> TaskId {
    let id = s.tasks.len() as TaskId;
    let all = s.machine.all_cpus();
    let mut t = Task::new(id, "t", 1, 0, 0, all);
    t.cpu = cpu;
    s.tasks.push(t);
    id
}

/// Makes `t` cpu0's current task and accounts its run up to `until_ns`.
fn run_on_cpu0(s: &mut Sim, t: TaskId, until_ns: u64) {
    s.set_next_entity(0, t);
    s.rqs[0].curr = Some(t);
    s.now = until_ns;
    s.update_curr(0);
}

// ----- SIS_UTIL -----------------------------------------------------------

#[test]
fn nr_idle_scan_follows_update_idle_cpu_scan() {
    // 16-CPU LLC, imbalance_pct 117: x = Σutil/16,
    // y = 16·(1024 − min(1024, x²·117²/(10⁴·1024)))/1024.
    assert_eq!(nr_idle_scan(0, 16, 117), 16);
    // 50%: x = 512, x²·13689/10240000 = 350 → 16·674/1024 = 10.
    assert_eq!(nr_idle_scan(16 * 512, 16, 117), 10);
    // 25%: x = 256 → 87 → 16·937/1024 = 14.
    assert_eq!(nr_idle_scan(16 * 256, 16, 117), 14);
    // 85%: x = 870 → 1011 → 16·13/1024 = 0: the scan is skipped.
    assert_eq!(nr_idle_scan(16 * 870, 16, 117), 0);
    // Saturated.
    assert_eq!(nr_idle_scan(16 * 1024, 16, 117), 0);
}

// ----- wake_affine_weight() ---------------------------------------------------

#[test]
fn wake_affine_weight_compares_biased_loads() {
    let mut s = bare("kunpeng920");
    // Loads as set here (task_h_load() has its own test).
    s.cfg.features.set("GROUP_H_LOAD", false).unwrap();
    let p = add_task(&mut s, 1);
    s.tasks[p as usize].avg.load_avg = 1024;
    // prev (CPU 1) carries the wakee's blocked load plus one task; the
    // waker's CPU 0 is empty: this = 1024·100·1024 < prev = 1024·108·1024.
    s.rqs[1].cfs.avg.load_avg = 2048;
    assert_eq!(s.wake_affine_weight(p, 0, 1, false, 117), Some(0));
    // Equal loads besides the wakee: this = 2048·100 vs prev = 1024·108 → prev.
    s.rqs[0].cfs.avg.load_avg = 1024;
    assert_eq!(s.wake_affine_weight(p, 0, 1, false, 117), None);
    // The bias alone decides a tie: this = 1024·100 < prev = 1024·108.
    s.rqs[0].cfs.avg.load_avg = 0;
    assert_eq!(s.wake_affine_weight(p, 0, 1, false, 117), Some(0));
    // Without WA_BIAS the tie (1024 vs 1024) goes to prev.
    s.cfg.features.set("WA_BIAS", false).unwrap();
    assert_eq!(s.wake_affine_weight(p, 0, 1, false, 117), None);
}

#[test]
fn wake_affine_weight_sync_discounts_the_waker() {
    let mut s = bare("kunpeng920");
    let p = add_task(&mut s, 1);
    let w = add_task(&mut s, 0);
    s.tasks[p as usize].avg.load_avg = 1024;
    s.tasks[w as usize].avg.load_avg = 1024;
    s.rqs[0].curr = Some(w);
    s.rqs[0].cfs.avg.load_avg = 1024;
    s.rqs[1].cfs.avg.load_avg = 1024;
    // sync: the waker's own load leaves: this = 1024·100·1024,
    // prev = 0·108·1024 + 1 → prev.
    assert_eq!(s.wake_affine_weight(p, 0, 1, true, 117), None);
    // With one more task on prev: prev = 1024·108·1024 + 1 → waker.
    s.rqs[1].cfs.avg.load_avg = 2048;
    assert_eq!(s.wake_affine_weight(p, 0, 1, true, 117), Some(0));
    // A waker heavier than its CPU's load wins at once.
    s.tasks[w as usize].avg.load_avg = 2000;
    s.rqs[1].cfs.avg.load_avg = 0;
    assert_eq!(s.wake_affine_weight(p, 0, 1, true, 117), Some(0));
    s.rqs[0].curr = None;
}

// ----- group classification and busiest group -----------------------------------

fn g(nr: u32, weight: u32, util: u64, cap: u64) -> GroupStats {
    GroupStats {
        sum_nr_running: nr,
        sum_h_nr_running: nr,
        group_weight: weight,
        group_util: util,
        group_runnable: util,
        group_capacity: cap,
        idle_cpus: weight.saturating_sub(nr),
        max_capacity: cap / weight.max(1) as u64,
        min_capacity: cap / weight.max(1) as u64,
        cores: weight,
        ..Default::default()
    }
}

#[test]
fn group_classify_orders_the_special_types() {
    let mut s = g(2, 4, 1500, 1508);
    s.misfit_task_load = 900;
    // Fewer tasks than CPUs but a misfit task: misfit.
    assert_eq!(classify(117, &s), GroupType::MisfitTask);
    // smt_balance outranks misfit, asym_packing outranks smt_balance,
    // imbalanced outranks asym_packing.
    s.smt_balance = true;
    assert_eq!(classify(117, &s), GroupType::SmtBalance);
    s.asym_packing = true;
    assert_eq!(classify(117, &s), GroupType::AsymPacking);
    s.imbalanced = true;
    assert_eq!(classify(117, &s), GroupType::Imbalanced);
    // Overloaded outranks everything: 5 tasks on 4 CPUs with util·117 > cap·100.
    let mut o = g(5, 4, 4000, 4096);
    o.imbalanced = true;
    assert_eq!(classify(117, &o), GroupType::Overloaded);
}

fn pick_ctx(flags: SdFlags, dst_cap: u64, local: GroupType) -> PickCtx {
    PickCtx {
        sd_flags: flags,
        dst_capacity: dst_cap,
        dst_core_idle: true,
        local_type: local,
        fixes: SmtFixes::ALL,
    }
}

#[test]
fn pick_busiest_asym_capacity_rules() {
    let asym = SdFlags::ASYM_CPUCAPACITY;
    // A little group with a misfit task, seen from a big idle CPU whose
    // local group has spare capacity: picked.
    let mut little = g(1, 4, 600, 1508);
    little.misfit_task_load = 600;
    little.group_type = GroupType::MisfitTask;
    assert!(pick_busiest(
        &pick_ctx(asym, 1024, GroupType::HasSpare),
        &little,
        None
    ));
    // From another little CPU (not 5% bigger): skipped.
    assert!(!pick_busiest(
        &pick_ctx(asym, 377, GroupType::HasSpare),
        &little,
        None
    ));
    // Local group without spare capacity: skipped.
    assert!(!pick_busiest(
        &pick_ctx(asym, 1024, GroupType::FullyBusy),
        &little,
        None
    ));
    // A big group that is only fully busy is never drained to a little CPU.
    let mut big = g(4, 4, 3900, 4096);
    big.group_type = GroupType::FullyBusy;
    assert!(!pick_busiest(
        &pick_ctx(asym, 377, GroupType::HasSpare),
        &big,
        None
    ));
    // ... but an overloaded one is.
    big.group_type = GroupType::Overloaded;
    assert!(pick_busiest(
        &pick_ctx(asym, 377, GroupType::HasSpare),
        &big,
        None
    ));
}

#[test]
fn pick_busiest_ties_follow_the_kernel() {
    let none = SdFlags::empty();
    let ctx = pick_ctx(none, 1024, GroupType::HasSpare);
    // asym_packing: the group whose preferred CPU has the lower priority.
    let mut a = g(1, 1, 900, 1024);
    a.group_type = GroupType::AsymPacking;
    a.asym_prefer_prio = 35;
    let mut b = a;
    b.asym_prefer_prio = 60;
    assert!(pick_busiest(&ctx, &a, Some(&b)));
    assert!(!pick_busiest(&ctx, &b, Some(&a)));
    // has_spare: a 1-task SMT group is not picked over a non-SMT group...
    let mut smt = g(1, 2, 900, 2048);
    smt.flags = SdFlags::SHARE_CPUCAPACITY;
    let mut plain = g(1, 1, 900, 1024);
    plain.idle_cpus = 0;
    assert!(!pick_busiest(&ctx, &smt, Some(&plain)));
    // ... a 2-task SMT group is.
    smt.sum_h_nr_running = 2;
    smt.sum_nr_running = 2;
    smt.idle_cpus = 0;
    assert!(pick_busiest(&ctx, &smt, Some(&plain)));
    // Plain has_spare: fewer idle CPUs wins, then more tasks.
    let x = g(2, 4, 1000, 4096);
    let y = g(3, 4, 1000, 4096);
    assert!(pick_busiest(&ctx, &y, Some(&x)));
    assert!(!pick_busiest(&ctx, &x, Some(&y)));
}

// ----- calculate_imbalance() ----------------------------------------------------

fn dctx(flags: SdFlags, idle: bool) -> DecideCtx {
    DecideCtx {
        sd_flags: flags,
        imbalance_pct: 117,
        imb_numa_nr: 2,
        idle,
        fixes: SmtFixes::ALL,
    }
}

fn sds(local: GroupStats, busiest: GroupStats) -> SdLbStats {
    SdLbStats {
        total_load: local.group_load + busiest.group_load,
        total_capacity: local.group_capacity + busiest.group_capacity,
        local,
        busiest,
        prefer_sibling: false,
    }
}

fn typed(mut s: GroupStats) -> GroupStats {
    s.group_type = classify(117, &s);
    if s.group_type == GroupType::Overloaded {
        s.avg_load = s.group_load * 1024 / s.group_capacity;
    }
    s
}

#[test]
fn calculate_imbalance_main_cases() {
    // Misfit: one misfit task with asym capacity, else its load.
    let mut m = g(1, 4, 600, 1508);
    m.misfit_task_load = 700;
    m.group_type = GroupType::MisfitTask;
    let l = typed(g(0, 4, 0, 4096));
    assert_eq!(
        calculate_imbalance(&dctx(SdFlags::ASYM_CPUCAPACITY, true), &sds(l, m)),
        (MigrationType::Misfit, 1)
    );
    assert_eq!(
        calculate_imbalance(&dctx(SdFlags::empty(), true), &sds(l, m)),
        (MigrationType::Load, 700)
    );
    // asym_packing: all of the group's CFS tasks.
    let mut a = g(2, 2, 1800, 2048);
    a.group_type = GroupType::AsymPacking;
    assert_eq!(
        calculate_imbalance(&dctx(SdFlags::ASYM_PACKING, true), &sds(l, a)),
        (MigrationType::Task, 2)
    );
    // smt_balance: one task.
    let mut sm = g(2, 2, 1800, 2048);
    sm.group_type = GroupType::SmtBalance;
    assert_eq!(
        calculate_imbalance(&dctx(SdFlags::SHARE_LLC, true), &sds(l, sm)),
        (MigrationType::Task, 1)
    );
    // Local has spare, busiest overloaded, across LLCs: fill the local
    // group's spare capacity (4096 − 1000).
    let lo = typed(g(1, 4, 1000, 4096));
    let bo = typed(g(6, 4, 4096, 4096));
    assert_eq!(bo.group_type, GroupType::Overloaded);
    assert_eq!(
        calculate_imbalance(&dctx(SdFlags::empty(), false), &sds(lo, bo)),
        (MigrationType::Util, 3096)
    );
    // Same inside an LLC: half the idle-CPU difference (3 − 0) >> 1 = 1.
    assert_eq!(
        calculate_imbalance(&dctx(SdFlags::SHARE_LLC, false), &sds(lo, bo)),
        (MigrationType::Task, 1)
    );
    // prefer_sibling: by task counts, (6 − 1) >> 1 = 2.
    let mut ps = sds(lo, bo);
    ps.prefer_sibling = true;
    assert_eq!(
        calculate_imbalance(&dctx(SdFlags::SHARE_LLC, true), &ps),
        (MigrationType::Task, 2)
    );
    // NUMA: a lightly used local node keeps an imbalance of ≤ 2:
    // local 0 tasks < imb_numa_nr 2, idle difference 4 − 2 = 2 → 0.
    let ln = typed(g(0, 4, 0, 4096));
    let bn = typed(g(2, 4, 2000, 4096));
    assert_eq!(
        calculate_imbalance(&dctx(SdFlags::NUMA, true), &sds(ln, bn)),
        (MigrationType::Task, 0)
    );
    // Both overloaded: load. local 5×1024 on 4 CPUs, busiest 8×1024:
    // avgs 1280 and 2048, domain 1664 → min(384·4096, 384·4096)/1024 = 1536.
    let mut l5 = g(5, 4, 4096, 4096);
    l5.group_load = 5 * 1024;
    let mut b8 = g(8, 4, 4096, 4096);
    b8.group_load = 8 * 1024;
    let (l5, b8) = (typed(l5), typed(b8));
    assert_eq!(
        calculate_imbalance(&dctx(SdFlags::SHARE_LLC, false), &sds(l5, b8)),
        (MigrationType::Load, 1536)
    );
}

#[test]
fn find_src_group_decisions() {
    // A busy dst never pulls from a group that is not overloaded.
    let l = typed(g(2, 4, 1500, 4096));
    let b = typed(g(3, 4, 2500, 4096));
    assert_eq!(
        find_src_group_decide(&dctx(SdFlags::SHARE_LLC, false), &sds(l, b)),
        None
    );
    // An idle dst with only one idle CPU more than the busiest: balanced.
    let l2 = typed(g(2, 4, 1500, 4096));
    let b2 = typed(g(3, 4, 2500, 4096));
    assert_eq!(
        find_src_group_decide(&dctx(SdFlags::SHARE_LLC, true), &sds(l2, b2)),
        None
    );
    // An SMT group with two tasks vs a non-SMT local CPU: forced, one task.
    let lone = typed(g(0, 1, 0, 1024));
    let mut smt = g(2, 2, 1800, 2048);
    smt.flags = SdFlags::SHARE_CPUCAPACITY;
    smt.smt_balance = true;
    let smt = typed(smt);
    assert_eq!(smt.group_type, GroupType::SmtBalance);
    assert_eq!(
        find_src_group_decide(&dctx(SdFlags::SHARE_LLC, true), &sds(lone, smt)),
        Some((MigrationType::Task, 1))
    );
    // Overloaded local vs a busiest less than imbalance_pct heavier: balanced.
    let mut l7 = g(7, 4, 4096, 4096);
    l7.group_load = 7 * 1024;
    let mut b8 = g(8, 4, 4096, 4096);
    b8.group_load = 8 * 1024;
    assert_eq!(
        find_src_group_decide(&dctx(SdFlags::SHARE_LLC, false), &sds(typed(l7), typed(b8))),
        None
    );
}

// ----- EEVDF ------------------------------------------------------------------

#[test]
fn eevdf_pick_order_and_lag_after_sleep() {
    let mut s = bare("kunpeng920"); // ≥ 8 CPUs: slice 2.8 ms
    s.cfg.features.set("DELAY_DEQUEUE", false).unwrap();
    let ids: Vec<TaskId> = (0..3).map(|_| add_task(&mut s, 0)).collect();
    for &t in &ids {
        s.enqueue_task(0, t, EnqueueKind::New);
    }
    // All start at V = 0 with half a slice to their deadline; equal
    // deadlines go in enqueue order.
    for &t in &ids {
        assert_eq!(s.tasks[t as usize].se.vruntime, 0);
        assert_eq!(s.tasks[t as usize].se.deadline, 1_400_000);
    }
    assert_eq!(s.pick_eevdf(0, true), Some(ids[0]));
    s.set_next_entity(0, ids[0]);
    s.rqs[0].curr = Some(ids[0]);
    // A runs 1 ms: v = 1 ms, V = 1/3 ms; A is no longer eligible, B is next.
    s.now = 1_000_000;
    s.update_curr(0);
    assert_eq!(s.tasks[ids[0] as usize].se.vruntime, 1_000_000);
    assert_eq!(s.avg_vruntime(0), 333_333);
    assert_eq!(s.pick_eevdf(0, false), Some(ids[1]));
    // Protection: A is protected until its deadline, but an ineligible
    // curr is not kept.
    assert_eq!(s.tasks[ids[0] as usize].se.vprot, 1_400_000);
    assert_eq!(s.pick_eevdf(0, true), Some(ids[1]));
    // A sleeps: lag = V − v = −666 667 is saved.
    s.dequeue_task(0, ids[0], true);
    s.rqs[0].curr = None;
    assert_eq!(s.tasks[ids[0] as usize].se.vlag, -666_667);
    assert_eq!(s.avg_vruntime(0), 0);
    // It wakes at once: v = V − lag·(W + w)/W = 0 + 666 667·3072/2048.
    s.enqueue_task(0, ids[0], EnqueueKind::Wakeup);
    assert_eq!(s.tasks[ids[0] as usize].se.vruntime, 1_000_000);
    // Its lag is preserved: V = 1/3 ms again.
    assert_eq!(s.avg_vruntime(0), 333_333);
    assert_eq!(s.pick_eevdf(0, true), Some(ids[1]));
}

/// Two new tasks on cpu0 of kunpeng920; the first runs 1 ms (v = 1 ms > V =
/// 0.5 ms) and blocks, so its dequeue is delayed. Returns both.
fn first_of_two_delayed() -> (Sim, Vec<TaskId>) {
    let mut s = bare("kunpeng920");
    let ids: Vec<TaskId> = (0..2).map(|_| add_task(&mut s, 0)).collect();
    for &t in &ids {
        s.enqueue_task(0, t, EnqueueKind::New);
    }
    run_on_cpu0(&mut s, ids[0], 1_000_000);
    s.tasks[ids[0] as usize].state = crate::task::TaskState::Blocked;
    assert!(!s.dequeue_task(0, ids[0], true));
    s.rqs[0].curr = None;
    assert!(s.tasks[ids[0] as usize].se.sched_delayed);
    (s, ids)
}

#[test]
fn delayed_dequeue_keeps_negative_lag_and_delay_zero_clips_it() {
    // A (v = 1 ms > V = 0.5 ms) blocks: delayed, lag −0.5 ms saved.
    let (mut s, ids) = first_of_two_delayed();
    assert_eq!(s.tasks[ids[0] as usize].se.vlag, -500_000);
    // B runs 3 ms; A becomes eligible and the pick finishes its dequeue with
    // lag min(V − v, 0) = 0 (DELAY_ZERO), not the positive V − v.
    run_on_cpu0(&mut s, ids[1], 4_000_000);
    s.put_prev_entity(0, ids[1]);
    s.rqs[0].curr = None;
    assert_eq!(s.pick_next_entity(0), Some(ids[1]));
    assert!(!s.tasks[ids[0] as usize].se.on_rq);
    assert_eq!(s.tasks[ids[0] as usize].se.vlag, 0);
}

#[test]
fn a_delayed_task_leaves_the_util_est_sum_at_its_sleep() {
    // util_est_dequeue() runs when the task sleeps, delayed or not; the final
    // dequeue of a delayed task leaves the sum alone; a wakeup that requeues
    // it puts its estimate back (enqueue_task_fair(ENQUEUE_DELAYED)).
    let mut s = bare("kunpeng920");
    let ids: Vec<TaskId> = (0..2).map(|_| add_task(&mut s, 0)).collect();
    s.tasks[ids[0] as usize].util_est_ewma = 400;
    s.tasks[ids[1] as usize].util_est_ewma = 300;
    for &t in &ids {
        s.enqueue_task(0, t, EnqueueKind::New);
    }
    assert_eq!(s.rqs[0].cfs.util_est, 700);
    run_on_cpu0(&mut s, ids[0], 1_000_000);
    s.tasks[ids[0] as usize].state = crate::task::TaskState::Blocked;
    assert!(!s.dequeue_task(0, ids[0], true), "delayed");
    s.rqs[0].curr = None;
    assert_eq!(s.rqs[0].cfs.util_est, 300);
    // Woken while delayed: back in the sum.
    s.requeue_delayed(0, ids[0]);
    let a_est = s.tasks[ids[0] as usize].util_est();
    assert_eq!(s.rqs[0].cfs.util_est, 300 + a_est);
    // Asleep again, delayed again, then its dequeue finishes at a pick.
    run_on_cpu0(&mut s, ids[0], 1_500_000);
    assert!(!s.dequeue_task(0, ids[0], true), "delayed");
    s.rqs[0].curr = None;
    assert_eq!(s.rqs[0].cfs.util_est, 300);
    run_on_cpu0(&mut s, ids[1], 6_000_000);
    s.put_prev_entity(0, ids[1]);
    s.rqs[0].curr = None;
    assert_eq!(s.pick_next_entity(0), Some(ids[1]));
    assert!(!s.tasks[ids[0] as usize].se.on_rq);
    assert_eq!(s.rqs[0].cfs.util_est, 300);
}

#[test]
fn wakeup_preemption_picks_past_a_delayed_task() {
    // A (delayed, v = 1 ms, deadline 1.4 ms) becomes eligible while B runs;
    // the pick for a waking W lands on A, which leaves the runqueue, and the
    // pick made again is W: B is preempted (wakeup_preempt_fair() through
    // pick_next_entity()).
    let (mut s, ids) = first_of_two_delayed();
    let (a, b) = (ids[0], ids[1]);
    s.set_next_entity(0, b);
    s.rqs[0].curr = Some(b);
    // B runs 1.5 ms: v = 1.5 ms, new deadline 4.3 ms; V = 1.25 ms, so A is
    // eligible with the earliest deadline.
    s.now = 2_500_000;
    s.update_curr(0);
    assert_eq!(s.tasks[b as usize].se.deadline, 4_300_000);
    assert_eq!(s.pick_eevdf(0, true), Some(a));
    // W wakes with no lag: v = V = 1.25 ms, deadline 4.05 ms.
    let w = add_task(&mut s, 0);
    s.enqueue_task(0, w, EnqueueKind::Wakeup);
    assert_eq!(s.tasks[w as usize].se.deadline, 4_050_000);
    s.rqs[0].need_resched = false;
    s.wakeup_preempt(0, w, 0, 0);
    assert!(!s.tasks[a as usize].se.on_rq, "A's dequeue finished");
    assert!(s.rqs[0].need_resched, "B is preempted for W");
}

#[test]
fn a_delayed_task_moved_for_load_stays_delayed_on_the_destination() {
    // detach_task()/attach_task() of a delayed task (migrate_load only): it
    // is queued on dst still delayed, with its weight but not its estimate;
    // dst's next pick finishes its dequeue there.
    let (mut s, ids) = first_of_two_delayed();
    let a = ids[0];
    s.tasks[a as usize].util_est_ewma = 300;
    s.move_queued_task(a, 0, 1);
    let se = s.tasks[a as usize].se;
    assert!(se.on_rq && se.sched_delayed);
    assert_eq!(s.tasks[a as usize].cpu, 1);
    assert_eq!(s.rqs[1].cfs.nr_queued, 1);
    assert_eq!(s.rqs[1].cfs.nr_delayed, 1);
    assert_eq!(s.rqs[1].cfs.nr_runnable(), 0);
    assert_eq!(s.rqs[1].cfs.util_est, 0);
    assert_eq!(s.rqs[0].cfs.nr_delayed, 0);
    assert_eq!(s.pick_next_entity(1), None);
    assert!(!s.tasks[a as usize].se.on_rq);
    assert_eq!(s.rqs[1].cfs.nr_queued, 0);
}

/// The balancer's move of a delayed task is a migration of a queued task
/// (TASK_ON_RQ_MIGRATING): its averages leave the source at once
/// (dequeue_entity()'s DO_DETACH), not at the source's next update as a
/// waking task's do.
#[test]
fn a_delayed_task_moved_for_load_takes_its_averages_along_at_once() {
    let (mut s, ids) = first_of_two_delayed();
    let a = ids[0];
    // Give the delayed task averages of its own on cpu0.
    s.detach_entity_load(0, a);
    {
        let av = &mut s.tasks[a as usize].avg;
        av.load_avg = 600;
        av.util_avg = 600;
        av.runnable_avg = 600;
    }
    s.attach_entity_load(0, a);
    let before = s.rqs[0].cfs.avg;
    assert!(before.util_avg >= 600, "{before:?}");
    s.move_queued_task(a, 0, 1);
    assert_eq!(s.rqs[0].cfs.removed.nr, 0);
    let after = s.rqs[0].cfs.avg;
    assert_eq!(
        (after.load_avg, after.util_avg, after.runnable_avg),
        (
            before.load_avg - 600,
            before.util_avg - 600,
            before.runnable_avg - 600
        )
    );
    assert_eq!(s.rqs[1].cfs.avg.util_avg, 600);
}

// ----- asymmetric capacity --------------------------------------------------------

#[test]
fn misfit_status_and_fits_capacity() {
    // fits_capacity(): util·1280 < cap·1024.
    assert!(fits_capacity(301, 377));
    assert!(!fits_capacity(302, 377));
    assert!(capacity_greater(1024, 377));
    assert!(!capacity_greater(1070, 1024));
    let mut s = bare("exynos5422");
    // Loads as set here (task_h_load() has its own test).
    s.cfg.features.set("GROUP_H_LOAD", false).unwrap();
    let t = add_task(&mut s, 0);
    s.tasks[t as usize].avg.util_avg = 350;
    s.tasks[t as usize].avg.load_avg = 800;
    s.update_misfit_status(0, Some(t));
    assert_eq!(s.rqs[0].misfit_task_load, 800);
    // On a big CPU (the biggest allowed) nothing is misfit.
    s.update_misfit_status(4, Some(t));
    assert_eq!(s.rqs[4].misfit_task_load, 0);
    // Pinned to little CPUs: nowhere better to go.
    s.tasks[t as usize].affinity = CpuMask::from_cpus([0, 1, 2, 3]);
    s.update_misfit_status(0, Some(t));
    assert_eq!(s.rqs[0].misfit_task_load, 0);
    // A fitting task is not misfit.
    s.tasks[t as usize].affinity = s.machine.all_cpus();
    s.tasks[t as usize].avg.util_avg = 200;
    s.update_misfit_status(0, Some(t));
    assert_eq!(s.rqs[0].misfit_task_load, 0);
}

#[test]
fn select_idle_sibling_places_big_tasks_on_big_cpus() {
    let mut s = bare("exynos5422");
    let t = add_task(&mut s, 0);
    // Small task: the idle target (little CPU 1) fits.
    s.tasks[t as usize].avg.util_avg = 100;
    assert_eq!(s.select_idle_sibling(t, 0, 1, 1, None), 1);
    // Big task: no little CPU fits; select_idle_capacity() scans the PKG
    // span from the target and returns the first idle big CPU.
    s.tasks[t as usize].avg.util_avg = 500;
    assert_eq!(s.select_idle_sibling(t, 0, 1, 1, None), 4);
    // Even bigger than a big CPU: the idle CPU of highest capacity.
    s.tasks[t as usize].avg.util_avg = 1000;
    let c = s.select_idle_sibling(t, 0, 1, 1, None);
    assert!(c >= 4, "got {c}");
}

#[test]
fn the_asym_capacity_domain_keeps_its_own_scan_depth() {
    // Exynos 5422: the PKG domain (8 CPUs, SD_ASYM_CPUCAPACITY_FULL) is not
    // the LLC (each 4-CPU cluster is), so 7.3 gives it its own shared state:
    // select_idle_capacity() reads its nr_idle_scan, idle after boot = 8.
    let mut s = bare("exynos5422");
    let pkg = s.domains.cpus[1].sd_asym_cpucapacity.unwrap();
    assert_ne!(s.domains.cpus[1].sd_llc, Some(pkg));
    assert_eq!(s.asym_shared.len(), 1);
    assert_eq!(s.asym_shared[0].level, pkg);
    assert_eq!(s.asym_shared[0].nr_idle_scan, 8);
    assert!((0..8).all(|c| s.asym_shared_of[c] == Some(0)));
    let t = add_task(&mut s, 0);
    s.tasks[t as usize].avg.util_avg = 500;
    assert_eq!(s.select_idle_sibling(t, 0, 1, 1, None), 4, "full scan");
    // A scan depth of 2 stops at little CPUs 1 and 2: the best of those
    // (idle, does not fit) is the target itself.
    s.asym_shared[0].nr_idle_scan = 2;
    assert_eq!(s.select_idle_sibling(t, 0, 1, 1, None), 1);
    // An overloaded domain (depth 0) is not scanned at all; the LLCs' own
    // depths do not matter here.
    s.asym_shared[0].nr_idle_scan = 0;
    s.llc[0].nr_idle_scan = 4;
    assert_eq!(s.select_idle_sibling(t, 0, 1, 1, None), 1);
    // Kunpeng 920 has no asym-capacity domain: the LLC's state serves.
    let k = bare("kunpeng920");
    assert!(k.asym_shared.is_empty() && k.asym_shared_of.iter().all(|a| a.is_none()));
}

#[test]
fn an_ipi_that_finds_nothing_to_run_ends_an_idle_period_for_the_governor() {
    // CPU 3 idles from boot with its tick stopped; a nohz kick's IPI at 5 ms
    // wakes it and it idles again: the governor records 5 ms less WFI's
    // exit latency, and the tick stays stopped.
    let mut s = bare("kunpeng920");
    let exit_us = s.machine.wakeup.idle_states[0].exit_ns / 1000;
    s.now = 5_000_000;
    s.idle_rewake(3);
    assert_eq!(s.rqs[3].menu.intervals_us[0], 5_000 - exit_us);
    assert_eq!(s.rqs[3].menu.ptr, 1);
    assert!(!s.rqs[3].tick_running && s.nohz_idle.test(3));
    // Without the governor's say on the tick, it stays stopped too.
    s.cfg.features.set("IDLE_GOV_TICK", false).unwrap();
    s.now = 6_000_000;
    s.idle_rewake(3);
    assert!(!s.rqs[3].tick_running && s.nohz_idle.test(3));
}

#[test]
fn a_reschedule_that_finds_nothing_to_run_ends_an_idle_period_for_the_governor() {
    // CPU 3 idles from boot; at 5 ms a reschedule reaches it (its wakee was
    // taken by another CPU first), it finds nothing and idles again: a new
    // governor round, as do_idle() goes round again.
    let mut s = bare("kunpeng920");
    s.now = 5_000_000;
    s.schedule(3);
    assert!(s.rqs[3].curr.is_none());
    assert_eq!(s.counters.idle_resched_empty, 1);
    let exit_us = s.machine.wakeup.idle_states[0].exit_ns / 1000;
    assert_eq!(s.rqs[3].menu.intervals_us[0], 5_000 - exit_us);
    assert_eq!(s.rqs[3].menu_since_ns, 5_000_000);
}

#[test]
fn sched_asym_needs_an_idle_core_between_cores() {
    let s = bare("alderlake");
    let mc = s.domains.cpus[0].domains[1].flags;
    assert!(mc.contains(SdFlags::ASYM_PACKING));
    // An idle P-core thread (prio 60) may pull from an E-core (35)...
    assert!(s.sched_asym(mc, 0, 12));
    // ... not the other way round.
    assert!(!s.sched_asym(mc, 12, 0));
}

#[test]
fn sched_idle_tasks_weigh_3_and_leave_their_cpu_idle_for_placement() {
    let mut s = bare("kunpeng920");
    let bg = add_task(&mut s, 2);
    s.tasks[bg as usize].idle_policy = true;
    s.update_rq_clock(2);
    s.enqueue_task(2, bg, EnqueueKind::Wakeup);
    assert_eq!(s.tasks[bg as usize].se.weight, WEIGHT_IDLEPRIO);
    assert!(s.sched_idle_cpu(2));
    assert!(!s.is_idle_cpu(2));
    // A waking task takes a CPU that runs only SCHED_IDLE work.
    let p = add_task(&mut s, 2);
    for c in 0..s.nr_cpus() as u16 {
        if c != 2 {
            s.rqs[c as usize].ttwu_pending = 1; // nothing else is idle
        }
    }
    assert_eq!(s.select_idle_sibling(p, 2, 3, 3, None), 2);
    // A SCHED_IDLE wakee does not count that CPU as idle
    // (choose_sched_idle_rq()): with nothing idle it stays on the target.
    let q = add_task(&mut s, 2);
    s.tasks[q as usize].idle_policy = true;
    assert_eq!(s.select_idle_sibling(q, 2, 3, 3, None), 3);
    // A normal task preempts SCHED_IDLE curr at once.
    s.set_next_entity(2, bg);
    s.rqs[2].curr = Some(bg);
    s.enqueue_task(2, p, EnqueueKind::Wakeup);
    s.rqs[2].need_resched = false;
    s.wakeup_preempt(2, p, 2, 0);
    assert!(s.rqs[2].need_resched);
    assert!(!s.sched_idle_cpu(2));
}

/// A new task on `cpu` asks for a slice of `slice_ns` (sched_setattr) and
/// is enqueued there as a wakeup, without a preemption check.
fn wake_with_slice(s: &mut Sim, cpu: u16, slice_ns: u64) -> TaskId {
    let t = add_task(s, cpu);
    s.set_custom_slice(t, slice_ns);
    s.enqueue_task(cpu, t, EnqueueKind::Wakeup);
    s.tasks[t as usize].state = crate::task::TaskState::Runnable;
    t
}

/// A kunpeng920 with `feature` switched `on` whose CPU 0 has run one task,
/// returned, for 0.5 ms.
fn curr_ran_half_ms(feature: &str, on: bool) -> (Sim, TaskId) {
    let mut s = bare("kunpeng920");
    s.cfg.features.set(feature, on).unwrap();
    let a = add_task(&mut s, 0);
    put(&mut s, 0, a);
    s.now = 500_000;
    s.update_curr(0);
    (s, a)
}

/// Enqueues `t` on `cpu`; the first task of an empty CPU becomes curr.
fn put(s: &mut Sim, cpu: u16, t: TaskId) {
    s.update_rq_clock(cpu);
    s.enqueue_task(cpu, t, EnqueueKind::New);
    if s.rqs[cpu as usize].curr.is_none() {
        s.set_next_entity(cpu, t);
        s.rqs[cpu as usize].curr = Some(t);
        s.tasks[t as usize].state = crate::task::TaskState::Running;
        // The CPU left idle (its bookkeeping as the core does it).
        s.idle_exit(cpu);
    } else {
        s.tasks[t as usize].state = crate::task::TaskState::Runnable;
    }
}

#[test]
fn dst_pinned_retries_with_another_local_cpu_and_flags_the_parent() {
    // Node 0 of kunpeng920 is overloaded; CPU 0's three tasks may run only
    // on CPUs 0 and 30. Idle CPU 24 balances the level whose local group is
    // its node: the tasks cannot come to 24 (LBF_SOME_PINNED), but CPU 30 of
    // the same local group can take them (LBF_DST_PINNED → new_dst_cpu).
    let mut s = bare("kunpeng920");
    let level = s.domains.cpus[24]
        .domains
        .iter()
        .position(|d| d.groups[0].span.weight() == 24 && d.span.weight() > 24)
        .expect("a level with node groups");
    for cpu in 0..24u16 {
        let n = if cpu == 0 { 3 } else { 2 };
        for _ in 0..n {
            let t = add_task(&mut s, cpu);
            if cpu == 0 {
                s.tasks[t as usize].affinity = CpuMask::from_cpus([0, 30]);
            }
            put(&mut s, cpu, t);
        }
        // A busy history: full utilisation, every task runnable.
        let avg = &mut s.rqs[cpu as usize].cfs.avg;
        avg.util_avg = if cpu == 0 { 1024 } else { 1000 };
        avg.runnable_avg = 1024 * n;
        avg.load_avg = 1024 * n;
    }
    // Long enough after the tasks last ran that none is cache hot.
    s.now = 10_000_000;
    let (moved, _) = s.sched_balance_rq(24, level, IdleType::Idle);
    assert!(moved >= 1, "nothing moved");
    assert!(s.rqs[30].nr_running() >= 1, "CPU 30 got the pinned work");
    assert_eq!(s.rqs[24].nr_running(), 0);
    if let Some(p) = s.domains.cpus[24].domains.get(level + 1) {
        let g = &p.groups[0];
        assert!(
            s.sg_imbalanced((g.sgc_level, g.sgc_cpu)),
            "parent's local group marked imbalanced"
        );
    }
    s.check_invariants().unwrap();
}

#[test]
fn util_est_follows_util_est_update() {
    let mut s = bare("kunpeng920");
    let t = add_task(&mut s, 0);
    let set = |s: &mut Sim, ewma: u64, util: u64, runnable: u64| {
        let tk = &mut s.tasks[t as usize];
        tk.util_est_ewma = ewma;
        tk.avg.util_avg = util;
        tk.avg.runnable_avg = runnable;
        tk.util_est_unchanged = false;
    };
    // A drop decays with weight 1/4: (4·500 − 200)/4 = 450.
    set(&mut s, 500, 300, 300);
    s.update_util_est_dequeue(t);
    assert_eq!(s.tasks[t as usize].util_est_ewma, 450);
    // util_avg did not change since: no second update.
    s.update_util_est_dequeue(t);
    assert_eq!(s.tasks[t as usize].util_est_ewma, 450);
    // A rise is taken at once.
    set(&mut s, 450, 600, 600);
    s.update_util_est_dequeue(t);
    assert_eq!(s.tasks[t as usize].util_est_ewma, 600);
    // Within 1% (< 10): kept.
    set(&mut s, 600, 595, 595);
    s.update_util_est_dequeue(t);
    assert_eq!(s.tasks[t as usize].util_est_ewma, 600);
    // The task waited (runnable > util + 10): kept.
    set(&mut s, 600, 300, 500);
    s.update_util_est_dequeue(t);
    assert_eq!(s.tasks[t as usize].util_est_ewma, 600);
}

#[test]
fn nohz_kick_conditions() {
    let kicked = |s: &Sim| s.nohz_next_balance == u64::MAX;
    // Alder Lake: one task on E-core 12 while P-cores idle → kick (asym).
    let mut s = bare("alderlake");
    let t = add_task(&mut s, 12);
    put(&mut s, 12, t);
    s.nohz_balancer_kick(12);
    assert!(kicked(&s), "idle higher-priority core");
    // The kernel reads the nohz idle mask: one thread of each P-core started
    // running and has not ticked yet; it still counts as an idle
    // higher-priority CPU (its sibling is idle, so its priority counts),
    // while the idle siblings, on busy cores, do not.
    let mut s = bare("alderlake");
    let t = add_task(&mut s, 12);
    put(&mut s, 12, t);
    for c in (0..12u16).step_by(2) {
        let t = add_task(&mut s, c);
        put(&mut s, c, t);
    }
    assert!(s.nohz_idle.test(0) && !s.is_idle_cpu(0));
    s.nohz_balancer_kick(12);
    assert!(kicked(&s), "P-cores before their first busy tick");
    // The same task on a P-core: no higher-priority idle CPU; the LLC has
    // only one busy CPU → no kick.
    let mut s = bare("alderlake");
    let t = add_task(&mut s, 0);
    put(&mut s, 0, t);
    s.llc[0].nr_busy_cpus = 1;
    s.nohz_balancer_kick(0);
    assert!(!kicked(&s));
    // Exynos: a misfit task on a little CPU → kick; a fitting one → none
    // (asym-capacity machines skip the LLC busy-CPU test).
    let mut s = bare("exynos5422");
    let t = add_task(&mut s, 1);
    put(&mut s, 1, t);
    s.llc[0].nr_busy_cpus = 2;
    s.nohz_balancer_kick(1);
    assert!(!kicked(&s), "fitting task, asym capacity");
    s.rqs[1].misfit_task_load = 500;
    s.nohz_balancer_kick(1);
    assert!(kicked(&s), "misfit");
    // Kunpeng: two tasks on a CPU → kick.
    let mut s = bare("kunpeng920");
    for _ in 0..2 {
        let t = add_task(&mut s, 3);
        put(&mut s, 3, t);
    }
    s.nohz_balancer_kick(3);
    assert!(kicked(&s), "two tasks");
}

#[test]
fn run_to_parity_protection_shrinks_after_a_wakeup() {
    let mut s = bare("kunpeng920");
    let a = add_task(&mut s, 0);
    put(&mut s, 0, a);
    // Alone, A is protected up to its deadline (half a slice: new task).
    assert_eq!(s.tasks[a as usize].se.vprot, 1_400_000);
    s.now = 100_000;
    s.update_curr(0);
    // B wakes (placed at V = 0.1 ms, deadline 0.1 + 2.8 ms): it is not the
    // protected pick, so A keeps running, with its protection cut to
    // min(v, V) + slice = 0.1 + 2.8 ms (> its deadline: unchanged).
    let b = add_task(&mut s, 0);
    s.enqueue_task(0, b, EnqueueKind::Wakeup);
    s.tasks[b as usize].state = crate::task::TaskState::Runnable;
    s.rqs[0].need_resched = false;
    s.wakeup_preempt(0, b, 0, 0);
    assert!(!s.rqs[0].need_resched);
    assert_eq!(s.tasks[a as usize].se.vprot, 1_400_000);
    // Without RUN_TO_PARITY the next pick protects A only up to the point
    // where it becomes ineligible (PREEMPT_SHORT): V of the others + 1.
    s.cfg.features.set("RUN_TO_PARITY", false).unwrap();
    s.set_next_entity(0, a);
    assert_eq!(s.tasks[a as usize].se.vprot, 100_001);
}

#[test]
fn a_short_custom_slice_preempts_with_preempt_short() {
    for preempt_short in [true, false] {
        let (mut s, a) = curr_ran_half_ms("PREEMPT_SHORT", preempt_short);
        // B asks for a 0.3 ms slice (sched_setattr sched_runtime); a 10 µs
        // request would be clamped to 0.1 ms.
        let probe = add_task(&mut s, 0);
        s.set_custom_slice(probe, 10_000);
        assert_eq!(s.tasks[probe as usize].se.slice, 100_000);
        let b = wake_with_slice(&mut s, 0, 300_000);
        // Its deadline is one custom slice past its vruntime.
        let se = s.tasks[b as usize].se;
        assert_eq!(se.deadline - se.vruntime, 300_000);
        s.rqs[0].need_resched = false;
        s.wakeup_preempt(0, b, 0, 0);
        // A (base slice 2.8 ms, protected to 1.4 ms) is preempted only
        // through PREEMPT_SHORT: B is eligible and has the shorter slice.
        assert_eq!(s.rqs[0].need_resched, preempt_short, "{preempt_short}");
        if !preempt_short {
            // update_protect_slice(): A's protection shrinks to the
            // shortest queued slice past min(v, V).
            assert_eq!(s.tasks[a as usize].se.vprot, 500_000 + 300_000);
        }
    }
}

#[test]
fn a_short_slice_preemption_makes_the_wakee_the_next_pick() {
    // A runs with the base slice; C (0.1 ms slice, queued without a
    // preemption check) has the earliest deadline. B wakes with a 0.3 ms
    // slice: the pick without A's protection is C, but B is eligible and
    // shorter than A, so it preempts (PREEMPT_SHORT) and becomes the next
    // buddy (set_short_buddy()): the following pick is B, not C, while
    // PICK_BUDDY is on.
    for pick_buddy in [true, false] {
        let (mut s, _) = curr_ran_half_ms("PICK_BUDDY", pick_buddy);
        let c = wake_with_slice(&mut s, 0, 100_000);
        let b = wake_with_slice(&mut s, 0, 300_000);
        assert_eq!(s.pick_eevdf(0, false), Some(c));
        s.rqs[0].need_resched = false;
        s.wakeup_preempt(0, b, 0, 0);
        assert!(s.rqs[0].need_resched, "B preempts A");
        assert_eq!(s.rqs[0].cfs.next, Some(b));
        let want = if pick_buddy { b } else { c };
        assert_eq!(s.pick_eevdf(0, true), Some(want), "PICK_BUDDY {pick_buddy}");
        // A wakee with a longer slice than the buddy's does not replace it.
        let d = wake_with_slice(&mut s, 0, 1_000_000);
        s.wakeup_preempt(0, d, 0, 0);
        assert_eq!(s.rqs[0].cfs.next, Some(b));
        // The buddy is cache hot for a balancer whose CPU has work, long
        // after it last ran (CACHE_HOT_BUDDY); C, as long ago, is not.
        s.now = 10_000_000;
        let dst = 1;
        let t = add_task(&mut s, dst);
        put(&mut s, dst, t);
        let mc = s.domains.cpus[0].domains[1].flags;
        assert!(s.task_hot(mc, 0, dst, b));
        assert!(!s.task_hot(mc, 0, dst, c));
        s.cfg.features.set("CACHE_HOT_BUDDY", false).unwrap();
        assert!(!s.task_hot(mc, 0, dst, b));
        // Leaving the runqueue ends the nomination (clear_buddies()).
        s.dequeue_task(0, b, false);
        assert_eq!(s.rqs[0].cfs.next, None);
    }
}

// ----- select_task_rq() and the fork path's group statistics ---------------

#[test]
fn wakeup_group_stats_count_delayed_tasks_as_running() {
    // update_sg_wakeup_stats(): sum_nr_running is rq->nr_running, which
    // keeps a delayed-dequeue task until it really leaves; sum_h_nr_running
    // is h_nr_runnable, which does not; a CPU holding one is not idle.
    let (mut s, _) = first_of_two_delayed();
    let new = add_task(&mut s, 1);
    let span = CpuMask::from_cpus([0, 1]);
    let st = s.sg_wakeup_stats(&span, 2048, SdFlags::empty(), (0, 0), 117, new);
    assert_eq!(st.sum_nr_running, 2, "the delayed task counts");
    assert_eq!(st.sum_h_nr_running, 1, "but is not runnable");
    assert_eq!(st.idle_cpus, 1, "cpu1 only");
}

#[test]
fn a_task_allowed_on_one_cpu_skips_the_placement_path() {
    // select_task_rq(): with nr_cpus_allowed == 1 the class's
    // select_task_rq() is not called, so nothing records the wakee (the
    // waker's wakee_flips stay) and no idle search runs.
    let mut s = bare("kunpeng920");
    let waker = add_task(&mut s, 2);
    let pinned = add_task(&mut s, 5);
    s.tasks[pinned as usize].affinity = CpuMask::from_cpus([5]);
    s.tasks[waker as usize].state = crate::task::TaskState::Running;
    s.enqueue_task(2, waker, EnqueueKind::New);
    s.set_next_entity(2, waker);
    s.rqs[2].curr = Some(waker);
    s.tasks[pinned as usize].state = crate::task::TaskState::Blocked;
    s.try_to_wake_up(pinned, 2, Some(waker), 0);
    assert_eq!(s.tasks[pinned as usize].cpu, 5);
    assert_eq!(s.tasks[waker as usize].wakee_flips, 0);
    assert_eq!(s.counters.sis_target + s.counters.sis_prev, 0);
    // A task allowed on two CPUs goes through select_task_rq_fair().
    let free = add_task(&mut s, 6);
    s.tasks[free as usize].affinity = CpuMask::from_cpus([6, 7]);
    s.tasks[free as usize].state = crate::task::TaskState::Blocked;
    s.try_to_wake_up(free, 2, Some(waker), 0);
    assert_eq!(s.tasks[waker as usize].wakee_flips, 1);
}

/// [`bare`] kunpeng920 with one template, a thread that exits, to spawn.
fn bare_with_child_template() -> Sim {
    let mut s = bare("kunpeng920");
    s.spec.templates.push(crate::scenarios::thread(
        "child",
        None,
        vec![schedlab_workload::Step::Exit],
    ));
    s
}

/// A SCHED_IDLE task started by the workload (as `chrt -i` starts one)
/// weighs 3 from its first averages: its CPU does not carry a nice-0 task's
/// load while the new task's average decays.
#[test]
fn a_forked_sched_idle_task_starts_with_weight_3() {
    let mut s = bare_with_child_template();
    s.spec.templates[0].idle_policy = true;
    let t = s.spawn(0, None, 3);
    let cpu = s.tasks[t as usize].cpu as usize;
    assert_eq!(s.tasks[t as usize].se.weight, WEIGHT_IDLEPRIO);
    assert_eq!(s.tasks[t as usize].avg.load_avg, WEIGHT_IDLEPRIO);
    assert!(
        s.rqs[cpu].cfs.avg.load_avg <= WEIGHT_IDLEPRIO,
        "no nice-0 phantom"
    );
}

#[test]
fn a_forked_task_inherits_its_parents_wakee_history() {
    // dup_task_struct() copies wakee_flips, wakee_flip_decay_ts and
    // last_wakee; __sched_fork() does not reset them.
    let mut s = bare_with_child_template();
    let parent = add_task(&mut s, 3);
    let other = add_task(&mut s, 4);
    {
        let p = &mut s.tasks[parent as usize];
        p.wakee_flips = 37;
        p.wakee_flip_decay_ns = 5;
        p.last_wakee = Some(other);
    }
    let child = s.spawn(0, Some(parent), 3);
    let c = &s.tasks[child as usize];
    assert_eq!(
        (c.wakee_flips, c.wakee_flip_decay_ns, c.last_wakee),
        (37, 5, Some(other))
    );
    // Without a parent (the workload's first threads) it starts clean.
    let orphan = s.spawn(0, None, 3);
    assert_eq!(s.tasks[orphan as usize].wakee_flips, 0);
}

/// dup_task_struct() copies the creator: a thread created by a SCHED_BATCH,
/// nice-5, boosted thread of process 2 is all of that from its first
/// enqueue, whatever its template says; one created by a SCHED_IDLE thread
/// weighs 3.
#[test]
fn a_thread_inherits_its_creators_policy_nice_clamps_and_process() {
    let mut s = bare_with_child_template();
    // The template asks for nothing: only threads the workload starts get
    // a template's nice value or policy.
    s.spec.templates[0].nice = -10;
    let parent = add_task(&mut s, 3);
    {
        let p = &mut s.tasks[parent as usize];
        p.tgid = 2 + parent;
        p.nice = 5;
        p.se.weight = 335;
        p.batch_policy = true;
        p.uclamp_min = 100;
    }
    let child = s.spawn(0, Some(parent), 3);
    let c = &s.tasks[child as usize];
    assert_eq!(
        (c.tgid, c.nice, c.se.weight, c.batch_policy, c.idle_policy),
        (2 + parent, 5, 335, true, false)
    );
    assert_eq!((c.uclamp_min, c.uclamp_max), (100, 1024));
    // init_entity_runnable_average(): the load average starts at the weight.
    assert_eq!(c.avg.load_avg, 335);
    s.tasks[parent as usize].idle_policy = true;
    s.tasks[parent as usize].batch_policy = false;
    let c2 = s.spawn(0, Some(parent), 3);
    let c2 = &s.tasks[c2 as usize];
    assert_eq!((c2.idle_policy, c2.se.weight), (true, WEIGHT_IDLEPRIO));
    // A thread the workload starts takes its template's nice value.
    let orphan = s.spawn(0, None, 3);
    let o = &s.tasks[orphan as usize];
    assert_eq!((o.tgid, o.nice, o.batch_policy), (1, -10, false));
}

#[test]
fn a_pending_lazy_reschedule_is_acted_on_when_the_parent_returns_from_clone() {
    let mut s = bare_with_child_template();
    let parent = add_task(&mut s, 3);
    s.tasks[parent as usize].state = crate::task::TaskState::Running;
    s.enqueue_task(3, parent, EnqueueKind::New);
    s.set_next_entity(3, parent);
    s.rqs[3].curr = Some(parent);
    s.rqs[3].need_resched_lazy = true;
    s.spawn(0, Some(parent), 3);
    assert!(!s.rqs[3].need_resched_lazy);
    assert!(
        s.rqs[3].need_resched,
        "clone()'s return to user space reschedules"
    );
}

#[test]
fn calculate_imbalance_wraps_like_unsigned_long() {
    // Both overloaded, a third group (not shown) makes the domain average
    // 2048 while busiest sits at 1792 and local at 1280: the kernel's first
    // term (1792 − 2048)·cap wraps to a huge value, so the second,
    // (2048 − 1280)·4096/1024 = 3072, is the imbalance.
    let mut l = g(5, 4, 4096, 4096);
    l.group_load = 5 * 1024;
    let mut b = g(7, 4, 4096, 4096);
    b.group_load = 7 * 1024;
    let (l, b) = (typed(l), typed(b));
    assert_eq!((l.avg_load, b.avg_load), (1280, 1792));
    let mut st = sds(l, b);
    st.total_load = 24 * 1024;
    st.total_capacity = 3 * 4096;
    assert_eq!(
        calculate_imbalance(&dctx(SdFlags::empty(), false), &st),
        (MigrationType::Load, 3072)
    );
}

#[test]
fn a_migrated_task_is_cache_cold_until_it_runs() {
    let mut s = bare("kunpeng920");
    let t = add_task(&mut s, 0);
    // It last ran on CPU 0 until 5 ms.
    s.tasks[t as usize].se.exec_start = 5_000_000;
    s.now = 5_100_000;
    // It ran 0.1 ms ago: hot for a move between clusters.
    assert!(s.task_hot(SdFlags::SHARE_LLC, 0, 8, t));
    // Moved to CPU 4 (a wakeup migration): enqueue_entity() with
    // ENQUEUE_MIGRATED zeroes exec_start, so it is cold there at once.
    s.set_task_cpu(t, 0, 4, false);
    assert!(!s.task_hot(SdFlags::SHARE_LLC, 4, 8, t));
}

#[test]
fn the_runqueue_util_est_sum_adds_and_removes_the_ewma_only() {
    let mut s = bare("kunpeng920");
    let t = add_task(&mut s, 2);
    s.tasks[t as usize].util_est_ewma = 300;
    s.tasks[t as usize].avg.util_avg = 200;
    s.rqs[2].cfs.util_est = 100;
    s.enqueue_task(2, t, EnqueueKind::Wakeup);
    assert_eq!(s.rqs[2].cfs.util_est, 400);
    // util_avg rose above the EWMA while queued: the dequeue still takes
    // away only the EWMA (util_est_dequeue() subtracts _task_util_est()).
    s.tasks[t as usize].avg.util_avg = 700;
    s.dequeue_task(2, t, false);
    assert_eq!(s.rqs[2].cfs.util_est, 100);
}

#[test]
fn group_has_capacity_at_exactly_the_runnable_limit() {
    // sum_nr_running = weight; runnable·100 = capacity·pct exactly: the
    // kernel's strict `<` keeps capacity, util decides (util below → true).
    let mut s = g(4, 4, 2000, 409_600);
    s.group_runnable = 4096 * 117;
    assert!(has_capacity(117, &s), "equal is not over the limit");
    s.group_runnable += 1;
    assert!(!has_capacity(117, &s));
}

#[test]
fn cpu_util_boost_counts_runnable_as_demand() {
    let mut s = bare("kunpeng920");
    s.rqs[3].cfs.avg.util_avg = 300;
    s.rqs[3].cfs.avg.runnable_avg = 900;
    s.rqs[3].cfs.util_est = 100;
    assert_eq!(s.cpu_util(3), 300);
    assert_eq!(s.cpu_util_boost(3), 900);
    // Capped at the CPU's capacity.
    s.rqs[3].cfs.avg.runnable_avg = 5000;
    assert_eq!(s.cpu_util_boost(3), 1024);
}

// ----- balance times in jiffies -------------------------------------------

/// A balance run between two ticks (here an idle CPU's, as the nohz ILB runs
/// it) records the jiffy it ran in, as `sd->last_balance = jiffies` does,
/// and its next balance is due a whole number of jiffies after that.
#[test]
fn a_balance_between_ticks_counts_from_the_last_jiffy() {
    let mut s = bare("kunpeng920");
    let tick_ns = s.tick_ns;
    s.now = 40 * tick_ns + tick_ns / 2;
    s.sched_balance_domains(0, true);
    assert_eq!(s.sd[0][0].last_balance_ns, 40 * tick_ns);
    let next = s.rqs[0].next_balance;
    assert_eq!(next % tick_ns, 0, "next balance {next} off the jiffy grid");
    assert!(next > 40 * tick_ns);
}

// ----- lazy load removal --------------------------------------------------

/// A blocked task that wakes on another CPU leaves its averages on the old
/// runqueue until that runqueue's next update (remove_entity_load_avg() and
/// update_cfs_rq_load_avg()); a queued task the balancer moves takes them
/// along at once (detach_entity_load_avg()).
#[test]
fn a_wakeup_migration_leaves_its_load_until_the_old_runqueue_updates() {
    for blocked in [true, false] {
        let mut s = bare("kunpeng920");
        let t = add_task(&mut s, 0);
        {
            let a = &mut s.tasks[t as usize].avg;
            a.load_avg = 600;
            a.util_avg = 600;
            a.runnable_avg = 600;
        }
        s.attach_entity_load(0, t);
        assert_eq!(s.rqs[0].cfs.avg.util_avg, 600);
        s.tasks[t as usize].state = if blocked {
            TaskState::Blocked
        } else {
            TaskState::Runnable
        };
        s.set_task_cpu(t, 0, 4, !blocked);
        assert_eq!(s.rqs[4].cfs.avg.util_avg, 600);
        let old = s.rqs[0].cfs.avg;
        if blocked {
            assert_eq!(
                (old.load_avg, old.util_avg, old.runnable_avg),
                (600, 600, 600)
            );
            assert_eq!(s.rqs[0].cfs.removed.nr, 1);
            s.update_cfs_avg(0);
        }
        let old = s.rqs[0].cfs.avg;
        assert_eq!(
            (old.load_avg, old.util_avg, old.runnable_avg),
            (0, 0, 0),
            "blocked {blocked}"
        );
        assert_eq!(s.rqs[0].cfs.removed.nr, 0);
    }
}

// ----- exec balancing -----------------------------------------------------

/// sched_exec(): a task alone on its CPU stays there at exec (its own CPU is
/// idle but for itself, idle_cpu_without(), and the local group wins); one
/// that shares its CPU is sent to an idle one by the SD_BALANCE_EXEC slow path.
#[test]
fn exec_balancing_moves_only_a_task_that_shares_its_cpu() {
    let mut s = bare("kunpeng920");
    let t = add_task(&mut s, 0);
    s.enqueue_task(0, t, EnqueueKind::New);
    run_on_cpu0(&mut s, t, 1_000_000);
    let exec = || crate::sim::WF_EXEC;
    assert_eq!(s.select_task_rq(t, 0, 0, None, &mut exec()), 0);
    let u = add_task(&mut s, 0);
    s.enqueue_task(0, u, EnqueueKind::New);
    let dest = s.select_task_rq(t, 0, 0, None, &mut exec());
    assert_ne!(dest, 0);
    assert!(s.is_idle_cpu(dest), "CPU {dest} busy");
}

// ----- SD_SERIALIZE -------------------------------------------------------

/// One balance pass over an SD_SERIALIZE (NUMA) domain runs at a time: a
/// second CPU's pass while the first holds `sched_balance_running` is
/// skipped, while the passes one softirq makes one after another (the nohz
/// ILB's, for each idle CPU) follow each other.
#[test]
fn numa_balancing_passes_are_serialized_machine_wide() {
    let mut s = bare("kunpeng920");
    let numa = s.domains.cpus[0]
        .domains
        .iter()
        .position(|d| d.flags.contains(SdFlags::SERIALIZE))
        .expect("a NUMA level");
    let pass_ns = s
        .machine
        .wakeup
        .balance_pass_ns_for(s.domains.cpus[0].domains[numa].span.weight());
    s.now = 1_000_000;
    // CPU 0 balances its NUMA level (its first idle CPU is itself).
    s.this_cpu = 0;
    s.sched_balance_rq(0, numa, IdleType::Idle);
    assert_eq!(s.sched_balance_running, Some((0, 1_000_000 + pass_ns)));
    // CPU 24 (another node) at the same instant: skipped, the lock unchanged.
    s.this_cpu = 24;
    let before = s.sd[24][numa].balance_interval_ms;
    s.sched_balance_rq(24, numa, IdleType::Idle);
    assert_eq!(s.sched_balance_running, Some((0, 1_000_000 + pass_ns)));
    // A skipped pass counts as balanced: the interval backs off.
    assert_eq!(s.sd[24][numa].balance_interval_ms, 2 * before);
    assert_eq!(s.counters.levels[numa].lb_serialized, 1);
    // CPU 0's softirq balancing for CPU 24 (nohz ILB) goes after its own.
    s.this_cpu = 0;
    s.sched_balance_rq(24, numa, IdleType::Idle);
    assert_eq!(s.sched_balance_running, Some((0, 1_000_000 + 2 * pass_ns)));
    // Once the passes are over, anyone may take it.
    s.now += 3 * pass_ns;
    s.this_cpu = 24;
    s.sched_balance_rq(24, numa, IdleType::Idle);
    assert_eq!(s.sched_balance_running, Some((24, s.now + pass_ns)));
}

/// With group scheduling built in (GROUP_H_LOAD), task_h_load() scales a
/// task's load by the runqueue's load as the jiffy's first call saw it over
/// its current load: once a detach has taken load off the source, the rest
/// look heavier. Kunpeng's MC domain of CPU 1 (vanilla: 24 single-CPU
/// groups): CPU 0 runs 6 hogs, CPU 1 2, the other 22 CPUs 4 each, so
/// migrate_load asks for 2048 (min(6144 − 4096, 4096 − 2048)). Counting
/// each task's load_avg, two 1024-tasks fill it; with h_load the first
/// counts 1023 and the second 1024·6144/5121 > 1025 left, so the kernel
/// moves one.
#[test]
fn task_h_load_makes_later_tasks_of_a_pass_heavier() {
    let moved = |h_load: bool| {
        let mut s = bare("kunpeng920");
        s.cfg.features.set("GROUP_H_LOAD", h_load).unwrap();
        let mc = s.domains.cpus[1]
            .domains
            .iter()
            .position(|d| d.span.weight() == 24)
            .expect("the MC level");
        for cpu in 0..24u16 {
            let n = match cpu {
                0 => 6,
                1 => 2,
                _ => 4,
            };
            for _ in 0..n {
                let t = add_task(&mut s, cpu);
                put(&mut s, cpu, t);
                s.tasks[t as usize].avg.load_avg = 1024;
            }
            let avg = &mut s.rqs[cpu as usize].cfs.avg;
            avg.util_avg = 1024;
            avg.runnable_avg = 1024 * n;
            avg.load_avg = 1024 * n;
        }
        // Balance right away (no decay), long after the tasks last ran
        // (none cache hot).
        for t in 0..s.tasks.len() {
            s.tasks[t].se.exec_start = 0;
        }
        let (moved, _) = s.sched_balance_rq(1, mc, IdleType::NotIdle);
        s.check_invariants().unwrap();
        moved
    };
    assert_eq!(moved(false), 2, "load_avg alone: two tasks fill 2048");
    assert_eq!(moved(true), 1, "task_h_load: the second task looks heavier");
}

/// Exynos 5422 with one misfit task running alone on little CPU 0, the
/// event queue empty at 10 ms: returns the simulator and big CPU 4's PKG
/// level, whose balancing pass pushes the task by active balance.
fn misfit_on_little_cpu0() -> (Sim, usize) {
    let mut s = bare("exynos5422");
    let t = add_task(&mut s, 0);
    put(&mut s, 0, t);
    s.tasks[t as usize].avg.util_avg = 900;
    s.tasks[t as usize].avg.load_avg = 1024;
    let avg = &mut s.rqs[0].cfs.avg;
    avg.util_avg = 900;
    avg.runnable_avg = 1024;
    avg.load_avg = 1024;
    s.update_misfit_status(0, Some(t));
    assert!(s.rqs[0].misfit_task_load > 0, "misfit on the little CPU");
    let pkg = s.domains.cpus[4]
        .domains
        .iter()
        .position(|d| d.span.weight() == 8)
        .expect("the PKG level");
    s.now = 10_000_000;
    while s.q.pop().is_some() {}
    (s, pkg)
}

/// Active balance starts the busiest CPU's stopper with an IPI
/// (stop_one_cpu_nowait()): the push runs one IPI latency after the
/// balancing CPU decided it, and `active_balance` is set meanwhile.
#[test]
fn the_active_balance_stopper_runs_one_ipi_later() {
    let (mut s, pkg) = misfit_on_little_cpu0();
    s.sched_balance_rq(4, pkg, IdleType::Idle);
    assert!(s.rqs[0].active_balance, "the push is pending");
    let ipi = s.machine.wakeup.ipi_ns as u64;
    assert_eq!(
        s.q.pop(),
        Some((
            10_000_000 + ipi,
            EventKind::ActiveBalance { src: 0, dst: 4 }
        ))
    );
}

/// stop_one_cpu_nowait() enqueues the source's stopper at once (the stop
/// class skips the wake list), and add_nr_running() on a runqueue going from
/// one task to two overloads the root domain, which opens newly idle
/// balancing everywhere.
#[test]
fn queuing_the_stopper_behind_a_lone_task_overloads_the_root_domain() {
    let (mut s, pkg) = misfit_on_little_cpu0();
    s.rd_overloaded = false;
    assert_eq!(s.rqs[0].nr_running(), 1);
    s.sched_balance_rq(4, pkg, IdleType::Idle);
    assert!(s.rqs[0].active_balance, "the push is pending");
    assert!(s.rd_overloaded, "the stopper makes two on CPU 0");
}

#[test]
fn a_core_going_idle_with_a_queued_wakeup_on_its_way_is_an_idle_core() {
    // __update_idle_core() tests only the other threads of the core: the
    // CPU entering idle counts as idle even while a wake-list IPI is in
    // flight to it (its ttwu_pending keeps idle_cpu() false).
    let mut s = bare("genoa");
    let cpu: CpuId = 0;
    let sibling = s
        .smt_siblings(cpu)
        .iter()
        .copied()
        .find(|&c| c != cpu)
        .unwrap();
    assert!(s.is_idle_cpu(sibling));
    s.now = 100;
    s.idle_exit(cpu);
    s.set_idle_cores(cpu, false);
    s.now = 200;
    s.rqs[cpu as usize].ttwu_pending = 1;
    s.idle_enter(cpu);
    assert!(s.test_idle_cores(cpu), "the idle-core hint is set");
    // A busy sibling keeps the hint clear.
    s.rqs[cpu as usize].ttwu_pending = 0;
    s.now = 300;
    s.idle_exit(cpu);
    s.set_idle_cores(cpu, false);
    s.rqs[sibling as usize].ttwu_pending = 1;
    s.now = 400;
    s.idle_enter(cpu);
    assert!(!s.test_idle_cores(cpu));
}

#[test]
fn an_idle_period_with_a_queued_wakeup_on_its_way_takes_no_avg_idle_sample() {
    // sched_balance_newidle() returns at ttwu_pending before it stamps the
    // idle period, so update_rq_avg_idle() has nothing to fold in.
    let mut s = bare("kunpeng920");
    let cpu = 5;
    s.now = 100;
    s.idle_exit(cpu);
    let before = s.rqs[cpu as usize].avg_idle;
    s.now = 200;
    s.rqs[cpu as usize].ttwu_pending = 1;
    s.idle_enter(cpu);
    assert_eq!(s.rqs[cpu as usize].idle_stamp, 0);
    s.now = 300;
    s.rqs[cpu as usize].ttwu_pending = 0;
    s.idle_exit(cpu);
    assert_eq!(s.rqs[cpu as usize].avg_idle, before);
    // A stamped idle period of 200 µs is folded in with weight 1/8.
    s.now = 400;
    s.idle_enter(cpu);
    assert_eq!(s.rqs[cpu as usize].idle_stamp, 400);
    s.now = 200_400;
    s.idle_exit(cpu);
    let expect = (before as i64 + (200_000 - before as i64) / 8) as u64;
    assert_ne!(expect, before);
    assert_eq!(s.rqs[cpu as usize].avg_idle, expect);
}

#[test]
fn a_runqueue_left_with_sched_idle_tasks_only_balances_at_its_next_tick() {
    let mut s = bare("kunpeng920");
    let cpu = 2;
    let bg = add_task(&mut s, cpu);
    s.tasks[bg as usize].idle_policy = true;
    let p = add_task(&mut s, cpu);
    let q = add_task(&mut s, cpu);
    s.now = 10 * s.tick_ns + 1234;
    s.update_rq_clock(cpu);
    for t in [bg, p, q] {
        s.enqueue_task(cpu, t, EnqueueKind::Wakeup);
    }
    let far = s.now + 100 * s.tick_ns;
    s.rqs[cpu as usize].next_balance = far;
    // A normal task remains: nothing changes.
    s.dequeue_task(cpu, p, false);
    assert_eq!(s.rqs[cpu as usize].next_balance, far);
    // The last normal task leaves (dequeue_entities()'s was_sched_idle).
    s.dequeue_task(cpu, q, false);
    assert!(s.sched_idle_cpu(cpu));
    assert_eq!(s.rqs[cpu as usize].next_balance, 10 * s.tick_ns);
}

#[test]
fn under_linaro_mp_the_stock_wakeup_search_stays_in_the_llc_without_fit_tests() {
    // Exynos 5422: CPUs 0-3 little (A7), 4-7 big (A15), one LLC each. A
    // task of utilisation 600 (too big for an A7) wakes with its busy
    // little CPU 1 as target; CPU 2 (little) and every big CPU are idle.
    let setup = |linaro: bool| {
        let mut s = bare("exynos5422");
        s.cfg.features.set("HMP_LINARO", linaro).unwrap();
        // CPUs 1 (the target), 0 and 3 run a task each.
        for c in [1u16, 0, 3] {
            let b = add_task(&mut s, c);
            s.update_rq_clock(c);
            s.enqueue_task(c, b, EnqueueKind::Wakeup);
            s.set_next_entity(c, b);
            s.rqs[c as usize].curr = Some(b);
        }
        let p = add_task(&mut s, 1);
        s.tasks[p as usize].util_est_ewma = 600;
        s.select_idle_sibling(p, 1, 1, 1, None)
    };
    // 7.3 with asymmetric capacities: select_idle_capacity() finds a big
    // CPU that fits.
    assert!(setup(false) >= 4);
    // 3.10's select_idle_sibling(): the idle CPU of the target's LLC.
    assert_eq!(setup(true), 2);
}

/// Gives `s` `n` thread templates of one 100 ms compute step, for tasks
/// that [`add_task`] adds by hand and a pick then runs.
fn push_hog_templates(s: &mut Sim, n: usize) {
    for _ in 0..n {
        s.spec.templates.push(crate::scenarios::thread(
            "hog",
            None,
            vec![schedlab_workload::Step::Compute {
                work_ns: 100_000_000,
            }],
        ));
    }
}

#[test]
fn linaro_mp_pulls_from_a_little_cpu_only_when_newidle_balancing_pulled_nothing() {
    // Exynos 5422 under Linaro MP: big CPU 5 goes idle while big CPU 4
    // runs one task and queues another (allowed on the big CPUs), and a
    // heavy task runs on little CPU 0. 3.10's idle_balance() balances the
    // domains first, and hmp_idle_pull() only runs when that pulled nothing.
    let mut s = bare("exynos5422");
    s.cfg.features.set("HMP_LINARO", true).unwrap();
    push_hog_templates(&mut s, 2);
    s.now = 10_000_000;
    let bigs = CpuMask::from_cpus([4, 5, 6, 7]);
    let start = |s: &mut Sim, cpu: u16, affinity: CpuMask, run: bool| {
        let t = add_task(s, cpu);
        s.tasks[t as usize].affinity = affinity;
        s.update_rq_clock(cpu);
        s.enqueue_task(cpu, t, EnqueueKind::Wakeup);
        if run {
            s.set_next_entity(cpu, t);
            s.rqs[cpu as usize].curr = Some(t);
            s.tasks[t as usize].state = crate::task::TaskState::Running;
        } else {
            s.tasks[t as usize].state = crate::task::TaskState::Runnable;
        }
        t
    };
    start(&mut s, 4, bigs, true);
    let queued = start(&mut s, 4, bigs, false);
    let all = s.machine.all_cpus();
    let heavy = start(&mut s, 0, all, true);
    // A load ratio of 1024/1024 (above the 700 up threshold).
    s.tasks[heavy as usize].hmp.ratio_avg = crate::fair::pelt::SchedAvg {
        load_sum: crate::fair::pelt::LOAD_AVG_MAX,
        runnable_sum: crate::fair::pelt::LOAD_AVG_MAX << 10,
        last_update_time: s.now,
        ..Default::default()
    };
    s.rd_overloaded = true;
    s.rqs[5].avg_idle = 1_000_000;
    s.pick_and_switch(5, None);
    assert_eq!(s.tasks[queued as usize].cpu, 5, "newidle balancing pulls");
    assert_eq!(s.tasks[heavy as usize].cpu, 0);
    assert_eq!(s.counters.hmp_up, 0);
}

/// __schedule() clears the reschedule flags after pick_next_task(): the
/// request that a newidle pull's attach makes on the pulling CPU (its
/// wakeup_preempt() on the idle task) is served by that very pick, and the
/// task picked starts with no reschedule due. (Left set, it made the
/// pulled task's first return to user space run schedule() again, and a
/// futex wake of several waiters stop after the first.)
#[test]
fn a_pick_clears_the_reschedule_its_newidle_pull_requested() {
    let mut s = bare("exynos5422");
    push_hog_templates(&mut s, 2);
    s.now = 10_000_000;
    let bigs = CpuMask::from_cpus([4, 5, 6, 7]);
    let mut queued = 0;
    for run in [true, false] {
        let t = add_task(&mut s, 4);
        s.tasks[t as usize].affinity = bigs;
        s.update_rq_clock(4);
        s.enqueue_task(4, t, EnqueueKind::Wakeup);
        if run {
            s.set_next_entity(4, t);
            s.rqs[4].curr = Some(t);
            s.tasks[t as usize].state = crate::task::TaskState::Running;
        } else {
            s.tasks[t as usize].state = crate::task::TaskState::Runnable;
            queued = t;
        }
    }
    s.rd_overloaded = true;
    s.rqs[5].avg_idle = 1_000_000;
    s.pick_and_switch(5, None);
    assert_eq!(s.rqs[5].curr, Some(queued), "newidle balancing pulls");
    assert!(
        !s.rqs[5].need_resched,
        "the pick served the attach's request"
    );
}

#[test]
fn a_wakee_moved_to_a_long_idle_cpu_keeps_its_load_history() {
    // A task runs 60 ms on CPU 0, sleeps 1 ms and wakes onto CPU 2, idle
    // since the start (its clock not updated for 61 ms). Its utilisation
    // decays over its 1 ms of sleep only: the target's clock is brought up
    // to date before the task's load is attached there.
    let mut s = bare("kunpeng920");
    s.cfg.features.set("TTWU_QUEUE", false).unwrap();
    let t = add_task(&mut s, 0);
    s.update_rq_clock(0);
    s.enqueue_task(0, t, EnqueueKind::Wakeup);
    s.tasks[t as usize].state = crate::task::TaskState::Running;
    for ms in 1..=60 {
        run_on_cpu0(&mut s, t, ms * 1_000_000);
        s.update_rq_clock(0);
        s.update_load_avg(0, t);
    }
    let before = s.tasks[t as usize].avg.util_avg;
    assert!(before > 600, "{before}");
    s.dequeue_task(0, t, false);
    s.rqs[0].curr = None;
    s.rqs[0].cfs.curr = None;
    s.tasks[t as usize].state = crate::task::TaskState::Blocked;
    s.now = 61_000_000;
    s.tasks[t as usize].affinity = CpuMask::from_cpus([2]);
    s.try_to_wake_up(t, 0, None, 0);
    assert_eq!(s.tasks[t as usize].cpu, 2);
    let after = s.tasks[t as usize].avg.util_avg;
    // 1 ms of decay is ~2% (y^1 with y^32 = 1/2).
    assert!(after * 100 >= before * 95, "{before} -> {after}");
}

/// The fork path's idlest CPU of a group is the one in the shallowest idle
/// state by exit latency (POLL's 0 before C1E's 2 µs), and among equals the
/// one that went idle last (sched_balance_find_dst_group_cpu()).
#[test]
fn the_idlest_cpu_of_a_group_is_in_the_shallowest_idle_state() {
    let mut s = bare("sapphirerapids");
    let t = add_task(&mut s, 0);
    let span = CpuMask::from_cpus([2, 4, 6]);
    let c1e = s
        .machine
        .wakeup
        .idle_states
        .iter()
        .position(|x| x.name == "C1E");
    let c1e = c1e.expect("C1E") as u8;
    for (cpu, state, stamp) in [(2, c1e, 300), (4, 0, 100), (6, 0, 200)] {
        s.rqs[cpu].idle_state = state;
        s.rqs[cpu].idle_stamp = stamp;
    }
    assert_eq!(s.find_dst_group_cpu(&span, t, 0), 6);
    s.rqs[6].idle_state = c1e;
    assert_eq!(s.find_dst_group_cpu(&span, t, 0), 4);
    s.rqs[4].idle_state = c1e;
    assert_eq!(s.find_dst_group_cpu(&span, t, 0), 2);
}

/// A tick that comes while a CPU snoozes is taken inside the loop: no
/// governor sample then, but the period it fell into counts as a tick
/// wakeup when it ends, here by the loop's time limit (menu_update() looks
/// at the tick before the poll timeout): 45 ms, not the next timer.
#[test]
fn a_tick_taken_while_polling_counts_when_the_period_ends() {
    let mut s = bare("power10");
    s.now = 1_000_000;
    s.rqs[3].menu_since_ns = s.now;
    s.enter_idle_state(3, 0);
    assert!(s.machine.wakeup.idle_states[0].poll_loop);
    s.now = 1_040_000;
    s.idle_tick(3);
    assert!(s.rqs[3].got_idle_tick);
    assert_eq!(s.rqs[3].menu.ptr, 0);
    s.now = 1_100_000;
    s.poll_timeout(3);
    assert!(!s.rqs[3].got_idle_tick);
    assert_eq!(s.rqs[3].menu.ptr, 1);
    assert_eq!(s.rqs[3].menu.intervals_us[0], 45_000);
}

/// A CPU that enters its polling loop again before the last loop's limit
/// came keeps one limit event queued: the new limit waits behind the old
/// event, which queues it when it fires, and the loop ends at the new limit.
#[test]
fn a_polling_cpu_keeps_one_time_limit_event_queued() {
    let mut s = bare("power10");
    let cpu = 3;
    let polls = |s: &Sim| -> Vec<u64> {
        let mut v: Vec<u64> =
            s.q.events()
                .filter(|(_, ev)| matches!(ev, EventKind::PollTimeout { cpu: c, .. } if *c == cpu))
                .map(|(t, _)| t)
                .collect();
        v.sort_unstable();
        v
    };
    let mut armed = Vec::new();
    for i in 0..5 {
        s.now = 1_000_000 + i * 2_000;
        s.enter_idle_state(cpu, 0);
        assert!(s.machine.wakeup.idle_states[0].poll_loop);
        armed.push(s.rqs[cpu as usize].poll_limit.expires_ns().expect("armed"));
    }
    assert!(armed.windows(2).all(|w| w[0] < w[1]), "{armed:?}");
    // One event, at the first limit; the last limit is the one armed.
    assert_eq!(polls(&s), vec![armed[0]]);
    // An event pushed after the last limit was armed, for the same instant:
    // with the sequence number reserved at arming, the limit still pops
    // first, as it did when every limit had its own event.
    let marker = EventKind::Resched { cpu: 0 };
    s.q.push(armed[4], marker);
    // The first event fires and queues the last limit, which ends the loop.
    let mut fired = Vec::new();
    while s.rqs[cpu as usize].idle_state == 0 {
        let (t, ev) = s.q.pop().expect("an event");
        s.now = t;
        if matches!(ev, EventKind::PollTimeout { cpu: c, .. } if c == cpu) {
            fired.push(t);
        }
        assert_ne!(ev, marker, "the marker popped before the polling limit");
        s.dispatch(ev);
    }
    assert_eq!(fired, vec![armed[0], armed[4]]);
    assert!(polls(&s).is_empty());
}

#[test]
fn a_second_newidle_pass_restarts_the_idle_period() {
    // An idle CPU rescheduled with nothing to run passes through
    // sched_balance_newidle() again, which stamps the idle period anew.
    let mut s = bare("kunpeng920");
    let cpu = 5;
    s.now = 100;
    s.idle_exit(cpu);
    s.now = 200;
    s.idle_enter(cpu);
    assert_eq!(s.rqs[cpu as usize].idle_stamp, 200);
    s.now = 900;
    assert_eq!(s.sched_balance_newidle(cpu), 0);
    assert_eq!(s.rqs[cpu as usize].idle_stamp, 900);
}

#[test]
fn a_tick_behind_the_idle_task_with_work_queued_decides_the_nohz_kick() {
    // sched_tick() on a CPU whose idle task is still current but which has
    // tasks queued: idle_cpu() is false, so nohz_balancer_kick() runs and,
    // with two tasks here and the idle CPUs' balance due, kicks an idle CPU.
    let mut s = bare("kunpeng920");
    let cpu = 5;
    for _ in 0..2 {
        let t = add_task(&mut s, cpu);
        s.update_rq_clock(cpu);
        s.enqueue_task(cpu, t, EnqueueKind::New);
        s.tasks[t as usize].state = crate::task::TaskState::Runnable;
    }
    assert!(s.rqs[cpu as usize].curr.is_none() && !s.is_idle_cpu(cpu));
    s.now = 4_000_000;
    s.nohz_next_balance = 0;
    while s.q.pop().is_some() {}
    s.idle_tick(cpu);
    let mut kicked = false;
    while let Some((_, ev)) = s.q.pop() {
        kicked |= matches!(ev, EventKind::NohzBalance { .. });
    }
    assert!(kicked, "a nohz balance kick was sent");
}

#[test]
fn next_buddy_nominates_the_wakee_and_obeys_the_sync_hint() {
    use crate::sim::{WF_RQ_SELECTED, WF_SYNC, WF_TTWU};
    // A has run 0.5 ms of its 2.8 ms slice, protected to 1.4 ms; B wakes
    // with the base slice (placed at V, eligible, deadline after A's).
    for next_buddy in [false, true] {
        let (mut s, _) = curr_ran_half_ms("NEXT_BUDDY", next_buddy);
        let b = wake_with_slice(&mut s, 0, 0);
        s.rqs[0].need_resched = false;
        s.wakeup_preempt(0, b, 0, WF_TTWU | WF_RQ_SELECTED);
        // Without NEXT_BUDDY A's protection holds; with it B is the next
        // buddy, which the protected pick takes while eligible: preempt.
        assert_eq!(s.rqs[0].need_resched, next_buddy, "NEXT_BUDDY {next_buddy}");
        assert_eq!(s.rqs[0].cfs.next, next_buddy.then_some(b));
    }
    // A sync wakeup: the waker was just charged (update_curr()), so it has
    // not run migration_cost_ns since: no preemption, not even by the
    // pick, but B is the buddy for when A blocks.
    let (mut s, _) = curr_ran_half_ms("NEXT_BUDDY", true);
    let b = wake_with_slice(&mut s, 0, 0);
    s.rqs[0].need_resched = false;
    s.wakeup_preempt(0, b, 0, WF_TTWU | WF_SYNC | WF_RQ_SELECTED);
    assert!(!s.rqs[0].need_resched);
    assert_eq!(s.rqs[0].cfs.next, Some(b));
    // With migration_cost_ns 0 the hint gives way, but only to an earlier
    // deadline: B (deadline after A's) does not preempt, C, which slept
    // with a lag of 2 ms and so has the earlier deadline, does.
    let (mut s, a) = curr_ran_half_ms("NEXT_BUDDY", true);
    s.cfg.tunables.migration_cost_ns = 0;
    let b = wake_with_slice(&mut s, 0, 0);
    s.rqs[0].need_resched = false;
    s.wakeup_preempt(0, b, 0, WF_TTWU | WF_SYNC);
    assert!(!s.rqs[0].need_resched, "B's deadline is later than A's");
    let c = add_task(&mut s, 0);
    s.tasks[c as usize].se.vlag = 2_000_000;
    s.enqueue_task(0, c, EnqueueKind::Wakeup);
    s.tasks[c as usize].state = crate::task::TaskState::Runnable;
    let (ad, cd) = (
        s.tasks[a as usize].se.deadline,
        s.tasks[c as usize].se.deadline,
    );
    assert!((cd.wrapping_sub(ad) as i64) < 0, "{cd} {ad}");
    s.wakeup_preempt(0, c, 0, WF_TTWU | WF_SYNC);
    assert!(
        s.rqs[0].need_resched,
        "an earlier deadline preempts at once"
    );
    assert_eq!(s.rqs[0].cfs.next, Some(c), "C's deadline beats buddy B's");
}

/// sched_setattr() with a new nice value on the running task, by hand: A
/// (curr, nice 0) has run 1 ms ahead of B, so V = 0.5 ms and A's lag is
/// -0.5 ms with 0.4 ms of its request left. Dequeued with DEQUEUE_SAVE and
/// reweighted to nice 5 (335), A's saved lag and relative deadline are
/// rescaled by 1024/335 at the enqueue (rescale_entity()), towards zero:
/// -500 000 → -1 528 358 and 400 000 → 1 222 686. Placed again against B
/// alone (V = 0), the lag is inflated for A's own weight,
/// -1 528 358 · (1024 + 335) / 1024 → -2 028 357. A keeps its real lag:
/// w·vlag = 335 · -1 528 358 ≈ 1024 · -500 000.
#[test]
fn renicing_the_running_task_keeps_its_real_lag() {
    let mut s = bare("kunpeng920");
    let a = add_task(&mut s, 0);
    let b = add_task(&mut s, 0);
    put(&mut s, 0, a);
    put(&mut s, 0, b);
    assert_eq!(s.tasks[a as usize].se.deadline, 1_400_000);
    s.now = 1_000_000;
    s.update_curr(0);
    assert_eq!(s.avg_vruntime(0), 500_000);
    let vprot = s.tasks[a as usize].se.vprot;
    s.sched_setattr_fair(
        a,
        &schedlab_workload::Attrs {
            policy: schedlab_workload::SchedPolicy::Normal,
            nice: Some(5),
            runtime_ns: None,
            util_min: None,
            util_max: None,
        },
    );
    let se = s.tasks[a as usize].se;
    assert_eq!(se.vlag, -1_528_358);
    assert_eq!(
        (se.weight, se.vruntime, se.deadline),
        (335, 2_028_357, 2_028_357 + 1_222_686)
    );
    assert_eq!(s.rqs[0].cfs.curr, Some(a));
    // set_next_task() with `first` false: the protection stays.
    assert_eq!(se.vprot, vprot);
    let real_lag = (s.avg_vruntime(0) as i64 - se.vruntime as i64) * 335;
    assert!((real_lag + 500_000 * 1024).abs() <= 2 * 1024, "{real_lag}");
    // A higher nice value with B waiting: A's CPU reschedules.
    assert!(s.rqs[0].need_resched);
}
