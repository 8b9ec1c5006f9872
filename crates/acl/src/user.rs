//! A user: whether it may log in, its passwords (as SHA-256 hashes), and
//! its selectors, the first of which (the root) holds the rules given
//! outside parentheses.

use sha2::{Digest, Sha256};

use crate::catalog::Catalog;
use crate::selector::{has_spaces, ChannelUse, Denial, KeyUse, Keys, Selector};
use crate::RuleError;

/// A user.
#[derive(Clone, Debug)]
pub struct User {
    name: Vec<u8>,
    enabled: bool,
    nopass: bool,
    /// `sanitize-payload` (true) or `skip-sanitize-payload` (false), once
    /// either was given.
    sanitize_payload: Option<bool>,
    /// Lowercase hex SHA-256 of each password, in the order added.
    passwords: Vec<String>,
    /// The root selector first.
    selectors: Vec<Selector>,
}

impl User {
    /// A new user as ACL SETUSER creates it: off, with no password and no
    /// permissions.
    pub fn new(name: &[u8], catalog: &Catalog) -> User {
        User {
            name: name.to_vec(),
            enabled: false,
            nopass: false,
            sanitize_payload: None,
            passwords: Vec::new(),
            selectors: vec![Selector::new(catalog)],
        }
    }

    /// The `default` user as a server starts with it: on, no password,
    /// every command, key and channel.
    pub fn default_user(catalog: &Catalog) -> User {
        let mut user = User::new(b"default", catalog);
        for rule in ["+@all", "~*", "&*", "on", "nopass"] {
            let applied = user.apply(rule.as_bytes(), catalog);
            debug_assert!(applied.is_ok(), "{rule}");
        }
        user
    }

    pub fn name(&self) -> &[u8] {
        &self.name
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    pub fn nopass(&self) -> bool {
        self.nopass
    }

    /// Whether one of the selectors allows everything: the permission
    /// check has nothing to do.
    pub fn unrestricted(&self) -> bool {
        self.selectors.iter().any(Selector::unrestricted)
    }

    /// Applies one rule, as ACL SETUSER and `user` lines give them.
    pub fn apply(&mut self, op: &[u8], catalog: &Catalog) -> Result<(), RuleError> {
        let is = |word: &str| op.eq_ignore_ascii_case(word.as_bytes());
        if op.is_empty() {
        } else if is("on") || is("off") {
            self.enabled = is("on");
        } else if is("skip-sanitize-payload") || is("sanitize-payload") {
            self.sanitize_payload = Some(is("sanitize-payload"));
        } else if is("nopass") {
            self.nopass = true;
            self.passwords.clear();
        } else if is("resetpass") {
            self.nopass = false;
            self.passwords.clear();
        } else if let Some(hash) = password_rule(op, b'>', b'#')? {
            if !self.passwords.contains(&hash) {
                self.passwords.push(hash);
            }
            self.nopass = false;
        } else if let Some(hash) = password_rule(op, b'<', b'!')? {
            let at = (self.passwords.iter().position(|p| *p == hash))
                .ok_or(RuleError::NoSuchPassword)?;
            self.passwords.remove(at);
        } else if op.len() >= 2 && op.starts_with(b"(") && op.ends_with(b")") {
            let mut selector = Selector::new(catalog);
            for rule in op[1..op.len() - 1].split(|c| c.is_ascii_whitespace()) {
                if !rule.is_empty() {
                    selector.apply(rule, catalog)?;
                }
            }
            self.selectors.push(selector);
        } else if is("clearselectors") {
            self.selectors.truncate(1);
        } else if is("reset") {
            self.passwords.clear();
            self.nopass = false;
            self.enabled = false;
            self.sanitize_payload = Some(true);
            self.selectors = vec![Selector::new(catalog)];
        } else {
            self.selectors[0].apply(op, catalog)?;
        }
        Ok(())
    }

    /// The user's rules as ACL LIST and the ACL file give them (after
    /// `user NAME `).
    pub fn describe(&self, catalog: &Catalog) -> String {
        let mut out = String::new();
        for flag in self.flags() {
            out.push_str(flag);
            out.push(' ');
        }
        for hash in &self.passwords {
            out.push('#');
            out.push_str(hash);
            out.push(' ');
        }
        out.push_str(&self.selectors[0].describe(catalog));
        for selector in &self.selectors[1..] {
            out.push_str(" (");
            out.push_str(&selector.describe(catalog));
            out.push(')');
        }
        out
    }

    /// The flags ACL GETUSER and ACL LIST show, in Redis's order.
    pub fn flags(&self) -> Vec<&'static str> {
        let mut flags = vec![if self.enabled { "on" } else { "off" }];
        if self.nopass {
            flags.push("nopass");
        }
        match self.sanitize_payload {
            Some(false) => flags.push("skip-sanitize-payload"),
            Some(true) => flags.push("sanitize-payload"),
            None => {}
        }
        flags
    }

    pub fn password_hashes(&self) -> &[String] {
        &self.passwords
    }

    /// The root selector, then the others (ACL GETUSER).
    pub fn selectors(&self) -> &[Selector] {
        &self.selectors
    }

