//! The nodes of a cluster and the slots each serves, and Redis's line
//! format for them (`clusterGenNodeDescription` and `clusterLoadConfig` in
//! `cluster.c`), one line per node:
//!
//! ```text
//! <id> <ip>:<port>@<bus-port>[,<hostname>] <flags> <primary-id|-> <ping-sent> <pong-received> <config-epoch> <link-state> <slot|first-last>...
//! ```
//!
//! `flags` holds `myself` on the line of the node that wrote it, `master`
//! or `slave`, and `fail`, `nofailover`, .... A node's own line also lists
//! the slots it is moving: `[slot->-<target-id>]` (migrating) and
//! `[slot-<-<source-id>]` (importing). A `nodes.conf` file ends with
//! `vars currentEpoch <n> lastVoteEpoch <n>`.
//!
//! The same format carries a pushed topology (CLUSTER SETTOPOLOGY): every
//! node's line, each with its own moving slots; the receiving node finds
//! itself by its id.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::slot::SLOTS;
use crate::slots::{parse_slot, ranges, SlotRange};

/// What a node is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    Primary,
    /// A replica of the node with this id.
    Replica(String),
}

/// One node of the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// 40 lowercase hex digits, chosen by the node at its first start.
    pub id: String,
    pub ip: String,
    pub port: u16,
    pub bus_port: u16,
    /// Empty unless announced.
    pub hostname: String,
    pub role: Role,
    /// Marked failed (`fail`) by whoever pushed the topology.
    pub failed: bool,
    /// `nofailover`.
    pub no_failover: bool,
    pub config_epoch: u64,
    /// Served slots, sorted and disjoint.
    pub slots: Vec<SlotRange>,
    /// Slots this node is moving to the node with the given id.
    pub migrating: BTreeMap<u16, String>,
    /// Slots this node is taking from the node with the given id.
    pub importing: BTreeMap<u16, String>,
}

impl Node {
    /// A primary serving no slots.
    pub fn new(id: &str, ip: &str, port: u16, bus_port: u16) -> Node {
        Node {
            id: id.to_string(),
            ip: ip.to_string(),
            port,
            bus_port,
            hostname: String::new(),
            role: Role::Primary,
            failed: false,
            no_failover: false,
            config_epoch: 0,
            slots: Vec::new(),
            migrating: BTreeMap::new(),
            importing: BTreeMap::new(),
        }
    }

    pub fn is_primary(&self) -> bool {
        self.role == Role::Primary
    }

    /// The id of the primary this node replicates, if it is a replica.
    pub fn primary_id(&self) -> Option<&str> {
        match &self.role {
            Role::Replica(id) => Some(id),
            Role::Primary => None,
        }
    }

    /// How many slots it serves.
    pub fn slot_count(&self) -> usize {
        self.slots
            .iter()
            .map(|&(first, last)| (last - first) as usize + 1)
            .sum()
    }

    /// Every slot it serves, in order.
    pub fn served(&self) -> impl Iterator<Item = u16> + '_ {
        self.slots.iter().flat_map(|&(first, last)| first..=last)
    }

    /// Serves exactly `slots` (sorted, distinct).
    pub fn set_slots(&mut self, slots: impl IntoIterator<Item = u16>) {
        self.slots = ranges(slots);
    }

    /// `host:port`, as MOVED and ASK redirections give it.
    pub fn address(&self) -> String {
        format!("{}:{}", self.ip, self.port)
    }

    /// The `flags` field, without `myself`.
    fn flags(&self) -> String {
        let mut flags = vec![if self.is_primary() { "master" } else { "slave" }];
        if self.failed {
            flags.push("fail");
        }
        if self.no_failover {
            flags.push("nofailover");
        }
        flags.join(",")
    }
}

/// Marks a slot no node serves in [`Topology::owners`].
pub const NO_OWNER: u16 = u16::MAX;

/// A cluster's nodes, and its version.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Topology {
    /// The cluster's current epoch: the version a pushed topology carries.
    pub current_epoch: u64,
    /// The nodes, in the order they are shown.
    pub nodes: Vec<Node>,
}

