//! The cluster as the control plane sees it: every node reachable from an
//! entry node, each with its own view (CLUSTER NODES), and pushing a
//! topology to all of them (CLUSTER SETTOPOLOGY).

use keel_topology::{Node, Topology};

use crate::client::Conn;

/// One node and what it says of the cluster.
pub struct Member {
    pub id: String,
    pub address: String,
    /// `None` when the node cannot be reached.
    pub conn: Option<Conn>,
    /// Its view, `None` when unreachable.
    pub view: Option<Topology>,
}

impl Member {
    /// The connection, or an error naming the unreachable node.
    pub fn conn(&mut self) -> Result<&mut Conn, String> {
        let address = &self.address;
        self.conn
            .as_mut()
            .ok_or_else(|| format!("{address} cannot be reached"))
    }

    /// This node's own line in its own view: what it says it is.
    pub fn itself(&self) -> Option<&Node> {
        self.view.as_ref()?.node(&self.id)
    }
}

/// Every node the entry node knows, with their views.
pub struct Cluster {
    /// The entry node first.
    pub members: Vec<Member>,
}

/// The view of the node behind `conn`, and its id.
pub fn view_of(conn: &mut Conn) -> Result<(Topology, String), String> {
    let text = conn.text(&["CLUSTER", "NODES"])?;
    let mut parsed = Topology::parse(&text)
        .map_err(|e| format!("{}: CLUSTER NODES is not a topology: {e}", conn.address))?;
    let myself = parsed
        .myself
        .ok_or_else(|| format!("{}: CLUSTER NODES flags no node myself", conn.address))?;
    let info = conn.text(&["CLUSTER", "INFO"])?;
    parsed.topology.current_epoch = info_field(&info, "cluster_current_epoch")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    Ok((parsed.topology, myself))
}

/// A `name:value` line of an INFO-style text.
pub fn info_field<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
        .map(str::trim)
}

impl Cluster {
    /// Loads the cluster `entry` (`host:port`) belongs to. Nodes that
    /// cannot be reached are kept, without a connection.
    pub fn load(entry: &str) -> Result<Cluster, String> {
        let mut conn = Conn::open(entry)?;
        let (view, myself) = view_of(&mut conn)?;
        let mut members = vec![Member {
            id: myself.clone(),
            address: entry.to_string(),
            conn: Some(conn),
            view: Some(view.clone()),
        }];
        for node in view.nodes.iter().filter(|n| n.id != myself) {
            let address = node.address();
            let reached = Conn::open(&address).and_then(|mut conn| {
                let (view, id) = view_of(&mut conn)?;
                Ok((conn, view, id))
            });
            let member = match reached {
                Ok((conn, view, id)) if id == node.id => Member {
                    id,
                    address,
                    conn: Some(conn),
                    view: Some(view),
                },
                Ok((_, _, id)) => {
                    return Err(format!(
                        "{address} is node {id}, but {entry} knows it as {}",
                        node.id
                    ))
                }
                Err(e) => {
                    eprintln!("[WARNING] {e}");
                    Member {
                        id: node.id.clone(),
                        address,
                        conn: None,
                        view: None,
                    }
                }
            };
            members.push(member);
        }
        Ok(Cluster { members })
    }

    /// The topology as the nodes together say it is: the entry node's
    /// view, with each reachable node's own line (its moving slots, its
    /// epoch) as that node gives it, and the highest current epoch.
    pub fn topology(&self) -> Topology {
        let mut topology = self.members[0]
            .view
            .clone()
            .expect("the entry node answered");
        for member in &self.members {
            if let (Some(own), Some(view)) = (member.itself(), &member.view) {
                if let Some(node) = topology.node_mut(&member.id) {
                    node.migrating = own.migrating.clone();
                    node.importing = own.importing.clone();
                    node.config_epoch = own.config_epoch;
                }
                topology.current_epoch = topology.current_epoch.max(view.current_epoch);
            }
        }
        topology
    }

    /// The member with id `id`.
    pub fn member(&mut self, id: &str) -> Result<&mut Member, String> {
        self.members
            .iter_mut()
            .find(|m| m.id == id)
            .ok_or_else(|| format!("no node {id} in the cluster"))
    }

    /// Pushes `topology` as the next version (one epoch past every node's)
    /// to every reachable node, and to `extra` (a node joining). Returns
    /// the epoch pushed.
    pub fn push(
        &mut self,
        topology: &mut Topology,
        extra: Option<&mut Conn>,
    ) -> Result<u64, String> {
        let highest = (self.members.iter())
            .filter_map(|m| m.view.as_ref().map(|v| v.current_epoch))
            .chain([topology.current_epoch])
            .max()
            .unwrap_or(0);
        topology.current_epoch = highest + 1;
        let epoch = topology.current_epoch.to_string();
        let text = topology.render(None, |_| (0, 0, true));
        let command = ["CLUSTER", "SETTOPOLOGY", epoch.as_str(), text.as_str()];
        for member in &mut self.members {
            match member.conn.as_mut() {
                Some(conn) => {
                    conn.call(&command)?;
                }
                None => eprintln!(
                    "[WARNING] {} cannot be reached: push the topology to it when it is back",
                    member.address
                ),
            }
        }
        if let Some(conn) = extra {
            conn.call(&command)?;
        }
        Ok(topology.current_epoch)
    }
}
