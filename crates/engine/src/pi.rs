//! Priority inheritance through PI futexes (kernel/futex/pi.c over
//! kernel/locking/rtmutex.c, and rt_mutex_setprio()), and the priority
//! order in which futex waiters are woken (kernel/futex/core.c).
//!
//! A [`SyncObject::PiMutex`](schedlab_workload::SyncObject::PiMutex) is
//! glibc's `PTHREAD_PRIO_INHERIT` mutex: a contended lock blocks in
//! FUTEX_LOCK_PI on the kernel's rt_mutex, whose waiters are ordered by
//! priority (a deadline waiter first, by deadline; then RT priorities; every
//! fair waiter ranks as nice 0, in arrival order). The owner runs at the
//! best priority among its own and its waiters' (`p->prio` against
//! `p->normal_prio`): a fair owner waited on by an RT task moves to the RT
//! class at that priority until its unlock. A boosted owner that itself
//! waits on another PI mutex passes its priority on along the chain
//! (rt_mutex_adjust_prio_chain(), at most [`MAX_LOCK_DEPTH`] locks). An
//! unlock with waiters hands the lock straight to the first of them
//! (wake_futex_pi() writes the new owner's TID into the futex word), so no
//! other thread can take it meanwhile, and the unlocking task drops back to
//! what its remaining waiters lend it before the waiter is woken.
//!
//! Plain futex waits (a mutex without PI, condition variables, semaphores)
//! queue by `min(normal_prio, MAX_RT_PRIO)` (__futex_queue()): deadline
//! waiters first, then RT ones by priority, then everyone else in arrival
//! order; a wake takes the first. Boosts do not count there.
//!
//! Not modelled: boosting into the deadline class (a deadline waiter lends
//! nothing; its RT followers still do, and a deadline owner is never
//! boosted), lock stealing by a better waiter arriving between an unlock
//! and the woken waiter's return (rt_mutex_steal()), deadlock detection
//! (a chain that loops stops where it started), and the fair-class `prio`
//! a fair waiter lends a fair owner of lower nice priority, which changes
//! only the priority trace events print.

use crate::event::TaskId;
use crate::rt::{PrioChange, RT_PRIO_NONE};
use crate::sim::Sim;
use crate::task::{RtEntity, Task};
use schedlab_topo::CpuId;
use schedlab_workload::SchedPolicy;
use std::collections::VecDeque;

/// `max_lock_depth`: the longest chain of PI locks a boost walks.
pub const MAX_LOCK_DEPTH: usize = 1024;
/// `MAX_RT_PRIO`: a futex waiter's key outside the RT and deadline classes.
const MAX_RT_PRIO: i32 = 100;
/// `DEFAULT_PRIO` (nice 0): an rt_mutex waiter's key outside those classes.
const DEFAULT_PRIO: i32 = 120;

/// A task's RT policy as it set it (`p->normal_prio` and SCHED_RR).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NormalRt {
    /// Kernel priority, 0..=98.
    pub prio: u8,
    pub rr: bool,
}

/// A task's priority-inheritance state (allocated at its first PI lock).
#[derive(Clone, Debug, Default)]
pub struct PiState {
    /// The PI mutexes it owns, in the order it took them.
    pub owned: Vec<u32>,
    /// The PI mutex it waits for (`p->pi_blocked_on`), with its key there
    /// as it was queued or last requeued (`waiter->tree`).
    pub blocked_on: Option<(u32, WaiterKey)>,
    /// A PI mutex an unlock handed to it while it slept: its lock step
    /// returns with it when it runs again.
    pub handed: Option<u32>,
    /// Boosted: `p->prio` is better than `p->normal_prio`.
    pub boosted: bool,
    /// While boosted, its own RT policy (`None`: a fair one).
    pub normal_rt: Option<NormalRt>,
}

/// An rt_mutex waiter's sort key (`struct rt_waiter_node`): priority, then,
/// for deadline waiters, absolute deadline.
pub type WaiterKey = (i32, u64);

/// The key a task waits on a plain futex with: `min(normal_prio,
/// MAX_RT_PRIO)` (a boost does not count).
pub(crate) fn futex_key(tk: &Task) -> i32 {
    if tk.dl.is_some() {
        return -1;
    }
    let normal = match tk.pi.as_deref() {
        Some(pi) if pi.boosted => pi.normal_rt.map(|n| n.prio),
        _ => tk.rt.map(|r| r.prio),
    };
    normal.map_or(MAX_RT_PRIO, i32::from)
}

