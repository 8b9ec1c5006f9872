//! The users a server knows, by name (in byte order, as ACL LIST and
//! USERS list them), and how whole users are set, loaded and saved.

use std::collections::BTreeMap;

use crate::catalog::Catalog;
use crate::user::{valid_user_name, User};
use crate::RuleError;

/// Every user; `default` always among them.
#[derive(Clone, Debug)]
pub struct Users {
    users: BTreeMap<Vec<u8>, User>,
}

/// Why ACL SETUSER (or a `user` line) was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum SetUserError {
    /// A `(` with no `)`; the index of the rule it starts at.
    Unmatched(usize),
    /// This rule failed; nothing was changed.
    Rule(Vec<u8>, RuleError),
}

impl Users {
    /// Only `default`, allowed everything with no password.
    pub fn new(catalog: &Catalog) -> Users {
        let default = User::default_user(catalog);
        Users {
            users: BTreeMap::from([(b"default".to_vec(), default)]),
        }
    }

    pub fn get(&self, name: &[u8]) -> Option<&User> {
        self.users.get(name)
    }

    pub fn default_user(&self) -> &User {
        &self.users[&b"default"[..]]
    }

    /// Users in name order.
    pub fn iter(&self) -> impl Iterator<Item = &User> {
        self.users.values()
    }

