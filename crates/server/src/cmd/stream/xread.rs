//! XREAD [COUNT count] [BLOCK ms] STREAMS key [key ...] id [id ...] and
//! XREADGROUP GROUP group consumer [COUNT count] [BLOCK ms] [NOACK]
//! STREAMS key [key ...] id [id ...] — the entries past an ID in each
//! stream (`$`: the last one now), or through a consumer group its new
//! entries (`>`) or the consumer's pending history (an ID). With BLOCK and
//! nothing to read, the client waits (see `crate::blocking`); inside a
//! transaction it does not, and inside a script BLOCK is an error.

use bytes::Bytes;
use keel_store::{MultiWrite, Stream, StreamId};

use crate::blocking::{StreamWait, Wait};
use crate::client::AfterReply;
use crate::cmd::context::collection::{update_tracked, Edit, Missing};
use crate::cmd::context::stream::{
    c_str, parse_count, parse_strict_id, read_after, read_group, write_stream_read, GroupRead, Read,
};
use crate::cmd::context::{errors, is, parse_i64, Ctx, Error, Spec, BASE};

/// Entries a blocked XREAD without COUNT is served at most, as Redis's
/// `XREAD_BLOCKED_DEFAULT_COUNT`.
const BLOCKED_DEFAULT_COUNT: usize = 1000;

/// XREAD.
pub const XREAD: Spec = Spec {
    name: "xread",
    arity: -4,
    flags: &["readonly", "blocking", "movablekeys"],
    keys: (0, 0, 0),
    acl: &["@read", "@stream", "@slow", "@blocking"],
    group: "stream",
    summary: "Return never seen elements in multiple streams, with IDs greater than the ones reported by the caller for each stream. Can block.",
    since: "5.0.0",
    complexity: "For each stream mentioned: O(N) with N being the number of elements being returned, it means that XREAD-ing with a fixed COUNT is O(1). Note that when the BLOCK option is used, XADD will pay O(M) time in order to serve the M clients blocked on the stream getting new data.",
    run: |ctx, args| xread(ctx, args, false),
    getkeys: Some(stream_keys::<1>),
    ..BASE
};

/// XREADGROUP.
pub const XREADGROUP: Spec = Spec {
    name: "xreadgroup",
    arity: -7,
    flags: &["write", "blocking", "movablekeys"],
    acl: &["@write", "@stream", "@slow", "@blocking"],
    summary: "Return new entries from a stream using a consumer group, or access the history of the pending entries for a given consumer. Can block.",
    complexity: "For each stream mentioned: O(M) with M being the number of elements returned. If M is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1). On the other side when XREADGROUP blocks, XADD will pay the O(N) time in order to serve the N clients blocked on the stream getting new data.",
    run: |ctx, args| xread(ctx, args, true),
    getkeys: Some(stream_keys::<4>),
    ..XREAD
};

/// The keys after STREAMS, as Redis's key specs find them: the first
/// STREAMS from argument `FROM` on (but the last argument), then the first
/// half of what follows it.
fn stream_keys<'a, const FROM: usize>(_: &Spec, args: &'a [Bytes]) -> Option<Vec<&'a Bytes>> {
    let at = (FROM..args.len().saturating_sub(1)).find(|&i| is(&args[i], "streams"))?;
    let first = at + 1;
    let count = (args.len() - first) / 2;
    (count > 0).then(|| args[first..first + count].iter().collect())
}

/// Where one stream is read from.
#[derive(Clone, Copy)]
enum ReadFrom {
    /// Past this ID (XREAD), or the consumer's history past it
    /// (XREADGROUP).
    After(StreamId),
    /// `$`: past the stream's last ID, once it is looked up.
    Last,
    /// `>`: the group's new entries.
    New,
}

struct Options<'a> {
    block: Option<Option<tokio::time::Instant>>,
    /// COUNT; 0 for no limit.
    count: usize,
    group: Option<GroupRead>,
    keys: &'a [Bytes],
    ids: &'a [Bytes],
}

impl Options<'_> {
    /// Most entries read from one stream now.
    fn limit(&self) -> usize {
        match self.count {
            0 => usize::MAX,
            n => n,
        }
    }
}

