//! SORT key [BY pattern] [LIMIT offset count] [GET pattern [GET pattern
//! ...]] [ASC|DESC] [ALPHA] [STORE destination], and SORT_RO, the same
//! without STORE: the elements of a list, set or sorted set, sorted as
//! numbers (or as strings with ALPHA) by themselves or by the keys a BY
//! pattern makes of them, a LIMIT window of them, each replaced by the
//! values GET patterns make of it; replied, or stored as a list.
//!
//! As in Redis's sort.c: a BY pattern without `*` sorts nothing, and a list
//! or sorted set then keeps its own order (reversed by DESC), except that a
//! set sorted into STORE, or for a script, is sorted as strings so the
//! result does not depend on its hash order. Numbers are read with C's `strtod` and one
//! that does not read whole fails the command. Elements with equal scores
//! are ordered as strings; equal ALPHA keys keep the source's order (the
//! sort is stable, as glibc's qsort is). ALPHA compares strings as C's
//! `strcoll` does in the C locale (up to a NUL byte) when replying, and as
//! binary strings when storing.
//!
//! Like Redis's, it converts a compact sorted set to the tree encoding
//! before reading it, which OBJECT ENCODING shows afterwards.
//!
//! Locking: the keys BY and GET patterns make are known only once the
//! source is read, so a SORT that has such patterns holds every shard of
//! the database (reading, or writing with STORE) and sees one instant, as
//! Redis's single thread does; one without them locks only its source and
//! destination.

use std::borrow::Cow;
use std::cmp::Ordering;

use bytes::Bytes;
use keel_store::{End, Entry, Limits, List, Value, ValueRef};

use crate::cmd::context::collection::{limits, store_in};
use crate::cmd::context::{
    errors, is, keys, parse_i64, write_each, Ctx, Error, Events, Spec, BASE,
};

/// SORT.
pub const SORT: Spec = Spec {
    name: "sort",
    arity: -2,
    flags: &["write", "denyoom", "movablekeys"],
    keys: (1, 1, 1),
    getkeys: Some(sort_keys),
    acl: &["@write", "@set", "@sortedset", "@list", "@slow", "@dangerous"],
    summary: "Sort the elements in a list, set or sorted set",
    complexity: "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number of returned elements. When the elements are not sorted, complexity is O(N).",
    run: |ctx, args| sort(ctx, args, false),
    ..BASE
};

/// SORT_RO.
pub const SORT_RO: Spec = Spec {
    name: "sort_ro",
    flags: &["readonly", "movablekeys"],
    getkeys: Some(keys::positional),
    acl: &[
        "@read",
        "@set",
        "@sortedset",
        "@list",
        "@slow",
        "@dangerous",
    ],
    summary: "Sort the elements in a list, set or sorted set. Read-only variant of SORT.",
    since: "7.0.0",
    run: |ctx, args| sort(ctx, args, true),
    ..SORT
};

/// The list SORT ... STORE builds, reserved as it grows: GET patterns
/// multiply what it holds, so it may be far larger than anything stored.
#[derive(Default)]
struct Building {
    /// Bytes pushed, with a list's per-element cost.
    bytes: usize,
    /// Bytes reserved for them, in steps of at least [`BUILDING_STEP`].
    reserved: usize,
}

/// Reservation step while building: one room check per this many bytes.
const BUILDING_STEP: usize = 64 * 1024;

/// What a list element costs beside its bytes, as far as reserving goes.
const ELEMENT_OVERHEAD: usize = 16;

impl Building {
    fn push(
        &mut self,
        ctx: &mut Ctx,
        list: &mut List,
        element: &[u8],
        limits: &Limits,
    ) -> Result<(), Error> {
        self.bytes += element.len() + ELEMENT_OVERHEAD;
        if self.bytes > self.reserved {
            let step = (self.bytes - self.reserved).max(BUILDING_STEP);
            ctx.reserve_building(step)?;
            self.reserved += step;
        }
        list.push(End::Right, element, limits);
        Ok(())
    }
}

