//! A replica's link to its primary: the handshake, the snapshot, then the
//! command stream (see the module notes in `mod.rs`).
//!
//! Everything the primary sends is untrusted: a line longer than
//! [`MAX_LINE`], a reply that is not the one the handshake expects, a
//! payload that ends early or is not an RDB file, a command stream that is
//! not RESP: each ends the link with a log line naming the problem, the
//! data loaded so far stays served (a snapshot is loaded whole or, if the
//! file is bad, the keyspace is left empty, never half-loaded and served),
//! and the link tries again a second later.

use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use keel_resp::{Limits, RequestDecoder};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::{LinkState, Primary};
use crate::client::{AfterReply, Client};
use crate::clock::Now;
use crate::persistence::load::{load_file, LoadInto};
use crate::persistence::Settings;
use crate::server::{unix_ms, Server};
use crate::{cmd, notice, warning};

/// The longest line the handshake reads.
const MAX_LINE: usize = 64 << 10;

/// How long connecting and each handshake reply may take (Redis's
/// `repl-timeout` default).
const TIMEOUT: Duration = Duration::from_secs(60);

/// Pause before a failed link tries again.
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// How often the offset is acknowledged unasked.
const ACK_EVERY: Duration = Duration::from_secs(1);

/// The length of the mark around a diskless payload.
const EOF_MARK_LEN: usize = 40;

/// Starts the replication thread, which follows whatever primary REPLICAOF
/// (or the `replicaof` directive) names.
pub fn start(server: Arc<Server>) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    std::thread::Builder::new()
        .name("keel-replica".into())
        .spawn(move || runtime.block_on(follow_targets(server)))?;
    Ok(())
}

/// Follows each primary named, until another is named.
async fn follow_targets(server: Arc<Server>) {
    let mut targets = server.replication.target.subscribe();
    loop {
        let target = targets.borrow_and_update().1.clone();
        match target {
            Some(primary) => tokio::select! {
                _ = follow(&server, &primary) => {}
                _ = targets.changed() => {}
            },
            None => {
                if targets.changed().await.is_err() {
                    return;
                }
            }
        }
    }
}

/// Keeps a link to `primary` up, for ever.
async fn follow(server: &Server, primary: &Primary) {
    // The start-up file first: it is the data, and the history to
    // continue, that the first PSYNC asks about.
    while server.persistence.loading.active() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    notice!("Connecting to MASTER {}:{}", primary.host, primary.port);
    loop {
        if let Err(e) = link(server, primary).await {
            warning!(
                "Replication link with MASTER {}:{}: {e}",
                primary.host,
                primary.port
            );
        }
        server.replication.set_state(LinkState::Connect);
        tokio::time::sleep(RETRY_AFTER).await;
    }
}

/// The primary's side of the connection, read through a buffer; a TLS
/// session over the socket with `tls-replication yes`.
struct Conn {
    socket: TcpStream,
    tls: Option<Box<rustls::ClientConnection>>,
    buf: BytesMut,
}

impl Conn {
    /// Reads more into the buffer; an error at end of stream.
    async fn fill(&mut self) -> Result<(), String> {
        self.buf.reserve(16 << 10);
        let read = match self.tls.as_mut() {
            None => self.socket.read_buf(&mut self.buf).await,
            Some(session) => read_decrypted(&self.socket, session, &mut self.buf).await,
        };
        match read {
            Ok(0) => Err("the primary closed the connection".into()),
            Ok(_) => Ok(()),
            Err(e) => Err(format!("reading from the primary: {e}")),
        }
    }

    /// The next line, without its CRLF.
    async fn line(&mut self) -> Result<String, String> {
        loop {
            if let Some(end) = self.buf.iter().position(|&b| b == b'\n') {
                let line = self.buf.split_to(end + 1);
                let text = String::from_utf8_lossy(&line[..end]);
                return Ok(text.trim_end_matches('\r').to_string());
            }
            if self.buf.len() > MAX_LINE {
                return Err(format!("a line from the primary is over {MAX_LINE} bytes"));
            }
            tokio::time::timeout(TIMEOUT, self.fill())
                .await
                .map_err(|_| "timeout waiting for the primary".to_string())??;
        }
    }

