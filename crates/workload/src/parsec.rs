//! PARSEC 3.0 (pthreads builds): blackscholes, streamcluster, bodytrack.
//!
//! What they model (the threading structure of each program, reference
//! workloads.md section 7):
//! - **blackscholes**: serial input parse, then `threads` workers each price a
//!   static contiguous slice of the options `NUM_RUNS` (100) times with no
//!   synchronisation, joined at the end: runtime = the slowest thread.
//! - **streamcluster**: per chunk of points the main thread generates the
//!   chunk, creates `threads` threads and joins them (thread churn per chunk);
//!   inside, every `pgain()` call is six short data-parallel slices separated
//!   by pthread barriers, thread 0 doing the serial reductions.
//! - **bodytrack**: a persistent pool of `threads` workers, the main thread and
//!   an asynchronous image-loader thread (a two-frame queue). Per frame the
//!   main thread issues commands (per camera GRADIENT, FILTERROW, FILTERCOLUMN;
//!   per annealing layer PARTICLEWEIGHTS, NEWPARTICLES); each command is a
//!   start barrier, workers taking work tickets from a shared counter (dynamic
//!   load balance), and an end barrier; the main thread resamples serially
//!   between layers.
//!
//! The metric is the program's elapsed time in seconds (`time`, as
//! `parsecmgmt` reports it with `time`), and the region of interest
//! (`roi_time`, PARSEC's hooks).
//!
//! What they leave out: every per-item cost is an ESTIMATE (named constants,
//! ns of work on a capacity-1024 CPU); the only memory traffic modelled is
//! streamcluster's pass over its points' coordinates (a `Sweep` per distance
//! pass: from cache when the chunk fits the last-level cache, else from
//! memory); file I/O is a sleep; input sets use PARSEC's sizes but not its
//! data.

use crate::program::{Step, SyncId, SyncObject, ThreadTemplate, WorkloadSpec};
use crate::spec::{BuiltinSpec, SpecError};
use schedlab_topo::CpuMask;

/// PARSEC input sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    SimSmall,
    SimMedium,
    SimLarge,
    Native,
}

impl Input {
    fn parse(s: &BuiltinSpec) -> Result<Input, SpecError> {
        match s.params.get("input").map(String::as_str) {
            None | Some("simlarge") => Ok(Input::SimLarge),
            Some("simsmall") => Ok(Input::SimSmall),
            Some("simmedium") => Ok(Input::SimMedium),
            Some("native") => Ok(Input::Native),
            Some(v) => Err(SpecError::BadValue {
                workload: s.name.clone(),
                key: "input".into(),
                reason: format!("'{v}' is not simsmall, simmedium, simlarge or native"),
            }),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Input::SimSmall => "simsmall",
            Input::SimMedium => "simmedium",
            Input::SimLarge => "simlarge",
            Input::Native => "native",
        }
    }
}

/// Which PARSEC program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bench {
    Blackscholes,
    Streamcluster,
    Bodytrack,
}

impl Bench {
    pub fn name(self) -> &'static str {
        match self {
            Bench::Blackscholes => "blackscholes",
            Bench::Streamcluster => "streamcluster",
            Bench::Bodytrack => "bodytrack",
        }
    }
}

/// Parameters of `blackscholes|streamcluster|bodytrack:threads=N,input=simlarge`.
#[derive(Clone, Debug, PartialEq)]
pub struct ParsecParams {
    pub bench: Bench,
    pub threads: u32,
    pub input: Input,
}

/// Keys the PARSEC built-ins accept.
pub const KEYS: &[&str] = &["threads", "input"];

impl ParsecParams {
    pub fn from_spec(bench: Bench, s: &BuiltinSpec) -> Result<Self, SpecError> {
        s.check_keys(KEYS)?;
        Ok(ParsecParams {
            bench,
            threads: s.get_u64("threads", 1, 1, 1024)? as u32,
            input: Input::parse(s)?,
        })
    }
}

/// blackscholes: pricing one option once, ns (ESTIMATE: BlkSchlsEqEuroNoDiv
/// with two CNDF evaluations, ~50 ns on a big core).
pub const BS_OPTION_NS: u64 = 50;
/// blackscholes: parsing one option from the input file, ns (ESTIMATE: fscanf).
pub const BS_PARSE_NS: u64 = 300;
/// blackscholes NUM_RUNS.
pub const BS_RUNS: u32 = 100;

