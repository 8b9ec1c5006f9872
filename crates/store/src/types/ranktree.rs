//! An order-statistic tree: the ordered index behind large sorted sets.
//!
//! A treap (a binary search tree whose nodes also carry a random priority
//! and are heap-ordered by it) keyed by `(score, member)`, every node
//! holding the size of its subtree. The random priorities keep the expected
//! depth at O(log n) whatever the insertion order; the subtree sizes turn
//! "how many elements come before this one" (ZRANK, ZCOUNT, the start of a
//! ZRANGE by score or by lex) and "the k-th element" (ZRANGE by index) into
//! one root-to-leaf walk, O(log n). A range of m elements is then an
//! in-order walk, O(log n + m).
//!
//! Nodes live in one vector and link by 32-bit indices rather than boxes:
//! a node costs its fields and no allocator header, and freed nodes are
//! reused through a free list. Trade-off against Redis's skiplist with
//! spans: same complexities, but a treap needs no per-node array of level
//! pointers (a skiplist averages 1.33 levels of two words each) and its
//! insert/remove are split/merge, which keep the size counts right without
//! the span bookkeeping.

use std::cmp::Ordering;

use super::InlineBytes;
use crate::size_class::allocated;

const NIL: u32 = u32::MAX;

#[derive(Debug, Clone)]
struct Node {
    member: InlineBytes,
    score: f64,
    left: u32,
    right: u32,
    size: u32,
    priority: u32,
}

/// Elements ordered by `(score, member)`, with rank queries.
#[derive(Debug, Clone)]
pub struct RankTree {
    nodes: Vec<Node>,
    free: Vec<u32>,
    root: u32,
    member_bytes: usize,
    /// State of the xorshift generator drawing node priorities, seeded at
    /// random per tree: a client that knew the priority sequence could pick
    /// scores in priority order and degrade the tree to a list.
    seed: u32,
}

impl Default for RankTree {
    fn default() -> Self {
        RankTree {
            nodes: Vec::new(),
            free: Vec::new(),
            root: NIL,
            member_bytes: 0,
            // Never 0, which xorshift would keep at 0.
            seed: rand::random::<u32>() | 1,
        }
    }
}

/// Redis's order of sorted-set elements: by score, then by member bytes.
/// Scores compare as numbers, so -0 and 0 are equal and their members sort
/// by bytes, as in Redis (a sorted set never holds NaN).
pub fn compare(a: (f64, &[u8]), b: (f64, &[u8])) -> Ordering {
    a.0.partial_cmp(&b.0)
        .unwrap_or(Ordering::Equal)
        .then_with(|| a.1.cmp(b.1))
}

