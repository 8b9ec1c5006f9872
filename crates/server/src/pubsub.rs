//! Publish/subscribe (channels, patterns and shard channels), keyspace
//! notifications, and the MONITOR feed.
//!
//! A subscribing connection gets an inbox (an unbounded channel) that its
//! connection loop waits on beside its socket. PUBLISH looks up the
//! channel's subscribers and the patterns that match it under a read lock
//! and drops the message into each inbox: publishing never waits for a
//! subscriber.
//!
//! What a subscriber has not yet written to its socket is its backlog, and
//! it is checked as each message is queued, on the publisher's side, since
//! a subscriber that stopped reading is stuck in a socket write and checks
//! nothing. The backlog is bounded by Redis's `client-output-buffer-limit
//! pubsub` class (32 MB hard, 8 MB for 60 s soft by default) and is charged
//! to the client budget (`maxmemory-clients`), like every other client
//! buffer. A message that would pass either limit, or the budget, is not
//! queued: the subscriber is killed instead, as Redis disconnects it, and
//! its connection closes at once, even from inside a stuck write.
//!
//! Redis runs requests in the order they arrive, so a PUBLISH sent just
//! after a subscriber's UNSUBSCRIBE does not reach it. keel's connections
//! run in parallel, so for channels and patterns of a few subscribers a
//! publisher looks at what each subscriber sent and has not run yet (see
//! `ClientHandle::is_leaving`) and skips one that is leaving.
//!
//! A MONITOR client gets the same kind of inbox, fed by dispatch with a
//! line per command, under the `normal` class's output limits (Redis
//! counts a monitor as a normal client) and the same client budget: a
//! monitor that reads slowly is disconnected instead of growing memory.
//!
//! Keyspace notifications (`notify-keyspace-events`) are messages keel
//! publishes itself on `__keyspace@<db>__:<key>` and
//! `__keyevent@<db>__:<event>`. Commands publish theirs as Redis's
//! `notifyKeyspaceEvent` calls do, after each change and in Redis's order
//! (`Ctx::notify`); the store reports expired, evicted and new keys through
//! a hook on every path that removes or creates them. When a class is off,
//! which is the default for all, an event costs one relaxed load. An event
//! may be published under a shard lock: publishing takes only the
//! subscriber tables' read lock, a leaf lock (docs/threads.md), and never
//! waits for a subscriber, so it cannot deadlock or stall the shard.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::RwLock;
use tokio::sync::mpsc;

use crate::client::ClientHandle;
use crate::client_budget::ClientBudget;
use crate::config::OutputLimit;

/// What a message is, which decides the push it is written as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// `message`: published on a channel the client subscribes to.
    Channel,
    /// `pmessage`: published on a channel matching this pattern.
    Pattern(Bytes),
    /// `smessage`: published on a shard channel (SPUBLISH).
    Shard,
    /// A MONITOR line: the payload is the line, the channel is empty.
    Monitor,
}

/// A message on its way to a subscriber.
#[derive(Debug, Clone)]
pub struct Message {
    /// What kind of message it is.
    pub delivery: Delivery,
    /// The channel it was published on.
    pub channel: Bytes,
    /// What was published.
    pub payload: Bytes,
}

impl Message {
    fn bytes(&self) -> usize {
        let pattern = match &self.delivery {
            Delivery::Pattern(pattern) => pattern.len(),
            _ => 0,
        };
        pattern + self.channel.len() + self.payload.len()
    }
}

/// A subscriber's messages queued and not yet written, shared by the
/// publishers and the subscriber's connection.
struct Backlog {
    bytes: AtomicUsize,
    /// When the backlog went over the soft limit (Unix ms); 0 when under.
    over_soft_since_ms: AtomicU64,
    /// Set once the subscriber was disconnected for passing a limit.
    over_limit: AtomicBool,
    budget: Arc<ClientBudget>,
}

impl Backlog {
    /// Takes `bytes` off the backlog and the client budget: they were
    /// written, or are dropped with the connection.
    fn release(&self, bytes: usize, soft_limit: u64) {
        let left = self.bytes.fetch_sub(bytes, Ordering::Relaxed) - bytes;
        self.budget.recharge(bytes, 0);
        if (left as u64) <= soft_limit {
            self.over_soft_since_ms.store(0, Ordering::Relaxed);
        }
    }
}

