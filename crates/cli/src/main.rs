//! `schedlab`: the command line, a thin shell over the library crates.
//!
//! Exit codes (shared/contract.md): 0 success, 2 bad input (one line naming
//! the file or name, the field and the reason; no partial output file),
//! 1 internal failure.

use anyhow::Context;
use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use schedlab_engine::{Sim, SimConfig, StopReason, FEATURES};
use schedlab_exp::experiments::counted;
use schedlab_exp::{configs, experiments, sensitivity, workloads::Builtin};
use schedlab_report::{render_experiment, render_summary, Results, SummaryOptions, TableOptions};
use schedlab_topo::{CpuMask, MachineEdit, MAX_CPUS};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Set when stdout carries a JSON report (`run --json -`): the text report
/// then goes to stderr.
static REPORT_TO_STDERR: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Writes the text report to stdout (to stderr under `run --json -`); a
/// closed pipe (`schedlab topo ... | head`) ends the program quietly.
pub(crate) fn emit(text: &str) {
    if REPORT_TO_STDERR.load(std::sync::atomic::Ordering::Relaxed) {
        eprint!("{text}");
        return;
    }
    emit_stdout(text);
}

/// Writes to stdout; a closed pipe ends the program quietly.
fn emit_stdout(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("schedlab: writing output: {e}");
        std::process::exit(1);
    }
}

/// `println!` through [`emit`].
macro_rules! outln {
    ($($arg:tt)*) => { $crate::emit(&format!("{}\n", format!($($arg)*))) };
}

mod calibrate;

#[derive(Parser)]
#[command(
    name = "schedlab",
    version,
    about = "What does this scheduling policy do to this workload on this machine?"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run reference experiments and print mmtests-style comparison tables.
    Reproduce(ReproduceArgs),
    /// Compare configurations on one machine and workload: an ad hoc
    /// experiment with repetitions, printed as mmtests-style tables (with
    /// --out also results.json, tables.txt and plots/).
    Compare(CompareArgs),
    /// Draw SVG plots of a results.json (means per config; our changes
    /// against the published ones).
    Plot {
        /// A results.json written by `reproduce` or `compare --out`.
        results: PathBuf,
        /// Directory for the SVG files (default: plots/ next to the results file).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Print a machine and its sched domains per CPU.
    Topo {
        /// Preset name, NAME:online=LIST, machine file, or `host` (this
        /// computer, from /sys).
        machine: Option<String>,
        /// The same as the MACHINE argument, spelt as the other commands
        /// spell it.
        #[arg(long = "machine", value_name = "MACHINE", conflicts_with = "machine")]
        machine_flag: Option<String>,
        /// Print the machine and its domains as JSON.
        #[arg(long)]
        json: bool,
        /// Configuration (vanilla, cluster, mc-llc, ...).
        #[arg(long, default_value = "vanilla")]
        config: String,
        /// List preset names.
        #[arg(long, conflicts_with_all = ["machine", "machine_flag", "json", "config", "host", "sysfs_root", "emit_machine"])]
        list: bool,
        /// This computer, read from /sys.
        #[arg(long, conflicts_with_all = ["machine", "machine_flag"])]
        host: bool,
        /// Read a copy of a sysfs tree rooted here (as /sys); the
        /// architecture comes from its cpuidle and cpufreq drivers and idle
        /// states (--host takes this binary's).
        #[arg(long, conflicts_with_all = ["machine", "machine_flag"])]
        sysfs_root: Option<PathBuf>,
        /// Print the machine as an editable machine file instead of its domains.
        #[arg(long, conflicts_with_all = ["json", "config"])]
        emit_machine: bool,
    },
    /// Micro-benchmarks in the simulator next to the published hardware measurements.
    Calibrate {
        /// Preset name, machine file, or `host` (this computer, from /sys).
        machine: String,
        /// Print the rows as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List built-in workloads with their parameters.
    Workloads,
    /// List the scheduler features table.
    Features,
    /// List the tunables a configuration or `run --tunable` sets (the
    /// kernel's /sys/kernel/debug/sched/ files, relax_domain_level, CONFIG_HZ).
    Tunables,
    /// List the named configurations (--config) and the features each sets
    /// differently from vanilla.
    Configs,
    /// Run one simulation.
    Run {
        /// Preset name, NAME:online=LIST, machine file, or `host` (this computer,
        /// from /sys); `schedlab topo --list` names the presets.
        #[arg(long)]
        machine: String,
        /// Built-in workload spec, e.g. stream:threads=4 (`schedlab
        /// workloads` lists them), or an rt-app JSON file.
        #[arg(long)]
        workload: String,
        /// Configuration, e.g. cluster or cluster+CLUSTER_SCAN=off (`schedlab
        /// configs` lists them).
        #[arg(long, default_value = "vanilla")]
        config: String,
        /// Switch a feature: NAME=on|off (repeatable).
        #[arg(long = "feature")]
        features: Vec<String>,
        /// Set a tunable: NAME=VALUE, e.g. migration_cost_ns=250000 or
        /// domains/MC/imbalance_pct=130 (repeatable; `schedlab tunables`
        /// lists them).
        #[arg(long = "tunable")]
        tunables: Vec<String>,
        /// Seed of every random stream of the run.
        #[arg(long, allow_negative_numbers = true, default_value_t = 1)]
        seed: u64,
        #[command(flatten)]
        place: Placement,
        /// Write the run's JSON report here; `-` writes it to standard
        /// output (the text report then goes to standard error).
        #[arg(long)]
        json: Option<PathBuf>,
        /// Check invariants after every event (each check visits every task
        /// and runqueue: for tests, debugging and runs of up to a few thousand
        /// threads).
        #[arg(long)]
        checked: bool,
        #[command(flatten)]
        edits: EditArgs,
        /// Record the scheduler tracepoints (sched_switch, sched_waking,
        /// sched_wakeup[_new], sched_migrate_task, sched_process_exit) and
        /// write them here; opens in ui.perfetto.dev.
        #[arg(long)]
        trace: Option<PathBuf>,
        /// Trace format: `perfetto` (protobuf) or `ftrace` (tracefs text).
        /// Default: ftrace for a `.txt` file (any case), else perfetto.
        #[arg(long)]
        trace_format: Option<String>,
        /// Keep at most this many trace events, up to 50,000,000 (later ones
        /// are counted, not kept). Default: 5,000,000.
        #[arg(long, allow_negative_numbers = true)]
        trace_limit: Option<usize>,
        /// Record only this stretch of simulated time: FROM_MS..TO_MS (either
        /// side may be left out).
        #[arg(long, allow_hyphen_values = true)]
        trace_window: Option<String>,
        /// Also record power:cpu_idle, each CPU's entry into an idle state
        /// (its index in the machine's table) and exit (state=4294967295);
        /// Perfetto shows them as per-CPU idle-state tracks.
        #[arg(long)]
        trace_idle: bool,
    },
    /// Measure the engine: simulated events per second and simulated/wall time.
    Bench {
        /// Fewer and shorter runs.
        #[arg(long)]
        quick: bool,
    },
}

/// Bad input (exit 2) versus internal failure (exit 1).
enum Failure {
    Input(String),
    Internal(anyhow::Error),
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Self {
        Failure::Internal(e)
    }
}

fn input(msg: impl Into<String>) -> Failure {
    Failure::Input(msg.into())
}

/// Checks, before a run that may take minutes, that the output file `path`
/// given with `flag` can be created: it is not a directory and its
/// directory exists.
fn check_out_file(flag: &str, path: &Path) -> Result<(), Failure> {
    let shown = path.display();
    if path.is_dir()
        || path
            .as_os_str()
            .to_string_lossy()
            .ends_with(std::path::MAIN_SEPARATOR)
    {
        return Err(input(format!("{flag} {shown}: is a directory")));
    }
    if schedlab_report::is_special_file(path) {
        // A device or a FIFO is written in place (write_atomically()); it
        // is not opened here, as a FIFO's reader would see its end.
        return Ok(());
    }
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() {
        return Err(input(format!(
            "{flag} {shown}: directory {} does not exist",
            dir.display()
        )));
    }
    // The file is written through NAME.tmp: try that now.
    let tmp = schedlab_report::tmp_path(path);
    std::fs::File::create(&tmp)
        .map_err(|e| input(format!("{flag} {shown}: cannot write there: {e}")))?;
    let _ = std::fs::remove_file(&tmp);
    Ok(())
}

/// A failed [`schedlab_report::write_atomically`], naming the file.
fn written((path, e): (PathBuf, std::io::Error)) -> Failure {
    Failure::Internal(anyhow::anyhow!("writing {}: {e}", path.display()))
}

/// Writes a text output (tables.txt, a plot) through `NAME.tmp`, as every
/// output is written.
fn write_text(path: &Path, text: &str) -> Result<(), Failure> {
    use std::io::Write as _;
    schedlab_report::write_atomically(path, |f| f.write_all(text.as_bytes())).map_err(written)
}

/// Checks, before anything runs or is created, that the output directory
/// `path` given with `flag` can be made and written in: it is a directory,
/// or its nearest existing ancestor is, and a file can be created there
/// (tried with a probe file, removed at once).
/// The file a path names, for comparing paths: canonical when it exists,
/// else its canonical directory joined with its name, else (a directory
/// still to be made) the path made absolute.
fn file_identity(path: &Path) -> Option<PathBuf> {
    if let Ok(p) = path.canonicalize() {
        return Some(p);
    }
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    match dir.canonicalize() {
        Ok(d) => Some(d.join(path.file_name()?)),
        Err(_) => std::path::absolute(path).ok(),
    }
}

/// Refuses two outputs naming one file, and an output naming an input file
/// (a `--json` over the rt-app file it ran, say).
fn check_distinct_files(
    outputs: &[(&str, &Path)],
    inputs: &[(&str, &Path)],
) -> Result<(), Failure> {
    for (i, (flag, path)) in outputs.iter().enumerate() {
        let Some(id) = file_identity(path) else {
            continue;
        };
        for (other, opath) in &outputs[..i] {
            if file_identity(opath).as_ref() == Some(&id) {
                return Err(input(format!(
                    "{flag} {}: the same file as {other}",
                    path.display()
                )));
            }
        }
        for (inflag, ipath) in inputs {
            if ipath.is_file() && file_identity(ipath).as_ref() == Some(&id) {
                return Err(input(format!(
                    "{flag} {}: would overwrite the {inflag} file",
                    path.display()
                )));
            }
        }
    }
    Ok(())
}

/// Whether `other` names a file an output directory `dir` gets
/// (`results.json`, `tables.txt`, anything under `plots/`).
fn in_dir_outputs(dir: &Path, other: &Path) -> bool {
    let (Some(d), Some(o)) = (file_identity(dir), file_identity(other)) else {
        return false;
    };
    o == d.join("results.json") || o == d.join("tables.txt") || o.starts_with(d.join("plots"))
}

fn check_out_dir(flag: &str, path: &Path) -> Result<(), Failure> {
    let shown = path.display();
    if path.exists() && !path.is_dir() {
        return Err(input(format!(
            "{flag} {shown}: exists and is not a directory"
        )));
    }
    let mut base = path;
    while !base.exists() {
        base = match base.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
    }
    if !base.is_dir() {
        return Err(input(format!(
            "{flag} {shown}: cannot create: {} is not a directory",
            base.display()
        )));
    }
    let probe = base.join(format!(".schedlab-probe-{}", std::process::id()));
    match std::fs::File::create(&probe) {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) if base == path => Err(input(format!("{flag} {shown}: cannot write there: {e}"))),
        Err(e) => Err(input(format!(
            "{flag} {shown}: cannot create it in {}: {e}",
            base.display()
        ))),
    }
}

