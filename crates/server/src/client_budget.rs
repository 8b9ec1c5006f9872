//! The client memory budget and backpressure.
//!
//! In Redis, client buffers count against `maxmemory`, the same budget as
//! keys: a backlog of requests from a saturated server forces keys out,
//! which is how an eviction burst turns into a storm. keel gives client
//! buffers a budget of their own, `maxmemory-clients`, and never evicts a
//! key for them.
//!
//! Every connection charges its buffers (the whole allocation its query
//! buffer lives in, the arguments of a request still arriving, its reply
//! buffer, plus a fixed cost for its other state) to the budget. A
//! connection that needs more buffer space to read while the budget is
//! full does not read: it pauses, and what its client keeps sending waits
//! in the client's socket and kernel (TCP flow control), not in keel's
//! memory. Nothing is dropped and replies stay in order, because a paused
//! connection simply reads later. Paused connections resume when buffer
//! memory is released (replies written, requests executed).
//!
//! A release wakes about as many paused connections as the freed bytes can
//! admit, longest-waiting first, and each one admitted wakes the next while
//! room is left. Waking every paused connection on every release instead
//! makes thousands of them re-check the budget for each freed buffer: with
//! 5,000 connections pipelining large writes, proportional wake-ups raised
//! throughput from 70k to 84k requests/s.
//!
//! Pausing everyone could stall the server for good: if every connection
//! were halfway through a request, none could finish, so none would release
//! memory; and if what connections hold between requests (their fixed cost,
//! thousands of idle ones) filled the budget, no connection could read at
//! all. One connection at a time therefore holds a progress token that lets
//! it read past the budget until its current request is complete, so some
//! connection always makes progress. A connection holding a MULTI queue
//! never takes it: what it reads grows the queue, and releases nothing
//! before EXEC, so it waits for room like any other. The budget can thus
//! be exceeded by at most one request in progress (bounded by
//! `proto-max-bulk-len` per argument) plus one read chunk per connection.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::Notify;

/// Bytes charged for a connection beyond its buffers: its task, socket,
/// decoder and client records. Measured: 5,000 idle connections added
/// 7,259 bytes each to used_memory, 4,096 of them the read buffer; and
/// the decoder's recycled argument list takes up to 256 more.
pub const CONNECTION_OVERHEAD_BYTES: usize = 3 * 1024 + 512;

/// Freed bytes per paused connection woken: a typical read's growth.
const RESUME_GRANULE_BYTES: usize = 4 * 1024;

/// A connection counted as paused; it stops counting when this is dropped,
/// including when the connection is closed or killed while it waits.
struct Pause<'a> {
    budget: &'a ClientBudget,
    since: Instant,
}

impl Drop for Pause<'_> {
    fn drop(&mut self) {
        self.budget.paused.fetch_sub(1, Ordering::Relaxed);
    }
}

/// How long a connection holds the progress token before another that
/// waits for room may take it: a client sending its request a byte at a
/// time must not keep every other from finishing theirs.
const TOKEN_LEASE: Duration = Duration::from_secs(1);

/// Who holds the progress token, since when (tokio's clock, which tests
/// can pause and advance).
struct Token {
    holder: u64,
    since: tokio::time::Instant,
}

/// The shared budget of all connections' buffers.
#[derive(Default)]
pub struct ClientBudget {
    used: AtomicUsize,
    limit: AtomicUsize,
    paused: AtomicUsize,
    pause_events: AtomicU64,
    progress_token: Mutex<Option<Token>>,
    /// The token's holder (0: none; client ids start at 1), written under
    /// the lock. `release_token` runs at every read of every connection
    /// and almost never finds the token there: a load of this read-mostly
    /// line settles it, where locking wrote one line shared by every
    /// worker for each read. A stale value is harmless: the holder itself
    /// wrote its own id before it can release, so it always looks under
    /// the lock; another connection may look needlessly, and finds out.
    token_holder: AtomicU64,
    released: Notify,
}

impl ClientBudget {
    /// Sets the budget in bytes; 0 means unlimited.
    pub fn set_limit(&self, bytes: usize) {
        self.limit.store(bytes, Ordering::Relaxed);
        self.released.notify_waiters();
    }

    /// The budget in bytes; 0 means unlimited.
    pub fn limit(&self) -> usize {
        self.limit.load(Ordering::Relaxed)
    }

    /// Bytes charged by all connections now (INFO's mem_clients_normal).
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Connections waiting for the budget now.
    pub fn paused(&self) -> usize {
        self.paused.load(Ordering::Relaxed)
    }

    /// Times a connection has paused since start.
    pub fn pause_events(&self) -> u64 {
        self.pause_events.load(Ordering::Relaxed)
    }

