//! Per-entity load tracking (PELT), after kernel/sched/pelt.c.
//!
//! Time is cut into 1024 µs periods (ns >> 10 ≈ µs units); a contribution made
//! `n` periods ago weighs `y^n` with `y^32 = 1/2`. The sums saturate at
//! `LOAD_AVG_MAX`; averages are sums divided by the current maximum.

/// Maximum of the geometric series for a signal that is always 1.
pub const LOAD_AVG_MAX: u64 = 47742;
/// `PELT_MIN_DIVIDER`: the smallest divider a sum can have (no partial period).
pub const PELT_MIN_DIVIDER: u64 = LOAD_AVG_MAX - 1024;
/// Periods after which a contribution has halved.
pub const LOAD_AVG_PERIOD: u64 = 32;
const CAP_SHIFT: u32 = 10;

/// `y^n · 2^32` for n in 0..32, computed once (deterministically) from y = 2^(-1/32).
fn yn_inv(n: usize) -> u64 {
    static TABLE: std::sync::OnceLock<[u64; 32]> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = [0u64; 32];
        for (i, e) in t.iter_mut().enumerate() {
            let v = (0.5f64).powf(i as f64 / 32.0) * 4294967296.0;
            *e = (v as u64).min(0xffff_ffff);
        }
        t
    })[n]
}

/// `val · y^n` (mirrors decay_load()).
pub fn decay_load(val: u64, n: u64) -> u64 {
    if n > LOAD_AVG_PERIOD * 63 {
        return 0;
    }
    let mut v = val;
    let mut n = n;
    if n >= LOAD_AVG_PERIOD {
        v >>= n / LOAD_AVG_PERIOD;
        n %= LOAD_AVG_PERIOD;
    }
    ((v as u128 * yn_inv(n as usize) as u128) >> 32) as u64
}

/// Contribution of `periods` full periods plus the two partial ones
/// (mirrors __accumulate_pelt_segments()).
fn accumulate_segments(periods: u64, d1: u64, d3: u64) -> u64 {
    let c1 = decay_load(d1, periods);
    let c2 = LOAD_AVG_MAX - decay_load(LOAD_AVG_MAX, periods) - 1024;
    c1 + c2 + d3
}

/// A PELT signal set (`struct sched_avg`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedAvg {
    /// In the owner's PELT clock, ns.
    pub last_update_time: u64,
    pub load_sum: u64,
    pub runnable_sum: u64,
    pub util_sum: u64,
    pub period_contrib: u32,
    pub load_avg: u64,
    pub runnable_avg: u64,
    pub util_avg: u64,
}

impl SchedAvg {
    /// Accumulates the signals up to `now` (mirrors ___update_load_sum());
    /// returns true when a period boundary was crossed.
    pub fn update_sum(&mut self, now: u64, load: u64, runnable: u64, running: bool) -> bool {
        if now < self.last_update_time {
            self.last_update_time = now;
            return false;
        }
        let mut delta = (now - self.last_update_time) >> 10;
        if delta == 0 {
            return false;
        }
        self.last_update_time += delta << 10;
        let (runnable, running) = if load == 0 {
            (0, false)
        } else {
            (runnable, running)
        };
        // accumulate_sum()
        let mut contrib = delta;
        delta += self.period_contrib as u64;
        let periods = delta / 1024;
        if periods > 0 {
            self.load_sum = decay_load(self.load_sum, periods);
            self.runnable_sum = decay_load(self.runnable_sum, periods);
            self.util_sum = decay_load(self.util_sum, periods);
            delta %= 1024;
            if load > 0 {
                contrib = accumulate_segments(periods, 1024 - self.period_contrib as u64, delta);
            }
        }
        self.period_contrib = delta as u32;
        if load > 0 {
            self.load_sum += load * contrib;
        }
        if runnable > 0 {
            self.runnable_sum += (runnable * contrib) << CAP_SHIFT;
        }
        if running {
            self.util_sum += contrib << CAP_SHIFT;
        }
        periods > 0
    }

