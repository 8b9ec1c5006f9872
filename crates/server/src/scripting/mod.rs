//! Scripting: where EVAL scripts and functions run, and how they stay
//! atomic on a sharded, multi-threaded keyspace.
//!
//! The engines (`keel_script`: the EVAL cache and the function libraries,
//! each with its Lua state) are one per server, behind one lock, so SCRIPT
//! LOAD or FUNCTION LOAD on one connection is visible at once on every
//! other, and scripts run one at a time, as in Redis.
//!
//! Scripts run on a thread of their own (`keel-scripts`), not on the
//! caller's worker: a script may run for seconds or forever, and a worker
//! serves many connections. The caller's command hands the work over as a
//! [`Job`] (see `Ctx::script_job`); its connection waits for the reply
//! without holding up its worker, and gets BUSY instead if another script
//! is past `busy-reply-threshold` before its own starts. Inside MULTI/EXEC
//! the work runs on the worker, under the shards EXEC holds (EXEC takes
//! every shard when its queue holds a script): no other client sees the
//! transaction half done, scripts included.
//!
//! Atomicity: a script locks the shards of the keys it declares (KEYS),
//! in the global order, after claiming them at the [`gate`] — so no other
//! command waits on their locks: it waits at its connection instead, until
//! the script ends, or gets BUSY past the threshold. A script that reaches
//! a key it did not declare (which Redis allows outside cluster mode, and
//! libraries do) claims that key's shard the same way when it reaches it,
//! and takes it; the gate guarantees no thread holding that shard waits
//! for one the script holds, so this cannot deadlock, and the script stays
//! atomic: every key it touched is held until it ends. Such scripts are
//! counted in INFO (`scripts_undeclared_keys`): each pays a wait for the
//! commands in flight when it claims, and holds up commands on the shards
//! it reaches. The trade-off against taking every shard for every script
//! (Redis's single thread, in effect): commands on other shards run while
//! a script runs, at the price of the gate's fence on every command.
//!
//! The shards are released when the script ends; then the clients its
//! writes unblocked are served, and commands that waited run.

pub mod gate;
mod host;

use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use keel_resp::{Protocol, Writer};
use keel_script::{Control, Functions, LogLevel, ScriptFlags, Scripts};
use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::client::ClientHandle;
use crate::cmd::context::errors;
use crate::cmd::context::scripting::keys_and_args;
use crate::cmd::Execution;
use crate::server::Server;
use crate::stats::Outcome;
use gate::{Gate, Kind};
use host::ScriptHost;

/// The engines: every script and function library of the server.
pub struct Engines {
    /// EVAL's script cache and Lua state.
    pub scripts: Scripts,
    /// FUNCTION's libraries and their Lua state.
    pub functions: Functions,
    /// The limit both Lua states have.
    heap_limit: usize,
}

/// The server's scripting: engines, gate, kill switch and job queue.
pub struct Scripting {
    /// Where commands meet the running script.
    pub gate: Gate,
    /// SCRIPT KILL's switch, the random generator, the log.
    pub control: Arc<Control>,
    engines: Mutex<Engines>,
    jobs: Mutex<Option<std::sync::mpsc::Sender<Job>>>,
    /// Scripts that reached a key they did not declare.
    pub undeclared_keys: AtomicU64,
    /// The client scripts run their commands as.
    pub client_handle: Arc<ClientHandle>,
    /// `lua-maxmemory`, applied to the engines as the next job starts.
    heap_limit: AtomicUsize,
    /// INFO's and FUNCTION STATS's view of the engines, kept as each job
    /// ends, so they never wait for a running script.
    memory: [AtomicUsize; 8],
}

/// What the engines hold, for INFO and FUNCTION STATS.
pub struct EnginesMemory {
    /// EVAL scripts dropped from the cache past its bound.
    pub evicted_scripts: usize,
    pub cached_scripts: usize,
    pub scripts_bytes: usize,
    pub eval_heap: usize,
    pub libraries: usize,
    pub functions: usize,
    pub functions_bytes: usize,
    pub functions_heap: usize,
}

