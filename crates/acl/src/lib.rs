//! ACL users as Redis 7 defines them: the rules that make a user (ACL
//! SETUSER, `user` lines, the ACL file), their description (ACL LIST),
//! passwords kept as SHA-256 hashes, the permission check dispatch runs
//! before a command, and the ACL log. No networking and no command
//! execution: the server tells the [`Catalog`] which commands exist and,
//! for each command it checks, which keys and channels it names.
//!
//! How a check works, as in Redis 7.0: a user has selectors (the root, and
//! one per `(…)` rule). A selector allows a command if its bit is set (or
//! one of its allowed first arguments is the command's), every key the
//! command names matches one of its key patterns with the access the key
//! spec needs (`access` reads; `insert`, `update` and `delete` write), and
//! every channel matches one of its channel patterns. The user may run the
//! command if one selector allows all of it. A selector allowing every
//! command, key and channel (the `default` user's, and any `+@all ~* &*`
//! user's) is known up front, so the common case costs one test.
//!
//! Command rules are kept only as bits, one per command id; ACL LIST
//! rebuilds rules from the bits as Redis 7.0 does (see
//! [`Selector::describe_commands`]), so the rules shown always say
//! exactly what is allowed, however they were given.

mod catalog;
mod log;
mod selector;
mod user;
mod users;

pub use catalog::{category_bit, Catalog, CommandDef, CATEGORIES};
pub use log::{Context, Entry, Log, Reason};
pub use selector::{ChannelUse, Denial, KeyUse, Selector};
pub use user::{hash_password, valid_user_name, User};
pub use users::{merge_selectors, SetUserError, Users};

/// Why a rule was refused, with Redis's wording (ACLSetUserStringError).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleError {
    UnknownCommand,
    Syntax,
    KeyAfterAll,
    ChannelAfterAll,
    NoSuchPassword,
    BadHash,
    Duplicate,
    FirstArgOfSubcommand,
}

impl RuleError {
    pub fn message(self) -> &'static str {
        match self {
            RuleError::UnknownCommand => "Unknown command or category name in ACL",
            RuleError::Syntax => "Syntax error",
            RuleError::KeyAfterAll => {
                "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does \
                 not have any effect. Try 'resetkeys' to start with an empty list of patterns"
            }
            RuleError::ChannelAfterAll => {
                "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and \
                 does not have any effect. Try 'resetchannels' to start with an empty list of \
                 channels"
            }
            RuleError::NoSuchPassword => {
                "The password you are trying to remove from the user does not exist"
            }
            RuleError::BadHash => {
                "The password hash must be exactly 64 characters and contain only lowercase \
                 hexadecimal characters"
            }
            RuleError::Duplicate => {
                "Duplicate user found. A user can only be defined once in config files"
            }
            RuleError::FirstArgOfSubcommand => "Allowing first-arg of a subcommand is not supported",
        }
    }
}
