//! 3.10's CFS (feature EEVDF off), hand-computed: the knobs, START_DEBIT,
//! the sleeper credit, the floors across a migration, the wakeup
//! granularity, the skip buddy, and in whole runs the tick's sched_slice()
//! turns and a sleeper's immediate preemption.

use super::fidelity_tests::bare;
use crate::event::TaskId;
use crate::scenarios::{cpu_hogs, quiet_sim, run_sleep_rounds, threads_spec};
use crate::sim::{EnqueueKind, Sim};
use crate::task::{Task, TaskState};
use schedlab_topo::CpuMask;
use schedlab_workload::Step;

const MS: u64 = 1_000_000;

/// An idle exynos5422 (8 CPUs: the knobs ×4) under CFS.
fn cfs_bare() -> Sim {
    let mut s = bare("exynos5422");
    s.cfg.features.set("EEVDF", false).unwrap();
    s
}

fn add_task(s: &mut Sim, cpu: u16) -> TaskId {
    let id = s.tasks.len() as TaskId;
    let mut t = Task::new(id, "t", 1, 0, 0, s.machine.all_cpus());
    t.cpu = cpu;
    t.se.vrt_cpu = cpu;
    s.tasks.push(t);
    id
}

fn run(s: &mut Sim, cpu: u16, t: TaskId) {
    s.set_next_entity(cpu, t);
    s.rqs[cpu as usize].curr = Some(t);
    s.tasks[t as usize].state = TaskState::Running;
}

fn vr(s: &Sim, t: TaskId) -> u64 {
    s.tasks[t as usize].se.vruntime
}

#[test]
fn the_knobs_are_310s_defaults_scaled_by_log2_cpus() {
    let t = crate::tunables::Tunables::default();
    let k = t.cfs310(8);
    assert_eq!(
        (k.latency_ns, k.min_granularity_ns, k.wakeup_granularity_ns),
        (24 * MS, 3 * MS, 4 * MS)
    );
    let k = t.cfs310(2);
    assert_eq!(
        (k.latency_ns, k.min_granularity_ns, k.wakeup_granularity_ns),
        (12 * MS, 1_500_000, 2 * MS)
    );
}

#[test]
fn new_tasks_start_a_virtual_slice_past_the_floor() {
    // START_DEBIT on an empty runqueue: the whole 24 ms period; then the
    // period split between two (12 ms) and three (8 ms) tasks. The last
    // starts furthest left and is picked.
    let mut s = cfs_bare();
    let ids: Vec<TaskId> = (0..3).map(|_| add_task(&mut s, 0)).collect();
    for &t in &ids {
        s.enqueue_task(0, t, EnqueueKind::New);
    }
    let v: Vec<u64> = ids.iter().map(|&t| vr(&s, t)).collect();
    assert_eq!(v, vec![24 * MS, 12 * MS, 8 * MS]);
    for &t in &ids {
        assert_eq!(s.tasks[t as usize].se.deadline, vr(&s, t));
    }
    assert_eq!(s.pick_eevdf(0, true), Some(ids[2]));
}

/// cpu0 of a CFS exynos5422 with task `a` new and running alone until
/// `until_ns`, and task `b` blocked there.
fn one_running_until(until_ns: u64) -> (Sim, TaskId, TaskId) {
    let mut s = cfs_bare();
    let (a, b) = (add_task(&mut s, 0), add_task(&mut s, 0));
    s.enqueue_task(0, a, EnqueueKind::New);
    run(&mut s, 0, a);
    s.now = until_ns;
    s.update_curr(0);
    (s, a, b)
}

#[test]
fn a_long_sleeper_wakes_half_a_period_behind_the_floor_and_preempts() {
    // The hog runs alone for 100 ms: the floor follows it.
    let (mut s, hog, sleeper) = one_running_until(100 * MS);
    let floor = s.rqs[0].cfs.min_vruntime;
    assert_eq!(floor, vr(&s, hog));
    assert_eq!(floor, 124 * MS);
    // The sleeper's vruntime is far behind (0): it is placed at the floor
    // less 12 ms (GENTLE_FAIR_SLEEPERS), and 12 ms > the 4 ms granularity.
    s.tasks[sleeper as usize].state = TaskState::Runnable;
    s.enqueue_task(0, sleeper, EnqueueKind::Wakeup);
    assert_eq!(vr(&s, sleeper), floor - 12 * MS);
    assert_eq!(s.wakeup_preempt_entity(hog, sleeper), 1);
    s.wakeup_preempt_fair(0, sleeper, 0, 0);
    assert!(s.rqs[0].need_resched);
    assert_eq!(s.rqs[0].cfs.next, Some(sleeper));
    // Two tasks are fewer than sched_nr_latency (8): no last buddy.
    assert_eq!(s.rqs[0].cfs.last, None);
    assert_eq!(s.pick_eevdf(0, true), Some(sleeper));
}

