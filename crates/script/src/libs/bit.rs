//! `bit`: LuaBitOp 1.0.2, the bitwise operations Redis bundles
//! (`deps/lua/src/lua_bit.c`), as the global table `bit` with `tobit`,
//! `tohex`, `bnot`, `band`, `bor`, `bxor`, `lshift`, `rshift`, `arshift`,
//! `rol`, `ror` and `bswap`.
//!
//! Every operand is first normalized to a 32-bit integer the way LuaBitOp
//! does it: the Lua number (a double; a string is converted as
//! `lua_tonumber` would) is added to 2^52 + 2^51 and the low 32 bits of the
//! sum's representation are the operand. That rounds to nearest-even, wraps
//! modulo 2^32, maps NaN and the infinities to 0 and keeps only the low bits
//! of huge values, so `tobit(2^32 + 5) == 5`. Results are returned as signed
//! 32-bit numbers. A value that is neither a number nor a numeric string
//! raises `bad argument #n to 'f' (number expected, got <type>)`.
//!
//! This file also holds what the four libraries share:
//! - [`lib_function`], their calling convention: a library function written
//!   in Rust returns a [`Failure`] for what the C library reports with
//!   `luaL_error` or `luaL_argerror`, and a small C trampoline raises it as
//!   a Lua string error from the frame the script called, so the message
//!   carries the caller's position (`user_script:1: ...`) and the
//!   function's name exactly as Lua computes them for a C function (raising
//!   from Rust directly would hand scripts a userdata, not a string);
//! - exact numbers: mlua reads a number within 2^-52 of an integer as that
//!   integer, so -0 and magnitudes below 2^-52 arrive as 0; the trampoline
//!   notes such arguments and [`exact_value`] re-reads such table fields,
//!   so they print and pack as in Redis (table keys are still read as 0);
//! - bounded handles: every value Rust holds takes a slot of mlua's
//!   reference stack (8000 slots, like Lua's C stack), so walks through
//!   nested tables keep the ancestors beyond the first 64 in a Lua table
//!   ([`Ancestors`]) and functions returning thousands of values build
//!   them in one ([`Results`]), which lets them reach the C code's limits.

use std::cell::RefCell;
use std::ffi::{c_int, c_void};

use mlua::{ffi, Function, LightUserData, Lua, MultiValue, Table, Value};

/// What a library function reports instead of its results.
pub(super) enum Failure {
    /// `luaL_error(L, msg)`: the caller's position, then the message.
    Message(Vec<u8>),
    /// `luaL_argerror(L, arg, msg)`: `bad argument #arg to 'name' (msg)`.
    Argument(i64, Vec<u8>),
    /// An error Lua itself raises inside the C function (`table index is
    /// nil`): the message alone, no position.
    Raw(Vec<u8>),
    /// An error of the binding itself (memory), raised as mlua raises it.
    Lua(mlua::Error),
}

impl From<mlua::Error> for Failure {
    fn from(err: mlua::Error) -> Self {
        Failure::Lua(err)
    }
}

pub(super) type LibResult<T> = Result<T, Failure>;

/// `luaL_error` with a formatted message.
pub(super) fn message<T>(msg: impl Into<Vec<u8>>) -> LibResult<T> {
    Err(Failure::Message(msg.into()))
}

/// An error raised by Lua itself inside the C function: no position.
pub(super) fn raw_error<T>(msg: impl Into<Vec<u8>>) -> LibResult<T> {
    Err(Failure::Raw(msg.into()))
}

/// `luaL_argerror` for argument `arg` (1-based).
pub(super) fn arg_error<T>(arg: usize, msg: impl Into<Vec<u8>>) -> LibResult<T> {
    Err(Failure::Argument(arg as i64, msg.into()))
}

/// `luaL_typerror`: `<expected> expected, got <type of the argument>`.
pub(super) fn type_error<T>(args: &MultiValue, arg: usize, expected: &str) -> LibResult<T> {
    let got = args.get(arg - 1).map_or("no value", type_name);
    arg_error(arg, format!("{expected} expected, got {got}"))
}

/// The name `lua_typename` gives a value's type.
pub(super) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Nil => "nil",
        Value::Boolean(_) => "boolean",
        Value::LightUserData(_) | Value::UserData(_) => "userdata",
        Value::Integer(_) | Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Table(_) => "table",
        Value::Function(_) => "function",
        Value::Thread(_) => "thread",
        _ => "userdata",
    }
}

