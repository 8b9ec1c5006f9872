"""The layering rule of README.md ("How it is built"): which keel crate may use which.

Read from `cargo metadata`, so a dependency added against the rule fails here. A
new crate must be placed in ALLOWED before it can pass.
"""

import json
import subprocess

from support import REPO_ROOT

# For each keel crate, the keel crates it may depend on (normal, dev or build).
ALLOWED = {
    "keel-resp": set(),
    "keel-store": set(),
    "keel-rdb": {"keel-resp"},
    "keel-script": {"keel-resp"},
    "keel-acl": {"keel-store"},
    "keel-topology": set(),
    "keel-cluster": {"keel-resp", "keel-topology"},
    "keel-bench": {"keel-resp"},
    "keel-keyspace": {"keel-resp"},
    "keel-server": {"keel-resp", "keel-store", "keel-rdb", "keel-script", "keel-acl", "keel-topology"},
}


def test_crates_use_only_the_crates_below_them():
    metadata = json.loads(subprocess.run(
        ["cargo", "metadata", "--no-deps", "--format-version", "1", "--offline"],
        cwd=REPO_ROOT, check=True, capture_output=True, text=True).stdout)
    crates = {package["name"]: package for package in metadata["packages"]}
    assert set(crates) <= set(ALLOWED), f"place new crates in ALLOWED: {set(crates) - set(ALLOWED)}"
    for name, package in crates.items():
        used = {dep["name"] for dep in package["dependencies"] if dep["name"] in ALLOWED}
        assert used <= ALLOWED[name], f"{name} uses {used - ALLOWED[name]}, against the layering rule"