#[test]
fn a_wakee_within_the_wakeup_granularity_does_not_preempt() {
    let (mut s, hog, w) = one_running_until(10 * MS);
    // A short sleeper keeps its own vruntime: 3 ms behind the hog.
    s.tasks[w as usize].se.vruntime = vr(&s, hog) - 3 * MS;
    s.tasks[w as usize].state = TaskState::Runnable;
    s.enqueue_task(0, w, EnqueueKind::Wakeup);
    assert_eq!(vr(&s, w), vr(&s, hog) - 3 * MS);
    assert_eq!(s.wakeup_preempt_entity(hog, w), 0);
    s.wakeup_preempt_fair(0, w, 0, 0);
    assert!(!s.rqs[0].need_resched);
    // 5 ms behind is past the 4 ms granularity.
    s.dequeue_task(0, w, true);
    s.tasks[w as usize].se.vruntime = vr(&s, hog) - 5 * MS;
    s.enqueue_task(0, w, EnqueueKind::Wakeup);
    s.wakeup_preempt_fair(0, w, 0, 0);
    assert!(s.rqs[0].need_resched);
}

#[test]
fn a_migrating_task_keeps_its_place_relative_to_the_floor() {
    let (mut s, _, m) = one_running_until(50 * MS);
    let f0 = s.rqs[0].cfs.min_vruntime;
    assert_eq!(f0, 74 * MS);
    // cpu1's floor is further on (it ran other work).
    let f1 = 200 * MS;
    s.rqs[1].cfs.min_vruntime = f1;
    // m is queued on cpu0 2 ms past its floor...
    s.tasks[m as usize].se.vruntime = f0 + 2 * MS;
    s.tasks[m as usize].state = TaskState::Runnable;
    s.enqueue_task(0, m, EnqueueKind::Migrated);
    assert_eq!(vr(&s, m), f0 + 2 * MS);
    // ...and the balancer moves it: 2 ms past cpu1's.
    s.dequeue_task(0, m, false);
    s.enqueue_task(1, m, EnqueueKind::Migrated);
    assert_eq!(vr(&s, m), f1 + 2 * MS);
    assert_eq!(s.tasks[m as usize].se.vrt_cpu, 1);
    // A queued task's dequeue leaves the floor at curr's vruntime.
    assert_eq!(s.rqs[0].cfs.min_vruntime, f0);
}

#[test]
fn a_moved_task_is_measured_against_the_floor_before_its_dequeue_raised_it() {
    // m is queued at cpu0's floor and holds it there while a runs on; the
    // balancer's dequeue makes m relative to that floor (0 past it) before
    // the floor rises to a's vruntime, so m lands at cpu1's floor.
    let (mut s, _, m) = one_running_until(50 * MS);
    let f0 = s.rqs[0].cfs.min_vruntime;
    s.tasks[m as usize].se.vruntime = f0;
    s.tasks[m as usize].state = TaskState::Runnable;
    s.enqueue_task(0, m, EnqueueKind::Migrated);
    s.now = 60 * MS;
    s.update_curr(0);
    assert_eq!(s.rqs[0].cfs.min_vruntime, f0, "m holds the floor");
    s.dequeue_task(0, m, false);
    assert_eq!(s.rqs[0].cfs.min_vruntime, f0 + 10 * MS, "the floor rose");
    let f1 = 200 * MS;
    s.rqs[1].cfs.min_vruntime = f1;
    s.enqueue_task(1, m, EnqueueKind::Migrated);
    assert_eq!(vr(&s, m), f1);
}

/// Two new tasks on cpu0, a at 24 ms and b at 12 ms (START_DEBIT); b,
/// leftmost, runs and yields (the skip buddy).
fn two_new_the_second_yielding() -> (Sim, TaskId, TaskId) {
    let mut s = cfs_bare();
    let (a, b) = (add_task(&mut s, 0), add_task(&mut s, 0));
    s.enqueue_task(0, a, EnqueueKind::New);
    s.enqueue_task(0, b, EnqueueKind::New);
    run(&mut s, 0, b);
    s.rqs[0].cfs.skip = Some(b);
    (s, a, b)
}

#[test]
fn a_curr_picked_again_starts_a_new_turn_and_loses_its_buddies() {
    // 3.10's __schedule() puts prev back and sets it again, so a yield
    // whose yielder is picked again (the other task is more than the
    // wakeup granularity ahead of it) clears the skip buddy and restarts
    // the turn check_preempt_tick() measures.
    let (mut s, _, b) = two_new_the_second_yielding();
    // b runs 2 ms, 10 ms behind a.
    s.now = 2 * MS;
    s.schedule(0);
    assert_eq!(s.rqs[0].curr, Some(b));
    assert_eq!(s.rqs[0].cfs.skip, None);
    let se = s.tasks[b as usize].se;
    assert_eq!(se.sum_exec_runtime, 2 * MS);
    assert_eq!(se.prev_sum_exec_runtime, se.sum_exec_runtime);
}

#[test]
fn a_yielding_task_is_passed_over_for_one_close_behind_it() {
    let (mut s, a, b) = two_new_the_second_yielding();
    // a leads b by 12 ms, past the granularity: b runs on.
    assert_eq!(s.pick_eevdf(0, true), Some(b));
    // After 10 ms b is 2 ms behind a: within the granularity, a runs.
    s.now = 10 * MS;
    s.update_curr(0);
    assert_eq!(s.pick_eevdf(0, true), Some(a));
}

