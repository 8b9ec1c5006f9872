//! Key name → pattern (see the crate documentation for the rules). Kept free
//! of I/O so every rule can be unit-tested on plain strings.

use std::collections::{HashMap, HashSet};

use regex::Regex;

/// Separators used when `--separators` is not given: the characters key
/// naming conventions put between a fixed part and an id (`user:42`,
/// `img/ab12.png`, `order-9`, `sess_x`, `a|b`, `k#1`, `name@host`, `a=1,b=2`).
pub const DEFAULT_SEPARATORS: &str = ":/.-_|#@,=";

/// Placeholder for a variable segment; a glob wildcard, so a pattern can be
/// passed back to `SCAN MATCH`.
pub const WILDCARD: &str = "*";

/// One `--rule REGEX=REPLACEMENT`, applied to the whole key name before the
/// built-in rules so users can fix what the heuristics get wrong.
#[derive(Debug, Clone)]
pub struct Rule {
    re: Regex,
    replacement: String,
}

impl Rule {
    /// Parses `REGEX=REPLACEMENT`, splitting at the last `=` (regexes contain
    /// `=` more often than replacements do). The replacement may use `$1`.
    pub fn parse(spec: &str) -> Result<Rule, String> {
        let (re, replacement) = spec
            .rsplit_once('=')
            .ok_or_else(|| format!("--rule {spec:?}: expected REGEX=REPLACEMENT"))?;
        let re = Regex::new(re).map_err(|e| format!("--rule {spec:?}: {e}"))?;
        Ok(Rule {
            re,
            replacement: replacement.to_string(),
        })
    }
}

/// Turns key names into patterns: holds the compiled rules and separators
/// so the per-key work is a few scans of the name.
#[derive(Debug, Clone)]
pub struct Inferrer {
    separators: Vec<char>,
    rules: Vec<Rule>,
    uuid: Regex,
}

impl Inferrer {
    /// An inferrer splitting at `separators` (each character is one) after
    /// applying `rules` in order.
    pub fn new(separators: &str, rules: Vec<Rule>) -> Inferrer {
        Inferrer {
            separators: separators.chars().collect(),
            rules,
            uuid: Regex::new(
                "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
            )
            .expect("uuid regex"),
        }
    }

    /// The pattern of one key name (steps 1–3; step 4 is [`collapse`]).
    /// Names that are not UTF-8 are read lossily: only the pattern, never
    /// the key sent to the server, is affected.
    pub fn pattern(&self, key: &[u8]) -> String {
        let mut name = String::from_utf8_lossy(key).into_owned();
        for rule in &self.rules {
            if rule.re.is_match(&name) {
                name = rule
                    .re
                    .replace_all(&name, rule.replacement.as_str())
                    .into_owned();
            }
        }
        if name.len() >= 36 && self.uuid.is_match(&name) {
            name = self.uuid.replace_all(&name, WILDCARD).into_owned();
        }
        let mut out = String::with_capacity(name.len());
        let mut segment_start = 0;
        for (i, c) in name.char_indices() {
            if self.separators.contains(&c) {
                push_segment(&mut out, &name[segment_start..i]);
                out.push(c);
                segment_start = i + c.len_utf8();
            }
        }
        push_segment(&mut out, &name[segment_start..]);
        out
    }

    /// The separators, for [`collapse`], which splits patterns the same way.
    pub fn separators(&self) -> &[char] {
        &self.separators
    }
}

fn push_segment(out: &mut String, seg: &str) {
    if is_variable(seg) {
        out.push_str(WILDCARD);
    } else {
        replace_digit_runs(out, seg);
    }
}

/// Whether a whole segment is an identifier rather than a name.
pub fn is_variable(seg: &str) -> bool {
    if seg.is_empty() || seg == WILDCARD {
        return false;
    }
    let bytes = seg.as_bytes();
    let digits = bytes.iter().filter(|b| b.is_ascii_digit()).count();
    if digits == bytes.len() {
        return true;
    }
    let letters = bytes.iter().filter(|b| b.is_ascii_alphabetic()).count();
    if bytes.iter().all(u8::is_ascii_hexdigit)
        && ((bytes.len() >= 6 && digits > 0) || bytes.len() >= 16)
    {
        return true;
    }
    let token_alphabet = bytes
        .iter()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'-' | b'_'));
    if token_alphabet && bytes.len() >= 16 && digits > 0 && letters > 0 {
        return true;
    }
    if token_alphabet && bytes.len() >= 20 {
        let changes = bytes
            .windows(2)
            .filter(|w| class(w[0]) != class(w[1]))
            .count();
        if changes * 5 >= bytes.len() * 2 {
            return true;
        }
    }
    false
}