/// streamcluster: per point per dimension of a distance, ps (ESTIMATE).
pub const SC_DIM_PS: u64 = 500;
/// streamcluster: per-point bookkeeping of one pgain slice, ns (ESTIMATE).
pub const SC_POINT_NS: u64 = 20;
/// streamcluster: bytes of one point coordinate (`float`).
pub const SC_COORD_BYTES: u64 = 4;
/// streamcluster: pgain() calls per chunk, per input. Not an estimate: counted
/// by running PARSEC 3.0's streamcluster.cpp (pthreads build) on each input's
/// arguments (its runconf: kmin 10, kmax 20, dim, points, chunk, 1000 centers;
/// points from `srand48(1)`/`lrand48()`, the same stream on any libc) with a
/// counter in pgain(). Each pFL() pass makes (long)(ITER·kmax·ln kmax) = 179
/// calls; pkmedian()'s pFL() calls made 7, 8 and 10 passes in all on
/// simsmall, simmedium and simlarge (1253, 1432, 1790 calls; the same with 1
/// and 4 threads). The passes end on floating-point tests, so a build that
/// rounds differently (an ARM compiler fusing multiply-adds) may make a
/// pass more or fewer; the count is the program's, not the board's. Native's
/// five chunks needed 1611, 1253, 1611, 1790 and 1611; the model gives every
/// chunk their mean. (Native's final search over its 66 centres, 895 calls on
/// 66 points, is left out; the other inputs end with fewer centres than kmax,
/// where that search returns at once.)
pub fn sc_pgain_calls(input: Input) -> u32 {
    match input {
        Input::SimSmall => 1253,
        Input::SimMedium => 1432,
        Input::SimLarge => 1790,
        Input::Native => 1575,
    }
}
/// streamcluster: generating one point coordinate, ns (ESTIMATE).
pub const SC_GEN_NS: u64 = 2;
/// streamcluster: spin budget of a barrier waiter before it blocks, work-ns.
/// The pthreads build includes PARSEC's parsec_barrier.hpp, which defines
/// ENABLE_SPIN_BARRIER and replaces pthread_barrier_wait(): a waiter polls the
/// release flag for up to SPIN_COUNTER_MAX = 350 * 100 loop iterations, which
/// the source sizes as about 0.1 ms, then sleeps on a condition variable. The
/// iteration count is fixed, so on a slower core the spin lasts longer.
/// (bodytrack uses the libc pthread_barrier, which blocks at once.)
pub const SC_BARRIER_SPIN_NS: u64 = 100_000;

/// CPU cost of the FUTEX_CMP_REQUEUE system call that glibc's
/// pthread_cond_broadcast() makes when the condition has waiters, ns on a
/// capacity-1024 CPU (ESTIMATE: the per-call cost the other workloads give a
/// pipe write that wakes its reader, `hackbench::SYSCALL_PIPE_NS`; the call
/// takes a futex hash-bucket lock, wakes one waiter and moves the others to
/// the mutex's futex). parsec_barrier_wait() broadcasts while it holds the
/// barrier's mutex, so this is time inside its critical section.
pub const FUTEX_REQUEUE_NS: u64 = crate::hackbench::SYSCALL_PIPE_NS;

/// Sync objects of one PARSEC spin barrier (`parsec_barrier_t`).
#[derive(Clone, Copy, Debug)]
pub struct ParsecBarrier {
    /// The barrier's pthread mutex.
    pub mutex: SyncId,
    /// Its condition variable.
    pub cond: SyncId,
    /// A counter: `n`, the threads inside the barrier.
    pub count: SyncId,
    /// A counter used as the phase flag: 0 = arrival phase
    /// (`is_arrival_phase` true), 1 = departure phase.
    pub departing: SyncId,
    /// Threads that meet at it (`max`).
    pub parties: u32,
    /// CPU work of the broadcast's futex call (`FUTEX_REQUEUE_NS`).
    pub syscall_ns: u64,
}