/// The sending side of a subscriber's inbox.
#[derive(Clone)]
pub struct Subscriber {
    inbox: mpsc::UnboundedSender<Message>,
    backlog: Arc<Backlog>,
    client: Arc<ClientHandle>,
    /// The output limits its backlog is held to: the `pubsub` class, or
    /// the `normal` class for a monitor.
    limits: Arc<SubscriberLimits>,
}

/// A connection's inbox: what its loop waits on.
pub struct Inbox {
    receiver: mpsc::UnboundedReceiver<Message>,
    backlog: Arc<Backlog>,
    limits: Arc<SubscriberLimits>,
}

impl Inbox {
    /// The next message; `None` when the connection has been dropped from
    /// every subscription list.
    pub async fn next(&mut self) -> Option<Message> {
        let message = self.receiver.recv().await?;
        self.taken(&message);
        Some(message)
    }

    /// A message already waiting, without waiting for one.
    pub fn try_next(&mut self) -> Option<Message> {
        let message = self.receiver.try_recv().ok()?;
        self.taken(&message);
        Some(message)
    }

    fn taken(&self, message: &Message) {
        let soft = self.limits.soft.load(Ordering::Relaxed);
        self.backlog.release(message.bytes(), soft);
    }

    /// True when the subscriber was disconnected for falling further behind
    /// than the pubsub output limits or the client budget allow.
    pub fn over_limit(&self) -> bool {
        self.backlog.over_limit.load(Ordering::Relaxed)
    }
}

impl Drop for Inbox {
    fn drop(&mut self) {
        // Messages never taken leave the client budget with the connection.
        self.receiver.close();
        while self.try_next().is_some() {}
    }
}

/// `client-output-buffer-limit pubsub` (or `normal`, for monitors), read
/// by publishers.
pub struct SubscriberLimits {
    hard: AtomicU64,
    soft: AtomicU64,
    soft_seconds: AtomicU64,
}

impl Default for SubscriberLimits {
    fn default() -> Self {
        let limit = OutputLimit::PUBSUB_DEFAULT;
        SubscriberLimits {
            hard: AtomicU64::new(limit.hard),
            soft: AtomicU64::new(limit.soft),
            soft_seconds: AtomicU64::new(limit.soft_seconds),
        }
    }
}

impl SubscriberLimits {
    fn set(&self, limit: OutputLimit) {
        self.hard.store(limit.hard, Ordering::Relaxed);
        self.soft.store(limit.soft, Ordering::Relaxed);
        self.soft_seconds
            .store(limit.soft_seconds, Ordering::Relaxed);
    }
}

type Subscribers = HashMap<Bytes, HashMap<u64, Subscriber>>;

/// Every channel, pattern and shard channel subscription of the server,
/// and its monitors.
#[derive(Default)]
pub struct PubSub {
    channels: RwLock<Subscribers>,
    patterns: RwLock<Subscribers>,
    shard_channels: RwLock<Subscribers>,
    monitors: RwLock<HashMap<u64, Subscriber>>,
    /// Monitors connected: lets dispatch skip formatting a line nobody reads.
    monitor_count: AtomicUsize,
    /// `notify-keyspace-events` as flags (see [`KeyspaceEvents`]).
    pub notify: AtomicU64,
    limits: Arc<SubscriberLimits>,
    monitor_limits: Arc<SubscriberLimits>,
    budget: Arc<ClientBudget>,
}

/// Which list a subscription goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// SUBSCRIBE: an exact channel name.
    Channel,
    /// PSUBSCRIBE: a glob pattern.
    Pattern,
    /// SSUBSCRIBE: a shard channel, a namespace of its own.
    Shard,
}

impl PubSub {
    /// Subscriptions whose backlogs are charged to `budget`.
    pub fn new(budget: Arc<ClientBudget>) -> PubSub {
        PubSub {
            budget,
            ..PubSub::default()
        }
    }

    /// Sets `client-output-buffer-limit pubsub`.
    pub fn set_limits(&self, limit: OutputLimit) {
        self.limits.set(limit);
    }

    /// Sets `client-output-buffer-limit normal`, which monitors are held to.
    pub fn set_monitor_limits(&self, limit: OutputLimit) {
        self.monitor_limits.set(limit);
    }

