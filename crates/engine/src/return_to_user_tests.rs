//! The return to user space after a system call (exec.rs `enters_kernel()`,
//! `Sim::return_to_user()`, after exit_to_user_mode_loop()) and the
//! reschedule IPI that finds its request served (sim.rs, `Resched`). Each
//! test states what Linux 7.3 does.

use crate::scenarios::{quiet_sim, set_policy as set, TestThread};
use crate::sim::StopReason;
use schedlab_workload::{SchedPolicy, Step, SyncObject, WorkloadSpec};

const US: u64 = 1_000;
const MS: u64 = 1_000_000;

fn spec(threads: Vec<TestThread>, sync: Vec<SyncObject>, max_time_ns: u64) -> WorkloadSpec {
    let mut sp = crate::scenarios::threads_spec("rtu", threads, max_time_ns);
    sp.sync = sync;
    sp
}

fn mark(s: &crate::sim::Sim, tag: u32) -> u64 {
    s.marks
        .iter()
        .find(|m| m.1 == tag)
        .unwrap_or_else(|| panic!("mark {tag}"))
        .2
}

/// A SCHED_IDLE hog on CPU 5 of exynos5422 loops over 20 µs of work and
/// `between` (steps that take no time); a normal thread pinned to CPU 5
/// waits on condition 0 and a thread on CPU 6 signals it at 2 ms. The
/// wakeup preempts the idle-policy hog lazily (resched_curr_lazy() on a
/// remote busy CPU: TIF_NEED_RESCHED_LAZY, no IPI), so Linux switches only
/// at CPU 5's next tick or at the hog's next return from the kernel.
/// `sync_extra` objects (ids from 1) join condition 0.
/// Returns the time from the signal to the woken thread's first step.
fn lazy_wake_latency(between: Vec<Step>, sync_extra: Vec<SyncObject>) -> u64 {
    lazy_wake_latency_with(between, sync_extra, vec![])
}

/// [`lazy_wake_latency`] with `extra` threads beside the three.
fn lazy_wake_latency_with(
    between: Vec<Step>,
    sync_extra: Vec<SyncObject>,
    extra: Vec<TestThread>,
) -> u64 {
    let mut hog = vec![set(SchedPolicy::Idle), Step::Compute { work_ns: 20 * US }];
    hog.extend(between);
    hog.push(Step::Loop {
        start: 1,
        count: u32::MAX,
        slot: 0,
    });
    let mut sync = vec![SyncObject::Cond];
    sync.extend(sync_extra);
    let mut threads: Vec<TestThread> = vec![
        (
            "woken",
            Some(vec![5]),
            vec![
                Step::Wait {
                    cond: 0,
                    mutex: None,
                },
                Step::Mark { tag: 9 },
                Step::Exit,
            ],
        ),
        (
            "waker",
            Some(vec![6]),
            vec![
                Step::Sleep { ns: 2 * MS },
                Step::Mark { tag: 8 },
                Step::Signal { cond: 0 },
                Step::Exit,
            ],
        ),
        ("hog", Some(vec![5]), hog),
    ];
    threads.extend(extra);
    let mut s = quiet_sim("exynos5422", spec(threads, sync, 20 * MS));
    s.run();
    mark(&s, 9) - mark(&s, 8)
}

