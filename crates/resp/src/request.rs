//! Parsing what clients send, as Redis's `processMultibulkBuffer` and
//! `processInlineBuffer` do: same limits, same error strings, same leniency.
//!
//! A request is either a multibulk array of bulk strings (what every client
//! library sends) or an inline line of space-separated, optionally quoted
//! words (what a person types into `nc` or `telnet`). The decoder is a small
//! state machine that keeps the arguments parsed so far, so a request with a
//! million arguments, or a 512 MB value arriving in 16 KB reads, is parsed in
//! one pass. Arguments are split off the read buffer without copying, but
//! for those of a request the buffer holds only part of: when the decoder
//! runs out of bytes mid-request it copies them once, so that they do not
//! keep the whole buffer allocated after the connection has moved on to a
//! new one, and the connection can count exactly what they hold
//! ([`RequestDecoder::held_bytes`]).

use std::ops::Range;

use bytes::{Buf, Bytes, BytesMut};

/// Longest inline request, and longest `*n` / `$n` header line, Redis accepts.
pub const MAX_INLINE_LEN: usize = 64 * 1024;
/// Most arguments in one multibulk request. Redis 7.0 allows up to INT_MAX;
/// keel caps it so a bogus count cannot make a connection reserve gigabytes.
pub const MAX_MULTIBULK_LEN: usize = 1024 * 1024;
/// Default `proto-max-bulk-len`: the largest single argument, 512 MB.
pub const DEFAULT_MAX_BULK_LEN: usize = 512 * 1024 * 1024;
/// Before AUTH succeeds, Redis allows at most this many arguments...
const UNAUTHENTICATED_MAX_MULTIBULK_LEN: usize = 10;
/// ...of at most this many bytes each, so unauthenticated peers cannot make
/// the server buffer much.
const UNAUTHENTICATED_MAX_BULK_LEN: usize = 16 * 1024;

/// Limits that depend on configuration and on the connection's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `proto-max-bulk-len`.
    pub max_bulk_len: usize,
    /// False while a password is required and the client has not given it.
    pub authenticated: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bulk_len: DEFAULT_MAX_BULK_LEN,
            authenticated: true,
        }
    }
}

/// A request that breaks the protocol. The server replies with
/// `-ERR {self}` and closes the connection after that reply, as Redis does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProtocolError {
    /// An inline line longer than [`MAX_INLINE_LEN`] without a newline.
    TooBigInline,
    /// A `*n` line longer than [`MAX_INLINE_LEN`].
    TooBigMultibulkCount,
    /// A `$n` line longer than [`MAX_INLINE_LEN`].
    TooBigBulkCount,
    /// `*n` with n not a number or over [`MAX_MULTIBULK_LEN`].
    InvalidMultibulkLength,
    /// `$n` with n not a number, negative or over `proto-max-bulk-len`.
    InvalidBulkLength,
    /// More than 10 arguments before AUTH.
    UnauthenticatedMultibulkLength,
    /// An argument over 16 KB before AUTH.
    UnauthenticatedBulkLength,
    /// Something other than `$` where a bulk string must start.
    ExpectedDollar(u8),
    /// An inline line with a quote that does not close properly.
    UnbalancedQuotes,
}

impl std::fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match self {
            ProtocolError::TooBigInline => "too big inline request",
            ProtocolError::TooBigMultibulkCount => "too big mbulk count string",
            ProtocolError::TooBigBulkCount => "too big bulk count string",
            ProtocolError::InvalidMultibulkLength => "invalid multibulk length",
            ProtocolError::InvalidBulkLength => "invalid bulk length",
            ProtocolError::UnauthenticatedMultibulkLength => "unauthenticated multibulk length",
            ProtocolError::UnauthenticatedBulkLength => "unauthenticated bulk length",
            ProtocolError::ExpectedDollar(got) => {
                return write!(f, "Protocol error: expected '$', got '{}'", *got as char)
            }
            ProtocolError::UnbalancedQuotes => "unbalanced quotes in request",
        };
        write!(f, "Protocol error: {what}")
    }
}

impl std::error::Error for ProtocolError {}

/// Incremental decoder of client requests; one per connection.
#[derive(Debug, Default)]
pub struct RequestDecoder {
    /// Arguments of a multibulk request still being received.
    partial: Option<Partial>,
    /// An empty argument list given back by [`RequestDecoder::recycle`],
    /// which the next request fills.
    spare: Vec<Bytes>,
    /// Requests taken off the buffer before their turn.
    ahead: Ahead,
}

/// The longest argument list [`RequestDecoder::recycle`] keeps: enough
/// for most requests, small enough (256 bytes) for every connection to
/// keep one.
const RECYCLED_ARGS: usize = 8;

/// The most arguments a request taken whole has (see
/// [`RequestDecoder::take_whole`]); under the 10 Redis allows before AUTH.
const WHOLE_ARGS: usize = RECYCLED_ARGS;

/// The most requests [`RequestDecoder::take_ahead`] takes at once.
pub const MAX_AHEAD: usize = 16;

/// The most arguments, all its requests together, it takes at once: room
/// for sixteen 4-argument requests, or five 10-key MGETs.
const AHEAD_ARGS: usize = 64;

