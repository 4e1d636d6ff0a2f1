//! Built-in workloads as the CLI and experiments use them: spec parsing,
//! program building, and the benchmark's own metrics and output. rt-app JSON
//! files come in through [`Builtin::from_rtapp`].

use schedlab_engine::{MarkSink, Sim};
use schedlab_report::MetricSpec;
use schedlab_topo::{CpuMask, Machine};
use schedlab_workload::chacha20::{self, Chacha20Params};
use schedlab_workload::daytrader::{self, DaytraderParams};
use schedlab_workload::hackbench::{self, HackbenchParams};
use schedlab_workload::kernbench::{self, KernbenchParams};
use schedlab_workload::marks::MarkFold;
use schedlab_workload::mobile::{self, MobileParams};
use schedlab_workload::parsec::{self, Bench, ParsecParams};
use schedlab_workload::pbzip2::{self, Pbzip2Params};
use schedlab_workload::phoronix::{self, PhoronixParams};
use schedlab_workload::pipe::{self, PipeParams};
use schedlab_workload::pixz::{self, PixzParams};
use schedlab_workload::rtapp::{self, RtApp, RtAppError};
use schedlab_workload::schbench::{self, SchbenchParams};
use schedlab_workload::stream::{self, StreamParams};
use schedlab_workload::ycsb::{self, YcsbParams};
use schedlab_workload::{parse_spec, SpecError, Step, WorkloadSpec};

/// A parsed built-in workload.
#[derive(Clone, Debug, PartialEq)]
pub enum Builtin {
    Stream(StreamParams),
    Hackbench(HackbenchParams),
    Pipe(PipeParams),
    Schbench(SchbenchParams),
    /// blackscholes, streamcluster or bodytrack.
    Parsec(ParsecParams),
    Pbzip2(Pbzip2Params),
    Pixz(PixzParams),
    Mobile(MobileParams),
    Kernbench(KernbenchParams),
    /// ChaCha20-xiangshan: a multi-threaded Verilator RTL simulation.
    Chacha20(Chacha20Params),
    Daytrader(DaytraderParams),
    Ycsb(YcsbParams),
    /// S3's Phoronix-style tjbench, phpbench, flac, pybench and tflite.
    Phoronix(PhoronixParams),
    /// An imported rt-app file.
    RtApp(Box<RtApp>),
}

/// Built-ins with their keys and what they model.
pub const BUILTINS: &[(&str, &str, &str)] = &[
    (
        "stream",
        "threads=N (1), size_mib=M (512, all three arrays), iterations=K (10)",
        "STREAM 5.10 under OpenMP: master forks the team; copy/scale/add/triad as parallel loops over static chunks with barriers; Best Rate MB/s",
    ),
    (
        "hackbench",
        "groups=G (10), fds=F (20), loops=L (100), datasize=B (100), ipc=pipe|socket (socket), mode=threads|process (process)",
        "hackbench / perf bench sched messaging: per group F receivers and F senders; every sender writes L messages of B bytes to each receiver of its group over pipes (16 page slots, merged small writes) or unix stream sockets (208 KiB send buffer counting skb truesize), blocking writers, WF_SYNC wakeups; G·F²·L messages; Time: seconds from GO to the last worker reaped",
    ),
    (
        "pipe",
        "instances=N (1), loops=L (20000), both_write=0|1 (0: the second process reads first)",
        "perf bench sched pipe: N concurrent pairs ping-pong an int over two pipes L times; usecs/op (mean over instances)",
    ),
    (
        "schbench",
        "message_threads=M (1), workers=T (ceil(ncpus/M)), runtime_s=R (30), warmup_s=W (0), sleep_us=S (100), operations=N (5), footprint_kb=K (256), lock=0|1 (1), legacy=0|1 (0: pre-2023 schbench, defaults M=2 T=16 S=30000), cputime_us=C (30000, legacy think time), message_cputime_us=MC (0, legacy messenger think time after each post, -C)",
        "schbench (2023): messengers futex-wake their workers; a worker records wakeup latency, sleeps S µs, then N matrix multiplies under a per-CPU lock (request latency); percentiles in schbench's format and RPS",
    ),
    (
        "blackscholes",
        "threads=N (1), input=simsmall|simmedium|simlarge|native (simlarge)",
        "PARSEC blackscholes: serial parse, N threads price static slices 100 times without synchronisation, join; elapsed and ROI seconds",
    ),
    (
        "streamcluster",
        "threads=N (1), input=simsmall|simmedium|simlarge|native (simlarge)",
        "PARSEC streamcluster: per chunk the main thread creates and joins N threads; pgain() = six barrier-separated parallel slices with serial reductions on thread 0; elapsed and ROI seconds",
    ),
    (
        "bodytrack",
        "threads=N (1), input=simsmall|simmedium|simlarge|native (simlarge)",
        "PARSEC bodytrack: persistent pool of N workers + main + image loader; per frame 22 commands, each a barrier pair around dynamic work tickets; serial resampling; elapsed and ROI seconds",
    ),
    (
        "pbzip2",
        "threads=N (1), size_mib=M (256), block_kb=B (900)",
        "pbzip2 -pN: producer reads blocks into a bounded queue, N consumers compress, a writer writes; tput MB/s and Wall Clock",
    ),
    (
        "pixz",
        "threads=N (1), size_mib=M (768)",
        "pixz -pN (xz -6): a read thread cuts 16 MiB blocks, N encoders compress 64 KiB pieces (compute + match-finder memory traffic through the bandwidth model), the main thread writes; tput MB/s",
    ),
    (
        "mobile",
        "cpus=N (8, threads of the multi-threaded CPU test), scale=S (1, multiplies every sub-test)",
        "mixed mobile benchmark (AnTuTu-5-like): a driver runs CPU single/multi, runtime+GC, multitask, RAM operation/speed and I/O sub-tests in sequence while compositor, system-server and sensor services wake periodically; score = sum of 1000 x ideal/elapsed per sub-test",
    ),
    (
        "kernbench",
        "threads=N (1), files=F (2500), link_ms=L (8000)",
        "kernbench make -jN: jobserver keeps N compile processes running over F files of varying cost, then a serial link; elsp, user, syst seconds",
    ),
    (
        "chacha20",
        "threads=T (8), cycles=C (171945), eval_us=E (95, whole design per cycle), shared_kib=S (16), ws_kib=W (1024), spin_us=P (2000)",
        "ChaCha20-xiangshan: a T-thread Verilator simulation of the XiangShan RISC-V core; per guest cycle each thread reads the signals the other partitions wrote (process-shared data, cache-line transfers by distance), writes its own, evaluates E/T µs and spins at a barrier; Host time spent (ms)",
    ),
    (
        "daytrader",
        "jvms=J (1), users=U (60, in total, spread over the JVMs), think_ms=T (0, JMeter MAXTHINKTIME), db_calls=D (3), gc_threads=G (number of CPUs), gc_period_ms=P (200), runtime_ms=R (2000), warmup_ms=W (500)",
        "DayTrader on J JVMs driven by U JMeter users: per user a keep-alive connection served by a web-container thread that makes D JDBC round trips to a DB2 agent; per JVM G GC helpers (parallel scavenge every P ms) and a JIT thread; tput requests/s as JMeter's summary",
    ),
    (
        "ycsb",
        "clients=N (1), operations=T (100000, in total), read_pct=P (50: workload A)",
        "YCSB client threads issue reads/updates synchronously to a MongoDB-like server (thread per connection, journal lock and a 100 ms journal flusher), then cleanup(); ops/s and READ/UPDATE/CLEANUP average latency (us) as YCSB prints them",
    ),
    (
        "tjbench",
        "runs=R (3)",
        "libjpeg-turbo tjbench (single-threaded): the harness shell forks the benchmark per run; compress/decompress chunks over a ~12 MiB image; a harness monitor wakes every 100 ms; runtime s per run",
    ),
    (
        "phpbench",
        "runs=R (3)",
        "PhpBench (single-threaded): interpreter start-up, then micro-benchmark chunks over ~2 MiB; forked per run by the harness shell; runtime s per run",
    ),
    (
        "flac",
        "runs=R (3)",
        "flac encoding a WAV (single-threaded): per block a short blocking read, ~4 ms of encoding, a short write; runtime s per run",
    ),
    (
        "pybench",
        "runs=R (3)",
        "pybench (single-threaded): Python start-up, rounds of small tests with a short pause per round (output to the harness); runtime s per run",
    ),
    (
        "tflite",
        "threads=N (1), inferences=M (40), layers=L (30), layer_us=U (2000)",
        "TensorFlow Lite inference: main thread + pool of N-1, every layer split into N equal slices over the model's working set, barrier (spin then sleep) between layers, M inferences; runtime s",
    ),
    (
        "rt-app",
        "--workload PATH.json (an rt-app file; support matrix in docs/workloads.md)",
        "rt-app JSON: tasks with instances, loops, phases and events (run, runtime, sleep, timer, lock/unlock, wait/signal/broad/sync, barrier, suspend/resume, sem, mem/memrun/iorun, yield, fork); timer wakeup latency and per-thread CPU/wait times",
    ),
];

