//! The count rules SRANDMEMBER, HRANDFIELD and ZRANDMEMBER share: a
//! positive count picks distinct elements (all of them when the count
//! reaches the size), a negative one picks with repetition.

use rand::rngs::ThreadRng;

use super::{parse_i64, Error};

/// Parses a random-pick count, refusing `i64::MIN` as Redis does (its
/// absolute value does not fit).
pub fn parse_count(arg: &[u8]) -> Result<i64, Error> {
    match parse_i64(arg)? {
        i64::MIN => Err(
            "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"
                .into(),
        ),
        n => Ok(n),
    }
}

/// The picks of a random-pick command with a count, from a collection of
/// `len` elements: how many there are, and the picks, drawn lazily. `all`
/// lists every element, `random` draws one. With repetition (a negative
/// count) nothing is drawn before it is written, so a count of -10^12
/// costs one element at a time and stops when the reply reaches the
/// client's output limit (see [`crate::cmd::context::write_each`]).
pub fn pick<'c, T: 'c>(
    count: i64,
    len: usize,
    all: impl Iterator<Item = T> + 'c,
    mut random: impl FnMut(&mut ThreadRng) -> T + 'c,
) -> (usize, Box<dyn Iterator<Item = T> + 'c>) {
    let mut rng = rand::thread_rng();
    if count < 0 {
        let n = count.unsigned_abs() as usize;
        return (n, Box::new((0..n).map(move |_| random(&mut rng))));
    }
    if count as usize >= len {
        return (len, Box::new(all));
    }
    let chosen = rand::seq::index::sample(&mut rng, len, count as usize);
    let mut keep = vec![false; len];
    chosen.iter().for_each(|i| keep[i] = true);
    let picks = all
        .zip(keep)
        .filter_map(|(element, kept)| kept.then_some(element));
    (count as usize, Box::new(picks))
}
