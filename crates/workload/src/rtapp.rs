//! rt-app JSON import (scheduler-tools/rt-app, doc/tutorial.txt).
//!
//! An rt-app file describes threads as phases of events. This module turns it
//! into a [`WorkloadSpec`]: one thread template per task instance (named
//! `<task>-<idx>` as rt-app names its threads), the named mutexes, condition
//! variables, barriers and semaphores as [`SyncObject`]s, and each phase as a
//! list of [`Step`]s wrapped in loops.
//!
//! The text may use the relaxed syntax of json-c's default mode, which rt-app
//! parses with (comments, trailing commas: [`strict_json`]). JSON objects are
//! read in document order *with* duplicate keys (rt-app's event lists depend
//! on both: `workgen` de-duplicates repeated keys by suffixing them, but
//! hand-written files repeat keys), through an ordered value type of our own
//! rather than `serde_json::Value`.
//!
//! Event keys match by prefix as in rt-app (`run0`, `sleep_a`), with
//! `runtime` checked before `run` and `memrun` before `mem`.
//!
//! Mapping (see docs/workloads.md for the support matrix):
//! - `run` N: N µs of calibrated work on a capacity-1024 CPU (scales with the
//!   CPU's speed); `runtime` N: N µs of wall time busy on any CPU.
//! - `sleep`, `timer` (per-thread timers, relative or absolute mode),
//!   `lock`/`unlock`, `wait`, `signal`, `broad`, `sync` (signal + wait),
//!   `barrier` (parties = thread instances referencing it), `sem_post`/`sem_wait`,
//!   `suspend`/`resume` (rt-app's condition variable and mutex named by the
//!   event's value, the thread's own name when empty: a suspend waits for
//!   the next resume, which wakes every thread suspended on that name; a
//!   resume with nobody suspended is lost),
//!   `yield`, `fork`.
//! - `mem` N: N bytes streamed through the memory model; `memrun`
//!   {size, count}: size·count bytes likewise; `iorun` N: a sleep of N ns
//!   (a 1 GB/s device, ESTIMATE).
//! - Phase-level `cpus`: an affinity change at every phase start (the
//!   phase's CPUs, else the task's, else the thread's starting ones), as
//!   rt-app's set_thread_affinity() makes; phase-level `policy`,
//!   `priority` and `dl-runtime`: a change of attributes in the phases that
//!   name a policy or a priority, as its set_thread_param() makes;
//!   `util_min`/`util_max` (task or phase): utilisation clamps, applied
//!   whether or not the phase changes the rest.
//! - `global.pi_enabled`: every mutex is a [`SyncObject::PiMutex`], as
//!   rt-app gives its mutexes `PTHREAD_PRIO_INHERIT`.
//! - Accepted and recorded as notes, without effect: `taskgroup` (no
//!   cgroups), `nodes_membind`, the global keys other than `duration`,
//!   `calibration`, `default_policy` and `pi_enabled`, a fair task's
//!   `dl-period`/`dl-deadline`, and keys rt-app does not read (it passes
//!   over them too).

use crate::hist::Hist;
use crate::marks::{MarkFold, PerTask};
use crate::program::{
    Attrs, SchedPolicy, Step, SyncId, SyncObject, TemplateId, ThreadTemplate, WorkloadSpec,
};
use schedlab_topo::{CpuId, CpuMask};
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use std::collections::BTreeMap;
use std::fmt;
use thiserror::Error;

/// Mark tags after each timer: its expiry and when the thread ran again.
pub const TAG_TIMER_DUE: u32 = 0;
pub const TAG_TIMER_RUN: u32 = 1;

/// CPU work of one sched_yield() call, ns on a capacity-1024 CPU: kernel
/// entry and exit (lmbench's null system call takes 0.1-0.3 µs on current
/// server cores) plus do_sched_yield() and a pass through schedule(). An
/// ESTIMATE, of the same kind as the pipe models' per-call costs
/// (`pipe::SYSCALL_NS`); without a cost a loop of yields would let
/// simulated time stand still.
pub const SCHED_YIELD_NS: u64 = 500;

/// rt-app's FORKS_LIMIT: a thread's fork events of one task may create at
/// most this many threads; the next one makes rt-app exit with an error
/// ("... reached its fork limit"). It stops fork bombs.
pub const FORKS_LIMIT: u32 = 1024;

/// Simulated time limit when the file sets no duration (or -1), ns.
pub const DEFAULT_MAX_TIME_NS: u64 = 60_000_000_000;
/// Highest CPU number a `cpus` list may name (CpuMask width).
const MAX_CPU: u64 = 511;

/// A JSON value that keeps object keys in order, duplicates included.
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Num(v as f64))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Num(v as f64))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Json, E> {
        Ok(Json::Num(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Json, E> {
        Ok(Json::Str(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Json, E> {
        Ok(Json::Str(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut v = Vec::new();
        while let Some(x) = seq.next_element()? {
            v.push(x);
        }
        Ok(Json::Arr(v))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut v = Vec::new();
        while let Some((k, x)) = map.next_entry::<String, Json>()? {
            v.push((k, x));
        }
        Ok(Json::Obj(v))
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

impl Json {
    /// Parses JSON text keeping key order and duplicates, in the relaxed
    /// syntax rt-app accepts (see [`strict_json`]); a UTF-8 byte-order mark
    /// that an editor put in front is skipped.
    pub fn parse(text: &str) -> Result<Json, RtAppError> {
        let text = strict_json(text.strip_prefix('\u{feff}').unwrap_or(text))?;
        serde_json::from_str(&text).map_err(|e| {
            let e = e.to_string();
            // serde_json's words for a \uD800-\uDFFF escape without its pair.
            let lower = text.to_ascii_lowercase();
            let surrogate = ["8", "9", "a", "b", "c", "d", "e", "f"]
                .iter()
                .any(|d| lower.contains(&format!("\\ud{d}")));
            let hint = if surrogate && (e.contains("hex escape") || e.contains("surrogate")) {
                " (a \\u escape of U+D800..U+DFFF must be half of a surrogate pair)"
            } else {
                ""
            };
            RtAppError {
                path: "(file)".into(),
                msg: format!("not valid JSON: {e}{hint}"),
            }
        })
    }

    fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Num(_) => "a number",
            Json::Str(_) => "a string",
            Json::Arr(_) => "a list",
            Json::Obj(_) => "an object",
        }
    }
}

/// Rewrites the relaxed JSON that rt-app reads into strict JSON.
///
/// rt-app loads its file with json-c's json_object_from_file(), whose
/// tokener runs in json-c's default, non-strict mode, and rt-app's own
/// examples (doc/examples) rely on that: they carry `/* */` comments and
/// trailing commas. What this accepts beyond strict JSON is what that mode
/// accepts: `/* */` and `//` comments, a comma before a closing `]` or `}`,
/// single-quoted strings, raw control characters inside strings, and
/// `true`, `false` and `null` in any letter case. Comments and dropped commas
/// become spaces (newlines are kept), so the line and column of a later
/// syntax error still point into the file as written; only a single-quoted
/// string holding a double quote shifts its line's later columns by one per
/// such quote. Strict JSON comes back unchanged.
pub fn strict_json(text: &str) -> Result<String, RtAppError> {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let line_at = |i: usize| 1 + b[..i].iter().filter(|&&c| c == b'\n').count();
    let syntax = |i: usize, what: &str| RtAppError {
        path: "(file)".into(),
        msg: format!("not valid JSON: {what} at line {}", line_at(i)),
    };
    // Index just past the comment starting at `i` (a `/`), or None if `i`
    // starts no comment; Err if a block comment never ends.
    let comment_end = |i: usize| -> Result<Option<usize>, RtAppError> {
        match b.get(i + 1) {
            Some(b'*') => match text[i + 2..].find("*/") {
                Some(k) => Ok(Some(i + 2 + k + 2)),
                None => Err(syntax(i, "unterminated /* comment")),
            },
            Some(b'/') => Ok(Some(text[i..].find('\n').map_or(b.len(), |k| i + k))),
            _ => Ok(None),
        }
    };
    while i < b.len() {
        let c = b[i];
        match c {
            b'/' => match comment_end(i)? {
                Some(end) => {
                    for &d in &b[i..end] {
                        out.push(if d == b'\n' { '\n' } else { ' ' });
                    }
                    i = end;
                }
                None => {
                    out.push('/');
                    i += 1;
                }
            },
            b',' => {
                // A trailing comma: the next token (past blanks and comments)
                // closes the list or object.
                let mut j = i + 1;
                loop {
                    match b.get(j) {
                        Some(d) if d.is_ascii_whitespace() => j += 1,
                        Some(b'/') => match comment_end(j)? {
                            Some(end) => j = end,
                            None => break,
                        },
                        _ => break,
                    }
                }
                // Only after a value: json-c refuses `[,]` and `{,}`.
                let after_value = !matches!(
                    out.trim_end().as_bytes().last(),
                    None | Some(b'[' | b'{' | b',')
                );
                out.push(if after_value && matches!(b.get(j), Some(b']' | b'}')) {
                    ' '
                } else {
                    ','
                });
                i += 1;
            }
            b'"' | b'\'' => {
                let quote = c;
                out.push('"');
                i += 1;
                loop {
                    let Some(ch) = text[i..].chars().next() else {
                        return Err(syntax(i, "unterminated string"));
                    };
                    let n = ch.len_utf8();
                    match ch {
                        '\\' => {
                            let Some(next) = text[i + 1..].chars().next() else {
                                return Err(syntax(i, "unterminated string"));
                            };
                            if next == '\'' {
                                out.push('\'');
                            } else {
                                out.push('\\');
                                out.push(next);
                            }
                            i += 1 + next.len_utf8();
                            continue;
                        }
                        _ if ch as u32 == quote as u32 => {
                            out.push('"');
                            i += 1;
                            break;
                        }
                        '"' => out.push_str("\\\""),
                        _ if (ch as u32) < 0x20 => {
                            out.push_str(&format!("\\u{:04x}", ch as u32));
                        }
                        _ => out.push(ch),
                    }
                    i += n;
                }
            }
            _ if c.is_ascii_alphabetic()
                && !(i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'.')) =>
            {
                let end = b[i..]
                    .iter()
                    .position(|d| !d.is_ascii_alphanumeric())
                    .map_or(b.len(), |k| i + k);
                let word = &text[i..end];
                let lower = word.to_ascii_lowercase();
                if matches!(lower.as_str(), "true" | "false" | "null") {
                    out.push_str(&lower);
                } else {
                    out.push_str(word);
                }
                i = end;
            }
            _ => {
                let ch = text[i..].chars().next().unwrap_or('\u{fffd}');
                out.push(ch);
                i += ch.len_utf8();
            }
        }
    }
    Ok(out)
}

/// A malformed or unsupported part of an rt-app file, with its JSON path.
#[derive(Clone, Debug, Error, PartialEq)]
#[error("{path}: {msg}")]
pub struct RtAppError {
    pub path: String,
    pub msg: String,
}

fn err<T>(path: &str, msg: impl Into<String>) -> Result<T, RtAppError> {
    Err(RtAppError {
        path: path.to_string(),
        msg: msg.into(),
    })
}

fn num(v: &Json, path: &str) -> Result<f64, RtAppError> {
    match v {
        Json::Num(n) if n.is_finite() => Ok(*n),
        other => err(path, format!("expected a number, found {}", other.kind())),
    }
}

/// A number as an error message shows it: as written for ordinary
/// magnitudes, in exponent form (`1e300`) for huge or tiny ones.
fn shown(n: f64) -> String {
    if n != 0.0 && !(1e-6..1e9).contains(&n.abs()) {
        format!("{n:e}")
    } else {
        format!("{n}")
    }
}

/// A non-negative time in µs, converted to ns.
fn us(v: &Json, path: &str) -> Result<u64, RtAppError> {
    let n = num(v, path)?;
    if !(0.0..=1e12).contains(&n) {
        return err(path, format!("{} is outside 0..=1e12 µs", shown(n)));
    }
    Ok((n * 1000.0).round() as u64)
}

/// The most threads a file may start (its tasks' instances summed): half
/// the engine's task cap, as for hackbench's workers, leaving the rest for
/// forks and the system kthreads.
pub const MAX_THREADS: u64 = crate::hackbench::MAX_WORKERS;

/// The most program steps a file's threads may hold in all (each instance
/// has its own copy of its task's program; 32 bytes a step, so 512 MiB).
pub const MAX_STEPS: u64 = 1 << 24;

fn int(v: &Json, path: &str, min: i64, max: i64) -> Result<i64, RtAppError> {
    let n = num(v, path)?;
    if n.fract() != 0.0 || n < min as f64 || n > max as f64 {
        return err(
            path,
            format!("expected an integer in {min}..={max}, found {}", shown(n)),
        );
    }
    Ok(n as i64)
}

/// A whole number of µs as ns: rt-app reads the deadline keys with
/// get_int_value_from(), which exits on anything but a JSON integer.
/// µs that rt-app reads as a JSON integer (an event's `run`, `runtime`,
/// `sleep`, a timer's `period`, a task's `delay`): a number with a fraction
/// makes it exit (unknown_event, or get_int_value_from()'s type check).
fn whole_us(v: &Json, path: &str) -> Result<u64, RtAppError> {
    if let Json::Num(n) = v {
        if n.fract() != 0.0 {
            return err(
                path,
                format!(
                    "{} is not a whole number of µs (rt-app reads it as an integer and exits)",
                    shown(*n)
                ),
            );
        }
    }
    us(v, path)
}

fn int_us(v: &Json, path: &str) -> Result<u64, RtAppError> {
    Ok(int(v, path, 0, i64::from(i32::MAX))? as u64 * 1000)
}

fn string<'a>(v: &'a Json, path: &str) -> Result<&'a str, RtAppError> {
    match v {
        Json::Str(s) => Ok(s),
        other => err(path, format!("expected a string, found {}", other.kind())),
    }
}

fn object<'a>(v: &'a Json, path: &str) -> Result<&'a [(String, Json)], RtAppError> {
    match v {
        Json::Obj(o) => Ok(o),
        other => err(path, format!("expected an object, found {}", other.kind())),
    }
}

fn field<'a>(o: &'a [(String, Json)], key: &str) -> Option<&'a Json> {
    o.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
}