/// What a nodes.conf text holds besides the nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    pub topology: Topology,
    /// The id on the line flagged `myself`, if one is.
    pub myself: Option<String>,
    /// `lastVoteEpoch` of the `vars` line (0 without one).
    pub last_vote_epoch: u64,
}

/// Why a nodes.conf text is not a topology: the line (from 1) and what is
/// wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

/// True if `id` is a node id: 40 lowercase hex digits.
pub fn is_node_id(id: &str) -> bool {
    id.len() == 40 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

impl Topology {
    /// The node with id `id`.
    pub fn node(&self, id: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.id == id)
    }

    /// The node with id `id`, to change it.
    pub fn node_mut(&mut self, id: &str) -> Option<&mut Node> {
        self.nodes.iter_mut().find(|n| n.id == id)
    }

    /// For each slot, the index in `nodes` of the node serving it, or
    /// [`NO_OWNER`]. Fails if two nodes claim one slot or a replica claims
    /// any.
    pub fn owners(&self) -> Result<Vec<u16>, String> {
        let mut owners = vec![NO_OWNER; SLOTS];
        for (index, node) in self.nodes.iter().enumerate() {
            if !node.is_primary() && !node.slots.is_empty() {
                return Err(format!("replica {} serves slots", node.id));
            }
            for &(first, last) in &node.slots {
                let range = &mut owners[first as usize..=last as usize];
                if let Some(taken) = range.iter().position(|&o| o != NO_OWNER) {
                    return Err(format!(
                        "slot {} is served by both {} and {}",
                        first as usize + taken,
                        self.nodes[range[taken] as usize].id,
                        node.id
                    ));
                }
                range.fill(index as u16);
            }
        }
        Ok(owners)
    }

    /// How many slots some node serves.
    pub fn assigned_slots(&self) -> usize {
        self.nodes.iter().map(Node::slot_count).sum()
    }

    /// Checks what a line-by-line parse cannot: node ids are distinct, no
    /// slot has two owners, replicas follow known primaries, moving slots
    /// name known nodes. Returns [`Topology::owners`].
    pub fn validate(&self) -> Result<Vec<u16>, String> {
        for (i, node) in self.nodes.iter().enumerate() {
            if self.nodes[..i].iter().any(|other| other.id == node.id) {
                return Err(format!("node {} is listed twice", node.id));
            }
        }
        for node in &self.nodes {
            if let Some(primary) = node.primary_id() {
                match self.node(primary) {
                    None => {
                        return Err(format!(
                            "node {} replicates {primary}, which is not listed",
                            node.id
                        ))
                    }
                    Some(p) if !p.is_primary() => {
                        return Err(format!(
                            "node {} replicates {primary}, which is a replica",
                            node.id
                        ))
                    }
                    Some(_) => {}
                }
            }
            for peer in node.migrating.values().chain(node.importing.values()) {
                if self.node(peer).is_none() {
                    return Err(format!(
                        "node {} moves a slot with {peer}, which is not listed",
                        node.id
                    ));
                }
            }
        }
        self.owners()
    }

    /// Reads Redis's line format: a `nodes.conf` file, the reply of
    /// CLUSTER NODES, or a pushed topology. Blank lines are skipped.
    pub fn parse(text: &str) -> Result<Parsed, ParseError> {
        let mut topology = Topology::default();
        let mut myself = None;
        let mut last_vote_epoch = 0;
        for (i, line) in text.lines().enumerate() {
            let at = |message: String| ParseError {
                line: i + 1,
                message,
            };
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.first() {
                None => continue,
                Some(&"vars") => {
                    let epochs = parse_vars(&words[1..]).map_err(at)?;
                    topology.current_epoch = epochs.0;
                    last_vote_epoch = epochs.1;
                }
                Some(_) => {
                    let (node, is_myself) = parse_node(&words).map_err(at)?;
                    if is_myself {
                        if myself.is_some() {
                            return Err(at("a second node is flagged myself".into()));
                        }
                        myself = Some(node.id.clone());
                    }
                    topology.nodes.push(node);
                }
            }
        }
        topology
            .validate()
            .map_err(|message| ParseError { line: 0, message })?;
        Ok(Parsed {
            topology,
            myself,
            last_vote_epoch,
        })
    }

    /// Writes Redis's line format: one line per node, flagging `myself`'s
    /// line (`None`: no line flagged, as a pushed topology is written).
    /// `link` gives each node's ping-sent and pong-received times (ms) and
    /// whether its link counts as connected.
    pub fn render(&self, myself: Option<&str>, link: impl Fn(&Node) -> (u64, u64, bool)) -> String {
        let mut out = String::new();
        for node in &self.nodes {
            let is_myself = myself == Some(node.id.as_str());
            let (ping, pong, connected) = link(node);
            let _ = write!(
                out,
                "{} {}:{}@{}",
                node.id, node.ip, node.port, node.bus_port
            );
            if !node.hostname.is_empty() {
                let _ = write!(out, ",{}", node.hostname);
            }
            let flags = node.flags();
            let _ = write!(
                out,
                " {}{flags} {} {ping} {pong} {} {}",
                if is_myself { "myself," } else { "" },
                node.primary_id().unwrap_or("-"),
                node.config_epoch,
                if connected {
                    "connected"
                } else {
                    "disconnected"
                },
            );
            for &(first, last) in &node.slots {
                if first == last {
                    let _ = write!(out, " {first}");
                } else {
                    let _ = write!(out, " {first}-{last}");
                }
            }
            for (slot, target) in &node.migrating {
                let _ = write!(out, " [{slot}->-{target}]");
            }
            for (slot, source) in &node.importing {
                let _ = write!(out, " [{slot}-<-{source}]");
            }
            out.push('\n');
        }
        out
    }

    /// The `nodes.conf` text: the lines with `myself` flagged, and the
    /// `vars` line.
    pub fn render_config(&self, myself: &str, last_vote_epoch: u64) -> String {
        let mut text = self.render(Some(myself), |_| (0, 0, true));
        let _ = writeln!(
            text,
            "vars currentEpoch {} lastVoteEpoch {last_vote_epoch}",
            self.current_epoch
        );
        text
    }
}