    /// A new inbox for `client`, and the handle publishers send to.
    pub fn inbox(&self, client: Arc<ClientHandle>) -> (Subscriber, Inbox) {
        let (sender, receiver) = mpsc::unbounded_channel();
        let backlog = Arc::new(Backlog {
            bytes: AtomicUsize::new(0),
            over_soft_since_ms: AtomicU64::new(0),
            over_limit: AtomicBool::new(false),
            budget: self.budget.clone(),
        });
        let subscriber = Subscriber {
            inbox: sender,
            backlog: backlog.clone(),
            client,
            limits: self.limits.clone(),
        };
        let inbox = Inbox {
            receiver,
            backlog,
            limits: self.limits.clone(),
        };
        (subscriber, inbox)
    }

    fn list(&self, kind: Kind) -> &RwLock<Subscribers> {
        match kind {
            Kind::Channel => &self.channels,
            Kind::Pattern => &self.patterns,
            Kind::Shard => &self.shard_channels,
        }
    }

    /// Adds client `id` to `name`'s subscribers.
    pub fn subscribe(&self, kind: Kind, name: &Bytes, id: u64, subscriber: &Subscriber) {
        self.list(kind)
            .write()
            .entry(name.clone())
            .or_default()
            .insert(id, subscriber.clone());
    }

    /// Removes client `id` from `name`'s subscribers.
    pub fn unsubscribe(&self, kind: Kind, name: &[u8], id: u64) {
        let mut list = self.list(kind).write();
        if let Some(subscribers) = list.get_mut(name) {
            subscribers.remove(&id);
            if subscribers.is_empty() {
                list.remove(name);
            }
        }
    }

    /// Delivers `payload` to the channel's subscribers and to the patterns
    /// matching it; returns how many received it.
    pub fn publish(&self, channel: &[u8], payload: &[u8]) -> usize {
        let channel = Bytes::copy_from_slice(channel);
        let payload = Bytes::copy_from_slice(payload);
        let mut receivers = 0;
        if let Some(subscribers) = self.channels.read().get(&channel) {
            let message = Message {
                delivery: Delivery::Channel,
                channel: channel.clone(),
                payload: payload.clone(),
            };
            receivers += self.deliver(subscribers.values(), &message);
        }
        for (pattern, subscribers) in self.patterns.read().iter() {
            if keel_store::glob_match(pattern, &channel, false) {
                let message = Message {
                    delivery: Delivery::Pattern(pattern.clone()),
                    channel: channel.clone(),
                    payload: payload.clone(),
                };
                receivers += self.deliver(subscribers.values(), &message);
            }
        }
        receivers
    }

    /// Delivers `payload` to the shard channel's subscribers (SPUBLISH);
    /// returns how many received it. Patterns never match shard channels.
    pub fn publish_shard(&self, channel: &[u8], payload: &[u8]) -> usize {
        let shard_channels = self.shard_channels.read();
        let Some(subscribers) = shard_channels.get(channel) else {
            return 0;
        };
        let message = Message {
            delivery: Delivery::Shard,
            channel: Bytes::copy_from_slice(channel),
            payload: Bytes::copy_from_slice(payload),
        };
        self.deliver(subscribers.values(), &message)
    }

    /// Channels (or shard channels) with at least one subscriber, matching
    /// `pattern` if given (PUBSUB CHANNELS, SHARDCHANNELS).
    pub fn active_channels(&self, kind: Kind, pattern: Option<&[u8]>) -> Vec<Bytes> {
        self.list(kind)
            .read()
            .keys()
            .filter(|c| pattern.is_none_or(|p| keel_store::glob_match(p, c, false)))
            .cloned()
            .collect()
    }

    /// The clients logged in as `user` holding a channel or pattern that
    /// `allowed(name, is_pattern)` no longer allows (ACL SETUSER took it
    /// away).
    pub fn subscribers_denied(
        &self,
        user: &str,
        allowed: impl Fn(&[u8], bool) -> bool,
    ) -> Vec<Arc<ClientHandle>> {
        let mut denied: Vec<Arc<ClientHandle>> = Vec::new();
        for kind in [Kind::Channel, Kind::Shard, Kind::Pattern] {
            for (name, subscribers) in self.list(kind).read().iter() {
                for subscriber in subscribers.values() {
                    let client = &subscriber.client;
                    if client.user() == user
                        && !allowed(name, kind == Kind::Pattern)
                        && !denied.iter().any(|c| c.id == client.id)
                    {
                        denied.push(client.clone());
                    }
                }
            }
        }
        denied
    }

