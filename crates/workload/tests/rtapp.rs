//! rt-app import: fixtures covering every event, and malformed input never panics.

use proptest::prelude::*;
use schedlab_topo::CpuMask;
use schedlab_workload::rtapp::{self, Json};
use schedlab_workload::{SchedPolicy, Step, SyncObject};

fn fixture(name: &str) -> String {
    let p = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(p).unwrap()
}

#[test]
fn example_from_the_reference_parses() {
    let r = rtapp::parse(&fixture("example.json"), 8).unwrap();
    let s = &r.spec;
    assert_eq!(s.max_time_ns, 5_000_000_000);
    let names: Vec<&str> = s.templates.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["ui-0", "ui-1", "prod-0", "cons-0"]);
    assert_eq!(s.initial, [0, 1, 2, 3]);
    // Created at nice 0, cons sets its priority when it starts.
    assert_eq!(s.templates[3].nice, 0);
    assert_eq!(
        rtapp::thread_start_attrs(&s.templates[3]),
        (SchedPolicy::Normal, -5)
    );
    // ui's threads are created anywhere and restrict themselves to CPUs
    // 0-3 once started, as rt-app's do.
    assert_eq!(s.templates[0].affinity, None);
    assert!(s.templates[0].steps.contains(&Step::SetAffinity {
        cpus: Some(Box::new(CpuMask::from_cpus([0, 1, 2, 3])))
    }));
    assert_eq!(
        r.cpus[0],
        (
            "tasks.ui.cpus".to_string(),
            CpuMask::from_cpus([0, 1, 2, 3])
        )
    );
    assert!(s.templates[0].steps.contains(&Step::Timer {
        id: 0,
        period_ns: 16_000_000,
        absolute: false
    }));
    // ui's util_max: a clamp set when each ui thread starts.
    assert!(matches!(
        &s.templates[0].steps[1],
        Step::SetAttr(a) if a.util_max == Some(512)
    ));
    assert!(r.notes.iter().any(|n| n.contains("calibration")));
    // prod signals the condition cons waits on, under mutex m.
    let q = s.sync.iter().position(|o| *o == SyncObject::Cond).unwrap() as u32;
    assert!(s.templates[2].steps.contains(&Step::Signal { cond: q }));
    assert!(s.templates[3]
        .steps
        .iter()
        .any(|st| matches!(st, Step::Wait { cond, mutex: Some(_) } if *cond == q)));
}

#[test]
fn every_event_is_supported() {
    let r = rtapp::parse(&fixture("all_events.json"), 8).unwrap();
    let steps: Vec<&Step> = r.spec.templates.iter().flat_map(|t| &t.steps).collect();
    let has = |f: &dyn Fn(&Step) -> bool| steps.iter().any(|s| f(s));
    assert!(has(&|s| matches!(s, Step::Compute { .. })));
    assert!(has(&|s| matches!(s, Step::RunWall { ns: 100_000 })));
    assert!(has(&|s| matches!(s, Step::Nanosleep { .. })));
    assert!(has(&|s| matches!(s, Step::Timer { absolute: true, .. })));
    assert!(has(&|s| matches!(
        s,
        Step::Timer {
            absolute: false,
            ..
        }
    )));
    assert!(has(&|s| matches!(s, Step::Lock { .. })));
    assert!(has(&|s| matches!(s, Step::Unlock { .. })));
    assert!(has(&|s| matches!(s, Step::Wait { .. })));
    assert!(has(&|s| matches!(s, Step::Signal { .. })));
    assert!(has(&|s| matches!(s, Step::Broadcast { .. })));
    assert!(has(&|s| matches!(s, Step::Barrier { .. })));
    assert!(has(&|s| matches!(s, Step::SemPost { .. })));
    assert!(has(&|s| matches!(s, Step::SemWait { .. })));
    assert!(has(&|s| matches!(s, Step::Memory { bytes: 4096 })));
    assert!(has(&|s| matches!(s, Step::Memory { bytes: 262_144 })));
    assert!(has(&|s| matches!(
        s,
        Step::Yield {
            syscall_ns: schedlab_workload::rtapp::SCHED_YIELD_NS
        }
    )));
    assert!(has(&|s| matches!(s, Step::Spawn { .. })));
    // The forked task is defined but not started.
    let child = r
        .spec
        .templates
        .iter()
        .position(|t| t.name == "child")
        .unwrap() as u32;
    assert!(!r.spec.initial.contains(&child));
    assert!(has(&|s| *s == Step::Spawn { template: child }));
    // Barrier parties = instances referencing it (a and b).
    assert!(r.spec.sync.contains(&SyncObject::Barrier { parties: 2 }));
    // SCHED_IDLE, set when the thread starts.
    let k = r
        .spec
        .templates
        .iter()
        .find(|t| t.name == "kicker-0")
        .unwrap();
    assert_eq!(rtapp::thread_start_attrs(k).0, SchedPolicy::Idle);
    // Task a's clamps (0 and 1024) are set when its thread starts.
    assert!(has(&|s| *s
        == Step::SetAttr(Box::new(schedlab_workload::Attrs {
            policy: SchedPolicy::Normal,
            nice: Some(0),
            runtime_ns: Some(0),
            util_min: Some(0),
            util_max: Some(1024),
        }))));
    for key in ["taskgroup", "nodes_membind", "global.logdir"] {
        assert!(
            r.notes.iter().any(|n| n.contains(key)),
            "{key}: {:?}",
            r.notes
        );
    }
}