fn parse_vars(words: &[&str]) -> Result<(u64, u64), String> {
    let mut current = 0;
    let mut last_vote = 0;
    for pair in words.chunks(2) {
        let [name, value] = pair else {
            return Err("vars line has a name without a value".into());
        };
        let value: u64 = value
            .parse()
            .map_err(|_| format!("{name} is not a number: {value}"))?;
        match *name {
            "currentEpoch" => current = value,
            "lastVoteEpoch" => last_vote = value,
            other => return Err(format!("unknown variable {other}")),
        }
    }
    Ok((current, last_vote))
}

/// One node line; also whether it is flagged `myself`.
fn parse_node(words: &[&str]) -> Result<(Node, bool), String> {
    if words.len() < 8 {
        return Err(format!(
            "a node line has at least 8 fields, this one {}",
            words.len()
        ));
    }
    let id = words[0];
    if !is_node_id(id) {
        return Err(format!("bad node id {id:?} (40 hex digits)"));
    }
    let (ip, port, bus_port, hostname) = parse_address(words[1])?;
    let mut node = Node::new(id, ip, port, bus_port);
    node.hostname = hostname.to_string();
    let mut is_myself = false;
    let mut replica = false;
    for flag in words[2].split(',') {
        match flag {
            "myself" => is_myself = true,
            "master" => {}
            "slave" => replica = true,
            "fail" | "fail?" => node.failed = true,
            "nofailover" => node.no_failover = true,
            "handshake" | "noaddr" | "noflags" => {}
            other => return Err(format!("unknown node flag {other:?}")),
        }
    }
    match (replica, words[3]) {
        (true, "-") => return Err(format!("replica {id} names no primary")),
        (true, primary) if is_node_id(primary) => node.role = Role::Replica(primary.into()),
        (_, "-") => {}
        (false, _) => {}
        (true, primary) => return Err(format!("bad primary id {primary:?}")),
    }
    for (field, what) in [(words[4], "ping time"), (words[5], "pong time")] {
        field
            .parse::<u64>()
            .map_err(|_| format!("{what} is not a number: {field}"))?;
    }
    node.config_epoch = words[6]
        .parse()
        .map_err(|_| format!("config epoch is not a number: {}", words[6]))?;
    if !matches!(words[7], "connected" | "disconnected") {
        return Err(format!("unknown link state {:?}", words[7]));
    }
    let mut served = Vec::new();
    for word in &words[8..] {
        if let Some(moving) = word.strip_prefix('[').and_then(|w| w.strip_suffix(']')) {
            parse_moving(moving, &mut node)?;
            continue;
        }
        let (first, last) = word.split_once('-').unwrap_or((word, word));
        let slot = |text: &str| parse_slot(text.as_bytes()).ok_or(format!("bad slot {word:?}"));
        let (first, last) = (slot(first)?, slot(last)?);
        if first > last {
            return Err(format!("bad slot range {word:?}"));
        }
        served.extend(first..=last);
    }
    served.sort_unstable();
    if served.windows(2).any(|w| w[0] == w[1]) {
        return Err(format!("node {id} lists a slot twice"));
    }
    node.set_slots(served);
    Ok((node, is_myself))
}

