//! Conversions between RESP replies and Lua values, as Redis's
//! `script_lua.c` makes them.
//!
//! A command's reply becomes Lua: integers are numbers, bulk strings are
//! strings, a null bulk or null array is `false` (RESP3's null is `nil`),
//! arrays are tables, a status is `{ok=...}`, an error `{err=...}`, and
//! RESP3's map, set, double, big number and verbatim string are tables
//! named by their type (`{map={...}}`, `{set={k=true}}`, `{double=d}`,
//! `{big_number=s}`, `{verbatim_string={format=..., string=...}}`).
//!
//! A script's return value becomes the reply: a string is a bulk string, a
//! number is truncated to an integer (`3.99` is 3, as C's cast makes it), `true` is 1
//! and `false` a null (or RESP3 booleans once the script called
//! `redis.setresp(3)`), a table with `err` or `ok` is an error or a
//! status, a typed table as above is that type, and any other table is an
//! array of its elements 1, 2, ... up to the first `nil`. Nesting deeper
//! than Redis's Lua stack allows answers "reached lua stack limit" at
//! that depth.

use bytes::Bytes;
use keel_resp::{Frame, Protocol, Writer};
use mlua::{Lua, Table, Value};

/// How deep a returned table may nest: where Redis's conversion runs out
/// of Lua stack (`LUAI_MAXCSTACK`, 8000 slots) and answers "reached lua
/// stack limit" instead of the element.
const MAX_REPLY_DEPTH: usize = 7994;

/// Lua's view of a command's reply. `protocol` is the script's
/// (`redis.setresp`): it says whether a null is `false` or `nil`.
pub fn frame_to_lua(lua: &Lua, frame: &Frame, protocol: Protocol) -> mlua::Result<Value> {
    let table_of = |field: &str, value: Value| -> mlua::Result<Value> {
        let t = lua.create_table()?;
        t.raw_set(field, value)?;
        Ok(Value::Table(t))
    };
    Ok(match frame {
        Frame::Simple(s) => table_of("ok", Value::String(lua.create_string(s)?))?,
        Frame::Error(e) => Value::Table(error_table(lua, &format!("-{e}"), true)?),
        Frame::Integer(n) => Value::Number(*n as f64),
        Frame::Bulk(b) => Value::String(lua.create_string(b)?),
        Frame::Null if protocol == Protocol::Resp3 => Value::Nil,
        Frame::Null | Frame::NullArray => Value::Boolean(false),
        Frame::Array(items) | Frame::Push(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, frame_to_lua(lua, item, protocol)?)?;
            }
            Value::Table(t)
        }
        Frame::Map(pairs) => {
            let t = lua.create_table_with_capacity(0, pairs.len())?;
            for (k, v) in pairs {
                t.raw_set(
                    frame_to_lua(lua, k, protocol)?,
                    frame_to_lua(lua, v, protocol)?,
                )?;
            }
            table_of("map", Value::Table(t))?
        }
        Frame::Set(items) => {
            let t = lua.create_table_with_capacity(0, items.len())?;
            for item in items {
                t.raw_set(frame_to_lua(lua, item, protocol)?, true)?;
            }
            table_of("set", Value::Table(t))?
        }
        Frame::Double(d) => table_of("double", Value::Number(*d))?,
        Frame::Boolean(b) => Value::Boolean(*b),
        Frame::BigNumber(s) => table_of("big_number", Value::String(lua.create_string(s)?))?,
        Frame::Verbatim(format, text) => {
            let t = lua.create_table()?;
            t.raw_set("format", lua.create_string(format)?)?;
            t.raw_set("string", lua.create_string(text)?)?;
            table_of("verbatim_string", Value::Table(t))?
        }
    })
}

/// An error as Redis's `luaPushErrorBuff` makes it: `{err="CODE message"}`,
/// where a message starting with `-` carries its code as its first word
/// and any other takes `ERR`. `ignore_stats` marks errors the command
/// already counted (Redis's `ignore_error_stats_update`).
pub fn error_table(lua: &Lua, message: &str, ignore_stats: bool) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("err", error_text(message))?;
    if ignore_stats {
        t.raw_set("ignore_error_stats_update", true)?;
    }
    Ok(t)
}

