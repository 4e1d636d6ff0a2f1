//! Invariant checks, run after every event in checked mode.
//!
//! Every task is on exactly one runqueue, on exactly one wake list (woken,
//! its activation IPI in flight) or blocked; runqueue counts and
//! weights match their tasks; timelines are ordered by deadline with true
//! augmented fields and hold their entities' current keys; `cfs_tasks` lists
//! hold exactly the queued tasks, and so does HPERF_HMP's druntime index;
//! the current task of a CPU is running there; a task still holding wakes
//! of its futex wake (switched out among them) is not asleep, and the
//! wakees it holds are; only a task in a `Wall` activity has a RunWall end
//! time; RT tasks are in exactly one
//! priority list when queued or running, and the RT bookkeeping (counts,
//! bitmap, pushable lists, overload mask, cpupri) agrees with the lists.
//! After a run (the tests and
//! the fuzzers call it), [`Sim::check_time_conservation`]: CPU time is
//! conserved, and every idle nanosecond is in one idle state.

use crate::features::Feat;
use crate::sim::Sim;
use crate::task::TaskState;
use schedlab_topo::CpuId;
use schedlab_workload::Step;

impl Sim {
    /// Returns the first violated invariant.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.check_rt()?;
        self.check_dl()?;
        self.check_pi()?;
        let n = self.nr_cpus();
        let mut nr = vec![0u32; n];
        let mut weight = vec![0u64; n];
        let mut nr_idle = vec![0u32; n];
        // How many runqueues (as curr or queued) each task appears on.
        let mut seen = vec![0u32; self.tasks.len()];
        // Which CPU's timeline (queued, not running) and cfs_tasks list holds
        // each task.
        let mut in_tree = vec![None; self.tasks.len()];
        let mut in_list = vec![None; self.tasks.len()];
        // Which CPU's wake list holds each task.
        let mut in_wake_list = vec![None; self.tasks.len()];
        for rq in &self.rqs {
            let c = rq.cpu;
            if rq.ttwu_pending as usize != rq.wake_list.len() {
                return Err(format!(
                    "cpu {c}: ttwu_pending {} with {} tasks on its wake list",
                    rq.ttwu_pending,
                    rq.wake_list.len()
                ));
            }
            for &t in &rq.wake_list {
                match in_wake_list.get_mut(t as usize) {
                    Some(slot @ None) => *slot = Some(c),
                    _ => return Err(format!("cpu {c}: task {t} unknown or on wake lists twice")),
                }
            }
            let mut unknown = None;
            let mut mark = |t: u32, slot: &mut Vec<Option<u16>>, seen: &mut Vec<u32>| match (
                slot.get_mut(t as usize),
                seen.get_mut(t as usize),
            ) {
                (Some(s @ None), Some(n)) => {
                    *s = Some(c);
                    *n += 1;
                }
                _ => unknown = Some(t),
            };
            rq.cfs
                .timeline
                .walk_checked(self.run_nodes.as_slice(), |t| {
                    mark(t, &mut in_tree, &mut seen)
                })
                .map_err(|e| format!("cpu {c}: {e}"))?;
            if let Some(t) = rq.curr {
                match seen.get_mut(t as usize) {
                    Some(n) => *n += 1,
                    None => unknown = Some(t),
                }
            }
            rq.cfs_tasks
                .walk_checked(self.group_links.as_slice(), |t| {
                    match in_list.get_mut(t as usize) {
                        Some(slot @ None) => *slot = Some(c),
                        _ => unknown = Some(t),
                    }
                })
                .map_err(|e| format!("cpu {c}: {e}"))?;
            if let Some(t) = unknown {
                return Err(format!("cpu {c}: task {t} unknown or on a list twice"));
            }
        }
        let cfs_mode = self.cfs_mode();
        for t in &self.tasks {
            let cpu = t.cpu as usize;
            if cpu >= n {
                return Err(format!("task {} on cpu {} beyond the machine", t.id, cpu));
            }
            let rq = &self.rqs[cpu];
            let in_queue = in_tree[t.id as usize] == Some(t.cpu);
            if in_list[t.id as usize] != t.se.on_rq.then_some(t.cpu) {
                return Err(format!(
                    "task {} (on_rq {}) is on cfs_tasks of {:?}, expected cpu {cpu}",
                    t.id, t.se.on_rq, in_list[t.id as usize]
                ));
            }
            if in_queue {
                let n = &self.run_nodes[t.id as usize];
                if (n.deadline, n.vruntime, n.slice) != (t.se.deadline, t.se.vruntime, t.se.slice) {
                    return Err(format!(
                        "task {}: its timeline keys changed while it was queued",
                        t.id
                    ));
                }
            }
            // 3.10's CFS orders the timeline by vruntime: every queued fair
            // entity (curr too) has its deadline at its vruntime, and none
            // is delayed.
            let fair_entity = t.se.on_rq || rq.cfs.curr == Some(t.id);
            if cfs_mode && fair_entity && (t.se.deadline != t.se.vruntime || t.se.sched_delayed) {
                return Err(format!(
                    "task {} under CFS has deadline {} != vruntime {} or is delayed",
                    t.id, t.se.deadline, t.se.vruntime
                ));
            }
            let is_curr = rq.curr == Some(t.id);
            if in_wake_list[t.id as usize].is_some() && t.state != TaskState::Waking {
                return Err(format!("task {} on a wake list is not waking", t.id));
            }
            if t.is_rt() || t.is_dl() {
                // The RT and deadline classes' own queues are checked by
                // check_rt() and check_dl().
                if in_queue || t.se.on_rq {
                    return Err(format!("RT task {} on the fair runqueue", t.id));
                }
                if seen[t.id as usize] != u32::from(is_curr) {
                    return Err(format!("RT task {} is curr of another cpu", t.id));
                }
                if t.state == TaskState::Waking
                    && (is_curr || in_wake_list[t.id as usize] != Some(t.cpu))
                {
                    return Err(format!("waking task {} is not on its wake list", t.id));
                }
                continue;
            }
            match t.state {
                TaskState::Running => {
                    if !is_curr || rq.cfs.curr != Some(t.id) || in_queue || !t.se.on_rq {
                        return Err(format!("running task {} is not curr of cpu {cpu}", t.id));
                    }
                }
                TaskState::Runnable => {
                    if !in_queue || is_curr || !t.se.on_rq || t.se.sched_delayed {
                        return Err(format!("runnable task {} not queued on cpu {cpu}", t.id));
                    }
                }
                TaskState::Blocked => {
                    if is_curr || (t.se.on_rq && !(t.se.sched_delayed && in_queue)) {
                        return Err(format!("blocked task {} still on cpu {cpu}", t.id));
                    }
                }
                TaskState::Waking => {
                    if is_curr
                        || in_queue
                        || t.se.on_rq
                        || in_wake_list[t.id as usize] != Some(t.cpu)
                    {
                        return Err(format!(
                            "waking task {} is not only on the wake list of cpu {cpu}",
                            t.id
                        ));
                    }
                }
                TaskState::Dead => {
                    if is_curr || in_queue || t.se.on_rq {
                        return Err(format!("dead task {} still on cpu {cpu}", t.id));
                    }
                }
            }
            if t.se.on_rq {
                nr[cpu] += 1;
                nr_idle[cpu] += u32::from(t.idle_policy);
                weight[cpu] += t.se.weight;
                if !t.affinity.test(t.cpu) {
                    return Err(format!(
                        "task {} queued on cpu {cpu} outside its affinity",
                        t.id
                    ));
                }
            }
            // On its own runqueue at most once, and on no other.
            let here = u32::from(in_queue) + u32::from(is_curr);
            if seen[t.id as usize] != here || here > 1 {
                return Err(format!(
                    "task {} is on {} runqueues",
                    t.id, seen[t.id as usize]
                ));
            }
        }
        // HPERF_HMP's druntime index holds exactly the queued tasks, with the
        // druntime they have now, on the side of the CPU that queues them.
        let mut hperf: [std::collections::BTreeSet<(i64, u32)>; 2] = Default::default();
        if self.feat(crate::features::Feat::HMP_HPERF) {
            for t in &self.tasks {
                if in_tree[t.id as usize] == Some(t.cpu) {
                    let (side, key) = self.hperf_slot(t.cpu, t.id);
                    hperf[side].insert(key);
                }
            }
        }
        if hperf != self.hperf_queued {
            return Err("HPERF_HMP's druntime index differs from the queued tasks".to_string());
        }
        // The placement statistics' running sums equal a full recount.
        let sq = |v: &[u32]| v.iter().map(|&b| (b as u64) * (b as u64)).sum::<u64>();
        let busy_cpus = self.rqs.iter().filter(|r| r.curr.is_some()).count() as u64;
        let busy_clusters: u64 = self.busy_in_cluster.iter().map(|&b| b as u64).sum();
        let busy_llcs: u64 = self.busy_in_llc.iter().map(|&b| b as u64).sum();
        let p = &self.placement;
        if p.busy != busy_cpus || busy_clusters != busy_cpus || busy_llcs != busy_cpus {
            return Err(format!(
                "busy CPUs {busy_cpus}, placement sums {} / clusters {busy_clusters} / LLCs {busy_llcs}",
                p.busy
            ));
        }
        if p.cluster_sq != sq(&self.busy_in_cluster) || p.llc_sq != sq(&self.busy_in_llc) {
            return Err("placement sums of squares drifted from the busy counts".to_string());
        }
        let types = p.type_busy.len();
        let mut per_slot = vec![0u32; self.busy_in_cluster_type.len()];
        let mut per_type = vec![0u64; types];
        for (c, rq) in self.machine.cpus.iter().zip(&self.rqs) {
            if rq.curr.is_some() {
                per_slot[c.cluster as usize * types + c.core_type as usize] += 1;
                per_type[c.core_type as usize] += 1;
            }
        }
        let mut type_sq = vec![0u64; types];
        for (slot, &b) in per_slot.iter().enumerate() {
            type_sq[slot % types] += (b as u64) * (b as u64);
        }
        if per_slot != self.busy_in_cluster_type
            || per_type != p.type_busy
            || type_sq != p.type_cluster_sq
        {
            return Err("per-core-type placement sums drifted from a recount".to_string());
        }
        for (c, rq) in self.rqs.iter().enumerate() {
            if rq.cfs.nr_queued != nr[c] {
                return Err(format!(
                    "cpu {c}: nr_queued {} but {} tasks",
                    rq.cfs.nr_queued, nr[c]
                ));
            }
            if rq.cfs.load_weight != weight[c] {
                return Err(format!(
                    "cpu {c}: load weight {} but tasks sum {}",
                    rq.cfs.load_weight, weight[c]
                ));
            }
            if rq.cfs.nr_idle != nr_idle[c] {
                return Err(format!(
                    "cpu {c}: nr_idle {} but {} SCHED_IDLE tasks",
                    rq.cfs.nr_idle, nr_idle[c]
                ));
            }
            let class_currs = u32::from(rq.cfs.curr.is_some())
                + u32::from(rq.rt.curr.is_some())
                + u32::from(rq.dl.curr.is_some());
            if u32::from(rq.curr.is_some()) != class_currs {
                return Err(format!("cpu {c}: rq curr and its class's curr disagree"));
            }
            // The buddies are queued here and never delayed; only 3.10's
            // CFS has last and skip buddies.
            for (what, b) in [
                ("next", rq.cfs.next),
                ("last", rq.cfs.last),
                ("skip", rq.cfs.skip),
            ] {
                let Some(b) = b else { continue };
                let se = &self.tasks[b as usize].se;
                if !se.on_rq || se.sched_delayed || self.tasks[b as usize].cpu as usize != c {
                    return Err(format!(
                        "cpu {c}: {what} buddy {b} is not a runnable task here"
                    ));
                }
                if what != "next" && !self.cfs_mode() {
                    return Err(format!("cpu {c}: {what} buddy {b} under EEVDF"));
                }
            }
        }
        // Each task's count of owned mutexes (lock-holder preemptions) is true.
        let owned = self.ipc.owned_mutexes(self.tasks.len());
        for (t, task) in self.tasks.iter().enumerate() {
            if task.locks_held != owned[t] {
                return Err(format!(
                    "task {t}: locks_held {} but owns {} mutexes",
                    task.locks_held, owned[t]
                ));
            }
        }
        // Sleepers on byte queues: each queued task is asleep and queued once,
        // and a task asleep in a read or write of a channel, pipe or socket
        // is on that object's reader or writer queue (no lost wakeup can
        // strand it).
        let mut queued = vec![None; self.tasks.len()];
        for (obj, t, writer) in self.ipc.byte_queue_sleepers() {
            let Some(task) = self.tasks.get(t as usize) else {
                return Err(format!("object {obj}: unknown task {t} queued"));
            };
            if task.state != TaskState::Blocked {
                return Err(format!(
                    "object {obj}: task {t} queued while {:?}",
                    task.state
                ));
            }
            if queued[t as usize].replace((obj, writer)).is_some() {
                return Err(format!("task {t} queued on byte queues twice"));
            }
        }
        for (t, task) in self.tasks.iter().enumerate() {
            // (A timed sleep and a barrier wait have moved past their step:
            // no queue to check.)
            if task.kthread
                || task.state != TaskState::Blocked
                || task.sleep_timer_ns.is_some()
                || task.barrier_wait.is_some()
            {
                continue;
            }
            let step = self.step_at(task.template, task.pc);
            let want = match step {
                Some(Step::Recv { chan, .. }) => Some((*chan, false)),
                Some(s) => task.write_chan(s).map(|chan| (chan, true)),
                None => None,
            };
            if let Some((chan, writer)) = want.filter(|w| self.ipc.is_byte_queue(w.0)) {
                if queued[t] != Some((chan, writer)) {
                    return Err(format!(
                        "task {t} asleep in a {} of object {chan} but not on its queue",
                        if writer { "write" } else { "read" }
                    ));
                }
            }
        }
        // Wake queues (`Sim::wake_up_q()`): a waker switched out among its
        // wakes is runnable or running, and each wakee it still holds is
        // asleep and held once (taken off its futex, woken by no one else).
        let mut held = vec![false; self.tasks.len()];
        for (t, task) in self.tasks.iter().enumerate() {
            // A RunWall's end time lives only as long as its activity.
            if task.wall_until_ns.is_some() && task.activity != crate::task::Activity::Wall {
                return Err(format!(
                    "task {t}: a RunWall end with activity {:?}",
                    task.activity
                ));
            }
            if task.wake_q.is_empty() {
                continue;
            }
            if matches!(task.state, TaskState::Blocked | TaskState::Dead) {
                return Err(format!("task {t} holds wakes while {:?}", task.state));
            }
            for &w in &task.wake_q {
                match (held.get_mut(w as usize), self.tasks.get(w as usize)) {
                    (Some(h @ false), Some(wk)) if wk.state == TaskState::Blocked => *h = true,
                    _ => return Err(format!("task {t}: wakee {w} not asleep or held twice")),
                }
            }
        }
        // An idle CPU has stopped its tick (it is in the nohz idle mask) or
        // its governor keeps the tick running.
        // nr_busy_cpus counts the LLC's CPUs outside that mask (the kernel's
        // nohz accounting) or, with S2's NR_BUSY_ON_IDLE, those running a
        // task; an LLC's remembered idle core (S2) runs nothing.
        let on_idle = self.feat(Feat::NR_BUSY_ON_IDLE);
        let mut busy = vec![0u32; self.llc.len()];
        let mut in_mask = 0;
        for (c, rq) in self.rqs.iter().enumerate() {
            let stopped = self.nohz_idle.test(c as CpuId);
            in_mask += stopped as u32;
            if rq.curr.is_none() && !stopped && !rq.tick_running {
                return Err(format!(
                    "cpu {c}: idle, tick stopped, but not in the nohz idle mask"
                ));
            }
            if (on_idle && rq.curr.is_some()) || (!on_idle && !stopped) {
                busy[self.domains.cpus[c].llc_id as usize] += 1;
            }
        }
        if in_mask != self.nr_nohz_idle {
            return Err(format!(
                "nr_nohz_idle {} but {in_mask} CPUs in the nohz idle mask",
                self.nr_nohz_idle
            ));
        }
        for (l, s) in self.llc.iter().enumerate() {
            if s.nr_busy_cpus != busy[l] {
                return Err(format!(
                    "llc {l}: nr_busy_cpus {} but {} CPUs count as busy",
                    s.nr_busy_cpus, busy[l]
                ));
            }
            if let Some(core) = s.idle_core {
                if self.smt_masks[core as usize]
                    .iter()
                    .any(|x| self.rqs[x as usize].curr.is_some())
                {
                    return Err(format!("llc {l}: idle core of cpu {core} runs a task"));
                }
            }
        }
        // The stall count: workload threads blocked with no timer of their own.
        let mut parked = 0;
        for (t, task) in self.tasks.iter().enumerate() {
            if task.parked {
                if task.state != TaskState::Blocked || task.sleep_timer_ns.is_some() {
                    return Err(format!(
                        "task {t} counted as waiting for another thread while {:?}{}",
                        task.state,
                        if task.sleep_timer_ns.is_some() {
                            " with a sleep timer"
                        } else {
                            ""
                        }
                    ));
                }
                parked += 1;
            }
        }
        if parked != self.parked || self.parked > self.live {
            return Err(format!(
                "{} workload threads counted as waiting for another thread, {parked} are, {} live",
                self.parked, self.live
            ));
        }
        Ok(())
    }

    /// CPU time conservation: tasks never ran longer than their CPUs were busy.
    pub fn check_time_conservation(&self) -> Result<(), String> {
        let busy: u64 = self.rqs.iter().map(|r| r.busy_ns).sum();
        let ran: u64 = self.tasks.iter().map(|t| t.stats.cpu_time_ns).sum();
        if ran > busy {
            return Err(format!("tasks ran {ran} ns but CPUs were busy {busy} ns"));
        }
        for (c, r) in self.rqs.iter().enumerate() {
            if r.busy_ns + r.idle_ns != self.now {
                return Err(format!(
                    "cpu {c}: busy {} + idle {} ns != {} ns elapsed",
                    r.busy_ns, r.idle_ns, self.now
                ));
            }
        }
        // Every idle nanosecond is in exactly one idle state.
        let idle: u64 = self.rqs.iter().map(|r| r.idle_ns).sum();
        let in_states: u64 = self.counters.idle_state_ns.iter().sum();
        if in_states != idle {
            return Err(format!(
                "idle states hold {in_states} ns but CPUs were idle {idle} ns"
            ));
        }
        Ok(())
    }
}