/// Steps that stay in user space must not act on a pending lazy
/// reschedule. glibc's pthread_cond_signal() without waiters returns
/// without a system call (no `__wrefs`), as does an uncontended
/// pthread_mutex_unlock() (lll_unlock: futex_wake only when the word was
/// 2) and sem_post() without waiters; so for Linux the hog below is in
/// user space between its loops in all three variants, and the lazy
/// request waits for the tick (sched_tick(): `if (dynamic_preempt_lazy()
/// && tif_test_bit(TIF_NEED_RESCHED_LAZY)) resched_curr(rq)`), exactly as
/// with a `Mark`: a futex-based step counts as a system call only when it
/// woke someone.
#[test]
fn a_user_space_step_leaves_a_lazy_reschedule_for_the_tick() {
    let user = lazy_wake_latency(vec![Step::Mark { tag: 1 }], vec![]);
    let signal = lazy_wake_latency(vec![Step::Signal { cond: 1 }], vec![SyncObject::Cond]);
    let unlock = lazy_wake_latency(
        vec![Step::Lock { mutex: 1 }, Step::Unlock { mutex: 1 }],
        vec![SyncObject::Mutex],
    );
    let post = lazy_wake_latency(
        vec![Step::SemPost { sem: 1 }, Step::SemWait { sem: 1 }],
        vec![SyncObject::Semaphore { initial: 0 }],
    );
    assert!(
        user > 100 * US,
        "the lazy request waits for the tick: {user} ns"
    );
    assert_eq!(signal, user, "a signal without waiters stays in user space");
    assert_eq!(unlock, user, "an uncontended unlock stays in user space");
    assert_eq!(post, user, "sem_post() without waiters stays in user space");
}

/// An rt-app timer whose expiry has passed is still a
/// clock_nanosleep() system call: 7.3's hrtimer_sleeper_start_expires()
/// finds the timer expired, clears `t->task` and do_nanosleep() returns
/// without schedule(); syscall_exit_to_user_mode() → exit_to_user_mode_loop()
/// then acts on TIF_NEED_RESCHED_LAZY. Likewise rt-app's `delay` that has
/// passed: the lazy request does not wait for the tick.
#[test]
fn an_overrun_timer_returns_from_the_kernel_and_acts_on_a_lazy_reschedule() {
    let user = lazy_wake_latency(vec![Step::Mark { tag: 1 }], vec![]);
    let timer = lazy_wake_latency(
        vec![Step::Timer {
            id: 0,
            period_ns: 1,
            absolute: true,
        }],
        vec![],
    );
    let delay = lazy_wake_latency(vec![Step::Delay { ns: 0 }], vec![]);
    assert!(
        user > 100 * US,
        "the lazy request waits for the tick: {user} ns"
    );
    assert!(
        timer < 30 * US,
        "clock_nanosleep() returns to user: {timer} ns"
    );
    assert!(
        delay < 30 * US,
        "clock_nanosleep() returns to user: {delay} ns"
    );
}

/// A read() that takes time in the kernel (the message's copy from the
/// writer's CPU, `pull_message()`'s Wall activity) returns to user space
/// after it, and exit_to_user_mode_loop() acts on a lazy request made
/// before or during the call, as after a fork's (the same holds for
/// `Yield` and `BroadcastRequeue` with `syscall_ns`).
#[test]
fn a_read_that_copies_from_another_cpu_acts_on_a_lazy_reschedule_at_its_return() {
    let user = lazy_wake_latency(vec![Step::Mark { tag: 1 }], vec![]);
    // The hog's CPU reads one byte per loop from a channel that a thread
    // on CPU 7 filled at the start: every read copies from CPU 7.
    let read = lazy_wake_latency_with(
        vec![Step::Recv { chan: 1, bytes: 1 }],
        vec![SyncObject::Channel { capacity: 1 << 20 }],
        vec![(
            "writer",
            Some(vec![7]),
            vec![Step::Send {
                chan: 1,
                bytes: 100_000,
            }],
        )],
    );
    assert!(
        user > 100 * US,
        "the lazy request waits for the tick: {user} ns"
    );
    assert!(read < 30 * US, "read() returns to user: {read} ns");
}

