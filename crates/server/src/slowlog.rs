//! The slow log: the latest commands that ran for at least
//! `slowlog-log-slower-than` microseconds, newest first, at most
//! `slowlog-max-len` of them, kept as Redis keeps them for SLOWLOG GET.
//!
//! Deciding that a command is not slow costs one relaxed atomic load and a
//! comparison, so the command path takes no lock for the commands that
//! are not logged — nearly all of them. A logged command takes the log's
//! lock to add its entry; with a threshold of 0 every command does, which
//! is what that setting is for (debugging), as in Redis.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;

use crate::client::ClientHandle;
use crate::server::unix_ms;

/// Arguments an entry keeps; when a command has more, the last one kept
/// says how many were left out.
const MAX_ARGS: usize = 32;

/// Bytes an entry keeps of a long argument; the rest is replaced by a
/// note of how many bytes were left out.
const MAX_ARG_BYTES: usize = 128;

/// What a redacted argument (a password) is logged as.
const REDACTED: &[u8] = b"(redacted)";

/// One logged command, as SLOWLOG GET shows it.
#[derive(Clone)]
pub struct Entry {
    /// Sequence number, from 0 since start; SLOWLOG RESET does not reset it.
    pub id: u64,
    /// Unix time in seconds when the command was logged.
    pub unix_seconds: u64,
    /// How long the command ran, in microseconds.
    pub duration_usec: u64,
    /// The command's arguments, shortened as Redis shortens them.
    pub args: Vec<Bytes>,
    /// The client's address, `ip:port`.
    pub peer: String,
    /// The client's name when the command ran; empty if none.
    pub client_name: String,
}

/// The slow log of the server.
pub struct SlowLog {
    /// Microseconds from which a command is logged; negative disables the
    /// log.
    threshold_usec: AtomicI64,
    max_len: AtomicUsize,
    entries: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    newest_first: VecDeque<Entry>,
    next_id: u64,
}

impl Default for SlowLog {
    fn default() -> Self {
        SlowLog {
            threshold_usec: AtomicI64::new(-1),
            max_len: AtomicUsize::new(0),
            entries: Mutex::default(),
        }
    }
}

impl SlowLog {
    /// Applies `slowlog-log-slower-than` and `slowlog-max-len`; a shorter
    /// maximum drops the oldest entries at once.
    pub fn configure(&self, threshold_usec: i64, max_len: usize) {
        self.threshold_usec.store(threshold_usec, Ordering::Relaxed);
        self.max_len.store(max_len, Ordering::Relaxed);
        self.entries.lock().newest_first.truncate(max_len);
    }

    /// True if a command that ran for `elapsed` is to be logged.
    pub fn is_slow(&self, elapsed: Duration) -> bool {
        let threshold = self.threshold_usec.load(Ordering::Relaxed);
        threshold >= 0 && elapsed.as_micros() >= threshold as u128
    }

    /// Logs a command that ran for `elapsed`; the arguments at the indexes
    /// in `redacted` are logged as "(redacted)".
    pub fn push(
        &self,
        args: &[Bytes],
        redacted: &[usize],
        elapsed: Duration,
        client: &ClientHandle,
    ) {
        let mut entry = Entry {
            id: 0,
            unix_seconds: unix_ms() / 1000,
            duration_usec: u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX),
            args: kept_args(args, redacted),
            peer: client.addr.to_string(),
            // Cut as an argument is: a name of megabytes in every entry
            // made the log hold 34 MB (found by the command fuzzer).
            client_name: String::from_utf8_lossy(&kept_bytes(client.name().as_bytes()))
                .into_owned(),
        };
        let max_len = self.max_len.load(Ordering::Relaxed);
        let mut entries = self.entries.lock();
        entry.id = entries.next_id;
        entries.next_id += 1;
        entries.newest_first.push_front(entry);
        entries.newest_first.truncate(max_len);
    }

    /// The newest `count` entries, newest first.
    pub fn newest(&self, count: usize) -> Vec<Entry> {
        let entries = self.entries.lock();
        entries.newest_first.iter().take(count).cloned().collect()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.lock().newest_first.len()
    }

    /// Drops every entry (SLOWLOG RESET).
    pub fn reset(&self) {
        self.entries.lock().newest_first.clear();
    }
}

