//! A fixed-size CPU bitmask, the simulator's `struct cpumask`.
//!
//! Fixed width (`MAX_CPUS` bits) so that masks are `Copy`, never allocate and
//! iterate in ascending CPU order, which keeps every scan deterministic.

use serde::{Deserialize, Serialize};

/// The CPU id type used everywhere: explicit width, as in the kernel's `int cpu`.
pub type CpuId = u16;

/// The largest machine the simulator accepts (the oracle kernels use NR_CPUS=512).
pub const MAX_CPUS: usize = 512;
const WORDS: usize = MAX_CPUS / 64;

/// A set of CPUs, iterated in ascending order.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct CpuMask {
    bits: [u64; WORDS],
}

impl CpuMask {
    /// The empty mask.
    pub const fn new() -> Self {
        CpuMask { bits: [0; WORDS] }
    }

    /// CPUs `0..n`.
    pub fn first_n(n: usize) -> Self {
        let mut m = Self::new();
        for c in 0..n {
            m.set(c as CpuId);
        }
        m
    }

    /// A mask holding the given CPUs.
    pub fn from_cpus(cpus: impl IntoIterator<Item = CpuId>) -> Self {
        let mut m = Self::new();
        for c in cpus {
            m.set(c);
        }
        m
    }

    pub fn set(&mut self, cpu: CpuId) {
        let c = cpu as usize;
        self.bits[c / 64] |= 1u64 << (c % 64);
    }

    pub fn clear(&mut self, cpu: CpuId) {
        let c = cpu as usize;
        self.bits[c / 64] &= !(1u64 << (c % 64));
    }

    pub fn test(&self, cpu: CpuId) -> bool {
        let c = cpu as usize;
        c < MAX_CPUS && self.bits[c / 64] & (1u64 << (c % 64)) != 0
    }

    pub fn weight(&self) -> u32 {
        self.bits.iter().map(|w| w.count_ones()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.bits.iter().all(|&w| w == 0)
    }

    /// Lowest CPU in the mask.
    pub fn first(&self) -> Option<CpuId> {
        for (i, &w) in self.bits.iter().enumerate() {
            if w != 0 {
                return Some((i * 64 + w.trailing_zeros() as usize) as CpuId);
            }
        }
        None
    }

    /// Lowest CPU in the mask that is `>= from`.
    pub fn next_from(&self, from: CpuId) -> Option<CpuId> {
        let f = from as usize;
        if f >= MAX_CPUS {
            return None;
        }
        let mut i = f / 64;
        let mut w = self.bits[i] & (!0u64 << (f % 64));
        loop {
            if w != 0 {
                return Some((i * 64 + w.trailing_zeros() as usize) as CpuId);
            }
            i += 1;
            if i == WORDS {
                return None;
            }
            w = self.bits[i];
        }
    }

    pub fn and(&self, o: &CpuMask) -> CpuMask {
        let mut r = *self;
        for i in 0..WORDS {
            r.bits[i] &= o.bits[i];
        }
        r
    }

    pub fn or(&self, o: &CpuMask) -> CpuMask {
        let mut r = *self;
        for i in 0..WORDS {
            r.bits[i] |= o.bits[i];
        }
        r
    }

    pub fn and_not(&self, o: &CpuMask) -> CpuMask {
        let mut r = *self;
        for i in 0..WORDS {
            r.bits[i] &= !o.bits[i];
        }
        r
    }

    pub fn intersects(&self, o: &CpuMask) -> bool {
        (0..WORDS).any(|i| self.bits[i] & o.bits[i] != 0)
    }

    /// True when every CPU of `self` is in `o`.
    pub fn is_subset(&self, o: &CpuMask) -> bool {
        (0..WORDS).all(|i| self.bits[i] & !o.bits[i] == 0)
    }

    /// Ascending iteration.
    pub fn iter(&self) -> CpuMaskIter<'_> {
        self.iter_range(0, MAX_CPUS)
    }