    /// Whether `password` logs this user in: it is on, and needs no
    /// password or has this one. Compares hashes in constant time.
    pub fn accepts(&self, password: &[u8]) -> bool {
        if !self.enabled {
            return false;
        }
        if self.nopass {
            return true;
        }
        let hashed = hash_password(password);
        let mut found = false;
        for known in &self.passwords {
            let diff = (known.bytes().zip(hashed.bytes())).fold(0, |d, (a, b)| d | (a ^ b));
            found |= diff == 0 && known.len() == hashed.len();
        }
        found
    }

    /// Whether the user may run command `id` with `args`: one selector
    /// must allow the command, every key and every channel. Otherwise the
    /// denial Redis reports: a key or channel over the command, and of
    /// those the one furthest into the arguments.
    pub fn check<A: AsRef<[u8]>>(
        &self,
        catalog: &Catalog,
        id: usize,
        args: &[A],
        find_keys: &dyn Fn() -> Vec<KeyUse>,
        channels: &[ChannelUse],
    ) -> Result<(), Denial> {
        let mut keys = Keys::new(find_keys);
        let mut reported = Denial::Command;
        for selector in &self.selectors {
            match selector.check(catalog, id, args, &mut keys, channels) {
                Ok(()) => return Ok(()),
                Err(denial) => reported = reported.max(denial),
            }
        }
        Err(reported)
    }

    /// Whether a subscriber of this user may keep `channel` (a pattern if
    /// `pattern`).
    pub fn allows_channel(&self, channel: &[u8], pattern: bool) -> bool {
        self.selectors
            .iter()
            .any(|s| s.allows_channel(channel, pattern))
    }
}

/// The hash a `>password`/`<password` (`add`, `remove`) or `#hash`/`!hash`
/// rule names, or `None` for another kind of rule.
fn password_rule(op: &[u8], clear: u8, hashed: u8) -> Result<Option<String>, RuleError> {
    match op.split_first() {
        Some((&c, password)) if c == clear => Ok(Some(hash_password(password))),
        Some((&c, hash)) if c == hashed => {
            let valid =
                hash.len() == 64 && hash.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'));
            if !valid {
                return Err(RuleError::BadHash);
            }
            Ok(Some(String::from_utf8_lossy(hash).into_owned()))
        }
        _ => Ok(None),
    }
}

/// A password's SHA-256 in lowercase hex, as Redis stores passwords.
pub fn hash_password(password: &[u8]) -> String {
    let digest = Sha256::digest(password);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `name` may name a user: Redis refuses spaces and NULs.
pub fn valid_user_name(name: &[u8]) -> bool {
    !has_spaces(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::tests::sample;

    fn user(rules: &str) -> User {
        let catalog = sample();
        let mut user = User::new(b"alice", &catalog);
        let words: Vec<&[u8]> = rules.split(' ').map(str::as_bytes).collect();
        for rule in crate::merge_selectors(&words).unwrap() {
            user.apply(&rule, &catalog)
                .unwrap_or_else(|e| panic!("{rule:?}: {e:?}"));
        }
        user
    }

    #[test]
    fn a_new_user_is_off_with_nothing_allowed() {
        assert_eq!(user("").describe(&sample()), "off resetchannels -@all");
        let default = User::default_user(&sample());
        assert_eq!(default.describe(&sample()), "on nopass ~* &* +@all");
        assert!(default.unrestricted() && default.accepts(b"anything"));
    }

    #[test]
    fn passwords_are_kept_hashed() {
        let u = user("on >secret >other");
        assert!(u.accepts(b"secret") && u.accepts(b"other") && !u.accepts(b"wrong"));
        assert_eq!(u.password_hashes()[0], hash_password(b"secret"));
        assert_eq!(
            hash_password(b"secret"),
            "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b"
        );
        let u = user("on >secret <secret");
        assert!(
            !u.accepts(b"secret"),
            "no password and not nopass: nothing logs in"
        );
        let mut u = user("on");
        let catalog = sample();
        assert_eq!(
            u.apply(b"<nosuch", &catalog),
            Err(RuleError::NoSuchPassword)
        );
        assert_eq!(u.apply(b"#abc", &catalog), Err(RuleError::BadHash));
        let hash = hash_password(b"pw");
        u.apply(format!("#{hash}").as_bytes(), &catalog).unwrap();
        assert!(u.accepts(b"pw"));
        assert!(
            !user("off nopass").accepts(b""),
            "a user that is off never logs in"
        );
    }

    #[test]
    fn selectors_add_permissions_and_reset_clears_them() {
        let u = user("on nopass ~k1 +get (~k2 +set)");
        assert_eq!(
            u.describe(&sample()),
            "on nopass ~k1 resetchannels -@all +@read (~k2 resetchannels -@all +set)"
        );
        let catalog = sample();
        let key = |pos| {
            vec![KeyUse {
                pos,
                read: true,
                write: true,
            }]
        };
        let check = |args: &[&[u8]]| {
            let id = catalog.lookup(args[0]).unwrap();
            let keys = key(1);
            u.check(&catalog, id, args, &move || keys.clone(), &[])
        };
        assert!(check(&[b"get", b"k1"]).is_ok());
        assert!(check(&[b"set", b"k2", b"v"]).is_ok());
        assert_eq!(
            check(&[b"get", b"k2"]),
            Err(Denial::Key(1)),
            "the key denial outranks the command"
        );
        let mut u = u;
        u.apply(b"reset", &catalog).unwrap();
        assert_eq!(
            u.describe(&catalog),
            "off sanitize-payload resetchannels -@all"
        );
    }
}