    /// Subscribers of `channel` (PUBSUB NUMSUB, SHARDNUMSUB).
    pub fn subscriber_count(&self, kind: Kind, channel: &[u8]) -> usize {
        self.list(kind).read().get(channel).map_or(0, HashMap::len)
    }

    /// Makes `subscriber` (client `id`) a monitor, held to the `normal`
    /// class's output limits.
    pub fn add_monitor(&self, id: u64, subscriber: &Subscriber) {
        let monitor = Subscriber {
            limits: self.monitor_limits.clone(),
            ..subscriber.clone()
        };
        if self.monitors.write().insert(id, monitor).is_none() {
            self.monitor_count.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Ends client `id`'s monitoring, if it monitors.
    pub fn remove_monitor(&self, id: u64) {
        if self.monitors.write().remove(&id).is_some() {
            self.monitor_count.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// True if any client monitors.
    pub fn has_monitors(&self) -> bool {
        self.monitor_count.load(Ordering::Relaxed) > 0
    }

    /// Sends `line` to every monitor.
    pub fn feed_monitors(&self, line: Bytes) {
        let message = Message {
            delivery: Delivery::Monitor,
            channel: Bytes::new(),
            payload: line,
        };
        self.deliver(self.monitors.read().values(), &message);
    }

    /// Patterns with at least one subscriber (PUBSUB NUMPAT).
    pub fn pattern_count(&self) -> usize {
        self.patterns.read().len()
    }

    /// Publishes a keyspace notification for `key` in database `db`, if
    /// `notify-keyspace-events` asks for events of `class`. With
    /// notifications off (the default) this is one relaxed load, so every
    /// write can call it.
    #[inline]
    pub fn notify(&self, class: u64, event: &str, db: usize, key: &[u8]) {
        let flags = self.notify.load(Ordering::Relaxed);
        if flags & class != 0 {
            self.publish_key_event(flags, event, db, key);
        }
    }

    /// True when `notify-keyspace-events` asks for events of `class`.
    #[inline]
    pub fn notifies(&self, class: u64) -> bool {
        self.notify.load(Ordering::Relaxed) & class != 0
    }

    #[cold]
    fn publish_key_event(&self, flags: u64, event: &str, db: usize, key: &[u8]) {
        if flags & KeyspaceEvents::KEYSPACE != 0 {
            let mut channel = format!("__keyspace@{db}__:").into_bytes();
            channel.extend_from_slice(key);
            self.publish(&channel, event.as_bytes());
        }
        if flags & KeyspaceEvents::KEYEVENT != 0 {
            self.publish(format!("__keyevent@{db}__:{event}").as_bytes(), key);
        }
    }
}

impl PubSub {
    /// Queues `message` for each subscriber that can take it within its
    /// limits; returns how many did. Up to [`ARRIVAL_ORDER_MAX_SUBSCRIBERS`]
    /// subscribers, one that already sent a request leaving this
    /// subscription is skipped (see [`leaving`]).
    fn deliver<'a>(
        &self,
        subscribers: impl ExactSizeIterator<Item = &'a Subscriber>,
        message: &Message,
    ) -> usize {
        let now_ms = crate::server::unix_ms();
        let in_arrival_order = subscribers.len() <= ARRIVAL_ORDER_MAX_SUBSCRIBERS;
        subscribers
            .filter(|subscriber| !(in_arrival_order && leaving(subscriber, message)))
            .filter(|subscriber| self.queue(subscriber, message, now_ms))
            .count()
    }

    /// Queues `message` for `subscriber`, charging it to the backlog and the
    /// client budget, unless that would pass a limit: then the subscriber is
    /// disconnected instead, as Redis does.
    fn queue(&self, subscriber: &Subscriber, message: &Message, now_ms: u64) -> bool {
        let backlog = &subscriber.backlog;
        if backlog.over_limit.load(Ordering::Relaxed) {
            return false;
        }
        let bytes = message.bytes();
        let after = (backlog.bytes.load(Ordering::Relaxed) + bytes) as u64;
        let limits = &subscriber.limits;
        let hard = limits.hard.load(Ordering::Relaxed);
        let soft = limits.soft.load(Ordering::Relaxed);
        let over_soft_for_too_long = soft > 0 && after > soft && {
            let since = match backlog.over_soft_since_ms.load(Ordering::Relaxed) {
                0 => {
                    backlog.over_soft_since_ms.store(now_ms, Ordering::Relaxed);
                    now_ms
                }
                since => since,
            };
            let allowed_ms = limits.soft_seconds.load(Ordering::Relaxed) * 1000;
            now_ms.saturating_sub(since) >= allowed_ms
        };
        let over_limit = (hard > 0 && after > hard)
            || over_soft_for_too_long
            || !backlog.budget.try_charge(bytes);
        if over_limit {
            backlog.over_limit.store(true, Ordering::Relaxed);
            subscriber.client.kill();
            return false;
        }
        backlog.bytes.fetch_add(bytes, Ordering::Relaxed);
        if subscriber.inbox.send(message.clone()).is_err() {
            backlog.release(bytes, soft);
            return false;
        }
        true
    }
}

/// Subscribers of one channel or pattern up to which a publisher looks at
/// each one's unsent requests (see [`leaving`]). That costs a syscall per
/// subscriber, which tripled the cost of a message to 50 subscribers; past
/// this many, a message racing an UNSUBSCRIBE may still reach it, the
/// trade-off being a few microseconds of ordering for fan-out speed.
const ARRIVAL_ORDER_MAX_SUBSCRIBERS: usize = 8;

/// True if `subscriber` sent, before this message was published, a request
/// that ends the subscription it would receive it by (see
/// `ClientHandle::is_leaving`): as in Redis, it then does not receive it.
fn leaving(subscriber: &Subscriber, message: &Message) -> bool {
    let client = &subscriber.client;
    match &message.delivery {
        Delivery::Channel => client.is_leaving(Kind::Channel, &message.channel),
        Delivery::Pattern(pattern) => client.is_leaving(Kind::Pattern, pattern),
        Delivery::Shard => client.is_leaving(Kind::Shard, &message.channel),
        Delivery::Monitor => false,
    }
}

/// Where a write publishes its keyspace events: the server's pub/sub and
/// the database of the keys it writes.
#[derive(Clone, Copy)]
pub struct Notifier<'a> {
    /// The server's subscriptions.
    pub pubsub: &'a PubSub,
    /// The database the keys are in.
    pub db: usize,
}

impl Notifier<'_> {
    /// [`PubSub::notify`] in this notifier's database.
    #[inline]
    pub fn notify(&self, class: u64, event: &str, key: &[u8]) {
        self.pubsub.notify(class, event, self.db, key);
    }
}

/// `notify-keyspace-events`: Redis's flag letters, as bits.
pub struct KeyspaceEvents;

impl KeyspaceEvents {
    /// K: publish on `__keyspace@<db>__:<key>`.
    pub const KEYSPACE: u64 = 1 << 0;
    /// E: publish on `__keyevent@<db>__:<event>`.
    pub const KEYEVENT: u64 = 1 << 1;
    /// g: generic commands (DEL, EXPIRE, RENAME, ...).
    pub const GENERIC: u64 = 1 << 2;
    /// $: string commands.
    pub const STRING: u64 = 1 << 3;
    /// l: list commands.
    pub const LIST: u64 = 1 << 4;
    /// s: set commands.
    pub const SET: u64 = 1 << 5;
    /// h: hash commands.
    pub const HASH: u64 = 1 << 6;
    /// z: sorted set commands.
    pub const ZSET: u64 = 1 << 7;
    /// x: keys reclaimed after their TTL.
    pub const EXPIRED: u64 = 1 << 8;
    /// e: keys evicted at maxmemory.
    pub const EVICTED: u64 = 1 << 9;
    /// t: stream commands.
    pub const STREAM: u64 = 1 << 10;
    /// m: key misses.
    pub const MISS: u64 = 1 << 11;
    /// d: module key types.
    pub const MODULE: u64 = 1 << 12;
    /// n: new keys.
    pub const NEW: u64 = 1 << 13;