/// Names accepted as `NAME:key=value` specs (rt-app takes a file instead).
fn spec_names() -> String {
    BUILTINS
        .iter()
        .map(|b| b.0)
        .filter(|n| *n != "rt-app")
        .collect::<Vec<_>>()
        .join(", ")
}

/// A bad rt-app file or built-in spec.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error("{file}: {err}")]
    RtApp { file: String, err: RtAppError },
    #[error("{file}: {err}")]
    Io { file: String, err: String },
}

impl Builtin {
    /// Parses `NAME:key=value,...`.
    pub fn parse(spec: &str) -> Result<Builtin, SpecError> {
        let s = parse_spec(spec)?;
        match s.name.as_str() {
            "stream" => Ok(Builtin::Stream(StreamParams::from_spec(&s)?)),
            "hackbench" => Ok(Builtin::Hackbench(HackbenchParams::from_spec(&s)?)),
            "pipe" => Ok(Builtin::Pipe(PipeParams::from_spec(&s)?)),
            "schbench" => Ok(Builtin::Schbench(SchbenchParams::from_spec(&s)?)),
            "blackscholes" => Ok(Builtin::Parsec(ParsecParams::from_spec(
                Bench::Blackscholes,
                &s,
            )?)),
            "streamcluster" => Ok(Builtin::Parsec(ParsecParams::from_spec(
                Bench::Streamcluster,
                &s,
            )?)),
            "bodytrack" => Ok(Builtin::Parsec(ParsecParams::from_spec(
                Bench::Bodytrack,
                &s,
            )?)),
            "pbzip2" => Ok(Builtin::Pbzip2(Pbzip2Params::from_spec(&s)?)),
            "pixz" => Ok(Builtin::Pixz(PixzParams::from_spec(&s)?)),
            "mobile" => Ok(Builtin::Mobile(MobileParams::from_spec(&s)?)),
            "kernbench" => Ok(Builtin::Kernbench(KernbenchParams::from_spec(&s)?)),
            "chacha20" => Ok(Builtin::Chacha20(Chacha20Params::from_spec(&s)?)),
            "daytrader" => Ok(Builtin::Daytrader(DaytraderParams::from_spec(&s)?)),
            "ycsb" => Ok(Builtin::Ycsb(YcsbParams::from_spec(&s)?)),
            "tjbench" | "phpbench" | "flac" | "pybench" | "tflite" => {
                Ok(Builtin::Phoronix(PhoronixParams::from_spec(&s)?))
            }
            "rt-app" | "rtapp" => Err(SpecError::BadValue {
                workload: s.name.clone(),
                key: "(file)".into(),
                reason: "pass the path of an rt-app JSON file as --workload".into(),
            }),
            other => Err(SpecError::UnknownWorkload(other.to_string(), spec_names())),
        }
    }

    /// The name the workload's file gives synchronisation object `id` (rt-app
    /// files name theirs; the built-ins' objects have none).
    pub fn object_name(&self, id: u32) -> Option<&str> {
        match self {
            Builtin::RtApp(r) => r.objects.get(id as usize).map(String::as_str),
            _ => None,
        }
    }

    /// Imports rt-app JSON text for a machine of `nr_cpus` CPUs of unknown
    /// speeds (`run` is work on a capacity-1024 CPU).
    pub fn from_rtapp(text: &str, nr_cpus: usize) -> Result<Builtin, RtAppError> {
        Ok(Builtin::RtApp(Box::new(rtapp::parse(text, nr_cpus)?)))
    }

    /// Imports rt-app JSON text for machine `m`: `run` is µs of the
    /// calibration CPU's time (`"calibration": "CPUn"`, CPU0 by default),
    /// scaled by that CPU's capacity.
    pub fn from_rtapp_for(text: &str, m: &Machine) -> Result<Builtin, RtAppError> {
        let caps: Vec<u64> = m.cpus.iter().map(|c| u64::from(c.capacity)).collect();
        Ok(Builtin::RtApp(Box::new(rtapp::parse_for(text, &caps)?)))
    }

    /// Whether `--workload w` names an rt-app file rather than a built-in
    /// spec: a `.json` name (any case), or a path, which spec strings never
    /// are, to something that exists and is no directory (a pipe included:
    /// `--workload <(jq ... file.json)` gives /dev/fd/N).
    pub fn names_file(w: &str) -> bool {
        let path = std::path::Path::new(w);
        w.to_ascii_lowercase().ends_with(".json")
            || (w.contains('/') && path.exists() && !path.is_dir())
    }

    /// A built-in spec, or an rt-app file when `w` names a `.json` file, for
    /// machine `m`.
    pub fn resolve(w: &str, m: &Machine) -> Result<Builtin, WorkloadError> {
        let nr_cpus = m.nr_cpus();
        let path = std::path::Path::new(w);
        if !Self::names_file(w) {
            let mut b = Builtin::parse(w).map_err(|e| {
                // A file name that is not a spec: say what is wrong with
                // it as a file.
                if path.is_file() {
                    WorkloadError::Io {
                        file: w.to_string(),
                        err: format!(
                            "not a workload spec, and an rt-app file needs a .json name (or a path with a /, e.g. ./{w})"
                        ),
                    }
                } else if path.exists() {
                    WorkloadError::Io {
                        file: w.to_string(),
                        err: "not a regular file (a workload is a built-in spec such as stream:threads=4, or an rt-app .json file)".to_string(),
                    }
                } else if w.contains('/') {
                    WorkloadError::Io {
                        file: w.to_string(),
                        err: "no such file (a workload is a built-in spec such as stream:threads=4, or an rt-app .json file)".to_string(),
                    }
                } else {
                    WorkloadError::Spec(e)
                }
            })?;
            b.fill_machine_defaults(nr_cpus);
            return Ok(b);
        }
        let text = std::fs::read_to_string(w).map_err(|e| WorkloadError::Io {
            file: w.to_string(),
            err: e.to_string(),
        })?;
        Builtin::from_rtapp_for(&text, m).map_err(|err| WorkloadError::RtApp {
            file: w.to_string(),
            err,
        })
    }

