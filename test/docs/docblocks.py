#!/usr/bin/env python3
"""The SQL blocks of a markdown file, run as a test (test/docs/run_docs.sh).

  docblocks.py script FILE SKIPS     a psql script of FILE's ```sql blocks, in order,
                                     each after an \\echo marker (SKIPS: a file of
                                     "name<TAB>reason" lines for needs-markers that
                                     cannot be met here)
  docblocks.py fill FILE SKIPS OUTPUT
                                     rewrites FILE's ```text blocks with the output
                                     each block gave (run_docs.sh --fill; review
                                     the change with git diff before committing it)
  docblocks.py compare FILE SKIPS OUTPUT
                                     TAP lines: each block's output against the
                                     ```text block that follows it in FILE

Markers, in an HTML comment on the line before a ```sql block:
  <!-- doc-test: skip REASON -->        not run (printed as # SKIP REASON)
  <!-- doc-test: needs NAME -->         run where NAME is here (pgvector, pg_cron,
                                        cora), skipped with the reason otherwise
  <!-- doc-test: error -->              the block must raise an error; its ```text
                                        block shows the ERROR line
  <!-- doc-test: no-output-check -->    run, must not fail; output not compared
A ```sql block without a ```text block after it must run without an error.
"""
import difflib
import re
import sys

MARK = "@@DOCBLOCK %d@@"
MARKER_RE = re.compile(r"^\s*<!--\s*doc-test:\s*(.*?)\s*-->\s*$")


def blocks(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    out = []
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)```(\S*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        indent, lang = m.group(1), m.group(2)
        start = i
        j = i + 1
        while j < len(lines) and not re.match(r"^\s*```\s*$", lines[j]):
            j += 1
        body = [l[len(indent):] if l.startswith(indent) else l.lstrip() for l in lines[i + 1:j]]
        if lang == "sql":
            marker = None
            k = start - 1
            while k >= 0 and lines[k].strip() == "":
                k -= 1
            if k >= 0:
                mm = MARKER_RE.match(lines[k])
                if mm:
                    marker = mm.group(1)
            # an output block right after (blank lines allowed)
            expected = None
            k = j + 1
            while k < len(lines) and lines[k].strip() == "":
                k += 1
            if k < len(lines) and re.match(r"^\s*```text\s*$", lines[k]):
                e = k + 1
                while e < len(lines) and not re.match(r"^\s*```\s*$", lines[e]):
                    e += 1
                ind = re.match(r"^(\s*)", lines[k]).group(1)
                expected = [l[len(ind):] if l.startswith(ind) else l.lstrip() for l in lines[k + 1:e]]
                text_range = (k + 1, e, ind)
                j = e
            else:
                text_range = None
            out.append({"line": start + 1, "sql": body, "marker": marker, "expected": expected,
                        "text_range": text_range})
        i = j + 1
    return out


def read_skips(path):
    skips = {}
    for l in open(path, encoding="utf-8"):
        if "\t" in l:
            n, r = l.rstrip("\n").split("\t", 1)
            skips[n] = r
    return skips


def skip_reason(b, skips):
    m = b["marker"] or ""
    if m.startswith("skip"):
        return m[4:].strip() or "marked skip"
    if m.startswith("needs "):
        for n in m[6:].split():
            if n in skips:
                return skips[n]
    return None


def norm(lines):
    lines = [l.rstrip() for l in lines]
    while lines and lines[0] == "":
        lines.pop(0)
    while lines and lines[-1] == "":
        lines.pop()
    return lines


def main():
    mode, path, skipfile = sys.argv[1], sys.argv[2], sys.argv[3]
    skips = read_skips(skipfile)
    bs = blocks(path)
    if mode == "script":
        for n, b in enumerate(bs, 1):
            if skip_reason(b, skips):
                continue
            print("\\echo '%s'" % (MARK % n))
            print("\n".join(b["sql"]))
            print()
        print("\\echo '%s'" % (MARK % 0))
        return
    output = open(sys.argv[4], encoding="utf-8", errors="replace").read().split("\n")
    got = {}
    cur = None
    for l in output:
        m = re.match(r"^@@DOCBLOCK (\d+)@@$", l)
        if m:
            cur = int(m.group(1))
            got[cur] = []
        elif cur is not None:
            got[cur].append(l)
    name = path
    if mode == "fill":
        lines = open(path, encoding="utf-8").read().split("\n")
        for n, b in reversed(list(enumerate(bs, 1))):
            if b["text_range"] and n in got and not skip_reason(b, skips) \
                    and (b["marker"] or "") != "no-output-check":
                a, e, ind = b["text_range"]
                lines[a:e] = [ind + l if l else l for l in norm(got[n])]
        open(path, "w", encoding="utf-8").write("\n".join(lines))
        return
    failed = 0
    for n, b in enumerate(bs, 1):
        label = "%s block %d (line %d)" % (name, n, b["line"])
        reason = skip_reason(b, skips)
        if reason:
            print("ok - %s # SKIP %s" % (label, reason))
            continue
        if n not in got:
            print("not ok - %s: no output (the session ended before it)" % label)
            failed += 1
            continue
        actual = norm(got[n])
        errors = [l for l in actual if re.match(r"^(psql:.*: )?(ERROR|FATAL|PANIC):", l)]
        marker = b["marker"] or ""
        problem = None
        code = [l.strip() for l in b["sql"] if l.strip() and not l.strip().startswith("--")]
        if code and not (code[-1].endswith(";") or code[-1].startswith("\\")):
            problem = "its last statement does not end with a semicolon"
        if problem:
            pass
        elif marker == "error":
            if not errors:
                problem = "was to raise an error and did not"
        elif errors:
            problem = "raised an error (mark it <!-- doc-test: error --> if it is meant to)"
        if problem is None and b["expected"] is not None and marker != "no-output-check":
            exp = norm(b["expected"])
            if exp != actual:
                problem = "output differs from the document's"
        if problem:
            failed += 1
            print("not ok - %s: %s" % (label, problem))
            exp = norm(b["expected"] or [])
            for d in difflib.unified_diff(exp, actual, "expected (%s)" % name, "actual", lineterm="", n=2):
                print("#   " + d)
        else:
            print("ok - %s" % label)
    sys.exit(1 if failed else 0)


main()
