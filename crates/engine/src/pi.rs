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
//! A deadline waiter lends more than a priority (rt_mutex_setprio() with a
//! deadline `pi_task`): a fair or RT owner moves into the deadline class
//! and runs by the waiter's runtime, deadline and period (`pi_se`),
//! starting a period of them at each boost; a deadline owner takes them
//! only from a waiter of earlier deadline. A boosted entity is never
//! throttled: out of budget, it is replenished at once, its deadline
//! pushed back by a period. Every priority set in the deadline class
//! requeues the task, as the kernel's does, even when nothing changed.
//!
//! Not modelled: lock stealing by a better waiter arriving between an
//! unlock and the woken waiter's return (a FUTEX_LOCK_PI caller reaches
//! try_to_take_rt_mutex() and rt_mutex_steal()), deadlock
//! detection (a chain that loops stops where it started), the fair-class
//! `prio` a fair waiter lends a fair owner of lower nice priority, which
//! changes only the priority trace events print, and a sched_setattr()
//! by an owner with lending waiters into or out of SCHED_DEADLINE, or to
//! new deadline parameters, which makes two or three class changes here
//! (the end of its boost, the call, the boost again) where the kernel
//! makes one. (A task boosted into the class that takes a deadline policy
//! of its own makes one, as in the kernel.) A fair or RT owner's inherited
//! parameters are a copy, refreshed at each priority change, not a
//! pointer to the waiter's.

use crate::dl::{DlEnqueue, DlEntity, DlParams};
use crate::event::TaskId;
use crate::rt::{PrioChange, RT_PRIO_NONE};
use crate::sim::Sim;
use crate::task::{RtEntity, Task};
use crate::trace::PrioTo;
use schedlab_topo::CpuId;
use schedlab_workload::{Attrs, SchedPolicy};
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
    /// Boosted into the deadline class from RT: its SCHED_RR slice left
    /// (`p->rt.time_slice`, untouched meanwhile).
    pub rt_slice_ticks: Option<u32>,
    /// A fair or RT task's deadline budget and absolute deadline from its
    /// last boost into the deadline class (`p->dl.runtime`, `deadline`,
    /// which the kernel keeps in the task): a wakeup in the class later
    /// judges them by the CBS rule.
    pub dl_kept: Option<(i64, u64)>,
    /// The deadline task whose parameters it inherits: the entity its
    /// `pi_se` points at, its top waiter's own or, along a chain, the one
    /// that waiter inherits from. Kept until its priority is next set, which
    /// a hand-over does not do, nor a change of lender further down a chain
    /// that leaves the next owner's key as it was (the walk stops there), so
    /// a task may go on inheriting from a task that no longer lends to its
    /// own top waiter.
    pub lender: Option<TaskId>,
}

/// What rt_mutex_setprio() makes of a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PiTarget {
    /// Its own policy's class and priority (for a deadline task, its own
    /// parameters: `pi_se == &p->dl`).
    Own,
    /// An RT priority lent by a waiter, better than its own.
    Rt(u8),
    /// The deadline class with a deadline waiter's parameters.
    Dl(DlParams),
}

/// An rt_mutex waiter's sort key (`struct rt_waiter_node`): priority, then,
/// for deadline waiters, absolute deadline.
pub type WaiterKey = (i32, u64);

