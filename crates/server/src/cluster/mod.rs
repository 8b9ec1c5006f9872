//! Cluster mode (`cluster-enabled yes`): this node's view of the cluster,
//! kept in `cluster-config-file`, and the redirections that view gives
//! clients (see [`route`]).
//!
//! What a node knows is only what it was told. There is no cluster bus:
//! no gossip, no failure detection, no election. A control plane
//! (`keel-cluster`, or an operator with Redis's admin commands) pushes
//! the topology: CLUSTER SETTOPOLOGY replaces the whole view with a newer
//! version, and ADDSLOTS, SETSLOT, FORGET, ... change this node's view
//! alone, as they do in Redis. Every change is written to the config
//! file before it is answered, so a node restarts with the view it last
//! acknowledged. `docs/cluster.md` has the design: how a change spreads,
//! what clients see meanwhile, and the figures at 1,000 nodes.
//!
//! The view is copy-on-write, as ACL users are: a change builds a new
//! [`View`], swaps it in under a write lock and bumps a generation
//! counter. A connection keeps the `Arc<View>` it last saw and compares
//! the counter per command that names a key; only a change makes it take
//! the lock.
//!
//! Lock order: `changing` before `view`; the config file is written while
//! `changing` is held, never while `view` is.

pub mod route;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use keel_topology::{is_node_id, Node, Topology, NO_OWNER};
use parking_lot::{Mutex, RwLock};

use crate::config::Config;
use crate::replication::Primary;
use crate::server::Server;

/// This node's view of the cluster at one generation.
pub struct View {
    pub topology: Topology,
    /// Index of this node in `topology.nodes`.
    me: usize,
    pub last_vote_epoch: u64,
    /// For each slot, the index of the node serving it, or [`NO_OWNER`].
    owners: Vec<u16>,
    /// Slots no node serves, or only a node marked failed.
    pub uncovered: usize,
}

impl View {
    /// The view `topology` gives the node with id `myself`.
    pub fn new(topology: Topology, myself: &str, last_vote_epoch: u64) -> Result<View, String> {
        let owners = topology.validate()?;
        let me = (topology.nodes.iter())
            .position(|n| n.id == myself)
            .ok_or_else(|| format!("the topology does not list this node ({myself})"))?;
        let uncovered = (owners.iter())
            .filter(|&&o| o == NO_OWNER || topology.nodes[o as usize].failed)
            .count();
        Ok(View {
            topology,
            me,
            last_vote_epoch,
            owners,
            uncovered,
        })
    }

    /// This node.
    pub fn me(&self) -> &Node {
        &self.topology.nodes[self.me]
    }

    /// The node serving `slot`, if one does.
    pub fn owner(&self, slot: u16) -> Option<&Node> {
        match self.owners[slot as usize] {
            NO_OWNER => None,
            index => Some(&self.topology.nodes[index as usize]),
        }
    }

    /// Whether this node serves `slot`; `None` if no node does.
    pub fn served_here(&self, slot: u16) -> Option<bool> {
        match self.owners[slot as usize] {
            NO_OWNER => None,
            index => Some(index as usize == self.me),
        }
    }

    /// The nodes that replicate the node with id `primary`.
    pub fn replicas_of<'a>(&'a self, primary: &'a str) -> impl Iterator<Item = &'a Node> + 'a {
        (self.topology.nodes.iter()).filter(move |n| n.primary_id() == Some(primary))
    }

    /// Primaries serving at least one slot (`cluster_size`).
    pub fn serving_primaries(&self) -> usize {
        (self.topology.nodes.iter())
            .filter(|n| n.is_primary() && !n.slots.is_empty())
            .count()
    }
}

/// A connection's copy of the view, as of one generation.
#[derive(Default)]
pub struct CachedView {
    generation: u64,
    view: Option<Arc<View>>,
}

/// The node's view, its file, and the settings that decide its state.
pub struct Cluster {
    view: RwLock<Arc<View>>,
    generation: AtomicU64,
    /// Serializes changes from their copy to their file write.
    changing: Mutex<()>,
    config_file: PathBuf,
    /// `cluster-require-full-coverage`: an uncovered slot fails the
    /// cluster.
    pub require_full_coverage: AtomicBool,
    /// `cluster-allow-reads-when-down`.
    pub allow_reads_when_down: AtomicBool,
}

/// A connection's cluster state: its copy of the view, ASKING, READONLY.
#[derive(Default)]
pub struct Session {
    pub view: CachedView,
    /// ASKING: the next command may touch a slot this node imports.
    pub asking: bool,
    /// READONLY: reads of its primary's slots are served on a replica.
    pub readonly: bool,
}

