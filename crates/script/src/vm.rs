//! One sandboxed Lua 5.1 state with Redis's script API: the standard
//! libraries Redis loads, the four libraries it bundles (`libs`), the
//! `redis` table, read-only globals (`lua/sandbox.lua`), a heap limit, and
//! the instruction-count hook through which SCRIPT KILL stops a script.
//!
//! A run gives the script its per-call API (`redis.call`, `pcall`,
//! `setresp`, `acl_check_cmd`) bound to the caller's [`Host`] for the
//! length of the call only, calls it under the error handler that turns a
//! failure into Redis's `{err=..., source=..., line=...}`, and writes what
//! it returned, or its error, as the reply.

use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use keel_resp::{Protocol, Writer};
use mlua::{Function, HookTriggers, Lua, LuaOptions, StdLib, Table, Value, Variadic, VmState};

use crate::convert::{error_table, frame_to_lua, lua_to_args, write_lua};
use crate::host::{Host, LogLevel, Logger};
use crate::rand48::Rand48;

/// The version scripts see in `redis.REDIS_VERSION`.
pub const REDIS_VERSION: &str = "7.0.15";
/// `redis.REDIS_VERSION_NUM`: 0x00MMmmpp.
const REDIS_VERSION_NUM: u32 = 0x07_00_0F;
/// Instructions between two looks at the kill flag, as Redis's hook.
const HOOK_PERIOD: u32 = 100_000;
/// Runs between two incremental garbage collection steps, as Redis.
const GC_PERIOD: u32 = 50;

/// What the server shares with every Lua state: the kill switch, the
/// random generator and the log.
pub struct Control {
    /// Set by SCRIPT KILL / FUNCTION KILL; the running script stops at its
    /// next hook.
    pub killed: AtomicBool,
    /// The message the stopped script fails with.
    pub kill_message: &'static str,
    /// `math.random`'s generator.
    pub rand: Rand48,
    /// `redis.log`'s destination.
    pub logger: Logger,
}

impl Control {
    pub fn new(logger: Logger) -> Arc<Control> {
        Arc::new(Control {
            killed: AtomicBool::new(false),
            kill_message: "Script killed by user with SCRIPT KILL...",
            rand: Rand48::default(),
            logger,
        })
    }
}

/// An error a Rust function raises into Lua as the table Redis raises:
/// `{err=...}`, see [`crate::convert::error_table`].
#[derive(Debug)]
struct Raised {
    message: String,
    ignore_stats: bool,
}

impl std::fmt::Display for Raised {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Raised {}

pub(crate) fn raise(message: impl Into<String>) -> mlua::Error {
    mlua::Error::external(Raised {
        message: message.into(),
        ignore_stats: false,
    })
}

/// What a script was called with.
pub enum Invocation<'a> {
    /// EVAL: `KEYS` and `ARGV` are globals.
    Eval {
        keys: &'a [Bytes],
        args: &'a [Bytes],
    },
    /// FCALL: the callback gets them as its two arguments.
    Function {
        keys: &'a [Bytes],
        args: &'a [Bytes],
    },
}

/// State of one call, shared by its per-call API functions.
struct Call<'h> {
    host: &'h mut dyn Host,
    protocol: Protocol,
}