/// The key a task waits on a plain futex with: `min(normal_prio,
/// MAX_RT_PRIO)` (a boost does not count).
pub(crate) fn futex_key(tk: &Task) -> i32 {
    if tk.has_dl_policy() {
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
        !self.dl_policy(t) && self.normal_rt(t).is_none()
    }

    /// `t`'s policy, boost aside, is SCHED_DEADLINE (`dl_policy()`; a task
    /// boosted into the class is not).
    pub(crate) fn dl_policy(&self, t: TaskId) -> bool {
        self.tasks[t as usize].has_dl_policy()
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
    /// task_blocks_on_rt_mutex()): it queues by its key; if it is now the
    /// lock's first waiter, the owner's priority follows it, and so on
    /// along the chain of locks the owner itself waits for. `cpu` runs the
    /// call (the waiter's, or a requeueing broadcaster's).
    pub(crate) fn pi_block(&mut self, t: TaskId, m: u32, owner: TaskId, cpu: CpuId) {
        let key = waiter_key(&self.tasks[t as usize]);
        let Some((_, mut q)) = self.ipc.take_pi_waiters(m) else {
            return;
        };
        pi_enqueue(&self.tasks, &mut q, t, key);
        let top = q.front() == Some(&t);
        self.ipc.put_pi_waiters(m, q);
        self.pi_mut(t).blocked_on = Some((m, key));
        if owner != t && top {
            self.rt_mutex_setprio(owner, Some(cpu));
            self.pi_chain_walk(owner, m, t, cpu);
        }
    }

    /// Unlock of PI mutex `m` by its owner, running on `cpu`, with `next`
    /// the first waiter, taken off the queue by the caller, or `None`
    /// (wake_futex_pi() and mark_wakeup_next_waiter()): the lock passes to
    /// `next`, and the old owner's priority drops to what its other waiters
    /// lend. The new owner's priority is left as it is: it was the lock's
    /// best waiter, and try_to_take_rt_mutex() only notes the waiters
    /// behind it.
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
        let Some(w) = next else {
            // No waiter: the unlock stayed in user space.
            return;
        };
        self.pi_handed_to(w, m);
        if let Some(o) = owner {
            self.rt_mutex_setprio(o, Some(cpu));
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

    /// `t`'s top waiter: the best first waiter over the PI mutexes it owns
    /// (rt_mutex_get_top_task()), with its key; among equal keys the mutex
    /// taken first.
    fn pi_top_waiter(&self, t: TaskId) -> Option<(TaskId, WaiterKey)> {
        let pi = self.tasks[t as usize].pi.as_deref()?;
        let mut best: Option<(TaskId, WaiterKey)> = None;
        for &m in &pi.owned {
            let Some(&w) = self.ipc.pi_waiters(m).and_then(|q| q.front()) else {
                continue;
            };
            let k = queued_key(&self.tasks, w);
            if best.is_none_or(|(_, b)| key_less(k, b)) {
                best = Some((w, k));
            }
        }
        best
    }

    /// What `t`'s priority should be, from its own policy and its top
    /// waiter's (mirrors __rt_effective_prio() and rt_mutex_setprio()'s
    /// choice of `pi_se`).
    fn pi_target(&self, t: TaskId) -> (PiTarget, Option<TaskId>) {
        let tk = &self.tasks[t as usize];
        let own_dl = tk.has_dl_policy();
        let top = self.pi_top_waiter(t);
        match top {
            Some((w, (-1, _))) => {
                let Some(we) = self.tasks[w as usize].dl.as_deref() else {
                    return (PiTarget::Own, None);
                };
                let mine = tk.dl.as_deref().map(|e| e.deadline_ns);
                // A deadline owner inherits only from an earlier deadline
                // (dl_entity_preempt()).
                if own_dl && mine.is_some_and(|d| we.deadline_ns >= d) {
                    (PiTarget::Own, None)
                } else {
                    // `pi_se = pi_task->dl.pi_se`: the entity whose
                    // parameters pass along is the waiter's own, or the one
                    // it inherits from itself.
                    let source = if we.boosted() {
                        self.tasks[w as usize].pi.as_deref().and_then(|p| p.lender)
                    } else {
                        Some(w)
                    };
                    (PiTarget::Dl(we.pi_of()), source)
                }
            }
            Some((_, (p, _))) if !own_dl && (0..i32::from(RT_PRIO_NONE)).contains(&p) => {
                let normal = self.normal_rt(t).map(|n| n.prio);
                let target = match effective_prio(normal, Some(p as u8)) {
                    e if e == normal => PiTarget::Own,
                    Some(e) => PiTarget::Rt(e),
                    None => PiTarget::Own,
                };
                (target, None)
            }
            _ => (PiTarget::Own, None),
        }
    }

    /// Sets `t`'s priority from its own and its top waiter's (mirrors
    /// rt_mutex_adjust_prio() → rt_mutex_setprio()), on `cpu`, whose trace
    /// records sched_pi_setprio; with `cpu` `None`, as sched_setattr()
    /// sets `p->prio` itself (no tracepoint). An RT or fair priority that
    /// stays the same changes nothing; in the deadline class the change is
    /// always made, as the kernel's is: the task is requeued, and while it
    /// inherits, replenished by the inherited parameters.
    fn rt_mutex_setprio(&mut self, t: TaskId, cpu: Option<CpuId>) {
        let tk = &self.tasks[t as usize];
        if tk.state == crate::task::TaskState::Dead {
            return;
        }
        let (target, lender) = self.pi_target(t);
        if lender.is_some() || self.tasks[t as usize].pi.is_some() {
            self.pi_mut(t).lender = lender;
        }
        let tk = &self.tasks[t as usize];
        let normal = self.normal_rt(t);
        let in_dl = tk.dl.is_some();
        let boost = target != PiTarget::Own;
        // Changes in the deadline class are always made.
        let changed = match target {
            _ if tk.has_dl_policy() => {
                let pi_se = match target {
                    PiTarget::Dl(p) => Some(p),
                    _ => None,
                };
                self.pi_dl_change(t, pi_se, cpu);
                true
            }
            PiTarget::Dl(p) if in_dl => {
                self.pi_dl_change(t, Some(p), cpu);
                true
            }
            PiTarget::Dl(p) => {
                self.pi_enter_dl(t, p, normal, cpu);
                true
            }
            PiTarget::Rt(p) if in_dl => {
                self.pi_leave_dl(t, Some(p), true, normal, cpu);
                true
            }
            PiTarget::Own if in_dl => {
                self.pi_leave_dl(t, normal.map(|n| n.prio), false, normal, cpu);
                true
            }
            PiTarget::Rt(_) | PiTarget::Own => {
                let eff = match target {
                    PiTarget::Rt(p) => Some(p),
                    _ => normal.map(|n| n.prio),
                };
                if boost || self.tasks[t as usize].pi.is_some() {
                    let pi = self.pi_mut(t);
                    pi.boosted = boost;
                    pi.normal_rt = if boost { normal } else { None };
                }
                self.set_rt_prio(t, eff, normal.is_some_and(|n| n.rr), cpu)
            }
        };
        if changed && boost && cpu.is_some() {
            self.counters.pi_boosts += 1;
        }
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
            self.trace_pi_setprio(cpu, t, prio.map_or(PrioTo::Fair, PrioTo::Rt));
        }
        self.change_rt_state(t, new, PrioChange::Pi);
        true
    }

    /// `t`, in the deadline class, takes `pi_se` (`None`: its own
    /// parameters) in one change of the class's state: off its runqueue
    /// and back, replenished by the inherited parameters while it inherits
    /// (ENQUEUE_REPLENISH), else as after a change of attributes.
    fn pi_dl_change(&mut self, t: TaskId, pi_se: Option<DlParams>, trace_cpu: Option<CpuId>) {
        if let Some(cpu) = trace_cpu {
            self.trace_pi_setprio(cpu, t, PrioTo::Dl);
        }
        let change = self.dl_change_begin(t);
        if let Some(e) = self.tasks[t as usize].dl.as_deref_mut() {
            e.pi_se = pi_se;
        }
        let how = if pi_se.is_some() {
            DlEnqueue::Replenish
        } else {
            DlEnqueue::Restore
        };
        self.dl_change_end(t, change, how);
    }

    /// Fair or RT task `t` is boosted into the deadline class with a
    /// deadline waiter's parameters `p` (rt_mutex_setprio() with a deadline
    /// `pi_task`): it leaves its class (its fair load leaves the runqueue)
    /// and is queued by deadline with a replenished budget. Its RT state
    /// and the deadline and budget it had at its last boost are kept for
    /// later, as the kernel's task keeps `p->rt` and `p->dl`.
    fn pi_enter_dl(
        &mut self,
        t: TaskId,
        p: DlParams,
        normal: Option<NormalRt>,
        trace_cpu: Option<CpuId>,
    ) {
        if let Some(cpu) = trace_cpu {
            self.trace_pi_setprio(cpu, t, PrioTo::Dl);
        }
        let change = self.dl_change_begin(t);
        let rt = self.dl_enter_class(t);
        let pi = self.pi_mut(t);
        pi.boosted = true;
        pi.normal_rt = normal;
        pi.rt_slice_ticks = rt.map(|r| r.time_slice_ticks);
        let mut e = DlEntity {
            pi_se: Some(p),
            ..Default::default()
        };
        if let Some((runtime_ns, deadline_ns)) = pi.dl_kept {
            e.runtime_ns = runtime_ns;
            e.deadline_ns = deadline_ns;
        }
        self.tasks[t as usize].dl = Some(Box::new(e));
        self.dl_change_end(t, change, DlEnqueue::Replenish);
    }

    /// `t`, boosted into the deadline class, leaves it for RT priority
    /// `prio` (lent if `boosted`) or, with `prio` `None`, its fair policy
    /// (rt_mutex_setprio() when its top waiter is no longer a deadline
    /// task). Its deadline and budget are kept for a later boost.
    fn pi_leave_dl(
        &mut self,
        t: TaskId,
        prio: Option<u8>,
        boosted: bool,
        normal: Option<NormalRt>,
        trace_cpu: Option<CpuId>,
    ) {
        if let Some(cpu) = trace_cpu {
            self.trace_pi_setprio(cpu, t, prio.map_or(PrioTo::Fair, PrioTo::Rt));
        }
        let change = self.dl_change_begin(t);
        let cpu = self.tasks[t as usize].cpu;
        let e = self.tasks[t as usize]
            .dl
            .take()
            .expect("in the deadline class");
        let slice = self.rr_timeslice_ticks();
        let pi = self.pi_mut(t);
        pi.dl_kept = Some((e.runtime_ns, e.deadline_ns));
        pi.boosted = boosted;
        pi.normal_rt = if boosted { normal } else { None };
        let kept_slice = pi.rt_slice_ticks.take();
        match prio {
            Some(p) => {
                self.tasks[t as usize].rt = Some(RtEntity {
                    prio: p,
                    rr: normal.is_some_and(|n| n.rr),
                    time_slice_ticks: kept_slice.unwrap_or(slice),
                    on_rq: false,
                });
            }
            // switched_to_fair().
            None => self.attach_entity_load(cpu, t),
        }
        self.dl_change_end(t, change, DlEnqueue::Restore);
    }

    /// A boost that changed `task`, the owner of PI mutex `from`, passes on
    /// along the locks it waits for (mirrors rt_mutex_adjust_prio_chain()
    /// without deadlock detection): while `from`'s first waiter is also the
    /// task's top waiter and the task's key changed, the task is requeued
    /// on the lock it waits for, and if it is or was that lock's first
    /// waiter, the lock's owner takes its priority, and so on, for at most
    /// [`MAX_LOCK_DEPTH`] locks. `top_task` started it (a chain back to it
    /// stops), `cpu` runs it.
    pub(crate) fn pi_chain_walk(&mut self, task: TaskId, from: u32, top_task: TaskId, cpu: CpuId) {
        let (mut task, mut from) = (task, from);
        for _ in 0..MAX_LOCK_DEPTH {
            let lock_top = self.ipc.pi_waiters(from).and_then(|q| q.front().copied());
            if lock_top.is_none() || self.pi_top_waiter(task).map(|(w, _)| w) != lock_top {
                return;
            }
            let Some((m, queued)) = self.tasks[task as usize]
                .pi
                .as_deref()
                .and_then(|p| p.blocked_on)
            else {
                return;
            };
            let key = waiter_key(&self.tasks[task as usize]);
            if key == queued {
                return;
            }
            let Some((owner, mut q)) = self.ipc.take_pi_waiters(m) else {
                return;
            };
            if owner == Some(top_task) {
                self.ipc.put_pi_waiters(m, q);
                return;
            }
            let was_top = q.front() == Some(&task);
            q.retain(|&w| w != task);
            pi_enqueue(&self.tasks, &mut q, task, key);
            let is_top = q.front() == Some(&task);
            self.ipc.put_pi_waiters(m, q);
            if let Some(pi) = self.tasks[task as usize].pi.as_deref_mut() {
                pi.blocked_on = Some((m, key));
            }
            let Some(o) = owner else {
                return;
            };
            if !(is_top || was_top) {
                return;
            }
            self.rt_mutex_setprio(o, Some(cpu));
            (task, from) = (o, m);
        }
    }

    /// `t` owns PI mutexes whose first waiters include an RT or deadline
    /// task: they lend it a priority whenever its own is worse.
    pub(crate) fn pi_lent(&self, t: TaskId) -> bool {
        self.pi_top_waiter(t)
            .is_some_and(|(_, k)| k.0 < i32::from(RT_PRIO_NONE))
    }

    /// After a sched_setattr() that moved `t` into or out of the deadline
    /// class, its priority follows what its waiters lend (no tracepoint).
    pub(crate) fn pi_setprio_after_setattr(&mut self, t: TaskId) {
        self.rt_mutex_setprio(t, None);
    }

    /// `t`, boosted into the deadline class, took a deadline policy of its
    /// own: its priority is its own now, whatever it still inherits.
    pub(crate) fn pi_own_dl_policy(&mut self, t: TaskId) {
        let pi = self.pi_mut(t);
        pi.boosted = false;
        pi.normal_rt = None;
        pi.rt_slice_ticks = None;
    }

    /// Ends the RT boost of `t` before a sched_setattr() to SCHED_DEADLINE
    /// (no tracepoint); the priority its waiters lend is set again after
    /// the call.
    pub(crate) fn pi_unboost_for_setattr(&mut self, t: TaskId) {
        let normal = self.normal_rt(t);
        let pi = self.pi_mut(t);
        pi.boosted = false;
        pi.normal_rt = None;
        if self.tasks[t as usize].dl.is_some() {
            self.pi_leave_dl(t, normal.map(|n| n.prio), false, normal, None);
            return;
        }
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
    pub(crate) fn sched_setattr_pi(&mut self, t: TaskId, a: &Attrs) {
        let (policy, nice, runtime_ns, uclamp) = a.parts();
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
            // A task that inherits deadline parameters does so from a
            // deadline task, asleep on a PI mutex, whose own they are (the
            // kernel's `pi_se` points at a blocked task's entity).
            let inherits = tk.dl.as_deref().and_then(|e| e.pi_se);
            if let Some(p) = inherits {
                let lender_ok = pi.lender.is_some_and(|w| {
                    let wt = &self.tasks[w as usize];
                    let asleep_on_pi = wt.pi.as_deref().is_some_and(|x| x.blocked_on.is_some());
                    let own = wt
                        .dl
                        .as_deref()
                        .filter(|e| e.own_policy())
                        .map(DlEntity::own_params);
                    asleep_on_pi && own == Some(p)
                });
                if !lender_ok {
                    return Err(format!(
                        "task {t} inherits {p:?} from {:?}, not a deadline task asleep on a PI mutex with those parameters",
                        pi.lender
                    ));
                }
            }
            if self.dl_policy(t) {
                // Its priority is its own.
                if pi.boosted {
                    return Err(format!("deadline task {t} is boosted"));
                }
                continue;
            }
            if tk.dl.is_some() {
                // Boosted into the deadline class (checked above).
                if !pi.boosted || tk.rt.is_some() || inherits.is_none() {
                    return Err(format!(
                        "task {t} in the deadline class: boosted {}, RT {:?}, inheriting {inherits:?}",
                        pi.boosted, tk.rt
                    ));
                }
                continue;
            }
            let normal = self.normal_rt(t).map(|n| n.prio);
            let (target, _) = self.pi_target(t);
            let rt = tk.rt.map(|r| r.prio);
            let ok = match target {
                PiTarget::Own => !pi.boosted && rt == normal,
                PiTarget::Rt(p) => pi.boosted && rt == Some(p),
                PiTarget::Dl(_) => false,
            };
            if !ok {
                return Err(format!(
                    "task {t}: RT priority {rt:?} (boosted {}), but its own is {normal:?} and its waiters lend {target:?}",
                    pi.boosted
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "pi_tests.rs"]
mod tests;
