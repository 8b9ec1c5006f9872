//! A selector: one set of permissions (commands, key patterns, channel
//! patterns). A user has a root selector and any number of `(…)`
//! selectors; a command is allowed if one of them allows all of it.

use std::collections::BTreeMap;

use keel_store::glob_match;

use crate::catalog::{category_bit, Catalog, CATEGORIES};
use crate::RuleError;

/// A key pattern and what it lets a command do with matching keys.
#[derive(Clone, Debug, PartialEq, Eq)]
struct KeyPattern {
    pattern: Vec<u8>,
    read: bool,
    write: bool,
}

impl KeyPattern {
    fn describe(&self, out: &mut String) {
        out.push_str(match (self.read, self.write) {
            (true, true) => "~",
            (true, false) => "%R~",
            _ => "%W~",
        });
        out.push_str(&String::from_utf8_lossy(&self.pattern));
    }
}

/// A key a command names, at `pos` in its arguments, and whether it
/// reads the value (`access`) or writes it (`insert`, `update`, `delete`),
/// as its key spec says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyUse {
    pub pos: usize,
    pub read: bool,
    pub write: bool,
}

/// A channel a command publishes or subscribes to, at `pos`; `pattern` for
/// PSUBSCRIBE's, which only an identical channel rule allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChannelUse {
    pub pos: usize,
    pub pattern: bool,
}

/// Why a selector (or a user) refuses a command; the position is the
/// refused key's or channel's in the arguments. Ordered as Redis ranks
/// them when it picks the one to report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Denial {
    Command,
    Key(usize),
    Channel(usize),
}

/// One set of permissions.
#[derive(Clone, Debug)]
pub struct Selector {
    all_keys: bool,
    all_channels: bool,
    /// Every command bit is set and none was cleared since (`+@all`).
    all_commands: bool,
    /// `+@all` was the last word on commands: commands added later are
    /// allowed too, and the description starts from `+@all`.
    future_commands: bool,
    /// One bit per command id.
    allowed: Vec<u64>,
    /// First arguments allowed for commands whose bit is clear
    /// (`+select|0`), by command id.
    first_args: BTreeMap<usize, Vec<Vec<u8>>>,
    keys: Vec<KeyPattern>,
    channels: Vec<Vec<u8>>,
}

impl Selector {
    /// A selector that allows nothing.
    pub fn new(catalog: &Catalog) -> Selector {
        Selector {
            all_keys: false,
            all_channels: false,
            all_commands: false,
            future_commands: false,
            allowed: vec![0; catalog.len().div_ceil(64)],
            first_args: BTreeMap::new(),
            keys: Vec::new(),
            channels: Vec::new(),
        }
    }

    /// Allows every command, key and channel.
    pub fn unrestricted(&self) -> bool {
        self.all_commands && self.all_keys && self.all_channels
    }

    /// Applies one rule (`+get`, `~key:*`, `&news`, `allkeys`, ...).
    pub fn apply(&mut self, op: &[u8], catalog: &Catalog) -> Result<(), RuleError> {
        let is = |word: &str| op.eq_ignore_ascii_case(word.as_bytes());
        if is("allkeys") || is("~*") {
            self.all_keys = true;
            self.keys.clear();
        } else if is("resetkeys") {
            self.all_keys = false;
            self.keys.clear();
        } else if is("allchannels") || is("&*") {
            self.all_channels = true;
            self.channels.clear();
        } else if is("resetchannels") {
            self.all_channels = false;
            self.channels.clear();
        } else if is("allcommands") || is("+@all") {
            self.set_all_commands(true);
        } else if is("nocommands") || is("-@all") {
            self.set_all_commands(false);
        } else if op.first().is_some_and(|&c| c == b'~' || c == b'%') {
            self.add_key_pattern(op)?;
        } else if let Some(channel) = op.strip_prefix(b"&") {
            if self.all_channels {
                return Err(RuleError::ChannelAfterAll);
            }
            if has_spaces(channel) {
                return Err(RuleError::Syntax);
            }
            if !self.channels.iter().any(|c| c == channel) {
                self.channels.push(channel.to_vec());
            }
        } else if let Some(category) = op.strip_prefix(b"+@") {
            self.set_category(category, true, catalog)?;
        } else if let Some(category) = op.strip_prefix(b"-@") {
            self.set_category(category, false, catalog)?;
        } else if let Some(name) = op.strip_prefix(b"+") {
            self.allow_command(name, catalog)?;
        } else if let Some(name) = op.strip_prefix(b"-") {
            let id = catalog.lookup(name).ok_or(RuleError::UnknownCommand)?;
            self.change_command(id, false, catalog);
        } else {
            return Err(RuleError::Syntax);
        }
        Ok(())
    }

