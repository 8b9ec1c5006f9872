//! `keel-floor`: the least CPU a RESP server can spend per request on this
//! machine, to read a server's figure against.
//!
//! It answers every complete request with `+OK` and does nothing else: no
//! keyspace, no command table, no allocation per request, one thread. What
//! it spends per request is the kernel's part (waiting for sockets, reading,
//! writing, the TCP stack on loopback) plus finding where each request ends.
//! `bench/cpu-per-op.sh` runs it beside redis-server and keel under the same
//! load, so that keel's ratio to Redis can be read against the lowest ratio
//! any server could reach with the same I/O.
//!
//! Three kinds of I/O:
//! - `epoll`, as Redis does it: `epoll_wait`, then for each ready
//!   connection one read and one write;
//! - `tokio`, as each keel worker does it: tokio's current-thread runtime
//!   (an event interval of 16), a task per connection waiting for its
//!   socket to be readable, a short read clearing the readiness so that no
//!   empty read follows. What the runtime adds to plain epoll;
//! - `uring`: io_uring (single issuer, task work deferred to the wait),
//!   where one `io_uring_enter` both hands the kernel every connection's
//!   next receive and send and waits for completions. It makes a tenth of
//!   epoll's syscalls, and on this project's machines costs as much CPU
//!   (bench/results/2026-11-27-issue24-round6.md): what the per-core
//!   throughput work can expect of io_uring.
//!
//! With `--keyspace` it executes SET, MSET, GET, LPUSH and HSET instead of
//! answering `+OK`: on one hash map of owned keys, strings, lists and
//! hashes (each a hash map of owned fields and values), hashed with
//! foldhash as keel's are, with nothing else (no expiry, no memory
//! accounting, no eviction, no access control, no statistics, no command
//! table). It is a plain implementation, not a proven minimum (no
//! allocation per list element would save a little), but what it spends
//! per request is about the least a server that does those commands can
//! spend, so its ratio to Redis says how low a real server's can go here
//! (bench/results/2026-11-28-issue24-round12.md, and round fourteen for
//! HSET and the hasher). Other commands get an error.
//!
//! A connection that sends more than [`MAX_UNANSWERED`] bytes without a
//! complete request (an inline command, say, which this server does not
//! parse) is closed.
//!
//!     keel-floor --port PORT [--io epoll|tokio|uring] [--keyspace]

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::{self, ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::ops::Range;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::process::ExitCode;
use std::rc::Rc;

use foldhash::HashMap;
use io_uring::{opcode, squeue, types, IoUring};
use keel_resp::Walked;

/// Bytes read at a time, per connection.
const READ_SIZE: usize = 16 * 1024;
/// The reply to every request.
const REPLY: &[u8] = b"+OK\r\n";
/// Bytes a connection may send that make no complete request.
const MAX_UNANSWERED: usize = 1 << 20;

/// One connection's request and reply bytes. Received bytes are
/// `input[start..end]`; the buffer is zeroed once, when it grows, not per
/// read.
struct Buffers {
    input: Vec<u8>,
    start: usize,
    end: usize,
    output: Vec<u8>,
}

impl Buffers {
    fn new() -> Self {
        Buffers {
            input: vec![0; READ_SIZE],
            start: 0,
            end: 0,
            output: Vec::new(),
        }
    }

    /// Answers every complete request received (executing it on
    /// `keyspace` if there is one) and drops it from `input`; false if what
    /// is left is more than [`MAX_UNANSWERED`] bytes.
    fn answer(&mut self, keyspace: Option<&mut Keyspace>) -> bool {
        let received = &self.input[self.start..self.end];
        let taken = match keyspace {
            Some(keyspace) => keyspace.execute_all(received, &mut self.output),
            None => {
                let (answered, taken) = keel_resp::complete_requests(received);
                for _ in 0..answered {
                    self.output.extend_from_slice(REPLY);
                }
                taken
            }
        };
        self.start += taken;
        self.end - self.start <= MAX_UNANSWERED
    }

    /// Room for at least `READ_SIZE` more bytes after those received.
    fn spare(&mut self) -> &mut [u8] {
        if self.input.len() - self.end < READ_SIZE {
            self.input.copy_within(self.start..self.end, 0);
            (self.start, self.end) = (0, self.end - self.start);
            if self.input.len() - self.end < READ_SIZE {
                self.input.resize(self.end + READ_SIZE, 0);
            }
        }
        &mut self.input[self.end..]
    }

    /// Keeps `read` more bytes, received into what `spare` handed out.
    fn keep(&mut self, read: usize) {
        self.end += read;
    }
}

/// `--keyspace`'s store: each key's string, list or hash, and the arguments of
/// the request being read, as positions in the connection's input.
#[derive(Default)]
struct Keyspace {
    keys: HashMap<Vec<u8>, Value>,
    arguments: Vec<Range<usize>>,
}

enum Value {
    String(Vec<u8>),
    List(VecDeque<Vec<u8>>),
    Hash(HashMap<Vec<u8>, Vec<u8>>),
}

const WRONGTYPE: &[u8] = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
const UNSUPPORTED: &[u8] = b"-ERR keel-floor executes SET, MSET, GET, LPUSH and HSET only\r\n";

impl Keyspace {
    /// Executes every complete request in `received`, replying into
    /// `output`; returns the bytes they took.
    fn execute_all(&mut self, received: &[u8], output: &mut Vec<u8>) -> usize {
        let (_, taken) = keel_resp::walk_complete_requests(received, |step| match step {
            Walked::Argument(0, at) => {
                self.arguments.clear();
                self.arguments.push(at);
            }
            Walked::Argument(_, at) => self.arguments.push(at),
            Walked::RequestEnd => self.execute(received, output),
        });
        taken
    }

    fn execute(&mut self, received: &[u8], output: &mut Vec<u8>) {
        let argument = |index: usize| &received[self.arguments[index].clone()];
        let (name, count) = (argument(0), self.arguments.len());
        if name.eq_ignore_ascii_case(b"SET") && count == 3 {
            set(&mut self.keys, argument(1), argument(2));
            output.extend_from_slice(b"+OK\r\n");
        } else if name.eq_ignore_ascii_case(b"MSET") && count >= 3 && count % 2 == 1 {
            for pair in (1..count).step_by(2) {
                set(&mut self.keys, argument(pair), argument(pair + 1));
            }
            output.extend_from_slice(b"+OK\r\n");
        } else if name.eq_ignore_ascii_case(b"GET") && count == 2 {
            match self.keys.get(argument(1)) {
                Some(Value::String(value)) => {
                    write!(output, "${}\r\n", value.len()).expect("a Vec takes every write");
                    output.extend_from_slice(value);
                    output.extend_from_slice(b"\r\n");
                }
                Some(_) => output.extend_from_slice(WRONGTYPE),
                None => output.extend_from_slice(b"$-1\r\n"),
            }
        } else if name.eq_ignore_ascii_case(b"LPUSH") && count >= 3 {
            let kind: Kind<VecDeque<_>> = (Value::list, Value::List);
            update(&mut self.keys, argument(1), kind, output, |list, output| {
                for index in 2..count {
                    list.push_front(argument(index).to_vec());
                }
                write!(output, ":{}\r\n", list.len()).expect("a Vec takes every write");
            });
        } else if name.eq_ignore_ascii_case(b"HSET") && count >= 4 && count % 2 == 0 {
            let kind: Kind<HashMap<_, _>> = (Value::hash, Value::Hash);
            update(&mut self.keys, argument(1), kind, output, |hash, output| {
                let mut added = 0;
                for pair in (2..count).step_by(2) {
                    let value = argument(pair + 1);
                    match hash.get_mut(argument(pair)) {
                        Some(held) => write_over(held, value),
                        None => {
                            hash.insert(argument(pair).to_vec(), value.to_vec());
                            added += 1;
                        }
                    }
                }
                write!(output, ":{added}\r\n").expect("a Vec takes every write");
            });
        } else {
            output.extend_from_slice(UNSUPPORTED);
        }
    }
}

impl Value {
    /// The list, or `None` for another type.
    fn list(&mut self) -> Option<&mut VecDeque<Vec<u8>>> {
        match self {
            Value::List(list) => Some(list),
            _ => None,
        }
    }

    /// The hash, or `None` for another type.
    fn hash(&mut self) -> Option<&mut HashMap<Vec<u8>, Vec<u8>>> {
        match self {
            Value::Hash(hash) => Some(hash),
            _ => None,
        }
    }
}

/// A collection type: how to see a value as one, and how to store one.
type Kind<C> = (fn(&mut Value) -> Option<&mut C>, fn(C) -> Value);

/// Runs `write` on the collection at `key`, a new empty one for an absent
/// key (stored after the write); WRONGTYPE for a key of another type.
fn update<C: Default>(
    keys: &mut HashMap<Vec<u8>, Value>,
    key: &[u8],
    (as_kind, store): Kind<C>,
    output: &mut Vec<u8>,
    write: impl FnOnce(&mut C, &mut Vec<u8>),
) {
    match keys.get_mut(key) {
        Some(value) => match as_kind(value) {
            Some(collection) => write(collection, output),
            None => output.extend_from_slice(WRONGTYPE),
        },
        None => {
            let mut collection = C::default();
            write(&mut collection, output);
            keys.insert(key.to_vec(), store(collection));
        }
    }
}

/// Makes `key` the string `value`, in the string's own buffer if it is one.
fn set(keys: &mut HashMap<Vec<u8>, Value>, key: &[u8], value: &[u8]) {
    match keys.get_mut(key) {
        Some(Value::String(held)) => write_over(held, value),
        Some(other) => *other = Value::String(value.to_vec()),
        None => {
            keys.insert(key.to_vec(), Value::String(value.to_vec()));
        }
    }
}

/// Replaces the bytes `held` with `value`, in `held`'s own buffer.
fn write_over(held: &mut Vec<u8>, value: &[u8]) {
    held.clear();
    held.extend_from_slice(value);
}

fn main() -> ExitCode {
    let usage = "usage: keel-floor --port PORT [--io epoll|tokio|uring] [--keyspace]";
    let (mut port, mut io, mut keyspace) = (None, "epoll".to_string(), None);
    let mut words = std::env::args().skip(1);
    while let Some(flag) = words.next() {
        match flag.as_str() {
            "--port" => port = words.next().and_then(|value| value.parse::<u16>().ok()),
            "--io" => io = words.next().unwrap_or_default(),
            "--keyspace" => keyspace = Some(Keyspace::default()),
            _ => port = None,
        }
    }
    let Some(port) = port else {
        eprintln!("{usage}");
        return ExitCode::from(2);
    };
    let served = TcpListener::bind(("127.0.0.1", port)).and_then(|listener| match io.as_str() {
        "epoll" => serve_epoll(listener, keyspace),
        "tokio" => serve_tokio(listener, keyspace),
        "uring" => serve_uring(listener, keyspace),
        other => Err(io::Error::new(
            ErrorKind::InvalidInput,
            format!("unknown --io {other}: epoll, tokio or uring"),
        )),
    });
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("keel-floor: {error}");
            ExitCode::FAILURE
        }
    }
}