impl Scripting {
    pub fn new(databases: usize, heap_limit: usize) -> Scripting {
        let logger: keel_script::Logger = Arc::new(|level, line: &[u8]| {
            let level = match level {
                LogLevel::Debug => crate::log::Level::Debug,
                LogLevel::Verbose => crate::log::Level::Verbose,
                LogLevel::Notice => crate::log::Level::Notice,
                LogLevel::Warning => crate::log::Level::Warning,
            };
            crate::log::write(level, format_args!("{}", String::from_utf8_lossy(line)));
        });
        let control = Control::new(logger);
        let scripts = Scripts::new(control.clone(), heap_limit).expect("a fresh Lua state starts");
        let functions =
            Functions::new(control.clone(), heap_limit).expect("a fresh Lua state starts");
        let scripting = Scripting {
            gate: Gate::new(databases),
            control,
            engines: Mutex::new(Engines {
                scripts,
                functions,
                heap_limit,
            }),
            jobs: Mutex::new(None),
            undeclared_keys: AtomicU64::new(0),
            client_handle: Arc::new(ClientHandle::unlisted()),
            heap_limit: AtomicUsize::new(heap_limit),
            memory: Default::default(),
        };
        scripting.note_memory(&scripting.engines.lock());
        scripting
    }

    /// What the engines hold, as the last job left them.
    pub fn memory(&self) -> EnginesMemory {
        let [cached_scripts, scripts_bytes, eval_heap, libraries, functions, functions_bytes, functions_heap, evicted_scripts] =
            self.memory.each_ref().map(|m| m.load(Ordering::Relaxed));
        EnginesMemory {
            evicted_scripts,
            cached_scripts,
            scripts_bytes,
            eval_heap,
            libraries,
            functions,
            functions_bytes,
            functions_heap,
        }
    }

    /// Updates what [`Scripting::memory`] reports.
    fn note_memory(&self, engines: &Engines) {
        let (scripts, functions) = (&engines.scripts, &engines.functions);
        let values = [
            scripts.len(),
            scripts.cache_bytes(),
            scripts.vm_bytes(),
            functions.library_count(),
            functions.function_count(),
            functions.bytes(),
            functions.vm_bytes(),
            scripts.evicted() as usize,
        ];
        for (field, value) in self.memory.iter().zip(values) {
            field.store(value, Ordering::Relaxed);
        }
    }

    /// The code of every function library, as FUNCTION DUMP and a
    /// snapshot save them. Waits for a running script or function job.
    pub fn library_codes(&self) -> Vec<Bytes> {
        self.engines.lock().functions.codes()
    }

    /// Loads the libraries of an RDB file: in place of every library there
    /// is if `replace_all`, else beside them, replacing those of the same
    /// name.
    pub fn load_libraries(&self, codes: Vec<Bytes>, replace_all: bool) -> Result<(), String> {
        let policy = match replace_all {
            true => keel_script::RestorePolicy::Flush,
            false => keel_script::RestorePolicy::Replace,
        };
        let mut engines = self.engines();
        let loaded = engines.functions.restore(codes, policy);
        self.note_memory(&engines);
        loaded
    }

    /// `lua-maxmemory`: each Lua state's limit from the next job on.
    pub fn set_heap_limit(&self, bytes: usize) {
        self.heap_limit.store(bytes, Ordering::Relaxed);
    }

    /// The engines, `lua-maxmemory` applied to them.
    fn engines(&self) -> parking_lot::MutexGuard<'_, Engines> {
        let mut engines = self.engines.lock();
        let limit = self.heap_limit.load(Ordering::Relaxed);
        if engines.heap_limit != limit {
            engines.heap_limit = limit;
            // Lowering the limit under what a state holds fails only its
            // next allocation; the log says why scripts fail then.
            for result in [
                engines.scripts.set_heap_limit(limit),
                engines.functions.set_heap_limit(limit),
            ] {
                if let Err(e) = result {
                    crate::warning!("lua-maxmemory {limit} not applied: {e}");
                }
            }
        }
        engines
    }

    /// Whether a script command may write, as Redis derives EVAL's and
    /// FCALL's flags from the script's (for CLIENT PAUSE WRITE): a script
    /// without a shebang may, one flagged `no-writes` may not, nor may the
    /// _RO forms. A cached script or function is looked up only if no
    /// script holds the engines now; otherwise it may.
    pub fn may_write(&self, command: &str, args: &[Bytes]) -> bool {
        let flags = match command {
            "eval_ro" | "evalsha_ro" | "fcall_ro" => return false,
            "eval" => keel_script::shebang_flags(&args[1])
                .ok()
                .map(|(flags, _)| flags),
            "evalsha" => self
                .engines
                .try_lock()
                .and_then(|mut engines| engines.scripts.lookup(&args[1]).map(|(_, flags)| flags)),
            "fcall" => self
                .engines
                .try_lock()
                .and_then(|engines| engines.functions.lookup(&args[1])),
            _ => return true,
        };
        flags.is_none_or(|flags| {
            flags.contains(ScriptFlags::EVAL_COMPAT_MODE) || !flags.contains(ScriptFlags::NO_WRITES)
        })
    }

    /// Stops the running script at its next check (SCRIPT KILL).
    pub fn kill(&self) {
        self.control.killed.store(true, Ordering::Relaxed);
    }

    /// Hands `job` to the script thread; `None` when it is not running
    /// (a server built for a test).
    fn submit(&self, job: Job) -> Option<()> {
        self.jobs.lock().as_ref()?.send(job).ok()
    }
}

