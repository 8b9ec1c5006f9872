//! Publish/subscribe and keyspace notifications.
//!
//! A subscribing connection gets an inbox (an unbounded channel) that its
//! connection loop waits on beside its socket. PUBLISH looks up the
//! channel's subscribers and the patterns that match it under a read lock
//! and drops the message into each inbox: publishing never waits for a
//! subscriber, and a subscriber's backlog is bounded by Redis's
//! `client-output-buffer-limit pubsub` class (32 MB hard by default), past
//! which the subscriber is disconnected, as Redis does.
//!
//! Keyspace notifications (`notify-keyspace-events`) are messages keel
//! publishes itself on `__keyspace@<db>__:<key>` and
//! `__keyevent@<db>__:<event>`. The store reports expired and evicted keys
//! through a hook on every path that removes them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::RwLock;
use tokio::sync::mpsc;

/// Hard limit of a subscriber's undelivered messages, Redis's default for
/// the pubsub class.
pub const SUBSCRIBER_BACKLOG_LIMIT: usize = 32 * 1024 * 1024;

/// A message on its way to a subscriber.
#[derive(Debug, Clone)]
pub struct Message {
    /// The pattern that matched, for pattern subscriptions.
    pub pattern: Option<Bytes>,
    /// The channel it was published on.
    pub channel: Bytes,
    /// What was published.
    pub payload: Bytes,
}

impl Message {
    fn bytes(&self) -> usize {
        self.pattern.as_ref().map_or(0, |p| p.len()) + self.channel.len() + self.payload.len()
    }
}

/// The sending side of a subscriber's inbox.
#[derive(Clone)]
pub struct Subscriber {
    inbox: mpsc::UnboundedSender<Message>,
    /// Bytes sent but not yet written to the socket.
    backlog: Arc<AtomicUsize>,
}

/// A connection's inbox: what its loop waits on.
pub struct Inbox {
    receiver: mpsc::UnboundedReceiver<Message>,
    backlog: Arc<AtomicUsize>,
}

impl Inbox {
    /// The next message; `None` when the connection has been dropped from
    /// every subscription list.
    pub async fn next(&mut self) -> Option<Message> {
        let message = self.receiver.recv().await?;
        self.backlog.fetch_sub(message.bytes(), Ordering::Relaxed);
        Some(message)
    }

    /// A message already waiting, without waiting for one.
    pub fn try_next(&mut self) -> Option<Message> {
        let message = self.receiver.try_recv().ok()?;
        self.backlog.fetch_sub(message.bytes(), Ordering::Relaxed);
        Some(message)
    }

    /// True when the subscriber has fallen further behind than Redis's
    /// pubsub output limit allows.
    pub fn over_limit(&self) -> bool {
        self.backlog.load(Ordering::Relaxed) > SUBSCRIBER_BACKLOG_LIMIT
    }
}

/// A new inbox and the handle publishers send to.
pub fn inbox() -> (Subscriber, Inbox) {
    let (sender, receiver) = mpsc::unbounded_channel();
    let backlog = Arc::new(AtomicUsize::new(0));
    (
        Subscriber {
            inbox: sender,
            backlog: backlog.clone(),
        },
        Inbox { receiver, backlog },
    )
}

type Subscribers = HashMap<Bytes, HashMap<u64, Subscriber>>;

/// Every channel and pattern subscription of the server.
#[derive(Default)]
pub struct PubSub {
    channels: RwLock<Subscribers>,
    patterns: RwLock<Subscribers>,
    /// `notify-keyspace-events` as flags (see [`KeyspaceEvents`]).
    pub notify: AtomicU64,
}

/// Which list a subscription goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// SUBSCRIBE: an exact channel name.
    Channel,
    /// PSUBSCRIBE: a glob pattern.
    Pattern,
}

impl PubSub {
    fn list(&self, kind: Kind) -> &RwLock<Subscribers> {
        match kind {
            Kind::Channel => &self.channels,
            Kind::Pattern => &self.patterns,
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
                pattern: None,
                channel: channel.clone(),
                payload: payload.clone(),
            };
            receivers += deliver(subscribers, &message);
        }
        for (pattern, subscribers) in self.patterns.read().iter() {
            if keel_store::glob_match(pattern, &channel, false) {
                let message = Message {
                    pattern: Some(pattern.clone()),
                    channel: channel.clone(),
                    payload: payload.clone(),
                };
                receivers += deliver(subscribers, &message);
            }
        }
        receivers
    }

    /// Channels with at least one subscriber, matching `pattern` if given
    /// (PUBSUB CHANNELS).
    pub fn active_channels(&self, pattern: Option<&[u8]>) -> Vec<Bytes> {
        self.channels
            .read()
            .keys()
            .filter(|c| pattern.is_none_or(|p| keel_store::glob_match(p, c, false)))
            .cloned()
            .collect()
    }

    /// Subscribers of `channel` (PUBSUB NUMSUB).
    pub fn subscriber_count(&self, channel: &[u8]) -> usize {
        self.channels.read().get(channel).map_or(0, HashMap::len)
    }

    /// Patterns with at least one subscriber (PUBSUB NUMPAT).
    pub fn pattern_count(&self) -> usize {
        self.patterns.read().len()
    }

    /// Publishes a keyspace notification for `key` in database `db`, if
    /// `notify-keyspace-events` asks for events of `class`.
    pub fn notify(&self, class: u64, event: &str, db: usize, key: &[u8]) {
        let flags = self.notify.load(Ordering::Relaxed);
        if flags & class == 0 {
            return;
        }
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

fn deliver(subscribers: &HashMap<u64, Subscriber>, message: &Message) -> usize {
    let mut delivered = 0;
    for subscriber in subscribers.values() {
        subscriber
            .backlog
            .fetch_add(message.bytes(), Ordering::Relaxed);
        if subscriber.inbox.send(message.clone()).is_ok() {
            delivered += 1;
        }
    }
    delivered
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

    #[tokio::test]
    async fn publish_reaches_channel_and_pattern_subscribers() {
        let pubsub = PubSub::default();
        let (a, mut inbox_a) = inbox();
        let (b, mut inbox_b) = inbox();
        pubsub.subscribe(Kind::Channel, &Bytes::from("news"), 1, &a);
        pubsub.subscribe(Kind::Pattern, &Bytes::from("n*"), 2, &b);
        assert_eq!(pubsub.publish(b"news", b"hello"), 2);
        assert_eq!(pubsub.publish(b"other", b"x"), 0);
        assert_eq!(inbox_a.next().await.unwrap().payload, "hello");
        let m = inbox_b.next().await.unwrap();
        assert_eq!(
            (m.pattern.unwrap(), m.channel),
            (Bytes::from("n*"), Bytes::from("news"))
        );
        pubsub.unsubscribe(Kind::Channel, b"news", 1);
        assert_eq!(pubsub.subscriber_count(b"news"), 0);
        assert!(pubsub.active_channels(None).is_empty());
    }
}