/// The index of a free place in `connections`, made at the end if none is.
fn free_index<T>(connections: &mut Vec<Option<T>>) -> usize {
    match connections.iter().position(Option::is_none) {
        Some(free) => free,
        None => {
            connections.push(None);
            connections.len() - 1
        }
    }
}

/// Turns a libc return value into a `Result`.
fn check(result: i32) -> io::Result<i32> {
    if result < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(result)
    }
}

/// The epoll token of the listening socket; connections use their index.
const LISTENER: u64 = u64::MAX;

fn epoll_set(epoll: RawFd, op: i32, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
    let mut event = libc::epoll_event { events, u64: token };
    // SAFETY: `event` outlives the call; epoll_ctl copies it.
    check(unsafe { libc::epoll_ctl(epoll, op, fd, &mut event) }).map(drop)
}

/// An epoll connection: its socket, and whether unsent output made it ask
/// for writability.
struct Polled {
    stream: TcpStream,
    buffers: Buffers,
    awaiting_writable: bool,
}

fn serve_epoll(listener: TcpListener, mut keyspace: Option<Keyspace>) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    // SAFETY: a plain syscall; the descriptor is owned by `_epoll` below.
    let epoll = check(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
    // SAFETY: epoll_create1 returned a new descriptor that nothing else owns.
    let _epoll = unsafe { std::fs::File::from_raw_fd(epoll) };
    epoll_set(
        epoll,
        libc::EPOLL_CTL_ADD,
        listener.as_raw_fd(),
        libc::EPOLLIN as u32,
        LISTENER,
    )?;
    let mut connections: Vec<Option<Polled>> = Vec::new();
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 256];
    loop {
        // SAFETY: `events` holds as many entries as the call is told.
        let ready = match check(unsafe {
            libc::epoll_wait(epoll, events.as_mut_ptr(), events.len() as i32, -1)
        }) {
            Ok(ready) => ready as usize,
            Err(error) if error.kind() == ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        for event in &events[..ready] {
            let token = event.u64;
            if token == LISTENER {
                accept_polled(&listener, epoll, &mut connections)?;
                continue;
            }
            let slot = &mut connections[token as usize];
            let keep = slot.as_mut().is_some_and(|connection| {
                serve_polled(epoll, token, connection, keyspace.as_mut()).unwrap_or(false)
            });
            if !keep {
                *slot = None;
            }
        }
    }
}