    pub fn len(&self) -> usize {
        self.users.len()
    }

    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }

    /// Creates or changes user `name` with `rules`, all or nothing.
    pub fn set_user(
        &mut self,
        name: &[u8],
        rules: &[&[u8]],
        catalog: &Catalog,
    ) -> Result<(), SetUserError> {
        let rules = merge_selectors(rules).map_err(SetUserError::Unmatched)?;
        let mut user = (self.users.get(name).cloned()).unwrap_or_else(|| User::new(name, catalog));
        for rule in &rules {
            user.apply(rule, catalog)
                .map_err(|e| SetUserError::Rule(rule.clone(), e))?;
        }
        self.users.insert(name.to_vec(), user);
        Ok(())
    }

    /// Removes user `name`; false if there was none. `default` cannot be
    /// removed (the caller refuses it).
    pub fn delete(&mut self, name: &[u8]) -> bool {
        name != b"default" && self.users.remove(name).is_some()
    }

    /// `requirepass`: the default user's only password, or none with
    /// `nopass`.
    pub fn set_default_password(&mut self, password: &[u8], catalog: &Catalog) {
        let default = self
            .users
            .get_mut(&b"default"[..])
            .expect("default is always there");
        let reset = default.apply(b"resetpass", catalog);
        let set = if password.is_empty() {
            default.apply(b"nopass", catalog)
        } else {
            default.apply(&[b">", password].concat(), catalog)
        };
        debug_assert!(reset.is_ok() && set.is_ok());
    }

    /// The users of an ACL file's `text` (`user NAME rules...` lines), or
    /// every problem found, as Redis words them, when any line is wrong.
    pub fn parse_file(text: &str, file: &str, catalog: &Catalog) -> Result<Users, String> {
        let mut users = BTreeMap::new();
        let mut errors = String::new();
        for (i, line) in text.split('\n').enumerate() {
            let line_no = i + 1;
            let line = line.trim_matches(|c| matches!(c, ' ' | '\t' | '\r' | '\n'));
            if line.is_empty() {
                continue;
            }
            let words: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
            if words[0] != b"user" || words.len() < 2 {
                errors += &format!(
                    "{file}:{line_no} should start with user keyword followed by the username. "
                );
                continue;
            }
            let name = words[1];
            if !valid_user_name(name) {
                errors += &format!(
                    "'{file}:{line_no}: username '{}' contains invalid characters. ",
                    String::from_utf8_lossy(name)
                );
                continue;
            }
            if users.contains_key(name) {
                errors += &format!(
                    "WARNING: Duplicate user '{}' found on line {line_no}. ",
                    String::from_utf8_lossy(name)
                );
                continue;
            }
            let mut user = User::new(name, catalog);
            let rules = match merge_selectors(&words[2..]) {
                Ok(rules) => rules,
                Err(_) => {
                    errors +=
                        &format!("{file}:{line_no}: Unmatched parenthesis in selector definition.");
                    Vec::new()
                }
            };
            let mut syntax_error = false;
            for rule in &rules {
                let rule = rule.trim_ascii_end();
                match user.apply(rule, catalog) {
                    Ok(()) => {}
                    Err(RuleError::UnknownCommand) => {
                        errors += &format!(
                            "{file}:{line_no}: Error in applying operation '{}': {}. ",
                            String::from_utf8_lossy(rule),
                            RuleError::UnknownCommand.message()
                        );
                    }
                    Err(e) if !syntax_error => {
                        errors += &format!("{file}:{line_no}: {}. ", e.message());
                        syntax_error = true;
                    }
                    Err(_) => {}
                }
            }
            users.insert(name.to_vec(), user);
        }
        if !errors.is_empty() {
            errors += "WARNING: ACL errors detected, no change to the previously active ACL rules was performed";
            return Err(errors);
        }
        users
            .entry(b"default".to_vec())
            .or_insert_with(|| User::default_user(catalog));
        Ok(Users { users })
    }

    /// The ACL file's text for these users, one `user` line each.
    pub fn to_file(&self, catalog: &Catalog) -> String {
        self.iter()
            .map(|u| {
                format!(
                    "user {} {}\n",
                    String::from_utf8_lossy(u.name()),
                    u.describe(catalog)
                )
            })
            .collect()
    }

    /// The users of configuration `user` lines (each the words after
    /// `user`: a name, then rules), over `self`. A rule naming a command
    /// keel does not know is an error here, as Redis finds it when it
    /// loads them.
    pub fn with_config_lines(
        mut self,
        lines: &[Vec<Vec<u8>>],
        catalog: &Catalog,
    ) -> Result<Users, String> {
        let mut seen: Vec<&[u8]> = Vec::new();
        for line in lines {
            let Some((name, rules)) = line.split_first() else {
                return Err("user directive without a name".into());
            };
            let shown = String::from_utf8_lossy(name);
            if !valid_user_name(name) {
                return Err("Spaces not allowed in ACL usernames".into());
            }
            if seen.contains(&&name[..]) {
                return Err(format!(
                    "Duplicate user '{shown}': {}",
                    RuleError::Duplicate.message()
                ));
            }
            seen.push(name);
            let rules = merge_selectors(&rules.iter().map(Vec::as_slice).collect::<Vec<_>>())
                .map_err(|_| format!("Unmatched parenthesis in the rules of user '{shown}'"))?;
            let user = self
                .users
                .entry(name.clone())
                .or_insert_with(|| User::new(name, catalog));
            if name == b"default" {
                let reset = user.apply(b"reset", catalog);
                debug_assert!(reset.is_ok());
            }
            for rule in &rules {
                user.apply(rule, catalog).map_err(|e| {
                    format!(
                        "Error loading ACL rule '{}' for the user named '{shown}': {}",
                        String::from_utf8_lossy(rule),
                        e.message()
                    )
                })?;
            }
        }
        Ok(self)
    }
}