/// A loop count: -1 = forever, otherwise ≥ 1.
fn loop_count(v: &Json, path: &str) -> Result<u32, RtAppError> {
    let n = int(v, path, -1, u32::MAX as i64 - 1)?;
    match n {
        -1 => Ok(u32::MAX),
        0 => err(
            path,
            "a loop of 0 iterations is not supported (use -1 or ≥ 1)",
        ),
        n => Ok(n as u32),
    }
}

/// An imported rt-app file.
#[derive(Clone, Debug, PartialEq)]
pub struct RtApp {
    pub spec: WorkloadSpec,
    /// Keys accepted without effect, and approximations made.
    pub notes: Vec<String>,
    /// Every `cpus` list of the file with its JSON path (task or phase), in
    /// document order: the CPU sets its threads give themselves with
    /// sched_setaffinity(), which a run's `--cpus` restricts.
    pub cpus: Vec<(String, CpuMask)>,
    /// Each synchronisation object as the file names it, by id (`mutex
    /// "m"`, `cond "c"`, `barrier "b"`, `sem "s"`), for messages.
    pub objects: Vec<String>,
}

/// Scheduling policies rt-app knows. `prio` is the task's `priority` with
/// its path: for SCHED_OTHER and SCHED_BATCH a nice
/// value, which rt-app rejects outside -20..=19 (it exits), as we do; under
/// SCHED_IDLE rt-app sets no nice value and ignores it (the caller notes
/// that).
fn nice_for_policy(policy: &str, prio: Option<(i64, &str)>, path: &str) -> Result<i8, RtAppError> {
    let nice = |prio: Option<(i64, &str)>| match prio {
        Some((n, p)) if !(-20..=19).contains(&n) => err(
            p,
            format!("expected a nice value in -20..=19 for {policy}, found {n}"),
        ),
        Some((n, _)) => Ok(n as i8),
        None => Ok(0),
    };
    match policy {
        "SCHED_OTHER" | "SCHED_BATCH" => nice(prio),
        // SCHED_IDLE: the template's idle_policy gives weight 3; nice is unused.
        "SCHED_IDLE" => Ok(19),
        "SCHED_FIFO" | "SCHED_RR" | "SCHED_DEADLINE" => Ok(0),
        other => err(path, format!("unknown policy '{other}'")),
    }
}

/// The policy and nice value an imported rt-app thread gives itself when it
/// starts (the `SetAttr` after its delay), SCHED_OTHER at nice 0 if it sets
/// none; the nice value is that of the template under SCHED_IDLE.
pub fn thread_start_attrs(t: &ThreadTemplate) -> (SchedPolicy, i8) {
    match t.steps.get(1) {
        Some(Step::SetAttr(a)) => (a.policy, a.nice.unwrap_or(t.nice)),
        _ => (SchedPolicy::Normal, t.nice),
    }
}

/// rt-app's priority for SCHED_FIFO and SCHED_RR when a task or phase
/// names the policy without one (`DEFAULT_THREAD_PRIORITY`).
pub const DEFAULT_RT_PRIORITY: i64 = 10;

/// A task's or phase's SCHED_DEADLINE parameters as written (µs read as
/// ns, with the key's path): `dl-runtime`, `dl-period`, `dl-deadline`,
/// and on a task the older `runtime`, `period` and `deadline` that rt-app
/// reads when the `dl-` one is 0 or missing.
#[derive(Default)]
struct DlKeys {
    runtime: Option<u64>,
    period: Option<u64>,
    deadline: Option<u64>,
    legacy: [Option<u64>; 3],
    /// Where a bad set is reported when the policy comes from
    /// `global.default_policy` (the task has no `policy` key to name).
    err_path: Option<String>,
}

impl DlKeys {
    /// Any of the `dl-` keys is set.
    fn any(&self) -> bool {
        self.runtime.is_some() || self.period.is_some() || self.deadline.is_some()
    }

    /// The SCHED_DEADLINE policy they give (mirrors rt-app's
    /// parse_sched_data(): the period defaults to the runtime and the
    /// deadline to the period, the older keys filling what is still 0),
    /// checked as the kernel checks it: rt-app exits when sched_setattr()
    /// fails with EINVAL, so a bad set is an error at `path`.
    fn policy(&self, path: &str) -> Result<SchedPolicy, RtAppError> {
        let mut runtime = self.runtime.unwrap_or(0);
        let mut period = self.period.unwrap_or(runtime);
        let mut deadline = self.deadline.unwrap_or(period);
        let [lr, lp, ld] = self.legacy;
        if runtime == 0 {
            runtime = lr.unwrap_or(0);
        }
        if period == 0 {
            period = lp.unwrap_or(runtime);
        }
        if deadline == 0 {
            deadline = ld.unwrap_or(period);
        }
        crate::check_deadline_params(runtime, deadline, period).or_else(|why| {
            err(
                self.err_path.as_deref().unwrap_or(path),
                format!("{why} (sched_setattr() fails with EINVAL and rt-app exits; give dl-runtime, dl-period and dl-deadline in µs)"),
            )
        })
    }
}

/// Notes the deadline keys a task or phase gives outside SCHED_DEADLINE
/// (only `dl-runtime` means something there: a fair task's slice).
fn dl_keys_unused(dl: &DlKeys, deadline: bool, path: &str, notes: &mut Vec<String>) {
    if deadline {
        return;
    }
    for (v, key) in [
        (dl.period, "dl-period"),
        (dl.deadline, "dl-deadline"),
        (dl.legacy[1], "period"),
        (dl.legacy[2], "deadline"),
    ] {
        if v.is_some() {
            notes.push(format!(
                "{path}.{key} ignored: a fair task's sched_setattr() uses only its runtime"
            ));
        }
    }
}

