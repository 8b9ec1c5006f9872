//! An order-statistic tree: the ordered index behind large sorted sets.
//!
//! A counted B+ tree keyed by `(score, member)`. Elements live in leaves
//! of up to [`LEAF_MAX`] in order; an inner node holds up to [`INNER_MAX`]
//! children, the number of elements under each, and between two children a
//! separator: a copy of an element no greater than any in the right child
//! and greater than every one in the left. The counts turn "how many
//! elements come before this one" (ZRANK, ZCOUNT, the start of a ZRANGE by
//! score or by lex) and "the k-th element" (ZRANGE by index) into one walk
//! from the root, O(log n); a range of m elements then reads leaves in
//! order, O(log n + m).
//!
//! Why a B+ tree and not Redis's skiplist or a binary tree: a ZADD that
//! moves a member of a 100,000-member set removes it and inserts it again,
//! and in a binary tree (keel's earlier treap) or a skiplist each of those
//! walks some 25 nodes scattered in memory, one dependent cache miss each:
//! 36% of a ZADD's time. Here each walk reads 3 or 4 nodes, and within a
//! node a binary search over adjacent elements. The costs: an insert or
//! remove moves up to a leaf's elements (2 KB) along, and a separator
//! copies its member (an allocation for a member over 22 bytes, once per
//! leaf).
//!
//! Space: a leaf's elements are 32 bytes each, in one allocation of the
//! leaf's full capacity. Random inserts leave leaves about 70% full: 48
//! bytes an element with the inner nodes, as the treap's nodes took.
//! Inserts in ascending order (timestamps as scores), the usual pattern,
//! fill each leaf before starting the next: 33 bytes an element (a sorted
//! set of 300,000 timestamps took 30 MB where the treap took 45 and Redis
//! 35). That happens at the right edge of the tree only, so that no insert
//! order can leave leaves of one element. A removal that leaves a node
//! under a quarter full merges it with a neighbour or takes entries from
//! it.

use std::cmp::Ordering;

use super::InlineBytes;
use crate::size_class::allocated;

/// Elements in a leaf at most: 2 KB of elements, a jemalloc size class.
const LEAF_MAX: usize = 64;
/// Children of an inner node at most.
const INNER_MAX: usize = 64;
/// A node with fewer entries than this after a removal is merged with a
/// neighbour or takes some of its entries.
const LEAF_MIN: usize = LEAF_MAX / 4;
const INNER_MIN: usize = INNER_MAX / 4;

/// A member and its score: one element, or a separator.
#[derive(Debug)]
struct Element {
    score: f64,
    member: InlineBytes,
}

impl Element {
    fn key(&self) -> (f64, &[u8]) {
        (self.score, &self.member)
    }

    /// A separator equal to this element.
    fn copy(&self) -> Element {
        Element {
            score: self.score,
            member: self.member.clone(),
        }
    }
}

#[derive(Debug)]
enum Node {
    /// Elements in order, in a vector of capacity `LEAF_MAX`.
    Leaf(Vec<Element>),
    Inner(Box<Inner>),
}

#[derive(Debug)]
struct Inner {
    /// Capacity `INNER_MAX`.
    children: Vec<Node>,
    /// Elements under each child.
    counts: Vec<u32>,
    /// `separators[i]` lies between `children[i]` and `children[i + 1]`.
    separators: Vec<Element>,
}

impl Node {
    fn entries(&self) -> usize {
        match self {
            Node::Leaf(elements) => elements.len(),
            Node::Inner(inner) => inner.children.len(),
        }
    }

    fn count(&self) -> u32 {
        match self {
            Node::Leaf(elements) => elements.len() as u32,
            Node::Inner(inner) => inner.counts.iter().sum(),
        }
    }
}

/// Heap bytes of one leaf and of one inner node, as allocated.
fn leaf_bytes() -> usize {
    allocated(LEAF_MAX * std::mem::size_of::<Element>())
}

fn inner_bytes() -> usize {
    allocated(std::mem::size_of::<Inner>())
        + allocated(INNER_MAX * std::mem::size_of::<Node>())
        + allocated(INNER_MAX * std::mem::size_of::<u32>())
        + allocated(INNER_MAX * std::mem::size_of::<Element>())
}

