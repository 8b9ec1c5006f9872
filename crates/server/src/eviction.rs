//! Eviction ahead of need, off the request path.
//!
//! Redis evicts inside the write that finds memory over the limit: the
//! request pays for it, on the one thread that also serves everybody else.
//! When writes arrive near capacity, those evictions push the thread into
//! saturation, requests queue up, and (in Redis) the queued requests'
//! buffers count against the same limit, forcing more evictions — the
//! eviction storm.
//!
//! keel keeps the dataset between two watermarks below `maxmemory` from a
//! background task instead: when it rises past the high watermark
//! (`maxmemory-high-watermark`, 99% by default) the task evicts until it is
//! below the low one (`maxmemory-low-watermark`, 97%), in slices of about a
//! millisecond, resting between slices so it takes at most
//! `maxmemory-eviction-cpu-percent` of a core (25% by default). It runs on
//! the low-priority maintenance thread, beside active expiry, never on a
//! worker. Writes below the hard limit never evict. Only when writes
//! outrun the task and reach `maxmemory` does a write evict, and then
//! [`INLINE_EVICTION_MAX_KEYS`] keys, or more only as far as its own size
//! needs; meanwhile the task drops its CPU cap until the dataset is back
//! under the limit. Each write reserves what it may add while it runs, so
//! concurrent writes make room for one another: before it runs, what its
//! arguments and a new key's overhead may add ([`Server::make_room`]); and
//! once it sees its keys, what it really adds beyond that (SETRANGE's
//! padding, COPY's copy, a *STORE's result, a new deadline: [`Room`]'s
//! `try_grow`, which never evicts, since the write holds shard locks). A
//! write that finds no room has changed nothing; dispatch evicts with no
//! lock held and runs it again, or replies Redis's OOM error when the
//! policy cannot evict enough (`noeviction`). It checks again when done:
//! the dataset stays within `maxmemory` after every write. Under
//! `noeviction` a write also fails with OOM when the dataset is already
//! over the limit, as in Redis.
//!
//! Far below the high watermark a small write reserves nothing: when the
//! dataset with every reservation is so far under it that every thread
//! that can write (`Server::concurrent_writers`) could add a small write's
//! most at once ([`UNRESERVED_ARGUMENT_BYTES`] of arguments and a table's
//! growth) and still stay under it, with [`ENCODING_SLACK`] to spare, no
//! write can take it past the watermark, let alone `maxmemory`. A
//! reservation is two updates of one counter that every core writes: the
//! cost a write most often paid for nothing.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::server::{unix_ms, Server};

/// The most argument bytes (as a write reserves them) a write may bring
/// and go unreserved, far below the high watermark (see the module
/// comment).
const UNRESERVED_ARGUMENT_BYTES: usize = 16 * 1024;
/// Room kept besides unreserved writes for what a collection's change of
/// encoding adds beyond its reservation.
const ENCODING_SLACK: usize = 1024 * 1024;

/// Keys a write may evict itself when background eviction has fallen
/// behind: enough to make room for a typical write, few enough that the
/// request's latency barely moves.
pub const INLINE_EVICTION_MAX_KEYS: usize = 16;

/// Work done per slice before the task checks the time and rests.
const SLICE: Duration = Duration::from_millis(1);
/// Evictions between clock reads inside a slice.
const EVICTIONS_PER_CLOCK_READ: usize = 32;
/// How often the task looks at memory when nobody wakes it, once the
/// dataset is within [`NEAR_HIGH_WATERMARK_PERCENT`] of the high watermark.
const CHECK_INTERVAL: Duration = Duration::from_millis(10);
/// How often it looks while the dataset is further below: a write that
/// takes it past the high watermark wakes the task (`make_room`), so this
/// look is only for growth that no write reserved, and an idle server
/// wakes once a second instead of a hundred times.
const IDLE_CHECK_INTERVAL: Duration = Duration::from_secs(1);
/// See [`CHECK_INTERVAL`].
const NEAR_HIGH_WATERMARK_PERCENT: u64 = 90;

/// The dataset byte levels eviction works between.
#[derive(Debug, Clone, Copy)]
pub struct Watermarks {
    /// `maxmemory`: the hard limit.
    pub limit: u64,
    /// Above this, background eviction starts.
    pub high: u64,
    /// Background eviction stops below this.
    pub low: u64,
}

impl Server {
    /// The watermarks for the current `maxmemory`, or `None` without a
    /// limit.
    pub fn watermarks(&self) -> Option<Watermarks> {
        let limit = self.store.maxmemory();
        if limit == 0 {
            return None;
        }
        let percent = |p: &std::sync::atomic::AtomicU64| limit / 100 * p.load(Ordering::Relaxed);
        Some(Watermarks {
            limit,
            high: percent(&self.hot.eviction_high_percent),
            low: percent(&self.hot.eviction_low_percent),
        })
    }