/// The call running now, for the per-call API functions (`redis.call`,
/// `pcall`, `setresp`, `acl_check_cmd`), which are made once with the state
/// rather than per call: null between calls.
#[derive(Default)]
struct Running(AtomicPtr<Call<'static>>);

impl Running {
    /// Runs `f` on the call running now; outside a call, Redis's error for
    /// a function that `api` names.
    fn with<T>(&self, api: &str, f: impl FnOnce(&mut Call) -> mlua::Result<T>) -> mlua::Result<T> {
        let call = self.0.load(Ordering::Acquire);
        if call.is_null() {
            return Err(raise(format!(
                "{api} can only be called inside a script invocation"
            )));
        }
        // SAFETY: non-null only while `Vm::run` holds the call alive and
        // runs Lua on this thread; the functions that read it run inside
        // that Lua, one at a time (a command a script runs never runs Lua),
        // so no other reference to the call is alive meanwhile.
        f(unsafe { &mut *call })
    }
}

pub struct Vm {
    lua: Lua,
    control: Arc<Control>,
    /// The scripts' environment: the allowed globals, read-only.
    pub env: Table,
    /// The allowed globals themselves, where EVAL's KEYS and ARGV go.
    pub(crate) globals: Table,
    /// `protect(t)`: a read-only proxy of `t` (see sandbox.lua).
    pub protect: Function,
    /// `environment(current)`: an environment whose globals are `current()`'s.
    pub environment: Function,
    /// Calls a function with arguments under the error handler: `(ok, value)`.
    runner: Function,
    /// The same for a function without arguments (an EVAL script), which
    /// needs no closure to carry them.
    runner_without_arguments: Function,
    running: std::sync::Arc<Running>,
    runs: u32,
}

impl Vm {
    /// A fresh state, its heap limited to `heap_limit` bytes (0: no limit).
    pub fn new(control: Arc<Control>, heap_limit: usize) -> mlua::Result<Vm> {
        let libs = StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::DEBUG;
        // SAFETY: `debug` is unsafe because it reaches past every
        // protection; the sandbox keeps it to itself (its error handler
        // reads where a script failed) and scripts never see it.
        let lua = unsafe { Lua::unsafe_new_with(libs, LuaOptions::new()) };
        crate::libs::load(&lua)?;
        let redis = lua.create_table()?;
        register_api(&lua, &redis, &control)?;
        let running = Arc::new(Running::default());
        register_per_call_api(&lua, &redis, &running)?;
        let normalize = lua.create_function(normalize_error)?;
        let random = {
            let control = control.clone();
            lua.create_function(move |_, args: Variadic<Value>| random(&control.rand, &args))?
        };
        let randomseed = {
            let control = control.clone();
            lua.create_function(move |_, seed: f64| {
                control.rand.seed(seed as i32);
                Ok(())
            })?
        };
        let (env, handler, protect, environment, globals): (
            Table,
            Function,
            Function,
            Function,
            Table,
        ) = lua
            .load(include_str!("lua/sandbox.lua"))
            .set_name("=sandbox")
            .call((normalize, random, randomseed, redis.clone()))?;
        let (runner, runner_without_arguments): (Function, Function) = lua
            .load(
                "local handler, xpcall, select, unpack = ...
                 return function(f, ...)
                   local n, args = select('#', ...), { ... }
                   return xpcall(function() return f(unpack(args, 1, n)) end, handler)
                 end, function(f)
                   return xpcall(f, handler)
                 end",
            )
            .set_name("=runner")
            .call((
                handler,
                lua.globals().get::<Function>("xpcall")?,
                lua.globals().get::<Function>("select")?,
                lua.globals().get::<Function>("unpack")?,
            ))?;
        lua.set_memory_limit(heap_limit)?;
        let vm = Vm {
            lua,
            control,
            env,
            globals,
            protect,
            environment,
            runner,
            runner_without_arguments,
            running,
            runs: 0,
        };
        vm.watch_for_kill();
        Ok(vm)
    }

    pub fn lua(&self) -> &Lua {
        &self.lua
    }

    /// Limits the Lua heap to `limit` bytes (0: no limit); an allocation
    /// past it fails the running script with "not enough memory".
    pub fn set_heap_limit(&self, limit: usize) -> mlua::Result<()> {
        self.lua.set_memory_limit(limit).map(drop)
    }

    /// Bytes the Lua heap holds.
    pub fn used_memory(&self) -> usize {
        self.lua.used_memory()
    }

    /// Looks at the kill flag every [`HOOK_PERIOD`] instructions. Once it
    /// is set the hook fires on every line, so a script that catches the
    /// error with `pcall` cannot go on, as in Redis.
    fn watch_for_kill(&self) {
        let control = self.control.clone();
        self.lua.set_hook(
            HookTriggers::new().every_nth_instruction(HOOK_PERIOD),
            move |lua, _| {
                if !control.killed.load(Ordering::Relaxed) {
                    return Ok(VmState::Continue);
                }
                let again = control.clone();
                lua.set_hook(HookTriggers::EVERY_LINE, move |_, _| {
                    Err(raise(again.kill_message))
                });
                Err(raise(control.kill_message))
            },
        );
    }

    /// Calls `function` without arguments under the error handler, as
    /// FUNCTION LOAD runs a library's code: no kill applies, but once it
    /// has run for `limit` (looked at every [`HOOK_PERIOD`] instructions,
    /// as Redis's load hook) it fails with `message`, on every line from
    /// then on so `pcall` cannot catch it. The error is the `err` text of
    /// the table the handler made (`ERR user_function:3: ...`).
    pub(crate) fn call_within(
        &self,
        function: &Function,
        limit: Duration,
        message: &'static str,
    ) -> Result<(), String> {
        let start = Instant::now();
        self.lua.set_hook(
            HookTriggers::new().every_nth_instruction(HOOK_PERIOD),
            move |lua, _| {
                if start.elapsed() <= limit {
                    return Ok(VmState::Continue);
                }
                lua.set_hook(HookTriggers::EVERY_LINE, move |_, _| Err(raise(message)));
                Err(raise(message))
            },
        );
        let outcome = self
            .runner_without_arguments
            .call::<(bool, Value)>(function);
        self.watch_for_kill();
        match outcome {
            Ok((true, _)) => Ok(()),
            Ok((false, Value::Table(err))) => match err.raw_get::<Value>("err") {
                Ok(Value::String(s)) => Err(String::from_utf8_lossy(&s.as_bytes()).into_owned()),
                _ => Err("ERR execution failure".into()),
            },
            // Lua 5.1 skips the handler when memory runs out.
            Ok((false, Value::String(s))) => {
                Err(format!("ERR {}", String::from_utf8_lossy(&s.as_bytes())))
            }
            Ok((false, _)) => Err("ERR execution failure".into()),
            Err(e) => Err(format!("ERR {e}")),
        }
    }

    /// Compiles `code` as chunk `name` (`@user_script`) in `env`; the error
    /// is Lua's message.
    pub fn compile(&self, name: &str, code: &[u8], env: &Table) -> Result<Function, String> {
        self.lua
            .load(code)
            .set_name(name)
            .set_environment(env.clone())
            .into_function()
            .map_err(|e| match e {
                mlua::Error::SyntaxError { message, .. } => message,
                other => other.to_string(),
            })
    }

    /// Calls `function` under the error handler as `invocation` says.
    fn call_function(
        &self,
        function: &Function,
        invocation: Invocation,
    ) -> mlua::Result<(bool, Value)> {
        let table_of = |items: &[Bytes]| -> mlua::Result<Table> {
            let t = self.lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, self.lua.create_string(item)?)?;
            }
            Ok(t)
        };
        match invocation {
            Invocation::Eval { keys, args } => {
                self.globals.raw_set("KEYS", table_of(keys)?)?;
                self.globals.raw_set("ARGV", table_of(args)?)?;
                self.runner_without_arguments.call(function)
            }
            Invocation::Function { keys, args } => {
                self.runner
                    .call((function, table_of(keys)?, table_of(args)?))
            }
        }
    }

    /// Runs `function` as `name` (the script's sha or the function's name,
    /// for error messages) and writes its reply to `w`. True when the reply
    /// is an error a command the script ran replied, and counted already
    /// (Redis's `ignore_error_stats_update`).
    pub fn run(
        &mut self,
        function: &Function,
        name: &str,
        invocation: Invocation,
        host: &mut dyn Host,
        w: &mut Writer,
    ) -> bool {
        self.control.killed.store(false, Ordering::Relaxed);
        let mut call = Call {
            host,
            protocol: Protocol::Resp2,
        };
        // The lifetime is erased for the per-call functions, which see the
        // call only until it is taken back below (see `Running::with`).
        let current = (&mut call as *mut Call).cast::<Call<'static>>();
        self.running.0.store(current, Ordering::Release);
        let outcome = self.call_function(function, invocation);
        self.running
            .0
            .store(std::ptr::null_mut(), Ordering::Release);
        if self.control.killed.load(Ordering::Relaxed) {
            // The kill made the hook fire on every line: back to its period.
            self.watch_for_kill();
        }
        let protocol = call.protocol;
        let mut counted = false;
        match outcome {
            Ok((true, value)) => counted = write_lua(w, &value, protocol),
            Ok((false, Value::Table(err))) => {
                w.error(&failure_message(&err, name));
                counted = matches!(
                    err.raw_get("ignore_error_stats_update"),
                    Ok(Value::Boolean(true))
                );
            }
            // Lua 5.1 skips the handler when memory runs out, and frees
            // nothing then: what the script left is collected now, so the
            // next script finds the room.
            Ok((false, other)) => {
                let message = match &other {
                    Value::String(s) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
                    _ => "execution failure".into(),
                };
                drop(other);
                let _ = self.lua.gc_collect();
                w.error(&format!(
                    "ERR Error running script {name}, {}",
                    truncate(&message, 100)
                ));
            }
            Err(e) => w.error(&format!(
                "ERR Error running script {name}, {}",
                truncate(&e.to_string(), 100)
            )),
        }
        self.runs += 1;
        if self.runs.is_multiple_of(GC_PERIOD) {
            let _ = self.lua.gc_step();
        }
        counted
    }
}