    /// A runqueue's signal of one class's running time up to `now` on its
    /// PELT clock: 1 while a task of the class runs (mirrors
    /// update_rt_rq_load_avg() and update_dl_rq_load_avg()).
    pub fn update_running(&mut self, now: u64, running: bool) {
        let r = u64::from(running);
        if self.update_sum(now, r, r, running) {
            self.update_avg(1);
        }
    }

    /// Recomputes the averages from the sums (mirrors ___update_load_avg()).
    pub fn update_avg(&mut self, load: u64) {
        let divider = LOAD_AVG_MAX - 1024 + self.period_contrib as u64;
        self.load_avg = load * self.load_sum / divider;
        self.runnable_avg = self.runnable_sum / divider;
        self.util_avg = self.util_sum / divider;
    }

    /// Current divider (mirrors get_pelt_divider()).
    pub fn divider(&self) -> u64 {
        LOAD_AVG_MAX - 1024 + self.period_contrib as u64
    }

    /// Adds an entity's averages to a runqueue's (mirrors
    /// attach_entity_load_avg() with enqueue_load_avg()): the entity's
    /// window is aligned to the runqueue's and its sums rebuilt from its
    /// averages; the runqueue's load sum, which is weighted, grows by the
    /// entity's weight times its (unweighted) load sum.
    pub fn attach(&mut self, se: &mut SchedAvg, se_weight: u64) {
        let div = self.divider();
        se.last_update_time = self.last_update_time;
        se.period_contrib = self.period_contrib;
        se.util_sum = se.util_avg * div;
        se.runnable_sum = se.runnable_avg * div;
        let load_sum = se.load_avg * div;
        se.load_sum = if se_weight < load_sum {
            load_sum / se_weight
        } else {
            1
        };
        self.load_avg += se.load_avg;
        self.load_sum =
            (self.load_sum + se_weight * se.load_sum).max(self.load_avg * PELT_MIN_DIVIDER);
        self.util_avg += se.util_avg;
        self.util_sum += se.util_sum;
        self.runnable_avg += se.runnable_avg;
        self.runnable_sum += se.runnable_sum;
    }

    /// Takes the averages a runqueue's removed tasks had off it (the start
    /// of update_cfs_rq_load_avg()): each average loses its share, clipped
    /// at zero, each sum that share times the current divider, never
    /// dropping below its average times the smallest divider.
    pub fn remove(&mut self, load_avg: u64, util_avg: u64, runnable_avg: u64) {
        let div = self.divider();
        sub_sa(
            &mut self.load_avg,
            &mut self.load_sum,
            load_avg,
            load_avg * div,
        );
        sub_sa(
            &mut self.util_avg,
            &mut self.util_sum,
            util_avg,
            util_avg * div,
        );
        sub_sa(
            &mut self.runnable_avg,
            &mut self.runnable_sum,
            runnable_avg,
            runnable_avg * div,
        );
    }

    /// Removes an entity's averages from a runqueue's (mirrors
    /// detach_entity_load_avg() with dequeue_load_avg()): each average and
    /// sum loses the entity's, clipped at zero, and a sum never drops below
    /// its average times the smallest divider (__update_sa()).
    pub fn detach(&mut self, se: &SchedAvg, se_weight: u64) {
        let load_sum = se_weight * se.load_sum;
        sub_sa(
            &mut self.load_avg,
            &mut self.load_sum,
            se.load_avg,
            load_sum,
        );
        sub_sa(
            &mut self.util_avg,
            &mut self.util_sum,
            se.util_avg,
            se.util_sum,
        );
        sub_sa(
            &mut self.runnable_avg,
            &mut self.runnable_sum,
            se.runnable_avg,
            se.runnable_sum,
        );
    }

