//! A blocking RESP connection to one node: the control plane sends a few
//! commands at a time and waits for each answer, so no runtime is needed.
//! Encoding and decoding are keel_resp's.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use bytes::BytesMut;
use keel_resp::{take_replies, Frame, Protocol};

/// How long a node may take to connect or answer.
const TIMEOUT: Duration = Duration::from_secs(30);

/// One connection to a node, named by the address it was opened with.
pub struct Conn {
    pub address: String,
    stream: TcpStream,
    read_buffer: BytesMut,
}

impl Conn {
    /// Connects to `address` (`host:port`).
    pub fn open(address: &str) -> Result<Conn, String> {
        let target = address
            .to_socket_addrs()
            .map_err(|e| format!("{address}: {e}"))?
            .next()
            .ok_or_else(|| format!("{address}: no address"))?;
        let stream = TcpStream::connect_timeout(&target, TIMEOUT)
            .map_err(|e| format!("cannot connect to {address}: {e}"))?;
        stream
            .set_read_timeout(Some(TIMEOUT))
            .and_then(|()| stream.set_write_timeout(Some(TIMEOUT)))
            .and_then(|()| stream.set_nodelay(true))
            .map_err(|e| format!("{address}: {e}"))?;
        Ok(Conn {
            address: address.to_string(),
            stream,
            read_buffer: BytesMut::with_capacity(64 * 1024),
        })
    }

    /// Sends `commands` in one write and returns their replies in order,
    /// error replies included.
    pub fn pipeline<A: AsRef<[u8]>>(&mut self, commands: &[Vec<A>]) -> Result<Vec<Frame>, String> {
        let mut out = BytesMut::new();
        for command in commands {
            Frame::command(command).encode(&mut out, Protocol::Resp2);
        }
        let io_error = |e: std::io::Error| format!("{}: {e}", self.address);
        self.stream.write_all(&out).map_err(io_error)?;
        let mut replies = Vec::with_capacity(commands.len());
        while !take_replies(&mut self.read_buffer, commands.len(), &mut replies)
            .map_err(|e| format!("{}: {e}", self.address))?
        {
            let mut chunk = [0u8; 64 * 1024];
            let read = self
                .stream
                .read(&mut chunk)
                .map_err(|e| format!("{}: {e}", self.address))?;
            if read == 0 {
                return Err(format!("{}: the node closed the connection", self.address));
            }
            self.read_buffer.extend_from_slice(&chunk[..read]);
        }
        Ok(replies)
    }

    /// Sends one command; an error reply is an `Err` naming the command.
    pub fn call<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Result<Frame, String> {
        let reply = self
            .pipeline(&[args.iter().collect::<Vec<_>>()])?
            .pop()
            .expect("one reply per command");
        match reply {
            Frame::Error(e) => {
                let name: Vec<String> = (args.iter().take(2))
                    .map(|a| String::from_utf8_lossy(a.as_ref()).into_owned())
                    .collect();
                Err(format!("{}: {} failed: {e}", self.address, name.join(" ")))
            }
            reply => Ok(reply),
        }
    }

    /// A command whose reply is text (bulk, verbatim or status).
    pub fn text<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Result<String, String> {
        match self.call(args)? {
            Frame::Bulk(b) | Frame::Verbatim(_, b) => Ok(String::from_utf8_lossy(&b).into_owned()),
            Frame::Simple(s) => Ok(s),
            other => Err(format!("{}: unexpected reply {other:?}", self.address)),
        }
    }

    /// A command whose reply is an integer.
    pub fn integer<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Result<i64, String> {
        match self.call(args)? {
            Frame::Integer(n) => Ok(n),
            other => Err(format!("{}: unexpected reply {other:?}", self.address)),
        }
    }
}