fn truncate(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The reply for a failed script, as Redis's `luaCallFunction` words it:
/// the error, then where the script failed.
fn failure_message(err: &Table, name: &str) -> String {
    let text = |field: &str| match err.raw_get::<Value>(field) {
        Ok(Value::String(s)) => Some(String::from_utf8_lossy(&s.as_bytes()).into_owned()),
        Ok(Value::Number(n)) => Some(format!("{}", n as i64)),
        Ok(Value::Integer(n)) => Some(n.to_string()),
        _ => None,
    };
    let mut message = text("err").unwrap_or_else(|| "(null)".into());
    if let (Some(source), Some(line)) = (text("source"), text("line")) {
        message.push_str(&format!(" script: {name}, on {source}:{line}."));
    }
    message
}

/// `redis.call`, `redis.pcall`, `redis.setresp` and `redis.acl_check_cmd`:
/// the functions that act for the running call (see [`Running`]).
fn register_per_call_api(lua: &Lua, redis: &Table, running: &Arc<Running>) -> mlua::Result<()> {
    for (name, raise_errors) in [("call", true), ("pcall", false)] {
        let running = running.clone();
        redis.raw_set(
            name,
            lua.create_function(move |lua, args: Variadic<Value>| {
                running.with("redis.call/pcall", |call| {
                    redis_call(lua, call, &args, raise_errors)
                })
            })?,
        )?;
    }
    let current = running.clone();
    redis.raw_set(
        "setresp",
        lua.create_function(move |_, args: Variadic<Value>| {
            current.with("redis.setresp", |call| set_resp(call, &args))
        })?,
    )?;
    let current = running.clone();
    redis.raw_set(
        "acl_check_cmd",
        lua.create_function(move |_, args: Variadic<Value>| {
            current.with("redis.acl_check_cmd", |call| acl_check(call, &args))
        })?,
    )
}

/// `redis.call` and `redis.pcall`.
fn redis_call(
    lua: &Lua,
    call: &mut Call,
    args: &Variadic<Value>,
    raise_errors: bool,
) -> mlua::Result<Value> {
    let refused = |message: &str, ignore_stats: bool| -> mlua::Result<Value> {
        if raise_errors {
            return Err(mlua::Error::external(Raised {
                message: message.into(),
                ignore_stats,
            }));
        }
        Ok(Value::Table(error_table(lua, message, ignore_stats)?))
    };
    let argv = match lua_to_args(args) {
        Ok(argv) => argv,
        Err(message) => return refused(message, false),
    };
    let protocol = call.protocol;
    match call.host.call(argv, protocol) {
        Err(refusal) => refused(&refusal, true),
        Ok(keel_resp::Frame::Error(e)) if raise_errors => Err(mlua::Error::external(Raised {
            message: format!("-{e}"),
            ignore_stats: true,
        })),
        Ok(frame) => frame_to_lua(lua, &frame, protocol),
    }
}

/// `redis.setresp`.
fn set_resp(call: &mut Call, args: &Variadic<Value>) -> mlua::Result<()> {
    if args.len() != 1 {
        return Err(raise("redis.setresp() requires one argument."));
    }
    call.protocol = match number(&args[0]) as i32 {
        2 => Protocol::Resp2,
        3 => Protocol::Resp3,
        _ => return Err(raise("RESP version must be 2 or 3.")),
    };
    Ok(())
}

/// `redis.acl_check_cmd`.
fn acl_check(call: &mut Call, args: &Variadic<Value>) -> mlua::Result<bool> {
    let argv = lua_to_args(args).map_err(raise)?;
    call.host
        .may_run(&argv)
        .ok_or_else(|| raise("Invalid command passed to redis.acl_check_cmd()"))
}

/// A number as Lua turns it into a string (`%.14g`), as `lua_tolstring`
/// does for C functions that take a string.
fn lua_number_text(n: f64) -> String {
    crate::convert::format_g(n, 14)
}

/// `lua_tonumber`: a number, or a string that reads as one, else 0.
fn number(value: &Value) -> f64 {
    match value {
        Value::Number(n) => *n,
        Value::Integer(n) => *n as f64,
        Value::String(s) => s
            .to_str()
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0.0),
        _ => 0.0,
    }
}

