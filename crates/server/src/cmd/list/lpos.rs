//! LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len].

use bytes::Bytes;
use keel_store::List;

use crate::cmd::context::collection::read;
use crate::cmd::context::{errors, is, parse_i64, Ctx, Error, Spec, BASE};

/// LPOS.
pub const SPEC: Spec = Spec {
    name: "lpos",
    arity: -3,
    flags: &["readonly"],
    keys: (1, 1, 1),
    acl: &["@read", "@list", "@slow"],
    group: "list",
    summary: "Return the index of matching elements on a list",
    since: "6.0.6",
    complexity: "O(N) where N is the number of elements in the list, for the average case. When searching for elements near the head or the tail of the list, or when the MAXLEN option is provided, the command may run in constant time.",
    run,
    ..BASE
};

/// The options, as Redis checks them (all before the key is read).
struct Options {
    /// Which match to start from; negative searches from the tail.
    rank: i64,
    /// How many matches to return; `None` replies one index, not an array.
    count: Option<usize>,
    /// How many elements to compare at most (0: all).
    maxlen: usize,
}

fn options(args: &[Bytes]) -> Result<Options, Error> {
    let mut options = Options {
        rank: 1,
        count: None,
        maxlen: 0,
    };
    let mut j = 3;
    while j < args.len() {
        let value = args.get(j + 1).ok_or(errors::SYNTAX)?;
        let n = |error: &'static str| match parse_i64(value)? {
            n if n < 0 => Err(Error::from(error)),
            n => Ok(n as usize),
        };
        if is(&args[j], "rank") {
            options.rank = parse_i64(value)?;
            if options.rank == 0 {
                return Err("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list".into());
            }
        } else if is(&args[j], "count") {
            options.count = Some(n("ERR COUNT can't be negative")?);
        } else if is(&args[j], "maxlen") {
            options.maxlen = n("ERR MAXLEN can't be negative")?;
        } else {
            return Err(errors::SYNTAX.into());
        }
        j += 2;
    }
    Ok(options)
}

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let options = options(args)?;
    read(ctx, &args[1], |ctx, list: Option<&List>| {
        let found = list.map_or_else(Vec::new, |l| matches(l, &args[2], &options));
        let mut w = ctx.w();
        match options.count {
            Some(_) => {
                w.array(found.len());
                found.iter().for_each(|&i| w.integer(i as i64));
            }
            None => match found.first() {
                Some(&i) => w.integer(i as i64),
                None => w.null(),
            },
        }
        Ok(())
    })
}

/// Indexes (from the head) of the matches LPOS returns.
fn matches(list: &List, element: &[u8], options: &Options) -> Vec<usize> {
    let len = list.len();
    let compared = if options.maxlen == 0 {
        len
    } else {
        options.maxlen.min(len)
    };
    let wanted = match options.count {
        Some(0) => usize::MAX,
        Some(n) => n,
        None => 1,
    };
    let skip = (options.rank.unsigned_abs() - 1)
        .try_into()
        .unwrap_or(usize::MAX);
    let elements = if options.rank > 0 {
        list.iter()
    } else {
        list.iter_rev()
    };
    let to_index = |i: usize| if options.rank > 0 { i } else { len - 1 - i };
    elements
        .take(compared)
        .enumerate()
        .filter(|(_, e)| *e == element)
        .skip(skip)
        .take(wanted)
        .map(|(i, _)| to_index(i))
        .collect()
}
