//! kernbench: `make -jN` of a kernel tree.
//!
//! What it models: make (the main thread) keeps at most `threads` compile
//! jobs running (the jobserver); each job is a process that pays process
//! start-up in the kernel (fork/exec/mmap, counted as system time) and then
//! compiles one file (user time); files vary in cost by a fixed deterministic
//! spread (the same for every seed). After the last object, the final link
//! runs serially. Metrics as kernbench reports them: `elsp` (elapsed s),
//! `user` and `syst` (CPU seconds summed over jobs).
//!
//! What it leaves out: dependencies between objects beyond the final link
//! (kbuild's recursive directory order, header generation), the page cache
//! and disk I/O, the shell and cc1/as process pipeline (one task per job), and
//! make's own CPU use.

use crate::program::{Step, SyncObject, ThreadTemplate, WorkloadSpec};
use crate::spec::{BuiltinSpec, SpecError};
use schedlab_topo::CpuMask;

/// Mean compile cost of one file, ns on a capacity-1024 CPU (ESTIMATE: a
/// defconfig build of ~2500 objects takes ~17 CPU-minutes).
pub const MEAN_FILE_NS: u64 = 400_000_000;
/// Kernel time to start a compile job (fork, exec, mmap, page faults), ns
/// (ESTIMATE: kernbench's system time is ~5-10% of user time).
pub const JOB_SYS_NS: u64 = 30_000_000;
/// The final vmlinux link, ns (ESTIMATE).
pub const LINK_NS: u64 = 8_000_000_000;
/// File cost classes (templates).
const CLASSES: u32 = 32;

/// Parameters of `kernbench:threads=N,files=F`.
#[derive(Clone, Debug, PartialEq)]
pub struct KernbenchParams {
    pub threads: u32,
    pub files: u32,
    /// The final link's work, ms (default [`LINK_NS`]).
    pub link_ms: u64,
}

/// Keys `kernbench:` accepts.
pub const KEYS: &[&str] = &["threads", "files", "link_ms"];

impl KernbenchParams {
    pub fn from_spec(s: &BuiltinSpec) -> Result<Self, SpecError> {
        s.check_keys(KEYS)?;
        Ok(KernbenchParams {
            threads: s.get_u64("threads", 1, 1, 4096)? as u32,
            // One compile job (a task) per file: within the engine's
            // 200,000 tasks a run may create, with room for the rest.
            files: s.get_u64("files", 2500, 1, 100_000)? as u32,
            link_ms: s.get_u64("link_ms", LINK_NS / 1_000_000, 0, 10_000_000)?,
        })
    }
}

/// Cost class of file `i`: a fixed pseudo-random permutation of the classes.
fn class_of(i: u32) -> u32 {
    let mut z = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z ^= z >> 29;
    z = z.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z ^= z >> 32;
    (z % CLASSES as u64) as u32
}

/// Compile work of class `c`: from 1/8 to 15/8 of the mean, linearly.
pub fn class_work_ns(c: u32) -> u64 {
    MEAN_FILE_NS / 8 + MEAN_FILE_NS * 14 / 8 * c as u64 / (CLASSES as u64 - 1)
}

const SLOTS: u32 = 0;
const DONE: u32 = 1;
pub const TAG_START: u32 = 0;
pub const TAG_END: u32 = 1;

