//! Import a machine from a sysfs tree, and write any machine back as a machine file.
//!
//! [`machine_from_sysfs`] reads what Linux exposes under `devices/system/cpu` and
//! `devices/system/node` (topology ids and sibling lists, caches, `cpu_capacity`,
//! `cpufreq/cpuinfo_max_freq`, `acpi_cppc/highest_perf`, node CPU lists and
//! distances). Missing files get defaults; a file that is present must parse and
//! be in range. sysfs says nothing about bandwidths, latencies or wake-up costs:
//! those are ESTIMATE defaults from the generic table of
//! `shared/reference/hardware.md` section 8, to be edited in the written file.
//!
//! The import goes through [`machine_to_toml`]'s text and the loader, so an
//! imported machine is validated exactly like a hand-written one.

use crate::cpumask::{CpuId, CpuMask, MAX_CPUS};
use crate::error::TopoError;
use crate::load::{
    load_machine_str, MAX_CACHE_BYTES, MAX_CACHE_LEVEL, MAX_DISTANCE, MAX_FREQ_MHZ, MAX_LINE_BYTES,
};
use crate::machine::{IdleState, Machine};
use std::fmt::Write as _;
use std::path::Path;

/// A sysfs file's trimmed text: `None` when the file is absent or its read
/// fails (the caller's default applies: a sysfs attribute whose read returns
/// an error, as `acpi_cppc/highest_perf` does on some virtual machines, or
/// one only root may read, tells nothing); an error naming the file when it
/// holds bytes that are not text.
fn read(root: &Path, path: &Path) -> Result<Option<String>, TopoError> {
    use std::io::Read as _;
    // A sysfs attribute is a regular file. A FIFO in its place would block
    // the open until some writer came, a device could read forever: refuse
    // them before opening. (A directory reads as a failed read, below.)
    match std::fs::metadata(path) {
        Err(_) => return Ok(None),
        Ok(md) if md.is_file() || md.is_dir() => {}
        Ok(md) => {
            return Err(bad_file(
                root,
                path,
                format!(
                    "{}, not a regular file: not a sysfs attribute",
                    special_kind(&md.file_type())
                ),
            ))
        }
    }
    let Ok(f) = std::fs::File::open(path) else {
        return Ok(None);
    };
    // sysfs attributes are at most a page; read one byte more to tell a
    // larger file (or a link to /dev/zero) from one.
    let mut bytes = Vec::new();
    if f.take(MAX_ATTR_BYTES + 1).read_to_end(&mut bytes).is_err() {
        return Ok(None);
    }
    if bytes.len() as u64 > MAX_ATTR_BYTES {
        return Err(bad_file(
            root,
            path,
            format!("more than {MAX_ATTR_BYTES} bytes: not a sysfs attribute"),
        ));
    }
    match String::from_utf8(bytes) {
        Ok(s) => Ok(Some(s.trim().to_string())),
        Err(e) => Err(bad_file(root, path, format!("cannot read: {e}"))),
    }
}

/// The most a sysfs attribute holds (a page).
const MAX_ATTR_BYTES: u64 = 4096;

/// What a file that is neither a regular file nor a directory is.
fn special_kind(t: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if t.is_fifo() {
            return "a named pipe (FIFO)";
        } else if t.is_socket() {
            return "a socket";
        } else if t.is_char_device() {
            return "a character device";
        } else if t.is_block_device() {
            return "a block device";
        }
    }
    let _ = t;
    "a special file"
}

/// An integer file, which must hold a value in `lo..=hi` when present.
fn read_int(root: &Path, path: &Path, lo: i64, hi: i64) -> Result<Option<i64>, TopoError> {
    let Some(s) = read(root, path)? else {
        return Ok(None);
    };
    let reason = match s.parse::<i128>() {
        Ok(v) if (i128::from(lo)..=i128::from(hi)).contains(&v) => return Ok(Some(v as i64)),
        Ok(_) => format!("{} is out of range {lo}..={hi}", shown(&s)),
        Err(_) => format!("{} is not an integer", shown(&s)),
    };
    Err(bad_file(root, path, reason))
}

/// A CPU list file (`0-3,8`), which must parse when present.
fn read_mask(root: &Path, path: &Path) -> Result<Option<CpuMask>, TopoError> {
    let Some(s) = read(root, path)? else {
        return Ok(None);
    };
    CpuMask::parse_list(&s).map(Some).ok_or_else(|| {
        bad_file(
            root,
            path,
            format!(
                "{} is not a CPU list such as 0-3,8 (CPUs below {MAX_CPUS})",
                shown(&s)
            ),
        )
    })
}

/// A list of the CPUs that share something with `cpu` (a sibling, cluster
/// or cache list), which must parse when present and, as the kernel's masks
/// always do, name `cpu` itself.
fn read_own_mask(root: &Path, path: &Path, cpu: CpuId) -> Result<Option<CpuMask>, TopoError> {
    let Some(m) = read_mask(root, path)? else {
        return Ok(None);
    };
    if m.is_empty() {
        return Err(bad_file(
            root,
            path,
            format!("is empty, but the kernel's list always names CPU {cpu} itself"),
        ));
    }
    if !m.test(cpu) {
        return Err(bad_file(
            root,
            path,
            format!(
                "{} does not name CPU {cpu} itself",
                shown(&m.to_list_string())
            ),
        ));
    }
    Ok(Some(m))
}

/// The error for a present but unusable file: the tree's root, the file's
/// path in it, and the reason.
fn bad_file(root: &Path, path: &Path, reason: String) -> TopoError {
    TopoError::invalid(
        &root.display().to_string(),
        path.strip_prefix(root)
            .unwrap_or(path)
            .display()
            .to_string(),
        reason,
    )
}

/// A file's content quoted for an error message: one line, at most 40 chars.
fn shown(s: &str) -> String {
    let mut t: String = s.chars().take(40).collect();
    if t.len() < s.len() {
        t.push_str("...");
    }
    format!("`{}`", t.escape_debug())
}