fn accept_polled(
    listener: &TcpListener,
    epoll: RawFd,
    connections: &mut Vec<Option<Polled>>,
) -> io::Result<()> {
    loop {
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(error) if error.kind() == ErrorKind::WouldBlock => return Ok(()),
            Err(error) => return Err(error),
        };
        stream.set_nonblocking(true)?;
        stream.set_nodelay(true)?;
        let index = free_index(connections);
        epoll_set(
            epoll,
            libc::EPOLL_CTL_ADD,
            stream.as_raw_fd(),
            libc::EPOLLIN as u32,
            index as u64,
        )?;
        connections[index] = Some(Polled {
            stream,
            buffers: Buffers::new(),
            awaiting_writable: false,
        });
    }
}

/// One read and one write; false once the connection is done.
fn serve_polled(
    epoll: RawFd,
    token: u64,
    connection: &mut Polled,
    keyspace: Option<&mut Keyspace>,
) -> io::Result<bool> {
    let Polled {
        stream, buffers, ..
    } = connection;
    match stream.read(buffers.spare()) {
        Ok(0) => return Ok(false),
        Ok(read) => buffers.keep(read),
        Err(error) if error.kind() == ErrorKind::WouldBlock => {}
        Err(error) => return Err(error),
    }
    if !buffers.answer(keyspace) {
        return Ok(false);
    }
    if !buffers.output.is_empty() {
        match stream.write(&buffers.output) {
            Ok(written) => drop(buffers.output.drain(..written)),
            Err(error) if error.kind() == ErrorKind::WouldBlock => {}
            Err(error) => return Err(error),
        }
    }
    let pending = !buffers.output.is_empty();
    if pending != connection.awaiting_writable {
        let events = libc::EPOLLIN as u32 | if pending { libc::EPOLLOUT as u32 } else { 0 };
        epoll_set(
            epoll,
            libc::EPOLL_CTL_MOD,
            stream.as_raw_fd(),
            events,
            token,
        )?;
        connection.awaiting_writable = pending;
    }
    Ok(true)
}