    fn set_all_commands(&mut self, allow: bool) {
        self.allowed.fill(if allow { u64::MAX } else { 0 });
        self.all_commands = allow;
        self.future_commands = allow;
        self.first_args.clear();
    }

    /// `~pattern`, `%R~pattern`, `%W~pattern`, `%RW~pattern`.
    fn add_key_pattern(&mut self, op: &[u8]) -> Result<(), RuleError> {
        if self.all_keys {
            return Err(RuleError::KeyAfterAll);
        }
        let (read, write, pattern) = if let Some(rest) = op.strip_prefix(b"%") {
            let tilde = rest
                .iter()
                .position(|&c| c == b'~')
                .ok_or(RuleError::Syntax)?;
            let (mut read, mut write) = (false, false);
            for &c in &rest[..tilde] {
                match c.to_ascii_uppercase() {
                    b'R' if !read => read = true,
                    b'W' if !write => write = true,
                    _ => return Err(RuleError::Syntax),
                }
            }
            if !read && !write {
                return Err(RuleError::Syntax);
            }
            (read, write, &rest[tilde + 1..])
        } else {
            (true, true, &op[1..])
        };
        if has_spaces(pattern) {
            return Err(RuleError::Syntax);
        }
        match self.keys.iter_mut().find(|k| k.pattern == pattern) {
            Some(existing) => {
                existing.read |= read;
                existing.write |= write;
            }
            None => self.keys.push(KeyPattern {
                pattern: pattern.to_vec(),
                read,
                write,
            }),
        }
        Ok(())
    }

    /// `+command`, `+container|sub`, or `+command|first-arg` for a command
    /// without subcommands.
    fn allow_command(&mut self, name: &[u8], catalog: &Catalog) -> Result<(), RuleError> {
        let Some(bar) = name.iter().rposition(|&c| c == b'|') else {
            let id = catalog.lookup(name).ok_or(RuleError::UnknownCommand)?;
            self.change_command(id, true, catalog);
            return Ok(());
        };
        let (base, arg) = (&name[..bar], &name[bar + 1..]);
        let id = catalog.lookup(base).ok_or(RuleError::UnknownCommand)?;
        let command = catalog.get(id);
        if command.parent.is_some() {
            return Err(RuleError::FirstArgOfSubcommand);
        }
        if arg.is_empty() {
            return Err(RuleError::Syntax);
        }
        if command.subcommands.is_empty() {
            // A first argument of a command allowed whole allows nothing
            // more, and clearing the command clears its first arguments.
            if self.bit(id) {
                return Ok(());
            }
            let args = self.first_args.entry(id).or_default();
            if !args.iter().any(|a| a.eq_ignore_ascii_case(arg)) {
                args.push(arg.to_vec());
            }
        } else {
            let sub = catalog.lookup(name).ok_or(RuleError::UnknownCommand)?;
            self.change_command(sub, true, catalog);
        }
        Ok(())
    }

    fn set_category(
        &mut self,
        name: &[u8],
        allow: bool,
        catalog: &Catalog,
    ) -> Result<(), RuleError> {
        let bit = category_bit(name).ok_or(RuleError::UnknownCommand)?;
        self.set_category_bit(bit, allow, catalog);
        Ok(())
    }

    fn set_category_bit(&mut self, bit: u32, allow: bool, catalog: &Catalog) {
        for id in 0..catalog.len() {
            if catalog.get(id).categories & bit != 0 {
                self.change_command(id, allow, catalog);
            }
        }
    }

    /// Allows or denies a command, and with a container all of its
    /// subcommands.
    fn change_command(&mut self, id: usize, allow: bool, catalog: &Catalog) {
        self.set_bit(id, allow);
        self.first_args.remove(&id);
        for &sub in &catalog.get(id).subcommands {
            self.set_bit(sub, allow);
        }
    }

    fn set_bit(&mut self, id: usize, allow: bool) {
        let (word, bit) = (id / 64, 1u64 << (id % 64));
        if allow {
            self.allowed[word] |= bit;
        } else {
            self.allowed[word] &= !bit;
            self.all_commands = false;
        }
    }

    fn bit(&self, id: usize) -> bool {
        self.allowed[id / 64] & (1 << (id % 64)) != 0
    }