impl ParsecBarrier {
    /// The sync objects it needs, in the order of its ids starting at `first`.
    pub fn objects() -> [SyncObject; 4] {
        [
            SyncObject::Mutex,
            SyncObject::Cond,
            SyncObject::Counter,
            SyncObject::Counter,
        ]
    }

    /// The barrier whose objects start at sync id `first`.
    pub fn at(first: SyncId, parties: u32) -> ParsecBarrier {
        ParsecBarrier {
            mutex: first,
            cond: first + 1,
            count: first + 2,
            departing: first + 3,
            parties,
            syscall_ns: FUTEX_REQUEUE_NS,
        }
    }

    /// The same barrier with another cost for the broadcast's futex call.
    pub fn with_syscall_ns(self, syscall_ns: u64) -> ParsecBarrier {
        ParsecBarrier { syscall_ns, ..self }
    }

    /// Appends parsec_barrier_wait() with ENABLE_SPIN_BARRIER (PARSEC 3.0
    /// `pkgs/libs/hooks` parsec_barrier.cpp, which streamcluster's pthreads
    /// build substitutes for pthread_barrier_wait()). A two-phase
    /// centralised barrier under one mutex:
    /// 1. lock; if the previous use is still departing, unlock, poll the
    ///    flag for up to `spin_ns`, take the lock in a trylock loop, then
    ///    cond-wait until the arrival phase starts;
    /// 2. `++n`: the last thread starts the departure phase and broadcasts;
    ///    the others unlock, poll for up to `spin_ns`, trylock-spin, then
    ///    cond-wait until the departure phase starts;
    /// 3. `--n` under the lock: the last to leave starts the next arrival
    ///    phase and broadcasts; unlock.
    ///
    /// The broadcasts are glibc's of the time (requeue onto the mutex), so
    /// sleepers leave one at a time, each woken by the previous unlock. A
    /// broadcast with sleepers costs the broadcaster a futex call
    /// ([`FUTEX_REQUEUE_NS`]) before its unlock, so the mutex is held through
    /// a preemption point.
    pub fn wait(&self, s: &mut Vec<Step>, spin_ns: u64) {
        let at = |s: &Vec<Step>| s.len() as u32;
        let (m, c, n, f) = (self.mutex, self.cond, self.count, self.departing);
        // The step indices below are fixed by this layout.
        let base = at(s);
        let arrive = base + 10;
        let last = base + 17;
        let depart = base + 19;
        let last_out = base + 22;
        let end = base + 25;
        // 0-2: lock; arrival phase? go to `arrive`.
        s.push(Step::Lock { mutex: m });
        s.push(Step::TestCounter {
            counter: f,
            below: 1,
            else_to: base + 3,
        });
        s.push(Step::Jump { to: arrive });
        // Unlock, poll the flag while it holds `v`, re-take the lock in a
        // trylock loop.
        let poll_and_relock = |s: &mut Vec<Step>, v: u32| {
            s.push(Step::Unlock { mutex: m });
            s.push(Step::Poll {
                counter: f,
                value: v,
                spin_ns,
            });
            s.push(Step::SpinLock { mutex: m });
        };
        // 3-9: wait for the previous departure to finish.
        poll_and_relock(s, 1);
        s.push(Step::TestCounter {
            counter: f,
            below: 1,
            else_to: base + 8,
        });
        s.push(Step::Jump { to: arrive });
        s.push(Step::Wait {
            cond: c,
            mutex: Some(m),
        });
        s.push(Step::Jump { to: base + 6 });
        debug_assert_eq!(at(s), arrive);
        // 10-16: arrive; all but the last wait for the departure phase.
        s.push(Step::Count {
            counter: n,
            delta: 1,
            reached: self.parties,
            jump_to: last,
        });
        poll_and_relock(s, 0);
        s.push(Step::TestCounter {
            counter: f,
            below: 1,
            else_to: depart,
        });
        s.push(Step::Wait {
            cond: c,
            mutex: Some(m),
        });
        s.push(Step::Jump { to: base + 14 });
        debug_assert_eq!(at(s), last);
        // 17-18: the last arrival starts the departure phase.
        s.push(Step::SetCounter {
            counter: f,
            value: 1,
        });
        s.push(Step::BroadcastRequeue {
            cond: c,
            mutex: m,
            syscall_ns: self.syscall_ns,
        });
        debug_assert_eq!(at(s), depart);
        // 19-21: leave.
        s.push(Step::Count {
            counter: n,
            delta: -1,
            reached: 0,
            jump_to: last_out,
        });
        s.push(Step::Unlock { mutex: m });
        s.push(Step::Jump { to: end });
        debug_assert_eq!(at(s), last_out);
        // 22-24: the last to leave starts the next arrival phase.
        s.push(Step::SetCounter {
            counter: f,
            value: 0,
        });
        s.push(Step::BroadcastRequeue {
            cond: c,
            mutex: m,
            syscall_ns: self.syscall_ns,
        });
        s.push(Step::Unlock { mutex: m });
        debug_assert_eq!(at(s), end);
    }
}