    /// Fills defaults that depend on the machine (schbench's worker count).
    pub fn fill_machine_defaults(&mut self, nr_cpus: usize) {
        if let Builtin::Schbench(p) = self {
            p.resolve(nr_cpus);
        }
        if let Builtin::Daytrader(p) = self {
            p.resolve(nr_cpus);
        }
    }

    /// The workload's name.
    pub fn name(&self) -> &'static str {
        match self {
            Builtin::Stream(_) => "stream",
            Builtin::Hackbench(_) => "hackbench",
            Builtin::Pipe(_) => "pipe",
            Builtin::Schbench(_) => "schbench",
            Builtin::Parsec(p) => p.bench.name(),
            Builtin::Pbzip2(_) => "pbzip2",
            Builtin::Pixz(_) => "pixz",
            Builtin::Mobile(_) => "mobile",
            Builtin::Kernbench(_) => "kernbench",
            Builtin::Chacha20(_) => "chacha20",
            Builtin::Daytrader(_) => "daytrader",
            Builtin::Ycsb(_) => "ycsb",
            Builtin::Phoronix(p) => p.name(),
            Builtin::RtApp(_) => "rt-app",
        }
    }

    /// Checks that every `cpus` list of an rt-app file (a task's or a
    /// phase's) keeps some of its CPUs under the run's `affinity`
    /// (`--cpus`), as a cpuset would refuse sched_setaffinity() to CPUs
    /// outside it (EINVAL, and rt-app exits); the error names the list's
    /// JSON path and both lists (the caller adds the file's name).
    pub fn check_affinity(&self, affinity: Option<CpuMask>) -> Result<(), String> {
        let (Builtin::RtApp(r), Some(a)) = (self, affinity) else {
            return Ok(());
        };
        for (path, own) in &r.cpus {
            if own.and(&a).is_empty() {
                return Err(format!(
                    "{path}: CPUs {} are all outside --cpus {} (its threads could run nowhere)",
                    own.to_list_string(),
                    a.to_list_string(),
                ));
            }
        }
        Ok(())
    }

    /// Thread programs, restricted to `affinity` with memory on `mem_node`
    /// (a thread pinned to CPUs outside `affinity` gets `affinity`; callers
    /// refuse that first with [`Builtin::check_affinity`]).
    pub fn build(&self, affinity: Option<CpuMask>, mem_node: Option<u32>) -> WorkloadSpec {
        let mut spec = match self {
            Builtin::Stream(p) => return stream::build(p, affinity, mem_node),
            Builtin::Hackbench(p) => hackbench::build(p, affinity),
            Builtin::Pipe(p) => pipe::build(p, affinity),
            Builtin::Schbench(p) => schbench::build(p, affinity),
            Builtin::Parsec(p) => parsec::build(p, affinity),
            Builtin::Pbzip2(p) => pbzip2::build(p, affinity),
            Builtin::Pixz(p) => pixz::build(p, affinity),
            Builtin::Mobile(p) => mobile::build(p, affinity),
            Builtin::Kernbench(p) => kernbench::build(p, affinity),
            Builtin::Chacha20(p) => chacha20::build(p, affinity),
            Builtin::Daytrader(p) => daytrader::build(p, affinity),
            Builtin::Ycsb(p) => ycsb::build(p, affinity),
            Builtin::Phoronix(p) => phoronix::build(p, affinity),
            Builtin::RtApp(r) => {
                let mut spec = r.spec.clone();
                if let Some(a) = affinity {
                    for t in &mut spec.templates {
                        t.affinity = Some(match t.affinity {
                            Some(own) if !own.and(&a).is_empty() => own.and(&a),
                            _ => a,
                        });
                        for step in &mut t.steps {
                            if let Step::SetAffinity { cpus: Some(own) } = step {
                                **own = if own.and(&a).is_empty() {
                                    a
                                } else {
                                    own.and(&a)
                                };
                            }
                        }
                    }
                }
                spec
            }
        };
        spec.mem_node = mem_node;
        spec
    }

    /// Installs the workload's [`MarkSink`] in a run about to start, for
    /// the workloads whose metrics need only a running summary of their
    /// marks (schbench's and rt-app's latency histograms): their memory then
    /// stays bounded however long the run. The metrics are the same either
    /// way; without a sink they are computed from [`Sim::marks`].
    pub fn attach(&self, sim: &mut Sim) {
        let sink = match self {
            Builtin::Schbench(p) => Summary::Schbench(schbench::Sampler::new(p)),
            Builtin::RtApp(_) => Summary::RtApp(rtapp::TimerLatencies::default()),
            Builtin::Daytrader(p) => Summary::Daytrader(daytrader::Summariser::new(p)),
            Builtin::Ycsb(p) => Summary::Ycsb(ycsb::Recorder::new(p)),
            _ => return,
        };
        sim.mark_sink = Some(Box::new(sink));
    }

    /// The run's mark summary, if [`Builtin::attach`] installed one.
    fn summary(sim: &Sim) -> Option<&Summary> {
        sim.mark_sink.as_deref()?.as_any().downcast_ref::<Summary>()
    }

    /// schbench's samples, from its sink or its marks.
    fn schbench_samples(p: &SchbenchParams, sim: &Sim) -> schbench::Samples {
        match Self::summary(sim) {
            Some(Summary::Schbench(s)) => s.samples(),
            _ => schbench::samples(p, &sim.marks),
        }
    }

    /// daytrader's summariser figures, from its sink or its marks.
    fn daytrader_summary(p: &DaytraderParams, sim: &Sim) -> Option<daytrader::Summary> {
        match Self::summary(sim) {
            Some(Summary::Daytrader(s)) => s.summary(),
            _ => daytrader::summary(p, &sim.marks),
        }
    }

    /// YCSB's figures, from its sink or its marks.
    fn ycsb_result(p: &YcsbParams, sim: &Sim) -> Option<ycsb::YcsbResult> {
        match Self::summary(sim) {
            Some(Summary::Ycsb(r)) => r.result(),
            _ => ycsb::result(p, &sim.marks),
        }
    }

    /// The benchmark's metrics after a run, in its own units.
    pub fn metrics(&self, sim: &Sim) -> Vec<(String, f64)> {
        // Marks as (task, tag, time) and (template, tag, time).
        let by_task: &[(u32, u32, u64)] = &sim.marks;
        let by_tpl = || -> Vec<(u32, u32, u64)> {
            sim.marks
                .iter()
                .map(|m| (sim.tasks[m.0 as usize].template, m.1, m.2))
                .collect()
        };
        let of_tpl0 = || -> Vec<(u32, u64)> {
            sim.marks
                .iter()
                .filter(|m| sim.tasks[m.0 as usize].template == 0)
                .map(|m| (m.1, m.2))
                .collect()
        };
        match self {
            Builtin::Stream(p) => match stream::best_rates_mb_per_s(p, &of_tpl0()) {
                Some(r) => stream::KERNELS
                    .iter()
                    .zip(r)
                    .map(|(k, v)| (k.to_string(), v))
                    .collect(),
                None => Vec::new(),
            },
            Builtin::Hackbench(p) => match hackbench::time_s(&of_tpl0()) {
                Some(t) => vec![("time".into(), t), ("messages".into(), p.messages() as f64)],
                None => Vec::new(),
            },
            Builtin::Pipe(p) => {
                let by_tpl = by_tpl();
                match (
                    pipe::usecs_per_op(p, &by_tpl),
                    pipe::usecs_per_op_spread(p, &by_tpl),
                ) {
                    (Some((us, total)), Some((min, median, max))) => vec![
                        ("usec_per_op".into(), us),
                        ("usec_per_op_min".into(), min),
                        ("usec_per_op_median".into(), median),
                        ("usec_per_op_max".into(), max),
                        ("ops_per_sec".into(), 1e6 / us),
                        ("total_time".into(), total),
                    ],
                    _ => Vec::new(),
                }
            }
            Builtin::Schbench(p) => schbench::metrics(p, &Self::schbench_samples(p, sim)),
            Builtin::Parsec(_) => match parsec::times_s(&of_tpl0()) {
                Some((t, roi)) => vec![("time".into(), t), ("roi_time".into(), roi)],
                None => Vec::new(),
            },
            Builtin::Pbzip2(p) => match pbzip2::result(p, &by_tpl()) {
                Some((secs, tput)) => vec![("tput".into(), tput), ("time".into(), secs)],
                None => Vec::new(),
            },
            Builtin::Pixz(p) => match pixz::result(p, &by_tpl()) {
                Some((secs, tput)) => vec![("tput".into(), tput), ("time".into(), secs)],
                None => Vec::new(),
            },
            Builtin::Mobile(p) => mobile::scores(p, &of_tpl0()).unwrap_or_default(),
            Builtin::Kernbench(_) => {
                let tasks: Vec<(u32, u64)> = sim
                    .tasks
                    .iter()
                    .filter(|t| !t.kthread)
                    .map(|t| (t.template, t.stats.cpu_time_ns))
                    .collect();
                match kernbench::times(&of_tpl0(), &tasks) {
                    // `runtime` repeats elsp under S3's metric name (kbuild).
                    Some((e, u, sy)) => vec![
                        ("elsp".into(), e),
                        ("user".into(), u),
                        ("syst".into(), sy),
                        ("runtime".into(), e),
                    ],
                    None => Vec::new(),
                }
            }
            Builtin::Chacha20(_) => match chacha20::host_time_ms(&of_tpl0()) {
                Some(ms) => vec![("host_time".into(), ms)],
                None => Vec::new(),
            },
            Builtin::Daytrader(p) => match Self::daytrader_summary(p, sim) {
                Some(s) => vec![
                    ("tput".into(), s.tput),
                    ("requests".into(), s.requests as f64),
                    ("avg_ms".into(), s.avg_ms),
                    ("min_ms".into(), s.min_ms),
                    ("max_ms".into(), s.max_ms),
                    ("secs".into(), s.secs),
                ],
                None => Vec::new(),
            },
            Builtin::Ycsb(p) => match Self::ycsb_result(p, sim) {
                Some(r) => {
                    let lat = |k: &str| r.ops.iter().find(|o| o.0 == k).map_or(0.0, |o| o.2);
                    vec![
                        ("ops".into(), r.ops_per_s),
                        ("read_lat".into(), lat("READ")),
                        ("clean_lat".into(), lat("CLEANUP")),
                        ("update_lat".into(), lat("UPDATE")),
                        ("runtime_ms".into(), r.runtime_ms),
                    ]
                }
                None => Vec::new(),
            },
            Builtin::Phoronix(p) => match phoronix::runtime_s(p, &of_tpl0()) {
                Some(t) => vec![("runtime".into(), t)],
                None => Vec::new(),
            },
            Builtin::RtApp(_) => {
                let mut out = Vec::new();
                let user: Vec<_> = sim.tasks.iter().filter(|t| !t.kthread).collect();
                out.push(("threads".into(), user.len() as f64));
                let cpu: u64 = user.iter().map(|t| t.stats.cpu_time_ns).sum();
                let wait: u64 = user.iter().map(|t| t.stats.wait_time_ns).sum();
                out.push(("cpu_time_s".into(), cpu as f64 * 1e-9));
                out.push(("runqueue_wait_s".into(), wait as f64 * 1e-9));
                let lat = match Self::summary(sim) {
                    Some(Summary::RtApp(l)) => l.latencies_us.clone(),
                    _ => rtapp::timer_latencies_us(by_task),
                };
                if !lat.is_empty() {
                    out.push(("timer_events".into(), lat.len() as f64));
                    for q in [50.0, 90.0, 99.0] {
                        let v = lat.percentile(q).unwrap_or(0);
                        out.push((format!("wu_lat_pct{q:.1}"), v as f64));
                    }
                    out.push(("wu_lat_max".into(), lat.max().unwrap_or(0) as f64));
                }
                out
            }
        }
    }

    /// The unit and direction of one of this workload's metrics, for tables
    /// built from whatever a run reports (`schedlab compare`); `None` for
    /// informational counts (hackbench's `messages`, rt-app's `threads`, ...)
    /// and names the workload does not report.
    pub fn metric_spec(&self, name: &str) -> Option<MetricSpec> {
        let spec = |unit: &str, higher: bool| Some(MetricSpec::new(name, unit, higher));
        let latency_us = name.starts_with("wakeup_latency_")
            || name.starts_with("request_latency_")
            || name.starts_with("wu_lat_")
            || (name.starts_with('p') && name[1..].starts_with(|c: char| c.is_ascii_digit()));
        match (self, name) {
            (Builtin::Stream(_), "copy" | "scale" | "add" | "triad") => spec("MB/s", true),
            (Builtin::Hackbench(_), "time") => spec("s", false),
            (Builtin::Pipe(_), n) if n.starts_with("usec_per_op") => spec("us", false),
            (Builtin::Pipe(_), "ops_per_sec") => spec("ops/s", true),
            (Builtin::Pipe(_), "total_time") => spec("s", false),
            (Builtin::Schbench(_), _) if latency_us => spec("us", false),
            (Builtin::Schbench(_), n) if n.starts_with("rps_") || n == "average_rps" => {
                spec("req/s", true)
            }
            (Builtin::Parsec(_), "time" | "roi_time") => spec("s", false),
            (Builtin::Pbzip2(_) | Builtin::Pixz(_), "tput") => spec("MB/s", true),
            (Builtin::Pbzip2(_) | Builtin::Pixz(_), "time") => spec("s", false),
            (Builtin::Mobile(_), n) if n.starts_with("score") => spec("points", true),
            (Builtin::Kernbench(_), "elsp" | "user" | "syst" | "runtime") => spec("s", false),
            (Builtin::Chacha20(_), "host_time") => spec("ms", false),
            (Builtin::Daytrader(_), "tput") => spec("req/s", true),
            (Builtin::Daytrader(_), "avg_ms" | "min_ms" | "max_ms") => spec("ms", false),
            (Builtin::Ycsb(_), "ops") => spec("ops/s", true),
            (Builtin::Ycsb(_), "read_lat" | "clean_lat" | "update_lat") => spec("us", false),
            (Builtin::Ycsb(_), "runtime_ms") => spec("ms", false),
            (Builtin::Phoronix(_), "runtime") => spec("s", false),
            (Builtin::RtApp(_), "runqueue_wait_s") => spec("s", false),
            (Builtin::RtApp(_), _) if latency_us => spec("us", false),
            _ => None,
        }
    }

    /// Re-collects schbench's samples for its report (the metrics hold only
    /// percentiles).
    pub fn report_sim(&self, sim: &Sim, metrics: &[(String, f64)]) -> String {
        match self {
            Builtin::Schbench(p) => schbench::report(p, &Self::schbench_samples(p, sim)),
            Builtin::Kernbench(p) => {
                let t = get3(metrics, "elsp", "user", "syst");
                kernbench::report(p, t, sim.counters.context_switches)
            }
            Builtin::Daytrader(p) => daytrader::report(p, Self::daytrader_summary(p, sim).as_ref()),
            Builtin::Ycsb(p) => ycsb::report(Self::ycsb_result(p, sim).as_ref()),
            Builtin::RtApp(r) => {
                let mut s = self.report(metrics);
                for t in sim.tasks.iter().filter(|t| !t.kthread) {
                    s.push_str(&format!(
                        "  {:<20} cpu {:>10.3} ms  wait {:>10.3} ms  wakeups {:>7}  migrations {:>5}\n",
                        t.name,
                        t.stats.cpu_time_ns as f64 / 1e6,
                        t.stats.wait_time_ns as f64 / 1e6,
                        t.stats.wakeups,
                        t.stats.migrations
                    ));
                }
                for n in &r.notes {
                    s.push_str(&format!("note: {n}\n"));
                }
                s
            }
            _ => self.report(metrics),
        }
    }

    /// The benchmark's own report lines.
    pub fn report(&self, metrics: &[(String, f64)]) -> String {
        let get = |k: &str| metrics.iter().find(|m| m.0 == k).map(|m| m.1);
        match self {
            Builtin::Stream(p) => {
                let mut s = format!(
                    "STREAM version $Revision: 5.10 $ (simulated)\nArray size = {} (elements), Offset = 0 (elements)\nNumber of Threads requested = {}\nFunction    Best Rate MB/s\n",
                    p.elements(),
                    p.threads
                );
                for (k, v) in metrics {
                    let mut name = k.clone();
                    if let Some(c) = name.get_mut(0..1) {
                        c.make_ascii_uppercase();
                    }
                    s.push_str(&format!("{:<12}{:>14.1}\n", format!("{name}:"), v));
                }
                if metrics.is_empty() {
                    s.push_str("(incomplete run: no rates)\n");
                }
                s
            }
            Builtin::Hackbench(p) => hackbench::report(p, get("time")),
            Builtin::Pipe(p) => pipe::report(p, get("usec_per_op").zip(get("total_time"))),
            Builtin::Parsec(p) => parsec::report(p, get("time").zip(get("roi_time"))),
            Builtin::Pbzip2(p) => pbzip2::report(p, get("time").zip(get("tput"))),
            Builtin::Pixz(p) => pixz::report(p, get("time").zip(get("tput"))),
            Builtin::Mobile(p) => mobile::report(p, metrics),
            Builtin::Kernbench(p) => kernbench::report(p, get3(metrics, "elsp", "user", "syst"), 0),
            Builtin::Chacha20(p) => chacha20::report(p, get("host_time")),
            Builtin::Daytrader(p) => {
                let s = (|| {
                    Some(daytrader::Summary {
                        requests: get("requests")? as u64,
                        secs: get("secs")?,
                        tput: get("tput")?,
                        avg_ms: get("avg_ms")?,
                        min_ms: get("min_ms")?,
                        max_ms: get("max_ms")?,
                    })
                })();
                daytrader::report(p, s.as_ref())
            }
            Builtin::Ycsb(_) => {
                let mut s = String::new();
                for (k, v) in metrics {
                    s.push_str(&format!("{k}: {v:.3}\n"));
                }
                s
            }
            Builtin::Phoronix(p) => phoronix::report(p, get("runtime")),
            Builtin::Schbench(_) => {
                let mut s = String::new();
                for (k, v) in metrics {
                    s.push_str(&format!("{k}: {v}\n"));
                }
                s
            }
            Builtin::RtApp(_) => {
                let mut s = String::from("rt-app (simulated)\n");
                for (k, v) in metrics {
                    // Counts as integers; the others with their unit (the
                    // latencies are whole µs, as rt-app logs them).
                    match k.as_str() {
                        "threads" | "timer_events" => s.push_str(&format!("{k}: {v}\n")),
                        _ if k.starts_with("wu_lat") => s.push_str(&format!("{k}: {v} us\n")),
                        _ => s.push_str(&format!("{k}: {v:.3} s\n")),
                    }
                }
                s
            }
        }
    }
}