    /// Changes a connection's charge from `before` to `after` bytes, waking
    /// paused connections when memory is released.
    pub fn recharge(&self, before: usize, after: usize) {
        if after > before {
            self.used.fetch_add(after - before, Ordering::Relaxed);
        } else if before > after {
            self.used.fetch_sub(before - after, Ordering::Relaxed);
            // Wakes about as many paused connections as the freed bytes
            // can admit, longest-waiting first, rather than all of them.
            let wake = ((before - after) / RESUME_GRANULE_BYTES + 1).min(self.paused());
            for _ in 0..wake {
                self.released.notify_one();
            }
        }
    }

    /// Charges `bytes` if they fit in the budget; false, charging nothing,
    /// if they do not. For buffers filled on a client's behalf by someone
    /// who cannot wait (a publisher queueing a subscriber's messages).
    pub fn try_charge(&self, bytes: usize) -> bool {
        let limit = self.limit();
        self.used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                let after = used.saturating_add(bytes);
                (limit == 0 || after <= limit).then_some(after)
            })
            .is_ok()
    }

    /// Waits until connection `client` may grow its buffers by `wanted`
    /// bytes, or, if `may_take_token`, holds the progress token. Returns how
    /// long the connection paused, if it had to.
    pub async fn admit(
        &self,
        client: u64,
        wanted: usize,
        may_take_token: bool,
    ) -> Option<Duration> {
        let mut pause: Option<Pause> = None;
        loop {
            let released = self.released.notified();
            tokio::pin!(released);
            // Registered before the check, so a release between the check
            // and the wait is not missed.
            released.as_mut().enable();
            let token = match may_take_token {
                true => self.take_token(client),
                false => Err(Duration::MAX),
            };
            if self.fits(wanted) || token.is_ok() {
                // Room may be left for the next connection in line.
                if pause.is_some() && self.paused() > 1 && self.fits(RESUME_GRANULE_BYTES) {
                    self.released.notify_one();
                }
                break;
            }
            pause.get_or_insert_with(|| {
                self.pause_events.fetch_add(1, Ordering::Relaxed);
                self.paused.fetch_add(1, Ordering::Relaxed);
                Pause {
                    budget: self,
                    since: Instant::now(),
                }
            });
            match token {
                // The holder's lease runs out first: look again then.
                Err(lease_left) if lease_left < Duration::MAX => {
                    let _ = tokio::time::timeout(lease_left, released).await;
                }
                _ => released.await,
            }
        }
        pause.map(|p| p.since.elapsed())
    }

    /// True once more than half the budget is in use: connections then
    /// give back spare buffer capacity as soon as they are idle.
    pub fn under_pressure(&self) -> bool {
        let limit = self.limit();
        limit != 0 && self.used() > limit / 2
    }

    fn fits(&self, wanted: usize) -> bool {
        let limit = self.limit();
        limit == 0 || self.used().saturating_add(wanted) <= limit
    }

    /// Takes the progress token for `client`, from its holder too once the
    /// holder's lease is over; otherwise returns how long the lease lasts.
    fn take_token(&self, client: u64) -> Result<(), Duration> {
        let mut token = self.progress_token.lock();
        match &*token {
            Some(held) if held.holder == client => Ok(()),
            Some(held) if held.since.elapsed() < TOKEN_LEASE => {
                Err(TOKEN_LEASE - held.since.elapsed())
            }
            _ => {
                *token = Some(Token {
                    holder: client,
                    since: tokio::time::Instant::now(),
                });
                self.token_holder.store(client, Ordering::Relaxed);
                Ok(())
            }
        }
    }

    /// Gives the progress token back if `client` holds it: called when its
    /// request is complete or it disconnects.
    pub fn release_token(&self, client: u64) {
        if self.token_holder.load(Ordering::Relaxed) != client {
            return;
        }
        let mut token = self.progress_token.lock();
        if token.as_ref().is_some_and(|held| held.holder == client) {
            *token = None;
            self.token_holder.store(0, Ordering::Relaxed);
            drop(token);
            self.released.notify_waiters();
        }
    }
}

