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