/// bodytrack: one image-filter ticket (a band of rows of one camera image), ns
/// (ESTIMATE: ~2 ms per 640×480 filter pass in 30 bands).
pub const BT_FILTER_TICKET_NS: u64 = 67_000;
/// bodytrack: image filter tickets per command.
pub const BT_FILTER_TICKETS: u32 = 30;
/// bodytrack: likelihood of one particle over all cameras, ns (ESTIMATE).
pub const BT_PARTICLE_NS: u64 = 8_000;
/// bodytrack: new-particle generation per particle, ns (ESTIMATE).
pub const BT_NEWPARTICLE_NS: u64 = 200;
/// bodytrack: particles per work ticket.
pub const BT_PARTICLES_PER_TICKET: u32 = 32;
/// bodytrack: serial resampling per particle per layer, ns (ESTIMATE).
pub const BT_RESAMPLE_NS: u64 = 100;
/// bodytrack: loading one frame (4 camera images): I/O sleep and decode, ns
/// (ESTIMATE).
pub const BT_LOAD_IO_NS: u64 = 1_000_000;
pub const BT_LOAD_DECODE_NS: u64 = 4_000_000;

/// Marks of the main thread (template 0).
pub const TAG_ROI_BEGIN: u32 = 0;
pub const TAG_ROI_END: u32 = 1;
pub const TAG_END: u32 = 2;

fn template(name: String, affinity: Option<CpuMask>, steps: Vec<Step>) -> ThreadTemplate {
    ThreadTemplate {
        idle_policy: false,
        name,
        nice: 0,
        affinity,
        steps,
    }
}

/// Builds the program.
pub fn build(p: &ParsecParams, affinity: Option<CpuMask>) -> WorkloadSpec {
    let mut spec = match p.bench {
        Bench::Blackscholes => blackscholes(p, affinity),
        Bench::Streamcluster => streamcluster(p, affinity),
        Bench::Bodytrack => bodytrack(p, affinity),
    };
    spec.name = format!(
        "{}:threads={},input={}",
        p.bench.name(),
        p.threads,
        p.input.name()
    );
    spec
}

/// Pushes `Loop` to repeat the steps from `start` `count` times in total.
fn repeat(s: &mut Vec<Step>, start: usize, count: u32, slot: u8) {
    if count > 1 {
        s.push(Step::Loop {
            start: start as u32,
            count,
            slot,
        });
    }
}

fn blackscholes(p: &ParsecParams, affinity: Option<CpuMask>) -> WorkloadSpec {
    let options: u64 = match p.input {
        Input::SimSmall => 4096,
        Input::SimMedium => 16384,
        Input::SimLarge => 65536,
        Input::Native => 10_000_000,
    };
    let n = p.threads as u64;
    const DONE: u32 = 0;
    let mut templates = vec![template("blackscholes".into(), affinity, Vec::new())];
    let mut main = vec![Step::Compute {
        work_ns: options * BS_PARSE_NS,
    }];
    main.push(Step::Mark { tag: TAG_ROI_BEGIN });
    for t in 0..n {
        let slice = options / n + u64::from(t < options % n);
        let mut s = vec![Step::Compute {
            work_ns: slice * BS_OPTION_NS,
        }];
        repeat(&mut s, 0, BS_RUNS, 0);
        s.extend([Step::SemPost { sem: DONE }, Step::Exit]);
        main.push(Step::Spawn {
            template: templates.len() as u32,
        });
        templates.push(template(format!("blackscholes-{t}"), None, s));
    }
    let w = main.len();
    main.push(Step::SemWait { sem: DONE });
    repeat(&mut main, w, p.threads, 0);
    main.push(Step::Mark { tag: TAG_ROI_END });
    // Writing the prices out.
    main.push(Step::Compute {
        work_ns: options * BS_OPTION_NS,
    });
    main.extend([Step::Mark { tag: TAG_END }, Step::Exit]);
    templates[0].steps = main;
    WorkloadSpec {
        name: String::new(),
        templates,
        initial: vec![0],
        sync: vec![SyncObject::Semaphore { initial: 0 }],
        mem_node: None,
        max_time_ns: 36_000_000_000_000,
    }
}