/// A failed write of an output file after the run (the paths were checked
/// before it): the error names the file once and the OS error once.
fn write_failed(e: impl std::fmt::Display) -> Failure {
    Failure::Internal(anyhow::anyhow!("writing {e}"))
}

/// Creates the output directory `path` given with `flag` before the run,
/// so a bad path costs nothing.
fn make_out_dir(flag: &str, path: &Path) -> Result<(), Failure> {
    std::fs::create_dir_all(path).map_err(|e| {
        let why = if path.exists() && !path.is_dir() {
            "exists and is not a directory".to_string()
        } else {
            e.to_string()
        };
        input(format!("{flag} {}: cannot create: {why}", path.display()))
    })
}

/// A bad command line as one line (clap's message, the missing arguments
/// it lists and its tip, without the usage and the --help hint), exit 2;
/// help and version requests print as clap prints them.
fn parse_args() -> Cli {
    use clap::error::ErrorKind;
    let e = match Cli::try_parse() {
        Ok(cli) => return cli,
        Err(e) => e,
    };
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        e.exit();
    }
    eprintln!("schedlab: {}", one_line_clap_error(&e.render().to_string()));
    std::process::exit(2);
}

/// clap's rendered error text as one line.
fn one_line_clap_error(text: &str) -> String {
    let mut lines = text
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("bad arguments");
    let mut msg = first.strip_prefix("error: ").unwrap_or(first).to_string();
    let (tips, items): (Vec<&str>, Vec<&str>) = lines.partition(|l| l.starts_with("tip:"));
    if !items.is_empty() {
        msg.push(' ');
        msg.push_str(&items.join(", "));
    }
    for t in tips {
        msg.push_str(&format!(" ({t})"));
    }
    msg
}

fn main() {
    let cli = parse_args();
    let res = match cli.cmd {
        Cmd::Reproduce(args) => reproduce(args),
        Cmd::Topo {
            machine,
            machine_flag,
            json,
            config,
            list,
            host,
            sysfs_root,
            emit_machine,
        } => {
            let source = match (sysfs_root, host, machine.or(machine_flag)) {
                (Some(root), _, _) => Some(MachineSource::Sysfs(root)),
                (None, true, _) => Some(MachineSource::Host),
                (None, false, Some(m)) => Some(MachineSource::Named(m)),
                (None, false, None) => None,
            };
            topo(source, json, config, list, emit_machine)
        }
        Cmd::Calibrate { machine, json } => calibrate::run(&machine, json),
        Cmd::Plot { results, out } => plot(results, out),
        Cmd::Compare(args) => compare(args),
        Cmd::Workloads => {
            for (name, keys, what) in schedlab_exp::workloads::BUILTINS {
                outln!("{name}\n  keys: {keys}\n  models: {what}");
            }
            Ok(())
        }
        Cmd::Configs => {
            use schedlab_topo::Arch;
            for (name, meaning) in configs::CONFIGS {
                outln!("{name}\n  {meaning}");
                // The first architecture the configuration resolves for.
                let resolved = [Arch::Arm64, Arch::X86, Arch::PowerPc]
                    .into_iter()
                    .find_map(|a| {
                        let c = configs::resolve(name, a).ok()?;
                        let v = configs::resolve("vanilla", a).ok()?;
                        Some((c, v))
                    });
                if let Some((c, v)) = resolved {
                    let base = v.features.list();
                    let diff: Vec<String> = c
                        .features
                        .list()
                        .into_iter()
                        .zip(base)
                        .filter(|((_, on), (_, von))| on != von)
                        .map(|((n, on), _)| format!("{n}={}", if on { "on" } else { "off" }))
                        .collect();
                    if !diff.is_empty() {
                        outln!("  features: {}", diff.join(" "));
                    }
                    if c.hz != v.hz {
                        outln!("  CONFIG_HZ={}", c.hz);
                    }
                }
            }
            Ok(())
        }
        Cmd::Features => {
            for f in FEATURES {
                outln!(
                    "{:<24} {:<3}  {}",
                    f.name,
                    if f.default { "on" } else { "off" },
                    f.meaning
                );
            }
            Ok(())
        }
        Cmd::Tunables => {
            for (name, default, meaning) in configs::BUILD_SWITCHES {
                outln!("{name:<38} {default:<16} {meaning}");
            }
            for t in schedlab_engine::TUNABLES {
                outln!("{:<38} {:<16} {}", t.name, t.default, t.meaning);
            }
            Ok(())
        }
        Cmd::Run {
            machine,
            workload,
            config,
            features,
            tunables,
            seed,
            place,
            json,
            checked,
            edits,
            trace,
            trace_format,
            trace_limit,
            trace_window,
            trace_idle,
        } => TraceOut::new(trace, trace_format, trace_limit, trace_window, trace_idle).and_then(
            |trace| {
                run(
                    machine, workload, config, features, tunables, seed, place, json, checked,
                    edits, trace,
                )
            },
        ),
        Cmd::Bench { quick } => bench(quick),
    };
    match res {
        Ok(()) => {}
        Err(Failure::Input(msg)) => {
            eprintln!("schedlab: {msg}");
            std::process::exit(2);
        }
        Err(Failure::Internal(e)) => {
            eprintln!("schedlab: internal error: {e:#}");
            std::process::exit(1);
        }
    }
}

fn progress_bar(len: u64) -> ProgressBar {
    let pb = ProgressBar::new(len);
    if std::io::stderr().is_terminal() {
        pb.set_draw_target(ProgressDrawTarget::stderr());
        if let Ok(style) =
            ProgressStyle::with_template("{bar:40} {pos}/{len} runs {elapsed_precise} (eta {eta})")
        {
            pb.set_style(style);
        }
    } else {
        pb.set_draw_target(ProgressDrawTarget::hidden());
    }
    pb
}

/// A spinner for one simulation (on a terminal only): simulated time and
/// events so far.
fn run_spinner() -> ProgressBar {
    let pb = ProgressBar::new_spinner();
    if std::io::stderr().is_terminal() {
        pb.set_draw_target(ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} ({elapsed})") {
            pb.set_style(style);
        }
    } else {
        pb.set_draw_target(ProgressDrawTarget::hidden());
    }
    pb
}

