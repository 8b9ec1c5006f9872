//! Clients blocked on lists (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP),
//! sorted sets (BZPOPMIN, BZPOPMAX, BZMPOP) and streams (XREAD and
//! XREADGROUP with BLOCK), and how they are served.
//!
//! A blocking command first tries to pop at once. When every key is
//! missing it registers a [`Waiter`] in the queue of each key, in arrival
//! order, *while it still holds those keys' shard locks*: a push that
//! creates the key needs the same lock, so it either came before (and the
//! pop succeeded) or comes after and finds the waiter queued. The
//! connection then waits on a oneshot channel, its deadline, its kill
//! signal and its socket (to notice a disconnect).
//!
//! Waiters are served by the client that made a key appear, as Redis's
//! `handleClientsBlockedOnKeys` does: after each top-level command (after
//! the whole of an EXEC), every key a write command named that has
//! waiters is "ready", and [`Blocking::serve`] hands elements to its
//! waiters front first, as long as the key has some. Only waiters for the
//! key's type are served (a BLPOP waiter does not hold up a BZPOPMIN one
//! behind it when the key is a sorted set), as in Redis. The element is
//! popped by the server on the waiter's behalf, under the key's shard lock
//! and the queue lock, and sent through the channel. So waiters get
//! elements strictly in arrival order, a waiter is never woken to find the
//! list emptied by someone else (it is only served when an element is
//! there for it), and an element is never popped for a waiter that has
//! left: leaving (timeout, kill, disconnect) removes the waiter under the
//! same queue lock, and a waiter that finds itself already removed reads
//! the element it was sent. A stream reader takes nothing away, so every
//! reader of a key with entries past its ID is served in turn; a group
//! reader whose key is gone (or no longer a stream) or whose group was
//! destroyed is served an error, as in Redis. An element BLMOVE pushes to its destination
//! makes that key ready in turn. A key MOVE brings into a database is ready
//! there, and after SWAPDB every waited key of both databases is (see
//! [`Blocking::waited_keys`]).
//!
//! Lock order: shard locks, then the queue lock — the same when a waiter
//! registers and when one is served. The queue lock is never held while
//! waiting for anything else.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use keel_resp::Writer;
use keel_store::{End, Limits, MultiWrite, Stream, StreamId, ValueRef};
use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::cmd::context::collection::{update_tracked, Edit, Missing};
use crate::cmd::context::pop::{list_pop_many, zset_pop_many, Members, Pop};
use crate::cmd::context::stream::{read_after, read_group, write_stream_read, GroupRead, Read};
use crate::cmd::Error;
use crate::pubsub::Notifier;
use crate::replication::journal::Recording;
use crate::server::{unix_ms, Server};

/// What a blocked client waits to do.
#[derive(Debug)]
pub enum Wait {
    /// Pop from a list, and maybe push (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH).
    List(Pop),
    /// Pop up to `count` elements from one end of a list (BLMPOP, and
    /// LMPOP at once).
    ListMany {
        /// The end popped from.
        from: End,
        /// How many elements at most.
        count: usize,
    },
    /// Pop a sorted set's lowest scores, or its highest when `max`: one
    /// member replied with its key (BZPOPMIN, BZPOPMAX), or with `count`
    /// up to that many replied as pairs (BZMPOP, and ZMPOP at once).
    ZSet {
        /// Pop the highest score.
        max: bool,
        /// The *MPOP form's count.
        count: Option<usize>,
    },
    /// Read a stream's new entries (XREAD, XREADGROUP with `>`).
    Stream(StreamWait),
}

/// What a blocked stream reader waits for.
#[derive(Debug)]
pub struct StreamWait {
    /// Each key and the ID its entries must be past (XREAD; a group
    /// reader reads past its group's last delivered ID instead).
    pub after: Vec<(Bytes, StreamId)>,
    /// Most entries to read.
    pub count: usize,
    /// The group read, for XREADGROUP.
    pub group: Option<GroupRead>,
}