/// Whole requests taken off the buffer before their turn (see
/// [`RequestDecoder::take_ahead`]), which [`RequestDecoder::next`] hands
/// out first, in order.
#[derive(Debug, Default)]
struct Ahead {
    /// Their arguments, one request after another; those handed out are
    /// left empty. Freed once every request is handed out, so a
    /// connection between batches holds none.
    args: Vec<Bytes>,
    /// Each request's number of arguments.
    counts: [u8; MAX_AHEAD],
    /// How many requests were taken.
    requests: u8,
    /// How many were handed out, and how many arguments those had.
    handed: u8,
    handed_args: u8,
    /// The limits they were taken within.
    limits: Limits,
}

#[derive(Debug)]
struct Partial {
    remaining: usize,
    args: Vec<Bytes>,
    /// How many of `args`, from the first, are copies of their own rather
    /// than slices of a read buffer.
    detached: usize,
    /// Bytes in `args`.
    arg_bytes: usize,
    /// Length of the bulk whose header was read but whose payload was not.
    bulk_len: Option<usize>,
}

impl RequestDecoder {
    /// A decoder at the start of a request.
    pub fn new() -> Self {
        Self::default()
    }

    /// True when part of a request has been consumed from the buffer but the
    /// request is not complete yet.
    pub fn is_mid_request(&self) -> bool {
        self.partial.is_some()
    }

    /// Bytes of memory the decoder holds between calls: the arguments of a
    /// request still arriving, and the list of them. The connection charges
    /// them to its client's buffers, as Redis counts a client's `argv`.
    pub fn held_bytes(&self) -> usize {
        self.partial.as_ref().map_or(0, |p| {
            p.arg_bytes + p.args.capacity() * std::mem::size_of::<Bytes>()
        })
    }

    /// How many more bytes the request being received needs at least: lets
    /// the connection reserve a big argument's space in one allocation.
    pub fn bytes_wanted(&self) -> usize {
        self.partial
            .as_ref()
            .and_then(|p| p.bulk_len)
            .map_or(0, |len| len + 2)
    }

    /// Takes the next complete request off the front of `buf`.
    ///
    /// `Ok(None)` means more bytes are needed; what was consumed so far is
    /// remembered. Empty requests (`*0`, blank lines) are skipped as Redis
    /// skips them. On `Err`, the connection must be closed after replying.
    pub fn next(
        &mut self,
        buf: &mut BytesMut,
        limits: &Limits,
    ) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        if self.has_ahead() {
            return self.hand_out_ahead(limits).map(Some);
        }
        loop {
            if self.partial.is_none() {
                let Some(&first) = buf.first() else {
                    return Ok(None);
                };
                let started = if first == b'*' {
                    if let Some(args) = self.take_whole(buf, limits) {
                        return Ok(Some(args));
                    }
                    self.start_multibulk(buf, limits)?
                } else {
                    match inline_request(buf)? {
                        Some(args) if args.is_empty() => continue,
                        Some(args) => return Ok(Some(args)),
                        None => return Ok(None),
                    }
                };
                if !started {
                    return Ok(None);
                }
                if self.partial.is_none() {
                    continue; // `*0` or `*-1`: nothing to run.
                }
            }
            return self.continue_multibulk(buf, limits);
        }
    }

    /// Takes back the argument list of a request that has run, so the next
    /// request fills it instead of allocating its own; a list longer than
    /// [`RECYCLED_ARGS`] is let go.
    pub fn recycle(&mut self, mut args: Vec<Bytes>) {
        if args.capacity() <= RECYCLED_ARGS && args.capacity() > self.spare.capacity() {
            args.clear();
            self.spare = args;
        }
    }

    /// Takes the whole requests at the front of `buf`, as many as
    /// [`MAX_AHEAD`] and [`AHEAD_ARGS`] allow, splitting them off in one
    /// piece: the same requests, one by one, that [`RequestDecoder::next`]
    /// would take in its common case (a well-formed multibulk request, all
    /// there, within the limits). `next` hands them out before anything
    /// else. Meanwhile [`RequestDecoder::ahead`] shows them, so that a
    /// server can load their keys ahead: decoding them then, instead of
    /// reading their headers once to load ahead and again to run them,
    /// saved a GET at P=16 160 of its 2,800 instructions. Returns how many
    /// it took: none while requests taken earlier are still to be handed
    /// out, or mid-request.
    pub fn take_ahead(&mut self, buf: &mut BytesMut, limits: &Limits) -> usize {
        // Most calls find nothing to take (at P=1, every one): they return
        // before setting up room for what they would find.
        if buf.first() != Some(&b'*') || self.has_ahead() || self.partial.is_some() {
            return 0;
        }
        let mut ranges: [Range<usize>; AHEAD_ARGS] = std::array::from_fn(|_| 0..0);
        let mut counts = [0; MAX_AHEAD];
        let (requests, end) = walk_whole(buf, limits, &mut ranges, &mut counts);
        if requests > 0 {
            let args = counts[..requests].iter().sum();
            let mut taken = Vec::with_capacity(args);
            split_off(buf, end, &ranges[..args], &mut taken);
            self.ahead = Ahead {
                args: taken,
                counts: counts.map(|n| n as u8),
                requests: requests as u8,
                handed: 0,
                handed_args: 0,
                limits: *limits,
            };
        }
        requests
    }

    /// The requests taken ahead and not handed out yet, in order.
    pub fn ahead(&self) -> impl Iterator<Item = &[Bytes]> {
        let ahead = &self.ahead;
        let mut at = ahead.handed_args as usize;
        ahead.counts[ahead.handed as usize..ahead.requests as usize]
            .iter()
            .map(move |&count| {
                let args = &ahead.args[at..at + count as usize];
                at += count as usize;
                args
            })
    }

    /// True while requests taken ahead wait to be handed out.
    pub fn has_ahead(&self) -> bool {
        self.ahead.handed < self.ahead.requests
    }

    /// Hands out the next request taken ahead. If the limits changed since
    /// (a RESET that ended the AUTH, a lower `proto-max-bulk-len`), it is
    /// checked against them as the step-by-step path would check it now.
    fn hand_out_ahead(&mut self, limits: &Limits) -> Result<Vec<Bytes>, ProtocolError> {
        let ahead = &mut self.ahead;
        let (start, count) = (
            ahead.handed_args as usize,
            ahead.counts[ahead.handed as usize] as usize,
        );
        let request = &mut ahead.args[start..start + count];
        if *limits != ahead.limits {
            within_limits(request, limits)?;
        }
        let mut args = std::mem::take(&mut self.spare);
        args.extend(request.iter_mut().map(std::mem::take));
        ahead.handed += 1;
        ahead.handed_args += count as u8;
        if !self.has_ahead() {
            self.ahead = Ahead::default();
        }
        Ok(args)
    }

    /// The common case in one step: a well-formed multibulk request of at
    /// most [`WHOLE_ARGS`] arguments, all of it in `buf`, within the limits.
    /// It is found in place, split off the buffer once, and its arguments
    /// are slices of that one piece: taking each header and argument off
    /// the buffer in turn cost some 600 instructions for a SET, a tenth of
    /// its whole cost. Anything else (`None`) takes the step-by-step path,
    /// which also gives the errors.
    fn take_whole(&mut self, buf: &mut BytesMut, limits: &Limits) -> Option<Vec<Bytes>> {
        let mut ranges: [Range<usize>; WHOLE_ARGS] = Default::default();
        let (count, end) = walk_whole_request(buf, 0, whole_max_len(limits), &mut ranges)?;
        let mut args = std::mem::take(&mut self.spare);
        split_off(buf, end, &ranges[..count], &mut args);
        Some(args)
    }

    /// Reads the `*n` line. Returns false if the line is not complete yet.
    fn start_multibulk(
        &mut self,
        buf: &mut BytesMut,
        limits: &Limits,
    ) -> Result<bool, ProtocolError> {
        let too_big = ProtocolError::TooBigMultibulkCount;
        let Some(count) = header_len(buf, too_big, ProtocolError::InvalidMultibulkLength)? else {
            return Ok(false);
        };
        if count > MAX_MULTIBULK_LEN as i64 {
            return Err(ProtocolError::InvalidMultibulkLength);
        }
        if count > UNAUTHENTICATED_MAX_MULTIBULK_LEN as i64 && !limits.authenticated {
            return Err(ProtocolError::UnauthenticatedMultibulkLength);
        }
        if count > 0 {
            let count = count as usize;
            let mut args = std::mem::take(&mut self.spare);
            // Trust the count only as far as the bytes already here could
            // back it: each argument needs at least 4 bytes.
            args.reserve(count.min(buf.len() / 4 + 1));
            self.partial = Some(Partial {
                remaining: count,
                args,
                detached: 0,
                arg_bytes: 0,
                bulk_len: None,
            });
        }
        Ok(true)
    }

    fn continue_multibulk(
        &mut self,
        buf: &mut BytesMut,
        limits: &Limits,
    ) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        let partial = self.partial.as_mut().expect("called mid-request");
        if !partial.receive(buf, limits)? {
            partial.detach();
            return Ok(None);
        }
        Ok(self.partial.take().map(|p| p.args))
    }
}