/// The script thread's stack: Lua recurses on the C stack (a script's
/// calls, the parser, error handling), up to Lua's own limits, which a
/// default 2 MB stack does not always reach safely.
const SCRIPT_THREAD_STACK_BYTES: usize = 64 << 20;

/// Starts the script thread.
pub fn start(server: Arc<Server>) -> std::io::Result<()> {
    let (sender, jobs) = std::sync::mpsc::channel::<Job>();
    *server.scripting.jobs.lock() = Some(sender);
    std::thread::Builder::new()
        .name("keel-scripts".into())
        .stack_size(SCRIPT_THREAD_STACK_BYTES)
        .spawn(move || {
            for job in jobs {
                job.run(&server);
            }
        })?;
    Ok(())
}

const QUEUED: u8 = 0;
const STARTED: u8 = 1;
const CANCELLED: u8 = 2;

/// Work for the engines, from one command.
pub struct Job {
    work: Box<dyn FnOnce(&mut Session) + Send>,
    db: usize,
    protocol: Protocol,
    client: Arc<ClientHandle>,
    /// The caller's user: the script's commands are checked against it.
    acl: crate::acl::Session,
    /// The command's run, recorded once the job is done (as a blocked
    /// command's is once served).
    pub execution: Option<Execution>,
    /// CLIENT REPLY OFF or SKIP: the reply is dropped.
    pub silent: bool,
    state: Arc<AtomicU8>,
    reply: oneshot::Sender<BytesMut>,
    waiting: Option<Waiting>,
}

/// The connection's end of a [`Job`].
pub struct Waiting {
    state: Arc<AtomicU8>,
    reply: oneshot::Receiver<BytesMut>,
}

impl Job {
    pub fn new(
        work: Box<dyn FnOnce(&mut Session) + Send>,
        db: usize,
        protocol: Protocol,
        client: Arc<ClientHandle>,
        acl: crate::acl::Session,
    ) -> Job {
        let state = Arc::new(AtomicU8::new(QUEUED));
        let (reply, receiver) = oneshot::channel();
        Job {
            work,
            db,
            protocol,
            client,
            acl,
            execution: None,
            silent: false,
            state: state.clone(),
            reply,
            waiting: Some(Waiting {
                state,
                reply: receiver,
            }),
        }
    }

    /// Runs the job on the script thread, unless its connection gave up
    /// waiting, and sends the reply.
    fn run(self, server: &Server) {
        if self
            .state
            .compare_exchange(QUEUED, STARTED, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return;
        }
        let started = Instant::now();
        let mut out = BytesMut::new();
        let caller = Caller {
            handle: self.client.clone(),
            acl: self.acl.clone(),
        };
        let mut session = Session::new(server, &mut out, self.protocol, self.db, caller, false);
        (self.work)(&mut session);
        server.scripting.note_memory(&session.engines());
        let ready = std::mem::take(&mut session.ready);
        let session_error_counted = session.error_counted_elsewhere;
        if !ready.is_empty() {
            server.blocking.serve(server, ready);
        }
        let deferred = server.scripting.gate.take_deferred();
        if !deferred.is_empty() {
            server.blocking.serve(server, deferred);
        }
        if let Some(execution) = self.execution {
            let error = crate::cmd::dispatch::error_replied(&out);
            let outcome = match &error {
                Some(_) if session_error_counted => Outcome::FailedCountedElsewhere,
                Some(reply) => Outcome::Failed(reply),
                None => Outcome::Succeeded,
            };
            execution.record_run(server, &self.client, started.elapsed(), outcome);
        }
        let _ = self.reply.send(out);
    }
}

