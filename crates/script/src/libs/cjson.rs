//! `cjson`: Lua CJSON 2.1.0 as Redis bundles it (`deps/lua/src/lua_cjson.c`),
//! the global table `cjson` with `encode`, `decode`, the configuration
//! functions (`encode_sparse_array`, `encode_max_depth`, `decode_max_depth`,
//! `encode_number_precision`, `encode_keep_buffer`, `encode_invalid_numbers`,
//! `decode_invalid_numbers`), `new` (a fresh instance with its own
//! configuration), `null`, `_NAME` and `_VERSION`.
//!
//! Encoding:
//! - strings are bytes: `"`, `\`, `/` and the control characters (and DEL)
//!   are escaped (`\/`, `\n`, `\u001f`, ...), every other byte is copied, so
//!   invalid UTF-8 passes through as in Redis;
//! - numbers are `%.14g` (the precision is `encode_number_precision`, 1 to
//!   14); NaN and the infinities are an error unless
//!   `encode_invalid_numbers` is `on` (`nan`, `inf`, `-inf`) or `null`;
//! - a table is an array when its keys are all positive integers, of the
//!   largest key's length (holes are `null`), unless that is excessively
//!   sparse: largest key > `ratio` * keys and > `safe` (defaults 2 and 10),
//!   which is an error, or an object if `encode_sparse_array(true)`. Any
//!   other table, including the empty one, is an object whose number keys
//!   are written as strings; other key types are an error. Objects list
//!   their keys in `next` order, as Redis does.
//! - nil and `cjson.null` are `null`; functions, threads and userdata are
//!   errors. Nesting deeper than `encode_max_depth` (1000) or than Lua's
//!   C stack allows (8000 slots, one per array level and two per object
//!   level, as the C code uses them) is `Cannot serialise, excessive
//!   nesting (n)`; the encoder walks with an explicit stack.
//!
//! Decoding follows the C tokenizer: `null` is `cjson.null`, numbers are
//! read as glibc's `strtod` reads them (so `0x10`, `+1`, `01`, `Infinity`
//! and `NaN` are accepted unless `decode_invalid_numbers(false)`; `1.` is),
//! `\uXXXX` escapes (and surrogate pairs) become UTF-8, a NUL byte ends the
//! input, and errors name the token and the 1-based character the C code
//! names (`Expected value but found invalid token at character 1`).
//! Nesting beyond `decode_max_depth` (1000) or Lua's C stack (each open
//! array holds one of its 8000 slots, each open object two) is `Found too
//! many nested data structures`; the parser keeps an explicit stack.
//!
//! Keel differs from Redis in three details:
//! - encoding stops with an error past [`MAX_OUTPUT`] bytes (an array of
//!   2^31 nulls is allowed with the sparse check off), where the C library
//!   grows its buffer until memory runs out;
//! - an object key that is -0 or a number of magnitude below 2^-52 is
//!   written as `"0"` (and its value looked up as `t[0]`): mlua reads such
//!   keys as 0 (values are read exactly, see `bit.rs`);
//! - `encode_keep_buffer` is accepted and reported but changes nothing:
//!   the buffer it keeps is an allocation detail.
//!
//! The encoder holds the pairs of small objects, read in the pass that
//! decides array or object; a larger object's keys are copied into a Lua
//! table first, so no object holds a Rust handle per key (mlua's handles
//! are limited, see `bit.rs`).

use std::ffi::c_void;
use std::sync::{Arc, Mutex, PoisonError};

use mlua::{Function, LightUserData, Lua, MultiValue, Table, Value};

use super::bit::{
    arg_error, check_bytes, check_number, exact_arg_value, exact_value, lib_function, message,
    single, type_name, Ancestors, LibResult, MAX_OUTPUT,
};

/// Lua 5.1's `LUAI_MAXCSTACK`: the most values a C function's frame holds.
const MAX_C_STACK: usize = 8000;

/// An instance's settings, shared by its functions.
#[derive(Clone)]
struct Config {
    sparse_convert: bool,
    sparse_ratio: i32,
    sparse_safe: i32,
    encode_max_depth: i32,
    decode_max_depth: i32,
    encode_invalid_numbers: usize,
    decode_invalid_numbers: bool,
    encode_keep_buffer: bool,
    precision: i32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            sparse_convert: false,
            sparse_ratio: 2,
            sparse_safe: 10,
            encode_max_depth: 1000,
            decode_max_depth: 1000,
            encode_invalid_numbers: 0,
            decode_invalid_numbers: true,
            encode_keep_buffer: true,
            precision: 14,
        }
    }
}

type Shared = Arc<Mutex<Config>>;

fn settings(config: &Shared) -> std::sync::MutexGuard<'_, Config> {
    config.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Sets the global table `cjson`.
pub fn load(lua: &Lua) -> mlua::Result<()> {
    lua.globals().raw_set("cjson", instance(lua)?)
}

/// `cjson.null`: the NULL light userdata that stands for JSON null.
fn null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut::<c_void>()))
}

/// A module table whose functions share a fresh configuration.
fn instance(lua: &Lua) -> mlua::Result<Table> {
    let config: Shared = Arc::default();
    let table = lua.create_table()?;
    let with =
        |f: fn(&Lua, &Shared, MultiValue) -> LibResult<MultiValue>| -> mlua::Result<Function> {
            let config = config.clone();
            lib_function(lua, move |lua, args| f(lua, &config, args))
        };
    table.raw_set("encode", with(encode)?)?;
    table.raw_set("decode", with(decode)?)?;
    table.raw_set("encode_sparse_array", with(encode_sparse_array)?)?;
    table.raw_set("encode_max_depth", with(encode_max_depth)?)?;
    table.raw_set("decode_max_depth", with(decode_max_depth)?)?;
    table.raw_set("encode_number_precision", with(encode_number_precision)?)?;
    table.raw_set("encode_keep_buffer", with(encode_keep_buffer)?)?;
    table.raw_set("encode_invalid_numbers", with(encode_invalid_numbers)?)?;
    table.raw_set("decode_invalid_numbers", with(decode_invalid_numbers)?)?;
    table.raw_set(
        "new",
        lib_function(lua, |lua, _| single(Value::Table(instance(lua)?)))?,
    )?;
    table.raw_set("null", null())?;
    table.raw_set("_NAME", "cjson")?;
    table.raw_set("_VERSION", "2.1.0")?;
    Ok(table)
}

// ---------------------------------------------------------------------------
// Configuration

/// A configuration function's arguments, padded with nils to `count`; more
/// than `count` is an error on the first extra one.
fn config_args(args: MultiValue, count: usize) -> LibResult<MultiValue> {
    if args.len() > count {
        return arg_error(count + 1, "found too many arguments");
    }
    let mut args = args;
    while args.len() < count {
        args.push_back(Value::Nil);
    }
    Ok(args)
}

fn is_nil(args: &MultiValue, arg: usize) -> bool {
    matches!(args.get(arg - 1), None | Some(Value::Nil))
}

/// Sets an integer option from argument `arg` unless it is nil (the range
/// error always names argument 1, as the C code does); returns the value.
fn integer_option(
    lua: &Lua,
    args: &MultiValue,
    arg: usize,
    setting: &mut i32,
    min: i32,
    max: i32,
) -> LibResult<Value> {
    if !is_nil(args, arg) {
        // luaL_checkinteger, then the conversion to int keeps 32 bits.
        let value = to_lua_integer(check_number(lua, args, arg)?) as i32;
        if value < min || value > max {
            return arg_error(1, format!("expected integer between {min} and {max}"));
        }
        *setting = value;
    }
    Ok(Value::Integer(i64::from(*setting)))
}

/// A double converted to `lua_Integer` as x86-64 does it.
fn to_lua_integer(n: f64) -> i64 {
    if n > -9_223_372_036_854_775_809.0 && n < 9_223_372_036_854_775_808.0 {
        n as i64
    } else {
        i64::MIN
    }
}

/// Sets an enumerated option from argument `arg` unless it is nil: a
/// boolean, or one of `options` by name. Returns the setting as a boolean
/// when it is off or on, else by name.
fn enum_option(
    lua: &Lua,
    args: &MultiValue,
    arg: usize,
    setting: &mut usize,
    options: &[&str],
) -> LibResult<Value> {
    match args.get(arg - 1) {
        None | Some(Value::Nil) => {}
        Some(Value::Boolean(b)) => *setting = usize::from(*b),
        Some(_) => {
            let name = check_bytes(lua, args, arg)?;
            let name = name.as_bytes();
            match options.iter().position(|o| o.as_bytes() == &name[..]) {
                Some(index) => *setting = index,
                None => {
                    let mut msg = b"invalid option '".to_vec();
                    msg.extend_from_slice(&name);
                    msg.push(b'\'');
                    return arg_error(arg, msg);
                }
            }
        }
    }
    Ok(match *setting {
        0 | 1 => Value::Boolean(*setting == 1),
        n => Value::String(lua.create_string(options[n])?),
    })
}

const OFF_ON: &[&str] = &["off", "on"];

fn bool_option(lua: &Lua, args: &MultiValue, arg: usize, setting: &mut bool) -> LibResult<Value> {
    let mut index = usize::from(*setting);
    let value = enum_option(lua, args, arg, &mut index, OFF_ON)?;
    *setting = index == 1;
    Ok(value)
}