    /// Called before a command that may grow the dataset by about
    /// `incoming` bytes. Wakes background eviction past the high watermark.
    /// Past the hard limit — counting what the writes running now may add,
    /// this one included — evicts inline: a few keys, and more only as far
    /// as this write's own size needs. Returns `None` when the command must
    /// be refused with OOM (noeviction, or nothing left that the policy may
    /// evict, while the dataset is over `maxmemory`, as Redis decides).
    pub fn make_room(&self, now_ms: u64, incoming: usize) -> Option<Room<'_>> {
        let mut room = Room::empty(self);
        let Some(marks) = self.watermarks() else {
            return Some(room);
        };
        let most_unreserved = UNRESERVED_ARGUMENT_BYTES + self.store.largest_table_growth();
        let all_at_once = self.concurrent_writers * most_unreserved + ENCODING_SLACK;
        let far_below = self.dataset_with_reservations() + all_at_once as u64 <= marks.high;
        if far_below && incoming <= most_unreserved {
            return Some(room);
        }
        // From here, dropping the room (OOM included) ends the reservation.
        room.add(incoming);
        let used = self.dataset_with_reservations();
        if used > marks.high {
            self.eviction_wake.notify_one();
        }
        if used > marks.limit && !self.evict_inline(now_ms, marks.limit, incoming) {
            return None;
        }
        Some(room)
    }

    /// Bytes the dataset may still grow by before `maxmemory`, what the
    /// writes running now reserved counted; `None` without a limit.
    pub fn room_left(&self) -> Option<u64> {
        let marks = self.watermarks()?;
        Some(marks.limit.saturating_sub(self.dataset_with_reservations()))
    }

    /// The dataset plus what the writes running now may still add: what
    /// both inline and background eviction keep under the limits.
    fn dataset_with_reservations(&self) -> u64 {
        (self.store.dataset_bytes() + self.reserved_for_writes.load(Ordering::Relaxed)) as u64
    }

    /// Evicts until the dataset with reservations is within `limit`, at most
    /// [`INLINE_EVICTION_MAX_KEYS`] keys or, past that, until `incoming`
    /// bytes are freed: the work a write does is bounded by its own size.
    /// Returns false when the policy has nothing left to evict and the
    /// dataset with reservations is still over the limit: the write would
    /// not fit. (Redis lets such a write through whenever the dataset itself
    /// is under `maxmemory`, and the dataset then passes it.)
    fn evict_inline(&self, now_ms: u64, limit: u64, incoming: usize) -> bool {
        let before = self.store.dataset_bytes();
        let mut evicted = 0;
        while self.dataset_with_reservations() > limit
            && (evicted < INLINE_EVICTION_MAX_KEYS
                || before.saturating_sub(self.store.dataset_bytes()) < incoming)
        {
            if !self.store.evict_one(now_ms, crate::lazyfree::free_evicted) {
                return false;
            }
            evicted += 1;
        }
        true
    }
}

/// Room made for one write by [`Server::make_room`], grown by what the
/// write finds it adds once it sees its keys (see `Ctx::reserve`): its
/// bytes count as reserved while it runs, so concurrent writes make room
/// for each other too. When it ends (the write is done) the reservation
/// ends, and if the write grew the dataset past `maxmemory` after all (a
/// collection changing encoding can grow by more than it reserved), a few
/// more keys go before the reply is sent.
pub struct Room<'a> {
    server: &'a Server,
    bytes: usize,
}

impl<'a> Room<'a> {
    /// No room: for a command that reserves nothing before it runs.
    pub fn empty(server: &'a Server) -> Room<'a> {
        Room { server, bytes: 0 }
    }

    /// Grows the room by `bytes` if the dataset, with what every write
    /// reserved, stays within `maxmemory`. Never evicts, so a handler
    /// holding shard locks may call it.
    pub fn try_grow(&mut self, bytes: usize) -> bool {
        let Some(marks) = self.server.watermarks() else {
            return true;
        };
        self.add(bytes);
        if self.server.dataset_with_reservations() <= marks.limit {
            return true;
        }
        self.release(bytes);
        false
    }

    /// Grows the room by `bytes`, evicting what the policy allows until the
    /// dataset, with what every write reserved, is within `maxmemory`.
    /// False, the room unchanged, when the policy cannot evict enough, and
    /// at once, evicting nothing, when the room alone would pass
    /// `maxmemory`. It takes shard locks: the caller must hold none.
    pub fn grow_evicting(&mut self, now_ms: u64, bytes: usize) -> bool {
        let Some(marks) = self.server.watermarks() else {
            return true;
        };
        if self.bytes.saturating_add(bytes) as u64 > marks.limit {
            return false;
        }
        self.add(bytes);
        self.server.eviction_wake.notify_one();
        while self.server.dataset_with_reservations() > marks.limit {
            if !self.server.store.evict_one(now_ms, crate::lazyfree::free) {
                self.release(bytes);
                return false;
            }
        }
        true
    }

    /// Bytes reserved.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Ends the part of the reservation past `bytes`, once what it was
    /// for is in the dataset. Never evicts.
    pub fn shrink_to(&mut self, bytes: usize) {
        self.release(self.bytes - bytes);
    }

    fn add(&mut self, bytes: usize) {
        self.bytes += bytes;
        self.server
            .reserved_for_writes
            .fetch_add(bytes, Ordering::Relaxed);
    }

    fn release(&mut self, bytes: usize) {
        self.bytes -= bytes;
        self.server
            .reserved_for_writes
            .fetch_sub(bytes, Ordering::Relaxed);
    }

    /// Ends the reservation, once the write is done, and if the dataset
    /// passed `maxmemory` after all, evicts until it is back within it: as
    /// many bytes as the write overshot, so the work stays the write's own.
    pub fn end(&mut self) {
        if self.bytes == 0 {
            return;
        }
        self.release(self.bytes);
        let Some(marks) = self.server.watermarks() else {
            return;
        };
        let used = self.server.dataset_with_reservations();
        if used > marks.limit {
            let overshoot = (used - marks.limit) as usize;
            self.server.evict_inline(unix_ms(), marks.limit, overshoot);
        }
    }
}

impl Drop for Room<'_> {
    fn drop(&mut self) {
        self.end();
    }
}

