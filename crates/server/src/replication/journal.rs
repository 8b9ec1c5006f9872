//! What a primary records for its replicas, and when: each write that
//! changed the keyspace, in the form Redis 7 propagates it, at the moment
//! its shard locks are about to be released.
//!
//! Workers run writes to different shards in parallel, so there is no one
//! order of execution to copy. The order that matters is each key's: two
//! writes to one key must reach a replica in the order they ran. The store
//! calls [`Journal::wrote`] when a write guard that changed something is
//! released, with its locks still held (see `keel_store::Store::
//! set_write_hook`), so the record is made while no other write can reach
//! those keys: records of writes to one key are in the order the writes
//! ran, and a snapshot's instant, taken under every lock, falls between
//! two records (its offset is exact). A key that expires or is evicted is
//! recorded as `DEL` under its shard's lock the same way.
//!
//! Which command is recorded is told by a thread-local stack: dispatch
//! runs each write command through [`recorded`] (EXEC and scripts run one
//! per command they run), and a blocked client served later pushes the pop
//! it is served by ([`Recording::effect`]). A recording records once,
//! at the first guard it changed something under.
//!
//! Forms, as Redis 7 propagates:
//! - relative times become absolute: `SET ... EX` as `SET ... PXAT`,
//!   SETEX and PSETEX as `SET ... PXAT`, the EXPIRE family and GETEX as
//!   `PEXPIREAT` (or `DEL` when the time has passed, since the key is
//!   gone), RESTORE's TTL as an `ABSTTL`;
//! - commands whose effect is not a function of their arguments give
//!   their effect ([`propagate_as`]): SPOP as SREM, INCRBYFLOAT as `SET ...
//!   KEEPTTL`, HINCRBYFLOAT as HSET, blocking pops as the pop they did,
//!   XADD's `*` as the ID it chose;
//! - a transaction's and a script's writes are recorded together between
//!   MULTI and EXEC (a [`Block`]), so a replica applies them at once; a
//!   script is replicated by its effects, as Redis 7 always does.

use std::cell::RefCell;

use bytes::Bytes;

use super::backlog::Backlog;
use crate::cmd::context::Spec;

thread_local! {
    static RUNNING: RefCell<Vec<Running>> = const { RefCell::new(Vec::new()) };
    static BLOCK: RefCell<Option<OpenBlock>> = const { RefCell::new(None) };
}

/// A write being run on this thread, and what to record for it.
struct Running {
    db: usize,
    form: Form,
    recorded: bool,
}

enum Form {
    /// The command as sent, rewritten where Redis rewrites it. `args` are
    /// borrowed from [`recorded`]'s caller, not copied: a write pays for
    /// them only when it is recorded.
    Command {
        spec: &'static Spec,
        args: std::ptr::NonNull<[Bytes]>,
        now_ms: u64,
    },
    /// What the command did (see [`propagate_as`]).
    Effect(Vec<Bytes>),
}

/// Commands recorded by a transaction or a script so far, recorded
/// together when its outermost block closes.
struct OpenBlock {
    depth: usize,
    commands: Vec<(usize, Vec<Bytes>)>,
}

/// Runs `run`, a write command in database `db` at `now_ms`, as the
/// write this thread records.
pub fn recorded<R>(
    spec: &'static Spec,
    args: &[Bytes],
    db: usize,
    now_ms: u64,
    run: impl FnOnce() -> R,
) -> R {
    let _recording = Recording::push(Running {
        db,
        form: Form::Command {
            spec,
            args: std::ptr::NonNull::from(args),
            now_ms,
        },
        recorded: false,
    });
    run()
}

/// A write on this thread's stack until dropped.
pub struct Recording(());

impl Recording {
    /// A write whose effect is the command `words` in database `db` (a
    /// blocked client served a pop).
    pub fn effect(db: usize, words: Vec<Bytes>) -> Recording {
        Recording::push(Running {
            db,
            form: Form::Effect(words),
            recorded: false,
        })
    }

    fn push(running: Running) -> Recording {
        RUNNING.with_borrow_mut(|stack| stack.push(running));
        Recording(())
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        RUNNING.with_borrow_mut(|stack| stack.pop());
    }
}

/// Records the running write as the command `words` instead of itself:
/// what it did, where its arguments do not tell (a random pick, a float
/// computed, the key a blocking pop served). Call it before the write's
/// guard is released.
pub fn propagate_as(words: Vec<Bytes>) {
    RUNNING.with_borrow_mut(|stack| {
        if let Some(top) = stack.last_mut() {
            top.form = Form::Effect(words);
        }
    });
}

/// Where records go: the server's replication buffer.
pub struct Journal<'a> {
    pub backlog: &'a Backlog,
}