/// The arguments an entry keeps, as Redis's `slowlogCreateEntry` keeps
/// them: at most [`MAX_ARGS`], the last of those replaced by
/// "... (N more arguments)" when some are left out, each cut to
/// [`MAX_ARG_BYTES`] plus "... (N more bytes)". They are copies, so an
/// entry does not keep a connection's read buffer alive.
fn kept_args(args: &[Bytes], redacted: &[usize]) -> Vec<Bytes> {
    let kept = args.len().min(MAX_ARGS);
    (0..kept)
        .map(|i| {
            let arg = &args[i];
            if kept < args.len() && i == kept - 1 {
                let left_out = args.len() - kept + 1;
                Bytes::from(format!("... ({left_out} more arguments)"))
            } else if redacted.contains(&i) {
                Bytes::from_static(REDACTED)
            } else {
                Bytes::from(kept_bytes(arg))
            }
        })
        .collect()
}

/// A copy of `text` cut to [`MAX_ARG_BYTES`] plus "... (N more bytes)".
fn kept_bytes(text: &[u8]) -> Vec<u8> {
    if text.len() <= MAX_ARG_BYTES {
        return text.to_vec();
    }
    let mut cut = text[..MAX_ARG_BYTES].to_vec();
    let left_out = text.len() - MAX_ARG_BYTES;
    cut.extend_from_slice(format!("... ({left_out} more bytes)").as_bytes());
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[&str]) -> Vec<Bytes> {
        list.iter().map(|w| Bytes::from(w.to_string())).collect()
    }

    #[test]
    fn long_commands_are_shortened_as_redis_does() {
        let many: Vec<String> = (0..40).map(|n| n.to_string()).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        let kept = kept_args(&words(&many), &[]);
        assert_eq!(kept.len(), 32);
        assert_eq!(kept[30], "30");
        assert_eq!(kept[31], "... (9 more arguments)");
        let long = "x".repeat(200);
        let kept = kept_args(&words(&["set", "k", &long]), &[]);
        assert_eq!(kept[2], format!("{}... (72 more bytes)", "x".repeat(128)));
        let kept = kept_args(&words(&["auth", "user", "secret"]), &[1, 2]);
        assert_eq!(kept, words(&["auth", "(redacted)", "(redacted)"]));
    }

    #[test]
    fn threshold_and_length_apply() {
        let log = SlowLog::default();
        assert!(
            !log.is_slow(Duration::from_secs(100)),
            "off until configured"
        );
        log.configure(10, 2);
        assert!(!log.is_slow(Duration::from_micros(9)));
        assert!(log.is_slow(Duration::from_micros(10)));
        let addr = "127.0.0.1:5000".parse().unwrap();
        let client = crate::client::Clients::default().register(addr, addr, 0);
        for word in ["a", "b", "c"] {
            log.push(&words(&[word]), &[], Duration::from_micros(12), &client);
        }
        let entries = log.newest(10);
        let ids: Vec<u64> = entries.iter().map(|e| e.id).collect();
        assert_eq!(ids, [2, 1], "newest first, the oldest dropped");
        assert_eq!(
            (entries[0].duration_usec, entries[0].peer.as_str()),
            (12, "127.0.0.1:5000")
        );
        log.configure(10, 1);
        assert_eq!(log.len(), 1);
        log.reset();
        log.push(&words(&["d"]), &[], Duration::ZERO, &client);
        assert_eq!(log.newest(1)[0].id, 3, "ids go on after a reset");
    }

    #[test]
    fn an_entry_keeps_a_long_client_name_cut() {
        let log = SlowLog::default();
        log.configure(0, 1);
        let addr = "127.0.0.1:5000".parse().unwrap();
        let client = crate::client::Clients::default().register(addr, addr, 0);
        client.set_name("n".repeat(1 << 20));
        log.push(&words(&["get", "k"]), &[], Duration::ZERO, &client);
        let name = log.newest(1)[0].client_name.clone();
        assert_eq!(name, format!("{}... (1048448 more bytes)", "n".repeat(128)));
    }
}
