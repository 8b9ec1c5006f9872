//! The longest common subsequence of two strings, as Redis's LCS command
//! computes it.
//!
//! The classic dynamic program: cell (i, j) of an (|a|+1) x (|b|+1) table of
//! `u32` holds the LCS length of the first i bytes of `a` and the first j
//! of `b`. Which of several longest subsequences is reported, and which
//! matching ranges, depends on how the table is walked back, so the walk
//! follows Redis's exactly: from the bottom-right corner, take a byte when
//! both strings end in it, otherwise step up when the cell above is
//! strictly larger than the cell to the left, and left otherwise. Runs of
//! bytes taken on one diagonal form the reported ranges, last range first.
//!
//! Trade-offs: the table is O(|a|*|b|) memory (4 bytes a cell), which is
//! why the caller decides whether it may have it ([`table_bytes`]) before
//! [`Table::build`] allocates it, and why the length alone, which needs no
//! walk back, is computed by [`length`] with two rows only. Hirschberg's
//! linear-space method would find *a* longest subsequence, but not always
//! the one Redis's walk reports.

use std::collections::TryReserveError;

/// Bytes the full table for strings of these lengths takes; `None` if the
/// count overflows.
pub fn table_bytes(a_len: usize, b_len: usize) -> Option<u64> {
    let side = |len: usize| (len as u64).checked_add(1);
    let cells = side(a_len)?.checked_mul(side(b_len)?)?;
    cells.checked_mul(4)
}

/// The LCS length of `a` and `b`, in O(|b|) memory.
pub fn length(a: &[u8], b: &[u8]) -> u32 {
    let mut above = vec![0u32; b.len() + 1];
    let mut row = vec![0u32; b.len() + 1];
    for &x in a {
        for (j, &y) in b.iter().enumerate() {
            row[j + 1] = if x == y {
                above[j] + 1
            } else {
                above[j + 1].max(row[j])
            };
        }
        std::mem::swap(&mut above, &mut row);
    }
    above[b.len()]
}

/// One range of bytes common to both strings: inclusive offsets in each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Match {
    /// First and last offset in `a`.
    pub a: (usize, usize),
    /// First and last offset in `b`.
    pub b: (usize, usize),
}

impl Match {
    /// The range's length in bytes.
    pub fn len(&self) -> usize {
        self.a.1 - self.a.0 + 1
    }

    /// Always false: a range holds at least one byte.
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// The filled table for two strings.
pub struct Table<'s> {
    a: &'s [u8],
    b: &'s [u8],
    cells: Vec<u32>,
}

impl<'s> Table<'s> {
    /// Builds the table, allocating [`table_bytes`] fallibly.
    pub fn build(a: &'s [u8], b: &'s [u8]) -> Result<Table<'s>, TryReserveError> {
        let width = b.len() + 1;
        let mut cells = Vec::new();
        cells.try_reserve_exact((a.len() + 1) * width)?;
        cells.resize(width, 0);
        for (i, &x) in a.iter().enumerate() {
            cells.push(0);
            for (j, &y) in b.iter().enumerate() {
                let cell = if x == y {
                    cells[i * width + j] + 1
                } else {
                    cells[i * width + j + 1].max(cells[(i + 1) * width + j])
                };
                cells.push(cell);
            }
        }
        Ok(Table { a, b, cells })
    }

    fn at(&self, i: usize, j: usize) -> u32 {
        self.cells[i * (self.b.len() + 1) + j]
    }

    /// The LCS length.
    pub fn len(&self) -> usize {
        self.at(self.a.len(), self.b.len()) as usize
    }

    /// True when the strings have no byte in common.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Walks the table back as Redis does: the common subsequence, and its
    /// ranges from last to first.
    pub fn walk_back(&self) -> (Vec<u8>, Vec<Match>) {
        let mut result = vec![0u8; self.len()];
        let mut filled = result.len();
        let mut ranges = Vec::new();
        let mut open: Option<Match> = None;
        let (mut i, mut j) = (self.a.len(), self.b.len());
        while i > 0 && j > 0 {
            if self.a[i - 1] == self.b[j - 1] {
                filled -= 1;
                result[filled] = self.a[i - 1];
                let range = open.get_or_insert(Match {
                    a: (i - 1, i - 1),
                    b: (j - 1, j - 1),
                });
                (range.a.0, range.b.0) = (i - 1, j - 1);
                i -= 1;
                j -= 1;
                if i == 0 || j == 0 {
                    ranges.extend(open.take());
                }
            } else {
                if self.at(i - 1, j) > self.at(i, j - 1) {
                    i -= 1;
                } else {
                    j -= 1;
                }
                ranges.extend(open.take());
            }
        }
        (result, ranges)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_documentation_example() {
        let (a, b) = (b"ohmytext", b"mynewtext");
        let table = Table::build(a, b).unwrap();
        let (lcs, ranges) = table.walk_back();
        assert_eq!(lcs, b"mytext");
        assert_eq!(
            ranges,
            [
                Match {
                    a: (4, 7),
                    b: (5, 8)
                },
                Match {
                    a: (2, 3),
                    b: (0, 1)
                }
            ]
        );
        assert_eq!(ranges[0].len(), 4);
        assert_eq!(length(a, b), 6);
    }

    #[test]
    fn length_agrees_with_the_table() {
        let samples: [&[u8]; 6] = [b"", b"a", b"abcabba", b"cbabac", b"xyz", b"aaaa"];
        for a in samples {
            for b in samples {
                let table = Table::build(a, b).unwrap();
                assert_eq!(length(a, b) as usize, table.len(), "{a:?} {b:?}");
                assert_eq!(table.walk_back().0.len(), table.len());
            }
        }
    }

    #[test]
    fn empty_strings_have_no_ranges() {
        let table = Table::build(b"", b"abc").unwrap();
        assert_eq!(table.walk_back(), (Vec::new(), Vec::new()));
        assert_eq!(table_bytes(0, 3), Some(16));
        assert_eq!(table_bytes(usize::MAX, usize::MAX), None);
    }
}
