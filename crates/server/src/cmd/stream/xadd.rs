//! XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]]
//! *|id field value [field value ...] — appends an entry, with an ID given
//! whole, as `ms-*` (the sequence chosen) or `*` (both chosen from the
//! clock), and trims the stream afterwards if asked.

use keel_store::types::stream::NODE_MAX_SIZE;
use keel_store::{Stream, StreamId};

use crate::cmd::context::collection::{limits, notify, update_tracked, Edit, Missing};
use crate::cmd::context::stream::{parse_add_or_trim, ParsedId, CLASS};
use crate::cmd::context::{journal, wrong_arity, Ctx, Error, Spec, BASE};

/// XADD.
pub const SPEC: Spec = Spec {
    name: "xadd",
    arity: -5,
    flags: &["write", "denyoom", "fast"],
    keys: (1, 1, 1),
    acl: &["@write", "@stream", "@fast"],
    group: "stream",
    summary: "Appends a new entry to a stream",
    since: "5.0.0",
    complexity: "O(1) when adding a new entry, O(N) when trimming where N being the number of entries evicted.",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[bytes::Bytes]) -> Result<(), Error> {
    let limits = limits(ctx);
    let options = parse_add_or_trim(args, true, limits.stream_node_max_entries)?;
    let fields = &args[(options.id_at + 1).min(args.len())..];
    if fields.len() < 2 || fields.len() % 2 == 1 {
        return Err(wrong_arity("xadd"));
    }
    if options
        .id
        .is_some_and(|given| given.seq_given && given.id.is_zero())
    {
        return Err("ERR The ID specified in XADD must be greater than 0-0".into());
    }
    let fields: Vec<&[u8]> = fields.iter().map(|f| &f[..]).collect();
    let too_large = fields.iter().map(|f| f.len()).sum::<usize>() > NODE_MAX_SIZE;
    let missing = match options.no_mkstream {
        true => Missing::Skip,
        false => Missing::Create,
    };
    let now_ms = ctx.now_ms;
    let key = &args[1];
    let (added, outcome) = {
        let db = ctx.db();
        let mut shard = db.write(key);
        update_tracked(&mut shard, key, missing, |stream: &mut Stream| {
            let id = new_id(stream, options.id, now_ms)?;
            if too_large {
                return Err("ERR Elements are too large to be stored".into());
            }
            stream.append(id, &fields, limits.stream_nodes());
            // Replicas append the same ID, whatever their clock says.
            let mut recorded = args.to_vec();
            recorded[options.id_at] = id.to_string().into();
            journal::propagate_as(recorded);
            let trimmed = options.trim.map_or(0, |trim| stream.trim(trim));
            Ok(Edit::changed((id, trimmed)))
        })?
    };
    let Some((id, trimmed)) = added else {
        ctx.w().null();
        return Ok(());
    };
    ctx.w().bulk(id.to_string().as_bytes());
    notify::<Stream>(ctx.notifier(), "xadd", key, outcome);
    if trimmed > 0 {
        ctx.notify(CLASS, "xtrim", key);
    }
    Ok(())
}

/// The ID of the entry XADD appends: the one given, the next sequence of
/// the given milliseconds, or the next from the clock; it must be past
/// the stream's last ID.
fn new_id(stream: &Stream, given: Option<ParsedId>, now_ms: u64) -> Result<StreamId, Error> {
    const NOT_GREATER: &str =
        "ERR The ID specified in XADD is equal or smaller than the target stream top item";
    let last = stream.last_id();
    if last == StreamId::MAX {
        return Err(
            "ERR The stream has exhausted the last possible ID, unable to add more items".into(),
        );
    }
    let id = match given {
        None => stream.next_auto_id(now_ms).ok_or(NOT_GREATER)?,
        Some(given) if given.seq_given || given.id.ms != last.ms => given.id,
        Some(_) => last
            .next()
            .filter(|next| next.ms == last.ms)
            .ok_or(NOT_GREATER)?,
    };
    if id <= last {
        return Err(NOT_GREATER.into());
    }
    Ok(id)
}
