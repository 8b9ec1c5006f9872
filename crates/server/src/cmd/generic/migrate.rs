//! MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE]
//! [AUTH password] [AUTH2 username password] [KEYS key [key ...]] — moves
//! keys to another server (keel or Redis): each is DUMPed here, sent as a
//! RESTORE (with its remaining TTL) on a connection of its own, and
//! deleted here once the target said OK, unless COPY.
//!
//! It sends RESTORE after AUTH and SELECT, or RESTORE-ASKING in cluster
//! mode, as Redis does (a target importing the slot serves it). Redis keeps
//! a connection per target for 10 seconds and retries once on a stale
//! one; keel opens a new one each time (INFO's `migrate_cached_sockets`
//! stays 0), so it has nothing stale to retry.
//!
//! The exchange runs on the calling connection's worker thread with
//! blocking sockets, and `timeout` (milliseconds, 1000 if not positive)
//! bounds all of it: connecting, writing and reading each get only what
//! is left of one deadline, so the worker's other clients wait at most
//! that long (plus a host name lookup; Redis blocks every client for up
//! to `timeout` per step). Outside cluster mode no shard is locked while
//! the socket is in use: values are serialized under their shard's read
//! lock first, and sources deleted under the write lock after the replies,
//! unless a write changed them meanwhile. A cluster node moving a slot
//! needs Redis's atomicity instead (a key deleted here meanwhile would come
//! back from the target's copy once the slot has moved), so it holds the
//! keys' shard locks for the whole exchange: writes to those shards wait
//! for it, as every Redis client waits for Redis's MIGRATE.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use bytes::Bytes;
use keel_store::{Entry, MultiWrite};

use crate::cmd::context::serialized::dump_payload;
use crate::cmd::context::{errors, is, parse_i64, Ctx, Error, Events, Spec, BASE};

/// MIGRATE.
pub const SPEC: Spec = Spec {
    name: "migrate",
    arity: -6,
    flags: &["write", "movablekeys"],
    keys: (3, 3, 1),
    getkeys: Some(migrate_keys),
    acl: &["@keyspace", "@write", "@slow", "@dangerous"],
    summary: "Atomically transfer a key from a Redis instance to another one.",
    since: "2.6.0",
    complexity: "This command actually executes a DUMP+DEL in the source instance, and a RESTORE in the target \
                 instance. See the pages of these commands for time complexity. Also an O(N) data transfer \
                 between the two instances is performed.",
    run,
    ..BASE
};

/// The keys of MIGRATE, as Redis's `migrateGetKeys` finds them: `key`, or
/// what follows a KEYS option (when `key` is empty), AUTH's and AUTH2's
/// arguments skipped on the way.
fn migrate_keys<'a>(_: &Spec, args: &'a [Bytes]) -> Option<Vec<&'a Bytes>> {
    let mut j = 6;
    while j < args.len() {
        if is(&args[j], "keys") {
            return args[3].is_empty().then(|| args[j + 1..].iter().collect());
        }
        j += match &args[j] {
            a if is(a, "auth") => 2,
            a if is(a, "auth2") => 3,
            _ => 1,
        };
    }
    args.get(3).map(|key| vec![key])
}

/// MIGRATE's options and the keys it names.
struct Options<'a> {
    copy: bool,
    replace: bool,
    /// AUTH password or AUTH2 username password.
    auth: Vec<&'a [u8]>,
    keys: &'a [Bytes],
}

fn parse_options<'a>(ctx: &mut Ctx, args: &'a [Bytes]) -> Result<Options<'a>, Error> {
    let mut options = Options {
        copy: false,
        replace: false,
        auth: Vec::new(),
        keys: &args[3..4],
    };
    let mut j = 6;
    while j < args.len() {
        let more = args.len() - 1 - j;
        if is(&args[j], "copy") {
            options.copy = true;
        } else if is(&args[j], "replace") {
            options.replace = true;
        } else if is(&args[j], "auth") && more >= 1 {
            ctx.redact(j + 1);
            options.auth = vec![&args[j + 1][..]];
            j += 1;
        } else if is(&args[j], "auth2") && more >= 2 {
            ctx.redact(j + 1);
            ctx.redact(j + 2);
            options.auth = vec![&args[j + 1][..], &args[j + 2][..]];
            j += 2;
        } else if is(&args[j], "keys") {
            if !args[3].is_empty() {
                return Err("ERR When using MIGRATE KEYS option, the key argument must be set to the empty \
                            string"
                    .into());
            }
            options.keys = &args[j + 1..];
            break;
        } else {
            return Err(errors::SYNTAX.into());
        }
        j += 1;
    }
    Ok(options)
}