fn reproduce(a: ReproduceArgs) -> Result<(), Failure> {
    let ReproduceArgs {
        names,
        quick,
        out,
        json,
        list,
        seed,
        reps,
        checked,
        features,
        tunables,
        edits,
        sensitivity,
    } = a;
    if list {
        for n in experiments::names() {
            outln!("{n}");
        }
        return Ok(());
    }
    let names: Vec<String> = if names.is_empty() {
        experiments::names().iter().map(|s| s.to_string()).collect()
    } else {
        // Each experiment once, in the order first named.
        let mut seen = Vec::new();
        for n in names {
            if !seen.contains(&n) {
                seen.push(n);
            }
        }
        seen
    };
    if let Some(r) = reps {
        if !(1..=1000).contains(&r) {
            return Err(input(format!("--reps {r}: must be 1 to 1000")));
        }
    }
    let mut defs = names
        .iter()
        .map(|n| experiments::get(n, quick))
        .collect::<Result<Vec<_>, _>>()
        .map_err(input)?;
    if let Some(r) = reps {
        for d in &mut defs {
            d.repetitions = r;
        }
    }
    let machines: Vec<&str> = defs.iter().map(|d| d.machine.as_str()).collect();
    let machine_edits = edits.check(&machines)?;
    let switches = config_switches(&features, &tunables)?;
    // Debug builds always check invariants (the test suite runs them).
    let opts = experiments::Options {
        quick,
        seed,
        checked: checked || cfg!(debug_assertions),
        machine_edits: machine_edits.clone(),
        config_switches: switches.clone(),
    };
    experiments::check_switches(&defs, &opts).map_err(input)?;
    // The experiments' configurations as published, for the note on
    // switches that change none of them.
    let mut base_features = Vec::new();
    if !features.is_empty() {
        for d in &defs {
            let arch = schedlab_topo::resolve_machine_edited(&d.machine, &machine_edits, false)
                .map_err(|e| input(e.to_string()))?
                .0
                .arch;
            for c in &d.configs {
                base_features.push(configs::resolve(c, arch).map_err(input)?.features);
            }
        }
    }
    // Every output location is checked before anything is created.
    check_out_dir("--out", &out)?;
    if let Some(j) = &json {
        if j == Path::new("-") {
            return Err(input(
                "--json -: reproduce prints its tables on stdout; give --json a file".to_string(),
            ));
        }
        if in_dir_outputs(&out, j) {
            return Err(input(format!(
                "--json {}: a file --out {} writes",
                j.display(),
                out.display()
            )));
        }
        check_out_file("--json", j)?;
    }
    let plan = sensitivity.plan(&defs, &machine_edits)?;
    make_out_dir("--out", &out)?;
    let total: u64 = defs
        .iter()
        .map(|d| (d.points.len() * d.configs.len() * d.repetitions) as u64)
        .sum::<u64>()
        + plan.as_ref().map_or(0, |p| p.runs(&defs));
    let pb = progress_bar(total);
    let started = Instant::now();
    // Simulation seconds per experiment, for the closing line.
    let spent: std::sync::Mutex<std::collections::BTreeMap<String, f64>> = Default::default();
    let tick = |name: &str, secs: f64| {
        pb.inc(1);
        if let Ok(mut m) = spent.lock() {
            *m.entry(name.to_string()).or_default() += secs;
        }
    };
    let mut results = experiments::run_all(&defs, &opts, &tick)
        .map_err(|e| Failure::Internal(anyhow::anyhow!(e)))?;
    // Which experiments an edit reached (it applies where the machine has
    // the number): results.json says so per experiment, as the text does.
    for (d, r) in defs.iter().zip(results.iter_mut()) {
        let applied = applied_edits(&d.machine, &machine_edits);
        if !applied.is_empty() {
            r.setup
                .push_str(&format!("; machine edited: {}", edits_list(&applied)));
        }
    }
    let sens = sensitivity.run(plan.as_ref(), &defs, &results, &opts, &tick)?;
    pb.finish_and_clear();
    let mut text = edits_banner(&machine_edits);
    if !switches.is_empty() {
        text.push_str(&format!(
            "== Configuration switches: {} (in every configuration; not the published configurations)\n",
            switches.join(", ")
        ));
        for f in unchanged_features(&features, &base_features) {
            text.push_str(&format!(
                "note: --feature {f} changes nothing: every configuration has it so already\n"
            ));
        }
        text.push('\n');
    }
    for (d, r) in defs.iter().zip(&results) {
        text.push_str(&format!(
            "== {} on {}{} ({}; {}{})\n",
            d.name,
            d.machine,
            edited_suffix(&applied_edits(&d.machine, &machine_edits)),
            d.setup,
            counted(d.repetitions, "repetition"),
            if quick { ", quick" } else { "" }
        ));
        text.push_str(&render_experiment(r, &TableOptions::default()));
        text.push('\n');
        let published = schedlab_exp::published::published_absolute(&d.name);
        if !published.is_empty() {
            text.push_str("Published (cover letter), Hmean:\n");
            for (p, m, base, patched) in published {
                text.push_str(&format!(
                    "  {m:<6}-{p:<3} {:>12.2} {:>12.2} ({:+.2}%)\n",
                    base,
                    patched,
                    (patched / base - 1.0) * 100.0
                ));
            }
            text.push('\n');
        }
        for n in &r.notes {
            text.push_str(&format!("note: {n}\n"));
        }
        text.push('\n');
    }
    // The Shape section, printed only when a chosen experiment has claims.
    let mut shape = String::new();
    for r in &results {
        for c in schedlab_exp::published::shape_claims(&r.name) {
            let verdict = match (c.check)(r) {
                Some(v) if v.holds => format!("holds ({})", v.evidence),
                Some(v) => format!("DOES NOT HOLD ({})", v.evidence),
                None => "n/a (rows missing)".to_string(),
            };
            shape.push_str(&format!("{:<20} {:<70} {verdict}\n", r.name, c.description));
        }
    }
    if !shape.is_empty() {
        text.push_str(
            "== Shape: the published tables' qualitative claims, checked on our results\n",
        );
        text.push_str(&shape);
        text.push('\n');
    }
    text.push_str("== Summary: ours vs published change (positive = better)\n");
    text.push_str(&render_summary(&results, &SummaryOptions::default()));
    if !text.ends_with('\n') {
        text.push('\n');
    }
    if let Some((_, t)) = &sens {
        text.push('\n');
        text.push_str(t);
    }
    emit(&text);
    eprintln!(
        "({} simulations in {:.1} s{})",
        total,
        started.elapsed().as_secs_f64(),
        heaviest_text(&spent.into_inner().unwrap_or_default())
    );
    let mut res = Results::new(env!("CARGO_PKG_VERSION"));
    res.experiments = results;
    res.machine_edits = edit_texts(&machine_edits);
    res.config_switches = switches;
    res.sensitivity = sens.map(|(e, _)| e).unwrap_or_default();
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    res.write_json(&out.join("results.json"))
        .map_err(write_failed)?;
    write_text(&out.join("tables.txt"), &text)?;
    if let Some(j) = json {
        res.write_json(&j).map_err(write_failed)?;
    }
    let n = write_plots(&res, &out.join("plots"), true)?;
    eprintln!(
        "({} in {})",
        counted(n, "plot"),
        out.join("plots").display()
    );
    Ok(())
}

/// The list of the SVG files schedlab wrote into an `--out` directory's
/// `plots/`, one name per line: the next run removes those and only those.
const PLOTS_MANIFEST: &str = ".schedlab-plots";

/// Renders every experiment's plots into `dir` (created if needed); returns
/// how many were written. With `clean` (the `plots/` directory of an
/// `--out` directory), the SVG files an earlier run wrote there, as its
/// manifest lists them, are removed first, so no stale plot of another
/// experiment stays behind; any other file, and every file of a directory
/// the user named, is kept.
fn write_plots(res: &Results, dir: &std::path::Path, clean: bool) -> Result<usize, Failure> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let manifest = dir.join(PLOTS_MANIFEST);
    if clean {
        let listed = std::fs::read_to_string(&manifest).unwrap_or_default();
        for name in listed.lines() {
            // Plain file names of SVGs only: the manifest is ours, but a
            // hand-edited one must not reach outside the directory.
            let plain = !name.contains('/') && !name.contains('\\') && !name.starts_with('.');
            let p = dir.join(name);
            if plain && name.ends_with(".svg") && p.is_file() {
                std::fs::remove_file(&p).with_context(|| format!("removing {}", p.display()))?;
            }
        }
    }
    let mut written = Vec::new();
    let mut n = 0;
    // Experiments whose names make the same file name (`a/b` and `a_b`, or
    // a name given twice) get numbered files rather than overwrite each other.
    let mut used = std::collections::BTreeSet::new();
    for e in &res.experiments {
        let plots = schedlab_report::plot_experiment(e)
            .map_err(|e| Failure::Internal(anyhow::anyhow!(e)))?;
        for p in plots {
            let mut stem = p.stem.clone();
            let mut k = 2;
            while !used.insert(stem.clone()) {
                stem = format!("{}-{k}", p.stem);
                k += 1;
            }
            let path = dir.join(format!("{stem}.svg"));
            write_text(&path, &p.svg)?;
            written.push(format!("{stem}.svg\n"));
            n += 1;
        }
    }
    if clean {
        write_text(&manifest, &written.concat())?;
    }
    Ok(n)
}

/// `schedlab plot`: redraws the plots of a results.json.
fn plot(results: PathBuf, out: Option<PathBuf>) -> Result<(), Failure> {
    let text = std::fs::read_to_string(&results)
        .map_err(|e| input(format!("{}: cannot read: {e}", results.display())))?;
    let res =
        Results::from_json(&text).map_err(|e| input(format!("{}: {e}", results.display())))?;
    if res.experiments.is_empty() {
        return Err(input(format!(
            "{}: field `experiments`: empty list, nothing to plot",
            results.display()
        )));
    }
    let dir = out.unwrap_or_else(|| {
        results
            .parent()
            .unwrap_or_else(|| std::path::Path::new("."))
            .join("plots")
    });
    make_out_dir("--out", &dir)?;
    let n = write_plots(&res, &dir, false)?;
    outln!("{} written to {}", counted(n, "plot"), dir.display());
    Ok(())
}

/// Where `topo` reads its machine from.
enum MachineSource {
    /// A preset name or a machine file.
    Named(String),
    /// A copy of a sysfs tree.
    Sysfs(PathBuf),
    /// This computer: /sys, and the architecture this binary was built for
    /// (the file-based guess can be fooled by virtual machines).
    Host,
}