/// A quoted TOML string.
fn q(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// A float that TOML reads back to the same f64.
fn f(v: f64) -> String {
    let s = format!("{v:?}");
    if s.contains('.') || s.contains('e') || s.contains("inf") || s.contains("NaN") {
        s
    } else {
        format!("{s}.0")
    }
}

fn ids(list: &[CpuId]) -> String {
    CpuMask::from_cpus(list.iter().copied()).to_list_string()
}

/// Writes `m` as a machine file in the `[[cpu]]` form; loading the text gives back
/// an equal machine.
pub fn machine_to_toml(m: &Machine) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# Written by schedlab (machine_to_toml). Format: docs/machine-format.md"
    );
    let _ = writeln!(s, "name = {}", q(&m.name));
    let _ = writeln!(s, "description = {}", q(&m.description));
    let _ = writeln!(s, "arch = {}", q(m.arch.as_str()));
    for (ti, t) in m.core_types.iter().enumerate() {
        // Type defaults from its first CPU; other CPUs override when they differ.
        let first = m.cpus.iter().find(|c| c.core_type as usize == ti);
        let (cap, freq, prio) = first.map_or((1024, 1000, 0), |c| {
            (c.capacity, c.freq_max_mhz, c.asym_prio)
        });
        let _ = writeln!(s, "\n[[core_type]]");
        let _ = writeln!(s, "name = {}", q(&t.name));
        let _ = writeln!(s, "capacity = {cap}");
        let _ = writeln!(s, "freq_max_mhz = {freq}");
        let _ = writeln!(s, "smt_thread_speed = {}", f(t.smt_thread_speed));
        let _ = writeln!(s, "core_bw_bytes_per_s = {}", f(t.core_bw_bytes_per_s));
        let _ = writeln!(s, "asym_prio = {prio}");
    }
    for c in &m.cpus {
        let t = &m.core_types[c.core_type as usize];
        let first = m.cpus.iter().find(|x| x.core_type == c.core_type);
        let _ = writeln!(s, "\n[[cpu]]");
        let _ = writeln!(
            s,
            "id = {}\ncore = {}\ncluster = {}\nllc = {}\ndie = {}\npackage = {}\nnode = {}\ncore_type = {}",
            c.id,
            c.core,
            c.cluster,
            c.llc,
            c.die,
            c.package,
            c.node,
            q(&t.name)
        );
        if let Some(fc) = first {
            if fc.capacity != c.capacity {
                let _ = writeln!(s, "capacity = {}", c.capacity);
            }
            if fc.freq_max_mhz != c.freq_max_mhz {
                let _ = writeln!(s, "freq_max_mhz = {}", c.freq_max_mhz);
            }
            if fc.asym_prio != c.asym_prio {
                let _ = writeln!(s, "asym_prio = {}", c.asym_prio);
            }
        }
    }
    for c in &m.caches {
        let _ = writeln!(s, "\n[[cache]]");
        let _ = writeln!(
            s,
            "level = {}\nkind = {}\nsize = {}\nline_bytes = {}\ncpus = {}",
            c.level,
            q(&c.kind),
            c.size_bytes,
            c.line_bytes,
            q(&c.cpus.to_list_string())
        );
    }
    for n in &m.nodes {
        let _ = writeln!(s, "\n[[node]]");
        let _ = writeln!(
            s,
            "id = {}\nmem_bw_peak_bytes_per_s = {}\nmem_half_concurrency = {}\nmem_latency_ns = {}",
            n.id,
            f(n.mem_bw_peak_bytes_per_s),
            f(n.mem_half_concurrency),
            n.mem_latency_ns
        );
        if let (true, Some(p)) = (n.cpus.is_empty(), n.package) {
            let _ = writeln!(s, "package = {p}");
        }
    }
    if m.distance.len() > 1 {
        let rows: Vec<String> = m
            .distance
            .iter()
            .map(|r| {
                let v: Vec<String> = r.iter().map(|d| d.to_string()).collect();
                format!("  [{}],", v.join(", "))
            })
            .collect();
        let _ = writeln!(s, "\n[numa]\ndistance = [\n{}\n]", rows.join("\n"));
    }
    for l in &m.links {
        let _ = writeln!(s, "\n[[link]]");
        let _ = writeln!(
            s,
            "name = {}\ncpus = {}\nbw_bytes_per_s = {}",
            q(&l.name),
            q(&l.cpus.to_list_string()),
            f(l.bw_bytes_per_s)
        );
    }
    let c = &m.c2c;
    let _ = writeln!(
        s,
        "\n[c2c]\nsmt_ns = {}\ncluster_ns = {}\nllc_ns = {}\ndie_ns = {}\nnode_ns = {}\npackage_ns = {}\nremote_package_ns = {}",
        c.smt_ns, c.cluster_ns, c.llc_ns, c.die_ns, c.node_ns, c.package_ns, c.remote_package_ns
    );
    let w = &m.wakeup;
    let _ = writeln!(
        s,
        "\n[wakeup]\nipi_ns = {}\nwakeup_path_ns = {}\nbalance_pass_ns = {}\nbalance_pass_per_cpu_ns = {}\nbalance_refused_ns = {}",
        w.ipi_ns,
        w.wakeup_path_ns,
        w.balance_pass_ns,
        w.balance_pass_per_cpu_ns,
        w.balance_refused_ns
    );
    s.push_str(&idle_state_tables(&w.idle_states, ""));
    s
}

/// What a node directory says of its memory's performance, from the
/// firmware's HMAT (or CXL's CDAT) through `access1/initiators/` or
/// `access0/initiators/` (Documentation/admin-guide/mm/numaperf.rst): the
/// rated read bandwidth, MiB/s, and read latency, ns, seen from the node's
/// nearest initiators.
#[derive(Clone, Copy, Debug, Default)]
struct NodePerf {
    read_bw_mib_per_s: Option<u64>,
    read_latency_ns: Option<u64>,
    /// The directory read: `access1/initiators` (CPU initiators only),
    /// else `access0/initiators` (the best initiators, which may be a
    /// generic one such as a GPU).
    class: &'static str,
}