/// SORT's keys: its source, and the destination of STORE. (BY and GET
/// patterns name keys that only the source's contents tell; they are not
/// counted, as in Redis.)
fn sort_keys<'a>(spec: &Spec, args: &'a [Bytes]) -> Option<Vec<&'a Bytes>> {
    let mut keys: Vec<&Bytes> = spec.key_args(args).collect();
    keys.extend(sort_store_key(args));
    Some(keys)
}

/// SORT's STORE destination, found as Redis's sortGetKeys finds it: LIMIT
/// skips two arguments, GET and BY one, and the last STORE with an
/// argument after it wins (its argument is then looked at as an option).
fn sort_store_key(args: &[Bytes]) -> Option<&Bytes> {
    let mut store = None;
    let mut i = 2;
    while i < args.len() {
        if is(&args[i], "limit") {
            i += 2;
        } else if is(&args[i], "get") || is(&args[i], "by") {
            i += 1;
        } else if is(&args[i], "store") && i + 1 < args.len() {
            store = Some(&args[i + 1]);
        }
        i += 1;
    }
    store
}

const NOT_A_DOUBLE: &str = "ERR One or more scores can't be converted into double";

/// A string as C functions see it: up to its first NUL byte.
fn c_str(bytes: &[u8]) -> &[u8] {
    bytes
        .iter()
        .position(|&b| b == 0)
        .map_or(bytes, |nul| &bytes[..nul])
}

/// A BY or GET pattern, as Redis's lookupKeyByPattern reads it.
enum Pattern<'p> {
    /// `#`: the element itself.
    Element,
    /// No `*`: a fixed name, which Redis never looks up.
    Nothing,
    /// The key made of `prefix`, the element and `suffix`; with `field`,
    /// that field of the hash there (`key*->field`), otherwise the string.
    Key {
        prefix: &'p [u8],
        suffix: &'p [u8],
        field: Option<&'p [u8]>,
    },
}

/// Finds keys by name for a pattern.
type Lookup<'l, 'e> = &'l dyn Fn(&[u8]) -> Option<&'e Entry>;

impl<'p> Pattern<'p> {
    fn parse(pattern: &'p [u8]) -> Pattern<'p> {
        let c = c_str(pattern);
        if c == b"#" {
            return Pattern::Element;
        }
        let Some(star) = c.iter().position(|&b| b == b'*') else {
            return Pattern::Nothing;
        };
        let arrow = c[star + 1..]
            .windows(2)
            .position(|w| w == b"->")
            .map(|at| star + 1 + at)
            .filter(|&at| at + 2 < c.len());
        Pattern::Key {
            prefix: &pattern[..star],
            suffix: &pattern[star + 1..arrow.unwrap_or(pattern.len())],
            field: arrow.map(|at| &pattern[at + 2..]),
        }
    }

    fn reads_keys(&self) -> bool {
        matches!(self, Pattern::Key { .. })
    }

    /// What the pattern finds for `element`: a string, a hash field, or
    /// nothing (no such key, or one of another type).
    fn find<'e>(&self, element: &Cow<'e, [u8]>, lookup: Lookup<'_, 'e>) -> Option<Cow<'e, [u8]>> {
        let (prefix, suffix, field) = match self {
            Pattern::Element => return Some(element.clone()),
            Pattern::Nothing => return None,
            Pattern::Key {
                prefix,
                suffix,
                field,
            } => (prefix, suffix, field),
        };
        let key = [*prefix, element, suffix].concat();
        let value = lookup(&key)?.value();
        match field {
            Some(field) => value.as_hash()?.get(field).map(Cow::Borrowed),
            None => Some(value.as_str()?.to_bytes()),
        }
    }
}

/// The options after the key.
struct Options<'a> {
    desc: bool,
    alpha: bool,
    /// LIMIT offset and count; count -1 for all.
    limit: (i64, i64),
    store: Option<&'a Bytes>,
    /// The last BY pattern.
    by: Option<&'a [u8]>,
    /// A BY pattern without `*` was given: nothing is sorted.
    dont_sort: bool,
    gets: Vec<Pattern<'a>>,
    /// A script runs this SORT: its reply must not depend on a set's
    /// order, as for STORE.
    from_script: bool,
}

