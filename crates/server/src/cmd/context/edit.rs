//! How a write to a stored value tells whether it changed it.
//!
//! WATCH must see a change exactly when Redis signals one: SADD of a
//! present member, HDEL of an absent field or SETRANGE with an empty string
//! change nothing, while HSET of an equal value or LTRIM keeping every
//! element do. The store marks a key's watchers whenever its value is
//! borrowed mutably (see `keel_store::shard`); [`edit`] makes every write
//! state its [`Edit`] in its return type, so none can forget, and tells the
//! store when nothing changed.

use keel_store::{EntryMut, Value};

use crate::cmd::context::{errors, Error};

/// What a write did: its result, and whether it changed the value.
pub struct Edit<R> {
    result: R,
    changed: bool,
}

impl<R> Edit<R> {
    /// A write that changed the value.
    pub fn changed(result: R) -> Edit<R> {
        Edit {
            result,
            changed: true,
        }
    }

    /// A write that changed nothing after all.
    pub fn unchanged(result: R) -> Edit<R> {
        Edit {
            result,
            changed: false,
        }
    }

    /// A write that changed the value only if `changed`.
    pub fn changed_if(changed: bool, result: R) -> Edit<R> {
        Edit { result, changed }
    }

    /// Whether the write changed the value.
    pub fn is_changed(&self) -> bool {
        self.changed
    }

    /// The write's result, for a value not stored yet (a new key is a
    /// change by itself).
    pub fn into_result(self) -> R {
        self.result
    }
}

impl Edit<usize> {
    /// A write of `n` elements (added, removed): a change when `n > 0`.
    pub fn count(n: usize) -> Edit<usize> {
        Edit::changed_if(n > 0, n)
    }
}

/// Runs `f` on the value of `entry` seen as the type `as_type` picks
/// (WRONGTYPE when it is another), and marks the key's watchers only if
/// `f` reports a change. `f` returns its errors before it changes
/// anything, so an error is no change.
pub fn edit<V: ?Sized, R>(
    entry: &mut EntryMut,
    as_type: impl FnOnce(&mut Value) -> Option<&mut V>,
    f: impl FnOnce(&mut V) -> Result<Edit<R>, Error>,
) -> Result<R, Error> {
    let outcome = as_type(entry.value_mut())
        .ok_or(Error::from(errors::WRONGTYPE))
        .and_then(f);
    if !matches!(outcome, Ok(Edit { changed: true, .. })) {
        entry.unchanged();
    }
    outcome.map(|edit| edit.result)
}