impl RankTree {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.size(self.root)
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.root == NIL
    }

    /// Heap bytes owned: the node vector, the free list and the members.
    pub fn heap_bytes(&self) -> usize {
        allocated(self.nodes.capacity() * std::mem::size_of::<Node>())
            + allocated(self.free.capacity() * std::mem::size_of::<u32>())
            + self.member_bytes
    }

    fn size(&self, t: u32) -> usize {
        if t == NIL {
            0
        } else {
            self.nodes[t as usize].size as usize
        }
    }

    fn update(&mut self, t: u32) {
        let n = &self.nodes[t as usize];
        let size = 1 + self.size(n.left) + self.size(n.right);
        self.nodes[t as usize].size = size as u32;
    }

    /// Splits subtree `t` into the elements for which `before` holds (a
    /// prefix of the order) and the rest.
    fn split(&mut self, t: u32, before: &impl Fn(f64, &[u8]) -> bool) -> (u32, u32) {
        if t == NIL {
            return (NIL, NIL);
        }
        let n = &self.nodes[t as usize];
        let (left, right) = (n.left, n.right);
        if before(n.score, &n.member) {
            let (a, b) = self.split(right, before);
            self.nodes[t as usize].right = a;
            self.update(t);
            (t, b)
        } else {
            let (a, b) = self.split(left, before);
            self.nodes[t as usize].left = b;
            self.update(t);
            (a, t)
        }
    }

    /// Joins two subtrees, every element of `a` ordered before `b`'s.
    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if self.nodes[a as usize].priority > self.nodes[b as usize].priority {
            let right = self.merge(self.nodes[a as usize].right, b);
            self.nodes[a as usize].right = right;
            self.update(a);
            a
        } else {
            let left = self.merge(a, self.nodes[b as usize].left);
            self.nodes[b as usize].left = left;
            self.update(b);
            b
        }
    }

    /// Adds an element; the caller guarantees `member` is not present.
    /// The new node goes down the search path only as far as its priority
    /// lets it, and only the subtree it takes the place of is split: a
    /// split and merges of the whole tree cost four root-to-leaf walks
    /// (ZADD of 100,000 members spent 45% of its time in them).
    pub fn insert(&mut self, member: InlineBytes, score: f64) {
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 17;
        self.seed ^= self.seed << 5;
        self.member_bytes += member.heap_bytes();
        let node = Node {
            member: InlineBytes::default(),
            score,
            left: NIL,
            right: NIL,
            size: 1,
            priority: self.seed,
        };
        let t = match self.free.pop() {
            Some(t) => {
                self.nodes[t as usize] = node;
                t
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        };
        self.root = self.insert_into(self.root, t, (score, &member));
        self.nodes[t as usize].member = member;
    }

    /// Puts node `t`, the element `key`, into subtree `root`; returns the
    /// subtree's new root.
    fn insert_into(&mut self, root: u32, t: u32, key: (f64, &[u8])) -> u32 {
        if root == NIL {
            return t;
        }
        let n = &self.nodes[root as usize];
        if self.nodes[t as usize].priority > n.priority {
            let (left, right) = self.split(root, &|s, m| compare((s, m), key).is_lt());
            let node = &mut self.nodes[t as usize];
            (node.left, node.right) = (left, right);
            self.update(t);
            return t;
        }
        let goes_left = compare(key, (n.score, &n.member)).is_lt();
        let (left, right) = (n.left, n.right);
        self.nodes[root as usize].size += 1;
        if goes_left {
            let left = self.insert_into(left, t, key);
            self.nodes[root as usize].left = left;
        } else {
            let right = self.insert_into(right, t, key);
            self.nodes[root as usize].right = right;
        }
        root
    }

    /// Removes the element `(score, member)`; true if it was there. Its
    /// node is found on the search path and replaced by the merge of its
    /// two subtrees.
    pub fn remove(&mut self, member: &[u8], score: f64) -> bool {
        let (root, found) = self.remove_from(self.root, (score, member));
        self.root = root;
        let Some(found) = found else {
            return false;
        };
        let node = &mut self.nodes[found as usize];
        self.member_bytes -= node.member.heap_bytes();
        node.member = InlineBytes::default();
        if self.root == NIL {
            // Nothing left: drop the vector rather than keep a free list.
            self.nodes = Vec::new();
            self.free = Vec::new();
        } else {
            self.free.push(found);
        }
        true
    }

    /// Takes the element `key` out of subtree `root`; returns the
    /// subtree's new root and the node taken, if the element was there.
    fn remove_from(&mut self, root: u32, key: (f64, &[u8])) -> (u32, Option<u32>) {
        if root == NIL {
            return (NIL, None);
        }
        let n = &self.nodes[root as usize];
        let (left, right) = (n.left, n.right);
        let goes_left = match compare(key, (n.score, &n.member)) {
            Ordering::Equal => return (self.merge(left, right), Some(root)),
            order => order.is_lt(),
        };
        let (child, found) = self.remove_from(if goes_left { left } else { right }, key);
        let node = &mut self.nodes[root as usize];
        match goes_left {
            true => node.left = child,
            false => node.right = child,
        }
        node.size -= u32::from(found.is_some());
        (root, found)
    }

    /// Number of elements for which `before` holds, a prefix of the order
    /// (e.g. "score < 5"): the rank of the first element past it.
    pub fn count_before(&self, before: impl Fn(f64, &[u8]) -> bool) -> usize {
        let (mut t, mut count) = (self.root, 0);
        while t != NIL {
            let n = &self.nodes[t as usize];
            if before(n.score, &n.member) {
                count += self.size(n.left) + 1;
                t = n.right;
            } else {
                t = n.left;
            }
        }
        count
    }

    /// The elements from rank `start` on, in order.
    pub fn iter_from(&self, mut start: usize) -> Iter<'_> {
        let mut stack = Vec::new();
        let mut t = self.root;
        while t != NIL {
            let n = &self.nodes[t as usize];
            let left = self.size(n.left);
            if start < left {
                stack.push(t);
                t = n.left;
            } else if start == left {
                stack.push(t);
                break;
            } else {
                start -= left + 1;
                t = n.right;
            }
        }
        Iter { tree: self, stack }
    }
}

