"""The README's compatibility table (written by scripts/compat-table) matches the
server under test: every command marked supported or differs is one it serves,
and every one marked not yet is one it does not. Against redis-server this checks
the table lists exactly Redis's own commands."""

import re

from support import REPO_ROOT

ROW = re.compile(r"^\| [^|]+ \| `([^`]+)` \| (supported|differs|not yet) \|")


def table():
    text = (REPO_ROOT / "README.md").read_text()
    start, end = text.index("<!-- compat:begin -->"), text.index("<!-- compat:end -->")
    rows = [ROW.match(line) for line in text[start:end].splitlines()]
    return {m[1].lower(): m[2] for m in rows if m}


def test_compat_table_matches_the_command_list(server_kind, c):
    rows = table()
    served = {name.decode() for name in c.call("COMMAND", "LIST")}
    assert len(rows) > 300
    if server_kind == "redis":
        assert set(rows) == served
        return
    marked_served = {name for name, state in rows.items() if state != "not yet"}
    assert marked_served == served & set(rows), (
        f"marked but not served: {sorted(marked_served - served)}; "
        f"served but marked not yet: {sorted((served & set(rows)) - marked_served)}")