/// The policy an rt-app policy name and priority stand for, with the nice
/// value for a fair policy (0 for the others): for SCHED_FIFO and SCHED_RR
/// the priority is the RT priority, 10 when none is given, and outside
/// 1..=99 an error, as pthread_setschedparam() fails and rt-app exits; for
/// SCHED_DEADLINE the parameters in `dl`.
fn policy_attrs(
    policy: &str,
    prio: Option<(i64, &str)>,
    dl: &DlKeys,
    path: &str,
) -> Result<(SchedPolicy, i8), RtAppError> {
    let nice = nice_for_policy(policy, prio, path)?;
    let rt = |prio: Option<(i64, &str)>| {
        match prio {
        Some((n, p)) if !(1..=99).contains(&n) => err(
            p,
            format!("expected an RT priority in 1..=99 for {policy}, found {n} (pthread_setschedparam() fails and rt-app exits)"),
        ),
        Some((n, _)) => Ok(n as u8),
        None => Ok(DEFAULT_RT_PRIORITY as u8),
    }
    };
    let sp = match policy {
        "SCHED_IDLE" => SchedPolicy::Idle,
        "SCHED_BATCH" => SchedPolicy::Batch,
        "SCHED_FIFO" => SchedPolicy::Fifo(rt(prio)?),
        "SCHED_RR" => SchedPolicy::Rr(rt(prio)?),
        "SCHED_DEADLINE" => dl.policy(path)?,
        _ => SchedPolicy::Normal,
    };
    Ok((sp, nice))
}

/// A task's or phase's `util_min` and `util_max` (`None`: not set, or -1,
/// rt-app's "no change").
#[derive(Clone, Copy, Default)]
struct Clamps {
    min: Option<u16>,
    max: Option<u16>,
}

impl Clamps {
    fn any(&self) -> bool {
        self.min.is_some() || self.max.is_some()
    }

    /// Both set with the minimum above the maximum: sched_setattr() fails
    /// with EINVAL and rt-app exits.
    fn check(&self, path: &str) -> Result<(), RtAppError> {
        match (self.min, self.max) {
            (Some(lo), Some(hi)) if lo > hi => err(
                &format!("{path}.util_min"),
                format!(
                    "{lo} is above util_max {hi} (sched_setattr() refuses it, and rt-app exits)"
                ),
            ),
            _ => Ok(()),
        }
    }
}

/// A utilisation clamp: -1 (no change) or 0-1024, as rt-app accepts it.
fn util_clamp(v: &Json, path: &str) -> Result<Option<u16>, RtAppError> {
    match int(v, path, -1, 1024)? {
        -1 => Ok(None),
        n => Ok(Some(n as u16)),
    }
}

/// Event kinds, in rt-app's prefix-matching order.
const EVENTS: &[&str] = &[
    "runtime", "run", "sleep", "timer", "unlock", "lock", "wait", "signal", "broad", "sync",
    "barrier", "suspend", "resume", "sem_post", "sem_wait", "memrun", "mem", "iorun", "yield",
    "fork",
];

/// Task-or-phase properties (exact keys).
const PROPS: &[&str] = &[
    "loop",
    "policy",
    "priority",
    "cpus",
    "util_min",
    "util_max",
    "taskgroup",
    "nodes_membind",
    "dl-runtime",
    "dl-period",
    "dl-deadline",
    "period",
    "deadline",
];

/// Named objects: one SyncObject per (kind, name).
#[derive(Default)]
struct Names {
    sync: Vec<SyncObject>,
    by_name: BTreeMap<(u8, String), SyncId>,
    timers: BTreeMap<String, u32>,
    /// Barrier id → thread instances referencing it.
    barrier_refs: BTreeMap<SyncId, u32>,
    /// `global.pi_enabled`: mutexes take priority inheritance.
    pi: bool,
}

const K_MUTEX: u8 = 0;
const K_COND: u8 = 1;
const K_BARRIER: u8 = 2;
const K_SEM: u8 = 3;

impl Names {
    fn get(&mut self, kind: u8, name: &str) -> SyncId {
        if let Some(&id) = self.by_name.get(&(kind, name.to_string())) {
            return id;
        }
        let id = self.sync.len() as SyncId;
        self.sync.push(match kind {
            K_MUTEX if self.pi => SyncObject::PiMutex,
            K_MUTEX => SyncObject::Mutex,
            K_COND => SyncObject::Cond,
            K_BARRIER => SyncObject::Barrier { parties: 0 },
            _ => SyncObject::Semaphore { initial: 0 },
        });
        self.by_name.insert((kind, name.to_string()), id);
        id
    }

    fn timer(&mut self, name: &str) -> u32 {
        let n = self.timers.len() as u32;
        *self.timers.entry(name.to_string()).or_insert(n)
    }
}

/// One task's program before instantiation (forks are resolved afterwards).
struct TaskDef {
    name: String,
    instances: u32,
    affinity: Option<CpuMask>,
    steps: Vec<Step>,
    /// Fork targets by task name, with the index in `steps` to patch.
    forks: Vec<(usize, String, String)>,
    barriers: Vec<SyncId>,
    /// Capacity (of 1024) of the calibration CPU: `run` is µs of its time.
    run_cap: u64,
}

/// Parses an rt-app JSON file for a machine with `nr_cpus` CPUs whose
/// speeds are unknown: `run` is µs of work on a capacity-1024 CPU.
pub fn parse(text: &str, nr_cpus: usize) -> Result<RtApp, RtAppError> {
    parse_with(text, nr_cpus, None)
}

/// Parses an rt-app JSON file for a machine whose CPU i runs alone at
/// `capacities[i]`/1024 of the fastest: a `"calibration": "CPUn"` makes
/// `run` µs of CPU n's time, as rt-app's loops calibrated there are;
/// without a calibration setting rt-app calibrates CPU0.
pub fn parse_for(text: &str, capacities: &[u64]) -> Result<RtApp, RtAppError> {
    parse_with(text, capacities.len(), Some(capacities))
}

fn parse_with(text: &str, nr_cpus: usize, capacities: Option<&[u64]>) -> Result<RtApp, RtAppError> {
    let root = Json::parse(text)?;
    let top = object(&root, "(top level)")?;
    let mut notes = Vec::new();
    let mut max_time_ns = None;
    let mut default_policy = "SCHED_OTHER".to_string();
    let mut pi_enabled = false;
    let mut run_cap = 1024;
    let mut calibration_set = false;
    for (k, v) in top {
        match k.as_str() {
            "tasks" => {}
            "global" => {
                for (gk, gv) in object(v, "global")? {
                    let path = format!("global.{gk}");
                    match gk.as_str() {
                        "duration" => {
                            let d = num(gv, &path)?;
                            if d == -1.0 {
                                max_time_ns = None;
                            } else if d > 0.0 && d <= 1e6 {
                                max_time_ns = Some((d * 1e9) as u64);
                            } else {
                                return err(
                                    &path,
                                    format!(
                                        "expected -1 (no limit) or a number of seconds above 0 and at most 1e6, found {}",
                                        shown(d)
                                    ),
                                );
                            }
                        }
                        "default_policy" => {
                            let p = string(gv, &path)?;
                            nice_for_policy(p, None, &path)?;
                            default_policy = p.to_string();
                        }
                        "calibration" => {
                            calibration_set = true;
                            run_cap = calibration(gv, &path, nr_cpus, capacities, &mut notes)?;
                        }
                        "pi_enabled" => match gv {
                            Json::Bool(b) => pi_enabled = *b,
                            Json::Null => {}
                            other => {
                                return err(
                                    &path,
                                    format!("expected a boolean, found {}", other.kind()),
                                )
                            }
                        },
                        "lock_pages" | "logdir" | "log_basename" | "log_size" | "ftrace"
                        | "gnuplot" | "io_device" | "mem_buffer_size" | "cumulative_slack" => {
                            notes.push(format!("{path} accepted and ignored"));
                        }
                        // rt-app reads the keys it knows and passes over
                        // the rest (mp3-short.json in its examples sets
                        // "frag").
                        _ => notes.push(format!("{path} ignored: rt-app does not read it")),
                    }
                }
            }
            "resources" => {
                notes.push("resources (legacy) ignored: objects are created by name".into())
            }
            _ => notes.push(format!(
                "{k} ignored: rt-app reads only tasks, global and resources at the top level"
            )),
        }
    }
    // rt-app calibrates CPU0 when the file does not say.
    if let (false, Some(caps)) = (calibration_set, capacities) {
        run_cap = caps.first().copied().unwrap_or(1024).clamp(1, 1024);
        if run_cap < 1024 {
            notes.push(format!(
                "no global.calibration: rt-app calibrates CPU0, so `run` is µs of CPU0's time (capacity {run_cap}/1024)"
            ));
        }
    }
    let Some(tasks) = field(top, "tasks") else {
        return err("tasks", "missing");
    };
    let tasks = object(tasks, "tasks")?;
    if tasks.is_empty() {
        return err("tasks", "no task defined");
    }
    let mut names = Names {
        pi: pi_enabled,
        ..Names::default()
    };
    let mut defs: Vec<TaskDef> = Vec::new();
    let mut cpu_lists = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for (tname, tv) in tasks {
        let path = format!("tasks.{tname}");
        if tname.is_empty() {
            return err("tasks", "a task has an empty name");
        }
        if !seen.insert(tname.as_str()) {
            return err(&path, "task defined twice");
        }
        defs.push(parse_task(
            tname,
            tv,
            &path,
            &Globals {
                default_policy: &default_policy,
                nr_cpus,
                run_cap,
            },
            &mut names,
            &mut notes,
            &mut cpu_lists,
        )?);
    }
    // Every instance is a thread with its own copy of its task's program:
    // bound both before building them (a short file may ask for millions).
    let threads: u64 = defs.iter().map(|d| u64::from(d.instances)).sum();
    if threads > MAX_THREADS {
        return err(
            "tasks",
            format!(
                "{threads} threads in all (the tasks' instances summed) is above {MAX_THREADS}: fewer instances"
            ),
        );
    }
    let steps: u64 = defs
        .iter()
        .map(|d| u64::from(d.instances.max(1)) * d.steps.len() as u64)
        .sum();
    if steps > MAX_STEPS {
        return err(
            "tasks",
            format!(
                "the threads' programs hold {steps} steps in all (each instance has its own), above {MAX_STEPS}: fewer instances or events"
            ),
        );
    }
    // Templates: one per instance; a task with 0 instances gets one template
    // that only `fork` starts.
    let mut templates = Vec::new();
    let mut initial = Vec::new();
    let mut first_tpl: BTreeMap<String, TemplateId> = BTreeMap::new();
    for d in &defs {
        first_tpl.insert(d.name.clone(), templates.len() as TemplateId);
        for i in 0..d.instances.max(1) {
            // rt-app names its threads `<task>-<idx>`; a fork-only task keeps its name.
            let name = if d.instances > 0 {
                format!("{}-{i}", d.name)
            } else {
                d.name.clone()
            };
            if d.instances > 0 {
                initial.push(templates.len() as TemplateId);
                for &b in &d.barriers {
                    *names.barrier_refs.entry(b).or_insert(0) += 1;
                }
            }
            // Created as rt-app creates its threads, SCHED_OTHER at nice 0
            // on any CPU: the thread's own first steps set its attributes
            // and its CPUs.
            templates.push(ThreadTemplate {
                idle_policy: false,
                name,
                nice: 0,
                affinity: None,
                steps: d.steps.clone(),
            });
        }
    }
    // Resolve forks.
    let mut tpl_of_def = 0usize;
    for d in &defs {
        let n = d.instances.max(1) as usize;
        for (at, target, path) in &d.forks {
            let Some(&t) = first_tpl.get(target) else {
                return err(path, format!("fork of unknown task '{target}'"));
            };
            for tpl in &mut templates[tpl_of_def..tpl_of_def + n] {
                tpl.steps[*at] = Step::ForkLimit {
                    template: t,
                    limit: FORKS_LIMIT,
                };
                tpl.steps[*at + 1] = Step::Spawn { template: t };
            }
        }
        tpl_of_def += n;
    }
    // rt-app creates no thread for `instance: 0`, only the task's structures
    // for a fork: legal, but a task nothing forks then never runs.
    let forked: std::collections::BTreeSet<&str> = defs
        .iter()
        .flat_map(|o| o.forks.iter().map(|(_, t, _)| t.as_str()))
        .collect();
    for d in defs.iter().filter(|d| d.instances == 0) {
        if !forked.contains(d.name.as_str()) {
            notes.push(format!(
                "tasks.{}: instance 0 and no task forks it: it never runs",
                d.name
            ));
        }
    }
    for (id, parties) in &names.barrier_refs {
        names.sync[*id as usize] = SyncObject::Barrier { parties: *parties };
    }
    let mut objects = vec![String::new(); names.sync.len()];
    for ((kind, name), &id) in &names.by_name {
        let kind = match *kind {
            K_MUTEX => "mutex",
            K_COND => "cond",
            K_BARRIER => "barrier",
            _ => "sem",
        };
        objects[id as usize] = format!("{kind} {name:?}");
    }
    if max_time_ns.is_none() {
        notes.push(format!(
            "no global.duration: simulation limited to {} s",
            DEFAULT_MAX_TIME_NS / 1_000_000_000
        ));
    }
    Ok(RtApp {
        spec: WorkloadSpec {
            name: "rt-app".into(),
            templates,
            initial,
            sync: names.sync,
            mem_node: None,
            max_time_ns: max_time_ns.unwrap_or(DEFAULT_MAX_TIME_NS),
        },
        notes,
        cpus: cpu_lists,
        objects,
    })
}