/// In-order iterator over a [`RankTree`]: the stack holds the next node and
/// the ancestors still to visit.
pub struct Iter<'a> {
    tree: &'a RankTree,
    stack: Vec<u32>,
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a [u8], f64);

    fn next(&mut self) -> Option<Self::Item> {
        let t = self.stack.pop()?;
        let n = &self.tree.nodes[t as usize];
        let mut child = n.right;
        while child != NIL {
            self.stack.push(child);
            child = self.tree.nodes[child as usize].left;
        }
        Some((&n.member, n.score))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ascending inserts (the usual order of timestamps as scores) keep
    /// the tree balanced: the split/merge recursion stays shallow, and
    /// ranks and ranges are right.
    #[test]
    fn ascending_inserts_stay_shallow() {
        let mut tree = RankTree::default();
        let n = 200_000;
        for i in 0..n {
            tree.insert(format!("m{i}").into_bytes().into(), f64::from(i));
        }
        fn depth(tree: &RankTree, t: u32) -> usize {
            if t == NIL {
                return 0;
            }
            let n = &tree.nodes[t as usize];
            1 + depth(tree, n.left).max(depth(tree, n.right))
        }
        assert!(
            depth(&tree, tree.root) < 100,
            "depth {}",
            depth(&tree, tree.root)
        );
        assert_eq!(tree.len(), n as usize);
        assert_eq!(tree.count_before(|s, _| s < 1234.0), 1234);
        let (member, score) = tree.iter_from(150_000).next().expect("in range");
        assert_eq!((member, score), (&b"m150000"[..], 150_000.0));
        assert!(tree.remove(b"m7", 7.0));
        assert!(!tree.remove(b"m7", 7.0));
        assert_eq!(tree.count_before(|s, _| s < 10.0), 9);
    }

    /// Checks every node: its size, the search order and the heap order of
    /// priorities. Returns the subtree's size.
    fn check(
        tree: &RankTree,
        t: u32,
        low: Option<(f64, &[u8])>,
        high: Option<(f64, &[u8])>,
    ) -> usize {
        if t == NIL {
            return 0;
        }
        let n = &tree.nodes[t as usize];
        let key = (n.score, &n.member[..]);
        assert!(
            low.is_none_or(|low| compare(low, key).is_lt()),
            "search order"
        );
        assert!(
            high.is_none_or(|high| compare(key, high).is_lt()),
            "search order"
        );
        for child in [n.left, n.right].into_iter().filter(|&c| c != NIL) {
            assert!(
                tree.nodes[child as usize].priority <= n.priority,
                "heap order"
            );
        }
        let size = 1 + check(tree, n.left, low, Some(key)) + check(tree, n.right, Some(key), high);
        assert_eq!(n.size as usize, size, "subtree size");
        size
    }

    /// Random inserts and removes, with ties on scores, against an ordered
    /// set: the same elements in the same order, and every invariant kept.
    #[test]
    fn inserts_and_removes_keep_every_invariant() {
        let mut tree = RankTree::default();
        let mut model = std::collections::BTreeSet::new();
        let mut seed = 12345u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for round in 0..20_000 {
            let (score, member) = ((next() % 50) as i64, format!("m{}", next() % 400));
            let present = model.contains(&(score, member.clone()));
            if present {
                assert!(tree.remove(member.as_bytes(), score as f64));
                model.remove(&(score, member));
            } else if model.iter().any(|(_, m)| *m == member) {
                assert!(!tree.remove(member.as_bytes(), score as f64), "absent pair");
            } else {
                tree.insert(member.clone().into_bytes().into(), score as f64);
                model.insert((score, member));
            }
            if round % 1000 == 0 {
                assert_eq!(check(&tree, tree.root, None, None), model.len());
            }
        }
        assert_eq!(check(&tree, tree.root, None, None), model.len());
        let ordered: Vec<(f64, Vec<u8>)> =
            tree.iter_from(0).map(|(m, s)| (s, m.to_vec())).collect();
        let expected: Vec<(f64, Vec<u8>)> = model
            .iter()
            .map(|(s, m)| (*s as f64, m.clone().into_bytes()))
            .collect();
        assert_eq!(ordered, expected);
    }
}