/// `lua_tonumber`: numbers, and strings Lua reads as numbers.
pub(super) fn to_number(lua: &Lua, value: Option<&Value>) -> LibResult<Option<f64>> {
    Ok(match value {
        Some(Value::Integer(i)) => Some(*i as f64),
        Some(Value::Number(n)) => Some(*n),
        Some(v @ Value::String(_)) => lua.coerce_number(v.clone())?,
        _ => None,
    })
}

/// `luaL_checknumber` for argument `arg` (1-based).
pub(super) fn check_number(lua: &Lua, args: &MultiValue, arg: usize) -> LibResult<f64> {
    match to_number(lua, args.get(arg - 1))? {
        Some(n) if n == 0.0 => Ok(exact_arg(arg).unwrap_or(n)),
        Some(n) => Ok(n),
        None => type_error(args, arg, "number"),
    }
}

// mlua reads a Lua number as an integer when it is within 2^-52 of one, so
// -0 and the numbers of magnitude below 2^-52 all arrive as `Integer(0)`.
// The libraries print and pack those exactly, so where a 0 arrives they
// ask again: the trampoline notes such arguments before the call, and
// `exact_value` reads a table field natively.

thread_local! {
    /// The arguments of the library call running on this thread that mlua
    /// reads as 0 though they are not: (1-based position, exact value).
    /// One record, not a stack: a library call made from inside another
    /// (a `__gc` metamethod run by an allocation) leaves the outer one
    /// with none, which reads those arguments as 0 as mlua does.
    static EXACT_ARGS: RefCell<Vec<(usize, f64)>> = const { RefCell::new(Vec::new()) };
}

/// Whether mlua reads `n` as `Integer(0)` though it is not +0.
fn reads_as_zero(n: f64) -> bool {
    if n == 0.0 {
        n.is_sign_negative()
    } else {
        n.abs() < f64::EPSILON
    }
}

/// The exact value of argument `arg` (1-based) when mlua read it as 0.
pub(super) fn exact_arg(arg: usize) -> Option<f64> {
    EXACT_ARGS.with(|exact| {
        exact
            .borrow()
            .iter()
            .find(|(i, _)| *i == arg)
            .map(|(_, n)| *n)
    })
}

/// Argument `arg` (1-based) as a value, a number read as 0 made exact.
pub(super) fn exact_arg_value(args: &MultiValue, arg: usize) -> Value {
    match args.get(arg - 1) {
        Some(Value::Integer(0)) => exact_arg(arg).map_or(Value::Integer(0), Value::Number),
        Some(value) => value.clone(),
        None => Value::Nil,
    }
}

/// `value`, read from `table[key]`, made exact if mlua read it as 0.
pub(super) fn exact_value(
    lua: &Lua,
    table: &Table,
    key: &Value,
    value: Value,
) -> mlua::Result<Value> {
    if !matches!(value, Value::Integer(0)) {
        return Ok(value);
    }
    let mut exact = 0.0;
    // SAFETY: exec_raw pushed the table and the key; rawget replaces the
    // key by the value, which is read and left for exec_raw to drop.
    unsafe {
        lua.exec_raw::<()>((table, key), |state| {
            ffi::lua_rawget(state, -2);
            exact = ffi::lua_tonumber(state, -1);
            ffi::lua_settop(state, 0);
        })?;
    }
    Ok(if reads_as_zero(exact) {
        Value::Number(exact)
    } else {
        value
    })
}

/// `luaL_checklstring` for argument `arg` (1-based): strings, and numbers
/// converted as Lua converts them.
pub(super) fn check_bytes(lua: &Lua, args: &MultiValue, arg: usize) -> LibResult<mlua::String> {
    match args.get(arg - 1) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Integer(_) | Value::Number(_)) => {
            match lua.coerce_string(exact_arg_value(args, arg))? {
                Some(s) => Ok(s),
                None => type_error(args, arg, "string"),
            }
        }
        _ => type_error(args, arg, "string"),
    }
}

/// Addresses marking what the Rust function hands the trampoline instead
/// of its plain results: a failure (mark, arg or nil, message), or results
/// too many for its own frame (mark, table of them, count).
static FAILURE_MARK: u8 = 0;
static SPILL_MARK: u8 = 0;

fn mark(of: &'static u8) -> *mut c_void {
    std::ptr::from_ref(of) as *mut c_void
}