/// A reschedule whose IPI is still in flight. At 10 ms a thread on
/// CPU 6 wakes a FIFO 10 thread pinned to CPU 5 (resched_curr() sets
/// TIF_NEED_RESCHED on CPU 5's task at once, the IPI lands 3 µs later on
/// exynos5422). Within that window the fair thread on CPU 5 sees a flag
/// (after ≤ 1 µs of work) and futex-wakes a FIFO 50 thread pinned to its
/// own CPU, then marks. Linux switches it out at the futex_wake()'s return
/// (preempt_enable() in try_to_wake_up() already, or
/// exit_to_user_mode_loop()): the mark follows the FIFO 50 thread's 3 ms
/// and the FIFO 10 thread's 1 ms. A local request due before the pending
/// Resched event gets its own event, and the return to user space reads a
/// flag whose IPI is still in flight. The control run has the FIFO 10
/// thread on CPU 7 (no IPI to CPU 5).
#[test]
fn a_reschedule_due_while_an_ipi_is_in_flight_acts_at_the_syscall_return() {
    let run = |remote: bool| {
        let sleeper = |prio: u8, cond: u32, work: u64| {
            let mut v = vec![set(SchedPolicy::Fifo(prio)), Step::Sleep { ns: MS }];
            v.extend([
                Step::Wait { cond, mutex: None },
                Step::Compute { work_ns: work },
                Step::Exit,
            ]);
            v
        };
        let waker = vec![
            Step::Sleep { ns: 10 * MS },
            Step::SetCounter {
                counter: 2,
                value: 1,
            },
            Step::Signal { cond: 0 },
            Step::Exit,
        ];
        // The control wakes the FIFO 10 thread on CPU 7 instead: no IPI
        // to CPU 5.
        let fifo10_cpu = if remote { 5 } else { 7 };
        let mut s = quiet_sim(
            "exynos5422",
            spec(
                vec![
                    ("fifo10", Some(vec![fifo10_cpu]), sleeper(10, 0, MS)),
                    ("fifo50", Some(vec![5]), sleeper(50, 1, 3 * MS)),
                    (
                        "fair",
                        Some(vec![5]),
                        vec![
                            Step::Compute { work_ns: US },
                            Step::TestCounter {
                                counter: 2,
                                below: 1,
                                else_to: 3,
                            },
                            Step::Jump { to: 0 },
                            Step::Signal { cond: 1 },
                            Step::Mark { tag: 7 },
                            Step::Exit,
                        ],
                    ),
                    ("waker", Some(vec![6]), waker),
                ],
                vec![SyncObject::Cond, SyncObject::Cond, SyncObject::Counter],
                100 * MS,
            ),
        );
        assert_eq!(s.run(), StopReason::Finished);
        mark(&s, 7)
    };
    let control = run(false);
    let with_ipi = run(true);
    assert!(control >= 13 * MS, "control: {control} ns");
    assert!(
        with_ipi >= 13 * MS,
        "the waker marked at {with_ipi} ns, before the FIFO 50 thread's work"
    );
}

/// A Resched event whose request was already served by a schedule()
/// in between (`need_resched` clear when it arrives: the task it was for
/// blocked, or its own return to user space switched it out) still runs
/// schedule(). 7.3's scheduler_ipi() only folds TIF_NEED_RESCHED into the
/// preempt count; on an idle CPU do_idle() then finds !need_resched() and
/// goes back to sleep (its `while (!need_resched())` loop): no
/// schedule_idle(), no pick_next_task_fair(), so no newidle balance (which
/// would pull). Here
/// three hogs share CPU 6 and may also run on CPU 5 (as after a
/// sched_setaffinity() from another thread), and a stale IPI reaches idle
/// CPU 5: Linux leaves the hogs to CPU 5's next idle balance. (schbench on
/// alderlake pulled ~7 tasks a second this way before the engine did so.)
#[test]
fn a_stale_resched_ipi_on_an_idle_cpu_runs_no_newidle_balance() {
    let hog = || {
        vec![Step::Compute {
            work_ns: u64::MAX / 4,
        }]
    };
    let mut s = quiet_sim(
        "exynos5422",
        spec(
            vec![
                ("h0", Some(vec![6]), hog()),
                ("h1", Some(vec![6]), hog()),
                ("h2", Some(vec![6]), hog()),
            ],
            vec![],
            100 * MS,
        ),
    );
    s.cfg.features.set("NI_RANDOM", false).unwrap();
    s.run_until(50 * MS);
    assert!(s.rqs[5].curr.is_none());
    for t in s.tasks.iter_mut().filter(|t| !t.kthread) {
        t.affinity = schedlab_topo::CpuMask::from_cpus([5, 6]);
    }
    // The IPI of a request that a schedule() on CPU 5 has served since.
    assert!(!s.rqs[5].need_resched && !s.rqs[5].resched_pending);
    s.rqs[5].resched_pending = true;
    let ev = crate::event::EventKind::Resched { cpu: 5 };
    s.q.push(s.now, ev);
    let (t, popped) = s.q.pop().expect("the IPI");
    assert_eq!(popped, ev);
    s.now = t;
    let passes = s.counters.newidle_balance;
    s.dispatch(ev);
    assert!(
        s.rqs[5].curr.is_none(),
        "CPU 5 pulled a hog at a stale IPI ({} newidle passes)",
        s.counters.newidle_balance - passes
    );
}