/// `encode_sparse_array([convert [, ratio [, safe]]])`.
fn encode_sparse_array(lua: &Lua, config: &Shared, args: MultiValue) -> LibResult<MultiValue> {
    let args = config_args(args, 3)?;
    // Each option is stored as soon as it is read, so one that is valid
    // stays set when a later one is refused, as in the C code.
    let mut cfg = settings(config);
    let convert = bool_option(lua, &args, 1, &mut cfg.sparse_convert)?;
    let ratio = integer_option(lua, &args, 2, &mut cfg.sparse_ratio, 0, i32::MAX)?;
    let safe = integer_option(lua, &args, 3, &mut cfg.sparse_safe, 0, i32::MAX)?;
    Ok(MultiValue::from_vec(vec![convert, ratio, safe]))
}

/// An option function of one integer argument.
fn one_integer(
    lua: &Lua,
    config: &Shared,
    args: MultiValue,
    field: fn(&mut Config) -> &mut i32,
    min: i32,
    max: i32,
) -> LibResult<MultiValue> {
    let args = config_args(args, 1)?;
    let mut cfg = settings(config);
    single(integer_option(lua, &args, 1, field(&mut cfg), min, max)?)
}

fn encode_max_depth(lua: &Lua, config: &Shared, args: MultiValue) -> LibResult<MultiValue> {
    one_integer(lua, config, args, |c| &mut c.encode_max_depth, 1, i32::MAX)
}

fn decode_max_depth(lua: &Lua, config: &Shared, args: MultiValue) -> LibResult<MultiValue> {
    one_integer(lua, config, args, |c| &mut c.decode_max_depth, 1, i32::MAX)
}

fn encode_number_precision(lua: &Lua, config: &Shared, args: MultiValue) -> LibResult<MultiValue> {
    one_integer(lua, config, args, |c| &mut c.precision, 1, 14)
}

fn encode_keep_buffer(lua: &Lua, config: &Shared, args: MultiValue) -> LibResult<MultiValue> {
    let args = config_args(args, 1)?;
    let mut cfg = settings(config);
    single(bool_option(lua, &args, 1, &mut cfg.encode_keep_buffer)?)
}

fn encode_invalid_numbers(lua: &Lua, config: &Shared, args: MultiValue) -> LibResult<MultiValue> {
    let args = config_args(args, 1)?;
    let mut cfg = settings(config);
    let options = ["off", "on", "null"];
    single(enum_option(
        lua,
        &args,
        1,
        &mut cfg.encode_invalid_numbers,
        &options,
    )?)
}

fn decode_invalid_numbers(lua: &Lua, config: &Shared, args: MultiValue) -> LibResult<MultiValue> {
    let args = config_args(args, 1)?;
    let mut cfg = settings(config);
    single(bool_option(lua, &args, 1, &mut cfg.decode_invalid_numbers)?)
}

// ---------------------------------------------------------------------------
// Encoding

/// `cjson.encode(value)`.
fn encode(lua: &Lua, config: &Shared, args: MultiValue) -> LibResult<MultiValue> {
    if args.len() != 1 {
        return arg_error(1, "expected 1 argument");
    }
    let cfg = settings(config).clone();
    let json = Encoder {
        cfg: &cfg,
        out: Vec::new(),
    }
    .encode(lua, &exact_arg_value(&args, 1))?;
    single(Value::String(lua.create_string(&json)?))
}

/// A table being written: its position, the table itself (and for an
/// object the snapshot of its keys) held by the encoder or `Ancestors`.
enum Writing {
    Array {
        next: usize,
        len: usize,
    },
    /// An object whose keys wait in a Lua table.
    Object {
        next: usize,
        len: usize,
    },
    /// A small object whose pairs are held here.
    Pairs {
        pairs: std::vec::IntoIter<(Value, Value)>,
        first: bool,
    },
}

/// How many pairs of small objects the encoder holds at once (the rest go
/// through a Lua table, slower but holding no handles).
const HELD_PAIRS: usize = 1024;

struct Encoder<'a> {
    cfg: &'a Config,
    out: Vec<u8>,
}

/// `Cannot serialise <type>: <reason>`.
fn cannot_serialise<T>(value: &Value, reason: &str) -> LibResult<T> {
    message(format!("Cannot serialise {}: {reason}", type_name(value)))
}

impl Encoder<'_> {
    fn encode(mut self, lua: &Lua, root: &Value) -> LibResult<Vec<u8>> {
        let mut open: Vec<Writing> = Vec::new();
        // The innermost open table and its key snapshot (objects only);
        // the outer ones wait in `ancestors`, two values per level.
        let mut table: Option<Table> = None;
        let mut keys: Option<Table> = None;
        let mut ancestors = Ancestors::new();
        // Slots of the C frame's stack in use: the argument, then one per
        // array level (the element) and two per object level (key, value).
        let mut slots = 1;
        // Pairs held in `Writing::Pairs` frames.
        let mut held = 0;
        let mut value = root.clone();
        loop {
            if self.out.len() > MAX_OUTPUT {
                return message(format!(
                    "Cannot serialise, output exceeds {MAX_OUTPUT} bytes"
                ));
            }
            match &value {
                Value::String(s) => self.string(&s.as_bytes()),
                Value::Integer(i) => self.number(&value, *i as f64)?,
                Value::Number(n) => self.number(&value, *n)?,
                Value::Boolean(true) => self.out.extend_from_slice(b"true"),
                Value::Boolean(false) => self.out.extend_from_slice(b"false"),
                Value::Nil => self.out.extend_from_slice(b"null"),
                Value::LightUserData(ud) if ud.0.is_null() => self.out.extend_from_slice(b"null"),
                Value::Table(inner) => {
                    let depth = open.len() + 1;
                    if depth > self.cfg.encode_max_depth as usize || slots + 3 > MAX_C_STACK {
                        return message(format!("Cannot serialise, excessive nesting ({depth})"));
                    }
                    let mut pairs = None;
                    let room = HELD_PAIRS - held;
                    let len = self.array_length(&value, inner, &mut pairs, room)?;
                    if let Some(outer) = table.take() {
                        ancestors.push(lua, Value::Table(outer))?;
                        ancestors.push(lua, keys.take().map_or(Value::Nil, Value::Table))?;
                    }
                    if len > 0 {
                        self.out.push(b'[');
                        open.push(Writing::Array {
                            next: 1,
                            len: len as usize,
                        });
                        slots += 1;
                    } else if let Some(pairs) = pairs {
                        self.out.push(b'{');
                        held += pairs.len();
                        open.push(Writing::Pairs {
                            pairs: pairs.into_iter(),
                            first: true,
                        });
                        slots += 2;
                    } else {
                        self.out.push(b'{');
                        let snapshot = lua.create_table()?;
                        let mut len = 0;
                        inner.for_each::<Value, Value>(|key, _| {
                            len += 1;
                            snapshot.raw_set(len, key)
                        })?;
                        keys = Some(snapshot);
                        open.push(Writing::Object { next: 1, len });
                        slots += 2;
                    }
                    table = Some(inner.clone());
                }
                other => return cannot_serialise(other, "type not supported"),
            }
            // Find the next value to write, closing finished tables.
            value = loop {
                let (Some(frame), Some(current)) = (open.last_mut(), table.as_ref()) else {
                    return Ok(self.out);
                };
                match frame {
                    Writing::Array { next, len } if *next <= *len => {
                        if *next > 1 {
                            self.out.push(b',');
                        }
                        let index = Value::Integer(*next as i64);
                        *next += 1;
                        let element = current.raw_get(index.clone())?;
                        break exact_value(lua, current, &index, element)?;
                    }
                    Writing::Object { next, len } if *next <= *len => {
                        if *next > 1 {
                            self.out.push(b',');
                        }
                        let key: Value =
                            keys.as_ref().map_or(Ok(Value::Nil), |k| k.raw_get(*next))?;
                        *next += 1;
                        self.key(&key)?;
                        let element = current.raw_get(key.clone())?;
                        break exact_value(lua, current, &key, element)?;
                    }
                    Writing::Pairs { pairs, first } => {
                        if let Some((key, element)) = pairs.next() {
                            held -= 1;
                            if !*first {
                                self.out.push(b',');
                            }
                            *first = false;
                            self.key(&key)?;
                            break exact_value(lua, current, &key, element)?;
                        }
                        self.out.push(b'}');
                        slots -= 2;
                    }
                    Writing::Array { .. } => {
                        self.out.push(b']');
                        slots -= 1;
                    }
                    Writing::Object { .. } => {
                        self.out.push(b'}');
                        slots -= 2;
                    }
                }
                open.pop();
                let outer_keys = ancestors.pop()?;
                let outer = ancestors.pop()?;
                keys = match outer_keys {
                    Value::Table(k) => Some(k),
                    _ => None,
                };
                table = match outer {
                    Value::Table(t) => Some(t),
                    _ => None,
                };
            };
        }
    }

    /// An object key: strings as they are, numbers as strings.
    fn key(&mut self, key: &Value) -> LibResult<()> {
        match key {
            Value::String(s) => self.string(&s.as_bytes()),
            Value::Integer(i) => self.number_key(key, *i as f64)?,
            Value::Number(n) => self.number_key(key, *n)?,
            other => return cannot_serialise(other, "table key must be a number or string"),
        }
        self.out.push(b':');
        Ok(())
    }

    fn number_key(&mut self, key: &Value, n: f64) -> LibResult<()> {
        self.out.push(b'"');
        self.number(key, n)?;
        self.out.push(b'"');
        Ok(())
    }

    fn number(&mut self, value: &Value, n: f64) -> LibResult<()> {
        if !n.is_finite() {
            match self.cfg.encode_invalid_numbers {
                0 => return cannot_serialise(value, "must not be NaN or Inf"),
                1 if n.is_nan() => {
                    self.out.extend_from_slice(b"nan");
                    return Ok(());
                }
                1 => {}
                _ => {
                    self.out.extend_from_slice(b"null");
                    return Ok(());
                }
            }
        }
        self.out
            .extend_from_slice(format_g(n, self.cfg.precision as usize).as_bytes());
        Ok(())
    }

    fn string(&mut self, s: &[u8]) {
        self.out.push(b'"');
        for &b in s {
            match b {
                b'"' => self.out.extend_from_slice(b"\\\""),
                b'\\' => self.out.extend_from_slice(b"\\\\"),
                b'/' => self.out.extend_from_slice(b"\\/"),
                b'\x08' => self.out.extend_from_slice(b"\\b"),
                b'\t' => self.out.extend_from_slice(b"\\t"),
                b'\n' => self.out.extend_from_slice(b"\\n"),
                b'\x0c' => self.out.extend_from_slice(b"\\f"),
                b'\r' => self.out.extend_from_slice(b"\\r"),
                0..=0x1f | 0x7f => {
                    self.out.extend_from_slice(format!("\\u{b:04x}").as_bytes());
                }
                _ => self.out.push(b),
            }
        }
        self.out.push(b'"');
    }

    /// The array length of a table as the C code computes it: the largest
    /// key when all keys are positive integers (as a C `int`, so a key of
    /// 2^31 or more makes it negative and the table an object), -1 for an
    /// object; an excessively sparse array is an error or an object. Sets
    /// `entries` to the table's pairs if there are at most `room` of them.
    fn array_length(
        &self,
        value: &Value,
        table: &Table,
        entries: &mut Option<Vec<(Value, Value)>>,
        room: usize,
    ) -> LibResult<i32> {
        let mut max: i32 = 0;
        let mut items: i32 = 0;
        let mut array = true;
        let mut kept = Some(Vec::new());
        table.for_each::<Value, Value>(|key, element| {
            let k = match key {
                Value::Integer(i) => i as f64,
                Value::Number(n) => n,
                _ => f64::NAN,
            };
            if !array || k.is_nan() || k == 0.0 || k.floor() != k || k < 1.0 {
                array = false;
            } else {
                if k > f64::from(max) {
                    max = if k < 2_147_483_648.0 {
                        k as i32
                    } else {
                        i32::MIN
                    };
                }
                items = items.wrapping_add(1);
            }
            match &mut kept {
                Some(pairs) if pairs.len() < room => pairs.push((key, element)),
                _ => kept = None,
            }
            Ok(())
        })?;
        *entries = kept;
        if !array {
            return Ok(-1);
        }
        let cfg = self.cfg;
        if cfg.sparse_ratio > 0
            && max > items.wrapping_mul(cfg.sparse_ratio)
            && max > cfg.sparse_safe
        {
            if !cfg.sparse_convert {
                return cannot_serialise(value, "excessively sparse array");
            }
            return Ok(-1);
        }
        Ok(max)
    }
}