/// The `err` field's text for `message` (see [`error_table`]).
pub fn error_text(message: &str) -> String {
    let (code, text) = match message.strip_prefix('-') {
        Some(rest) => match rest.split_once(' ') {
            Some((code, text)) => (code, text),
            None => ("ERR", rest),
        },
        None => ("ERR", message),
    };
    format!("{code} {}", text.trim_matches(['\r', '\n']))
}

/// Writes a script's return value as the reply. `script_protocol` is the
/// script's own (`redis.setresp`), which decides how booleans convert.
/// The tree is walked with a stack of its own, not by recursion, so a
/// deeply nested table cannot overflow the thread's stack. True when the
/// reply is an error table a failed command made (Redis's
/// `ignore_error_stats_update`): that error was counted already.
pub fn write_lua(w: &mut Writer, value: &Value, script_protocol: Protocol) -> bool {
    let counted = match value {
        Value::Table(t) => {
            string_field(t, "err").is_some()
                && matches!(
                    t.raw_get("ignore_error_stats_update"),
                    Ok(Value::Boolean(true))
                )
        }
        _ => false,
    };
    let mut pending = vec![(value.clone(), 0usize)];
    while let Some((value, depth)) = pending.pop() {
        if depth > MAX_REPLY_DEPTH {
            w.error("ERR reached lua stack limit");
            continue;
        }
        let children = match &value {
            Value::String(s) => {
                w.bulk(&s.as_bytes());
                continue;
            }
            Value::Boolean(b) if script_protocol == Protocol::Resp3 => {
                w.boolean(*b);
                continue;
            }
            Value::Boolean(true) => {
                w.integer(1);
                continue;
            }
            Value::Table(t) => write_table_header(w, t),
            other => {
                match number(other) {
                    Some(n) => w.integer(c_cast(n)),
                    None => w.null(),
                }
                continue;
            }
        };
        pending.extend(children.into_iter().rev().map(|child| (child, depth + 1)));
    }
    counted
}

/// A Lua number, whichever way the binding holds it.
pub fn number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => Some(*n),
        Value::Integer(n) => Some(*n as f64),
        _ => None,
    }
}

/// C's `(long long)` of a double on x86-64: truncation, and the "integer
/// indefinite" value for what does not fit (NaN, infinities).
fn c_cast(n: f64) -> i64 {
    if n.is_finite() && n > -9.3e18 && n < 9.3e18 && (n as i128) <= i64::MAX as i128 {
        n as i64
    } else {
        i64::MIN
    }
}

fn string_field(t: &Table, field: &str) -> Option<mlua::String> {
    match t.raw_get(field) {
        Ok(Value::String(s)) => Some(s),
        _ => None,
    }
}

/// Writes what a table stands for, as Redis reads it (an error, a
/// status, a double, a big number, a verbatim string, a map, a set or an
/// array), and returns the elements still to write, in order.
fn write_table_header(w: &mut Writer, t: &Table) -> Vec<Value> {
    if let Some(err) = string_field(t, "err") {
        w.error(&String::from_utf8_lossy(&err.as_bytes()));
        return Vec::new();
    }
    if let Some(ok) = string_field(t, "ok") {
        let text = String::from_utf8_lossy(&ok.as_bytes()).replace(['\r', '\n'], " ");
        w.simple(&text);
        return Vec::new();
    }
    if let Some(d) = t.raw_get::<Value>("double").ok().as_ref().and_then(number) {
        w.double(d);
        return Vec::new();
    }
    if let Some(digits) = string_field(t, "big_number") {
        let text = String::from_utf8_lossy(&digits.as_bytes()).replace(['\r', '\n'], " ");
        w.big_number(&text);
        return Vec::new();
    }
    if let Ok(Value::Table(verbatim)) = t.raw_get("verbatim_string") {
        if let (Some(format), Some(text)) = (
            string_field(&verbatim, "format"),
            string_field(&verbatim, "string"),
        ) {
            let format = format.as_bytes();
            let mut tag = [b' '; 3];
            let n = format.len().min(3);
            tag[..n].copy_from_slice(&format[..n]);
            w.verbatim(&tag, &text.as_bytes());
            return Vec::new();
        }
    }
    if let Ok(Value::Table(map)) = t.raw_get("map") {
        let pairs: Vec<(Value, Value)> = map.pairs().flatten().collect();
        w.map(pairs.len());
        return pairs.into_iter().flat_map(|(k, v)| [k, v]).collect();
    }
    if let Ok(Value::Table(set)) = t.raw_get("set") {
        let members: Vec<Value> = set
            .pairs::<Value, Value>()
            .flatten()
            .map(|(k, _)| k)
            .collect();
        w.set(members.len());
        return members;
    }
    let mut items = Vec::new();
    for i in 1.. {
        match t.raw_get::<Value>(i) {
            Ok(Value::Nil) | Err(_) => break,
            Ok(item) => items.push(item),
        }
    }
    w.array(items.len());
    items
}

