#!/usr/bin/env python3
"""Checks that the image's build stage can load the package, without a Docker engine.

Reproduces what `docker build` would see: the build context is the repository minus what
`.dockerignore` excludes, and the build stage's working directory holds exactly what its `COPY`
lines copy from that context. The script copies those files into a temporary folder, then runs
`swift package describe` there, which fails the way the image build does when a target's folder or
a resource is missing (for example "invalid custom path").

Usage: docker-context.py [--dockerfile Dockerfile] [--dockerignore .dockerignore] [--stage build] [--keep]
"""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile


def ignore_patterns(path):
    """The .dockerignore rules as (negated, regex) pairs, in file order (the last match wins)."""
    rules = []
    if not os.path.exists(path):
        return rules
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        if negated:
            line = line[1:].strip()
        line = os.path.normpath(line).lstrip("/")
        rules.append((negated, re.compile(glob_regex(line))))
    return rules


def glob_regex(pattern):
    """Docker's pattern syntax (Go filepath.Match plus `**`) as an anchored regular expression."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**", i):
            i += 2
            if i < len(pattern) and pattern[i] == "/":
                i += 1
                out.append("(?:.*/)?")
            else:
                out.append(".*")
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i)
            if end < 0:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1:end].replace("\\", "\\\\")
                if body.startswith("^"):
                    body = "^" + body[1:]
                out.append("[" + body + "]")
                i = end
        else:
            out.append(re.escape(c))
        i += 1
    return "^" + "".join(out) + "$"


def excluded(relpath, rules):
    """Whether a context path is left out: a path is out when it or one of its parent folders is."""
    parts = relpath.split("/")
    result = False
    for negated, regex in rules:
        for depth in range(1, len(parts) + 1):
            if regex.match("/".join(parts[:depth])):
                result = not negated
                break
    return result


def build_stage_copies(dockerfile, stage):
    """(sources, destination, workdir) for each COPY from the context in the named stage."""
    lines, current = [], ""
    with open(dockerfile, encoding="utf-8") as handle:
        text = handle.read()
    for raw in text.splitlines():
        stripped = raw.rstrip("\n")
        if stripped.lstrip().startswith("#") and not current:
            continue
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        lines.append(current + stripped)
        current = ""
    copies, in_stage, workdir = [], False, "/"
    for line in lines:
        words = shlex.split(line, comments=False) if line.strip() else []
        if not words:
            continue
        instruction = words[0].upper()
        if instruction == "FROM":
            in_stage = len(words) >= 4 and words[2].upper() == "AS" and words[3] == stage
            workdir = "/"
        elif not in_stage:
            continue
        elif instruction == "WORKDIR":
            workdir = os.path.join(workdir, words[1])
        elif instruction in ("COPY", "ADD"):
            args = [w for w in words[1:] if not w.startswith("--")]
            if any(w.startswith("--from") for w in words[1:]):
                continue
            copies.append((args[:-1], args[-1], workdir))
    return copies


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dockerfile", default="Dockerfile")
    parser.add_argument("--stage", default="build")
    parser.add_argument("--dockerignore", default=".dockerignore")
    parser.add_argument("--keep", action="store_true", help="keep the reproduced folder")
    options = parser.parse_args()

    root = os.getcwd()
    rules = ignore_patterns(os.path.join(root, options.dockerignore))
    copies = build_stage_copies(os.path.join(root, options.dockerfile), options.stage)
    if not copies:
        print(f"no COPY lines in stage {options.stage!r} of {options.dockerfile}")
        return 1
    target = tempfile.mkdtemp(prefix="latchkey-docker-context-")
    errors = []
    try:
        for sources, destination, workdir in copies:
            dest_abs = os.path.join(workdir, destination)
            for source in sources:
                source = os.path.normpath(source).lstrip("/")
                if excluded(source, rules):
                    errors.append(f"COPY {source}: excluded by .dockerignore")
                    continue
                absolute = os.path.join(root, source)
                if not os.path.exists(absolute):
                    errors.append(f"COPY {source}: not in the build context")
                    continue
                if os.path.isdir(absolute):
                    # COPY dir dest copies the folder's contents into dest.
                    base = dest_abs
                    for folder, dirs, files in os.walk(absolute):
                        rel_folder = os.path.relpath(folder, root)
                        dirs[:] = [d for d in dirs if not excluded(f"{rel_folder}/{d}", rules)]
                        for name in files:
                            rel = f"{rel_folder}/{name}"
                            if excluded(rel, rules):
                                continue
                            inside = os.path.relpath(os.path.join(folder, name), absolute)
                            place(os.path.join(folder, name), target, os.path.join(base, inside))
                else:
                    into = dest_abs
                    if destination.endswith("/") or len(sources) > 1:
                        into = os.path.join(dest_abs, os.path.basename(source))
                    place(absolute, target, into)
        if errors:
            print("\n".join(errors))
            return 1
        workdir = os.path.join(target, copies[-1][2].lstrip("/"))
        result = subprocess.run(
            ["swift", "package", "describe", "--type", "json"],
            cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if result.returncode != 0:
            print(f"`swift package describe` fails in the image's build context:\n{result.stderr}")
            return 1
        if not os.path.exists(os.path.join(workdir, "Package.resolved")):
            print("Package.resolved is not copied into the build stage")
            return 1
        print(f"the build stage loads the package ({len(copies)} COPY lines reproduced in {target})")
        return 0
    finally:
        if not options.keep:
            shutil.rmtree(target, ignore_errors=True)


def place(source, root, path_in_image):
    destination = os.path.join(root, path_in_image.lstrip("/"))
    os.makedirs(os.path.dirname(destination), exist_ok=True)
    shutil.copy2(source, destination, follow_symlinks=False)


if __name__ == "__main__":
    sys.exit(main())