fn topo(
    source: Option<MachineSource>,
    json: bool,
    config: String,
    list: bool,
    emit_machine: bool,
) -> Result<(), Failure> {
    if list {
        for n in schedlab_topo::PRESET_NAMES {
            outln!("{n}");
        }
        return Ok(());
    }
    // The machine, and the file --emit-machine prints: a preset's, a
    // file's or sysfs's own text with its ESTIMATE marks, or for a machine
    // with some CPUs offline the machine written out with the same marks.
    let (m, text) =
        match source {
            None => return Err(input(
                "topo: give a MACHINE (preset name or file), --host or --sysfs-root DIR, or --list",
            )),
            Some(MachineSource::Named(name)) => {
                let m = schedlab_topo::resolve_machine(&name).map_err(|e| input(e.to_string()))?;
                let text = if emit_machine {
                    schedlab_topo::emit_machine_text(&name).map_err(|e| input(e.to_string()))?
                } else {
                    String::new()
                };
                (m, text)
            }
            Some(MachineSource::Sysfs(root)) => {
                let text =
                    schedlab_topo::sysfs_machine_text(&root).map_err(|e| input(e.to_string()))?;
                let m = schedlab_topo::load_machine_str(&text, &root.display().to_string())
                    .map_err(|e| input(e.to_string()))?;
                (m, text)
            }
            Some(MachineSource::Host) => {
                let text = schedlab_topo::host_machine_text().map_err(|e| input(e.to_string()))?;
                let m = schedlab_topo::load_machine_str(&text, "/sys")
                    .map_err(|e| input(e.to_string()))?;
                (m, text)
            }
        };
    if emit_machine {
        emit(&text);
        return Ok(());
    }
    let cfg = configs::resolve(&config, m.arch).map_err(input)?;
    let d = schedlab_topo::build_domains(&m, &cfg.domains).map_err(|e| input(e.to_string()))?;
    if json {
        let v = schedlab_topo::topo_json(&m, &d);
        outln!(
            "{}",
            serde_json::to_string_pretty(&v).context("serialising")?
        );
    } else {
        emit(&schedlab_topo::format_topo(&m, &d));
    }
    Ok(())
}

/// `FROM_MS..TO_MS` (milliseconds, fractions allowed, either side optional)
/// as nanoseconds.
fn parse_window_ms(w: &str) -> Option<(u64, u64)> {
    let (a, b) = w.split_once("..")?;
    let ms = |x: &str, default: u64| -> Option<u64> {
        let x = x.trim();
        if x.is_empty() {
            return Some(default);
        }
        let v: f64 = x.parse().ok()?;
        (0.0..1.8e13).contains(&v).then(|| (v * 1e6).round() as u64)
    };
    let (from, to) = (ms(a, 0)?, ms(b, u64::MAX)?);
    (from <= to).then_some((from, to))
}

/// Where and how `run --trace` writes its trace.
/// Trace events kept by default, and at most (`--trace-limit`).
const DEFAULT_TRACE_LIMIT: usize = 5_000_000;
const MAX_TRACE_LIMIT: usize = 50_000_000;

struct TraceOut {
    path: PathBuf,
    format: TraceFormat,
    limit: usize,
    /// Simulated time to record, ns.
    from_ns: u64,
    to_ns: u64,
    /// Record power:cpu_idle too.
    cpu_idle: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum TraceFormat {
    Perfetto,
    Ftrace,
}

impl TraceOut {
    fn new(
        path: Option<PathBuf>,
        format: Option<String>,
        limit: Option<usize>,
        window: Option<String>,
        cpu_idle: bool,
    ) -> Result<Option<TraceOut>, Failure> {
        let Some(path) = path else {
            if let Some(f) = format {
                return Err(input(format!("--trace-format {f}: no --trace FILE given")));
            }
            if let Some(l) = limit {
                return Err(input(format!("--trace-limit {l}: no --trace FILE given")));
            }
            if cpu_idle {
                return Err(input("--trace-idle: no --trace FILE given"));
            }
            if let Some(w) = window {
                return Err(input(format!("--trace-window {w}: no --trace FILE given")));
            }
            return Ok(None);
        };
        // A kept event takes about 47 bytes until the file is written.
        let limit = limit.unwrap_or(DEFAULT_TRACE_LIMIT);
        if limit > MAX_TRACE_LIMIT {
            return Err(input(format!(
                "--trace-limit {limit}: at most {MAX_TRACE_LIMIT} (about 47 bytes each, kept in memory until the run ends)"
            )));
        }
        let (from_ns, to_ns) = match &window {
            Some(w) => parse_window_ms(w).ok_or_else(|| {
                input(format!(
                    "--trace-window {w}: expected FROM_MS..TO_MS with FROM <= TO, e.g. 500..750"
                ))
            })?,
            None => (0, u64::MAX),
        };
        let format = match format.as_deref() {
            Some("perfetto") => TraceFormat::Perfetto,
            Some("ftrace") => TraceFormat::Ftrace,
            Some(other) => {
                return Err(input(format!(
                    "--trace-format {other}: unknown format (perfetto, ftrace)"
                )))
            }
            None if path
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("txt")) =>
            {
                TraceFormat::Ftrace
            }
            None => TraceFormat::Perfetto,
        };
        if limit == 0 {
            return Err(input("--trace-limit 0: must keep at least one event"));
        }
        Ok(Some(TraceOut {
            path,
            format,
            limit,
            from_ns,
            to_ns,
            cpu_idle,
        }))
    }

    /// Writes the simulation's recorded trace (through a temporary file, so
    /// a failure leaves no partial trace).
    fn write(&self, sim: &Sim) -> Result<(), Failure> {
        schedlab_report::write_atomically(&self.path, |file| {
            let mut w = std::io::BufWriter::new(file);
            match self.format {
                TraceFormat::Perfetto => schedlab_engine::trace::write_perfetto(sim, &mut w),
                TraceFormat::Ftrace => schedlab_engine::trace::write_ftrace_text(sim, &mut w),
            }?;
            std::io::Write::flush(&mut w)
        })
        .map_err(written)?;
        if let Some(tr) = sim.trace.as_deref() {
            outln!(
                "  trace: {} events written to {}{}",
                tr.records.len(),
                self.path.display(),
                if tr.dropped > 0 {
                    format!(
                        " ({} later events dropped: --trace-limit {} reached at {:.3} ms)",
                        tr.dropped,
                        self.limit,
                        tr.last_ts_ns() as f64 / 1e6
                    )
                } else {
                    String::new()
                }
            );
            if self.from_ns > 0 && self.from_ns >= sim.now {
                outln!(
                    "  trace: the window starts at {:.3} ms, after the run ended at {:.3} ms",
                    self.from_ns as f64 / 1e6,
                    sim.now as f64 / 1e6
                );
            }
        }
        Ok(())
    }
}

/// Where a workload may run, like numactl's options.
#[derive(clap::Args, Clone, Debug)]
struct Placement {
    /// Restrict the workload to these CPUs (kernel list syntax, like numactl -C).
    #[arg(long)]
    cpus: Option<String>,
    /// Put the workload's memory on this NUMA node (numactl -m).
    #[arg(long, allow_negative_numbers = true)]
    mem_node: Option<u32>,
}

impl Placement {
    /// Checks both options against `m`; returns the CPUs of `m` in the list
    /// (`None` = all).
    fn affinity(&self, m: &schedlab_topo::Machine) -> Result<Option<CpuMask>, Failure> {
        if let Some(n) = self.mem_node {
            if !m.nodes.iter().any(|x| x.id == n) {
                return Err(input(format!(
                    "--mem-node {n}: {} has no such node",
                    m.name
                )));
            }
        }
        let Some(list) = &self.cpus else {
            return Ok(None);
        };
        if list.trim().is_empty() {
            return Err(input(format!("--cpus '{list}': empty CPU list")));
        }
        let mask = CpuMask::parse_list(list).ok_or_else(|| {
            input(format!(
                "--cpus '{list}': not a CPU list like 0-3,8 (CPUs below {MAX_CPUS})"
            ))
        })?;
        let all = m.all_cpus();
        if let Some(c) = mask.iter().find(|&c| !all.test(c)) {
            return Err(input(format!(
                "--cpus '{list}': {} has no CPU {c} (CPUs {})",
                m.name,
                all.to_list_string()
            )));
        }
        Ok(Some(mask))
    }
}

/// Arguments of `schedlab reproduce`.
#[derive(clap::Args)]
struct ReproduceArgs {
    /// Experiments to run (all when none is named).
    names: Vec<String>,
    /// Fewer repetitions and shorter runs (still honest) for CI and smoke tests.
    #[arg(long)]
    quick: bool,
    /// Directory for results.json, the tables and plots/ (SVG; the plots a
    /// previous run wrote there are replaced, other files kept).
    #[arg(long, default_value = "results")]
    out: PathBuf,
    /// Also write results.json here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Print one experiment name per line and exit.
    #[arg(long, conflicts_with = "names")]
    list: bool,
    /// Base seed; each repetition derives its own.
    #[arg(long, allow_negative_numbers = true, default_value_t = 1)]
    seed: u64,
    /// Repetitions per point and configuration, overriding each
    /// experiment's own (1 to 1000); the first N of a larger count are
    /// the same runs, as each repetition's seed depends only on its index.
    #[arg(long, allow_negative_numbers = true)]
    reps: Option<usize>,
    /// Check scheduler invariants after every event (slow).
    #[arg(long)]
    checked: bool,
    /// Switch a feature in every configuration of every experiment:
    /// NAME=on|off (repeatable; `schedlab features` lists them). The tables
    /// keep the configurations' names; the banner and results.json record
    /// the switches.
    #[arg(long = "feature")]
    features: Vec<String>,
    /// Set a tunable in every configuration of every experiment:
    /// NAME=VALUE, e.g. domains/PKG/busy_factor=64 (repeatable; `schedlab
    /// tunables` lists them).
    #[arg(long = "tunable")]
    tunables: Vec<String>,
    #[command(flatten)]
    edits: EditArgs,
    #[command(flatten)]
    sensitivity: SensitivityArgs,
}

