#!/usr/bin/env python3
"""The command blocks and links of erase's markdown (README.md, docs/*.md).

Used by tests/docs/test-doc-commands.sh; standard library only.

  doc_blocks.py blocks OUT FILE...   writes each ```sh block of each FILE
      (in file order) to OUT/NNN.sh and prints one line per block:
      "NNN<TAB>FILE:LINE<TAB>run" or "NNN<TAB>FILE:LINE<TAB>skip REASON"
      (a block whose first line is "# not run by tests: REASON"), or
      "NNN<TAB>FILE:LINE<TAB>bad WHY" for a malformed block (an empty
      reason, a fence never closed). LINE is the fence's line, 1-based.
  doc_blocks.py links FILE...        prints one line per relative link of
      each FILE that does not resolve: "FILE:LINE: TARGET: WHY" (the file
      is missing, or the #anchor names no heading of it); nothing when all
      resolve. Links are [text](target) outside code; http(s) and mailto
      links are not checked.

Anchors follow GitHub's rule for headings: lower case, characters other
than letters, digits, spaces, '-' and '_' removed, spaces turned into '-'
(https://github.com/gjtorikian/html-pipeline, TableOfContentsFilter).
"""
import os
import re
import sys

FENCE = re.compile(r"^(```+|~~~+)\s*([A-Za-z0-9_+-]*)")
NOT_RUN = "# not run by tests:"
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"`[^`]*`")


def blocks(path):
    """Yields (line, language, body lines) of each fenced block of path."""
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang, start = m.group(1), m.group(2), i + 1
        body = []
        i += 1
        while i < len(lines) and not lines[i].startswith(fence):
            body.append(lines[i])
            i += 1
        if i == len(lines):
            yield start, lang, None
            return
        yield start, lang, body
        i += 1


def prose_lines(path, cut_spans=True):
    """Yields (line number, text) of path outside fenced blocks, code spans cut
    (or, with cut_spans false, kept: a heading's anchor keeps their text)."""
    inside = None
    for n, text in enumerate(open(path, encoding="utf-8").read().split("\n"), 1):
        m = FENCE.match(text)
        if inside:
            if text.startswith(inside):
                inside = None
            continue
        if m:
            inside = m.group(1)
            continue
        if text.startswith("    "):
            continue
        yield n, CODE_SPAN.sub("", text) if cut_spans else text


def anchors(path):
    """The #anchors of path's headings, GitHub's slugs (duplicates get -1, -2)."""
    seen, out = {}, set()
    for _, text in prose_lines(path, cut_spans=False):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", text)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
        k = seen.get(slug, 0)
        seen[slug] = k + 1
        out.add(slug if k == 0 else "%s-%d" % (slug, k))
    return out


def cmd_blocks(out, files):
    k = 0
    for path in files:
        for line, lang, body in blocks(path):
            if lang != "sh":
                if body is None:
                    k += 1
                    print("%03d\t%s:%d\tbad the block is never closed" % (k, path, line))
                continue
            k += 1
            where = "%s:%d" % (path, line)
            if body is None:
                print("%03d\t%s\tbad the block is never closed" % (k, where))
                continue
            first = body[0].strip() if body else ""
            if first.startswith(NOT_RUN):
                reason = first[len(NOT_RUN):].strip()
                print("%03d\t%s\t%s" % (k, where, ("skip " + reason) if reason
                                       else "bad '# not run by tests:' gives no reason"))
                continue
            with open(os.path.join(out, "%03d.sh" % k), "w") as f:
                f.write("\n".join(body) + "\n")
            print("%03d\t%s\trun" % (k, where))


def cmd_links(files):
    cache = {}
    for path in files:
        base = os.path.dirname(path)
        for n, text in prose_lines(path):
            for target in LINK.findall(text):
                if re.match(r"^(https?:|mailto:)", target):
                    continue
                name, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(base, name)) if name else path
                if not os.path.exists(dest):
                    print("%s:%d: %s: no such file %s" % (path, n, target, dest))
                    continue
                if anchor and dest.endswith(".md"):
                    if dest not in cache:
                        cache[dest] = anchors(dest)
                    if anchor not in cache[dest]:
                        print("%s:%d: %s: %s has no heading with anchor #%s"
                              % (path, n, target, dest, anchor))


def main(argv):
    if len(argv) >= 3 and argv[1] == "blocks":
        cmd_blocks(argv[2], argv[3:])
    elif len(argv) >= 2 and argv[1] == "links":
        cmd_links(argv[2:])
    else:
        sys.stderr.write("usage: doc_blocks.py blocks OUT FILE... | links FILE...\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
