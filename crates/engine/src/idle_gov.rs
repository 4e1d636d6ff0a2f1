//! The idle governor's tick decision (mirrors the parts of the cpuidle menu
//! governor, drivers/cpuidle/governors/menu.c, that decide whether an idle
//! CPU stops its tick; since 4.17 do_idle() asks the governor instead of
//! stopping the tick up front).
//!
//! What is modelled:
//! - the last eight idle durations of the CPU and get_typical_interval()'s
//!   outlier rejection;
//! - the time to the CPU's next timer event (the caller's: the sleep timers
//!   armed on the CPU and its kthread's next wakeup) and the per-bucket
//!   correction factor that scales it;
//! - the choice of idle state from the machine's table (exit latency,
//!   target residency, disabled states, the polling loop's special cases)
//!   and the stop rule that comes with it: the tick keeps running while the
//!   predicted idle time is below one tick or the choice is a polling loop;
//! - an idle period ended by the tick, with no timer due within the tick,
//!   counts as a long one (90% of MAX_INTERESTING), so that a CPU that stays
//!   idle stops its tick after a few ticks;
//! - with the tick stopped, the timer always enters the prediction, and
//!   replaces a prediction under a tick unless it is within two ticks;
//! - a polling state that timed out counts as lasting until the next timer;
//! - a measured idle period loses the exit latency of the state it ended in.
//!
//! Not modelled: PM QoS latency limits (none is set).

use schedlab_topo::IdleState;

/// Idle periods remembered (`INTERVALS`).
const INTERVALS: usize = 8;
/// Buckets of the correction factor, by the time to the next timer.
const BUCKETS: usize = 6;
/// Fixed-point unit of the correction factor (`RESOLUTION`) and its decay
/// (`DECAY`: a new sample weighs 1/8).
const RESOLUTION: u64 = 1024;
const DECAY: u64 = 8;
/// Idle periods this long or longer carry no more information
/// (`MAX_INTERESTING`, 50 ms).
const MAX_INTERESTING_NS: u64 = 50_000_000;
/// Below this predicted idle time the next timer is not looked at
/// (`RESIDENCY_THRESHOLD_NS`, gov.h).
const RESIDENCY_THRESHOLD_NS: u64 = 15_000;
/// "No timer": the time to the next timer when nothing is armed
/// (`KTIME_MAX`).
pub const NO_TIMER_NS: u64 = i64::MAX as u64;

/// One CPU's governor state (`struct menu_device`).
#[derive(Clone, Copy, Debug)]
pub struct MenuState {
    /// Recent idle durations, µs (`intervals`), a ring from `ptr`.
    pub intervals_us: [u32; INTERVALS],
    pub ptr: u8,
    /// `correction_factor` per bucket.
    pub correction: [u32; BUCKETS],
    /// The time to the next timer and its bucket at the last selection
    /// (`next_timer_ns`, `bucket`), which the next update uses.
    pub next_timer_ns: u64,
    pub bucket: u8,
}

impl Default for MenuState {
    /// As menu_enable_device() leaves it: no history, every factor 1.0.
    fn default() -> Self {
        MenuState {
            intervals_us: [0; INTERVALS],
            ptr: 0,
            correction: [(RESOLUTION * DECAY) as u32; BUCKETS],
            next_timer_ns: NO_TIMER_NS,
            bucket: (BUCKETS - 1) as u8,
        }
    }
}

impl MenuState {
    /// The governor of a CPU that has been idle for long before the run
    /// starts (the simulated machine was booted long before the benchmark):
    /// its last eight idle periods each lasted as long as a period the
    /// governor counts as long (90% of MAX_INTERESTING, 45 ms), and the
    /// correction factors are still 1.0. A freshly booted CPU's history of
    /// zeros (menu_enable_device()) would predict no idle time at all from
    /// its first short period until eight periods had passed.
    pub fn idle_for_long() -> Self {
        MenuState {
            intervals_us: [(9 * MAX_INTERESTING_NS / 10 / 1000) as u32; INTERVALS],
            ..MenuState::default()
        }
    }
}

/// The correction bucket of a time to the next timer (mirrors
/// which_bucket()): decades from 10 µs to 100 ms.
fn which_bucket(duration_ns: u64) -> usize {
    match duration_ns {
        d if d < 10_000 => 0,
        d if d < 100_000 => 1,
        d if d < 1_000_000 => 2,
        d if d < 10_000_000 => 3,
        d if d < 100_000_000 => 4,
        _ => 5,
    }
}