/// `reproduce` and `compare`'s `--feature` and `--tunable` as the switches
/// appended to every configuration, features first: a `--feature` must name
/// a feature, and no switch may hold the `+` that separates them.
fn config_switches(features: &[String], tunables: &[String]) -> Result<Vec<String>, Failure> {
    if let Some(s) = features.iter().chain(tunables).find(|s| s.contains('+')) {
        return Err(input(format!(
            "switch '{s}': '+' separates the switches of a configuration; give each with its own --feature or --tunable"
        )));
    }
    for f in features {
        schedlab_engine::Features::default()
            .apply(f)
            .map_err(|e| input(format!("--feature {f}: {e}")))?;
    }
    Ok(features
        .iter()
        .chain(tunables)
        .map(|x| x.trim().to_string())
        .collect())
}

/// The `--feature` switches that change none of the configurations whose
/// features are `bases` (each switch applied after the ones before it, as
/// the configurations take them): compare and reproduce say so, as `run`
/// does, rather than take them silently.
fn unchanged_features(features: &[String], bases: &[schedlab_engine::Features]) -> Vec<String> {
    features
        .iter()
        .enumerate()
        .filter(|(i, f)| {
            bases.iter().all(|b| {
                let mut before = b.clone();
                for g in &features[..*i] {
                    let _ = before.apply(g);
                }
                let mut after = before.clone();
                let _ = after.apply(f);
                after == before
            })
        })
        .map(|(_, f)| f.trim().to_string())
        .collect()
}

/// `--machine-edit`, shared by reproduce, compare and run.
#[derive(clap::Args)]
struct EditArgs {
    /// Change one number of the machine before loading it: PATH*FACTOR
    /// scales it, PATH=VALUE sets it, PATH=true/false sets a switch
    /// (repeatable). PATH is the machine file's dotted key
    /// (docs/machine-format.md), e.g. wakeup.ipi_ns*2 or c2c.cluster_ns=50;
    /// a table array (core_type, cache, link, node, core_group, cpu,
    /// idle_state) applies it to every element, a number picks one
    /// (core_type.0.capacity*0.9, idle_state.3.disabled=false). Results
    /// record the edits.
    #[arg(long = "machine-edit", value_name = "EDIT")]
    edits: Vec<String>,
}

impl EditArgs {
    /// Parses the edits and loads every machine with them, so that bad
    /// edits fail before anything runs. An edit must change some number
    /// (give it a new value) in at least one of `machines` (in each, with
    /// one machine).
    fn check(&self, machines: &[&str]) -> Result<Vec<MachineEdit>, Failure> {
        let edits = self
            .edits
            .iter()
            .map(|e| MachineEdit::parse(e))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| input(e.to_string()))?;
        if edits.is_empty() {
            return Ok(edits);
        }
        let mut seen: Vec<&str> = machines.to_vec();
        seen.sort_unstable();
        seen.dedup();
        let mut counts = vec![schedlab_topo::EditCount::default(); edits.len()];
        for m in &seen {
            let (_, n) = schedlab_topo::resolve_machine_edited(m, &edits, seen.len() == 1)
                .map_err(|e| input(e.to_string()))?;
            for (t, k) in counts.iter_mut().zip(n) {
                *t += k;
            }
        }
        if let Some((e, n)) = edits.iter().zip(&counts).find(|(_, n)| n.changed == 0) {
            let machines = seen.join(", ");
            return Err(input(if n.matched == 0 {
                format!(
                    "--machine-edit '{e}': no such number in any machine of this run ({machines})"
                )
            } else {
                format!(
                    "--machine-edit '{e}' changes nothing in any machine of this run \
                     ({machines}): every number it names keeps its value"
                )
            }));
        }
        Ok(edits)
    }
}

/// The edits as the user wrote them (results.json, run --json).
fn edit_texts(edits: &[MachineEdit]) -> Vec<String> {
    edits.iter().map(|e| e.text.clone()).collect()
}

/// The edits as the user wrote them, comma-separated.
fn edits_list(edits: &[MachineEdit]) -> String {
    edit_texts(edits).join(", ")
}

/// `x` to about three significant digits (0.0417 → "0.042", 157.8 → "158").
fn three_digits(x: f64) -> String {
    let decimals = match x.abs() {
        a if a >= 100.0 => 0,
        a if a >= 10.0 => 1,
        a if a >= 1.0 => 2,
        _ => 3,
    };
    format!("{x:.decimals$}")
}

/// The experiments that took most of a run's simulation time (wall-clock
/// seconds summed over their simulations), for the closing line of
/// `reproduce`, e.g. "; most simulation time: power10-pipe 27%, ...". Empty
/// for a single experiment.
fn heaviest_text(spent: &std::collections::BTreeMap<String, f64>) -> String {
    let total: f64 = spent.values().sum();
    if spent.len() < 2 || total <= 0.0 {
        return String::new();
    }
    let mut by_time: Vec<(&String, f64)> = spent.iter().map(|(n, &s)| (n, s)).collect();
    by_time.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    let top: Vec<String> = by_time
        .iter()
        .take(3)
        .map(|(n, s)| format!("{n} {:.0}%", s / total * 100.0))
        .collect();
    format!("; most simulation time: {}", top.join(", "))
}

/// The first lines of a report made with machine edits.
fn edits_banner(edits: &[MachineEdit]) -> String {
    if edits.is_empty() {
        return String::new();
    }
    format!(
        "== Machine edits: {} (each machine that has the number; not the presets' values)\n\n",
        edits_list(edits)
    )
}

/// The edits that change something in `machine` (with `reproduce`, an edit
/// needs to hold in one experiment's machine only).
fn applied_edits(machine: &str, edits: &[MachineEdit]) -> Vec<MachineEdit> {
    let Ok((_, counts)) = schedlab_topo::resolve_machine_edited(machine, edits, false) else {
        return edits.to_vec();
    };
    edits
        .iter()
        .zip(&counts)
        .filter(|(_, c)| c.matched > 0)
        .map(|(e, _)| e.clone())
        .collect()
}

/// " (edited: ...)" after a machine's name, or nothing.
fn edited_suffix(edits: &[MachineEdit]) -> String {
    if edits.is_empty() {
        return String::new();
    }
    format!(" (edited: {})", edits_list(edits))
}

/// `--sensitivity`, shared by reproduce and compare.
#[derive(clap::Args)]
struct SensitivityArgs {
    /// After the runs, rerun once per number that the machine files mark
    /// ESTIMATE, divided and multiplied by --sensitivity-factor, and report
    /// which shape verdicts change and how far the changes move.
    #[arg(long)]
    sensitivity: bool,
    /// The factor of --sensitivity (greater than 1, at most 100; default 2).
    #[arg(long, value_name = "F")]
    sensitivity_factor: Option<f64>,
    /// Vary these machine-file paths instead of the ESTIMATE ones
    /// (comma-separated, e.g. wakeup.ipi_ns,c2c.llc_ns), wherever a machine
    /// has them, measured or not. Implies --sensitivity.
    #[arg(long, value_name = "PATHS", value_delimiter = ',')]
    sensitivity_keys: Vec<String>,
}

impl SensitivityArgs {
    /// The factor of --sensitivity.
    fn factor(&self) -> f64 {
        self.sensitivity_factor.unwrap_or(2.0)
    }

    /// The chosen paths of --sensitivity-keys, if any.
    fn keys(&self) -> Option<&[String]> {
        (!self.sensitivity_keys.is_empty()).then_some(&self.sensitivity_keys[..])
    }

    /// The edited reruns, if asked for (bad factors and machines that cannot
    /// be read fail here, before anything runs).
    fn plan(
        &self,
        defs: &[experiments::ExperimentDef],
        base_edits: &[MachineEdit],
    ) -> Result<Option<sensitivity::Plan>, Failure> {
        let f = self.factor();
        if !(f > 1.0 && f <= 100.0) {
            let shown = if f.abs() < 1e9 {
                f.to_string()
            } else {
                format!("{f:e}")
            };
            return Err(input(format!(
                "--sensitivity-factor {shown}: must be greater than 1 and at most 100"
            )));
        }
        let keys = self.keys();
        if !self.sensitivity && keys.is_none() {
            if self.sensitivity_factor.is_some() {
                return Err(input(
                    "--sensitivity-factor: only with --sensitivity or --sensitivity-keys"
                        .to_string(),
                ));
            }
            return Ok(None);
        }
        for k in keys.unwrap_or_default() {
            MachineEdit::parse(&format!("{k}*2")).map_err(|_| {
                input(format!(
                    "--sensitivity-keys '{k}': not a machine-file path such as wakeup.ipi_ns"
                ))
            })?;
        }
        let plan = sensitivity::plan(defs, base_edits, f, keys).map_err(input)?;
        // Every chosen key must be a number of some machine of the run (a
        // table or a string, or a typo, would only be skipped).
        for k in keys.unwrap_or_default() {
            let prefix = format!("{k}*");
            if plan.edits.iter().any(|e| e.edit.text.starts_with(&prefix)) {
                continue;
            }
            match plan.skipped.iter().find(|s| s.0.starts_with(&prefix)) {
                Some((_, machine, why)) if why.contains("not a number") => {
                    return Err(input(format!(
                        "--sensitivity-keys {k}: not a number in {machine}'s machine file"
                    )));
                }
                Some(_) => {}
                None if keys.is_some_and(|ks| ks.len() > 1) => {
                    return Err(input(format!(
                        "--sensitivity-keys {k}: no machine of this run has it"
                    )));
                }
                None => {}
            }
        }
        if keys.is_some() && plan.edits.is_empty() && plan.skipped.is_empty() {
            return Err(input(format!(
                "--sensitivity-keys {}: no machine of this run has any of them",
                self.sensitivity_keys.join(",")
            )));
        }
        Ok(Some(plan))
    }