    /// The rules that rebuild this selector, as ACL LIST shows them: keys,
    /// channels, then commands.
    pub fn describe(&self, catalog: &Catalog) -> String {
        let mut out = String::new();
        if self.all_keys {
            out.push_str("~* ");
        } else {
            for key in &self.keys {
                key.describe(&mut out);
                out.push(' ');
            }
        }
        if self.all_channels {
            out.push_str("&* ");
        } else {
            out.push_str("resetchannels ");
            for channel in &self.channels {
                out.push('&');
                out.push_str(&String::from_utf8_lossy(channel));
                out.push(' ');
            }
        }
        out.push_str(&self.describe_commands(catalog));
        out
    }

    /// The key patterns alone, space separated (ACL GETUSER's `keys`).
    pub fn describe_keys(&self) -> String {
        if self.all_keys {
            return "~*".into();
        }
        let mut out = String::new();
        for (i, key) in self.keys.iter().enumerate() {
            if i > 0 {
                out.push(' ');
            }
            key.describe(&mut out);
        }
        out
    }

    /// The channel patterns alone (ACL GETUSER's `channels`).
    pub fn describe_channels(&self) -> String {
        if self.all_channels {
            return "&*".into();
        }
        let channels: Vec<String> = (self.channels.iter())
            .map(|c| format!("&{}", String::from_utf8_lossy(c)))
            .collect();
        channels.join(" ")
    }

    /// The command rules that rebuild this selector's command bits, as
    /// Redis 7.0 derives them: start from `+@all` or `-@all`, then apply
    /// the category that best fits the bits still to explain, again and
    /// again while one fits more commands than it gets wrong, then fix
    /// single commands (and first arguments) one by one.
    pub fn describe_commands(&self, catalog: &Catalog) -> String {
        let additive = !self.future_commands;
        let mut rules = String::from(if additive { "-@all " } else { "+@all " });
        let mut fake = Selector::new(catalog);
        fake.set_all_commands(!additive);
        let mut unexplained = self.clone();
        let mut applied = [false; CATEGORIES.len()];
        loop {
            let mut best = None;
            let (mut min_diff, mut max_same) = (usize::MAX, 0);
            for (i, _) in CATEGORIES.iter().enumerate().filter(|(i, _)| !applied[*i]) {
                let (on, off) = unexplained.count_category(1 << i, catalog);
                let (diff, same) = if additive { (off, on) } else { (on, off) };
                if same > diff && (diff < min_diff || (diff == min_diff && same > max_same)) {
                    best = Some(i);
                    min_diff = diff;
                    max_same = same;
                }
            }
            let Some(best) = best else { break };
            fake.set_category_bit(1 << best, additive, catalog);
            unexplained.set_category_bit(1 << best, !additive, catalog);
            rules.push_str(if additive { "+@" } else { "-@" });
            rules.push_str(CATEGORIES[best]);
            rules.push(' ');
            applied[best] = true;
        }
        for id in catalog.top_level() {
            self.describe_command(id, &mut fake, &mut rules, catalog);
        }
        rules.pop();
        rules
    }

    fn describe_command(
        &self,
        id: usize,
        fake: &mut Selector,
        rules: &mut String,
        catalog: &Catalog,
    ) {
        let command = catalog.get(id);
        let allowed = self.bit(id);
        if allowed != fake.bit(id) {
            rules.push(if allowed { '+' } else { '-' });
            rules.push_str(&command.name);
            rules.push(' ');
            fake.change_command(id, allowed, catalog);
        }
        for &sub in &command.subcommands {
            self.describe_command(sub, fake, rules, catalog);
        }
        if let Some(args) = self.first_args.get(&id).filter(|_| !allowed) {
            for arg in args {
                rules.push('+');
                rules.push_str(&command.name);
                rules.push('|');
                rules.push_str(&String::from_utf8_lossy(arg));
                rules.push(' ');
            }
        }
    }

    /// How many commands of category `bit` are allowed and denied.
    fn count_category(&self, bit: u32, catalog: &Catalog) -> (usize, usize) {
        let ids = (0..catalog.len()).filter(|&id| catalog.get(id).categories & bit != 0);
        ids.fold((0, 0), |(on, off), id| {
            if self.bit(id) {
                (on + 1, off)
            } else {
                (on, off + 1)
            }
        })
    }