#[test]
fn dl_runtime_on_a_fair_task_is_a_custom_slice() {
    // Task level: set by the thread itself after its delay (rt-app's
    // thread_body() sleeps first, then calls set_thread_param()).
    let r = rtapp::parse(
        r#"{"tasks": {"a": {"delay": 10, "dl-runtime": 300, "loop": 2, "run": 100}}}"#,
        4,
    )
    .unwrap();
    let steps = &r.spec.templates[0].steps;
    assert_eq!(steps[0], Step::Delay { ns: 10_000 });
    assert_eq!(
        steps[1],
        Step::SetAttr(Box::new(schedlab_workload::Attrs {
            policy: SchedPolicy::Normal,
            nice: Some(0),
            runtime_ns: Some(300_000),
            util_min: None,
            util_max: None,
        }))
    );
    // Phase level, as rt-app's set_thread_param() does it: only a phase
    // that names a policy or a priority changes the attributes, dl-runtime
    // included (0 when absent: the base slice); a phase with a dl-runtime
    // alone changes nothing (noted), and a phase without attributes keeps
    // those in force.
    let r = rtapp::parse(
        r#"{"tasks": {"a": {"loop": 1, "priority": 3, "phases": {
            "short": {"priority": 3, "dl-runtime": 200, "run": 100},
            "plain": {"run": 100},
            "alone": {"dl-runtime": 400, "run": 100},
            "batch": {"policy": "SCHED_BATCH", "run": 100},
            "idle": {"policy": "SCHED_IDLE", "priority": 7, "run": 100},
            "back": {"priority": -2, "run": 100}}}}}"#,
        4,
    )
    .unwrap();
    let attrs: Vec<_> = r.spec.templates[0]
        .steps
        .iter()
        .filter(|s| matches!(s, Step::SetAttr(_)))
        .cloned()
        .collect();
    let attr = |policy, nice, runtime_ns| {
        Step::SetAttr(Box::new(schedlab_workload::Attrs {
            policy,
            nice,
            runtime_ns,
            util_min: None,
            util_max: None,
        }))
    };
    use schedlab_workload::SchedPolicy::{Batch, Idle, Normal};
    assert_eq!(
        attrs,
        [
            // The task's own, when the thread starts.
            attr(Normal, Some(3), Some(0)),
            attr(Normal, Some(3), Some(200_000)),
            attr(Batch, Some(0), Some(0)),
            attr(Idle, None, None),
            // "back" names no policy: the one in force, SCHED_IDLE, stays,
            // and its priority is ignored as under SCHED_IDLE.
            attr(Idle, None, None),
            // rt-app's SCHED_OTHER before the thread exits: nice value and
            // slice kept (sched_setscheduler()).
            attr(Normal, None, None),
        ]
    );
    assert_eq!(r.spec.templates[0].nice, 0);
    for p in [
        "phases.alone.dl-runtime ignored",
        "phases.idle.priority ignored",
        "phases.back.priority ignored",
    ] {
        assert!(r.notes.iter().any(|n| n.contains(p)), "{p}: {:?}", r.notes);
    }
    // A SCHED_BATCH task becomes one when it starts (with its nice value
    // and slice).
    let rb = rtapp::parse(
        r#"{"tasks": {"a": {"policy": "SCHED_BATCH", "priority": 2, "dl-runtime": 300, "run": 100}}}"#,
        4,
    )
    .unwrap();
    assert_eq!(rb.spec.templates[0].nice, 0);
    assert_eq!(
        rb.spec.templates[0].steps[1],
        attr(Batch, Some(2), Some(300_000))
    );
}

