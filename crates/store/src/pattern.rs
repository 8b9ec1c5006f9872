//! Glob-style matching as Redis's `stringmatchlen` does it, for KEYS, SCAN
//! MATCH and CONFIG GET: `*`, `?`, `[abc]`, `[^a-z]`, `\x` escapes.
//!
//! Redis matches recursively on each `*`; this matcher keeps only the most
//! recent `*` as a backtrack point, which accepts the same language (a later
//! star can absorb anything an earlier one would have) in O(pattern × key)
//! time, so a hostile pattern like `*a*a*a*a*b` cannot stall a shard.

/// True if `text` matches the glob `pattern`; `nocase` folds ASCII case.
pub fn glob_match(pattern: &[u8], text: &[u8], nocase: bool) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut backtrack: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            while p < pattern.len() && pattern[p] == b'*' {
                p += 1;
            }
            if p == pattern.len() {
                return true;
            }
            backtrack = Some((p, t));
            continue;
        }
        if let Some(next) = match_one(pattern, p, text[t], nocase) {
            p = next;
            t += 1;
            continue;
        }
        match backtrack {
            Some((star_p, star_t)) => {
                p = star_p;
                t = star_t + 1;
                backtrack = Some((star_p, star_t + 1));
            }
            None => return false,
        }
    }
    pattern[p..].iter().all(|&b| b == b'*')
}

fn fold(b: u8, nocase: bool) -> u8 {
    if nocase {
        b.to_ascii_lowercase()
    } else {
        b
    }
}

/// Matches one pattern element at `p` against byte `c`; returns the index
/// after the element on success.
fn match_one(pattern: &[u8], p: usize, c: u8, nocase: bool) -> Option<usize> {
    let &head = pattern.get(p)?;
    match head {
        b'?' => Some(p + 1),
        b'[' => match_class(pattern, p + 1, c, nocase),
        b'\\' if p + 1 < pattern.len() => {
            (fold(pattern[p + 1], nocase) == fold(c, nocase)).then_some(p + 2)
        }
        literal => (fold(literal, nocase) == fold(c, nocase)).then_some(p + 1),
    }
}

/// A `[...]` class starting after the `[`. Like Redis, an unterminated class
/// runs to the end of the pattern.
fn match_class(pattern: &[u8], mut p: usize, c: u8, nocase: bool) -> Option<usize> {
    let negate = pattern.get(p) == Some(&b'^');
    if negate {
        p += 1;
    }
    let c = fold(c, nocase);
    let mut matched = false;
    while p < pattern.len() && pattern[p] != b']' {
        if pattern[p] == b'\\' && p + 1 < pattern.len() {
            p += 1;
            matched |= fold(pattern[p], nocase) == c;
        } else if p + 2 < pattern.len() && pattern[p + 1] == b'-' {
            let (mut lo, mut hi) = (fold(pattern[p], nocase), fold(pattern[p + 2], nocase));
            if lo > hi {
                std::mem::swap(&mut lo, &mut hi);
            }
            matched |= (lo..=hi).contains(&c);
            p += 2;
        } else {
            matched |= fold(pattern[p], nocase) == c;
        }
        p += 1;
    }
    let after = if p < pattern.len() { p + 1 } else { p };
    (matched != negate).then_some(after)
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn redis_glob_cases() {
        let yes: &[(&str, &str)] = &[
            ("*", ""),
            ("*", "anything"),
            ("h?llo", "hello"),
            ("h*llo", "heeeello"),
            ("h[ae]llo", "hallo"),
            ("h[^e]llo", "hallo"),
            ("h[a-b]llo", "hbllo"),
            ("h[b-a]llo", "hallo"),
            ("h\\*llo", "h*llo"),
            ("*a*b", "xaxxab"),
            ("user:*:name", "user:42:name"),
            ("[abc", "b"),
        ];
        let no: &[(&str, &str)] = &[
            ("h?llo", "hllo"),
            ("h[^e]llo", "hello"),
            ("h[a-b]llo", "hcllo"),
            ("h\\*llo", "hello"),
            ("*a*b", "xaxxa"),
            ("a", ""),
            ("?", ""),
        ];
        for (p, t) in yes {
            assert!(
                glob_match(p.as_bytes(), t.as_bytes(), false),
                "{p} should match {t}"
            );
        }
        for (p, t) in no {
            assert!(
                !glob_match(p.as_bytes(), t.as_bytes(), false),
                "{p} should not match {t}"
            );
        }
        assert!(glob_match(b"MAXMEM*", b"maxmemory", true));
        assert!(!glob_match(b"MAXMEM*", b"maxmemory", false));
    }

    #[test]
    fn hostile_pattern_finishes() {
        let pattern = "*a".repeat(50) + "b";
        assert!(!glob_match(
            pattern.as_bytes(),
            "a".repeat(10_000).as_bytes(),
            false
        ));
    }
}
