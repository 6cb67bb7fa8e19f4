#!/usr/bin/env python3
"""Checks the relative links of README.md and docs/*.md: every linked file exists and every #anchor
names a heading of its target (GitHub's anchor rules). Usage: scripts/check-doc-links.py [files…]"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def anchors(path):
    """The anchors GitHub gives the headings of a Markdown file (duplicates get -1, -2, …)."""
    seen, result, fenced = {}, set(), False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        match = None if fenced else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", match.group(1)).lower()
        slug = re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        result.add(slug if count == 0 else f"{slug}-{count}")
    return result


def links(path):
    fenced = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            for match in LINK.finditer(re.sub(r"`[^`]*`", "", line)):
                yield number, match.group(1)


def main(arguments):
    files = [pathlib.Path(a).resolve() for a in arguments] or [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    problems = 0
    for path in files:
        for number, target in links(path):
            if re.match(r"[a-z]+:", target):
                continue  # http:, https:, mailto:
            file_part, _, anchor = target.partition("#")
            destination = (path.parent / file_part).resolve() if file_part else path
            where = f"{path.relative_to(ROOT)}:{number}: {target}"
            if not destination.exists():
                # Links outside the repository (../shared/…) are checked only when that folder is present.
                if ROOT in destination.parents or (ROOT.parent / "shared").exists():
                    print(f"{where}: {file_part} does not exist")
                    problems += 1
                continue
            if anchor and destination.suffix == ".md" and anchor not in anchors(destination):
                print(f"{where}: no heading #{anchor} in {destination.relative_to(ROOT.parent)}")
                problems += 1
    print(f"{problems} broken link(s)" if problems else "all links resolve")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
