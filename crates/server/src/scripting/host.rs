//! A script's `redis.call`: the checks Redis's `scriptCall` makes before
//! a command runs from a script, the shards it reaches, and the command
//! run through dispatch as any other, on the script's own client.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use keel_resp::{Frame, Protocol};
use keel_store::ShardsLocked;

use crate::replication::journal::Block;

use crate::client::{Client, ClientHandle};
use crate::cmd::context::acl;
use crate::cmd::{self, Lookup};
use crate::scripting::Caller;
use crate::server::Server;

/// What the script may do, decided as it started.
pub struct Limits {
    /// EVAL_RO, FCALL_RO or a `no-writes` script: writes are refused.
    pub read_only: bool,
    /// An `allow-oom` script: writes run over maxmemory.
    pub allow_oom: bool,
    /// The dataset was over maxmemory when the script started.
    pub over_maxmemory: bool,
}

/// What a finished script leaves to do.
pub struct Ended {
    /// It reached a key it did not declare (INFO counts such scripts).
    pub reached_undeclared_keys: bool,
    /// Keys its writes may have made ready for blocked clients.
    pub ready: Vec<(usize, Bytes)>,
}

/// The server side of one running script.
pub struct ScriptHost<'s> {
    server: &'s Server,
    /// The script's own client: its database and user start as the
    /// caller's, and a SELECT inside the script moves only the script.
    client: Client,
    /// The caller's connection, for the ACL log.
    caller: Arc<ClientHandle>,
    now_ms: u64,
    declared: Vec<(usize, Bytes)>,
    /// The script's writes, sent to replicas together before its shards
    /// are released.
    block: Block<'s>,
    /// The shards the script holds and the claims behind them; `None`
    /// inside EXEC, which holds every shard.
    locked: Option<(ShardsLocked<'s>, Vec<u64>)>,
    limits: Limits,
    wrote: bool,
    reached_undeclared: bool,
}

/// The client scripts run their commands as; like Redis's Lua client, it
/// is not in CLIENT LIST.
fn script_client(server: &Server, caller: &Caller, db: usize) -> Client {
    let handle: Arc<ClientHandle> = server.scripting.client_handle.clone();
    let mut client = Client::new(handle, caller.acl.clone());
    client.db = db;
    // As inside EXEC: a blocking command does not block, and a write that
    // finds no room fails instead of waiting for eviction.
    client.tx.executing = true;
    client
}

impl<'s> ScriptHost<'s> {
    pub fn new(
        server: &'s Server,
        caller: &Caller,
        db: usize,
        now_ms: u64,
        keys: &[Bytes],
        locked: Option<(ShardsLocked<'s>, Vec<u64>)>,
        limits: Limits,
    ) -> ScriptHost<'s> {
        ScriptHost {
            server,
            client: script_client(server, caller, db),
            caller: caller.handle.clone(),
            now_ms,
            declared: keys.iter().map(|k| (db, k.clone())).collect(),
            block: Block::open(&server.replication.backlog),
            locked,
            limits,
            wrote: false,
            reached_undeclared: false,
        }
    }

    /// Releases the script's shards.
    pub fn end(self) -> Ended {
        drop(self.block);
        drop(self.locked);
        Ended {
            reached_undeclared_keys: self.reached_undeclared,
            ready: self.client.ready,
        }
    }

    /// A command refused before it ran, as Redis's `scriptCall` counts
    /// it: a rejected call of that command (when there is one) and an
    /// error reply. `message` is worded for the script (see
    /// `keel_script::Host::call`).
    fn refuse(&self, id: Option<usize>, message: &str) -> String {
        let reply = match message.strip_prefix('-') {
            Some(coded) => coded.to_string(),
            None => format!("ERR {message}"),
        };
        self.server.stats.record_rejection(id, &reply);
        message.to_string()
    }

    /// Makes sure the script holds the shards `args` reaches, claiming and
    /// taking those it does not (a key it did not declare).
    fn hold_shards_of(&mut self, spec: &cmd::context::Spec, args: &[Bytes]) {
        let db = self.client.db;
        let mut shards = self.server.store.shard_set();
        match cmd::context::transaction::named_keys(spec, args) {
            Some(keys) => {
                for key in keys {
                    shards.insert_key(db, key);
                    if !self.declared.iter().any(|(d, k)| *d == db && k == key) {
                        self.reached_undeclared = true;
                    }
                }
            }
            None => {
                shards.insert_all();
                self.reached_undeclared = true;
            }
        }
        let Some((locked, claimed)) = &mut self.locked else {
            return;
        };
        if shards.is_within(claimed) {
            return;
        }
        self.server.scripting.gate.claim(shards.words());
        locked.extend(&shards);
        for (held, &more) in claimed.iter_mut().zip(shards.words()) {
            *held |= more;
        }
    }
}

impl keel_script::Host for ScriptHost<'_> {
    fn call(&mut self, args: Vec<Bytes>, protocol: Protocol) -> Result<Frame, String> {
        let server = self.server;
        let (id, spec) = match cmd::lookup(&server.commands, &args) {
            Lookup::Found(id, spec) => (id, spec),
            Lookup::WrongArity(id) => {
                let arity = "Wrong number of args calling Redis command from script";
                return Err(self.refuse(Some(id), arity));
            }
            Lookup::Unknown => {
                return Err(self.refuse(None, "Unknown Redis command called from script"))
            }
        };
        if spec.has_flag("noscript") {
            return Err(self.refuse(Some(id), "This Redis command is not allowed from script"));
        }
        if let Err(denial) = acl::check(server, &self.client.acl, id, &args) {
            let caller = acl::Caller {
                server,
                handle: &self.caller,
                user: self.client.acl.user_name(),
                now_ms: self.now_ms,
            };
            caller.record_denial(denial, id, &args, keel_acl::Context::Lua);
            let reason = acl::denial_reason(denial);
            return Err(self.refuse(Some(id), &format!("The user executing the script {reason}")));
        }
        let writes = spec.has_flag("write");
        let top = spec.name.split('|').next().unwrap_or(spec.name);
        if self.limits.read_only && (writes || crate::pause::MAY_REPLICATE.contains(&top)) {
            return Err(self.refuse(
                Some(id),
                "Write commands are not allowed from read-only scripts.",
            ));
        }
        if self.limits.over_maxmemory
            && !self.limits.allow_oom
            && !self.wrote
            && spec.has_flag("denyoom")
        {
            return Err(self.refuse(Some(id), &format!("-{}", cmd::context::errors::OOM)));
        }
        if writes && !self.wrote && server.lacks_replicas() {
            return Err(self.refuse(Some(id), &format!("-{}", cmd::context::errors::NOREPLICAS)));
        }
        if writes {
            self.wrote = true;
            server.scripting.gate.note_write();
        }
        self.hold_shards_of(spec, &args);
        self.client.protocol = protocol;
        let mut out = BytesMut::new();
        cmd::call_nested(server, &mut self.client, id, &args, self.now_ms, &mut out);
        self.client.after_reply = None;
        Ok(match keel_resp::decode(&out) {
            Ok(Some((frame, _))) => frame,
            _ => Frame::Error("ERR the command's reply could not be read back".into()),
        })
    }

    fn may_run(&mut self, args: &[Bytes]) -> Option<bool> {
        let id = match cmd::lookup(&self.server.commands, args) {
            Lookup::Unknown => return None,
            Lookup::Found(id, _) | Lookup::WrongArity(id) => id,
        };
        Some(acl::check(self.server, &self.client.acl, id, args).is_ok())
    }
}