// ----- wake_up_q(): preemption between the wakes of one futex_wake() -----

/// Three threads on exynos5422: `a` (policy `pa`) waits on condition 0 on
/// CPU 5, `b` (normal) waits on it 100 µs later on CPU 6, and a waker of policy `pw` on CPU 5 broadcasts at
/// 2 ms (`Broadcast`, or `barrier` arrivals with a barrier of three).
/// `a` then computes 1 ms. Returns (waker's mark before its step, b's
/// first step after its wait, waker's mark after its step) and the count
/// of wakers switched out among their wakes.
fn broadcast_pair(
    pa: SchedPolicy,
    pw: SchedPolicy,
    barrier: bool,
    lazy: bool,
) -> ((u64, u64, u64), u64) {
    let wait = |tag: u32| {
        if barrier {
            vec![Step::Barrier { id: 0, spin_ns: 0 }, Step::Mark { tag }]
        } else {
            vec![
                Step::Wait {
                    cond: 0,
                    mutex: None,
                },
                Step::Mark { tag },
            ]
        }
    };
    let mut a = vec![set(pa)];
    a.extend(wait(1));
    a.extend([Step::Compute { work_ns: MS }, Step::Exit]);
    let mut b = vec![Step::Sleep { ns: 100 * US }];
    b.extend(wait(2));
    b.push(Step::Exit);
    let mut w = vec![set(pw), Step::Sleep { ns: 2 * MS }, Step::Mark { tag: 8 }];
    w.push(if barrier {
        Step::Barrier { id: 0, spin_ns: 0 }
    } else {
        Step::Broadcast { cond: 0 }
    });
    w.extend([Step::Mark { tag: 9 }, Step::Exit]);
    let sync = if barrier {
        vec![SyncObject::Barrier { parties: 3 }]
    } else {
        vec![SyncObject::Cond]
    };
    let mut s = quiet_sim(
        "exynos5422",
        spec(
            vec![
                ("a", Some(vec![5]), a),
                ("b", Some(vec![6]), b),
                ("waker", Some(vec![5]), w),
            ],
            sync,
            50 * MS,
        ),
    );
    s.cfg.features.set("PREEMPT_LAZY", lazy).unwrap();
    s.run();
    assert_ne!(s.stop, Some(StopReason::Livelock));
    (
        (mark(&s, 8), mark(&s, 2), mark(&s, 9)),
        s.counters.wake_q_preemptions,
    )
}

/// pthread_cond_broadcast() is one futex_wake(INT_MAX): futex_wake() takes
/// every waiter off the futex, then wake_up_q() wakes them one by one with
/// preemption enabled, each try_to_wake_up() ending in preempt_enable().
/// Waking the SCHED_FIFO `a` on the waker's own CPU calls resched_curr()
/// (non-lazy: an RT wakee preempting a fair task), so preempt_enable()
/// switches the waker out right there, and `b` on idle CPU 6 is woken only
/// when the waker runs again, after `a`'s 1 ms. Without the preemption
/// `b` would start within microseconds of the broadcast.
#[test]
fn a_broadcast_waking_an_rt_task_on_its_cpu_wakes_the_rest_after_it() {
    let ((t8, t2, t9), n) = broadcast_pair(SchedPolicy::Fifo(10), SchedPolicy::Normal, false, true);
    assert_eq!(n, 1, "one waker switched out among its wakes");
    assert!(t2 >= t8 + MS, "b woke at {t2} ns, broadcast at {t8} ns");
    assert!(t9 >= t8 + MS, "the waker went on after `a`: {t9} ns");
}

