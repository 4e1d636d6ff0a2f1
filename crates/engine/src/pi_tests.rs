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

/// A thread that takes `policy` (if any), sleeps `after_ns` (if any), then
/// holds mutex 0 for `hold_ns` of work.
fn locker(policy: Option<SchedPolicy>, after_ns: u64, hold_ns: u64) -> Vec<Step> {
    let mut v: Vec<Step> = policy.map(set).into_iter().collect();
    if after_ns > 0 {
        v.push(sleep(after_ns));
    }
    v.push(lock(0));
    if hold_ns > 0 {
        v.push(work(hold_ns));
    }
    v.push(unlock(0));
    v
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
                ("low", Some(vec![5]), locker(None, MS, 5 * MS)),
                (
                    "high",
                    Some(vec![5]),
                    locker(Some(SchedPolicy::Fifo(90)), 2 * MS, MS),
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
            ("low", Some(vec![5]), locker(None, 0, 10 * MS)),
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
            ("holder", Some(vec![4]), locker(None, 0, 5 * MS)),
            ("fair", Some(vec![5]), locker(None, MS, 5 * MS)),
            (
                "rt",
                Some(vec![6]),
                locker(Some(SchedPolicy::Fifo(10)), 2 * MS, 5 * MS),
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
                ("waiter", Some(vec![5]), locker(None, MS / 2, MS)),
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
                locker(Some(SchedPolicy::Fifo(80)), MS, 0),
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
                ("waiter", Some(vec![5]), locker(None, MS / 2, MS)),
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

/// A PI mutex its owner took uncontended has no kernel state: when the
/// owner exits, the futex word keeps its TID, and a later locker waits
/// forever (FUTEX_LOCK_PI fails with ESRCH; glibc then sleeps).
#[test]
fn a_pi_mutex_left_by_an_owner_without_waiters_stays_taken() {
    let mut s = sim(
        vec![
            ("owner", Some(vec![4]), vec![lock(0), work(MS)]),
            ("late", Some(vec![5]), locker(None, 3 * MS, MS)),
        ],
        vec![SyncObject::PiMutex],
        10 * MS,
    );
    assert_eq!(s.run(), StopReason::Stalled);
    assert_eq!(cpu_ns(&s, 1), 0);
}

/// sched_setattr() by an owner whose waiter lends it priority 9 (FIFO 90):
/// FIFO 95 (prio 4) is better and applies; SCHED_OTHER then leaves the lent
/// 9, in one change each, without sched_pi_setprio (the call sets the
/// priority itself).
#[test]
fn setattr_by_an_owner_with_a_lending_waiter_changes_its_priority_once() {
    let mut s = sim(
        vec![
            (
                "owner",
                Some(vec![5]),
                vec![
                    lock(0),
                    work(2 * MS),
                    set(SchedPolicy::Fifo(95)),
                    work(MS),
                    set(SchedPolicy::Normal),
                    work(MS),
                    unlock(0),
                ],
            ),
            (
                "high",
                Some(vec![4]),
                locker(Some(SchedPolicy::Fifo(90)), MS, 0),
            ),
        ],
        vec![SyncObject::PiMutex],
        100 * MS,
    );
    s.enable_trace(1 << 20);
    assert_eq!(s.run_until(2 * MS + MS / 2), StopReason::TimeLimit);
    let owner = task(&s, 0);
    assert_eq!(s.tasks[owner as usize].rt.map(|r| r.prio), Some(4));
    assert!(!s.pi_boosted(owner));
    assert_eq!(s.run_until(3 * MS + MS / 2), StopReason::TimeLimit);
    assert_eq!(s.tasks[owner as usize].rt.map(|r| r.prio), Some(9));
    assert!(s.pi_boosted(owner));
    assert_eq!(s.run(), StopReason::Finished);
    let setprios: Vec<[i16; 2]> = s
        .trace
        .as_deref()
        .unwrap()
        .records
        .iter()
        .filter(|r| matches!(r.kind, crate::trace::TraceKind::PiSetprio { .. }))
        .map(|r| r.prio)
        .collect();
    // The boost at the block (120 → 9) and its end at the unlock (9 → 120).
    assert_eq!(setprios, [[120, 9], [9, 120]]);
}

fn dl_policy(runtime_ms: u64, period_ms: u64) -> SchedPolicy {
    SchedPolicy::Deadline {
        runtime_ns: runtime_ms * MS,
        deadline_ns: period_ms * MS,
        period_ns: period_ms * MS,
    }
}

/// The sched_pi_setprio events of a traced run, as [oldprio, newprio].
fn setprios(s: &Sim) -> Vec<[i16; 2]> {
    s.trace
        .as_deref()
        .unwrap()
        .records
        .iter()
        .filter(|r| matches!(r.kind, crate::trace::TraceKind::PiSetprio { .. }))
        .map(|r| r.prio)
        .collect()
}

/// A deadline waiter queues first (rt_mutex order) and lends the owner the
/// deadline class with its own parameters (rt_mutex_setprio() sets `pi_se`
/// to the waiter's): the owner, RT-boosted by the FIFO 30 waiter at 1 ms,
/// moves from RT priority 69 to the deadline class (-1) at 2 ms; the unlock
/// hands the mutex to the deadline task and the owner drops back to its
/// fair policy.
#[test]
fn a_deadline_waiter_queues_first_and_lends_its_parameters() {
    let mut s = sim(
        vec![
            ("owner", Some(vec![5]), locker(None, 0, 4 * MS)),
            (
                "rt",
                Some(vec![6]),
                locker(Some(SchedPolicy::Fifo(30)), MS, 0),
            ),
            // (A deadline task's CPUs must span the root domain.)
            ("dl", None, locker(Some(dl_policy(2, 10)), 2 * MS, MS / 2)),
        ],
        vec![SyncObject::PiMutex],
        100 * MS,
    );
    s.enable_trace(1 << 20);
    assert_eq!(s.run_until(3 * MS), StopReason::TimeLimit);
    let (owner, rt, dl) = (task(&s, 0), task(&s, 1), task(&s, 2));
    let tk = &s.tasks[owner as usize];
    assert_eq!(tk.rt, None);
    let inherited = tk.dl.as_deref().and_then(|e| e.pi_se);
    assert_eq!(
        inherited,
        Some(crate::dl::DlParams {
            runtime_ns: 2 * MS,
            deadline_ns: 10 * MS,
            period_ns: 10 * MS,
        })
    );
    assert!(s.pi_boosted(owner));
    assert_eq!(
        s.ipc
            .pi_waiters(0)
            .map(|q| q.iter().copied().collect::<Vec<_>>()),
        Some(vec![dl, rt])
    );
    // The owner's section ends at 4 ms; the deadline task holds the mutex
    // for its half millisecond.
    assert_eq!(s.run_until(4 * MS + MS / 4), StopReason::TimeLimit);
    assert_eq!(s.ipc.mutex_owner(0), Some(dl));
    assert!(!s.pi_boosted(owner));
    assert!(s.tasks[owner as usize].dl.is_none());
    assert_eq!(s.run(), StopReason::Finished);
    // Fair 120 → RT 69 → deadline -1 → back to fair at the unlock; then
    // the deadline task's own unlock, with the RT task still waiting, sets
    // its priority again (-1 → -1: in the deadline class the change is
    // always made).
    assert_eq!(setprios(&s), [[120, 69], [69, -1], [-1, 120], [-1, -1]]);
}

/// A fair owner boosted into the deadline class is never throttled
/// (update_curr_dl_se() replenishes a boosted entity at once): holding the
/// lock for 20 ms of work on a CPU it shares with a fair hog, it runs its
/// whole section from the waiter's block at 1 ms on, though the inherited
/// budget is 2 ms per 10 ms, and the deadline waiter gets the mutex at
/// about 20 ms. A plain mutex leaves the owner sharing its CPU with the hog.
#[test]
fn an_owner_boosted_into_the_deadline_class_is_never_throttled() {
    let run = |kind: SyncObject| {
        let mut s = sim(
            vec![
                ("owner", Some(vec![5]), locker(None, 0, 20 * MS)),
                ("hog", Some(vec![5]), vec![work(100 * MS)]),
                ("dl", None, locker(Some(dl_policy(2, 10)), MS, MS)),
            ],
            vec![kind],
            200 * MS,
        );
        let mut got = None;
        while s.run_until(s.now + MS / 10) == StopReason::TimeLimit {
            if s.ipc.mutex_owner(0) == Some(task(&s, 2)) {
                got = Some(s.now);
                break;
            }
        }
        (
            got.expect("the deadline task got the mutex"),
            s.counters.pi_boosts,
        )
    };
    let (pi_ns, boosts) = run(SyncObject::PiMutex);
    let (plain_ns, _) = run(SyncObject::Mutex);
    assert!(
        (20 * MS..22 * MS).contains(&pi_ns),
        "PI: mutex at {pi_ns} ns"
    );
    assert!(plain_ns > 35 * MS, "plain: mutex at {plain_ns} ns");
    assert_eq!(boosts, 1);
}

/// A deadline owner inherits from a deadline waiter only if the waiter's
/// deadline is earlier (dl_entity_preempt()). The owner (2 ms per 100 ms)
/// holds the lock for 6 ms of work (16 ms on the A7 it is placed on). A
/// waiter of 1 ms per 5 ms, deadline earlier, lends its parameters: the
/// owner is never throttled and ends its section without a break. A waiter
/// of 1 ms per 200 ms, deadline later, lends nothing: the owner runs out of
/// budget and waits for its next period at 100 ms.
#[test]
fn a_deadline_owner_inherits_only_an_earlier_deadline() {
    let run = |waiter_period_ms: u64| {
        let mut s = sim(
            vec![
                ("owner", None, locker(Some(dl_policy(2, 100)), 0, 6 * MS)),
                (
                    "waiter",
                    None,
                    locker(Some(dl_policy(1, waiter_period_ms)), MS, MS / 2),
                ),
            ],
            vec![SyncObject::PiMutex],
            300 * MS,
        );
        let mut got = None;
        while s.run_until(s.now + MS / 10) == StopReason::TimeLimit {
            if s.ipc.mutex_owner(0) == Some(task(&s, 1)) {
                got = Some(s.now);
                break;
            }
        }
        got.expect("the waiter got the mutex")
    };
    let earlier = run(5);
    let later = run(200);
    assert!(
        (6 * MS..20 * MS).contains(&earlier),
        "earlier: {earlier} ns"
    );
    assert!(later > 100 * MS, "later: {later} ns");
}

/// A thread forked by a boosted owner takes its parent's own policy
/// (sched_fork() copies `normal_prio`), not the lent priority.
#[test]
fn a_thread_forked_under_a_boost_takes_its_parents_own_policy() {
    let mut spec = WorkloadSpec {
        sync: vec![SyncObject::PiMutex],
        ..threads_spec(
            "pi",
            vec![
                (
                    "owner",
                    Some(vec![5]),
                    vec![
                        lock(0),
                        work(2 * MS),
                        Step::Spawn { template: 2 },
                        work(MS),
                        unlock(0),
                    ],
                ),
                (
                    "rt",
                    Some(vec![6]),
                    locker(Some(SchedPolicy::Fifo(60)), MS, 0),
                ),
                ("child", Some(vec![4]), vec![work(10 * MS)]),
            ],
            4 * MS,
        )
    };
    spec.initial = vec![0, 1];
    let mut s = quiet_sim("exynos5422", spec);
    s.run();
    let child = task(&s, 2);
    assert!(s.counters.pi_boosts >= 1);
    assert!(s.tasks[child as usize].rt.is_none(), "the child is fair");
}

/// pthread_cond_broadcast() with the PI mutex held requeues the waiters
/// onto the mutex (FUTEX_CMP_REQUEUE_PI): they become its rt_mutex waiters
/// and boost the broadcaster until it unlocks; each then gets the mutex in
/// priority order.
#[test]
fn a_broadcast_requeues_onto_a_pi_mutex_as_its_waiters() {
    let waiter = |prio: u8| {
        vec![
            set(SchedPolicy::Fifo(prio)),
            lock(0),
            Step::Wait {
                cond: 1,
                mutex: Some(0),
            },
            work(MS / 10),
            unlock(0),
        ]
    };
    let mut s = sim(
        vec![
            (
                "caster",
                Some(vec![5]),
                vec![
                    sleep(MS),
                    lock(0),
                    Step::BroadcastRequeue {
                        cond: 1,
                        mutex: 0,
                        syscall_ns: 0,
                    },
                    work(2 * MS),
                    unlock(0),
                ],
            ),
            ("w20", Some(vec![6]), waiter(20)),
            ("w40", Some(vec![7]), waiter(40)),
        ],
        vec![SyncObject::PiMutex, SyncObject::Cond],
        100 * MS,
    );
    assert_eq!(s.run_until(2 * MS), StopReason::TimeLimit);
    let caster = task(&s, 0);
    assert_eq!(s.tasks[caster as usize].rt.map(|r| r.prio), Some(99 - 40));
    assert_eq!(s.run(), StopReason::Finished);
    assert!(!s.pi_boosted(caster));
}

/// An RT owner of a PI mutex with a lower-priority RT waiter switches
/// itself to SCHED_OTHER. __sched_setscheduler() computes newprio =
/// rt_effective_prio() = the waiter's 49 and, the priority lowered, enqueues
/// it at the HEAD of that list (syscalls.c:671, 697): it keeps running ahead
/// of `c`, a FIFO 50 task queued on its CPU, and unlocks at 5 ms.
#[test]
fn setattr_to_fair_by_an_owner_keeps_the_lent_priority_at_the_head() {
    let mut s = sim(
        vec![
            (
                "a",
                Some(vec![5]),
                vec![
                    sleep(MS / 4),
                    set(SchedPolicy::Fifo(90)),
                    lock(0),
                    work(2 * MS),
                    set(SchedPolicy::Normal),
                    work(3 * MS),
                    unlock(0),
                ],
            ),
            (
                "b",
                Some(vec![6]),
                locker(Some(SchedPolicy::Fifo(50)), MS, MS),
            ),
            (
                "c",
                Some(vec![5]),
                vec![set(SchedPolicy::Fifo(50)), sleep(3 * MS / 2), work(10 * MS)],
            ),
        ],
        vec![SyncObject::PiMutex],
        7 * MS,
    );
    s.run();
    assert!(
        one_ms(cpu_ns(&s, 1)),
        "b got the lock by 6 ms: {}",
        cpu_ns(&s, 1)
    );
}

/// A boosted fair task calls sched_setattr(SCHED_OTHER). p->prio is
/// still the lent RT priority when __setscheduler_uclamp() runs
/// (syscalls.c:687 then :395, rt_task() reads p->prio), so its default
/// UCLAMP_MIN becomes sysctl_sched_uclamp_util_min_rt_default (1024), and
/// stays so after the deboost (rt_mutex_setprio() leaves uclamp alone).
#[test]
fn the_uclamp_default_after_setattr_follows_the_lent_class() {
    let mut s = sim(
        vec![
            (
                "low",
                Some(vec![5]),
                vec![
                    lock(0),
                    work(2 * MS),
                    set(SchedPolicy::Normal),
                    work(MS),
                    unlock(0),
                    work(5 * MS),
                ],
            ),
            (
                "high",
                Some(vec![4]),
                locker(Some(SchedPolicy::Fifo(80)), MS, 0),
            ),
        ],
        vec![SyncObject::PiMutex],
        5 * MS,
    );
    s.run();
    let low = task(&s, 0);
    assert!(s.tasks[low as usize].rt.is_none());
    assert_eq!(s.tasks[low as usize].uclamp_min, 1024);
}

/// pthread_cond_broadcast() with a PI mutex (glibc < 2.25,
/// FUTEX_CMP_REQUEUE_PI): with the mutex held, futex_proxy_trylock_atomic()
/// fails and *every* waiter, the first included, is requeued onto the
/// rt_mutex (requeue.c); nobody is woken. Two equal-priority waiters keep
/// their order: w1 (first to wait) gets the mutex first.
#[test]
fn a_requeue_onto_a_held_pi_mutex_wakes_nobody() {
    let wait = Step::Wait {
        cond: 1,
        mutex: Some(0),
    };
    let mut s = sim(
        vec![
            (
                "w1",
                Some(vec![5]),
                vec![
                    set(SchedPolicy::Fifo(50)),
                    lock(0),
                    wait.clone(),
                    work(MS),
                    unlock(0),
                ],
            ),
            (
                "w2",
                Some(vec![6]),
                vec![
                    set(SchedPolicy::Fifo(50)),
                    sleep(MS / 2),
                    lock(0),
                    wait,
                    work(MS),
                    unlock(0),
                ],
            ),
            (
                "bc",
                Some(vec![4]),
                vec![
                    sleep(MS),
                    lock(0),
                    Step::BroadcastRequeue {
                        cond: 1,
                        mutex: 0,
                        syscall_ns: 0,
                    },
                    work(MS),
                    unlock(0),
                    work(5 * MS),
                ],
            ),
        ],
        vec![SyncObject::PiMutex, SyncObject::Cond],
        2 * MS + MS / 2,
    );
    s.run();
    let w1 = task(&s, 0);
    // w1 was not woken by the broadcast: only by the hand-off at 2 ms.
    assert_eq!(
        s.ipc.mutex_owner(0),
        Some(w1),
        "w1 (first waiter) owns the mutex"
    );
}

/// Boosts of an owner that sleeps with a delayed dequeue, or is on a
/// wake list, at many offsets; invariants checked after every event.
#[test]
fn boosts_of_owners_asleep_with_a_delayed_dequeue_keep_the_invariants() {
    for off in 0..40u64 {
        let mut s = sim(
            vec![
                (
                    "owner",
                    Some(vec![5]),
                    vec![
                        lock(0),
                        work(3 * MS),
                        sleep(MS / 3),
                        work(MS / 2),
                        sleep(MS / 5),
                        work(MS),
                        unlock(0),
                        work(MS),
                    ],
                ),
                ("hog", Some(vec![5]), vec![work(20 * MS)]),
                ("hog2", Some(vec![5]), vec![sleep(MS), work(20 * MS)]),
                (
                    "rt",
                    Some(vec![0, 6]),
                    locker(Some(SchedPolicy::Rr(30)), 2 * MS + off * 100_000, MS),
                ),
                (
                    "rt2",
                    Some(vec![1, 7]),
                    locker(Some(SchedPolicy::Fifo(60)), 3 * MS + off * 77_000, MS),
                ),
            ],
            vec![SyncObject::PiMutex],
            40 * MS,
        );
        let stop = s.run();
        assert_eq!(stop, StopReason::TimeLimit, "off {off}");
        assert!(
            cpu_ns(&s, 3) >= MS && cpu_ns(&s, 4) >= MS,
            "off {off}: {} {}",
            cpu_ns(&s, 3),
            cpu_ns(&s, 4)
        );
    }
}

/// The boost of an owner on a remote wake list, at many offsets.
#[test]
fn boosts_of_owners_on_a_wake_list_keep_the_invariants() {
    for off in 0..40u64 {
        let mut s = sim(
            vec![
                (
                    "owner",
                    Some(vec![5]),
                    vec![
                        lock(0),
                        Step::Wait {
                            cond: 1,
                            mutex: None,
                        },
                        work(MS),
                        unlock(0),
                        work(MS),
                    ],
                ),
                (
                    "sig",
                    Some(vec![0]),
                    vec![sleep(MS), Step::Signal { cond: 1 }, work(MS)],
                ),
                (
                    "rt",
                    Some(vec![6]),
                    locker(Some(SchedPolicy::Fifo(30)), MS - 100_000 + off * 5_000, MS),
                ),
            ],
            vec![SyncObject::PiMutex, SyncObject::Cond],
            10 * MS,
        );
        let stop = s.run();
        assert_eq!(stop, StopReason::Finished, "off {off}");
    }
}

/// A fair owner boosted into the deadline class may still narrow its CPUs:
/// sched_setaffinity() checks the deadline bandwidth rule by policy
/// (dl_task_check_affinity(): task_has_dl_policy()), so the call succeeds
/// and the run goes on; the owner then runs on CPU 5 only.
#[test]
fn an_owner_boosted_into_the_deadline_class_may_narrow_its_cpus() {
    let mut s = sim(
        vec![
            (
                "owner",
                None,
                vec![
                    lock(0),
                    work(2 * MS),
                    Step::SetAffinity {
                        cpus: Some(Box::new(schedlab_topo::CpuMask::from_cpus([5]))),
                    },
                    work(2 * MS),
                    unlock(0),
                ],
            ),
            ("dl", None, locker(Some(dl_policy(2, 10)), MS, MS / 2)),
        ],
        vec![SyncObject::PiMutex],
        100 * MS,
    );
    assert_eq!(s.run_until(3 * MS), StopReason::TimeLimit);
    let owner = task(&s, 0);
    assert!(s.pi_boosted(owner) && s.tasks[owner as usize].dl.is_some());
    assert_eq!(s.run(), StopReason::Finished);
}

/// The new owner of a PI mutex keeps its priority at the hand-over:
/// try_to_take_rt_mutex() (kernel/locking/rtmutex.c:1191-1192) only puts
/// the lock's next waiter in the new owner's `pi_waiters`
/// (rt_mutex_enqueue_pi()), with no rt_mutex_adjust_prio(), and
/// wake_futex_pi() → mark_wakeup_next_waiter() (:1343) adjusts only the
/// old owner. `f`, a fair task blocked on m1, is boosted into the deadline
/// class by `x` (2 ms / 30 ms) waiting on m0; its `p->dl.deadline` is still
/// 0 (it never ran in the class), so the chain walk requeues it first on
/// m1 (waiter_update_prio(), :375, copies `task->dl.deadline`), ahead of `y`
/// (1 ms / 10 ms, deadline earlier than x's). When `g` unlocks m1 at 5 ms
/// it passes to `f`, which then owns m0 (x) and m1 (y): 7.3 leaves it on
/// x's parameters until its next rt_mutex_setprio(), and so does the engine
/// (pi_release() leaves the new owner alone); the checker accepts the lender
/// that set them (`PiState::lender`, the kernel's `pi_top_task`). Found by a
/// review, when the checker wanted the top waiter's (y's).
#[test]
fn a_new_owner_keeps_its_inherited_parameters_at_the_hand_over() {
    let dl = dl_policy;
    let mut s = sim(
        vec![
            (
                "g",
                Some(vec![4]),
                vec![lock(1), work(5 * MS), unlock(1), work(MS)],
            ),
            (
                "f",
                Some(vec![5]),
                vec![
                    lock(0),
                    sleep(MS / 2),
                    lock(1),
                    work(MS),
                    unlock(1),
                    unlock(0),
                ],
            ),
            (
                "y",
                None,
                vec![set(dl(1, 10)), sleep(MS), lock(1), unlock(1)],
            ),
            (
                "x",
                None,
                vec![set(dl(2, 30)), sleep(2 * MS), lock(0), unlock(0)],
            ),
        ],
        vec![SyncObject::PiMutex, SyncObject::PiMutex],
        5 * MS + MS / 2,
    );
    assert_eq!(s.run(), StopReason::TimeLimit);
    let (f, x) = (task(&s, 1), task(&s, 3));
    assert_eq!(s.ipc.mutex_owner(1), Some(f));
    let lent = s.tasks[x as usize].dl.as_deref().map(|e| e.pi_of());
    assert_eq!(
        s.tasks[f as usize].dl.as_deref().and_then(|e| e.pi_se),
        lent
    );
}

/// A task that leaves SCHED_DEADLINE before its 0-lag time keeps its
/// bandwidth admitted (switched_from_dl() → task_non_contending(); the
/// engine keeps the entity in `dl_left` with its inactive timer). Boosted
/// into the class by a deadline waiter, it takes a deadline policy of its
/// own. sched_dl_overflow() (kernel/sched/deadline.c:3805-3810) decides by
/// task_has_dl_policy(), false here: first branch, where the old bandwidth
/// goes only `if (hrtimer_active(&p->dl.inactive_timer))` (switched_to_dl()
/// cancelled that timer at the boost, :3566, so 7.3 leaks it). The engine's
/// sched_setattr_dl() decides by policy too, and releases the bandwidth
/// left behind (documented difference: 7.3 keeps it admitted). When the
/// task leaves the class again before the first 0-lag time (3.75 ms), the
/// books still balance. Found by a review: deciding by the class let the
/// second leftover overwrite the first, whose bandwidth stayed admitted with
/// no entity.
#[test]
fn setattr_to_deadline_under_a_deadline_boost_keeps_the_bandwidth_books() {
    let dl = dl_policy;
    let mut s = sim(
        vec![
            (
                "a",
                None,
                vec![
                    set(dl(1, 100)),
                    Step::RunWall { ns: MS / 4 },
                    set(SchedPolicy::Fifo(10)),
                    lock(0),
                    Step::RunWall { ns: 3 * MS },
                    set(dl(10, 20)),
                    Step::RunWall { ns: MS / 2 },
                    unlock(0),
                    set(SchedPolicy::Fifo(10)),
                    work(20 * MS),
                ],
            ),
            (
                "w",
                None,
                vec![set(dl(1, 10)), sleep(2 * MS), lock(0), unlock(0)],
            ),
        ],
        vec![SyncObject::PiMutex],
        200 * MS,
    );
    assert_eq!(s.run(), StopReason::Finished);
}

/// A PI mutex whose owner exited without waiters has no kernel owner:
/// FUTEX_LOCK_PI fails with ESRCH (attach_to_pi_owner() →
/// handle_exit_race(), kernel/futex/pi.c:474) and glibc sleeps for good, so a
/// late RT locker is no rt_mutex waiter and lends nobody anything: it
/// sleeps without joining the mutex's waiters, and the run stalls. Found by
/// a review (the engine queued it as a waiter of the dead owner, which the
/// checker rejected; older than deadline inheritance).
#[test]
fn an_rt_locker_of_a_pi_mutex_left_by_a_dead_owner_keeps_the_invariants() {
    let mut s = sim(
        vec![
            ("owner", Some(vec![4]), vec![lock(0), work(MS)]),
            (
                "late",
                Some(vec![5]),
                locker(Some(SchedPolicy::Fifo(50)), 3 * MS, MS),
            ),
        ],
        vec![SyncObject::PiMutex],
        10 * MS,
    );
    assert_eq!(s.run(), StopReason::Stalled);
}

/// Deadline parameters pass along a chain as a pointer to the first
/// lender's entity (`pi_se = pi_task->dl.pi_se`). `b` holds m1 for 6 ms;
/// `a` holds m0 and waits for m1; `w1` (5 ms / 200 ms) blocks on m0 at
/// 2 ms: `a` and, through it, `b` inherit w1's parameters. `w2` (1 ms /
/// 10 ms, earlier deadline) blocks on m0 at 3 ms: `a` takes w2's, but `a`'s
/// key on m1 stays (-1, its deadline: it is asleep, so nothing replenishes
/// it), the walk stops there (rt_waiter_node_equal()), and `b` goes on with
/// w1's, as in 7.3. Found by a user test, when the checker wanted `b` to
/// follow `a`.
#[test]
fn a_chain_passes_on_the_first_lenders_parameters() {
    let mut s = sim(
        vec![
            (
                "b",
                Some(vec![6]),
                vec![
                    sleep(MS / 2),
                    Step::Lock { mutex: 1 },
                    work(6 * MS),
                    Step::Unlock { mutex: 1 },
                ],
            ),
            (
                "a",
                None,
                vec![
                    sleep(MS),
                    lock(0),
                    work(MS / 5),
                    Step::Lock { mutex: 1 },
                    work(MS),
                    Step::Unlock { mutex: 1 },
                    unlock(0),
                ],
            ),
            ("w1", None, locker(Some(dl_policy(5, 200)), 2 * MS, MS / 2)),
            ("w2", None, locker(Some(dl_policy(1, 10)), 3 * MS, MS / 2)),
        ],
        vec![SyncObject::PiMutex, SyncObject::PiMutex],
        100 * MS,
    );
    assert_eq!(s.run_until(4 * MS), StopReason::TimeLimit);
    let (b, a) = (task(&s, 0), task(&s, 1));
    let inherited = |t: TaskId| s.tasks[t as usize].dl.as_deref().and_then(|e| e.pi_se);
    let params = |r: u64, p: u64| crate::dl::DlParams {
        runtime_ns: r * MS,
        deadline_ns: p * MS,
        period_ns: p * MS,
    };
    assert_eq!(inherited(a), Some(params(1, 10)));
    assert_eq!(inherited(b), Some(params(5, 200)));
    assert_eq!(s.run(), StopReason::Finished);
}

/// A requeue-PI broadcast onto a free PI mutex: only a waiter whose wait
/// names that mutex is handed it; one that waited without a mutex is woken
/// plainly and takes none (the kernel refuses to requeue a waiter whose
/// FUTEX_WAIT_REQUEUE_PI named another futex). Before, the bare waiter was
/// handed the mutex it never took, and its later unlock of it left the
/// hand-over marked (fuzz machine case 1067).
#[test]
fn a_requeue_pi_broadcast_hands_the_mutex_only_to_a_waiter_that_names_it() {
    let mut s = sim(
        vec![
            (
                "bare",
                Some(vec![5]),
                vec![
                    Step::Wait {
                        cond: 1,
                        mutex: None,
                    },
                    work(MS),
                ],
            ),
            (
                "named",
                Some(vec![6]),
                vec![
                    sleep(MS / 4),
                    lock(0),
                    Step::Wait {
                        cond: 1,
                        mutex: Some(0),
                    },
                    work(MS),
                    unlock(0),
                ],
            ),
            (
                "bc",
                Some(vec![4]),
                vec![
                    sleep(MS / 2),
                    Step::BroadcastRequeue {
                        cond: 1,
                        mutex: 0,
                        syscall_ns: 0,
                    },
                    work(MS),
                ],
            ),
        ],
        vec![SyncObject::PiMutex, SyncObject::Cond],
        5 * MS,
    );
    s.run_until(MS / 2 + 100_000);
    let (bare, named) = (task(&s, 0), task(&s, 1));
    assert_eq!(
        s.ipc.mutex_owner(0),
        Some(named),
        "the named waiter owns it"
    );
    assert!(s.tasks[bare as usize]
        .pi
        .as_deref()
        .is_none_or(|p| p.handed.is_none() && p.owned.is_empty()));
    s.run();
    assert!(one_ms(cpu_ns(&s, 0)), "the bare waiter ran its work");
    assert_eq!(s.ipc.mutex_owner(0), None);
}
