//! BITFIELD key [GET encoding offset | [OVERFLOW WRAP | SAT | FAIL]
//! SET encoding offset value | INCRBY encoding offset increment ...] and
//! BITFIELD_RO key [GET encoding offset ...] — integers of any width from
//! 1 to 64 bits (`i1`..`i64`, `u1`..`u63`) at any bit offset (`#N` for the
//! N-th field of that width) of the string at key, read, set or
//! incremented in one command; replies with one result per operation (nil
//! for a write that OVERFLOW FAIL refused).
//!
//! As Redis does, every operation is parsed before any runs, so a bad
//! argument anywhere changes nothing; then the string is grown once to the
//! farthest bit written, and the operations run in order.

use bytes::Bytes;
use keel_store::bits::{Field, Overflow};

use crate::cmd::context::bitmap::{bit_offset, read_bits, write_bits};
use crate::cmd::context::edit::Edit;
use crate::cmd::context::{errors, is, parse_i64, Ctx, Error, Spec, BASE};

/// BITFIELD.
pub const BITFIELD: Spec = Spec {
    name: "bitfield",
    arity: -2,
    flags: &["write", "denyoom"],
    keys: (1, 1, 1),
    acl: &["@write", "@bitmap", "@slow"],
    group: "bitmap",
    summary: "Perform arbitrary bitfield integer operations on strings",
    since: "3.2.0",
    complexity: "O(1) for each subcommand specified",
    run: |ctx, args| run(ctx, args, false),
    ..BASE
};

/// BITFIELD_RO.
pub const BITFIELD_RO: Spec = Spec {
    name: "bitfield_ro",
    flags: &["readonly", "fast"],
    acl: &["@read", "@bitmap", "@fast"],
    summary:
        "Perform arbitrary bitfield integer operations on strings. Read-only variant of BITFIELD",
    since: "6.0.0",
    run: |ctx, args| run(ctx, args, true),
    ..BITFIELD
};

const BAD_TYPE: &str =
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";

/// What one operation does.
#[derive(Clone, Copy)]
enum Action {
    Get,
    /// SET to the value, under the overflow mode in force.
    Set(i64, Overflow),
    /// INCRBY the increment, under the overflow mode in force.
    IncrBy(i64, Overflow),
}

/// One parsed operation.
#[derive(Clone, Copy)]
struct Op {
    field: Field,
    offset: u64,
    action: Action,
}

/// Parses an encoding: `i` or `u` and a width, read as Redis reads it (up
/// to a NUL byte).
fn field(arg: &[u8]) -> Result<Field, Error> {
    let signed = match arg.first() {
        Some(b'i') => true,
        Some(b'u') => false,
        _ => return Err(BAD_TYPE.into()),
    };
    let width = arg[1..].split(|&b| b == 0).next().unwrap_or_default();
    keel_store::parse_canonical_i64(width)
        .and_then(|bits| Field::new(signed, bits))
        .ok_or(Error::from(BAD_TYPE))
}

/// Parses the operations, in Redis's order of checks: the subcommand and
/// its argument count, then the encoding, the offset and the value.
fn parse(ctx: &Ctx, args: &[Bytes]) -> Result<Vec<Op>, Error> {
    let mut ops = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut j = 2;
    while j < args.len() {
        let name = &args[j];
        // Arguments after the subcommand's name.
        let remaining = args.len() - j - 1;
        if is(name, "overflow") && remaining >= 1 {
            overflow = match &args[j + 1] {
                mode if is(mode, "wrap") => Overflow::Wrap,
                mode if is(mode, "sat") => Overflow::Sat,
                mode if is(mode, "fail") => Overflow::Fail,
                _ => return Err("ERR Invalid OVERFLOW type specified".into()),
            };
            j += 2;
            continue;
        }
        let writes = is(name, "set") || is(name, "incrby");
        if !((is(name, "get") && remaining >= 2) || (writes && remaining >= 3)) {
            return Err(errors::SYNTAX.into());
        }
        let field = field(&args[j + 1])?;
        let offset = bit_offset(ctx, &args[j + 2], Some(field.bits()))?;
        let action = if !writes {
            Action::Get
        } else if is(name, "set") {
            Action::Set(parse_i64(&args[j + 3])?, overflow)
        } else {
            Action::IncrBy(parse_i64(&args[j + 3])?, overflow)
        };
        ops.push(Op {
            field,
            offset,
            action,
        });
        j += if writes { 4 } else { 3 };
    }
    Ok(ops)
}

/// Runs a write operation on `bytes`: its reply (the old value for SET,
/// the new one for INCRBY, `None` when FAIL refused it) and whether it
/// changed the value.
fn apply(bytes: &mut [u8], op: &Op) -> (Option<i64>, bool) {
    let old = op.field.get(bytes, op.offset);
    let (new, reply) = match op.action {
        Action::Get => return (Some(old), false),
        Action::Set(value, overflow) => match op.field.fit(value, 0, overflow) {
            Some(new) => (new, old),
            None => return (None, false),
        },
        Action::IncrBy(incr, overflow) => match op.field.fit(old, incr, overflow) {
            Some(new) => (new, new),
            None => return (None, false),
        },
    };
    op.field.set(bytes, op.offset, new);
    (Some(reply), new != old)
}

fn run(ctx: &mut Ctx, args: &[Bytes], read_only: bool) -> Result<(), Error> {
    let ops = parse(ctx, args)?;
    let last_bit = ops
        .iter()
        .filter(|op| !matches!(op.action, Action::Get))
        .map(|op| op.offset + op.field.bits() as u64 - 1)
        .max();
    let replies: Vec<Option<i64>> = match last_bit {
        None => read_bits(ctx, &args[1], |s| {
            let s = s.unwrap_or_default();
            Ok(ops
                .iter()
                .map(|op| Some(op.field.get(s, op.offset)))
                .collect())
        })?,
        Some(_) if read_only => {
            return Err("ERR BITFIELD_RO only supports the GET subcommand".into())
        }
        Some(last_bit) => write_bits(ctx, &args[1], last_bit, |bytes, grown| {
            let mut changed = grown;
            let replies = ops
                .iter()
                .map(|op| {
                    let (reply, op_changed) = apply(bytes, op);
                    changed |= op_changed;
                    reply
                })
                .collect();
            Edit::changed_if(changed, replies)
        })?,
    };
    let mut w = ctx.w();
    w.array(replies.len());
    for reply in replies {
        match reply {
            Some(n) => w.integer(n),
            None => w.null(),
        }
    }
    Ok(())
}