impl Partial {
    /// Takes the request's remaining arguments off the front of `buf`, as
    /// far as it holds them; true once they are all here.
    fn receive(&mut self, buf: &mut BytesMut, limits: &Limits) -> Result<bool, ProtocolError> {
        while self.remaining > 0 {
            let len = match self.bulk_len {
                Some(len) => len,
                None => {
                    let Some(&first) = buf.first() else {
                        return Ok(false);
                    };
                    if first != b'$' {
                        return Err(ProtocolError::ExpectedDollar(first));
                    }
                    let (too_big, invalid) = (
                        ProtocolError::TooBigBulkCount,
                        ProtocolError::InvalidBulkLength,
                    );
                    let Some(len) = header_len(buf, too_big, invalid.clone())? else {
                        return Ok(false);
                    };
                    if len < 0 || len as u64 > limits.max_bulk_len as u64 {
                        return Err(invalid);
                    }
                    let len = len as usize;
                    if len > UNAUTHENTICATED_MAX_BULK_LEN && !limits.authenticated {
                        return Err(ProtocolError::UnauthenticatedBulkLength);
                    }
                    self.bulk_len = Some(len);
                    len
                }
            };
            if buf.len() < len + 2 {
                return Ok(false);
            }
            self.args.push(buf.split_to(len).freeze());
            self.arg_bytes += len;
            // Like Redis, the two bytes after the payload are skipped, not
            // checked.
            buf.advance(2);
            self.bulk_len = None;
            self.remaining -= 1;
        }
        Ok(true)
    }

    /// Copies the arguments still sharing the read buffer into memory of
    /// their own (see the module comment); each is copied once at most.
    fn detach(&mut self) {
        for arg in &mut self.args[self.detached..] {
            *arg = Bytes::copy_from_slice(arg);
        }
        self.detached = self.args.len();
    }
}

