//! The ACL log: recent denials and failed logins, newest first. A denial
//! like one of the last ten (same reason, context, object and user, within
//! a minute) bumps that entry's count and moves it to the front instead of
//! adding one, so a password guessed ten thousand times is one entry.

use std::collections::VecDeque;

/// How far back a repeat may be folded into an entry.
const GROUPING_MS: u64 = 60_000;
/// How many of the newest entries a new one is compared with.
const SCANNED: usize = 10;

/// Why something was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    Command,
    Key,
    Channel,
    Auth,
}

impl Reason {
    pub fn name(self) -> &'static str {
        match self {
            Reason::Command => "command",
            Reason::Key => "key",
            Reason::Channel => "channel",
            Reason::Auth => "auth",
        }
    }
}

/// Where the refused command came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Context {
    Toplevel,
    Multi,
    Lua,
}

impl Context {
    pub fn name(self) -> &'static str {
        match self {
            Context::Toplevel => "toplevel",
            Context::Multi => "multi",
            Context::Lua => "lua",
        }
    }
}

/// One entry.
#[derive(Clone, Debug)]
pub struct Entry {
    pub count: u64,
    pub reason: Reason,
    pub context: Context,
    /// The command, key or channel refused, or the command that failed to
    /// log in.
    pub object: Vec<u8>,
    pub username: Vec<u8>,
    /// When it last happened, in Unix milliseconds.
    pub at_ms: u64,
    /// CLIENT INFO of the client it last happened to.
    pub client_info: String,
}

/// The log.
#[derive(Default)]
pub struct Log {
    entries: VecDeque<Entry>,
}

impl Log {
    /// Records `entry` (its count is ignored), keeping at most `max_len`
    /// entries.
    pub fn add(&mut self, mut entry: Entry, max_len: usize) {
        let repeat = (self.entries.iter().take(SCANNED)).position(|e| {
            e.reason == entry.reason
                && e.context == entry.context
                && e.at_ms.abs_diff(entry.at_ms) <= GROUPING_MS
                && e.object == entry.object
                && e.username == entry.username
        });
        match repeat.and_then(|i| self.entries.remove(i)) {
            Some(previous) => {
                entry.count = previous.count + 1;
                self.entries.push_front(entry);
            }
            None => {
                entry.count = 1;
                self.entries.push_front(entry);
                self.entries.truncate(max_len);
            }
        }
    }

    /// Entries, newest first.
    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn reset(&mut self) {
        self.entries.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(object: &str, at_ms: u64) -> Entry {
        Entry {
            count: 0,
            reason: Reason::Auth,
            context: Context::Toplevel,
            object: object.into(),
            username: b"alice".to_vec(),
            at_ms,
            client_info: format!("at {at_ms}"),
        }
    }

    #[test]
    fn repeats_within_a_minute_fold_into_one_entry() {
        let mut log = Log::default();
        for i in 0..10_000 {
            log.add(entry("AUTH", i), 128);
        }
        assert_eq!(log.len(), 1);
        let only = log.entries().next().unwrap();
        assert_eq!((only.count, only.client_info.as_str()), (10_000, "at 9999"));
        log.add(entry("AUTH", 9_999 + GROUPING_MS + 1), 128);
        assert_eq!(log.len(), 2, "a minute later it is a new entry");
    }

    #[test]
    fn the_log_keeps_the_newest_entries() {
        let mut log = Log::default();
        for i in 0..5 {
            log.add(entry(&format!("k{i}"), 0), 3);
        }
        let objects: Vec<&[u8]> = log.entries().map(|e| &e.object[..]).collect();
        assert_eq!(objects, [&b"k4"[..], b"k3", b"k2"]);
    }
}