/// Tasks between two looks for socket events, as in a keel worker
/// (`WORKER_EVENT_INTERVAL` in keel-server).
const TOKIO_EVENT_INTERVAL: u32 = 16;

fn serve_tokio(listener: TcpListener, keyspace: Option<Keyspace>) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .event_interval(TOKIO_EVENT_INTERVAL)
        .build()?;
    let keyspace = Rc::new(RefCell::new(keyspace));
    tokio::task::LocalSet::new().block_on(&runtime, async move {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        loop {
            let (stream, _) = listener.accept().await?;
            stream.set_nodelay(true)?;
            tokio::task::spawn_local(serve_task(stream, keyspace.clone()));
        }
    })
}

/// One connection's task: one read and one write per wake-up, until the
/// peer closes or fails.
async fn serve_task(stream: tokio::net::TcpStream, keyspace: Rc<RefCell<Option<Keyspace>>>) {
    let mut buffers = Buffers::new();
    loop {
        match read_clearing_readiness(&stream, &mut buffers).await {
            Ok(0) | Err(_) => return,
            Ok(read) => buffers.keep(read),
        }
        if !buffers.answer(keyspace.borrow_mut().as_mut()) {
            return;
        }
        while !buffers.output.is_empty() {
            match stream.try_write(&buffers.output) {
                Ok(written) => drop(buffers.output.drain(..written)),
                Err(error) if error.kind() == ErrorKind::WouldBlock => {
                    if stream.writable().await.is_err() {
                        return;
                    }
                }
                Err(_) => return,
            }
        }
    }
}

