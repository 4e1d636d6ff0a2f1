//! The fair runqueue's timeline and task list, as intrusive structures whose
//! nodes are indexed by task id (the kernel keeps them inside the task as
//! `sched_entity.run_node` and `sched_entity.group_node`; here they sit in
//! compact arrays beside the tasks, which keeps the tree walks in cache).
//!
//! [`Timeline`] orders the queued entities by deadline, in the kernel's
//! wrap-safe order ([`deadline_order`]), equal deadlines in insertion order
//! (the rbtree puts a new entity after those with its key), and keeps, per
//! subtree, the smallest vruntime and the smallest and largest slice, so that
//! the earliest eligible deadline, the first entity and the slice bounds are
//! found in O(log n) (the kernel's augmented rbtree, `tasks_timeline` with
//! `min_vruntime_cb`). It is a treap: the shape comes from per-id priorities
//! drawn from a fixed hash, so it is deterministic and balanced in
//! expectation; the pick itself depends only on the keys.
//!
//! [`TaskList`] is `rq->cfs_tasks`: a doubly linked list in enqueue/pick
//! order that the load balancer walks from the tail, O(1) per operation.

/// No node.
pub const NIL: u32 = u32::MAX;

/// Timeline links and keys of one entity (`sched_entity.run_node` plus its
/// augmented fields). The keys are copied in at insertion; an entity's
/// deadline, vruntime and slice must not change while it is in the tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunNode {
    left: u32,
    right: u32,
    prio: u32,
    pub deadline: u64,
    /// Insertion number in its timeline: the tie-break of equal deadlines.
    seq: u64,
    pub vruntime: u64,
    pub slice: u64,
    /// Smallest vruntime in the subtree (wrapping order), `se->min_vruntime`.
    min_vruntime: u64,
    /// Smallest and largest slice in the subtree (`se->min_slice`, `max_slice`).
    min_slice: u64,
    max_slice: u64,
}

impl Default for RunNode {
    fn default() -> Self {
        RunNode {
            left: NIL,
            right: NIL,
            prio: 0,
            deadline: 0,
            seq: 0,
            vruntime: 0,
            slice: 0,
            min_vruntime: 0,
            min_slice: 0,
            max_slice: 0,
        }
    }
}

/// Where the nodes live: indexed by entity id.
pub trait RunNodes {
    fn run_node(&self, i: u32) -> &RunNode;
    fn run_node_mut(&mut self, i: u32) -> &mut RunNode;
}

impl RunNodes for [RunNode] {
    fn run_node(&self, i: u32) -> &RunNode {
        &self[i as usize]
    }
    fn run_node_mut(&mut self, i: u32) -> &mut RunNode {
        &mut self[i as usize]
    }
}

/// `a` before `b` in vruntime, wrapping (the kernel's vruntime_cmp()).
fn vruntime_lt(a: u64, b: u64) -> bool {
    (a.wrapping_sub(b) as i64) < 0
}

/// A fixed hash of the id (splitmix64's finaliser): the treap priority.
fn prio_of(id: u32) -> u32 {
    let mut z = u64::from(id).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) as u32
}

/// The entities of one runqueue ordered by (deadline, insertion).
#[derive(Clone, Debug)]
pub struct Timeline {
    root: u32,
    first: u32,
    len: u32,
    /// The next insertion's number.
    next_seq: u64,
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline {
            root: NIL,
            first: NIL,
            len: 0,
            next_seq: 0,
        }
    }
}

impl Timeline {
    pub fn len(&self) -> u32 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The entity with the earliest deadline (`__pick_first_entity()`), O(1).
    pub fn first(&self) -> Option<u32> {
        (self.first != NIL).then_some(self.first)
    }

    /// Smallest slice in the tree (`cfs_rq_min_slice()`'s tree part).
    pub fn min_slice<N: RunNodes + ?Sized>(&self, nodes: &N) -> Option<u64> {
        (self.root != NIL).then(|| nodes.run_node(self.root).min_slice)
    }