impl MenuState {
    /// Records the idle period that just ended (mirrors menu_update()):
    /// `idle_ns` long, or ended by the tick (`tick_wakeup`), which counts as
    /// 90% of MAX_INTERESTING when the next timer lay beyond the tick
    /// (`tick_ns`); otherwise less the exit latency `exit_ns` of the state
    /// it ended in (half of it when shorter than twice that latency: the
    /// state was likely never reached). The bucket of the last selection
    /// learns the ratio of the idle time to the time the timer was away.
    pub fn update(&mut self, idle_ns: u64, tick_wakeup: bool, tick_ns: u64, exit_ns: u64) {
        let measured = if tick_wakeup && self.next_timer_ns > tick_ns {
            9 * MAX_INTERESTING_NS / 10
        } else if idle_ns > 2 * exit_ns {
            idle_ns - exit_ns
        } else {
            idle_ns / 2
        };
        self.record(measured);
    }

    /// Records an idle period that a polling state ended at its time limit
    /// (menu_update() with `poll_time_limit`): the prediction that chose
    /// polling was wrong, and with a better one the next timer would have
    /// ended the period, so it counts as lasting until that timer. A tick
    /// taken inside the loop (`tick_wakeup`) counts first, as a long idle
    /// period when the timer lay beyond the tick, as in [`MenuState::update`].
    pub fn update_poll_timeout(&mut self, tick_wakeup: bool, tick_ns: u64) {
        if tick_wakeup && self.next_timer_ns > tick_ns {
            self.record(9 * MAX_INTERESTING_NS / 10);
        } else {
            self.record(self.next_timer_ns);
        }
    }

    /// The common part of menu_update(): the measured idle time, capped by
    /// the time the timer was away, trains the last selection's bucket and
    /// joins the recent intervals.
    fn record(&mut self, measured: u64) {
        let measured = measured.min(self.next_timer_ns);
        let b = self.bucket as usize;
        let mut f = self.correction[b] as u64;
        f -= f / DECAY;
        f += if self.next_timer_ns > 0 && measured < MAX_INTERESTING_NS {
            (RESOLUTION as u128 * measured as u128 / self.next_timer_ns as u128) as u64
        } else {
            RESOLUTION
        };
        self.correction[b] = f as u32;
        // menu_update_intervals() takes an unsigned int: a longer time (the
        // "no timer" of a polling timeout) keeps its low 32 bits.
        self.intervals_us[self.ptr as usize] = (measured / 1000) as u32;
        self.ptr = ((self.ptr as usize + 1) % INTERVALS) as u8;
    }

    /// The idle time the governor expects, ns, with the next timer
    /// `next_timer_ns` away (mirrors menu_select()'s prediction): the
    /// typical recent interval, capped by the corrected time to the next
    /// timer. With the tick stopped the timer is always looked at, and a
    /// prediction under a tick gives way to the timer unless that is within
    /// two ticks (SAFE_TIMER_RANGE_NS): a stopped tick would leave a
    /// misprediction in a shallow state for long. Remembers the timer
    /// distance and bucket for the next update.
    pub fn select(&mut self, next_timer_ns: u64, tick_stopped: bool, tick_ns: u64) -> u64 {
        self.predict(next_timer_ns, tick_stopped, tick_ns).0
    }

    /// [`MenuState::select`], and whether the timer was looked at.
    fn predict(&mut self, next_timer_ns: u64, tick_stopped: bool, tick_ns: u64) -> (u64, bool) {
        let typical_us = typical_interval_us(&self.intervals_us);
        let mut predicted = typical_us as u64 * 1000;
        if predicted > RESIDENCY_THRESHOLD_NS || tick_stopped {
            let b = which_bucket(next_timer_ns);
            self.next_timer_ns = next_timer_ns;
            self.bucket = b as u8;
            let unit = (RESOLUTION * DECAY * 1000) as u128;
            let timer_us =
                ((unit / 2 + next_timer_ns as u128 * self.correction[b] as u128) / unit) as u64;
            predicted = predicted.min(timer_us.saturating_mul(1000));
            if tick_stopped && predicted < tick_ns && next_timer_ns > 2 * tick_ns {
                predicted = next_timer_ns;
            }
            (predicted, true)
        } else {
            // The timer is not looked at: "far", last bucket.
            self.next_timer_ns = NO_TIMER_NS;
            self.bucket = (BUCKETS - 1) as u8;
            (predicted, false)
        }
    }