/// The key a task waits on an rt_mutex with (mirrors __waiter_prio() and
/// waiter_update_prio()): its effective priority, boost included; fair
/// tasks all rank as nice 0.
pub(crate) fn waiter_key(tk: &Task) -> WaiterKey {
    if let Some(dl) = tk.dl.as_deref() {
        return (-1, dl.deadline_ns);
    }
    match tk.rt {
        Some(r) => (i32::from(r.prio), 0),
        None => (DEFAULT_PRIO, 0),
    }
}

/// Queues `t` on a plain futex wait list after every waiter of its key or a
/// better one (plist_add()).
pub(crate) fn futex_enqueue(tasks: &[Task], q: &mut VecDeque<TaskId>, t: TaskId) {
    let key = futex_key(&tasks[t as usize]);
    if q.back()
        .is_none_or(|&b| futex_key(&tasks[b as usize]) <= key)
    {
        q.push_back(t);
        return;
    }
    let at = q.partition_point(|&w| futex_key(&tasks[w as usize]) <= key);
    q.insert(at, t);
}

/// The key `w` is queued with on the PI mutex it waits for.
fn queued_key(tasks: &[Task], w: TaskId) -> WaiterKey {
    tasks[w as usize]
        .pi
        .as_deref()
        .and_then(|p| p.blocked_on)
        .map_or((DEFAULT_PRIO, 0), |(_, k)| k)
}

/// The priority a task runs at: the better of its own RT priority (`None`:
/// a fair policy) and the best one its waiters lend (`__rt_effective_prio()`).
fn effective_prio(normal: Option<u8>, lent: Option<u8>) -> Option<u8> {
    match (normal, lent) {
        (Some(n), Some(d)) => Some(n.min(d)),
        (n, None) => n,
        (None, d) => d,
    }
}

/// Is `a` before `b` (rt_waiter_node_less())? Deadlines count only between
/// deadline waiters.
fn key_less(a: WaiterKey, b: WaiterKey) -> bool {
    a.0 < b.0 || (a.0 == b.0 && a.0 < 0 && (a.1 as i64).wrapping_sub(b.1 as i64) < 0)
}

/// Queues `t` with `key` on a PI mutex's waiters, after those not behind it
/// (rt_mutex_enqueue(): equal keys keep their arrival order).
fn pi_enqueue(tasks: &[Task], q: &mut VecDeque<TaskId>, t: TaskId, key: WaiterKey) {
    let at = q.partition_point(|&w| !key_less(key, queued_key(tasks, w)));
    q.insert(at, t);
}

impl Sim {
    /// `t`'s PI state, created on first use.
    fn pi_mut(&mut self, t: TaskId) -> &mut PiState {
        self.tasks[t as usize]
            .pi
            .get_or_insert_with(Default::default)
    }

    /// `t` runs at a priority lent by a waiter.
    pub(crate) fn pi_boosted(&self, t: TaskId) -> bool {
        self.tasks[t as usize]
            .pi
            .as_deref()
            .is_some_and(|p| p.boosted)
    }

    /// `t` owns at least one PI mutex.
    pub(crate) fn pi_owns_any(&self, t: TaskId) -> bool {
        self.tasks[t as usize]
            .pi
            .as_deref()
            .is_some_and(|p| !p.owned.is_empty())
    }

    /// `t`'s own RT policy, boost aside (`None`: fair or deadline).
    pub(crate) fn normal_rt(&self, t: TaskId) -> Option<NormalRt> {
        let tk = &self.tasks[t as usize];
        match tk.pi.as_deref() {
            Some(pi) if pi.boosted => pi.normal_rt,
            _ => tk.rt.map(|r| NormalRt {
                prio: r.prio,
                rr: r.rr,
            }),
        }
    }

    /// `t`'s policy, boost aside, is fair (`!rt_or_dl_task_policy()`).
    pub(crate) fn normal_is_fair(&self, t: TaskId) -> bool {
        self.tasks[t as usize].dl.is_none() && self.normal_rt(t).is_none()
    }

    /// `t` took the free PI mutex `m`.
    pub(crate) fn pi_took(&mut self, t: TaskId, m: u32) {
        self.pi_mut(t).owned.push(m);
    }

