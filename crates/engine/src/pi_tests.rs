//! Priority inheritance and futex wake order, invariants checked after
//! every event.

use crate::event::TaskId;
use crate::scenarios::{quiet_sim, set_policy as set, template_cpu_ns as cpu_ns, threads_spec};
use crate::sim::{Sim, StopReason};
use schedlab_workload::{SchedPolicy, Step, SyncObject, WorkloadSpec};

const MS: u64 = 1_000_000;

fn work(ns: u64) -> Step {
    Step::Compute { work_ns: ns }
}

fn lock(m: u32) -> Step {
    Step::Lock { mutex: m }
}

fn unlock(m: u32) -> Step {
    Step::Unlock { mutex: m }
}

fn sleep(ns: u64) -> Step {
    Step::Sleep { ns }
}

/// The threads with `sync` objects, on exynos5422 (CPUs 4-7 are the A15s).
fn sim(threads: Vec<crate::scenarios::TestThread>, sync: Vec<SyncObject>, max_ns: u64) -> Sim {
    let spec = WorkloadSpec {
        sync,
        ..threads_spec("pi", threads, max_ns)
    };
    quiet_sim("exynos5422", spec)
}

/// `ns` is 1 ms of CPU time, plus at most a microsecond of lock cache-line
/// transfers.
fn one_ms(ns: u64) -> bool {
    (MS..MS + 1_000).contains(&ns)
}

/// The task made from template `tpl` (one task per template here).
fn task(s: &Sim, tpl: u32) -> TaskId {
    s.tasks
        .iter()
        .position(|t| t.template == tpl)
        .expect("task") as TaskId
}

/// The classic inversion on one CPU: a fair task holds the lock an RT task
/// (FIFO 90) wants while an RT hog of middle priority (FIFO 50) wakes.
/// Without inheritance the hog runs and the RT waiter waits for it; with a
/// PI mutex the holder runs at priority 90, finishes its critical section
/// first, and the lock passes to the waiter.
#[test]
fn inheritance_bounds_a_priority_inversion() {
    let run = |kind: SyncObject| {
        let mut s = sim(
            vec![
                (
                    "low",
                    Some(vec![5]),
                    vec![sleep(MS), lock(0), work(5 * MS), unlock(0)],
                ),
                (
                    "high",
                    Some(vec![5]),
                    vec![
                        set(SchedPolicy::Fifo(90)),
                        sleep(2 * MS),
                        lock(0),
                        work(MS),
                        unlock(0),
                    ],
                ),
                (
                    "mid",
                    Some(vec![5]),
                    vec![
                        set(SchedPolicy::Fifo(50)),
                        sleep(2 * MS + MS / 2),
                        work(50 * MS),
                    ],
                ),
            ],
            vec![kind],
            20 * MS,
        );
        assert_eq!(s.run(), StopReason::TimeLimit);
        s
    };
    let plain = run(SyncObject::Mutex);
    // The holder waits behind the hog; so does the RT waiter.
    assert_eq!(cpu_ns(&plain, 1), 0, "high ran without the lock");
    assert!(cpu_ns(&plain, 0) < 3 * MS, "low {}", cpu_ns(&plain, 0));
    assert_eq!(plain.counters.pi_boosts, 0);
    let pi = run(SyncObject::PiMutex);
    assert_eq!(cpu_ns(&pi, 0), 5 * MS, "low finished its section");
    assert!(one_ms(cpu_ns(&pi, 1)), "high got the lock and ran");
    assert_eq!(pi.counters.pi_boosts, 1);
    // The boost ended at the unlock: low is a fair task again.
    let low = task(&pi, 0);
    assert!(pi.tasks[low as usize].rt.is_none());
    assert!(!pi.pi_boosted(low));
}

/// A boost passes along a chain: `high` (FIFO 80) waits for m1, owned by
/// `mid`, which waits for m0, owned by `low`; both owners run at 80's
/// priority (kernel prio 19) until they unlock.
#[test]
fn a_boost_passes_along_a_chain_of_locks() {
    let threads = || {
        vec![
            (
                "low",
                Some(vec![5]),
                vec![lock(0), work(10 * MS), unlock(0)],
            ),
            (
                "mid",
                Some(vec![6]),
                vec![lock(1), sleep(MS), lock(0), work(MS), unlock(0), unlock(1)],
            ),
            (
                "high",
                Some(vec![7]),
                vec![
                    set(SchedPolicy::Fifo(80)),
                    sleep(3 * MS),
                    lock(1),
                    work(MS),
                    unlock(1),
                ],
            ),
        ]
    };
    let sync = vec![SyncObject::PiMutex, SyncObject::PiMutex];
    let mut s = sim(threads(), sync.clone(), 4 * MS);
    assert_eq!(s.run(), StopReason::TimeLimit);
    let (low, mid) = (task(&s, 0), task(&s, 1));
    assert_eq!(s.tasks[low as usize].rt.map(|r| r.prio), Some(19));
    assert_eq!(s.tasks[mid as usize].rt.map(|r| r.prio), Some(19));
    assert!(s.pi_boosted(low) && s.pi_boosted(mid));
    let mut s = sim(threads(), sync, 100 * MS);
    assert_eq!(s.run(), StopReason::Finished);
    for t in [low, mid] {
        assert!(s.tasks[t as usize].rt.is_none() && !s.pi_boosted(t));
    }
    assert!(one_ms(cpu_ns(&s, 2)));
}