fn parse_cpus(v: &Json, path: &str, nr_cpus: usize) -> Result<CpuMask, RtAppError> {
    let Json::Arr(list) = v else {
        return err(path, format!("expected a list of CPUs, found {}", v.kind()));
    };
    let mut cpus = Vec::new();
    for (i, c) in list.iter().enumerate() {
        let p = format!("{path}[{i}]");
        let c = int(c, &p, 0, MAX_CPU as i64)? as usize;
        if c >= nr_cpus {
            return err(
                &p,
                format!("CPU {c} does not exist (the machine has {nr_cpus})"),
            );
        }
        cpus.push(c as CpuId);
    }
    if cpus.is_empty() {
        return err(path, "empty CPU list");
    }
    Ok(CpuMask::from_cpus(cpus))
}

/// `global.calibration`: the capacity (of 1024) of the CPU whose time `run`
/// counts. `"CPUn"` names it (when the machine's capacities are known); ns
/// per loop were measured on an unknown CPU, taken as a capacity-1024 one.
fn calibration(
    gv: &Json,
    path: &str,
    nr_cpus: usize,
    capacities: Option<&[u64]>,
    notes: &mut Vec<String>,
) -> Result<u64, RtAppError> {
    const UNKNOWN: &str = "`run` is µs of work on a capacity-1024 CPU";
    match gv {
        Json::Str(s) => {
            let Some(cpu) = s.strip_prefix("CPU").and_then(|n| n.parse::<usize>().ok()) else {
                return err(path, format!("expected \"CPUn\", found \"{s}\""));
            };
            if cpu >= nr_cpus {
                return err(
                    path,
                    format!(
                        "CPU{cpu} is beyond the machine's {nr_cpus} CPU{}",
                        if nr_cpus == 1 { "" } else { "s" }
                    ),
                );
            }
            Ok(match capacities {
                Some(caps) => {
                    let cap = caps[cpu].clamp(1, 1024);
                    notes.push(format!(
                        "global.calibration {s}: `run` is µs of {s}'s time (capacity {cap}/1024)"
                    ));
                    cap
                }
                None => {
                    notes.push(format!("global.calibration: CPU speeds unknown, {UNKNOWN}"));
                    1024
                }
            })
        }
        Json::Num(n) if *n <= 0.0 => err(
            path,
            format!(
                "ns per loop must be > 0, found {} (\"CPUn\" calibrates on CPU n)",
                shown(*n)
            ),
        ),
        Json::Num(_) => {
            notes.push(format!(
                "global.calibration in ns per loop: its CPU is unknown, {UNKNOWN}"
            ));
            Ok(1024)
        }
        other => err(
            path,
            format!("expected \"CPUn\" or ns per loop, found {}", other.kind()),
        ),
    }
}

/// What the `global` section sets for every task.
struct Globals<'a> {
    default_policy: &'a str,
    nr_cpus: usize,
    /// Capacity (of 1024) of the calibration CPU.
    run_cap: u64,
}