/// Finds the whole requests at the front of `buf`, as many as `counts`
/// has room for and whose arguments fit in `ranges` together: well-formed
/// multibulk requests, all there, each argument within the limits. Fills
/// in each one's argument count and its arguments' positions; returns how
/// many it found and where the last ends.
fn walk_whole(
    buf: &[u8],
    limits: &Limits,
    ranges: &mut [Range<usize>],
    counts: &mut [usize],
) -> (usize, usize) {
    let max_len = whole_max_len(limits);
    let (mut requests, mut args, mut end) = (0, 0, 0);
    while requests < counts.len() {
        let Some((count, next)) = walk_whole_request(buf, end, max_len, &mut ranges[args..]) else {
            break;
        };
        counts[requests] = count;
        requests += 1;
        args += count;
        end = next;
    }
    (requests, end)
}

/// The longest argument a request taken whole may have.
fn whole_max_len(limits: &Limits) -> usize {
    match limits.authenticated {
        true => limits.max_bulk_len,
        false => limits.max_bulk_len.min(UNAUTHENTICATED_MAX_BULK_LEN),
    }
}

/// Walks the request at `buf[start..]` if it is whole, with at most
/// `ranges.len()` arguments of at most `max_len` bytes each: writes their
/// positions in `buf` to `ranges`, and returns how many there are and
/// where the request ends. Every request is decoded through here; with
/// `walk_request` and `split_off` it is inlined, since as calls the three
/// cost a GET about 100 instructions at P=1 and 80 at P=16.
#[inline(always)]
fn walk_whole_request(
    buf: &[u8],
    start: usize,
    max_len: usize,
    ranges: &mut [Range<usize>],
) -> Option<(usize, usize)> {
    let mut count = 0;
    let len = walk_request(&buf[start..], ranges.len(), |at, range| {
        (range.len() <= max_len).then(|| {
            ranges[at] = start + range.start..start + range.end;
            count = at + 1;
        })
    })?;
    Some((count, start + len))
}

/// Splits the first `end` bytes off `buf` as one piece, and appends to
/// `args` the slices of it at `ranges`. Inlined (see
/// [`walk_whole_request`]).
#[inline(always)]
fn split_off(buf: &mut BytesMut, end: usize, ranges: &[Range<usize>], args: &mut Vec<Bytes>) {
    let whole = buf.split_to(end).freeze();
    args.extend(ranges.iter().map(|range| whole.slice(range.clone())));
}

/// Checks a request taken whole within some limits against `limits`, in
/// the order, and with the errors, of the step-by-step path.
fn within_limits(args: &[Bytes], limits: &Limits) -> Result<(), ProtocolError> {
    if args.len() > UNAUTHENTICATED_MAX_MULTIBULK_LEN && !limits.authenticated {
        return Err(ProtocolError::UnauthenticatedMultibulkLength);
    }
    for arg in args {
        if arg.len() > limits.max_bulk_len {
            return Err(ProtocolError::InvalidBulkLength);
        }
        if arg.len() > UNAUTHENTICATED_MAX_BULK_LEN && !limits.authenticated {
            return Err(ProtocolError::UnauthenticatedBulkLength);
        }
    }
    Ok(())
}

/// Consumes a header line (`*n\r\n` or `$n\r\n`) and returns the number
/// after its type byte (`invalid` if it is not one), or `None` if the line
/// is incomplete. Like Redis, the line ends at the first CR and the byte
/// after it is skipped. The number is read in place: splitting the line off
/// as shared bytes cost two reference count updates per header, four
/// headers for a SET.
fn header_len(
    buf: &mut BytesMut,
    too_big: ProtocolError,
    invalid: ProtocolError,
) -> Result<Option<i64>, ProtocolError> {
    let Some(cr) = buf.iter().position(|&b| b == b'\r') else {
        return if buf.len() > MAX_INLINE_LEN {
            Err(too_big)
        } else {
            Ok(None)
        };
    };
    if cr > MAX_INLINE_LEN {
        return Err(too_big);
    }
    if buf.len() < cr + 2 {
        return Ok(None);
    }
    let len = parse_len(&buf[1..cr]).ok_or(invalid)?;
    buf.advance(cr + 2);
    Ok(Some(len))
}

/// The complete multibulk requests at the front of `buf`, read in place
/// and consuming nothing: how many there are and the bytes they take. It
/// stops at the first that is incomplete or that the decoder would refuse,
/// and at an inline request. For a server that only needs to know where
/// requests end (`keel-floor`).
pub fn complete_requests(buf: &[u8]) -> (usize, usize) {
    walk_complete_requests(buf, |_| {})
}

/// A step of [`walk_complete_requests`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Walked {
    /// The argument at this index of its request is at these bytes of the
    /// buffer.
    Argument(usize, Range<usize>),
    /// The request whose arguments came last is complete.
    RequestEnd,
}

/// [`complete_requests`], telling `visit` where each argument is as it is
/// read, and when a request is complete. The last request's arguments may
/// come without an end, when it is incomplete: a visitor that keeps them
/// starts afresh at each argument 0. For a server that executes requests
/// in place (`keel-floor --keyspace`).
pub fn walk_complete_requests(buf: &[u8], mut visit: impl FnMut(Walked)) -> (usize, usize) {
    let (mut count, mut end) = (0, 0);
    while let Some(len) = walk_request(&buf[end..], MAX_MULTIBULK_LEN, |index, at| {
        visit(Walked::Argument(index, end + at.start..end + at.end));
        Some(())
    }) {
        visit(Walked::RequestEnd);
        count += 1;
        end += len;
    }
    (count, end)
}