    /// The event classes in the order Redis prints them.
    const CLASSES: [(char, u64); 11] = [
        ('g', Self::GENERIC),
        ('$', Self::STRING),
        ('l', Self::LIST),
        ('s', Self::SET),
        ('h', Self::HASH),
        ('z', Self::ZSET),
        ('x', Self::EXPIRED),
        ('e', Self::EVICTED),
        ('t', Self::STREAM),
        ('d', Self::MODULE),
        ('n', Self::NEW),
    ];
    /// Letters Redis prints after the classes, in its order.
    const TAIL: [(char, u64); 3] = [
        ('K', Self::KEYSPACE),
        ('E', Self::KEYEVENT),
        ('m', Self::MISS),
    ];
    /// A: every class but m and n, as in Redis.
    const ALL: u64 = Self::GENERIC
        | Self::STRING
        | Self::LIST
        | Self::SET
        | Self::HASH
        | Self::ZSET
        | Self::EXPIRED
        | Self::EVICTED
        | Self::STREAM
        | Self::MODULE;

    /// Parses the flag letters; `None` for an unknown letter. Without K or
    /// E nothing is published, but, as in Redis, the classes are kept.
    pub fn parse(text: &str) -> Option<u64> {
        let mut flags = 0;
        for c in text.chars() {
            flags |= match c {
                'A' => Self::ALL,
                _ => {
                    Self::CLASSES
                        .iter()
                        .chain(Self::TAIL.iter())
                        .find(|(l, _)| *l == c)?
                        .1
                }
            };
        }
        Some(flags)
    }