/// The most bytes an encoder (`cjson.encode`, `cmsgpack.pack`) produces
/// before it gives up: Redis's default `proto-max-bulk-len`. The C
/// libraries have no limit (a self-referencing table packs into
/// exponentially many bytes), keel bounds what a script can allocate.
pub(super) const MAX_OUTPUT: usize = 512 << 20;

/// Results beyond this many travel in a table: the Rust function's frame
/// also holds its arguments, the trampoline's only the results, so this
/// keeps Lua 5.1's 8000-slot limit of a C frame for the results alone.
const SPILL_OVER: usize = 16;

/// Whether value `idx` is the light userdata `of`.
unsafe fn is_mark(state: *mut ffi::lua_State, idx: c_int, of: &'static u8) -> bool {
    ffi::lua_type(state, idx) == ffi::LUA_TLIGHTUSERDATA
        && ffi::lua_touserdata(state, idx) == mark(of)
}

/// Calls its upvalue (the Rust function) with its own arguments, then
/// raises its failure as the C library would from this frame, or returns
/// its results.
unsafe extern "C-unwind" fn raise_failures(state: *mut ffi::lua_State) -> c_int {
    let nargs = ffi::lua_gettop(state);
    // Nothing owning memory lives in this frame: lua_call may longjmp out.
    EXACT_ARGS.with(|exact| {
        let mut exact = exact.borrow_mut();
        exact.clear();
        for i in 1..=nargs {
            if ffi::lua_type(state, i) == ffi::LUA_TNUMBER {
                let n = ffi::lua_tonumber(state, i);
                if reads_as_zero(n) {
                    exact.push((i as usize, n));
                }
            }
        }
    });
    ffi::lua_pushvalue(state, ffi::lua_upvalueindex(1));
    ffi::lua_insert(state, 1);
    ffi::lua_call(state, nargs, ffi::LUA_MULTRET);
    EXACT_ARGS.with(|exact| exact.borrow_mut().clear());
    let nresults = ffi::lua_gettop(state);
    if nresults != 3 {
        return nresults;
    }
    if is_mark(state, 1, &FAILURE_MARK) {
        if ffi::lua_isboolean(state, 2) != 0 {
            ffi::lua_settop(state, 3);
            ffi::lua_error(state);
        }
        if ffi::lua_isnil(state, 2) != 0 {
            ffi::luaL_where(state, 1);
            ffi::lua_pushvalue(state, 3);
            ffi::lua_concat(state, 2);
            ffi::lua_error(state);
        }
        let arg = ffi::lua_tointeger(state, 2) as c_int;
        let msg = ffi::lua_tolstring(state, 3, std::ptr::null_mut());
        ffi::luaL_argerror(state, arg, msg);
    }
    if is_mark(state, 1, &SPILL_MARK) {
        let count = ffi::lua_tointeger(state, 3) as c_int;
        ffi::lua_settop(state, 2);
        ffi::lua_remove(state, 1);
        if ffi::lua_checkstack(state, count) == 0 {
            ffi::luaL_error(state, c"stack overflow (too many results)".as_ptr());
        }
        for i in 1..=count {
            ffi::lua_rawgeti(state, 1, ffi::lua_Integer::from(i));
        }
        return count;
    }
    nresults
}

/// A Lua function running `f`, whose failures become Lua string errors
/// raised from the calling frame, as the C library raises them.
pub(super) fn lib_function<F>(lua: &Lua, f: F) -> mlua::Result<Function>
where
    F: Fn(&Lua, MultiValue) -> LibResult<MultiValue> + Send + 'static,
{
    let inner = lua.create_function(move |lua, args: MultiValue| {
        let (arg, msg) = match f(lua, args) {
            Ok(results) if results.len() > SPILL_OVER => {
                let mut spilled = Results::new(lua)?;
                for value in results {
                    spilled.push(value)?;
                }
                return Ok(spilled.into_multi());
            }
            Ok(results) => return Ok(results),
            Err(Failure::Lua(err)) => return Err(err),
            Err(Failure::Message(msg)) => (Value::Nil, msg),
            Err(Failure::Raw(msg)) => (Value::Boolean(false), msg),
            Err(Failure::Argument(arg, msg)) => (Value::Integer(arg), msg),
        };
        let mark = Value::LightUserData(LightUserData(mark(&FAILURE_MARK)));
        let msg = Value::String(lua.create_string(msg)?);
        Ok(MultiValue::from_vec(vec![mark, arg, msg]))
    })?;
    // SAFETY: the closure pops the function exec_raw pushed and leaves one
    // value, the C closure, which is what we read back.
    unsafe {
        lua.exec_raw::<Function>(inner, |state| {
            ffi::lua_pushcclosure(state, raise_failures, 1);
        })
    }
}