/// `util_min`/`util_max` are applied by rt-app's _set_thread_uclamp()
/// when the thread starts (task level) and at a phase's start whether or
/// not the phase changes its other attributes; -1 means no change; a
/// minimum above the maximum is refused.
#[test]
fn utilisation_clamps_are_set_at_start_and_per_phase() {
    use schedlab_workload::SchedPolicy::Normal;
    let r = rtapp::parse(
        r#"{"tasks": {"a": {"util_min": 512, "util_max": -1, "loop": 1, "phases": {
            "boost": {"util_max": 800, "run": 100},
            "plain": {"run": 100},
            "nice": {"priority": 1, "util_min": 0, "run": 100}}}}}"#,
        4,
    )
    .unwrap();
    let attrs: Vec<_> = r.spec.templates[0]
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::SetAttr(a) => Some((a.policy, a.nice, a.runtime_ns, a.util_min, a.util_max)),
            _ => None,
        })
        .collect();
    assert_eq!(
        attrs,
        [
            (Normal, Some(0), Some(0), Some(512), None),
            (Normal, None, None, None, Some(800)),
            (Normal, Some(1), Some(0), Some(0), None),
            // SCHED_OTHER at the thread's end keeps the clamps the file set.
            (Normal, None, None, None, None),
        ]
    );
    assert!(matches!(r.spec.templates[0].steps[1], Step::SetAttr(_)));
    for (doc, path) in [
        (
            r#"{"tasks": {"a": {"util_min": 600, "util_max": 500, "run": 1}}}"#,
            "tasks.a.util_min",
        ),
        (
            r#"{"tasks": {"a": {"phases": {"p": {"util_min": 9, "util_max": 8, "run": 1}}}}}"#,
            "tasks.a.phases.p.util_min",
        ),
        (
            r#"{"tasks": {"a": {"util_max": 1025, "run": 1}}}"#,
            "tasks.a.util_max",
        ),
    ] {
        let e = rtapp::parse(doc, 4).unwrap_err();
        assert_eq!(e.path, path, "{doc}: {e}");
    }
}