fn parse<'a>(ctx: &Ctx, args: &'a [Bytes], group_form: bool) -> Result<Options<'a>, Error> {
    let mut block = None;
    let mut count = 0;
    let mut group = None;
    let mut noack = false;
    let mut streams = None;
    let mut i = 1;
    while i < args.len() {
        let more = args.len() - i - 1;
        let opt = &args[i];
        if is(opt, "block") && more > 0 {
            if in_script(ctx) {
                return Err(format!(
                    "ERR {} command is not allowed with BLOCK option from scripts",
                    c_str(&args[0])
                )
                .into());
            }
            i += 1;
            block = Some(timeout(&args[i])?);
        } else if is(opt, "count") && more > 0 {
            i += 1;
            count = usize::try_from(parse_count(&args[i])?).unwrap_or(usize::MAX);
        } else if is(opt, "streams") && more > 0 {
            let rest = &args[i + 1..];
            if !rest.len().is_multiple_of(2) {
                return Err("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.".into());
            }
            streams = Some(rest.split_at(rest.len() / 2));
            break;
        } else if is(opt, "group") && more >= 2 {
            if !group_form {
                return Err("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.".into());
            }
            group = Some((args[i + 1].clone(), args[i + 2].clone()));
            i += 2;
        } else if is(opt, "noack") {
            if !group_form {
                return Err("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.".into());
            }
            noack = true;
        } else {
            return Err(errors::SYNTAX.into());
        }
        i += 1;
    }
    let (keys, ids) = streams.ok_or(errors::SYNTAX)?;
    if group_form && group.is_none() {
        return Err("ERR Missing GROUP option for XREADGROUP".into());
    }
    Ok(Options {
        block,
        count,
        group: group.map(|(group, consumer)| GroupRead {
            group,
            consumer,
            noack,
        }),
        keys,
        ids,
    })
}

/// True when the caller is a script, where BLOCK is refused.
fn in_script(ctx: &Ctx) -> bool {
    std::sync::Arc::ptr_eq(&ctx.client.handle, &ctx.server.scripting.client_handle)
}

/// Parses BLOCK's milliseconds into a deadline (`None`: forever), with
/// Redis's errors.
fn timeout(arg: &[u8]) -> Result<Option<tokio::time::Instant>, Error> {
    let ms = parse_i64(arg).map_err(|_| "ERR timeout is not an integer or out of range")?;
    if ms < 0 {
        return Err("ERR timeout is negative".into());
    }
    if ms > i64::MAX - crate::server::unix_ms() as i64 {
        return Err("ERR timeout is out of range".into());
    }
    let wait = std::time::Duration::from_millis(ms as u64);
    Ok((ms > 0)
        .then(|| tokio::time::Instant::now().checked_add(wait))
        .flatten())
}

fn xread(ctx: &mut Ctx, args: &[Bytes], group_form: bool) -> Result<(), Error> {
    let options = parse(ctx, args, group_form)?;
    let db = ctx.db();
    let mut locked = db.write_many(options.keys);
    let froms = resolve(&locked, &options, group_form)?;
    if let Some(read) = options.group.as_ref().filter(|read| !read.noack) {
        let delivered = new_entries(&locked, &options, read, &froms);
        ctx.reserve(delivered.saturating_mul(Stream::delivery_bytes(&read.consumer)))?;
    }
    let served = read_now(ctx, &mut locked, &options, &froms)?;
    if !served.is_empty() {
        let mut w = ctx.w();
        match w.protocol() {
            keel_resp::Protocol::Resp2 => w.array(served.len()),
            keel_resp::Protocol::Resp3 => w.map(served.len()),
        }
        for (key, entries) in &served {
            write_stream_read(&mut w, key, entries);
        }
        return Ok(());
    }
    let Some(deadline) = options.block.filter(|_| !ctx.client.tx.executing) else {
        ctx.w().null_array();
        return Ok(());
    };
    let after = options
        .keys
        .iter()
        .zip(&froms)
        .map(|(key, from)| {
            let after = match from {
                ReadFrom::After(id) => *id,
                ReadFrom::Last => last_id(&locked, key),
                ReadFrom::New => StreamId::MAX,
            };
            (key.clone(), after)
        })
        .collect();
    let wait = Wait::Stream(StreamWait {
        after,
        count: match options.count {
            0 => BLOCKED_DEFAULT_COUNT,
            n => n,
        },
        group: options.group,
    });
    ctx.client.handle.set_blocked(true);
    let blocking = &ctx.server.blocking;
    let blocked = blocking.register(ctx.client.db, options.keys.to_vec(), wait, deadline);
    drop(locked);
    ctx.client.after_reply = Some(AfterReply::Block(blocked));
    Ok(())
}