    /// `t` took the free mutex `m`: if it is a PI mutex, `t` owns it there.
    pub(crate) fn pi_took_if(&mut self, t: TaskId, m: u32) {
        if self.ipc.pi_waiters(m).is_some() {
            self.pi_took(t, m);
        }
    }

    /// `t` blocks on PI mutex `m`, owned by `owner` (mirrors
    /// task_blocks_on_rt_mutex()): it queues by its key, and the owner's
    /// priority follows its waiters', along the chain of locks the owner
    /// itself waits for. `cpu` runs the call (the waiter's, or a requeueing
    /// broadcaster's).
    pub(crate) fn pi_block(&mut self, t: TaskId, m: u32, owner: TaskId, cpu: CpuId) {
        let key = waiter_key(&self.tasks[t as usize]);
        let Some((_, mut q)) = self.ipc.take_pi_waiters(m) else {
            return;
        };
        pi_enqueue(&self.tasks, &mut q, t, key);
        self.ipc.put_pi_waiters(m, q);
        self.pi_mut(t).blocked_on = Some((m, key));
        if owner != t {
            self.pi_adjust_chain(owner, cpu);
        }
    }

    /// Unlock of PI mutex `m` by its owner, running on `cpu`, with `next`
    /// the first waiter, taken off the queue by the caller, or `None`
    /// (wake_futex_pi() and mark_wakeup_next_waiter()): the lock passes to
    /// `next`, and the old owner's priority drops to what its other waiters
    /// lend.
    pub(crate) fn pi_release(
        &mut self,
        owner: Option<TaskId>,
        m: u32,
        next: Option<TaskId>,
        cpu: CpuId,
    ) {
        if let Some(o) = owner {
            if let Some(pi) = self.tasks[o as usize].pi.as_deref_mut() {
                if let Some(i) = pi.owned.iter().position(|&x| x == m) {
                    pi.owned.remove(i);
                }
            }
        }
        if let Some(w) = next {
            self.pi_handed_to(w, m);
        }
        if let Some(o) = owner {
            self.pi_adjust_chain(o, cpu);
        }
        if let Some(w) = next {
            self.pi_adjust_chain(w, cpu);
        }
    }

    /// PI mutex `m` was given to the sleeping `w`: it owns it, and its lock
    /// step returns with it when it runs.
    pub(crate) fn pi_handed_to(&mut self, w: TaskId, m: u32) {
        let pi = self.pi_mut(w);
        pi.blocked_on = None;
        pi.handed = Some(m);
        pi.owned.push(m);
    }

    /// The lock step of `t` on PI mutex `m` finds `m` handed to it.
    pub(crate) fn pi_take_handed(&mut self, t: TaskId, m: u32) -> bool {
        match self.tasks[t as usize].pi.as_deref_mut() {
            Some(pi) if pi.handed == Some(m) => {
                pi.handed = None;
                true
            }
            _ => false,
        }
    }

    /// The best RT priority `t`'s waiters lend it: the first RT waiter of
    /// each PI mutex it owns (`rt_mutex_top_waiter()` over `pi_waiters`).
    fn pi_donor_prio(&self, t: TaskId) -> Option<u8> {
        let pi = self.tasks[t as usize].pi.as_deref()?;
        let mut best: Option<u8> = None;
        for &m in &pi.owned {
            let Some(q) = self.ipc.pi_waiters(m) else {
                continue;
            };
            let first_rt = q
                .iter()
                .map(|&w| queued_key(&self.tasks, w).0)
                .find(|&p| (0..i32::from(RT_PRIO_NONE)).contains(&p));
            if let Some(p) = first_rt {
                let p = p as u8;
                best = Some(best.map_or(p, |b| b.min(p)));
            }
        }
        best
    }

    /// Recomputes `t`'s priority from its own and its waiters' (mirrors
    /// rt_mutex_adjust_prio() → rt_mutex_setprio()), on `cpu`, whose trace
    /// records sched_pi_setprio; with `cpu` `None`, as sched_setattr()
    /// sets `p->prio` itself (no tracepoint). Returns whether the priority
    /// changed.
    fn rt_mutex_setprio(&mut self, t: TaskId, cpu: Option<CpuId>) -> bool {
        let tk = &self.tasks[t as usize];
        if tk.dl.is_some() || tk.state == crate::task::TaskState::Dead {
            return false;
        }
        let normal = self.normal_rt(t);
        let eff = effective_prio(normal.map(|n| n.prio), self.pi_donor_prio(t));
        let boosted = eff != normal.map(|n| n.prio);
        if boosted || self.tasks[t as usize].pi.is_some() {
            let pi = self.pi_mut(t);
            pi.boosted = boosted;
            pi.normal_rt = if boosted { normal } else { None };
        }
        let changed = self.set_rt_prio(t, eff, normal.is_some_and(|n| n.rr), cpu);
        if changed && cpu.is_some() {
            self.counters.pi_boosts += u64::from(boosted);
        }
        changed
    }