/// Waits for data and reads it (0: the peer closed). A read that leaves
/// room in the buffer drained the socket, so it clears the readiness
/// itself, as keel's `read_available` does: tokio would otherwise wake the
/// task again only for a read that finds nothing.
async fn read_clearing_readiness(
    stream: &tokio::net::TcpStream,
    buffers: &mut Buffers,
) -> io::Result<usize> {
    loop {
        stream.readable().await?;
        let mut drained = None;
        let read = stream.try_io(tokio::io::Interest::READABLE, || {
            let spare = buffers.spare();
            // SAFETY: `spare` is writable for its length and outlives the call.
            let read = unsafe {
                libc::recv(
                    stream.as_raw_fd(),
                    spare.as_mut_ptr().cast(),
                    spare.len(),
                    0,
                )
            };
            let read = usize::try_from(read).map_err(|_| io::Error::last_os_error())?;
            if read > 0 && read < spare.len() {
                drained = Some(read);
                return Err(ErrorKind::WouldBlock.into());
            }
            Ok(read)
        });
        match (drained, read) {
            (Some(read), _) => return Ok(read),
            (None, Err(error)) if error.kind() == ErrorKind::WouldBlock => continue,
            (None, read) => return read,
        }
    }
}

/// What a completion finished, in the low bits of its user data; the
/// connection's index is above them.
#[derive(Clone, Copy, PartialEq)]
enum Op {
    Accept = 0,
    Receive = 1,
    Send = 2,
}

const OP_BITS: u32 = 2;

fn user_data(index: usize, op: Op) -> u64 {
    ((index as u64) << OP_BITS) | op as u64
}

/// An io_uring connection. At most one receive and one send are in flight;
/// replies made while a send is in flight wait in `buffers.output` and go
/// out when it completes.
struct Ringed {
    stream: TcpStream,
    buffers: Buffers,
    /// The bytes of the send in flight (or the rest of a partial one).
    sending: Vec<u8>,
    send_in_flight: bool,
    receive_in_flight: bool,
    closed: bool,
}