/// The same broadcast with a fair `a`: its wakeup preempts the
/// SCHED_IDLE waker, but under preempt=lazy resched_curr_lazy() on the
/// local CPU sets only TIF_NEED_RESCHED_LAZY, which preempt_enable() does
/// not act on: the waker wakes `b` too and is switched out at its return
/// to user space. Under preempt=full the request is TIF_NEED_RESCHED and
/// the waker is switched out after waking `a`.
#[test]
fn a_lazy_wakeup_leaves_the_waker_to_wake_the_rest() {
    let ((t8, t2, _), n) = broadcast_pair(SchedPolicy::Normal, SchedPolicy::Idle, false, true);
    assert_eq!(n, 0);
    assert!(
        t2 < t8 + 100 * US,
        "b woke at {t2} ns, broadcast at {t8} ns"
    );
    let ((t8, t2, _), n) = broadcast_pair(SchedPolicy::Normal, SchedPolicy::Idle, false, false);
    assert_eq!(n, 1, "preempt=full: switched out after the first wake");
    assert!(t2 >= t8 + MS, "b woke at {t2} ns, broadcast at {t8} ns");
}

/// A barrier's release is the last arriver's futex_wake(INT_MAX) (glibc
/// pthread_barrier_wait(), libgomp's futex barrier): the same rule, and
/// the sleepers are on the futex's wait list by priority (plist order), so
/// the FIFO 10 `a` is woken first whichever arrived first.
#[test]
fn a_barrier_release_waking_an_rt_task_on_its_cpu_wakes_the_rest_after_it() {
    let ((t8, t2, t9), n) = broadcast_pair(SchedPolicy::Fifo(10), SchedPolicy::Normal, true, true);
    assert_eq!(n, 1);
    assert!(t2 >= t8 + MS, "b woke at {t2} ns, release at {t8} ns");
    assert!(t9 >= t8 + MS, "the waker went on after `a`: {t9} ns");
    // A fair `a` under preempt=lazy: all woken at once.
    let ((t8, t2, _), n) = broadcast_pair(SchedPolicy::Normal, SchedPolicy::Normal, true, true);
    assert_eq!(n, 0);
    assert!(t2 < t8 + 100 * US, "b woke at {t2} ns, release at {t8} ns");
}

/// A lazy request that another CPU left on the waker's CPU stays lazy
/// through the waker's system call: the SCHED_IDLE waker on CPU 5 computes
/// until 3 ms, `c` (normal, CPU 5) is woken from CPU 6 at 2.9 ms, which
/// sets only TIF_NEED_RESCHED_LAZY on CPU 5 (no IPI), and at 3 ms the
/// waker broadcasts to `a` (normal, CPU 5) and `b` (CPU 6). Neither the
/// lazy flag nor `a`'s local lazy preemption is acted on by the
/// preempt_enable() after `a`'s wakeup: the waker wakes `b` too, and is
/// switched out at its return to user space.
#[test]
fn a_pending_lazy_request_does_not_stop_a_broadcast_halfway() {
    let wait = |cond: u32, tag: u32| {
        vec![
            Step::Wait { cond, mutex: None },
            Step::Mark { tag },
            Step::Exit,
        ]
    };
    let mut b = vec![Step::Sleep { ns: 100 * US }];
    b.extend(wait(0, 2));
    let threads: Vec<TestThread> = vec![
        ("a", Some(vec![5]), wait(0, 1)),
        ("b", Some(vec![6]), b),
        ("c", Some(vec![5]), wait(1, 3)),
        (
            "signaller",
            Some(vec![6]),
            vec![
                Step::Sleep { ns: 2_900 * US },
                Step::Signal { cond: 1 },
                Step::Exit,
            ],
        ),
        (
            "waker",
            Some(vec![5]),
            vec![
                set(SchedPolicy::Idle),
                Step::Compute { work_ns: 3 * MS },
                Step::Mark { tag: 8 },
                Step::Broadcast { cond: 0 },
                Step::Exit,
            ],
        ),
    ];
    let mut s = quiet_sim(
        "exynos5422",
        spec(threads, vec![SyncObject::Cond, SyncObject::Cond], 50 * MS),
    );
    s.run();
    let (t8, t2, t3) = (mark(&s, 8), mark(&s, 2), mark(&s, 3));
    assert!(
        t3 >= t8,
        "c ran at {t3} ns, before the broadcast at {t8} ns"
    );
    assert_eq!(s.counters.wake_q_preemptions, 0);
    assert!(
        t2 < t8 + 100 * US,
        "b woke at {t2} ns, broadcast at {t8} ns"
    );
}