fn new_leaf() -> Vec<Element> {
    Vec::with_capacity(LEAF_MAX)
}

fn new_inner() -> Box<Inner> {
    Box::new(Inner {
        children: Vec::with_capacity(INNER_MAX),
        counts: Vec::with_capacity(INNER_MAX),
        separators: Vec::with_capacity(INNER_MAX),
    })
}

/// Elements ordered by `(score, member)`, with rank queries.
#[derive(Debug)]
pub struct RankTree {
    root: Node,
    len: usize,
    leaves: usize,
    inners: usize,
    /// Heap bytes of the members of elements and separators.
    member_bytes: usize,
}

impl Default for RankTree {
    fn default() -> Self {
        RankTree {
            root: Node::Leaf(Vec::new()),
            len: 0,
            leaves: 0,
            inners: 0,
            member_bytes: 0,
        }
    }
}

impl Clone for RankTree {
    /// Inserts every element in order, which fills each leaf: a copy is as
    /// compact as the tree can be, whatever the original's history.
    fn clone(&self) -> Self {
        let mut copy = RankTree::default();
        for (member, score) in self.iter_from(0) {
            copy.insert(InlineBytes::from(member), score);
        }
        copy
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

/// The child of `inner` that holds `key`, if anything does.
fn child_for(inner: &Inner, key: (f64, &[u8])) -> usize {
    inner
        .separators
        .partition_point(|separator| compare(separator.key(), key).is_le())
}

impl RankTree {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Heap bytes owned: the nodes, at their full capacity, and the members.
    pub fn heap_bytes(&self) -> usize {
        self.leaves * leaf_bytes() + self.inners * inner_bytes() + self.member_bytes
    }

    /// Adds an element; the caller guarantees `member` is not present.
    pub fn insert(&mut self, member: InlineBytes, score: f64) {
        if self.leaves == 0 {
            self.root = Node::Leaf(new_leaf());
            self.leaves = 1;
        }
        self.member_bytes += member.heap_bytes();
        self.len += 1;
        let element = Element { score, member };
        let mut root = std::mem::replace(&mut self.root, Node::Leaf(Vec::new()));
        if let Some((separator, right)) = self.insert_into(&mut root, element, true) {
            let mut inner = new_inner();
            inner.counts.extend([root.count(), right.count()]);
            inner.children.extend([root, right]);
            inner.separators.push(separator);
            self.inners += 1;
            root = Node::Inner(inner);
        }
        self.root = root;
    }

    /// Puts `element` under `node`; `rightmost` if `node` is the tree's
    /// last at its level. Returns the separator and the new right sibling
    /// if `node` split.
    fn insert_into(
        &mut self,
        node: &mut Node,
        element: Element,
        rightmost: bool,
    ) -> Option<(Element, Node)> {
        match node {
            Node::Leaf(elements) => {
                let at = elements.partition_point(|e| compare(e.key(), element.key()).is_lt());
                if elements.len() < LEAF_MAX {
                    elements.insert(at, element);
                    return None;
                }
                self.leaves += 1;
                let mut right = new_leaf();
                if rightmost && at == LEAF_MAX {
                    // Appending at the end of the tree: this leaf stays full.
                    right.push(element);
                } else {
                    right.extend(elements.drain(LEAF_MAX / 2..));
                    match at <= LEAF_MAX / 2 {
                        true => elements.insert(at, element),
                        false => right.insert(at - LEAF_MAX / 2, element),
                    }
                }
                let separator = right[0].copy();
                self.member_bytes += separator.member.heap_bytes();
                Some((separator, Node::Leaf(right)))
            }
            Node::Inner(inner) => {
                let at = child_for(inner, element.key());
                let last = at + 1 == inner.children.len();
                inner.counts[at] += 1;
                let (separator, new) =
                    self.insert_into(&mut inner.children[at], element, rightmost && last)?;
                inner.counts[at] = inner.children[at].count();
                let new_count = new.count();
                if inner.children.len() < INNER_MAX {
                    inner.children.insert(at + 1, new);
                    inner.counts.insert(at + 1, new_count);
                    inner.separators.insert(at, separator);
                    return None;
                }
                // Full: split in two halves, then add the new child to its
                // half. The separator between the halves moves up.
                self.inners += 1;
                let half = INNER_MAX / 2;
                let mut right = new_inner();
                right.children.extend(inner.children.drain(half..));
                right.counts.extend(inner.counts.drain(half..));
                right.separators.extend(inner.separators.drain(half..));
                let up = inner.separators.pop().expect("a full node has separators");
                let (side, at) = match at < half {
                    true => (&mut **inner, at),
                    false => (&mut *right, at - half),
                };
                side.children.insert(at + 1, new);
                side.counts.insert(at + 1, new_count);
                side.separators.insert(at, separator);
                Some((up, Node::Inner(right)))
            }
        }
    }

    /// Removes the element `(score, member)`; true if it was there.
    pub fn remove(&mut self, member: &[u8], score: f64) -> bool {
        let mut root = std::mem::replace(&mut self.root, Node::Leaf(Vec::new()));
        let found = self.remove_from(&mut root, (score, member));
        if found {
            self.len -= 1;
        }
        // A root left with one child gives way to it.
        while let Node::Inner(inner) = &mut root {
            if inner.children.len() > 1 {
                break;
            }
            let child = inner.children.pop().expect("an inner node has a child");
            self.inners -= 1;
            self.drop_separators(inner);
            root = child;
        }
        if self.len == 0 {
            // Nothing left: keep no node.
            self.leaves = 0;
            root = Node::Leaf(Vec::new());
        }
        self.root = root;
        found
    }

    fn drop_separators(&mut self, inner: &Inner) {
        for separator in &inner.separators {
            self.member_bytes -= separator.member.heap_bytes();
        }
    }

    /// Takes the element `key` out from under `node`; true if it was there.
    fn remove_from(&mut self, node: &mut Node, key: (f64, &[u8])) -> bool {
        match node {
            Node::Leaf(elements) => {
                let at = elements.partition_point(|e| compare(e.key(), key).is_lt());
                if elements
                    .get(at)
                    .is_none_or(|e| compare(e.key(), key).is_ne())
                {
                    return false;
                }
                let element = elements.remove(at);
                self.member_bytes -= element.member.heap_bytes();
                true
            }
            Node::Inner(inner) => {
                let at = child_for(inner, key);
                if !self.remove_from(&mut inner.children[at], key) {
                    return false;
                }
                inner.counts[at] -= 1;
                let min = match inner.children[at] {
                    Node::Leaf(_) => LEAF_MIN,
                    Node::Inner(_) => INNER_MIN,
                };
                if inner.children[at].entries() < min && inner.children.len() > 1 {
                    self.rebalance(inner, at.saturating_sub(1));
                }
                true
            }
        }
    }

    /// Evens out children `left` and `left + 1` of `inner`, one of them
    /// under a quarter full: merges them if they fit in one node, else moves
    /// entries from the fuller to the other until they hold as many.
    fn rebalance(&mut self, inner: &mut Inner, left: usize) {
        let right = left + 1;
        let (head, tail) = inner.children.split_at_mut(right);
        let separator = &mut inner.separators[left];
        match (&mut head[left], &mut tail[0]) {
            (Node::Leaf(a), Node::Leaf(b)) => {
                let total = a.len() + b.len();
                if total > LEAF_MAX {
                    let half = total / 2;
                    if a.len() < half {
                        a.extend(b.drain(..half - a.len()));
                    } else {
                        b.splice(0..0, a.drain(half..));
                    }
                    let copy = b[0].copy();
                    self.member_bytes += copy.member.heap_bytes();
                    self.member_bytes -= std::mem::replace(separator, copy).member.heap_bytes();
                    inner.counts[left] = a.len() as u32;
                    inner.counts[right] = b.len() as u32;
                    return;
                }
            }
            (Node::Inner(a), Node::Inner(b)) => {
                let total = a.children.len() + b.children.len();
                if total > INNER_MAX {
                    // Rotate through the separator between them, one child
                    // at a time.
                    let half = total / 2;
                    while a.children.len() < half {
                        let down = std::mem::replace(separator, b.separators.remove(0));
                        a.separators.push(down);
                        a.children.push(b.children.remove(0));
                        a.counts.push(b.counts.remove(0));
                    }
                    while a.children.len() > half {
                        let up = a
                            .separators
                            .pop()
                            .expect("a node with children to spare has separators");
                        b.separators.insert(0, std::mem::replace(separator, up));
                        b.children.insert(0, a.children.pop().expect("checked"));
                        b.counts.insert(0, a.counts.pop().expect("checked"));
                    }
                    inner.counts[left] = a.counts.iter().sum();
                    inner.counts[right] = b.counts.iter().sum();
                    return;
                }
            }
            _ => unreachable!("siblings are at the same depth"),
        }
        // They fit in one node: the right one and the separator between
        // them merge into the left one.
        let separator = inner.separators.remove(left);
        let count = inner.counts.remove(right);
        inner.counts[left] += count;
        let taken = inner.children.remove(right);
        match (&mut inner.children[left], taken) {
            (Node::Leaf(a), Node::Leaf(mut b)) => {
                a.append(&mut b);
                self.leaves -= 1;
                self.member_bytes -= separator.member.heap_bytes();
            }
            (Node::Inner(a), Node::Inner(mut b)) => {
                a.separators.push(separator);
                a.separators.append(&mut b.separators);
                a.children.append(&mut b.children);
                a.counts.append(&mut b.counts);
                self.inners -= 1;
            }
            _ => unreachable!("siblings are at the same depth"),
        }
    }

    /// Number of elements for which `before` holds, a prefix of the order
    /// (e.g. "score < 5"): the rank of the first element past it.
    pub fn count_before(&self, before: impl Fn(f64, &[u8]) -> bool) -> usize {
        let (mut node, mut count) = (&self.root, 0);
        loop {
            match node {
                Node::Leaf(elements) => {
                    return count + elements.partition_point(|e| before(e.score, &e.member));
                }
                Node::Inner(inner) => {
                    let at = inner
                        .separators
                        .partition_point(|s| before(s.score, &s.member));
                    count += inner.counts[..at]
                        .iter()
                        .map(|&c| c as usize)
                        .sum::<usize>();
                    node = &inner.children[at];
                }
            }
        }
    }

    /// The elements from rank `start` on, in order.
    pub fn iter_from(&self, mut start: usize) -> Iter<'_> {
        let mut path = Vec::new();
        let mut node = &self.root;
        loop {
            match node {
                Node::Leaf(elements) => {
                    return Iter {
                        path,
                        leaf: elements,
                        at: start,
                    };
                }
                Node::Inner(inner) => {
                    let mut at = 0;
                    while at + 1 < inner.children.len() && start >= inner.counts[at] as usize {
                        start -= inner.counts[at] as usize;
                        at += 1;
                    }
                    path.push((&**inner, at));
                    node = &inner.children[at];
                }
            }
        }
    }
}

/// In-order iterator over a [`RankTree`]: the current leaf and position,
/// and the inner nodes above it with the child taken in each.
pub struct Iter<'a> {
    path: Vec<(&'a Inner, usize)>,
    leaf: &'a [Element],
    at: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a [u8], f64);

