//! The event queue: a binary heap ordered by (time, rank, sequence).
//!
//! The sequence number makes equal-time events of equal rank FIFO, so the
//! order of the whole simulation depends only on its inputs. Ordinary events
//! have rank 0; the CPUs' ticks, which all fall on the same jiffy boundary,
//! carry a random rank drawn by the engine, so simultaneous ticks are handled
//! in a fresh arbitrary order at every boundary, after the ordinary events of
//! that instant. Cancelled events are not removed:
//! their handlers check a generation number and drop stale ones.

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

/// Min-heap of events.
#[derive(Clone, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Reverse<Entry>>,
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
        self.seq += 1;
        debug_assert!(self.seq < 1 << SEQ_BITS, "event sequence overflow");
        let low = (u64::from(rank & 0xff_ffff) << SEQ_BITS) | self.seq;
        self.heap.push(Reverse(Entry {
            key: (u128::from(time_ns) << 64) | u128::from(low),
            kind,
        }));
    }

    pub fn pop(&mut self) -> Option<(u64, EventKind)> {
        self.heap.pop().map(|Reverse(e)| (e.time_ns(), e.kind))
    }

    /// The next event's (time, kind) without removing it.
    pub fn peek(&self) -> Option<(u64, EventKind)> {
        self.heap.peek().map(|Reverse(e)| (e.time_ns(), e.kind))
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
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

    proptest::proptest! {
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
