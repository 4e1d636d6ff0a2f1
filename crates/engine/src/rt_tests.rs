//! RT class and fair server scenarios, invariants checked after every event.

use crate::scenarios::{
    quiet_sim, set_policy as set, template_cpu_ns as cpu_ns, thread, TestThread,
};
use crate::sim::StopReason;
use schedlab_topo::CpuMask;
use schedlab_workload::{SchedPolicy, Step, WorkloadSpec};

const MS: u64 = 1_000_000;

/// `policy`, a 1 ms sleep, then `steps`. (Threads start in the fair
/// class, as rt-app's do: the tests let every thread set its policy this
/// way before the RT ones hog a CPU.)
fn set_then(policy: SchedPolicy, steps: Vec<Step>) -> Vec<Step> {
    let mut v = vec![set(policy), Step::Sleep { ns: MS }];
    v.extend(steps);
    v
}

/// A thread of a test: name, allowed CPUs, program.
type Thread<'a> = TestThread<'a>;

/// A workload of the given threads, all started at 0.
fn spec(threads: Vec<Thread>, max_time_ns: u64) -> WorkloadSpec {
    crate::scenarios::threads_spec("rt", threads, max_time_ns)
}

/// A SCHED_FIFO hog and a fair hog on one CPU: without RT throttling the
/// fair task gets only what the fair server reserves, 50 ms a second after
/// a first wait of 950 ms.
#[test]
fn a_fifo_hog_leaves_a_fair_hog_the_fair_servers_five_percent() {
    let hog = |rt: bool| {
        let mut steps = vec![Step::Compute {
            work_ns: u64::MAX / 4,
        }];
        if rt {
            steps.insert(0, set(SchedPolicy::Fifo(50)));
        }
        steps
    };
    let mut s = quiet_sim(
        "exynos5422",
        spec(
            vec![
                ("rt", Some(vec![5]), hog(true)),
                ("fair", Some(vec![5]), hog(false)),
            ],
            3_000 * MS,
        ),
    );
    assert_eq!(s.run(), StopReason::TimeLimit);
    let (rt, fair) = (cpu_ns(&s, 0), cpu_ns(&s, 1));
    // Three server turns of 50 ms (at about 0.95, 1.95 and 2.95 s), plus
    // the moments before the RT task set its policy.
    assert!((140 * MS..=200 * MS).contains(&fair), "fair {fair} ns");
    assert!(rt > 2_780 * MS, "rt {rt} ns");
    assert!(
        s.counters.fair_server_runs >= 2,
        "{}",
        s.counters.fair_server_runs
    );
}

/// With the fair server's share used by the fair class on its own (an RT
/// task that sleeps half the time), the server never has to run.
#[test]
fn the_fair_server_stays_deferred_while_fair_tasks_get_their_share() {
    let mut s = quiet_sim(
        "exynos5422",
        spec(
            vec![
                (
                    "rt",
                    Some(vec![5]),
                    vec![
                        set(SchedPolicy::Fifo(50)),
                        Step::Compute { work_ns: 5 * MS },
                        Step::Sleep { ns: 5 * MS },
                        Step::Loop {
                            start: 1,
                            count: u32::MAX,
                            slot: 0,
                        },
                    ],
                ),
                (
                    "fair",
                    Some(vec![5]),
                    vec![Step::Compute {
                        work_ns: u64::MAX / 4,
                    }],
                ),
            ],
            2_000 * MS,
        ),
    );
    s.run();
    assert_eq!(s.counters.fair_server_runs, 0);
    assert!(cpu_ns(&s, 1) > 800 * MS, "fair {}", cpu_ns(&s, 1));
}

/// An RT task waking on a CPU running a fair task preempts it at once (no
/// lazy reschedule, no wait for a slice to end).
#[test]
fn an_rt_wakeup_preempts_a_fair_task_at_once() {
    let mut s = quiet_sim(
        "exynos5422",
        spec(
            vec![
                (
                    "rt",
                    Some(vec![2]),
                    vec![
                        set(SchedPolicy::Fifo(1)),
                        Step::Sleep { ns: 3 * MS },
                        Step::Compute { work_ns: 100_000 },
                        Step::Loop {
                            start: 1,
                            count: 50,
                            slot: 0,
                        },
                    ],
                ),
                (
                    "fair",
                    Some(vec![2]),
                    vec![Step::Compute {
                        work_ns: u64::MAX / 4,
                    }],
                ),
            ],
            200 * MS,
        ),
    );
    s.run();
    let rt = s.tasks.iter().find(|t| t.template == 0).unwrap();
    assert!(rt.stats.wakeups >= 50);
    // A wakeup waits only for the context switch: no more than a few µs each.
    assert!(
        rt.stats.wait_time_ns < rt.stats.wakeups * 20_000,
        "waited {} ns over {} wakeups",
        rt.stats.wait_time_ns,
        rt.stats.wakeups
    );
}

