//! The event queue: events ordered by (time, rank, sequence).
//!
//! The sequence number makes equal-time events of equal rank FIFO, so the
//! order of the whole simulation depends only on its inputs. Ordinary events
//! have rank 0; the CPUs' ticks, which all fall on the same jiffy boundary,
//! carry a random rank drawn by the engine, so simultaneous ticks are handled
//! in a fresh arbitrary order at every boundary, after the ordinary events of
//! that instant. Cancelled events are not removed:
//! their handlers check a generation number and drop stale ones.
//!
//! Two binary heaps hold the events, split at a moving horizon: the near
//! heap everything before it, the far heap the rest (ticks, timers, HRTICK
//! expiries, system kthreads' wakeups, many of them cancelled already).
//! Most events fall due within microseconds of being pushed (a running
//! task's step completion), so they are pushed and popped on the small near
//! heap; when it runs dry the horizon moves [`HORIZON_NS`] past the earliest
//! far event and the far events before it move over. Every near event
//! precedes every far one, so the order is exactly one heap's.

use schedlab_topo::CpuId;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Task ids are dense indices into the engine's task arena.
pub type TaskId = u32;

/// What happens when an event fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum EventKind {
    /// The periodic scheduler tick of a busy CPU (`sched_tick()`); `gen` drops
    /// ticks of a CPU that went idle (nohz) in between.
    Tick { cpu: CpuId, gen: u32 },
    /// The HRTICK timer of a CPU expires (hrtick()); `gen` drops timers that
    /// were re-armed or cancelled since.
    HrTick { cpu: CpuId, gen: u32 },
    /// A CPU reschedules (`need_resched` honoured, or a reschedule IPI arrived).
    Resched { cpu: CpuId },
    /// The running task finished the work of its current step.
    StepDone { task: TaskId, gen: u32 },
    /// A sleeping task's timer expired.
    Timer { task: TaskId, gen: u32 },
    /// A spinning task gives up its active wait and blocks.
    SpinEnd { task: TaskId, gen: u32 },
    /// The stopper on `src` runs an active balance towards `dst`.
    ActiveBalance { src: CpuId, dst: CpuId },
    /// The IPI sent with a TTWU_QUEUE wakeup arrives: `cpu` activates the
    /// tasks on its wake list.
    WakeList { cpu: CpuId },
    /// A kicked idle CPU runs nohz idle balancing for all tick-stopped CPUs.
    NohzBalance { ilb: CpuId },
    /// An idle CPU's polling state reaches its time limit; `gen` drops
    /// timeouts of idle periods that ended.
    PollTimeout { cpu: CpuId, gen: u32 },
    /// A per-CPU system kthread (OS noise) wakes up.
    NoiseWake { task: TaskId },
}

/// A queued event; ordered by `key` = time_ns << 64 | rank << SEQ_BITS | seq
/// alone (the sequence number is unique, so one integer comparison decides).
#[derive(Clone, Copy, Debug)]
struct Entry {
    key: u128,
    kind: EventKind,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

impl Entry {
    fn time_ns(&self) -> u64 {
        (self.key >> 64) as u64
    }
}

/// Bits of the key's low word that hold the sequence number (2^40 events
/// per simulation; the rest hold the rank).
const SEQ_BITS: u32 = 40;

/// How far past the earliest far event the horizon moves when the near heap
/// runs dry, ns. Wakeup chains (a step, an IPI, a context switch) are a few
/// microseconds long; a wider window lets the near heap fill with the far
/// heap's timers, a narrower one sends short steps to the far heap.
pub const HORIZON_NS: u64 = 50_000;

/// Min-queue of events (two heaps split at a horizon; see the module doc).
#[derive(Clone, Default)]
pub struct EventQueue {
    /// Events due before `horizon_ns`.
    near: BinaryHeap<Reverse<Entry>>,
    /// Events due at or after `horizon_ns`.
    far: BinaryHeap<Reverse<Entry>>,
    horizon_ns: u64,
    seq: u64,
}

impl EventQueue {
    pub fn push(&mut self, time_ns: u64, kind: EventKind) {
        self.push_ranked(time_ns, 0, kind);
    }