/// Parses the options as Redis does: each where it has its arguments, the
/// last of repeated ones winning, STORE only for SORT.
fn options(args: &[Bytes], readonly: bool) -> Result<Options<'_>, Error> {
    let mut o = Options {
        desc: false,
        alpha: false,
        limit: (0, -1),
        store: None,
        by: None,
        dont_sort: false,
        gets: Vec::new(),
        from_script: false,
    };
    let mut j = 2;
    while j < args.len() {
        let (option, left) = (&args[j], args.len() - j - 1);
        if is(option, "asc") {
            o.desc = false;
        } else if is(option, "desc") {
            o.desc = true;
        } else if is(option, "alpha") {
            o.alpha = true;
        } else if is(option, "limit") && left >= 2 {
            o.limit = (parse_i64(&args[j + 1])?, parse_i64(&args[j + 2])?);
            j += 2;
        } else if !readonly && is(option, "store") && left >= 1 {
            o.store = Some(&args[j + 1]);
            j += 1;
        } else if is(option, "by") && left >= 1 {
            o.by = Some(&args[j + 1]);
            o.dont_sort |= !c_str(&args[j + 1]).contains(&b'*');
            j += 1;
        } else if is(option, "get") && left >= 1 {
            o.gets.push(Pattern::parse(&args[j + 1]));
            j += 1;
        } else {
            return Err(errors::SYNTAX.into());
        }
        j += 1;
    }
    Ok(o)
}

/// Redis's LIMIT arithmetic: the inclusive window `start..=end` of `len`
/// elements (empty when `end < start`), clamped so nothing overflows.
fn window(len: i64, (offset, count): (i64, i64)) -> (i64, i64) {
    let start = offset.clamp(0, len);
    let count = count.clamp(-1, len);
    let mut end = if count < 0 {
        len - 1
    } else {
        start + count - 1
    };
    if start >= len {
        return (len - 1, len - 2);
    }
    if end >= len {
        end = len - 1;
    }
    (start, end)
}

/// One element to sort and what it sorts by.
struct Item<'e> {
    element: Cow<'e, [u8]>,
    score: f64,
    /// ALPHA with BY: what the pattern found.
    by: Option<Cow<'e, [u8]>>,
}

/// Reads a score as SORT does: C's `strtod` over the whole C string, not
/// NaN, in range.
fn score(bytes: &[u8]) -> Option<f64> {
    let text = c_str(bytes);
    let parsed = keel_store::strtod::strtod(text);
    (parsed.consumed == text.len() && !parsed.out_of_range && !parsed.value.is_nan())
        .then_some(parsed.value)
}