impl StreamWait {
    /// True if the stream at `key`, holding `value` (`None`: missing),
    /// has something for this reader, or an error to give it.
    fn served_by(&self, key: &[u8], value: Option<ValueRef>) -> bool {
        let stream = value.and_then(ValueRef::as_stream);
        match (&self.group, stream) {
            (Some(_), None) => true,
            (Some(read), Some(stream)) => stream
                .group(&read.group)
                .is_none_or(|g| stream.top_id() > Some(g.last_id)),
            (None, Some(stream)) => self
                .after
                .iter()
                .find(|(k, _)| &k[..] == key)
                .is_some_and(|(_, after)| stream.top_id() > Some(*after)),
            (None, None) => false,
        }
    }

    /// Reads the stream at `key` for this reader, in a locked shard.
    fn apply(&self, locked: &mut MultiWrite, key: &[u8], events: Notifier) -> Result<Read, Error> {
        let shard = locked.shard(key);
        let Some(read) = &self.group else {
            let after = self.after.iter().find(|(k, _)| &k[..] == key);
            let (Some(entry), Some((_, after))) = (shard.peek(key), after) else {
                return Ok(Vec::new());
            };
            let stream = entry
                .value()
                .as_stream()
                .ok_or(crate::cmd::context::errors::WRONGTYPE)?;
            return Ok(read_after(stream, *after, self.count));
        };
        let gone = || Error::from("UNBLOCKED the stream key no longer exists");
        if shard
            .peek(key)
            .is_none_or(|e| e.value().as_stream().is_none())
        {
            return Err(gone());
        }
        let now_ms = unix_ms() as i64;
        let (entries, _) = update_tracked(shard, key, Missing::Skip, |s: &mut Stream| {
            if s.group(&read.group).is_none() {
                return Err(
                    "NOGROUP the consumer group this client was blocked on no longer exists".into(),
                );
            }
            let entries = read_group(s, key, read, None, self.count, now_ms, events);
            Ok(Edit::changed(entries))
        })?;
        entries.ok_or_else(gone)
    }
}

/// What one pop took.
#[derive(Debug)]
pub enum Popped {
    /// A list element.
    Element(Vec<u8>),
    /// List elements, in the order popped.
    Elements(Vec<Vec<u8>>),
    /// Sorted-set members and their scores, in the order popped.
    Members(Members),
    /// Stream entries read.
    Entries(Read),
}

impl Wait {
    /// Every key a pop from `source` touches, for locking.
    pub fn keys(&self, source: &Bytes) -> Vec<Bytes> {
        match self {
            Wait::List(pop) => pop.keys(source),
            Wait::ListMany { .. } | Wait::ZSet { .. } | Wait::Stream(_) => vec![source.clone()],
        }
    }

    /// The non-blocking command that does what serving this wait from
    /// `source` does, as Redis propagates a served blocking pop: LPOP or
    /// RPOP (with a count for BLMPOP), LMOVE, ZPOPMIN or ZPOPMAX. `None` for
    /// a stream read, which is not recorded in that form.
    pub fn propagated(&self, source: &Bytes) -> Option<Vec<Bytes>> {
        let word = |w: &'static str| Bytes::from_static(w.as_bytes());
        let end = |end: End| match end {
            End::Left => word("LEFT"),
            End::Right => word("RIGHT"),
        };
        let pop = |from: End| match from {
            End::Left => word("LPOP"),
            End::Right => word("RPOP"),
        };
        Some(match self {
            Wait::List(Pop { from, to: None }) => vec![pop(*from), source.clone()],
            Wait::List(Pop {
                from,
                to: Some((dest, to)),
            }) => vec![
                word("LMOVE"),
                source.clone(),
                dest.clone(),
                end(*from),
                end(*to),
            ],
            Wait::ListMany { from, count } => {
                vec![pop(*from), source.clone(), count.to_string().into()]
            }
            Wait::ZSet { max, count } => {
                let name = if *max {
                    word("ZPOPMAX")
                } else {
                    word("ZPOPMIN")
                };
                let mut words = vec![name, source.clone()];
                words.extend(count.map(|n| Bytes::from(n.to_string())));
                words
            }
            Wait::Stream(_) => return None,
        })
    }