/// Two SCHED_FIFO tasks of one priority on one CPU run one after the
/// other; as SCHED_RR they take turns of 100 ms.
#[test]
fn fifo_runs_to_completion_and_rr_takes_turns() {
    let run = |policy: SchedPolicy| {
        let job = set_then(policy, vec![Step::Compute { work_ns: 300 * MS }]);
        let mut s = quiet_sim(
            "exynos5422",
            spec(
                vec![("a", Some(vec![6]), job.clone()), ("b", Some(vec![6]), job)],
                1_000 * MS,
            ),
        );
        assert_eq!(s.run(), StopReason::Finished);
        let switches: u64 = s
            .tasks
            .iter()
            .filter(|t| t.template != u32::MAX)
            .map(|t| t.stats.nr_switches)
            .sum();
        (switches, s.counters.rt_rr_rotations)
    };
    let (fifo_switches, fifo_rot) = run(SchedPolicy::Fifo(30));
    let (rr_switches, rr_rot) = run(SchedPolicy::Rr(30));
    assert_eq!(fifo_rot, 0);
    assert!(fifo_switches <= 4, "FIFO switched {fifo_switches} times");
    // 600 ms of work in 100 ms turns: five rotations.
    assert!((4..=6).contains(&rr_rot), "RR rotated {rr_rot} times");
    assert!(rr_switches > fifo_switches);
}

/// A higher priority preempts a lower one; the lower one resumes after it.
#[test]
fn a_higher_rt_priority_preempts_a_lower_one() {
    let mut s = quiet_sim(
        "exynos5422",
        spec(
            vec![
                (
                    "low",
                    Some(vec![4]),
                    set_then(
                        SchedPolicy::Fifo(10),
                        vec![Step::Compute { work_ns: 50 * MS }],
                    ),
                ),
                (
                    "high",
                    Some(vec![4]),
                    set_then(
                        SchedPolicy::Fifo(90),
                        vec![
                            Step::Sleep { ns: 10 * MS },
                            Step::Compute { work_ns: 20 * MS },
                        ],
                    ),
                ),
            ],
            1_000 * MS,
        ),
    );
    assert_eq!(s.run(), StopReason::Finished);
    let low = s.tasks.iter().find(|t| t.template == 0).unwrap();
    let high = s.tasks.iter().find(|t| t.template == 1).unwrap();
    // The high task waits only for its switch; the low one waits its 20 ms.
    assert!(
        high.stats.wait_time_ns < MS,
        "high waited {}",
        high.stats.wait_time_ns
    );
    assert!(
        low.stats.wait_time_ns >= 19 * MS,
        "low waited {}",
        low.stats.wait_time_ns
    );
}

/// RT tasks placed by priority, not load: four SCHED_FIFO hogs of one
/// priority started together on an 8-CPU machine each get a CPU of their
/// own (select_task_rq_rt() and pushes to CPUs without RT work).
#[test]
fn rt_hogs_of_one_priority_spread_over_the_cpus() {
    let hog = vec![
        set(SchedPolicy::Fifo(50)),
        Step::Compute { work_ns: 200 * MS },
    ];
    let threads = (0..4)
        .map(|_| ("rt", None, hog.clone()))
        .collect::<Vec<_>>();
    let mut s = quiet_sim("exynos5422", spec(threads, 1_000 * MS));
    assert_eq!(s.run(), StopReason::Finished);
    for t in s.tasks.iter().filter(|t| t.template != u32::MAX) {
        assert!(
            t.stats.wait_time_ns < 2 * MS,
            "{} waited {}",
            t.name,
            t.stats.wait_time_ns
        );
    }
}