    /// Pushes an event that, among the events of its instant, comes after
    /// those of lower `rank` (ordinary events have rank 0), then in push
    /// order. Only the low 24 bits of `rank` count.
    pub fn push_ranked(&mut self, time_ns: u64, rank: u32, kind: EventKind) {
        let low = (u64::from(rank & 0xff_ffff) << SEQ_BITS) | self.reserve_seq();
        self.insert(time_ns, low, kind);
    }

    /// Takes the next sequence number for an event pushed later with
    /// [`EventQueue::push_reserved`]: the event then pops where it would
    /// have had it been pushed now (rank 0).
    pub fn reserve_seq(&mut self) -> u64 {
        self.seq += 1;
        debug_assert!(self.seq < 1 << SEQ_BITS, "event sequence overflow");
        self.seq
    }

    /// Pushes a rank-0 event with a sequence number from
    /// [`EventQueue::reserve_seq`].
    pub fn push_reserved(&mut self, time_ns: u64, seq: u64, kind: EventKind) {
        debug_assert!(seq <= self.seq, "sequence number not reserved");
        self.insert(time_ns, seq, kind);
    }

    /// Queues an event whose key's low word (rank, sequence) is `low`.
    fn insert(&mut self, time_ns: u64, low: u64, kind: EventKind) {
        let e = Reverse(Entry {
            key: (u128::from(time_ns) << 64) | u128::from(low),
            kind,
        });
        if time_ns < self.horizon_ns {
            self.near.push(e);
        } else {
            self.far.push(e);
        }
    }

    pub fn pop(&mut self) -> Option<(u64, EventKind)> {
        if self.near.is_empty() {
            self.advance_horizon();
        }
        // (The near heap stays empty only when the far heap is empty or its
        // earliest event is due at u64::MAX, past any horizon.)
        self.near
            .pop()
            .or_else(|| self.far.pop())
            .map(|Reverse(e)| (e.time_ns(), e.kind))
    }

    /// The near heap ran dry: moves the horizon [`HORIZON_NS`] past the
    /// earliest far event and the far events before it to the near heap.
    fn advance_horizon(&mut self) {
        let Some(Reverse(first)) = self.far.peek() else {
            return;
        };
        self.horizon_ns = first.time_ns().saturating_add(HORIZON_NS);
        while let Some(Reverse(e)) = self.far.peek() {
            if e.time_ns() >= self.horizon_ns {
                break;
            }
            if let Some(e) = self.far.pop() {
                self.near.push(e);
            }
        }
    }

    /// The next event's (time, kind) without removing it.
    pub fn peek(&self) -> Option<(u64, EventKind)> {
        // Every near event precedes every far one.
        self.near
            .peek()
            .or_else(|| self.far.peek())
            .map(|Reverse(e)| (e.time_ns(), e.kind))
    }

    pub fn len(&self) -> usize {
        self.near.len() + self.far.len()
    }

    /// The queued events (time, kind), in no particular order.
    #[cfg(test)]
    pub(crate) fn events(&self) -> impl Iterator<Item = (u64, EventKind)> + '_ {
        self.near
            .iter()
            .chain(self.far.iter())
            .map(|Reverse(e)| (e.time_ns(), e.kind))
    }