    /// Whether this selector allows command `id` with `args` (the name
    /// first), the keys `keys` finds in them and the channels `channels`.
    pub fn check<A: AsRef<[u8]>>(
        &self,
        catalog: &Catalog,
        id: usize,
        args: &[A],
        keys: &mut Keys,
        channels: &[ChannelUse],
    ) -> Result<(), Denial> {
        let arg = |pos: usize| args.get(pos).map_or(&[][..], AsRef::as_ref);
        let command = catalog.get(id);
        if !self.all_commands && !command.no_auth && !self.bit(id) {
            let first = arg(if command.parent.is_some() { 2 } else { 1 });
            let allowed = (self.first_args.get(&id))
                .is_some_and(|allowed| allowed.iter().any(|a| a.eq_ignore_ascii_case(first)));
            if !allowed {
                return Err(Denial::Command);
            }
        }
        if !self.all_keys {
            for key in keys.get() {
                let name = arg(key.pos);
                let fits = |p: &&KeyPattern| (p.read || !key.read) && (p.write || !key.write);
                if !self
                    .keys
                    .iter()
                    .filter(fits)
                    .any(|p| glob_match(&p.pattern, name, false))
                {
                    return Err(Denial::Key(key.pos));
                }
            }
        }
        if !self.all_channels {
            for channel in channels {
                let name = arg(channel.pos);
                let allowed = if channel.pattern {
                    self.channels.iter().any(|c| c == name)
                } else {
                    self.channels.iter().any(|c| glob_match(c, name, false))
                };
                if !allowed {
                    return Err(Denial::Channel(channel.pos));
                }
            }
        }
        Ok(())
    }

    /// Whether this selector allows a subscriber to hold `channel` (a
    /// pattern if `pattern`).
    pub fn allows_channel(&self, channel: &[u8], pattern: bool) -> bool {
        self.all_channels
            || if pattern {
                self.channels.iter().any(|c| c == channel)
            } else {
                self.channels.iter().any(|c| glob_match(c, channel, false))
            }
    }
}

/// The keys of the command being checked, found once however many
/// selectors look at them.
pub struct Keys<'a> {
    find: &'a dyn Fn() -> Vec<KeyUse>,
    found: Option<Vec<KeyUse>>,
}