/// Queues `entry`, first submitting what is queued if the ring is full.
fn push(ring: &mut IoUring, entry: squeue::Entry) -> io::Result<()> {
    loop {
        // SAFETY: every entry's buffers live in a boxed `Ringed` (or are
        // null) and stay put until its completion is read.
        if unsafe { ring.submission().push(&entry) }.is_ok() {
            return Ok(());
        }
        ring.submit()?;
    }
}

fn receive(ring: &mut IoUring, index: usize, connection: &mut Ringed) -> io::Result<()> {
    let spare = connection.buffers.spare();
    let entry = opcode::Recv::new(
        types::Fd(connection.stream.as_raw_fd()),
        spare.as_mut_ptr(),
        spare.len() as u32,
    )
    .build()
    .user_data(user_data(index, Op::Receive));
    connection.receive_in_flight = true;
    push(ring, entry)
}

/// Sends what is waiting, unless a send is in flight.
fn send(ring: &mut IoUring, index: usize, connection: &mut Ringed) -> io::Result<()> {
    if connection.send_in_flight {
        return Ok(());
    }
    if connection.sending.is_empty() {
        std::mem::swap(&mut connection.sending, &mut connection.buffers.output);
    }
    if connection.sending.is_empty() {
        return Ok(());
    }
    let entry = opcode::Send::new(
        types::Fd(connection.stream.as_raw_fd()),
        connection.sending.as_ptr(),
        connection.sending.len() as u32,
    )
    .build()
    .user_data(user_data(index, Op::Send));
    connection.send_in_flight = true;
    push(ring, entry)
}