/// A CPU whose RT task goes to sleep pulls an RT task that waits on
/// another CPU (pull_rt_task()), or that CPU pushes it (push_rt_task()).
#[test]
fn a_waiting_rt_task_moves_to_a_cpu_its_priority_wins() {
    let both = Some(vec![4, 5]);
    let mut s = quiet_sim(
        "exynos5422",
        spec(
            vec![
                (
                    "a",
                    both.clone(),
                    set_then(
                        SchedPolicy::Fifo(50),
                        vec![Step::Compute { work_ns: 100 * MS }],
                    ),
                ),
                (
                    "b",
                    both.clone(),
                    set_then(
                        SchedPolicy::Fifo(50),
                        vec![
                            Step::Compute { work_ns: 10 * MS },
                            Step::Sleep { ns: 200 * MS },
                        ],
                    ),
                ),
                (
                    "c",
                    both,
                    set_then(
                        SchedPolicy::Fifo(20),
                        vec![Step::Compute { work_ns: 30 * MS }],
                    ),
                ),
            ],
            1_000 * MS,
        ),
    );
    assert_eq!(s.run(), StopReason::Finished);
    let c = s.tasks.iter().find(|t| t.template == 2).unwrap();
    // c runs as soon as b sleeps (about 10 ms in), not after a finishes.
    assert!(
        c.stats.wait_time_ns < 15 * MS,
        "c waited {}",
        c.stats.wait_time_ns
    );
    assert!(s.counters.rt_pulls + s.counters.rt_pushes > 0);
}

/// sched_setattr() back to SCHED_OTHER returns a task to the fair class,
/// with its load on the fair runqueue again.
#[test]
fn a_task_returns_from_rt_to_fair() {
    let mut s = quiet_sim(
        "exynos5422",
        spec(
            vec![(
                "t",
                Some(vec![3]),
                vec![
                    set(SchedPolicy::Rr(5)),
                    Step::Compute { work_ns: 5 * MS },
                    set(SchedPolicy::Normal),
                    Step::Compute { work_ns: 50 * MS },
                ],
            )],
            1_000 * MS,
        ),
    );
    s.run_until(20 * MS);
    let t = s.tasks.iter().find(|t| t.template == 0).unwrap();
    assert!(!t.is_rt() && t.se.on_rq && t.avg.util_avg > 0);
    assert_eq!(s.run(), StopReason::Finished);
}

/// The trace shows an RT task's kernel priority, 99 − sched_priority.
#[test]
fn the_trace_shows_rt_priorities() {
    let mut sp = spec(
        vec![(
            "rt",
            Some(vec![1]),
            vec![
                set(SchedPolicy::Fifo(50)),
                Step::Sleep { ns: MS },
                Step::Compute { work_ns: MS },
            ],
        )],
        50 * MS,
    );
    sp.max_time_ns = 50 * MS;
    let mut s = quiet_sim("exynos5422", sp);
    s.trace = Some(Box::new(crate::trace::Trace::new(s.nr_cpus(), 1_000_000)));
    s.run();
    let mut text = Vec::new();
    crate::trace::write_ftrace_text(&s, &mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains("next_comm=rt next_pid") && text.contains("next_prio=49"),
        "{text}"
    );
}

/// Under an RT hog, a fair task that wakes after the fair server stopped
/// waits for the server's zero-laxity point of a new period (about 950 ms)
/// each time: a server that had to run before does not run at once in a
/// later period (dl_defer_running is cleared when a new period starts).
#[test]
fn each_starved_wakeup_waits_for_the_zero_laxity_point() {
    let mut s = quiet_sim(
        "exynos5422",
        spec(
            vec![
                (
                    "rt",
                    Some(vec![5]),
                    vec![
                        set(SchedPolicy::Fifo(50)),
                        Step::Compute {
                            work_ns: u64::MAX / 4,
                        },
                    ],
                ),
                (
                    "fair",
                    Some(vec![5]),
                    vec![
                        Step::Sleep { ns: MS },
                        Step::Compute { work_ns: MS },
                        Step::Sleep { ns: 1_500 * MS },
                        Step::Loop {
                            start: 1,
                            count: u32::MAX,
                            slot: 0,
                        },
                    ],
                ),
            ],
            7_000 * MS,
        ),
    );
    s.run();
    // It first runs at 950 ms, wakes from its 1 ms sleep within the
    // server's budget (no wait), then twice after 1.5 s asleep, each time
    // waiting 950 ms: 2.85 s of waiting in all. A server that kept
    // `defer_running` would run it at once (0.95 s in all).
    let fair = s.tasks.iter().find(|t| t.template == 1).unwrap();
    assert_eq!(fair.stats.wakeups, 3);
    let wait = fair.stats.wait_time_ns;
    assert!(
        (2_800 * MS..=2_900 * MS).contains(&wait),
        "waited {wait} ns"
    );
}