/// The `redis` functions that need no caller: they live as long as the
/// state.
fn register_api(lua: &Lua, redis: &Table, control: &Arc<Control>) -> mlua::Result<()> {
    redis.raw_set(
        "sha1hex",
        lua.create_function(|_, args: Variadic<Value>| {
            if args.len() != 1 {
                return Err(raise("wrong number of arguments"));
            }
            let bytes = match &args[0] {
                Value::String(s) => s.as_bytes().to_vec(),
                other => crate::convert::number(other)
                    .map(|n| lua_number_text(n).into_bytes())
                    .unwrap_or_default(),
            };
            Ok(sha1_smol::Sha1::from(bytes).digest().to_string())
        })?,
    )?;
    let single_string = |args: &Variadic<Value>| match args.as_slice() {
        [Value::String(s)] => Some(s.clone()),
        _ => None,
    };
    redis.raw_set(
        "error_reply",
        lua.create_function(move |lua, args: Variadic<Value>| {
            let Some(text) = single_string(&args) else {
                return error_table(lua, "wrong number or type of arguments", false);
            };
            let text = String::from_utf8_lossy(&text.as_bytes()).into_owned();
            let message = if text.starts_with('-') {
                text
            } else {
                format!("-{text}")
            };
            error_table(lua, &message, false)
        })?,
    )?;
    redis.raw_set(
        "status_reply",
        lua.create_function(move |lua, args: Variadic<Value>| {
            let Some(text) = single_string(&args) else {
                return error_table(lua, "wrong number or type of arguments", false);
            };
            let t = lua.create_table()?;
            t.raw_set("ok", text)?;
            Ok(t)
        })?,
    )?;
    register_log(lua, redis, control)?;
    redis.raw_set(
        "set_repl",
        lua.create_function(|_, args: Variadic<Value>| {
            if args.len() != 1 {
                return Err(raise("redis.set_repl() requires two arguments."));
            }
            if number(&args[0]) as i64 & !3 != 0 {
                return Err(raise(
                    "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
                ));
            }
            Ok(())
        })?,
    )?;
    redis.raw_set("replicate_commands", lua.create_function(|_, ()| Ok(true))?)?;
    redis.raw_set("breakpoint", lua.create_function(|_, ()| Ok(false))?)?;
    redis.raw_set(
        "debug",
        lua.create_function(|_, _: Variadic<Value>| Ok(()))?,
    )?;
    for (name, flags) in [
        ("REPL_NONE", 0),
        ("REPL_AOF", 1),
        ("REPL_SLAVE", 2),
        ("REPL_REPLICA", 2),
        ("REPL_ALL", 3),
    ] {
        redis.raw_set(name, flags)?;
    }
    Ok(())
}