/// Reads a node's `read_bandwidth` and `read_latency` from
/// `access1/initiators` (the CPUs' view, what the model simulates) or,
/// without it, `access0/initiators` (absent on machines without an HMAT; 0
/// means not reported).
fn node_perf_of(root: &Path, dir: &Path) -> Result<NodePerf, TopoError> {
    let class = if dir.join("access1/initiators").is_dir() {
        "access1/initiators"
    } else {
        "access0/initiators"
    };
    let acc = dir.join(class);
    let positive = |v: Option<i64>| v.filter(|&x| x > 0).map(|x| x as u64);
    Ok(NodePerf {
        class,
        // Up to the machine file's 1e13 bytes/s and 1 s.
        read_bw_mib_per_s: positive(read_int(root, &acc.join("read_bandwidth"), 0, 9_500_000)?),
        read_latency_ns: positive(read_int(root, &acc.join("read_latency"), 0, 1_000_000_000)?),
    })
}

/// One CPU as read from sysfs.
struct SysCpu {
    id: CpuId,
    core: CpuMask,
    /// The file `core` was read from (`topology/thread_siblings_list` or
    /// `topology/core_cpus_list`); `None` when there was none.
    core_file: Option<&'static str>,
    /// Whether the CPU has a `topology` directory.
    has_topology: bool,
    cluster: CpuMask,
    package: i64,
    die: i64,
    llc: CpuMask,
    node: u32,
    capacity: i64,
    freq_mhz: i64,
    /// No cpufreq file: `freq_mhz` is the default.
    freq_guessed: bool,
    prio: i64,
}

/// Reads a machine from a sysfs tree rooted at `root` (`/sys`, or a copy of it).
///
/// Tolerated when missing: every topology file (a CPU is then its own core,
/// cluster and LLC, in package 0), caches (a cache index without `level` is
/// skipped, one without `size` bounds the LLC but is not listed; `type` defaults
/// to Unified, `coherency_line_size` to 64), `cpu_capacity` (1024), cpufreq (2000
/// MHz ESTIMATE), CPPC (priority 0), and the node directory (one node); so does
/// a file whose read fails. A file that is present but not text, unparsable or
/// out of range (cache level
/// outside 1..=8, capacity outside 1..=1024, a size of 0, ...) is an error naming
/// the file; so is one that is not a regular file (a FIFO, a device), a CPU's
/// sibling, cluster or cache list that is empty or does not name the CPU, a
/// node list naming CPUs the tree does not have, and a missing `topology`
/// directory of a CPU another CPU names as its sibling. Architecture: see
/// [`guess_arch`].
pub fn machine_from_sysfs(root: &Path) -> Result<Machine, TopoError> {
    load_machine_str(&sysfs_machine_text(root)?, &root.display().to_string())
}

/// This computer as a machine file: [`sysfs_machine_text`] of `/sys`, with
/// the architecture this binary was built for (the file-based guess can be
/// fooled by virtual machines).
pub fn host_machine_text() -> Result<String, TopoError> {
    let arch = match std::env::consts::ARCH {
        "x86" | "x86_64" => crate::Arch::X86,
        "powerpc" | "powerpc64" => crate::Arch::PowerPc,
        _ => crate::Arch::Arm64,
    };
    machine_text_for(Path::new("/sys"), Some(arch.as_str()))
}

/// The machine file [`machine_from_sysfs`] loads: what sysfs tells, plus
/// defaults for what it does not (bandwidths, latencies, wake-up costs), each
/// marked ESTIMATE in a comment, so that `--sensitivity` finds them.
pub fn sysfs_machine_text(root: &Path) -> Result<String, TopoError> {
    machine_text_for(root, None)
}

/// `[[idle_state]]` tables for `states`, each line followed by `comment`
/// (where the numbers come from).
fn idle_state_tables(states: &[IdleState], comment: &str) -> String {
    let mut s = String::new();
    for st in states {
        let _ = writeln!(s, "\n[[idle_state]]{comment}");
        let _ = writeln!(
            s,
            "name = {}\nexit_ns = {}\nresidency_ns = {}\npolls = {}",
            q(&st.name),
            st.exit_ns,
            st.residency_ns,
            st.polls
        );
        if st.poll_loop {
            let _ = writeln!(s, "poll_loop = true");
        }
        if st.poll_limit_ns > 0 {
            let _ = writeln!(s, "poll_limit_ns = {}", st.poll_limit_ns);
        }
        if st.disabled {
            let _ = writeln!(s, "disabled = true");
        }
    }
    s
}

/// CPU 0's idle states as its cpuidle driver registered them
/// (`cpuidle/stateN/name`, `desc`, `latency` and `residency` in µs,
/// `disable`). A state keeps the polling flag when it is the polling loop
/// (POLL, pseries' snooze) or waits in MWAIT (its description says so:
/// intel_idle's and acpi_idle's FFH states), except on arm64, which has no
/// polling flag. pseries' snooze gives up after the next state's target
/// residency; POLL follows cpuidle_poll_time(). With no cpuidle directory:
/// the architecture's usual states (x86: one MWAIT state; powerpc: pseries'
/// snooze and Shared Cede; arm64: WFI), with an estimated exit latency
/// where the kernel gives none. The second value says whether the states
/// came from the tree.
fn idle_states_of(
    root: &Path,
    cpu0: &Path,
    arch: &str,
) -> Result<(Vec<IdleState>, bool), TopoError> {
    let dir = cpu0.join("cpuidle");
    let mut states: Vec<IdleState> = Vec::new();
    for i in 0..10 {
        let st = dir.join(format!("state{i}"));
        let Some(name) = read(root, &st.join("name"))? else {
            break;
        };
        let desc = read(root, &st.join("desc"))?.unwrap_or_default();
        let us = |file: &str| -> Result<u32, TopoError> {
            Ok(read_int(root, &st.join(file), 0, 1_000_000)?.unwrap_or(0) as u32 * 1000)
        };
        let (exit_ns, residency_ns) = (us("latency")?, us("residency")?);
        let disabled = read_int(root, &st.join("disable"), 0, 1)?.unwrap_or(0) == 1;
        let has_flag = arch != "arm64";
        let poll_loop = has_flag && i == 0 && (name == "POLL" || name == "snooze");
        let polls = has_flag && (poll_loop || desc.contains("MWAIT"));
        // The machine file wants distinct names; a driver need not give them.
        let name = if name.is_empty() || states.iter().any(|s| s.name == name) {
            format!("{name}state{i}")
        } else {
            name
        };
        // Residencies out of order would break the governor's walk.
        let residency_ns = residency_ns.max(states.last().map_or(0, |p| p.residency_ns));
        states.push(IdleState {
            name,
            exit_ns,
            residency_ns,
            polls,
            poll_loop,
            poll_limit_ns: 0,
            disabled,
        });
    }
    if states.len() >= 2 && states[0].name == "snooze" {
        // snooze_loop()'s snooze_timeout.
        states[0].poll_limit_ns = states[1].residency_ns.max(1);
    }
    if !states.is_empty() {
        return Ok((states, true));
    }
    let state = IdleState::new;
    Ok((
        match arch {
            "powerpc" => {
                let mut snooze = state("snooze", 0, 0, true);
                snooze.poll_loop = true;
                snooze.poll_limit_ns = 100_000;
                vec![snooze, state("Shared Cede", 10_000, 100_000, false)]
            }
            "arm64" => vec![state("WFI", 2000, 0, false)],
            _ => vec![state("C1", 2000, 0, true)],
        },
        false,
    ))
}