    /// Largest slice in the tree.
    pub fn max_slice<N: RunNodes + ?Sized>(&self, nodes: &N) -> Option<u64> {
        (self.root != NIL).then(|| nodes.run_node(self.root).max_slice)
    }

    /// Inserts entity `id` with its keys (mirrors __enqueue_entity()).
    pub fn insert<N: RunNodes + ?Sized>(
        &mut self,
        nodes: &mut N,
        id: u32,
        deadline: u64,
        vruntime: u64,
        slice: u64,
    ) {
        let prio = prio_of(id);
        let seq = self.next_seq;
        self.next_seq += 1;
        *nodes.run_node_mut(id) = RunNode {
            left: NIL,
            right: NIL,
            prio,
            deadline,
            seq,
            vruntime,
            slice,
            min_vruntime: vruntime,
            min_slice: slice,
            max_slice: slice,
        };
        let k = (deadline_order(deadline), seq);
        self.root = insert_at(nodes, self.root, id, k, prio);
        self.len += 1;
        if self.first == NIL || k < key(nodes, self.first) {
            self.first = id;
        }
    }

    /// Removes entity `id`, which must be in this tree (mirrors
    /// __dequeue_entity()).
    pub fn remove<N: RunNodes + ?Sized>(&mut self, nodes: &mut N, id: u32) {
        let k = key(nodes, id);
        self.root = remove_at(nodes, self.root, id, k);
        self.len -= 1;
        if self.first == id {
            self.first = leftmost(nodes, self.root);
        }
    }

    /// The earliest-deadline entity whose vruntime passes `eligible`, which
    /// must be monotone (true up to some vruntime, false after): the tree
    /// walk of pick_eevdf(), O(log n).
    pub fn pick_eligible<N: RunNodes + ?Sized>(
        &self,
        nodes: &N,
        eligible: impl Fn(u64) -> bool,
    ) -> Option<u32> {
        let mut n = self.root;
        while n != NIL {
            let node = nodes.run_node(n);
            if node.left != NIL && eligible(nodes.run_node(node.left).min_vruntime) {
                n = node.left;
            } else if eligible(node.vruntime) {
                return Some(n);
            } else {
                n = node.right;
            }
        }
        None
    }

    /// The entities in (deadline, insertion) order. Allocates; for the cold paths
    /// (checks, reports, HMP's per-tick scans).
    pub fn to_vec<N: RunNodes + ?Sized>(&self, nodes: &N) -> Vec<u32> {
        self.first_n(nodes, self.len as usize)
    }

    /// The first `limit` entities in (deadline, insertion) order: an in-order walk
    /// that stops early, O(depth + limit).
    pub fn first_n<N: RunNodes + ?Sized>(&self, nodes: &N, limit: usize) -> Vec<u32> {
        let mut out = Vec::with_capacity(limit.min(self.len as usize));
        let mut stack = Vec::new();
        let mut n = self.root;
        while out.len() < limit && (n != NIL || !stack.is_empty()) {
            while n != NIL {
                stack.push(n);
                n = nodes.run_node(n).left;
            }
            let top = stack.pop().expect("non-empty");
            out.push(top);
            n = nodes.run_node(top).right;
        }
        out
    }

    /// Visits the entities in order while checking the tree's order, heap
    /// property, augmented fields and length; for the checked mode (one
    /// pass, no allocation).
    pub fn walk_checked<N: RunNodes + ?Sized>(
        &self,
        nodes: &N,
        mut visit: impl FnMut(u32),
    ) -> Result<(), String> {
        let mut prev: Option<(u64, u64)> = None;
        let mut count = 0u32;
        let limits = (u32::MAX, self.len);
        check_subtree(nodes, self.root, limits, &mut prev, &mut count, &mut visit)?;
        if count != self.len {
            return Err(format!("timeline holds {count} nodes, len {}", self.len));
        }
        if leftmost(nodes, self.root) != self.first {
            return Err("timeline's cached first is not the leftmost".into());
        }
        Ok(())
    }
}

