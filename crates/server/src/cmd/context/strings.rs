//! What the string commands share: SET's option parser, which GETEX
//! shares as in Redis (so both accept and refuse exactly the same
//! combinations), SET's store step, which GETSET shares, and Redis's
//! `checkStringLength`.

use bytes::Bytes;

use super::{deadline_ms, errors, is, write_str, Ctx, Error, Events, Unit};

/// Which command's options are being parsed.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// SET: NX, XX, GET, KEEPTTL and the expiry options.
    Set,
    /// GETEX: PERSIST and the expiry options.
    GetEx,
}

/// What to do with the TTL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ttl {
    /// SET clears it; GETEX leaves it.
    Default,
    /// KEEPTTL.
    Keep,
    /// PERSIST.
    Persist,
    /// EX/PX/EXAT/PXAT: the argument, its unit and whether it is relative.
    Expire {
        /// Index of the argument holding the time.
        arg: usize,
        /// Its unit.
        unit: Unit,
        /// EX/PX (relative) or EXAT/PXAT (absolute).
        relative: bool,
    },
}

/// Parsed options of SET or GETEX.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// NX: only if absent.
    pub nx: bool,
    /// XX: only if present.
    pub xx: bool,
    /// GET: reply with the old value.
    pub get: bool,
    /// TTL handling.
    pub ttl: Ttl,
}

/// Parses options from `args[first..]` following Redis's
/// `parseExtendedStringArgumentsOrReply`: a repeated option is allowed,
/// conflicting ones are a syntax error.
pub fn parse_options(args: &[Bytes], first: usize, kind: Kind) -> Result<Options, Error> {
    let mut o = Options {
        nx: false,
        xx: false,
        get: false,
        ttl: Ttl::Default,
    };
    let mut j = first;
    while j < args.len() {
        let opt = &args[j][..];
        let has_next = j + 1 < args.len();
        let expire = |unit, relative| Ttl::Expire {
            arg: j + 1,
            unit,
            relative,
        };
        // The expiry option already given, if any, to allow repeating the
        // same one but not mixing two.
        let same_expire = |unit, relative| match o.ttl {
            Ttl::Default => true,
            Ttl::Expire {
                unit: u,
                relative: r,
                ..
            } => u == unit && r == relative,
            _ => false,
        };
        if kind == Kind::Set && is(opt, "nx") && !o.xx {
            o.nx = true;
        } else if kind == Kind::Set && is(opt, "xx") && !o.nx {
            o.xx = true;
        } else if kind == Kind::Set && is(opt, "get") {
            o.get = true;
        } else if kind == Kind::Set
            && is(opt, "keepttl")
            && matches!(o.ttl, Ttl::Default | Ttl::Keep)
        {
            o.ttl = Ttl::Keep;
        } else if kind == Kind::GetEx
            && is(opt, "persist")
            && matches!(o.ttl, Ttl::Default | Ttl::Persist)
        {
            o.ttl = Ttl::Persist;
        } else if let Some((unit, relative)) =
            expiry_option(opt).filter(|&(u, r)| has_next && same_expire(u, r))
        {
            o.ttl = expire(unit, relative);
            j += 1;
        } else {
            return Err(errors::SYNTAX.into());
        }
        j += 1;
    }
    Ok(o)
}

fn expiry_option(opt: &[u8]) -> Option<(Unit, bool)> {
    [
        ("ex", Unit::Seconds, true),
        ("px", Unit::Milliseconds, true),
        ("exat", Unit::Seconds, false),
        ("pxat", Unit::Milliseconds, false),
    ]
    .into_iter()
    .find(|(name, _, _)| is(opt, name))
    .map(|(_, unit, relative)| (unit, relative))
}

/// The deadline an expiry option asks for, validated as SET and GETEX do.
pub fn option_deadline(
    ctx: &Ctx,
    args: &[Bytes],
    ttl: Ttl,
    command: &str,
) -> Result<Option<u64>, Error> {
    match ttl {
        Ttl::Expire {
            arg,
            unit,
            relative,
        } => deadline_ms(&args[arg], unit, relative, false, ctx.now_ms, command)
            .map(|ms| Some(ms as u64)),
        _ => Ok(None),
    }
}

/// What [`apply`] did.
pub enum Applied {
    /// The value was stored.
    Set,
    /// NX/XX prevented it.
    Skipped,
}

/// Stores `value` at `key` as SET does, after writing the old value first
/// when `options.get` asks for it. One lock on the key's shard covers the
/// check, the GET and the write, so the command is atomic.
pub fn apply(
    ctx: &mut Ctx,
    key: &[u8],
    value: &[u8],
    options: Options,
    deadline: Option<u64>,
) -> Result<Applied, Error> {
    let db = ctx.db();
    let hashed = db.key(key);
    let mut shard = db.write(hashed);
    // A plain SET replaces whatever is there without looking at it first.
    let looks = options.get || options.nx || options.xx || matches!(options.ttl, Ttl::Keep);
    let existing = looks.then(|| shard.peek(hashed)).flatten();
    if options.get {
        match existing.map(|e| e.value().as_str()) {
            None => ctx.w().null(),
            Some(Some(s)) => write_str(&mut ctx.w(), s),
            Some(None) => return Err(errors::WRONGTYPE.into()),
        }
    }
    let found = existing.is_some();
    if (options.nx && found) || (options.xx && !found) {
        return Ok(Applied::Skipped);
    }
    let (expire, expire_set) = match options.ttl {
        Ttl::Keep => (existing.and_then(|e| e.expire_at_ms()), false),
        _ => (deadline, deadline.is_some()),
    };
    let replaced = shard.insert_str(hashed, value, expire);
    drop(shard);
    if let Some(old) = replaced {
        crate::lazyfree::free(old);
    }
    ctx.notify(Events::STRING, "set", key);
    if expire_set {
        ctx.notify(Events::GENERIC, "expire", key);
    }
    Ok(Applied::Set)
}

/// Refuses a string that would grow past `proto-max-bulk-len`, as Redis's
/// `checkStringLength` does.
pub fn check_length(size: u64, append: u64, max: u64) -> Result<(), Error> {
    match size.checked_add(append) {
        Some(total) if total <= max => Ok(()),
        _ => Err(errors::STRING_TOO_LONG.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &str) -> Vec<Bytes> {
        words
            .split(' ')
            .map(|w| Bytes::copy_from_slice(w.as_bytes()))
            .collect()
    }

    #[test]
    fn option_combinations_follow_redis() {
        let ok = |s: &str| parse_options(&args(s), 3, Kind::Set).is_ok();
        assert!(ok("set k v nx get ex 10"));
        assert!(ok("set k v ex 10 ex 20"));
        assert!(ok("set k v keepttl xx"));
        assert!(!ok("set k v nx xx"));
        assert!(!ok("set k v ex 10 px 10"));
        assert!(!ok("set k v ex 10 keepttl"));
        assert!(!ok("set k v ex"));
        assert!(!ok("set k v persist"));
        let getex = |s: &str| parse_options(&args(s), 2, Kind::GetEx).is_ok();
        assert!(getex("getex k persist"));
        assert!(!getex("getex k persist ex 1"));
        assert!(!getex("getex k nx"));
    }
}
