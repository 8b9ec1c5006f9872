//! Any text, as a nodes.conf file, a CLUSTER NODES reply or a pushed
//! topology: parsing returns a topology or an error naming a line, never
//! panics, and a topology it accepts writes back to text that parses to the
//! same topology.
#![no_main]

use keel_topology::Topology;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(parsed) = Topology::parse(text) else {
        return;
    };
    let written = match &parsed.myself {
        Some(myself) => parsed.topology.render_config(myself, parsed.last_vote_epoch),
        None => parsed.topology.render(None, |_| (0, 0, true)),
    };
    let again = Topology::parse(&written).expect("its own text parses");
    let mut expected = parsed.topology;
    if parsed.myself.is_none() {
        // Without a vars line the epoch is not written.
        expected.current_epoch = 0;
    }
    assert_eq!(again.topology, expected);
});
