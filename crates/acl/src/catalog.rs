//! The commands ACL rules can name: each with the id the server dispatches
//! it by, its full name (`config|get` for a subcommand), its categories
//! and its container or subcommands.

use std::collections::HashMap;

/// Redis's ACL categories, in Redis's order (ACL CAT lists them so, and
/// a selector's description tries them so).
pub const CATEGORIES: [&str; 21] = [
    "keyspace",
    "read",
    "write",
    "set",
    "sortedset",
    "list",
    "hash",
    "string",
    "bitmap",
    "hyperloglog",
    "geo",
    "stream",
    "pubsub",
    "admin",
    "fast",
    "slow",
    "blocking",
    "dangerous",
    "connection",
    "transaction",
    "scripting",
];

/// The bit of category `name` (any case, without the `@`), if it is one.
pub fn category_bit(name: &[u8]) -> Option<u32> {
    CATEGORIES
        .iter()
        .position(|c| c.as_bytes().eq_ignore_ascii_case(name))
        .map(|i| 1 << i)
}

/// What the server tells the catalog about one command.
pub struct CommandDef<'a> {
    /// Lowercase full name: `get`, or `config|get` for a subcommand.
    pub name: &'a str,
    /// Category names with their `@` (`@read`, `@fast`).
    pub categories: &'a [&'a str],
    /// The command may run before authentication (AUTH, HELLO): no rule
    /// denies it.
    pub no_auth: bool,
}

/// One command as ACL rules see it.
pub struct Command {
    pub name: String,
    /// Category bits (see [`category_bit`]).
    pub categories: u32,
    pub no_auth: bool,
    /// The container's id, for a subcommand.
    pub parent: Option<usize>,
    /// Subcommand ids, for a container.
    pub subcommands: Vec<usize>,
}

/// Every command, by id.
pub struct Catalog {
    commands: Vec<Command>,
    by_name: HashMap<String, usize>,
}

impl Catalog {
    /// The catalog of `defs`, whose positions are the command ids; a
    /// subcommand (`a|b`) follows its container.
    pub fn new<'a>(defs: impl IntoIterator<Item = CommandDef<'a>>) -> Catalog {
        let mut commands: Vec<Command> = Vec::new();
        let mut by_name = HashMap::new();
        for def in defs {
            let id = commands.len();
            let parent = def
                .name
                .split_once('|')
                .and_then(|(container, _)| by_name.get(container).copied());
            if let Some(parent) = parent {
                let container: &mut Command = &mut commands[parent];
                container.subcommands.push(id);
            }
            let categories = (def.categories.iter())
                .filter_map(|c| category_bit(c.trim_start_matches('@').as_bytes()))
                .fold(0, |bits, bit| bits | bit);
            by_name.insert(def.name.to_string(), id);
            commands.push(Command {
                name: def.name.to_string(),
                categories,
                no_auth: def.no_auth,
                parent,
                subcommands: Vec::new(),
            });
        }
        Catalog { commands, by_name }
    }

    pub fn len(&self) -> usize {
        self.commands.len()
    }

    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }

    pub fn get(&self, id: usize) -> &Command {
        &self.commands[id]
    }

    /// The id of command `name` (any case), `container|sub` naming a
    /// subcommand, as Redis's ACL looks commands up.
    pub fn lookup(&self, name: &[u8]) -> Option<usize> {
        let name = std::str::from_utf8(name).ok()?.to_ascii_lowercase();
        self.by_name.get(&name).copied()
    }

    /// The ids of the top-level commands, in id order.
    pub fn top_level(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.commands.len()).filter(|&id| self.commands[id].parent.is_none())
    }

    /// The full names of the commands in category `bit`, containers and
    /// subcommands alike (ACL CAT).
    pub fn in_category(&self, bit: u32) -> impl Iterator<Item = &str> {
        (self.commands.iter())
            .filter(move |c| c.categories & bit != 0)
            .map(|c| c.name.as_str())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A small catalog shaped like Redis's: plain commands, a container
    /// with subcommands, categories, and a no-auth command.
    pub(crate) fn sample() -> Catalog {
        let def = |name, categories, no_auth| CommandDef {
            name,
            categories,
            no_auth,
        };
        Catalog::new([
            def("get", &["@read", "@string", "@fast"][..], false),
            def("set", &["@write", "@string", "@slow"], false),
            def("config", &["@slow"], false),
            def("config|get", &["@admin", "@slow", "@dangerous"], false),
            def("config|set", &["@admin", "@slow", "@dangerous"], false),
            def("select", &["@fast", "@connection"], false),
            def("auth", &["@fast", "@connection"], true),
            def("publish", &["@pubsub", "@fast"], false),
            def(
                "flushall",
                &["@keyspace", "@write", "@slow", "@dangerous"],
                false,
            ),
        ])
    }

    #[test]
    fn subcommands_know_their_container() {
        let catalog = sample();
        let config = catalog.lookup(b"CONFIG").unwrap();
        let get = catalog.lookup(b"config|GET").unwrap();
        assert_eq!(catalog.get(get).parent, Some(config));
        assert_eq!(catalog.get(config).subcommands.len(), 2);
        assert_eq!(catalog.lookup(b"config|nosuch"), None);
        assert_eq!(catalog.top_level().count(), 7);
    }

    #[test]
    fn categories_are_bits_in_redis_order() {
        assert_eq!(category_bit(b"keyspace"), Some(1));
        assert_eq!(category_bit(b"SCRIPTING"), Some(1 << 20));
        assert_eq!(category_bit(b"all"), None);
        let catalog = sample();
        let dangerous = category_bit(b"dangerous").unwrap();
        let names: Vec<&str> = catalog.in_category(dangerous).collect();
        assert_eq!(names, ["config|get", "config|set", "flushall"]);
    }
}
