//! A plain request/reply RESP client for everything that is not load:
//! the INFO sampler, prefill, SCAN, CONFIG, handshakes. Load goes through
//! [`crate::driver`], which never waits for one reply before sending more.

use std::io;
use std::time::Duration;

use bytes::BytesMut;
use keel_resp::{take_replies, Frame, Protocol};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Where the server is and how to log in.
#[derive(Clone, Debug)]
pub struct Target {
    /// A label for reports ("redis", "keel", or host:port).
    pub name: String,
    /// `host:port`.
    pub addr: String,
    /// `AUTH` password, if any.
    pub password: Option<String>,
    /// Speak RESP3 (`HELLO 3`).
    pub resp3: bool,
}

/// Why a call failed, already phrased for an operator.
#[derive(Debug)]
pub enum ClientError {
    /// Socket-level failure, with a short kind for error counters.
    Io(&'static str, io::Error),
    /// No reply within the deadline.
    Timeout,
    /// The bytes were not RESP.
    Protocol(String),
    /// The server answered with an error reply.
    Server(String),
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::Io(kind, e) => write!(f, "{kind} ({e})"),
            ClientError::Timeout => write!(f, "timed out waiting for a reply"),
            ClientError::Protocol(m) => write!(f, "protocol error: {m}"),
            ClientError::Server(m) => write!(f, "server replied with an error: {m}"),
        }
    }
}

/// Short, stable name of an I/O error, used as an error-counter kind.
pub fn io_kind(e: &io::Error, connecting: bool) -> &'static str {
    use io::ErrorKind::*;
    match (e.kind(), connecting) {
        (ConnectionRefused, _) => "connect refused",
        (TimedOut, true) => "connect timeout",
        (AddrNotAvailable, _) | (AddrInUse, _) => "no local port",
        (_, true) if e.raw_os_error() == Some(24) => "too many open files",
        (_, true) => "connect failed",
        (ConnectionReset, false) => "connection reset",
        (BrokenPipe, false) => "broken pipe",
        (UnexpectedEof, false) => "closed by server",
        _ => "io error",
    }
}

/// Error-counter kind of a server error reply: its first word (`OOM`,
/// `ERR`, `WRONGTYPE`, `LOADING`, …), which is how Redis classifies them.
pub fn error_kind(message: &str) -> String {
    let word = message.split_whitespace().next().unwrap_or("ERR");
    let word: String = word.chars().take(24).collect();
    if word.chars().all(|c| c.is_ascii_uppercase() || c == '_') && !word.is_empty() {
        word
    } else {
        "ERR".to_string()
    }
}

/// Connects with a deadline and sets TCP_NODELAY (requests are small;
/// Nagle would add 40 ms to some of them).
pub async fn connect(addr: &str, deadline: Duration) -> Result<TcpStream, ClientError> {
    match tokio::time::timeout(deadline, TcpStream::connect(addr)).await {
        Err(_) => Err(ClientError::Io(
            "connect timeout",
            io::Error::new(io::ErrorKind::TimedOut, "connect timed out"),
        )),
        Ok(Err(e)) => Err(ClientError::Io(io_kind(&e, true), e)),
        Ok(Ok(s)) => {
            let _ = s.set_nodelay(true);
            Ok(s)
        }
    }
}

/// The handshake bytes for a target (HELLO 3 / AUTH), and how many replies
/// they produce; empty for a plain RESP2 connection without a password.
pub fn handshake(target: &Target) -> (BytesMut, usize) {
    let mut buf = BytesMut::new();
    let mut n = 0;
    if target.resp3 {
        let mut args: Vec<&str> = vec!["HELLO", "3"];
        if let Some(p) = &target.password {
            args.extend(["AUTH", "default", p]);
        }
        Frame::command(args).encode(&mut buf, Protocol::Resp2);
        n += 1;
    } else if let Some(p) = &target.password {
        Frame::command(["AUTH", p.as_str()]).encode(&mut buf, Protocol::Resp2);
        n += 1;
    }
    (buf, n)
}

/// One connection used for request/reply traffic.
pub struct Client {
    stream: TcpStream,
    rbuf: BytesMut,
    timeout: Duration,
}

impl Client {
    /// Connects, logs in and switches protocol as the target says.
    pub async fn open(target: &Target, timeout: Duration) -> Result<Client, ClientError> {
        let stream = connect(&target.addr, timeout).await?;
        let mut c = Client {
            stream,
            rbuf: BytesMut::with_capacity(16 * 1024),
            timeout,
        };
        let (hello, n) = handshake(target);
        if n > 0 {
            for reply in c.send_raw(&hello, n).await? {
                if let Frame::Error(e) = reply {
                    return Err(ClientError::Server(e));
                }
            }
        }
        Ok(c)
    }

    /// The socket, for the load driver once the handshake is done.
    pub fn into_stream(self) -> TcpStream {
        self.stream
    }

    /// Sends one command and returns its reply (error replies as
    /// [`ClientError::Server`]).
    pub async fn call<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Result<Frame, ClientError> {
        let mut buf = BytesMut::new();
        Frame::command(args).encode(&mut buf, Protocol::Resp2);
        let mut replies = self.send_raw(&buf, 1).await?;
        match replies.pop() {
            Some(Frame::Error(e)) => Err(ClientError::Server(e)),
            Some(f) => Ok(f),
            None => Err(ClientError::Protocol("no reply".into())),
        }
    }

    /// Writes already-encoded commands and reads `n` replies (pushes are
    /// skipped). Error replies are returned as frames for the caller to count.
    pub async fn send_raw(&mut self, bytes: &[u8], n: usize) -> Result<Vec<Frame>, ClientError> {
        let timeout = self.timeout;
        match tokio::time::timeout(timeout, self.exchange(bytes, n)).await {
            Ok(r) => r,
            Err(_) => Err(ClientError::Timeout),
        }
    }

    async fn exchange(&mut self, bytes: &[u8], n: usize) -> Result<Vec<Frame>, ClientError> {
        self.stream
            .write_all(bytes)
            .await
            .map_err(|e| ClientError::Io(io_kind(&e, false), e))?;
        let mut out = Vec::with_capacity(n);
        while !take_replies(&mut self.rbuf, n, &mut out)
            .map_err(|e| ClientError::Protocol(e.to_string()))?
        {
            self.rbuf.reserve(16 * 1024);
            let read = self
                .stream
                .read_buf(&mut self.rbuf)
                .await
                .map_err(|e| ClientError::Io(io_kind(&e, false), e))?;
            if read == 0 {
                return Err(ClientError::Io(
                    "closed by server",
                    io::Error::new(io::ErrorKind::UnexpectedEof, "server closed the connection"),
                ));
            }
        }
        Ok(out)
    }
}

/// A frame as text, for INFO, CONFIG GET and messages.
pub fn frame_text(f: &Frame) -> Option<String> {
    match f {
        Frame::Bulk(b) | Frame::Verbatim(_, b) => Some(String::from_utf8_lossy(b).into_owned()),
        Frame::Simple(s) => Some(s.clone()),
        Frame::Integer(n) => Some(n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_kinds_are_redis_prefixes() {
        assert_eq!(
            error_kind("OOM command not allowed when used memory > 'maxmemory'."),
            "OOM"
        );
        assert_eq!(
            error_kind("WRONGTYPE Operation against a key holding the wrong kind of value"),
            "WRONGTYPE"
        );
        assert_eq!(error_kind("unknown thing"), "ERR");
        assert_eq!(error_kind(""), "ERR");
    }
}