/// `ip:port@bus-port[,hostname]`; Redis 3's `ip:port` means a bus port
/// 10000 higher.
fn parse_address(text: &str) -> Result<(&str, u16, u16, &str), String> {
    let bad = || format!("bad address {text:?} (ip:port@bus-port)");
    let (address, hostname) = text.split_once(',').unwrap_or((text, ""));
    let (ip_port, bus) = match address.split_once('@') {
        Some((ip_port, bus)) => (ip_port, Some(bus)),
        None => (address, None),
    };
    let (ip, port) = ip_port.rsplit_once(':').ok_or_else(bad)?;
    let port: u16 = port.parse().map_err(|_| bad())?;
    let bus_port = match bus {
        Some(bus) => bus.parse().map_err(|_| bad())?,
        None => port.checked_add(10000).ok_or_else(bad)?,
    };
    // A Redis node that has not learnt its address yet writes none.
    if ip.contains(char::is_whitespace) {
        return Err(bad());
    }
    Ok((ip, port, bus_port, hostname))
}

/// `slot->-id` or `slot-<-id`, without the brackets.
fn parse_moving(text: &str, node: &mut Node) -> Result<(), String> {
    let bad = || format!("bad moving slot [{text}]");
    let (slot, peer, migrating) = if let Some((slot, peer)) = text.split_once("->-") {
        (slot, peer, true)
    } else if let Some((slot, peer)) = text.split_once("-<-") {
        (slot, peer, false)
    } else {
        return Err(bad());
    };
    let slot = parse_slot(slot.as_bytes()).ok_or_else(bad)?;
    if !is_node_id(peer) {
        return Err(bad());
    }
    let map = if migrating {
        &mut node.migrating
    } else {
        &mut node.importing
    };
    map.insert(slot, peer.to_string());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const A: &str = "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca";
    const B: &str = "67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1";
    const C: &str = "292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f";

    /// CLUSTER NODES of a redis-server 7.0.15 node in a three-primary
    /// cluster with one replica, moving slot 100 to B.
    fn redis_reply() -> String {
        format!(
            "{A} 127.0.0.1:30001@40001 myself,master - 0 1700000000000 1 connected 0-5460 [100->-{B}]\n\
             {B} 127.0.0.1:30002@40002 master - 0 1700000000001 2 connected 5461-10922\n\
             {C} 127.0.0.1:30003@40003,cache-3 master - 0 1700000000002 3 connected 10923-16383\n\
             824fe116063bc5fcf9f4ffd895bc17aee7731ac3 127.0.0.1:30004@40004 slave {A} 0 1700000000003 1 connected\n"
        )
    }

    #[test]
    fn reads_what_redis_writes() {
        let parsed = Topology::parse(&redis_reply()).unwrap();
        assert_eq!(parsed.myself.as_deref(), Some(A));
        let t = &parsed.topology;
        assert_eq!(t.nodes.len(), 4);
        assert_eq!(t.nodes[0].slots, vec![(0, 5460)]);
        assert_eq!(t.nodes[0].migrating.get(&100).map(String::as_str), Some(B));
        assert_eq!(t.nodes[2].hostname, "cache-3");
        assert_eq!(t.nodes[3].primary_id(), Some(A));
        assert_eq!(t.assigned_slots(), SLOTS);
        let owners = t.owners().unwrap();
        assert_eq!((owners[0], owners[5461], owners[16383]), (0, 1, 2));
    }

    #[test]
    fn writes_redis_lines_back() {
        let parsed = Topology::parse(&redis_reply()).unwrap();
        let written = parsed.topology.render(Some(A), |_| (0, 0, true));
        let expected: String = redis_reply()
            .lines()
            .map(|line| {
                let mut words: Vec<&str> = line.split(' ').collect();
                words[5] = "0";
                words.join(" ") + "\n"
            })
            .collect();
        assert_eq!(written, expected);
    }

    #[test]
    fn config_file_round_trips_with_its_epochs() {
        let mut t = Topology::parse(&redis_reply()).unwrap().topology;
        t.current_epoch = 7;
        let text = t.render_config(A, 3);
        assert!(text.ends_with("vars currentEpoch 7 lastVoteEpoch 3\n"));
        let back = Topology::parse(&text).unwrap();
        assert_eq!(
            (back.topology, back.myself.as_deref(), back.last_vote_epoch),
            (t, Some(A), 3)
        );
    }

    #[test]
    fn a_new_redis_node_without_an_address_is_read() {
        let text = format!("{A} :7702@17999 myself,master - 0 0 0 connected\nvars currentEpoch 0 lastVoteEpoch 0\n");
        let parsed = Topology::parse(&text).unwrap();
        assert_eq!(
            (
                parsed.topology.nodes[0].ip.as_str(),
                parsed.topology.nodes[0].port
            ),
            ("", 7702)
        );
    }

    #[test]
    fn bad_lines_are_named() {
        let cases = [
            ("garbage\n", 1, "at least 8 fields"),
            (
                &format!("{A} 127.0.0.1:1@2 master - 0 0 1 connected 5-3\n"),
                1,
                "bad slot range",
            ),
            (
                &format!("{A} 127.0.0.1:x@2 master - 0 0 1 connected\n"),
                1,
                "bad address",
            ),
            (
                &format!("{A} 127.0.0.1:1@2 master,wizard - 0 0 1 connected\n"),
                1,
                "unknown node flag",
            ),
            (
                &format!("{A} 127.0.0.1:1@2 master - 0 0 1 connected 16384\n"),
                1,
                "bad slot",
            ),
            (
                &format!(
                    "{A} 127.0.0.1:1@2 master - 0 0 1 connected 0-10\n{B} 127.0.0.1:3@4 master - 0 0 1 connected 10\n"
                ),
                0,
                "served by both",
            ),
            (
                &format!("{A} 127.0.0.1:1@2 slave {B} 0 0 1 connected\n"),
                0,
                "not listed",
            ),
            ("vars currentEpoch x\n", 1, "not a number"),
        ];
        for (text, line, message) in cases {
            let err = Topology::parse(text).unwrap_err();
            assert_eq!(err.line, line, "{text}");
            assert!(err.message.contains(message), "{text}: {}", err.message);
        }
    }

    proptest! {
        #[test]
        fn any_topology_survives_its_own_format(
            owners in proptest::collection::vec(0usize..4, 1..64),
            epoch in 0u64..1000,
        ) {
            let ids = [A, B, C, "0000000000000000000000000000000000000000"];
            let mut t = Topology { current_epoch: epoch, nodes: Vec::new() };
            for (i, id) in ids.iter().enumerate() {
                let mut node = Node::new(id, "10.0.0.1", 7000 + i as u16, 17000 + i as u16);
                node.config_epoch = i as u64;
                node.set_slots(
                    owners.iter().enumerate().filter(|&(_, &o)| o == i).map(|(s, _)| (s * 200) as u16),
                );
                t.nodes.push(node);
            }
            let text = t.render_config(B, 0);
            let parsed = Topology::parse(&text).unwrap();
            prop_assert_eq!(parsed.topology, t);
        }

        #[test]
        fn arbitrary_text_never_panics(text in "\\PC{0,300}") {
            let _ = Topology::parse(&text);
        }
    }
}