    /// True if the key `key`, holding `value` (`None`: missing), can serve
    /// this wait.
    fn served_by(&self, key: &[u8], value: Option<ValueRef>) -> bool {
        match self {
            Wait::List(_) | Wait::ListMany { .. } => value.is_some_and(|v| v.as_list().is_some()),
            Wait::ZSet { .. } => value.is_some_and(|v| v.as_zset().is_some()),
            Wait::Stream(wait) => wait.served_by(key, value),
        }
    }

    /// Pops from `source` with every key of [`Wait::keys`] locked in
    /// `locked`; `None` when the source is missing.
    pub fn apply(
        &self,
        locked: &mut MultiWrite,
        source: &[u8],
        limits: &Limits,
        events: Notifier,
    ) -> Result<Option<Popped>, Error> {
        Ok(match self {
            Wait::List(pop) => pop
                .apply(locked, source, limits, events)?
                .map(Popped::Element),
            Wait::ListMany { from, count } => {
                let shard = locked.shard(source);
                list_pop_many(shard, source, *from, *count, limits, events)?.map(Popped::Elements)
            }
            Wait::ZSet { max, count } => {
                let shard = locked.shard(source);
                zset_pop_many(shard, source, count.unwrap_or(1), *max, events)?.map(Popped::Members)
            }
            Wait::Stream(wait) => Some(Popped::Entries(wait.apply(locked, source, events)?)),
        })
    }

    /// Where a served pop pushes its element, which makes that key ready.
    fn destination(&self) -> Option<&Bytes> {
        match self {
            Wait::List(pop) => pop.to.as_ref().map(|(dest, _)| dest),
            Wait::ListMany { .. } | Wait::ZSet { .. } | Wait::Stream(_) => None,
        }
    }

    /// Writes the "nothing popped" reply of the command's non-blocking
    /// form, for a blocking command inside a transaction: LMOVE's null
    /// bulk for BLMOVE, a null array otherwise.
    pub fn write_nothing(&self, w: &mut Writer) {
        match self.destination() {
            Some(_) => w.null(),
            None => w.null_array(),
        }
    }
}

/// Queued waiters of one key of one database, first come first served.
type Queues = HashMap<(usize, Bytes), VecDeque<Arc<Waiter>>>;

/// Every blocked client, by the keys it waits on.
#[derive(Default)]
pub struct Blocking {
    queues: Mutex<Queues>,
    /// Blocked clients (INFO's `blocked_clients`); lets the command path
    /// skip the queue lock entirely while nobody is blocked.
    blocked: AtomicUsize,
}

/// One blocked client.
pub struct Waiter {
    db: usize,
    keys: Vec<Bytes>,
    wait: Wait,
    sender: Mutex<Option<oneshot::Sender<Outcome>>>,
}

/// What a waiter receives.
pub enum Outcome {
    /// An element, and the key it came from.
    Popped {
        /// The source key.
        key: Bytes,
        /// What was popped.
        popped: Popped,
    },
    /// The move could not complete (BLMOVE to a key of another type).
    Failed(Error),
}

/// A connection's side of a registered waiter.
pub struct Blocked {
    waiter: Arc<Waiter>,
    receiver: oneshot::Receiver<Outcome>,
    /// When to give up; `None` waits forever.
    pub deadline: Option<tokio::time::Instant>,
    /// The blocking command's run, for its latency and slow log entry once
    /// it is served.
    pub execution: Option<crate::cmd::Execution>,
}

impl Blocked {
    /// Resolves when the waiter is served.
    pub async fn served(&mut self) -> Outcome {
        match (&mut self.receiver).await {
            Ok(outcome) => outcome,
            // The sender is only dropped after sending.
            Err(_) => std::future::pending().await,
        }
    }

    /// Writes the reply to the blocked command (see [`write_outcome`]).
    pub fn write_reply(&self, w: &mut Writer, outcome: Option<Outcome>) {
        write_outcome(w, &self.waiter.wait, outcome);
    }
}

