//! One client connection: read, decode, execute, reply.
//!
//! Each read is followed by executing every complete request in the
//! buffer, in order, with all their replies gathered into one output buffer
//! that is written once — pipelining costs one syscall per batch, not per
//! command. A protocol error gets Redis's reply and closes this connection
//! only; nothing else is affected.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use keel_resp::{Limits, RequestDecoder, Writer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::client::{AfterReply, Client};
use crate::server::{unix_ms, Server};
use crate::{cmd, verbose};

/// Initial buffer sizes: enough for typical requests and replies without
/// growing, small enough for tens of thousands of idle connections.
const READ_CHUNK: usize = 16 * 1024;
/// Replies beyond this are sent before the rest of a batch is executed, so
/// a pipeline of large replies does not pile up in memory.
const FLUSH_THRESHOLD: usize = 1024 * 1024;

/// Serves one connection until it closes, is killed, or the server stops.
pub async fn serve(server: Arc<Server>, socket: TcpStream, addr: SocketAddr) {
    let local = socket.local_addr().unwrap_or(addr);
    let handle = server.clients.register(addr, local, unix_ms());
    let (authenticated, keepalive) = {
        let config = server.config.read();
        (config.requirepass.is_empty(), config.tcp_keepalive)
    };
    let _ = socket.set_nodelay(true);
    if keepalive > 0 {
        let ka = socket2::TcpKeepalive::new().with_time(Duration::from_secs(keepalive));
        let _ = socket2::SockRef::from(&socket).set_tcp_keepalive(&ka);
    }
    let mut client = Client::new(handle.clone(), authenticated);
    let result = Connection {
        server: &server,
        socket,
        client: &mut client,
        read_buf: BytesMut::with_capacity(READ_CHUNK),
        write_buf: BytesMut::with_capacity(READ_CHUNK),
        decoder: RequestDecoder::new(),
    }
    .run()
    .await;
    if let Err(e) = result {
        verbose!("Client id={} addr={addr} closed: {e}", handle.id);
    }
    server.clients.unregister(handle.id);
}

struct Connection<'a> {
    server: &'a Server,
    socket: TcpStream,
    client: &'a mut Client,
    read_buf: BytesMut,
    write_buf: BytesMut,
    decoder: RequestDecoder,
}

/// Why the loop stopped reading.
enum Stop {
    Closed,
}

impl Connection<'_> {
    async fn run(mut self) -> std::io::Result<()> {
        let mut shutdown = self.server.shutdown_signal();
        loop {
            if let Some(Stop::Closed) = self.execute_buffered().await? {
                return self.flush().await;
            }
            self.flush().await?;
            if *shutdown.borrow() {
                return Ok(());
            }
            if self.read_buf.capacity() - self.read_buf.len() < READ_CHUNK / 4 {
                self.read_buf
                    .reserve(READ_CHUNK.max(self.decoder.bytes_wanted()));
            }
            let idle_limit = match self.server.config.read().timeout {
                0 => Duration::MAX,
                secs => Duration::from_secs(secs),
            };
            let handle = self.client.handle.clone();
            let read = tokio::select! {
                r = tokio::time::timeout(idle_limit, self.socket.read_buf(&mut self.read_buf)) => r,
                _ = handle.killed() => return Ok(()),
                _ = shutdown.wait_for(|&s| s) => return Ok(()),
            };
            match read {
                Ok(Ok(0)) => return Ok(()),
                Ok(Ok(n)) => {
                    self.server
                        .stats
                        .net_input_bytes
                        .fetch_add(n as u64, Ordering::Relaxed);
                    handle
                        .query_buffer
                        .store(self.read_buf.len(), Ordering::Relaxed);
                }
                Ok(Err(e)) => return Err(e),
                Err(_idle) => {
                    verbose!("Closing idle client id={}", handle.id);
                    return Ok(());
                }
            }
        }
    }

    /// Executes every complete request in the read buffer.
    async fn execute_buffered(&mut self) -> std::io::Result<Option<Stop>> {
        let max_bulk_len = self.server.config.read().proto_max_bulk_len as usize;
        loop {
            let limits = Limits {
                max_bulk_len,
                authenticated: self.client.authenticated,
            };
            let args = match self.decoder.next(&mut self.read_buf, &limits) {
                Ok(Some(args)) => args,
                Ok(None) => return Ok(None),
                Err(e) => {
                    Writer::new(&mut self.write_buf, self.client.protocol)
                        .error(&format!("ERR {e}"));
                    verbose!(
                        "Protocol error ({e}) from client id={}, closing",
                        self.client.handle.id
                    );
                    return Ok(Some(Stop::Closed));
                }
            };
            cmd::execute(self.server, self.client, &args, &mut self.write_buf);
            match self.client.after_reply.take() {
                Some(AfterReply::Close) => return Ok(Some(Stop::Closed)),
                // The reply waits with the connection, as Redis's does.
                Some(AfterReply::Sleep(pause)) => tokio::time::sleep(pause).await,
                None => {}
            }
            if self.write_buf.len() > FLUSH_THRESHOLD {
                self.flush().await?;
            }
            if self.client.handle.is_killed() {
                return Ok(Some(Stop::Closed));
            }
        }
    }

    async fn flush(&mut self) -> std::io::Result<()> {
        if self.write_buf.is_empty() {
            return Ok(());
        }
        let handle = &self.client.handle;
        handle
            .output_buffer
            .store(self.write_buf.len(), Ordering::Relaxed);
        self.socket.write_all(&self.write_buf).await?;
        self.server
            .stats
            .net_output_bytes
            .fetch_add(self.write_buf.len() as u64, Ordering::Relaxed);
        self.write_buf.clear();
        handle.output_buffer.store(0, Ordering::Relaxed);
        handle
            .query_buffer
            .store(self.read_buf.len(), Ordering::Relaxed);
        Ok(())
    }
}