/// In-order check of one subtree (see [`Timeline::walk_checked`]); `limits`
/// are the parent's priority and the depth still allowed (a tree of `len`
/// nodes is at most `len` deep, so a cycle is caught).
fn check_subtree<N: RunNodes + ?Sized>(
    nodes: &N,
    n: u32,
    limits: (u32, u32),
    prev: &mut Option<(u64, u64)>,
    count: &mut u32,
    visit: &mut impl FnMut(u32),
) -> Result<(), String> {
    if n == NIL {
        return Ok(());
    }
    let (parent_prio, depth) = limits;
    if depth == 0 {
        return Err(format!("timeline deeper than its length at node {n}"));
    }
    let node = nodes.run_node(n);
    if node.prio > parent_prio {
        return Err(format!("timeline node {n}: heap order broken"));
    }
    let below = (node.prio, depth - 1);
    check_subtree(nodes, node.left, below, prev, count, visit)?;
    let k = key(nodes, n);
    if prev.is_some_and(|p| p >= k) {
        return Err(format!("timeline not sorted at node {n}"));
    }
    *prev = Some(k);
    *count += 1;
    if augment_of(nodes, n) != (node.min_vruntime, node.min_slice, node.max_slice) {
        return Err(format!("timeline node {n}: stale augmented fields"));
    }
    visit(n);
    check_subtree(nodes, node.right, below, prev, count, visit)
}

/// The order key: the deadline, then the insertion number.
fn key<N: RunNodes + ?Sized>(nodes: &N, i: u32) -> (u64, u64) {
    let n = nodes.run_node(i);
    (deadline_order(n.deadline), n.seq)
}

/// The position of a deadline in the timeline's order. The kernel orders by
/// the signed difference of two deadlines (entity_before()), so a deadline
/// that wrapped below zero (a task placed with lag on a runqueue whose
/// vruntime is still near zero) comes before the others, not after them.
/// That is the order of the deadlines read as signed numbers, which is the
/// unsigned order with the sign bit flipped; it holds while the queued
/// deadlines lie within 2^63 ns of zero, which simulated runs never leave.
pub fn deadline_order(deadline: u64) -> u64 {
    deadline ^ (1 << 63)
}

fn leftmost<N: RunNodes + ?Sized>(nodes: &N, mut n: u32) -> u32 {
    if n == NIL {
        return NIL;
    }
    while nodes.run_node(n).left != NIL {
        n = nodes.run_node(n).left;
    }
    n
}

/// `i`'s augmented fields as its own keys and its children's give them.
fn augment_of<N: RunNodes + ?Sized>(nodes: &N, i: u32) -> (u64, u64, u64) {
    let n = nodes.run_node(i);
    let (mut min_v, mut min_s, mut max_s) = (n.vruntime, n.slice, n.slice);
    for c in [n.left, n.right] {
        if c != NIL {
            let cn = nodes.run_node(c);
            if vruntime_lt(cn.min_vruntime, min_v) {
                min_v = cn.min_vruntime;
            }
            min_s = min_s.min(cn.min_slice);
            max_s = max_s.max(cn.max_slice);
        }
    }
    (min_v, min_s, max_s)
}

/// Recomputes `i`'s augmented fields from its children (the rbtree
/// augment callback).
fn update<N: RunNodes + ?Sized>(nodes: &mut N, i: u32) {
    let (min_v, min_s, max_s) = augment_of(nodes, i);
    let m = nodes.run_node_mut(i);
    m.min_vruntime = min_v;
    m.min_slice = min_s;
    m.max_slice = max_s;
}

/// Splits the subtree at `t` into keys below `k` and keys from `k` on.
fn split<N: RunNodes + ?Sized>(nodes: &mut N, t: u32, k: (u64, u64)) -> (u32, u32) {
    if t == NIL {
        return (NIL, NIL);
    }
    if key(nodes, t) < k {
        let (l, r) = split(nodes, nodes.run_node(t).right, k);
        nodes.run_node_mut(t).right = l;
        update(nodes, t);
        (t, r)
    } else {
        let (l, r) = split(nodes, nodes.run_node(t).left, k);
        nodes.run_node_mut(t).left = r;
        update(nodes, t);
        (l, t)
    }
}