/// Writes the reply of a pop: the key and element (BLPOP, BRPOP), the
/// element (BLMOVE, BRPOPLPUSH), the key, member and score (BZPOPMIN,
/// BZPOPMAX), the key and the elements or [member, score] pairs (the *MPOP
/// commands), an error, or — for `None`, a timeout — a null array, which
/// Redis 7.0 answers for BLMOVE too.
pub fn write_outcome(w: &mut Writer, wait: &Wait, outcome: Option<Outcome>) {
    let (key, popped) = match outcome {
        Some(Outcome::Popped { key, popped }) => (key, popped),
        Some(Outcome::Failed(Error(message))) => return w.error(&message),
        None => return w.null_array(),
    };
    match (wait, popped) {
        (Wait::List(pop), Popped::Element(element)) if pop.to.is_some() => w.bulk(&element),
        (_, Popped::Element(element)) => {
            w.array(2);
            w.bulk(&key);
            w.bulk(&element);
        }
        (_, Popped::Elements(elements)) => {
            w.array(2);
            w.bulk(&key);
            w.array(elements.len());
            elements.iter().for_each(|e| w.bulk(e));
        }
        (Wait::ZSet { count: None, .. }, Popped::Members(members)) => {
            w.array(3);
            w.bulk(&key);
            if let Some((member, score)) = members.first() {
                w.bulk(member);
                w.double(*score);
            }
        }
        (_, Popped::Entries(entries)) => {
            if w.protocol() == keel_resp::Protocol::Resp3 {
                w.map(1);
            } else {
                w.array(1);
            }
            write_stream_read(w, &key, &entries);
        }
        (_, Popped::Members(members)) => {
            w.array(2);
            w.bulk(&key);
            w.array(members.len());
            for (member, score) in &members {
                w.array(2);
                w.bulk(member);
                w.double(*score);
            }
        }
    }
}

impl Blocking {
    /// Number of blocked clients.
    pub fn blocked(&self) -> usize {
        self.blocked.load(Ordering::Relaxed)
    }

    /// Queues a waiter on `keys` of database `db`. The caller must hold the
    /// shard locks of `keys` (see the module comment).
    pub fn register(
        &self,
        db: usize,
        keys: Vec<Bytes>,
        wait: Wait,
        deadline: Option<tokio::time::Instant>,
    ) -> Blocked {
        let (sender, receiver) = oneshot::channel();
        let waiter = Arc::new(Waiter {
            db,
            keys,
            wait,
            sender: Mutex::new(Some(sender)),
        });
        let mut queues = self.queues.lock();
        for key in &waiter.keys {
            let queue = queues.entry((db, key.clone())).or_default();
            // BLPOP k k waits once on k.
            if !queue.iter().any(|w| Arc::ptr_eq(w, &waiter)) {
                queue.push_back(waiter.clone());
            }
        }
        self.blocked.fetch_add(1, Ordering::Relaxed);
        Blocked {
            waiter,
            receiver,
            deadline,
            execution: None,
        }
    }

    /// The keys of database `db` that clients wait on, to serve once SWAPDB
    /// may have brought them in.
    pub fn waited_keys(&self, db: usize) -> Vec<(usize, Bytes)> {
        if self.blocked() == 0 {
            return Vec::new();
        }
        let queues = self.queues.lock();
        queues.keys().filter(|(d, _)| *d == db).cloned().collect()
    }

    /// Ends a wait that timed out or whose client is leaving: the outcome
    /// it was sent if it was served meanwhile, `None` otherwise.
    pub fn leave(&self, blocked: &mut Blocked) -> Option<Outcome> {
        let was_queued = self.unqueue(&mut self.queues.lock(), &blocked.waiter);
        if was_queued {
            return None;
        }
        blocked.receiver.try_recv().ok()
    }

    /// Removes `waiter` from every queue; false if it was not queued.
    fn unqueue(&self, queues: &mut Queues, waiter: &Arc<Waiter>) -> bool {
        let mut found = false;
        for key in &waiter.keys {
            let id = (waiter.db, key.clone());
            if let Some(queue) = queues.get_mut(&id) {
                let before = queue.len();
                queue.retain(|w| !Arc::ptr_eq(w, waiter));
                found |= queue.len() < before;
                if queue.is_empty() {
                    queues.remove(&id);
                }
            }
        }
        if found {
            self.blocked.fetch_sub(1, Ordering::Relaxed);
        }
        found
    }