fn parse_task(
    tname: &str,
    tv: &Json,
    path: &str,
    g: &Globals,
    names: &mut Names,
    notes: &mut Vec<String>,
    cpu_lists: &mut Vec<(String, CpuMask)>,
) -> Result<TaskDef, RtAppError> {
    let (default_policy, nr_cpus, run_cap) = (g.default_policy, g.nr_cpus, g.run_cap);
    let o = object(tv, path)?;
    let mut def = TaskDef {
        name: tname.to_string(),
        instances: 1,
        affinity: None,
        steps: Vec::new(),
        forks: Vec::new(),
        barriers: Vec::new(),
        run_cap,
    };
    let mut policy = default_policy.to_string();
    let mut prio = None;
    let mut task_loop = u32::MAX;
    let mut task_slice: Option<u64> = None;
    let mut delay_ns = 0;
    let mut has_phases = false;
    let mut has_events = false;
    let mut clamps = Clamps::default();
    let mut dl = DlKeys::default();
    for (k, v) in o {
        let p = format!("{path}.{k}");
        match k.as_str() {
            "util_min" => clamps.min = util_clamp(v, &p)?,
            "util_max" => clamps.max = util_clamp(v, &p)?,
            "instance" => def.instances = int(v, &p, 0, 4096)? as u32,
            "delay" => delay_ns = whole_us(v, &p)?,
            "loop" => task_loop = loop_count(v, &p)?,
            "policy" => policy = string(v, &p)?.to_string(),
            "priority" => prio = Some((int(v, &p, i32::MIN.into(), i32::MAX.into())?, p)),
            "cpus" => {
                let mask = parse_cpus(v, &p, nr_cpus)?;
                def.affinity = Some(mask);
                cpu_lists.push((p, mask));
            }
            // Since 6.12 a fair task's sched_runtime requests a custom slice.
            "dl-runtime" => {
                task_slice = Some(int_us(v, &p)?);
                dl.runtime = task_slice;
            }
            "dl-period" => dl.period = Some(int_us(v, &p)?),
            "dl-deadline" => dl.deadline = Some(int_us(v, &p)?),
            "period" => dl.legacy[1] = Some(int_us(v, &p)?),
            "deadline" => dl.legacy[2] = Some(int_us(v, &p)?),
            "phases" => has_phases = true,
            _ => {
                if event_kind(k).is_some() {
                    has_events = true;
                } else {
                    check_prop(k, &p, notes)?;
                }
            }
        }
    }
    let deadline = policy == "SCHED_DEADLINE";
    if deadline && field(o, "policy").is_none() {
        dl.err_path = Some(if field(o, "dl-runtime").is_some() {
            format!("{path}.dl-runtime")
        } else {
            path.to_string()
        });
    }
    if deadline {
        // The older grammar's `runtime` is also the run event's key: rt-app
        // reads it both ways.
        if let Some(v) = field(o, "runtime") {
            dl.legacy[0] = Some(int_us(v, &format!("{path}.runtime"))?);
        }
    }
    let (fair, nice) = policy_attrs(
        &policy,
        prio.as_ref().map(|(n, p)| (*n, p.as_str())),
        &dl,
        &format!("{path}.policy"),
    )?;
    dl_keys_unused(&dl, deadline, path, notes);
    if deadline {
        if let Some((_, p)) = &prio {
            notes.push(format!(
                "{p} ignored under SCHED_DEADLINE (rt-app sets priority 0)"
            ));
        }
        if clamps.any() {
            notes.push(format!(
                "{path}.util_min/util_max ignored under SCHED_DEADLINE, as rt-app does"
            ));
            clamps = Clamps::default();
        }
    }
    let idle = fair == SchedPolicy::Idle;
    if let (true, Some((_, p))) = (idle, &prio) {
        notes.push(format!("{p} ignored under SCHED_IDLE, as rt-app does"));
    }
    // _set_thread_rt() sets the policy and RT priority alone, and
    // _set_thread_deadline() the deadline parameters.
    let rt = !fair.is_fair();
    if fair.rt_priority().is_some() && task_slice.is_some() {
        notes.push(format!(
            "{path}.dl-runtime ignored under {policy}, as rt-app does"
        ));
    }
    clamps.check(path)?;
    // Every thread waits for t_zero + delay (at once when that has passed)
    // and counts its timers from there.
    def.steps.push(Step::Delay { ns: delay_ns });
    // Then it sets its own attributes (rt-app's set_thread_param() after
    // the delay). A thread starts as its creator left it: rt-app's own
    // threads SCHED_OTHER at nice 0 and unclamped, a thread made by a
    // `fork` event with the forking thread's policy, nice value, slice and
    // clamps. A task's attributes always exist (its policy defaults to the
    // global one and its priority to nice 0), so the step is always there;
    // when it changes nothing it is a no-op.
    def.steps.push(Step::SetAttr(Box::new(Attrs {
        policy: fair,
        nice: (!idle && !rt).then_some(nice),
        runtime_ns: (!idle && !rt).then_some(task_slice.unwrap_or(0)),
        util_min: clamps.min,
        util_max: clamps.max,
    })));
    // The affinity at every phase start (rt-app's set_thread_affinity():
    // the phase's `cpus`, else the task's, else the CPUs the thread started
    // with): a thread is created where fork balancing puts it and moves
    // itself, after its delay and attributes. With no phase `cpus`, the
    // task's apply from the first phase on.
    let phase_cpus = has_phases
        && matches!(field(o, "phases"), Some(Json::Obj(ph))
            if ph.iter().any(|(_, pv)| matches!(pv, Json::Obj(po) if field(po, "cpus").is_some())));
    if let (false, Some(mask)) = (phase_cpus, def.affinity) {
        def.steps.push(Step::SetAffinity {
            cpus: Some(Box::new(mask)),
        });
    }
    if has_phases && has_events {
        return err(path, "events must be inside phases when phases is given");
    }
    let body_start = def.steps.len() as u32;
    if has_phases {
        let phases = object(
            field(o, "phases").unwrap_or(&Json::Null),
            &format!("{path}.phases"),
        )?;
        if phases.is_empty() {
            return err(&format!("{path}.phases"), "no phase defined");
        }
        // The scheduling attributes (rt-app's set_thread_param()): only a
        // phase that names a policy or a priority changes them (for the fair
        // policies _set_thread_cfs() returns early otherwise, dl-runtime or
        // not), and they stay until another such phase; a phase without a
        // policy takes the one in force, which rt-app resolves on the first
        // pass and then keeps.
        let mut policy_now = policy.clone();
        let mut attrs_now = fair;
        for (pname, pv) in phases {
            let pp = format!("{path}.phases.{pname}");
            let po = object(pv, &pp)?;
            let mut ploop = 1;
            let mut cpus = def.affinity;
            let (mut ppolicy, mut pprio, mut pruntime) = (None, None, None);
            let mut pclamps = Clamps::default();
            let mut pdl = DlKeys::default();
            for (k, v) in po {
                let p = format!("{pp}.{k}");
                match k.as_str() {
                    "util_min" => pclamps.min = util_clamp(v, &p)?,
                    "util_max" => pclamps.max = util_clamp(v, &p)?,
                    "loop" => ploop = loop_count(v, &p)?,
                    "dl-runtime" => {
                        let ns = int_us(v, &p)?;
                        pdl.runtime = Some(ns);
                        pruntime = Some((ns, p));
                    }
                    "dl-period" => pdl.period = Some(int_us(v, &p)?),
                    "dl-deadline" => pdl.deadline = Some(int_us(v, &p)?),
                    "cpus" => {
                        let mask = parse_cpus(v, &p, nr_cpus)?;
                        cpus = Some(mask);
                        cpu_lists.push((p, mask));
                    }
                    "policy" => ppolicy = Some((string(v, &p)?.to_string(), p)),
                    "priority" => pprio = Some((int(v, &p, i32::MIN.into(), i32::MAX.into())?, p)),
                    _ if event_kind(k).is_some() => {}
                    _ => check_prop(k, &p, notes)?,
                }
            }
            pclamps.check(&pp)?;
            if phase_cpus {
                def.steps.push(Step::SetAffinity {
                    cpus: cpus.map(Box::new),
                });
            }
            let phase_policy = ppolicy
                .as_ref()
                .map_or(policy_now.as_str(), |(p, _)| p.as_str());
            let phase_dl = phase_policy == "SCHED_DEADLINE";
            dl_keys_unused(&pdl, phase_dl, &pp, notes);
            if phase_dl && (ppolicy.is_some() || pprio.is_some() || pdl.any() || pclamps.any()) {
                // set_thread_param() under SCHED_DEADLINE: whatever the
                // phase sets, _set_thread_deadline() runs with the phase's
                // own deadline keys (the older ones are read on tasks only).
                let pol_path = ppolicy
                    .as_ref()
                    .map_or_else(|| pp.clone(), |(_, p)| p.clone());
                let dl_policy = pdl.policy(&pol_path)?;
                if let Some((_, p)) = &pprio {
                    notes.push(format!(
                        "{p} ignored under SCHED_DEADLINE (rt-app sets priority 0)"
                    ));
                }
                if pclamps.any() {
                    notes.push(format!(
                        "{pp}.util_min/util_max ignored under SCHED_DEADLINE, as rt-app does"
                    ));
                }
                def.steps.push(Step::SetAttr(Box::new(Attrs {
                    policy: dl_policy,
                    nice: None,
                    runtime_ns: None,
                    util_min: None,
                    util_max: None,
                })));
                policy_now = "SCHED_DEADLINE".to_string();
                attrs_now = dl_policy;
            } else if ppolicy.is_some() || pprio.is_some() {
                let (pol, pol_path) = match ppolicy {
                    Some((pol, p)) => (pol, p),
                    None => (policy_now.clone(), format!("{pp}.priority")),
                };
                // A policy without a priority sets nice 0 (rt-app's
                // DEFAULT_THREAD_NICE), or RT priority 10.
                let rt_policy = matches!(pol.as_str(), "SCHED_FIFO" | "SCHED_RR");
                let (fair, nice) = policy_attrs(
                    &pol,
                    match &pprio {
                        Some((n, p)) => Some((*n, p.as_str())),
                        None if rt_policy => None,
                        None => Some((0, pol_path.as_str())),
                    },
                    &pdl,
                    &pol_path,
                )?;
                let idle_policy = fair == SchedPolicy::Idle;
                if let (true, Some((_, p))) = (rt_policy, &pruntime) {
                    notes.push(format!("{p} ignored under {pol}, as rt-app does"));
                }
                if let (true, Some((_, p))) = (idle_policy, &pprio) {
                    notes.push(format!("{p} ignored under SCHED_IDLE, as rt-app does"));
                }
                // SCHED_IDLE gets neither a nice value nor sched_setattr()'s
                // runtime from rt-app; the others get both (runtime 0: the
                // base slice).
                let fair_attrs = !idle_policy && !rt_policy;
                def.steps.push(Step::SetAttr(Box::new(Attrs {
                    policy: fair,
                    nice: fair_attrs.then_some(nice),
                    runtime_ns: fair_attrs.then_some(pruntime.as_ref().map_or(0, |r| r.0)),
                    util_min: pclamps.min,
                    util_max: pclamps.max,
                })));
                policy_now = pol;
                attrs_now = fair;
            } else {
                if let Some((_, p)) = &pruntime {
                    notes.push(format!(
                        "{p} ignored: rt-app applies a phase's attributes only when the phase sets a policy or a priority"
                    ));
                }
                // _set_thread_uclamp() runs whatever _set_thread_cfs() did.
                if pclamps.any() {
                    def.steps.push(Step::SetAttr(Box::new(Attrs {
                        policy: attrs_now,
                        nice: None,
                        runtime_ns: None,
                        util_min: pclamps.min,
                        util_max: pclamps.max,
                    })));
                }
            }
            let start = def.steps.len() as u32;
            events(po, &pp, &mut def, names)?;
            if def.steps.len() as u32 == start {
                return err(&pp, "phase has no event");
            }
            if ploop != 1 {
                def.steps.push(Step::Loop {
                    start,
                    count: ploop,
                    slot: 1,
                });
            }
        }
    } else {
        events(o, path, &mut def, names)?;
        if def.steps.len() as u32 == body_start {
            // Keys passed over as neither events nor properties may be
            // misspelt events: name them.
            let prefix = format!("{path}.");
            let ignored: Vec<&str> = notes
                .iter()
                .filter_map(|n| n.strip_prefix(&prefix)?.split_once(" ignored: neither"))
                .map(|(k, _)| k)
                .collect();
            if !ignored.is_empty() {
                return err(
                    path,
                    format!(
                        "task has no event (`{}` {} neither an rt-app event nor a property)",
                        ignored.join("`, `"),
                        if ignored.len() == 1 { "is" } else { "are" }
                    ),
                );
            }
            return err(path, "task has no event");
        }
    }
    if task_loop != 1 {
        def.steps.push(Step::Loop {
            start: body_start,
            count: task_loop,
            slot: 0,
        });
    }
    // thread_body()'s end: pthread_setschedparam(SCHED_OTHER, 0) before the
    // thread exits (sched_setscheduler() keeps the nice value and a custom
    // slice; clamps not set by the user return to their defaults).
    def.steps.push(Step::SetAttr(Box::new(Attrs {
        policy: SchedPolicy::Normal,
        nice: None,
        runtime_ns: None,
        util_min: None,
        util_max: None,
    })));
    def.steps.push(Step::Exit);
    Ok(def)
}

/// Accepts a property without effect, or a key rt-app does not read, with a
/// note.
fn check_prop(k: &str, p: &str, notes: &mut Vec<String>) -> Result<(), RtAppError> {
    match k {
        "taskgroup" | "nodes_membind" => {
            notes.push(format!("{p} accepted and recorded (not modelled)"));
            Ok(())
        }
        // The deadline parameters go to sched_setattr(), which uses only
        // sched_runtime (a custom slice) for a fair task; a deadline policy
        // is refused with the policy.
        _ if PROPS.contains(&k) => {
            notes.push(format!(
                "{p} ignored: a fair task's sched_setattr() uses only its runtime"
            ));
            Ok(())
        }
        // rt-app takes the keys that start like an event as events and
        // reads its properties by name; anything else it passes over.
        _ => {
            notes.push(format!(
                "{p} ignored: neither an rt-app event nor a property (rt-app ignores it too)"
            ));
            Ok(())
        }
    }
}