    /// Runs the plan: its results.json entries and its report section.
    fn run(
        &self,
        plan: Option<&sensitivity::Plan>,
        defs: &[experiments::ExperimentDef],
        base: &[schedlab_report::ExperimentResult],
        opts: &experiments::Options,
        progress: experiments::Progress,
    ) -> Result<Option<(Vec<schedlab_report::SensitivityEntry>, String)>, Failure> {
        let Some(plan) = plan else {
            return Ok(None);
        };
        let outcomes = sensitivity::run(defs, plan, opts, progress)
            .map_err(|e| Failure::Internal(anyhow::anyhow!(e)))?;
        let entries = sensitivity::entries(defs, base, plan, &outcomes);
        let text = sensitivity::render(defs, &entries, self.factor(), self.keys());
        Ok(Some((entries, text)))
    }
}

/// Arguments of `schedlab compare`.
#[derive(clap::Args)]
struct CompareArgs {
    /// A preset name, a machine file, or `host` (this computer, from /sys).
    #[arg(long)]
    machine: String,
    /// Built-in workload spec or rt-app JSON file.
    #[arg(long)]
    workload: String,
    /// A configuration, baseline first (repeatable): NAME or
    /// NAME+FEATURE=on|off[+FEATURE=on|off...].
    #[arg(long = "config", required = true)]
    configs: Vec<String>,
    /// Switch a feature in every --config: NAME=on|off (repeatable).
    #[arg(long = "feature")]
    features: Vec<String>,
    /// Set a tunable in every --config: NAME=VALUE (repeatable).
    #[arg(long = "tunable")]
    tunables: Vec<String>,
    /// Sweep one workload key, one point per value: KEY=V1,V2,...
    #[arg(long)]
    sweep: Option<String>,
    /// Repetitions per point and configuration (each with its own seed).
    #[arg(long, allow_negative_numbers = true, default_value_t = 3)]
    reps: usize,
    /// Base seed; repetition r of point p gets the same seed under every config.
    #[arg(long, allow_negative_numbers = true, default_value_t = 1)]
    seed: u64,
    #[command(flatten)]
    place: Placement,
    /// Write results.json, tables.txt and plots/ here (the plots a previous
    /// run wrote there are replaced, other files kept).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Check scheduler invariants after every event (slow).
    #[arg(long)]
    checked: bool,
    #[command(flatten)]
    edits: EditArgs,
    #[command(flatten)]
    sensitivity: SensitivityArgs,
}

/// The points of `compare`: one per `--sweep` value (the key appended to
/// the built-in spec), or the workload alone.
fn compare_points(
    a: &CompareArgs,
    m: &schedlab_topo::Machine,
    affinity: Option<CpuMask>,
) -> Result<Vec<experiments::Point>, Failure> {
    let point = |spec: &str, params: schedlab_report::Params| {
        let workload = Builtin::resolve(spec, m).map_err(|e| input(e.to_string()))?;
        workload
            .check_affinity(affinity)
            .map_err(|e| input(format!("{spec}: {e}")))?;
        Ok(experiments::Point {
            params,
            spec: spec.to_string(),
            workload,
            affinity,
            mem_node: a.place.mem_node,
        })
    };
    let Some(sweep) = &a.sweep else {
        return Ok(vec![point(&a.workload, schedlab_report::Params::new())?]);
    };
    let (key, values) = sweep
        .split_once('=')
        .filter(|(k, v)| !k.trim().is_empty() && !v.trim().is_empty())
        .ok_or_else(|| input(format!("--sweep '{sweep}': expected KEY=V1,V2,...")))?;
    let key = key.trim();
    if Builtin::names_file(&a.workload) || std::path::Path::new(&a.workload).is_file() {
        return Err(input(format!(
            "--sweep {key}: only built-in workloads have keys to sweep ({} is a file)",
            a.workload
        )));
    }
    let (name, keys) = a.workload.split_once(':').unwrap_or((&a.workload, ""));
    if keys
        .split(',')
        .any(|kv| kv.split('=').next().map(str::trim) == Some(key))
    {
        return Err(input(format!(
            "--sweep {key}: already set in --workload {}",
            a.workload
        )));
    }
    if values.split(',').any(|v| v.trim().is_empty()) {
        return Err(input(format!(
            "--sweep '{sweep}': an empty value (expected KEY=V1,V2,...)"
        )));
    }
    // Each value once: a repeated point would pool the same seeds' runs.
    let mut seen = std::collections::BTreeSet::new();
    if let Some(v) = values.split(',').map(str::trim).find(|v| !seen.insert(*v)) {
        return Err(input(format!("--sweep {key}: value {v} given twice")));
    }
    values
        .split(',')
        .map(|v| {
            let v = v.trim();
            let spec = if keys.is_empty() {
                format!("{name}:{key}={v}")
            } else {
                format!("{name}:{keys},{key}={v}")
            };
            let value = v
                .parse::<u64>()
                .map_or_else(|_| serde_json::json!(v), |n| serde_json::json!(n));
            point(&spec, schedlab_report::params([(key, value)]))
        })
        .collect()
}

/// `schedlab compare`: an ad hoc experiment over the given configurations.
fn compare(a: CompareArgs) -> Result<(), Failure> {
    let machine_edits = a.edits.check(&[a.machine.as_str()])?;
    let (m, _) = schedlab_topo::resolve_machine_edited(&a.machine, &machine_edits, true)
        .map_err(|e| input(e.to_string()))?;
    if !(1..=1000).contains(&a.reps) {
        return Err(input(format!("--reps {}: must be 1 to 1000", a.reps)));
    }
    // Each configuration once: a repeated one would pool the same seeds' runs.
    let mut seen = std::collections::BTreeSet::new();
    if let Some(c) = a.configs.iter().find(|c| !seen.insert(c.trim())) {
        return Err(input(format!("--config {c}: given twice")));
    }
    let switches = config_switches(&a.features, &a.tunables)?;
    let mut bases = Vec::new();
    for c in &a.configs {
        bases.push(configs::resolve(c, m.arch).map_err(input)?.features);
        let cfg = configs::resolve(&configs::with_switches(c, &switches), m.arch).map_err(input)?;
        configs::check_machine(&cfg, &m).map_err(input)?;
        schedlab_topo::build_domains(&m, &cfg.domains)
            .map_err(|e| input(format!("--config {c}: {e}")))?;
    }
    let affinity = a.place.affinity(&m)?;
    let points = compare_points(&a, &m, affinity)?;
    if let Some(out) = &a.out {
        check_out_dir("--out", out)?;
        for (flag, input_path) in [("--machine", &a.machine), ("--workload", &a.workload)] {
            let p = Path::new(input_path);
            if p.is_file() && in_dir_outputs(out, p) {
                return Err(input(format!(
                    "--out {}: would overwrite the {flag} file {input_path}",
                    out.display()
                )));
            }
        }
    }
    let setup = format!(
        "{}{} on {}{}{}{}",
        a.workload,
        a.sweep
            .as_deref()
            .map_or(String::new(), |s| format!(", sweeping {s}")),
        a.machine,
        edited_suffix(&machine_edits),
        a.place
            .cpus
            .as_deref()
            .map_or(String::new(), |c| format!(", CPUs {c}")),
        a.place
            .mem_node
            .map_or(String::new(), |n| format!(", memory node {n}")),
    );
    let def = experiments::ExperimentDef {
        name: "compare".into(),
        machine: a.machine.clone(),
        workload: points[0].workload.name().into(),
        configs: a.configs.clone(),
        // Every metric the workload reports with a known direction.
        metrics: Vec::new(),
        points,
        repetitions: a.reps,
        setup,
        wakeup_notes: false,
    };
    let defs = std::slice::from_ref(&def);
    let plan = a.sensitivity.plan(defs, &machine_edits)?;
    // The outermost directory this command creates for --out (removed
    // again, with what it made inside, when nothing is written there).
    let out_created = a.out.as_ref().and_then(|o| {
        o.ancestors()
            .take_while(|p| !p.as_os_str().is_empty() && !p.exists())
            .last()
            .map(Path::to_path_buf)
    });
    if let Some(out) = &a.out {
        make_out_dir("--out", out)?;
    }
    let total = (def.points.len() * def.configs.len() * def.repetitions) as u64
        + plan.as_ref().map_or(0, |p| p.runs(defs));
    let pb = progress_bar(total);
    let opts = experiments::Options {
        quick: false,
        seed: a.seed,
        checked: a.checked || cfg!(debug_assertions),
        machine_edits: machine_edits.clone(),
        config_switches: switches.clone(),
    };
    let tick = |_: &str, _: f64| pb.inc(1);
    let results = experiments::run_all(defs, &opts, &tick)
        .map_err(|e| Failure::Internal(anyhow::anyhow!(e)))?;
    let sens = a
        .sensitivity
        .run(plan.as_ref(), defs, &results, &opts, &tick)?;
    pb.finish_and_clear();
    let r = &results[0];
    let mut text = format!(
        "== compare: {} ({}, seed {}{})\n",
        def.setup,
        counted(def.repetitions, "repetition"),
        a.seed,
        if switches.is_empty() {
            String::new()
        } else {
            format!("; in every configuration: {}", switches.join(", "))
        }
    );
    text.push_str(&render_experiment(r, &TableOptions::default()));
    text.push('\n');
    for n in &r.notes {
        text.push_str(&format!("note: {n}\n"));
    }
    for f in unchanged_features(&a.features, &bases) {
        text.push_str(&format!(
            "note: --feature {f} changes nothing: every configuration has it so already\n"
        ));
    }
    if let Some((_, t)) = &sens {
        text.push('\n');
        text.push_str(t);
    }
    emit(&text);
    // As `run`: a workload that exited (rt-app's exit on a failed system
    // call) is reported, then the command fails.
    let exited: Vec<String> = r
        .notes
        .iter()
        .filter(|n| n.contains(experiments::EXITED_NOTE))
        .cloned()
        .collect();
    let runs = def.repetitions * a.configs.len() * def.points.len();
    // Exit status 2 leaves no output file behind (contract.md): the report
    // above is all there is.
    if let (Some(out), true) = (&a.out, exited.is_empty()) {
        let mut res = Results::new(env!("CARGO_PKG_VERSION"));
        res.experiments = results;
        res.machine_edits = edit_texts(&machine_edits);
        res.config_switches = switches;
        res.sensitivity = sens.map(|(e, _)| e).unwrap_or_default();
        std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
        res.write_json(&out.join("results.json"))
            .map_err(write_failed)?;
        write_text(&out.join("tables.txt"), &text)?;
        let n = write_plots(&res, &out.join("plots"), true)?;
        eprintln!(
            "(results.json, tables.txt and {} in {})",
            counted(n, "plot"),
            out.display()
        );
    }
    if let Some(first) = exited.first() {
        if let (Some(out), Some(top)) = (&a.out, &out_created) {
            // Only the empty directories it made go (remove_dir() refuses
            // others), innermost first.
            for d in out.ancestors() {
                if std::fs::remove_dir(d).is_err() || d == top.as_path() {
                    break;
                }
            }
        }
        let unwritten = a
            .out
            .as_ref()
            .map(|o| format!(" (nothing written to {})", o.display()))
            .unwrap_or_default();
        return Err(input(format!(
            "{} of {} stopped as the workload exited{unwritten}; first: {first}",
            exited.len(),
            counted(runs, "run")
        )));
    }
    Ok(())
}

