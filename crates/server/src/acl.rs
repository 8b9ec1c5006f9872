//! The server's ACL state: its users (see `keel_acl`), the ACL log, the
//! denial counters, and each connection's [`Session`].
//!
//! Users change rarely and are read on every command, so they are kept
//! copy-on-write: ACL SETUSER, DELUSER, LOAD and CONFIG SET requirepass
//! build a new [`Users`], swap it in under a write lock and bump
//! [`Acl::generation`]. A connection keeps the `Arc<Users>` it last saw
//! and, per command, compares one counter that no command writes (so its
//! cache line stays shared by every core) with the generation it holds;
//! only a change makes it take the lock. The permission check itself is
//! one test for a user allowed everything (`default`, unless restricted),
//! and the lookup of keys and channels only for restricted users.
//!
//! Lock order: `users` before `log`; neither is held while a client is
//! killed or a reply is written.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use keel_acl::{Catalog, CommandDef, Entry, Log, Users};
use parking_lot::{Mutex, RwLock};

use crate::cmd::Table;
use crate::config::Config;

/// ACL LOG's default length (`acllog-max-len`).
pub const DEFAULT_LOG_LEN: usize = 128;

/// Denials and failed logins, for INFO (Redis 7.2's `acl_access_denied_*`).
#[derive(Default)]
pub struct DeniedCounts {
    pub auth: AtomicU64,
    pub command: AtomicU64,
    pub key: AtomicU64,
    pub channel: AtomicU64,
}

/// The server's users and ACL log.
pub struct Acl {
    pub catalog: Catalog,
    users: RwLock<Arc<Users>>,
    generation: AtomicU64,
    /// The `requirepass` last given to the default user, so that a CONFIG
    /// SET of another directive leaves ACL SETUSER's changes alone.
    applied_requirepass: Mutex<String>,
    log: Mutex<Log>,
    pub denied: DeniedCounts,
}

impl Acl {
    /// The users `config` defines: `requirepass`, then its `user` lines,
    /// or its `aclfile` (Redis refuses both at once).
    pub fn new(table: &Table, config: &Config) -> Result<Acl, String> {
        let catalog = Catalog::new(table.specs().iter().map(|spec| CommandDef {
            name: spec.name,
            categories: spec.acl,
            no_auth: spec.has_flag("no_auth"),
        }));
        let mut users = Users::new(&catalog);
        users.set_default_password(config.requirepass.as_bytes(), &catalog);
        let lines: Vec<Vec<Vec<u8>>> = (config.users.iter())
            .map(|words| words.iter().map(|w| w.as_bytes().to_vec()).collect())
            .collect();
        let aclfile = config.value("aclfile");
        if !aclfile.is_empty() && !lines.is_empty() {
            return Err("Configuring Redis with users defined in redis.conf and at the same setting an ACL \
                        file path is invalid. This setup is very likely to lead to configuration errors and \
                        security holes, please define either an ACL file or declare users directly in your \
                        redis.conf, but not both."
                .into());
        }
        users = users.with_config_lines(&lines, &catalog)?;
        if !aclfile.is_empty() {
            let text = std::fs::read_to_string(&aclfile)
                .map_err(|e| format!("Error loading ACLs, opening file '{aclfile}': {e}"))?;
            users = Users::parse_file(&text, &aclfile, &catalog)?;
        }
        Ok(Acl {
            catalog,
            users: RwLock::new(Arc::new(users)),
            generation: AtomicU64::new(0),
            applied_requirepass: Mutex::new(config.requirepass.clone()),
            log: Mutex::new(Log::default()),
            denied: DeniedCounts::default(),
        })
    }

    /// Changes every connection sees before its next command.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The users as they are now.
    pub fn users(&self) -> Arc<Users> {
        self.users.read().clone()
    }