    /// The load part of reweight_entity() for an entity that is not queued
    /// (dequeue_load_avg(), the entity's load_avg recomputed from its load
    /// sum at the new weight, enqueue_load_avg()): `self` is the runqueue's
    /// signals, which keep a dequeued entity's contribution.
    pub fn reweight(&mut self, se: &mut SchedAvg, old_weight: u64, new_weight: u64) {
        sub_sa(
            &mut self.load_avg,
            &mut self.load_sum,
            se.load_avg,
            old_weight * se.load_sum,
        );
        se.load_avg = new_weight * se.load_sum / se.divider();
        self.load_avg += se.load_avg;
        self.load_sum += new_weight * se.load_sum;
    }
}

/// Takes `d_avg` off an average and `d_sum` off its sum, both clipped at
/// zero, the sum never below the average times the smallest divider
/// (mirrors __update_sa() with negative deltas).
fn sub_sa(avg: &mut u64, sum: &mut u64, d_avg: u64, d_sum: u64) {
    *avg = avg.saturating_sub(d_avg);
    *sum = sum.saturating_sub(d_sum).max(*avg * PELT_MIN_DIVIDER);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_every_32_periods() {
        // y^0 is 0xffffffff/2^32 in the kernel table, so exact halving loses one.
        assert_eq!(decay_load(1 << 20, 32), (1 << 19) - 1);
        assert_eq!(decay_load(1000, 0), 999);
        assert_eq!(decay_load(1 << 20, 64 * 63), 0);
    }

    #[test]
    fn always_running_converges_to_1024() {
        let mut sa = SchedAvg::default();
        let mut t = 0;
        for _ in 0..400 {
            t += 1_000_000;
            sa.update_sum(t, 1, 1, true);
            sa.update_avg(1024);
        }
        assert!(
            sa.util_avg >= 1000 && sa.util_avg <= 1024,
            "{}",
            sa.util_avg
        );
        assert!(sa.load_avg >= 1000 && sa.load_avg <= 1024);
        // Then idle for 32 periods (~32.8 ms): about half.
        let u = sa.util_avg;
        sa.update_sum(t + 32 * 1024 * 1024, 0, 0, false);
        sa.update_avg(1024);
        assert!(
            (sa.util_avg as i64 - u as i64 / 2).abs() < 20,
            "{} vs {}",
            sa.util_avg,
            u
        );
    }

    /// A runqueue's load sum is weighted: attaching or detaching a task
    /// moves it by the task's weight times its (unweighted) sum, so the load
    /// average recomputed at the next period boundary keeps the change
    /// (enqueue_load_avg()/dequeue_load_avg()).
    #[test]
    fn attach_and_detach_survive_the_next_period() {
        let (mut rq, mut se) = (SchedAvg::default(), SchedAvg::default());
        let mut t = 0;
        for _ in 0..400 {
            t += 1_000_000;
            se.update_sum(t, 1, 1, true);
            se.update_avg(1024);
            rq.update_sum(t, 1024, 1, true);
            rq.update_avg(1);
        }
        assert!(rq.load_avg > 1000 && se.load_avg > 1000);
        // The task leaves: the runqueue, now empty, stays near zero.
        rq.detach(&se, 1024);
        assert!(rq.load_avg < 30, "{}", rq.load_avg);
        rq.update_sum(t + 2_000_000, 0, 0, false);
        rq.update_avg(1);
        assert!(rq.load_avg < 30, "after 2 ms: {}", rq.load_avg);
        // It joins another, empty runqueue: its load is there a period later.
        let mut other = SchedAvg {
            last_update_time: t,
            ..SchedAvg::default()
        };
        other.attach(&mut se, 1024);
        assert_eq!(se.last_update_time, other.last_update_time);
        other.update_sum(t + 1_100_000, 1024, 1, true);
        other.update_avg(1);
        assert!(other.load_avg > 1000, "after 1.1 ms: {}", other.load_avg);
    }

    #[test]
    fn half_duty_cycle_is_about_512() {
        let mut sa = SchedAvg::default();
        let mut t = 0u64;
        for i in 0..2000 {
            t += 1 << 20;
            let on = i % 2 == 0;
            sa.update_sum(t, u64::from(on), u64::from(on), on);
            sa.update_avg(1024);
        }
        assert!((400..620).contains(&sa.util_avg), "{}", sa.util_avg);
    }
}
