//! A connection that turned into a replica (SYNC, PSYNC): its snapshot,
//! then the stream of writes from the replication buffer, while its
//! acknowledgements (`REPLCONF ACK <offset>`) are read back. The stream is
//! sent from the shared buffer (see `crate::replication::backlog`), a
//! chunk at a time, so the connection's own output buffer stays empty; a
//! replica that falls behind past the buffer's limit is dropped, and must
//! resync, instead of growing anything.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use keel_resp::Limits;

use super::Connection;
use crate::client::{SyncStart, WaitReplicas};
use crate::persistence::save::{request_payload, PayloadFormat, PayloadRequest, EOF_MARK_LEN};
use crate::replication::backlog::{Lost, ReplicaLink, ReplicaState, NOT_STARTED};
use crate::{notice, warning};

/// Bytes of the stream sent per write.
const FEED_CHUNK: usize = 256 << 10;

impl Connection<'_> {
    /// Serves SYNC or PSYNC (see `cmd/replication/sync.rs`) until the
    /// replica leaves, is killed, or falls too far behind.
    pub(super) async fn serve_replica(
        &mut self,
        start: SyncStart,
        mut killed: Pin<&mut impl Future<Output = ()>>,
    ) -> std::io::Result<()> {
        let handshake = self.client.replica_handshake.clone();
        let follows = !handshake.rdb_only;
        let backlog = self.server.replication.backlog.clone();
        let handle = self.client.handle.clone();
        let link = follows.then(|| {
            let port = handshake
                .listening_port
                .unwrap_or(i64::from(handle.addr.port()));
            let from = match start {
                SyncStart::Continue { from } => from,
                SyncStart::Full { .. } => NOT_STARTED,
            };
            let ip = (handshake.ip_address.clone()).unwrap_or_else(|| handle.addr.ip().to_string());
            backlog.add_replica(ip, port, from)
        });
        handle.replica.store(follows, Ordering::Relaxed);
        let diskless =
            handshake.capa_eof && self.server.config.read().value("repl-diskless-sync") == "yes";
        let served = async {
            if let SyncStart::Full { psync } = start {
                let sent = self.send_snapshot(psync, diskless, link.clone(), killed.as_mut());
                if !sent.await? {
                    return Ok(());
                }
            }
            let Some(link) = &link else {
                return Ok(());
            };
            // A replica reading a diskless payload looks for its end mark
            // at the end of what it reads: the stream waits for its first
            // acknowledgement (it has loaded), as Redis's primary waits.
            if matches!(start, SyncStart::Full { .. })
                && diskless
                && !self.wait_first_ack(link, killed.as_mut()).await?
            {
                return Ok(());
            }
            link.set_state(ReplicaState::Online);
            match start {
                SyncStart::Full { .. } => notice!(
                    "Synchronization with replica {}:{} succeeded",
                    link.ip,
                    link.port
                ),
                SyncStart::Continue { from } => notice!(
                    "Partial resynchronization request from {}:{} accepted, sending the stream from offset {from}",
                    link.ip,
                    link.port
                ),
            }
            self.feed(link, killed.as_mut()).await
        }
        .await;
        if let Some(link) = &link {
            backlog.remove_replica(link);
        }
        served
    }

    /// The snapshot: `+FULLRESYNC` for PSYNC once the instant is taken,
    /// then the payload the save thread writes, a few chunks at a time,
    /// `$EOF:`-framed when `diskless`. False if the client was killed first.
    async fn send_snapshot(
        &mut self,
        psync: bool,
        diskless: bool,
        link: Option<Arc<ReplicaLink>>,
        mut killed: Pin<&mut impl Future<Output = ()>>,
    ) -> std::io::Result<bool> {
        let format = match diskless {
            true => {
                let mut mark = [0u8; EOF_MARK_LEN];
                for byte in &mut mark {
                    *byte = b"0123456789abcdef"[rand::random::<usize>() % 16];
                }
                PayloadFormat::EofMark(mark)
            }
            false => PayloadFormat::Length,
        };
        let (out, mut chunks) = tokio::sync::mpsc::channel::<Bytes>(4);
        let (instant, at_instant) = tokio::sync::oneshot::channel();
        let request = PayloadRequest {
            format,
            out,
            instant,
            replica: link.clone(),
        };
        if !request_payload(self.server, request) {
            return Err(std::io::Error::other("the save thread is gone"));
        }
        let history = tokio::select! {
            history = at_instant => history.map_err(|_| std::io::Error::other("no snapshot was taken"))?,
            _ = &mut killed => return Ok(false),
        };
        if let Some(link) = &link {
            link.set_state(ReplicaState::SendSnapshot);
            notice!(
                "Starting full synchronisation of replica {}:{} at offset {}",
                link.ip,
                link.port,
                history.offset
            );
        }
        if psync {
            let line = format!("+FULLRESYNC {} {}\r\n", history.replid, history.offset);
            self.socket.write_all(line.as_bytes()).await?;
        }
        while let Some(chunk) = chunks.recv().await {
            tokio::select! {
                written = self.socket.write_all(&chunk) => written?,
                _ = &mut killed => return Ok(false),
            }
            self.server.stats.count_output(chunk.len());
        }
        Ok(true)
    }

    /// The stream from where `link` is, until it ends.
    async fn feed(
        &mut self,
        link: &ReplicaLink,
        mut killed: Pin<&mut impl Future<Output = ()>>,
    ) -> std::io::Result<()> {
        let backlog = self.server.replication.backlog.clone();
        let mut end = backlog.watch_end();
        let mut chunk = Vec::with_capacity(FEED_CHUNK);
        loop {
            self.read_acks(link)?;
            end.borrow_and_update();
            let from = link.sent.load(Ordering::Relaxed);
            chunk.clear();
            let copied = match link.dropped.load(Ordering::Relaxed) {
                true => Err(Lost),
                false => backlog.copy_from(from, FEED_CHUNK, &mut chunk),
            };
            let Ok(copied) = copied else {
                if !backlog.active() {
                    notice!(
                        "Replica {}:{} disconnected: this server became a replica",
                        link.ip,
                        link.port
                    );
                    return Ok(());
                }
                warning!(
                    "Replica {}:{} dropped: it fell {} bytes behind, past the replication buffer (client-output-buffer-limit replica); it will resync",
                    link.ip,
                    link.port,
                    backlog.end().saturating_sub(from)
                );
                self.server.stats.count_output_limit_disconnection();
                return Ok(());
            };
            if copied > 0 {
                tokio::select! {
                    written = self.socket.write_all(&chunk) => written?,
                    _ = link.drop_signal.notified() => continue,
                    _ = &mut killed => return Ok(()),
                }
                link.sent.fetch_add(copied as u64, Ordering::Relaxed);
                self.server.stats.count_output(copied);
                continue;
            }
            tokio::select! {
                changed = end.changed() => if changed.is_err() { return Ok(()) },
                readable = self.socket.readable() => readable?,
                _ = &mut killed => return Ok(()),
            }
        }
    }

    /// Waits for the replica's first acknowledgement; false if it was
    /// killed or dropped first.
    async fn wait_first_ack(
        &mut self,
        link: &ReplicaLink,
        mut killed: Pin<&mut impl Future<Output = ()>>,
    ) -> std::io::Result<bool> {
        loop {
            if self.read_acks(link)? {
                return Ok(true);
            }
            tokio::select! {
                readable = self.socket.readable() => readable?,
                _ = link.drop_signal.notified() => return Ok(false),
                _ = &mut killed => return Ok(false),
            }
        }
    }

    /// WAIT: how many replicas acknowledged `wait.offset` once enough did
    /// or its deadline passed; `None` if the client was killed meanwhile.
    pub(super) async fn wait_replicas(
        &mut self,
        wait: WaitReplicas,
        mut killed: Pin<&mut impl Future<Output = ()>>,
    ) -> Option<usize> {
        let backlog = self.server.replication.backlog.clone();
        let mut acks = backlog.watch_acks();
        let deadline = async {
            match wait.deadline {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(deadline);
        loop {
            acks.borrow_and_update();
            let count = backlog.acknowledged_by(wait.offset);
            if count >= wait.needed {
                return Some(count);
            }
            tokio::select! {
                _ = acks.changed() => {}
                _ = &mut deadline => return Some(backlog.acknowledged_by(wait.offset)),
                _ = &mut killed => return None,
            }
        }
    }

    /// Reads what the replica sent without waiting, and records its
    /// acknowledgements; anything else it sends is ignored, as Redis
    /// ignores a replica's other replies. True if it acknowledged.
    fn read_acks(&mut self, link: &ReplicaLink) -> std::io::Result<bool> {
        let progress = &mut self.progress;
        loop {
            progress.read_buf.reserve(4096);
            match self.socket.read_available(&mut progress.read_buf) {
                Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                Ok(_) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        let limits = Limits {
            max_bulk_len: 1 << 20,
            authenticated: true,
        };
        let mut acknowledged = false;
        while let Some(args) = progress
            .decoder
            .next(&mut progress.read_buf, &limits)
            .map_err(std::io::Error::other)?
        {
            let ack = args.len() >= 3
                && args[0].eq_ignore_ascii_case(b"replconf")
                && args[1].eq_ignore_ascii_case(b"ack");
            let offset = ack.then(|| std::str::from_utf8(&args[2]).ok()?.parse::<u64>().ok());
            if let Some(offset) = offset.flatten() {
                self.server.replication.backlog.acknowledged(link, offset);
                acknowledged = true;
            }
        }
        Ok(acknowledged)
    }
}