/// Joins two subtrees whose keys are all in order (every key of `a` below
/// every key of `b`).
fn merge<N: RunNodes + ?Sized>(nodes: &mut N, a: u32, b: u32) -> u32 {
    if a == NIL {
        return b;
    }
    if b == NIL {
        return a;
    }
    if nodes.run_node(a).prio >= nodes.run_node(b).prio {
        let r = merge(nodes, nodes.run_node(a).right, b);
        nodes.run_node_mut(a).right = r;
        update(nodes, a);
        a
    } else {
        let l = merge(nodes, a, nodes.run_node(b).left);
        nodes.run_node_mut(b).left = l;
        update(nodes, b);
        b
    }
}

fn insert_at<N: RunNodes + ?Sized>(
    nodes: &mut N,
    t: u32,
    id: u32,
    k: (u64, u64),
    prio: u32,
) -> u32 {
    if t == NIL {
        return id;
    }
    if prio > nodes.run_node(t).prio {
        let (l, r) = split(nodes, t, k);
        let n = nodes.run_node_mut(id);
        n.left = l;
        n.right = r;
        update(nodes, id);
        return id;
    }
    if k < key(nodes, t) {
        let c = insert_at(nodes, nodes.run_node(t).left, id, k, prio);
        nodes.run_node_mut(t).left = c;
    } else {
        let c = insert_at(nodes, nodes.run_node(t).right, id, k, prio);
        nodes.run_node_mut(t).right = c;
    }
    update(nodes, t);
    t
}

fn remove_at<N: RunNodes + ?Sized>(nodes: &mut N, t: u32, id: u32, k: (u64, u64)) -> u32 {
    assert!(t != NIL, "timeline: entity {id} is not in the tree");
    if t == id {
        let (l, r) = (nodes.run_node(t).left, nodes.run_node(t).right);
        let m = merge(nodes, l, r);
        let d = nodes.run_node_mut(t);
        d.left = NIL;
        d.right = NIL;
        return m;
    }
    if k < key(nodes, t) {
        let c = remove_at(nodes, nodes.run_node(t).left, id, k);
        nodes.run_node_mut(t).left = c;
    } else {
        let c = remove_at(nodes, nodes.run_node(t).right, id, k);
        nodes.run_node_mut(t).right = c;
    }
    update(nodes, t);
    t
}

/// Links of one task in its runqueue's `cfs_tasks` list (`se.group_node`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListLink {
    prev: u32,
    next: u32,
}

impl Default for ListLink {
    fn default() -> Self {
        ListLink {
            prev: NIL,
            next: NIL,
        }
    }
}

/// Where the list links live: indexed by task id.
pub trait ListLinks {
    fn link(&self, i: u32) -> &ListLink;
    fn link_mut(&mut self, i: u32) -> &mut ListLink;
}

impl ListLinks for [ListLink] {
    fn link(&self, i: u32) -> &ListLink {
        &self[i as usize]
    }
    fn link_mut(&mut self, i: u32) -> &mut ListLink {
        &mut self[i as usize]
    }
}

/// `rq->cfs_tasks`: the runqueue's tasks, most recently enqueued or picked
/// at the head.
#[derive(Clone, Debug)]
pub struct TaskList {
    head: u32,
    tail: u32,
    len: u32,
}

impl Default for TaskList {
    fn default() -> Self {
        TaskList {
            head: NIL,
            tail: NIL,
            len: 0,
        }
    }
}

impl TaskList {
    pub fn len(&self) -> u32 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The least recently enqueued or picked task (`list_last_entry()`).
    pub fn tail(&self) -> Option<u32> {
        (self.tail != NIL).then_some(self.tail)
    }

