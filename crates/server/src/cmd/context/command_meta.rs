//! What COMMAND INFO and COMMAND DOCS report beyond a [`Spec`](super::Spec):
//! a command's tips and key specs (INFO's 8th and 9th elements) and its
//! documentation's `doc_flags`, `deprecated_since`, `replaced_by`,
//! `history` and `arguments`, for every Redis 7.0.15 command and
//! subcommand.
//!
//! The data (`command_meta_data.rs`) is generated once from the reference
//! server by `scripts/gen-command-meta REDIS_PORT`, which records each
//! reply as the tree Redis sends in RESP3 (maps, sets, arrays, bulk and
//! status strings, integers); keel writes the same tree back, so RESP2
//! clients get the same flattening Redis gives them. It is a static table:
//! nothing is parsed at start-up. A command keel adds has its entry
//! already; one of keel's own (not in Redis) has none and reports nothing
//! extra. `tests/test_command_docs.py` compares every command against
//! redis-server field by field.

use keel_resp::Writer;

#[path = "command_meta_data.rs"]
mod data;

/// A reply fragment, as Redis shapes it in RESP3.
pub enum Reply {
    Int(i64),
    Bulk(&'static str),
    Simple(&'static str),
    Array(&'static [Reply]),
    Set(&'static [Reply]),
    Map(&'static [(&'static str, Reply)]),
}

/// One command's (or `container|sub`'s) introspection beyond its Spec.
pub struct Meta {
    pub name: &'static str,
    /// COMMAND INFO's tips (a set).
    pub tips: Reply,
    /// COMMAND INFO's key specs (a set of maps).
    pub key_specs: Reply,
    /// COMMAND DOCS's fields after `complexity`, before `subcommands`.
    pub docs: &'static [(&'static str, Reply)],
}

const NONE: Meta = Meta {
    name: "",
    tips: Reply::Set(&[]),
    key_specs: Reply::Set(&[]),
    docs: &[],
};

/// The extra introspection of command `name`, empty for a command Redis
/// does not have.
pub fn meta(name: &str) -> &'static Meta {
    data::COMMAND_META
        .binary_search_by(|m| m.name.cmp(name))
        .map_or(&NONE, |i| &data::COMMAND_META[i])
}

/// Writes `reply` as Redis would.
pub fn write(w: &mut Writer, reply: &Reply) {
    match reply {
        Reply::Int(n) => w.integer(*n),
        Reply::Bulk(s) => w.bulk(s.as_bytes()),
        Reply::Simple(s) => w.simple(s),
        Reply::Array(items) => {
            w.array(items.len());
            items.iter().for_each(|r| write(w, r));
        }
        Reply::Set(items) => {
            w.set(items.len());
            items.iter().for_each(|r| write(w, r));
        }
        Reply::Map(pairs) => {
            w.map(pairs.len());
            for (key, value) in pairs.iter() {
                w.bulk(key.as_bytes());
                write(w, value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_for_binary_search() {
        let names: Vec<&str> = data::COMMAND_META.iter().map(|m| m.name).collect();
        assert!(names.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn lookup_finds_commands_and_subcommands() {
        assert!(matches!(meta("zunionstore").key_specs, Reply::Set(specs) if specs.len() == 2));
        assert!(matches!(meta("object|encoding").key_specs, Reply::Set(specs) if specs.len() == 1));
        assert!(matches!(meta("no-such-command").key_specs, Reply::Set(&[])));
        assert_eq!(meta("getset").docs[1].0, "deprecated_since");
    }
}