/// Template 0 is make; templates 1..=CLASSES are the compile jobs by class.
pub fn build(p: &KernbenchParams, affinity: Option<CpuMask>) -> WorkloadSpec {
    let mut main = vec![Step::Mark { tag: TAG_START }];
    for i in 0..p.files {
        main.push(Step::SemWait { sem: SLOTS });
        main.push(Step::Spawn {
            template: 1 + class_of(i),
        });
    }
    let w = main.len() as u32;
    main.extend([
        Step::SemWait { sem: DONE },
        Step::Loop {
            start: w,
            count: p.files,
            slot: 0,
        },
        Step::Compute {
            work_ns: p.link_ms * 1_000_000,
        },
        Step::Mark { tag: TAG_END },
        Step::Exit,
    ]);
    let mut templates = vec![ThreadTemplate {
        idle_policy: false,
        name: "make".into(),
        nice: 0,
        affinity,
        steps: main,
    }];
    for c in 0..CLASSES {
        templates.push(ThreadTemplate {
            idle_policy: false,
            name: format!("cc1-{c}"),
            nice: 0,
            affinity: None,
            steps: vec![
                Step::Exec,
                Step::Compute {
                    work_ns: JOB_SYS_NS,
                },
                Step::Compute {
                    work_ns: class_work_ns(c),
                },
                Step::SemPost { sem: SLOTS },
                Step::SemPost { sem: DONE },
                Step::Exit,
            ],
        });
    }
    WorkloadSpec {
        name: format!("kernbench:threads={},files={}", p.threads, p.files),
        templates,
        initial: vec![0],
        sync: vec![
            SyncObject::Semaphore { initial: p.threads },
            SyncObject::Semaphore { initial: 0 },
        ],
        mem_node: None,
        max_time_ns: 360_000_000_000_000,
    }
}

/// (elsp, user, syst) seconds from make's marks `(tag, time)` and each
/// task's (template, CPU time ns). A job's CPU time splits into system and
/// user time in proportion to its work; the link is user time.
pub fn times(marks: &[(u32, u64)], tasks: &[(u32, u64)]) -> Option<(f64, f64, f64)> {
    let start = marks.iter().find(|m| m.0 == TAG_START)?.1;
    let end = marks.iter().find(|m| m.0 == TAG_END)?.1;
    let (mut user, mut sys) = (0.0, 0.0);
    for &(tpl, cpu) in tasks {
        if tpl == 0 {
            user += cpu as f64;
        } else if tpl <= CLASSES {
            let w = class_work_ns(tpl - 1) as f64;
            let f = JOB_SYS_NS as f64 / (JOB_SYS_NS as f64 + w);
            sys += cpu as f64 * f;
            user += cpu as f64 * (1.0 - f);
        }
    }
    Some((
        end.checked_sub(start)? as f64 * 1e-9,
        user * 1e-9,
        sys * 1e-9,
    ))
}

/// kernbench's summary block.
pub fn report(p: &KernbenchParams, t: Option<(f64, f64, f64)>, switches: u64) -> String {
    let mut s = format!(
        "Average Optimal load -j {} Run (std deviation):\n",
        p.threads
    );
    match t {
        Some((e, u, sy)) => {
            s.push_str(&format!("Elapsed Time {e:.2} (0.00)\n"));
            s.push_str(&format!("User Time {u:.2} (0.00)\n"));
            s.push_str(&format!("System Time {sy:.2} (0.00)\n"));
            s.push_str(&format!(
                "Percent CPU {:.0} (0.00)\n",
                if e > 0.0 { 100.0 * (u + sy) / e } else { 0.0 }
            ));
            s.push_str(&format!("Context Switches {switches} (0.00)\n"));
        }
        None => s.push_str("(incomplete run: no time)\n"),
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::parse_spec;

    #[test]
    fn classes_average_to_the_mean() {
        let total: u64 = (0..CLASSES).map(class_work_ns).sum();
        let mean = total / CLASSES as u64;
        assert!(mean.abs_diff(MEAN_FILE_NS) < MEAN_FILE_NS / 100, "{mean}");
        let p = KernbenchParams::from_spec(&parse_spec("kernbench:threads=8,files=100").unwrap())
            .unwrap();
        let spec = build(&p, None);
        assert_eq!(spec.templates.len(), 1 + CLASSES as usize);
        let spawns = spec.templates[0]
            .steps
            .iter()
            .filter(|s| matches!(s, Step::Spawn { .. }))
            .count();
        assert_eq!(spawns, 100);
        let (e, u, s) = times(
            &[(TAG_START, 0), (TAG_END, 2_000_000_000)],
            &[(1, 1_000_000_000)],
        )
        .unwrap();
        assert_eq!(e, 2.0);
        assert!((u + s - 1.0).abs() < 1e-9 && s > 0.0);
    }
}