/// A reply being built is granted room from the budget as it grows, up to
/// half of the budget: a reply of millions of elements (SRANDMEMBER with a
/// count of -10^12) that took it all paused every other connection until it
/// was dropped, 1-2 s in the soak benchmark; the other half stays theirs.
impl keel_resp::ReplyRoom for ClientBudget {
    fn grant(&self, bytes: usize, granted: usize) -> bool {
        let limit = self.limit();
        let within_share = limit == 0 || granted + bytes <= limit / 2;
        within_share && self.try_charge(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A connection in the middle of a request that holds the progress
    /// token throughout a test, so the others must wait for room.
    const TOKEN_HOLDER: u64 = u64::MAX;

    /// A budget of 10,000 bytes with 9,000 in use, the progress token held,
    /// and `waiters` connections (ids 0, 1, …) each waiting to grow by
    /// `wanted` bytes.
    fn nearly_full_budget_with_waiters(
        waiters: u64,
        wanted: usize,
    ) -> (
        Arc<ClientBudget>,
        Vec<tokio::task::JoinHandle<Option<Duration>>>,
    ) {
        let budget = Arc::new(ClientBudget::default());
        budget.set_limit(10_000);
        budget.recharge(0, 9_000);
        assert!(budget.take_token(TOKEN_HOLDER).is_ok());
        let handles = (0..waiters)
            .map(|client| {
                let budget = budget.clone();
                tokio::spawn(async move { budget.admit(client, wanted, true).await })
            })
            .collect();
        (budget, handles)
    }

    #[tokio::test]
    async fn under_budget_never_waits() {
        let budget = ClientBudget::default();
        budget.set_limit(10_000);
        budget.recharge(0, 5_000);
        assert!(budget.admit(1, 4_000, true).await.is_none());
        assert_eq!(budget.pause_events(), 0);
    }

    #[tokio::test]
    async fn a_release_resumes_every_paused_connection_it_makes_room_for() {
        let (budget, waiters) = nearly_full_budget_with_waiters(3, 2_000);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(budget.paused(), 3);
        budget.recharge(9_000, 500);
        for waiter in waiters {
            let paused = tokio::time::timeout(Duration::from_secs(5), waiter).await;
            assert!(paused.unwrap().unwrap().is_some(), "paused, then resumed");
        }
        assert_eq!(budget.paused(), 0);
    }

    #[tokio::test]
    async fn a_connection_closed_while_paused_stops_counting() {
        let (budget, mut waiters) = nearly_full_budget_with_waiters(1, 4_000);
        let waiter = waiters.remove(0);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(budget.paused(), 1);
        waiter.abort();
        assert!(waiter.await.unwrap_err().is_cancelled());
        assert_eq!(budget.paused(), 0);
    }

    #[tokio::test]
    async fn over_budget_pauses_until_memory_is_released() {
        let (budget, mut waiters) = nearly_full_budget_with_waiters(1, 4_000);
        let waiter = waiters.remove(0);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(budget.paused(), 1, "the connection waits");
        budget.recharge(9_000, 2_000);
        let paused = waiter.await.unwrap().expect("it paused, then resumed");
        assert!(paused >= Duration::from_millis(20), "{paused:?}");
        assert_eq!((budget.paused(), budget.pause_events()), (0, 1));
    }

    #[tokio::test]
    async fn one_connection_at_a_time_reads_past_a_full_budget() {
        let budget = ClientBudget::default();
        budget.set_limit(1_000);
        budget.recharge(0, 5_000);
        assert!(
            budget.admit(7, 4_000, true).await.is_none(),
            "the first takes the token"
        );
        assert!(
            budget.admit(7, 4_000, true).await.is_none(),
            "and keeps it until done"
        );
        let other = budget.admit(8, 4_000, true);
        let blocked = tokio::time::timeout(Duration::from_millis(20), other).await;
        assert!(blocked.is_err(), "a second connection waits");
        budget.release_token(7);
        assert!(
            budget.admit(8, 4_000, true).await.is_none(),
            "it gets the token once released"
        );
    }

    #[tokio::test]
    async fn a_connection_that_may_not_take_the_token_waits_for_room() {
        let budget = ClientBudget::default();
        budget.set_limit(1_000);
        budget.recharge(0, 5_000);
        let queueing = budget.admit(7, 0, false);
        let blocked = tokio::time::timeout(Duration::from_millis(20), queueing).await;
        assert!(
            blocked.is_err(),
            "an over-full budget holds it even for reused space"
        );
        budget.recharge(5_000, 500);
        assert!(budget.admit(7, 0, false).await.is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_holder_that_keeps_the_token_past_its_lease_loses_it() {
        let budget = ClientBudget::default();
        budget.set_limit(1_000);
        budget.recharge(0, 5_000);
        assert!(budget.admit(7, 4_000, true).await.is_none());
        let paused = budget.admit(8, 4_000, true).await;
        assert!(paused.is_some(), "the second waited for the lease to end");
        assert!(budget.take_token(7).is_err(), "and holds the token now");
        budget.release_token(7);
        assert!(
            budget.take_token(7).is_err(),
            "the old holder cannot release it"
        );
        budget.release_token(8);
        assert!(budget.take_token(7).is_ok(), "its holder can");
    }

    #[test]
    fn a_reply_is_granted_at_most_half_the_budget() {
        use keel_resp::ReplyRoom;
        let budget = ClientBudget::default();
        budget.set_limit(10_000);
        assert!(budget.grant(3_000, 0));
        assert!(budget.grant(2_000, 3_000));
        assert!(!budget.grant(1_000, 5_000), "past half the budget");
        assert_eq!(budget.used(), 5_000);
    }

    #[tokio::test]
    async fn unlimited_budget_admits_everything() {
        let budget = ClientBudget::default();
        budget.recharge(0, usize::MAX / 2);
        assert!(budget.admit(1, usize::MAX / 4, true).await.is_none());
    }
}
