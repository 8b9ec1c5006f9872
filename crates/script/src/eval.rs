//! EVAL scripts: the cache of compiled scripts by SHA1, and running them.
//!
//! A script is compiled once, the first time EVAL sends its body or SCRIPT
//! LOAD loads it, and kept by the SHA1 of its body: EVALSHA runs it by
//! that name. The cache is bounded as Redis 7.4 bounds it: an application
//! that sends a new script body with every call (a value pasted into the
//! code instead of passed in ARGV) would otherwise grow it without end.
//! Past [`MAX_EVAL_SCRIPTS`] scripts that came through EVAL, the least
//! recently used of them is dropped (a later EVAL of it compiles it again;
//! EVALSHA of it answers NOSCRIPT, which clients handle by sending the
//! body). Scripts from SCRIPT LOAD are kept until SCRIPT FLUSH: the
//! application asked for them by name.
//!
//! Dropped scripts' compiled functions are reclaimed by Lua's collector;
//! SCRIPT FLUSH replaces the whole Lua state, as Redis does, so its
//! memory goes back at once.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use bytes::Bytes;
use keel_resp::Writer;
use mlua::Function;

use crate::flags::{shebang_flags, ScriptFlags};
use crate::host::Host;
use crate::vm::{Control, Invocation, Vm};

/// Scripts that came through EVAL kept at most, as Redis 7.4.
pub const MAX_EVAL_SCRIPTS: usize = 500;

/// What the cache holds per script besides its body.
const SCRIPT_OVERHEAD_BYTES: usize = 128;

struct Script {
    function: Function,
    body: Bytes,
    flags: ScriptFlags,
    /// For scripts that came through EVAL: their place in the
    /// least-recently-used order.
    eval_tick: Option<u64>,
}

/// The EVAL script cache and the Lua state its scripts run in.
pub struct Scripts {
    vm: Vm,
    control: Arc<Control>,
    heap_limit: usize,
    scripts: HashMap<String, Script>,
    /// EVAL scripts by last use.
    eval_order: BTreeMap<u64, String>,
    tick: u64,
    body_bytes: usize,
    evicted: u64,
}

/// The SHA1 of a script body, in lowercase hex.
pub fn sha1_hex(body: &[u8]) -> String {
    sha1_smol::Sha1::from(body).digest().to_string()
}

impl Scripts {
    pub fn new(control: Arc<Control>, heap_limit: usize) -> mlua::Result<Scripts> {
        Ok(Scripts {
            vm: Vm::new(control.clone(), heap_limit)?,
            control,
            heap_limit,
            scripts: HashMap::new(),
            eval_order: BTreeMap::new(),
            tick: 0,
            body_bytes: 0,
            evicted: 0,
        })
    }

    /// Compiles and caches `body` unless cached: its SHA1 and flags. The
    /// error is the reply, as Redis words it. `from_eval`: EVAL sent it
    /// (bounded), rather than SCRIPT LOAD (kept).
    pub fn load(&mut self, body: &Bytes, from_eval: bool) -> Result<(String, ScriptFlags), String> {
        let sha = sha1_hex(body);
        if let Some(flags) = self.scripts.get(&sha).map(|script| script.flags) {
            match from_eval {
                // Used again: the most recent of the bounded scripts now.
                true => {
                    self.touch(&sha);
                }
                // SCRIPT LOAD of a script EVAL brought: kept from now on.
                false => {
                    if let Some(tick) = self.scripts.get_mut(&sha).and_then(|s| s.eval_tick.take())
                    {
                        self.eval_order.remove(&tick);
                    }
                }
            }
            return Ok((sha, flags));
        }
        let (flags, shebang_len) = shebang_flags(body).map_err(|e| format!("ERR {e}"))?;
        // The shebang line is blanked, not cut, so line numbers stay the
        // user's.
        let code = &body[shebang_len..];
        let env = self.vm.env.clone();
        let function = self
            .vm
            .compile("@user_script", code, &env)
            .map_err(|e| format!("ERR Error compiling script (new function): {e}"))?;
        let eval_tick = from_eval.then(|| self.next_tick());
        if let Some(tick) = eval_tick {
            self.eval_order.insert(tick, sha.clone());
        }
        self.body_bytes += body.len() + SCRIPT_OVERHEAD_BYTES;
        self.scripts.insert(
            sha.clone(),
            Script {
                function,
                body: body.clone(),
                flags,
                eval_tick,
            },
        );
        self.evict_past_bound();
        Ok((sha, flags))
    }

    fn next_tick(&mut self) -> u64 {
        self.tick += 1;
        self.tick
    }

    fn evict_past_bound(&mut self) {
        while self.eval_order.len() > MAX_EVAL_SCRIPTS {
            let Some((_, sha)) = self.eval_order.pop_first() else {
                return;
            };
            if let Some(script) = self.scripts.remove(&sha) {
                self.body_bytes -= script.body.len() + SCRIPT_OVERHEAD_BYTES;
                self.evicted += 1;
            }
        }
    }

    /// The flags of the cached script `sha` (any case), marking it used.
    pub fn lookup(&mut self, sha: &[u8]) -> Option<(String, ScriptFlags)> {
        if sha.len() != 40 {
            return None;
        }
        let sha = String::from_utf8_lossy(sha).to_ascii_lowercase();
        let flags = self.touch(&sha)?;
        Some((sha, flags))
    }

    /// Marks cached script `sha` used: an EVAL script becomes the most
    /// recently used. Its flags, if cached.
    fn touch(&mut self, sha: &str) -> Option<ScriptFlags> {
        let tick = self.tick + 1;
        let script = self.scripts.get_mut(sha)?;
        if let Some(old) = script.eval_tick.replace(tick) {
            self.tick = tick;
            self.eval_order.remove(&old);
            self.eval_order.insert(tick, sha.to_string());
        }
        Some(script.flags)
    }

