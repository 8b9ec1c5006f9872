//! BZPOPMIN and BZPOPMAX key [key ...] timeout: ZPOPMIN and ZPOPMAX of one
//! member from the first key that has one, blocking until one has (see
//! `context::pop`, the way of trying and blocking they share with BLPOP, and
//! `crate::blocking`).

use crate::blocking::Wait;
use crate::cmd::context::pop::pop_first;
use crate::cmd::context::{Spec, BASE};

/// BZPOPMIN.
pub const BZPOPMIN: Spec = Spec {
    name: "bzpopmin",
    arity: -3,
    flags: &["write", "noscript", "blocking", "fast"],
    keys: (1, -2, 1),
    acl: &["@write", "@sortedset", "@fast", "@blocking"],
    group: "sorted-set",
    summary: "Remove and return the member with the lowest score from one or more sorted sets, or block until one is available",
    since: "5.0.0",
    complexity: "O(log(N)) with N being the number of elements in the sorted set.",
    run: |ctx, args| pop_first(ctx, args, Wait::ZSet {
        max: false,
        count: None,
    }),
    ..BASE
};

/// BZPOPMAX.
pub const BZPOPMAX: Spec = Spec {
    name: "bzpopmax",
    summary: "Remove and return the member with the highest score from one or more sorted sets, or block until one is available",
    run: |ctx, args| pop_first(ctx, args, Wait::ZSet {
        max: true,
        count: None,
    }),
    ..BZPOPMIN
};