/// A plain futex wakes its best-priority waiter first, not its oldest: the
/// RT waiter that came second takes the lock at the unlock.
#[test]
fn a_futex_wakes_its_best_priority_waiter_first() {
    let mut s = sim(
        vec![
            (
                "holder",
                Some(vec![4]),
                vec![lock(0), work(5 * MS), unlock(0)],
            ),
            (
                "fair",
                Some(vec![5]),
                vec![sleep(MS), lock(0), work(5 * MS), unlock(0)],
            ),
            (
                "rt",
                Some(vec![6]),
                vec![
                    set(SchedPolicy::Fifo(10)),
                    sleep(2 * MS),
                    lock(0),
                    work(5 * MS),
                    unlock(0),
                ],
            ),
        ],
        vec![SyncObject::Mutex],
        8 * MS,
    );
    assert_eq!(s.run(), StopReason::TimeLimit);
    assert_eq!(s.ipc.mutex_owner(0), Some(task(&s, 2)));
    assert_eq!(cpu_ns(&s, 1), 0);
}

/// An unlock hands a PI mutex to its waiter: an owner that unlocks and
/// locks again at once cannot take it back, as it does a plain futex
/// before the woken waiter runs.
#[test]
fn an_unlock_hands_a_pi_mutex_to_its_waiter() {
    let run = |kind: SyncObject| {
        let mut s = sim(
            vec![
                (
                    "looper",
                    Some(vec![4]),
                    vec![
                        lock(0),
                        work(MS),
                        unlock(0),
                        Step::Loop {
                            start: 0,
                            count: 20,
                            slot: 0,
                        },
                    ],
                ),
                (
                    "waiter",
                    Some(vec![5]),
                    vec![sleep(MS / 2), lock(0), work(MS), unlock(0)],
                ),
            ],
            vec![kind],
            5 * MS,
        );
        assert_eq!(s.run(), StopReason::TimeLimit);
        cpu_ns(&s, 1)
    };
    assert_eq!(run(SyncObject::Mutex), 0);
    assert!(one_ms(run(SyncObject::PiMutex)));
}

/// sched_setattr() under a boost changes the task's own policy and keeps
/// the lent priority until the unlock, after which the new policy holds.
#[test]
fn setattr_under_a_boost_keeps_the_lent_priority() {
    let threads = || {
        vec![
            (
                "low",
                Some(vec![5]),
                vec![
                    lock(0),
                    work(3 * MS),
                    set(SchedPolicy::Fifo(10)),
                    work(3 * MS),
                    unlock(0),
                    work(3 * MS),
                ],
            ),
            (
                "high",
                Some(vec![4]),
                vec![set(SchedPolicy::Fifo(80)), sleep(MS), lock(0), unlock(0)],
            ),
        ]
    };
    let mut s = sim(threads(), vec![SyncObject::PiMutex], 4 * MS);
    s.run();
    let low = task(&s, 0);
    assert_eq!(s.tasks[low as usize].rt.map(|r| r.prio), Some(19));
    assert_eq!(s.normal_rt(low).map(|n| n.prio), Some(89));
    let mut s = sim(threads(), vec![SyncObject::PiMutex], 8 * MS);
    s.run();
    assert_eq!(s.tasks[low as usize].rt.map(|r| r.prio), Some(89));
    assert!(!s.pi_boosted(low));
}

/// A task that exits owning a PI mutex passes it to its first waiter
/// (exit_pi_state_list()); a plain futex stays locked, its waiter stalled.
#[test]
fn an_exiting_owner_passes_its_pi_mutex_on() {
    let run = |kind: SyncObject| {
        let mut s = sim(
            vec![
                ("owner", Some(vec![4]), vec![lock(0), work(MS)]),
                (
                    "waiter",
                    Some(vec![5]),
                    vec![sleep(MS / 2), lock(0), work(MS), unlock(0)],
                ),
            ],
            vec![kind],
            10 * MS,
        );
        let stop = s.run();
        (stop, cpu_ns(&s, 1))
    };
    let (stop, waiter_ns) = run(SyncObject::PiMutex);
    assert_eq!(stop, StopReason::Finished);
    assert!(one_ms(waiter_ns));
    assert_eq!(run(SyncObject::Mutex).1, 0);
}