impl Cluster {
    /// The cluster state `config` asks for: `None` unless `cluster-enabled`.
    /// Loads `cluster-config-file`, or starts a new node (a new id, serving
    /// no slot) at `port` when there is none. Fails with a message naming
    /// the file if it cannot be read or is not a topology.
    pub fn open(config: &Config, port: u16) -> Result<Option<Cluster>, String> {
        if config.value("cluster-enabled") != "yes" {
            return Ok(None);
        }
        let config_file = Path::new(&config.dir).join(config.value("cluster-config-file"));
        let view = match std::fs::read_to_string(&config_file) {
            Ok(text) => {
                let loaded = load(&text).map_err(|e| corrupted(&config_file, &e))?;
                with_announced_ports(loaded, config, port)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => new_node(config, port),
            Err(e) => {
                return Err(format!(
                    "Unrecoverable error: can't read cluster config file \"{}\": {}",
                    config_file.display(),
                    crate::config::strerror(&e)
                ))
            }
        };
        let cluster = Cluster {
            view: RwLock::new(Arc::new(view)),
            generation: AtomicU64::new(0),
            changing: Mutex::new(()),
            config_file,
            require_full_coverage: AtomicBool::new(true),
            allow_reads_when_down: AtomicBool::new(false),
        };
        cluster.save(&cluster.view(), true)?;
        crate::notice!("Cluster node id: {}", cluster.view().me().id);
        Ok(Some(cluster))
    }

    /// The view as it is now.
    pub fn view(&self) -> Arc<View> {
        self.view.read().clone()
    }

    /// The view as it is now, through a connection's copy: the lock is
    /// taken only when the view changed since the connection last looked.
    pub fn view_for<'a>(&self, cached: &'a mut CachedView) -> &'a View {
        let generation = self.generation.load(Ordering::Acquire);
        if cached.view.is_none() || cached.generation != generation {
            cached.view = Some(self.view());
            cached.generation = generation;
        }
        cached.view.as_ref().expect("set above")
    }

    /// Whether the cluster serves requests (`cluster_state:ok`).
    pub fn is_ok(&self, view: &View) -> bool {
        view.uncovered == 0 || !self.require_full_coverage.load(Ordering::Relaxed)
    }

    /// Changes this node's view with `change`, which sees a copy of the
    /// topology and this node's id: kept (written to the config file, then
    /// seen by every connection) if it returns `Ok` and the result is a
    /// valid topology, dropped if not.
    pub fn change<T>(
        &self,
        change: impl FnOnce(&mut Topology, &str) -> Result<T, String>,
    ) -> Result<T, String> {
        let _changing = self.changing.lock();
        let current = self.view();
        let myself = current.me().id.clone();
        let mut topology = current.topology.clone();
        let result = change(&mut topology, &myself)?;
        if topology == current.topology {
            return Ok(result);
        }
        let next = View::new(topology, &myself, current.last_vote_epoch)
            .map_err(|e| format!("that would leave an invalid topology: {e}"))?;
        self.install(next)?;
        Ok(result)
    }

    /// Replaces this node's view with a new node's: a new id (for a hard
    /// reset) or the same, no other node, no slot, epochs kept unless
    /// `new_id`.
    pub fn reset(&self, new_id: bool) -> Result<(), String> {
        let _changing = self.changing.lock();
        let current = self.view();
        let me = current.me();
        let mut node = Node::new(&me.id, &me.ip, me.port, me.bus_port);
        let mut topology = Topology {
            current_epoch: current.topology.current_epoch,
            nodes: Vec::new(),
        };
        let mut last_vote_epoch = current.last_vote_epoch;
        node.config_epoch = me.config_epoch;
        if new_id {
            node.id = random_node_id();
            node.config_epoch = 0;
            topology.current_epoch = 0;
            last_vote_epoch = 0;
        }
        let id = node.id.clone();
        topology.nodes.push(node);
        self.install(View::new(topology, &id, last_vote_epoch)?)
    }

    /// CLUSTER SETTOPOLOGY: takes `topology` if its epoch is newer than
    /// this node's; the same topology again at the same epoch changes
    /// nothing. Returns whether anything changed.
    pub fn push(&self, topology: Topology) -> Result<bool, String> {
        let _changing = self.changing.lock();
        let current = self.view();
        let (epoch, ours) = (topology.current_epoch, current.topology.current_epoch);
        if epoch < ours {
            return Err(format!(
                "stale topology: epoch {epoch} is older than this node's epoch {ours}"
            ));
        }
        if epoch == ours {
            if topology == current.topology {
                return Ok(false);
            }
            return Err(format!(
                "topology epoch {epoch} is already in force here with another topology; push a newer epoch"
            ));
        }
        let myself = current.me().id.clone();
        let next = View::new(topology, &myself, current.last_vote_epoch)?;
        self.install(next)?;
        Ok(true)
    }

    /// CLUSTER SAVECONFIG.
    pub fn save_now(&self) -> Result<(), String> {
        let _changing = self.changing.lock();
        self.save(&self.view(), true)
    }

    /// Writes `next` to the config file, then makes it the view. The file
    /// is flushed to disk when an epoch changed, as Redis fsyncs it only
    /// then: an epoch must never go back after a crash, while a slot's
    /// moving state is rebuilt by whoever drives the move.
    fn install(&self, next: View) -> Result<(), String> {
        let current = self.view();
        let epochs = |view: &View| {
            let configs = view.topology.nodes.iter().map(|n| n.config_epoch);
            (view.topology.current_epoch, configs.collect::<Vec<_>>())
        };
        self.save(&next, epochs(&next) != epochs(&current))?;
        *self.view.write() = Arc::new(next);
        self.generation.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Writes `view` to the config file: to a temporary file first, then
    /// renamed over it, so a crash leaves the old file or the new one;
    /// `durable`: flushed to disk before the rename.
    fn save(&self, view: &View, durable: bool) -> Result<(), String> {
        let text = view
            .topology
            .render_config(&view.me().id, view.last_vote_epoch);
        let temporary = self.config_file.with_extension("tmp-keel");
        let written = std::fs::write(&temporary, text)
            .and_then(|()| match durable {
                true => std::fs::File::open(&temporary)?.sync_all(),
                false => Ok(()),
            })
            .and_then(|()| std::fs::rename(&temporary, &self.config_file));
        written.map_err(|e| {
            format!(
                "can't write cluster config file \"{}\": {}",
                self.config_file.display(),
                crate::config::strerror(&e)
            )
        })
    }
}

