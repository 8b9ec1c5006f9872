//! The connection driver: one small tokio task per connection, sending
//! requests (closed loop: keep `pipeline` in flight; open loop: send each
//! request at its scheduled time, up to `pipeline` in flight) and timing
//! replies.
//!
//! Per connection it holds one socket, a read and a write buffer that start
//! at a few KB, a queue of in-flight request times and one timer — so 5,000+
//! connections cost a few tens of MB, not a thread each. Reads and writes are
//! non-blocking (`try_read`/`try_write` on readiness) so a server that stops
//! reading never wedges the task that must keep reading its replies.
//!
//! Every request ends in exactly one place: a reply (latency recorded), an
//! error reply (counted by prefix), a timeout, a lost connection, or — at
//! the end of the run — "unfinished at end" / "not sent by end". Nothing is
//! dropped silently.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, BytesMut};
use keel_resp::{decode, Frame};
use tokio::net::TcpStream;
use tokio::sync::{watch, Semaphore};

use crate::client::{self, error_kind, io_kind, ClientError, Target};
use crate::schedule::{Arrival, Schedule};
use crate::timeline::{Interval, Recorder};
use crate::workload::{Cmd, Rng, Workload, FILL};

/// How early an open-loop request may go out: tokio's timer has 1 ms
/// resolution, and waking late would add up to 1 ms to every latency.
const LEAD: Duration = Duration::from_millis(1);

/// Error kind for requests still unanswered when the run ended.
pub const UNFINISHED: &str = "unfinished at end";
/// Error kind for open-loop requests that were due but never sent because
/// their connection was busy or down until the end.
pub const NOT_SENT: &str = "not sent by end";

/// How the connections generate load.
#[derive(Clone, Debug)]
pub struct LoadParams {
    /// Number of connections.
    pub connections: usize,
    /// Most requests in flight per connection.
    pub pipeline: usize,
    /// Total open-loop rate in requests/s; `None` for the closed loop.
    pub rate: Option<f64>,
    /// Spacing of open-loop arrivals.
    pub arrival: Arrival,
    /// A request unanswered this long (from its send) is counted as a
    /// timeout and its connection is re-opened, as a client library would.
    pub timeout: Duration,
    /// After the end, how long to wait for in-flight replies.
    pub drain: Duration,
    /// Seed; connection `i` uses `seed + i`.
    pub seed: u64,
}

/// State shared by all connection tasks of one run.
pub struct Shared {
    /// Where to send.
    pub target: Target,
    /// What to send.
    pub workload: Arc<Workload>,
    /// How to send it.
    pub params: LoadParams,
    /// Where to record.
    pub recorder: Recorder,
    /// Connections that finished their first connection attempt.
    pub attempted: AtomicUsize,
    /// Connections currently open.
    pub open: AtomicUsize,
    /// Limits simultaneous connects so thousands of SYNs do not overflow
    /// the server's accept backlog (which turns into 1 s retransmits).
    pub connect_gate: Semaphore,
}

/// The start of the measured phase and its end, sent to every task once all
/// have had their first connection attempt.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    /// Time zero of schedules and of the timeline.
    pub start: Instant,
    /// No request is sent after this.
    pub end: Instant,
}

struct Pending {
    intended: Instant,
    sent: Instant,
    entry: u16,
    key: u64,
}

struct Conn {
    id: usize,
    rng: Rng,
    schedule: Option<Schedule>,
    inflight: VecDeque<Pending>,
    fills: VecDeque<(u16, u64, Instant)>,
    rbuf: BytesMut,
    wbuf: BytesMut,
}