impl Sim {
    /// The RT class's invariants: each RT task is in exactly one priority
    /// list (its CPU's, at its priority) when queued or running and in none
    /// otherwise; the running one is its CPU's RT curr; counts, the
    /// priority bitmap, the pushable lists (the queued RT tasks that do not
    /// run and may move, by priority), the overload mask and the cpupri
    /// levels agree with the lists.
    fn check_rt(&self) -> Result<(), String> {
        let mut in_list: Vec<Option<CpuId>> = vec![None; self.tasks.len()];
        let mut rto = schedlab_topo::CpuMask::default();
        for rq in &self.rqs {
            let c = rq.cpu;
            let rt = &rq.rt;
            let (mut nr, mut rr, mut active) = (0u32, 0u32, 0u128);
            for (prio, list) in rt.queues.iter().enumerate() {
                if !list.is_empty() {
                    active |= 1u128 << prio;
                }
                for &t in list {
                    let Some(task) = self.tasks.get(t as usize) else {
                        return Err(format!("cpu {c}: unknown RT task {t}"));
                    };
                    let Some(e) = task.rt else {
                        return Err(format!("cpu {c}: fair task {t} on the RT lists"));
                    };
                    if e.prio as usize != prio || !e.on_rq || task.cpu != c {
                        return Err(format!("cpu {c}: RT task {t} in the wrong list"));
                    }
                    if in_list[t as usize].replace(c).is_some() {
                        return Err(format!("RT task {t} listed twice"));
                    }
                    if !task.affinity.test(c) {
                        return Err(format!(
                            "RT task {t} queued on cpu {c} outside its affinity"
                        ));
                    }
                    nr += 1;
                    rr += u32::from(e.rr);
                }
            }
            if (nr, rr, active) != (rt.nr_running, rt.rr_nr_running, rt.active) {
                return Err(format!(
                    "cpu {c}: RT counts or bitmap disagree with the lists"
                ));
            }
            if rt.curr != rq.curr.filter(|&t| self.tasks[t as usize].is_rt()) {
                return Err(format!("cpu {c}: RT curr is not the running RT task"));
            }
            let mut pushable: Vec<_> = rt
                .queues
                .iter()
                .flatten()
                .copied()
                .filter(|&t| rq.curr != Some(t) && self.tasks[t as usize].affinity.weight() > 1)
                .collect();
            let mut have = rt.pushable.clone();
            pushable.sort_unstable();
            have.sort_unstable();
            if pushable != have {
                return Err(format!(
                    "cpu {c}: pushable RT tasks {have:?}, expected {pushable:?}"
                ));
            }
            let prios: Vec<u8> = rt
                .pushable
                .iter()
                .map(|&t| self.tasks[t as usize].rt.map_or(0, |e| e.prio))
                .collect();
            if prios.windows(2).any(|w| w[0] > w[1]) {
                return Err(format!("cpu {c}: pushable list out of priority order"));
            }
            if rt.overloaded() {
                rto.set(c);
            }
            // With deadline work the level is CPUPRI_HIGHER, unless an RT
            // enqueue overwrote it since (as the kernel's does).
            let level = crate::rt::cpupri_level(rt.highest_prio());
            let have = self.cpupri.level[c as usize] as usize;
            if (rq.dl.tree.is_empty() && have != level) || !self.cpupri.masks[have].test(c) {
                return Err(format!(
                    "cpu {c}: cpupri level is not its best RT priority's"
                ));
            }
        }
        if rto != self.cpupri.rto_mask {
            return Err("RT overload mask differs from the overloaded CPUs".to_string());
        }
        for t in &self.tasks {
            let listed = in_list[t.id as usize];
            let queued = t.rt.is_some_and(|e| e.on_rq);
            let ok = match t.state {
                TaskState::Running | TaskState::Runnable => {
                    !t.is_rt() || (queued && listed == Some(t.cpu))
                }
                _ => !queued && listed.is_none(),
            };
            if !ok {
                return Err(format!(
                    "RT task {} ({:?}) is not where its state says",
                    t.id, t.state
                ));
            }
            if t.state == TaskState::Runnable
                && t.is_rt()
                && self.rqs[t.cpu as usize].curr == Some(t.id)
            {
                return Err(format!("runnable RT task {} is running", t.id));
            }
            if t.state == TaskState::Running
                && t.is_rt()
                && self.rqs[t.cpu as usize].curr != Some(t.id)
            {
                return Err(format!(
                    "running RT task {} is not curr of cpu {}",
                    t.id, t.cpu
                ));
            }
        }
        Ok(())
    }