    /// Ascending iteration over the CPUs `from..to` of the mask, skipping
    /// whole words outside it.
    fn iter_range(&self, from: usize, to: usize) -> CpuMaskIter<'_> {
        let word = from / 64;
        CpuMaskIter {
            mask: self,
            word,
            cur: if word < WORDS {
                self.bits[word] & (!0u64 << (from % 64))
            } else {
                0
            },
            end: to,
        }
    }

    /// Iterates the mask starting at `start` and wrapping around, as the
    /// kernel's `for_each_cpu_wrap()` does.
    pub fn iter_wrap(&self, start: CpuId) -> impl Iterator<Item = CpuId> + '_ {
        let s = (start as usize).min(MAX_CPUS);
        self.iter_range(s, MAX_CPUS).chain(self.iter_range(0, s))
    }

    /// Kernel-style list, e.g. `0-3,8,10-11`.
    pub fn to_list_string(&self) -> String {
        let mut out = String::new();
        let mut it = self.iter().peekable();
        while let Some(start) = it.next() {
            let mut end = start;
            while it.peek() == Some(&(end + 1)) {
                end = it.next().unwrap_or(end);
            }
            if !out.is_empty() {
                out.push(',');
            }
            if start == end {
                out.push_str(&start.to_string());
            } else {
                out.push_str(&format!("{start}-{end}"));
            }
        }
        out
    }

    /// Parses a kernel-style list (`0-3,8,10-11`); `None` on bad syntax or a
    /// CPU beyond `MAX_CPUS`.
    pub fn parse_list(s: &str) -> Option<CpuMask> {
        let mut m = CpuMask::new();
        let s = s.trim();
        if s.is_empty() {
            return Some(m);
        }
        for part in s.split(',') {
            let part = part.trim();
            let (a, b) = match part.split_once('-') {
                Some((a, b)) => (
                    a.trim().parse::<usize>().ok()?,
                    b.trim().parse::<usize>().ok()?,
                ),
                None => {
                    let v = part.parse::<usize>().ok()?;
                    (v, v)
                }
            };
            if a > b || b >= MAX_CPUS {
                return None;
            }
            for c in a..=b {
                m.set(c as CpuId);
            }
        }
        Some(m)
    }
}

impl std::fmt::Debug for CpuMask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CpuMask({})", self.to_list_string())
    }
}

/// Ascending iterator over a [`CpuMask`].
pub struct CpuMaskIter<'a> {
    mask: &'a CpuMask,
    word: usize,
    cur: u64,
    /// One past the last CPU to yield.
    end: usize,
}

impl Iterator for CpuMaskIter<'_> {
    type Item = CpuId;
    fn next(&mut self) -> Option<CpuId> {
        loop {
            if self.cur != 0 {
                let cpu = self.word * 64 + self.cur.trailing_zeros() as usize;
                if cpu >= self.end {
                    return None;
                }
                self.cur &= self.cur - 1;
                return Some(cpu as CpuId);
            }
            self.word += 1;
            if self.word >= WORDS || self.word * 64 >= self.end {
                return None;
            }
            self.cur = self.mask.bits[self.word];
        }
    }
}

impl Serialize for CpuMask {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let v: Vec<CpuId> = self.iter().collect();
        v.serialize(s)
    }
}

impl<'de> Deserialize<'de> for CpuMask {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v: Vec<CpuId> = Vec::deserialize(d)?;
        if let Some(bad) = v.iter().find(|&&c| c as usize >= MAX_CPUS) {
            return Err(serde::de::Error::custom(format!(
                "cpu {bad} beyond {MAX_CPUS}"
            )));
        }
        Ok(CpuMask::from_cpus(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_round_trip() {
        let m = CpuMask::parse_list("0-3,8,10-11").unwrap();
        assert_eq!(m.weight(), 7);
        assert_eq!(m.to_list_string(), "0-3,8,10-11");
        assert_eq!(m.next_from(4), Some(8));
        assert_eq!(
            m.iter_wrap(9).collect::<Vec<_>>(),
            vec![10, 11, 0, 1, 2, 3, 8]
        );
        assert!(CpuMask::parse_list("3-1").is_none());
        assert!(CpuMask::parse_list("x").is_none());
        assert!(CpuMask::parse_list("600").is_none());
    }

    proptest::proptest! {
        /// Iteration yields exactly the set CPUs, ascending; the wrapped
        /// iteration yields those from `start` up, then those below it.
        #[test]
        fn iteration_matches_the_bits(
            cpus in proptest::collection::vec(0..MAX_CPUS as CpuId, 0..40),
            start in 0..=MAX_CPUS as CpuId,
        ) {
            let m = CpuMask::from_cpus(cpus.iter().copied());
            let want: Vec<CpuId> = (0..MAX_CPUS as CpuId).filter(|&c| m.test(c)).collect();
            proptest::prop_assert_eq!(m.iter().collect::<Vec<_>>(), want.clone());
            let wrapped: Vec<CpuId> = want
                .iter()
                .copied()
                .filter(|&c| c >= start)
                .chain(want.iter().copied().filter(|&c| c < start))
                .collect();
            proptest::prop_assert_eq!(m.iter_wrap(start).collect::<Vec<_>>(), wrapped);
        }
    }
}
