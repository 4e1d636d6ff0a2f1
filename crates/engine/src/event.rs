//! The event queue: events ordered by (time, rank, sequence).
//!
//! The sequence number makes equal-time events of equal rank FIFO, so the
//! order of the whole simulation depends only on its inputs. Ordinary events
//! have rank 0; the CPUs' ticks, which all fall on the same jiffy boundary,
//! carry a random rank drawn by the engine, so simultaneous ticks are handled
//! in a fresh arbitrary order at every boundary, after the ordinary events of
//! that instant. Cancelled events are not removed:
//! their handlers check a generation number and drop stale ones. Timers
//! that are re-armed far more often than they expire keep one queued event
//! each instead ([`LazyTimer`]).
//!
//! Two binary heaps hold the events, split at a moving horizon: the near
//! heap everything before it, the far heap the rest (ticks, timers, HRTICK
//! expiries, system kthreads' wakeups, some of them cancelled already).
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
    /// The fair server's timer on `cpu` (fair_server.rs); `gen` drops
    /// cancelled or re-armed ones.
    FairServer { cpu: CpuId, gen: u32 },
    /// A deadline task's replenishment timer (dl.rs).
    DlTimer { task: TaskId, gen: u32 },
    /// A deadline task's 0-lag timer after it died or left the class: its
    /// bandwidth is released (dl.rs).
    DlInactive { task: TaskId, gen: u32 },
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

/// A one-shot timer that is re-armed and cancelled far more often than it
/// expires (a CPU's HRTICK timer, its polling loop's time limit), kept to
/// one event in the queue.
///
/// Arming reserves a sequence number. The event is pushed at once only when
/// no event of the timer is queued or the new expiry is earlier than the
/// queued one's; otherwise the expiry waits behind the queued event, which
/// finds it when it pops and pushes it then, with the sequence number
/// reserved at arming. So live expiries pop exactly where they would if
/// every arming pushed its own event, and the queue does not fill with the
/// expiries of timers that were re-armed or cancelled since.
#[derive(Clone, Copy, Debug, Default)]
pub struct LazyTimer {
    /// Numbers the armings (the events' generation).
    gen: u32,
    /// The armed expiry: (time, reserved sequence number, generation).
    armed: Option<(u64, u64, u32)>,
    /// The timer's event in the queue: (time, generation).
    queued: Option<(u64, u32)>,
}

impl LazyTimer {
    /// When the timer expires, if it is armed.
    pub fn expires_ns(&self) -> Option<u64> {
        self.armed.map(|(at, _, _)| at)
    }

    /// Arms (or re-arms) the timer for `at_ns`; `event` makes its event from
    /// a generation.
    pub fn arm(&mut self, q: &mut EventQueue, at_ns: u64, event: impl FnOnce(u32) -> EventKind) {
        self.gen = self.gen.wrapping_add(1);
        let seq = q.reserve_seq();
        self.armed = Some((at_ns, seq, self.gen));
        if self.queued.is_none_or(|(queued_at, _)| at_ns < queued_at) {
            self.queued = Some((at_ns, self.gen));
            q.push_reserved(at_ns, seq, event(self.gen));
        }
    }

    /// Disarms the timer; its queued event, if any, expires nothing.
    pub fn cancel(&mut self) {
        self.armed = None;
    }