/// The architecture of the kernel that wrote the sysfs tree at `root`
/// (`x86`, `arm64` or `powerpc`), from files only that architecture's
/// kernel writes, in this order:
///
/// 1. `cpu0/regs/identification/midr_el1` (arm64's MIDR_EL1), `cpu0/purr`
///    (powerpc's PURR register);
/// 2. the cpuidle driver (`cpuidle/current_driver`): intel_idle, haltpoll:
///    x86; pseries_idle, powernv_idle: powerpc; psci_idle, arm_idle: arm64
///    (acpi_idle runs on x86 and on arm64 servers alike: no evidence);
/// 3. the cpufreq driver (`cpufreq/policy0/scaling_driver`, or an
///    `intel_pstate` or `amd_pstate` directory): intel_pstate,
///    intel_cpufreq, amd-pstate, acpi-cpufreq: x86; powernv-cpufreq: powerpc;
/// 4. cpu0's idle states: a first state POLL, or a state whose description
///    names MWAIT: x86; snooze: powerpc; WFI: arm64;
/// 5. CPUs of different `capacities` (`cpu_capacity`): arm64's big.LITTLE;
///
/// else x86. A `cpu_capacity` file alone is no evidence: x86 kernels write
/// one too (1024 on every CPU of a machine without hybrid cores).
/// `topo --host` takes the architecture the binary was built for instead
/// (a virtual machine can fool these files).
pub fn guess_arch(root: &Path, capacities: &[i64]) -> Result<&'static str, TopoError> {
    let cpu = root.join("devices/system/cpu");
    let cpu0 = cpu.join("cpu0");
    if cpu0.join("regs/identification/midr_el1").exists() {
        return Ok("arm64");
    }
    if cpu0.join("purr").exists() {
        return Ok("powerpc");
    }
    match read(root, &cpu.join("cpuidle/current_driver"))?.as_deref() {
        Some("intel_idle" | "haltpoll") => return Ok("x86"),
        Some("pseries_idle" | "powernv_idle") => return Ok("powerpc"),
        Some("psci_idle" | "arm_idle") => return Ok("arm64"),
        _ => {}
    }
    if cpu.join("intel_pstate").is_dir() || cpu.join("amd_pstate").is_dir() {
        return Ok("x86");
    }
    let driver = match read(root, &cpu.join("cpufreq/policy0/scaling_driver"))? {
        Some(d) => Some(d),
        None => read(root, &cpu0.join("cpufreq/scaling_driver"))?,
    };
    match driver.as_deref() {
        Some(
            "intel_pstate" | "intel_cpufreq" | "amd-pstate" | "amd-pstate-epp" | "acpi-cpufreq",
        ) => return Ok("x86"),
        Some("powernv-cpufreq") => return Ok("powerpc"),
        _ => {}
    }
    for i in 0..10 {
        let st = cpu0.join(format!("cpuidle/state{i}"));
        let Some(name) = read(root, &st.join("name"))? else {
            break;
        };
        let desc = read(root, &st.join("desc"))?.unwrap_or_default();
        match name.as_str() {
            "POLL" if i == 0 => return Ok("x86"),
            "snooze" if i == 0 => return Ok("powerpc"),
            "WFI" => return Ok("arm64"),
            _ if desc.contains("MWAIT") => return Ok("x86"),
            _ => {}
        }
    }
    if capacities.windows(2).any(|w| w[0] != w[1]) {
        return Ok("arm64");
    }
    Ok("x86")
}