fn streamcluster(p: &ParsecParams, affinity: Option<CpuMask>) -> WorkloadSpec {
    // (dim, points, chunk)
    let (d, n, chunk): (u64, u64, u64) = match p.input {
        Input::SimSmall => (32, 4096, 4096),
        Input::SimMedium => (64, 8192, 8192),
        Input::SimLarge => (128, 16384, 16384),
        Input::Native => (128, 1_000_000, 200_000),
    };
    let chunks = n.div_ceil(chunk) as u32;
    let nt = p.threads as u64;
    const DONE: u32 = 0;
    let bar = ParsecBarrier::at(1, p.threads);
    let per_point_gain = d * SC_DIM_PS / 1000 + SC_POINT_NS;
    let mut templates = vec![template("streamcluster".into(), affinity, Vec::new())];
    let mut main = vec![Step::Mark { tag: TAG_ROI_BEGIN }];
    let chunk_start = main.len();
    main.push(Step::Compute {
        work_ns: chunk * d * SC_GEN_NS,
    });
    for t in 0..nt {
        let pts = chunk / nt + u64::from(t < chunk % nt);
        // dist() reads every coordinate of the thread's points once per pass.
        let sweep = Step::Sweep {
            bytes: pts * d * SC_COORD_BYTES,
            footprint_bytes: chunk * d * SC_COORD_BYTES,
        };
        let wait = |s: &mut Vec<Step>| bar.wait(s, SC_BARRIER_SPIN_NS);
        let serial = |s: &mut Vec<Step>| {
            if t == 0 {
                s.push(Step::Compute {
                    work_ns: 2_000 + 200 * nt,
                });
            }
        };
        let mut s = Vec::new();
        wait(&mut s);
        // hiz: distance of every point to the first one.
        s.push(Step::Compute {
            work_ns: pts * d * SC_DIM_PS / 1000,
        });
        s.push(sweep.clone());
        wait(&mut s);
        serial(&mut s);
        wait(&mut s);
        let g = s.len();
        // pgain(): six barrier-separated slices.
        s.push(Step::Compute {
            work_ns: pts * per_point_gain,
        });
        s.push(sweep);
        wait(&mut s);
        serial(&mut s);
        wait(&mut s);
        for _ in 0..3 {
            s.push(Step::Compute {
                work_ns: pts * 5 + 100,
            });
            wait(&mut s);
        }
        serial(&mut s);
        wait(&mut s);
        repeat(&mut s, g, sc_pgain_calls(p.input), 0);
        s.extend([Step::SemPost { sem: DONE }, Step::Exit]);
        main.push(Step::Spawn {
            template: templates.len() as u32,
        });
        templates.push(template(format!("streamcluster-{t}"), None, s));
    }
    let w = main.len();
    main.push(Step::SemWait { sem: DONE });
    repeat(&mut main, w, p.threads, 1);
    // contcenters / copycenters.
    main.push(Step::Compute {
        work_ns: 20 * d * 1000,
    });
    repeat(&mut main, chunk_start, chunks, 0);
    main.extend([
        Step::Mark { tag: TAG_ROI_END },
        Step::Mark { tag: TAG_END },
        Step::Exit,
    ]);
    templates[0].steps = main;
    WorkloadSpec {
        name: String::new(),
        templates,
        initial: vec![0],
        sync: std::iter::once(SyncObject::Semaphore { initial: 0 })
            .chain(ParsecBarrier::objects())
            .collect(),
        mem_node: None,
        max_time_ns: 36_000_000_000_000,
    }
}

