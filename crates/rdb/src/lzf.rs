//! LZF, the compression Redis applies to strings longer than 20 bytes in
//! RDB (`lzf_c.c`, `lzf_d.c`, liblzf 3.6 as Redis builds it).
//!
//! The format is a sequence of runs, each starting with a control byte:
//! - `000LLLLL`: a literal run of `L + 1` bytes (1 to 32) that follow;
//! - `LLLOOOOO oooooooo`: a back-reference of `L + 2` bytes (3 to 8)
//!   copied from `((O << 8) | o) + 1` bytes back in the output;
//! - `111OOOOO llllllll oooooooo`: the same with length `7 + l + 2` (up
//!   to 264).
//!
//! A back-reference may overlap what it produces (a run of one byte
//! repeated is a reference one byte back), so it is copied byte by byte.
//! Decompression trusts nothing: every run is checked against the input
//! left and the output length the caller expects, which the caller has
//! bounded by what the compressed bytes can expand to
//! ([`MAX_EXPANSION`]).
//!
//! Compression follows Redis's build of liblzf exactly (a 64K-slot table
//! of the last position of each 3-byte hash, `VERY_FAST` re-hashing of
//! the two positions before a match's end, the same match-length quirk near
//! the end of the input), so a string keel dumps compresses to the same
//! bytes as Redis's. Redis leaves the table uninitialised; keel starts each
//! string with an empty one, which is what Redis does in the common case
//! that the stale slots name no earlier match.

/// The most output one input byte can produce: a 3-byte long reference
/// yields 264 bytes.
pub const MAX_EXPANSION: usize = 88;

const HASH_LOG: u32 = 16;
const HASH_SLOTS: usize = 1 << HASH_LOG;
const MAX_LITERAL: usize = 1 << 5;
const MAX_OFFSET: usize = 1 << 13;
const MAX_REFERENCE: usize = (1 << 8) + (1 << 3);

/// Decompresses `input` into exactly `len` bytes; `None` if the input is
/// malformed or does not produce exactly `len` bytes.
pub fn decompress(input: &[u8], len: usize) -> Option<Vec<u8>> {
    if len > input.len().saturating_mul(MAX_EXPANSION) {
        return None;
    }
    let mut out = Vec::with_capacity(len);
    let mut ip = 0;
    while ip < input.len() {
        let control = input[ip] as usize;
        ip += 1;
        if control < MAX_LITERAL {
            let run = input.get(ip..ip + control + 1)?;
            if out.len() + run.len() > len {
                return None;
            }
            out.extend_from_slice(run);
            ip += run.len();
        } else {
            let mut run = control >> 5;
            if run == 7 {
                run += *input.get(ip)? as usize;
                ip += 1;
            }
            run += 2;
            let back = ((control & 0x1f) << 8) + *input.get(ip)? as usize + 1;
            ip += 1;
            if back > out.len() || out.len() + run > len {
                return None;
            }
            let start = out.len() - back;
            for i in start..start + run {
                out.push(out[i]);
            }
        }
    }
    (out.len() == len).then_some(out)
}

/// An LZF compressor; its hash table is allocated once and reused for
/// every string of a dump (a generation number empties it in O(1)).
pub struct Compressor {
    /// Per hash: (generation, position + 1) of the last position seen.
    slots: Vec<(u32, u32)>,
    generation: u32,
}

impl Default for Compressor {
    fn default() -> Self {
        Compressor {
            slots: vec![(0, 0); HASH_SLOTS],
            generation: 0,
        }
    }
}

fn first(input: &[u8], ip: usize) -> u32 {
    ((input[ip] as u32) << 8) | input[ip + 1] as u32
}

fn next(hash: u32, input: &[u8], ip: usize) -> u32 {
    (hash << 8) | input[ip + 2] as u32
}

fn slot(hash: u32) -> usize {
    ((hash >> (3 * 8 - HASH_LOG)).wrapping_sub(hash.wrapping_mul(5)) as usize) & (HASH_SLOTS - 1)
}

