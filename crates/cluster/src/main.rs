//! keel-cluster: the control plane of a keel cluster, modelled on
//! `redis-cli --cluster`. keel nodes run no cluster bus: they serve the
//! topology they were last given. This tool reads each node's view
//! (CLUSTER NODES), decides a change, moves slots with Redis's protocol
//! (SETSLOT, GETKEYSINSLOT, MIGRATE), and pushes the new topology to every
//! node with CLUSTER SETTOPOLOGY at a new epoch, which a node takes only if
//! it is newer than its own. See `docs/cluster.md`.

mod check;
mod client;
mod cluster;
mod create;
mod membership;
mod reshard;

use std::process::ExitCode;

const USAGE: &str = "\
usage: keel-cluster <command> [arguments]

  create HOST:PORT HOST:PORT ... [--replicas N]
        form a cluster of new nodes: the slots shared evenly over the primaries
  check HOST:PORT
        every node reachable and agreeing, no open slot, every slot covered
  reshard HOST:PORT --from NODE_ID --to NODE_ID --slots N
        move N slots (and their keys) while clients keep working
  rebalance HOST:PORT
        share the slots evenly over every primary, empty ones included
  add-node NEW_HOST:PORT EXISTING_HOST:PORT [--replica-of NODE_ID]
        add a new node as a primary without slots, or as a replica
  del-node HOST:PORT NODE_ID
        remove a node that serves no slot
  failover HOST:PORT REPLICA_NODE_ID
        promote a replica to serve its primary's slots (the primary may be down)
";

/// The value following `--name` in `args`, removed from them.
fn take_option(args: &mut Vec<String>, name: &str) -> Result<Option<String>, String> {
    let Some(at) = args.iter().position(|a| a == name) else {
        return Ok(None);
    };
    if at + 1 >= args.len() {
        return Err(format!("{name} needs a value"));
    }
    let value = args.remove(at + 1);
    args.remove(at);
    Ok(Some(value))
}

fn number(value: Option<String>, name: &str) -> Result<Option<usize>, String> {
    value
        .map(|v| {
            v.parse()
                .map_err(|_| format!("{name} takes a number, not {v:?}"))
        })
        .transpose()
}

fn run(mut args: Vec<String>) -> Result<bool, String> {
    if args.is_empty() {
        return Err(USAGE.to_string());
    }
    let command = args.remove(0);
    let positional = |args: &Vec<String>, n: usize| -> Result<(), String> {
        match args.len() == n && !args.iter().any(|a| a.starts_with("--")) {
            true => Ok(()),
            false => Err(format!("{command}: wrong arguments\n\n{USAGE}")),
        }
    };
    match command.as_str() {
        "create" => {
            let replicas = number(take_option(&mut args, "--replicas")?, "--replicas")?;
            if args.is_empty() {
                return Err(format!("create: name the nodes\n\n{USAGE}"));
            }
            positional(&args, args.len())?;
            create::create(&args, replicas.unwrap_or(0))?;
        }
        "check" => {
            positional(&args, 1)?;
            return check::check(&args[0]);
        }
        "reshard" => {
            let from = take_option(&mut args, "--from")?;
            let to = take_option(&mut args, "--to")?;
            let slots = number(take_option(&mut args, "--slots")?, "--slots")?;
            positional(&args, 1)?;
            let (Some(from), Some(to), Some(slots)) = (from, to, slots) else {
                return Err(format!("reshard needs --from, --to and --slots\n\n{USAGE}"));
            };
            reshard::reshard(&args[0], &from, &to, slots)?;
        }
        "rebalance" => {
            positional(&args, 1)?;
            reshard::rebalance(&args[0])?;
        }
        "add-node" => {
            let replica_of = take_option(&mut args, "--replica-of")?;
            positional(&args, 2)?;
            membership::add_node(&args[0], &args[1], replica_of.as_deref())?;
        }
        "del-node" => {
            positional(&args, 2)?;
            membership::del_node(&args[0], &args[1])?;
        }
        "failover" => {
            positional(&args, 2)?;
            membership::failover(&args[0], &args[1])?;
        }
        "help" | "--help" | "-h" => print!("{USAGE}"),
        other => return Err(format!("unknown command {other:?}\n\n{USAGE}")),
    }
    Ok(true)
}

fn main() -> ExitCode {
    match run(std::env::args().skip(1).collect()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("[ERR] {e}");
            ExitCode::FAILURE
        }
    }
}