    /// The task before `i` towards the head, walking from the tail
    /// (`list_for_each_entry_reverse()`).
    pub fn prev_of<L: ListLinks + ?Sized>(&self, links: &L, i: u32) -> Option<u32> {
        let p = links.link(i).prev;
        (p != NIL).then_some(p)
    }

    /// Adds `i` at the head (list_add()).
    pub fn push_head<L: ListLinks + ?Sized>(&mut self, links: &mut L, i: u32) {
        *links.link_mut(i) = ListLink {
            prev: NIL,
            next: self.head,
        };
        if self.head != NIL {
            links.link_mut(self.head).prev = i;
        } else {
            self.tail = i;
        }
        self.head = i;
        self.len += 1;
    }

    /// Unlinks `i`, which must be on this list (list_del_init()).
    pub fn remove<L: ListLinks + ?Sized>(&mut self, links: &mut L, i: u32) {
        let ListLink { prev, next } = *links.link(i);
        if prev != NIL {
            links.link_mut(prev).next = next;
        } else {
            debug_assert_eq!(self.head, i, "cfs_tasks: {i} is not on this list");
            self.head = next;
        }
        if next != NIL {
            links.link_mut(next).prev = prev;
        } else {
            debug_assert_eq!(self.tail, i, "cfs_tasks: {i} is not on this list");
            self.tail = prev;
        }
        *links.link_mut(i) = ListLink::default();
        self.len -= 1;
    }

    /// Moves `i` to the head (list_move()).
    pub fn move_to_head<L: ListLinks + ?Sized>(&mut self, links: &mut L, i: u32) {
        if self.head == i {
            return;
        }
        self.remove(links, i);
        self.push_head(links, i);
    }