impl Journal<'_> {
    /// The store's write hook: records the running write, once, if the
    /// buffer records.
    pub fn wrote(&self) {
        if !self.backlog.active() {
            return;
        }
        let Some((db, command)) = RUNNING.with_borrow_mut(|stack| {
            let top = stack.last_mut().filter(|r| !r.recorded)?;
            top.recorded = true;
            let command = match &mut top.form {
                Form::Command { spec, args, now_ms } => {
                    // SAFETY: a `Command` is on the stack only while
                    // `recorded` runs, which borrows the arguments.
                    let args = unsafe { args.as_ref() };
                    rewritten(spec, args, *now_ms)
                }
                Form::Effect(words) => std::mem::take(words),
            };
            Some((top.db, command))
        }) else {
            return;
        };
        let outside_a_block = BLOCK.with_borrow_mut(|block| match block {
            Some(block) => {
                block.commands.push((db, command));
                None
            }
            None => Some(command),
        });
        if let Some(command) = outside_a_block {
            self.backlog.record([(Some(db), &command[..])]);
        }
    }

    /// A write outside the keyspace, which no shard orders and no database
    /// holds (PUBLISH, FUNCTION LOAD): recorded as it is.
    pub fn outside_the_keyspace(&self, args: &[Bytes]) {
        if self.backlog.active() {
            self.backlog.record([(None, args)]);
        }
    }

    /// A key that expired or was evicted: its deletion, recorded under its
    /// shard's lock.
    pub fn deleted(&self, db: usize, key: &[u8]) {
        if self.backlog.active() {
            let del = [Bytes::from_static(b"DEL"), Bytes::copy_from_slice(key)];
            self.backlog.record([(Some(db), &del[..])]);
        }
    }
}

/// A transaction's or a script's writes, recorded together when the
/// outermost block is closed: it must be closed while the shards are
/// still held.
pub struct Block<'a> {
    backlog: &'a Backlog,
}

impl<'a> Block<'a> {
    /// Opens a block on this thread (or nests in the one open: a script
    /// inside EXEC); what is recorded until it is dropped is held.
    pub fn open(backlog: &'a Backlog) -> Block<'a> {
        BLOCK.with_borrow_mut(|block| {
            block
                .get_or_insert_with(|| OpenBlock {
                    depth: 0,
                    commands: Vec::new(),
                })
                .depth += 1
        });
        Block { backlog }
    }
}

impl Drop for Block<'_> {
    fn drop(&mut self) {
        let Some(commands) = BLOCK.with_borrow_mut(|block| {
            let open = block.as_mut().expect("opened by Block::open");
            open.depth -= 1;
            (open.depth == 0).then(|| block.take().expect("just seen").commands)
        }) else {
            return;
        };
        match commands.len() {
            0 => {}
            1 => {
                let (db, args) = &commands[0];
                self.backlog.record([(Some(*db), &args[..])]);
            }
            _ => {
                let multi = [Bytes::from_static(b"MULTI")];
                let exec = [Bytes::from_static(b"EXEC")];
                let inner = commands.iter().map(|(db, args)| (Some(*db), &args[..]));
                let all = std::iter::once((None, &multi[..]))
                    .chain(inner)
                    .chain(std::iter::once((None, &exec[..])));
                self.backlog.record(all);
            }
        }
    }
}

