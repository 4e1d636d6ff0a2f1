//! Program interpretation: what a running thread does next.
//!
//! This is the "user space" of the simulation. It walks a task's steps,
//! starts timed activities (compute, memory), and implements the
//! synchronisation objects (barriers) on top of the core's block and wakeup
//! primitives. It never makes scheduling decisions.

use crate::event::{EventKind, TaskId};
use crate::sim::Sim;
use crate::task::Activity;
use schedlab_workload::Step;

/// A program that runs this many instantaneous steps without a timed one is
/// treated as broken and exits (guards against `Loop` misuse).
const MAX_INSTANT_STEPS: u32 = 1_000_000;

impl Sim {
    /// Runs the task's program from its program counter until a step takes
    /// time or the task blocks. The task must be running.
    pub(crate) fn advance(&mut self, t: TaskId) {
        if self.tasks[t as usize].kthread {
            self.advance_kthread(t);
            return;
        }
        let tpl = self.tasks[t as usize].template as usize;
        for _ in 0..MAX_INSTANT_STEPS {
            let pc = self.tasks[t as usize].pc as usize;
            let Some(step) = self.spec.templates[tpl].steps.get(pc).cloned() else {
                self.exit_task(t);
                return;
            };
            self.tasks[t as usize].pc += 1;
            match step {
                Step::Compute { work_ns } => {
                    self.start_activity(t, Activity::Compute, work_ns as f64);
                    return;
                }
                Step::Memory { bytes } => {
                    self.start_activity(t, Activity::Memory, bytes as f64);
                    return;
                }
                Step::Sleep { ns } => {
                    self.tasks[t as usize].activity = Activity::Idle;
                    self.block_current(t, false);
                    // Blocking bumped the generation: the timer carries the new one.
                    let gen = self.tasks[t as usize].gen;
                    self.q
                        .push(self.now + ns, EventKind::Timer { task: t, gen });
                    return;
                }
                Step::Barrier { id, spin_ns } => {
                    if !self.barrier_arrive(t, id, spin_ns) {
                        return;
                    }
                }
                Step::Spawn { template } => {
                    // clone() costs the parent time before the child exists.
                    let cost_ns = self.fork_jitter_ns();
                    self.tasks[t as usize].pending_spawn = Some(template);
                    self.start_activity(t, Activity::Compute, cost_ns as f64);
                    return;
                }
                Step::Mark { tag } => self.marks.push((t, tag, self.now)),
                Step::Loop { start, count, slot } => {
                    let s = (slot as usize).min(3);
                    let tk = &mut self.tasks[t as usize];
                    tk.loop_counts[s] += 1;
                    if tk.loop_counts[s] < count {
                        tk.pc = start;
                    } else {
                        tk.loop_counts[s] = 0;
                    }
                }
                Step::Exit => {
                    self.exit_task(t);
                    return;
                }
            }
        }
        self.exit_task(t);
    }

    fn exit_task(&mut self, t: TaskId) {
        self.tasks[t as usize].activity = Activity::Idle;
        self.block_current(t, true);
    }

    fn start_activity(&mut self, t: TaskId, a: Activity, amount: f64) {
        let tk = &mut self.tasks[t as usize];
        tk.activity = a;
        tk.remaining = amount;
        tk.settled_ns = self.now;
        self.begin_activity(t);
    }

    /// A per-CPU system kthread: one compute burst per wakeup, then sleep.
    fn advance_kthread(&mut self, t: TaskId) {
        let tk = &mut self.tasks[t as usize];
        if tk.pc == 0 && tk.remaining > 0.0 {
            tk.pc = 1;
            let r = tk.remaining;
            self.start_activity(t, Activity::Compute, r);
        } else {
            tk.pc = 0;
            tk.remaining = 0.0;
            tk.activity = Activity::Idle;
            self.block_current(t, false);
        }
    }

    /// The running task's timed step finished.
    pub(crate) fn step_done(&mut self, t: TaskId) {
        self.stop_running(t);
        let tk = &mut self.tasks[t as usize];
        tk.remaining = 0.0;
        tk.activity = Activity::Idle;
        if let Some(tpl) = tk.pending_spawn.take() {
            let cpu = tk.cpu;
            self.spawn(tpl, Some(t), cpu);
            // The child may have preempted us on this CPU; then we continue later.
            if self.rqs[cpu as usize].curr != Some(t) {
                return;
            }
        }
        self.advance(t);
    }

    /// Arrives at a barrier. Returns true when the task goes on at once (it
    /// was the last to arrive), false when it spins or blocks.
    fn barrier_arrive(&mut self, t: TaskId, id: u32, spin_ns: u64) -> bool {
        let id = id as usize;
        if id >= self.barriers.len() {
            return true;
        }
        let b = &mut self.barriers[id];
        b.arrived += 1;
        if b.arrived >= b.parties {
            b.arrived = 0;
            b.gen = b.gen.wrapping_add(1);
            let sleepers = std::mem::take(&mut b.sleepers);
            let spinners = std::mem::take(&mut b.spinners);
            let waker_cpu = self.tasks[t as usize].cpu;
            self.counters.barrier_releases += 1;
            for s in spinners {
                self.release_spinner(s, waker_cpu);
            }
            for s in sleepers {
                self.tasks[s as usize].barrier_wait = None;
                self.try_to_wake_up(s, waker_cpu, Some(t), 0);
            }
            return true;
        }
        let gen = b.gen;
        let tk = &mut self.tasks[t as usize];
        tk.barrier_wait = Some((id as u32, gen));
        if spin_ns > 0 {
            self.barriers[id].spinners.push(t);
            let tk = &mut self.tasks[t as usize];
            tk.activity = Activity::Spin;
            tk.spin_until_ns = self.now + spin_ns;
            tk.settled_ns = self.now;
            self.arm(t);
        } else {
            self.barriers[id].sleepers.push(t);
            self.tasks[t as usize].activity = Activity::Idle;
            self.block_current(t, false);
        }
        false
    }

    /// A spinning waiter sees the release after the cache line reaches it.
    fn release_spinner(&mut self, s: TaskId, waker_cpu: schedlab_topo::CpuId) {
        let tk = &mut self.tasks[s as usize];
        tk.barrier_wait = None;
        let running = self.rqs[tk.cpu as usize].curr == Some(s);
        let lat = self.machine.c2c_ns(waker_cpu, tk.cpu) as f64;
        if running {
            self.settle(s);
            let tk = &mut self.tasks[s as usize];
            tk.activity = Activity::Compute;
            tk.remaining = lat.max(1.0);
            self.begin_activity(s);
        } else {
            // Preempted while spinning: it goes on when it next runs.
            let tk = &mut self.tasks[s as usize];
            tk.activity = Activity::Compute;
            tk.remaining = lat.max(1.0);
        }
    }

    /// A spinning waiter gives up and sleeps on the barrier (futex wait).
    pub(crate) fn spin_end(&mut self, t: TaskId) {
        let Some((id, gen)) = self.tasks[t as usize].barrier_wait else {
            return;
        };
        let b = &mut self.barriers[id as usize];
        if b.gen != gen {
            return;
        }
        if let Some(i) = b.spinners.iter().position(|&x| x == t) {
            b.spinners.remove(i);
        }
        b.sleepers.push(t);
        self.counters.spin_timeouts += 1;
        self.tasks[t as usize].activity = Activity::Idle;
        self.block_current(t, false);
    }
}