/// Builds a table of library functions.
pub(super) fn lib_table<F>(lua: &Lua, functions: &[(&str, F)]) -> mlua::Result<Table>
where
    F: Fn(&Lua, MultiValue) -> LibResult<MultiValue> + Send + Copy + 'static,
{
    let table = lua.create_table()?;
    for (name, f) in functions {
        table.raw_set(*name, lib_function(lua, *f)?)?;
    }
    Ok(table)
}

/// Values a walk keeps while it is inside nested tables: the first levels
/// in Rust, deeper ones in a Lua table. mlua gives every live handle a
/// slot of its own reference stack, 8000 slots like Lua's C stack, which
/// nesting as deep as the C libraries allow would exhaust if each level
/// held its table in Rust.
pub(super) struct Ancestors {
    near: Vec<Value>,
    far: Option<Table>,
    far_len: usize,
}

/// How many values `Ancestors` keeps in Rust.
const NEAR_ANCESTORS: usize = 64;

impl Ancestors {
    pub(super) fn new() -> Self {
        Ancestors {
            near: Vec::new(),
            far: None,
            far_len: 0,
        }
    }

    pub(super) fn push(&mut self, lua: &Lua, value: Value) -> mlua::Result<()> {
        if self.near.len() < NEAR_ANCESTORS {
            self.near.push(value);
            return Ok(());
        }
        let far = match &self.far {
            Some(far) => far,
            None => self.far.insert(lua.create_table()?),
        };
        self.far_len += 1;
        far.raw_set(self.far_len, value)
    }

    /// The last value pushed (nil when there is none).
    pub(super) fn pop(&mut self) -> mlua::Result<Value> {
        match &self.far {
            Some(far) if self.far_len > 0 => {
                let value = far.raw_get(self.far_len)?;
                far.raw_set(self.far_len, Value::Nil)?;
                self.far_len -= 1;
                Ok(value)
            }
            _ => Ok(self.near.pop().unwrap_or(Value::Nil)),
        }
    }
}

/// The results of a call that may return thousands of values, kept in a
/// Lua table as they come (each value held in Rust would take a slot of
/// mlua's 8000-slot reference stack) and unpacked by the trampoline.
pub(super) struct Results {
    table: Table,
    len: usize,
}

