//! A connection's byte stream: its socket, and for a connection on
//! `tls-port` its TLS session (see `crate::tls`). Every read and write of
//! the connection goes through here, so the loop is the same for both: a
//! TLS read takes the records the socket has, decrypts them and hands over
//! the plaintext; a write encrypts the replies and sends the records.

use std::io::{Read, Write};

use bytes::BytesMut;
use rustls::{ConnectionCommon, ServerConnection};
use tokio::io::{AsyncWriteExt, Interest};
use tokio::net::TcpStream;

/// A connection's socket and, on `tls-port`, its TLS session.
pub struct Stream {
    socket: TcpStream,
    tls: Option<Box<ServerConnection>>,
    /// The session holds decrypted bytes the last read had no room for.
    plaintext_left: bool,
}

impl Stream {
    pub fn plain(socket: TcpStream) -> Stream {
        Stream::from_parts(socket, None)
    }

    pub fn tls(socket: TcpStream, session: ServerConnection) -> Stream {
        Stream::from_parts(socket, Some(Box::new(session)))
    }

    /// A stream moving to a worker: the socket and the session as they are.
    pub fn from_parts(socket: TcpStream, mut tls: Option<Box<ServerConnection>>) -> Stream {
        // A client may send its first request with the end of its
        // handshake: it is decrypted already, and the socket will not
        // signal it again.
        let plaintext_left = tls.as_mut().is_some_and(|session| plaintext_waits(session));
        Stream {
            socket,
            tls,
            plaintext_left,
        }
    }

    pub fn into_parts(self) -> (TcpStream, Option<Box<ServerConnection>>) {
        (self.socket, self.tls)
    }

    pub fn socket(&self) -> &TcpStream {
        &self.socket
    }

    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// Decrypted bytes wait in the session, ready without the socket.
    fn plaintext_waiting(&self) -> bool {
        self.plaintext_left
    }

    /// Waits until there is something to read (or the peer closed). The
    /// socket's one reader slot holds the wait: the connection's task is
    /// the only one that reads it, and the slot costs half what a waiter
    /// in the socket's list costs (linked in and out under its lock), once
    /// per request at P=1.
    pub async fn readable(&self) -> std::io::Result<()> {
        if self.plaintext_waiting() {
            return Ok(());
        }
        std::future::poll_fn(|cx| self.socket.poll_read_ready(cx)).await
    }