    /// Puts `t` at RT priority `prio` (`None`: its fair policy) with the
    /// SCHED_RR flag `rr`, keeping its RR slice, through rt.rs's class
    /// change; with `trace_cpu`, that CPU's trace records sched_pi_setprio.
    /// An unchanged priority only switches FIFO and RR in place. Returns
    /// whether the priority changed.
    fn set_rt_prio(
        &mut self,
        t: TaskId,
        prio: Option<u8>,
        rr: bool,
        trace_cpu: Option<CpuId>,
    ) -> bool {
        let cur = self.tasks[t as usize].rt;
        if prio == cur.map(|r| r.prio) {
            self.set_rr_in_place(t, rr);
            return false;
        }
        let new = prio.map(|p| RtEntity {
            prio: p,
            rr,
            time_slice_ticks: cur.map_or(self.rr_timeslice_ticks(), |c| c.time_slice_ticks),
            on_rq: false,
        });
        if let Some(cpu) = trace_cpu {
            self.trace_pi_setprio(cpu, t, prio);
        }
        self.change_rt_state(t, new, PrioChange::Pi);
        true
    }

    /// `t`'s priority may have changed: recompute it, and while it changes
    /// and the task waits on a PI mutex, requeue it there and go on to that
    /// mutex's owner (mirrors rt_mutex_adjust_prio_chain()). `cpu` runs the
    /// walk.
    pub(crate) fn pi_adjust_chain(&mut self, t: TaskId, cpu: CpuId) {
        let mut cur = t;
        for _ in 0..MAX_LOCK_DEPTH {
            if !self.rt_mutex_setprio(cur, Some(cpu)) {
                return;
            }
            let Some((m, _)) = self.tasks[cur as usize]
                .pi
                .as_deref()
                .and_then(|p| p.blocked_on)
            else {
                return;
            };
            let key = waiter_key(&self.tasks[cur as usize]);
            if let Some(pi) = self.tasks[cur as usize].pi.as_deref_mut() {
                pi.blocked_on = Some((m, key));
            }
            let Some((owner, mut q)) = self.ipc.take_pi_waiters(m) else {
                return;
            };
            q.retain(|&w| w != cur);
            pi_enqueue(&self.tasks, &mut q, cur, key);
            self.ipc.put_pi_waiters(m, q);
            match owner {
                Some(o) if o != t => cur = o,
                _ => return,
            }
        }
    }

    /// `t` owns PI mutexes whose waiters lend it an RT priority.
    pub(crate) fn pi_lent(&self, t: TaskId) -> bool {
        self.pi_owns_any(t) && self.pi_donor_prio(t).is_some()
    }

    /// After a sched_setattr() that moved `t` into or out of the deadline
    /// class, its priority follows what its waiters lend (no tracepoint).
    pub(crate) fn pi_setprio_after_setattr(&mut self, t: TaskId) {
        self.rt_mutex_setprio(t, None);
    }

    /// Ends `t`'s boost before a sched_setattr() to SCHED_DEADLINE
    /// (boosting within the deadline class is not modelled; no tracepoint).
    pub(crate) fn pi_unboost_for_setattr(&mut self, t: TaskId) {
        let normal = self.normal_rt(t);
        let pi = self.pi_mut(t);
        pi.boosted = false;
        pi.normal_rt = None;
        self.set_rt_prio(
            t,
            normal.map(|n| n.prio),
            normal.is_some_and(|n| n.rr),
            None,
        );
    }

