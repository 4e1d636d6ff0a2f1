//! pbzip2 (parallel bzip2) compressing a file.
//!
//! What it models: the producer (main thread) reads the file in blocks of
//! `block_kb` (900 KB, `-9`) into a bounded queue of `threads` slots; `threads`
//! consumer threads (`-pN`) take blocks from the queue and compress them; a
//! file-writer thread writes each compressed block. Producer and consumers
//! sleep on the queue's semaphores when it is full or empty, the writer when
//! no block is ready. Throughput `tput` = input MB / elapsed seconds; the
//! output ends with pbzip2's `Wall Clock: X seconds`.
//!
//! Each block's compression is a `Work` step over bzip2's documented
//! compression memory, [`working_set_bytes`] (7.6 MB at `-9`): it competes
//! for the last-level cache with the other threads' and is refilled after a
//! migration (engine hwcost.rs).
//!
//! What it leaves out: in-order output (pbzip2's writer waits for block i
//! even when later blocks are done; here it writes blocks as they complete),
//! the data's effect on bzip2's speed (a fixed cost per byte, ESTIMATE), how
//! often the block sort revisits its arrays (the working set is swept once
//! per block, a lower bound), memory bandwidth of the block copies, and disk
//! I/O (page-cache speed).

use crate::program::{Step, SyncObject, ThreadTemplate, WorkloadSpec};
use crate::spec::{BuiltinSpec, SpecError};
use schedlab_topo::CpuMask;

/// bzip2 compression cost, ps per input byte on a capacity-1024 CPU
/// (ESTIMATE: ~12 MB/s per core for `-9`).
pub const COMPRESS_PS_PER_BYTE: u64 = 80_000;
/// Reading a block from the page cache, ps per byte (ESTIMATE).
pub const READ_PS_PER_BYTE: u64 = 200;
/// Compression ratio of the output (ESTIMATE: text-like data, 1/4).
pub const RATIO_DIV: u64 = 4;
/// Writing compressed output, ps per byte (ESTIMATE).
pub const WRITE_PS_PER_BYTE: u64 = 300;

/// bzip2's compression memory for a block of `block_bytes`: 400 KB plus 8
/// bytes per block byte (bzip2(1), "MEMORY MANAGEMENT": the block, its
/// sorting arrays and tables; 7.6 MB at `-9`).
pub fn working_set_bytes(block_bytes: u64) -> u64 {
    400_000 + 8 * block_bytes
}

/// Parameters of `pbzip2:threads=N,size_mib=M,block_kb=B`.
#[derive(Clone, Debug, PartialEq)]
pub struct Pbzip2Params {
    pub threads: u32,
    pub size_mib: u64,
    pub block_kb: u64,
}

/// Keys `pbzip2:` accepts.
pub const KEYS: &[&str] = &["threads", "size_mib", "block_kb"];

impl Pbzip2Params {
    pub fn from_spec(s: &BuiltinSpec) -> Result<Self, SpecError> {
        s.check_keys(KEYS)?;
        Ok(Pbzip2Params {
            threads: s.get_u64("threads", 1, 1, 1024)? as u32,
            size_mib: s.get_u64("size_mib", 256, 1, 1 << 20)?,
            block_kb: s.get_u64("block_kb", 900, 100, 900)?,
        })
    }

    /// Blocks in the file (the last may be shorter; modelled full).
    pub fn blocks(&self) -> u32 {
        (self.size_mib * 1024).div_ceil(self.block_kb) as u32
    }
}

const FREE: u32 = 0;
const FILLED: u32 = 1;
const OUT: u32 = 2;
const TICKETS: u32 = 3;
pub const TAG_START: u32 = 0;
pub const TAG_END: u32 = 1;

/// Template 0 is the producer (main), 1 the writer, then the consumers.
pub fn build(p: &Pbzip2Params, affinity: Option<CpuMask>) -> WorkloadSpec {
    let block = p.block_kb * 1000;
    pipeline(
        &Pipeline {
            name: format!(
                "pbzip2:threads={},size_mib={},block_kb={}",
                p.threads, p.size_mib, p.block_kb
            ),
            prefix: "pbzip2",
            consumers: p.threads,
            blocks: p.blocks(),
            queue_slots: p.threads,
            read_ns: block * READ_PS_PER_BYTE / 1000,
            compress: vec![Step::Work {
                work_ns: block * COMPRESS_PS_PER_BYTE / 1000,
                working_set_bytes: working_set_bytes(block),
            }],
            write_ns: block / RATIO_DIV * WRITE_PS_PER_BYTE / 1000,
        },
        affinity,
    )
}

/// The shape of a block-parallel compressor (pbzip2, pixz): a reader fills
/// a bounded queue of blocks, consumers compress one block at a time, a
/// writer writes each compressed block.
pub(crate) struct Pipeline {
    pub name: String,
    /// Thread-name prefix (`NAME`, `NAME-writer`, `NAME-cI`).
    pub prefix: &'static str,
    pub consumers: u32,
    pub blocks: u32,
    /// Blocks read ahead of the consumers.
    pub queue_slots: u32,
    /// Reading one block (page cache copy).
    pub read_ns: u64,
    /// Compressing one block: the steps a consumer runs per block (no
    /// control flow inside).
    pub compress: Vec<Step>,
    /// Writing one compressed block.
    pub write_ns: u64,
}

