//! Clients blocked on lists (BLPOP, BRPOP, BLMOVE) and how they are served.
//!
//! A blocking command first tries to pop at once. When every key is
//! missing it registers a [`Waiter`] in the queue of each key, in arrival
//! order, *while it still holds those keys' shard locks*: a push that
//! creates the key needs the same lock, so it either came before (and the
//! pop succeeded) or comes after and finds the waiter queued. The
//! connection then waits on a oneshot channel, its deadline, its kill
//! signal and its socket (to notice a disconnect).
//!
//! Waiters are served by the client that made a list appear, as Redis's
//! `handleClientsBlockedOnKeys` does: after each top-level command (after
//! the whole of an EXEC), every key a write command named that has
//! waiters is "ready", and [`Blocking::serve`] hands elements to its
//! waiters front first, as long as the list has some. The element is
//! popped by the server on the waiter's behalf, under the key's shard lock
//! and the queue lock, and sent through the channel. So waiters get
//! elements strictly in arrival order, a waiter is never woken to find the
//! list emptied by someone else (it is only served when an element is
//! there for it), and an element is never popped for a waiter that has
//! left: leaving (timeout, kill, disconnect) removes the waiter under the
//! same queue lock, and a waiter that finds itself already removed reads
//! the element it was sent. An element BLMOVE pushes to its destination
//! makes that key ready in turn.
//!
//! Lock order: shard locks, then the queue lock — the same when a waiter
//! registers and when one is served. The queue lock is never held while
//! waiting for anything else.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use keel_resp::Writer;
use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::cmd::lmove::Pop;
use crate::cmd::Error;
use crate::server::{unix_ms, Server};

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
    pop: Pop,
    sender: Mutex<Option<oneshot::Sender<Outcome>>>,
}

/// What a waiter receives.
pub enum Outcome {
    /// An element, and the key it came from.
    Popped {
        /// The source key.
        key: Bytes,
        /// The element.
        element: Vec<u8>,
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
        write_outcome(w, &self.waiter.pop, outcome);
    }
}

/// Writes the reply of a blocking pop: the key and element (BLPOP, BRPOP)
/// or the element (BLMOVE), an error, or — for `None`, a timeout — a null
/// array, which Redis 7.0 answers for BLMOVE too.
pub fn write_outcome(w: &mut Writer, pop: &Pop, outcome: Option<Outcome>) {
    match outcome {
        Some(Outcome::Popped { element, .. }) if pop.to.is_some() => w.bulk(&element),
        Some(Outcome::Popped { key, element }) => {
            w.array(2);
            w.bulk(&key);
            w.bulk(&element);
        }
        Some(Outcome::Failed(Error(message))) => w.error(&message),
        None => w.null_array(),
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
        pop: Pop,
        deadline: Option<tokio::time::Instant>,
    ) -> Blocked {
        let (sender, receiver) = oneshot::channel();
        let waiter = Arc::new(Waiter {
            db,
            keys,
            pop,
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
        }
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

    fn first(&self, db: usize, key: &Bytes) -> Option<Arc<Waiter>> {
        let queues = self.queues.lock();
        queues.get(&(db, key.clone()))?.front().cloned()
    }

    /// Serves the waiters of every `ready` key (database, key) in arrival
    /// order while their list has elements, and of the keys their moves
    /// push to.
    pub fn serve(&self, server: &Server, mut ready: Vec<(usize, Bytes)>) {
        let limits = server.store.encodings.limits();
        while let Some((db, key)) = ready.pop() {
            while let Some(waiter) = self.first(db, &key) {
                let view = server.store.db(db, unix_ms());
                let mut locked = view.write_many(&waiter.pop.keys(&key));
                let mut queues = self.queues.lock();
                let still_first = queues
                    .get(&(db, key.clone()))
                    .and_then(|q| q.front())
                    .is_some_and(|w| Arc::ptr_eq(w, &waiter));
                if !still_first {
                    continue;
                }
                // Only a list with an element serves anyone; a key of
                // another type leaves its waiters blocked, as in Redis.
                if locked
                    .peek(&key)
                    .and_then(|e| e.value().as_list())
                    .is_none()
                {
                    break;
                }
                let outcome = match waiter.pop.apply(&mut locked, &key, &limits) {
                    Ok(Some(element)) => Outcome::Popped {
                        key: key.clone(),
                        element,
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
                if let Some((dest, _)) = &waiter.pop.to {
                    ready.push((db, dest.clone()));
                }
            }
        }
    }
}