/// Joins a selector given as several words (`(~key` `+get)`) into one
/// rule, as Redis accepts it; `Err` with the index of a `(` never closed.
pub fn merge_selectors(words: &[&[u8]]) -> Result<Vec<Vec<u8>>, usize> {
    let mut merged = Vec::new();
    let mut open: Option<(usize, Vec<u8>)> = None;
    for (i, &word) in words.iter().enumerate() {
        if let Some((_, selector)) = &mut open {
            selector.push(b' ');
            selector.extend_from_slice(word);
            if word.ends_with(b")") {
                merged.push(open.take().expect("open").1);
            }
        } else if word.starts_with(b"(") && !word.ends_with(b")") {
            open = Some((i, word.to_vec()));
        } else {
            merged.push(word.to_vec());
        }
    }
    match open {
        Some((start, _)) => Err(start),
        None => Ok(merged),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::tests::sample;

    #[test]
    fn set_user_is_all_or_nothing() {
        let catalog = sample();
        let mut users = Users::new(&catalog);
        users
            .set_user(b"bob", &[b"on", b">pw", b"+get"], &catalog)
            .unwrap();
        let err = users.set_user(b"bob", &[b"-get", b"+nosuch"], &catalog);
        assert_eq!(
            err,
            Err(SetUserError::Rule(
                b"+nosuch".to_vec(),
                RuleError::UnknownCommand
            ))
        );
        assert!(users
            .get(b"bob")
            .unwrap()
            .describe(&catalog)
            .ends_with("+@read"));
        let err = users.set_user(b"bob", &[b"(~a", b"+get"], &catalog);
        assert_eq!(err, Err(SetUserError::Unmatched(0)));
        users
            .set_user(b"bob", &[b"(~a", b"+set)"], &catalog)
            .unwrap();
        assert_eq!(users.get(b"bob").unwrap().selectors().len(), 2);
        assert!(!users.delete(b"default"));
        assert!(users.delete(b"bob") && !users.delete(b"bob"));
    }

    #[test]
    fn files_round_trip_and_errors_change_nothing() {
        let catalog = sample();
        let mut users = Users::new(&catalog);
        users
            .set_user(
                b"bob",
                &[b"on", b">pw", b"~k:*", b"+get", b"(+set ~w:*)"],
                &catalog,
            )
            .unwrap();
        let text = users.to_file(&catalog);
        let loaded = Users::parse_file(&text, "users.acl", &catalog).unwrap();
        assert_eq!(loaded.to_file(&catalog), text);
        let err =
            Users::parse_file("user a on +nosuch\nuser a on\nbogus\n", "f", &catalog).unwrap_err();
        assert_eq!(
            err,
            "f:1: Error in applying operation '+nosuch': Unknown command or category name in ACL. \
             WARNING: Duplicate user 'a' found on line 2. \
             f:3 should start with user keyword followed by the username. \
             WARNING: ACL errors detected, no change to the previously active ACL rules was performed"
        );
        let only_bob = Users::parse_file("user bob on nopass\n", "f", &catalog).unwrap();
        assert!(
            only_bob.default_user().unrestricted(),
            "a file without default gets the built-in one"
        );
    }

    #[test]
    fn requirepass_is_the_default_users_password() {
        let catalog = sample();
        let mut users = Users::new(&catalog);
        users.set_default_password(b"secret", &catalog);
        let default = users.default_user();
        assert!(!default.nopass() && default.accepts(b"secret") && !default.accepts(b""));
        users.set_default_password(b"", &catalog);
        assert!(users.default_user().nopass());
    }

    #[test]
    fn config_lines_reset_default_and_refuse_duplicates() {
        let catalog = sample();
        let line = |words: &[&str]| {
            words
                .iter()
                .map(|w| w.as_bytes().to_vec())
                .collect::<Vec<_>>()
        };
        let users = Users::new(&catalog)
            .with_config_lines(
                &[
                    line(&["default", "on", ">pw", "+get"]),
                    line(&["bob", "on"]),
                ],
                &catalog,
            )
            .unwrap();
        assert_eq!(
            users.default_user().describe(&catalog),
            format!(
                "on sanitize-payload #{} resetchannels -@all +@read",
                crate::hash_password(b"pw")
            )
        );
        let dup =
            Users::new(&catalog).with_config_lines(&[line(&["bob"]), line(&["bob"])], &catalog);
        assert!(dup.unwrap_err().contains("Duplicate user 'bob'"));
    }
}