/// Walks the multibulk request at the front of `buf` in place, giving
/// `visit` each argument's index and position; returns the request's
/// length. `None` if the request is not all there, has no arguments or
/// more than `max_args`, has a header other than [`header_at`] reads, or
/// if `visit` returns `None`. Inlined (see [`walk_whole_request`]).
#[inline(always)]
fn walk_request(
    buf: &[u8],
    max_args: usize,
    mut visit: impl FnMut(usize, Range<usize>) -> Option<()>,
) -> Option<usize> {
    let (count, mut at) = header_at(buf, 0, b'*')?;
    if count < 1 || count > max_args {
        return None;
    }
    for index in 0..count {
        let (len, start) = header_at(buf, at, b'$')?;
        let end = start + len;
        at = end.checked_add(2)?;
        if at > buf.len() {
            return None;
        }
        visit(index, start..end)?;
    }
    Some(at)
}

/// The number of the `*n` or `$n` line (`kind` says which) at `at`, and
/// where the next line starts; the line's byte after its CR is skipped
/// unchecked, as the decoder skips it. Only the form clients send is read,
/// in one pass: 1 to 18 digits without a leading zero, or a lone 0. The
/// rest (a sign, a bad number, a line split across reads) is left to the
/// decoder's step-by-step path, which also gives the errors.
fn header_at(buf: &[u8], at: usize, kind: u8) -> Option<(usize, usize)> {
    const MAX_DIGITS: usize = 18;
    // The commonest lines, of one or two digits, in one step each: the
    // loop below cost some 50 instructions a header.
    match *buf.get(at..)? {
        [first, digit @ b'0'..=b'9', b'\r', _, ..] if first == kind => {
            return Some(((digit - b'0') as usize, at + 4));
        }
        [first, tens @ b'1'..=b'9', units @ b'0'..=b'9', b'\r', _, ..] if first == kind => {
            return Some((
                (tens - b'0') as usize * 10 + (units - b'0') as usize,
                at + 5,
            ));
        }
        _ => {}
    }
    let (&first, line) = buf.get(at..)?.split_first()?;
    if first != kind || line.first() == Some(&b'0') && line.get(1) != Some(&b'\r') {
        return None;
    }
    let mut n: u64 = 0;
    for (i, &byte) in line.iter().enumerate().take(MAX_DIGITS + 1) {
        match byte {
            b'0'..=b'9' => n = n * 10 + u64::from(byte - b'0'),
            b'\r' if i > 0 => {
                let next = at + 1 + i + 2;
                return (next <= buf.len()).then_some((usize::try_from(n).ok()?, next));
            }
            _ => return None,
        }
    }
    None
}

/// Parses a decimal length as Redis's `string2ll` does: an optional minus
/// sign, then digits without a leading zero ("0" alone aside), no spaces
/// or plus sign, within an i64.
fn parse_len(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    match digits {
        [b'0'] if !negative => return Some(0),
        [b'1'..=b'9', ..] => {}
        _ => return None,
    }
    let mut magnitude: u64 = 0;
    for &digit in digits {
        if !digit.is_ascii_digit() {
            return None;
        }
        magnitude = magnitude
            .checked_mul(10)?
            .checked_add(u64::from(digit - b'0'))?;
    }
    match negative {
        true if magnitude <= i64::MIN.unsigned_abs() => Some(0i64.wrapping_sub_unsigned(magnitude)),
        true => None,
        false => i64::try_from(magnitude).ok(),
    }
}

/// Consumes one inline line and splits it into arguments; `Some(vec![])`
/// for a blank line.
fn inline_request(buf: &mut BytesMut) -> Result<Option<Vec<Bytes>>, ProtocolError> {
    let Some(newline) = buf.iter().position(|&b| b == b'\n') else {
        return if buf.len() > MAX_INLINE_LEN {
            Err(ProtocolError::TooBigInline)
        } else {
            Ok(None)
        };
    };
    if newline > MAX_INLINE_LEN {
        return Err(ProtocolError::TooBigInline);
    }
    let line = buf.split_to(newline + 1);
    let mut text = &line[..newline];
    if let Some(stripped) = text.strip_suffix(b"\r") {
        text = stripped;
    }
    split_words(text)
        .map(|args| Some(args.into_iter().map(Bytes::from).collect()))
        .ok_or(ProtocolError::UnbalancedQuotes)
}

/// Splits a line into words the way Redis's `sdssplitargs` does: spaces
/// separate words; "double quotes" allow `\n \r \t \b \a \\ \" \xHH`
/// escapes; 'single quotes' allow only `\'`. A closing quote must be
/// followed by a space or the end of the line. `None` on unbalanced quotes.
pub fn split_words(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut args = Vec::new();
    let mut i = 0;
    loop {
        while i < line.len() && line[i].is_ascii_whitespace() {
            i += 1;
        }
        if i == line.len() {
            return Some(args);
        }
        let mut word = Vec::new();
        let mut in_double = false;
        let mut in_single = false;
        loop {
            let c = line.get(i).copied();
            if in_double {
                match c {
                    None => return None,
                    Some(b'\\') if line.get(i + 3).is_some() && line[i + 1] == b'x' => {
                        match (hex_digit(line[i + 2]), hex_digit(line[i + 3])) {
                            (Some(hi), Some(lo)) => {
                                word.push(hi * 16 + lo);
                                i += 3;
                            }
                            _ => word.push(b'\\'),
                        }
                    }
                    Some(b'\\') if i + 1 < line.len() => {
                        i += 1;
                        word.push(match line[i] {
                            b'n' => b'\n',
                            b'r' => b'\r',
                            b't' => b'\t',
                            b'b' => 8,
                            b'a' => 7,
                            other => other,
                        });
                    }
                    Some(b'"') => {
                        if line.get(i + 1).is_some_and(|b| !b.is_ascii_whitespace()) {
                            return None;
                        }
                        i += 1;
                        break;
                    }
                    Some(b) => word.push(b),
                }
            } else if in_single {
                match c {
                    None => return None,
                    Some(b'\\') if line.get(i + 1) == Some(&b'\'') => {
                        i += 1;
                        word.push(b'\'');
                    }
                    Some(b'\'') => {
                        if line.get(i + 1).is_some_and(|b| !b.is_ascii_whitespace()) {
                            return None;
                        }
                        i += 1;
                        break;
                    }
                    Some(b) => word.push(b),
                }
            } else {
                match c {
                    None => break,
                    Some(b) if b.is_ascii_whitespace() => break,
                    Some(b'"') => in_double = true,
                    Some(b'\'') => in_single = true,
                    Some(b) => word.push(b),
                }
            }
            i += 1;
        }
        args.push(word);
    }
}