/// `redis.log`, its levels and the version fields: all the `redis` table
/// holds while a function library loads.
pub(crate) fn register_log(lua: &Lua, redis: &Table, control: &Arc<Control>) -> mlua::Result<()> {
    let logger = control.logger.clone();
    redis.raw_set(
        "log",
        lua.create_function(move |_, args: Variadic<Value>| {
            if args.len() < 2 {
                return Err(raise("redis.log() requires two arguments or more."));
            }
            if !matches!(&args[0], Value::Number(_) | Value::Integer(_))
                && !matches!(&args[0], Value::String(s) if s.to_str().is_ok_and(|s| s.trim().parse::<f64>().is_ok()))
            {
                return Err(raise("First argument must be a number (log level)."));
            }
            let level = match number(&args[0]) as i64 {
                0 => LogLevel::Debug,
                1 => LogLevel::Verbose,
                2 => LogLevel::Notice,
                3 => LogLevel::Warning,
                _ => return Err(raise("Invalid debug level.")),
            };
            let mut line = Vec::new();
            for (i, arg) in args.iter().skip(1).enumerate() {
                let piece = match arg {
                    Value::String(s) => s.as_bytes().to_vec(),
                    other => match crate::convert::number(other) {
                        Some(n) => lua_number_text(n).into_bytes(),
                        None => continue,
                    },
                };
                if i > 0 {
                    line.push(b' ');
                }
                line.extend_from_slice(&piece);
            }
            logger(level, &line);
            Ok(())
        })?,
    )?;
    for (name, level) in [
        ("LOG_DEBUG", 0),
        ("LOG_VERBOSE", 1),
        ("LOG_NOTICE", 2),
        ("LOG_WARNING", 3),
    ] {
        redis.raw_set(name, level)?;
    }
    redis.raw_set("REDIS_VERSION", REDIS_VERSION)?;
    redis.raw_set("REDIS_VERSION_NUM", REDIS_VERSION_NUM)?;
    Ok(())
}