fn serve_uring(listener: TcpListener, mut keyspace: Option<Keyspace>) -> io::Result<()> {
    let mut ring = IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .build(1024)?;
    let accept = || {
        opcode::Accept::new(
            types::Fd(listener.as_raw_fd()),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
        .build()
        .user_data(user_data(0, Op::Accept))
    };
    push(&mut ring, accept())?;
    let mut connections: Vec<Option<Box<Ringed>>> = Vec::new();
    let mut completed: Vec<(u64, i32)> = Vec::new();
    loop {
        match ring.submit_and_wait(1) {
            Ok(_) => {}
            Err(error) if error.kind() == ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        }
        completed.extend(
            ring.completion()
                .map(|entry| (entry.user_data(), entry.result())),
        );
        for (data, result) in completed.drain(..) {
            let index = (data >> OP_BITS) as usize;
            let op = match data & ((1 << OP_BITS) - 1) {
                0 => Op::Accept,
                1 => Op::Receive,
                _ => Op::Send,
            };
            if op == Op::Accept {
                if result >= 0 {
                    // SAFETY: a completed accept's result is a new socket nobody else owns.
                    let stream = unsafe { TcpStream::from_raw_fd(result) };
                    stream.set_nodelay(true)?;
                    let index = free_index(&mut connections);
                    let connection = connections[index].insert(Box::new(Ringed {
                        stream,
                        buffers: Buffers::new(),
                        sending: Vec::new(),
                        send_in_flight: false,
                        receive_in_flight: false,
                        closed: false,
                    }));
                    receive(&mut ring, index, connection)?;
                }
                push(&mut ring, accept())?;
                continue;
            }
            let Some(connection) = connections[index].as_mut() else {
                continue;
            };
            match op {
                Op::Receive => {
                    connection.receive_in_flight = false;
                    if result <= 0 {
                        connection.closed = true;
                    } else {
                        connection.buffers.keep(result as usize);
                        if connection.buffers.answer(keyspace.as_mut()) {
                            send(&mut ring, index, connection)?;
                            receive(&mut ring, index, connection)?;
                        } else {
                            connection.closed = true;
                        }
                    }
                }
                Op::Send => {
                    connection.send_in_flight = false;
                    if result < 0 {
                        connection.closed = true;
                    } else {
                        connection.sending.drain(..result as usize);
                        send(&mut ring, index, connection)?;
                    }
                }
                Op::Accept => unreachable!("handled above"),
            }
            if connection.closed && !connection.send_in_flight && !connection.receive_in_flight {
                connections[index] = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `received` through a keyspace as one read: the replies, and
    /// the bytes the complete requests took.
    fn execute(keyspace: &mut Keyspace, received: &[u8]) -> (String, usize) {
        let mut output = Vec::new();
        let taken = keyspace.execute_all(received, &mut output);
        (String::from_utf8(output).unwrap(), taken)
    }

    #[test]
    fn the_keyspace_floor_replies_as_redis_does_to_what_it_executes() {
        let mut keyspace = Keyspace::default();
        let requests = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nv1\r\n\
            *2\r\n$3\r\nget\r\n$1\r\nk\r\n\
            *3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nw\r\n\
            *2\r\n$3\r\nGET\r\n$1\r\nk\r\n\
            *2\r\n$3\r\nGET\r\n$7\r\nmissing\r\n\
            *4\r\n$5\r\nLPUSH\r\n$1\r\nl\r\n$1\r\na\r\n$1\r\nb\r\n\
            *3\r\n$5\r\nLPUSH\r\n$1\r\nl\r\n$1\r\nc\r\n\
            *2\r\n$3\r\nGET\r\n$1\r\nl\r\n\
            *3\r\n$5\r\nLPUSH\r\n$1\r\nk\r\n$1\r\nx\r\n\
            *1\r\n$4\r\nPING\r\n\
            *5\r\n$4\r\nMSET\r\n$1\r\nk\r\n$1\r\nm\r\n$1\r\nn\r\n$1\r\no\r\n\
            *2\r\n$3\r\nGET\r\n$1\r\nn\r\n\
            *4\r\n$4\r\nMSET\r\n$1\r\nk\r\n$1\r\nm\r\n$1\r\nn\r\n\
            *6\r\n$4\r\nHSET\r\n$1\r\nh\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n\
            *6\r\n$4\r\nhset\r\n$1\r\nh\r\n$1\r\na\r\n$1\r\n3\r\n$1\r\nc\r\n$1\r\n4\r\n\
            *4\r\n$4\r\nHSET\r\n$1\r\nk\r\n$1\r\na\r\n$1\r\n1\r\n\
            *2\r\n$3\r\nGET\r\n$1\r\nh\r\n\
            *3\r\n$5\r\nLPUSH\r\n$1\r\nh\r\n$1\r\nx\r\n\
            *3\r\n$4\r\nHSET\r\n$1\r\nh\r\n$1\r\na\r\n";
        let (replies, taken) = execute(&mut keyspace, requests);
        let wrongtype = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
        let unsupported = "-ERR keel-floor executes SET, MSET, GET, LPUSH and HSET only\r\n";
        let expected = [
            "+OK\r\n",
            "$2\r\nv1\r\n",
            "+OK\r\n",
            "$1\r\nw\r\n",
            "$-1\r\n",
            ":2\r\n",
            ":3\r\n",
            wrongtype,
            wrongtype,
            unsupported,
            "+OK\r\n",
            "$1\r\no\r\n",
            unsupported,
            ":2\r\n",
            ":1\r\n",
            wrongtype,
            wrongtype,
            wrongtype,
            unsupported,
        ];
        assert_eq!(replies, expected.concat());
        assert_eq!(taken, requests.len());
    }

    #[test]
    fn a_request_cut_between_reads_runs_once_it_is_whole() {
        let mut keyspace = Keyspace::default();
        let whole = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
        let cut = whole.len() - 4;
        let (replies, taken) = execute(&mut keyspace, &whole[..cut]);
        assert_eq!((replies.as_str(), taken), ("+OK\r\n", 27), "the GET waits");
        let (replies, taken) = execute(&mut keyspace, &whole[taken..]);
        assert_eq!((replies.as_str(), taken), ("$1\r\nv\r\n", whole.len() - 27));
    }
}