    async fn send(&mut self, args: &[&str]) -> Result<(), String> {
        let mut out = format!("*{}\r\n", args.len());
        for arg in args {
            out += &format!("${}\r\n{arg}\r\n", arg.len());
        }
        let written = match self.tls.as_mut() {
            None => self.socket.write_all(out.as_bytes()).await,
            Some(session) => {
                crate::connection::send_plaintext(&self.socket, session, out.as_bytes()).await
            }
        };
        written.map_err(|e| format!("writing to the primary: {e}"))
    }

    /// Sends a handshake command and returns the reply line.
    async fn ask(&mut self, args: &[&str]) -> Result<String, String> {
        self.send(args).await?;
        self.line().await
    }
}

/// Reads decrypted bytes from `session` over `socket` into the spare room
/// of `buf`, waiting for the primary's records (0: it closed). Safe to
/// cancel (the stream's reader races a timer): `buf` only changes between
/// waits.
async fn read_decrypted(
    socket: &TcpStream,
    session: &mut rustls::ClientConnection,
    buf: &mut BytesMut,
) -> std::io::Result<usize> {
    loop {
        match crate::connection::read_plaintext(session, buf) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            read => return read,
        }
        socket.readable().await?;
        match crate::connection::receive_tls(socket, session) {
            Ok(0) => return Ok(0),
            Err(e) if e.kind() != std::io::ErrorKind::WouldBlock => return Err(e),
            _ => {}
        }
    }
}

/// One connection to the primary, from the handshake to its end.
async fn link(server: &Server, primary: &Primary) -> Result<(), String> {
    let replication = &server.replication;
    replication.set_state(LinkState::Connecting);
    let address = (primary.host.as_str(), primary.port);
    let socket = tokio::time::timeout(TIMEOUT, TcpStream::connect(address))
        .await
        .map_err(|_| "timeout connecting".to_string())?
        .map_err(|e| format!("connecting: {e}"))?;
    let (peer, local) = (
        socket.peer_addr().map_err(|e| e.to_string())?,
        socket.local_addr().map_err(|e| e.to_string())?,
    );
    let over_tls = server.config.read().value("tls-replication") == "yes";
    let tls = match over_tls {
        false => None,
        true => {
            let settings = crate::tls::client_config(&server.config.read())?;
            let session = crate::tls::connect(&socket, settings, &primary.host)
                .await
                .map_err(|e| format!("TLS handshake with the primary: {e}"))?;
            Some(Box::new(session))
        }
    };
    let mut conn = Conn {
        socket,
        tls,
        buf: BytesMut::new(),
    };
    handshake(server, &mut conn).await?;
    let (replid, from) = replication.history();
    let offset = from.to_string();
    let reply = conn.ask(&["PSYNC", &replid, &offset]).await?;
    let reply = skip_keepalives(&mut conn, reply).await?;
    let words: Vec<&str> = reply.split_whitespace().collect();
    match words.as_slice() {
        ["+FULLRESYNC", replid, offset] => {
            let offset: u64 = offset
                .parse()
                .map_err(|_| format!("bad FULLRESYNC offset: {reply}"))?;
            notice!("Full resync from master: {replid}:{offset}");
            replication.set_state(LinkState::Sync);
            receive_snapshot(server, &mut conn).await?;
            replication.reset_history(replid.to_string(), offset);
        }
        ["+CONTINUE", rest @ ..] => {
            if let [new_id] = rest {
                replication.continue_as(new_id.to_string());
            }
            notice!("Successful partial resynchronization with master.");
        }
        _ => return Err(format!("unexpected reply to PSYNC: {reply}")),
    }
    replication.set_state(LinkState::Connected);
    replication.note_io();
    notice!("MASTER <-> REPLICA sync: Finished with success");
    let handle = server.clients.register(peer, local, unix_ms());
    handle.primary_link.store(true, Ordering::Relaxed);
    let applied = apply_stream(server, &mut conn, &handle).await;
    server.clients.unregister(handle.id);
    applied
}

