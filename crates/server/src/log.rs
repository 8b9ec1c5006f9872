//! Logging to stderr or the `logfile`, in Redis's line format
//! (`pid:M 23 Nov 2026 10:00:00.123 * message`, `S` on a replica) so log scrapers written for
//! Redis keep working; and to syslog too with `syslog-enabled`, as Redis does. The file stays
//! open; SIGHUP reopens it by name, so logrotate can move it away.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use parking_lot::Mutex;

/// Log levels, in Redis's order and spelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Everything, for development.
    Debug,
    /// Much, rarely useful.
    Verbose,
    /// What an operator wants in production.
    Notice,
    /// Only what needs attention.
    Warning,
}

impl Level {
    /// The `loglevel` names, in order.
    pub const NAMES: [&'static str; 4] = ["debug", "verbose", "notice", "warning"];

    /// Parses a `loglevel` value.
    pub fn parse(name: &str) -> Option<Level> {
        let at = Self::NAMES
            .iter()
            .position(|n| n.eq_ignore_ascii_case(name))?;
        Some([Level::Debug, Level::Verbose, Level::Notice, Level::Warning][at])
    }

    /// The `loglevel` spelling.
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    fn symbol(self) -> char {
        ['.', '-', '*', '#'][self as usize]
    }
}

static LEVEL: AtomicU8 = AtomicU8::new(Level::Notice as u8);
/// The log file and its path; none for stderr.
static FILE: Mutex<Option<(std::fs::File, String)>> = Mutex::new(None);
/// Lines go to syslog too (`syslog-enabled`).
static SYSLOG: AtomicBool = AtomicBool::new(false);

/// Whether lines carry a replica's role letter (`S`) rather than a
/// primary's (`M`), as Redis's do.
static REPLICA: AtomicBool = AtomicBool::new(false);

/// Marks the lines that follow as a replica's, or a primary's.
pub fn set_replica(replica: bool) {
    REPLICA.store(replica, Ordering::Relaxed);
}

/// Sets the minimum level written.
pub fn set_level(level: Level) {
    LEVEL.store(level as u8, Ordering::Relaxed);
}

/// Sends the log to `path` (appending), or to stderr for an empty path.
pub fn set_file(path: &str) -> std::io::Result<()> {
    let file = if path.is_empty() {
        None
    } else {
        Some((open(path)?, path.to_string()))
    };
    *FILE.lock() = file;
    Ok(())
}

fn open(path: &str) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
}

/// Opens the log file again by its name (SIGHUP, after logrotate moved
/// it); the old file stays in use if the new one cannot be opened.
pub fn reopen() -> std::io::Result<()> {
    let mut file = FILE.lock();
    if let Some((current, path)) = file.as_mut() {
        *current = open(path)?;
    }
    Ok(())
}

/// Sends lines to syslog too, as `ident` with `facility` (a
/// `syslog-facility` name: `user`, `local0` ... `local7`).
pub fn set_syslog(ident: &str, facility: &str) {
    let Some(facility) = syslog_facility(facility) else {
        return;
    };
    // openlog keeps the pointer: the identity lives as long as the process.
    let ident = std::ffi::CString::new(ident).unwrap_or_default().into_raw();
    // SAFETY: `ident` is a valid C string that is never freed.
    unsafe {
        libc::openlog(
            ident,
            libc::LOG_PID | libc::LOG_NDELAY | libc::LOG_NOWAIT,
            facility,
        )
    };
    SYSLOG.store(true, Ordering::Relaxed);
}

fn syslog_facility(name: &str) -> Option<libc::c_int> {
    let local = [
        libc::LOG_LOCAL0,
        libc::LOG_LOCAL1,
        libc::LOG_LOCAL2,
        libc::LOG_LOCAL3,
        libc::LOG_LOCAL4,
        libc::LOG_LOCAL5,
        libc::LOG_LOCAL6,
        libc::LOG_LOCAL7,
    ];
    match name.to_ascii_lowercase().as_str() {
        "user" => Some(libc::LOG_USER),
        other => other
            .strip_prefix("local")
            .and_then(|n| n.parse::<usize>().ok())
            .and_then(|n| local.get(n).copied()),
    }
}

/// True if messages at `level` are written; lets callers skip formatting.
pub fn enabled(level: Level) -> bool {
    level as u8 >= LEVEL.load(Ordering::Relaxed)
}

/// Writes one line at `level`.
pub fn write(level: Level, message: std::fmt::Arguments) {
    if !enabled(level) {
        return;
    }
    let role = if REPLICA.load(Ordering::Relaxed) {
        'S'
    } else {
        'M'
    };
    let line = format!(
        "{}:{role} {} {} {}\n",
        std::process::id(),
        timestamp(std::time::SystemTime::now()),
        level.symbol(),
        message
    );
    match FILE.lock().as_mut() {
        Some((file, _)) => {
            let _ = file.write_all(line.as_bytes());
        }
        None => {
            let _ = std::io::stderr().write_all(line.as_bytes());
        }
    }
    if SYSLOG.load(Ordering::Relaxed) {
        let priority = [
            libc::LOG_DEBUG,
            libc::LOG_INFO,
            libc::LOG_NOTICE,
            libc::LOG_WARNING,
        ];
        if let Ok(text) = std::ffi::CString::new(message.to_string()) {
            // SAFETY: a constant format and a valid C string.
            unsafe { libc::syslog(priority[level as usize], c"%s".as_ptr(), text.as_ptr()) };
        }
    }
}

/// `23 Nov 2026 10:00:00.123` in UTC.
fn timestamp(t: std::time::SystemTime) -> String {
    let since = t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (year, month, day) = civil_from_days((secs / 86_400) as i64);
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{day:02} {} {year} {:02}:{:02}:{:02}.{:03}",
        MONTHS[month as usize - 1],
        secs / 3600 % 24,
        secs / 60 % 60,
        secs % 60,
        since.subsec_millis()
    )
}

/// Days since 1970-01-01 to (year, month, day), Howard Hinnant's algorithm.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Logs at notice level.
#[macro_export]
macro_rules! notice { ($($t:tt)*) => { $crate::log::write($crate::log::Level::Notice, format_args!($($t)*)) } }
/// Logs at warning level.
#[macro_export]
macro_rules! warning { ($($t:tt)*) => { $crate::log::write($crate::log::Level::Warning, format_args!($($t)*)) } }
/// Logs at verbose level.
#[macro_export]
macro_rules! verbose { ($($t:tt)*) => { $crate::log::write($crate::log::Level::Verbose, format_args!($($t)*)) } }

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syslog_facilities_are_redis_names() {
        assert_eq!(syslog_facility("user"), Some(libc::LOG_USER));
        assert_eq!(syslog_facility("LOCAL7"), Some(libc::LOG_LOCAL7));
        assert_eq!(syslog_facility("local8"), None);
    }

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_415), (2025, 11, 23));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }
}