/// The elements SORT outputs, in order: the LIMIT window of the sorted (or
/// unsorted) elements of `value`.
fn select<'e>(
    value: Option<ValueRef<'e>>,
    o: &Options,
    lookup: Lookup<'_, 'e>,
) -> Result<Vec<Cow<'e, [u8]>>, Error> {
    let (mut dont_sort, mut alpha, mut by) = (o.dont_sort, o.alpha, o.by.map(Pattern::parse));
    let order_must_not_depend_on_the_set = o.store.is_some() || o.from_script;
    if dont_sort && order_must_not_depend_on_the_set && matches!(value, Some(ValueRef::Set(_))) {
        (dont_sort, alpha, by) = (false, true, None);
    }
    let len = match value {
        Some(ValueRef::List(l)) => l.len(),
        Some(ValueRef::Set(s)) => s.len(),
        Some(ValueRef::ZSet(z)) => z.len(),
        _ => 0,
    };
    // Every element is still read (and its score checked) when the window
    // is empty, as in Redis.
    let (start, end) = window(len as i64, o.limit);
    let (start, taken) = match end < start {
        true => (0, 0),
        false => (start as usize, (end - start + 1) as usize),
    };
    let elements: Vec<Cow<[u8]>> = match value {
        Some(ValueRef::List(l)) if dont_sort => {
            let ordered = if o.desc { l.iter_rev() } else { l.iter() };
            return Ok(ordered.skip(start).take(taken).map(Cow::Borrowed).collect());
        }
        Some(ValueRef::ZSet(z)) if dont_sort => {
            let members = |from, to| z.range(from, to).map(|(member, _)| member);
            return Ok(match o.desc {
                true => {
                    let mut members: Vec<_> = members(len - start - taken, len - start).collect();
                    members.reverse();
                    members
                }
                false => members(start, start + taken).collect(),
            });
        }
        Some(ValueRef::List(l)) => l.iter().map(Cow::Borrowed).collect(),
        Some(ValueRef::Set(s)) => s.iter().collect(),
        Some(ValueRef::ZSet(z)) => z.range(0, len).map(|(member, _)| member).collect(),
        _ => Vec::new(),
    };
    if dont_sort {
        return Ok(elements.into_iter().skip(start).take(taken).collect());
    }
    let mut items = Vec::with_capacity(elements.len());
    let mut convertible = true;
    for element in elements {
        let found = match &by {
            Some(pattern) => pattern.find(&element, lookup),
            None => Some(element.clone()),
        };
        let mut item = Item {
            element,
            score: 0.0,
            by: None,
        };
        match found {
            Some(found) if alpha && by.is_some() => item.by = Some(found),
            Some(found) if !alpha => match score(&found) {
                Some(score) => item.score = score,
                None => convertible = false,
            },
            _ => {}
        }
        items.push(item);
    }
    if !convertible {
        return Err(NOT_A_DOUBLE.into());
    }
    let as_text = |a: &[u8], b: &[u8]| match o.store {
        Some(_) => a.cmp(b),
        None => c_str(a).cmp(c_str(b)),
    };
    let compare = |a: &Item, b: &Item| {
        let order = match (alpha, by.is_some()) {
            (false, _) => a
                .score
                .partial_cmp(&b.score)
                .unwrap_or(Ordering::Equal)
                .then_with(|| a.element.cmp(&b.element)),
            (true, true) => match (&a.by, &b.by) {
                (Some(x), Some(y)) => as_text(x, y),
                (x, y) => x.is_some().cmp(&y.is_some()),
            },
            (true, false) => as_text(&a.element, &b.element),
        };
        if o.desc {
            order.reverse()
        } else {
            order
        }
    };
    items.sort_by(compare);
    Ok(items
        .into_iter()
        .skip(start)
        .take(taken)
        .map(|item| item.element)
        .collect())
}

/// The value to sort: a list, set or sorted set, or nothing.
fn sortable(entry: Option<&Entry>) -> Result<Option<ValueRef<'_>>, Error> {
    match entry.map(|e| e.value()) {
        None => Ok(None),
        Some(v @ (ValueRef::List(_) | ValueRef::Set(_) | ValueRef::ZSet(_))) => Ok(Some(v)),
        Some(_) => Err(errors::WRONGTYPE.into()),
    }
}

/// Converts a sorted set at `key` out of its compact encoding, as Redis's
/// SORT (and SORT_RO) does before reading it (OBJECT ENCODING then says
/// "skiplist"), having reserved what the tree adds. Not a modification:
/// watchers are not marked.
fn convert_sorted_set(ctx: &mut Ctx, key: &[u8]) -> Result<(), Error> {
    let db = ctx.db();
    let mut shard = db.write(key);
    let Some(mut entry) = shard.get_mut(key) else {
        return Ok(());
    };
    let converted = match entry.entry().value().as_zset() {
        Some(zset) if zset.encoding() == "listpack" => {
            let mut tree = zset.clone();
            tree.convert_to_tree();
            ctx.reserve(tree.heap_bytes().saturating_sub(zset.heap_bytes()))?;
            tree
        }
        _ => return Ok(()),
    };
    if let Some(zset) = entry.value_mut().as_zset_mut() {
        *zset = converted;
    }
    entry.unchanged();
    Ok(())
}