    /// Changes the users with `change`, which sees a copy: kept (and seen
    /// by every connection) if it returns `Ok`, dropped if not.
    pub fn update<T, E>(&self, change: impl FnOnce(&mut Users) -> Result<T, E>) -> Result<T, E> {
        let mut users = self.users.write();
        let mut next = Users::clone(&users);
        let result = change(&mut next)?;
        *users = Arc::new(next);
        self.generation.fetch_add(1, Ordering::AcqRel);
        Ok(result)
    }

    /// CONFIG SET requirepass: the default user's password, when it
    /// changed.
    pub fn apply_requirepass(&self, requirepass: &str) {
        let mut applied = self.applied_requirepass.lock();
        if *applied != requirepass {
            let catalog = &self.catalog;
            let _ = self.update(|users| {
                users.set_default_password(requirepass.as_bytes(), catalog);
                Ok::<(), ()>(())
            });
            *applied = requirepass.to_string();
        }
    }

    /// Records a denial or a failed login in the ACL log.
    pub fn log(&self, entry: Entry, max_len: usize) {
        self.log.lock().add(entry, max_len);
    }

    /// Runs `read` on the ACL log (ACL LOG).
    pub fn with_log<T>(&self, read: impl FnOnce(&mut Log) -> T) -> T {
        read(&mut self.log.lock())
    }
}

/// A connection's user and what it may do, as of one ACL generation.
#[derive(Clone)]
pub struct Session {
    generation: u64,
    users: Arc<Users>,
    user: Vec<u8>,
    /// AUTH or HELLO AUTH succeeded, or the default user needed none when
    /// the connection started.
    pub authenticated: bool,
    /// The user may run anything: nothing to check.
    unrestricted: bool,
    /// The default user has a password or is off: a connection that has
    /// not authenticated may run only AUTH, HELLO and the like.
    auth_required: bool,
    /// A script's or the replication link's client: no user limits it, as
    /// Redis's clients without a user.
    internal: bool,
}

impl Session {
    /// A new connection's: the default user, authenticated if it needs no
    /// password, as Redis's `createClient`.
    pub fn new(acl: &Acl) -> Session {
        let mut session = Session {
            generation: acl.generation(),
            users: acl.users(),
            user: b"default".to_vec(),
            authenticated: false,
            unrestricted: false,
            auth_required: false,
            internal: false,
        };
        session.derive();
        session.authenticated = !session.auth_required;
        session
    }

    /// An internal client's (the replication link's): allowed everything.
    pub fn internal(acl: &Acl) -> Session {
        let mut session = Session::new(acl);
        session.internal = true;
        session.derive();
        session.authenticated = true;
        session
    }

    fn derive(&mut self) {
        let default = self.users.default_user();
        self.auth_required = !default.nopass() || !default.enabled();
        self.unrestricted =
            self.internal || self.users.get(&self.user).is_some_and(|u| u.unrestricted());
    }

    /// Catches up with changes to the users. A connection whose user was
    /// deleted falls back to the default user, unauthenticated (it is
    /// being disconnected).
    pub fn refresh(&mut self, acl: &Acl) {
        let generation = acl.generation();
        if generation == self.generation {
            return;
        }
        self.generation = generation;
        self.users = acl.users();
        if self.users.get(&self.user).is_none() {
            self.user = b"default".to_vec();
            self.authenticated = false;
        }
        self.derive();
    }

    /// Logs in as `user` (already checked).
    pub fn log_in(&mut self, acl: &Acl, user: &[u8]) {
        self.refresh(acl);
        self.user = user.to_vec();
        self.authenticated = true;
        self.derive();
    }

    /// Back to the default user, as RESET does.
    pub fn reset(&mut self, acl: &Acl) {
        *self = Session::new(acl);
    }

    /// The connection may not run a command before authenticating.
    pub fn needs_auth(&self) -> bool {
        !self.authenticated && self.auth_required
    }

    pub fn unrestricted(&self) -> bool {
        self.unrestricted
    }

    pub fn user_name(&self) -> &[u8] {
        &self.user
    }

    pub fn user(&self) -> Option<&keel_acl::User> {
        self.users.get(&self.user)
    }
}