impl Waiting {
    /// Gives up on a job that has not started: true if it never will.
    pub fn cancel(&self) -> bool {
        self.state
            .compare_exchange(QUEUED, CANCELLED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// The reply, once the job is done; `None` if the thread is gone.
    pub async fn reply(&mut self) -> Option<BytesMut> {
        (&mut self.reply).await.ok()
    }
}

/// Hands `job` to the script thread and returns its connection's end.
pub fn submit(server: &Server, mut job: Job) -> Option<Waiting> {
    let waiting = job.waiting.take()?;
    server.scripting.submit(job)?;
    Some(waiting)
}

/// Runs `job` where it is (inside EXEC, on the worker), appending its
/// reply to `out`; the blocked clients its writes unblocked join `ready`.
/// True when the reply is an error a command the script ran counted.
pub fn run_here(
    server: &Server,
    job: Job,
    out: &mut BytesMut,
    ready: &mut Vec<(usize, Bytes)>,
) -> bool {
    let caller = Caller {
        handle: job.client.clone(),
        acl: job.acl.clone(),
    };
    let mut session = Session::new(server, out, job.protocol, job.db, caller, true);
    (job.work)(&mut session);
    server.scripting.note_memory(&session.engines());
    ready.append(&mut session.ready);
    session.error_counted_elsewhere
}

/// What a script source names: a body to compile, or a cached SHA1.
pub enum Source {
    Body(Bytes),
    Sha(Bytes),
}

/// A job's view of the engines and of its caller.
/// Who runs a script: the connection, and its user, whose permissions
/// its commands are checked against.
pub struct Caller {
    pub handle: Arc<ClientHandle>,
    pub acl: crate::acl::Session,
}

pub struct Session<'a> {
    server: &'a Server,
    out: &'a mut BytesMut,
    protocol: Protocol,
    db: usize,
    caller: Caller,
    now_ms: u64,
    /// Inside EXEC: the transaction holds every shard already.
    inside_exec: bool,
    /// Keys the script's writes may have made ready for blocked clients.
    ready: Vec<(usize, Bytes)>,
    /// The reply is an error a command the script ran counted already.
    error_counted_elsewhere: bool,
}

impl<'a> Session<'a> {
    /// A job's session for a caller in database `db` speaking `protocol`,
    /// its reply going to `out`; `inside_exec` when EXEC runs it.
    fn new(
        server: &'a Server,
        out: &'a mut BytesMut,
        protocol: Protocol,
        db: usize,
        caller: Caller,
        inside_exec: bool,
    ) -> Session<'a> {
        Session {
            server,
            out,
            protocol,
            db,
            caller,
            now_ms: crate::server::unix_ms(),
            inside_exec,
            ready: Vec::new(),
            error_counted_elsewhere: false,
        }
    }