/// The form Redis 7 propagates a command in: relative times made absolute.
fn rewritten(spec: &Spec, args: &[Bytes], now_ms: u64) -> Vec<Bytes> {
    let word = |w: &'static str| Bytes::from_static(w.as_bytes());
    let number = |n: i64| Bytes::from(n.to_string());
    let int = |arg: &Bytes| std::str::from_utf8(arg).ok()?.parse::<i64>().ok();
    let now = now_ms as i64;
    let deadline = |unit: &[u8], value: &Bytes| -> Option<i64> {
        let v = int(value)?;
        Some(match unit.to_ascii_uppercase().as_slice() {
            b"EX" => now + v * 1000,
            b"PX" => now + v,
            b"EXAT" => v * 1000,
            b"PXAT" => v,
            _ => return None,
        })
    };
    let expire_or_delete = |key: &Bytes, at: i64, rest: &[Bytes]| -> Vec<Bytes> {
        if at <= now {
            return vec![word("DEL"), key.clone()];
        }
        let mut out = vec![word("PEXPIREAT"), key.clone(), number(at)];
        out.extend_from_slice(rest);
        out
    };
    let set_pxat = |key: &Bytes, value: &Bytes, at: i64| {
        vec![
            word("SET"),
            key.clone(),
            value.clone(),
            word("PXAT"),
            number(at),
        ]
    };
    let verbatim = || args.to_vec();
    match spec.name {
        "set" => {
            let options = &args[3..];
            let timed =
                options
                    .windows(2)
                    .find_map(|w| match w[0].to_ascii_uppercase().as_slice() {
                        b"EX" | b"PX" | b"EXAT" => deadline(&w[0], &w[1]),
                        _ => None,
                    });
            match timed {
                Some(at) => set_pxat(&args[1], &args[2], at),
                None => verbatim(),
            }
        }
        "setex" | "psetex" => {
            let unit: &[u8] = if spec.name == "setex" { b"EX" } else { b"PX" };
            match deadline(unit, &args[2]) {
                Some(at) => set_pxat(&args[1], &args[3], at),
                None => verbatim(),
            }
        }
        "expire" | "pexpire" | "expireat" | "pexpireat" => {
            let unit: &[u8] = match spec.name {
                "expire" => b"EX",
                "pexpire" => b"PX",
                "expireat" => b"EXAT",
                _ => b"PXAT",
            };
            match deadline(unit, &args[2]) {
                Some(at) => expire_or_delete(&args[1], at, &args[3..]),
                None => verbatim(),
            }
        }
        "getex" => match args.get(2) {
            Some(option) if option.eq_ignore_ascii_case(b"PERSIST") => {
                vec![word("PERSIST"), args[1].clone()]
            }
            Some(unit) => match args.get(3).and_then(|v| deadline(unit, v)) {
                Some(at) => expire_or_delete(&args[1], at, &[]),
                None => verbatim(),
            },
            None => verbatim(),
        },
        "restore" => {
            let absolute = args[4..].iter().any(|a| a.eq_ignore_ascii_case(b"ABSTTL"));
            match int(&args[2]) {
                Some(ttl) if ttl > 0 && !absolute => {
                    let mut out = args.to_vec();
                    out[2] = number(now + ttl);
                    out.push(word("ABSTTL"));
                    out
                }
                _ => verbatim(),
            }
        }
        _ => verbatim(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(name: &str, words: &[&str], now_ms: u64) -> Vec<String> {
        let table = crate::cmd::registry::Table::new();
        let spec = table.specs()[table.id(name.as_bytes()).expect("known command")];
        let args: Vec<Bytes> = words.iter().map(|w| Bytes::from(w.to_string())).collect();
        rewritten(spec, &args, now_ms)
            .iter()
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect()
    }

    #[test]
    fn relative_times_are_propagated_absolute() {
        let now = 1_000_000;
        assert_eq!(
            form("set", &["set", "k", "v", "NX", "ex", "10"], now),
            ["SET", "k", "v", "PXAT", "1010000"]
        );
        assert_eq!(
            form("set", &["set", "k", "v", "XX"], now),
            ["set", "k", "v", "XX"]
        );
        assert_eq!(
            form("psetex", &["psetex", "k", "5", "v"], now),
            ["SET", "k", "v", "PXAT", "1000005"]
        );
        assert_eq!(
            form("expire", &["expire", "k", "3", "GT"], now),
            ["PEXPIREAT", "k", "1003000", "GT"]
        );
        assert_eq!(
            form("pexpireat", &["pexpireat", "k", "5"], now),
            ["DEL", "k"]
        );
        assert_eq!(
            form("getex", &["getex", "k", "persist"], now),
            ["PERSIST", "k"]
        );
        assert_eq!(
            form("getex", &["getex", "k", "PX", "7"], now),
            ["PEXPIREAT", "k", "1000007"]
        );
        assert_eq!(
            form(
                "restore",
                &["restore", "k", "100", "payload", "REPLACE"],
                now
            ),
            ["restore", "k", "1000100", "payload", "REPLACE", "ABSTTL"]
        );
        assert_eq!(form("incr", &["incr", "k"], now), ["incr", "k"]);
    }

    #[test]
    fn a_block_records_its_commands_between_multi_and_exec() {
        let backlog = Backlog::default();
        backlog.start(0, false);
        let journal = Journal { backlog: &backlog };
        let table = crate::cmd::registry::Table::new();
        let incr = table.specs()[table.id(b"incr").unwrap()];
        let args = [Bytes::from_static(b"incr"), Bytes::from_static(b"k")];
        {
            let _outer = Block::open(&backlog);
            let _inner = Block::open(&backlog);
            for _ in 0..2 {
                recorded(incr, &args, 0, 0, || {
                    journal.wrote();
                    journal.wrote();
                });
            }
        }
        let mut out = Vec::new();
        backlog.copy_from(0, 1 << 20, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.matches("incr").count(), 2, "{text}");
        assert!(text.starts_with("*1\r\n$5\r\nMULTI"), "{text}");
        assert!(text.ends_with("*1\r\n$4\r\nEXEC\r\n"), "{text}");
    }
}