/// The event kind a key denotes (prefix match in rt-app's order).
pub fn event_kind(key: &str) -> Option<&'static str> {
    if PROPS.contains(&key) || matches!(key, "instance" | "delay" | "phases") {
        return None;
    }
    EVENTS.iter().copied().find(|e| key.starts_with(e))
}

/// Appends the steps of the events of object `o` (other keys are skipped).
fn events(
    o: &[(String, Json)],
    path: &str,
    def: &mut TaskDef,
    names: &mut Names,
) -> Result<(), RtAppError> {
    for (k, v) in o {
        let Some(kind) = event_kind(k) else {
            continue;
        };
        let p = format!("{path}.{k}");
        let name = |v: &Json| -> Result<String, RtAppError> {
            let s = string(v, &p)?;
            if s.is_empty() {
                return err(&p, "empty name");
            }
            Ok(s.to_string())
        };
        let steps = &mut def.steps;
        match kind {
            // µs of the calibration CPU's time, as work on a 1024 CPU.
            "run" => steps.push(Step::Compute {
                work_ns: whole_us(v, &p)?.saturating_mul(def.run_cap) / 1024,
            }),
            "runtime" => steps.push(Step::RunWall {
                ns: whole_us(v, &p)?,
            }),
            // rt-app's sleep event is a clock_nanosleep().
            "sleep" => steps.push(Step::Nanosleep {
                ns: whole_us(v, &p)?,
            }),
            "timer" => {
                let to = object(v, &p)?;
                let tref = match field(to, "ref") {
                    Some(r) => string(r, &format!("{p}.ref"))?.to_string(),
                    None => "unique".to_string(),
                };
                let Some(period) = field(to, "period") else {
                    return err(&format!("{p}.period"), "missing");
                };
                let period_ns = whole_us(period, &format!("{p}.period"))?;
                if period_ns == 0 {
                    return err(&format!("{p}.period"), "must be positive");
                }
                let absolute = match field(to, "mode") {
                    None => false,
                    Some(m) => match string(m, &format!("{p}.mode"))? {
                        "relative" => false,
                        "absolute" => true,
                        other => {
                            return err(
                                &format!("{p}.mode"),
                                format!("expected relative or absolute, found '{other}'"),
                            )
                        }
                    },
                };
                for (tk, _) in to {
                    if !matches!(tk.as_str(), "ref" | "period" | "mode") {
                        return err(&format!("{p}.{tk}"), "unknown timer key");
                    }
                }
                let id = names.timer(&tref);
                steps.push(Step::Timer {
                    id,
                    period_ns,
                    absolute,
                });
                // rt-app's wu_lat: expiry → running again.
                steps.push(Step::MarkWoken { tag: TAG_TIMER_DUE });
                steps.push(Step::Mark { tag: TAG_TIMER_RUN });
            }
            "lock" => {
                let m = names.get(K_MUTEX, &name(v)?);
                steps.push(Step::Lock { mutex: m });
            }
            "unlock" => {
                let m = names.get(K_MUTEX, &name(v)?);
                steps.push(Step::Unlock { mutex: m });
            }
            "wait" | "sync" => {
                let wo = object(v, &p)?;
                let r = field(wo, "ref").ok_or_else(|| RtAppError {
                    path: format!("{p}.ref"),
                    msg: "missing".into(),
                })?;
                let m = field(wo, "mutex").ok_or_else(|| RtAppError {
                    path: format!("{p}.mutex"),
                    msg: "missing".into(),
                })?;
                let c = names.get(K_COND, string(r, &format!("{p}.ref"))?);
                let m = names.get(K_MUTEX, string(m, &format!("{p}.mutex"))?);
                if kind == "sync" {
                    steps.push(Step::Signal { cond: c });
                }
                steps.push(Step::Wait {
                    cond: c,
                    mutex: Some(m),
                });
            }
            "signal" => {
                let c = names.get(K_COND, &name(v)?);
                steps.push(Step::Signal { cond: c });
            }
            "broad" => {
                let c = names.get(K_COND, &name(v)?);
                steps.push(Step::Broadcast { cond: c });
            }
            "barrier" => {
                let b = names.get(K_BARRIER, &name(v)?);
                if !def.barriers.contains(&b) {
                    def.barriers.push(b);
                }
                steps.push(Step::Barrier { id: b, spin_ns: 0 });
            }
            "suspend" => {
                // A thread suspends itself; the value names it (or is empty).
                let s = match v {
                    Json::Str(s) if !s.is_empty() => s.clone(),
                    Json::Str(_) => def.name.clone(),
                    other => return err(&p, format!("expected a string, found {}", other.kind())),
                };
                // rt-app's run_event(): lock the name's mutex,
                // pthread_cond_wait() on its condition, unlock. Its parser
                // finds both by name and type, so they are the mutex a
                // `lock` and the condition a `wait` or `signal` of that name
                // use.
                let (c, m) = (names.get(K_COND, &s), names.get(K_MUTEX, &s));
                steps.extend([
                    Step::Lock { mutex: m },
                    Step::Wait {
                        cond: c,
                        mutex: Some(m),
                    },
                    Step::Unlock { mutex: m },
                ]);
            }
            "resume" => {
                // Lock, pthread_cond_broadcast(), unlock: every thread
                // suspended on the name wakes; none suspended, nothing is kept.
                let s = name(v)?;
                let (c, m) = (names.get(K_COND, &s), names.get(K_MUTEX, &s));
                steps.extend([
                    Step::Lock { mutex: m },
                    Step::Broadcast { cond: c },
                    Step::Unlock { mutex: m },
                ]);
            }
            "sem_post" => {
                let id = names.get(K_SEM, &name(v)?);
                steps.push(Step::SemPost { sem: id });
            }
            "sem_wait" => {
                let id = names.get(K_SEM, &name(v)?);
                steps.push(Step::SemWait { sem: id });
            }
            "mem" => {
                let b = int(v, &p, 0, 1 << 40)? as u64;
                steps.push(Step::Memory { bytes: b });
            }
            "iorun" => {
                let b = int(v, &p, 0, 1 << 40)? as u64;
                steps.push(Step::Sleep { ns: b });
            }
            "memrun" => {
                let mo = object(v, &p)?;
                let mut size = 4096u64;
                let mut count = 1u64;
                for (mk, mv) in mo {
                    let mp = format!("{p}.{mk}");
                    match mk.as_str() {
                        "size" => size = int(mv, &mp, 0, 1 << 40)? as u64,
                        "count" => count = int(mv, &mp, 0, 1 << 30)? as u64,
                        "type" => {
                            let t = string(mv, &mp)?;
                            if !matches!(t, "read" | "write" | "chase") {
                                return err(&mp, "expected read, write or chase");
                            }
                        }
                        "stride" | "pattern" | "ref" => {}
                        _ => return err(&mp, "unknown memrun key"),
                    }
                }
                steps.push(Step::Memory {
                    bytes: size.saturating_mul(count),
                });
            }
            "yield" => steps.push(Step::Yield {
                syscall_ns: SCHED_YIELD_NS,
            }),
            "fork" => {
                let target = name(v)?;
                def.forks.push((steps.len(), target, p.clone()));
                steps.push(Step::ForkLimit {
                    template: 0,
                    limit: FORKS_LIMIT,
                });
                steps.push(Step::Spawn { template: 0 });
            }
            _ => return err(&p, "unsupported event"),
        }
    }
    Ok(())
}

/// Timer wakeup latencies (rt-app's `wu_lat`), µs, from marks
/// `(task, tag, time)` in recording order.
pub fn timer_latencies_us(marks: &[(u32, u32, u64)]) -> Hist {
    TimerLatencies::default().fold(marks).latencies_us
}

/// [`timer_latencies_us`] one mark at a time, as the run makes them: memory
/// bounded by the number of threads and of distinct latencies.
#[derive(Clone, Debug, Default)]
pub struct TimerLatencies {
    /// Per task: when its timer last expired.
    due_ns: PerTask,
    pub latencies_us: Hist,
}

