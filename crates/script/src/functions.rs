//! FUNCTION libraries, as Redis 7.0's `functions.c` and `function_lua.c`
//! keep them: FUNCTION LOAD, DELETE, FLUSH, LIST, DUMP and RESTORE, and
//! the lookup and run of FCALL.
//!
//! A library is code whose first line names it (`#!lua name=mylib`).
//! Loading it compiles the code and runs it once; while it runs, its only
//! global is a `redis` table holding `register_function`, `log`, the
//! `LOG_*` levels and the version fields, and every function it
//! registers (a name, a callback, flags, a description) becomes callable
//! by FCALL. A load is all or nothing: a compile error, a failed
//! registration, a library without functions or a function name another
//! library has leaves the libraries as they were (REPLACE keeps the old
//! library on failure). The code must only register: past
//! [`LOAD_TIMEOUT`] it is stopped.
//!
//! The functions run in a Lua state of their own, as in Redis, so that
//! SCRIPT FLUSH never drops them. A library's closures keep the
//! environment of the code that made them, so that environment is one
//! proxy whose globals switch: the load globals above while a library
//! loads, the scripts' full globals (those EVAL scripts see) when a
//! function runs. A closure that kept the load-time `redis` in a local
//! gets Redis's "can only be called on FUNCTION LOAD command" from
//! `register_function` at run time.
//!
//! Function names are looked up ignoring case, as Redis's dictionary of
//! functions does, so two libraries cannot register `f` and `F`; library
//! names are exact. FUNCTION LIST and DUMP give libraries by name, where
//! Redis gives its dictionary's order (which changes from run to run),
//! and each library's functions in the order it registered them.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use keel_resp::Writer;
use mlua::{Function, Lua, Table, Value, Variadic};

use crate::flags::ScriptFlags;
use crate::host::Host;
use crate::vm::{raise, register_log, Control, Invocation, Vm};

/// The only engine, as FUNCTION LIST names it.
const ENGINE: &str = "LUA";
/// How long a library's code may run while it loads, as Redis.
const LOAD_TIMEOUT: Duration = Duration::from_millis(500);
/// What a library's code fails with past [`LOAD_TIMEOUT`].
const LOAD_TIMEOUT_MESSAGE: &str = "FUNCTION LOAD timeout";
/// Redis's message for a bad library or function name (7.0 words both
/// alike).
const NAME_RULE: &str = "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long";
/// What a library and a function hold besides their names and code.
const LIBRARY_OVERHEAD_BYTES: usize = 96;
const FUNCTION_OVERHEAD_BYTES: usize = 64;

/// The environment of every library's code (see the module comment).
/// Returns it and `loading(on)`, which switches its globals.
const ENVIRONMENT: &str = "
local environment, api, script_globals = ...
local load_globals = { redis = environment(function() return api end) }
local current = script_globals
local function loading(on)
  if on then current = load_globals else current = script_globals end
end
return environment(function() return current end), loading";

/// FUNCTION RESTORE's policies for libraries that already exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestorePolicy {
    /// Every existing library goes first.
    Flush,
    /// A library that exists fails the restore.
    Append,
    /// A library that exists is replaced.
    Replace,
}

/// One function a library registered.
struct Registered {
    name: Bytes,
    description: Option<Bytes>,
    flags: ScriptFlags,
    callback: Function,
}

struct Library {
    name: Bytes,
    /// The whole code, first line included, as FUNCTION LOAD got it.
    code: Bytes,
    functions: Vec<Registered>,
}

impl Library {
    fn bytes(&self) -> usize {
        let functions: usize = self
            .functions
            .iter()
            .map(|f| {
                FUNCTION_OVERHEAD_BYTES
                    + f.name.len()
                    + f.description.as_ref().map_or(0, Bytes::len)
            })
            .sum();
        LIBRARY_OVERHEAD_BYTES + self.name.len() + self.code.len() + functions
    }
}

/// The key a function is found by: its name, ignoring case.
fn key_of(name: &[u8]) -> Vec<u8> {
    name.to_ascii_lowercase()
}

/// Libraries by name, and which library each function name belongs to:
/// Redis's `functionsLibCtx`.
#[derive(Default)]
struct Catalog {
    libraries: BTreeMap<Bytes, Library>,
    /// Function name ([`key_of`]) to its library's name.
    owners: HashMap<Vec<u8>, Bytes>,
    bytes: usize,
}

impl Catalog {
    fn function(&self, name: &[u8]) -> Option<&Registered> {
        let owner = self.owners.get(&key_of(name))?;
        self.libraries
            .get(owner)?
            .functions
            .iter()
            .find(|f| f.name.eq_ignore_ascii_case(name))
    }

    fn insert(&mut self, library: Library) {
        for function in &library.functions {
            self.owners
                .entry(key_of(&function.name))
                .or_insert_with(|| library.name.clone());
        }
        self.bytes += library.bytes();
        self.libraries.insert(library.name.clone(), library);
    }

    fn take(&mut self, name: &[u8]) -> Option<Library> {
        let library = self.libraries.remove(name)?;
        for function in &library.functions {
            self.owners.remove(&key_of(&function.name));
        }
        self.bytes -= library.bytes();
        Some(library)
    }