    /// The reply writer, in the caller's protocol.
    pub fn w(&mut self) -> Writer<'_> {
        Writer::new(self.out, self.protocol)
    }

    /// `+OK`, or the error a management command met.
    /// Sends `args` to the replicas as they are: a change to the libraries
    /// (FUNCTION LOAD, DELETE, FLUSH, RESTORE), so FCALL_RO finds them on a
    /// replica, as in Redis.
    pub fn replicate(&self, args: &[Bytes]) {
        let backlog = &self.server.replication.backlog;
        crate::replication::journal::Journal { backlog }.outside_the_keyspace(args);
    }

    pub fn reply_ok(&mut self, result: Result<(), String>) {
        match result {
            Ok(()) => self.w().ok(),
            Err(e) => self.w().error(&e),
        }
    }

    /// The caller's protocol.
    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// The engines, locked until the guard goes. A script's run takes
    /// them only once its shards are claimed and locked: a transaction in
    /// flight when it claims may be waiting for them (see [`run_here`]).
    pub fn engines(&self) -> parking_lot::MutexGuard<'_, Engines> {
        self.server.scripting.engines()
    }

    /// `lua-maxmemory`: the most a payload's libraries may take to decode.
    pub fn heap_limit(&self) -> usize {
        self.server.scripting.heap_limit.load(Ordering::Relaxed)
    }

    /// EVAL, EVALSHA and their _RO forms: finds or compiles the script,
    /// checks it may run as Redis's `scriptPrepareForRun` does, and runs
    /// it over `keys` and `args`.
    pub fn eval(&mut self, command: &[Bytes], source: Source, read_only: bool) {
        let (keys, args) = match keys_and_args(command, errors::NOT_INTEGER) {
            Ok(split) => split,
            Err(e) => return self.w().error(&e.0),
        };
        let found = {
            let scripts = &mut self.engines().scripts;
            match source {
                Source::Body(body) => scripts.load(&body, true),
                Source::Sha(sha) => scripts
                    .lookup(&sha)
                    .ok_or_else(|| "NOSCRIPT No matching script. Please use EVAL.".to_string()),
            }
        };
        let (sha, flags) = match found {
            Ok(found) => found,
            Err(e) => return self.w().error(&e),
        };
        let name = sha.clone();
        self.run(
            Kind::Eval,
            &name,
            command,
            flags,
            read_only,
            &keys,
            |engines, host, w| engines.scripts.run(&sha, &keys, &args, host, w),
        );
    }

    /// FCALL and FCALL_RO: finds the function, then runs it as
    /// [`Session::eval`] runs a script.
    pub fn fcall(&mut self, command: &[Bytes], read_only: bool) {
        let name = &command[1];
        let Some(flags) = self.engines().functions.lookup(name) else {
            return self.w().error("ERR Function not found");
        };
        let (keys, args) = match keys_and_args(command, "ERR Bad number of keys provided") {
            Ok(split) => split,
            Err(e) => return self.w().error(&e.0),
        };
        let shown = String::from_utf8_lossy(name).into_owned();
        self.run(
            Kind::Function,
            &shown,
            command,
            flags,
            read_only,
            &keys,
            |engines, host, w| engines.functions.run(name, &keys, &args, host, w),
        );
    }

    /// Runs a script of `kind` with `flags` over `keys`: refuses it as
    /// Redis would, or claims and locks its keys' shards (unless EXEC
    /// holds them), runs `body` and releases them.
    #[allow(clippy::too_many_arguments)]
    fn run(
        &mut self,
        kind: Kind,
        name: &str,
        command: &[Bytes],
        flags: ScriptFlags,
        read_only: bool,
        keys: &[Bytes],
        body: impl FnOnce(&mut Engines, &mut ScriptHost, &mut Writer) -> bool,
    ) {
        let server = self.server;
        let compatible = flags.contains(ScriptFlags::EVAL_COMPAT_MODE);
        let writes = compatible || !flags.contains(ScriptFlags::NO_WRITES);
        if !compatible && flags.contains(ScriptFlags::NO_CLUSTER) && server.cluster.is_some() {
            return self
                .w()
                .error("ERR Can not run script on cluster, 'no-cluster' flag is set.");
        }
        if !compatible && writes && read_only {
            return self
                .w()
                .error("ERR Can not execute a script with write flag using *_ro command.");
        }
        if !compatible && writes && server.lacks_replicas() {
            return self.w().error(errors::NOREPLICAS);
        }
        let over_maxmemory = server.make_room(self.now_ms, 0).is_none();
        let allow_oom = !compatible && flags.contains(ScriptFlags::ALLOW_OOM);
        if !compatible && writes && !allow_oom && over_maxmemory {
            return self.w().error(errors::OOM);
        }
        let mut shards = server.store.shard_set();
        for key in keys {
            shards.insert_key(self.db, key);
        }
        let gate = &server.scripting.gate;
        let locked = match self.inside_exec {
            true => None,
            false => {
                let threshold = server.hot.busy_reply_threshold_ms.load(Ordering::Relaxed);
                gate.start(kind, name, command, self.now_ms, threshold);
                gate.claim(shards.words());
                let claimed = shards.words().to_vec();
                Some((shards.lock(), claimed))
            }
        };
        let mut host = ScriptHost::new(
            server,
            &self.caller,
            self.db,
            self.now_ms,
            keys,
            locked,
            host::Limits {
                read_only: read_only || !writes,
                allow_oom,
                over_maxmemory,
            },
        );
        let mut w = Writer::new(self.out, self.protocol);
        self.error_counted_elsewhere = body(&mut server.scripting.engines(), &mut host, &mut w);
        let ended = host.end();
        if !self.inside_exec {
            gate.end();
        }
        if ended.reached_undeclared_keys {
            server
                .scripting
                .undeclared_keys
                .fetch_add(1, Ordering::Relaxed);
        }
        self.ready.extend(ended.ready);
    }
}