impl<'a> Keys<'a> {
    pub fn new(find: &'a dyn Fn() -> Vec<KeyUse>) -> Keys<'a> {
        Keys { find, found: None }
    }

    fn get(&mut self) -> &[KeyUse] {
        self.found.get_or_insert_with(self.find)
    }
}

/// Redis refuses spaces and NULs in names and patterns, so that ACL LIST
/// and the ACL file can be split on spaces.
pub(crate) fn has_spaces(s: &[u8]) -> bool {
    s.iter()
        .any(|&c| c.is_ascii_whitespace() || c == 0 || c == 0x0b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::tests::sample;

    fn selector(rules: &str) -> Selector {
        let catalog = sample();
        let mut s = Selector::new(&catalog);
        for rule in rules.split_whitespace() {
            s.apply(rule.as_bytes(), &catalog)
                .unwrap_or_else(|e| panic!("{rule}: {e:?}"));
        }
        s
    }

    fn check(s: &Selector, args: &[&str], keys: Vec<KeyUse>) -> Result<(), Denial> {
        let catalog = sample();
        let id = catalog.lookup(args[0].as_bytes()).unwrap();
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        let find = move || keys.clone();
        s.check(&catalog, id, &args, &mut Keys::new(&find), &[])
    }

    const READ: KeyUse = KeyUse {
        pos: 1,
        read: true,
        write: false,
    };
    const WRITE: KeyUse = KeyUse {
        pos: 1,
        read: false,
        write: true,
    };

    #[test]
    fn commands_categories_and_containers() {
        let catalog = sample();
        let s = selector("+@all -@dangerous");
        assert_eq!(s.describe_commands(&catalog), "+@all -@dangerous");
        assert!(check(&s, &["get", "k"], vec![]).is_ok());
        let s = selector("-@all +config");
        assert!(s.bit(catalog.lookup(b"config|set").unwrap()));
        let s = selector("+@all -config|set");
        assert!(s.bit(catalog.lookup(b"config|get").unwrap()));
        assert!(!s.bit(catalog.lookup(b"config|set").unwrap()));
        assert!(!s.all_commands && s.future_commands);
    }

    #[test]
    fn first_args_allow_one_argument_of_a_denied_command() {
        let s = selector("-@all +select|0");
        assert!(check(&s, &["select", "0"], vec![]).is_ok());
        assert_eq!(check(&s, &["select", "1"], vec![]), Err(Denial::Command));
        assert_eq!(sample_describe(&s), "-@all +select|0");
        let catalog = sample();
        let mut s = s;
        assert_eq!(
            s.apply(b"+config|get|x", &catalog),
            Err(RuleError::FirstArgOfSubcommand)
        );
        assert_eq!(s.apply(b"+select|", &catalog), Err(RuleError::Syntax));
        assert_eq!(
            s.apply(b"+nosuch", &catalog),
            Err(RuleError::UnknownCommand)
        );
        assert_eq!(
            s.apply(b"+config|nosuch", &catalog),
            Err(RuleError::UnknownCommand)
        );
        assert_eq!(
            s.apply(b"-@nosuch", &catalog),
            Err(RuleError::UnknownCommand)
        );
    }

    fn sample_describe(s: &Selector) -> String {
        s.describe_commands(&sample())
    }

    #[test]
    fn no_auth_commands_are_never_denied() {
        let s = selector("-@all");
        assert!(check(&s, &["auth", "pw"], vec![]).is_ok());
    }

    #[test]
    fn read_and_write_key_patterns() {
        let s = selector("allcommands %R~r:* %W~w:* ~rw:*");
        let key = |name: &str, k: KeyUse| check(&s, &["get", name], vec![k]);
        assert!(key("r:1", READ).is_ok());
        assert_eq!(key("r:1", WRITE), Err(Denial::Key(1)));
        assert!(key("w:1", WRITE).is_ok());
        assert_eq!(key("w:1", READ), Err(Denial::Key(1)));
        assert!(key("rw:1", READ).is_ok() && key("rw:1", WRITE).is_ok());
        let neither = KeyUse {
            pos: 1,
            read: false,
            write: false,
        };
        assert!(key("w:1", neither).is_ok());
        assert_eq!(key("other", neither), Err(Denial::Key(1)));
        assert_eq!(s.describe_keys(), "%R~r:* %W~w:* ~rw:*");
    }

    #[test]
    fn pattern_rules_refuse_what_redis_refuses() {
        let catalog = sample();
        let mut s = selector("allkeys allchannels");
        assert_eq!(s.apply(b"~k", &catalog), Err(RuleError::KeyAfterAll));
        assert_eq!(s.apply(b"&c", &catalog), Err(RuleError::ChannelAfterAll));
        let mut s = selector("resetkeys");
        for bad in ["%X~k", "%RR~k", "%R", "%~k", "~a\tb"] {
            assert_eq!(
                s.apply(bad.as_bytes(), &catalog),
                Err(RuleError::Syntax),
                "{bad}"
            );
        }
        s.apply(b"%R~k", &catalog).unwrap();
        s.apply(b"%W~k", &catalog).unwrap();
        assert_eq!(s.describe_keys(), "~k", "flags of one pattern merge");
        assert_eq!(s.apply(b"bogus", &catalog), Err(RuleError::Syntax));
    }

    #[test]
    fn channels_match_as_globs_and_patterns_literally() {
        let catalog = sample();
        let s = selector("allcommands resetchannels &news.*");
        let id = catalog.lookup(b"publish").unwrap();
        let none = || Vec::new();
        let run = |args: &[&[u8]], pattern| {
            let channels = [ChannelUse { pos: 1, pattern }];
            s.check(&catalog, id, args, &mut Keys::new(&none), &channels)
        };
        assert!(run(&[b"publish", b"news.sport"], false).is_ok());
        assert_eq!(run(&[b"publish", b"other"], false), Err(Denial::Channel(1)));
        assert!(run(&[b"psubscribe", b"news.*"], true).is_ok());
        assert_eq!(
            run(&[b"psubscribe", b"news.sp*"], true),
            Err(Denial::Channel(1))
        );
        assert_eq!(s.describe(&catalog), "resetchannels &news.* +@all");
    }

    /// Whatever the rules, applying a selector's description to a fresh
    /// selector gives the same command bits (Redis checks this on every
    /// description and stops the server if it fails).
    #[test]
    fn descriptions_rebuild_the_same_bits() {
        let catalog = sample();
        let words = [
            "+@all",
            "-@all",
            "+get",
            "-get",
            "+config",
            "-config|set",
            "+config|get",
            "+@slow",
            "-@fast",
            "+@dangerous",
            "-@admin",
            "+select|1",
            "+@connection",
            "-flushall",
        ];
        let mut state = 7u32;
        for _ in 0..2000 {
            let mut s = Selector::new(&catalog);
            for _ in 0..(state % 6) {
                state = state.wrapping_mul(1_103_515_245).wrapping_add(12345);
                let word = words[(state >> 16) as usize % words.len()];
                s.apply(word.as_bytes(), &catalog).unwrap();
            }
            state = state.wrapping_add(1);
            let description = s.describe_commands(&catalog);
            let mut rebuilt = Selector::new(&catalog);
            for word in description.split(' ') {
                rebuilt.apply(word.as_bytes(), &catalog).unwrap();
            }
            assert_eq!(rebuilt.allowed, s.allowed, "{description}");
            assert_eq!(rebuilt.first_args, s.first_args, "{description}");
            assert_eq!(rebuilt.future_commands, s.future_commands, "{description}");
        }
    }
}
