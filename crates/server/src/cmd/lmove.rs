//! LMOVE source destination LEFT|RIGHT LEFT|RIGHT and RPOPLPUSH source
//! destination, and the pop-and-maybe-push step that BLPOP, BRPOP and
//! BLMOVE share with them (also when a waiter is served later, see
//! `crate::blocking`).

use bytes::Bytes;
use keel_store::{End, Limits, List, MultiWrite};

use super::collection::{limits, update_in, Edit, Missing};
use crate::cmd::context::{errors, is, Ctx, Error, Spec, BASE};

/// LMOVE.
pub const LMOVE: Spec = Spec {
    name: "lmove",
    arity: 5,
    flags: &["write", "denyoom"],
    keys: (1, 2, 1),
    acl: &["@write", "@list", "@slow"],
    group: "list",
    summary: "Returns an element after popping it from one list and pushing it to another. Deletes the list if the last element was moved.",
    since: "6.2.0",
    run: |ctx, args| {
        let pop = Pop {
            from: end(&args[3])?,
            to: Some((args[2].clone(), end(&args[4])?)),
        };
        reply_moved(ctx, &args[1], &pop)
    },
    ..BASE
};

/// RPOPLPUSH.
pub const RPOPLPUSH: Spec = Spec {
    name: "rpoplpush",
    arity: 3,
    summary: "Returns the last element of a list after removing and pushing it to another list. Deletes the list if the last element was popped.",
    since: "1.2.0",
    run: |ctx, args| {
        let pop = Pop {
            from: End::Right,
            to: Some((args[2].clone(), End::Left)),
        };
        reply_moved(ctx, &args[1], &pop)
    },
    ..LMOVE
};

/// Parses LEFT or RIGHT.
pub fn end(arg: &[u8]) -> Result<End, Error> {
    match arg {
        a if is(a, "left") => Ok(End::Left),
        a if is(a, "right") => Ok(End::Right),
        _ => Err(errors::SYNTAX.into()),
    }
}

/// What a pop does: which end it takes from and, for the move commands,
/// where the element goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pop {
    /// The end of the source the element is taken from.
    pub from: End,
    /// The destination key and end, for LMOVE and its relatives.
    pub to: Option<(Bytes, End)>,
}

impl Pop {
    /// Every key the pop from `source` touches, for locking.
    pub fn keys(&self, source: &Bytes) -> Vec<Bytes> {
        let mut keys = vec![source.clone()];
        keys.extend(self.to.iter().map(|(dest, _)| dest.clone()));
        keys
    }

    /// Pops one element from `source` (and pushes it to the destination),
    /// with every key's shard locked in `locked`. `None` when the source
    /// is missing. The destination's type is checked only when the source
    /// has an element to give, as in Redis.
    pub fn apply(
        &self,
        locked: &mut MultiWrite,
        source: &[u8],
        limits: &Limits,
    ) -> Result<Option<Vec<u8>>, Error> {
        if let Some((dest, _)) = &self.to {
            match locked.peek(source) {
                None => return Ok(None),
                Some(e) if e.value().as_list().is_none() => return Err(errors::WRONGTYPE.into()),
                Some(_) => {}
            }
            if locked
                .peek(dest)
                .is_some_and(|e| e.value().as_list().is_none())
            {
                return Err(errors::WRONGTYPE.into());
            }
        }
        let popped = update_in(
            locked.shard(source),
            source,
            Missing::Skip,
            |list: &mut List| {
                let popped = list.pop(self.from, limits);
                Ok(Edit::changed_if(popped.is_some(), popped))
            },
        )?;
        let Some(element) = popped.flatten() else {
            return Ok(None);
        };
        if let Some((dest, to)) = &self.to {
            update_in(
                locked.shard(dest),
                dest,
                Missing::Create,
                |list: &mut List| {
                    list.push(*to, &element, limits);
                    Ok(Edit::changed(()))
                },
            )?;
        }
        Ok(Some(element))
    }
}

/// Runs a move at once and replies with the element or nil.
fn reply_moved(ctx: &mut Ctx, source: &Bytes, pop: &Pop) -> Result<(), Error> {
    let limits = limits(ctx);
    let db = ctx.db();
    let moved = pop.apply(&mut db.write_many(&pop.keys(source)), source, &limits)?;
    match moved {
        Some(element) => ctx.w().bulk(&element),
        None => ctx.w().null(),
    }
    Ok(())
}