    /// sched_setattr() to a fair or RT policy by a task that is boosted or
    /// whose waiters lend it a priority (__sched_setscheduler() with `pi`):
    /// its own policy changes, and it runs at the better of that and what
    /// its waiters lend, in one change of priority (no tracepoint: the
    /// call sets `p->prio` itself).
    pub(crate) fn sched_setattr_pi(
        &mut self,
        t: TaskId,
        policy: SchedPolicy,
        nice: Option<i8>,
        runtime_ns: Option<u64>,
        uclamp: (Option<u16>, Option<u16>),
    ) {
        let Some((umin, umax)) = self.uclamp_request(t, uclamp) else {
            return;
        };
        let rr = matches!(policy, SchedPolicy::Rr(_));
        let normal = policy.rt_priority().map(|p| NormalRt {
            prio: RT_PRIO_NONE - p,
            rr,
        });
        match normal {
            None => self.setparam_fair(t, policy, nice, runtime_ns),
            Some(_) => {
                let tk = &mut self.tasks[t as usize];
                tk.idle_policy = false;
                tk.batch_policy = false;
            }
        }
        // Stored as under a boost, so that rt_mutex_setprio() reads the new
        // policy as the task's own; it then settles whether it is boosted.
        let pi = self.pi_mut(t);
        pi.boosted = true;
        pi.normal_rt = normal;
        self.rt_mutex_setprio(t, None);
        // __setscheduler_uclamp() after `p->prio` is set: the default
        // minimum follows the class the task now runs in (rt_task()), lent
        // priority included.
        self.setscheduler_uclamp(t, umin, umax);
    }
}

impl Sim {
    /// The PI and futex invariants: owners and waiters agree with their
    /// tasks' state, wait lists are in key order, and each task's priority
    /// is the better of its own and its waiters'.
    pub(crate) fn check_pi(&self) -> Result<(), String> {
        for q in self.ipc.futex_lists() {
            let keys: Vec<i32> = q
                .iter()
                .map(|&w| futex_key(&self.tasks[w as usize]))
                .collect();
            if keys.windows(2).any(|k| k[1] < k[0]) {
                return Err(format!(
                    "futex waiters {q:?} out of priority order {keys:?}"
                ));
            }
        }
        let mutexes = self.ipc.pi_mutexes();
        for (m, owner, waiters) in &mutexes {
            let (m, owner) = (*m, *owner);
            if let Some(o) = owner {
                let pi = self.tasks[o as usize].pi.as_deref();
                if !pi.is_some_and(|p| p.owned.contains(&m)) {
                    return Err(format!("PI mutex {m}: owner {o} does not list it"));
                }
            }
            for (i, &w) in waiters.iter().enumerate() {
                let pi = self.tasks[w as usize].pi.as_deref();
                if pi.and_then(|p| p.blocked_on).map(|(b, _)| b) != Some(m) {
                    return Err(format!("PI mutex {m}: waiter {w} is not blocked on it"));
                }
                if self.tasks[w as usize].state != crate::task::TaskState::Blocked {
                    return Err(format!("PI mutex {m}: waiter {w} is not asleep"));
                }
                if i > 0
                    && key_less(
                        queued_key(&self.tasks, w),
                        queued_key(&self.tasks, waiters[i - 1]),
                    )
                {
                    return Err(format!("PI mutex {m}: waiters {waiters:?} out of order"));
                }
            }
        }
        for (t, tk) in self.tasks.iter().enumerate() {
            let Some(pi) = tk.pi.as_deref() else {
                continue;
            };
            let t = t as TaskId;
            for &m in &pi.owned {
                if !mutexes.iter().any(|(id, o, _)| *id == m && *o == Some(t)) {
                    return Err(format!("task {t} lists PI mutex {m} but does not own it"));
                }
            }
            if let Some(m) = pi.handed {
                if !pi.owned.contains(&m) {
                    return Err(format!(
                        "task {t} was handed PI mutex {m} but does not own it"
                    ));
                }
            }
            if tk.dl.is_some() {
                if pi.boosted {
                    return Err(format!("deadline task {t} is boosted"));
                }
                continue;
            }
            let normal = self.normal_rt(t).map(|n| n.prio);
            let want = effective_prio(normal, self.pi_donor_prio(t));
            if tk.rt.map(|r| r.prio) != want || pi.boosted != (want != normal) {
                return Err(format!(
                    "task {t}: RT priority {:?} (boosted {}), but its own is {normal:?} and its waiters lend {:?}",
                    tk.rt.map(|r| r.prio),
                    pi.boosted,
                    self.pi_donor_prio(t)
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "pi_tests.rs"]
mod tests;