/// C's `%.<precision>g`.
fn format_g(n: f64, precision: usize) -> String {
    if n.is_nan() {
        return if n.is_sign_negative() { "-nan" } else { "nan" }.to_string();
    }
    if n.is_infinite() {
        return if n < 0.0 { "-inf" } else { "inf" }.to_string();
    }
    if n == 0.0 {
        return if n.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let precision = precision.max(1);
    // An integer of at most `precision` digits prints as itself.
    if n.fract() == 0.0 && n.abs() < 10f64.powi(precision as i32) {
        return (n as i64).to_string();
    }
    let scientific = format!("{:.*e}", precision - 1, n);
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if exponent < -4 || exponent >= precision as i32 {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!(
            "{}e{sign}{:02}",
            strip_fraction_zeros(mantissa),
            exponent.unsigned_abs()
        )
    } else {
        let decimals = (precision as i32 - 1 - exponent) as usize;
        strip_fraction_zeros(&format!("{n:.decimals$}")).to_string()
    }
}

/// `%g` drops trailing zeros of the fraction, and the point if nothing is left.
fn strip_fraction_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

// ---------------------------------------------------------------------------
// Decoding

/// `cjson.decode(json)`.
fn decode(lua: &Lua, config: &Shared, args: MultiValue) -> LibResult<MultiValue> {
    if args.len() != 1 {
        return arg_error(1, "expected 1 argument");
    }
    let cfg = settings(config).clone();
    let json = check_bytes(lua, &args, 1)?;
    let json = json.as_bytes();
    if json.len() >= 2 && (json[0] == 0 || json[1] == 0) {
        return message("JSON parser does not support UTF-16 or UTF-32");
    }
    let mut parser = Parser {
        data: &json,
        at: 0,
        invalid_numbers: cfg.decode_invalid_numbers,
    };
    single(parser.document(lua, cfg.decode_max_depth)?)
}

#[derive(PartialEq)]
enum Kind {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    String(Vec<u8>),
    Number(f64),
    Boolean(bool),
    Null,
    Colon,
    Comma,
    End,
    /// A malformed token, with what is wrong.
    Error(&'static str),
}

struct Token {
    kind: Kind,
    /// Where it starts (or where its error is), 0-based.
    index: usize,
}

/// A container being filled while its elements are parsed.
/// (The table itself is held by the parser or `Ancestors`.)
enum Container {
    Array { next: usize },
    Object { key: Vec<u8> },
}

struct Parser<'a> {
    data: &'a [u8],
    at: usize,
    invalid_numbers: bool,
}

/// `Expected <what> but found <token> at character <n>`.
fn unexpected<T>(expected: &str, token: &Token) -> LibResult<T> {
    let found = match &token.kind {
        Kind::ObjBegin => "T_OBJ_BEGIN",
        Kind::ObjEnd => "T_OBJ_END",
        Kind::ArrBegin => "T_ARR_BEGIN",
        Kind::ArrEnd => "T_ARR_END",
        Kind::String(_) => "T_STRING",
        Kind::Number(_) => "T_NUMBER",
        Kind::Boolean(_) => "T_BOOLEAN",
        Kind::Null => "T_NULL",
        Kind::Colon => "T_COLON",
        Kind::Comma => "T_COMMA",
        Kind::End => "T_END",
        Kind::Error(what) => what,
    };
    message(format!(
        "Expected {expected} but found {found} at character {}",
        token.index + 1
    ))
}

impl Parser<'_> {
    /// The byte at `i`; the C string's terminating NUL past the end.
    fn byte(&self, i: usize) -> u8 {
        self.data.get(i).copied().unwrap_or(0)
    }

    fn error(&self, what: &'static str) -> Token {
        Token {
            kind: Kind::Error(what),
            index: self.at,
        }
    }

    fn next_token(&mut self) -> Token {
        while matches!(self.byte(self.at), b' ' | b'\t' | b'\n' | b'\r') {
            self.at += 1;
        }
        let index = self.at;
        let single = |kind| Token { kind, index };
        let ch = self.byte(self.at);
        let kind = match ch {
            b'{' => Kind::ObjBegin,
            b'}' => Kind::ObjEnd,
            b'[' => Kind::ArrBegin,
            b']' => Kind::ArrEnd,
            b',' => Kind::Comma,
            b':' => Kind::Colon,
            0 => return single(Kind::End),
            b'"' => return self.string(),
            b'-' | b'0'..=b'9' => {
                if !self.invalid_numbers && self.is_invalid_number() {
                    return self.error("invalid number");
                }
                return self.number();
            }
            b'f' | b'i' | b'I' | b'n' | b'N' | b't' | b'+' => {
                let rest = &self.data[self.at..];
                let literal = [
                    (&b"true"[..], Kind::Boolean(true)),
                    (b"false", Kind::Boolean(false)),
                    (b"null", Kind::Null),
                ]
                .into_iter()
                .find(|(word, _)| rest.starts_with(word));
                if let Some((word, kind)) = literal {
                    self.at += word.len();
                    return single(kind);
                }
                if self.invalid_numbers && self.is_invalid_number() {
                    return self.number();
                }
                return self.error("invalid token");
            }
            _ => return self.error("invalid token"),
        };
        self.at += 1;
        single(kind)
    }

    /// A number strict JSON rejects but `strtod` reads: a leading `+`,
    /// hexadecimal, leading zeros, infinity and NaN.
    fn is_invalid_number(&self) -> bool {
        let mut p = self.at;
        match self.byte(p) {
            b'+' => return true,
            b'-' => p += 1,
            _ => {}
        }
        let ch = self.byte(p);
        if ch == b'0' {
            let next = self.byte(p + 1);
            return next | 0x20 == b'x' || next.is_ascii_digit();
        }
        // A C `char` compare: bytes from 0x80 are negative, "ordinary".
        if (ch as i8) <= b'9' as i8 {
            return false;
        }
        let word = |w: &[u8]| (0..w.len()).all(|i| self.byte(p + i).eq_ignore_ascii_case(&w[i]));
        word(b"inf") || word(b"nan")
    }

    fn number(&mut self) -> Token {
        let index = self.at;
        match strtod(&self.data[self.at..]) {
            Some((n, len)) => {
                self.at += len;
                Token {
                    kind: Kind::Number(n),
                    index,
                }
            }
            None => self.error("invalid number"),
        }
    }

    fn string(&mut self) -> Token {
        let index = self.at;
        self.at += 1;
        let mut s = Vec::new();
        loop {
            let ch = self.byte(self.at);
            match ch {
                b'"' => break,
                0 => return self.error("unexpected end of string"),
                b'\\' => {
                    let unescaped = match self.byte(self.at + 1) {
                        b'"' => b'"',
                        b'\\' => b'\\',
                        b'/' => b'/',
                        b'b' => b'\x08',
                        b'f' => b'\x0c',
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'u' => {
                            if !self.unicode_escape(&mut s) {
                                return self.error("invalid unicode escape code");
                            }
                            continue;
                        }
                        _ => return self.error("invalid escape code"),
                    };
                    s.push(unescaped);
                    self.at += 2;
                }
                _ => {
                    s.push(ch);
                    self.at += 1;
                }
            }
        }
        self.at += 1;
        Token {
            kind: Kind::String(s),
            index,
        }
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        (0..4).try_fold(0, |acc, i| {
            let digit = char::from(self.byte(at + i)).to_digit(16)?;
            Some(acc << 4 | digit)
        })
    }

    /// `\uXXXX`, or a surrogate pair of them, appended as UTF-8.
    fn unicode_escape(&mut self, s: &mut Vec<u8>) -> bool {
        let Some(mut codepoint) = self.hex4(self.at + 2) else {
            return false;
        };
        let mut escape_len = 6;
        if codepoint & 0xf800 == 0xd800 {
            if codepoint & 0x400 != 0
                || self.byte(self.at + 6) != b'\\'
                || self.byte(self.at + 7) != b'u'
            {
                return false;
            }
            let Some(low) = self.hex4(self.at + 8) else {
                return false;
            };
            if low & 0xfc00 != 0xdc00 {
                return false;
            }
            codepoint = (((codepoint & 0x3ff) << 10) | (low & 0x3ff)) + 0x10000;
            escape_len = 12;
        }
        let mut utf8 = [0u8; 4];
        let len = match codepoint {
            0..=0x7f => {
                utf8[0] = codepoint as u8;
                1
            }
            0x80..=0x7ff => {
                utf8[0] = 0xc0 | (codepoint >> 6) as u8;
                utf8[1] = 0x80 | (codepoint & 0x3f) as u8;
                2
            }
            0x800..=0xffff => {
                utf8[0] = 0xe0 | (codepoint >> 12) as u8;
                utf8[1] = 0x80 | ((codepoint >> 6) & 0x3f) as u8;
                utf8[2] = 0x80 | (codepoint & 0x3f) as u8;
                3
            }
            _ => {
                utf8[0] = 0xf0 | (codepoint >> 18) as u8;
                utf8[1] = 0x80 | ((codepoint >> 12) & 0x3f) as u8;
                utf8[2] = 0x80 | ((codepoint >> 6) & 0x3f) as u8;
                utf8[3] = 0x80 | (codepoint & 0x3f) as u8;
                4
            }
        };
        s.extend_from_slice(&utf8[..len]);
        self.at += escape_len;
        true
    }

    /// The whole input as one value, parsed with an explicit stack.
    fn document(&mut self, lua: &Lua, max_depth: i32) -> LibResult<Value> {
        let mut open: Vec<Container> = Vec::new();
        // The innermost open container; the outer ones wait in `ancestors`.
        let mut current: Option<Table> = None;
        let mut ancestors = Ancestors::new();
        // Slots of the C frame's stack in use: the argument, then the
        // table (and key) of each open container.
        let mut slots = 1;
        let mut token = self.next_token();
        loop {
            let mut value = match token.kind {
                Kind::String(s) => Value::String(lua.create_string(s)?),
                Kind::Number(n) => Value::Number(n),
                Kind::Boolean(b) => Value::Boolean(b),
                Kind::Null => null(),
                Kind::ObjBegin | Kind::ArrBegin => {
                    let object = token.kind == Kind::ObjBegin;
                    let depth = open.len() + 1;
                    let needed = if object { 3 } else { 2 };
                    if depth > max_depth as usize || slots + needed > MAX_C_STACK {
                        return message(format!(
                            "Found too many nested data structures ({depth}) at character {}",
                            self.at
                        ));
                    }
                    let table = lua.create_table()?;
                    token = self.next_token();
                    let closer = if object { Kind::ObjEnd } else { Kind::ArrEnd };
                    if token.kind == closer {
                        Value::Table(table)
                    } else {
                        if let Some(outer) = current.replace(table) {
                            ancestors.push(lua, Value::Table(outer))?;
                        }
                        if object {
                            let key = self.object_key(token)?;
                            open.push(Container::Object { key });
                            slots += 2;
                            token = self.next_token();
                        } else {
                            open.push(Container::Array { next: 1 });
                            slots += 1;
                        }
                        continue;
                    }
                }
                _ => return unexpected("value", &token),
            };
            // Store the value in the containers it completes.
            loop {
                let (Some(frame), Some(table)) = (open.last_mut(), current.as_ref()) else {
                    let end = self.next_token();
                    if end.kind != Kind::End {
                        return unexpected("the end", &end);
                    }
                    return Ok(value);
                };
                match frame {
                    Container::Array { next } => {
                        table.raw_set(*next, value)?;
                        *next += 1;
                        token = self.next_token();
                        match token.kind {
                            Kind::ArrEnd => {}
                            Kind::Comma => {
                                token = self.next_token();
                                break;
                            }
                            _ => return unexpected("comma or array end", &token),
                        }
                        slots -= 1;
                    }
                    Container::Object { key } => {
                        table.raw_set(lua.create_string(&key)?, value)?;
                        token = self.next_token();
                        match token.kind {
                            Kind::ObjEnd => {}
                            Kind::Comma => {
                                let key_token = self.next_token();
                                *key = self.object_key(key_token)?;
                                token = self.next_token();
                                break;
                            }
                            _ => return unexpected("comma or object end", &token),
                        }
                        slots -= 2;
                    }
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

    /// A key and its colon; leaves the parser at the value's token.
    fn object_key(&mut self, token: Token) -> LibResult<Vec<u8>> {
        let Kind::String(key) = token.kind else {
            return unexpected("object key string", &token);
        };
        let colon = self.next_token();
        if colon.kind != Kind::Colon {
            return unexpected("colon", &colon);
        }
        Ok(key)
    }
}

/// glibc's `strtod` on the front of `s` (in the C locale): the value and
/// how many bytes it read, or `None` when no number starts there.
fn strtod(s: &[u8]) -> Option<(f64, usize)> {
    let at = |i: usize| s.get(i).copied().unwrap_or(0);
    let (negative, start) = match at(0) {
        b'-' => (true, 1),
        b'+' => (false, 1),
        _ => (false, 0),
    };
    let word =
        |from: usize, w: &[u8]| (0..w.len()).all(|i| at(from + i).eq_ignore_ascii_case(&w[i]));
    let sign = |n: f64| if negative { -n } else { n };
    if word(start, b"inf") {
        let len = if word(start, b"infinity") { 8 } else { 3 };
        return Some((sign(f64::INFINITY), start + len));
    }
    if word(start, b"nan") {
        let mut end = start + 3;
        if at(end) == b'(' {
            let close = (end + 1..).find(|&i| !(at(i).is_ascii_alphanumeric() || at(i) == b'_'))?;
            if at(close) == b')' {
                end = close + 1;
            }
        }
        return Some((sign(f64::NAN), end));
    }
    if at(start) == b'0' && at(start + 1) | 0x20 == b'x' {
        if let Some((n, len)) = hex_float(s, start + 2) {
            return Some((sign(n), len));
        }
    }
    // Decimal: digits, an optional fraction, at least one digit in all,
    // then an exponent if it has digits.
    let mut end = start;
    let int_digits = (end..).take_while(|&i| at(i).is_ascii_digit()).count();
    end += int_digits;
    let mut frac_digits = 0;
    if at(end) == b'.' {
        frac_digits = (end + 1..).take_while(|&i| at(i).is_ascii_digit()).count();
        if int_digits + frac_digits > 0 {
            end += 1 + frac_digits;
        }
    }
    if int_digits + frac_digits == 0 {
        return None;
    }
    if at(end) | 0x20 == b'e' {
        let sign_len = usize::from(matches!(at(end + 1), b'+' | b'-'));
        let exp_digits = (end + 1 + sign_len..)
            .take_while(|&i| at(i).is_ascii_digit())
            .count();
        if exp_digits > 0 {
            end += 1 + sign_len + exp_digits;
        }
    }
    let text = std::str::from_utf8(&s[start..end]).ok()?;
    let text = text.strip_suffix('.').unwrap_or(text);
    Some((sign(text.parse().ok()?), end))
}

/// A hexadecimal float after `0x` at `from`: hex digits with an optional
/// point, then an optional binary exponent. `None` when there are no
/// digits (`strtod` then reads just the `0`).
fn hex_float(s: &[u8], from: usize) -> Option<(f64, usize)> {
    let at = |i: usize| s.get(i).copied().unwrap_or(0);
    let mut mantissa: u64 = 0;
    let mut exponent: i64 = 0;
    let mut sticky = false;
    let mut digits = 0;
    let mut end = from;
    let mut seen_point = false;
    loop {
        let ch = at(end);
        if ch == b'.' && !seen_point {
            seen_point = true;
            end += 1;
            continue;
        }
        let Some(digit) = char::from(ch).to_digit(16) else {
            break;
        };
        digits += 1;
        if mantissa >> 56 == 0 {
            mantissa = mantissa << 4 | u64::from(digit);
            if seen_point {
                exponent -= 4;
            }
        } else {
            sticky |= digit != 0;
            if !seen_point {
                exponent += 4;
            }
        }
        end += 1;
    }
    if digits == 0 {
        return None;
    }
    if at(end) | 0x20 == b'p' {
        let sign_len = usize::from(matches!(at(end + 1), b'+' | b'-'));
        let exp_digits = (end + 1 + sign_len..)
            .take_while(|&i| at(i).is_ascii_digit())
            .count();
        if exp_digits > 0 {
            let text = std::str::from_utf8(&s[end + 1..end + 1 + sign_len + exp_digits]).ok()?;
            let binary: i64 = text.parse().unwrap_or(if text.starts_with('-') {
                i64::MIN / 2
            } else {
                i64::MAX / 2
            });
            exponent = exponent.saturating_add(binary);
            end += 1 + sign_len + exp_digits;
        }
    }
    // Keep what lies below the 60 bits kept as a sticky low bit, so the
    // conversion to f64 rounds as if it had all of them.
    let value = (mantissa | u64::from(sticky)) as f64;
    let exponent = exponent.clamp(-2200, 2200) as i32;
    Some((scale_by_power_of_two(value, exponent), end))
}

/// `value * 2^exponent` without intermediate overflow.
fn scale_by_power_of_two(mut value: f64, mut exponent: i32) -> f64 {
    while exponent > 1000 {
        value *= 2f64.powi(1000);
        exponent -= 1000;
    }
    while exponent < -1000 {
        value *= 2f64.powi(-1000);
        exponent += 1000;
    }
    value * 2f64.powi(exponent)
}

#[cfg(test)]
mod tests {
    fn cases() -> &'static [(&'static str, &'static str)] {
        &[
            (r#"local t={} for k,v in pairs(cjson) do t[#t+1]=k..'='..tostring(type(v) == 'string' and v or type(v)) end table.sort(t) return table.concat(t, ' ')"#, "ok:_NAME=cjson _VERSION=2.1.0 decode=function decode_invalid_numbers=function decode_max_depth=function encode=function encode_invalid_numbers=function encode_keep_buffer=function encode_max_depth=function encode_number_precision=function encode_sparse_array=function new=function null=userdata"),
            (r#"return table.concat(cjson.decode("[0.0, -5e3, -1, 0.3e-3, 1023.2, 0e10]"), " ")"#, "ok:0 -5000 -1 0.0003 1023.2 0"),
            (r#"local decoded = cjson.decode('{"keya": "a", "keyb": "b"}') return decoded.keya .. decoded.keyb"#, "ok:ab"),
            (r#"local some_map = {s1="Some string", n1=100, a1={"Some","String","Array"}, nil1=nil, b1=true, b2=false} local encoded = cjson.encode(some_map) local decoded = cjson.decode(encoded) assert(table.concat(some_map) == table.concat(decoded)) cjson.encode_keep_buffer(false) encoded = cjson.encode(some_map) decoded = cjson.decode(encoded) assert(table.concat(some_map) == table.concat(decoded)) local table1 = {one="one", [1]="one"} encoded = cjson.encode(table1) decoded = cjson.decode(encoded) assert(decoded["one"] == table1["one"]) assert(decoded["1"] == table1[1]) local array1 = {[1]="one", [2]="two"} encoded = cjson.encode(array1) decoded = cjson.decode(encoded) assert(table.concat(array1) == table.concat(decoded)) local invalid_map = {} invalid_map[false] = "false" local ok, encoded = pcall(cjson.encode, invalid_map) assert(ok == false) cjson.encode_max_depth(1) ok, encoded = pcall(cjson.encode, some_map) assert(ok == false) cjson.decode_max_depth(1) ok, decoded = pcall(cjson.decode, '{"obj": {"array": [1,2,3,4]}}') assert(ok == false) ok, encoded = pcall(cjson.encode, {num1=0/0}) assert(ok == false) cjson.encode_invalid_numbers(true) ok, encoded = pcall(cjson.encode, {num1=0/0}) assert(ok == true) cjson.decode_max_depth(1000) cjson.encode_max_depth(1000) cjson.encode_invalid_numbers(false) cjson.encode_keep_buffer(true) return 'done'"#, "ok:done"),
            (r#"return cjson.encode({1,2,3})"#, "ok:[1,2,3]"),
            (r#"return cjson.encode({})"#, "ok:{}"),
            (r#"return cjson.encode({a = 1})"#, "ok:{\"a\":1}"),
            (r#"return cjson.encode({a = {b = {1, 2, {c = 'd'}}}})"#, "ok:{\"a\":{\"b\":[1,2,{\"c\":\"d\"}]}}"),
            (r#"return cjson.encode({1, nil, 3})"#, "ok:[1,null,3]"),
            (r#"return cjson.encode({[1] = 1, [5] = 5})"#, "ok:[1,null,null,null,5]"),
            (r#"return cjson.encode({[1] = 1, [10] = 10})"#, "ok:[1,null,null,null,null,null,null,null,null,10]"),
            (r#"return cjson.encode({[11] = 1})"#, "err:user_script:1: Cannot serialise table: excessively sparse array"),
            (r#"return cjson.encode({[3] = 1, [2] = 2})"#, "ok:[null,2,1]"),
            (r#"return cjson.encode({[1] = 1, a = 2})"#, "ok:{\"1\":1,\"a\":2}"),
            (r#"return cjson.encode({[0] = 1})"#, "ok:{\"0\":1}"),
            (r#"return cjson.encode({[-1] = 1})"#, "ok:{\"-1\":1}"),
            (r#"return cjson.encode({[1.5] = 1})"#, "ok:{\"1.5\":1}"),
            (r#"return cjson.encode({[2^31] = 1})"#, "ok:{\"2147483648\":1}"),
            (r#"return cjson.encode({[2^31] = 1, [1] = 2})"#, "ok:[2]"),
            (r#"return cjson.encode({[2^53] = 1})"#, "ok:{\"9.007199254741e+15\":1}"),
            (r#"return cjson.encode({[1/0] = 1})"#, "err:user_script:1: Cannot serialise number: must not be NaN or Inf"),
            (r#"return cjson.encode({[true] = 1})"#, "err:user_script:1: Cannot serialise boolean: table key must be a number or string"),
            (r#"return cjson.encode({[{}] = 1})"#, "err:user_script:1: Cannot serialise table: table key must be a number or string"),
            (r#"return cjson.encode({1, 2, tostring})"#, "err:user_script:1: Cannot serialise function: type not supported"),
            (r#"return cjson.encode(tostring)"#, "err:user_script:1: Cannot serialise function: type not supported"),
            (r#"return cjson.encode(coroutine.create(function() end))"#, "err:user_script:1: Cannot serialise thread: type not supported"),
            (r#"return cjson.encode(nil)"#, "ok:null"),
            (r#"return cjson.encode(cjson.null)"#, "ok:null"),
            (r#"return cjson.encode({cjson.null, cjson.null})"#, "ok:[null,null]"),
            (r#"return cjson.encode(true) .. cjson.encode(false)"#, "ok:truefalse"),
            (r#"return cjson.encode('abc')"#, "ok:\"abc\""),
            (r#"return hex(cjson.encode(string.char(127, 128, 255, 31, 47, 92, 34, 8, 9, 10, 11, 12, 13, 0, 1)))"#, "ok:225c753030376680ff5c75303031665c2f5c5c5c225c625c745c6e5c75303030625c665c725c75303030305c753030303122"),
            (r#"return cjson.encode('\226\130\172 caf\195\169')"#, "ok:\"€ café\""),
            (r#"return cjson.encode({0.125, 0.375, 2.5, 1e15, 1e16, 123456789012345678, 1e-5, 0.0001, 1/3, -1e300, 5e-324, 2^63, 100, -7, 0.1, 1e14, 99999999999999.5, 1e100})"#, "ok:[0.125,0.375,2.5,1e+15,1e+16,1.2345678901235e+17,1e-05,0.0001,0.33333333333333,-1e+300,4.9406564584125e-324,9.2233720368548e+18,100,-7,0.1,1e+14,1e+14,1e+100]"),
            (r#"return cjson.encode({3.14159265358979, 123456.789, 1e-4, 9.99999999999999e-5, 0.00001234, 12345678901234, 123456789012345})"#, "ok:[3.1415926535898,123456.789,0.0001,0.0001,1.234e-05,12345678901234,1.2345678901234e+14]"),
            (r#"return cjson.encode(1/0)"#, "err:user_script:1: Cannot serialise number: must not be NaN or Inf"),
            (r#"return cjson.encode(-1/0)"#, "err:user_script:1: Cannot serialise number: must not be NaN or Inf"),
            (r#"return cjson.encode(0/0)"#, "err:user_script:1: Cannot serialise number: must not be NaN or Inf"),
            (r#"return cjson.encode({num1 = 0/0})"#, "err:user_script:1: Cannot serialise number: must not be NaN or Inf"),
            (r#"return cjson.encode_invalid_numbers(true) .. ' ' .. cjson.encode({1/0, -1/0, 0/0, -(0/0)}) .. ' ' .. tostring(cjson.encode_invalid_numbers(false))"#, "err:user_script:1: attempt to concatenate a boolean value"),
            (r#"return cjson.encode_invalid_numbers('null') .. ' ' .. cjson.encode({1/0, -1/0, 0/0}) .. ' ' .. cjson.encode({[1/0] = 1}) .. ' ' .. tostring(cjson.encode_invalid_numbers('off'))"#, "ok:null [null,null,null] {\"null\":1} false"),
            (r#"return tostring(cjson.encode_invalid_numbers('on')) .. ' ' .. tostring(cjson.encode_invalid_numbers()) .. ' ' .. tostring(cjson.encode_invalid_numbers(false))"#, "ok:true true false"),
            (r#"return cjson.encode_invalid_numbers('maybe')"#, "err:user_script:1: bad argument #1 to 'encode_invalid_numbers' (invalid option 'maybe')"),
            (r#"return cjson.encode_invalid_numbers(1)"#, "err:user_script:1: bad argument #1 to 'encode_invalid_numbers' (invalid option '1')"),
            (r#"return cjson.encode_invalid_numbers({})"#, "err:user_script:1: bad argument #1 to 'encode_invalid_numbers' (string expected, got table)"),
            (r#"return cjson.encode_invalid_numbers(nil, 1)"#, "err:user_script:1: bad argument #2 to 'encode_invalid_numbers' (found too many arguments)"),
            (r#"return cjson.encode_number_precision(3) .. ' ' .. cjson.encode({0.125, 0.375, 3.14159, 1234.5, 1e-7, 123456, 0.0001235}) .. ' ' .. cjson.encode_number_precision(14)"#, "ok:3 [0.125,0.375,3.14,1.23e+03,1e-07,1.23e+05,0.000123] 14"),
            (r#"return cjson.encode_number_precision(1) .. ' ' .. cjson.encode({2.5, 3.5, 0.25, 15, 95, 0.05}) .. ' ' .. cjson.encode_number_precision(14)"#, "ok:1 [2,4,0.2,2e+01,1e+02,0.05] 14"),
            (r#"return cjson.encode_number_precision(2) .. ' ' .. cjson.encode({0.125, 0.375, 1.25, 2.675, 1.005}) .. ' ' .. cjson.encode_number_precision(14)"#, "ok:2 [0.12,0.38,1.2,2.7,1] 14"),
            (r#"return cjson.encode_number_precision(15)"#, "err:user_script:1: bad argument #1 to 'encode_number_precision' (expected integer between 1 and 14)"),
            (r#"return cjson.encode_number_precision(0)"#, "err:user_script:1: bad argument #1 to 'encode_number_precision' (expected integer between 1 and 14)"),
            (r#"return cjson.encode_number_precision('x')"#, "err:user_script:1: bad argument #1 to 'encode_number_precision' (number expected, got string)"),
            (r#"return cjson.encode_number_precision('5') .. cjson.encode(1/3) .. cjson.encode_number_precision(14)"#, "ok:50.3333314"),
            (r#"return cjson.encode_number_precision(2^32 + 5) .. cjson.encode(1/3) .. cjson.encode_number_precision(14)"#, "ok:50.3333314"),
            (r#"return cjson.encode_number_precision(7.9) .. cjson.encode(1/3) .. cjson.encode_number_precision(14)"#, "ok:70.333333314"),
            (r#"return cjson.encode_number_precision()"#, "ok:14"),
            (r#"return table.concat({tostring(cjson.encode_sparse_array())}, ',') .. ' ' .. select(2, cjson.encode_sparse_array()) .. ' ' .. select(3, cjson.encode_sparse_array())"#, "ok:false 2 10"),
            (r#"local a, b, c = cjson.encode_sparse_array(true, 3, 5) local r = tostring(a) .. b .. c .. ' ' .. cjson.encode({[1] = 1, [16] = 2}) .. ' ' .. cjson.encode({[1] = 1, [6] = 2}) .. ' ' .. cjson.encode({[1] = 1, [5] = 2}) cjson.encode_sparse_array(false, 2, 10) return r"#, "ok:true35 {\"1\":1,\"16\":2} [1,null,null,null,null,2] [1,null,null,null,2]"),
            (r#"local r = cjson.encode_sparse_array(false, 0) local s = #cjson.encode({[1000] = 1}) cjson.encode_sparse_array(false, 2, 10) return tostring(r) .. ' ' .. s"#, "ok:false 4998"),
            (r#"local r = cjson.encode_sparse_array(false, 1, 0) local s = cjson.encode({[1] = 1, [2] = 2}) .. cjson.encode({[2] = 1}) cjson.encode_sparse_array(false, 2, 10) return tostring(r) .. ' ' .. s"#, "err:user_script:1: Cannot serialise table: excessively sparse array"),
            (r#"return cjson.encode({[1] = 1, [100] = 2})"#, "err:user_script:1: Cannot serialise table: excessively sparse array"),
            (r#"return cjson.encode_sparse_array('on', -1)"#, "err:user_script:1: bad argument #1 to 'encode_sparse_array' (expected integer between 0 and 2147483647)"),
            (r#"return cjson.encode_sparse_array(nil, nil, -1)"#, "err:user_script:1: bad argument #1 to 'encode_sparse_array' (expected integer between 0 and 2147483647)"),
            (r#"return cjson.encode_sparse_array(1, 2, 3, 4)"#, "err:user_script:1: bad argument #4 to 'encode_sparse_array' (found too many arguments)"),
            (r#"return cjson.encode_sparse_array('yes')"#, "err:user_script:1: bad argument #1 to 'encode_sparse_array' (invalid option 'yes')"),
            (r#"return tostring(cjson.encode_sparse_array(nil, 2^31 - 1)) .. cjson.encode({[1] = 1, [200] = 2}) .. tostring(cjson.encode_sparse_array(nil, 2))"#, "ok:true{\"1\":1,\"200\":2}true"),
            (r#"return cjson.encode_max_depth() .. cjson.decode_max_depth()"#, "ok:10001000"),
            (r#"return cjson.encode_max_depth(0)"#, "err:user_script:1: bad argument #1 to 'encode_max_depth' (expected integer between 1 and 2147483647)"),
            (r#"return cjson.encode_max_depth(-5)"#, "err:user_script:1: bad argument #1 to 'encode_max_depth' (expected integer between 1 and 2147483647)"),
            (r#"return cjson.decode_max_depth(0)"#, "err:user_script:1: bad argument #1 to 'decode_max_depth' (expected integer between 1 and 2147483647)"),
            (r#"return cjson.encode_max_depth(2) .. ' ' .. cjson.encode({{1}}) .. ' ' .. tostring(pcall(cjson.encode, {{{1}}})) .. ' ' .. cjson.encode_max_depth(1000)"#, "ok:2 [[1]] false 1000"),
            (r#"return cjson.encode_max_depth(2) .. ' ' .. select(2, pcall(cjson.encode, {{{1}}})) .. ' ' .. cjson.encode_max_depth(1000)"#, "ok:2 Cannot serialise, excessive nesting (3) 1000"),
            (r#"local t = {} t[1] = t return cjson.encode(t)"#, "err:user_script:1: Cannot serialise, excessive nesting (1001)"),
            (r#"local t = {} t.a = t return cjson.encode(t)"#, "err:user_script:1: Cannot serialise, excessive nesting (1001)"),
            (r#"cjson.encode_max_depth(100000) local t = {} t[1] = t local ok, e = pcall(cjson.encode, t) cjson.encode_max_depth(1000) return e"#, "ok:Cannot serialise, excessive nesting (7998)"),
            (r#"cjson.encode_max_depth(100000) local t = {} t.a = t local ok, e = pcall(cjson.encode, t) cjson.encode_max_depth(1000) return e"#, "ok:Cannot serialise, excessive nesting (4000)"),
            (r#"cjson.encode_max_depth(100000) local t = {} local c = t for i = 1, 7996 do c[1] = {} c = c[1] end local ok, e = pcall(cjson.encode, t) cjson.encode_max_depth(1000) return tostring(ok) .. ' ' .. (ok and #e or e)"#, "ok:true 15994"),
            (r#"cjson.encode_max_depth(100000) local t = {} local c = t for i = 1, 7995 do c[1] = {} c = c[1] end local ok, e = pcall(cjson.encode, t) cjson.encode_max_depth(1000) return tostring(ok) .. ' ' .. (ok and #e or e)"#, "ok:true 15992"),
            (r#"cjson.encode_max_depth(100000) local t = {} local c = t for i = 1, 3997 do c.a = {} c = c.a end local ok, e = pcall(cjson.encode, t) cjson.encode_max_depth(1000) return tostring(ok) .. ' ' .. (ok and #e or e)"#, "ok:true 23984"),
            (r#"cjson.encode_max_depth(100000) local t = {} local c = t for i = 1, 3996 do c.a = {} c = c.a end local ok, e = pcall(cjson.encode, t) cjson.encode_max_depth(1000) return tostring(ok) .. ' ' .. (ok and #e or e)"#, "ok:true 23978"),
            (r#"return cjson.encode()"#, "err:user_script:1: bad argument #1 to 'encode' (expected 1 argument)"),
            (r#"return cjson.encode(1, 2)"#, "err:user_script:1: bad argument #1 to 'encode' (expected 1 argument)"),
            (r#"return cjson.encode(12)"#, "ok:12"),
            (r#"return cjson.decode()"#, "err:user_script:1: bad argument #1 to 'decode' (expected 1 argument)"),
            (r#"return cjson.decode('1', 2)"#, "err:user_script:1: bad argument #1 to 'decode' (expected 1 argument)"),
            (r#"return cjson.decode({})"#, "err:user_script:1: bad argument #1 to 'decode' (string expected, got table)"),
            (r#"return cjson.decode(12) + 1"#, "ok:13"),
            (r#"return cjson.decode('[1,]')"#, "err:user_script:1: Expected value but found T_ARR_END at character 4"),
            (r#"return cjson.decode('{"a" 1}')"#, "err:user_script:1: Expected colon but found T_NUMBER at character 6"),
            (r#"return cjson.decode('{1:2}')"#, "err:user_script:1: Expected object key string but found T_NUMBER at character 2"),
            (r#"return cjson.decode('[1 2]')"#, "err:user_script:1: Expected comma or array end but found T_NUMBER at character 4"),
            (r#"return cjson.decode('{"a":1 "b":2}')"#, "err:user_script:1: Expected comma or object end but found T_STRING at character 8"),
            (r#"return cjson.decode('{"a":1,}')"#, "err:user_script:1: Expected object key string but found T_OBJ_END at character 8"),
            (r#"return cjson.decode('')"#, "err:user_script:1: Expected value but found T_END at character 1"),
            (r#"return cjson.decode('  ')"#, "err:user_script:1: Expected value but found T_END at character 3"),
            (r#"return cjson.decode('"abc')"#, "err:user_script:1: Expected value but found unexpected end of string at character 5"),
            (r#"return cjson.decode('"a\\qb"')"#, "err:user_script:1: Expected value but found invalid escape code at character 3"),
            (r#"return cjson.decode('"a\\ud800b"')"#, "err:user_script:1: Expected value but found invalid unicode escape code at character 3"),
            (r#"return cjson.decode('"a\\udc00\\ud800"')"#, "err:user_script:1: Expected value but found invalid unicode escape code at character 3"),
            (r#"return cjson.decode('"\\ud800\\u0041"')"#, "err:user_script:1: Expected value but found invalid unicode escape code at character 2"),
            (r#"return cjson.decode('"\\u00zz"')"#, "err:user_script:1: Expected value but found invalid unicode escape code at character 2"),
            (r#"return cjson.decode('"\\u12"')"#, "err:user_script:1: Expected value but found invalid unicode escape code at character 2"),
            (r#"return cjson.decode('"abc\\')"#, "err:user_script:1: Expected value but found invalid escape code at character 5"),
            (r#"return hex(cjson.decode('"\\u0041\\u00e9\\u20ac\\ud83d\\ude00\\u0000\\/\\b\\f\\n\\r\\t\\"\\\\"'))"#, "ok:41c3a9e282acf09f9880002f080c0a0d09225c"),
            (r#"return hex(cjson.decode('"\\uD83D\\uDE00"'))"#, "ok:f09f9880"),
            (r#"return cjson.decode('[1] x')"#, "err:user_script:1: Expected the end but found invalid token at character 5"),
            (r#"return cjson.decode('{"a":1,"a":2}').a"#, "ok:2"),
            (r#"return tostring(cjson.decode('[1e400, -1e400]')[1]) .. tostring(cjson.decode('[1e400, -1e400]')[2])"#, "ok:inf-inf"),
            (r#"return cjson.decode('0x10') .. ' ' .. cjson.decode('-0x10') .. ' ' .. cjson.decode('0x1p4') .. ' ' .. cjson.decode('0x1.8') .. ' ' .. cjson.decode('0XfF') .. ' ' .. cjson.decode('0x.8p1')"#, "ok:16 -16 16 1.5 255 1"),
            (r#"return tostring(cjson.decode('NaN')) .. ' ' .. tostring(cjson.decode('-nan')) .. ' ' .. tostring(cjson.decode('Infinity')) .. ' ' .. tostring(cjson.decode('-Infinity')) .. ' ' .. tostring(cjson.decode('inf')) .. ' ' .. tostring(cjson.decode('nan(123)'))"#, "ok:nan -nan inf -inf inf nan"),
            (r#"return cjson.decode('infinit')"#, "err:user_script:1: Expected the end but found invalid token at character 4"),
            (r#"return cjson.decode('nan(12')"#, "err:user_script:1: Expected the end but found invalid token at character 4"),
            (r#"return cjson.decode('0x')"#, "err:user_script:1: Expected the end but found invalid token at character 2"),
            (r#"return cjson.decode('0xg')"#, "err:user_script:1: Expected the end but found invalid token at character 2"),
            (r#"return cjson.decode('+1') .. ' ' .. cjson.decode('01') .. ' ' .. cjson.decode('1.') .. ' ' .. cjson.decode('-.5') .. ' ' .. cjson.decode('1e5') .. ' ' .. cjson.decode('1E+2') .. ' ' .. cjson.decode('2e-2') .. ' ' .. cjson.decode('00012')"#, "ok:1 1 1 -0.5 100000 100 0.02 12"),
            (r#"return cjson.decode('.5')"#, "err:user_script:1: Expected value but found invalid token at character 1"),
            (r#"return cjson.decode('-')"#, "err:user_script:1: Expected value but found invalid number at character 1"),
            (r#"return cjson.decode('- 1')"#, "err:user_script:1: Expected value but found invalid number at character 1"),
            (r#"return cjson.decode('1e')"#, "err:user_script:1: Expected the end but found invalid token at character 2"),
            (r#"return cjson.decode('1e+')"#, "err:user_script:1: Expected the end but found invalid token at character 2"),
            (r#"return cjson.decode('1.e3')"#, "ok:1000"),
            (r#"return cjson.decode('--1')"#, "err:user_script:1: Expected value but found invalid number at character 1"),
            (r#"return cjson.decode('nul')"#, "err:user_script:1: Expected value but found invalid token at character 1"),
            (r#"return cjson.decode('truex')"#, "err:user_script:1: Expected the end but found invalid token at character 5"),
            (r#"return cjson.decode('True')"#, "err:user_script:1: Expected value but found invalid token at character 1"),
            (r#"return cjson.decode('tru')"#, "err:user_script:1: Expected value but found invalid token at character 1"),
            (r#"return cjson.decode('fals')"#, "err:user_script:1: Expected value but found invalid token at character 1"),
            (r#"return cjson.decode('Null')"#, "err:user_script:1: Expected value but found invalid token at character 1"),
            (r#"return cjson.decode('N')"#, "err:user_script:1: Expected value but found invalid token at character 1"),
            (r#"return cjson.decode('I')"#, "err:user_script:1: Expected value but found invalid token at character 1"),
            (r#"return tostring(cjson.decode('null') == cjson.null) .. ' ' .. tostring(cjson.decode('true')) .. ' ' .. tostring(cjson.decode('false')) .. ' ' .. type(cjson.decode('null'))"#, "ok:true true false userdata"),
            (r#"local t = cjson.decode('{"a":null,"b":[null,1]}') return tostring(t.a == cjson.null) .. tostring(t.b[1] == cjson.null) .. #t.b"#, "ok:truetrue2"),
            (r#"return cjson.decode('1\0garbage')"#, "err:user_script:1: JSON parser does not support UTF-16 or UTF-32"),
            (r#"return cjson.decode('"a\0b"')"#, "err:user_script:1: Expected value but found unexpected end of string at character 3"),
            (r#"return cjson.decode('\0a')"#, "err:user_script:1: JSON parser does not support UTF-16 or UTF-32"),
            (r#"return cjson.decode('a\0')"#, "err:user_script:1: JSON parser does not support UTF-16 or UTF-32"),
            (r#"return cjson.decode(' \t\r\n 5 \t\r\n ')"#, "ok:5"),
            (r#"return cjson.decode('\f5')"#, "err:user_script:1: Expected value but found invalid token at character 1"),
            (r#"return cjson.decode('[1,2,3,[4,5,{"x":[6]}]]')[4][3].x[1]"#, "ok:6"),
            (r#"return #cjson.decode('[]') .. next(cjson.decode('{}'), nil) == nil"#, "err:user_script:1: attempt to concatenate a nil value"),
            (r#"return cjson.encode(cjson.decode('{}')) .. cjson.encode(cjson.decode('[]'))"#, "ok:{}{}"),
            (r#"return cjson.decode('\255')"#, "err:user_script:1: Expected value but found invalid token at character 1"),
            (r#"return hex(cjson.decode('"\255\254"'))"#, "ok:fffe"),
            (r#"return cjson.decode('[' .. string.rep('[', 998) .. string.rep(']', 998) .. ']') and 'ok'"#, "ok:ok"),
            (r#"return cjson.decode(string.rep('[', 1000) .. string.rep(']', 1000)) and 'ok'"#, "ok:ok"),
            (r#"return cjson.decode(string.rep('[', 1001) .. string.rep(']', 1001)) and 'ok'"#, "err:user_script:1: Found too many nested data structures (1001) at character 1001"),
            (r#"return cjson.decode(string.rep('{"a":', 1001) .. '1' .. string.rep('}', 1001)) and 'ok'"#, "err:user_script:1: Found too many nested data structures (1001) at character 5001"),
            (r#"cjson.decode_max_depth(100000) local ok, e = pcall(cjson.decode, string.rep('[', 7998) .. string.rep(']', 7998)) cjson.decode_max_depth(1000) return tostring(ok) .. ' ' .. (ok and type(e) or e)"#, "ok:true table"),
            (r#"cjson.decode_max_depth(100000) local ok, e = pcall(cjson.decode, string.rep('[', 7999) .. string.rep(']', 7999)) cjson.decode_max_depth(1000) return tostring(ok) .. ' ' .. (ok and type(e) or e)"#, "ok:false Found too many nested data structures (7999) at character 7999"),
            (r#"cjson.decode_max_depth(100000) local ok, e = pcall(cjson.decode, string.rep('{"a":', 3998) .. '1' .. string.rep('}', 3998)) cjson.decode_max_depth(1000) return tostring(ok) .. ' ' .. (ok and type(e) or e)"#, "ok:true table"),
            (r#"cjson.decode_max_depth(100000) local ok, e = pcall(cjson.decode, string.rep('{"a":', 3999) .. '1' .. string.rep('}', 3999)) cjson.decode_max_depth(1000) return tostring(ok) .. ' ' .. (ok and type(e) or e)"#, "ok:true table"),
            (r#"cjson.decode_max_depth(100000) local ok, e = pcall(cjson.decode, string.rep('[{"a":', 2665) .. '1' .. string.rep('}]', 2665)) cjson.decode_max_depth(1000) return tostring(ok) .. ' ' .. (ok and type(e) or e)"#, "ok:true table"),
            (r#"cjson.decode_max_depth(100000) local ok, e = pcall(cjson.decode, string.rep('[{"a":', 2666) .. '1' .. string.rep('}]', 2666)) cjson.decode_max_depth(1000) return tostring(ok) .. ' ' .. (ok and type(e) or e)"#, "ok:true table"),
            (r#"cjson.decode_max_depth(1) local ok, e = pcall(cjson.decode, '{"obj": {"array": [1,2,3,4]}}') cjson.decode_max_depth(1000) return e"#, "ok:Found too many nested data structures (2) at character 9"),
            (r#"cjson.decode_max_depth(2) local ok, e = pcall(cjson.decode, '[[ [1]]]') cjson.decode_max_depth(1000) return e"#, "ok:Found too many nested data structures (3) at character 4"),
            (r#"return tostring(cjson.decode_invalid_numbers()) .. tostring(cjson.decode_invalid_numbers(false)) .. ' ' .. table.concat({pcall(cjson.decode, '0x10')}, ' ') .. ' ' .. table.concat({pcall(cjson.decode, 'NaN')}, ' ') .. ' ' .. table.concat({pcall(cjson.decode, '+1')}, ' ') .. ' ' .. table.concat({pcall(cjson.decode, '01')}, ' ') .. ' ' .. table.concat({pcall(cjson.decode, '-Inf')}, ' ') .. ' ' .. table.concat({pcall(cjson.decode, '1.5')}, ' ') .. ' ' .. table.concat({pcall(cjson.decode, '-0')}, ' ') .. tostring(cjson.decode_invalid_numbers(true))"#, "err:user_script:1: invalid value (boolean) at index 1 in table for 'concat'"),
            (r#"return tostring(cjson.decode_invalid_numbers('off')) .. table.concat({pcall(cjson.decode, '[1, -01]')}, ' ') .. tostring(cjson.decode_invalid_numbers('on'))"#, "err:user_script:1: invalid value (boolean) at index 1 in table for 'concat'"),
            (r#"local j = cjson.new() j.encode_number_precision(3) local r = j.encode(1/3) .. ' ' .. cjson.encode(1/3) .. ' ' .. tostring(j.null == cjson.null) .. ' ' .. j._VERSION .. ' ' .. type(j.new()) return r"#, "ok:0.333 0.33333333333333 true 2.1.0 table"),
            (r#"local j = cjson.new() local k = j.new() k.encode_sparse_array(true) return k.encode({[1] = 1, [20] = 2}) .. ' ' .. select(2, pcall(j.encode, {[1] = 1, [20] = 2}))"#, "ok:{\"1\":1,\"20\":2} Cannot serialise table: excessively sparse array"),
            (r#"return cjson.new(1, 2) ~= nil"#, "ok:true"),
            (r#"local t = cjson.decode('{"b":1,"a":2,"c":3,"d":4,"e":5}') return cjson.encode(t)"#, "ok:{\"a\":2,\"c\":3,\"b\":1,\"e\":5,\"d\":4}"),
            (r#"local t = {} for i = 1, 20 do t['k' .. i] = i end return cjson.encode(t)"#, "ok:{\"k16\":16,\"k19\":19,\"k11\":11,\"k17\":17,\"k15\":15,\"k20\":20,\"k10\":10,\"k8\":8,\"k1\":1,\"k12\":12,\"k3\":3,\"k2\":2,\"k9\":9,\"k13\":13,\"k18\":18,\"k14\":14,\"k6\":6,\"k7\":7,\"k4\":4,\"k5\":5}"),
            (r#"return cjson.encode({['a/b'] = 'c"d', [10] = 'x', [2.5] = 'y', [-3] = 'z'})"#, "ok:{\"-3\":\"z\",\"10\":\"x\",\"a\\/b\":\"c\\\"d\",\"2.5\":\"y\"}"),
            (r#"return cjson.encode(cjson.decode('{"a":[1,2,{"b":null}],"c":"\\u00e9"}'))"#, "ok:{\"a\":[1,2,{\"b\":null}],\"c\":\"é\"}"),
            (r#"return cjson.encode({[1] = 'a', [2] = 'b', [4] = 'd'})"#, "ok:[\"a\",\"b\",null,\"d\"]"),
            (r#"return cjson.encode({[1] = 'a', [2] = 'b', x = 1})"#, "ok:{\"1\":\"a\",\"2\":\"b\",\"x\":1}"),
            (r#"local t = setmetatable({}, {__index = function() return 1 end}) t[1] = 5 return cjson.encode(t)"#, "ok:[5]"),
            (r#"return cjson.encode(string.rep('a', 3))"#, "ok:\"aaa\""),
            (r#"return cjson.decode(cjson.encode(string.rep('\1\2\255', 100))) == string.rep('\1\2\255', 100)"#, "ok:true"),
            (r#"cjson.decode_max_depth(100000) local ok, e = pcall(cjson.decode, string.rep('{"a":', 4000) .. '1' .. string.rep('}', 4000)) cjson.decode_max_depth(1000) return tostring(ok) .. ' ' .. (ok and type(e) or e)"#, "ok:false Found too many nested data structures (4000) at character 19996"),
            (r#"cjson.decode_max_depth(100000) local ok, e = pcall(cjson.decode, string.rep('{"a":', 5332) .. '1' .. string.rep('}', 5332)) cjson.decode_max_depth(1000) return tostring(ok) .. ' ' .. (ok and type(e) or e)"#, "ok:false Found too many nested data structures (4000) at character 19996"),
            (r#"cjson.decode_max_depth(100000) local ok, e = pcall(cjson.decode, string.rep('{"a":', 5333) .. '1' .. string.rep('}', 5333)) cjson.decode_max_depth(1000) return tostring(ok) .. ' ' .. (ok and type(e) or e)"#, "ok:false Found too many nested data structures (4000) at character 19996"),
            (r#"cjson.decode_max_depth(100000) local ok, e = pcall(cjson.decode, string.rep('{"a":', 7997) .. '1' .. string.rep('}', 7997)) cjson.decode_max_depth(1000) return tostring(ok) .. ' ' .. (ok and type(e) or e)"#, "ok:false Found too many nested data structures (4000) at character 19996"),
            (r#"cjson.decode_max_depth(100000) local ok, e = pcall(cjson.decode, string.rep('{"a":', 7998) .. '1' .. string.rep('}', 7998)) cjson.decode_max_depth(1000) return tostring(ok) .. ' ' .. (ok and type(e) or e)"#, "ok:false Found too many nested data structures (4000) at character 19996"),
            (r#"return cjson.encode(-0) .. ' ' .. cjson.encode({-0, 1e-300, -1e-20, 0}) .. ' ' .. cjson.encode({a = -0})"#, "ok:-0 [-0,1e-300,-1e-20,-0] {\"a\":-0}"),
            (r#"return cjson.encode(0) .. cjson.encode({[1e-300] = 1, [-1e-300] = 2} and {})"#, "ok:0{}"),
            (r#"local t = {} for i = 1, 5000 do t['key' .. i] = 'value' .. i end return #cjson.encode(t)"#, "ok:107787"),
            (r#"local t = {} for i = 1, 5000 do t['key' .. i] = {i} end return #cjson.encode(t)"#, "ok:82787"),
            (r#"local t = {} for i = 1, 20000 do t[i] = 'v' .. i end return #cjson.encode(t)"#, "ok:168895"),
            (r#"local t = cjson.decode(cjson.encode({a = {1, 2, {b = 'c'}}, d = 'e'})) return t.a[3].b .. t.d"#, "ok:ce"),
            (r#"return select('#', cjson.encode_sparse_array())"#, "ok:3"),]
    }

    use super::super::bit::tests::survives;
    use mlua::Value;

    const JSON: &[u8] =
        b"{}[]:,\"\\/ubfnrtu0123456789abcdefABCDEF+-.eExXpPinfINFaltrsNu\x00\xff \n";

    #[test]
    fn random_input_never_panics() {
        survives("cjson.decode", 50000, |lua, rng| {
            vec![Value::String(
                lua.create_string(rng.bytes(JSON, 30)).expect("json"),
            )]
        });
    }

    #[test]
    fn format_g_matches_printf() {
        use super::format_g;
        let cases: [(f64, usize, &str); 12] = [
            (0.1, 14, "0.1"),
            (1.0 / 3.0, 14, "0.33333333333333"),
            (1e15, 14, "1e+15"),
            (123456789012345678.0, 14, "1.2345678901235e+17"),
            (1e-5, 14, "1e-05"),
            (0.0001, 14, "0.0001"),
            (-1e300, 14, "-1e+300"),
            (99999999999999.5, 14, "1e+14"),
            (0.125, 2, "0.12"),
            (2.5, 1, "2"),
            (-0.0, 14, "-0"),
            (f64::INFINITY, 14, "inf"),
        ];
        for (n, precision, expected) in cases {
            assert_eq!(format_g(n, precision), expected, "{n} at {precision}");
        }
    }

    #[test]
    fn matches_redis() {
        super::super::bit::tests::check(cases());
    }
}