    /// An event of this timer with generation `gen` popped: true when the
    /// timer expires now (it is then disarmed). An expiry that waited
    /// behind the event is queued instead; an event overtaken by an earlier
    /// one, or of a cancelled timer, does nothing.
    pub fn fire(
        &mut self,
        q: &mut EventQueue,
        gen: u32,
        event: impl FnOnce(u32) -> EventKind,
    ) -> bool {
        let Some((queued_at, queued_gen)) = self.queued else {
            return false;
        };
        if queued_gen != gen {
            return false;
        }
        self.queued = None;
        match self.armed {
            Some((_, _, g)) if g == gen => {
                self.armed = None;
                true
            }
            Some((at, seq, g)) => {
                // (Only a later expiry waits behind a queued event.)
                debug_assert!(at >= queued_at, "a waiting expiry precedes its event");
                self.queued = Some((at, g));
                q.push_reserved(at, seq, event(g));
                false
            }
            None => false,
        }
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

    /// A timer armed later and later keeps one event queued, and that
    /// event expires only the last arming.
    #[test]
    fn a_timer_re_armed_later_keeps_one_event_queued() {
        let mut q = EventQueue::default();
        let mut timer = LazyTimer::default();
        let ev = |gen| EventKind::HrTick { cpu: 0, gen };
        for at in [100, 150, 170, 400] {
            timer.arm(&mut q, at, ev);
        }
        assert_eq!(q.len(), 1);
        assert_eq!(timer.expires_ns(), Some(400));
        // The event at 100 queues the expiry at 400, which expires.
        let (t, EventKind::HrTick { gen, .. }) = q.pop().expect("queued") else {
            panic!("not the timer's event");
        };
        assert_eq!(t, 100);
        assert!(!timer.fire(&mut q, gen, ev));
        let (t, EventKind::HrTick { gen, .. }) = q.pop().expect("re-queued") else {
            panic!("not the timer's event");
        };
        assert_eq!(t, 400);
        assert!(timer.fire(&mut q, gen, ev));
        assert_eq!(timer.expires_ns(), None);
        assert!(q.is_empty());
        // An earlier arming is queued at once; a cancelled one expires nothing.
        timer.arm(&mut q, 900, ev);
        timer.arm(&mut q, 500, ev);
        assert_eq!(q.len(), 2);
        timer.cancel();
        while let Some((_, EventKind::HrTick { gen, .. })) = q.pop() {
            assert!(!timer.fire(&mut q, gen, ev));
        }
    }

    /// What happened when a test queue popped: an ordinary event (its tag)
    /// or the timer's expiry.
    #[derive(Debug, PartialEq)]
    enum Happened {
        Event(CpuId),
        Expiry,
    }

    /// Pops `q` up to its next ordinary event or timer expiry; `expires`
    /// says whether a timer event of a generation expires the timer.
    fn next_happening(
        q: &mut EventQueue,
        mut expires: impl FnMut(&mut EventQueue, u32) -> bool,
    ) -> Option<(u64, Happened)> {
        while let Some((t, ev)) = q.pop() {
            match ev {
                EventKind::HrTick { cpu: 0, gen } => {
                    if expires(q, gen) {
                        return Some((t, Happened::Expiry));
                    }
                }
                EventKind::Resched { cpu } => return Some((t, Happened::Event(cpu))),
                _ => unreachable!(),
            }
        }
        None
    }

    /// The lazy queue's next happening.
    fn next_lazy(q: &mut EventQueue, timer: &mut LazyTimer) -> Option<(u64, Happened)> {
        next_happening(q, |q, gen| {
            timer.fire(q, gen, |gen| EventKind::HrTick { cpu: 0, gen })
        })
    }

    /// The eager queue's next happening (one event per arming, stale ones
    /// dropped by generation).
    fn next_eager(q: &mut EventQueue, armed: &mut Option<u32>) -> Option<(u64, Happened)> {
        next_happening(q, |_, gen| {
            let live = *armed == Some(gen);
            if live {
                *armed = None;
            }
            live
        })
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

        /// A lazy timer beside ordinary events expires exactly when, and in
        /// the order, a timer that queues one event per arming and drops
        /// stale ones would, armings earlier and later than the queued one,
        /// at the same instants as other events, and cancellations mixed.
        #[test]
        fn a_lazy_timer_expires_as_one_event_per_arming_would(
            ops in proptest::collection::vec((0u8..5, 0u64..12), 1..300)
        ) {
            let mut lazy_q = EventQueue::default();
            let mut timer = LazyTimer::default();
            let mut eager_q = EventQueue::default();
            let (mut eager_gen, mut eager_armed) = (0u32, None);
            let mut now = 0u64;
            let grid = 1_000;
            for (i, &(op, delay)) in ops.iter().enumerate() {
                let at = now + delay * grid;
                match op {
                    0 | 1 => {
                        let got = next_lazy(&mut lazy_q, &mut timer);
                        let want = next_eager(&mut eager_q, &mut eager_armed);
                        proptest::prop_assert_eq!(&got, &want);
                        if let Some((t, _)) = got {
                            now = t;
                        }
                    }
                    2 => {
                        let kind = EventKind::Resched { cpu: i as CpuId };
                        lazy_q.push(at, kind);
                        eager_q.push(at, kind);
                    }
                    3 => {
                        timer.arm(&mut lazy_q, at, |gen| EventKind::HrTick { cpu: 0, gen });
                        eager_gen += 1;
                        eager_armed = Some(eager_gen);
                        eager_q.push(at, EventKind::HrTick { cpu: 0, gen: eager_gen });
                    }
                    _ => {
                        timer.cancel();
                        eager_armed = None;
                    }
                }
                proptest::prop_assert_eq!(timer.expires_ns().is_some(), eager_armed.is_some());
                proptest::prop_assert!(lazy_q.len() <= eager_q.len());
            }
            loop {
                let got = next_lazy(&mut lazy_q, &mut timer);
                let want = next_eager(&mut eager_q, &mut eager_armed);
                proptest::prop_assert_eq!(&got, &want);
                if got.is_none() {
                    break;
                }
            }
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