    fn next(&mut self) -> Option<Self::Item> {
        while self.at >= self.leaf.len() {
            // The next leaf: up to the nearest node with a child to the
            // right, then down its leftmost path.
            let (inner, taken) = loop {
                let (inner, taken) = self.path.pop()?;
                if taken + 1 < inner.children.len() {
                    break (inner, taken + 1);
                }
            };
            self.path.push((inner, taken));
            let mut node = &inner.children[taken];
            while let Node::Inner(inner) = node {
                self.path.push((&**inner, 0));
                node = &inner.children[0];
            }
            let Node::Leaf(elements) = node else {
                unreachable!("the loop stops at a leaf")
            };
            (self.leaf, self.at) = (elements, 0);
        }
        let element = &self.leaf[self.at];
        self.at += 1;
        Some((&element.member, element.score))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks every node under `node`: elements in order within the
    /// bounds the separators above set, each count, and every node's
    /// capacity. Returns the elements under it, and adds its nodes and
    /// separators' heap bytes to `bytes`.
    fn check(
        node: &Node,
        low: Option<(f64, &[u8])>,
        high: Option<(f64, &[u8])>,
        bytes: &mut usize,
    ) -> usize {
        let within = |key: (f64, &[u8])| {
            low.is_none_or(|low| compare(low, key).is_le())
                && high.is_none_or(|high| compare(key, high).is_lt())
        };
        match node {
            Node::Leaf(elements) => {
                assert_eq!(elements.capacity(), LEAF_MAX);
                *bytes += leaf_bytes();
                for pair in elements.windows(2) {
                    assert!(compare(pair[0].key(), pair[1].key()).is_lt(), "order");
                }
                for element in elements {
                    assert!(within(element.key()), "within the separators");
                    *bytes += element.member.heap_bytes();
                }
                elements.len()
            }
            Node::Inner(inner) => {
                assert_eq!(inner.children.capacity(), INNER_MAX);
                assert_eq!(inner.children.len(), inner.counts.len());
                assert_eq!(inner.children.len(), inner.separators.len() + 1);
                assert!(inner.children.len() >= 2);
                *bytes += inner_bytes();
                let mut total = 0;
                for (at, child) in inner.children.iter().enumerate() {
                    let low = match at {
                        0 => low,
                        _ => Some(inner.separators[at - 1].key()),
                    };
                    let high = inner.separators.get(at).map(Element::key).or(high);
                    let count = check(child, low, high, bytes);
                    assert_eq!(inner.counts[at] as usize, count, "count");
                    total += count;
                }
                for separator in &inner.separators {
                    assert!(within(separator.key()));
                    *bytes += separator.member.heap_bytes();
                }
                total
            }
        }
    }

    /// Checks the whole tree, its length and its heap bytes.
    fn check_tree(tree: &RankTree) {
        let mut bytes = 0;
        let count = match (&tree.root, tree.len) {
            (Node::Leaf(elements), 0) => {
                assert_eq!(elements.capacity(), 0, "an empty tree keeps no node");
                0
            }
            (root, _) => check(root, None, None, &mut bytes),
        };
        assert_eq!(count, tree.len());
        assert_eq!(bytes, tree.heap_bytes());
    }

    /// Ascending inserts (the usual order of timestamps as scores) fill
    /// every leaf; ranks and ranges are right.
    #[test]
    fn ascending_inserts_fill_leaves() {
        let mut tree = RankTree::default();
        let n = 200_000;
        for i in 0..n {
            tree.insert(format!("m{i}").into_bytes().into(), f64::from(i));
        }
        check_tree(&tree);
        assert_eq!(tree.leaves, (n as usize).div_ceil(LEAF_MAX));
        assert_eq!(tree.len(), n as usize);
        assert_eq!(tree.count_before(|s, _| s < 1234.0), 1234);
        let (member, score) = tree.iter_from(150_000).next().expect("in range");
        assert_eq!((member, score), (&b"m150000"[..], 150_000.0));
        assert_eq!(tree.iter_from(n as usize - 1).count(), 1);
        assert_eq!(tree.iter_from(n as usize).count(), 0);
        assert!(tree.remove(b"m7", 7.0));
        assert!(!tree.remove(b"m7", 7.0));
        assert_eq!(tree.count_before(|s, _| s < 10.0), 9);
        let copy = tree.clone();
        check_tree(&copy);
        assert!(copy.iter_from(0).eq(tree.iter_from(0)));
    }

    /// Random inserts and removes, with ties on scores and members long
    /// enough to be boxed, against an ordered set: the same elements in the
    /// same order, the same ranks, and every invariant kept, as the tree
    /// grows to several levels and shrinks back to nothing.
    #[test]
    fn inserts_and_removes_keep_every_invariant() {
        let mut tree = RankTree::default();
        let mut model = std::collections::BTreeSet::new();
        let mut scores = std::collections::HashMap::new();
        let mut seed = 12345u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let member = |n: u64| match n % 3 {
            0 => format!("a-member-long-enough-to-be-boxed-{n}"),
            _ => format!("m{n}"),
        };
        for round in 0..200_000u64 {
            // Grow for the first half, shrink in the second.
            let grow = round < 100_000;
            let (mut score, name) = ((next() % 500) as i64, member(next() % 40_000));
            if !grow {
                score = scores.get(&name).copied().unwrap_or(score);
            }
            if round == 100_000 {
                let Node::Inner(root) = &tree.root else {
                    panic!("grown past one leaf")
                };
                assert!(matches!(root.children[0], Node::Inner(_)), "three levels");
            }
            match scores.get(&name) {
                Some(&held) if held == score && (!grow || next() % 4 == 0) => {
                    assert!(tree.remove(name.as_bytes(), score as f64));
                    model.remove(&(score, name.clone()));
                    scores.remove(&name);
                }
                Some(&held) if held == score => {}
                Some(_) => assert!(!tree.remove(name.as_bytes(), score as f64), "absent pair"),
                None if grow => {
                    tree.insert(name.clone().into_bytes().into(), score as f64);
                    model.insert((score, name.clone()));
                    scores.insert(name, score);
                }
                None => {}
            }
            if round % 20_000 == 0 {
                check_tree(&tree);
                let cut = (next() % 500) as f64;
                let expected = model.iter().filter(|(s, _)| (*s as f64) < cut).count();
                assert_eq!(tree.count_before(|s, _| s < cut), expected, "rank");
            }
        }
        check_tree(&tree);
        let ordered: Vec<(f64, Vec<u8>)> =
            tree.iter_from(0).map(|(m, s)| (s, m.to_vec())).collect();
        let expected: Vec<(f64, Vec<u8>)> = model
            .iter()
            .map(|(s, m)| (*s as f64, m.clone().into_bytes()))
            .collect();
        assert_eq!(ordered, expected);
        for (score, name) in std::mem::take(&mut model) {
            assert!(tree.remove(name.as_bytes(), score as f64));
        }
        check_tree(&tree);
        assert_eq!((tree.len(), tree.heap_bytes()), (0, 0));
    }

    /// An inner node under a quarter full takes children from a sibling
    /// too full to merge with, whichever side that sibling is on.
    #[test]
    fn inner_nodes_take_children_from_either_side() {
        let mut tree = RankTree::default();
        let name = |score: f64| format!("m{score}").into_bytes();
        // Ascending inserts: inner nodes of 32 children, over 2,048
        // elements each.
        let per_inner = 32 * LEAF_MAX;
        for i in 0..4 * per_inner {
            tree.insert(name(i as f64).into(), i as f64);
        }
        let children = |tree: &RankTree, at: usize| match &tree.root {
            Node::Inner(root) => match &root.children[at] {
                Node::Inner(inner) => inner.children.len(),
                Node::Leaf(_) => panic!("three levels"),
            },
            Node::Leaf(_) => panic!("three levels"),
        };
        // Split 20 leaves of the second inner node: 52 children.
        for leaf in 0..20 {
            let score = (per_inner + leaf * LEAF_MAX + 10) as f64 + 0.5;
            tree.insert(name(score).into(), score);
        }
        assert_eq!(children(&tree, 1), 52);
        // Empty the first one's leaves from its right end: it falls under
        // 16 children and takes some of its right sibling's.
        for i in (per_inner - 1700..per_inner).rev() {
            assert!(tree.remove(&name(i as f64), i as f64));
        }
        check_tree(&tree);
        assert!(children(&tree, 0) >= INNER_MIN && children(&tree, 1) < 52);
        // Now the last one, which the third (32 children) cannot merge
        // with once the third has grown: it takes from its left.
        for leaf in 0..24 {
            let score = (2 * per_inner + leaf * LEAF_MAX + 10) as f64 + 0.5;
            tree.insert(name(score).into(), score);
        }
        for i in 3 * per_inner..3 * per_inner + 1700 {
            assert!(tree.remove(&name(i as f64), i as f64));
        }
        check_tree(&tree);
        let last = match &tree.root {
            Node::Inner(root) => root.children.len() - 1,
            Node::Leaf(_) => unreachable!(),
        };
        assert!(children(&tree, last) >= INNER_MIN);
    }

    /// Inserts that each land just before a full leaf's end (descending
    /// scores into the middle) split leaves in halves: they never leave
    /// leaves of one element.
    #[test]
    fn no_insert_order_leaves_tiny_leaves() {
        let mut tree = RankTree::default();
        for i in 0..LEAF_MAX as u32 {
            tree.insert(format!("low{i}").into_bytes().into(), f64::from(i));
        }
        tree.insert(b"high".to_vec().into(), 1e9);
        for i in 0..10_000u32 {
            tree.insert(format!("mid{i}").into_bytes().into(), 1e6 - f64::from(i));
        }
        check_tree(&tree);
        assert!(
            tree.len() / tree.leaves >= LEAF_MAX / 2 - 1,
            "{} leaves",
            tree.leaves
        );
    }
}
