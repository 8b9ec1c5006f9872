//! Slot numbers and ranges as clients write them and CLUSTER NODES shows
//! them.

use crate::slot::SLOTS;

/// An inclusive range of slots, `first..=last`.
pub type SlotRange = (u16, u16);

/// A slot number as a command argument or a nodes.conf field: a decimal
/// integer below 16384.
pub fn parse_slot(text: &[u8]) -> Option<u16> {
    if text.is_empty() || text.len() > 5 || !text.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n: usize = std::str::from_utf8(text).ok()?.parse().ok()?;
    (n < SLOTS).then_some(n as u16)
}

/// The inclusive ranges that the sorted, distinct `slots` form.
pub fn ranges(slots: impl IntoIterator<Item = u16>) -> Vec<SlotRange> {
    let mut out: Vec<SlotRange> = Vec::new();
    for slot in slots {
        match out.last_mut() {
            Some((_, last)) if *last + 1 == slot => *last = slot,
            _ => out.push((slot, slot)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_decimal_and_in_range() {
        assert_eq!(parse_slot(b"0"), Some(0));
        assert_eq!(parse_slot(b"16383"), Some(16383));
        assert_eq!(parse_slot(b"16384"), None);
        assert_eq!(parse_slot(b"-1"), None);
        assert_eq!(parse_slot(b"1e3"), None);
        assert_eq!(parse_slot(b""), None);
        assert_eq!(parse_slot(b"000000001"), None);
    }

    #[test]
    fn ranges_join_neighbours() {
        assert_eq!(ranges([1, 2, 3, 5, 7, 8]), vec![(1, 3), (5, 5), (7, 8)]);
        assert_eq!(ranges([]), vec![]);
    }
}