/// glibc unlocks a mutex in the kernel whenever its futex word is 2, and a
/// locker that slept on it takes it with 2 (__lll_lock_wait() exchanges 2
/// in): so the SCHED_IDLE hog's first unlock below, after it waited for
/// the mutex, is a futex_wake() system call although no one is left to
/// wake, and its return to user space acts on the lazy request of the
/// woken thread (2 ms). The hog takes the mutex at 1.95 ms, when the
/// holder on CPU 7 lets it go, and unlocks it 100 µs later.
#[test]
fn an_unlock_of_a_contended_word_returns_to_user_space_with_no_one_to_wake() {
    let holder: TestThread = (
        "holder",
        Some(vec![7]),
        vec![
            Step::Lock { mutex: 1 },
            Step::Compute {
                work_ns: 1_950 * US,
            },
            Step::Unlock { mutex: 1 },
            Step::Exit,
        ],
    );
    let contended = lazy_wake_latency_with(
        vec![
            Step::Lock { mutex: 1 },
            Step::Compute { work_ns: 100 * US },
            Step::Unlock { mutex: 1 },
        ],
        vec![SyncObject::Mutex],
        vec![holder],
    );
    assert!(
        contended < 150 * US,
        "the woken thread waited {contended} ns, past the hog's unlock"
    );
    let user = lazy_wake_latency(vec![Step::Mark { tag: 1 }], vec![]);
    assert!(user > 150 * US, "without a system call: {user} ns");
}

/// rt-app's `runtime` loops over 32 µs of work until CLOCK_MONOTONIC has
/// advanced by the duration (rt-app.c, `rtapp_runtime`), and schbench's
/// usec_spin() polls gettimeofday() the same way: time spent preempted
/// counts. Two such 100 ms spins sharing CPU 5 both end about 100 ms
/// after they first ran (the second starts at the first's switch-out),
/// each with about half of it on the CPU, not at 100 and 200 ms.
#[test]
fn a_wall_time_spin_counts_the_time_it_is_preempted() {
    let spin = || {
        vec![
            Step::RunWall { ns: 100 * MS },
            Step::Mark { tag: 1 },
            Step::Exit,
        ]
    };
    let mut s = quiet_sim(
        "exynos5422",
        spec(
            vec![("a", Some(vec![5]), spin()), ("b", Some(vec![5]), spin())],
            vec![],
            1_000 * MS,
        ),
    );
    s.run();
    let ends: Vec<u64> = s.marks.iter().filter(|m| m.1 == 1).map(|m| m.2).collect();
    assert_eq!(ends.len(), 2);
    for &e in &ends {
        assert!((100 * MS..110 * MS).contains(&e), "ended at {e} ns");
    }
    for t in s.tasks.iter().filter(|t| !t.kthread) {
        let cpu = t.stats.cpu_time_ns;
        assert!(
            (45 * MS..=55 * MS).contains(&cpu),
            "{}: {cpu} ns on the CPU",
            t.name
        );
    }
}

// ----- glibc's futex words (a helper's review) -----