    /// The idle state for the idle period starting now, and whether the
    /// tick stops (mirrors menu_select() with no PM QoS limit): the deepest
    /// enabled state whose target residency fits the prediction; a polling
    /// loop gives way to a shallow physical state that fits the timer and
    /// whose exit fits the prediction; with the tick running, the walk stops
    /// at the first state that does not fit, and the tick keeps running
    /// when the choice is a polling loop or the prediction is under a tick,
    /// in which case a state whose residency outlasts the next tick is
    /// traded for a shallower one. `to_tick_ns` is the time to the CPU's
    /// next tick (unused when the tick is stopped). Needs two or more
    /// states (do_idle() skips the governor otherwise).
    pub fn select_state(
        &mut self,
        states: &[IdleState],
        next_timer_ns: u64,
        tick_stopped: bool,
        tick_ns: u64,
        to_tick_ns: u64,
    ) -> (usize, bool) {
        let (mut predicted, looked) = self.predict(next_timer_ns, tick_stopped, tick_ns);
        // tick_nohz_get_sleep_length()'s `delta_next`: the next clock event.
        let delta_tick = if !looked {
            tick_ns / 2
        } else if tick_stopped {
            next_timer_ns
        } else {
            to_tick_ns.min(next_timer_ns)
        };
        let res = |i: usize| states[i].residency_ns as u64;
        if states.len() > 1 && self.next_timer_ns < res(1) && !states[0].disabled {
            // State 0 is used whatever the prediction.
            return (0, !states[0].poll_loop);
        }
        let mut idx: Option<usize> = None;
        for (i, s) in states.iter().enumerate() {
            if s.disabled {
                continue;
            }
            let cur = *idx.get_or_insert(i);
            if res(i) <= predicted {
                idx = Some(i);
                continue;
            }
            if states[cur].poll_loop
                && res(i) < RESIDENCY_THRESHOLD_NS
                && res(i) <= self.next_timer_ns
                && s.exit_ns as u64 <= predicted
            {
                predicted = res(i);
                idx = Some(i);
                break;
            }
            if predicted < tick_ns {
                break;
            }
            if !tick_stopped {
                predicted = res(cur);
                break;
            }
            if res(cur) < tick_ns && res(i) <= delta_tick {
                return (i, true);
            }
            return (cur, true);
        }
        let mut idx = idx.unwrap_or(0);
        let mut stop = true;
        if (states[idx].poll_loop || predicted < tick_ns) && !tick_stopped {
            stop = false;
            if idx > 0 && res(idx) > delta_tick {
                for i in (0..idx).rev() {
                    if states[i].disabled {
                        continue;
                    }
                    idx = i;
                    if res(i) <= delta_tick {
                        break;
                    }
                }
            }
        }
        (idx, stop)
    }
}