/// A CPU whose RT task sleeps pulls an RT task waiting on another CPU
/// (balance_rt() → pull_rt_task()): `c` waits behind `a` on CPU 4, where
/// its wakeup found no CPU of lower priority, until `b` sleeps on CPU 5.
#[test]
fn a_cpu_whose_rt_task_sleeps_pulls_a_waiting_one() {
    let mut s = quiet_sim(
        "exynos5422",
        spec(
            vec![
                (
                    "a",
                    Some(vec![4]),
                    set_then(
                        SchedPolicy::Fifo(50),
                        vec![Step::Compute { work_ns: 100 * MS }],
                    ),
                ),
                (
                    "b",
                    Some(vec![5]),
                    set_then(
                        SchedPolicy::Fifo(50),
                        vec![
                            Step::Compute { work_ns: 10 * MS },
                            Step::Sleep { ns: 200 * MS },
                        ],
                    ),
                ),
                (
                    "c",
                    Some(vec![4]),
                    vec![
                        set(SchedPolicy::Fifo(20)),
                        Step::SetAffinity {
                            cpus: Some(Box::new(CpuMask::from_cpus([4, 5]))),
                        },
                        Step::Sleep { ns: 2 * MS },
                        Step::Compute { work_ns: 30 * MS },
                    ],
                ),
            ],
            1_000 * MS,
        ),
    );
    assert_eq!(s.run(), StopReason::Finished);
    let c = s.tasks.iter().find(|t| t.template == 2).unwrap();
    assert!(s.counters.rt_pulls >= 1, "pulls {}", s.counters.rt_pulls);
    assert!(
        c.stats.wait_time_ns < 12 * MS,
        "c waited {}",
        c.stats.wait_time_ns
    );
    assert_eq!(c.cpu, 5);
}

/// An RT task's timer slack is 0 (7.3's __setscheduler_params()): its
/// nanosleep() ends at the requested time, a fair task's 50 µs later.
#[test]
fn an_rt_nanosleep_has_no_timer_slack() {
    let end = |policy: SchedPolicy| {
        let steps = vec![set(policy), Step::Nanosleep { ns: 10 * MS }];
        let mut s = quiet_sim(
            "exynos5422",
            spec(vec![("t", Some(vec![5]), steps)], 100 * MS),
        );
        assert_eq!(s.run(), StopReason::Finished);
        s.now
    };
    assert_eq!(
        end(SchedPolicy::Normal) - end(SchedPolicy::Fifo(10)),
        crate::exec::TIMER_SLACK_NS
    );
}

/// RT time takes capacity from the fair class (scale_rt_capacity()): a fair
/// hog sharing a CPU with an RT task that runs 75% of the time moves to an
/// idle CPU. The RT task keeps its CPU below 2 queued tasks most of the
/// time, so only the reduced capacity (the nohz kick for it, the reduced
/// capacity counted as misfit, the active balance it allows) moves it.
#[test]
fn rt_time_reduces_the_capacity_the_fair_balancer_sees() {
    let mut s = quiet_sim(
        "exynos5422",
        spec(
            vec![
                (
                    "rt",
                    Some(vec![4]),
                    vec![
                        set(SchedPolicy::Fifo(50)),
                        Step::Compute { work_ns: 3 * MS },
                        Step::Sleep { ns: MS },
                        Step::Loop {
                            start: 1,
                            count: u32::MAX,
                            slot: 0,
                        },
                    ],
                ),
                (
                    "fair",
                    Some(vec![4]),
                    vec![
                        Step::Sleep { ns: 2 * MS },
                        Step::SetAffinity {
                            cpus: Some(Box::new(CpuMask::from_cpus([4, 5]))),
                        },
                        Step::Compute {
                            work_ns: u64::MAX / 4,
                        },
                    ],
                ),
            ],
            1_000 * MS,
        ),
    );
    s.run();
    let fair = s.tasks.iter().find(|t| t.template == 1).unwrap();
    assert!(
        s.rqs[4].cpu_capacity < 512,
        "cpu 4 capacity {}",
        s.rqs[4].cpu_capacity
    );
    assert_eq!(fair.cpu, 5);
    assert!(
        fair.stats.cpu_time_ns > 800 * MS,
        "fair ran {} ns",
        fair.stats.cpu_time_ns
    );
}

/// A thread forked by an RT task keeps the parent's slack of 0 as its own
/// default (copy_process()), so it sleeps without slack even after it
/// turns to a fair policy; one forked by a fair task has the 50 µs.
#[test]
fn a_child_of_an_rt_task_inherits_its_zero_timer_slack() {
    let child_wakes = |parent: SchedPolicy| {
        let spec = WorkloadSpec {
            name: "fork".into(),
            templates: vec![
                thread(
                    "parent",
                    Some(CpuMask::from_cpus([5])),
                    vec![set(parent), Step::Spawn { template: 1 }],
                ),
                thread(
                    "child",
                    None,
                    vec![set(SchedPolicy::Normal), Step::Nanosleep { ns: 10 * MS }],
                ),
            ],
            initial: vec![0],
            sync: vec![],
            mem_node: None,
            max_time_ns: 100 * MS,
        };
        let mut s = quiet_sim("exynos5422", spec);
        assert_eq!(s.run(), StopReason::Finished);
        s.now
    };
    assert_eq!(
        child_wakes(SchedPolicy::Normal) - child_wakes(SchedPolicy::Fifo(10)),
        crate::exec::TIMER_SLACK_NS
    );
}