impl Results {
    pub(super) fn new(lua: &Lua) -> mlua::Result<Self> {
        Ok(Results {
            table: lua.create_table()?,
            len: 0,
        })
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn push(&mut self, value: Value) -> mlua::Result<()> {
        self.len += 1;
        self.table.raw_set(self.len, value)
    }

    /// Replaces result `i` (1-based).
    pub(super) fn set(&mut self, i: usize, value: Value) -> mlua::Result<()> {
        self.table.raw_set(i, value)
    }

    /// The last result, removed.
    pub(super) fn pop(&mut self) -> mlua::Result<Value> {
        let value = self.table.raw_get(self.len)?;
        self.table.raw_set(self.len, Value::Nil)?;
        self.len -= 1;
        Ok(value)
    }

    /// What the Rust function returns for the trampoline to unpack.
    pub(super) fn into_multi(self) -> MultiValue {
        let mark = Value::LightUserData(LightUserData(mark(&SPILL_MARK)));
        let count = Value::Integer(self.len as i64);
        MultiValue::from_vec(vec![mark, Value::Table(self.table), count])
    }
}

/// One result.
pub(super) fn single(value: Value) -> LibResult<MultiValue> {
    Ok(MultiValue::from_vec(vec![value]))
}

type BitFn = fn(&Lua, MultiValue) -> LibResult<MultiValue>;

/// Sets the global table `bit`.
pub fn load(lua: &Lua) -> mlua::Result<()> {
    let functions: [(&str, BitFn); 12] = [
        ("tobit", tobit),
        ("bnot", bnot),
        ("band", band),
        ("bor", bor),
        ("bxor", bxor),
        ("lshift", lshift),
        ("rshift", rshift),
        ("arshift", arshift),
        ("rol", rol),
        ("ror", ror),
        ("bswap", bswap),
        ("tohex", tohex),
    ];
    lua.globals().raw_set("bit", lib_table(lua, &functions)?)
}

/// The low 32 bits of `n + 2^52 + 2^51`: LuaBitOp's normalization.
fn normalize(n: f64) -> u32 {
    (n + 6_755_399_441_055_744.0).to_bits() as u32
}

/// LuaBitOp's `barg`: argument `arg` (1-based) as 32 bits. A value
/// `lua_tonumber` reads as 0 is only an error when it is not a number.
fn bit_arg(lua: &Lua, args: &MultiValue, arg: usize) -> LibResult<u32> {
    let value = args.get(arg - 1);
    let bits = normalize(to_number(lua, value)?.unwrap_or(0.0));
    if bits == 0 && !is_number(lua, value)? {
        return type_error(args, arg, "number");
    }
    Ok(bits)
}

/// `lua_isnumber`: a number or a string convertible to one.
fn is_number(lua: &Lua, value: Option<&Value>) -> LibResult<bool> {
    Ok(to_number(lua, value)?.is_some())
}

fn result(bits: u32) -> LibResult<MultiValue> {
    single(Value::Integer(i64::from(bits as i32)))
}

fn tobit(lua: &Lua, args: MultiValue) -> LibResult<MultiValue> {
    result(bit_arg(lua, &args, 1)?)
}

fn bnot(lua: &Lua, args: MultiValue) -> LibResult<MultiValue> {
    result(!bit_arg(lua, &args, 1)?)
}

/// Folds the operation over all arguments: the first, then from the last
/// back to the second, the order LuaBitOp reads (and checks) them in.
fn fold(lua: &Lua, args: &MultiValue, op: fn(u32, u32) -> u32) -> LibResult<MultiValue> {
    let mut bits = bit_arg(lua, args, 1)?;
    for arg in (2..=args.len()).rev() {
        bits = op(bits, bit_arg(lua, args, arg)?);
    }
    result(bits)
}

fn band(lua: &Lua, args: MultiValue) -> LibResult<MultiValue> {
    fold(lua, &args, |a, b| a & b)
}

fn bor(lua: &Lua, args: MultiValue) -> LibResult<MultiValue> {
    fold(lua, &args, |a, b| a | b)
}

fn bxor(lua: &Lua, args: MultiValue) -> LibResult<MultiValue> {
    fold(lua, &args, |a, b| a ^ b)
}

/// A shift or rotation of the first argument by the second modulo 32.
fn shift(lua: &Lua, args: &MultiValue, op: fn(u32, u32) -> u32) -> LibResult<MultiValue> {
    let bits = bit_arg(lua, args, 1)?;
    let count = bit_arg(lua, args, 2)? & 31;
    result(op(bits, count))
}

fn lshift(lua: &Lua, args: MultiValue) -> LibResult<MultiValue> {
    shift(lua, &args, |b, n| b << n)
}

fn rshift(lua: &Lua, args: MultiValue) -> LibResult<MultiValue> {
    shift(lua, &args, |b, n| b >> n)
}

fn arshift(lua: &Lua, args: MultiValue) -> LibResult<MultiValue> {
    shift(lua, &args, |b, n| ((b as i32) >> n) as u32)
}

fn rol(lua: &Lua, args: MultiValue) -> LibResult<MultiValue> {
    shift(lua, &args, u32::rotate_left)
}

fn ror(lua: &Lua, args: MultiValue) -> LibResult<MultiValue> {
    shift(lua, &args, u32::rotate_right)
}

fn bswap(lua: &Lua, args: MultiValue) -> LibResult<MultiValue> {
    result(bit_arg(lua, &args, 1)?.swap_bytes())
}

/// `tohex(x [, n])`: the low `|n|` hex digits of `x` (at most 8, 8 when
/// `n` is absent), upper case when `n` is negative (`|-2^31|` is 8 digits
/// too, as the C compiler makes of its overflowing negation).
fn tohex(lua: &Lua, args: MultiValue) -> LibResult<MultiValue> {
    let mut bits = bit_arg(lua, &args, 1)?;
    let count = if args.len() < 2 {
        8
    } else {
        bit_arg(lua, &args, 2)? as i32
    };
    let digits = if count < 0 {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    let count = count.unsigned_abs().min(8) as usize;
    let mut hex = [0u8; 8];
    for slot in hex[..count].iter_mut().rev() {
        *slot = digits[(bits & 15) as usize];
        bits >>= 4;
    }
    single(Value::String(lua.create_string(&hex[..count])?))
}

#[cfg(test)]
pub(super) mod tests {
    use mlua::Lua;

    /// Runs each `(body, expected)` pair with the four libraries loaded:
    /// the body is a one-line Lua function body returning a value, wrapped
    /// as it was when its expected value was asked of redis-server 7.0.15
    /// (`EVAL "<PRELUDE><body> end) if ok ..." 0`).
    pub(crate) fn check(cases: &[(&str, &str)]) {
        let lua = Lua::new();
        crate::libs::load(&lua).expect("load");
        let mut failures = Vec::new();
        for (body, expected) in cases {
            let got = run(&lua, body);
            if got != expected.as_bytes() {
                let got = String::from_utf8_lossy(&got);
                failures.push(format!(
                    "{body}\n   expected {expected:?}\n   got      {got:?}"
                ));
            }
        }
        assert!(
            failures.is_empty(),
            "{} failures:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }

    /// The wrapper the expected values were produced with.
    pub(crate) const PRELUDE: &str = "local function hex(s) return (string.gsub(s, '.', function(c) return string.format('%02x', string.byte(c)) end)) end local ok, r = pcall(function() ";

    pub(crate) fn run(lua: &Lua, body: &str) -> Vec<u8> {
        let code = format!(
            "{PRELUDE}{body} end) if ok then return 'ok:' .. tostring(r) else return 'err:' .. tostring(r) end"
        );
        let reply: mlua::String = lua
            .load(code)
            .set_name("@user_script")
            .eval()
            .unwrap_or_else(|e| panic!("{body}: {e}"));
        reply.as_bytes().to_vec()
    }

    /// A deterministic xorshift generator for the robustness tests.
    pub(crate) struct Rng(pub(crate) u64);

    impl Rng {
        pub(crate) fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }

        /// Up to `max_len` bytes, mostly from `alphabet`, sometimes any.
        pub(crate) fn bytes(&mut self, alphabet: &[u8], max_len: usize) -> Vec<u8> {
            let len = self.below(max_len + 1);
            (0..len)
                .map(|_| match self.below(8) {
                    0 => self.below(256) as u8,
                    _ => alphabet[self.below(alphabet.len())],
                })
                .collect()
        }
    }

    /// Calls the Lua function `function` (a path such as `cjson.decode`)
    /// under `pcall` with `count` argument lists from `args`, each of which
    /// must return or raise a Lua error: a panic fails the test.
    pub(crate) fn survives(
        function: &str,
        count: usize,
        mut args: impl FnMut(&Lua, &mut Rng) -> Vec<mlua::Value>,
    ) {
        let lua = Lua::new();
        crate::libs::load(&lua).expect("load");
        let call: mlua::Function = lua
            .load(format!(
                "return function(...) return pcall({function}, ...) end"
            ))
            .eval()
            .expect("wrapper");
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..count {
            let args = args(&lua, &mut rng);
            let described = format!("{args:?}");
            call.call::<mlua::MultiValue>(mlua::MultiValue::from_vec(args))
                .unwrap_or_else(|e| panic!("{function}({described}): {e}"));
        }
    }

    /// Random numbers as bit operands: the edges of the conversions, and
    /// strings.
    fn operand(lua: &Lua, rng: &mut Rng) -> mlua::Value {
        const EDGES: [f64; 12] = [
            0.0,
            -0.0,
            1e-300,
            0.5,
            -2.5,
            2147483648.0,
            -2147483649.0,
            4294967296.0,
            6755399441055744.0,
            1e300,
            f64::INFINITY,
            f64::NAN,
        ];
        match rng.below(4) {
            0 => mlua::Value::Number(EDGES[rng.below(EDGES.len())]),
            1 => mlua::Value::Integer(rng.below(1 << 40) as i64 - (1 << 39)),
            2 => mlua::Value::String(
                lua.create_string(rng.bytes(b"0x12 -e.", 6))
                    .expect("string"),
            ),
            _ => mlua::Value::Number(f64::from_bits(rng.below(usize::MAX) as u64)),
        }
    }

    #[test]
    fn random_operands_never_panic() {
        for function in [
            "bit.tobit",
            "bit.tohex",
            "bit.band",
            "bit.lshift",
            "bit.arshift",
            "bit.ror",
        ] {
            survives(function, 2000, |lua, rng| {
                (0..rng.below(4)).map(|_| operand(lua, rng)).collect()
            });
        }
    }

    fn cases() -> &'static [(&'static str, &'static str)] {
        &[
            (r#"local t={} for k,v in pairs(bit) do t[#t+1]=k..'='..type(v) end table.sort(t) return table.concat(t, ' ')"#, "ok:arshift=function band=function bnot=function bor=function bswap=function bxor=function lshift=function rol=function ror=function rshift=function tobit=function tohex=function"),
            (r#"return bit.tobit(1) == 1 and bit.band(1) == 1 and bit.bxor(1,2) == 3 and bit.bor(1,2,4,8,16,32,64,128) == 255"#, "ok:true"),
            (r#"return bit.tobit(0xffffffff)"#, "ok:-1"),
            (r#"return bit.tobit(0xffffffff + 1)"#, "ok:0"),
            (r#"return bit.tobit(2^40 + 1234)"#, "ok:1234"),
            (r#"return bit.tobit(2^32 + 5)"#, "ok:5"),
            (r#"return bit.tobit(2^52 + 3)"#, "ok:2"),
            (r#"return bit.tobit(2^53 + 3)"#, "ok:2"),
            (r#"return bit.tobit(2^63)"#, "ok:0"),
            (r#"return bit.tobit(1e300)"#, "ok:-2013235812"),
            (r#"return bit.tobit(-1e300)"#, "ok:-2013235812"),
            (r#"return bit.tobit(0/0)"#, "ok:0"),
            (r#"return bit.tobit(1/0)"#, "ok:0"),
            (r#"return bit.tobit(-1/0)"#, "ok:0"),
            (r#"return bit.tobit(-0)"#, "ok:0"),
            (r#"return bit.tobit(-2^31 - 1)"#, "ok:2147483647"),
            (r#"return bit.tobit(2^31)"#, "ok:-2147483648"),
            (r#"return bit.tobit(2.5) .. ' ' .. bit.tobit(3.5) .. ' ' .. bit.tobit(-2.5) .. ' ' .. bit.tobit(0.5) .. ' ' .. bit.tobit(1.5) .. ' ' .. bit.tobit(-0.5)"#, "ok:2 4 -2 0 2 0"),
            (r#"return bit.tobit(' 12 ') .. ' ' .. bit.tobit('0x10') .. ' ' .. bit.tobit('1e3') .. ' ' .. bit.tobit('-7')"#, "ok:12 16 1000 -7"),
            (r#"return bit.tobit('x')"#, "err:user_script:1: bad argument #1 to 'tobit' (number expected, got string)"),
            (r#"return bit.tobit('')"#, "err:user_script:1: bad argument #1 to 'tobit' (number expected, got string)"),
            (r#"return bit.tobit()"#, "err:user_script:1: bad argument #1 to 'tobit' (number expected, got no value)"),
            (r#"return bit.tobit(nil)"#, "err:user_script:1: bad argument #1 to 'tobit' (number expected, got nil)"),
            (r#"return bit.tobit(true)"#, "err:user_script:1: bad argument #1 to 'tobit' (number expected, got boolean)"),
            (r#"return bit.tobit({})"#, "err:user_script:1: bad argument #1 to 'tobit' (number expected, got table)"),
            (r#"return bit.tobit(cjson.null)"#, "err:user_script:1: bad argument #1 to 'tobit' (number expected, got userdata)"),
            (r#"return bit.tobit(2^32)"#, "ok:0"),
            (r#"return bit.bnot(0) .. ' ' .. bit.bnot(-1) .. ' ' .. bit.bnot(0x12345678)"#, "ok:-1 0 -305419897"),
            (r#"return bit.band(0x12345678, 0xff) .. ' ' .. bit.band(-1, -1, 7) .. ' ' .. bit.band(5)"#, "ok:120 7 5"),
            (r#"return bit.bor(1, 2, 4) .. ' ' .. bit.bor(0x80000000, 1)"#, "ok:7 -2147483647"),
            (r#"return bit.bxor(0xff, 0x0f, 0x01)"#, "ok:241"),
            (r#"return bit.band(1, 'a', 'b')"#, "err:user_script:1: bad argument #3 to 'band' (number expected, got string)"),
            (r#"return bit.band('a', 1)"#, "err:user_script:1: bad argument #1 to 'band' (number expected, got string)"),
            (r#"return bit.bor(1, 2, nil)"#, "err:user_script:1: bad argument #3 to 'bor' (number expected, got nil)"),
            (r#"return bit.band()"#, "err:user_script:1: bad argument #1 to 'band' (number expected, got no value)"),
            (r#"return bit.lshift(1, 0) .. ' ' .. bit.lshift(1, 31) .. ' ' .. bit.lshift(1, 32) .. ' ' .. bit.lshift(1, 33) .. ' ' .. bit.lshift(1, -1)"#, "ok:1 -2147483648 1 2 -2147483648"),
            (r#"return bit.rshift(-1, 28) .. ' ' .. bit.rshift(-256, 4) .. ' ' .. bit.rshift(1, 32) .. ' ' .. bit.rshift(0x80000000, 31)"#, "ok:15 268435440 1 1"),
            (r#"return bit.arshift(-256, 4) .. ' ' .. bit.arshift(0x80000000, 31) .. ' ' .. bit.arshift(256, 4) .. ' ' .. bit.arshift(-1, 33)"#, "ok:-16 -1 16 -1"),
            (r#"return bit.rol(0x12345678, 12) .. ' ' .. bit.ror(0x12345678, 12) .. ' ' .. bit.rol(1, 32) .. ' ' .. bit.ror(1, -1)"#, "ok:1164411171 1736516421 1 2"),
            (r#"return bit.bswap(0x12345678) .. ' ' .. bit.bswap(0xff) .. ' ' .. bit.bswap(-1)"#, "ok:2018915346 -16777216 -1"),
            (r#"return bit.lshift(1)"#, "err:user_script:1: bad argument #2 to 'lshift' (number expected, got no value)"),
            (r#"return bit.lshift()"#, "err:user_script:1: bad argument #1 to 'lshift' (number expected, got no value)"),
            (r#"return bit.rol(1, 'x')"#, "err:user_script:1: bad argument #2 to 'rol' (number expected, got string)"),
            (r#"return bit.tohex(1)"#, "ok:00000001"),
            (r#"return bit.tohex(-1)"#, "ok:ffffffff"),
            (r#"return bit.tohex(0x12345678, 4)"#, "ok:5678"),
            (r#"return bit.tohex(0x12345678, -4)"#, "ok:5678"),
            (r#"return bit.tohex(0xabcdef, -8)"#, "ok:00ABCDEF"),
            (r#"return bit.tohex(0xabcdef, 12)"#, "ok:00abcdef"),
            (r#"return bit.tohex(0xabcdef, -12)"#, "ok:00ABCDEF"),
            (r#"return bit.tohex(255, 0)"#, "ok:"),
            (r#"return bit.tohex(255, 2^31)"#, "ok:000000FF"),
            (r#"return bit.tohex(255, -2^31)"#, "ok:000000FF"),
            (r#"return bit.tohex(255, -2^31 + 1)"#, "ok:000000FF"),
            (r#"return bit.tohex(255, nil)"#, "err:user_script:1: bad argument #2 to 'tohex' (number expected, got nil)"),
            (r#"return bit.tohex(255, '3')"#, "ok:0ff"),
            (r#"return bit.tohex(2^40 + 0xabc)"#, "ok:00000abc"),
            (r#"return bit.tohex('0x7fffffff', 3)"#, "ok:fff"),
            (r#"return bit.band(2^53, 2^52 + 1)"#, "ok:0"),
            (r#"return bit.tobit(4503599627370495.5)"#, "ok:0"),
            (r#"return bit.tobit(6755399441055744)"#, "ok:0"),
            (r#"return bit.tobit(-6755399441055745)"#, "ok:0"),
            (r#"return bit.tobit(2^51 + 0.5)"#, "ok:0"),
            (r#"return bit.tobit(-2^51 - 0.5)"#, "ok:-1"),
            (r#"return bit.tobit(1e-300)"#, "ok:0"),
            (r#"return bit.tobit('  0x1F  ')"#, "ok:31"),
            (r#"return bit.tobit('1e400')"#, "ok:0"),
            (r#"return bit.tohex(bit.tobit(-1), 7)"#, "ok:fffffff"),]
    }

    #[test]
    fn matches_redis() {
        check(cases());
    }
}
