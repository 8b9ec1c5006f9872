//! GETRANGE key start end — a substring, with negative offsets counted
//! from the end, clamped as Redis clamps them — and SUBSTR, its old name.

use bytes::Bytes;

use crate::cmd::context::{errors, parse_i64, Ctx, Error, Spec, BASE};

/// GETRANGE.
pub const SPEC: Spec = Spec {
    name: "getrange",
    arity: 4,
    flags: &["readonly"],
    keys: (1, 1, 1),
    acl: &["@read", "@string", "@slow"],
    group: "string",
    summary: "Get a substring of the string stored at a key",
    since: "2.4.0",
    complexity: "O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings.",
    run,
    ..BASE
};

/// SUBSTR.
pub const SUBSTR: Spec = Spec {
    name: "substr",
    summary: "Get a substring of the string stored at a key",
    since: "1.0.0",
    complexity: "O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings.",
    ..SPEC
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let start = parse_i64(&args[2])?;
    let end = parse_i64(&args[3])?;
    let db = ctx.db();
    let shard = db.read(&args[1]);
    let entry = shard.get(&args[1]);
    ctx.count_lookup(&args[1], entry.is_some());
    let s = match entry.map(|e| e.value().as_str()) {
        None => {
            ctx.w().bulk(b"");
            return Ok(());
        }
        Some(Some(s)) => s.to_bytes(),
        Some(None) => return Err(errors::WRONGTYPE.into()),
    };
    match clamp_range(start, end, s.len()) {
        Some((from, to)) => ctx.w().bulk(&s[from..=to]),
        None => ctx.w().bulk(b""),
    }
    Ok(())
}

/// Redis's index arithmetic for GETRANGE: the inclusive byte range, or
/// `None` when it is empty.
fn clamp_range(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    if (start < 0 && end < 0 && start > end) || len == 0 {
        return None;
    }
    let start = if start < 0 { len + start } else { start }.max(0);
    let end = if end < 0 { len + end } else { end }.max(0).min(len - 1);
    (start <= end).then_some((start as usize, end as usize))
}

#[cfg(test)]
mod tests {
    use super::clamp_range;

    #[test]
    fn ranges() {
        assert_eq!(clamp_range(0, 3, 10), Some((0, 3)));
        assert_eq!(clamp_range(-3, -1, 10), Some((7, 9)));
        assert_eq!(clamp_range(0, -100, 10), Some((0, 0)));
        assert_eq!(clamp_range(5, 100, 10), Some((5, 9)));
        assert_eq!(clamp_range(-1, -5, 10), None);
        assert_eq!(clamp_range(11, 20, 10), None);
        assert_eq!(clamp_range(0, 0, 0), None);
    }
}
