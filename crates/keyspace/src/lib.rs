//! keel-keyspace: where the memory of a Redis-compatible cache goes, by key
//! naming pattern, with idle times and TTLs, and what shorter TTLs would free.
//!
//! It talks plain RESP to any server (keel, redis-server, Valkey, …): SCAN
//! for the keys, then for each key `OBJECT IDLETIME` (or `OBJECT FREQ` under
//! an LFU policy), `TYPE`, `MEMORY USAGE` and `PTTL`, pipelined in batches.
//!
//! # How patterns are inferred
//!
//! A key name becomes a pattern in four steps ([`pattern`]):
//!
//! 1. The user's `--rule REGEX=REPLACEMENT` rules are applied to the whole
//!    name, in order, so they can pre-empt everything below.
//! 2. UUIDs (`8-4-4-4-12` hex, any case) anywhere in the name become `*`;
//!    this runs before splitting because `-` is a separator.
//! 3. The name is split at the separator characters (default `: / . - _ |
//!    # @ , =`, `--separators` to change) and each segment between two
//!    separators is replaced by `*` when it looks like an identifier: all
//!    digits; hex of 6+ characters with at least one digit, or of 16+; a
//!    token of 16+ characters from the base64/base64url alphabet mixing
//!    letters and digits (hashes, tokens), or of 20+ whose character class
//!    (upper, lower, digit) changes at 40%+ of positions. Otherwise runs
//!    of 4+ digits inside a segment become `*` (`report2024` →
//!    `report*`); shorter ones are kept (`sha256`, `v2`).
//! 4. Cardinality: literal segments that are really ids made of letters
//!    (user names, host names) survive step 3, so for each segment position,
//!    patterns that are equal everywhere else are merged into one with `*`
//!    there when they have more than `--max-literals` (default 50) distinct
//!    values at that position. Under `--sample` the distinct values are
//!    counted over every key the SCAN pass saw, not only the sampled ones
//!    (with `--sample-method randomkey`, over the sample only).
//!
//! Patterns use `*` so they can be fed back to `SCAN MATCH` / `--match`.
//!
//! # How the sample estimate's error is computed
//!
//! With `--sample n`, n keys out of the N in the database are inspected
//! (a uniform random subset of a keys-only SCAN walk without replacement, or
//! n independent `RANDOMKEY` draws with replacement, N from `DBSIZE`) and
//! each figure is scaled by N/n ([`estimate`]). For a pattern P, with
//! y_i the bytes of sampled key i and z_i = y_i when key i is in P, else 0:
//!
//! - key count: N·p̂ with p̂ = k/n; standard error N·sqrt(p̂(1−p̂)/n·f),
//! - total bytes: N·mean(z); standard error N·sqrt(s_z²/n·f),
//! - share of memory: R = Σz/Σy (ratio estimator); by the delta method its
//!   standard error is sqrt(f·s_d²/n)/mean(y) with d_i = z_i − R·y_i,
//!
//! where f = (N−n)/(N−1) is the finite-population correction for sampling
//! without replacement (1 for RANDOMKEY), and s² the sample variance. The
//! reported interval is the estimate ± 1.96 standard errors, the normal
//! approximation to a 95% interval, clamped to the possible range. It is
//! honest for patterns with more than a handful of sampled keys; a pattern
//! seen once or twice gets a wide interval and a count marked as such.
//! Percentiles of idle time and TTL are those of the sampled keys.

pub mod advice;
pub mod cli;
pub mod client;
pub mod estimate;
pub mod pattern;
pub mod progress;
pub mod render;
pub mod report;
pub mod stats;
pub mod walk;