/// Builds a [`Pipeline`]: template 0 is the reader (main), 1 the writer,
/// then the consumers. Marks [`TAG_START`] on the reader and [`TAG_END`]
/// on the writer.
pub(crate) fn pipeline(p: &Pipeline, affinity: Option<CpuMask>) -> WorkloadSpec {
    let blocks = p.blocks;
    let mut main = vec![Step::Mark { tag: TAG_START }];
    for i in 0..p.consumers + 1 {
        main.push(Step::Spawn { template: 1 + i });
    }
    let r = main.len() as u32;
    main.extend([
        Step::SemWait { sem: FREE },
        Step::Compute { work_ns: p.read_ns },
        Step::SemPost { sem: FILLED },
        Step::Loop {
            start: r,
            count: blocks,
            slot: 0,
        },
        Step::Exit,
    ]);
    let writer = vec![
        Step::SemWait { sem: OUT },
        Step::Compute {
            work_ns: p.write_ns,
        },
        Step::Loop {
            start: 0,
            count: blocks,
            slot: 0,
        },
        Step::Mark { tag: TAG_END },
        Step::Exit,
    ];
    let exit_at = 5 + p.compress.len() as u32;
    let mut consumer = vec![
        Step::Grab {
            counter: TICKETS,
            limit: blocks,
            exit_to: exit_at,
        },
        Step::SemWait { sem: FILLED },
        Step::SemPost { sem: FREE },
    ];
    consumer.extend(p.compress.iter().cloned());
    consumer.extend([
        Step::SemPost { sem: OUT },
        Step::Loop {
            start: 0,
            count: u32::MAX,
            slot: 0,
        },
        Step::Exit,
    ]);
    debug_assert!(matches!(consumer[exit_at as usize], Step::Exit));
    let mut templates = vec![
        ThreadTemplate {
            idle_policy: false,
            name: p.prefix.into(),
            nice: 0,
            affinity,
            steps: main,
        },
        ThreadTemplate {
            idle_policy: false,
            name: format!("{}-writer", p.prefix),
            nice: 0,
            affinity: None,
            steps: writer,
        },
    ];
    for i in 0..p.consumers {
        templates.push(ThreadTemplate {
            idle_policy: false,
            name: format!("{}-c{i}", p.prefix),
            nice: 0,
            affinity: None,
            steps: consumer.clone(),
        });
    }
    WorkloadSpec {
        name: p.name.clone(),
        templates,
        initial: vec![0],
        sync: vec![
            SyncObject::Semaphore {
                initial: p.queue_slots,
            },
            SyncObject::Semaphore { initial: 0 },
            SyncObject::Semaphore { initial: 0 },
            SyncObject::Counter,
        ],
        mem_node: None,
        max_time_ns: 36_000_000_000_000,
    }
}

/// (elapsed s, tput MB/s) from marks `(template, tag, time)`.
pub fn result(p: &Pbzip2Params, marks: &[(u32, u32, u64)]) -> Option<(f64, f64)> {
    pipeline_result(p.size_mib, marks)
}

/// A [`pipeline`]'s (elapsed s, input MB/s) for `size_mib` of input: from
/// the reader's [`TAG_START`] to the writer's [`TAG_END`].
pub(crate) fn pipeline_result(size_mib: u64, marks: &[(u32, u32, u64)]) -> Option<(f64, f64)> {
    let start = marks.iter().find(|m| m.0 == 0 && m.1 == TAG_START)?.2;
    let end = marks.iter().find(|m| m.0 == 1 && m.1 == TAG_END)?.2;
    let secs = end.checked_sub(start)? as f64 * 1e-9;
    if secs <= 0.0 {
        return None;
    }
    Some((secs, size_mib as f64 * 1.048576 / secs))
}

/// pbzip2 -v's summary.
pub fn report(p: &Pbzip2Params, r: Option<(f64, f64)>) -> String {
    let input = p.size_mib * 1024 * 1024;
    let mut s = format!(
        "Parallel BZIP2 (simulated)\n\n         # CPUs: {}\n BWT Block Size: {} KB\nFile Block Size: {} KB\n-------------------------------------------\n     Input Size: {} bytes\nCompressing data...\n    Output Size: {} bytes\n-------------------------------------------\n",
        p.threads,
        p.block_kb,
        p.block_kb,
        input,
        input / RATIO_DIV
    );
    match r {
        Some((secs, tput)) => {
            s.push_str(&format!("\n     Wall Clock: {secs:.6} seconds\n"));
            s.push_str(&format!("     Throughput: {tput:.2} MB/s\n"));
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
    fn blocks_and_threads() {
        let p =
            Pbzip2Params::from_spec(&parse_spec("pbzip2:threads=4,size_mib=9").unwrap()).unwrap();
        assert_eq!(p.blocks(), 11);
        let spec = build(&p, None);
        assert_eq!(spec.templates.len(), 2 + 4);
        let marks = vec![(0, TAG_START, 0), (1, TAG_END, 2_000_000_000)];
        let (secs, tput) = result(&p, &marks).unwrap();
        assert_eq!(secs, 2.0);
        assert!((tput - 9.0 * 1.048576 / 2.0).abs() < 1e-9);
        assert!(report(&p, Some((secs, tput))).contains("Wall Clock: 2.000000 seconds"));
    }

    #[test]
    fn a_block_is_compressed_over_bzip2s_compression_memory() {
        // bzip2(1): 400k + 8 x block size, 7.6 MB for -9's 900 KB blocks.
        assert_eq!(working_set_bytes(900_000), 7_600_000);
        let p =
            Pbzip2Params::from_spec(&parse_spec("pbzip2:threads=2,block_kb=500").unwrap()).unwrap();
        let spec = build(&p, None);
        let work: Vec<_> = spec.templates[2]
            .steps
            .iter()
            .filter_map(|s| match s {
                Step::Work {
                    work_ns,
                    working_set_bytes,
                } => Some((*work_ns, *working_set_bytes)),
                _ => None,
            })
            .collect();
        assert_eq!(
            work,
            vec![(500_000 * COMPRESS_PS_PER_BYTE / 1000, 4_400_000)]
        );
    }
}