fn machine_text_for(root: &Path, arch_override: Option<&str>) -> Result<String, TopoError> {
    let origin = root.display().to_string();
    let cpu_dir = root.join("devices/system/cpu");
    let entries = std::fs::read_dir(&cpu_dir).map_err(|e| TopoError::Io {
        origin: cpu_dir.display().to_string(),
        reason: e.to_string(),
    })?;
    let mut present: Vec<usize> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            // `cpu` and decimal digits only (`cpu+4` is not CPU 4).
            name.strip_prefix("cpu")
                .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|n| n.parse::<usize>().ok())
        })
        .collect();
    present.sort_unstable();
    if present.is_empty() {
        return Err(TopoError::invalid(
            &origin,
            "devices/system/cpu",
            "no cpuN directories",
        ));
    }
    if present.len() > MAX_CPUS || present.iter().any(|&c| c >= MAX_CPUS) {
        return Err(TopoError::invalid(
            &origin,
            "devices/system/cpu",
            format!("more than {MAX_CPUS} CPUs"),
        ));
    }
    for (i, &c) in present.iter().enumerate() {
        if c != i {
            return Err(TopoError::invalid(
                &origin,
                format!("devices/system/cpu/cpu{i}"),
                "missing (CPU ids must be dense)",
            ));
        }
    }
    let n = present.len();
    let all = CpuMask::first_n(n);
    // An offline CPU keeps its cpuN directory but loses its topology/ one:
    // imported, it would become a CPU of its own core and LLC that runs
    // tasks the host's kernel never gives it.
    if let Some(online) = read_mask(root, &cpu_dir.join("online"))? {
        let offline = all.and_not(&online);
        if !offline.is_empty() {
            return Err(TopoError::invalid(
                &origin,
                "devices/system/cpu/online",
                format!(
                    "CPUs {} are offline and /sys has no topology for them; bring them online \
                     (echo 1 > .../cpuN/online, or echo on > .../smt/control) and import again, \
                     then restrict with `host:online=LIST` if you want them offline",
                    offline.to_list_string()
                ),
            ));
        }
    }

    // Nodes: every node directory, memory-only ones (CXL memory, a node whose
    // CPUs are offline) included; the domains take their NUMA levels from the
    // nodes with CPUs only.
    let mut node_of: Vec<u32> = vec![0; n];
    let mut node_ids: Vec<u32> = Vec::new();
    let mut node_has_cpus: Vec<bool> = Vec::new();
    let mut node_perf: Vec<NodePerf> = Vec::new();
    let mut dist_rows: Vec<(u32, Vec<i64>)> = Vec::new();
    let node_dir = root.join("devices/system/node");
    let all_node_ids: Vec<u32> = {
        let mut v: Vec<u32> = std::fs::read_dir(&node_dir)
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .filter_map(|e| {
                        let name = e.file_name().to_string_lossy().to_string();
                        // `node` and a decimal number only (`node+2` and
                        // `node01` are not node 2 and node 1).
                        name.strip_prefix("node")
                            .filter(|x| {
                                !x.is_empty()
                                    && x.bytes().all(|b| b.is_ascii_digit())
                                    && (x.len() == 1 || !x.starts_with('0'))
                            })
                            .and_then(|x| x.parse::<u32>().ok())
                    })
                    .collect()
            })
            .unwrap_or_default();
        v.sort_unstable();
        v
    };
    let mut listed = CpuMask::new();
    for &nd in &all_node_ids {
        let dir = node_dir.join(format!("node{nd}"));
        let path = dir.join("cpulist");
        let cpus = read_mask(root, &path)?.unwrap_or_default();
        let twice = cpus.and(&listed);
        if let Some(c) = twice.iter().next() {
            return Err(bad_file(
                root,
                &path,
                format!(
                    "names CPU {c}, which node{}/cpulist names too (a CPU is in one node)",
                    node_of[c as usize]
                ),
            ));
        }
        listed = listed.or(&cpus);
        let unknown = cpus.and_not(&all);
        if !unknown.is_empty() {
            return Err(bad_file(
                root,
                &path,
                format!(
                    "names CPUs {}, which the tree does not have (its CPUs are {})",
                    unknown.to_list_string(),
                    all.to_list_string()
                ),
            ));
        }
        for c in cpus.iter() {
            node_of[c as usize] = nd;
        }
        node_ids.push(nd);
        node_has_cpus.push(!cpus.is_empty());
        node_perf.push(node_perf_of(root, &dir)?);
        // One distance per node directory, in id order.
        let path = dir.join("distance");
        let mut row = Vec::new();
        if let Some(s) = read(root, &path)? {
            for x in s.split_whitespace() {
                match x.parse::<i64>() {
                    Ok(v) if (10..=i64::from(MAX_DISTANCE)).contains(&v) => row.push(v),
                    _ => {
                        return Err(bad_file(
                            root,
                            &path,
                            format!("{} is not a distance in 10..={MAX_DISTANCE}", shown(x)),
                        ))
                    }
                }
            }
            if row.len() != all_node_ids.len() {
                return Err(bad_file(
                    root,
                    &path,
                    format!(
                        "has {} distances for {} nodes",
                        row.len(),
                        all_node_ids.len()
                    ),
                ));
            }
        }
        dist_rows.push((nd, row));
    }
    if !listed.is_empty() {
        if let Some(c) = all.and_not(&listed).iter().next() {
            return Err(bad_file(
                root,
                &node_dir,
                format!("CPU {c} is in no node's cpulist"),
            ));
        }
    } else if let Some(first) = node_has_cpus.first_mut() {
        // No node lists a CPU: they all go to the first node.
        *first = true;
    }
    // Dense node numbering, in id order.
    let dense = |nd: u32| node_ids.iter().position(|&x| x == nd).unwrap_or(0) as u32;
    for v in node_of.iter_mut() {
        *v = dense(*v);
    }

    // Kernel ids are ints; -1 is the generic "not reported" of
    // include/linux/topology.h (package, die, cluster; core ids default to 0).
    let id_max = i64::from(i32::MAX);
    let mut cpus: Vec<SysCpu> = Vec::with_capacity(n);
    let mut caches: Vec<(u8, String, u64, u32, CpuMask)> = Vec::new();
    for (i, &node) in node_of.iter().enumerate() {
        let d = cpu_dir.join(format!("cpu{i}"));
        let t = d.join("topology");
        let me = CpuMask::from_cpus([i as CpuId]);
        let mut core_file = None;
        let mut siblings = None;
        for file in ["thread_siblings_list", "core_cpus_list"] {
            siblings = read_own_mask(root, &t.join(file), i as CpuId)?;
            if siblings.is_some() {
                core_file = Some(file);
                break;
            }
        }
        let core = siblings.map(|m| m.and(&all).or(&me)).unwrap_or(me);
        let cluster = read_own_mask(root, &t.join("cluster_cpus_list"), i as CpuId)?
            .map(|m| m.and(&all).or(&core))
            .unwrap_or(core);
        // Checked though unused: the sibling lists give the cores and clusters.
        read_int(root, &t.join("core_id"), 0, id_max)?;
        read_int(root, &t.join("cluster_id"), -1, id_max)?;
        let package = read_int(root, &t.join("physical_package_id"), -1, id_max)?.unwrap_or(0);
        let die = read_int(root, &t.join("die_id"), -1, id_max)?
            .filter(|&v| v >= 0)
            .unwrap_or(0);
        let capacity = read_int(root, &d.join("cpu_capacity"), 1, 1024)?.unwrap_or(1024);
        let max_khz = i64::from(MAX_FREQ_MHZ) * 1000;
        let khz = read_int(root, &d.join("cpufreq/cpuinfo_max_freq"), 1, max_khz)?;
        let freq_guessed = khz.is_none();
        let freq_mhz = khz.map_or(2000, |khz| (khz / 1000).max(1));
        let prio = read_int(
            root,
            &d.join("acpi_cppc/highest_perf"),
            0,
            i64::from(u32::MAX),
        )?
        .unwrap_or(0);
        // Caches.
        let mut llc: Option<(u8, CpuMask)> = None;
        if let Ok(rd) = std::fs::read_dir(d.join("cache")) {
            let mut idx: Vec<String> = rd
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().to_string())
                .filter(|s| s.starts_with("index"))
                .collect();
            idx.sort();
            for ix in idx {
                let cd = d.join("cache").join(&ix);
                let Some(level) = read_int(root, &cd.join("level"), 1, i64::from(MAX_CACHE_LEVEL))?
                else {
                    continue;
                };
                let level = level as u8;
                let kind = match read(root, &cd.join("type"))? {
                    None => "Unified".to_string(),
                    Some(k) if matches!(k.as_str(), "Data" | "Instruction" | "Unified") => k,
                    Some(k) => {
                        return Err(bad_file(
                            root,
                            &cd.join("type"),
                            format!("{} is not Data, Instruction or Unified", shown(&k)),
                        ))
                    }
                };
                // Without a size the cache still bounds the LLC but is not listed.
                let size = match read(root, &cd.join("size"))? {
                    None => 0,
                    Some(s) => parse_sysfs_size(&s).ok_or_else(|| {
                        bad_file(
                            root,
                            &cd.join("size"),
                            format!(
                                "{} is not a cache size such as 32K or 2M (1 byte to 1 TiB)",
                                shown(&s)
                            ),
                        )
                    })?,
                };
                let line = read_int(
                    root,
                    &cd.join("coherency_line_size"),
                    1,
                    i64::from(MAX_LINE_BYTES),
                )?
                .unwrap_or(64) as u32;
                let shared = read_own_mask(root, &cd.join("shared_cpu_list"), i as CpuId)?
                    .map(|m| m.and(&all).or(&me))
                    .unwrap_or(me);
                if kind != "Instruction" && llc.is_none_or(|(l, _)| level > l) {
                    llc = Some((level, shared));
                }
                if size > 0
                    && !caches
                        .iter()
                        .any(|c| c.0 == level && c.1 == kind && c.4 == shared)
                {
                    caches.push((level, kind, size, line, shared));
                }
            }
        }
        cpus.push(SysCpu {
            id: i as CpuId,
            core,
            core_file,
            has_topology: t.is_dir(),
            cluster,
            package,
            die,
            llc: llc.map_or(core, |(_, m)| m.or(&core)),
            node,
            capacity,
            freq_mhz,
            freq_guessed,
            prio,
        });
    }

    // A last-level cache shared by CPUs of several nodes (Intel's
    // sub-NUMA clustering: CPUID, and so sysfs, reports the package's L3)
    // is split per node, as the kernel's match_llc() splits the LLC mask its
    // domains are built on; each node's part gets its CPUs' share of the
    // size, since in SNC mode a node's memory is cached in its own slices.
    let mut node_masks: Vec<CpuMask> = Vec::new();
    for c in &cpus {
        let nd = c.node as usize;
        if node_masks.len() <= nd {
            node_masks.resize(nd + 1, CpuMask::new());
        }
        node_masks[nd].set(c.id);
    }
    for c in cpus.iter_mut() {
        let own = &node_masks[c.node as usize];
        if !c.llc.is_subset(own) {
            c.llc = c.llc.and(own).or(&c.core);
        }
    }
    let mut split_caches = Vec::with_capacity(caches.len());
    for (level, kind, size, line, shared) in caches {
        let parts: Vec<CpuMask> = node_masks
            .iter()
            .map(|m| m.and(&shared))
            .filter(|m| !m.is_empty())
            .collect();
        if parts.len() < 2 {
            split_caches.push((level, kind, size, line, shared, false));
            continue;
        }
        let total = shared.weight() as u64;
        for part in parts {
            let part_size = (size * part.weight() as u64 / total).max(1);
            split_caches.push((level, kind.clone(), part_size, line, part, true));
        }
    }

    // Every CPU a sibling list names must list the same siblings (the
    // kernel's thread masks are one per core).
    for c in &cpus {
        for sib in c.core.iter() {
            // CPU ids are dense (checked above): CPU `sib` is `cpus[sib]`.
            let Some(other) = cpus.get(sib as usize) else {
                continue;
            };
            if other.core == c.core {
                continue;
            }
            let file = c.core_file.unwrap_or("thread_siblings_list");
            let file = cpu_dir.join(format!("cpu{}/topology/{file}", c.id));
            if !other.has_topology {
                // An offline CPU (or a partial copy of a tree): nothing to
                // agree with.
                return Err(bad_file(
                    root,
                    &cpu_dir.join(format!("cpu{sib}/topology")),
                    format!(
                        "missing, though {} names CPU {sib} as a sibling",
                        file.strip_prefix(&cpu_dir).unwrap_or(&file).display()
                    ),
                ));
            }
            return Err(bad_file(
                root,
                &file,
                format!(
                    "{} names CPU {sib}, whose own list is {}: sibling lists must agree",
                    c.core.to_list_string(),
                    other.core.to_list_string()
                ),
            ));
        }
    }

    // Ids by first CPU of each mask.
    let key = |m: &CpuMask| u32::from(m.first().unwrap_or(0));
    // Core types: distinct (capacity, freq).
    let mut types: Vec<(i64, i64)> = cpus.iter().map(|c| (c.capacity, c.freq_mhz)).collect();
    types.sort_unstable();
    types.dedup();
    types.reverse(); // biggest first
    let smt = cpus.iter().any(|c| c.core.weight() > 1);
    let mut s = String::new();
    let name = root
        .file_name()
        .map(|x| x.to_string_lossy().to_string())
        .filter(|x| !x.is_empty() && x != "sys")
        .unwrap_or_else(|| "host".to_string());
    let _ = writeln!(s, "name = {}", q(&name));
    let _ = writeln!(
        s,
        "description = {}",
        q(&format!(
            "imported from sysfs at {origin}; {}",
            if node_perf
                .iter()
                .any(|p| p.read_bw_mib_per_s.is_some() || p.read_latency_ns.is_some())
            {
                "memory bandwidths and latencies from the firmware's ratings (HMAT) where it has them, other costs ESTIMATE defaults"
            } else {
                "bandwidths, latencies and costs are ESTIMATE defaults"
            }
        ))
    );
    let arch = match arch_override {
        Some(a) => a,
        None => {
            let capacities: Vec<i64> = cpus.iter().map(|c| c.capacity).collect();
            guess_arch(root, &capacities)?
        }
    };
    let _ = writeln!(s, "arch = {}", q(arch));
    for (k, (cap, freq)) in types.iter().enumerate() {
        let has_smt = cpus
            .iter()
            .any(|c| (c.capacity, c.freq_mhz) == (*cap, *freq) && c.core.weight() > 1);
        let freq_guessed = cpus
            .iter()
            .any(|c| (c.capacity, c.freq_mhz) == (*cap, *freq) && c.freq_guessed);
        let _ = writeln!(
            s,
            "\n[[core_type]]\nname = \"type{k}\"\ncapacity = {cap}\nfreq_max_mhz = {freq}{}\nsmt_thread_speed = {}\ncore_bw_bytes_per_s = 15e9  # ESTIMATE (hardware.md section 8: 10-20 GB/s)",
            if freq_guessed { "  # ESTIMATE: no cpufreq/cpuinfo_max_freq in the tree" } else { "" },
            if has_smt { "0.6  # ESTIMATE" } else { "1.0" }
        );
    }
    for c in &cpus {
        let k = types
            .iter()
            .position(|t| *t == (c.capacity, c.freq_mhz))
            .unwrap_or(0);
        let pkg = c.package.max(0) as u64;
        let _ = writeln!(
            s,
            "\n[[cpu]]\nid = {}\ncore = {}\ncluster = {}\nllc = {}\ndie = {}\npackage = {}\nnode = {}\ncore_type = \"type{k}\"\nasym_prio = {}",
            c.id,
            key(&c.core),
            key(&c.cluster),
            key(&c.llc),
            pkg.saturating_mul(1 << 16).saturating_add(c.die.max(0) as u64).min(u32::MAX as u64),
            pkg.min(u32::MAX as u64),
            c.node,
            c.prio.max(0)
        );
    }
    for (level, kind, size, line, shared, split) in &split_caches {
        let _ = writeln!(
            s,
            "\n[[cache]]\nlevel = {level}\nkind = {}\nsize = {size}{}\nline_bytes = {line}\ncpus = {}",
            q(kind),
            if *split {
                "  # this node's share of a cache sysfs shows shared by several nodes (sub-NUMA clustering; split as match_llc() splits the LLC)"
            } else {
                ""
            },
            q(&ids(&shared.iter().collect::<Vec<_>>()))
        );
    }
    // The SLIT distance between two nodes (by dense id). A missing row is
    // taken from the other rows' columns (10 and 20 where neither has it).
    // The kernel accepts an asymmetric table (slit_valid() checks the
    // diagonal only) and builds its NUMA levels from the rows of nodes with
    // CPUs; the machine file wants one symmetric table: between a node with
    // CPUs and one without, the CPU node's row (its CPUs' distance to that
    // memory) gives both entries, between two memory-only nodes the smaller
    // one does. Two CPU nodes that disagree stay an error.
    let col_of = |nd: u32| all_node_ids.iter().position(|&x| x == nd);
    let raw = |a: usize, b: usize| -> Option<i64> {
        dist_rows
            .get(a)
            .and_then(|(_, row)| col_of(*node_ids.get(b)?).and_then(|c| row.get(c)))
            .copied()
    };
    let has_cpus = |a: usize| node_has_cpus.get(a).copied().unwrap_or(true);
    let dist = |a: usize, b: usize| -> i64 {
        if a == b {
            return raw(a, a).unwrap_or(10);
        }
        match (raw(a, b), raw(b, a)) {
            (Some(x), Some(y)) if x != y => match (has_cpus(a), has_cpus(b)) {
                (false, true) => y,
                (false, false) => x.min(y),
                _ => x,
            },
            (Some(x), _) | (None, Some(x)) => x,
            (None, None) => 20,
        }
    };
    // What the table cannot take, named at the file that says it.
    for a in 0..node_ids.len() {
        let file = node_dir.join(format!("node{}/distance", node_ids[a]));
        if let Some(d) = raw(a, a).filter(|&d| d != 10) {
            return Err(bad_file(
                root,
                &file,
                format!("gives the node a distance of {d} to itself, not 10"),
            ));
        }
        for (b, other) in node_ids.iter().enumerate() {
            if let (true, true, Some(x), Some(y)) = (has_cpus(a), has_cpus(b), raw(a, b), raw(b, a))
            {
                if x != y {
                    return Err(bad_file(
                        root,
                        &file,
                        format!(
                            "gives {x} to node{other}, whose own file gives {y} back: the model takes a symmetric table between nodes with CPUs"
                        ),
                    ));
                }
            }
        }
    }
    let cores_of = |nd: usize| {
        let mut v: Vec<u32> = cpus
            .iter()
            .filter(|c| c.node as usize == nd)
            .map(|c| key(&c.core))
            .collect();
        v.sort_unstable();
        v.dedup();
        v.len()
    };
    let nr_nodes = node_ids.len().max(1);
    let any_bw_rated = node_perf.iter().any(|p| p.read_bw_mib_per_s.is_some());
    for nd in 0..nr_nodes {
        let perf = node_perf.get(nd).copied().unwrap_or_default();
        // A node without CPUs takes the saturation point and latency of the
        // CPU node nearest to it (the hardware model charges its distance on
        // top, as it does for any remote node).
        let near = if has_cpus(nd) {
            nd
        } else {
            (0..nr_nodes)
                .filter(|&o| has_cpus(o))
                .min_by_key(|&o| (dist(nd, o), o))
                .unwrap_or(nd)
        };
        let bw = match perf.read_bw_mib_per_s {
            Some(v) => format!(
                "{}  # ESTIMATE: {}/read_bandwidth, the platform's rating (HMAT), above what STREAM reaches",
                f(v as f64 * 1_048_576.0),
                perf.class
            ),
            None if any_bw_rated => {
                "60e9  # ESTIMATE: not rated where other nodes are; not on their scale".to_string()
            }
            None => "60e9  # ESTIMATE".to_string(),
        };
        let near_perf = node_perf.get(near).copied().unwrap_or_default();
        let own = match perf.read_latency_ns {
            Some(v) if near != nd => format!("; its own rating, {v} ns, includes that distance"),
            _ => String::new(),
        };
        let lat = match near_perf.read_latency_ns {
            Some(v) if near == nd => format!(
                "{v}  # ESTIMATE: {}/read_latency, the platform's rating (HMAT)",
                near_perf.class
            ),
            Some(v) => format!(
                "{v}  # ESTIMATE: node {near}'s {}/read_latency (the nearest node with CPUs; the model charges the distance on top{own})",
                near_perf.class
            ),
            None if near != nd => format!(
                "100  # ESTIMATE (the model charges the distance from node {near}, the nearest node with CPUs, on top{own})"
            ),
            None => "100  # ESTIMATE".to_string(),
        };
        let sysfs_id = match node_ids.get(nd) {
            Some(&id) if id as usize != nd => format!("  # sysfs node{id}"),
            _ => String::new(),
        };
        let why = if near == nd {
            String::new()
        } else {
            format!(", of node {near}, the nearest node with CPUs")
        };
        let _ = writeln!(
            s,
            "\n[[node]]\nid = {nd}{sysfs_id}\nmem_bw_peak_bytes_per_s = {bw}\nmem_half_concurrency = {}  # ESTIMATE: k = cores/8{why} (hardware.md section 8 saturation rule)\nmem_latency_ns = {lat}",
            f((cores_of(near) as f64 / 8.0).max(0.125))
        );
    }
    if node_ids.len() > 1 {
        let rows: Vec<String> = (0..nr_nodes)
            .map(|a| {
                let vals: Vec<String> = (0..nr_nodes).map(|b| dist(a, b).to_string()).collect();
                format!("  [{}],", vals.join(", "))
            })
            .collect();
        let _ = writeln!(s, "\n[numa]\ndistance = [\n{}\n]", rows.join("\n"));
    }
    let _ = writeln!(
        s,
        "\n[c2c]  # ESTIMATE: hardware.md section 8 line-transfer costs\nsmt_ns = {}\ncluster_ns = 30\nllc_ns = 40\ndie_ns = 100\nnode_ns = 100\npackage_ns = 100\nremote_package_ns = 150",
        if smt { 8 } else { 30 }
    );
    // x86's MWAIT and POLL states and powerpc's snooze set TIF_POLLING_NRFLAG;
    // arm64 has no polling flag, so its wakeups always send an IPI.
    let (states, read_them) = idle_states_of(root, &cpu_dir.join("cpu0"), arch)?;
    // Every cost is written out, so that an ESTIMATE edit or a sensitivity
    // study finds it (a key left to its default would be neither).
    let _ = writeln!(
        s,
        "\n[wakeup]  # ESTIMATE\nipi_ns = 1500\nwakeup_path_ns = 2000\nbalance_pass_ns = {}\nbalance_pass_per_cpu_ns = {}\nbalance_refused_ns = {}",
        crate::machine::DEFAULT_BALANCE_PASS_NS,
        crate::machine::DEFAULT_BALANCE_PASS_PER_CPU_NS,
        crate::machine::DEFAULT_BALANCE_REFUSED_NS
    );
    s.push_str(&idle_state_tables(
        &states,
        if read_them {
            "  # cpu0/cpuidle (the driver's exit latency and residency)"
        } else {
            "  # ESTIMATE: no cpuidle states in the tree; the architecture's usual ones"
        },
    ));
    Ok(s)
}

