//! Folding a run's marks into a workload's figures, one mark at a time.

/// A workload's figures built from its marks `(task, tag, time)` in
/// recording order, one at a time: the same from a run's kept marks
/// ([`MarkFold::fold`]) as from marks handed over as the run makes them.
pub trait MarkFold {
    /// One mark: `task` passed a mark step with `tag` at `at_ns`.
    fn mark(&mut self, task: u32, tag: u32, at_ns: u64);

    /// All of `marks`, in order.
    fn fold(mut self, marks: &[(u32, u32, u64)]) -> Self
    where
        Self: Sized,
    {
        for &(t, tag, at) in marks {
            self.mark(t, tag, at);
        }
        self
    }
}

/// One time stamp per task id (when each task last passed some mark).
#[derive(Clone, Debug, Default)]
pub struct PerTask(Vec<Option<u64>>);

impl PerTask {
    pub fn set(&mut self, t: u32, at_ns: u64) {
        let i = t as usize;
        if self.0.len() <= i {
            self.0.resize(i + 1, None);
        }
        self.0[i] = Some(at_ns);
    }

    pub fn get(&self, t: u32) -> Option<u64> {
        self.0.get(t as usize).copied().flatten()
    }

    /// The stamp, cleared.
    pub fn take(&mut self, t: u32) -> Option<u64> {
        self.0.get_mut(t as usize).and_then(Option::take)
    }
}
