//! LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN] — the longest
//! common subsequence of two strings (`keel_store::lcs`): the subsequence
//! itself, its length, or (IDX) the matching ranges, last first, and the
//! length.
//!
//! The walk back needs the whole O(N*M) table, 4 bytes a cell. As in Redis,
//! a table larger than `proto-max-bulk-len` is refused; keel also charges
//! it to the client budget (`maxmemory-clients`) while it exists and
//! refuses it, with Redis's allocation-failure error, when the budget
//! cannot hold it, so two long strings cannot take memory past keel's
//! bound. LEN alone needs no walk back and is computed in two rows.

use bytes::Bytes;
use keel_store::lcs::{self, Table};

use crate::cmd::context::{errors, is, parse_i64, Ctx, Error, Spec, BASE};

/// LCS.
pub const SPEC: Spec = Spec {
    name: "lcs",
    arity: -3,
    flags: &["readonly"],
    keys: (1, 2, 1),
    acl: &["@read", "@string", "@slow"],
    group: "string",
    summary: "Find longest common substring",
    since: "7.0.0",
    complexity: "O(N*M) where N and M are the lengths of s1 and s2, respectively",
    run,
    ..BASE
};

/// What LCS replies with.
#[derive(PartialEq, Eq)]
enum Reply {
    Subsequence,
    Length,
    Ranges {
        min_match_len: usize,
        with_match_len: bool,
    },
}

/// Parses the options after the keys, as Redis does: a later option
/// overrides an earlier one, a negative MINMATCHLEN is 0, and LEN with IDX
/// is refused.
fn reply_asked(options: &[Bytes]) -> Result<Reply, Error> {
    let (mut len, mut idx, mut with_match_len, mut min_match_len) = (false, false, false, 0);
    let mut rest = options.iter();
    while let Some(option) = rest.next() {
        if is(option, "idx") {
            idx = true;
        } else if is(option, "len") {
            len = true;
        } else if is(option, "withmatchlen") {
            with_match_len = true;
        } else if is(option, "minmatchlen") && !rest.as_slice().is_empty() {
            let n = parse_i64(rest.next().expect("checked above"))?;
            min_match_len = usize::try_from(n).unwrap_or(0);
        } else {
            return Err(errors::SYNTAX.into());
        }
    }
    match (len, idx) {
        (true, true) => {
            Err("ERR If you want both the length and indexes, please just use IDX.".into())
        }
        (true, false) => Ok(Reply::Length),
        (false, true) => Ok(Reply::Ranges {
            min_match_len,
            with_match_len,
        }),
        (false, false) => Ok(Reply::Subsequence),
    }
}

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let (a, b) = {
        let db = ctx.db();
        let shards = db.read_many(&args[1..3]);
        let string = |key: &[u8]| {
            let entry = shards.get(key);
            ctx.count_lookup(key, entry.is_some());
            match entry.map(|e| e.value().as_str()) {
                None => Ok(Vec::new()),
                Some(Some(s)) => Ok(s.to_bytes().into_owned()),
                Some(None) => Err(Error::from(
                    "ERR The specified keys must contain string values",
                )),
            }
        };
        (string(&args[1])?, string(&args[2])?)
    };
    let reply = reply_asked(&args[3..])?;
    let table_bytes = lcs::table_bytes(a.len(), b.len()).unwrap_or(u64::MAX);
    if table_bytes > ctx.server.config.read().proto_max_bulk_len {
        return Err(
            "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len".into(),
        );
    }
    if reply == Reply::Length {
        ctx.w().integer(lcs::length(&a, &b) as i64);
        return Ok(());
    }
    let refused =
        || Error::from("ERR Insufficient memory, failed allocating transient memory for LCS");
    let table_bytes = usize::try_from(table_bytes).map_err(|_| refused())?;
    let budget = &ctx.server.client_budget;
    if !budget.try_charge(table_bytes) {
        return Err(refused());
    }
    let walked = Table::build(&a, &b).map(|table| (table.len(), table.walk_back()));
    budget.recharge(table_bytes, 0);
    let (len, (subsequence, ranges)) = walked.map_err(|_| refused())?;
    let mut w = ctx.w();
    let Reply::Ranges {
        min_match_len,
        with_match_len,
    } = reply
    else {
        w.bulk(&subsequence);
        return Ok(());
    };
    let shown: Vec<_> = ranges.iter().filter(|m| m.len() >= min_match_len).collect();
    w.map(2);
    w.bulk(b"matches");
    w.array(shown.len());
    for range in shown {
        w.array(2 + with_match_len as usize);
        for (start, end) in [range.a, range.b] {
            w.array(2);
            w.integer(start as i64);
            w.integer(end as i64);
        }
        if with_match_len {
            w.integer(range.len() as i64);
        }
    }
    w.bulk(b"len");
    w.integer(len as i64);
    Ok(())
}
