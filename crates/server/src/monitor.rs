//! MONITOR's lines: what dispatch sends every monitor for each command
//! run (see `crate::pubsub` for how they reach the monitors, within their
//! output limits and the client budget).
//!
//! A line is Redis's: `+<unix seconds>.<microseconds> [<db> <addr>]`
//! followed by the arguments, each quoted and escaped as Redis's
//! `sdscatrepr` does (`\\`, `\"`, `\n`, `\r`, `\t`, `\a`, `\b`, printable
//! ASCII as is, any other byte as `\xhh`), with redacted arguments
//! (passwords) shown as `"(redacted)"`. As in Redis, a command is fed once
//! it has run (so `SELECT 1` shows database 1, and EXEC follows the
//! commands it ran), errors included, and neither commands refused before
//! running nor admin commands are fed.

use std::fmt::Write;

use bytes::Bytes;

/// One MONITOR line, without the `+` and the CRLF the writer adds, for a
/// command run at `now_usec` (Unix microseconds) in database `db` by the
/// client at `addr`; the arguments at `redacted` are hidden.
pub fn line(now_usec: u64, db: usize, addr: &str, args: &[Bytes], redacted: &[usize]) -> Bytes {
    let mut line = String::with_capacity(64 + args.iter().map(|a| a.len() + 3).sum::<usize>());
    let _ = write!(
        line,
        "{}.{:06} [{db} {addr}]",
        now_usec / 1_000_000,
        now_usec % 1_000_000
    );
    for (index, arg) in args.iter().enumerate() {
        line.push(' ');
        match redacted.contains(&index) {
            true => line.push_str("\"(redacted)\""),
            false => push_repr(&mut line, arg),
        }
    }
    Bytes::from(line)
}

/// Appends `arg` quoted and escaped as Redis's `sdscatrepr`.
fn push_repr(out: &mut String, arg: &[u8]) {
    out.push('"');
    for &byte in arg {
        match byte {
            b'\\' => out.push_str("\\\\"),
            b'"' => out.push_str("\\\""),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x07 => out.push_str("\\a"),
            0x08 => out.push_str("\\b"),
            0x20..=0x7e => out.push(byte as char),
            _ => {
                let _ = write!(out, "\\x{byte:02x}");
            }
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_formatted_and_escaped_as_redis_does() {
        let args: Vec<Bytes> = [
            &b"set"[..],
            b"k",
            "a\"b\\c\n\x01\u{ff} \t\r\x07\x08".as_bytes(),
        ]
        .iter()
        .map(|a| Bytes::copy_from_slice(a))
        .collect();
        let line = line(1_795_641_264_000_042, 3, "127.0.0.1:35446", &args, &[]);
        assert_eq!(
            line,
            r#"1795641264.000042 [3 127.0.0.1:35446] "set" "k" "a\"b\\c\n\x01\xc3\xbf \t\r\a\b""#
        );
    }

    #[test]
    fn redacted_arguments_are_hidden() {
        let args: Vec<Bytes> = ["auth", "user", "secret"].map(Bytes::from).to_vec();
        let line = line(0, 0, "1.2.3.4:5", &args, &[1, 2]);
        assert_eq!(
            line,
            r#"0.000000 [0 1.2.3.4:5] "auth" "(redacted)" "(redacted)""#
        );
    }
}
