//! The process around the server, as Redis's `daemonize`, `pidfile`,
//! `dir` and `supervised` directives arrange it: detaching from the
//! terminal, the pid file, the working directory, and telling systemd or
//! upstart when keel is ready and when it is stopping.

use crate::config::{Config, Supervised, DEFAULT_PIDFILE};

/// Sets up the process for `config` before anything else starts (no
/// thread but this one may exist yet: a fork keeps only the calling
/// thread): changes to `dir` (recording it as an absolute path), detaches
/// if `daemonize` asks and no supervisor does, and writes the pid file.
/// Returns the pid file written, to remove at exit.
pub fn prepare(config: &mut Config) -> Result<Option<String>, String> {
    config.dir = crate::config::change_dir(&config.dir)
        .map_err(|e| format!("Can't chdir to '{}': {e}", config.dir))?;
    let background = config.daemonize && supervisor(config.supervised) == Supervised::No;
    if background {
        daemonize()?;
    }
    if !background && config.pidfile.is_empty() {
        return Ok(None);
    }
    let path = if config.pidfile.is_empty() {
        DEFAULT_PIDFILE.to_string()
    } else {
        config.pidfile.clone()
    };
    // As Redis: a pid file that can't be written is a warning, not a
    // reason not to serve.
    match std::fs::write(&path, format!("{}\n", std::process::id())) {
        Ok(()) => Ok(Some(path)),
        Err(e) => {
            crate::warning!(
                "Failed to write PID file '{path}': {}",
                crate::config::strerror(&e)
            );
            Ok(None)
        }
    }
}

/// The supervisor `supervised` means here: `auto` looks at the
/// environment systemd and upstart set.
fn supervisor(supervised: Supervised) -> Supervised {
    match supervised {
        Supervised::Auto if std::env::var_os("NOTIFY_SOCKET").is_some() => Supervised::Systemd,
        Supervised::Auto if std::env::var_os("UPSTART_JOB").is_some() => Supervised::Upstart,
        Supervised::Auto => Supervised::No,
        other => other,
    }
}

/// Forks; the parent exits at once and the child, in a session of its
/// own, goes on with its standard streams on /dev/null (logging then goes
/// to `logfile` only).
fn daemonize() -> Result<(), String> {
    // SAFETY: called before any other thread exists (see `prepare`), so
    // the child is a complete copy of the process.
    match unsafe { libc::fork() } {
        -1 => return Err(format!("fork: {}", std::io::Error::last_os_error())),
        0 => {}
        _ => std::process::exit(0),
    }
    // SAFETY: setsid and dup2 only change this process's session and
    // descriptor table; `null` stays open for the dup2 calls.
    unsafe {
        libc::setsid();
        if let Ok(null) = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/null")
        {
            use std::os::fd::AsRawFd;
            for fd in 0..=2 {
                libc::dup2(null.as_raw_fd(), fd);
            }
        }
    }
    Ok(())
}

/// Tells the supervisor keel serves: systemd gets `READY=1` on
/// `$NOTIFY_SOCKET`, upstart sees the process stop itself (SIGSTOP), as
/// Redis does.
pub fn ready(supervised: Supervised) {
    match supervisor(supervised) {
        Supervised::Systemd => notify_systemd("STATUS=Ready to accept connections\nREADY=1\n"),
        Supervised::Upstart => {
            // SAFETY: raising a signal at this process has no memory effects.
            unsafe { libc::raise(libc::SIGSTOP) };
        }
        _ => {}
    }
}

/// Tells systemd keel is shutting down.
pub fn stopping(supervised: Supervised) {
    if supervisor(supervised) == Supervised::Systemd {
        notify_systemd("STOPPING=1\n");
    }
}

/// Sends `message` to systemd's notification socket (a path, or an
/// abstract name written with a leading `@`).
fn notify_systemd(message: &str) {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixDatagram};
    let Some(target) = std::env::var_os("NOTIFY_SOCKET") else {
        crate::warning!("systemd supervision requested, but NOTIFY_SOCKET not found");
        return;
    };
    let target = target.to_string_lossy().into_owned();
    let address = match target.strip_prefix('@') {
        Some(name) => SocketAddr::from_abstract_name(name.as_bytes()),
        None => SocketAddr::from_pathname(&target),
    };
    let sent = UnixDatagram::unbound()
        .and_then(|socket| socket.send_to_addr(message.as_bytes(), &address?));
    if let Err(e) = sent {
        crate::warning!("Can't send notification to systemd: {e}");
    }
}

/// Descriptors kept beyond `maxclients` (listeners, files, the log), as
/// Redis's `CONFIG_MIN_RESERVED_FDS`.
const RESERVED_DESCRIPTORS: u64 = 32;

/// Raises the open-file limit to what `maxclients` needs, as Redis does at
/// start-up; where the system allows less, lowers `maxclients` to fit and
/// says so, in Redis's words.
pub fn raise_descriptor_limit(config: &mut Config) {
    let wanted = config.maxclients + RESERVED_DESCRIPTORS;
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid rlimit to fill.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return;
    }
    let original = limit.rlim_cur;
    if original >= wanted {
        return;
    }
    // Above the hard limit only a privileged process may go.
    let attempts = [
        (wanted, wanted.max(limit.rlim_max)),
        (wanted.min(limit.rlim_max), limit.rlim_max),
    ];
    let mut error = None;
    let mut reached = original;
    for (soft, hard) in attempts {
        let raised = libc::rlimit {
            rlim_cur: soft,
            rlim_max: hard,
        };
        // SAFETY: `raised` is a valid rlimit.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            reached = soft;
            break;
        }
        error = Some(std::io::Error::last_os_error());
    }
    if reached >= wanted {
        crate::notice!(
            "Increased maximum number of open files to {wanted} (it was originally set to {original})."
        );
        return;
    }
    if reached <= RESERVED_DESCRIPTORS {
        crate::warning!(
            "Your current 'ulimit -n' of {reached} is not enough for the server to start. Please increase your \
             open file limit to at least {}. Exiting.",
            RESERVED_DESCRIPTORS + 1
        );
        std::process::exit(1);
    }
    let requested = config.maxclients;
    config.maxclients = reached - RESERVED_DESCRIPTORS;
    crate::warning!(
        "You requested maxclients of {requested} requiring at least {wanted} max file descriptors."
    );
    let why = error.map_or_else(String::new, |e| crate::config::strerror(&e));
    crate::warning!("Server can't set maximum open files to {wanted} because of OS error: {why}.");
    crate::warning!(
        "Current maximum open files is {reached}. maxclients has been reduced to {} to compensate for low ulimit. \
         If you need higher maxclients increase 'ulimit -n'.",
        config.maxclients
    );
}