    /// Ends the wait of every client whose first key `error_for` gives an
    /// error for, with that error (cluster mode: the key's slot moved away,
    /// or the cluster went down).
    pub fn fail_waiters(&self, error_for: impl Fn(&[u8]) -> Option<Error>) {
        if self.blocked() == 0 {
            return;
        }
        let mut queues = self.queues.lock();
        // A waiter on several keys is listed once per key; `unqueue` finds
        // it only the first time.
        let waiters: Vec<Arc<Waiter>> = queues.values().flatten().cloned().collect();
        for waiter in waiters {
            let Some(error) = waiter.keys.first().and_then(|key| error_for(key)) else {
                continue;
            };
            if self.unqueue(&mut queues, &waiter) {
                if let Some(sender) = waiter.sender.lock().take() {
                    let _ = sender.send(Outcome::Failed(error));
                }
            }
        }
    }

    /// The first waiter on `key` that a key holding `value` serves.
    fn first_served_by(
        queues: &Queues,
        db: usize,
        key: &Bytes,
        value: Option<ValueRef>,
    ) -> Option<Arc<Waiter>> {
        let queue = queues.get(&(db, key.clone()))?;
        queue.iter().find(|w| w.wait.served_by(key, value)).cloned()
    }

    /// Serves the waiters of every `ready` key (database, key) in arrival
    /// order while the key has elements, and of the keys their moves push
    /// to. Keys are taken in the order they became ready, as Redis's
    /// handleClientsBlockedOnKeys takes them: a waiter on two keys written
    /// by one transaction is served from the first written.
    pub fn serve(&self, server: &Server, ready: Vec<(usize, Bytes)>) {
        let limits = server.store.encodings.limits();
        let mut ready = VecDeque::from(ready);
        while let Some((db, key)) = ready.pop_front() {
            loop {
                let view = server.store.db(db, unix_ms());
                // Chosen under the key's read lock, then checked again
                // under the write locks of every key the waiter touches.
                let waiter = {
                    let shard = view.read(&key);
                    let value = shard.peek(&key).map(|e| e.value());
                    let waiter = Self::first_served_by(&self.queues.lock(), db, &key, value);
                    let Some(waiter) = waiter else {
                        break;
                    };
                    waiter
                };
                let keys = waiter.wait.keys(&key);
                let mut shards = server.store.shard_set();
                keys.iter().for_each(|k| shards.insert_key(db, k));
                if server.scripting.gate.conflicts(shards.words()) {
                    // A BLMOVE into a key the running script holds: served
                    // once it ends (see `crate::scripting::gate`).
                    server.scripting.gate.defer(db, key.clone());
                    break;
                }
                // Recorded for replicas as the pop it does (declared first,
                // so it outlives the locks).
                let _recording = waiter
                    .wait
                    .propagated(&key)
                    .map(|pop| Recording::effect(db, pop));
                let mut locked = view.write_many(&keys);
                let mut queues = self.queues.lock();
                let value = locked.peek(&key).map(|e| e.value());
                let still_first = Self::first_served_by(&queues, db, &key, value)
                    .is_some_and(|w| Arc::ptr_eq(&w, &waiter));
                if !still_first {
                    continue;
                }
                let events = Notifier {
                    pubsub: &server.pubsub,
                    db,
                };
                let outcome = match waiter.wait.apply(&mut locked, &key, &limits, events) {
                    Ok(Some(popped)) => Outcome::Popped {
                        key: key.clone(),
                        popped,
                    },
                    Ok(None) => break,
                    Err(error) => Outcome::Failed(error),
                };
                self.unqueue(&mut queues, &waiter);
                if let Some(sender) = waiter.sender.lock().take() {
                    // A receiver is dropped only after `leave`, which found
                    // the waiter queued; this one was not, so it listens.
                    let _ = sender.send(outcome);
                }
                if let Some(dest) = waiter.wait.destination() {
                    ready.push_back((db, dest.clone()));
                }
            }
        }
    }
}