/// glibc's lll_unlock(): `if (atomic_exchange_rel(futex, 0) > 1)
/// futex_wake(futex, 1)`. A unlocks a word of 2 (B and C slept): it wakes
/// B and leaves the word 0. B cannot run (an RT hog holds its CPU). D takes
/// the free mutex by compare-and-swap 0 → 1 and unlocks it with 1: no
/// futex_wake(), and C sleeps on until B takes the lock (with 2) and
/// unlocks it.
#[test]
fn an_unlock_of_an_uncontended_word_wakes_no_one() {
    let locker = |sleep_ns: u64, tag: u32| {
        vec![
            Step::Sleep { ns: sleep_ns },
            Step::Lock { mutex: 0 },
            Step::Mark { tag },
            Step::Unlock { mutex: 0 },
            Step::Exit,
        ]
    };
    let threads: Vec<TestThread> = vec![
        (
            "A",
            Some(vec![4]),
            vec![
                Step::Lock { mutex: 0 },
                Step::Compute { work_ns: MS },
                Step::Unlock { mutex: 0 },
                Step::Exit,
            ],
        ),
        ("B", Some(vec![5]), locker(100 * US, 2)),
        ("C", Some(vec![6]), locker(200 * US, 3)),
        (
            "hog",
            Some(vec![5]),
            vec![
                set(SchedPolicy::Fifo(50)),
                Step::Sleep { ns: 500 * US },
                Step::Compute { work_ns: 5 * MS },
                Step::Exit,
            ],
        ),
        ("D", Some(vec![7]), locker(1_300 * US, 4)),
    ];
    let mut s = quiet_sim(
        "exynos5422",
        spec(threads, vec![SyncObject::Mutex], 50 * MS),
    );
    s.run();
    let (b, c, d) = (mark(&s, 2), mark(&s, 3), mark(&s, 4));
    assert!(
        c > b,
        "C took the lock at {c} ns, woken by D's unlock at {d} ns, before B ({b} ns)"
    );
}

/// glibc before 2.25: pthread_cond_broadcast()'s FUTEX_CMP_REQUEUE wakes
/// W1 and moves W2 and W3 onto the mutex's futex without touching its
/// word, so the broadcaster's unlock (word 1) wakes no one; W1 re-locks
/// with 2 (__pthread_mutex_cond_lock()), so its unlock wakes W2, and W2's
/// W3: each waiter is woken once, the point of the requeue.
#[test]
fn a_requeue_broadcast_then_unlock_wakes_each_waiter_once() {
    let waiter = |stagger_ns: u64, tag: u32| {
        vec![
            Step::Compute {
                work_ns: stagger_ns,
            },
            Step::Lock { mutex: 1 },
            Step::Wait {
                cond: 0,
                mutex: Some(1),
            },
            Step::Mark { tag },
            Step::Compute { work_ns: 100 * US },
            Step::Unlock { mutex: 1 },
            Step::Exit,
        ]
    };
    let threads: Vec<TestThread> = vec![
        ("W1", Some(vec![5]), waiter(10 * US, 1)),
        ("W2", Some(vec![6]), waiter(20 * US, 2)),
        ("W3", Some(vec![7]), waiter(30 * US, 3)),
        (
            "bc",
            Some(vec![4]),
            vec![
                Step::Compute { work_ns: MS },
                Step::Lock { mutex: 1 },
                Step::BroadcastRequeue {
                    cond: 0,
                    mutex: 1,
                    syscall_ns: 0,
                },
                Step::Unlock { mutex: 1 },
                Step::Exit,
            ],
        ),
    ];
    let mut s = quiet_sim(
        "exynos5422",
        spec(threads, vec![SyncObject::Cond, SyncObject::Mutex], 50 * MS),
    );
    s.run();
    let w: Vec<u64> = s
        .tasks
        .iter()
        .filter(|t| t.name.starts_with('W'))
        .map(|t| t.stats.wakeups)
        .collect();
    assert_eq!(w, vec![1, 1, 1], "wakeups of W1, W2, W3");
}