/// A key to send: its name, remaining TTL in ms (0 for none) and payload.
struct Outgoing<'a> {
    key: &'a Bytes,
    ttl_ms: i64,
    payload: Vec<u8>,
}

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let options = parse_options(ctx, args)?;
    let timeout = parse_i64(&args[5])?;
    let db_index = parse_i64(&args[4])?;
    let timeout_ms = if timeout <= 0 { 1000 } else { timeout };
    let cluster_mode = ctx.server.cluster.is_some();
    let db = ctx.db();
    let mut held = cluster_mode.then(|| db.write_many(options.keys));
    let outgoing = serialize(ctx, options.keys, held.as_ref());
    if outgoing.is_empty() {
        ctx.w().simple("NOKEY");
        return Ok(());
    }
    // At most about 24 days: the deadline must stay representable.
    let timeout = Duration::from_millis(timeout_ms.min(i32::MAX as i64) as u64);
    let deadline = Instant::now() + timeout;
    let port = std::str::from_utf8(&args[2])
        .ok()
        .and_then(|p| p.parse().ok());
    let host = String::from_utf8_lossy(&args[1]);
    let writing_error = || Error::from("IOERR error or timeout writing to target instance");
    // Redis connects without blocking and counts only a timeout (or a
    // name that does not resolve) as failing to connect: a refused
    // connection shows when it writes.
    let mut link = match Link::connect(&host, port.unwrap_or(0), deadline) {
        Ok(link) => link,
        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => return Err(writing_error()),
        Err(_) => return Err("IOERR error or timeout connecting to the client".into()),
    };
    let request = request(&options, db_index, &outgoing, cluster_mode);
    if link.send(&request).is_err() {
        return Err(writing_error());
    }
    let reading_error = || Error::from("IOERR error or timeout reading to target instance");
    // The AUTH and SELECT replies, then one per RESTORE.
    let mut setup_error = None;
    for _ in 0..usize::from(!options.auth.is_empty()) + 1 {
        let line = link.read_line().map_err(|_| reading_error())?;
        if line.first() == Some(&b'-') && setup_error.is_none() {
            setup_error = Some(line);
        }
    }
    // A key is restored if its RESTORE said OK and AUTH and SELECT did;
    // the first error is the one reported.
    let setup_failed = setup_error.is_some();
    let mut target_error = setup_error;
    let mut restored = Vec::new();
    let mut socket_error = false;
    for item in &outgoing {
        let Ok(line) = link.read_line() else {
            socket_error = true;
            break;
        };
        if setup_failed || line.first() == Some(&b'-') {
            target_error.get_or_insert(line);
        } else {
            restored.push(item);
        }
    }
    if !options.copy {
        let mut removed = Vec::new();
        for item in restored {
            let old = match held.as_mut() {
                // Nothing changed since it was sent: the locks were held.
                Some(locked) => locked.shard(item.key).remove(item.key),
                None => {
                    let mut shard = db.write(item.key);
                    // Without the locks held, a write in the meantime leaves
                    // a value that was never sent: it stays.
                    let sent = shard
                        .peek(item.key)
                        .is_some_and(|entry| dump_payload(ctx, entry.value()) == item.payload);
                    sent.then(|| shard.remove(item.key)).flatten()
                }
            };
            if let Some(old) = old {
                removed.push(old);
                ctx.notify(Events::GENERIC, "del", item.key);
            }
        }
        drop(held);
        removed.into_iter().for_each(crate::lazyfree::free);
    }
    match target_error {
        Some(line) => Err(format!(
            "ERR Target instance replied with error: {}",
            String::from_utf8_lossy(&line[1.min(line.len())..])
        )
        .into()),
        None if socket_error => Err(reading_error()),
        None => {
            ctx.w().ok();
            Ok(())
        }
    }
}

