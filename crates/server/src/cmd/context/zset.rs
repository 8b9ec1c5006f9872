//! What the sorted-set commands share: score arguments, range bounds and
//! windows of ranks (ZRANGE's forms, ZREMRANGEBY*, ZCOUNT, ...), and how
//! elements are written with their scores.

use std::ops::Range;

use bytes::Bytes;
use keel_resp::{Protocol, Writer};
use keel_store::ZSet;

use super::collection::range;
use super::{errors, Error};

/// Parses a score argument as Redis's `string2d`: `parse_f64`'s syntax,
/// and a value too large or too small for a double is refused (strtod's
/// ERANGE) rather than rounded to infinity or zero.
pub fn parse_score(arg: &[u8]) -> Result<f64, Error> {
    let invalid = || Error::from(errors::NOT_FLOAT);
    let score = crate::cmd::context::parse_f64(arg).ok_or_else(invalid)?;
    let mantissa = arg
        .split(|b| matches!(b, b'e' | b'E'))
        .next()
        .unwrap_or(arg);
    let overflow = score.is_infinite() && !arg.to_ascii_lowercase().windows(3).any(|w| w == b"inf");
    let underflow = score == 0.0 && mantissa.iter().any(|b| (b'1'..=b'9').contains(b));
    if overflow || underflow {
        return Err(invalid());
    }
    Ok(score)
}

/// One end of a range by score or by lex.
#[derive(Clone)]
enum Bound {
    /// `-`: before every member.
    Min,
    /// `+`: after every member.
    Max,
    Score(f64),
    Lex(Bytes),
}

/// A bound and whether it excludes an element equal to it (`(`).
#[derive(Clone)]
pub struct End {
    bound: Bound,
    exclusive: bool,
}

impl End {
    /// True if the element `(score, member)` comes before this end, or is
    /// equal to it and `take_equal` says equal counts as before.
    fn precedes(&self, score: f64, member: &[u8], take_equal: bool) -> bool {
        match &self.bound {
            Bound::Min => false,
            Bound::Max => true,
            Bound::Score(s) => score < *s || (score == *s && take_equal),
            Bound::Lex(m) => member < &m[..] || (member == &m[..] && take_equal),
        }
    }

    /// The ascending ranks of the elements from `self` to `upper`.
    pub fn ranks(&self, upper: &End, zset: &ZSet) -> Range<usize> {
        let start = zset.count_before(|s, m| self.precedes(s, m, self.exclusive));
        let end = zset.count_before(|s, m| upper.precedes(s, m, !upper.exclusive));
        start..end.max(start)
    }

    /// A score bound: `1.5`, `(1.5`, `-inf`, `+inf`, as zslParseRange reads
    /// it (strtod: leading spaces and an empty string are 0).
    pub fn score(arg: &Bytes) -> Result<End, Error> {
        let (exclusive, text) = match arg.strip_prefix(b"(") {
            Some(rest) => (true, rest),
            None => (false, &arg[..]),
        };
        let text = text.trim_ascii_start();
        let score = if text.is_empty() {
            Some(0.0)
        } else {
            crate::cmd::context::parse_f64(text)
        };
        let score = score.ok_or("ERR min or max is not a float")?;
        Ok(End {
            bound: Bound::Score(score),
            exclusive,
        })
    }

    /// A lex bound: `[a`, `(a`, `-` or `+`.
    pub fn lex(arg: &Bytes) -> Result<End, Error> {
        let (bound, exclusive) = match arg.first() {
            Some(b'-') if arg.len() == 1 => (Bound::Min, false),
            Some(b'+') if arg.len() == 1 => (Bound::Max, false),
            Some(b'[') => (Bound::Lex(arg.slice(1..)), false),
            Some(b'(') => (Bound::Lex(arg.slice(1..)), true),
            _ => return Err("ERR min or max not valid string range item".into()),
        };
        Ok(End { bound, exclusive })
    }
}

/// A range's ends, parsed before the key is looked up (a bad bound is an
/// error even for a missing key, as in Redis).
pub enum Window {
    /// Start and stop indexes, negative from the end.
    Index(i64, i64),
    /// Score or lex bounds, low end first.
    Between(End, End),
}

impl Window {
    /// The ascending ranks selected from `zset`, REV and LIMIT applied.
    pub fn ranks(&self, zset: &ZSet, rev: bool, limit: Option<(i64, i64)>) -> Range<usize> {
        match self {
            Window::Index(start, stop) => {
                let r = range(zset.len(), *start, *stop);
                if rev {
                    zset.len() - r.end..zset.len() - r.start
                } else {
                    r
                }
            }
            Window::Between(low, high) => {
                apply_limit(low.ranks(high, zset), rev, limit.unwrap_or((0, -1)))
            }
        }
    }
}

/// Writes sorted-set elements in order, with their scores if `withscores`:
/// flat in RESP2, `[member, score]` pairs in RESP3 (an array, not a map,
/// so the order holds), as Redis replies.
pub fn write_elements<M: AsRef<[u8]>>(w: &mut Writer, elements: &[(M, f64)], withscores: bool) {
    let pairs = withscores && w.protocol() == Protocol::Resp3;
    let flat = if withscores && !pairs { 2 } else { 1 };
    w.array(elements.len() * flat);
    for (member, score) in elements {
        if pairs {
            w.array(2);
        }
        w.bulk(member.as_ref());
        if withscores {
            w.double(*score);
        }
    }
}

/// The window of ascending ranks a LIMIT keeps from `ranks`, counted from
/// the high end when `rev`. A negative offset keeps nothing, as in Redis.
fn apply_limit(ranks: Range<usize>, rev: bool, (offset, count): (i64, i64)) -> Range<usize> {
    let Ok(offset) = usize::try_from(offset) else {
        return 0..0;
    };
    let offset = offset.min(ranks.len());
    let take = usize::try_from(count).map_or(ranks.len() - offset, |c| c.min(ranks.len() - offset));
    if rev {
        ranks.end - offset - take..ranks.end - offset
    } else {
        ranks.start + offset..ranks.start + offset + take
    }
}