fn hex_digit(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(input: &[u8]) -> (Vec<Vec<Bytes>>, Option<ProtocolError>) {
        let mut decoder = RequestDecoder::new();
        let mut buf = BytesMut::from(input);
        let mut out = Vec::new();
        loop {
            match decoder.next(&mut buf, &Limits::default()) {
                Ok(Some(args)) => out.push(args),
                Ok(None) => return (out, None),
                Err(e) => return (out, Some(e)),
            }
        }
    }

    fn words(args: &[&str]) -> Vec<Bytes> {
        args.iter()
            .map(|a| Bytes::copy_from_slice(a.as_bytes()))
            .collect()
    }

    /// `args` as a client sends them.
    fn wire(args: &[&str]) -> Vec<u8> {
        let mut out = BytesMut::new();
        crate::Frame::command(args).encode(&mut out, crate::Protocol::Resp2);
        out.to_vec()
    }

    #[test]
    fn a_recycled_argument_list_is_filled_by_the_next_request() {
        let mut decoder = RequestDecoder::new();
        let limits = Limits::default();
        let mut buf = BytesMut::from(&b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPING\r\n"[..]);
        let first = decoder.next(&mut buf, &limits).unwrap().unwrap();
        let allocation = first.as_ptr();
        decoder.recycle(first);
        let second = decoder.next(&mut buf, &limits).unwrap().unwrap();
        assert_eq!(second, words(&["PING"]));
        assert_eq!(second.as_ptr(), allocation);
        decoder.recycle(Vec::with_capacity(RECYCLED_ARGS + 1));
        assert!(decoder.spare.capacity() <= RECYCLED_ARGS);
    }

    #[test]
    fn requests_taken_ahead_are_shown_then_handed_out_in_order() {
        let buf = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nv1\r\n*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$5\r\nkey:1";
        let (mut decoder, limits) = (RequestDecoder::new(), Limits::default());
        let mut whole = BytesMut::from(&buf[..]);
        assert_eq!(
            decoder.take_ahead(&mut whole, &limits),
            2,
            "the incomplete GET is left"
        );
        assert_eq!(&whole[..], b"*2\r\n$3\r\nGET\r\n$5\r\nkey:1");
        let shown: Vec<&[Bytes]> = decoder.ahead().collect();
        assert_eq!(
            shown,
            [&words(&["SET", "k", "v1"])[..], &words(&["PING"])[..]]
        );
        assert_eq!(decoder.take_ahead(&mut whole, &limits), 0, "two still wait");
        let first = decoder.next(&mut whole, &limits).unwrap().unwrap();
        assert_eq!(first, words(&["SET", "k", "v1"]));
        assert_eq!(decoder.ahead().count(), 1);
        assert!(decoder.has_ahead());
        whole.extend_from_slice(b"\r\n");
        let second = decoder.next(&mut whole, &limits).unwrap().unwrap();
        assert_eq!(second, words(&["PING"]));
        assert!(!decoder.has_ahead());
        assert_eq!(decoder.ahead.args.capacity(), 0, "freed once handed out");
        let third = decoder.next(&mut whole, &limits).unwrap().unwrap();
        assert_eq!(third, words(&["GET", "key:1"]));
    }

    #[test]
    fn complete_requests_are_counted_in_place() {
        let buf = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nv1\r\n*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$5\r\nkey:1";
        let incomplete = b"*2\r\n$3\r\nGET\r\n$5\r\nkey:1".len();
        assert_eq!(
            complete_requests(buf),
            (2, buf.len() - incomplete),
            "the incomplete GET is left"
        );
        assert_eq!(complete_requests(b"GET k\r\n"), (0, 0), "inline");
        assert_eq!(
            complete_requests(b"*1\r\n$x\r\nPING\r\n"),
            (0, 0),
            "malformed"
        );
    }

    #[test]
    fn a_walk_gives_each_argument_where_it_is_and_each_complete_request_its_end() {
        let buf = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$2\r\nke";
        let mut walked = Vec::new();
        let (count, taken) = walk_complete_requests(buf, |step| walked.push(step));
        let text = |at: &Range<usize>| std::str::from_utf8(&buf[at.clone()]).unwrap();
        let steps: Vec<String> = walked
            .iter()
            .map(|step| match step {
                Walked::Argument(index, at) => format!("{index}:{}", text(at)),
                Walked::RequestEnd => "end".to_string(),
            })
            .collect();
        assert_eq!(
            steps,
            ["0:GET", "1:k", "end", "0:PING", "end", "0:GET"],
            "the cut-short GET has no end"
        );
        assert_eq!((count, taken), complete_requests(buf));
        assert_eq!(
            taken,
            b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPING\r\n".len()
        );
    }

    #[test]
    fn taking_ahead_stops_where_the_common_case_does() {
        let limits = Limits::default();
        let taken =
            |wire: &[u8]| RequestDecoder::new().take_ahead(&mut BytesMut::from(wire), &limits);
        assert_eq!(taken(b"GET k\r\n"), 0, "inline");
        assert_eq!(taken(b"*1\r\n$x\r\nPING\r\n"), 0, "malformed");
        assert_eq!(taken(b"*0\r\n*1\r\n$4\r\nPING\r\n"), 0, "empty");
        let ping = b"*1\r\n$4\r\nPING\r\n".repeat(MAX_AHEAD + 1);
        assert_eq!(taken(&ping), MAX_AHEAD);
        let mget = wire(&["MGET"; 30]).repeat(3);
        assert_eq!(taken(&mget), AHEAD_ARGS / 30, "arguments bound it too");
        let mut mid = RequestDecoder::new();
        let mut buf = BytesMut::from(&b"*2\r\n$3\r\nGET\r\n"[..]);
        assert_eq!(mid.next(&mut buf, &limits), Ok(None));
        buf.extend_from_slice(b"$1\r\nk\r\n*1\r\n$4\r\nPING\r\n");
        assert_eq!(mid.take_ahead(&mut buf, &limits), 0, "mid-request");
    }

    #[test]
    fn a_request_taken_ahead_meets_limits_changed_since() {
        let big = "x".repeat(UNAUTHENTICATED_MAX_BULK_LEN + 1);
        let wire = wire(&["SET", "k", &big]);
        let open = Limits::default();
        let closed = Limits {
            authenticated: false,
            ..open
        };
        let lower = Limits {
            max_bulk_len: UNAUTHENTICATED_MAX_BULK_LEN,
            ..open
        };
        for (now, expected) in [
            (open, Ok(3)),
            (closed, Err(ProtocolError::UnauthenticatedBulkLength)),
            (lower, Err(ProtocolError::InvalidBulkLength)),
        ] {
            let mut decoder = RequestDecoder::new();
            let mut buf = BytesMut::from(&wire[..]);
            assert_eq!(decoder.take_ahead(&mut buf, &open), 1);
            let handed = decoder.next(&mut buf, &now).map(|args| args.unwrap().len());
            assert_eq!(handed, expected, "{now:?}");
        }
    }

    #[test]
    fn headers_read_in_place_take_only_what_clients_send() {
        type Case = (&'static [u8], Option<(usize, usize)>);
        let cases: &[Case] = &[
            (b"$3\r\nGET", Some((3, 4))),
            (b"$0\r\n", Some((0, 4))),
            (b"$16\r\n", Some((16, 5))),
            (b"$512\r\n", Some((512, 6))),
            (b"$123456789012345678\r\n", Some((123456789012345678, 21))),
            (b"$1234567890123456789\r\n", None),
            (b"$01\r\n", None),
            (b"$00\r\n", None),
            (b"$-1\r\n", None),
            (b"$\r\n", None),
            (b"*3\r\n", None),
            (b"$3\r", None),
            (b"$12\r", None),
        ];
        for &(line, expected) in cases {
            let shown = String::from_utf8_lossy(line);
            assert_eq!(header_at(line, 0, b'$'), expected, "{shown}");
        }
        assert_eq!(header_at(b"xx*2\r\n", 2, b'*'), Some((2, 6)));
    }

    #[test]
    fn lengths_parse_as_redis_string2ll_does() {
        let cases: &[(&str, Option<i64>)] = &[
            ("0", Some(0)),
            ("12", Some(12)),
            ("-1", Some(-1)),
            ("9223372036854775807", Some(i64::MAX)),
            ("-9223372036854775808", Some(i64::MIN)),
            ("9223372036854775808", None),
            ("-9223372036854775809", None),
            ("-0", None),
            ("01", None),
            ("+1", None),
            ("", None),
            ("-", None),
            (" 1", None),
            ("1 ", None),
            ("1a", None),
        ];
        for (text, parsed) in cases {
            assert_eq!(parse_len(text.as_bytes()), *parsed, "{text:?}");
        }
    }

    #[test]
    fn an_incomplete_requests_arguments_are_held_apart_from_the_buffer() {
        let mut decoder = RequestDecoder::new();
        let mut buf = BytesMut::with_capacity(64);
        buf.extend_from_slice(b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nva");
        assert_eq!(decoder.next(&mut buf, &Limits::default()), Ok(None));
        let list_bytes = decoder.partial.as_ref().unwrap().args.capacity() * 32;
        assert_eq!(decoder.held_bytes(), 6 + list_bytes);
        // Nothing but `buf` refers to its allocation any more: it can take
        // back the space its consumed front held.
        assert!(buf.try_reclaim(64 - buf.len()));
        buf.extend_from_slice(b"lue\r\n");
        let args = decoder.next(&mut buf, &Limits::default()).unwrap();
        assert_eq!(args, Some(words(&["SET", "key", "value"])));
        assert_eq!(decoder.held_bytes(), 0);
    }

    #[test]
    fn multibulk_and_inline_mix_in_one_buffer() {
        let (reqs, err) =
            decode_all(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n\r\n*0\r\nset \"a b\" 'c'\r\n");
        assert_eq!(err, None);
        assert_eq!(
            reqs,
            vec![
                words(&["GET", "k"]),
                words(&["PING"]),
                words(&["set", "a b", "c"])
            ]
        );
    }

    /// Requests and the error, decoding `input` fed in `chunk`-byte reads.
    fn decode_in_reads(
        input: &[u8],
        chunk: usize,
        limits: &Limits,
    ) -> (Vec<Vec<Bytes>>, Option<ProtocolError>) {
        let mut decoder = RequestDecoder::new();
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for piece in input.chunks(chunk) {
            buf.extend_from_slice(piece);
            loop {
                match decoder.next(&mut buf, limits) {
                    Ok(Some(args)) => out.push(args),
                    Ok(None) => break,
                    Err(e) => return (out, Some(e)),
                }
            }
        }
        (out, None)
    }

    #[test]
    fn requests_taken_whole_are_those_taken_step_by_step() {
        let nine = b"*9\r\n$4\r\nMSET\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n\
                     $1\r\nc\r\n$1\r\n3\r\n$1\r\nd\r\n$1\r\n4\r\n";
        let mut big = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$16385\r\n".to_vec();
        big.extend(std::iter::repeat_n(b'v', 16385));
        big.extend_from_slice(b"\r\n");
        let inputs: [&[u8]; 5] = [
            b"*3\r\n$3\r\nSET\r\n$0\r\n\r\n$2\r\nv1XY*1\r\n$4\r\nPING\r\n",
            nine,
            &big,
            b"*2\r\n$3\r\nGET\r\n$-1\r\n",
            b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n#4\r\nPING\r\n",
        ];
        let limits = [
            Limits::default(),
            Limits {
                max_bulk_len: 16384,
                authenticated: true,
            },
            Limits {
                max_bulk_len: DEFAULT_MAX_BULK_LEN,
                authenticated: false,
            },
        ];
        for input in inputs {
            for limits in &limits {
                let whole = decode_in_reads(input, input.len(), limits);
                assert_eq!(whole, decode_in_reads(input, 1, limits), "{input:?}");
                assert!(!whole.0.is_empty() || whole.1.is_some(), "{input:?}");
            }
        }
        let (requests, error) = decode_in_reads(nine, nine.len(), &Limits::default());
        assert_eq!((requests[0].len(), error), (9, None));
    }

    #[test]
    fn byte_at_a_time_gives_the_same_requests() {
        let input = b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\nECHO \"x\\ty\"\r\n";
        let mut decoder = RequestDecoder::new();
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for &b in input.iter() {
            buf.extend_from_slice(&[b]);
            while let Some(args) = decoder.next(&mut buf, &Limits::default()).unwrap() {
                out.push(args);
            }
        }
        assert_eq!(
            out,
            vec![words(&["SET", "key", "value"]), words(&["ECHO", "x\ty"])]
        );
    }

    #[test]
    fn limits_give_redis_errors() {
        let cases: &[(&[u8], ProtocolError)] = &[
            (b"*1048577\r\n", ProtocolError::InvalidMultibulkLength),
            (b"*x\r\n", ProtocolError::InvalidMultibulkLength),
            (b"*1\r\n$536870913\r\n", ProtocolError::InvalidBulkLength),
            (b"*1\r\n$-1\r\n", ProtocolError::InvalidBulkLength),
            (b"*1\r\nx\r\n", ProtocolError::ExpectedDollar(b'x')),
            (b"set \"a b\r\n", ProtocolError::UnbalancedQuotes),
            (b"set \"a\"b c\r\n", ProtocolError::UnbalancedQuotes),
        ];
        for (input, want) in cases {
            assert_eq!(decode_all(input).1.as_ref(), Some(want), "{input:?}");
        }
        let long_inline = vec![b'a'; MAX_INLINE_LEN + 1];
        assert_eq!(
            decode_all(&long_inline).1,
            Some(ProtocolError::TooBigInline)
        );
        let mut long_count = b"*".to_vec();
        long_count.extend(vec![b'1'; MAX_INLINE_LEN + 1]);
        assert_eq!(
            decode_all(&long_count).1,
            Some(ProtocolError::TooBigMultibulkCount)
        );
        assert_eq!(
            ProtocolError::ExpectedDollar(b'x').to_string(),
            "Protocol error: expected '$', got 'x'"
        );
    }

    #[test]
    fn unauthenticated_clients_get_small_limits() {
        let limits = Limits {
            authenticated: false,
            ..Limits::default()
        };
        let mut decoder = RequestDecoder::new();
        let mut buf = BytesMut::from(&b"*11\r\n"[..]);
        assert_eq!(
            decoder.next(&mut buf, &limits),
            Err(ProtocolError::UnauthenticatedMultibulkLength)
        );
        let mut decoder = RequestDecoder::new();
        let mut buf = BytesMut::from(&b"*1\r\n$16385\r\n"[..]);
        assert_eq!(
            decoder.next(&mut buf, &limits),
            Err(ProtocolError::UnauthenticatedBulkLength)
        );
    }

    #[test]
    fn split_args_escapes() {
        assert_eq!(
            split_words(br#"a "\x41\n" 'it\'s' """#).unwrap(),
            vec![
                b"a".to_vec(),
                b"A\n".to_vec(),
                b"it's".to_vec(),
                b"".to_vec()
            ]
        );
        assert_eq!(split_words(b"  ").unwrap(), Vec::<Vec<u8>>::new());
    }
}
