//! What the scripting commands share: handing work to the script engines
//! (see `crate::scripting`), and the keys and arguments of a script call.

use bytes::Bytes;

use super::{parse_i64, Ctx, Error};
use crate::client::AfterReply;
pub use crate::scripting::gate::Kind;
pub use crate::scripting::{Session, Source};

impl Ctx<'_> {
    /// Runs `work` on the script engines: on the script thread, with the
    /// reply following when it is done; inside EXEC, here and now, under
    /// the transaction's shards.
    pub fn script_job(&mut self, work: impl FnOnce(&mut Session) + Send + 'static) {
        let job = crate::scripting::Job::new(
            Box::new(work),
            self.client.db,
            self.client.protocol,
            self.client.handle.clone(),
            self.client.acl.clone(),
        );
        if self.client.tx.executing {
            let ready = &mut self.client.ready;
            self.error_counted_elsewhere =
                crate::scripting::run_here(self.server, job, self.out, ready);
        } else {
            self.client.after_reply = Some(AfterReply::Script(job));
        }
    }

    /// SCRIPT KILL and FUNCTION KILL: stops the running script of `kind`
    /// at its next check, if it has not written, as Redis decides.
    pub fn kill_script(&mut self, kind: Kind) -> Result<(), Error> {
        let scripting = &self.server.scripting;
        let Some(running) = scripting.gate.running(self.now_ms) else {
            return Err("NOTBUSY No scripts in execution right now.".into());
        };
        if running.wrote {
            return Err("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.".into());
        }
        if running.kind != kind {
            return Err(running.kind.busy_reply().into());
        }
        scripting.kill();
        self.w().ok();
        Ok(())
    }
}

/// The spec of a script call (EVAL, EVALSHA, FCALL and their _RO forms):
/// `name script-or-function numkeys [key ...] [arg ...]`, its keys
/// counted by `numkeys`.
pub const fn script_call(
    name: &'static str,
    summary: &'static str,
    since: &'static str,
    complexity: &'static str,
    read_only: bool,
    run: super::Handler,
) -> super::Spec {
    super::Spec {
        name,
        arity: -3,
        flags: if read_only {
            &[
                "readonly",
                "noscript",
                "stale",
                "skip_monitor",
                "no_mandatory_keys",
                "movablekeys",
            ]
        } else {
            &[
                "noscript",
                "stale",
                "skip_monitor",
                "no_mandatory_keys",
                "movablekeys",
            ]
        },
        acl: &["@slow", "@scripting"],
        group: "scripting",
        summary,
        since,
        complexity,
        run,
        getkeys: Some(declared_keys),
        ..super::BASE
    }
}

/// The keys a script call declares, for [`super::Spec::getkeys`]: the
/// `numkeys` arguments after argument 2, none when it is 0 (a script may
/// declare none, as Redis's `no_mandatory_keys` flag says).
pub fn declared_keys<'a>(_: &super::Spec, args: &'a [Bytes]) -> Option<Vec<&'a Bytes>> {
    let count = usize::try_from(parse_i64(args.get(2)?).ok()?).ok()?;
    Some(args.get(3..)?.get(..count)?.iter().collect())
}

/// The keys and arguments after a script call's `numkeys` (argument 2),
/// with Redis's errors; `bad_count` is the error for a count that is no
/// integer (EVAL and FCALL word it differently).
pub fn keys_and_args(
    args: &[Bytes],
    bad_count: &'static str,
) -> Result<(Vec<Bytes>, Vec<Bytes>), Error> {
    let numkeys = parse_i64(&args[2]).map_err(|_| Error::from(bad_count))?;
    if numkeys < 0 {
        return Err("ERR Number of keys can't be negative".into());
    }
    let rest = &args[3..];
    let numkeys = usize::try_from(numkeys).unwrap_or(usize::MAX);
    if numkeys > rest.len() {
        return Err("ERR Number of keys can't be greater than number of args".into());
    }
    Ok((rest[..numkeys].to_vec(), rest[numkeys..].to_vec()))
}