/// Brings the rest of the server in line with a changed view: clients
/// blocked on keys this node no longer serves are redirected (see
/// [`route::blocked_key_error`]), and replication follows what the view
/// says of this node.
pub fn apply_view(server: &Server) {
    let Some(cluster) = &server.cluster else {
        return;
    };
    let view = cluster.view();
    server
        .blocking
        .fail_waiters(|key| route::blocked_key_error(cluster, &view, key));
    follow_view(server, &view);
}

/// Makes replication follow what `view` says of this node: its primary's
/// address if it is a replica, none if it is a primary (a replica the view
/// promoted stops following).
fn follow_view(server: &Server, view: &View) {
    let primary = (view.me().primary_id())
        .and_then(|id| view.topology.node(id))
        .map(|p| Primary {
            host: p.ip.clone(),
            port: p.port,
        });
    if primary.is_none() && !server.replication.is_replica() {
        return;
    }
    let target = primary.as_ref().map(|p| format!("{}:{}", p.host, p.port));
    if crate::replication::follow(server, primary) {
        match target {
            Some(target) => crate::notice!("Cluster: replicating {target}, as the topology says"),
            None => crate::notice!("Cluster: this replica is a primary now, as the topology says"),
        }
    }
}

/// The view a config file's text holds.
fn load(text: &str) -> Result<View, String> {
    let parsed = Topology::parse(text).map_err(|e| e.to_string())?;
    let myself = parsed.myself.ok_or("no node is flagged myself")?;
    View::new(parsed.topology, &myself, parsed.last_vote_epoch)
}

fn corrupted(file: &Path, error: &str) -> String {
    format!(
        "Unrecoverable error: corrupted cluster config file \"{}\": {error}",
        file.display()
    )
}

/// The client and bus ports this node announces, listening on `port`.
fn announced_ports(config: &Config, port: u16) -> (u16, u16) {
    let announced = |name: &str| config.value(name).parse::<u16>().unwrap_or(0);
    let port = match announced("cluster-announce-port") {
        0 => port,
        p => p,
    };
    let bus_port = match (
        announced("cluster-announce-bus-port"),
        announced("cluster-port"),
    ) {
        (0, 0) => port.wrapping_add(10000),
        (0, p) | (p, _) => p,
    };
    (port, bus_port)
}

/// `view` with this node at the ports it listens on now, as Redis takes
/// its own ports from its configuration rather than from the file.
fn with_announced_ports(view: View, config: &Config, port: u16) -> View {
    let myself = view.me().id.clone();
    let mut topology = view.topology;
    let me = topology
        .node_mut(&myself)
        .expect("the view lists this node");
    (me.port, me.bus_port) = announced_ports(config, port);
    View::new(topology, &myself, view.last_vote_epoch).expect("only ports changed")
}

/// A node that knows only itself, at the address `config` announces.
fn new_node(config: &Config, port: u16) -> View {
    let (port, bus_port) = announced_ports(config, port);
    let ip = match config.value("cluster-announce-ip") {
        ip if !ip.is_empty() => ip,
        _ => announced_ip(&config.bind),
    };
    let mut node = Node::new(&random_node_id(), &ip, port, bus_port);
    node.hostname = config.value("cluster-announce-hostname");
    let id = node.id.clone();
    let topology = Topology {
        current_epoch: 0,
        nodes: vec![node],
    };
    View::new(topology, &id, 0).expect("a lone node is a valid topology")
}

/// The address clients reach this node at, from `bind`: its first
/// specific address, or the loopback when it binds every address.
fn announced_ip(bind: &[String]) -> String {
    bind.iter()
        .map(|a| a.trim_start_matches('-'))
        .find(|a| !matches!(*a, "*" | "::*" | "0.0.0.0" | "::"))
        .unwrap_or("127.0.0.1")
        .to_string()
}

/// 40 random hex digits.
pub fn random_node_id() -> String {
    let id: String = (0..40)
        .map(|_| char::from_digit(rand::random::<u32>() % 16, 16).expect("digit below 16"))
        .collect();
    debug_assert!(is_node_id(&id));
    id
}