    /// The first of `library`'s functions whose name another library has.
    fn collision<'l>(&self, library: &'l Library) -> Option<&'l Bytes> {
        library
            .functions
            .iter()
            .map(|f| &f.name)
            .find(|name| self.owners.contains_key(&key_of(name)))
    }

    /// Loads library `code`, as Redis's `functionsCreateWithLibraryCtx`:
    /// its name, or the error without its `ERR` code.
    fn create(&mut self, engine: &Engine, code: &Bytes, replace: bool) -> Result<Bytes, String> {
        let metadata = Metadata::parse(code)?;
        if !valid_name(&metadata.name) {
            return Err(NAME_RULE.into());
        }
        if !metadata.engine.eq_ignore_ascii_case(ENGINE.as_bytes()) {
            return Err(format!("Engine '{}' not found", lossy(&metadata.engine)));
        }
        let old = match self.libraries.contains_key(&metadata.name[..]) {
            true if !replace => {
                return Err(format!(
                    "Library '{}' already exists",
                    lossy(&metadata.name)
                ))
            }
            true => self.take(&metadata.name),
            false => None,
        };
        let name = metadata.name.clone();
        let created = engine.create(metadata.body).and_then(|functions| {
            if functions.is_empty() {
                return Err("No functions registered".to_string());
            }
            let library = Library {
                name: name.clone(),
                code: code.clone(),
                functions,
            };
            match self.collision(&library) {
                Some(taken) => Err(format!("Function {} already exists", lossy(taken))),
                None => Ok(library),
            }
        });
        match created {
            Ok(library) => {
                self.insert(library);
                Ok(name)
            }
            Err(e) => {
                if let Some(old) = old {
                    self.insert(old);
                }
                Err(e)
            }
        }
    }

    /// Adds `staged`'s libraries, as Redis's `libraryJoin`: one that
    /// exists fails the whole join unless `replace`, and so does a
    /// function name another library has. On failure nothing changed.
    fn join(&mut self, staged: Catalog, replace: bool) -> Result<(), String> {
        let mut replaced = Vec::new();
        let mut failure = None;
        for name in staged.libraries.keys() {
            if !self.libraries.contains_key(name) {
                continue;
            }
            if !replace {
                failure = Some(format!("Library {} already exists", lossy(name)));
                break;
            }
            replaced.extend(self.take(name));
        }
        if failure.is_none() {
            failure = staged
                .libraries
                .values()
                .find_map(|library| self.collision(library))
                .map(|taken| format!("Function {} already exists", lossy(taken)));
        }
        if let Some(failure) = failure {
            for library in replaced {
                self.insert(library);
            }
            return Err(failure);
        }
        for (_, library) in staged.libraries {
            self.insert(library);
        }
        Ok(())
    }
}

/// A library's first line, as Redis's `functionExtractLibMetaData` reads
/// it.
struct Metadata<'c> {
    engine: Vec<u8>,
    name: Bytes,
    /// The code from the end of the first line: its newline stays, so
    /// line numbers are the user's.
    body: &'c [u8],
}