/// PING, AUTH, REPLCONF: what a primary expects before PSYNC.
async fn handshake(server: &Server, conn: &mut Conn) -> Result<(), String> {
    let pong = conn.ask(&["PING"]).await?;
    // An error other than the need to authenticate is a primary that is
    // not ready (still loading, for one).
    if pong.starts_with('-')
        && !pong.starts_with("-NOAUTH")
        && !pong.starts_with("-NOPERM")
        && !pong.starts_with("-ERR operation not permitted")
    {
        return Err(format!("error reply to PING from master: {pong}"));
    }
    let (user, password, port, announced_ip) = {
        let config = server.config.read();
        // What Sentinel and the primary's INFO show of this replica:
        // `replica-announce-port`/`-ip` when set (behind NAT, a proxy).
        let port = match config.value("replica-announce-port").as_str() {
            "0" | "" => server.port.load(Ordering::Relaxed).to_string(),
            announced => announced.to_string(),
        };
        (
            config.value("masteruser"),
            config.value("masterauth"),
            port,
            config.value("replica-announce-ip"),
        )
    };
    if !password.is_empty() {
        let reply = match user.is_empty() {
            true => conn.ask(&["AUTH", &password]).await?,
            false => conn.ask(&["AUTH", &user, &password]).await?,
        };
        if reply.starts_with('-') {
            return Err(format!("unable to AUTH to MASTER: {reply}"));
        }
    }
    // A primary that does not know these options still serves PSYNC.
    conn.ask(&["REPLCONF", "listening-port", &port]).await?;
    if !announced_ip.is_empty() {
        conn.ask(&["REPLCONF", "ip-address", &announced_ip]).await?;
    }
    conn.ask(&["REPLCONF", "capa", "eof", "capa", "psync2"])
        .await?;
    Ok(())
}

/// A primary preparing a snapshot sends newlines to keep the link alive.
async fn skip_keepalives(conn: &mut Conn, mut line: String) -> Result<String, String> {
    while line.is_empty() {
        line = conn.line().await?;
    }
    Ok(line)
}

/// Receives the snapshot into `dir`, loads it, and keeps it as the
/// server's RDB file, as a Redis replica does.
async fn receive_snapshot(server: &Server, conn: &mut Conn) -> Result<(), String> {
    let header = conn.line().await?;
    let header = skip_keepalives(conn, header).await?;
    let settings = Settings::of(&server.config.read());
    let temp = settings
        .dir
        .join(format!("temp-{}-repl.rdb", std::process::id()));
    let written = receive_payload(conn, &header, &temp).await;
    let loaded = written.and_then(|bytes| {
        notice!("MASTER <-> REPLICA sync: received {bytes} bytes of payload, loading");
        load_file(server, &temp, LoadInto::Empty).map(|_| ())
    });
    match loaded {
        Ok(()) => {
            if let Err(e) = std::fs::rename(&temp, &settings.path) {
                warning!(
                    "Keeping the primary's snapshot as {}: {e}",
                    settings.path.display()
                );
            }
            Ok(())
        }
        Err(e) => {
            let _ = std::fs::remove_file(&temp);
            Err(e)
        }
    }
}