    /// Whether `sha` (any case) is cached.
    pub fn exists(&self, sha: &[u8]) -> bool {
        sha.len() == 40
            && self
                .scripts
                .contains_key(&String::from_utf8_lossy(sha).to_ascii_lowercase())
    }

    /// Runs cached script `sha` with `keys` and `args`, writing its reply;
    /// true when that is an error a command it ran counted (see
    /// [`Vm::run`]).
    pub fn run(
        &mut self,
        sha: &str,
        keys: &[Bytes],
        args: &[Bytes],
        host: &mut dyn Host,
        w: &mut Writer,
    ) -> bool {
        let Some(script) = self.scripts.get(sha) else {
            w.error("NOSCRIPT No matching script. Please use EVAL.");
            return false;
        };
        let function = script.function.clone();
        self.vm
            .run(&function, sha, Invocation::Eval { keys, args }, host, w)
    }

    /// Limits the Lua heap to `limit` bytes (0: no limit).
    pub fn set_heap_limit(&mut self, limit: usize) -> mlua::Result<()> {
        self.heap_limit = limit;
        self.vm.set_heap_limit(limit)
    }

    /// SCRIPT FLUSH: every script, and the Lua state with them.
    pub fn flush(&mut self) -> mlua::Result<()> {
        self.scripts.clear();
        self.eval_order.clear();
        self.body_bytes = 0;
        self.vm = Vm::new(self.control.clone(), self.heap_limit)?;
        Ok(())
    }

    /// INFO's `number_of_cached_scripts`.
    pub fn len(&self) -> usize {
        self.scripts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.scripts.is_empty()
    }

    /// INFO's `used_memory_scripts_eval`: what the cache holds.
    pub fn cache_bytes(&self) -> usize {
        self.body_bytes
    }

    /// INFO's `used_memory_vm_eval`: the Lua heap.
    pub fn vm_bytes(&self) -> usize {
        self.vm.used_memory()
    }

    /// EVAL scripts dropped from the cache past its bound.
    pub fn evicted(&self) -> u64 {
        self.evicted
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vm::tests::EchoHost;
    use keel_resp::Protocol;

    fn scripts() -> Scripts {
        Scripts::new(Control::new(Arc::new(|_, _| {})), 64 << 20).unwrap()
    }

    fn run(scripts: &mut Scripts, sha: &str, keys: &[&str]) -> String {
        let keys: Vec<Bytes> = keys.iter().map(|k| Bytes::from(k.to_string())).collect();
        let mut out = bytes::BytesMut::new();
        let mut w = Writer::new(&mut out, Protocol::Resp2);
        scripts.run(sha, &keys, &[], &mut EchoHost, &mut w);
        String::from_utf8_lossy(&out).into_owned()
    }

    #[test]
    fn scripts_run_by_sha_with_keys_as_globals() {
        let mut scripts = scripts();
        let (sha, flags) = scripts.load(&Bytes::from("return KEYS[2]"), true).unwrap();
        assert_eq!(sha, sha1_hex(b"return KEYS[2]"));
        assert_eq!(flags, ScriptFlags::EVAL_COMPAT_MODE);
        assert_eq!(run(&mut scripts, &sha, &["a", "b"]), "$1\r\nb\r\n");
        assert!(scripts.exists(sha.to_ascii_uppercase().as_bytes()));
        assert_eq!(scripts.len(), 1);
    }

    #[test]
    fn compile_errors_and_shebang_errors_are_redis_replies() {
        let mut scripts = scripts();
        let err = scripts
            .load(&Bytes::from("return string.rep('x', 3"), true)
            .unwrap_err();
        assert_eq!(
            err,
            "ERR Error compiling script (new function): user_script:1: ')' expected near '<eof>'"
        );
        let err = scripts
            .load(&Bytes::from("#!lua flags=bad\nreturn 1"), true)
            .unwrap_err();
        assert_eq!(err, "ERR Unexpected flag in script shebang: bad");
        let (sha, flags) = scripts
            .load(
                &Bytes::from("#!lua flags=no-writes\nreturn bad_global"),
                true,
            )
            .unwrap();
        assert_eq!(flags, ScriptFlags::NO_WRITES);
        assert!(run(&mut scripts, &sha, &[]).contains("on @user_script:2."));
    }

    #[test]
    fn eval_scripts_are_bounded_and_loaded_ones_kept() {
        let mut scripts = scripts();
        let (loaded, _) = scripts
            .load(&Bytes::from("return 'loaded'"), false)
            .unwrap();
        let (first, _) = scripts.load(&Bytes::from("return 0"), true).unwrap();
        for i in 1..=MAX_EVAL_SCRIPTS {
            scripts
                .load(&Bytes::from(format!("return {i}")), true)
                .unwrap();
        }
        assert_eq!(scripts.len(), MAX_EVAL_SCRIPTS + 1);
        assert!(
            !scripts.exists(first.as_bytes()),
            "the least recently used went"
        );
        assert!(scripts.exists(loaded.as_bytes()));
        assert_eq!(scripts.evicted(), 1);
        // EVAL of a cached script makes it the most recent again.
        let (second, _) = scripts.load(&Bytes::from("return 1"), true).unwrap();
        scripts
            .load(&Bytes::from("return 'one more'"), true)
            .unwrap();
        assert!(scripts.exists(second.as_bytes()), "used again, so kept");
        assert_eq!(scripts.evicted(), 2);
        let bytes = scripts.cache_bytes();
        scripts.flush().unwrap();
        assert!(scripts.is_empty() && scripts.cache_bytes() == 0 && bytes > 0);
    }
}