impl<'c> Metadata<'c> {
    fn parse(code: &'c [u8]) -> Result<Metadata<'c>, String> {
        if !code.starts_with(b"#!") {
            return Err("Missing library metadata".into());
        }
        // Redis looks for the newline in a C string: a NUL ends it.
        let end = code
            .iter()
            .position(|&b| b == b'\n' || b == 0)
            .filter(|&i| code[i] == b'\n')
            .ok_or("Invalid library metadata")?;
        let parts = keel_resp::split_words(&code[..end]).ok_or("Invalid library metadata")?;
        let (first, options) = parts.split_first().ok_or("Invalid library metadata")?;
        let mut name = None;
        for option in options {
            match option.get(..5) {
                Some(key) if key.eq_ignore_ascii_case(b"name=") => {
                    if name.is_some() {
                        return Err(
                            "Invalid metadata value, name argument was given multiple times".into(),
                        );
                    }
                    name = Some(Bytes::copy_from_slice(&option[5..]));
                }
                _ => return Err(format!("Invalid metadata value given: {}", lossy(option))),
            }
        }
        Ok(Metadata {
            engine: first.get(2..).unwrap_or_default().to_vec(),
            name: name.ok_or("Library name was not given")?,
            body: &code[end..],
        })
    }
}

/// Redis's `functionsVerifyName`: `[A-Za-z0-9_]+`.
fn valid_name(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_')
}

fn lossy(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

/// The functions a loading library has registered so far: the Lua
/// state's app data while it loads, absent otherwise.
#[derive(Default)]
struct Registering(Vec<Registered>);

/// The Lua state the functions live in.
struct Engine {
    vm: Vm,
    /// The environment of every library's code (see [`ENVIRONMENT`]).
    env: Table,
    /// `loading(on)`: switches `env` to the load globals and back.
    loading: Function,
    load_timeout: Duration,
}

impl Engine {
    fn new(control: &Arc<Control>, heap_limit: usize) -> mlua::Result<Engine> {
        let vm = Vm::new(control.clone(), heap_limit)?;
        let lua = vm.lua();
        let api = lua.create_table()?;
        api.raw_set(
            "register_function",
            lua.create_function(|lua, args: Variadic<Value>| register_function(lua, &args))?,
        )?;
        register_log(lua, &api, control)?;
        let (env, loading) = lua.load(ENVIRONMENT).set_name("=functions").call((
            vm.environment.clone(),
            api,
            vm.globals.clone(),
        ))?;
        Ok(Engine {
            vm,
            env,
            loading,
            load_timeout: LOAD_TIMEOUT,
        })
    }

    /// Compiles a library's code and runs it: the functions it
    /// registered, or the error without its `ERR` code.
    fn create(&self, body: &[u8]) -> Result<Vec<Registered>, String> {
        let chunk = self
            .vm
            .compile("@user_function", body, &self.env)
            .map_err(|e| format!("Error compiling function: {e}"))?;
        let lua = self.vm.lua();
        lua.set_app_data(Registering::default());
        let ran = self
            .loading
            .call::<()>(true)
            .map_err(|e| format!("ERR {e}"))
            .and_then(|()| {
                self.vm
                    .call_within(&chunk, self.load_timeout, LOAD_TIMEOUT_MESSAGE)
            });
        let switched_back = self.loading.call::<()>(false);
        let registered = lua.remove_app_data::<Registering>().unwrap_or_default();
        ran.map_err(|e| format!("Error registering functions: {e}"))?;
        switched_back.map_err(|e| format!("Error registering functions: ERR {e}"))?;
        Ok(registered.0)
    }
}

/// `redis.register_function`, as Redis's `luaRegisterFunction`.
fn register_function(lua: &Lua, args: &Variadic<Value>) -> mlua::Result<()> {
    const NOT_LOADING: &str = "redis.register_function can only be called on FUNCTION LOAD command";
    if lua.app_data_ref::<Registering>().is_none() {
        return Err(raise(NOT_LOADING));
    }
    let function = match args.as_slice() {
        [named] => named_registration(lua, named)?,
        [name, callback] => Registered {
            name: string_of(lua, name).ok_or_else(|| {
                raise("first argument to redis.register_function must be a string")
            })?,
            callback: match callback {
                Value::Function(f) => f.clone(),
                _ => {
                    return Err(raise(
                        "second argument to redis.register_function must be a function",
                    ))
                }
            },
            description: None,
            flags: ScriptFlags::default(),
        },
        _ => {
            return Err(raise(
                "wrong number of arguments to redis.register_function",
            ))
        }
    };
    if !valid_name(&function.name) {
        return Err(raise(NAME_RULE));
    }
    let mut registering = lua
        .app_data_mut::<Registering>()
        .ok_or_else(|| raise(NOT_LOADING))?;
    if registering.0.iter().any(|f| f.name == function.name) {
        return Err(raise("Function already exists in the library"));
    }
    registering.0.push(function);
    Ok(())
}

/// `redis.register_function{function_name=..., callback=..., flags=...,
/// description=...}`: keys in any case, errors in the order Lua's `next`
/// meets them.
fn named_registration(lua: &Lua, arguments: &Value) -> mlua::Result<Registered> {
    let Value::Table(arguments) = arguments else {
        return Err(raise("calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments)."));
    };
    let (mut name, mut callback, mut description) = (None, None, None);
    let mut flags = ScriptFlags::default();
    for pair in arguments.pairs::<Value, Value>() {
        let (key, value) = pair?;
        let key = string_of(lua, &key).ok_or_else(|| {
            raise("named argument key given to redis.register_function is not a string")
        })?;
        match key.to_ascii_lowercase().as_slice() {
            b"function_name" => {
                name = Some(string_of(lua, &value).ok_or_else(|| {
                    raise(
                        "function_name argument given to redis.register_function must be a string",
                    )
                })?);
            }
            b"description" => {
                description = Some(string_of(lua, &value).ok_or_else(|| {
                    raise("description argument given to redis.register_function must be a string")
                })?);
            }
            b"callback" => match value {
                Value::Function(f) => callback = Some(f),
                _ => {
                    return Err(raise(
                        "callback argument given to redis.register_function must be a function",
                    ))
                }
            },
            b"flags" => {
                let Value::Table(list) = value else {
                    return Err(raise("flags argument to redis.register_function must be a table representing function flags"));
                };
                flags = read_flags(lua, &list)?;
            }
            _ => return Err(raise("unknown argument given to redis.register_function")),
        }
    }
    Ok(Registered {
        name: name
            .ok_or_else(|| raise("redis.register_function must get a function name argument"))?,
        callback: callback
            .ok_or_else(|| raise("redis.register_function must get a callback argument"))?,
        description,
        flags,
    })
}

/// A registration's `flags` list: its elements 1, 2, ... up to the first
/// `nil`, each a flag's name in any case.
fn read_flags(lua: &Lua, list: &Table) -> mlua::Result<ScriptFlags> {
    let mut flags = ScriptFlags::default();
    for i in 1.. {
        let value: Value = list.get(i)?;
        if value.is_nil() {
            break;
        }
        let flag = string_of(lua, &value)
            .and_then(|name| ScriptFlags::named(&name.to_ascii_lowercase()))
            .ok_or_else(|| raise("unknown flag given"))?;
        flags.insert(flag);
    }
    Ok(flags)
}

/// A string argument as Lua's `lua_isstring` takes it: a string, or a
/// number in Lua's own formatting.
fn string_of(lua: &Lua, value: &Value) -> Option<Bytes> {
    match value {
        Value::String(_) | Value::Number(_) | Value::Integer(_) => lua
            .coerce_string(value.clone())
            .ok()
            .flatten()
            .map(|s| Bytes::copy_from_slice(&s.as_bytes())),
        _ => None,
    }
}

/// The function libraries and the Lua state their functions run in.
pub struct Functions {
    engine: Engine,
    catalog: Catalog,
    control: Arc<Control>,
    heap_limit: usize,
}

impl Functions {
    /// No libraries, in a fresh Lua state whose heap is limited to
    /// `heap_limit` bytes (0: no limit).
    pub fn new(control: Arc<Control>, heap_limit: usize) -> mlua::Result<Functions> {
        Ok(Functions {
            engine: Engine::new(&control, heap_limit)?,
            catalog: Catalog::default(),
            control,
            heap_limit,
        })
    }

    /// FUNCTION LOAD [REPLACE]: the library's name, or the error reply.
    pub fn load(&mut self, code: &Bytes, replace: bool) -> Result<String, String> {
        self.catalog
            .create(&self.engine, code, replace)
            .map(|name| lossy(&name).into_owned())
            .map_err(|e| format!("ERR {e}"))
    }

    /// The flags of function `name` (any case), if there is one.
    pub fn lookup(&self, name: &[u8]) -> Option<ScriptFlags> {
        self.catalog.function(name).map(|f| f.flags)
    }

    /// Runs function `name` with `keys` and `args` (its callback's two
    /// arguments), writing its reply; its errors name it as registered.
    /// True when the reply is an error a command it ran counted (see
    /// [`Vm::run`]).
    pub fn run(
        &mut self,
        name: &[u8],
        keys: &[Bytes],
        args: &[Bytes],
        host: &mut dyn Host,
        w: &mut Writer,
    ) -> bool {
        let Some(function) = self.catalog.function(name) else {
            w.error("ERR Function not found");
            return false;
        };
        let callback = function.callback.clone();
        let name = lossy(&function.name).into_owned();
        self.engine.vm.run(
            &callback,
            &name,
            Invocation::Function { keys, args },
            host,
            w,
        )
    }

    /// FUNCTION DELETE.
    pub fn delete(&mut self, library: &[u8]) -> Result<(), String> {
        self.catalog
            .take(library)
            .map(drop)
            .ok_or_else(|| "ERR Library not found".to_string())
    }

    /// Limits the Lua heap to `limit` bytes (0: no limit).
    pub fn set_heap_limit(&mut self, limit: usize) -> mlua::Result<()> {
        self.heap_limit = limit;
        self.engine.vm.set_heap_limit(limit)
    }

    /// FUNCTION FLUSH: every library, and the Lua state with them.
    pub fn flush(&mut self) -> mlua::Result<()> {
        self.catalog = Catalog::default();
        self.engine = Engine::new(&self.control, self.heap_limit)?;
        Ok(())
    }

    /// FUNCTION LIST's reply: the libraries whose name `matches`, by name,
    /// each with its code if `with_code`.
    pub fn list(&self, matches: &dyn Fn(&[u8]) -> bool, with_code: bool, w: &mut Writer) {
        let libraries: Vec<&Library> = self
            .catalog
            .libraries
            .values()
            .filter(|library| matches(&library.name))
            .collect();
        w.array(libraries.len());
        for library in libraries {
            w.map(if with_code { 4 } else { 3 });
            w.bulk(b"library_name");
            w.bulk(&library.name);
            w.bulk(b"engine");
            w.bulk(ENGINE.as_bytes());
            w.bulk(b"functions");
            w.array(library.functions.len());
            for function in &library.functions {
                w.map(3);
                w.bulk(b"name");
                w.bulk(&function.name);
                w.bulk(b"description");
                match &function.description {
                    Some(description) => w.bulk(description),
                    None => w.null(),
                }
                w.bulk(b"flags");
                let flags = function.flags.names();
                w.set(flags.len());
                for flag in flags {
                    w.simple(flag);
                }
            }
            if with_code {
                w.bulk(b"library_code");
                w.bulk(&library.code);
            }
        }
    }

    /// Every library's code, by name: what FUNCTION DUMP saves.
    pub fn codes(&self) -> Vec<Bytes> {
        self.catalog
            .libraries
            .values()
            .map(|library| library.code.clone())
            .collect()
    }

    /// FUNCTION RESTORE of libraries `codes`: all of them or, on error
    /// (the reply), none.
    pub fn restore(&mut self, codes: Vec<Bytes>, policy: RestorePolicy) -> Result<(), String> {
        let mut staged = Catalog::default();
        for code in &codes {
            staged
                .create(&self.engine, code, false)
                .map_err(|e| format!("ERR {e}"))?;
        }
        match policy {
            RestorePolicy::Flush => self.catalog = staged,
            RestorePolicy::Append | RestorePolicy::Replace => self
                .catalog
                .join(staged, policy == RestorePolicy::Replace)
                .map_err(|e| format!("ERR {e}"))?,
        }
        Ok(())
    }

    /// FUNCTION STATS' `libraries_count`, INFO's `number_of_libraries`.
    pub fn library_count(&self) -> usize {
        self.catalog.libraries.len()
    }

    /// FUNCTION STATS' `functions_count`, INFO's `number_of_functions`.
    pub fn function_count(&self) -> usize {
        self.catalog
            .libraries
            .values()
            .map(|library| library.functions.len())
            .sum()
    }

    /// INFO's `used_memory_vm_functions`: the Lua heap.
    pub fn vm_bytes(&self) -> usize {
        self.engine.vm.used_memory()
    }

    /// INFO's `used_memory_functions`: what the libraries' code and
    /// metadata hold.
    pub fn bytes(&self) -> usize {
        self.catalog.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vm::tests::EchoHost;
    use keel_resp::Protocol;

    fn functions() -> Functions {
        Functions::new(Control::new(Arc::new(|_, _| {})), 64 << 20).unwrap()
    }

    fn load(functions: &mut Functions, code: &str) -> Result<String, String> {
        functions.load(&Bytes::from(code.to_string()), false)
    }

    fn fcall(functions: &mut Functions, name: &str, keys: &[&str], args: &[&str]) -> String {
        let bytes = |items: &[&str]| -> Vec<Bytes> {
            items.iter().map(|s| Bytes::from(s.to_string())).collect()
        };
        let mut out = bytes::BytesMut::new();
        let mut w = Writer::new(&mut out, Protocol::Resp2);
        functions.run(
            name.as_bytes(),
            &bytes(keys),
            &bytes(args),
            &mut EchoHost,
            &mut w,
        );
        String::from_utf8_lossy(&out).into_owned()
    }

    fn list(
        functions: &Functions,
        pattern: Option<&str>,
        with_code: bool,
        protocol: Protocol,
    ) -> String {
        let mut out = bytes::BytesMut::new();
        let mut w = Writer::new(&mut out, protocol);
        let matches = |name: &[u8]| pattern.is_none_or(|p| p.as_bytes() == name);
        functions.list(&matches, with_code, &mut w);
        String::from_utf8_lossy(&out).into_owned()
    }

    /// A library that registers `body`'s calls, named `name`.
    fn library(name: &str, body: &str) -> String {
        format!("#!lua name={name}\n{body}")
    }

    #[test]
    fn functions_get_keys_and_args_and_are_found_ignoring_case() {
        let mut functions = functions();
        let code = library(
            "lib",
            "local function echo(keys, args) return {keys[1], args[2], #keys} end
             redis.register_function('echo', echo)
             redis.register_function{function_name='ro', callback=echo, flags={'NO-WRITES', 'allow-oom'}}",
        );
        assert_eq!(load(&mut functions, &code), Ok("lib".into()));
        assert_eq!(
            fcall(&mut functions, "ECHO", &["k1", "k2"], &["a1", "a2"]),
            "*3\r\n$2\r\nk1\r\n$2\r\na2\r\n:2\r\n"
        );
        assert_eq!(functions.lookup(b"Echo"), Some(ScriptFlags::default()));
        let mut read_only = ScriptFlags::NO_WRITES;
        read_only.insert(ScriptFlags::ALLOW_OOM);
        assert_eq!(functions.lookup(b"ro"), Some(read_only));
        assert_eq!(functions.lookup(b"nosuch"), None);
        assert_eq!(
            fcall(&mut functions, "nosuch", &[], &[]),
            "-ERR Function not found\r\n"
        );
        assert_eq!(
            (functions.library_count(), functions.function_count()),
            (1, 2)
        );
        assert_eq!(functions.codes(), vec![Bytes::from(code)]);
    }

    #[test]
    fn metadata_errors_are_redis_replies() {
        let mut functions = functions();
        for (code, error) in [
            ("return 1", "ERR Missing library metadata"),
            ("\"#!lua\" name=q\nx", "ERR Missing library metadata"),
            ("#!lua name=lib", "ERR Invalid library metadata"),
            ("#!lua name=lib\0\nx", "ERR Invalid library metadata"),
            ("#!lua \"name=q\nx", "ERR Invalid library metadata"),
            ("#!lua name=a NAME=b\nx", "ERR Invalid metadata value, name argument was given multiple times"),
            ("#!lua name=a foo=bar\nx", "ERR Invalid metadata value given: foo=bar"),
            ("#!lua\nx", "ERR Library name was not given"),
            ("#!py name=lib\nx", "ERR Engine 'py' not found"),
            ("#! name=lib\nx", "ERR Engine '' not found"),
            ("#!lua name=a-b\nx", "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"),
            ("#!py name=\nx", "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"),
            ("#!lua name=lib\n-- nothing", "ERR No functions registered"),
            ("#!lua name=lib\nredis.register_function('f', function( return 1 end)", "ERR Error compiling function: user_function:2: <name> or '...' expected near 'return'"),
        ] {
            assert_eq!(load(&mut functions, code), Err(error.into()), "{code:?}");
        }
        let code = "#!LUA Name=lib\nredis.register_function('f', function() return 1 end)";
        assert_eq!(load(&mut functions, code), Ok("lib".into()));
        assert_eq!(
            load(&mut functions, code),
            Err("ERR Library 'lib' already exists".into())
        );
    }

    #[test]
    fn registration_errors_are_redis_replies() {
        let mut functions = functions();
        for (body, error) in [
            ("redis.register_function()", "wrong number of arguments to redis.register_function"),
            ("redis.register_function('x', function() end, nil)", "wrong number of arguments to redis.register_function"),
            ("redis.register_function({}, function() end)", "first argument to redis.register_function must be a string"),
            ("redis.register_function('x', 1)", "second argument to redis.register_function must be a function"),
            ("redis.register_function('x')", "calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments)."),
            ("redis.register_function({})", "redis.register_function must get a function name argument"),
            ("redis.register_function({function_name='x'})", "redis.register_function must get a callback argument"),
            ("redis.register_function({[1]=2})", "unknown argument given to redis.register_function"),
            ("redis.register_function({[true]=2})", "named argument key given to redis.register_function is not a string"),
            ("redis.register_function({function_name={}, callback=function() end})", "function_name argument given to redis.register_function must be a string"),
            ("redis.register_function({function_name='x', callback=1})", "callback argument given to redis.register_function must be a function"),
            ("redis.register_function({function_name='x', callback=function() end, description={}})", "description argument given to redis.register_function must be a string"),
            ("redis.register_function({function_name='x', callback=function() end, flags='no-writes'})", "flags argument to redis.register_function must be a table representing function flags"),
            ("redis.register_function({function_name='x', callback=function() end, flags={'bad'}})", "unknown flag given"),
            ("redis.register_function({function_name='x', callback=function() end, flags={1}})", "unknown flag given"),
            ("redis.register_function('a-b', function() end)", NAME_RULE),
            ("redis.register_function(1.5, function() end)", NAME_RULE),
            ("redis.register_function('', function() end)", NAME_RULE),
            ("redis.register_function('a', function() end)\nredis.register_function('a', function() end)", "Function already exists in the library"),
        ] {
            assert_eq!(
                load(&mut functions, &library("lib", body)),
                Err(format!("ERR Error registering functions: ERR {error}")),
                "{body}"
            );
        }
        assert_eq!(functions.library_count(), 0);
        // Numbers are names, as Lua's strings; names differing by case
        // both register in one library.
        let body = "redis.register_function(12, function() return 12 end)
                    redis.register_function('a', function() return 1 end)
                    redis.register_function('A', function() return 2 end)";
        assert_eq!(
            load(&mut functions, &library("lib", body)),
            Ok("lib".into())
        );
        assert_eq!(fcall(&mut functions, "12", &[], &[]), ":12\r\n");
        assert_eq!(fcall(&mut functions, "A", &[], &[]), ":1\r\n");
    }

    #[test]
    fn loading_code_sees_only_the_library_api() {
        let logged = Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = logged.clone();
        let control = Control::new(Arc::new(move |level, line| {
            log.lock().unwrap().push((level, line.to_vec()))
        }));
        let mut functions = Functions::new(control, 64 << 20).unwrap();
        for (body, error) in [
            ("local x = string", "ERR user_function:2: Script attempted to access nonexistent global variable 'string'"),
            ("redis.call('ping')", "ERR user_function:2: Script attempted to access nonexistent global variable 'call'"),
            ("redis.math.random()", "ERR user_function:2: Script attempted to access nonexistent global variable 'math'"),
            ("pcall(function() end)", "ERR user_function:2: Script attempted to access nonexistent global variable 'pcall'"),
            ("a = 1", "ERR user_function:2: Attempt to modify a readonly table"),
            ("local lib = redis\n\nlib.redis = 1", "ERR user_function:4: Attempt to modify a readonly table"),
            ("redis.log(1)", "ERR redis.log() requires two arguments or more."),
            ("local y = redis.register_function('f', function() end) + 1", "ERR user_function:2: attempt to perform arithmetic on a nil value"),
        ] {
            assert_eq!(
                load(&mut functions, &library("lib", body)),
                Err(format!("ERR Error registering functions: {error}")),
                "{body}"
            );
        }
        let body = "redis.log(redis.LOG_WARNING, 'loading', redis.REDIS_VERSION_NUM)
                    redis.register_function('f', function() return 1 end)";
        assert_eq!(
            load(&mut functions, &library("lib", body)),
            Ok("lib".into())
        );
        assert_eq!(
            *logged.lock().unwrap(),
            [(crate::host::LogLevel::Warning, b"loading 458767".to_vec())]
        );
    }

    #[test]
    fn functions_run_with_the_scripts_globals_and_errors_name_them() {
        let mut functions = functions();
        let body = "local lib = redis
            redis.register_function('len', function(keys) return string.len(keys[1]) end)
            redis.register_function('call', function(keys) return redis.call('echo', keys[1]) end)
            redis.register_function('missing', function() return nosuch end)
            redis.register_function('nested', function() redis.register_function('g', function() end) end)
            redis.register_function('kept', function()
              lib.register_function('g', function() end)
            end)
            redis.register_function('keys', function() return KEYS end)
            redis.register_function('fail', function() return redis.call('fail') end)";
        assert_eq!(
            load(&mut functions, &library("lib", body)),
            Ok("lib".into())
        );
        assert_eq!(fcall(&mut functions, "len", &["abcd"], &[]), ":4\r\n");
        assert_eq!(
            fcall(&mut functions, "call", &["k"], &[]),
            "*2\r\n$4\r\necho\r\n$1\r\nk\r\n"
        );
        assert_eq!(
            fcall(&mut functions, "MISSING", &[], &[]),
            "-ERR user_function:5: Script attempted to access nonexistent global variable 'nosuch' script: missing, on @user_function:5.\r\n"
        );
        assert_eq!(
            fcall(&mut functions, "nested", &[], &[]),
            "-ERR user_function:6: attempt to call field 'register_function' (a nil value) script: nested, on @user_function:6.\r\n"
        );
        assert_eq!(
            fcall(&mut functions, "kept", &[], &[]),
            "-ERR redis.register_function can only be called on FUNCTION LOAD command script: kept, on @user_function:8.\r\n"
        );
        assert_eq!(
            fcall(&mut functions, "keys", &[], &[]),
            "-ERR user_function:10: Script attempted to access nonexistent global variable 'KEYS' script: keys, on @user_function:10.\r\n"
        );
        assert_eq!(
            fcall(&mut functions, "fail", &[], &[]),
            "-WRONGTYPE Operation against a key script: fail, on @user_function:11.\r\n"
        );
    }

    #[test]
    fn a_failed_load_or_replace_leaves_the_libraries_as_they_were() {
        let mut functions = functions();
        let first = library(
            "lib",
            "redis.register_function('f', function() return 1 end)",
        );
        load(&mut functions, &first).unwrap();
        let bytes = functions.bytes();
        assert_eq!(
            load(
                &mut functions,
                &library("other", "redis.register_function('F', function() end)")
            ),
            Err("ERR Function F already exists".into())
        );
        let failing = library(
            "lib",
            "redis.register_function('f', function() return 2 end)
             redis.register_function('g', 'not a function')",
        );
        assert_eq!(
            functions.load(&Bytes::from(failing), true),
            Err("ERR Error registering functions: ERR second argument to redis.register_function must be a function".into())
        );
        assert_eq!(fcall(&mut functions, "f", &[], &[]), ":1\r\n");
        assert_eq!(functions.bytes(), bytes);
        let second = library(
            "lib",
            "redis.register_function('g', function() return 2 end)",
        );
        assert_eq!(functions.load(&Bytes::from(second), true), Ok("lib".into()));
        assert_eq!(
            fcall(&mut functions, "f", &[], &[]),
            "-ERR Function not found\r\n"
        );
        assert_eq!(fcall(&mut functions, "g", &[], &[]), ":2\r\n");
        // The old library's functions no longer collide.
        assert_eq!(
            load(&mut functions, &first.replace("lib", "lib2")),
            Ok("lib2".into())
        );
    }

    #[test]
    fn a_load_that_runs_too_long_times_out() {
        let mut functions = functions();
        functions.engine.load_timeout = Duration::from_millis(20);
        let looping = library(
            "lib",
            "redis.register_function('f', function() return 1 end)\nlocal a = 1 while true do a = a + 1 end",
        );
        assert_eq!(
            load(&mut functions, &looping),
            Err("ERR Error registering functions: ERR FUNCTION LOAD timeout".into())
        );
        assert_eq!(functions.library_count(), 0);
        let quick = library("lib", "redis.register_function('f', function() local a = 0 for i = 1, 1e6 do a = a + i end return a end)");
        assert_eq!(load(&mut functions, &quick), Ok("lib".into()));
        assert_eq!(fcall(&mut functions, "f", &[], &[]), ":500000500000\r\n");
    }

    #[test]
    fn a_load_past_the_heap_limit_fails_and_the_state_goes_on() {
        let mut functions = Functions::new(Control::new(Arc::new(|_, _| {})), 1 << 20).unwrap();
        let greedy = library("lib", "local t = {} for i = 1, 1e7 do t[i] = i end");
        assert_eq!(
            load(&mut functions, &greedy),
            Err("ERR Error registering functions: ERR not enough memory".into())
        );
        let fine = library(
            "lib",
            "redis.register_function('f', function() return 1 end)",
        );
        assert_eq!(load(&mut functions, &fine), Ok("lib".into()));
        assert_eq!(fcall(&mut functions, "f", &[], &[]), ":1\r\n");
    }

    #[test]
    fn list_replies_as_redis_in_both_protocols() {
        let mut functions = functions();
        let code = library(
            "e10",
            "redis.register_function({function_name='y10', callback=function() end, flags={'NO-WRITES','allow-oom', 'allow-stale', 'no-cluster', 'allow-cross-slot-keys'}, description='hi'})",
        );
        load(&mut functions, &code).unwrap();
        load(
            &mut functions,
            &library("a", "redis.register_function('f', function() end)"),
        )
        .unwrap();
        let e10 = "$12\r\nlibrary_name\r\n$3\r\ne10\r\n$6\r\nengine\r\n$3\r\nLUA\r\n$9\r\nfunctions\r\n*1\r\n";
        let y10 = "$4\r\nname\r\n$3\r\ny10\r\n$11\r\ndescription\r\n$2\r\nhi\r\n$5\r\nflags\r\n";
        let flags = "5\r\n+no-writes\r\n+allow-oom\r\n+allow-stale\r\n+no-cluster\r\n+allow-cross-slot-keys\r\n";
        assert_eq!(
            list(&functions, Some("e10"), false, Protocol::Resp2),
            format!("*1\r\n*6\r\n{e10}*6\r\n{y10}*{flags}")
        );
        assert_eq!(
            list(&functions, Some("e10"), true, Protocol::Resp3),
            format!(
                "*1\r\n%4\r\n{e10}%3\r\n{y10}~{flags}$12\r\nlibrary_code\r\n${}\r\n{code}\r\n",
                code.len()
            )
        );
        let all = list(&functions, None, false, Protocol::Resp2);
        assert!(
            all.starts_with("*2\r\n*6\r\n$12\r\nlibrary_name\r\n$1\r\na\r\n"),
            "{all}"
        );
        assert!(
            all.contains("$11\r\ndescription\r\n$-1\r\n$5\r\nflags\r\n*0\r\n"),
            "{all}"
        );
        assert_eq!(
            list(&functions, Some("none"), false, Protocol::Resp3),
            "*0\r\n"
        );
    }

    #[test]
    fn delete_flush_and_counts() {
        let mut functions = functions();
        assert_eq!(functions.bytes(), 0);
        load(&mut functions, &library("a", "redis.register_function('f', function() end) redis.register_function('g', function() end)")).unwrap();
        load(
            &mut functions,
            &library("b", "redis.register_function('h', function() end)"),
        )
        .unwrap();
        assert_eq!(
            (functions.library_count(), functions.function_count()),
            (2, 3)
        );
        assert!(functions.bytes() > 0 && functions.vm_bytes() > 0);
        assert_eq!(functions.delete(b"A"), Err("ERR Library not found".into()));
        assert_eq!(functions.delete(b"a"), Ok(()));
        assert_eq!(functions.lookup(b"f"), None);
        assert_eq!(
            (functions.library_count(), functions.function_count()),
            (1, 1)
        );
        functions.flush().unwrap();
        assert_eq!((functions.library_count(), functions.bytes()), (0, 0));
        load(
            &mut functions,
            &library("b", "redis.register_function('h', function() return 3 end)"),
        )
        .unwrap();
        assert_eq!(fcall(&mut functions, "h", &[], &[]), ":3\r\n");
    }

    #[test]
    fn restore_is_all_or_nothing_under_each_policy() {
        let mut functions = functions();
        let code = |lib: &str, function: &str, value: u32| {
            Bytes::from(library(
                lib,
                &format!("redis.register_function('{function}', function() return {value} end)"),
            ))
        };
        load(
            &mut functions,
            &String::from_utf8_lossy(&code("lib1", "f1", 1)),
        )
        .unwrap();
        load(
            &mut functions,
            &String::from_utf8_lossy(&code("lib2", "f2", 2)),
        )
        .unwrap();
        let dump = functions.codes();
        assert_eq!(
            functions.restore(dump.clone(), RestorePolicy::Append),
            Err("ERR Library lib1 already exists".into())
        );
        assert_eq!(
            functions.restore(
                vec![code("lib1", "f1", 3), code("lib3", "F2", 3)],
                RestorePolicy::Replace
            ),
            Err("ERR Function F2 already exists".into())
        );
        assert_eq!(fcall(&mut functions, "f1", &[], &[]), ":1\r\n");
        assert_eq!(
            functions.restore(
                vec![code("lib3", "f3", 3), code("lib3", "f4", 4)],
                RestorePolicy::Append
            ),
            Err("ERR Library 'lib3' already exists".into())
        );
        assert_eq!(
            functions.restore(vec![Bytes::from("return 1")], RestorePolicy::Flush),
            Err("ERR Missing library metadata".into())
        );
        assert_eq!(functions.library_count(), 2);
        functions
            .restore(
                vec![code("lib1", "f1", 5), code("lib4", "f4", 4)],
                RestorePolicy::Replace,
            )
            .unwrap();
        assert_eq!(fcall(&mut functions, "f1", &[], &[]), ":5\r\n");
        assert_eq!(functions.library_count(), 3);
        functions.restore(dump, RestorePolicy::Flush).unwrap();
        assert_eq!(fcall(&mut functions, "f1", &[], &[]), ":1\r\n");
        assert_eq!(functions.lookup(b"f4"), None);
        functions
            .restore(vec![code("lib4", "f4", 4)], RestorePolicy::Append)
            .unwrap();
        assert_eq!(functions.library_count(), 3);
    }
}
