//! A small pipelining RESP client over tokio: the report sends thousands of
//! commands per round trip, so requests are encoded into one buffer and the
//! replies read back in order. Encoding and decoding are keel_resp's.

use std::io;
use std::time::Duration;

use bytes::BytesMut;
use keel_resp::{take_replies, Frame, Protocol};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Why talking to the server failed, phrased for an operator.
#[derive(Debug)]
pub enum ClientError {
    /// Could not connect (refused, unresolvable, timed out).
    Connect(String),
    /// Connected, but the password was refused or is missing.
    Auth(String),
    /// The connection broke or a reply took longer than the timeout.
    Io(String),
    /// The bytes were not RESP.
    Protocol(String),
    /// A command the report cannot do without (SCAN, SELECT) failed.
    Server(String),
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::Connect(m) => write!(f, "cannot connect: {m}"),
            ClientError::Auth(m) => write!(f, "authentication failed: {m}"),
            ClientError::Io(m) => write!(f, "connection lost: {m}"),
            ClientError::Protocol(m) => write!(f, "protocol error: {m}"),
            ClientError::Server(m) => write!(f, "server error: {m}"),
        }
    }
}

impl std::error::Error for ClientError {}

/// One connection, used strictly request/reply or pipelined.
pub struct Conn {
    stream: TcpStream,
    rbuf: BytesMut,
    timeout: Duration,
}

/// A command as its argument list.
pub type Command = Vec<Vec<u8>>;

/// The text of a status, bulk or integer reply.
pub fn text(f: &Frame) -> Option<String> {
    match f {
        Frame::Bulk(b) | Frame::Verbatim(_, b) => Some(String::from_utf8_lossy(b).into_owned()),
        Frame::Simple(s) => Some(s.clone()),
        Frame::Integer(n) => Some(n.to_string()),
        _ => None,
    }
}

impl Conn {
    /// Connects to `host:port`, logs in when a password is given, selects
    /// `db`, and checks with PING that no password is missing, so every
    /// later failure is about the keyspace, not the login.
    pub async fn open(
        host: &str,
        port: u16,
        user: Option<&str>,
        password: Option<&str>,
        db: u32,
        timeout: Duration,
    ) -> Result<Conn, ClientError> {
        let addr = format!("{host}:{port}");
        let stream = match tokio::time::timeout(timeout, TcpStream::connect(&addr)).await {
            Err(_) => {
                return Err(ClientError::Connect(format!(
                    "{addr}: no answer within {timeout:?}"
                )))
            }
            Ok(Err(e)) => return Err(ClientError::Connect(format!("{addr}: {e}"))),
            Ok(Ok(s)) => s,
        };
        let _ = stream.set_nodelay(true);
        let mut conn = Conn {
            stream,
            rbuf: BytesMut::with_capacity(64 * 1024),
            timeout,
        };
        if let Some(p) = password {
            let mut args: Vec<&str> = vec!["AUTH"];
            args.extend(user);
            args.push(p);
            if let Frame::Error(e) = conn.request(&args).await? {
                return Err(ClientError::Auth(format!(
                    "{addr} refused the password: {e}"
                )));
            }
        }
        match conn.request(&["PING"]).await? {
            Frame::Error(e) if e.starts_with("NOAUTH") => {
                return Err(ClientError::Auth(format!(
                    "{addr} requires a password (give it with -a): {e}"
                )))
            }
            Frame::Error(e) => return Err(ClientError::Server(format!("PING: {e}"))),
            _ => {}
        }
        if db != 0 {
            let db = db.to_string();
            if let Frame::Error(e) = conn.request(&["SELECT", db.as_str()]).await? {
                return Err(ClientError::Server(format!("SELECT {db}: {e}")));
            }
        }
        Ok(conn)
    }

    /// Sends one command and returns its reply, error replies included.
    pub async fn request<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Result<Frame, ClientError> {
        let mut buf = BytesMut::new();
        Frame::command(args).encode(&mut buf, Protocol::Resp2);
        let mut r = self.exchange(&buf, 1).await?;
        r.pop()
            .ok_or_else(|| ClientError::Protocol("no reply".into()))
    }

    /// Sends all `commands` in one write and reads their replies in order.
    pub async fn pipeline(&mut self, commands: &[Command]) -> Result<Vec<Frame>, ClientError> {
        let mut buf = BytesMut::with_capacity(commands.len() * 48);
        for c in commands {
            Frame::command(c).encode(&mut buf, Protocol::Resp2);
        }
        self.exchange(&buf, commands.len()).await
    }

    async fn exchange(&mut self, bytes: &[u8], n: usize) -> Result<Vec<Frame>, ClientError> {
        let timeout = self.timeout;
        match tokio::time::timeout(timeout, self.exchange_inner(bytes, n)).await {
            Ok(r) => r,
            Err(_) => Err(ClientError::Io(format!("no reply within {timeout:?}"))),
        }
    }

    async fn exchange_inner(&mut self, bytes: &[u8], n: usize) -> Result<Vec<Frame>, ClientError> {
        self.stream
            .write_all(bytes)
            .await
            .map_err(|e| ClientError::Io(e.to_string()))?;
        let mut out = Vec::with_capacity(n);
        while !take_replies(&mut self.rbuf, n, &mut out)
            .map_err(|e| ClientError::Protocol(e.to_string()))?
        {
            self.rbuf.reserve(64 * 1024);
            let read = self
                .stream
                .read_buf(&mut self.rbuf)
                .await
                .map_err(|e| ClientError::Io(e.to_string()))?;
            if read == 0 {
                return Err(ClientError::Io(if out.is_empty() {
                    "the server closed the connection".into()
                } else {
                    io::Error::from(io::ErrorKind::UnexpectedEof).to_string()
                }));
            }
        }
        Ok(out)
    }
}