impl Compressor {
    /// Compresses `input` into at most `max_len` bytes; `None` if it does
    /// not fit (Redis then stores the string as it is).
    pub fn compress(&mut self, input: &[u8], max_len: usize) -> Option<Vec<u8>> {
        if input.len() < 3 || max_len == 0 || input.len() > u32::MAX as usize - 1 {
            return None;
        }
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.slots.fill((0, 0));
            self.generation = 1;
        }
        let generation = self.generation;
        // Room past `max_len` for the writes the checks below allow before
        // they fail, as the C code writes into its caller's buffer.
        let mut out = vec![0u8; max_len + 4];
        let end = input.len();
        let (mut ip, mut op, mut lit) = (0usize, 1usize, 0usize);
        let mut hash = first(input, 0);
        let remember = |slots: &mut Vec<(u32, u32)>, hash: u32, ip: usize| {
            slots[slot(hash)] = (generation, ip as u32 + 1);
        };
        while ip < end - 2 {
            hash = next(hash, input, ip);
            let (seen_in, seen_at) = self.slots[slot(hash)];
            remember(&mut self.slots, hash, ip);
            // Position 0 is never a match, as the C code's `ref > in_data`.
            let reference = if seen_in == generation {
                seen_at as usize - 1
            } else {
                0
            };
            let is_match = reference > 0
                && reference < ip
                && ip - reference - 1 < MAX_OFFSET
                && input[reference] == input[ip]
                && input[reference + 1] == input[ip + 1]
                && input[reference + 2] == input[ip + 2];
            if !is_match {
                if op >= max_len {
                    return None;
                }
                lit += 1;
                out[op] = input[ip];
                op += 1;
                ip += 1;
                if lit == MAX_LITERAL {
                    out[op - lit - 1] = (lit - 1) as u8;
                    lit = 0;
                    op += 1;
                }
                continue;
            }
            let offset = ip - reference - 1;
            let max_run = (end - ip - 2).min(MAX_REFERENCE);
            if op + 4 >= max_len && op - usize::from(lit == 0) + 4 >= max_len {
                return None;
            }
            out[op - lit - 1] = (lit as u8).wrapping_sub(1);
            op -= usize::from(lit == 0);
            let run = match_length(input, reference, ip, max_run) - 2;
            ip += 1;
            if run < 7 {
                out[op] = ((offset >> 8) + (run << 5)) as u8;
                op += 1;
            } else {
                out[op] = ((offset >> 8) + (7 << 5)) as u8;
                out[op + 1] = (run - 7) as u8;
                op += 2;
            }
            out[op] = offset as u8;
            op += 1;
            lit = 0;
            op += 1;
            ip += run + 1;
            if ip >= end - 2 {
                break;
            }
            // VERY_FAST: hash the two positions before the match's end.
            ip -= 2;
            hash = first(input, ip);
            hash = next(hash, input, ip);
            remember(&mut self.slots, hash, ip);
            ip += 1;
            hash = next(hash, input, ip);
            remember(&mut self.slots, hash, ip);
            ip += 1;
        }
        if op + 3 > max_len {
            return None;
        }
        while ip < end {
            lit += 1;
            out[op] = input[ip];
            op += 1;
            ip += 1;
            if lit == MAX_LITERAL {
                out[op - lit - 1] = (lit - 1) as u8;
                lit = 0;
                op += 1;
            }
        }
        out[op - lit - 1] = (lit as u8).wrapping_sub(1);
        op -= usize::from(lit == 0);
        if op > max_len {
            return None;
        }
        out.truncate(op);
        Some(out)
    }
}

/// How many bytes at `ip` repeat those at `reference` (3 known already),
/// as liblzf counts them: past `max_run` when its unrolled first 16
/// comparisons all match, which only happens near the end of the input.
fn match_length(input: &[u8], reference: usize, ip: usize, max_run: usize) -> usize {
    let mut len = 2;
    if max_run > 16 {
        for _ in 0..16 {
            len += 1;
            if input[reference + len] != input[ip + len] {
                return len;
            }
        }
    }
    loop {
        len += 1;
        if !(len < max_run && input[reference + len] == input[ip + len]) {
            return len;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(input: &[u8]) {
        let compressed = Compressor::default()
            .compress(input, input.len() + 64)
            .expect("fits with room to spare");
        assert_eq!(decompress(&compressed, input.len()).as_deref(), Some(input));
    }

    #[test]
    fn round_trips() {
        round_trip(b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
        round_trip(b"hello hello hello hello world world world");
        let mixed: Vec<u8> = (0..5000u32).map(|i| (i * 7 % 13 + i / 300) as u8).collect();
        round_trip(&mixed);
        let noise: Vec<u8> = (0..3000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        round_trip(&noise);
    }

    #[test]
    fn matches_redis_output() {
        // DUMP of a string of 25 'a' in Redis 7.0.15.
        let compressed = Compressor::default()
            .compress(&[b'a'; 25], 21)
            .expect("compressible");
        assert_eq!(compressed, [1, b'a', b'a', 0xe0, 0x0c, 0, 1, b'a', b'a']);
    }

    #[test]
    fn refuses_malformed_input() {
        assert_eq!(decompress(&[0x05, b'a'], 6), None, "literal past the input");
        assert_eq!(
            decompress(&[0x20, 0x00], 3),
            None,
            "reference before the start"
        );
        assert_eq!(decompress(&[0x00, b'a'], 2), None, "shorter than promised");
        assert_eq!(
            decompress(&[0x01, b'a', b'b'], 1),
            None,
            "longer than promised"
        );
        assert_eq!(decompress(&[0x00], 1 << 40), None, "impossible expansion");
    }
}