    /// The deadline class's invariants: each tree holds its CPU's queued
    /// deadline tasks that are not throttled, at their deadlines, and the
    /// fair server while it runs; counts, the running task, the pushable
    /// tasks, cpudl, the overload mask and the admitted bandwidth agree
    /// with them; a throttled queued task waits for its timer.
    fn check_dl(&self) -> Result<(), String> {
        let mut in_tree: Vec<Option<CpuId>> = vec![None; self.tasks.len()];
        let mut dlo = schedlab_topo::CpuMask::default();
        for rq in &self.rqs {
            let c = rq.cpu;
            let dl = &rq.dl;
            let mut nr = 0u32;
            let mut server = None;
            for (&key, &t) in &dl.tree {
                if t == crate::dl::SERVER {
                    server = Some(key);
                    continue;
                }
                let Some(task) = self.tasks.get(t as usize) else {
                    return Err(format!("cpu {c}: unknown deadline task {t}"));
                };
                let Some(e) = task.dl.as_ref() else {
                    return Err(format!(
                        "cpu {c}: task {t} in the deadline tree is not SCHED_DEADLINE"
                    ));
                };
                if e.key != Some(key)
                    || key.0 != e.deadline_ns
                    || !e.on_rq
                    || e.throttled
                    || task.cpu != c
                {
                    return Err(format!("cpu {c}: deadline task {t} misplaced in the tree"));
                }
                if in_tree[t as usize].replace(c).is_some() {
                    return Err(format!("deadline task {t} in two trees"));
                }
                nr += 1;
            }
            let fs = &rq.fair_server;
            if server != fs.key || fs.key.is_some() != fs.running {
                return Err(format!(
                    "cpu {c}: the fair server's place in the deadline tree"
                ));
            }
            if server.is_some_and(|k| k.0 != fs.deadline_ns) {
                return Err(format!(
                    "cpu {c}: the fair server's tree key is not its deadline"
                ));
            }
            if nr != dl.nr_running {
                return Err(format!(
                    "cpu {c}: dl nr_running {} but {nr} in the tree",
                    dl.nr_running
                ));
            }
            if dl.curr != rq.curr.filter(|&t| self.tasks[t as usize].is_dl()) {
                return Err(format!(
                    "cpu {c}: deadline curr is not the running deadline task"
                ));
            }
            let pushable: Vec<_> = dl
                .tree
                .iter()
                .filter(|&(_, &t)| {
                    t != crate::dl::SERVER
                        && rq.curr != Some(t)
                        && self.tasks[t as usize].affinity.weight() > 1
                })
                .map(|(&k, &t)| (k, t))
                .collect();
            let have: Vec<_> = dl.pushable.iter().map(|(&k, &t)| (k, t)).collect();
            if pushable != have {
                return Err(format!(
                    "cpu {c}: pushable deadline tasks {have:?}, expected {pushable:?}"
                ));
            }
            if !dl.pushable.is_empty() {
                dlo.set(c);
            }
            let earliest = dl.earliest().map(|(d, _)| d);
            if self.cpudl.dl[c as usize] != earliest
                || self.cpudl.free.test(c) != earliest.is_none()
                || earliest.is_some_and(|d| !self.cpudl.elements.contains(&(d, c)))
            {
                return Err(format!("cpu {c}: cpudl disagrees with the tree"));
            }
        }
        if self.cpudl.elements.len() != self.cpudl.dl.iter().flatten().count() {
            return Err("cpudl holds stale CPUs".to_string());
        }
        if dlo != self.dlo_mask {
            return Err("deadline overload mask differs from the overloaded CPUs".to_string());
        }
        let mut bw = self.rqs.len() as u64 * crate::dl::FAIR_SERVER_BW;
        for t in &self.tasks {
            if let Some(e) = t.dl_left.as_ref() {
                if t.dl_timers().inactive.expires_ns().is_none() {
                    return Err(format!(
                        "task {}: a left deadline entity with no timer",
                        t.id
                    ));
                }
                bw += e.dl_bw;
            }
            let Some(e) = t.dl.as_ref() else {
                continue;
            };
            let in_t = in_tree[t.id as usize];
            match t.state {
                TaskState::Dead => {
                    if t.dl_timers().inactive.expires_ns().is_some() {
                        bw += e.dl_bw;
                    }
                    continue;
                }
                TaskState::Running | TaskState::Runnable => {
                    if !e.on_rq {
                        return Err(format!("runnable deadline task {} is not queued", t.id));
                    }
                    if e.throttled == in_t.is_some() {
                        return Err(format!(
                            "deadline task {}: throttled {} but in the tree {}",
                            t.id,
                            e.throttled,
                            in_t.is_some()
                        ));
                    }
                    if e.throttled && t.dl_timers().replenish.expires_ns().is_none() {
                        return Err(format!("throttled deadline task {} has no timer", t.id));
                    }
                }
                _ => {
                    if e.on_rq || in_t.is_some() {
                        return Err(format!("blocked deadline task {} is queued", t.id));
                    }
                }
            }
            bw += e.dl_bw;
        }
        if bw != self.dl_total_bw {
            return Err(format!(
                "admitted deadline bandwidth {} but the entities hold {bw}",
                self.dl_total_bw
            ));
        }
        Ok(())
    }
}
