//! `cmsgpack`: lua-cmsgpack 0.4.0 as Redis bundles it
//! (`deps/lua/src/lua_cmsgpack.c`), the global table `cmsgpack` with
//! `pack`, `unpack`, `unpack_one` and `unpack_limit` (plus `_NAME`,
//! `_VERSION`, `_COPYRIGHT`, `_DESCRIPTION`), converting between Lua values
//! and MessagePack.
//!
//! Packing (`pack(v1, v2, ...)` concatenates each value's encoding):
//! - a number equal to its 64-bit truncation is an integer in the smallest
//!   encoding (positive fixnum, uint 8/16/32/64 for non-negative values,
//!   negative fixnum, int 8/16/32/64 below 0); any other number is a float
//!   32 when the conversion to float is exact, else a float 64;
//! - a string is a fixstr, str 8, str 16 or str 32 by length; booleans are
//!   booleans; nil and every other type (functions, `cjson.null`) is nil;
//! - a table whose keys are exactly the numbers 1..n is an array, any other
//!   a map of its `next` order; a table nested 16 deep is nil, which is how
//!   a table referencing itself packs (into a deep copy).
//!
//! Unpacking reads the encodings above plus every integer, float, string
//! and container form of the spec; anything else (bin, ext, 0xc1) is `Bad
//! data format in input.`, a truncated value `Missing bytes in input.`.
//! The C code keeps each decoded value on Lua's stack, whose C frames hold
//! 8000 slots: this decoder counts the same slots (one per pending value,
//! table, array index and map key) and stops where the C code's stack
//! checks would, with the same messages, so deep nesting is an error and
//! not unbounded recursion (it is decoded with an explicit stack). A map
//! key that is nil or NaN is Lua's own `table index is nil` / `is NaN`.
//!
//! Keel differs from Redis in two details: packing stops with an error
//! past [`MAX_OUTPUT`] bytes, where the C library grows its buffer until
//! memory runs out; and a map key that is -0 or a number of magnitude below
//! 2^-52 packs as the integer 0, as mlua reads such keys (values are read
//! exactly, see `bit.rs`). Uint 64 unpacks as a signed int 64, as Redis's
//! copy of the C code does.

use mlua::{Lua, MultiValue, Table, Value};

use super::bit::{
    arg_error, check_bytes, check_number, exact_arg_value, exact_value, lib_table, message,
    raw_error, single, Ancestors, LibResult, Results, MAX_OUTPUT,
};

/// Tables nested this deep pack as nil.
const MAX_NESTING: usize = 16;
/// Lua 5.1's `LUAI_MAXCSTACK`: the most values a C function's frame holds.
const MAX_C_STACK: usize = 8000;

type PackFn = fn(&Lua, MultiValue) -> LibResult<MultiValue>;

/// Sets the global table `cmsgpack`.
pub fn load(lua: &Lua) -> mlua::Result<()> {
    let functions: [(&str, PackFn); 4] = [
        ("pack", pack),
        ("unpack", unpack),
        ("unpack_one", unpack_one),
        ("unpack_limit", unpack_limit),
    ];
    let table = lib_table(lua, &functions)?;
    table.raw_set("_NAME", "cmsgpack")?;
    table.raw_set("_VERSION", "lua-cmsgpack 0.4.0")?;
    table.raw_set("_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo")?;
    table.raw_set("_DESCRIPTION", "MessagePack C implementation for Lua")?;
    lua.globals().raw_set("cmsgpack", table)
}

/// `cmsgpack.pack(v1, ...)`: the encodings of the values, concatenated.
fn pack(lua: &Lua, args: MultiValue) -> LibResult<MultiValue> {
    if args.is_empty() {
        return arg_error(0, "MessagePack pack needs input.");
    }
    if 2 * args.len() > MAX_C_STACK {
        return arg_error(0, "Too many arguments for MessagePack pack.");
    }
    let mut out = Vec::new();
    for arg in 1..=args.len() {
        encode(lua, &mut out, &exact_arg_value(&args, arg), 0)?;
    }
    single(Value::String(lua.create_string(&out)?))
}