/// What a [`Builtin::attach`]ed sink keeps of a run's marks.
enum Summary {
    Schbench(schbench::Sampler),
    RtApp(rtapp::TimerLatencies),
    Daytrader(daytrader::Summariser),
    Ycsb(ycsb::Recorder),
}

impl MarkSink for Summary {
    fn mark(&mut self, task: u32, _template: u32, tag: u32, at_ns: u64) {
        let fold: &mut dyn MarkFold = match self {
            Summary::Schbench(s) => s,
            Summary::RtApp(l) => l,
            Summary::Daytrader(d) => d,
            Summary::Ycsb(r) => r,
        };
        fold.mark(task, tag, at_ns);
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn get3(m: &[(String, f64)], a: &str, b: &str, c: &str) -> Option<(f64, f64, f64)> {
    let get = |k: &str| m.iter().find(|x| x.0 == k).map(|x| x.1);
    Some((get(a)?, get(b)?, get(c)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_engine::{SimConfig, StopReason};
    use schedlab_topo::{build_domains, preset, DomainConfig};

    /// One checked run on a preset or machine spec (`power10:online=0-63`).
    fn run(machine: &str, w: &Builtin, seed: u64) -> (Sim, StopReason) {
        run_with(machine, w, seed, true)
    }

    /// [`run`], with the workload's mark sink or keeping every mark.
    fn run_with(machine: &str, w: &Builtin, seed: u64, sink: bool) -> (Sim, StopReason) {
        let m = schedlab_topo::resolve_machine(machine).unwrap();
        let d = build_domains(&m, &DomainConfig::default()).unwrap();
        let mut sim = Sim::new(
            m,
            d,
            w.build(None, None),
            SimConfig {
                seed,
                checked: true,
                ..SimConfig::default()
            },
        );
        if sink {
            w.attach(&mut sim);
        }
        let stop = sim.run();
        (sim, stop)
    }

    #[test]
    fn hackbench_passes_every_message_with_sync_wakeups() {
        for (spec, seed) in [
            ("hackbench:groups=2,fds=4,loops=20,ipc=pipe,mode=threads", 1),
            ("hackbench:groups=1,fds=6,loops=10,datasize=4000", 2),
        ] {
            let w = Builtin::parse(spec).unwrap();
            let (sim, stop) = run("exynos5422", &w, seed);
            assert_eq!(stop, StopReason::Finished, "{spec}");
            let m = w.metrics(&sim);
            let time = m.iter().find(|x| x.0 == "time").unwrap().1;
            assert!(time > 0.0 && time < 1.0, "{spec}: {time}");
            let Builtin::Hackbench(p) = &w else { panic!() };
            // Every worker ran and was woken at least for GO; receivers block
            // on empty channels, so wakeups exceed the worker count.
            let workers = 2 * p.groups * p.fds;
            assert_eq!(
                sim.tasks.iter().filter(|t| !t.kthread).count() as u32,
                workers + 1
            );
            assert!(
                sim.counters.wakeups as u32 > workers,
                "{}",
                sim.counters.wakeups
            );
            let r = w.report(&m);
            assert!(r.contains("Time: "), "{r}");
        }
    }

    #[test]
    fn hackbench_receivers_sleep_and_are_woken_by_writers() {
        // Readers drain faster than writers fill: they sleep on empty
        // channels and each write to a sleeping reader wakes it (WF_SYNC).
        let w = Builtin::parse("hackbench:groups=1,fds=2,loops=200,ipc=pipe").unwrap();
        let (sim, stop) = run("alderlake", &w, 3);
        assert_eq!(stop, StopReason::Finished);
        let msgs = 2 * 2 * 200;
        // Each sleep is followed by a backlog built up during the wakeup
        // latency, which the reader then drains: tens of cycles, not one.
        assert!(sim.counters.wakeups > msgs / 40, "{}", sim.counters.wakeups);
        assert!(sim.counters.wakeups < 2 * msgs, "{}", sim.counters.wakeups);
    }

    #[test]
    fn chacha20_completes_and_reports_host_time() {
        let w = Builtin::parse("chacha20:threads=4,cycles=300").unwrap();
        let (sim, stop) = run("genoa", &w, 1);
        assert_eq!(stop, StopReason::Finished);
        let m = w.metrics(&sim);
        let ms = m.iter().find(|x| x.0 == "host_time").unwrap().1;
        // 300 cycles of at least 95/4 µs of evaluation each.
        assert!(ms > 300.0 * 95.0 / 4.0 / 1000.0 && ms < 100.0, "{ms}");
        assert_eq!(sim.tasks.iter().filter(|t| !t.kthread).count(), 4);
        // Threads spread over CCXs exchange signals across LLCs.
        assert!(sim.hw.stats.share_ns > 0);
        let r = w.report(&m);
        assert!(r.contains("Host time spent: ") && r.contains("ms"), "{r}");
        assert!(Builtin::parse("chacha20:threads=4,wat=1").is_err());
    }

    #[test]
    fn pipe_reports_usecs_per_op() {
        let w = Builtin::parse("pipe:instances=2,loops=500").unwrap();
        let (sim, stop) = run("alderlake", &w, 1);
        assert_eq!(stop, StopReason::Finished);
        let m = w.metrics(&sim);
        let us = m.iter().find(|x| x.0 == "usec_per_op").unwrap().1;
        // Two 700 ns calls per side per round trip at least.
        assert!(us > 2.8 && us < 100.0, "{us}");
        // Each round trip wakes the peer twice.
        assert!(sim.counters.wakeups >= 2 * 2 * 500 - 10);
        assert!(w.report(&m).contains("usecs/op"));
        // perf's process tree: the launcher forks the two A tasks, each
        // execs perf and forks its own B (a process of its own).
        // Task creation order: both A tasks at the start, then each B
        // when its A has exec'd and forks it.
        let names: Vec<&str> = sim
            .tasks
            .iter()
            .filter(|t| !t.kthread)
            .map(|t| &*t.name)
            .collect();
        assert_eq!(
            names,
            [
                "sched-pipe-0a",
                "sched-pipe-1a",
                "sched-pipe-0b",
                "sched-pipe-1b"
            ]
        );
        let tgids: std::collections::BTreeSet<u32> = sim
            .tasks
            .iter()
            .filter(|t| !t.kthread)
            .map(|t| t.tgid)
            .collect();
        assert_eq!(tgids.len(), 4, "four processes");
    }

    #[test]
    fn schbench_reports_latencies_and_rps() {
        let mut w =
            Builtin::parse("schbench:message_threads=2,runtime_s=1,sleep_us=100,operations=1")
                .unwrap();
        w.fill_machine_defaults(8);
        let (sim, stop) = run("exynos5422", &w, 5);
        assert_eq!(stop, StopReason::TimeLimit);
        let m = w.metrics(&sim);
        let get = |k: &str| m.iter().find(|x| x.0 == k).map(|x| x.1).unwrap();
        assert!(get("wakeup_latency_pct50.0") < 1000.0);
        assert!(get("request_latency_pct50.0") >= 100.0);
        assert!(get("average_rps") > 100.0, "{m:?}");
        let r = w.report_sim(&sim, &m);
        assert!(
            r.starts_with("Wakeup Latencies percentiles (usec) runtime 1 (s)"),
            "{r}"
        );
        assert!(r.contains("Request Latencies percentiles"), "{r}");
        assert!(r.contains("average rps: "), "{r}");
    }

    /// DayTrader on the 64-online-CPU POWER10: tput in JMeter's format;
    /// every request gets exactly one response, and each one wakes the web
    /// thread that serves it (it sleeps on its socket between requests).
    #[test]
    fn daytrader_requests_get_one_response_each() {
        let mut w = Builtin::parse(
            "daytrader:jvms=2,users=6,gc_threads=4,gc_period_ms=20,runtime_ms=60,warmup_ms=10",
        )
        .unwrap();
        w.fill_machine_defaults(64);
        // Every mark kept, to pair requests and responses per user.
        let (sim, stop) = run_with("power10:online=0-63", &w, 3, false);
        assert_eq!(stop, StopReason::TimeLimit);
        assert_eq!(sim.machine.nr_cpus(), 64);
        let m = w.metrics(&sim);
        let tput = m.iter().find(|x| x.0 == "tput").unwrap().1;
        assert!(tput > 1000.0, "{m:?}");
        let mut done_total = 0;
        for t in sim.tasks.iter().filter(|t| t.name.starts_with("jmeter-")) {
            let count = |tag| {
                sim.marks
                    .iter()
                    .filter(|mk| mk.0 == t.id && mk.1 == tag)
                    .count()
            };
            let (sent, done) = (count(0), count(1));
            // At most the request in flight at the end has no response.
            assert!(
                sent == done || sent == done + 1,
                "{}: {sent} {done}",
                t.name
            );
            assert!(done > 10, "{}: {done}", t.name);
            done_total += done as u64;
        }
        let web_wakeups: u64 = sim
            .tasks
            .iter()
            .filter(|t| t.name.contains("-WebContainer-"))
            .map(|t| t.stats.wakeups)
            .sum();
        assert!(web_wakeups >= done_total, "{web_wakeups} < {done_total}");
        // The GC helpers ran (a collection every 20 ms).
        let gc: Vec<_> = sim
            .tasks
            .iter()
            .filter(|t| t.name.contains("-GC-Worker-"))
            .collect();
        assert_eq!(gc.len(), 8);
        assert!(gc.iter().all(|t| t.stats.cpu_time_ns > 0));
        let r = w.report_sim(&sim, &m);
        assert!(r.contains("summary = ") && r.contains("/s Avg: "), "{r}");
        assert!(w.report(&m).contains("summary = "));
    }

    /// YCSB: every operation is answered, the last client's cleanup closes
    /// every connection (all server threads exit and the run finishes), and
    /// the metrics are YCSB's.
    #[test]
    fn ycsb_answers_every_operation_and_cleans_up() {
        let w = Builtin::parse("ycsb:clients=4,operations=402").unwrap();
        let (sim, stop) = run("power10", &w, 5);
        assert_eq!(stop, StopReason::Finished);
        let m = w.metrics(&sim);
        let get = |k: &str| m.iter().find(|x| x.0 == k).map(|x| x.1).unwrap();
        assert!(get("ops") > 1000.0, "{m:?}");
        assert!(get("read_lat") > 0.0 && get("update_lat") > get("read_lat") * 0.5);
        assert!(get("clean_lat") > 0.0);
        // Each server thread was woken at least once per operation it served.
        let conn_wakeups: u64 = sim
            .tasks
            .iter()
            .filter(|t| t.name.starts_with("conn"))
            .map(|t| t.stats.wakeups)
            .sum();
        assert!(conn_wakeups >= 402, "{conn_wakeups}");
        let r = w.report_sim(&sim, &m);
        for k in [
            "[OVERALL], Throughput(ops/sec)",
            "[READ], AverageLatency(us)",
            "[UPDATE], AverageLatency(us)",
            "[CLEANUP], AverageLatency(us)",
        ] {
            assert!(r.contains(k), "{r}");
        }
    }

    #[test]
    fn rtapp_fixtures_run() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../workload/tests/fixtures");
        for f in [
            "example.json",
            "all_events.json",
            "duplicate_keys.json",
            "finite.json",
        ] {
            let text = std::fs::read_to_string(format!("{dir}/{f}")).unwrap();
            let mut w = Builtin::from_rtapp(&text, 8).unwrap();
            if let Builtin::RtApp(r) = &mut w {
                r.spec.max_time_ns = r.spec.max_time_ns.min(300_000_000);
            }
            let (sim, stop) = run("exynos5422", &w, 7);
            assert_ne!(stop, StopReason::Stalled, "{f}");
            let m = w.metrics(&sim);
            assert!(!m.is_empty());
            if f == "finite.json" {
                assert_eq!(stop, StopReason::Finished);
            }
            if f == "example.json" {
                // ui threads: 16 ms timer with 4 ms of work → wakeup latencies.
                assert!(m.iter().any(|x| x.0 == "wu_lat_pct50.0"), "{m:?}");
            }
            let _ = w.report_sim(&sim, &m);
        }
    }

    #[test]
    fn a_custom_slice_shortens_the_wakeup_latency_of_a_periodic_task() {
        // custom_slice.json: a 200 µs job every 10 ms shares CPU 0 with two
        // hogs; with `dl-runtime` it asks for a 0.2 ms slice and preempts
        // them on wakeup (PREEMPT_SHORT), without it it waits its turn.
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../workload/tests/fixtures");
        let short = std::fs::read_to_string(format!("{dir}/custom_slice.json")).unwrap();
        let plain = short.replace("\"dl-runtime\": 200, ", "");
        assert_ne!(short, plain);
        let p99 = |text: &str| {
            let w = Builtin::from_rtapp(text, 48).unwrap();
            let (sim, _) = run("kunpeng920", &w, 1);
            let m = w.metrics(&sim);
            m.iter().find(|x| x.0 == "wu_lat_pct99.0").unwrap().1
        };
        let (s, p) = (p99(&short), p99(&plain));
        assert!(
            s < p,
            "p99 wakeup latency with the custom slice {s} µs, without {p} µs"
        );
    }

    /// rt-app's `resume` is a pthread_cond_broadcast() on the name's
    /// condition: every suspended instance wakes, and a resume that finds
    /// nobody suspended is lost (the late suspender waits for ever).
    #[test]
    fn a_resume_wakes_every_suspended_thread_and_an_early_one_is_lost() {
        let file = |sleep_us: u32| {
            format!(
                r#"{{"global": {{"duration": 0.1}}, "tasks": {{
                    "sleeper": {{"instance": 3, "loop": 1, "sleep": {sleep_us}, "suspend": "zz", "run": 100}},
                    "waker": {{"loop": 1, "sleep": 5000, "resume": "zz", "run": 10}}}}}}"#
            )
        };
        // Suspended at 0 ms, resumed at 5 ms: all three run their 100 µs.
        let w = Builtin::from_rtapp(&file(0), 8).unwrap();
        let (_, stop) = run("exynos5422", &w, 1);
        assert_eq!(stop, StopReason::Finished);
        // Suspending at 10 ms, after the resume: nothing wakes them.
        let w = Builtin::from_rtapp(&file(10_000), 8).unwrap();
        let (sim, stop) = run("exynos5422", &w, 1);
        assert_eq!(stop, StopReason::Stalled);
        // All three wait (a kept resume would have let one through).
        let waiting = sim.parked_threads();
        assert_eq!(waiting.len(), 3, "{waiting:?}");
        assert!(waiting
            .iter()
            .all(|(name, _, _)| name.starts_with("sleeper")));
    }

    /// Small instances of every built-in (rt-app is covered by its fixtures).
    const SMALL: &[&str] = &[
        "stream:threads=2,iterations=2,size_mib=16",
        "hackbench:groups=1,fds=3,loops=10,ipc=pipe,mode=threads",
        "hackbench:groups=1,fds=3,loops=10,ipc=socket,mode=process",
        "pipe:instances=2,loops=100",
        "schbench:message_threads=1,workers=3,runtime_s=1,operations=1",
        "blackscholes:threads=3,input=simsmall",
        "streamcluster:threads=3,input=simsmall",
        "bodytrack:threads=3,input=simsmall",
        "pbzip2:threads=3,size_mib=4",
        "pixz:threads=2,size_mib=16",
        "kernbench:threads=4,files=12",
        "mobile:cpus=4",
        "chacha20:threads=4,cycles=200",
        "daytrader:jvms=1,users=4,gc_threads=2,runtime_ms=30,warmup_ms=10",
        "ycsb:clients=2,operations=200",
        "tjbench:runs=1",
        "phpbench:runs=1",
        "flac:runs=1",
        "pybench:runs=1",
        "tflite:threads=3,inferences=2,layers=4",
    ];

    /// `schedlab workloads` lists every key each parser accepts.
    #[test]
    fn the_catalogue_lists_every_key_a_workload_accepts() {
        let keys: &[(&str, &[&str])] = &[
            ("stream", stream::KEYS),
            ("hackbench", hackbench::KEYS),
            ("pipe", pipe::KEYS),
            ("schbench", schbench::KEYS),
            ("blackscholes", parsec::KEYS),
            ("streamcluster", parsec::KEYS),
            ("bodytrack", parsec::KEYS),
            ("pbzip2", pbzip2::KEYS),
            ("pixz", pixz::KEYS),
            ("mobile", mobile::KEYS),
            ("kernbench", kernbench::KEYS),
            ("chacha20", chacha20::KEYS),
            ("daytrader", daytrader::KEYS),
            ("ycsb", ycsb::KEYS),
        ];
        for (name, ks) in keys {
            let (_, listed, _) = BUILTINS.iter().find(|b| b.0 == *name).unwrap();
            for k in *ks {
                assert!(
                    listed.contains(&format!("{k}=")),
                    "{name}: {k} not listed in {listed}"
                );
            }
        }
    }

    #[test]
    fn every_builtin_runs_on_every_preset() {
        // Invariants are checked after every event; every built-in finishes
        // (or reaches its own time limit) and reports its metric.
        let listed: Vec<&str> = SMALL.iter().map(|s| s.split(':').next().unwrap()).collect();
        for (name, _, _) in BUILTINS.iter().filter(|b| b.0 != "rt-app") {
            assert!(listed.contains(name), "{name} has no small instance here");
        }
        for machine in schedlab_topo::PRESET_NAMES {
            let ncpus = preset(machine).unwrap().cpus.len();
            for (i, spec) in SMALL.iter().enumerate() {
                let mut w = Builtin::parse(spec).unwrap();
                w.fill_machine_defaults(ncpus);
                let (sim, stop) = run(machine, &w, 100 + i as u64);
                assert_ne!(stop, StopReason::Stalled, "{spec} on {machine}");
                assert!(!w.metrics(&sim).is_empty(), "{spec} on {machine}");
            }
        }
    }

    #[test]
    fn parsec_pbzip2_kernbench_complete() {
        for (spec, metric) in [
            ("blackscholes:threads=4,input=simsmall", "time"),
            ("streamcluster:threads=4,input=simsmall", "time"),
            ("bodytrack:threads=4,input=simsmall", "time"),
            ("pbzip2:threads=4,size_mib=8", "tput"),
            ("pixz:threads=2,size_mib=32", "tput"),
            ("mobile:cpus=8", "score"),
            ("kernbench:threads=8,files=40", "elsp"),
        ] {
            let w = Builtin::parse(spec).unwrap();
            let (sim, stop) = run("exynos5422", &w, 11);
            assert_eq!(stop, StopReason::Finished, "{spec}");
            let m = w.metrics(&sim);
            let v = m.iter().find(|x| x.0 == metric).map(|x| x.1);
            assert!(v.is_some_and(|v| v > 0.0), "{spec}: {m:?}");
            let r = w.report_sim(&sim, &m);
            assert!(!r.contains("incomplete"), "{spec}: {r}");
        }
    }

    #[test]
    fn bodytrack_tickets_balance_big_and_little() {
        // Dynamic tickets: every worker takes some, big cores more.
        let w = Builtin::parse("bodytrack:threads=8,input=simsmall").unwrap();
        let (sim, stop) = run("exynos5422", &w, 2);
        assert_eq!(stop, StopReason::Finished);
        let cpu: Vec<u64> = sim
            .tasks
            .iter()
            .filter(|t| t.name.starts_with("bodytrack-") && !t.name.ends_with("loader"))
            .map(|t| t.stats.cpu_time_ns)
            .collect();
        assert_eq!(cpu.len(), 8);
        assert!(cpu.iter().all(|&c| c > 0), "{cpu:?}");
    }

    #[test]
    fn runs_are_a_function_of_the_seed() {
        for spec in [
            "hackbench:groups=1,fds=3,loops=10",
            "schbench:runtime_s=1,workers=3,operations=1",
            "bodytrack:threads=3,input=simsmall",
            "chacha20:threads=4,cycles=300",
            "daytrader:jvms=2,users=8,gc_threads=4,runtime_ms=40,warmup_ms=10",
            "ycsb:clients=3,operations=300",
            "tjbench:runs=1",
            "mobile:cpus=4",
        ] {
            let w = Builtin::parse(spec).unwrap();
            let (a, _) = run("alderlake", &w, 4);
            let (b, _) = run("alderlake", &w, 4);
            assert_eq!(a.marks, b.marks, "{spec}");
            assert_eq!(a.events, b.events, "{spec}");
            assert_eq!(w.metrics(&a), w.metrics(&b), "{spec}");
        }
    }

    /// A run whose marks go to the workload's sink reports exactly what the
    /// same run reports from its kept marks.
    #[test]
    fn a_mark_sink_keeps_the_metrics_of_the_marks() {
        let timer = r#"{"tasks": {"t": {"instance": 3, "loop": -1, "run": 700,
            "timer": {"ref": "tick", "period": 4000}}}, "global": {"duration": 0.3}}"#;
        for w in [
            Builtin::parse("schbench:runtime_s=2,warmup_s=1,workers=3,operations=2").unwrap(),
            Builtin::from_rtapp(timer, 8).unwrap(),
            Builtin::parse("daytrader:jvms=1,users=8,gc_threads=4,runtime_ms=40,warmup_ms=10")
                .unwrap(),
            Builtin::parse("ycsb:clients=3,operations=300").unwrap(),
        ] {
            let (with_sink, _) = run("exynos5422", &w, 9);
            assert!(with_sink.mark_sink.is_some() && with_sink.marks.is_empty());
            let m = schedlab_topo::resolve_machine("exynos5422").unwrap();
            let d = build_domains(&m, &DomainConfig::default()).unwrap();
            let cfg = SimConfig {
                seed: 9,
                checked: true,
                ..SimConfig::default()
            };
            let mut kept = Sim::new(m, d, w.build(None, None), cfg);
            kept.run();
            assert!(!kept.marks.is_empty());
            let metrics = w.metrics(&kept);
            assert!(
                metrics
                    .iter()
                    .any(|(k, _)| k.contains("lat") || k.contains("avg")),
                "{metrics:?}"
            );
            assert_eq!(w.metrics(&with_sink), metrics);
            assert_eq!(
                w.report_sim(&with_sink, &metrics),
                w.report_sim(&kept, &metrics)
            );
        }
    }

    #[test]
    fn unknown_workloads_and_keys_are_errors() {
        assert!(Builtin::parse("nosuch").is_err());
        assert!(Builtin::parse("hackbench:bogus=1").is_err());
        assert!(Builtin::parse("pipe:instances=0").is_err());
        let m = schedlab_topo::preset("exynos5422").unwrap();
        assert!(Builtin::resolve("/nonexistent/x.json", &m).is_err());
        assert_eq!(Builtin::parse("stream").unwrap().name(), "stream");
    }

    #[test]
    fn rtapp_calibration_on_a_cpu_makes_run_that_cpus_time() {
        // Exynos 5422: CPU 0 is an A7 (capacity 377), CPU 4 an A15 (1024).
        let m = schedlab_topo::preset("exynos5422").unwrap();
        let work = |cal: &str| {
            let doc = format!(
                r#"{{"global": {{"calibration": {cal}}}, "tasks": {{"a": {{"loop": 1, "run": 1000}}}}}}"#
            );
            let Builtin::RtApp(r) = Builtin::from_rtapp_for(&doc, &m).unwrap() else {
                unreachable!()
            };
            r.spec.templates[0]
                .steps
                .iter()
                .find_map(|s| match s {
                    schedlab_workload::Step::Compute { work_ns } => Some(*work_ns),
                    _ => None,
                })
                .unwrap()
        };
        // 1 ms of an A7's time is 377/1024 ms of work on a capacity-1024 CPU.
        assert_eq!(work("\"CPU0\""), 1_000_000 * 377 / 1024);
        assert_eq!(work("\"CPU4\""), 1_000_000);
        // ns per loop: the CPU it was measured on is unknown.
        assert_eq!(work("300"), 1_000_000);
        // No calibration setting: rt-app calibrates CPU0.
        let doc = r#"{"tasks": {"a": {"loop": 1, "run": 1000}}}"#;
        let Builtin::RtApp(r) = Builtin::from_rtapp_for(doc, &m).unwrap() else {
            unreachable!()
        };
        assert!(r.spec.templates[0]
            .steps
            .contains(&schedlab_workload::Step::Compute {
                work_ns: 1_000_000 * 377 / 1024
            }));
        let bad = r#"{"global": {"calibration": "CPU8"}, "tasks": {"a": {"run": 1}}}"#;
        let e = Builtin::from_rtapp_for(bad, &m).unwrap_err();
        assert!(e.to_string().contains("global.calibration"), "{e}");
    }
}