impl MarkFold for TimerLatencies {
    /// One thread mark.
    fn mark(&mut self, t: u32, tag: u32, at: u64) {
        match tag {
            TAG_TIMER_DUE => self.due_ns.set(t, at),
            TAG_TIMER_RUN => {
                if let Some(d) = self.due_ns.get(t) {
                    self.latencies_us.add(at.saturating_sub(d) / 1000);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_order_and_duplicates() {
        let j = Json::parse(r#"{"run": 1, "sleep": 2, "run": 3}"#).unwrap();
        let Json::Obj(o) = j else { panic!() };
        let keys: Vec<&str> = o.iter().map(|x| x.0.as_str()).collect();
        assert_eq!(keys, ["run", "sleep", "run"]);
    }

    #[test]
    fn prefix_matching_follows_rt_app() {
        assert_eq!(event_kind("runtime0"), Some("runtime"));
        assert_eq!(event_kind("run0"), Some("run"));
        assert_eq!(event_kind("memrun"), Some("memrun"));
        assert_eq!(event_kind("mem1"), Some("mem"));
        assert_eq!(event_kind("sleep_a"), Some("sleep"));
        assert_eq!(event_kind("unlock2"), Some("unlock"));
        assert_eq!(event_kind("loop"), None);
        assert_eq!(event_kind("priority"), None);
    }

    /// rt-app reads event durations, timer periods and `delay` as JSON
    /// integers and exits on a fraction (unknown_event; get_int_value_from()).
    #[test]
    fn fractional_event_durations_are_errors() {
        for (doc, path) in [
            (r#"{"tasks": {"a": {"run": 1.5}}}"#, "tasks.a.run"),
            (
                r#"{"tasks": {"a": {"run": 1, "sleep": 0.5}}}"#,
                "tasks.a.sleep",
            ),
            (r#"{"tasks": {"a": {"runtime": 2.25}}}"#, "tasks.a.runtime"),
            (
                r#"{"tasks": {"a": {"delay": 10.5, "run": 1}}}"#,
                "tasks.a.delay",
            ),
            (
                r#"{"tasks": {"a": {"run": 1, "timer": {"ref": "t", "period": 99.9}}}}"#,
                "tasks.a.timer.period",
            ),
        ] {
            let e = parse(doc, 4).unwrap_err();
            assert_eq!(e.path, path, "{doc}");
            assert!(e.to_string().contains("not a whole number"), "{e}");
        }
        assert!(parse(r#"{"tasks": {"a": {"run": 1500}}}"#, 4).is_ok());
    }

    #[test]
    fn errors_name_the_path() {
        let e = parse(
            r#"{"tasks": {"ui": {"phases": {"p": {"run": 1, "timer": {"period": "x"}}}}}}"#,
            4,
        )
        .unwrap_err();
        assert_eq!(e.path, "tasks.ui.phases.p.timer.period");
        assert!(e.to_string().contains("expected a number"), "{e}");
        let e = parse(r#"{"tasks": {"a": {"run": 1, "cpus": [9]}}}"#, 4).unwrap_err();
        assert_eq!(e.path, "tasks.a.cpus[0]");
        let e = parse(
            r#"{"tasks": {"a": {"policy": "SCHED_DEADLINE", "run": 1}}}"#,
            4,
        )
        .unwrap_err();
        assert_eq!(e.path, "tasks.a.policy");
        let e = parse(
            r#"{"tasks": {"a": {"policy": "SCHED_RR", "priority": 0, "run": 1}}}"#,
            4,
        )
        .unwrap_err();
        assert_eq!(e.path, "tasks.a.priority");
        assert!(e.to_string().contains("1..=99"), "{e}");
        // rt-app passes over keys it does not read: so do we, with a note,
        // unless nothing is left to run.
        let r = parse(r#"{"tasks": {"a": {"bogus": 1, "run": 1}}}"#, 4).unwrap();
        assert!(r
            .notes
            .iter()
            .any(|n| n.starts_with("tasks.a.bogus ignored")));
        let e = parse(r#"{"tasks": {"a": {"bogus": 1}}}"#, 4).unwrap_err();
        assert_eq!(e.path, "tasks.a");
        assert!(e.msg.contains("no event"), "{e}");
        let e = parse(r#"{"tasks": {"a": {"loop": 1, "fork": "b"}}}"#, 4).unwrap_err();
        assert_eq!(e.path, "tasks.a.fork");
        assert!(parse("[1,2", 4).is_err());
    }

    /// json-c's default mode, which rt-app parses with: comments, trailing
    /// commas, single quotes, raw control characters in strings and
    /// literals in any case; positions of later errors stay where they are
    /// in the file; strict JSON passes unchanged.
    #[test]
    fn the_relaxed_syntax_of_json_c_is_accepted() {
        let relaxed = "{\n  /* a comment, with \"quotes\", commas, } and ] */\n  \"a\": [1, 2, /* x */ ],\n  // line comment, {\n  'b': 'it\\'s \"q\"',\n  \"c\": \"tab\there // not a comment\",\n  \"d\": TRUE, \"e\": Null,\n  \"f\": 1e3,\n}\n";
        let strict = strict_json(relaxed).unwrap();
        let v: serde_json::Value = serde_json::from_str(&strict).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"a": [1, 2], "b": "it's \"q\"", "c": "tab\there // not a comment",
                "d": true, "e": null, "f": 1000.0})
        );
        assert_eq!(strict.lines().count(), relaxed.lines().count());
        // An error after a comment keeps its line and column.
        let e = Json::parse("{ /* one\n two */ \"a\": 1 \"b\": 2 }").unwrap_err();
        assert!(e.msg.contains("line 2 column 16"), "{e}");
        for bad in [
            "{ /* never closed",
            "{\"a\": 'open",
            "[1,,2]",
            "[,]",
            "{,}",
            "[1,,]",
        ] {
            assert!(Json::parse(bad).is_err(), "{bad}");
        }
        for text in [
            "{\"a\": [1, {\"b\": \"/* x */ // y, ]\"}], \"c\": -1.5e-3}",
            "[]",
            "\"\\u00e9\"",
        ] {
            assert_eq!(strict_json(text).unwrap(), text);
        }
    }

    /// A phase's `cpus` become an affinity change at the phase's start; the
    /// phases without one return to the task's `cpus`, or to the CPUs the
    /// thread started with (`None`), as rt-app's set_thread_affinity() does.
    #[test]
    fn phase_cpus_set_the_affinity_at_phase_start() {
        let doc = |task_cpus: &str| {
            format!(
                r#"{{"tasks": {{"a": {{ {task_cpus} "loop": 1, "phases": {{
                    "p1": {{"cpus": [1, 2], "run": 10}},
                    "p2": {{"run": 10}} }} }} }} }}"#
            )
        };
        let affinity_steps = |r: &RtApp| -> Vec<Option<CpuMask>> {
            r.spec.templates[0]
                .steps
                .iter()
                .filter_map(|s| match s {
                    Step::SetAffinity { cpus } => Some(cpus.as_deref().copied()),
                    _ => None,
                })
                .collect()
        };
        let r = parse(&doc(""), 4).unwrap();
        assert_eq!(
            affinity_steps(&r),
            vec![Some(CpuMask::from_cpus([1, 2])), None]
        );
        let r = parse(&doc(r#""cpus": [3],"#), 4).unwrap();
        assert_eq!(
            affinity_steps(&r),
            vec![
                Some(CpuMask::from_cpus([1, 2])),
                Some(CpuMask::from_cpus([3]))
            ]
        );
        // No phase sets CPUs: no affinity steps.
        let r = parse(r#"{"tasks": {"a": {"phases": {"p": {"run": 10}}}}}"#, 4).unwrap();
        assert!(affinity_steps(&r).is_empty());
        let e = parse(
            r#"{"tasks": {"a": {"phases": {"p": {"cpus": [4], "run": 10}}}}}"#,
            4,
        )
        .unwrap_err();
        assert_eq!(e.path, "tasks.a.phases.p.cpus[0]");
        let e = parse(
            r#"{"tasks": {"a": {"phases": {"p": {"priority": 30, "run": 10}}}}}"#,
            4,
        )
        .unwrap_err();
        assert_eq!(e.path, "tasks.a.phases.p.priority");
    }

    /// rt-app exits on a SCHED_OTHER nice value outside -20..=19
    /// (`__set_thread_nice()`): so do we (BATCH alike), instead of
    /// clamping; under SCHED_IDLE it sets no nice value, and any priority is
    /// ignored with a note. An RT policy is rejected for itself.
    #[test]
    fn priority_is_a_nice_value_for_the_fair_policies() {
        let doc = |policy: &str, prio: i64| {
            format!(
                r#"{{"tasks": {{"a": {{"policy": "{policy}", "priority": {prio}, "run": 1}}}}}}"#
            )
        };
        for prio in [-21, 20, 50, 99] {
            let r = parse(&doc("SCHED_IDLE", prio), 4).unwrap();
            assert_eq!(
                thread_start_attrs(&r.spec.templates[0]),
                (SchedPolicy::Idle, 0)
            );
            assert!(r
                .notes
                .iter()
                .any(|n| n.contains("tasks.a.priority ignored")));
        }
        for policy in ["SCHED_OTHER", "SCHED_BATCH", "SCHED_IDLE"] {
            for prio in [-21, 20, 99, -1000] {
                if policy == "SCHED_IDLE" {
                    continue;
                }
                let e = parse(&doc(policy, prio), 4).unwrap_err();
                assert_eq!(e.path, "tasks.a.priority", "{e}");
                assert!(e.msg.contains("-20..=19") && e.msg.contains(policy), "{e}");
            }
            for prio in [-20, 0, 19] {
                let r = parse(&doc(policy, prio), 4).unwrap();
                let want = if policy == "SCHED_IDLE" {
                    0
                } else {
                    prio as i8
                };
                assert_eq!(thread_start_attrs(&r.spec.templates[0]).1, want);
            }
        }
        // Priority before the policy, and the default policy, alike.
        let e = parse(r#"{"tasks": {"a": {"priority": 99, "run": 1}}}"#, 4).unwrap_err();
        assert_eq!(e.path, "tasks.a.priority");
        let e = parse(&doc("SCHED_DEADLINE", 50), 4).unwrap_err();
        assert_eq!(e.path, "tasks.a.policy");
    }

    /// SCHED_DEADLINE as rt-app reads it: `dl-runtime`, `dl-period` and
    /// `dl-deadline` in µs, the period defaulting to the runtime and the
    /// deadline to the period, the older `runtime`/`period`/`deadline` keys
    /// on a task when the `dl-` ones are missing; a phase under the policy
    /// sets its own parameters; bad ones are errors at the policy's path
    /// (sched_setattr() fails with EINVAL and rt-app exits).
    #[test]
    fn deadline_policy_takes_rt_apps_parameters() {
        let first = |src: &str| -> SchedPolicy {
            let r = parse(src, 4).unwrap();
            thread_start_attrs(&r.spec.templates[0]).0
        };
        let ms = |r: u64, d: u64, p: u64| SchedPolicy::Deadline {
            runtime_ns: r * 1_000_000,
            deadline_ns: d * 1_000_000,
            period_ns: p * 1_000_000,
        };
        assert_eq!(
            first(
                r#"{"tasks": {"a": {"policy": "SCHED_DEADLINE", "dl-runtime": 10000, "dl-period": 100000, "run": 1}}}"#
            ),
            ms(10, 100, 100)
        );
        assert_eq!(
            first(
                r#"{"tasks": {"a": {"policy": "SCHED_DEADLINE", "dl-runtime": 10000, "dl-period": 100000, "dl-deadline": 50000, "run": 1}}}"#
            ),
            ms(10, 50, 100)
        );
        // Only a runtime: period and deadline are the runtime (100%).
        assert_eq!(
            first(
                r#"{"tasks": {"a": {"policy": "SCHED_DEADLINE", "dl-runtime": 10000, "run": 1}}}"#
            ),
            ms(10, 10, 10)
        );
        // The older grammar; its `runtime` is also the run event.
        assert_eq!(
            first(
                r#"{"global": {"default_policy": "SCHED_DEADLINE"}, "tasks": {"a": {"runtime": 5000, "period": 20000, "sleep": 1}}}"#
            ),
            ms(5, 20, 20)
        );
        // A phase switching to SCHED_DEADLINE, then one changing its runtime.
        let r = parse(
            r#"{"tasks": {"a": {"phases": {
                "p1": {"policy": "SCHED_DEADLINE", "dl-runtime": 1000, "dl-period": 10000, "run": 1},
                "p2": {"dl-runtime": 2000, "dl-period": 10000, "run": 1}}}}}"#,
            4,
        )
        .unwrap();
        let dls: Vec<SchedPolicy> = r.spec.templates[0]
            .steps
            .iter()
            .filter_map(|s| match s {
                Step::SetAttr(a) if a.policy.is_deadline() => Some(a.policy),
                _ => None,
            })
            .collect();
        assert_eq!(dls, vec![ms(1, 10, 10), ms(2, 10, 10)]);
        for (bad, want) in [
            (r#""dl-runtime": 0, "dl-period": 100000"#, "runtime"),
            (
                r#""dl-runtime": 20000, "dl-period": 10000"#,
                "runtime <= deadline <= period",
            ),
            (r#""dl-runtime": 10, "dl-period": 50"#, "period of 50000 ns"),
            (r#""dl-runtime": 10000, "dl-period": 5000000"#, "period of"),
        ] {
            let src =
                format!(r#"{{"tasks": {{"a": {{"policy": "SCHED_DEADLINE", {bad}, "run": 1}}}}}}"#);
            let e = parse(&src, 4).unwrap_err();
            assert_eq!(e.path, "tasks.a.policy", "{e}");
            assert!(
                e.msg.contains(want) && e.msg.contains("EINVAL"),
                "{bad}: {e}"
            );
        }
        // A phase under the policy that sets only clamps runs
        // _set_thread_deadline() with no runtime: EINVAL.
        let e = parse(
            r#"{"tasks": {"a": {"policy": "SCHED_DEADLINE", "dl-runtime": 1000, "dl-period": 10000,
                "phases": {"p": {"util_min": 100, "run": 1}}}}}"#,
            4,
        )
        .unwrap_err();
        assert_eq!(e.path, "tasks.a.phases.p", "{e}");
    }

    /// SCHED_FIFO and SCHED_RR as rt-app sets them: the priority is the RT
    /// priority (10 when none is given), the nice value and `dl-runtime` are
    /// not set, a phase's policy without a priority takes 10 again, and a
    /// phase that sets only clamps keeps the RT policy and priority in force.
    #[test]
    fn rt_policies_carry_their_rt_priority() {
        let attrs = |r: &RtApp| -> Vec<(SchedPolicy, Option<i8>, Option<u64>)> {
            r.spec.templates[0]
                .steps
                .iter()
                .filter_map(|s| match s {
                    Step::SetAttr(a) => Some((a.policy, a.nice, a.runtime_ns)),
                    _ => None,
                })
                .collect()
        };
        let r = parse(
            r#"{"tasks": {"a": {"policy": "SCHED_FIFO", "priority": 50, "dl-runtime": 100, "run": 1}}}"#,
            4,
        )
        .unwrap();
        // (The last is SCHED_OTHER at the thread's end, nice and slice kept.)
        assert_eq!(
            attrs(&r),
            vec![
                (SchedPolicy::Fifo(50), None, None),
                (SchedPolicy::Normal, None, None)
            ]
        );
        assert!(
            r.notes.iter().any(|n| n.contains("dl-runtime ignored")),
            "{:?}",
            r.notes
        );
        let r = parse(
            r#"{"global": {"default_policy": "SCHED_RR"}, "tasks": {"a": {"phases": {
                "p1": {"run": 1},
                "p2": {"priority": 70, "run": 1},
                "p3": {"util_max": 512, "run": 1},
                "p4": {"policy": "SCHED_FIFO", "run": 1},
                "p5": {"policy": "SCHED_OTHER", "run": 1}}}}}"#,
            4,
        )
        .unwrap();
        assert_eq!(
            attrs(&r),
            vec![
                (SchedPolicy::Rr(10), None, None),
                (SchedPolicy::Rr(70), None, None),
                (SchedPolicy::Rr(70), None, None),
                (SchedPolicy::Fifo(10), None, None),
                (SchedPolicy::Normal, Some(0), Some(0)),
                (SchedPolicy::Normal, None, None),
            ]
        );
        let e = parse(
            r#"{"tasks": {"a": {"phases": {"p": {"policy": "SCHED_FIFO", "priority": 100, "run": 1}}}}}"#,
            4,
        )
        .unwrap_err();
        assert_eq!(e.path, "tasks.a.phases.p.priority");
    }

    #[test]
    fn numeric_calibration_must_be_positive() {
        let doc = |cal: &str| {
            format!(r#"{{"global": {{"calibration": {cal}}}, "tasks": {{"a": {{"run": 1}}}}}}"#)
        };
        for cal in ["0", "-3", "-0.5"] {
            let e = parse(&doc(cal), 4).unwrap_err();
            assert_eq!(e.path, "global.calibration", "{e}");
            assert!(e.msg.contains("> 0"), "{e}");
        }
        assert!(parse(&doc("300"), 4).is_ok());
    }

    #[test]
    fn an_empty_task_name_is_an_error() {
        let e = parse(r#"{"tasks": {"": {"run": 1}}}"#, 4).unwrap_err();
        assert_eq!(e.path, "tasks");
        assert!(e.msg.contains("empty name"), "{e}");
    }

    /// A file saved with a byte-order mark parses as without it.
    #[test]
    fn a_byte_order_mark_is_skipped() {
        let text = r#"{"tasks": {"a": {"loop": 1, "run": 1}}}"#;
        let with = parse(&format!("\u{feff}{text}"), 4).expect("BOM skipped");
        assert_eq!(with.spec, parse(text, 4).expect("plain").spec);
    }

    /// A file's threads are bounded in all, not only per task: 25 tasks of
    /// 4096 instances each pass the per-task limit but not the total, and
    /// many instances of a long program are refused before they are built.
    #[test]
    fn the_threads_and_steps_of_a_file_are_bounded_in_all() {
        let tasks = |n: usize, inst: u32, events: usize| {
            let body: Vec<String> = (0..events).map(|i| format!(r#""run{i}": 1"#)).collect();
            let ts: Vec<String> = (0..n)
                .map(|i| format!(r#""t{i}": {{"instance": {inst}, {}}}"#, body.join(", ")))
                .collect();
            format!(r#"{{"tasks": {{{}}}}}"#, ts.join(", "))
        };
        let r = parse(&tasks(24, 4096, 1), 4).expect("98,304 threads");
        assert_eq!(r.spec.initial.len(), 24 * 4096);
        let e = parse(&tasks(25, 4096, 1), 4).unwrap_err();
        assert_eq!(e.path, "tasks");
        assert!(e.msg.starts_with("102400 threads in all"), "{e}");
        let e = parse(&tasks(4, 4096, 1100), 4).unwrap_err();
        assert_eq!(e.path, "tasks");
        assert!(e.msg.contains("steps in all"), "{e}");
    }

    /// `instance: 0` is legal in rt-app (the task only exists for `fork`);
    /// one that nothing forks never runs, which a note says.
    #[test]
    fn an_unforked_zero_instance_task_is_noted() {
        let r = parse(
            r#"{"tasks": {"a": {"instance": 0, "run": 1}, "b": {"loop": 1, "run": 1}}}"#,
            4,
        )
        .unwrap();
        assert_eq!(r.spec.initial.len(), 1);
        assert!(
            r.notes.iter().any(|n| n.starts_with("tasks.a: instance 0")),
            "{:?}",
            r.notes
        );
        let r = parse(
            r#"{"tasks": {"a": {"instance": 0, "run": 1}, "b": {"loop": 1, "fork": "a"}}}"#,
            4,
        )
        .unwrap();
        assert!(!r.notes.iter().any(|n| n.contains("instance 0")));
    }

    #[test]
    fn a_fork_is_guarded_by_rt_apps_fork_limit() {
        let r = parse(
            r#"{"tasks": {"a": {"instance": 0, "run": 1}, "b": {"loop": 1, "fork": "a"}}}"#,
            4,
        )
        .unwrap();
        let b = r
            .spec
            .templates
            .iter()
            .find(|t| t.name.starts_with('b'))
            .unwrap();
        let a = r
            .spec
            .templates
            .iter()
            .position(|t| t.name.starts_with('a'))
            .unwrap() as u32;
        let at = b
            .steps
            .iter()
            .position(|s| matches!(s, Step::ForkLimit { .. }))
            .unwrap();
        assert_eq!(
            b.steps[at..at + 2],
            [
                Step::ForkLimit {
                    template: a,
                    limit: FORKS_LIMIT
                },
                Step::Spawn { template: a }
            ]
        );
    }

    #[test]
    fn builds_loops_and_objects() {
        let r = parse(
            r#"{"global": {"duration": 2},
                "tasks": {"t": {"instance": 2, "loop": 3, "priority": 5,
                    "lock": "m", "run0": 100, "unlock": "m", "run1": 50, "barrier": "b"}}}"#,
            4,
        )
        .unwrap();
        let s = &r.spec;
        assert_eq!(s.max_time_ns, 2_000_000_000);
        assert_eq!(s.templates.len(), 2);
        assert_eq!(s.templates[0].name, "t-0");
        assert_eq!(s.templates[0].nice, 0);
        assert_eq!(
            s.templates[0].steps,
            vec![
                // Wait for t_zero (no delay), timers count from there.
                Step::Delay { ns: 0 },
                // Then set its own attributes (created at nice 0).
                Step::SetAttr(Box::new(Attrs {
                    policy: SchedPolicy::Normal,
                    nice: Some(5),
                    runtime_ns: Some(0),
                    util_min: None,
                    util_max: None,
                })),
                Step::Lock { mutex: 0 },
                Step::Compute { work_ns: 100_000 },
                Step::Unlock { mutex: 0 },
                Step::Compute { work_ns: 50_000 },
                Step::Barrier { id: 1, spin_ns: 0 },
                Step::Loop {
                    start: 2,
                    count: 3,
                    slot: 0
                },
                // SCHED_OTHER before the thread exits, as rt-app sets it.
                Step::SetAttr(Box::new(Attrs {
                    policy: SchedPolicy::Normal,
                    nice: None,
                    runtime_ns: None,
                    util_min: None,
                    util_max: None,
                })),
                Step::Exit
            ]
        );
        assert_eq!(s.sync[1], SyncObject::Barrier { parties: 2 });
    }
}