    pub fn is_empty(&self) -> bool {
        self.near.is_empty() && self.far.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_times_pop_in_push_order() {
        let mut q = EventQueue::default();
        q.push(5, EventKind::Resched { cpu: 2 });
        q.push(1, EventKind::Resched { cpu: 9 });
        q.push(5, EventKind::Resched { cpu: 1 });
        assert_eq!(q.pop(), Some((1, EventKind::Resched { cpu: 9 })));
        assert_eq!(q.pop(), Some((5, EventKind::Resched { cpu: 2 })));
        assert_eq!(q.pop(), Some((5, EventKind::Resched { cpu: 1 })));
        assert!(q.is_empty());
    }

    #[test]
    fn ranked_events_follow_the_ordinary_ones_of_their_instant_by_rank() {
        let mut q = EventQueue::default();
        q.push_ranked(5, 7, EventKind::Resched { cpu: 0 });
        q.push_ranked(5, 3, EventKind::Resched { cpu: 1 });
        q.push(5, EventKind::Resched { cpu: 2 });
        q.push_ranked(4, 9, EventKind::Resched { cpu: 3 });
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (4, EventKind::Resched { cpu: 3 }),
                (5, EventKind::Resched { cpu: 2 }),
                (5, EventKind::Resched { cpu: 1 }),
                (5, EventKind::Resched { cpu: 0 }),
            ]
        );
    }

    /// What a test queue holds: (time, rank, seq, tag), popped in order.
    type Model = std::collections::BTreeSet<(u64, u32, u64, CpuId)>;

    proptest::proptest! {
        /// Pushes and pops interleaved as a simulation makes them (nothing
        /// before the last pop; short steps and steps past the horizon;
        /// some events with a sequence number reserved earlier and pushed
        /// later): the two heaps pop exactly as one ordered set.
        #[test]
        fn interleaved_pushes_and_pops_follow_one_order(
            ops in proptest::collection::vec(
                (0u8..4, 0u64..4 * HORIZON_NS, 0u32..3), 1..400)
        ) {
            let mut q = EventQueue::default();
            let mut model = Model::new();
            let mut reserved: Vec<(u64, u64, CpuId)> = Vec::new();
            let mut now = 0u64;
            // All times lie on a grid, so that events meet, on the horizon
            // too.
            let grid = HORIZON_NS / 40;
            for (i, &(op, delay, rank)) in ops.iter().enumerate() {
                let tag = i as CpuId;
                let kind = EventKind::Resched { cpu: tag };
                match op {
                    0 => {
                        let peeked = q.peek();
                        let popped = q.pop();
                        proptest::prop_assert_eq!(peeked, popped);
                        let Some((t, ev)) = popped else {
                            proptest::prop_assert!(model.is_empty());
                            continue;
                        };
                        let want = model
                            .pop_first()
                            .map(|(t, _, _, tag)| (t, EventKind::Resched { cpu: tag }));
                        proptest::prop_assert_eq!(Some((t, ev)), want);
                        now = t;
                    }
                    1 => {
                        // Short steps, as a task's run between events.
                        let at = now.saturating_add((delay % 4) * grid);
                        q.push_ranked(at, rank, kind);
                        model.insert((at, rank, q.seq, tag));
                    }
                    2 => {
                        // Now and then at the end of time, as a completion
                        // whose duration saturates.
                        let at = if delay % 50 == 0 {
                            u64::MAX
                        } else {
                            now.saturating_add((delay % 9) * 10 * grid)
                        };
                        q.push_ranked(at, rank, kind);
                        model.insert((at, rank, q.seq, tag));
                    }
                    _ => {
                        // Reserved now, pushed at the next op of this kind
                        // unless its time has passed.
                        if let Some((at, seq, tag)) = reserved.pop() {
                            if at >= now {
                                q.push_reserved(at, seq, EventKind::Resched { cpu: tag });
                                model.insert((at, 0, seq, tag));
                            }
                        }
                        let seq = q.reserve_seq();
                        reserved.push((now.saturating_add((delay % 9) * 10 * grid), seq, tag));
                    }
                }
                proptest::prop_assert_eq!(q.len(), model.len());
            }
            while let Some((t, ev)) = q.pop() {
                let want = model
                    .pop_first()
                    .map(|(t, _, _, tag)| (t, EventKind::Resched { cpu: tag }));
                proptest::prop_assert_eq!(Some((t, ev)), want);
            }
            proptest::prop_assert!(model.is_empty());
        }

        /// Whatever is pushed, events pop ordered by (time, rank), and in
        /// push order among equals.
        #[test]
        fn pops_follow_time_then_rank_then_push_order(
            pushes in proptest::collection::vec((0u64..20, 0u32..4), 0..200)
        ) {
            let mut q = EventQueue::default();
            for (i, &(t, rank)) in pushes.iter().enumerate() {
                // The CPU field carries the push index.
                q.push_ranked(t, rank, EventKind::Resched { cpu: i as CpuId });
            }
            let mut want: Vec<(u64, u32, usize)> = pushes
                .iter()
                .enumerate()
                .map(|(i, &(t, rank))| (t, rank, i))
                .collect();
            want.sort();
            let got: Vec<(u64, usize)> = std::iter::from_fn(|| q.pop())
                .map(|(t, ev)| match ev {
                    EventKind::Resched { cpu } => (t, cpu as usize),
                    _ => unreachable!(),
                })
                .collect();
            let want: Vec<(u64, usize)> = want.into_iter().map(|(t, _, i)| (t, i)).collect();
            proptest::prop_assert_eq!(got, want);
        }
    }
}