/// The background eviction task; runs for the life of the server.
pub async fn evict_ahead(server: Arc<Server>) {
    loop {
        let near = server.watermarks().is_some_and(|marks| {
            server.dataset_with_reservations() >= marks.high / 100 * NEAR_HIGH_WATERMARK_PERCENT
        });
        let check = match near {
            true => CHECK_INTERVAL,
            false => IDLE_CHECK_INTERVAL,
        };
        tokio::select! {
            _ = server.eviction_wake.notified() => {}
            _ = crate::clock::sleep_until_next(check) => {}
        }
        let Some(marks) = server.watermarks() else {
            continue;
        };
        // A replica keeps what its primary keeps (`replica-ignore-maxmemory`).
        if server.replication.is_replica() || server.dataset_with_reservations() <= marks.high {
            continue;
        }
        evict_to_low_watermark(&server).await;
    }
}

/// Evicts in slices until the dataset is under the low watermark or
/// nothing more may be evicted, resting between slices to stay within the
/// CPU share — except while over the hard limit, when memory comes first.
async fn evict_to_low_watermark(server: &Server) {
    loop {
        // A paused server evicts nothing (see `crate::pause`).
        if server.pause.in_force(unix_ms()).is_some() {
            return;
        }
        let Some(marks) = server.watermarks() else {
            return;
        };
        let started = Instant::now();
        let priority = crate::priority::WorkersPriority::begin();
        let mut evictable = true;
        'slice: while started.elapsed() < SLICE {
            for _ in 0..EVICTIONS_PER_CLOCK_READ {
                if server.dataset_with_reservations() <= marks.low {
                    break 'slice;
                }
                if !server
                    .store
                    .evict_one(unix_ms(), crate::lazyfree::free_evicted)
                {
                    evictable = false;
                    break 'slice;
                }
            }
        }
        drop(priority);
        let worked = started.elapsed();
        server
            .stats
            .record_work(crate::stats::Work::EvictionBatch, worked);
        let used = server.dataset_with_reservations();
        if used <= marks.low || !evictable {
            return;
        }
        if used > marks.limit {
            tokio::task::yield_now().await;
        } else {
            let share = server
                .hot
                .eviction_cpu_percent
                .load(Ordering::Relaxed)
                .clamp(1, 100);
            tokio::time::sleep(worked * (100 - share) as u32 / share as u32).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server_with(maxmemory: u64) -> Server {
        let mut config = crate::config::Config::default();
        (config.maxmemory, config.threads) = (maxmemory, 2);
        Server::new(config, 0).expect("no ACL users")
    }

    /// Far below the high watermark a small write reserves nothing; a big
    /// one reserves what it may add, and so does any write when every
    /// writer's most would not fit under the watermark.
    #[test]
    fn only_writes_that_could_matter_reserve() {
        let server = server_with(1 << 30);
        let small = server.make_room(0, 1000).expect("room");
        assert_eq!(small.bytes(), 0);
        assert_eq!(server.reserved_for_writes.load(Ordering::Relaxed), 0);
        let big = server.make_room(0, 1 << 20).expect("room");
        assert_eq!(big.bytes(), 1 << 20);
        assert_eq!(server.reserved_for_writes.load(Ordering::Relaxed), 1 << 20);
        drop((small, big));
        assert_eq!(server.reserved_for_writes.load(Ordering::Relaxed), 0);

        let tight = server_with(1 << 20);
        let near = tight.make_room(0, 1000).expect("room");
        assert_eq!(
            near.bytes(),
            1000,
            "five writers' most and the slack exceed 1 MB"
        );
    }
}