fn encode(lua: &Lua, out: &mut Vec<u8>, value: &Value, level: usize) -> LibResult<()> {
    if out.len() > MAX_OUTPUT {
        return message(format!(
            "MessagePack pack output exceeds {MAX_OUTPUT} bytes."
        ));
    }
    match value {
        Value::String(s) => encode_bytes(out, &s.as_bytes()),
        Value::Boolean(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Integer(i) => encode_int(out, *i),
        Value::Number(n) => encode_number(out, *n),
        Value::Table(t) if level < MAX_NESTING => encode_table(lua, out, t, level)?,
        _ => out.push(0xc0),
    }
    Ok(())
}

fn encode_bytes(out: &mut Vec<u8>, s: &[u8]) {
    let len = s.len();
    if len < 32 {
        out.push(0xa0 | len as u8);
    } else if len <= 0xff {
        out.extend_from_slice(&[0xd9, len as u8]);
    } else if len <= 0xffff {
        out.push(0xda);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0xdb);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
    out.extend_from_slice(s);
}

/// An integer when the number is one (as `(int64_t)n == n` decides on
/// x86-64), else a float.
fn encode_number(out: &mut Vec<u8>, n: f64) {
    let truncated = if n > -9_223_372_036_854_775_809.0 && n < 9_223_372_036_854_775_808.0 {
        n as i64
    } else {
        i64::MIN
    };
    if !n.is_infinite() && truncated as f64 == n {
        encode_int(out, truncated);
    } else {
        encode_double(out, n);
    }
}

/// A float 32 when the double survives the round trip, else a float 64.
fn encode_double(out: &mut Vec<u8>, d: f64) {
    let f = d as f32;
    if f64::from(f) == d {
        out.push(0xca);
        out.extend_from_slice(&f.to_be_bytes());
    } else {
        out.push(0xcb);
        out.extend_from_slice(&d.to_be_bytes());
    }
}

fn encode_int(out: &mut Vec<u8>, n: i64) {
    if n >= 0 {
        if n <= 127 {
            out.push(n as u8);
        } else if n <= 0xff {
            out.extend_from_slice(&[0xcc, n as u8]);
        } else if n <= 0xffff {
            out.push(0xcd);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        } else if n <= 0xffff_ffff {
            out.push(0xce);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        } else {
            out.push(0xcf);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    } else if n >= -32 {
        out.push(n as i8 as u8);
    } else if n >= -128 {
        out.extend_from_slice(&[0xd0, n as i8 as u8]);
    } else if n >= -32768 {
        out.push(0xd1);
        out.extend_from_slice(&(n as i16).to_be_bytes());
    } else if n >= -2_147_483_648 {
        out.push(0xd2);
        out.extend_from_slice(&(n as i32).to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

/// A container header: the fix form below 16 entries, else 16 or 32 bits.
fn encode_header(out: &mut Vec<u8>, len: usize, fix: u8, wide: u8) {
    if len <= 15 {
        out.push(fix | len as u8);
    } else if len <= 0xffff {
        out.push(wide);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(wide + 1);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
}

fn encode_table(lua: &Lua, out: &mut Vec<u8>, table: &Table, level: usize) -> LibResult<()> {
    let survey = survey(table)?;
    if survey.is_array {
        let len = table.raw_len();
        encode_header(out, len, 0x90, 0xdc);
        for i in 1..=len {
            let value = exact_value(lua, table, &Value::Integer(i as i64), table.raw_get(i)?)?;
            encode(lua, out, &value, level + 1)?;
        }
        return Ok(());
    }
    encode_header(out, survey.count, 0x80, 0xde);
    let mut encode_pair = |key: Value, value: Value| -> LibResult<()> {
        let value = exact_value(lua, table, &key, value)?;
        encode(lua, out, &key, level + 1)?;
        encode(lua, out, &value, level + 1)
    };
    if let Some(pairs) = survey.pairs {
        return pairs
            .into_iter()
            .try_for_each(|(key, value)| encode_pair(key, value));
    }
    let mut failure = None;
    table.for_each::<Value, Value>(|key, value| {
        if failure.is_none() {
            failure = encode_pair(key, value).err();
        }
        Ok(())
    })?;
    failure.map_or(Ok(()), Err)
}

/// What one pass over a table's pairs tells.
struct Survey {
    /// The keys are exactly the numbers 1..n: all positive numbers that
    /// fit an `int` unchanged, as many as the largest.
    is_array: bool,
    count: usize,
    /// The pairs, when there are at most `HELD_PAIRS` of them.
    pairs: Option<Vec<(Value, Value)>>,
}

/// How many pairs of a table are held to encode it without a second pass
/// (each holds mlua references, which are limited).
const HELD_PAIRS: usize = 64;

fn survey(table: &Table) -> LibResult<Survey> {
    let mut max: i64 = 0;
    let mut is_array = true;
    let mut count = 0;
    let mut pairs = Some(Vec::new());
    table.for_each::<Value, Value>(|key, value| {
        count += 1;
        match key {
            Value::Integer(i) if is_array && i > 0 && i <= i64::from(i32::MAX) => max = max.max(i),
            _ => is_array = false,
        }
        match &mut pairs {
            Some(held) if held.len() < HELD_PAIRS => held.push((key, value)),
            _ => pairs = None,
        }
        Ok(())
    })?;
    Ok(Survey {
        is_array: is_array && max == count as i64,
        count,
        pairs,
    })
}

/// `cmsgpack.unpack(s)`: every value in `s`.
fn unpack(lua: &Lua, args: MultiValue) -> LibResult<MultiValue> {
    unpack_values(lua, &args, 0, 0)
}

/// `cmsgpack.unpack_one(s [, offset])`: the offset after the first value
/// at `offset` (-1 at the end of `s`), then the value.
fn unpack_one(lua: &Lua, args: MultiValue) -> LibResult<MultiValue> {
    let offset = optional_integer(lua, &args, 2)?;
    unpack_values(lua, &args, 1, offset)
}

/// `cmsgpack.unpack_limit(s, limit [, offset])`: the offset after at most
/// `limit` values from `offset` (-1 at the end of `s`), then the values.
fn unpack_limit(lua: &Lua, args: MultiValue) -> LibResult<MultiValue> {
    let limit = lua_integer(check_number(lua, &args, 2)?);
    let offset = optional_integer(lua, &args, 3)?;
    unpack_values(lua, &args, limit, offset)
}

/// `luaL_optinteger` with a default of 0.
fn optional_integer(lua: &Lua, args: &MultiValue, arg: usize) -> LibResult<i64> {
    match args.get(arg - 1) {
        None | Some(Value::Nil) => Ok(0),
        Some(_) => Ok(lua_integer(check_number(lua, args, arg)?)),
    }
}

/// A double converted to `lua_Integer` as x86-64 does it.
fn lua_integer(n: f64) -> i64 {
    if n > -9_223_372_036_854_775_809.0 && n < 9_223_372_036_854_775_808.0 {
        n as i64
    } else {
        i64::MIN
    }
}

/// The low 32 bits of a number, which is what C's `%d` prints of it.
fn as_c_int(n: i64) -> i32 {
    n as i32
}

fn unpack_values(lua: &Lua, args: &MultiValue, limit: i64, offset: i64) -> LibResult<MultiValue> {
    let data = check_bytes(lua, args, 1)?;
    let data = data.as_bytes();
    let len = data.len();
    if offset < 0 || limit < 0 {
        return message(format!(
            "Invalid request to unpack with offset of {} and limit of {}.",
            as_c_int(offset),
            as_c_int(len as i64)
        ));
    }
    if offset as u64 > len as u64 {
        return message(format!(
            "Start offset {} greater than input length {}.",
            as_c_int(offset),
            as_c_int(len as i64)
        ));
    }
    let decode_all = limit == 0 && offset == 0;
    let limit = if decode_all {
        i64::from(i32::MAX)
    } else {
        limit
    };
    let mut cursor = Cursor {
        data: &data,
        at: offset as usize,
    };
    let mut values = Results::new(lua)?;
    if !decode_all {
        // The offset comes first; its slot is filled in at the end.
        values.push(Value::Nil)?;
    }
    let first = values.len();
    while cursor.at < len && ((values.len() - first) as i64) < limit {
        // The string argument takes one slot, each value decoded one more.
        let value = match decode(lua, &mut cursor, 1 + values.len() - first)? {
            Ok(value) => value,
            Err(Malformed::Eof) => return message("Missing bytes in input."),
            Err(Malformed::BadFormat) => return message("Bad data format in input."),
        };
        values.push(value)?;
    }
    if !decode_all {
        if 1 + values.len() > MAX_C_STACK {
            return message("stack overflow (in function mp_unpack_full)");
        }
        let next = if cursor.at == len {
            -1
        } else {
            i64::from(cursor.at as i32)
        };
        values.set(1, Value::Integer(next))?;
    }
    Ok(values.into_multi())
}

/// What stops decoding, reported once the value is abandoned.
enum Malformed {
    Eof,
    BadFormat,
}

struct Cursor<'a> {
    data: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    /// The `n` bytes at the cursor, consumed, or `None` (EOF) if fewer.
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let bytes = self.data.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(bytes)
    }

    fn take_array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }
}

/// A table being filled while its elements are decoded.
enum Open {
    Array { next_index: usize, left: usize },
    Map { key: Option<Value>, left: usize },
}

/// What the bytes at the cursor start.
enum Item {
    Value(Value),
    Array(usize),
    Map(usize),
}

/// One value, decoded with an explicit stack of open tables (the innermost
/// held here, the others in `Ancestors`). `slots` is how much of the C
/// frame's 8000-slot stack the C code would be using.
fn decode(lua: &Lua, cursor: &mut Cursor, mut slots: usize) -> LibResult<Result<Value, Malformed>> {
    let mut open: Vec<Open> = Vec::new();
    let mut current: Option<Table> = None;
    let mut ancestors = Ancestors::new();
    loop {
        if cursor.at >= cursor.data.len() {
            return Ok(Err(Malformed::Eof));
        }
        if slots + 1 > MAX_C_STACK {
            return message(
                "stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)",
            );
        }
        let item = match read_item(lua, cursor)? {
            Ok(item) => item,
            Err(malformed) => return Ok(Err(malformed)),
        };
        let mut value = match item {
            Item::Value(value) => value,
            Item::Array(_) if slots + 2 > MAX_C_STACK => {
                return message("stack overflow (in function mp_decode_to_lua_array)");
            }
            Item::Array(len) | Item::Map(len) => {
                let table = lua.create_table()?;
                if len == 0 {
                    Value::Table(table)
                } else {
                    if let Some(outer) = current.replace(table) {
                        ancestors.push(lua, Value::Table(outer))?;
                    }
                    // The table, and for an array the index being filled.
                    if let Item::Array(_) = item {
                        open.push(Open::Array {
                            next_index: 1,
                            left: len,
                        });
                        slots += 2;
                    } else {
                        open.push(Open::Map {
                            key: None,
                            left: len,
                        });
                        slots += 1;
                    }
                    continue;
                }
            }
        };
        // Hand the value to the tables it completes.
        loop {
            let (Some(frame), Some(table)) = (open.last_mut(), current.as_ref()) else {
                return Ok(Ok(value));
            };
            match frame {
                Open::Array { next_index, left } => {
                    table.raw_set(*next_index, value)?;
                    *next_index += 1;
                    *left -= 1;
                    if *left > 0 {
                        break;
                    }
                    slots -= 2;
                }
                Open::Map { key, left } => match key.take() {
                    None => {
                        *key = Some(value);
                        slots += 1;
                        break;
                    }
                    Some(k) => {
                        match k {
                            Value::Nil => return raw_error("table index is nil"),
                            Value::Number(n) if n.is_nan() => {
                                return raw_error("table index is NaN")
                            }
                            k => table.raw_set(k, value)?,
                        }
                        slots -= 1;
                        *left -= 1;
                        if *left > 0 {
                            break;
                        }
                        slots -= 1;
                    }
                },
            }
            open.pop();
            let done = current.take();
            if let Value::Table(outer) = ancestors.pop()? {
                current = Some(outer);
            }
            value = done.map_or(Value::Nil, Value::Table);
        }
    }
}

/// Reads one marker and, for scalars, the value it introduces.
fn read_item(lua: &Lua, cursor: &mut Cursor) -> LibResult<Result<Item, Malformed>> {
    macro_rules! take {
        ($n:expr) => {
            match cursor.take_array::<$n>() {
                Some(bytes) => bytes,
                None => return Ok(Err(Malformed::Eof)),
            }
        };
    }
    let start = cursor.at;
    let [marker] = take!(1);
    let number = |n: f64| Ok(Ok(Item::Value(Value::Number(n))));
    match marker {
        0xcc => number(f64::from(take!(1)[0])),
        0xd0 => number(f64::from(take!(1)[0] as i8)),
        0xcd => number(f64::from(u16::from_be_bytes(take!(2)))),
        0xd1 => number(f64::from(i16::from_be_bytes(take!(2)))),
        0xce => number(f64::from(u32::from_be_bytes(take!(4)))),
        0xd2 => number(f64::from(i32::from_be_bytes(take!(4)))),
        // Redis's copy reads uint 64 as signed too.
        0xcf | 0xd3 => number(i64::from_be_bytes(take!(8)) as f64),
        0xc0 => Ok(Ok(Item::Value(Value::Nil))),
        0xc3 => Ok(Ok(Item::Value(Value::Boolean(true)))),
        0xc2 => Ok(Ok(Item::Value(Value::Boolean(false)))),
        0xca => number(f64::from(f32::from_be_bytes(take!(4)))),
        0xcb => number(f64::from_be_bytes(take!(8))),
        0xd9 => {
            let len = usize::from(take!(1)[0]);
            read_string(lua, cursor, start, 2, len)
        }
        0xda => {
            let len = usize::from(u16::from_be_bytes(take!(2)));
            read_string(lua, cursor, start, 3, len)
        }
        0xdb => {
            let len = u32::from_be_bytes(take!(4)) as usize;
            read_string(lua, cursor, start, 5, len)
        }
        0xdc => Ok(Ok(Item::Array(usize::from(u16::from_be_bytes(take!(2)))))),
        0xdd => Ok(Ok(Item::Array(u32::from_be_bytes(take!(4)) as usize))),
        0xde => Ok(Ok(Item::Map(usize::from(u16::from_be_bytes(take!(2)))))),
        0xdf => Ok(Ok(Item::Map(u32::from_be_bytes(take!(4)) as usize))),
        m if m & 0x80 == 0 => number(f64::from(m)),
        m if m & 0xe0 == 0xe0 => number(f64::from(m as i8)),
        m if m & 0xe0 == 0xa0 => read_string(lua, cursor, start, 1, usize::from(m & 0x1f)),
        m if m & 0xf0 == 0x90 => Ok(Ok(Item::Array(usize::from(m & 0x0f)))),
        m if m & 0xf0 == 0x80 => Ok(Ok(Item::Map(usize::from(m & 0x0f)))),
        _ => {
            cursor.at = start;
            Ok(Err(Malformed::BadFormat))
        }
    }
}

/// A string of `len` bytes after a header of `header` bytes at `start`.
/// The C code checks header and body together, so a short header or body
/// is the same EOF.
fn read_string(
    lua: &Lua,
    cursor: &mut Cursor,
    start: usize,
    header: usize,
    len: usize,
) -> LibResult<Result<Item, Malformed>> {
    cursor.at = start + header;
    match cursor.take(len) {
        Some(bytes) => Ok(Ok(Item::Value(Value::String(lua.create_string(bytes)?)))),
        None => Ok(Err(Malformed::Eof)),
    }
}

#[cfg(test)]
mod tests {
    fn cases() -> &'static [(&'static str, &'static str)] {
        &[
            (r#"local t={} for k,v in pairs(cmsgpack) do t[#t+1]=k..'='..tostring(type(v) == 'string' and v or type(v)) end table.sort(t) return table.concat(t, ' ')"#, "ok:_COPYRIGHT=Copyright (C) 2012, Salvatore Sanfilippo _DESCRIPTION=MessagePack C implementation for Lua _NAME=cmsgpack _VERSION=lua-cmsgpack 0.4.0 pack=function unpack=function unpack_limit=function unpack_one=function"),
            (r#"return hex(cmsgpack.pack(0.1))"#, "ok:cb3fb999999999999a"),
            (r#"return hex(cmsgpack.pack(-1099511627776))"#, "ok:d3ffffff0000000000"),
            (r#"local a = {x=nil,y=5} local b = {x=a} a['x'] = b return hex(cmsgpack.pack(a))"#, "ok:82a17905a17881a17882a17905a17881a17882a17905a17881a17882a17905a17881a17882a17905a17881a17882a17905a17881a17882a17905a17881a17882a17905a17881a178c0"),
            (r#"local a = {x=nil,y=5} local b = {x=a} a['x'] = b local re = cmsgpack.unpack(cmsgpack.pack(a)) return tostring(re.x.x.x.x.x.x.x.x.x.x.x.x.x.x.y == re.y) .. tostring(re.x.x.x.x.x.x.x.x.x.x.x.x.x.x.x.x == nil) .. tostring(re.x.x.x.x.x.x.x.x.x.x.x.x.x.x.x ~= nil)"#, "ok:truetruetrue"),
            (r#"return hex(cmsgpack.pack(0, 1, 127, 128, 255, 256, 65535, 65536, 2^32 - 1, 2^32, 2^53, 2^63 - 1024))"#, "ok:00017fcc80ccffcd0100cdffffce00010000ceffffffffcf0000000100000000cf0020000000000000cf7ffffffffffffc00"),
            (r#"return hex(cmsgpack.pack(-1, -32, -33, -128, -129, -32768, -32769, -2^31, -2^31 - 1, -2^53, -2^63))"#, "ok:ffe0d0dfd080d1ff7fd18000d2ffff7fffd280000000d3ffffffff7fffffffd3ffe0000000000000d38000000000000000"),
            (r#"return hex(cmsgpack.pack(2^63, 2^64, -2^64, 1/0, -1/0, 0/0))"#, "ok:ca5f000000ca5f800000cadf800000ca7f800000caff800000cbfff8000000000000"),
            (r#"return hex(cmsgpack.pack(1.5, -1.5, 0.1, 1e300, 3.4028234663852886e38, 1e-5, 2^-126, 123456789.5))"#, "ok:ca3fc00000cabfc00000cb3fb999999999999acb7e37e43c8800759cca7f7fffffcb3ee4f8b588e368f1ca00800000cb419d6f3456000000"),
            (r#"return hex(cmsgpack.pack(true, false, nil, 'abc', ''))"#, "ok:c3c2c0a3616263a0"),
            (r#"return hex(cmsgpack.pack(string.rep('x', 31))) .. ' ' .. hex(string.sub(cmsgpack.pack(string.rep('x', 32)), 1, 3)) .. ' ' .. hex(string.sub(cmsgpack.pack(string.rep('x', 255)), 1, 3)) .. ' ' .. hex(string.sub(cmsgpack.pack(string.rep('x', 256)), 1, 4)) .. ' ' .. hex(string.sub(cmsgpack.pack(string.rep('x', 65535)), 1, 4)) .. ' ' .. hex(string.sub(cmsgpack.pack(string.rep('x', 65536)), 1, 6))"#, "ok:bf78787878787878787878787878787878787878787878787878787878787878 d92078 d9ff78 da010078 daffff78 db0001000078"),
            (r#"return hex(cmsgpack.pack({})) .. ' ' .. hex(cmsgpack.pack({1, 2, 3})) .. ' ' .. hex(cmsgpack.pack({a = 1})) .. ' ' .. hex(cmsgpack.pack({[1] = 1, [3] = 3})) .. ' ' .. hex(cmsgpack.pack({[2] = 2}))"#, "ok:90 93010203 81a16101 8201010303 810202"),
            (r#"return hex(cmsgpack.pack({1, 2, nil, 4})) .. ' ' .. hex(cmsgpack.pack({[1.5] = 1})) .. ' ' .. hex(cmsgpack.pack({['1'] = 1})) .. ' ' .. hex(cmsgpack.pack({[0] = 1})) .. ' ' .. hex(cmsgpack.pack({[-1] = 1})) .. ' ' .. hex(cmsgpack.pack({[2^31] = 1}))"#, "ok:83010102020404 81ca3fc0000001 81a13101 810001 81ff01 81ce8000000001"),
            (r#"local t = {} for i = 1, 16 do t[i] = i end local u = {} for i = 1, 65536 do u[i] = true end return hex(cmsgpack.pack(t)) .. ' ' .. hex(string.sub(cmsgpack.pack(u), 1, 6))"#, "ok:dc00100102030405060708090a0b0c0d0e0f10 dd00010000c3"),
            (r#"local t = {} for i = 1, 16 do t['k' .. i] = i end local u = {} for i = 1, 65536 do u['k' .. i] = true end return hex(string.sub(cmsgpack.pack(t), 1, 3)) .. ' ' .. hex(string.sub(cmsgpack.pack(u), 1, 5))"#, "ok:de0010 df00010000"),
            (r#"return hex(cmsgpack.pack({a = {b = {c = 1}}, d = {1, {2}}}))"#, "ok:82a16181a16281a16301a16492019102"),
            (r#"return hex(cmsgpack.pack(tostring, cjson.null, coroutine.create(tostring)))"#, "err:user_script:1: bad argument #1 to 'create' (Lua function expected)"),
            (r#"local t = {} local c = t for i = 1, 20 do c[1] = {} c = c[1] end return hex(cmsgpack.pack(t))"#, "ok:91919191919191919191919191919191c0"),
            (r#"return hex(cmsgpack.pack({[true] = 1}))"#, "ok:81c301"),
            (r#"return cmsgpack.pack()"#, "err:user_script:1: bad argument #0 to 'pack' (MessagePack pack needs input.)"),
            (r#"return #cmsgpack.pack(unpack({}, 1, 4000))"#, "ok:4000"),
            (r#"return cmsgpack.pack(unpack({}, 1, 4001))"#, "err:user_script:1: bad argument #0 to 'pack' (Too many arguments for MessagePack pack.)"),
            (r#"return table.concat({cmsgpack.unpack(cmsgpack.pack(0, 1, 127, 128, 255, 256, 65535, 65536, 2^32 - 1, 2^32, 2^53, 2^63 - 1024))}, ',')"#, "ok:0,1,127,128,255,256,65535,65536,4294967295,4294967296,9.007199254741e+15,9.2233720368548e+18"),
            (r#"return table.concat({cmsgpack.unpack(cmsgpack.pack(-1, -32, -33, -128, -129, -32768, -32769, -2^31, -2^31 - 1, -2^53, -2^63))}, ',')"#, "ok:-1,-32,-33,-128,-129,-32768,-32769,-2147483648,-2147483649,-9.007199254741e+15,-9.2233720368548e+18"),
            (r#"return table.concat({cmsgpack.unpack(cmsgpack.pack(1.5, -1.5, 0.1, 1e300, 1e-5, 123456789.5))}, ',')"#, "ok:1.5,-1.5,0.1,1e+300,1e-05,123456789.5"),
            (r#"return table.concat({tostring(cmsgpack.unpack('\192')), tostring(cmsgpack.unpack('\194')), tostring(cmsgpack.unpack('\195'))}, ',')"#, "ok:nil,false,true"),
            (r#"return table.concat({cmsgpack.unpack('\204\255\208\255\205\255\255\209\255\254\206\255\255\255\255\210\255\255\255\254\207\255\255\255\255\255\255\255\255\211\255\255\255\255\255\255\255\254')}, ',')"#, "ok:255,-1,65535,-2,4294967295,-2,-1,-2"),
            (r#"return table.concat({cmsgpack.unpack('\202\63\192\0\0\203\63\185\153\153\153\153\153\154')}, ',')"#, "ok:1.5,0.1"),
            (r#"return table.concat({cmsgpack.unpack('\217\3abc\218\0\2de\219\0\0\0\1f\163ghi\160')}, ',')"#, "ok:abc,de,f,ghi,"),
            (r#"local t = cmsgpack.unpack('\220\0\2\1\2') local u = cmsgpack.unpack('\221\0\0\0\1\3') local m = cmsgpack.unpack('\222\0\1\161a\1') local n = cmsgpack.unpack('\223\0\0\0\1\161b\2') return t[1] .. t[2] .. u[1] .. m.a .. n.b"#, "ok:12312"),
            (r#"local t = cmsgpack.unpack('\147\1\146\2\3\129\161k\192') return #t .. t[1] .. t[2][2] .. type(t[3]) .. tostring(next(t[3]))"#, "ok:313tablenil"),
            (r#"return cmsgpack.unpack('\193')"#, "err:user_script:1: Bad data format in input."),
            (r#"return cmsgpack.unpack('\196\1a')"#, "err:user_script:1: Bad data format in input."),
            (r#"return cmsgpack.unpack('\212\1a')"#, "err:user_script:1: Bad data format in input."),
            (r#"return cmsgpack.unpack('\1\193')"#, "err:user_script:1: Bad data format in input."),
            (r#"return cmsgpack.unpack('\204')"#, "err:user_script:1: Missing bytes in input."),
            (r#"return cmsgpack.unpack('\219\0\0\0\5abc')"#, "err:user_script:1: Missing bytes in input."),
            (r#"return cmsgpack.unpack('\219\255\255\255\255abc')"#, "err:user_script:1: Missing bytes in input."),
            (r#"return cmsgpack.unpack('\221\255\255\255\255\1\2')"#, "err:user_script:1: Missing bytes in input."),
            (r#"return cmsgpack.unpack('\223\255\255\255\255\1\2')"#, "err:user_script:1: Missing bytes in input."),
            (r#"return cmsgpack.unpack('\147\1\2')"#, "err:user_script:1: Missing bytes in input."),
            (r#"return cmsgpack.unpack('\217')"#, "err:user_script:1: Missing bytes in input."),
            (r#"return cmsgpack.unpack('\163ab')"#, "err:user_script:1: Missing bytes in input."),
            (r#"return cmsgpack.unpack('\129\192\1')"#, "err:table index is nil"),
            (r#"return cmsgpack.unpack('\129\203\127\248\0\0\0\0\0\0\1')"#, "err:table index is NaN"),
            (r#"return select('#', cmsgpack.unpack(''))"#, "ok:0"),
            (r#"return cmsgpack.unpack()"#, "err:user_script:1: bad argument #1 to 'unpack' (string expected, got no value)"),
            (r#"return cmsgpack.unpack({})"#, "err:user_script:1: bad argument #1 to 'unpack' (string expected, got table)"),
            (r#"return cmsgpack.unpack(12)"#, "ok:49"),
            (r#"return select('#', cmsgpack.unpack(string.rep('\1', 7999)))"#, "ok:7999"),
            (r#"return select('#', cmsgpack.unpack(string.rep('\1', 8000)))"#, "err:user_script:1: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)"),
            (r#"local t = cmsgpack.unpack(string.rep('\145', 100) .. '\1') return type(t)"#, "ok:table"),
            (r#"return type(cmsgpack.unpack(string.rep('\145', 3998) .. '\1'))"#, "ok:table"),
            (r#"return type(cmsgpack.unpack(string.rep('\145', 3999) .. '\1'))"#, "ok:table"),
            (r#"return type(cmsgpack.unpack(string.rep('\145', 4000) .. '\1'))"#, "err:user_script:1: stack overflow (in function mp_decode_to_lua_array)"),
            (r#"return type(cmsgpack.unpack(string.rep('\145', 3999) .. '\144'))"#, "err:user_script:1: stack overflow (in function mp_decode_to_lua_array)"),
            (r#"return type(cmsgpack.unpack(string.rep('\145', 4000) .. '\144'))"#, "err:user_script:1: stack overflow (in function mp_decode_to_lua_array)"),
            (r#"return type(cmsgpack.unpack(string.rep('\129\1', 7996) .. '\1'))"#, "err:user_script:1: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)"),
            (r#"return type(cmsgpack.unpack(string.rep('\129\1', 7997) .. '\1'))"#, "err:user_script:1: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)"),
            (r#"return type(cmsgpack.unpack(string.rep('\129\1', 7998) .. '\1'))"#, "err:user_script:1: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)"),
            (r#"return type(cmsgpack.unpack(string.rep('\129\1', 7997) .. '\128'))"#, "err:user_script:1: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)"),
            (r#"return type(cmsgpack.unpack(string.rep('\129\1', 7998) .. '\128'))"#, "err:user_script:1: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)"),
            (r#"return type(cmsgpack.unpack(string.rep('\129\1', 10000) .. '\1'))"#, "err:user_script:1: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)"),
            (r#"return select('#', cmsgpack.unpack(string.rep('\1', 7990) .. '\145\145\145\1'))"#, "ok:7991"),
            (r#"return select('#', cmsgpack.unpack(string.rep('\1', 7994) .. '\145\145\145\1'))"#, "err:user_script:1: stack overflow (in function mp_decode_to_lua_array)"),
            (r#"return select('#', cmsgpack.unpack(string.rep('\1', 7994) .. '\145\1'))"#, "ok:7995"),
            (r#"return select('#', cmsgpack.unpack(string.rep('\1', 7995) .. '\145\1'))"#, "ok:7996"),
            (r#"return select('#', cmsgpack.unpack(string.rep('\1', 7996) .. '\145\1'))"#, "ok:7997"),
            (r#"return select('#', cmsgpack.unpack(string.rep('\1', 7996) .. '\129\1\1'))"#, "ok:7997"),
            (r#"return select('#', cmsgpack.unpack(string.rep('\1', 7997) .. '\129\1\1'))"#, "err:user_script:1: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)"),
            (r#"return select('#', cmsgpack.unpack(string.rep('\1', 7998) .. '\129\1\1'))"#, "err:user_script:1: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)"),
            (r#"return table.concat({cmsgpack.unpack_one('\1\2\3')}, ',')"#, "ok:1,1"),
            (r#"return table.concat({cmsgpack.unpack_one('\1\2\3', 1)}, ',')"#, "ok:2,2"),
            (r#"return table.concat({cmsgpack.unpack_one('\1\2\3', 2)}, ',')"#, "ok:-1,3"),
            (r#"return table.concat({cmsgpack.unpack_one('\1\2\3', 3)}, ',')"#, "ok:-1"),
            (r#"return table.concat({cmsgpack.unpack_one('\1\2\3', 4)}, ',')"#, "err:user_script:1: Start offset 4 greater than input length 3."),
            (r#"return table.concat({cmsgpack.unpack_one('\1\2\3', -1)}, ',')"#, "err:user_script:1: Invalid request to unpack with offset of -1 and limit of 3."),
            (r#"return table.concat({cmsgpack.unpack_one('\1\2\3', 2^32 + 1)}, ',')"#, "err:user_script:1: Start offset 1 greater than input length 3."),
            (r#"return table.concat({cmsgpack.unpack_one('\1\2\3', 1.9)}, ',')"#, "ok:2,2"),
            (r#"return table.concat({cmsgpack.unpack_one('\1\2\3', '1')}, ',')"#, "ok:2,2"),
            (r#"return table.concat({cmsgpack.unpack_one('\1\2\3', 'x')}, ',')"#, "err:user_script:1: bad argument #2 to 'unpack_one' (number expected, got string)"),
            (r#"return table.concat({cmsgpack.unpack_one('\1\2\3', nil)}, ',')"#, "ok:1,1"),
            (r#"return table.concat({cmsgpack.unpack_one('')}, ',')"#, "ok:-1"),
            (r#"return table.concat({cmsgpack.unpack_one('\193')}, ',')"#, "err:user_script:1: Bad data format in input."),
            (r#"return table.concat({cmsgpack.unpack_limit('\1\2\3', 2)}, ',')"#, "ok:2,1,2"),
            (r#"return table.concat({cmsgpack.unpack_limit('\1\2\3', 2, 1)}, ',')"#, "ok:-1,2,3"),
            (r#"return table.concat({cmsgpack.unpack_limit('\1\2\3', 0)}, ',')"#, "ok:1,2,3"),
            (r#"return table.concat({cmsgpack.unpack_limit('\1\2\3', 0, 1)}, ',')"#, "ok:1"),
            (r#"return table.concat({cmsgpack.unpack_limit('\1\2\3', 5, 0)}, ',')"#, "ok:-1,1,2,3"),
            (r#"return table.concat({cmsgpack.unpack_limit('\1\2\3', -1)}, ',')"#, "err:user_script:1: Invalid request to unpack with offset of 0 and limit of 3."),
            (r#"return table.concat({cmsgpack.unpack_limit('\1\2\3', -1, 5)}, ',')"#, "err:user_script:1: Invalid request to unpack with offset of 5 and limit of 3."),
            (r#"return table.concat({cmsgpack.unpack_limit('\1\2\3', 1, 5)}, ',')"#, "err:user_script:1: Start offset 5 greater than input length 3."),
            (r#"return table.concat({cmsgpack.unpack_limit('\1\2\3')}, ',')"#, "err:user_script:1: bad argument #2 to 'unpack_limit' (number expected, got no value)"),
            (r#"return table.concat({cmsgpack.unpack_limit('\1\2\3', 2^32 + 1)}, ',')"#, "ok:-1,1,2,3"),
            (r#"return table.concat({cmsgpack.unpack_limit('\1\2\3', 1/0)}, ',')"#, "err:user_script:1: Invalid request to unpack with offset of 0 and limit of 3."),
            (r#"return table.concat({cmsgpack.unpack_limit('\1\2\3', 2^31)}, ',')"#, "ok:-1,1,2,3"),
            (r#"return select('#', cmsgpack.unpack_limit(string.rep('\1', 8000), 7998))"#, "ok:7999"),
            (r#"return select('#', cmsgpack.unpack_limit(string.rep('\1', 8000), 7999))"#, "err:user_script:1: stack overflow (in function mp_unpack_full)"),
            (r#"return select('#', cmsgpack.unpack_limit(string.rep('\1', 8000), 7997))"#, "ok:7998"),
            (r#"return table.concat({cmsgpack.unpack('\207\128\0\0\0\0\0\0\0\207\127\255\255\255\255\255\255\255')}, ',')"#, "ok:-9.2233720368548e+18,9.2233720368548e+18"),
            (r#"return select('#', cmsgpack.unpack(string.rep('\161a', 7999)))"#, "ok:7999"),
            (r#"local t = {cmsgpack.unpack(string.rep('\161a', 7999))} return #t .. t[7999]"#, "ok:7999a"),
            (r#"return select('#', cmsgpack.unpack_limit(string.rep('\161b', 8000), 7998))"#, "ok:7999"),
            (r#"return type(cmsgpack.unpack(string.rep('\129\161a', 3998) .. '\1'))"#, "ok:table"),
            (r#"return type(cmsgpack.unpack(string.rep('\129\161a', 3999) .. '\1'))"#, "ok:table"),
            (r#"return type(cmsgpack.unpack(string.rep('\129\161a', 4000) .. '\1'))"#, "err:user_script:1: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)"),
            (r#"local t = cmsgpack.unpack(string.rep('\129\161a', 3000) .. '\1') for i = 1, 3000 do t = t.a end return t"#, "ok:1"),
            (r#"local a = {} for i = 1, 7000 do a[i] = 'x' .. i end return #cmsgpack.pack(a)"#, "ok:40896"),
            (r#"local a = {} for i = 1, 7000 do a['k' .. i] = 'x' .. i end local m = cmsgpack.unpack(cmsgpack.pack(a)) return m.k6999"#, "ok:x6999"),
            (r#"return hex(cmsgpack.pack(-0, 1e-300, -1e-20, 0, {-0, 2^-60}))"#, "ok:00cb01a56e1fc2f8f359cbbbc79ca10c924223009200ca21800000"),
            (r#"local str_lt_32 = string.rep("x", 30) local str_lt_255 = string.rep("x", 250) local str_lt_65535 = string.rep("x", 65530) local str_long = string.rep("x", 100000) local array_lt_15 = {1, 2, 3, 4, 5} local array_lt_65535 = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18} local array_big = {} for i=1, 100000 do array_big[i] = i end local map_lt_15 = {a=1, b=2} local map_big = {} for i=1, 100000 do map_big[tostring(i)] = i end local some_map = { s1=str_lt_32, s2=str_lt_255, s3=str_lt_65535, s4=str_long, d1=0.1, i1=1, i2=250, i3=65530, i4=100000, i5=2^40, i6=-1, i7=-120, i8=-32000, i9=-100000, i10=-3147483648, a1=array_lt_15, a2=array_lt_65535, a3=array_big, m1=map_lt_15, m2=map_big, b1=false, b2=true, n=nil } local encoded = cmsgpack.pack(some_map) local decoded = cmsgpack.unpack(encoded) assert(table.concat(some_map) == table.concat(decoded)) local offset, decoded_one = cmsgpack.unpack_one(encoded, 0) assert(table.concat(some_map) == table.concat(decoded_one)) assert(offset == -1) local encoded_multiple = cmsgpack.pack(str_lt_32, str_lt_255, str_lt_65535, str_long) local offset, obj = cmsgpack.unpack_limit(encoded_multiple, 1, 0) assert(obj == str_lt_32) offset, obj = cmsgpack.unpack_limit(encoded_multiple, 1, offset) assert(obj == str_lt_255) offset, obj = cmsgpack.unpack_limit(encoded_multiple, 1, offset) assert(obj == str_lt_65535) offset, obj = cmsgpack.unpack_limit(encoded_multiple, 1, offset) assert(obj == str_long) assert(offset == -1) return #encoded .. ' ' .. decoded.a3[100000] .. ' ' .. decoded.m2['77777'] .. ' ' .. decoded.i10 .. ' ' .. decoded.i5"#, "ok:1491977 100000 77777 -3147483648 1099511627776"),
            (r#"local a = {x=nil,y=5} local b = {x=a} a['x'] = b local encoded = cmsgpack.pack(a) local h = "" for i = 1, #encoded do h = h .. string.format("%02x",string.byte(encoded,i)) end local re = cmsgpack.unpack(encoded) assert(re) assert(re.x) assert(re.x.x.y == re.y) assert(re.x.x.x.x.y == re.y) assert(re.x.x.x.x.x.x.y == re.y) assert(re.x.x.x.x.x.x.x.x.x.x.y == re.y) assert(re.x.x.x.x.x.x.x.x.x.x.x.x.x.x.y == re.y) assert(re.x.x.x.x.x.x.x.x.x.x.x.x.x.x.x) assert(re.x.x.x.x.x.x.x.x.x.x.x.x.x.x.x.x == nil) return h .. ' ' .. tostring(re.x.x.x.x.x.x.x.x.y == re.y) .. ' ' .. tostring(re.y == 5)"#, "ok:82a17905a17881a17882a17905a17881a17882a17905a17881a17882a17905a17881a17882a17905a17881a17882a17905a17881a17882a17905a17881a17882a17905a17881a178c0 true true"),]
    }

    use super::super::bit::tests::survives;
    use mlua::Value;

    /// Markers of every kind, small lengths, and bytes of each class.
    const MSGPACK: &[u8] = b"\x00\x01\x7f\x80\x81\x8f\x90\x91\x9f\xa0\xa1\xbf\xc0\xc1\xc2\xc3\xc4\xca\xcb\xcc\xcd\xce\xcf\xd0\xd1\xd2\xd3\xd9\xda\xdb\xdc\xdd\xde\xdf\xe0\xff";

    #[test]
    fn random_input_never_panics() {
        for function in [
            "cmsgpack.unpack",
            "cmsgpack.unpack_one",
            "cmsgpack.unpack_limit",
        ] {
            survives(function, 20000, |lua, rng| {
                let data = lua.create_string(rng.bytes(MSGPACK, 30)).expect("data");
                let mut args = vec![Value::String(data)];
                for _ in 0..rng.below(3) {
                    args.push(Value::Integer(rng.below(40) as i64 - 4));
                }
                args
            });
        }
    }

    #[test]
    fn matches_redis() {
        super::super::bit::tests::check(cases());
    }
}