/// The tunables of a run as its JSON report lists them: the engine's
/// values as the kernel's files would read, relax_domain_level and the
/// per-domain writes.
fn run_tunables_json(cfg: &configs::RunConfig, ncpus: usize) -> serde_json::Value {
    let mut m: serde_json::Map<String, serde_json::Value> = cfg
        .tunables
        .list(ncpus, cfg.hz)
        .into_iter()
        .map(|(n, v)| (n.to_string(), serde_json::json!(v)))
        .collect();
    m.insert(
        "relax_domain_level".into(),
        cfg.domains.relax_domain_level.into(),
    );
    let writes: Vec<String> = cfg.domains.sd_tunables.iter().map(|t| t.text()).collect();
    m.insert("domains".into(), writes.into());
    m.into()
}

#[allow(clippy::too_many_arguments)]
fn run(
    machine: String,
    workload: String,
    config: String,
    features: Vec<String>,
    tunables: Vec<String>,
    seed: u64,
    place: Placement,
    json: Option<PathBuf>,
    checked: bool,
    edits: EditArgs,
    trace: Option<TraceOut>,
) -> Result<(), Failure> {
    let machine_edits = edits.check(&[machine.as_str()])?;
    let (m, _) = schedlab_topo::resolve_machine_edited(&machine, &machine_edits, true)
        .map_err(|e| input(e.to_string()))?;
    let mut cfg = configs::resolve(&config, m.arch).map_err(input)?;
    // A switch to the value the configuration has already is said, not
    // silently taken (HRTICK=on on x86, where 7.3 builds have it on).
    let mut unchanged = Vec::new();
    for f in &features {
        let before = cfg.features.clone();
        cfg.features.apply(f).map_err(input)?;
        if cfg.features == before {
            unchanged.push(f.trim().to_string());
        }
    }
    for t in &tunables {
        configs::apply_switch(&mut cfg, t).map_err(input)?;
    }
    configs::check_machine(&cfg, &m).map_err(input)?;
    // The configuration as run: --config with each --feature and --tunable
    // appended in order (as `--config` itself would take them).
    let config = configs::with_switches(
        &config,
        &features.iter().chain(&tunables).collect::<Vec<_>>(),
    );
    // A built-in spec, or an rt-app JSON file (errors name the JSON path).
    let w = Builtin::resolve(&workload, &m).map_err(|e| input(e.to_string()))?;
    let affinity = place.affinity(&m)?;
    let d = schedlab_topo::build_domains(&m, &cfg.domains).map_err(|e| input(e.to_string()))?;
    let json_to_stdout = json.as_deref() == Some(Path::new("-"));
    if let Some(j) = json.as_deref().filter(|_| !json_to_stdout) {
        check_out_file("--json", j)?;
    }
    if let Some(t) = &trace {
        if t.path == Path::new("-") {
            return Err(input(
                "--trace -: a trace is written to a file (only --json takes - for stdout)"
                    .to_string(),
            ));
        }
        check_out_file("--trace", &t.path)?;
    }
    // No output may overwrite another output or an input file.
    let outputs: Vec<(&str, &Path)> = json
        .as_deref()
        .filter(|_| !json_to_stdout)
        .map(|j| ("--json", j))
        .into_iter()
        .chain(trace.as_ref().map(|t| ("--trace", t.path.as_path())))
        .collect();
    let inputs = [
        ("--machine", Path::new(&machine)),
        ("--workload", Path::new(&workload)),
    ];
    check_distinct_files(&outputs, &inputs)?;
    w.check_affinity(affinity)
        .map_err(|e| input(format!("{workload}: {e}")))?;
    let spec = w.build(affinity, place.mem_node);
    let sim_cfg = SimConfig {
        seed,
        features: cfg.features.clone(),
        tunables: cfg.tunables.clone(),
        hz: cfg.hz,
        checked: checked || cfg!(debug_assertions),
        ..SimConfig::default()
    };
    if json_to_stdout {
        REPORT_TO_STDERR.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    let mut sim = Sim::new(m, d, spec, sim_cfg);
    w.attach(&mut sim);
    if let Some(t) = &trace {
        sim.enable_trace_window(t.limit, t.from_ns, t.to_ns);
        if let Some(tr) = sim.trace.as_deref_mut() {
            tr.cpu_idle = t.cpu_idle;
        }
    }
    let spinner = run_spinner();
    // About 30 ms of wall time between updates at the engine's usual speed.
    let stop = sim.run_with_progress(1 << 18, &mut |now_ns, events| {
        spinner.set_message(format!(
            "simulated {:.3} s, {events} events",
            now_ns as f64 / 1e9
        ));
        spinner.tick();
    });
    spinner.finish_and_clear();
    let metrics = w.metrics(&sim);
    emit(&w.report_sim(&sim, &metrics));
    let c = &sim.counters;
    outln!(
        "\nschedlab: {} on {}{} ({}), seed {}: {:?} after {:.3} ms simulated, {} events",
        w.name(),
        sim.machine.name,
        edited_suffix(&machine_edits),
        config,
        seed,
        stop,
        sim.now as f64 / 1e6,
        sim.events
    );
    if stop == StopReason::Livelock {
        if let Some(t) = sim.livelock_task {
            outln!(
                "  stopped: thread {} ran {} steps in a row that take no simulated time (a loop with no work in it, e.g. a lock and an unlock); results cover the run up to that instant",
                sim.tasks[t as usize].name,
                schedlab_engine::MAX_INSTANT_STEPS
            );
        } else {
            outln!(
                "  stopped: {} events or task switch-ins in a row without simulated time passing (a loop of steps that take no time, e.g. threads passing a barrier or a lock to each other with no work in between); results cover the run up to that instant",
                schedlab_engine::LIVELOCK_EVENTS
            );
        }
    }
    if stop == StopReason::Stalled {
        let parked = sim.parked_threads();
        let shown: Vec<String> = parked
            .iter()
            .take(8)
            .map(|(name, pc, step)| match step {
                Some(s) => {
                    // The objects as the workload's file names them.
                    let named: Vec<&str> = s
                        .sync_refs()
                        .into_iter()
                        .filter_map(|id| w.object_name(id))
                        .collect();
                    if named.is_empty() {
                        format!("{name} at step {pc} ({s:?})")
                    } else {
                        format!("{name} at step {pc} ({s:?}: {})", named.join(", "))
                    }
                }
                None => format!("{name} at step {pc}"),
            })
            .collect();
        let more = parked.len().saturating_sub(shown.len());
        outln!(
            "  stopped: every thread of the workload is blocked with no timer of its own, so none can run again (a deadlock in the workload, e.g. a suspend that nothing resumes); results cover the run up to that instant. Waiting: {}{}",
            shown.join(", "),
            if more > 0 { format!(" and {more} more") } else { String::new() }
        );
    }
    if stop == StopReason::Exited {
        outln!(
            "  stopped: the workload exited, as rt-app exits when a system call it needs fails: {}; results cover the run up to that instant",
            sim.exit_reason.as_deref().unwrap_or("a failed system call")
        );
    }
    for f in &unchanged {
        outln!("  note: --feature {f} changes nothing: the configuration has it so already");
    }
    if c.forks_failed > 0 {
        outln!(
            "  note: the run reached its cap of {} threads: {} forks failed (clone() fails, the parent goes on without the child); results lack those threads",
            sim.cfg.max_tasks,
            c.forks_failed
        );
    }
    outln!(
        "  wakeups {} (local {}, remote {}, of a delayed task still queued {}; affine {}), migrations {}, switches to a task {}, busy CPUs per busy cluster {:.2}",
        c.wakeups,
        c.wakeups_local,
        c.wakeups_remote,
        c.wakeups_delayed,
        c.wakeups_affine,
        c.migrations,
        c.context_switches,
        c.mean_cluster_corunners()
    );
    let idle_total_ns: u64 = c.idle_state_ns.iter().sum();
    if sim.machine.wakeup.idle_states.len() > 1 && idle_total_ns > 0 {
        let states: Vec<String> = sim
            .machine
            .wakeup
            .idle_states
            .iter()
            .zip(c.idle_state_ns.iter().zip(&c.idle_state_usage))
            .filter(|(st, (&ns, _))| !st.disabled || ns > 0)
            .map(|(st, (&ns, &n))| {
                format!(
                    "{} {:.1}% ({n} entries)",
                    st.name,
                    100.0 * ns as f64 / idle_total_ns as f64
                )
            })
            .collect();
        outln!(
            "  idle states (share of idle CPU time, entries): {}",
            states.join(", ")
        );
    }
    if c.lock_holder_preemptions > 0 || c.lock_steals > 0 {
        outln!(
            "  lock-holder preemptions {} (a task preempted while it owned a mutex), lock steals {} (a spinner took a released mutex from the waiter it woke)",
            c.lock_holder_preemptions,
            c.lock_steals
        );
    }
    if c.wake_q_preemptions > 0 {
        outln!(
            "  wakers switched out among their wakes {} (a broadcast or barrier release whose wakee preempted it before it woke the rest)",
            c.wake_q_preemptions
        );
    }
    if c.rt_pushes + c.rt_pulls + c.rt_rr_rotations + c.fair_server_runs > 0 {
        outln!(
            "  RT class: pushes {}, pulls {}, SCHED_RR slices rotated {}; fair server turns ahead of RT/deadline work {}",
            c.rt_pushes,
            c.rt_pulls,
            c.rt_rr_rotations,
            c.fair_server_runs
        );
    }
    if c.dl_throttles + c.dl_pushes + c.dl_pulls > 0 {
        outln!(
            "  deadline class: throttles {} (budget spent, a yield, or a constrained deadline passed), pushes {}, pulls {}",
            c.dl_throttles,
            c.dl_pushes,
            c.dl_pulls
        );
    }
    if c.pi_boosts > 0 {
        outln!(
            "  priority inheritance: {} (an owner of a PI mutex raised to a waiter's RT priority or deadline class)",
            counted(c.pi_boosts as usize, "boost")
        );
    }
    if c.timers_early > 0 {
        outln!(
            "  sleep timers expired inside their slack range by another hrtimer interrupt on their CPU: {}",
            c.timers_early
        );
    }
    if sim.cache.enabled {
        let (scans, switches) = sim
            .cache
            .groups
            .iter()
            .flatten()
            .fold((0, 0), |(a, b), g| (a + g.scans, b + g.switches));
        outln!(
            "  SCHED_CACHE: busy CPUs per busy LLC {:.2}, LLC migrations {}, migrate_llc_task moves {}, scans {}, preference switches {}",
            c.mean_llc_corunners(),
            sim.cache.llc_migrations,
            sim.cache.llc_task_moves,
            scans,
            switches
        );
    }
    for (i, l) in c.levels.iter().enumerate() {
        let serialized = if l.lb_serialized > 0 {
            format!(" skipped (SD_SERIALIZE) {}", l.lb_serialized)
        } else {
            String::new()
        };
        // Levels that share a name (the NUMA levels) are told apart by
        // their rank, the nearest first.
        let same = |x: &&schedlab_engine::stats::LevelCounters| x.name == l.name;
        let of = c.levels.iter().filter(same).count();
        let name = if of > 1 {
            let k = c.levels[..i].iter().filter(same).count() + 1;
            format!("{} {k}/{of}", l.name)
        } else {
            l.name.clone()
        };
        outln!(
            "  balance {:<10} attempts {:>8} moved {:>6}{serialized}",
            name,
            l.lb_count,
            l.lb_moved
        );
    }
    // A workload that exited makes the command exit with status 2, which
    // leaves no output file behind (contract.md); JSON to stdout is no file.
    let exited = stop == StopReason::Exited;
    if exited {
        let files: Vec<String> = trace
            .as_ref()
            .map(|t| t.path.display().to_string())
            .into_iter()
            .chain(
                json.as_ref()
                    .filter(|_| !json_to_stdout)
                    .map(|p| p.display().to_string()),
            )
            .collect();
        if !files.is_empty() {
            outln!(
                "  not written (the run exits with status 2): {}",
                files.join(", ")
            );
        }
    }
    if let Some(t) = trace.as_ref().filter(|_| !exited) {
        t.write(&sim)?;
    }
    if let Some(path) = json.filter(|_| !exited || json_to_stdout) {
        let tgids = schedlab_engine::trace::trace_tgids(&sim);
        let tasks: Vec<serde_json::Value> = sim
            .tasks
            .iter()
            .filter(|t| !t.kthread)
            .map(|t| {
                serde_json::json!({
                    // The trace's process pid less one, as tid is its pid less one.
                    "name": &*t.name, "pid": tgids[t.id as usize] - 1, "tid": t.id, "cpu_time_ns": t.stats.cpu_time_ns,
                    "wait_time_ns": t.stats.wait_time_ns, "migrations": t.stats.migrations,
                    "wakeups": t.stats.wakeups,
                    // schedstat extras: timeslices (pcount) and where wakeups landed.
                    "timeslices": t.stats.nr_switches,
                    "wakeups_local": t.stats.wakeups_local,
                    "wakeups_remote": t.stats.wakeups_remote,
                    "cpu": t.cpu,
                })
            })
            .collect();
        let cpus: Vec<serde_json::Value> = sim
            .rqs
            .iter()
            .map(|r| serde_json::json!({"cpu": r.cpu, "busy_ns": r.busy_ns, "idle_ns": r.idle_ns}))
            .collect();
        let metrics: serde_json::Map<String, serde_json::Value> = metrics
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::json!(v)))
            .collect();
        let mut v = serde_json::json!({
            "schema": "schedlab.run/1",
            "machine": sim.machine.name, "workload": workload, "config": config, "seed": seed,
            "sim_time_ns": sim.now, "events": sim.events, "stop": format!("{stop:?}"), "metrics": metrics,
            "tasks": tasks, "cpus": cpus, "counters": c, "hz": cfg.hz,
            "features": cfg.features.list().into_iter().map(|(n, o)| (n.to_string(), serde_json::json!(o))).collect::<serde_json::Map<_, _>>(),
            "tunables": run_tunables_json(&cfg, sim.nr_cpus()),
        });
        if !machine_edits.is_empty() {
            v["machine_edits"] = edit_texts(&machine_edits).into();
        }
        // The placement options, as results.json records them per point.
        if let Some(mask) = affinity {
            v["allowed_cpus"] = mask.to_list_string().into();
        }
        if let Some(n) = place.mem_node {
            v["mem_node"] = n.into();
        }
        let text = serde_json::to_string_pretty(&v).context("serialising")?;
        if json_to_stdout {
            emit_stdout(&format!("{text}\n"));
        } else {
            schedlab_report::write_atomically(&path, |f| {
                std::io::Write::write_all(f, text.as_bytes())
            })
            .map_err(written)?;
        }
    }
    if stop == StopReason::Exited {
        // rt-app exits with a failure: so does the run, after its report.
        return Err(input(format!(
            "{}: the workload exited: {}",
            w.name(),
            sim.exit_reason.as_deref().unwrap_or("a failed system call")
        )));
    }
    Ok(())
}