fn bodytrack(p: &ParsecParams, affinity: Option<CpuMask>) -> WorkloadSpec {
    // (frames, particles); 4 cameras and 5 annealing layers throughout.
    let (frames, particles): (u32, u32) = match p.input {
        Input::SimSmall => (1, 1000),
        Input::SimMedium => (2, 2000),
        Input::SimLarge => (4, 4000),
        Input::Native => (261, 4000),
    };
    const CAMERAS: u32 = 4;
    const LAYERS: u32 = 5;
    const READY: u32 = 0;
    const FREE: u32 = 1;
    const TICKETS: u32 = 2;
    const START: u32 = 3;
    const END: u32 = 4;
    let pt = particles.div_ceil(BT_PARTICLES_PER_TICKET);
    // (tickets, ns per ticket) of each command of a frame, in order; `true`
    // marks the end of an annealing layer (serial resampling follows).
    let mut commands: Vec<(u32, u64, bool)> = Vec::new();
    for _ in 0..CAMERAS {
        for _ in 0..3 {
            commands.push((BT_FILTER_TICKETS, BT_FILTER_TICKET_NS, false));
        }
    }
    for _ in 0..LAYERS {
        commands.push((pt, BT_PARTICLE_NS * BT_PARTICLES_PER_TICKET as u64, false));
        commands.push((pt, BT_NEWPARTICLE_NS * BT_PARTICLES_PER_TICKET as u64, true));
    }
    // Main thread: start the pool and the loader, then per frame.
    let nw = p.threads;
    let mut main = vec![Step::Mark { tag: TAG_ROI_BEGIN }];
    for i in 0..nw + 1 {
        main.push(Step::Spawn { template: 1 + i });
    }
    let frame = main.len();
    main.push(Step::SemWait { sem: READY });
    main.push(Step::SemPost { sem: FREE });
    for &(_, _, layer_end) in &commands {
        main.push(Step::ResetCounter { counter: TICKETS });
        main.push(Step::Barrier {
            id: START,
            spin_ns: 0,
        });
        main.push(Step::Barrier {
            id: END,
            spin_ns: 0,
        });
        if layer_end {
            main.push(Step::Compute {
                work_ns: particles as u64 * BT_RESAMPLE_NS,
            });
        }
    }
    repeat(&mut main, frame, frames, 0);
    main.extend([
        Step::Mark { tag: TAG_ROI_END },
        Step::Mark { tag: TAG_END },
        Step::Exit,
    ]);
    // Workers: the same command sequence, taking tickets.
    let mut worker = Vec::new();
    for &(tickets, ns, _) in &commands {
        worker.push(Step::Barrier {
            id: START,
            spin_ns: 0,
        });
        let grab = worker.len() as u32;
        worker.push(Step::Grab {
            counter: TICKETS,
            limit: tickets,
            exit_to: grab + 3,
        });
        worker.push(Step::Compute { work_ns: ns });
        worker.push(Step::Loop {
            start: grab,
            count: u32::MAX,
            slot: 3,
        });
        worker.push(Step::Barrier {
            id: END,
            spin_ns: 0,
        });
    }
    repeat(&mut worker, 0, frames, 0);
    worker.push(Step::Exit);
    // Loader: read and decode a frame, queue it (two slots).
    let mut loader = vec![
        Step::SemWait { sem: FREE },
        Step::Sleep { ns: BT_LOAD_IO_NS },
        Step::Compute {
            work_ns: BT_LOAD_DECODE_NS,
        },
        Step::SemPost { sem: READY },
    ];
    repeat(&mut loader, 0, frames, 0);
    loader.push(Step::Exit);
    let mut templates = vec![
        template("bodytrack".into(), affinity, main),
        template("bodytrack-loader".into(), None, loader),
    ];
    for i in 0..nw {
        templates.push(template(format!("bodytrack-{i}"), None, worker.clone()));
    }
    WorkloadSpec {
        name: String::new(),
        templates,
        initial: vec![0],
        sync: vec![
            SyncObject::Semaphore { initial: 0 },
            SyncObject::Semaphore { initial: 2 },
            SyncObject::Counter,
            SyncObject::Barrier { parties: nw + 1 },
            SyncObject::Barrier { parties: nw + 1 },
        ],
        mem_node: None,
        max_time_ns: 36_000_000_000_000,
    }
}