#[test]
fn a_task_whose_only_keys_are_unknown_names_them() {
    let e = rtapp::parse(r#"{"tasks": {"t": {"frobnicate": 5, "rnu": 3}}}"#, 4).unwrap_err();
    assert_eq!(e.path, "tasks.t");
    assert!(
        e.to_string()
            .contains("task has no event (`frobnicate`, `rnu` are neither an rt-app event"),
        "{e}"
    );
}

#[test]
fn duplicate_keys_keep_their_order() {
    let r = rtapp::parse(&fixture("duplicate_keys.json"), 2).unwrap();
    assert_eq!(
        r.spec.templates[0].steps[..6],
        [
            Step::Delay { ns: 0 },
            // The task's own attributes, set even when they are the defaults.
            Step::SetAttr(Box::new(schedlab_workload::Attrs {
                policy: SchedPolicy::Normal,
                nice: Some(0),
                runtime_ns: Some(0),
                util_min: None,
                util_max: None,
            })),
            Step::Compute { work_ns: 100_000 },
            Step::Nanosleep { ns: 100_000 },
            Step::Compute { work_ns: 300_000 },
            Step::Nanosleep { ns: 200_000 },
        ]
    );
}

#[test]
fn malformed_parts_are_errors_with_paths() {
    let cases = [
        (r#"{"global": {}}"#, "tasks"),
        (r#"{"tasks": {"a": {"run": -1}}}"#, "tasks.a.run"),
        (r#"{"tasks": {"a": {"run": "x"}}}"#, "tasks.a.run"),
        (r#"{"tasks": {"a": {"loop": 0, "run": 1}}}"#, "tasks.a.loop"),
        (
            r#"{"tasks": {"a": {"run": 1, "wait": {"ref": "c"}}}}"#,
            "tasks.a.wait.mutex",
        ),
        (
            r#"{"tasks": {"a": {"run": 1, "timer": {"period": 0}}}}"#,
            "tasks.a.timer.period",
        ),
        (
            r#"{"tasks": {"a": {"run": 1, "timer": {"period": 5, "mode": "x"}}}}"#,
            "tasks.a.timer.mode",
        ),
        (
            r#"{"tasks": {"a": {"phases": {"p": {"cpus": [4], "run": 1}}}}}"#,
            "tasks.a.phases.p.cpus[0]",
        ),
        (
            r#"{"tasks": {"a": {"phases": {"p": {"policy": "SCHED_DEADLINE", "run": 1}}}}}"#,
            "tasks.a.phases.p.policy",
        ),
        (
            r#"{"tasks": {"a": {"phases": {"p": {"priority": 20, "run": 1}}}}}"#,
            "tasks.a.phases.p.priority",
        ),
        (r#"{"tasks": {"a": {"bogus": 1}}}"#, "tasks.a"),
        (
            r#"{"global": {"duration": 0}, "tasks": {"a": {"run": 1}}}"#,
            "global.duration",
        ),
        (
            r#"{"tasks": {"a": {"run": 1, "memrun": {"size": 1, "kind": 2}}}}"#,
            "tasks.a.memrun.kind",
        ),
    ];
    for (text, path) in cases {
        let e = rtapp::parse(text, 4).unwrap_err();
        assert_eq!(e.path, path, "{text}: {e}");
    }
}

/// rt-app reads the keys it knows and passes over the others (and a fair
/// task's deadline parameters, which sched_setattr() does not use): such
/// files run, and a note names each key.
#[test]
fn keys_rt_app_does_not_read_are_noted() {
    let cases = [
        (
            r#"{"tasks": {"a": {"run": 1}}, "extra": 1}"#,
            "extra ignored",
        ),
        (
            r#"{"global": {"frag": 1}, "tasks": {"a": {"run": 1}}}"#,
            "global.frag ignored",
        ),
        (
            r#"{"tasks": {"a": {"colour": "red", "run": 1}}}"#,
            "tasks.a.colour ignored",
        ),
        (
            r#"{"tasks": {"a": {"phases": {"p": {"note": 1, "run": 1}}}}}"#,
            "tasks.a.phases.p.note ignored",
        ),
        (
            r#"{"tasks": {"a": {"dl-period": 5, "run": 1}}}"#,
            "tasks.a.dl-period ignored",
        ),
    ];
    for (text, note) in cases {
        let r = rtapp::parse(text, 4).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert!(
            r.notes.iter().any(|n| n.starts_with(note)),
            "{text}: {:?}",
            r.notes
        );
    }
}

/// A file in the relaxed syntax rt-app's own examples use (json-c's
/// default mode: comments, trailing commas), with phases that move the
/// thread between CPUs.
#[test]
fn relaxed_syntax_fixture_with_phase_cpus() {
    let r = rtapp::parse(&fixture("relaxed_phases.json"), 4).unwrap();
    let t = &r.spec.templates[0];
    assert_eq!(t.affinity, None);
    let paths: Vec<&str> = r.cpus.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        paths,
        [
            "tasks.mover.cpus",
            "tasks.mover.phases.first.cpus",
            "tasks.mover.phases.second.cpus"
        ]
    );
    let masks: Vec<Option<CpuMask>> = t
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::SetAffinity { cpus } => Some(cpus.as_deref().copied()),
            _ => None,
        })
        .collect();
    assert_eq!(
        masks,
        vec![
            Some(CpuMask::from_cpus([0])),
            Some(CpuMask::from_cpus([1, 2])),
            Some(CpuMask::from_cpus([3])),
        ]
    );
    // The second phase renices the thread and boosts it (single-quoted key).
    assert!(t
        .steps
        .contains(&Step::SetAttr(Box::new(schedlab_workload::Attrs {
            policy: SchedPolicy::Normal,
            nice: Some(5),
            runtime_ns: Some(0),
            util_min: Some(200),
            util_max: None,
        }))));
    assert_eq!(r.spec.max_time_ns, 2_000_000_000);
}

/// Strings drawn from rt-app's vocabulary, so random documents reach deep.
fn key() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "tasks",
        "global",
        "duration",
        "phases",
        "p",
        "run",
        "runtime",
        "sleep",
        "timer",
        "period",
        "ref",
        "mode",
        "lock",
        "unlock",
        "wait",
        "mutex",
        "signal",
        "broad",
        "sync",
        "barrier",
        "suspend",
        "resume",
        "mem",
        "memrun",
        "size",
        "count",
        "iorun",
        "yield",
        "fork",
        "loop",
        "instance",
        "delay",
        "cpus",
        "priority",
        "policy",
        "util_max",
        "taskgroup",
        "a",
        "b",
        "run0",
        "sem_post",
        "sem_wait",
        "calibration",
        "type",
    ])
    .prop_map(str::to_string)
}