fn sort(ctx: &mut Ctx, args: &[Bytes], readonly: bool) -> Result<(), Error> {
    let mut o = options(args, readonly)?;
    o.from_script = ctx.run_by_script();
    let source = &args[1];
    convert_sorted_set(ctx, source)?;
    let reads_keys = (!o.dont_sort && o.by.is_some()) || o.gets.iter().any(Pattern::reads_keys);
    let (db, lookups) = (ctx.db(), ctx.lookups());
    let Some(destination) = o.store else {
        let shards = if reads_keys {
            db.read_all()
        } else {
            db.read(source)
        };
        let lookup = |key: &[u8]| {
            let entry = shards.get(key);
            lookups.count(key, entry.is_some());
            entry
        };
        let selected = select(sortable(lookup(source))?, &o, &lookup)?;
        let mut w = ctx.w();
        if o.gets.is_empty() {
            w.array(selected.len());
            write_each(&mut w, selected.iter(), |w, element| w.bulk(element));
            return Ok(());
        }
        w.array(selected.len() * o.gets.len());
        write_each(&mut w, selected.iter(), |w, element| {
            for get in &o.gets {
                match get.find(element, &lookup) {
                    Some(found) => w.bulk(&found),
                    None => w.null(),
                }
            }
        });
        return Ok(());
    };
    let limits = limits(ctx);
    let mut locked = if reads_keys {
        db.write_all()
    } else {
        db.write_many(&[source, destination])
    };
    let mut list = List::default();
    let mut building = Building::default();
    {
        let lookup = |key: &[u8]| locked.peek(key);
        let entry = lookup(source);
        lookups.count(source, entry.is_some());
        for element in select(sortable(entry)?, &o, &lookup)? {
            if o.gets.is_empty() {
                building.push(ctx, &mut list, &element, &limits)?;
            }
            for get in &o.gets {
                let found = get.find(&element, &lookup);
                building.push(ctx, &mut list, found.as_deref().unwrap_or(b""), &limits)?;
            }
        }
    }
    ctx.release_building(building.reserved);
    let stored = list.len();
    store_in(
        ctx,
        locked.shard(destination),
        destination,
        Value::List(list),
        (Events::LIST, "sortstore"),
    )?;
    ctx.w().integer(stored as i64);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_windows_as_redis() {
        assert_eq!(window(5, (0, -1)), (0, 4));
        assert_eq!(window(5, (2, i64::MAX)), (2, 4));
        assert_eq!(window(5, (-5, 2)), (0, 1));
        assert_eq!(window(5, (i64::MAX, i64::MAX)), (4, 3));
        assert_eq!(window(5, (1, -5)), (1, 4));
        assert_eq!(window(5, (0, 0)), (0, -1));
        assert_eq!(window(0, (0, -1)), (-1, -2));
    }

    #[test]
    fn patterns_read_as_redis() {
        let key = |p: &'static [u8]| match Pattern::parse(p) {
            Pattern::Key {
                prefix,
                suffix,
                field,
            } => (prefix, suffix, field),
            _ => panic!("not a key pattern"),
        };
        assert_eq!(key(b"w_*"), (&b"w_"[..], &b""[..], None));
        assert_eq!(key(b"h*x->f"), (&b"h"[..], &b"x"[..], Some(&b"f"[..])));
        assert_eq!(key(b"h*->"), (&b"h"[..], &b"->"[..], None));
        assert_eq!(key(b"a->b*c"), (&b"a->b"[..], &b"c"[..], None));
        assert!(matches!(Pattern::parse(b"#"), Pattern::Element));
        assert!(matches!(Pattern::parse(b"nosort"), Pattern::Nothing));
        assert!(matches!(Pattern::parse(b"x\0*"), Pattern::Nothing));
    }

    #[test]
    fn scores_read_whole_c_strings() {
        assert_eq!(score(b"1.5"), Some(1.5));
        assert_eq!(score(b""), Some(0.0));
        assert_eq!(score(b" 2"), Some(2.0));
        assert_eq!(score(b"3\0junk"), Some(3.0));
        assert_eq!(score(b"2 "), None);
        assert_eq!(score(b"nan"), None);
        assert_eq!(score(b"1e400"), None);
        assert_eq!(score(b"abc"), None);
    }
}