enum Outcome {
    Ended,
    Lost(&'static str),
}

/// Runs one connection until the window ends, reconnecting after failures.
pub async fn run_connection(
    id: usize,
    shared: Arc<Shared>,
    mut window: watch::Receiver<Option<Window>>,
) {
    let p = &shared.params;
    let mut conn = Conn {
        id,
        rng: Rng::new(p.seed.wrapping_add(id as u64)),
        schedule: None,
        inflight: VecDeque::new(),
        fills: VecDeque::new(),
        rbuf: BytesMut::with_capacity(4096),
        wbuf: BytesMut::with_capacity(1024),
    };
    // First attempt before the clock starts, so connection set-up is not
    // measured as latency.
    let mut stream = open(&shared, &mut conn).await;
    shared.attempted.fetch_add(1, Ordering::Relaxed);
    let w = loop {
        if let Some(w) = *window.borrow_and_update() {
            break w;
        }
        if window.changed().await.is_err() {
            return;
        }
    };
    if let Some(rate) = p.rate {
        let per_conn = crate::schedule::per_connection_rate(rate, p.connections);
        conn.schedule = Some(Schedule::new(per_conn, p.arrival, &mut conn.rng));
    }
    let mut backoff = Duration::from_millis(50);
    loop {
        if Instant::now() >= w.end {
            break;
        }
        let s = match stream.take() {
            Some(s) => s,
            None => {
                tokio::time::sleep_until(tokio::time::Instant::from_std(
                    (Instant::now() + backoff).min(w.end),
                ))
                .await;
                backoff = (backoff * 2).min(Duration::from_secs(1));
                if Instant::now() >= w.end {
                    break;
                }
                match open(&shared, &mut conn).await {
                    Some(s) => s,
                    None => continue,
                }
            }
        };
        backoff = Duration::from_millis(50);
        shared.open.fetch_add(1, Ordering::Relaxed);
        let outcome = serve(&shared, &mut conn, &s, w).await;
        shared.open.fetch_sub(1, Ordering::Relaxed);
        match outcome {
            Outcome::Ended => {
                finish(&shared, &mut conn, w);
                return;
            }
            Outcome::Lost(kind) => {
                let lost = conn.inflight.len() as u64;
                shared.recorder.with(id, |i| {
                    i.error(kind, lost.max(1));
                });
                conn.inflight.clear();
                conn.fills.clear();
                conn.rbuf.clear();
                conn.wbuf.clear();
            }
        }
    }
    finish(&shared, &mut conn, w);
}

/// Connects and logs in; counts the failure kind and returns `None` on
/// error.
async fn open(shared: &Shared, conn: &mut Conn) -> Option<TcpStream> {
    let result = {
        let _permit = shared.connect_gate.acquire().await.ok()?;
        connect_and_greet(&shared.target).await
    };
    match result {
        Ok(s) => Some(s),
        Err(e) => {
            let (kind, message) = match &e {
                ClientError::Io(kind, _) => (kind.to_string(), e.to_string()),
                ClientError::Server(m) => (format!("handshake {}", error_kind(m)), m.clone()),
                ClientError::Timeout => ("connect timeout".to_string(), e.to_string()),
                ClientError::Protocol(_) => ("protocol error".to_string(), e.to_string()),
            };
            shared.recorder.note_example(&kind, &message);
            shared.recorder.with(conn.id, |i| i.error(&kind, 1));
            None
        }
    }
}

async fn connect_and_greet(target: &Target) -> Result<TcpStream, ClientError> {
    if !target.resp3 && target.password.is_none() {
        return client::connect(&target.addr, Duration::from_secs(5)).await;
    }
    // Reuse the request/reply client for the handshake, then take its
    // socket back: nothing else is buffered at that point.
    let c = client::Client::open(target, Duration::from_secs(5)).await?;
    Ok(c.into_stream())
}

/// Drives one open connection until the window ends or the connection fails.
async fn serve(shared: &Shared, conn: &mut Conn, stream: &TcpStream, w: Window) -> Outcome {
    let p = &shared.params;
    let workload = &*shared.workload;
    let pipeline = p.pipeline.max(1);
    let slack = Duration::from_millis(100);
    let sleep = tokio::time::sleep_until(tokio::time::Instant::from_std(w.end));
    tokio::pin!(sleep);
    loop {
        let now = Instant::now();
        if now >= w.end {
            return drain(shared, conn, stream, w).await;
        }
        if let Some(front) = conn.inflight.front() {
            if now >= front.sent + p.timeout {
                return Outcome::Lost("timeout");
            }
        }
        // Fill: cache-aside SETs first, then scheduled or closed-loop load.
        let before = conn.inflight.len();
        while conn.inflight.len() < pipeline {
            let Some((entry, key, intended)) = conn.fills.pop_front() else {
                break;
            };
            let sent = workload.encode_fill(entry, key, &mut conn.rng, &mut conn.wbuf);
            conn.inflight.push_back(Pending {
                intended,
                sent: now,
                entry: sent.entry,
                key,
            });
        }
        match conn.schedule.as_mut() {
            None => {
                while conn.inflight.len() < pipeline {
                    let sent = workload.encode_next(&mut conn.rng, &mut conn.wbuf);
                    conn.inflight.push_back(Pending {
                        intended: now,
                        sent: now,
                        entry: sent.entry,
                        key: sent.key,
                    });
                }
            }
            Some(s) => {
                // Timers tick in whole milliseconds, so a request is sent
                // when it is due within LEAD; its latency then runs from the
                // earlier of intended and actual send time, so neither the
                // timer's rounding nor the early send bends the figures.
                while conn.inflight.len() < pipeline && w.start + s.peek() <= now + LEAD {
                    let intended = (w.start + s.advance(&mut conn.rng)).min(now);
                    let sent = workload.encode_next(&mut conn.rng, &mut conn.wbuf);
                    conn.inflight.push_back(Pending {
                        intended,
                        sent: now,
                        entry: sent.entry,
                        key: sent.key,
                    });
                }
            }
        }
        let added = (conn.inflight.len() - before) as u64;
        if added > 0 {
            shared.recorder.with(conn.id, |i| i.sent += added);
        }
        if !conn.wbuf.is_empty() {
            match stream.try_write(&conn.wbuf) {
                Ok(n) => conn.wbuf.advance(n),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Outcome::Lost(io_kind(&e, false)),
            }
            if conn.wbuf.is_empty() && conn.wbuf.capacity() > 256 * 1024 {
                conn.wbuf = BytesMut::with_capacity(1024);
            }
        }
        // Sleep until the next thing that needs doing without I/O: the next
        // scheduled send, a timeout, or the end.
        let mut deadline = w.end;
        let mut exact = true;
        if let Some(s) = &conn.schedule {
            if conn.inflight.len() < pipeline {
                deadline = deadline.min((w.start + s.peek()).checked_sub(LEAD).unwrap_or(w.start));
            }
        }
        if let Some(front) = conn.inflight.front() {
            let t = front.sent + p.timeout;
            if t < deadline {
                deadline = t;
                exact = false;
            }
        }
        let current = sleep.deadline().into_std();
        let keep = if exact {
            current == deadline
        } else {
            current >= deadline && current <= deadline + slack
        };
        if !keep {
            let at = if exact {
                deadline
            } else {
                deadline + slack / 2
            };
            sleep.as_mut().reset(tokio::time::Instant::from_std(at));
        }
        tokio::select! {
            biased;
            r = stream.readable() => {
                if let Err(e) = r {
                    return Outcome::Lost(io_kind(&e, false));
                }
                match read_replies(shared, conn, stream) {
                    Ok(()) => {}
                    Err(kind) => return Outcome::Lost(kind),
                }
            }
            r = stream.writable(), if !conn.wbuf.is_empty() => {
                if let Err(e) = r {
                    return Outcome::Lost(io_kind(&e, false));
                }
            }
            _ = &mut sleep => {}
        }
    }
}

/// Reads what the socket has and accounts every complete reply.
fn read_replies(shared: &Shared, conn: &mut Conn, stream: &TcpStream) -> Result<(), &'static str> {
    let mut got = 0usize;
    loop {
        if conn.rbuf.capacity() - conn.rbuf.len() < 2048 {
            conn.rbuf.reserve(16 * 1024);
        }
        match stream.try_read_buf(&mut conn.rbuf) {
            Ok(0) => return Err("closed by server"),
            Ok(n) => {
                got += n;
                if got > 1 << 20 {
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) => return Err(io_kind(&e, false)),
        }
    }
    if got == 0 {
        return Ok(());
    }
    let now = Instant::now();
    let workload = &*shared.workload;
    let recorder = &shared.recorder;
    let mut result = Ok(());
    let mut example: Option<(String, String)> = None;
    recorder.with(conn.id, |iv: &mut Interval| loop {
        let (frame, used) = match decode(&conn.rbuf) {
            Ok(Some(x)) => x,
            Ok(None) => break,
            Err(e) => {
                example = Some(("protocol error".into(), e.to_string()));
                iv.error("protocol error", 1);
                result = Err("protocol error");
                break;
            }
        };
        conn.rbuf.advance(used);
        if matches!(frame, Frame::Push(_)) {
            continue;
        }
        let Some(req) = conn.inflight.pop_front() else {
            iv.error("unexpected reply", 1);
            result = Err("unexpected reply");
            break;
        };
        if let Frame::Error(msg) = &frame {
            let kind = error_kind(msg);
            iv.error(&kind, 1);
            if example.is_none() {
                example = Some((kind, msg.clone()));
            }
            continue;
        }
        iv.record(now - req.intended, now - req.sent);
        if req.entry == FILL {
            continue;
        }
        let entry = workload.entry(req.entry);
        if !entry.cmd.reads() {
            continue;
        }
        match (&frame, entry.cmd) {
            (Frame::Array(items), Cmd::Mget) => {
                for it in items {
                    if matches!(it, Frame::Null) {
                        iv.misses += 1;
                    } else {
                        iv.hits += 1;
                    }
                }
            }
            (Frame::Null | Frame::NullArray, _) => {
                iv.misses += 1;
                if entry.fill_on_miss {
                    conn.fills.push_back((req.entry, req.key, now));
                }
            }
            _ => iv.hits += 1,
        }
    });
    if let Some((kind, msg)) = example {
        recorder.note_example(&kind, &msg);
    }
    if conn.rbuf.is_empty() && conn.rbuf.capacity() > 256 * 1024 {
        conn.rbuf = BytesMut::with_capacity(4096);
    }
    result
}

/// After the end: stop sending, wait up to `drain` for in-flight replies.
async fn drain(shared: &Shared, conn: &mut Conn, stream: &TcpStream, w: Window) -> Outcome {
    let until = tokio::time::Instant::from_std(w.end + shared.params.drain);
    while !conn.inflight.is_empty() {
        if !conn.wbuf.is_empty() {
            match stream.try_write(&conn.wbuf) {
                Ok(n) => conn.wbuf.advance(n),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(_) => break,
            }
        }
        tokio::select! {
            r = stream.readable() => {
                if r.is_err() || read_replies(shared, conn, stream).is_err() {
                    break;
                }
            }
            r = stream.writable(), if !conn.wbuf.is_empty() => {
                if r.is_err() { break; }
            }
            _ = tokio::time::sleep_until(until) => break,
        }
    }
    Outcome::Ended
}

/// Counts what the run leaves behind: unanswered requests and, in the open
/// loop, requests whose time came but that were never sent.
fn finish(shared: &Shared, conn: &mut Conn, w: Window) {
    let unfinished = conn.inflight.len() as u64;
    let mut unsent = conn.fills.len() as u64;
    if let Some(s) = conn.schedule.as_mut() {
        let span = w.end - w.start;
        while s.peek() < span {
            s.advance(&mut conn.rng);
            unsent += 1;
        }
    }
    shared.recorder.with(conn.id, |i| {
        i.error(UNFINISHED, unfinished);
        i.error(NOT_SENT, unsent);
    });
    conn.inflight.clear();
}