/// The turns of two hogs pinned to one CPU of exynos5422 under `eevdf`
/// on/off, with the tunable writes `tunables`: switches between them in
/// 400 ms.
fn switches_of_two_pinned_hogs(eevdf: bool, tunables: &[&str]) -> u64 {
    let mut s = quiet_sim(
        "exynos5422",
        cpu_hogs(2, u64::MAX / 4, Some(CpuMask::from_cpus([4])), 400 * MS),
    );
    s.cfg.features.set("EEVDF", eevdf).unwrap();
    for t in tunables {
        s.cfg.tunables.apply(t).unwrap();
    }
    s.cfs310 = s.cfg.tunables.cfs310(s.machine.nr_cpus());
    s.run();
    s.tasks
        .iter()
        .filter(|t| !t.kthread)
        .map(|t| t.stats.nr_switches)
        .sum()
}

#[test]
fn two_hogs_take_turns_of_their_sched_slice_rounded_up_to_a_tick() {
    // sched_slice() = 24 ms / 2 = 12 ms; the 4 ms tick sees 12 ms not yet
    // exceeded and switches at 16 ms: 25 turns in 400 ms. EEVDF's 2.8 ms
    // request ends at the tick after it: 4 ms turns, 100 of them.
    let cfs = switches_of_two_pinned_hogs(false, &[]);
    assert!((24..=27).contains(&cfs), "CFS: {cfs} switches");
    let eevdf = switches_of_two_pinned_hogs(true, &[]);
    assert!((95..=102).contains(&eevdf), "EEVDF: {eevdf} switches");
    // sched_latency_ns=12 ms: 6 ms slices, a switch at the 8 ms tick.
    let short = switches_of_two_pinned_hogs(false, &["sched_latency_ns=12000000"]);
    assert!(
        (48..=52).contains(&short),
        "CFS, 12 ms latency: {short} switches"
    );
}

/// The mean wait per wakeup of a 1 ms job every 20 ms next to a hog on
/// CPU 4 of exynos5422 under CFS, with full preemption (as the S5 kernels
/// had it).
fn sleeper_wait_ns() -> u64 {
    let cpu4 = Some(vec![4u16]);
    let spec = threads_spec(
        "sleeper",
        vec![
            (
                "hog",
                cpu4.clone(),
                vec![Step::Compute {
                    work_ns: u64::MAX / 4,
                }],
            ),
            ("job", cpu4, run_sleep_rounds(MS, 19 * MS, 100)),
        ],
        u64::MAX,
    );
    let mut s = quiet_sim("exynos5422", spec);
    s.cfg.features.set("EEVDF", false).unwrap();
    s.cfg.features.set("PREEMPT_LAZY", false).unwrap();
    // After its start, which under CFS waits for the hog's first turn
    // (START_DEBIT).
    s.run_until(50 * MS);
    let job = s.tasks.iter().position(|t| &*t.name == "job").unwrap();
    let before = s.tasks[job].stats;
    s.run_until(450 * MS);
    let after = s.tasks[job].stats;
    let wakeups = after.wakeups - before.wakeups;
    assert_eq!(wakeups, 20);
    (after.wait_time_ns - before.wait_time_ns) / wakeups
}

#[test]
fn a_periodic_sleeper_next_to_a_hog_runs_as_soon_as_it_wakes() {
    // Its wakeups are placed 12 ms behind the floor, 8 ms past the
    // granularity: each preempts the hog at once.
    let cfs = sleeper_wait_ns();
    assert!(cfs < 50_000, "CFS: waited {cfs} ns per wakeup");
}

#[test]
fn the_balancer_keeps_eevdfs_eligibility_rule_out_of_cfs() {
    // a runs 1 ms beside b on cpu0: under EEVDF it is then ineligible
    // (v = 1 ms > V = 0.5 ms), and a first-try balance to a busy cpu1 may
    // not take it (task_is_ineligible_on_dst_cpu()); 3.10's
    // can_migrate_task() has no such test.
    for eevdf in [true, false] {
        let mut s = bare("exynos5422");
        s.cfg.features.set("EEVDF", eevdf).unwrap();
        let (a, b, c) = (
            add_task(&mut s, 0),
            add_task(&mut s, 0),
            add_task(&mut s, 1),
        );
        s.enqueue_task(0, a, EnqueueKind::New);
        s.enqueue_task(0, b, EnqueueKind::New);
        s.enqueue_task(1, c, EnqueueKind::New);
        run(&mut s, 0, a);
        s.now = MS;
        s.update_curr(0);
        assert_eq!(s.ineligible_on_dst(0, 1, a, 0), eevdf, "EEVDF {eevdf}");
        // After a failed attempt, or to an idle dst, the rule never holds.
        assert!(!s.ineligible_on_dst(0, 1, a, 1));
        assert!(!s.ineligible_on_dst(0, 2, a, 0));
    }
}