/// The stream at `key`, if it is one.
fn stream_at<'l>(locked: &'l MultiWrite, key: &[u8]) -> Option<&'l Stream> {
    locked.peek(key).and_then(|e| e.value().as_stream())
}

/// The last ID of the stream at `key` (0-0 when missing), what `$` means.
fn last_id(locked: &MultiWrite, key: &[u8]) -> StreamId {
    stream_at(locked, key).map_or(StreamId::MIN, Stream::last_id)
}

/// Checks every key (WRONGTYPE; NOGROUP for a group read) and parses
/// every ID, in Redis's order, before anything is read.
fn resolve(
    locked: &MultiWrite,
    options: &Options,
    group_form: bool,
) -> Result<Vec<ReadFrom>, Error> {
    let mut froms = Vec::with_capacity(options.keys.len());
    for (key, id) in options.keys.iter().zip(options.ids) {
        let stream = match locked.peek(key) {
            Some(e) => Some(e.value().as_stream().ok_or(errors::WRONGTYPE)?),
            None => None,
        };
        if let Some(read) = &options.group {
            if stream.and_then(|s| s.group(&read.group)).is_none() {
                return Err(format!(
                    "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option",
                    c_str(key),
                    c_str(&read.group)
                )
                .into());
            }
        }
        froms.push(match &id[..] {
            b"$" if group_form => return Err("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.".into()),
            b"$" => ReadFrom::Last,
            b">" if !group_form => return Err("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.".into()),
            b">" => ReadFrom::New,
            // Redis marks `>` with the largest ID, so that ID reads as `>`.
            _ => match parse_strict_id(id)? {
                StreamId::MAX if group_form => ReadFrom::New,
                id => ReadFrom::After(id),
            },
        });
    }
    Ok(froms)
}

/// How many new entries a group read delivers now: what it adds to the
/// PEL, reserved before any is read.
fn new_entries(
    locked: &MultiWrite,
    options: &Options,
    read: &GroupRead,
    froms: &[ReadFrom],
) -> usize {
    options
        .keys
        .iter()
        .zip(froms)
        .filter(|(_, from)| matches!(from, ReadFrom::New))
        .filter_map(|(key, _)| stream_at(locked, key))
        .filter_map(|s| s.group(&read.group).map(|g| (s, g.last_id)))
        .map(|(s, last)| {
            let start = last.next().unwrap_or(StreamId::MAX);
            s.range(start, StreamId::MAX).take(options.limit()).count()
        })
        .sum()
}

/// Reads every stream that has something for the caller now, as Redis
/// serves a reader synchronously: XREAD when the stream has entries past
/// the ID; XREADGROUP its history always, and `>` when the stream has
/// entries past the group's last delivered ID.
fn read_now(
    ctx: &Ctx,
    locked: &mut MultiWrite,
    options: &Options,
    froms: &[ReadFrom],
) -> Result<Vec<(Bytes, Read)>, Error> {
    let mut served = Vec::new();
    let now_ms = ctx.now_ms as i64;
    let events = ctx.notifier();
    for (key, from) in options.keys.iter().zip(froms) {
        let Some(stream) = stream_at(locked, key) else {
            continue;
        };
        let Some(read) = &options.group else {
            let after = match from {
                ReadFrom::After(id) => *id,
                _ => stream.last_id(),
            };
            if stream.top_id() > Some(after) {
                served.push((key.clone(), read_after(stream, after, options.limit())));
            }
            continue;
        };
        let history = match from {
            ReadFrom::After(id) => Some(*id),
            _ => None,
        };
        let has_new = stream.top_id() > stream.group(&read.group).map(|g| g.last_id);
        if history.is_none() && !has_new {
            continue;
        }
        let (entries, _) =
            update_tracked(locked.shard(key), key, Missing::Skip, |s: &mut Stream| {
                let entries = read_group(s, key, read, history, options.limit(), now_ms, events);
                Ok(Edit::changed(entries))
            })?;
        served.push((key.clone(), entries.unwrap_or_default()));
    }
    Ok(served)
}
