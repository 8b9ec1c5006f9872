//! Script flags, as Redis 7 declares them: in an EVAL script's shebang
//! line (`#!lua flags=no-writes,allow-oom`) or in a function's
//! registration. A script without a shebang runs in Redis's EVAL
//! compatibility mode, where flags do not apply.

/// A script's flags.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScriptFlags(u8);

impl ScriptFlags {
    /// The script never writes: it runs read-only, even over maxmemory.
    pub const NO_WRITES: ScriptFlags = ScriptFlags(1);
    /// Its writes may run over maxmemory.
    pub const ALLOW_OOM: ScriptFlags = ScriptFlags(2);
    /// It may run on a stale replica.
    pub const ALLOW_STALE: ScriptFlags = ScriptFlags(4);
    /// It refuses to run in cluster mode.
    pub const NO_CLUSTER: ScriptFlags = ScriptFlags(8);
    /// Its keys may span hash slots.
    pub const ALLOW_CROSS_SLOT_KEYS: ScriptFlags = ScriptFlags(16);
    /// No shebang: an EVAL script from before Redis 7.
    pub const EVAL_COMPAT_MODE: ScriptFlags = ScriptFlags(32);

    /// The flags a script or function may name, in Redis's order.
    pub const NAMED: [(&'static str, ScriptFlags); 5] = [
        ("no-writes", ScriptFlags::NO_WRITES),
        ("allow-oom", ScriptFlags::ALLOW_OOM),
        ("allow-stale", ScriptFlags::ALLOW_STALE),
        ("no-cluster", ScriptFlags::NO_CLUSTER),
        ("allow-cross-slot-keys", ScriptFlags::ALLOW_CROSS_SLOT_KEYS),
    ];

    pub fn contains(self, other: ScriptFlags) -> bool {
        self.0 & other.0 == other.0
    }

    pub fn insert(&mut self, other: ScriptFlags) {
        self.0 |= other.0;
    }

    /// The flag called `name`.
    pub fn named(name: &[u8]) -> Option<ScriptFlags> {
        Self::NAMED
            .iter()
            .find(|(n, _)| n.as_bytes() == name)
            .map(|&(_, flag)| flag)
    }

    /// The names of the flags set, in Redis's order.
    pub fn names(self) -> Vec<&'static str> {
        Self::NAMED
            .iter()
            .filter(|&&(_, flag)| self.contains(flag))
            .map(|&(name, _)| name)
            .collect()
    }
}

/// Reads an EVAL script's shebang, as Redis's `evalExtractShebangFlags`:
/// its flags and the length of the line to skip (its newline is kept, so
/// line numbers stay the user's). The error is Redis's message.
pub fn shebang_flags(body: &[u8]) -> Result<(ScriptFlags, usize), String> {
    if !body.starts_with(b"#!") {
        return Ok((ScriptFlags::EVAL_COMPAT_MODE, 0));
    }
    let Some(end) = body.iter().position(|&b| b == b'\n') else {
        return Err("Invalid script shebang".into());
    };
    let parts = keel_resp::split_words(&body[..end]).unwrap_or_default();
    let Some((engine, options)) = parts.split_first() else {
        return Err("Invalid engine in script shebang".into());
    };
    if engine != b"#!lua" {
        return Err(format!(
            "Unexpected engine in script shebang: {}",
            String::from_utf8_lossy(engine)
        ));
    }
    let mut flags = ScriptFlags::default();
    for option in options {
        let Some(list) = option.strip_prefix(b"flags=") else {
            return Err(format!(
                "Unknown lua shebang option: {}",
                String::from_utf8_lossy(option)
            ));
        };
        for name in list
            .split(|&b| b == b',')
            .filter(|n| !list.is_empty() || !n.is_empty())
        {
            let flag = ScriptFlags::named(name).ok_or_else(|| {
                format!(
                    "Unexpected flag in script shebang: {}",
                    String::from_utf8_lossy(name)
                )
            })?;
            flags.insert(flag);
        }
    }
    Ok((flags, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shebangs_parse_as_redis_parses_them() {
        assert_eq!(
            shebang_flags(b"return 1"),
            Ok((ScriptFlags::EVAL_COMPAT_MODE, 0))
        );
        assert_eq!(
            shebang_flags(b"#!lua\nreturn 1"),
            Ok((ScriptFlags::default(), 5))
        );
        let (flags, len) = shebang_flags(b"#!lua flags=no-writes,allow-oom\nreturn 1").unwrap();
        assert_eq!(flags.names(), ["no-writes", "allow-oom"]);
        assert_eq!(len, 31);
        assert_eq!(
            shebang_flags(b"#!lua flags=\nx").map(|f| f.0),
            Ok(ScriptFlags::default())
        );
        assert_eq!(
            shebang_flags(b"#!lua"),
            Err("Invalid script shebang".into())
        );
        assert_eq!(
            shebang_flags(b"#!python\n"),
            Err("Unexpected engine in script shebang: #!python".into())
        );
        assert_eq!(
            shebang_flags(b"#!lua flags=bad\n"),
            Err("Unexpected flag in script shebang: bad".into())
        );
        assert_eq!(
            shebang_flags(b"#!lua name=x\n"),
            Err("Unknown lua shebang option: name=x".into())
        );
    }
}