    /// The tasks from the tail to the head. Allocates; for cold paths.
    pub fn from_tail<L: ListLinks + ?Sized>(&self, links: &L) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.len as usize);
        let mut n = self.tail;
        while n != NIL {
            out.push(n);
            n = links.link(n).prev;
        }
        out
    }

    /// Visits the tasks from the tail while checking that the links agree
    /// both ways and the length is right; for the checked mode (one pass, no
    /// allocation).
    pub fn walk_checked<L: ListLinks + ?Sized>(
        &self,
        links: &L,
        mut visit: impl FnMut(u32),
    ) -> Result<(), String> {
        let mut count = 0u32;
        let mut after = NIL;
        let mut n = self.tail;
        while n != NIL {
            if links.link(n).next != after {
                return Err(format!("cfs_tasks: {n}'s next link is wrong"));
            }
            count += 1;
            if count > self.len {
                return Err(format!("cfs_tasks longer than its length {}", self.len));
            }
            visit(n);
            after = n;
            n = links.link(n).prev;
        }
        if after != self.head || count != self.len {
            return Err(format!(
                "cfs_tasks: {count} tasks reached from the tail, len {}, head mismatch {}",
                self.len,
                after != self.head
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A plain model of the timeline: a vector of (deadline, id, vruntime,
    /// slice) in insertion order.
    #[derive(Default)]
    struct Model(Vec<(u64, u32, u64, u64)>);

    impl Model {
        /// In deadline order, deadlines compared as the kernel does (by their
        /// signed difference), equal deadlines in insertion order (a stable
        /// sort of the insertion-ordered vector).
        fn in_order(&self) -> Vec<(u64, u32, u64, u64)> {
            let mut v = self.0.clone();
            v.sort_by(|a, b| (a.0.wrapping_sub(b.0) as i64).cmp(&0));
            v
        }
        fn sorted(&self) -> Vec<u32> {
            self.in_order().into_iter().map(|e| e.1).collect()
        }
        fn pick(&self, limit: u64) -> Option<u32> {
            self.in_order()
                .into_iter()
                .find(|e| e.2 <= limit)
                .map(|e| e.1)
        }
    }

    proptest! {
        /// Any sequence of inserts and removes leaves the treap equal to a
        /// sorted vector: order, first, pick and slice bounds agree.
        #[test]
        fn timeline_matches_a_sorted_vector(
            // Deadlines around zero, some wrapped below it (u64::MAX - k).
            ops in proptest::collection::vec((0u32..48, (0u64..2000).prop_map(|d| d.wrapping_sub(1000)), 0u64..1000, 1u64..5, any::<bool>()), 1..200),
            limits in proptest::collection::vec(0u64..1000, 1..8),
        ) {
            let mut nodes = vec![RunNode::default(); 48];
            let mut tl = Timeline::default();
            let mut model = Model::default();
            for (id, d, v, s, ins) in ops {
                let present = model.0.iter().position(|e| e.1 == id);
                match (present, ins) {
                    (None, _) => {
                        tl.insert(nodes.as_mut_slice(), id, d, v, s);
                        model.0.push((d, id, v, s));
                    }
                    (Some(i), false) => {
                        tl.remove(nodes.as_mut_slice(), id);
                        model.0.remove(i);
                    }
                    (Some(_), true) => {}
                }
                prop_assert_eq!(tl.walk_checked(nodes.as_slice(), |_| ()), Ok(()));
                prop_assert_eq!(tl.to_vec(nodes.as_slice()), model.sorted());
                let sorted = model.sorted();
                let k = id as usize % 7;
                prop_assert_eq!(tl.first_n(nodes.as_slice(), k), &sorted[..k.min(sorted.len())]);
                prop_assert_eq!(tl.first(), model.sorted().first().copied());
                prop_assert_eq!(tl.len() as usize, model.0.len());
                prop_assert_eq!(tl.min_slice(nodes.as_slice()), model.0.iter().map(|e| e.3).min());
                prop_assert_eq!(tl.max_slice(nodes.as_slice()), model.0.iter().map(|e| e.3).max());
                for &lim in &limits {
                    prop_assert_eq!(tl.pick_eligible(nodes.as_slice(), |v| v <= lim), model.pick(lim));
                }
            }
        }

        /// The task list behaves as a deque with move-to-head.
        #[test]
        fn task_list_matches_a_vector(ops in proptest::collection::vec((0u32..16, 0u8..3), 1..200)) {
            let mut links = vec![ListLink::default(); 16];
            let mut l = TaskList::default();
            let mut model: Vec<u32> = Vec::new(); // head first
            for (id, op) in ops {
                let at = model.iter().position(|&x| x == id);
                match (at, op) {
                    (None, _) => {
                        l.push_head(links.as_mut_slice(), id);
                        model.insert(0, id);
                    }
                    (Some(i), 0) => {
                        l.remove(links.as_mut_slice(), id);
                        model.remove(i);
                    }
                    (Some(i), _) => {
                        l.move_to_head(links.as_mut_slice(), id);
                        model.remove(i);
                        model.insert(0, id);
                    }
                }
                prop_assert_eq!(l.walk_checked(links.as_slice(), |_| ()), Ok(()));
                let mut want = model.clone();
                want.reverse();
                prop_assert_eq!(l.from_tail(links.as_slice()), want);
                prop_assert_eq!(l.tail(), model.last().copied());
            }
        }
    }

    #[test]
    fn pick_uses_wrapping_vruntime_order() {
        // Vruntimes on both sides of the u64 wrap: the subtree minimum must
        // follow the kernel's signed-difference order.
        let mut nodes = vec![RunNode::default(); 3];
        let mut tl = Timeline::default();
        tl.insert(nodes.as_mut_slice(), 0, 10, u64::MAX - 5, 1);
        tl.insert(nodes.as_mut_slice(), 1, 20, 3, 1);
        tl.insert(nodes.as_mut_slice(), 2, 5, 100, 1);
        let limit = 0u64; // eligible: at or before 0, wrapping
        let got = tl.pick_eligible(nodes.as_slice(), |v| (v.wrapping_sub(limit) as i64) <= 0);
        assert_eq!(got, Some(0));
    }
}