    /// True if a read would find data, or the peer closed; false (and the
    /// socket's read readiness cleared) if it would block.
    pub fn has_data(&self) -> std::io::Result<bool> {
        if self.plaintext_waiting() {
            return Ok(true);
        }
        let mut first = [std::mem::MaybeUninit::uninit()];
        let peek = || socket2::SockRef::from(&self.socket).peek(&mut first);
        match self.socket.try_io(Interest::READABLE, peek) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Reads what is there into the spare room of `buf`: `WouldBlock` if
    /// nothing is, 0 once the peer closed.
    pub fn read_available(&mut self, buf: &mut BytesMut) -> std::io::Result<usize> {
        let Some(session) = self.tls.as_mut() else {
            return read_plain(&self.socket, buf);
        };
        if buf.capacity() == buf.len() {
            return Ok(0);
        }
        let read = loop {
            match read_plaintext(session, buf) {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                read => break read,
            }
            match receive_tls(&self.socket, session) {
                Ok(0) => break Ok(0),
                Ok(_) => {}
                Err(e) => break Err(e),
            }
        };
        self.plaintext_left = plaintext_waits(session);
        read
    }

    /// Waits for data and reads it into `buf` (0: the peer closed).
    pub async fn read_some(&mut self, buf: &mut BytesMut) -> std::io::Result<usize> {
        loop {
            self.readable().await?;
            match self.read_available(buf) {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                read => return read,
            }
        }
    }

    /// Writes all of `data` (encrypted, on TLS).
    pub async fn write_all(&mut self, data: &[u8]) -> std::io::Result<()> {
        match self.tls.as_mut() {
            None => self.socket.write_all(data).await,
            Some(session) => send_plaintext(&self.socket, session, data).await,
        }
    }

    /// Writes what the socket takes of `data` at once, without waiting;
    /// returns how much. Most replies go out whole this way, with no
    /// future to set up; a TLS stream sends nothing here (its records go
    /// out through [`Stream::write_all`]).
    pub fn write_now(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if self.tls.is_some() {
            return Ok(0);
        }
        let mut written = 0;
        while written < data.len() {
            match self.socket.try_write(&data[written..]) {
                Ok(0) => break,
                Ok(n) => written += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        Ok(written)
    }

    /// Sends `data` if the socket takes it at once (a refusal's last
    /// words); never waits.
    pub fn try_send(&mut self, data: &[u8]) {
        match self.tls.as_mut() {
            None => {
                let _ = self.socket.try_write(data);
            }
            Some(session) => {
                let _ = session.writer().write_all(data);
                let mut out = SocketIo(&self.socket);
                let _ = session.write_tls(&mut out);
            }
        }
    }
}

/// Whether `session` holds decrypted bytes not read yet. (With no new
/// records, processing only reports its state.)
fn plaintext_waits(session: &mut ServerConnection) -> bool {
    (session.process_new_packets()).is_ok_and(|state| state.plaintext_bytes_to_read() > 0)
}

/// Reads the socket's TLS records into `session` (a server's or, on a
/// replica's link to its primary, a client's) and decrypts them: the bytes
/// read (0: the peer closed), or `WouldBlock` (readiness cleared).
pub fn receive_tls<D>(
    socket: &TcpStream,
    session: &mut ConnectionCommon<D>,
) -> std::io::Result<usize> {
    let n = socket.try_io(Interest::READABLE, || {
        session.read_tls(&mut SocketIo(socket))
    })?;
    if n > 0 {
        session
            .process_new_packets()
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    }
    Ok(n)
}

/// Moves the decrypted bytes `session` holds into the spare room of `buf`:
/// how many, or `WouldBlock` if it holds none (0: the peer closed).
pub fn read_plaintext<D>(
    session: &mut ConnectionCommon<D>,
    buf: &mut BytesMut,
) -> std::io::Result<usize> {
    let start = buf.len();
    buf.resize(buf.capacity(), 0);
    let read = session.reader().read(&mut buf[start..]);
    buf.truncate(start + *read.as_ref().unwrap_or(&0));
    read
}

/// Encrypts all of `data` in `session` and sends it over `socket`, as
/// much at a time as the session buffers.
pub async fn send_plaintext<D>(
    socket: &TcpStream,
    session: &mut ConnectionCommon<D>,
    data: &[u8],
) -> std::io::Result<()> {
    let mut rest = data;
    loop {
        while !rest.is_empty() {
            match session.writer().write(rest)? {
                0 => break,
                n => rest = &rest[n..],
            }
        }
        send_tls(socket, session).await?;
        if rest.is_empty() {
            return Ok(());
        }
    }
}

/// Sends every TLS record `session` has to send, waiting for the socket.
pub async fn send_tls<D>(
    socket: &TcpStream,
    session: &mut ConnectionCommon<D>,
) -> std::io::Result<()> {
    while session.wants_write() {
        socket.writable().await?;
        match socket.try_io(Interest::WRITABLE, || {
            session.write_tls(&mut SocketIo(socket))
        }) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The socket as `std::io` sees it, for rustls (non-blocking: `WouldBlock`
/// when it has nothing, or no room).
struct SocketIo<'a>(&'a TcpStream);

impl Read for SocketIo<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        (&*socket2::SockRef::from(self.0)).read(buf)
    }
}

impl Write for SocketIo<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        (&*socket2::SockRef::from(self.0)).write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Reads what `socket` has into the spare room of `buf`. A read that
/// leaves room unfilled has drained the socket, so it clears the socket's
/// read readiness as a read that would block does: the next read waits for
/// new data instead of asking the socket once more for nothing. That is
/// one read per batch, as Redis's one read per readable event, where
/// reading until the socket would block cost a second, empty read (1.30
/// reads per request at P=1, bench/results/2026-11-26-cpu-per-op.md).
/// Data arriving after the read raises a new readiness event, which the
/// clearing leaves alone, and a closed peer's readiness is never cleared.
fn read_plain(socket: &TcpStream, buf: &mut BytesMut) -> std::io::Result<usize> {
    let mut drained = None;
    let read = socket.try_io(Interest::READABLE, || {
        let spare = buf.spare_capacity_mut();
        let room = spare.len();
        let n = socket2::SockRef::from(socket).recv(spare)?;
        // SAFETY: `recv` initialised the first `n` bytes of the spare room.
        unsafe { buf.set_len(buf.len() + n) };
        if n > 0 && n < room {
            drained = Some(n);
            return Err(std::io::ErrorKind::WouldBlock.into());
        }
        Ok(n)
    });
    match drained {
        Some(n) => Ok(n),
        None => read,
    }
}