/// sysfs cache sizes: `32K`, `1024K`, `16384K`, `2M`.
fn parse_sysfs_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()? {
        'K' | 'k' => (&s[..s.len() - 1], 1024u64),
        'M' | 'm' => (&s[..s.len() - 1], 1024 * 1024),
        'G' | 'g' => (&s[..s.len() - 1], 1024 * 1024 * 1024),
        _ => (s, 1),
    };
    num.trim()
        .parse::<u64>()
        .ok()?
        .checked_mul(mult)
        .filter(|&b| (1..=MAX_CACHE_BYTES).contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets::{preset, PRESET_NAMES};

    #[test]
    fn presets_round_trip_through_toml() {
        for name in PRESET_NAMES {
            let m = preset(name).unwrap();
            let text = machine_to_toml(&m);
            let back = load_machine_str(&text, "rt").unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert_eq!(back, m, "{name}");
        }
    }

    /// A named pipe where an attribute should be is refused by name, before
    /// any open (which would wait for a writer forever); a directory reads
    /// as a failed read.
    #[test]
    fn special_files_are_refused_without_blocking() {
        let dir = std::env::temp_dir().join(format!("schedlab-fifo-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("d")).unwrap();
        let fifo = dir.join("core_id");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .is_ok_and(|s| s.success());
        let (root, sub) = (dir.clone(), dir.join("d"));
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send((read(&root, &root.join("core_id")), read(&root, &sub)));
        });
        let (fifo_read, dir_read) = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("read() blocked");
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(dir_read, Ok(None));
        if !made {
            eprintln!("no mkfifo: FIFO case skipped");
            return;
        }
        let e = fifo_read.unwrap_err().to_string();
        assert!(
            e.ends_with(
                "field `core_id`: a named pipe (FIFO), not a regular file: not a sysfs attribute"
            ),
            "{e}"
        );
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_sysfs_size("32K"), Some(32768));
        assert_eq!(parse_sysfs_size("2M"), Some(2 << 20));
        assert_eq!(parse_sysfs_size("512"), Some(512));
        assert_eq!(parse_sysfs_size("x"), None);
        assert_eq!(parse_sysfs_size("0K"), None);
        assert_eq!(parse_sysfs_size("2048G"), None);
    }
}