/// `math.random` on Redis's generator.
fn random(rand: &Rand48, args: &Variadic<Value>) -> mlua::Result<f64> {
    let r = rand.fraction();
    let int_arg = |i: usize| -> mlua::Result<i64> {
        match &args[i] {
            Value::Number(n) => Ok(*n as i64),
            Value::Integer(n) => Ok(*n),
            _ => Err(mlua::Error::RuntimeError(format!(
                "bad argument #{} to 'random' (number expected, got {})",
                i + 1,
                args[i].type_name()
            ))),
        }
    };
    match args.len() {
        0 => Ok(r),
        1 => {
            let upper = int_arg(0)?;
            if upper < 1 {
                return Err(mlua::Error::RuntimeError(
                    "bad argument #1 to 'random' (interval is empty)".into(),
                ));
            }
            Ok((r * upper as f64).floor() + 1.0)
        }
        2 => {
            let (lower, upper) = (int_arg(0)?, int_arg(1)?);
            if lower > upper {
                return Err(mlua::Error::RuntimeError(
                    "bad argument #2 to 'random' (interval is empty)".into(),
                ));
            }
            Ok((r * (upper - lower + 1) as f64).floor() + lower as f64)
        }
        _ => Err(mlua::Error::RuntimeError(
            "wrong number of arguments".into(),
        )),
    }
}

