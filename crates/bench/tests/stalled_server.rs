//! A deliberately stalled server: its latency must be counted from each
//! request's *intended* send time (open loop), not from when the client got
//! round to sending it — otherwise the stall would be hidden (coordinated
//! omission).
//!
//! The server below answers `+OK` to everything, except that it sleeps
//! `STALL` before answering the first SET. With one connection, one request
//! in flight, and a uniform schedule of 200 req/s, every request scheduled
//! during the stall waits for it: the ones scheduled in its first half must
//! show at least STALL/2 of latency, however fast the machine is. Only lower
//! bounds that the stall itself guarantees are asserted — no timing limits.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use keel_bench::{cli, run};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const STALL: Duration = Duration::from_millis(600);

async fn stalling_server(listener: TcpListener) {
    let stalled = Arc::new(AtomicBool::new(false));
    loop {
        let Ok((mut sock, _)) = listener.accept().await else {
            return;
        };
        let stalled = stalled.clone();
        tokio::spawn(async move {
            let mut buf = BytesMut::with_capacity(4096);
            loop {
                match sock.read_buf(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                let mut replies = Vec::new();
                while let Ok(Some((frame, used))) = keel_resp::decode(&buf) {
                    buf.advance(used);
                    let is_set = matches!(&frame, keel_resp::Frame::Array(a)
                        if matches!(a.first(), Some(keel_resp::Frame::Bulk(b)) if &b[..] == b"SET"));
                    if is_set && !stalled.swap(true, Ordering::SeqCst) {
                        tokio::time::sleep(STALL).await;
                    }
                    replies.extend_from_slice(b"+OK\r\n");
                }
                if sock.write_all(&replies).await.is_err() {
                    return;
                }
            }
        });
    }
}

#[test]
fn stall_is_counted_from_intended_send_time() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(stalling_server(listener));
        let args: Vec<String> = format!(
            "-p {port} -c 1 -P 1 --rate 200 --arrival uniform --duration 3 --mix set=1 --quiet"
        )
        .split_whitespace()
        .map(String::from)
        .collect();
        let cli = cli::parse(&args).unwrap();
        let out = run::run(&cli.scenario, &cli.targets[0], &cli.opts).await;
        let total = out.total();

        // Requests intended in the first half of the stall (≈ 60 of them at
        // 200/s over 300 ms) waited at least STALL/2 from their intended time.
        let half = STALL.as_micros() as u64 / 2;
        let slow = total.latency.count_between(half, u64::MAX);
        assert!(slow >= 50, "only {slow} requests show the stall in latency");
        assert!(total.latency.max() >= STALL.as_micros() as u64 * 9 / 10);
        // Measured from the actual send, the stall would look like one slow
        // request: that is the number a closed-loop tool would report.
        let slow_service = total.service.count_between(half, u64::MAX);
        assert!(
            slow_service < slow,
            "service time ({slow_service} slow) should hide the stall that latency ({slow}) shows"
        );
        // Nothing dropped silently: the only errors allowed are the one or
        // two requests scheduled right at the end, and they are counted.
        let end_kinds = [keel_bench::driver::NOT_SENT, keel_bench::driver::UNFINISHED];
        assert!(
            total.errors.keys().all(|k| end_kinds.contains(&k.as_str()))
                && total.error_total() <= 2,
            "{:?}",
            total.errors
        );
        assert!(total.ops > 300);
    });
}