/// The arguments of `redis.call` as the command's argv: strings as they
/// are, numbers as C's `%.17g` prints them, anything else refused with
/// Redis's message.
pub fn lua_to_args(values: &[Value]) -> Result<Vec<Bytes>, &'static str> {
    if values.is_empty() {
        return Err("Please specify at least one argument for this redis lib call");
    }
    values
        .iter()
        .map(|value| match value {
            Value::String(s) => Ok(Bytes::copy_from_slice(&s.as_bytes())),
            Value::Number(_) | Value::Integer(_) => {
                Ok(Bytes::from(format_g(number(value).unwrap_or(0.0), 17)))
            }
            _ => Err("Lua redis lib command arguments must be strings or integers"),
        })
        .collect()
}

/// C's `%.<precision>g`: the shortest of fixed and exponent notation for
/// `precision` significant digits, trailing zeros dropped.
pub fn format_g(n: f64, precision: usize) -> String {
    // Integers short enough print as themselves (the common case, and
    // without float formatting's cost).
    if n.fract() == 0.0 && n.abs() < 1e15 {
        return format!("{}", n as i64);
    }
    if n.is_nan() {
        return if n.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if n.is_infinite() {
        return if n < 0.0 { "-inf" } else { "inf" }.into();
    }
    let scientific = format!("{n:.*e}", precision - 1);
    let (mantissa, exponent) = scientific.split_once('e').expect("`e` formatting has one");
    let exponent: i32 = exponent.parse().expect("an integer exponent");
    let trim = |digits: &str| -> String {
        match digits.contains('.') {
            true => digits
                .trim_end_matches('0')
                .trim_end_matches('.')
                .to_string(),
            false => digits.to_string(),
        }
    };
    if exponent >= -4 && exponent < precision as i32 {
        let decimals = (precision as i32 - 1 - exponent) as usize;
        trim(&format!("{n:.decimals$}"))
    } else {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exponent.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_as_c_prints_them_with_17_digits() {
        for (n, text) in [
            (1.0, "1"),
            (1.5, "1.5"),
            (0.1, "0.10000000000000001"),
            (-3.0, "-3"),
            (1e17, "1e+17"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (1e-5, "1.0000000000000001e-05"),
            (0.0001, "0.0001"),
            (f64::INFINITY, "inf"),
        ] {
            assert_eq!(format_g(n, 17), text, "{n}");
        }
    }

    #[test]
    fn error_codes_come_from_a_leading_dash_or_default_to_err() {
        assert_eq!(error_text("-WRONGTYPE Operation"), "WRONGTYPE Operation");
        assert_eq!(error_text("plain message"), "ERR plain message");
        assert_eq!(error_text("-NOCODE"), "ERR NOCODE");
        assert_eq!(error_text("-OOM full.\r\n"), "OOM full.");
    }

    #[test]
    fn out_of_range_numbers_cast_as_c_does() {
        assert_eq!(c_cast(3.99), 3);
        assert_eq!(c_cast(-3.99), -3);
        assert_eq!(c_cast(f64::INFINITY), i64::MIN);
        assert_eq!(c_cast(f64::NAN), i64::MIN);
    }
}