/// (elapsed s, ROI s) from the main thread's marks `(tag, time)`.
pub fn times_s(marks: &[(u32, u64)]) -> Option<(f64, f64)> {
    let at = |tag| marks.iter().find(|m| m.0 == tag).map(|m| m.1);
    let end = at(TAG_END)?;
    let roi = at(TAG_ROI_END)?.checked_sub(at(TAG_ROI_BEGIN)?)?;
    Some((end as f64 * 1e-9, roi as f64 * 1e-9))
}

/// PARSEC's output: the hooks' ROI line and `time`'s real line.
pub fn report(p: &ParsecParams, t: Option<(f64, f64)>) -> String {
    let mut s = format!(
        "PARSEC Benchmark Suite Version 3.0 (simulated)\n[PARSEC] Running '{}' with input {} and {} threads\n[HOOKS] PARSEC Hooks Version 1.2\n",
        p.bench.name(),
        p.input.name(),
        p.threads
    );
    match t {
        Some((total, roi)) => {
            s.push_str("[HOOKS] Entering ROI\n[HOOKS] Leaving ROI\n");
            s.push_str(&format!("[HOOKS] Total time spent in ROI: {roi:.3}s\n"));
            s.push_str("[HOOKS] Terminating\n\n");
            let m = (total / 60.0).floor();
            s.push_str(&format!("real\t{}m{:.3}s\n", m as u64, total - m * 60.0));
        }
        None => s.push_str("(incomplete run: no time)\n"),
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::parse_spec;

    fn params(spec: &str, b: Bench) -> ParsecParams {
        ParsecParams::from_spec(b, &parse_spec(spec).unwrap()).unwrap()
    }

    #[test]
    fn blackscholes_splits_options_statically() {
        let p = params("blackscholes:threads=3,input=simsmall", Bench::Blackscholes);
        let spec = build(&p, None);
        let work: u64 = spec.templates[1..]
            .iter()
            .map(|t| match t.steps[0] {
                Step::Compute { work_ns } => work_ns,
                _ => 0,
            })
            .sum();
        assert_eq!(work, 4096 * BS_OPTION_NS);
        assert_eq!(spec.templates.len(), 4);
    }

    /// Every worker repeats pgain() as often as PARSEC's streamcluster did on
    /// the input (counted, see `sc_pgain_calls`).
    #[test]
    fn streamcluster_workers_make_the_counted_pgain_calls() {
        for (input, calls) in [
            ("simsmall", 1253),
            ("simmedium", 1432),
            ("simlarge", 1790),
            ("native", 1575),
        ] {
            let p = params(
                &format!("streamcluster:threads=3,input={input}"),
                Bench::Streamcluster,
            );
            let spec = build(&p, None);
            for w in &spec.templates[1..] {
                let loops: Vec<u32> = w
                    .steps
                    .iter()
                    .filter_map(|st| match st {
                        Step::Loop { count, .. } => Some(*count),
                        _ => None,
                    })
                    .collect();
                assert_eq!(loops, vec![calls], "{input} {}", w.name);
            }
        }
    }

    #[test]
    fn bodytrack_and_streamcluster_build() {
        let p = params("bodytrack:threads=4,input=simsmall", Bench::Bodytrack);
        let spec = build(&p, None);
        assert_eq!(spec.templates.len(), 2 + 4);
        assert!(spec.sync.contains(&SyncObject::Barrier { parties: 5 }));
        let p = params("streamcluster:threads=2", Bench::Streamcluster);
        let spec = build(&p, None);
        assert_eq!(spec.templates.len(), 3);
        assert!(ParsecParams::from_spec(
            Bench::Bodytrack,
            &parse_spec("bodytrack:input=huge").unwrap()
        )
        .is_err());
        let r = report(&p, Some((61.5, 60.25)));
        assert!(r.contains("Total time spent in ROI: 60.250s"), "{r}");
        assert!(r.contains("real\t1m1.500s"), "{r}");
    }
}
