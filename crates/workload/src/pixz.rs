//! pixz (parallel xz) compressing a file.
//!
//! What it models (pixz's `write.c`, default level 6): the read thread cuts
//! the input into blocks of twice the LZMA2 dictionary (8 MiB at `-6`, so
//! 16 MiB blocks: pixz's `gBlockFraction` of 2) and queues them; `threads`
//! encoder threads (`-p N`) each compress one block at a time with liblzma,
//! which pixz feeds in 64 KiB pieces (`LZMA_CHUNK_MAX`); the main thread
//! writes the compressed blocks. Unlike bzip2, LZMA's binary-tree match
//! finder walks a window far larger than a core's caches, so every piece is
//! compute followed by the memory traffic of its match-finder misses, which
//! goes through the machine's bandwidth model (cluster links, memory nodes).
//! Throughput `tput` = input MB / elapsed seconds.
//!
//! What it leaves out: in-order output (blocks are written as they
//! complete), the tar index pixz appends, data-dependent speed and the
//! latency-bound (not bandwidth-bound) nature of the misses: misses cost
//! only what the bandwidth model charges for their bytes.

use crate::pbzip2::{pipeline, pipeline_result, Pipeline, READ_PS_PER_BYTE, WRITE_PS_PER_BYTE};
use crate::program::{Step, WorkloadSpec};
use crate::spec::{BuiltinSpec, SpecError};
use schedlab_topo::CpuMask;

pub use crate::pbzip2::{TAG_END, TAG_START};

/// LZMA2 dictionary at preset 6 (xz's documented presets): 8 MiB.
pub const DICT_BYTES: u64 = 8 << 20;
/// Block size: pixz's default block fraction (2) times the dictionary.
pub const BLOCK_BYTES: u64 = 2 * DICT_BYTES;
/// The size of the pieces pixz hands to liblzma (`LZMA_CHUNK_MAX`).
pub const PIECE_BYTES: u64 = 64 << 10;
/// LZMA2 compression cost at preset 6, ps per input byte on a capacity-1024
/// CPU (ESTIMATE: xz -6 compresses text at about 3 MB/s per core).
pub const COMPRESS_PS_PER_BYTE: u64 = 330_000;
/// Memory traffic of the bt4 match finder per input byte (ESTIMATE: about
/// two cache-line misses per position in the hash table and the binary tree,
/// which span ~94 MiB at preset 6, far beyond a core's share of the LLC).
pub const MISS_BYTES_PER_BYTE: u64 = 128;
/// Compression ratio of the output (ESTIMATE: text-like data, 1/4).
pub const RATIO_DIV: u64 = 4;

/// Parameters of `pixz:threads=N,size_mib=M`.
#[derive(Clone, Debug, PartialEq)]
pub struct PixzParams {
    pub threads: u32,
    pub size_mib: u64,
}

/// Keys `pixz:` accepts.
pub const KEYS: &[&str] = &["threads", "size_mib"];

impl PixzParams {
    pub fn from_spec(s: &BuiltinSpec) -> Result<Self, SpecError> {
        s.check_keys(KEYS)?;
        Ok(PixzParams {
            threads: s.get_u64("threads", 1, 1, 1024)? as u32,
            size_mib: s.get_u64("size_mib", 768, 1, 1 << 20)?,
        })
    }

    /// Blocks in the file (the last may be shorter; modelled full).
    pub fn blocks(&self) -> u32 {
        ((self.size_mib << 20).div_ceil(BLOCK_BYTES)) as u32
    }
}

/// Template 0 is the read thread (the process's main thread here), 1 the
/// writer, then the encoders.
pub fn build(p: &PixzParams, affinity: Option<CpuMask>) -> WorkloadSpec {
    let pieces = BLOCK_BYTES / PIECE_BYTES;
    let mut compress = Vec::with_capacity(2 * pieces as usize);
    for _ in 0..pieces {
        compress.push(Step::Compute {
            work_ns: PIECE_BYTES * COMPRESS_PS_PER_BYTE / 1000,
        });
        compress.push(Step::Memory {
            bytes: PIECE_BYTES * MISS_BYTES_PER_BYTE,
        });
    }
    pipeline(
        &Pipeline {
            name: format!("pixz:threads={},size_mib={}", p.threads, p.size_mib),
            prefix: "pixz",
            consumers: p.threads,
            blocks: p.blocks(),
            // pixz keeps a few more pipeline items than encoders (ESTIMATE: 2).
            queue_slots: p.threads + 2,
            read_ns: BLOCK_BYTES * READ_PS_PER_BYTE / 1000,
            compress,
            write_ns: BLOCK_BYTES / RATIO_DIV * WRITE_PS_PER_BYTE / 1000,
        },
        affinity,
    )
}

/// (elapsed s, tput MB/s) from marks `(template, tag, time)`.
pub fn result(p: &PixzParams, marks: &[(u32, u32, u64)]) -> Option<(f64, f64)> {
    pipeline_result(p.size_mib, marks)
}

/// What `time pixz -pN` shows: pixz itself prints nothing on success.
pub fn report(p: &PixzParams, r: Option<(f64, f64)>) -> String {
    let mut s = format!(
        "pixz -p {} (simulated): {} MiB in {} blocks of {} MiB\n",
        p.threads,
        p.size_mib,
        p.blocks(),
        BLOCK_BYTES >> 20
    );
    match r {
        Some((secs, tput)) => {
            s.push_str(&format!("real\t{secs:.3}s\n"));
            s.push_str(&format!("Throughput: {tput:.2} MB/s\n"));
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
    fn blocks_pieces_and_result() {
        let p = PixzParams::from_spec(&parse_spec("pixz:threads=3,size_mib=40").unwrap()).unwrap();
        assert_eq!(p.blocks(), 3);
        let spec = build(&p, None);
        assert_eq!(spec.templates.len(), 2 + 3);
        // Grab, wait, post, 256 × (compute, memory), post, loop, exit.
        assert_eq!(spec.templates[2].steps.len(), 3 + 2 * 256 + 3);
        assert!(
            matches!(spec.templates[2].steps[0], Step::Grab { exit_to, .. } if exit_to as usize == spec.templates[2].steps.len() - 1)
        );
        let (secs, tput) = result(&p, &[(0, TAG_START, 0), (1, TAG_END, 4_000_000_000)]).unwrap();
        assert_eq!(secs, 4.0);
        assert!((tput - 40.0 * 1.048576 / 4.0).abs() < 1e-9);
        assert!(report(&p, Some((secs, tput))).contains("real\t4.000s"));
        assert!(PixzParams::from_spec(&parse_spec("pixz:bogus=1").unwrap()).is_err());
    }
}