    /// The flags spelled as Redis's CONFIG GET shows them
    /// (`keyspaceEventsFlagsToString`).
    pub fn format(flags: u64) -> String {
        let mut out = String::new();
        if flags & Self::ALL == Self::ALL {
            out.push('A');
        } else {
            out.extend(
                Self::CLASSES
                    .iter()
                    .filter(|(_, bit)| flags & bit != 0)
                    .map(|(l, _)| *l),
            );
        }
        out.extend(
            Self::TAIL
                .iter()
                .filter(|(_, bit)| flags & bit != 0)
                .map(|(l, _)| *l),
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_parse_and_format_like_redis() {
        let format = |text| KeyspaceEvents::format(KeyspaceEvents::parse(text).unwrap());
        assert_eq!(KeyspaceEvents::parse(""), Some(0));
        assert_eq!(format("x"), "x", "kept, though nothing is published");
        assert_eq!(format("Ex"), "xE");
        assert_eq!(format("KEA"), "AKE");
        assert_eq!(format("mEg$"), "g$Em");
        assert_eq!(KeyspaceEvents::parse("Q"), None);
    }

    fn client(id: u64) -> Arc<ClientHandle> {
        let addr = "127.0.0.1:1".parse().unwrap();
        crate::client::Clients::default().register(addr, addr, id)
    }

    #[tokio::test]
    async fn publish_reaches_channel_and_pattern_subscribers() {
        let pubsub = PubSub::default();
        let (a, mut inbox_a) = pubsub.inbox(client(1));
        let (b, mut inbox_b) = pubsub.inbox(client(2));
        pubsub.subscribe(Kind::Channel, &Bytes::from("news"), 1, &a);
        pubsub.subscribe(Kind::Pattern, &Bytes::from("n*"), 2, &b);
        assert_eq!(pubsub.publish(b"news", b"hello"), 2);
        assert_eq!(pubsub.publish(b"other", b"x"), 0);
        assert_eq!(inbox_a.next().await.unwrap().payload, "hello");
        let m = inbox_b.next().await.unwrap();
        assert_eq!(
            (m.delivery, m.channel),
            (Delivery::Pattern(Bytes::from("n*")), Bytes::from("news"))
        );
        pubsub.unsubscribe(Kind::Channel, b"news", 1);
        assert_eq!(pubsub.subscriber_count(Kind::Channel, b"news"), 0);
        assert!(pubsub.active_channels(Kind::Channel, None).is_empty());
    }

    #[tokio::test]
    async fn shard_channels_are_a_namespace_of_their_own() {
        let pubsub = PubSub::default();
        let (a, mut inbox_a) = pubsub.inbox(client(1));
        pubsub.subscribe(Kind::Shard, &Bytes::from("news"), 1, &a);
        pubsub.subscribe(Kind::Pattern, &Bytes::from("*"), 1, &a);
        assert_eq!(
            pubsub.publish_shard(b"news", b"hi"),
            1,
            "patterns ignore it"
        );
        let m = inbox_a.next().await.unwrap();
        assert_eq!(
            (m.delivery, m.payload),
            (Delivery::Shard, Bytes::from("hi"))
        );
        assert_eq!(pubsub.subscriber_count(Kind::Channel, b"news"), 0);
        assert_eq!(
            pubsub.active_channels(Kind::Shard, None),
            [Bytes::from("news")]
        );
        assert_eq!(pubsub.publish(b"news", b"x"), 1, "only the pattern");
    }

    #[test]
    fn a_monitor_is_held_to_the_normal_limits_and_the_budget() {
        let budget = Arc::new(ClientBudget::default());
        budget.set_limit(0);
        let pubsub = PubSub::new(budget);
        pubsub.set_monitor_limits(OutputLimit {
            hard: 3_000,
            soft: 0,
            soft_seconds: 0,
        });
        let handle = client(1);
        let (subscriber, inbox) = pubsub.inbox(handle.clone());
        pubsub.add_monitor(1, &subscriber);
        assert!(pubsub.has_monitors());
        for _ in 0..10 {
            pubsub.feed_monitors(Bytes::from(vec![b'x'; 1_000]));
        }
        assert!(inbox.over_limit() && handle.is_killed());
        assert_eq!(pubsub.budget.used(), 3_000);
        pubsub.remove_monitor(1);
        assert!(!pubsub.has_monitors());
    }

    /// A subscriber of "news" that never reads, on a pubsub whose backlog
    /// limits are `limit` and whose client budget is `budget_bytes`.
    fn stuck_subscriber(
        limit: OutputLimit,
        budget_bytes: usize,
    ) -> (PubSub, Inbox, Arc<ClientHandle>) {
        let budget = Arc::new(ClientBudget::default());
        budget.set_limit(budget_bytes);
        let pubsub = PubSub::new(budget);
        pubsub.set_limits(limit);
        let handle = client(1);
        let (subscriber, inbox) = pubsub.inbox(handle.clone());
        pubsub.subscribe(Kind::Channel, &Bytes::from("news"), 1, &subscriber);
        (pubsub, inbox, handle)
    }

    #[test]
    fn a_backlog_past_the_hard_limit_disconnects_the_subscriber() {
        let limit = OutputLimit {
            hard: 10_000,
            soft: 0,
            soft_seconds: 0,
        };
        let (pubsub, inbox, handle) = stuck_subscriber(limit, 0);
        let payload = [b'x'; 1_000];
        let delivered: usize = (0..20).map(|_| pubsub.publish(b"news", &payload)).sum();
        assert_eq!(delivered, 9, "nine messages of 1,004 bytes fit in 10,000");
        assert!(inbox.over_limit() && handle.is_killed());
        assert_eq!(
            pubsub.budget.used(),
            9 * 1_004,
            "the backlog is in the client budget"
        );
        drop(inbox);
        assert_eq!(pubsub.budget.used(), 0, "and leaves it with the connection");
    }

    #[test]
    fn a_backlog_past_the_soft_limit_for_too_long_disconnects_the_subscriber() {
        let limit = OutputLimit {
            hard: 0,
            soft: 2_000,
            soft_seconds: 0,
        };
        let (pubsub, inbox, handle) = stuck_subscriber(limit, 0);
        let payload = [b'x'; 1_000];
        let delivered: usize = (0..5).map(|_| pubsub.publish(b"news", &payload)).sum();
        assert_eq!(
            delivered, 1,
            "over the soft limit for 0 s is already too long"
        );
        assert!(inbox.over_limit() && handle.is_killed());
    }

    #[test]
    fn a_backlog_never_passes_the_client_budget() {
        let (pubsub, inbox, handle) = stuck_subscriber(OutputLimit::PUBSUB_DEFAULT, 5_000);
        let payload = [b'x'; 1_000];
        let delivered: usize = (0..10).map(|_| pubsub.publish(b"news", &payload)).sum();
        assert_eq!(delivered, 4);
        assert!(inbox.over_limit() && handle.is_killed());
        assert!(pubsub.budget.used() <= 5_000);
    }
}