fn class(b: u8) -> u8 {
    if b.is_ascii_uppercase() {
        0
    } else if b.is_ascii_lowercase() {
        1
    } else if b.is_ascii_digit() {
        2
    } else {
        3
    }
}

/// Copies `seg`, replacing runs of 4 or more digits by `*`.
fn replace_digit_runs(out: &mut String, seg: &str) {
    let bytes = seg.as_bytes();
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_digit() {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            if i - start >= 4 {
                out.push_str(&seg[copied..start]);
                out.push_str(WILDCARD);
                copied = i;
            }
        } else {
            i += 1;
        }
    }
    out.push_str(&seg[copied..]);
}

/// Splits a pattern into its segments and the separators between them.
fn split<'a>(pattern: &'a str, separators: &[char]) -> (Vec<&'a str>, String) {
    let mut segs = Vec::new();
    let mut seps = String::new();
    let mut start = 0;
    for (i, c) in pattern.char_indices() {
        if separators.contains(&c) {
            segs.push(&pattern[start..i]);
            seps.push(c);
            start = i + c.len_utf8();
        }
    }
    segs.push(&pattern[start..]);
    (segs, seps)
}

/// Step 4: merges patterns that differ in one segment position only when
/// that position has more than `max_literals` distinct literal values
/// (ids made of letters). Returns, for each input pattern, its final
/// pattern. `max_literals == 0` turns the step off.
pub fn collapse(
    patterns: &[String],
    separators: &[char],
    max_literals: usize,
) -> HashMap<String, String> {
    let mut current: Vec<(Vec<String>, String)> = patterns
        .iter()
        .map(|p| {
            let (segs, seps) = split(p, separators);
            (segs.into_iter().map(str::to_string).collect(), seps)
        })
        .collect();
    if max_literals > 0 {
        let longest = current.iter().map(|(s, _)| s.len()).max().unwrap_or(0);
        for pos in 0..longest {
            // Patterns equal except at `pos`, keyed by the rest.
            let mut groups: HashMap<(String, String), HashSet<String>> = HashMap::new();
            let mask = |segs: &[String], seps: &str| -> (String, String) {
                let mut k = String::new();
                for (i, s) in segs.iter().enumerate() {
                    if i != pos {
                        k.push_str(s);
                    }
                    k.push('\u{0}');
                }
                (k, seps.to_string())
            };
            for (segs, seps) in &current {
                if pos < segs.len() && segs[pos] != WILDCARD {
                    groups
                        .entry(mask(segs, seps))
                        .or_default()
                        .insert(segs[pos].clone());
                }
            }
            let wide: HashSet<(String, String)> = groups
                .into_iter()
                .filter(|(_, values)| values.len() > max_literals)
                .map(|(k, _)| k)
                .collect();
            if wide.is_empty() {
                continue;
            }
            for (segs, seps) in &mut current {
                if pos < segs.len() && wide.contains(&mask(segs, seps)) {
                    segs[pos] = WILDCARD.to_string();
                }
            }
        }
    }
    patterns
        .iter()
        .zip(current)
        .map(|(orig, (segs, seps))| {
            let mut s = String::with_capacity(orig.len());
            let mut seps = seps.chars();
            for (i, seg) in segs.iter().enumerate() {
                if i > 0 {
                    s.push(seps.next().unwrap_or(':'));
                }
                s.push_str(seg);
            }
            (orig.clone(), s)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn infer(key: &str) -> String {
        Inferrer::new(DEFAULT_SEPARATORS, vec![]).pattern(key.as_bytes())
    }

    #[test]
    fn numbers_become_wildcards() {
        assert_eq!(infer("user:42:profile"), "user:*:profile");
        assert_eq!(infer("user:1234567890"), "user:*");
        assert_eq!(infer("42"), "*");
        assert_eq!(infer("counter"), "counter");
        assert_eq!(infer("report2024:daily"), "report*:daily");
        assert_eq!(infer("hash:sha256:v2"), "hash:sha256:v2");
    }

    #[test]
    fn hex_ids_and_hashes() {
        assert_eq!(infer("cache:5f2b9c1e:html"), "cache:*:html");
        assert_eq!(
            infer("blob/da39a3ee5e6b4b0d3255bfef95601890afd80709.png"),
            "blob/*.png"
        );
        // Hex-looking words stay.
        assert_eq!(infer("cafe:beef:facade"), "cafe:beef:facade");
        // 16+ hex is an id even without digits.
        assert_eq!(infer("k:abcdefabcdefabcd"), "k:*");
        // base64-ish tokens.
        assert_eq!(infer("tok:dGhpcyBpcyBhIHRva2Vu0k9"), "tok:*");
        assert_eq!(infer("sess:AbCdEfGhIjKlMnOpQrStUv"), "sess:*");
        // A long plain word is not a token.
        assert_eq!(
            infer("feature:notificationpreferences"),
            "feature:notificationpreferences"
        );
        assert_eq!(
            infer("cfg:SessionTokenCacheSettings"),
            "cfg:SessionTokenCacheSettings"
        );
    }

    #[test]
    fn uuids_in_any_position() {
        assert_eq!(
            infer("session:550e8400-e29b-41d4-a716-446655440000"),
            "session:*"
        );
        assert_eq!(
            infer("550E8400-E29B-41D4-A716-446655440000/items/7"),
            "*/items/*"
        );
    }

    #[test]
    fn mixed_separators() {
        assert_eq!(
            infer("app/v2/user-123_cart.json"),
            "app/v2/user-*_cart.json"
        );
        assert_eq!(infer("a|b#99@host.example.com"), "a|b#*@host.example.com");
        assert_eq!(infer("q:a=1,b=22"), "q:a=*,b=*");
        // Custom separators: with only ':' the dash-joined id stays whole.
        let only_colon = Inferrer::new(":", vec![]);
        assert_eq!(only_colon.pattern(b"job:run-42"), "job:run-42");
        assert_eq!(infer("job:run-42"), "job:run-*");
        assert_eq!(only_colon.pattern(b"order:77"), "order:*");
        // Empty segments are kept.
        assert_eq!(infer("a::1"), "a::*");
    }

    #[test]
    fn extra_rules_run_first() {
        let rules = vec![
            Rule::parse("^tenant-[a-z]+=tenant-{name}").unwrap(),
            Rule::parse(r"v(\d)=V$1").unwrap(),
        ];
        let inf = Inferrer::new(DEFAULT_SEPARATORS, rules);
        assert_eq!(
            inf.pattern(b"tenant-acme:user:5:v3"),
            "tenant-{name}:user:*:V3"
        );
        assert!(Rule::parse("no-equals").is_err());
        assert!(Rule::parse("(unclosed=x").is_err());
    }

    #[test]
    fn non_utf8_names_do_not_panic() {
        let inf = Inferrer::new(DEFAULT_SEPARATORS, vec![]);
        assert_eq!(inf.pattern(b"bin:\xff\xfe:12"), "bin:\u{fffd}\u{fffd}:*");
    }

    #[test]
    fn collapse_merges_high_cardinality_literals() {
        // 26 distinct names: below the threshold of 50, kept.
        let pats: Vec<String> = (b'a'..=b'z')
            .map(|c| format!("user:name{}x:profile", char::from(c)))
            .collect();
        let m = collapse(&pats, &[':'], 50);
        assert!(m.iter().all(|(a, b)| a == b));
        // 60 distinct names: merged, together with the numeric-id pattern.
        let mut pats: Vec<String> = (0..60).map(|i| format!("user:u{i}x:profile")).collect();
        pats.push("user:*:profile".into());
        pats.push("config:main".into());
        let m = collapse(&pats, &[':'], 50);
        assert_eq!(m["user:u7x:profile"], "user:*:profile");
        assert_eq!(m["user:*:profile"], "user:*:profile");
        assert_eq!(m["config:main"], "config:main");
        // Off.
        let m = collapse(&pats, &[':'], 0);
        assert_eq!(m["user:u7x:profile"], "user:u7x:profile");
    }
}