fn json() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("null".to_string()),
        any::<bool>().prop_map(|b| b.to_string()),
        (-3i64..100_000).prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|f| if f.is_finite() {
            f.to_string()
        } else {
            "1e308".into()
        }),
        key().prop_map(|k| format!("\"{k}\"")),
        Just("\"SCHED_OTHER\"".to_string()),
        Just("\"absolute\"".to_string()),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(|v| format!("[{}]", v.join(","))),
            prop::collection::vec((key(), inner), 0..6).prop_map(|v| {
                let kv: Vec<String> = v.into_iter().map(|(k, x)| format!("\"{k}\":{x}")).collect();
                format!("{{{}}}", kv.join(","))
            }),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_documents_never_panic(doc in json()) {
        let _ = rtapp::parse(&doc, 4);
        let _ = rtapp::parse(&format!("{{\"tasks\": {doc}}}"), 4);
        let _ = rtapp::parse(&format!("{{\"tasks\": {{\"t\": {doc}}}}}"), 4);
        let _ = rtapp::parse(&format!("{{\"tasks\": {{\"t\": {{\"phases\": {{\"p\": {doc}}}}}}}}}"), 4);
    }

    #[test]
    fn random_calibrations_never_panic(cal in prop_oneof![
        ".{0,12}".prop_map(|s| format!("{s:?}")),
        "CPU[0-9]{0,25}".prop_map(|s| format!("\"{s}\"")),
        any::<i64>().prop_map(|n| n.to_string()),
        json(),
    ], caps in proptest::collection::vec(0u64..2048, 1..8)) {
        let doc = format!("{{\"global\": {{\"calibration\": {cal}}}, \"tasks\": {{\"t\": {{\"loop\": 1, \"run\": 1000}}}}}}");
        if let Ok(r) = rtapp::parse_for(&doc, &caps) {
            // A CPU-calibrated run is at most a capacity-1024 CPU's µs.
            for st in &r.spec.templates[0].steps {
                if let schedlab_workload::Step::Compute { work_ns } = st {
                    prop_assert!(*work_ns <= 1_000_000);
                }
            }
        }
    }

    /// Strict JSON passes the relaxed-syntax rewrite unchanged, and the
    /// same document with comments after every opening bracket and comma
    /// and a trailing comma in every non-empty list and object (json-c's
    /// default mode) reads the same.
    #[test]
    fn relaxed_syntax_reads_as_the_strict_document(doc in json()) {
        prop_assert_eq!(rtapp::strict_json(&doc).unwrap(), doc.clone());
        let mut relaxed = String::new();
        let mut prev = ' ';
        for ch in doc.chars() {
            if matches!(ch, ']' | '}') && !matches!(prev, '[' | '{') {
                relaxed.push_str(", // a trailing comma, ] }\n");
            }
            relaxed.push(ch);
            if matches!(ch, ',' | '[' | '{') {
                relaxed.push_str("/* \"x\", ] */");
            }
            prev = ch;
        }
        prop_assert_eq!(Json::parse(&relaxed).unwrap(), Json::parse(&doc).unwrap());
    }

    #[test]
    fn random_bytes_never_panic(s in ".{0,200}") {
        let _ = Json::parse(&s);
        let _ = rtapp::parse(&s, 4);
    }

    /// A SCHED_OTHER (or BATCH) task's priority is a nice value: in -20..=19
    /// it is the nice value the thread sets when it starts, outside it an
    /// error at its path; under SCHED_IDLE it is ignored.
    #[test]
    fn priorities_outside_the_nice_range_are_rejected(
        policy in prop::sample::select(vec!["SCHED_OTHER", "SCHED_BATCH", "SCHED_IDLE"]),
        prio in prop_oneof![-40i64..40, any::<i32>().prop_map(i64::from)],
        first in any::<bool>(),
    ) {
        let (a, b) = (format!("\"priority\": {prio}"), format!("\"policy\": \"{policy}\""));
        let (a, b) = if first { (a, b) } else { (b, a) };
        let doc = format!("{{\"tasks\": {{\"t\": {{{a}, {b}, \"run\": 1}}}}}}");
        match rtapp::parse(&doc, 4) {
            Ok(r) => {
                prop_assert!(policy == "SCHED_IDLE" || (-20..=19).contains(&prio));
                let want = if policy == "SCHED_IDLE" { 0 } else { prio };
                prop_assert_eq!(i64::from(rtapp::thread_start_attrs(&r.spec.templates[0]).1), want);
            }
            Err(e) => {
                prop_assert!(policy != "SCHED_IDLE" && !(-20..=19).contains(&prio), "{}", e);
                prop_assert_eq!(e.path, "tasks.t.priority");
            }
        }
    }

    /// A numeric calibration (ns per loop) is accepted exactly when > 0.
    #[test]
    fn numeric_calibrations_must_be_positive(
        n in prop_oneof![-5i64..5, any::<i64>()].prop_map(|n| n as f64),
        frac in prop_oneof![Just(0.0), -1.0f64..1.0],
    ) {
        let cal = n + frac;
        let doc = format!("{{\"global\": {{\"calibration\": {cal:?}}}, \"tasks\": {{\"t\": {{\"loop\": 1, \"run\": 1}}}}}}");
        match rtapp::parse(&doc, 4) {
            Ok(_) => prop_assert!(cal > 0.0),
            Err(e) => {
                prop_assert!(cal <= 0.0, "{}", e);
                prop_assert_eq!(e.path, "global.calibration");
            }
        }
    }

    #[test]
    fn truncated_fixtures_never_panic(cut in 0usize..2000) {
        let text = fixture("all_events.json");
        let cut = cut.min(text.len());
        let _ = rtapp::parse(&text[..cut], 4);
    }
}