fn bench(quick: bool) -> Result<(), Failure> {
    let rows =
        schedlab_exp::bench::run(quick).map_err(|e| Failure::Internal(anyhow::anyhow!(e)))?;
    // The widest run name sets the first column.
    let w = rows.iter().map(|r| r.name.len()).max().unwrap_or(0).max(28);
    outln!(
        "{:<w$} {:>10} {:>10} {:>13} {:>10} {:>9} {:>9}",
        "run",
        "events",
        "sim ms",
        "events/s",
        "sim/wall",
        "setup ms",
        "run ms"
    );
    let (mut events, mut run_s) = (0u64, 0f64);
    for r in &rows {
        events += r.events;
        run_s += r.run_s;
        outln!(
            "{:<w$} {:>10} {:>10.1} {:>13.0} {:>10} {:>9.1} {:>9.1}",
            r.name,
            r.events,
            r.sim_ns as f64 / 1e6,
            r.events_per_s(),
            three_digits(r.sim_per_wall()),
            r.setup_s * 1e3,
            r.run_s * 1e3
        );
    }
    outln!(
        "total: {events} events in {run_s:.3} s of event loop = {:.0} events/s",
        events as f64 / run_s.max(1e-9)
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_closing_line_names_the_three_heaviest_experiments() {
        let spent: std::collections::BTreeMap<String, f64> =
            [("a", 1.0), ("b", 5.0), ("c", 2.0), ("d", 2.0)]
                .iter()
                .map(|&(n, s)| (n.to_string(), s))
                .collect();
        assert_eq!(
            super::heaviest_text(&spent),
            "; most simulation time: b 50%, c 20%, d 20%"
        );
        assert_eq!(
            super::heaviest_text(&spent.into_iter().take(1).collect()),
            ""
        );
    }

    #[test]
    fn bench_ratios_keep_three_digits() {
        assert_eq!(super::three_digits(0.0413), "0.041");
        assert_eq!(super::three_digits(0.0417), "0.042");
        assert_eq!(super::three_digits(2.5), "2.50");
        assert_eq!(super::three_digits(157.8), "158");
    }
}