/// Writes the payload announced by `header` (`$<length>` or
/// `$EOF:<mark>`) to `path`; returns its length.
async fn receive_payload(
    conn: &mut Conn,
    header: &str,
    path: &std::path::Path,
) -> Result<u64, String> {
    let io =
        |e: std::io::Error| format!("writing the primary's snapshot to {}: {e}", path.display());
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).map_err(io)?);
    let mut written = 0u64;
    match header.strip_prefix("$EOF:") {
        Some(mark) => {
            let mark = mark.as_bytes();
            if mark.len() != EOF_MARK_LEN {
                return Err(format!("bad payload header from the primary: {header}"));
            }
            loop {
                // The mark may arrive with the stream's first bytes behind it.
                if let Some(at) = conn.buf.windows(EOF_MARK_LEN).position(|w| w == mark) {
                    let body = conn.buf.split_to(at);
                    conn.buf.advance(EOF_MARK_LEN);
                    file.write_all(&body).map_err(io)?;
                    written += body.len() as u64;
                    break;
                }
                // Everything but what may be the start of the mark is body.
                let keep = (EOF_MARK_LEN - 1).min(conn.buf.len());
                let body = conn.buf.split_to(conn.buf.len() - keep);
                file.write_all(&body).map_err(io)?;
                written += body.len() as u64;
                tokio::time::timeout(TIMEOUT, conn.fill())
                    .await
                    .map_err(|_| "timeout receiving the snapshot".to_string())??;
            }
        }
        None => {
            let length: u64 = header
                .strip_prefix('$')
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| format!("bad payload header from the primary: {header}"))?;
            while written < length {
                if conn.buf.is_empty() {
                    tokio::time::timeout(TIMEOUT, conn.fill())
                        .await
                        .map_err(|_| "timeout receiving the snapshot".to_string())??;
                }
                let take = (length - written).min(conn.buf.len() as u64) as usize;
                let body = conn.buf.split_to(take);
                file.write_all(&body).map_err(io)?;
                written += take as u64;
            }
        }
    }
    file.into_inner()
        .map_err(|e| io(e.into_error()))?
        .sync_all()
        .map_err(io)?;
    Ok(written)
}

/// Applies the primary's commands as its client, counting the offset, and
/// acknowledging it every second and on REPLCONF GETACK. Returns when the
/// link ends (the error says why).
async fn apply_stream(
    server: &Server,
    conn: &mut Conn,
    handle: &Arc<crate::client::ClientHandle>,
) -> Result<(), String> {
    let replication = &server.replication;
    let mut client = Client::new(handle.clone(), crate::acl::Session::internal(&server.acl));
    client.is_primary_link = true;
    // The stream goes on in the database it had selected (a partial resync
    // does not select it again), as Redis's cached primary client keeps it.
    client.db = replication.stream_db.load(Ordering::Relaxed);
    let mut decoder = RequestDecoder::default();
    // The primary's arguments are bounded as a client's are: a bogus
    // length ends the link instead of growing the buffer without end.
    let max_bulk_len = server.hot.proto_max_bulk_len.load(Ordering::Relaxed);
    let limits = Limits {
        max_bulk_len: usize::try_from(max_bulk_len).unwrap_or(usize::MAX),
        authenticated: true,
    };
    let mut out = BytesMut::new();
    let mut ack = tokio::time::interval(ACK_EVERY);
    // Bytes of the command being decoded: the decoder takes a command cut
    // by a read in parts, and the offset counts it whole once it is applied.
    let mut command_bytes = 0u64;
    loop {
        loop {
            let before = conn.buf.len();
            let decoded = decoder.next(&mut conn.buf, &limits);
            command_bytes += (before - conn.buf.len()) as u64;
            let args = match decoded {
                Ok(Some(args)) => args,
                Ok(None) => break,
                Err(e) => return Err(format!("protocol error from the primary: {e}")),
            };
            let consumed = std::mem::take(&mut command_bytes);
            if is_getack(&args) {
                send_ack(conn, replication.offset.load(Ordering::Relaxed)).await?;
            } else {
                apply(server, &mut client, &args, &mut out).await;
                replication.stream_db.store(client.db, Ordering::Relaxed);
            }
            replication.advance(consumed);
        }
        tokio::select! {
            filled = conn.fill() => {
                filled?;
                replication.note_io();
            }
            _ = ack.tick() => {
                send_ack(conn, replication.offset.load(Ordering::Relaxed)).await?;
            }
            _ = handle.killed() => return Err("the link was killed (CLIENT KILL)".into()),
        }
    }
}

fn is_getack(args: &[Bytes]) -> bool {
    matches!(args, [cmd, sub, ..] if cmd.eq_ignore_ascii_case(b"replconf") && sub.eq_ignore_ascii_case(b"getack"))
}