/// A lone UTF-16 surrogate escape is named as such, not only as serde_json's
/// "hex escape" complaint.
#[test]
fn a_lone_surrogate_escape_is_named() {
    let e = rtapp::parse(r#"{"tasks": {"a\ud800": {"run": 10}}}"#, 4).unwrap_err();
    assert_eq!(e.path, "(file)");
    assert!(e.msg.contains("surrogate pair"), "{}", e.msg);
    // A paired escape is a character like any other.
    assert!(rtapp::parse(r#"{"tasks": {"a\ud83d\ude00": {"run": 10}}}"#, 4).is_ok());
}

/// rt-app finds a suspend's mutex and condition by name and type, so they
/// are the ones a `lock` and a `signal` of the same name use.
#[test]
fn suspend_shares_names_with_lock_and_signal() {
    let r = rtapp::parse(
        r#"{"tasks": {"a": {"loop": 1, "lock": "x", "signal": "x", "unlock": "x"},
                      "b": {"loop": 1, "suspend": "x"},
                      "c": {"loop": 1, "resume": "x"}}}"#,
        4,
    )
    .unwrap();
    let count = |o: &SyncObject| r.spec.sync.iter().filter(|s| *s == o).count();
    assert_eq!(count(&SyncObject::Mutex), 1);
    assert_eq!(count(&SyncObject::Cond), 1);
}

#[test]
fn pi_enabled_gives_every_mutex_priority_inheritance() {
    let file = |pi: &str| {
        format!(
            r#"{{"global": {{{pi}}}, "tasks": {{"a": {{"lock": "m", "run": 10, "unlock": "m",
                "wait": {{"ref": "c", "mutex": "m2"}}}}}}}}"#
        )
    };
    let mutexes = |r: &rtapp::RtApp| -> Vec<SyncObject> {
        r.spec
            .sync
            .iter()
            .filter(|s| matches!(s, SyncObject::Mutex | SyncObject::PiMutex))
            .cloned()
            .collect()
    };
    let on = rtapp::parse(&file(r#""pi_enabled": true"#), 4).unwrap();
    assert_eq!(mutexes(&on), [SyncObject::PiMutex, SyncObject::PiMutex]);
    assert!(
        !on.notes.iter().any(|n| n.contains("pi_enabled")),
        "{:?}",
        on.notes
    );
    for off in [
        r#""pi_enabled": false"#,
        r#""pi_enabled": null"#,
        r#""duration": 1"#,
    ] {
        let r = rtapp::parse(&file(off), 4).unwrap();
        assert_eq!(mutexes(&r), [SyncObject::Mutex, SyncObject::Mutex], "{off}");
    }
    // rt-app's get_bool_value_from() exits on another type.
    let e = rtapp::parse(&file(r#""pi_enabled": 1"#), 4).unwrap_err();
    assert_eq!(e.path, "global.pi_enabled");
    assert!(e.msg.contains("boolean"), "{}", e.msg);
}