/// Turns an error raised by Rust into what Redis's C code raises: a
/// [`Raised`] becomes its `{err=...}` table, a runtime error its message,
/// which (second result) still needs Lua's "chunk:line:" prefix as
/// `luaL_error` gives it.
fn normalize_error(lua: &Lua, err: Value) -> mlua::Result<(Value, bool)> {
    let Value::Error(error) = err else {
        return Ok((err, false));
    };
    let mut cause: &mlua::Error = &error;
    loop {
        match cause {
            mlua::Error::CallbackError { cause: inner, .. } => cause = inner,
            mlua::Error::WithContext { cause: inner, .. } => cause = inner,
            mlua::Error::ExternalError(external) => {
                return Ok(match external.downcast_ref::<Raised>() {
                    Some(raised) => (
                        Value::Table(error_table(lua, &raised.message, raised.ignore_stats)?),
                        false,
                    ),
                    None => (
                        Value::String(lua.create_string(external.to_string())?),
                        true,
                    ),
                });
            }
            mlua::Error::RuntimeError(message) => {
                return Ok((Value::String(lua.create_string(message)?), true))
            }
            mlua::Error::MemoryError(_) => {
                return Ok((
                    Value::String(lua.create_string("not enough memory")?),
                    false,
                ))
            }
            other => return Ok((Value::String(lua.create_string(other.to_string())?), true)),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use keel_resp::Frame;

    /// A host that answers every command with its arguments joined, and
    /// refuses `refuse`.
    pub struct EchoHost;

    impl Host for EchoHost {
        fn call(&mut self, args: Vec<Bytes>, _: Protocol) -> Result<Frame, String> {
            match &args[0][..] {
                b"refuse" => Err("This Redis command is not allowed from script".into()),
                b"fail" => Ok(Frame::Error("WRONGTYPE Operation against a key".into())),
                b"status" => Ok(Frame::Simple("OK".into())),
                _ => Ok(Frame::Array(args.into_iter().map(Frame::Bulk).collect())),
            }
        }

        fn may_run(&mut self, args: &[Bytes]) -> Option<bool> {
            (&args[0][..] != b"nosuch").then_some(true)
        }
    }

    pub fn vm() -> Vm {
        Vm::new(Control::new(Arc::new(|_, _| {})), 64 << 20).unwrap()
    }

    pub fn eval(vm: &mut Vm, code: &str) -> String {
        let f = vm
            .compile("@user_script", code.as_bytes(), &vm.env.clone())
            .unwrap();
        let mut out = bytes::BytesMut::new();
        let mut w = Writer::new(&mut out, Protocol::Resp2);
        vm.run(
            &f,
            "sha",
            Invocation::Eval {
                keys: &[],
                args: &[],
            },
            &mut EchoHost,
            &mut w,
        );
        String::from_utf8_lossy(&out).into_owned()
    }

    #[test]
    fn replies_convert_as_redis_converts_them() {
        let mut vm = vm();
        assert_eq!(eval(&mut vm, "return 3.99"), ":3\r\n");
        assert_eq!(
            eval(&mut vm, "return {1, 'a', {true, false}}"),
            "*3\r\n:1\r\n$1\r\na\r\n*2\r\n:1\r\n$-1\r\n"
        );
        assert_eq!(eval(&mut vm, "return {1, 2, nil, 4}"), "*2\r\n:1\r\n:2\r\n");
        assert_eq!(
            eval(&mut vm, "return redis.status_reply('FINE')"),
            "+FINE\r\n"
        );
        assert_eq!(
            eval(&mut vm, "return redis.error_reply('My Error')"),
            "-My Error\r\n"
        );
        assert_eq!(eval(&mut vm, "return redis.call('status')"), "+OK\r\n");
        assert_eq!(
            eval(&mut vm, "return redis.call('echo', 1.5, 2)"),
            "*3\r\n$4\r\necho\r\n$3\r\n1.5\r\n$1\r\n2\r\n"
        );
    }

    #[test]
    fn errors_name_the_script_and_line() {
        let mut vm = vm();
        let at = |line| format!(" script: sha, on @user_script:{line}.\r\n");
        for (script, reply) in [
            ("return a", format!("-ERR user_script:1: Script attempted to access nonexistent global variable 'a'{}", at(1))),
            ("a = 5", format!("-ERR user_script:1: Attempt to modify a readonly table{}", at(1))),
            ("\nreturn redis.call('fail')", format!("-WRONGTYPE Operation against a key{}", at(2))),
            ("return redis.call('refuse')", format!("-ERR This Redis command is not allowed from script{}", at(1))),
            ("local ok, e = pcall(redis.call, 'refuse') return e", "$49\r\nERR This Redis command is not allowed from script\r\n".into()),
            ("return redis.pcall('fail')", "-WRONGTYPE Operation against a key\r\n".into()),
            ("error('boom')", format!("-ERR user_script:1: boom{}", at(1))),
            ("return redis.setresp(4)", format!("-ERR RESP version must be 2 or 3.{}", at(1))),
            ("rawset(redis, 'call', 1)", format!("-ERR Attempt to modify a readonly table{}", at(1))),
            ("redis.call = 1", format!("-ERR user_script:1: Attempt to modify a readonly table{}", at(1))),
            ("return redis.call()", format!("-ERR Please specify at least one argument for this redis lib call{}", at(1))),
        ] {
            assert_eq!(eval(&mut vm, script), reply, "{script}");
        }
    }

    #[test]
    fn the_sandbox_hides_what_redis_hides() {
        let mut vm = vm();
        for name in [
            "os", "io", "loadfile", "dofile", "print", "require", "debug",
        ] {
            let reply = eval(&mut vm, &format!("return {name}"));
            assert!(
                reply.contains("nonexistent global variable"),
                "{name}: {reply}"
            );
        }
        assert_eq!(
            eval(
                &mut vm,
                "local n = 0 for k in pairs(string) do n = n + 1 end return n"
            ),
            ":15\r\n"
        );
        assert_eq!(
            eval(&mut vm, "return redis.sha1hex('')"),
            "$40\r\nda39a3ee5e6b4b0d3255bfef95601890afd80709\r\n"
        );
        assert_eq!(
            eval(&mut vm, "return redis.REDIS_VERSION_NUM"),
            ":458767\r\n"
        );
    }

    #[test]
    fn a_kill_stops_a_script_even_inside_pcall() {
        let mut vm = vm();
        vm.control.killed.store(true, Ordering::Relaxed);
        let control = vm.control.clone();
        let f = vm
            .compile(
                "@user_script",
                b"while true do pcall(function() while true do end end) end",
                &vm.env.clone(),
            )
            .unwrap();
        let mut out = bytes::BytesMut::new();
        let mut w = Writer::new(&mut out, Protocol::Resp2);
        // run() clears the flag as it starts: set it again from the hook's
        // point of view by a thread.
        let setter = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            control.killed.store(true, Ordering::Relaxed);
        });
        vm.run(
            &f,
            "sha",
            Invocation::Eval {
                keys: &[],
                args: &[],
            },
            &mut EchoHost,
            &mut w,
        );
        setter.join().unwrap();
        let reply = String::from_utf8_lossy(&out);
        assert!(
            reply.starts_with("-ERR Script killed by user with SCRIPT KILL..."),
            "{reply}"
        );
    }

    #[test]
    fn the_heap_limit_fails_the_script_not_the_process() {
        let mut vm = vm();
        let reply = eval(
            &mut vm,
            "local t = {} for i = 1, 1e8 do t[i] = i end return #t",
        );
        assert!(reply.contains("not enough memory"), "{reply}");
        assert_eq!(eval(&mut vm, "return 1"), ":1\r\n");
    }
}
