#!/usr/bin/env python3
"""docs/reference.md from the catalog JSON of test/docs/reference_catalog.sql (stdin)."""
import json
import sys

# settings whose built-in default depends on the machine the server runs on
MACHINE_DEFAULTS = {
    "gnn.max_job_memory": "half of the machine's memory (or of its cgroup's limit)",
}
VOLATILITY = {"i": "immutable", "s": "stable", "v": "volatile"}
RELKIND = {"r": "table", "v": "view", "m": "materialized view", "p": "partitioned table",
           "f": "foreign table", "c": "composite type"}


def split_args(s):
    """Split pg_get_function_arguments() output at top-level commas."""
    out, cur, depth, quote = [], "", 0, None
    for ch in s:
        if quote:
            cur += ch
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
            cur += ch
        elif ch in "([":
            depth += 1
            cur += ch
        elif ch in ")]":
            depth -= 1
            cur += ch
        elif ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def cell(v):
    if v is None or v == "":
        return ""
    return str(v).replace("|", "\\|").replace("\n", " ")


def function_block(f):
    args = split_args(f["arguments"])
    result = f["result"]
    lines = []
    head = "gnn.%s(" % f["name"]
    if not args:
        lines.append(head + ")")
    else:
        lines.append(head)
        for i, a in enumerate(args):
            lines.append("    " + a + ("," if i < len(args) - 1 else ""))
        lines.append(")")
    if result.startswith("TABLE("):
        cols = split_args(result[len("TABLE("):-1])
        lines.append("RETURNS TABLE (")
        for i, c in enumerate(cols):
            lines.append("    " + c + ("," if i < len(cols) - 1 else ""))
        lines.append(")")
    else:
        lines.append("RETURNS " + result)
    props = [{"c": "C", "sql": "SQL", "plpgsql": "PL/pgSQL"}.get(f["language"], f["language"]),
             VOLATILITY.get(f["volatility"], f["volatility"])]
    if f["strict"]:
        props.append("strict")
    if f["security_definer"]:
        props.append("security definer")
    if f["kind"] != "f":
        props.append({"p": "procedure", "a": "aggregate", "w": "window"}.get(f["kind"], f["kind"]))
    text = "```\n" + "\n".join(lines) + "\n```\n"
    text += "Language %s.\n" % ", ".join(props)
    if f.get("comment"):
        text += "\n" + f["comment"].strip() + "\n"
    return text


def main():
    cat = json.load(sys.stdin)
    funcs = cat["functions"]
    public = [f for f in funcs if not f["name"].startswith("_")]
    internal = [f for f in funcs if f["name"].startswith("_")]
    rels = cat["relations"]
    views = [r for r in rels if r["kind"] == "v"]
    tables = [r for r in rels if r["kind"] in ("r", "p", "f", "m")]
    types = [r for r in rels if r["kind"] == "c"]
    settings = cat["settings"]

    o = []
    o.append("# Reference\n")
    o.append("Every function, view, table, composite type and setting of the `gnn` extension, "
             "generated from the catalog of an installed extension by `make reference` "
             "(`test/docs/reference.sh`); `make test` fails when this file and the extension "
             "differ. Do not edit it by hand. The other documents explain what these are for: "
             "[the README](../README.md) maps them.\n")
    o.append("Contents: [functions](#functions) (%d), [views](#views) (%d), [tables](#tables) (%d), "
             "[composite types](#composite-types) (%d), [settings](#settings) (%d), "
             "[internal functions](#internal-functions) (%d).\n"
             % (len(public), len(views), len(tables), len(types), len(settings), len(internal)))

    def functions_section(title, fs, intro):
        o.append("## %s\n" % title)
        if intro:
            o.append(intro + "\n")
        names = []
        for f in fs:
            if f["name"] not in names:
                names.append(f["name"])
        for n in names:
            overloads = [f for f in fs if f["name"] == n]
            o.append("### gnn.%s\n" % n)
            for f in overloads:
                o.append(function_block(f))

    functions_section("Functions", public,
                      "Arguments in order, with their defaults; a function called with named "
                      "arguments (`name => value`) may leave out any that has a default. "
                      "`RETURNS TABLE` lists the columns of each row.")

    def relation_section(title, rs, intro):
        o.append("## %s\n" % title)
        if intro:
            o.append(intro + "\n")
        for r in rs:
            o.append("### gnn.%s\n" % r["name"])
            o.append("A %s.%s\n" % (RELKIND[r["kind"]],
                                    (" " + r["comment"].strip()) if r.get("comment") else ""))
            has_default = any(c.get("default") for c in r["columns"])
            has_notnull = any(c["not_null"] for c in r["columns"])
            o.append("| column | type |" + (" not null |" if has_notnull else "") + (" default |" if has_default else ""))
            o.append("|---|---|" + ("---|" if has_notnull else "") + ("---|" if has_default else ""))
            for c in r["columns"]:
                row = "| `%s` | `%s` |" % (c["name"], c["type"])
                if has_notnull:
                    row += " %s |" % ("yes" if c["not_null"] else "")
                if has_default:
                    row += " %s |" % (("`" + cell(c["default"]) + "`") if c.get("default") else "")
                o.append(row)
            o.append("")

    relation_section("Views", views, "What the extension shows of its state; each role sees its own "
                     "graphs, jobs and results (a superuser sees every role's).")
    relation_section("Tables", tables, "Ordinary tables the extension writes (kept by `pg_dump`).")
    relation_section("Composite types", types, "Row types that functions return.")

    o.append("## Settings\n")
    o.append("Every `gnn.*` setting (`pg_settings`). Context says where it may be set: "
             "`postmaster` (server start), `sighup` (configuration file, reload), `superuser`, "
             "`user` (any session, `SET`).\n")
    o.append("| setting | type | default | unit | context | description |")
    o.append("|---|---|---|---|---|---|")
    for s in settings:
        default = MACHINE_DEFAULTS.get(s["name"])
        default = default if default else ("`%s`" % cell(s["boot_val"]) if s["boot_val"] != "" else "(empty)")
        desc = s["short_desc"] or ""
        if s.get("extra_desc"):
            desc += " " + s["extra_desc"]
        if s.get("enumvals"):
            desc += " Values: " + ", ".join("`%s`" % v for v in s["enumvals"]) + "."
        o.append("| `%s` | %s | %s | %s | %s | %s |" % (
            s["name"], s["vartype"], default, cell(s["unit"]), s["context"], cell(desc)))
    o.append("")

    functions_section("Internal functions", internal,
                      "Functions whose names start with `_` are the extension's own machinery "
                      "(called by its views, triggers and workers); they are listed so that the "
                      "list is complete, and are not an interface: they may change without notice.")
    sys.stdout.write("\n".join(o).rstrip("\n") + "\n")


main()