/// sched_setattr() that lowers the running task below a queued one
/// switches it out before its next step, even one that takes no time (here
/// its exit): the return to user space runs schedule().
#[test]
fn lowering_itself_switches_a_task_out_before_its_next_step() {
    let mut s = quiet_sim(
        "exynos5422",
        spec(
            vec![
                (
                    "a",
                    Some(vec![5]),
                    set_then(
                        SchedPolicy::Fifo(50),
                        vec![Step::Compute { work_ns: 2 * MS }, set(SchedPolicy::Normal)],
                    ),
                ),
                (
                    "b",
                    Some(vec![5]),
                    vec![
                        set(SchedPolicy::Fifo(10)),
                        Step::Sleep { ns: 2 * MS },
                        Step::Compute { work_ns: 5 * MS },
                    ],
                ),
            ],
            100 * MS,
        ),
    );
    assert_eq!(s.run_until(4 * MS), StopReason::TimeLimit);
    let a = s.tasks.iter().position(|t| t.template == 0).unwrap();
    assert_ne!(s.tasks[a].state, crate::task::TaskState::Dead);
    assert!(s.tasks[a].rt.is_none(), "a is a fair task again");
    assert_eq!(s.run(), StopReason::Finished);
    assert!(s.now >= 8 * MS, "a exited after b's work: {} ns", s.now);
}

/// A futex wake that makes a higher-priority waiter runnable on the
/// waker's CPU switches the waker out at the system call's return, before
/// its next step, even one that takes no time (a mark): the waker's mark
/// comes after the woken FIFO task's 3 ms of work, not at the wake
/// (exit_to_user_mode_loop()).
#[test]
fn a_wake_that_preempts_its_waker_acts_before_the_wakers_next_step() {
    let mut sp = spec(
        vec![
            (
                "waker",
                Some(vec![5]),
                vec![
                    Step::Sleep { ns: 2 * MS },
                    Step::Signal { cond: 0 },
                    Step::Mark { tag: 7 },
                ],
            ),
            (
                "waiter",
                Some(vec![5]),
                set_then(
                    SchedPolicy::Fifo(50),
                    vec![
                        Step::Wait {
                            cond: 0,
                            mutex: None,
                        },
                        Step::Compute { work_ns: 3 * MS },
                    ],
                ),
            ),
        ],
        100 * MS,
    );
    sp.sync = vec![schedlab_workload::SyncObject::Cond];
    let mut s = quiet_sim("exynos5422", sp);
    assert_eq!(s.run(), StopReason::Finished);
    let waiter = s.tasks.iter().find(|t| t.template == 1).unwrap();
    assert!(waiter.stats.cpu_time_ns >= 3 * MS);
    let &(_, _, mark_ns) = s.marks.iter().find(|m| m.1 == 7).expect("mark");
    assert!(
        mark_ns >= 5 * MS,
        "the waker went on at {mark_ns} ns, before the waiter's work"
    );
}

/// A task starved to the end of the run shows its whole wait: a FIFO 10
/// hog behind a FIFO 90 hog on one CPU never runs in 200 ms, and its
/// runqueue wait, the part still open when the run stops included, is the
/// 200 ms less the moment it was queued.
#[test]
fn a_wait_still_open_at_the_end_counts() {
    let hog = |prio| {
        set_then(
            SchedPolicy::Fifo(prio),
            vec![Step::Compute {
                work_ns: u64::MAX / 4,
            }],
        )
    };
    let mut s = quiet_sim(
        "exynos5422",
        spec(
            vec![
                ("high", Some(vec![4]), hog(90)),
                ("low", Some(vec![4]), hog(10)),
            ],
            200 * MS,
        ),
    );
    assert_eq!(s.run(), StopReason::TimeLimit);
    let low = s.tasks.iter().find(|t| t.template == 1).unwrap();
    assert!(
        low.stats.cpu_time_ns < MS && low.stats.wait_time_ns > 198 * MS,
        "low ran {} ns and waited {} ns",
        low.stats.cpu_time_ns,
        low.stats.wait_time_ns
    );
}