/// The recent intervals' typical value, µs, or `u32::MAX` when they have
/// none (mirrors get_typical_interval()): their mean when the spread is
/// small (standard deviation at most a sixth of the mean with three
/// quarters of the samples left, or variance at most 400 µs²); otherwise
/// the sample farthest from the mean on the far side is dropped and the
/// rest tried again, while more than three quarters remain.
pub fn typical_interval_us(intervals: &[u32; INTERVALS]) -> u32 {
    let (mut min_thresh, mut max_thresh) = (-1i64, u32::MAX as i64);
    loop {
        let (mut max, mut min) = (0u64, u32::MAX as u64);
        let (mut sum, mut sum_sq, mut n) = (0u64, 0u64, 0u64);
        for &v in intervals {
            let v64 = v as i64;
            if v64 <= min_thresh || v64 >= max_thresh {
                continue;
            }
            let v = v as u64;
            n += 1;
            sum += v;
            // The kernel's u64 sum of squares wraps for huge samples.
            sum_sq = sum_sq.wrapping_add(v.wrapping_mul(v));
            max = max.max(v);
            min = min.min(v);
        }
        if max == 0 {
            return u32::MAX;
        }
        let avg = sum / n;
        let variance = (sum_sq / n).wrapping_sub(avg * avg);
        let avg_sq = avg * avg;
        if variance <= u64::MAX / 36
            && ((avg_sq > variance * 36 && n * 4 >= INTERVALS as u64 * 3) || variance <= 400)
        {
            return avg as u32;
        }
        if n * 4 <= INTERVALS as u64 * 3 {
            return u32::MAX;
        }
        if avg - min > max - avg {
            min_thresh = min as i64;
        } else {
            max_thresh = max as i64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TICK_NS: u64 = 4_000_000;
    /// A timer 1 s away: beyond anything these tests measure.
    const FAR_NS: u64 = 1_000_000_000;

    fn state(name: &str, exit_us: u32, residency_us: u32) -> IdleState {
        IdleState::new(name, exit_us * 1000, residency_us * 1000, false)
    }

    /// A polling loop as state 0 (POLL, snooze).
    fn poll_state() -> IdleState {
        IdleState {
            polls: true,
            poll_loop: true,
            ..state("POLL", 0, 0)
        }
    }

    impl MenuState {
        /// Does the governor stop the running tick for the idle period
        /// starting now, on a machine with two shallow physical states, a
        /// tick away from its next tick? Returns the decision and the
        /// prediction.
        fn stop_tick(&mut self, next_timer_ns: u64, tick_ns: u64) -> (bool, u64) {
            let states = [state("C1", 1, 1), state("C1E", 2, 4)];
            let mut probe = *self;
            let predicted = probe.select(next_timer_ns, false, tick_ns);
            let (_, stop) = self.select_state(&states, next_timer_ns, false, tick_ns, tick_ns);
            (stop, predicted)
        }
    }

    /// A governor whose last eight idle periods lasted `idle_ns` each.
    fn after_eight_idles_of(idle_ns: u64) -> MenuState {
        let mut m = MenuState::default();
        for _ in 0..8 {
            m.update(idle_ns, false, TICK_NS, 0);
        }
        m
    }

    #[test]
    fn steady_short_idles_are_typical_and_keep_the_tick() {
        let mut m = after_eight_idles_of(200_000);
        assert_eq!(typical_interval_us(&m.intervals_us), 200);
        assert_eq!(m.select(FAR_NS, false, TICK_NS), 200_000);
        assert!(!m.stop_tick(FAR_NS, TICK_NS).0);
    }

    #[test]
    fn no_history_predicts_the_timer_and_stops_the_tick_only_if_it_is_far() {
        let mut m = MenuState::default();
        assert_eq!(typical_interval_us(&m.intervals_us), u32::MAX);
        assert_eq!(m.select(FAR_NS, false, TICK_NS), FAR_NS);
        assert!(m.stop_tick(FAR_NS, TICK_NS).0);
        assert!(m.stop_tick(NO_TIMER_NS, TICK_NS).0);
        // A timer due within the tick keeps it.
        assert_eq!(m.select(1_000_000, false, TICK_NS), 1_000_000);
        assert!(!m.stop_tick(1_000_000, TICK_NS).0);
    }

    #[test]
    fn a_near_timer_caps_a_long_typical_interval() {
        // The CPU used to idle for 30 ms; a timer armed 2 ms away now caps
        // the prediction below the tick.
        let mut m = after_eight_idles_of(30_000_000);
        assert_eq!(typical_interval_us(&m.intervals_us), 30_000);
        assert!(m.stop_tick(FAR_NS, TICK_NS).0);
        assert!(!m.stop_tick(2_000_000, TICK_NS).0);
    }

    #[test]
    fn a_cpu_that_stays_idle_stops_its_tick_after_five_tick_wakeups() {
        // Short idles, then the CPU stays idle: each tick that ends an idle
        // period records 45 ms. The outlier rejection keeps predicting the
        // short interval while four of eight samples are short; the fifth
        // tick wakeup tips it.
        let mut m = after_eight_idles_of(200_000);
        let mut ticks = 0;
        while !m.stop_tick(FAR_NS, TICK_NS).0 {
            m.update(0, true, TICK_NS, 0);
            ticks += 1;
            assert!(ticks < 8);
        }
        assert_eq!(ticks, 5);
        assert_eq!(typical_interval_us(&m.intervals_us), 45_000);
    }

    #[test]
    fn mixed_intervals_drop_outliers_or_give_up() {
        // One long outlier among short ones is dropped.
        let v = [100, 110, 90, 100, 105, 95, 100, 30_000];
        assert_eq!(typical_interval_us(&v), 100);
        // Widely spread values: no typical interval.
        let v = [10, 5_000, 300, 40_000, 1_200, 70, 9_000, 600];
        assert_eq!(typical_interval_us(&v), u32::MAX);
    }

    #[test]
    fn the_correction_factor_scales_the_timer_to_the_idle_times_seen() {
        // With no typical interval, the corrected timer distance predicts:
        // after many idle periods averaging 1 ms with the timer 1 s away,
        // about 1 ms.
        let mut m = MenuState::default();
        let cycle_us = [50u64, 2_000, 300, 1_700, 900, 120, 2_530, 400];
        for i in 0..200 {
            m.select(FAR_NS, false, TICK_NS);
            m.update(cycle_us[i % 8] * 1000, false, TICK_NS, 0);
        }
        assert_eq!(typical_interval_us(&m.intervals_us), u32::MAX);
        let p = m.select(FAR_NS, false, TICK_NS);
        assert!((800_000..=1_200_000).contains(&p), "predicted {p}");
        assert!(!m.stop_tick(FAR_NS, TICK_NS).0);
        assert_eq!(which_bucket(FAR_NS), 5);
        assert_eq!(which_bucket(2_000_000), 3);
    }

    #[test]
    fn with_the_tick_stopped_a_short_prediction_gives_way_to_a_far_timer() {
        // 50 µs idles are typical; with the tick running the governor
        // trusts them, with it stopped the timer 1 s away decides, unless
        // it is within two ticks.
        let mut m = after_eight_idles_of(50_000);
        assert_eq!(m.select(FAR_NS, false, TICK_NS), 50_000);
        assert_eq!(m.select(FAR_NS, true, TICK_NS), FAR_NS);
        assert_eq!(m.select(6_000_000, true, TICK_NS), 50_000);
        // Short typical idles below the residency threshold: the timer is
        // not even looked at with the tick running.
        let mut m = after_eight_idles_of(5_000);
        assert_eq!(m.select(FAR_NS, false, TICK_NS), 5_000);
        assert_eq!(m.next_timer_ns, NO_TIMER_NS);
        assert_eq!(m.select(FAR_NS, true, TICK_NS), FAR_NS);
        assert_eq!(m.next_timer_ns, FAR_NS);
    }

    #[test]
    fn polling_that_times_out_counts_as_lasting_until_the_timer() {
        // 20 µs idles, a timer 3 ms away: each poll timeout records 3 ms.
        // The outlier rejection keeps predicting 20 µs while four of eight
        // samples are short; the fifth timeout tips it to the timer.
        let mut m = after_eight_idles_of(20_000);
        let mut timeouts = 0;
        while m.select(3_000_000, false, TICK_NS) < 100_000 {
            m.update_poll_timeout(false, TICK_NS);
            timeouts += 1;
            assert!(timeouts < 8);
        }
        assert_eq!(timeouts, 5);
        assert_eq!(m.intervals_us[0..5], [3_000; 5]);
    }

    /// SPR-like: POLL, C1, C1E and a deep C6.
    fn spr() -> Vec<IdleState> {
        vec![
            poll_state(),
            IdleState {
                polls: true,
                ..state("C1", 1, 1)
            },
            IdleState {
                polls: true,
                ..state("C1E", 2, 4)
            },
            IdleState {
                polls: true,
                ..state("C6", 290, 800)
            },
        ]
    }

    #[test]
    fn the_deepest_state_that_fits_the_prediction_is_chosen() {
        // 200 µs idles: C1E; with the tick running and the prediction under
        // a tick, the tick stays.
        let mut m = after_eight_idles_of(200_000);
        assert_eq!(
            m.select_state(&spr(), FAR_NS, false, TICK_NS, TICK_NS),
            (2, false)
        );
        // 2 ms idles: C6 fits, still under a tick: C6, tick kept.
        let mut m = after_eight_idles_of(2_000_000);
        assert_eq!(
            m.select_state(&spr(), FAR_NS, false, TICK_NS, TICK_NS),
            (3, false)
        );
        // ... unless the next tick comes before C6 pays off: C1E.
        assert_eq!(
            m.select_state(&spr(), FAR_NS, false, TICK_NS, 500_000),
            (2, false)
        );
        // 30 ms idles: C6, the tick stops.
        let mut m = after_eight_idles_of(30_000_000);
        assert_eq!(
            m.select_state(&spr(), FAR_NS, false, TICK_NS, TICK_NS),
            (3, true)
        );
        // C6 disabled: C1E, the tick stops.
        let mut states = spr();
        states[3].disabled = true;
        assert_eq!(
            m.select_state(&states, FAR_NS, false, TICK_NS, TICK_NS),
            (2, true)
        );
    }

    #[test]
    fn polling_is_for_idles_shorter_than_the_next_states_residency() {
        // pseries: snooze, then Shared Cede (10 µs exit, 100 µs residency).
        let states = [
            IdleState {
                poll_limit_ns: 100_000,
                ..poll_state()
            },
            state("Shared Cede", 10, 100),
        ];
        // 50 µs idles: snooze, tick kept.
        let mut m = after_eight_idles_of(50_000);
        assert_eq!(
            m.select_state(&states, FAR_NS, false, TICK_NS, TICK_NS),
            (0, false)
        );
        // A timer due in 60 µs: state 0 whatever the prediction.
        let mut m = after_eight_idles_of(30_000_000);
        assert_eq!(
            m.select_state(&states, 60_000, false, TICK_NS, TICK_NS),
            (0, false)
        );
        // 300 µs idles: cede, tick kept (under a tick); long ones stop it.
        let mut m = after_eight_idles_of(300_000);
        assert_eq!(
            m.select_state(&states, FAR_NS, false, TICK_NS, TICK_NS),
            (1, false)
        );
        let mut m = after_eight_idles_of(30_000_000);
        assert_eq!(
            m.select_state(&states, FAR_NS, false, TICK_NS, TICK_NS),
            (1, true)
        );
    }

    #[test]
    fn a_shallow_physical_state_beats_the_polling_loop() {
        // 1 µs idles: no state but POLL fits, yet a physical state of 2 µs
        // residency whose exit (0 µs) fits the prediction is taken instead
        // of busy polling; with a 5 µs exit it is not.
        let mut m = after_eight_idles_of(1_000);
        let mut states = [poll_state(), state("X", 0, 2)];
        assert_eq!(
            m.select_state(&states, FAR_NS, false, TICK_NS, TICK_NS),
            (1, false)
        );
        states[1].exit_ns = 5_000;
        assert_eq!(
            m.select_state(&states, FAR_NS, false, TICK_NS, TICK_NS),
            (0, false)
        );
        // SPR at 3 µs idles: C1 fits.
        let mut m = after_eight_idles_of(3_000);
        assert_eq!(
            m.select_state(&spr(), FAR_NS, false, TICK_NS, TICK_NS),
            (1, false)
        );
    }

    #[test]
    fn a_poll_timeout_without_a_timer_keeps_the_low_bits_of_no_timer() {
        // 10 µs idles: the timer is not looked at, so a poll timeout records
        // "no timer", which the kernel's unsigned int cuts to its low 32
        // bits: a huge sample, but below UINT_MAX, so it takes part.
        let mut m = after_eight_idles_of(10_000);
        assert_eq!(m.select(FAR_NS, false, TICK_NS), 10_000);
        m.update_poll_timeout(false, TICK_NS);
        assert_eq!(m.intervals_us[0], 2_783_138_807);
        // Five such samples and no interval is typical any more.
        for _ in 0..4 {
            m.select(FAR_NS, false, TICK_NS);
            m.update_poll_timeout(false, TICK_NS);
        }
        assert_eq!(typical_interval_us(&m.intervals_us), u32::MAX);
    }

    #[test]
    fn a_cpu_idle_for_long_before_the_run_predicts_a_long_idle() {
        // A fresh history of zeros predicts no idle time as soon as one
        // short period joins the zeros; the history of a CPU that has been
        // idle for long predicts 45 ms (one short period is an outlier):
        // the deep state, tick stopped.
        let mut fresh = MenuState::default();
        let mut fresh2 = fresh;
        fresh2.update(2_000, false, TICK_NS, 0);
        assert_eq!(fresh2.select(FAR_NS, false, TICK_NS), 0);
        assert_eq!(
            fresh.select_state(&spr(), FAR_NS, false, TICK_NS, TICK_NS),
            (3, true)
        );
        let mut long = MenuState::idle_for_long();
        assert_eq!(long.select(FAR_NS, false, TICK_NS), 45_000_000);
        long.update(2_000, false, TICK_NS, 0);
        assert_eq!(long.select(FAR_NS, false, TICK_NS), 45_000_000);
        assert_eq!(
            long.select_state(&spr(), FAR_NS, false, TICK_NS, TICK_NS),
            (3, true)
        );
    }
}