async fn send_ack(conn: &mut Conn, offset: u64) -> Result<(), String> {
    conn.send(&["REPLCONF", "ACK", &offset.to_string()]).await
}

/// Runs one command of the stream; replies are dropped, as Redis drops a
/// replica's replies to its primary. A script job (FUNCTION LOAD) runs on
/// the script thread and is waited for; a command that reaches the shards
/// of a script running here (a client's EVAL_RO) runs once it is done.
async fn apply(server: &Server, client: &mut Client, args: &[Bytes], out: &mut BytesMut) {
    loop {
        cmd::execute(server, client, args, out, &mut Now::read(&server.store));
        out.clear();
        match client.after_reply.take() {
            Some(AfterReply::Script(job)) => {
                if let Some(mut waiting) = crate::scripting::submit(server, job) {
                    waiting.reply().await;
                }
                return;
            }
            Some(AfterReply::WaitForScript) => server.scripting.gate.wait(unix_ms).await,
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection whose peer sends `bytes` a few at a time, then closes.
    async fn fed(bytes: Vec<u8>, step: usize) -> Conn {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut peer, _) = listener.accept().await.unwrap();
            for piece in bytes.chunks(step) {
                peer.write_all(piece).await.unwrap();
                peer.flush().await.unwrap();
                tokio::task::yield_now().await;
            }
        });
        Conn {
            socket: TcpStream::connect(address).await.unwrap(),
            tls: None,
            buf: BytesMut::new(),
        }
    }

    fn temp_path(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("keel-replica-test-{}-{name}", std::process::id()))
    }

    /// A diskless payload ends at its mark however the reads cut it, and
    /// what follows the mark is left for the command stream.
    #[tokio::test]
    async fn a_diskless_payload_ends_at_its_mark_whatever_the_reads() {
        let mark = "a".repeat(EOF_MARK_LEN);
        let body: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
        for step in [1, 7, 39, 40, 41, 4096] {
            let mut sent = body.clone();
            sent.extend_from_slice(mark.as_bytes());
            sent.extend_from_slice(b"*1\r\n$4\r\nPING\r\n");
            let mut conn = fed(sent, step).await;
            let path = temp_path(&format!("eof-{step}"));
            let header = format!("$EOF:{mark}");
            let written = receive_payload(&mut conn, &header, &path).await.unwrap();
            assert_eq!(written, body.len() as u64, "step {step}");
            assert_eq!(std::fs::read(&path).unwrap(), body, "step {step}");
            while conn.buf.len() < 14 {
                conn.fill().await.unwrap();
            }
            assert_eq!(&conn.buf[..], b"*1\r\n$4\r\nPING\r\n", "step {step}");
            std::fs::remove_file(&path).unwrap();
        }
    }

    /// A sized payload takes exactly its length; one cut short is an
    /// error, never a success with part of the file.
    #[tokio::test]
    async fn a_sized_payload_takes_its_length_and_a_short_one_fails() {
        let body = b"0123456789".repeat(300);
        let mut sent = body.clone();
        sent.extend_from_slice(b"+rest");
        let mut conn = fed(sent, 13).await;
        let path = temp_path("sized");
        let header = format!("${}", body.len());
        assert_eq!(
            receive_payload(&mut conn, &header, &path).await,
            Ok(body.len() as u64)
        );
        assert_eq!(std::fs::read(&path).unwrap(), body);

        let mut conn = fed(body[..100].to_vec(), 13).await;
        let short = receive_payload(&mut conn, &header, &path).await;
        assert_eq!(short, Err("the primary closed the connection".to_string()));
        std::fs::remove_file(&path).unwrap();

        let mut conn = fed(Vec::new(), 1).await;
        let bad = receive_payload(&mut conn, "$EOF:short", &path).await;
        assert!(bad.unwrap_err().contains("bad payload header"));
        let mut conn = fed(Vec::new(), 1).await;
        let bad = receive_payload(&mut conn, "$-5", &path).await;
        assert!(bad.unwrap_err().contains("bad payload header"));
    }
}