/// The keys that exist, serialized: under the shard locks `held`, or each
/// under its shard's read lock.
fn serialize<'a>(ctx: &Ctx, keys: &'a [Bytes], held: Option<&MultiWrite>) -> Vec<Outgoing<'a>> {
    let db = ctx.db();
    let mut outgoing = Vec::new();
    for key in keys {
        let mut add = |entry: Option<&Entry>| {
            ctx.count_lookup(key, entry.is_some());
            if let Some(entry) = entry {
                let ttl_ms = entry
                    .expire_at_ms()
                    .map_or(0, |at| (at as i64 - ctx.now_ms as i64).max(1));
                outgoing.push(Outgoing {
                    key,
                    ttl_ms,
                    payload: dump_payload(ctx, entry.value()),
                });
            }
        };
        match held {
            Some(locked) => add(locked.peek(key)),
            None => add(db.read(key).get(key)),
        }
    }
    outgoing
}

/// The commands sent to the target, as one buffer: AUTH if asked, SELECT,
/// and a RESTORE per key (RESTORE-ASKING from a cluster node, so that a
/// target importing the slot takes it).
fn request(options: &Options, db_index: i64, outgoing: &[Outgoing], cluster_mode: bool) -> Vec<u8> {
    let restore_command: &[u8] = if cluster_mode {
        b"RESTORE-ASKING"
    } else {
        b"RESTORE"
    };
    let mut out = Vec::new();
    if !options.auth.is_empty() {
        let mut auth: Vec<&[u8]> = vec![b"AUTH"];
        auth.extend(&options.auth);
        write_command(&mut out, &auth);
    }
    write_command(&mut out, &[b"SELECT", db_index.to_string().as_bytes()]);
    for item in outgoing {
        let ttl = item.ttl_ms.to_string();
        let mut restore: Vec<&[u8]> =
            vec![restore_command, item.key, ttl.as_bytes(), &item.payload];
        if options.replace {
            restore.push(b"REPLACE");
        }
        write_command(&mut out, &restore);
    }
    out
}

fn write_command(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
}

/// Writes go out in chunks of this size, each against the deadline.
const WRITE_CHUNK: usize = 64 * 1024;
/// A reply line longer than this is not one MIGRATE expects.
const MAX_LINE: usize = 64 * 1024;

/// A blocking connection to the target whose every step gets only what
/// is left of one deadline.
struct Link {
    stream: TcpStream,
    deadline: Instant,
    pending: Vec<u8>,
}

impl Link {
    fn connect(host: &str, port: u16, deadline: Instant) -> io::Result<Link> {
        let mut last = io::Error::from(io::ErrorKind::AddrNotAvailable);
        for addr in (host, port).to_socket_addrs()? {
            match TcpStream::connect_timeout(&addr, left(deadline)?) {
                Ok(stream) => {
                    stream.set_nodelay(true)?;
                    return Ok(Link {
                        stream,
                        deadline,
                        pending: Vec::new(),
                    });
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        for chunk in bytes.chunks(WRITE_CHUNK) {
            self.stream.set_write_timeout(Some(left(self.deadline)?))?;
            self.stream.write_all(chunk)?;
        }
        Ok(())
    }

    /// One reply line, without its CRLF.
    fn read_line(&mut self) -> io::Result<Vec<u8>> {
        loop {
            if let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
                let mut line: Vec<u8> = self.pending.drain(..=end).collect();
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                return Ok(line);
            }
            if self.pending.len() > MAX_LINE {
                return Err(io::ErrorKind::InvalidData.into());
            }
            self.stream.set_read_timeout(Some(left(self.deadline)?))?;
            let mut buf = [0u8; 4096];
            match self.stream.read(&mut buf)? {
                0 => return Err(io::ErrorKind::UnexpectedEof.into()),
                n => self.pending.extend_from_slice(&buf[..n]),
            }
        }
    }
}

/// Time left before `deadline`; an error once it has passed.
fn left(deadline: Instant) -> io::Result<Duration> {
    match deadline.saturating_duration_since(Instant::now()) {
        d if d.is_zero() => Err(io::ErrorKind::TimedOut.into()),
        d => Ok(d),
    }
}
