#!/usr/bin/python3
"""The user guide cannot rot: run every command of docs/guide.md and check its links.

usage: check_guide.py --guide docs/guide.md --engine BUILD/engine/cli/traindeck-engine [--keep] [--verbose]

What it checks, in this order (the first failure ends the test with exit code 1):

1. Links: every relative link and image of the guide, `[text](target)` and `![alt](target)`,
   names a file that exists (taken from the guide's folder: `images/x.png` is
   docs/images/x.png, `config.md` is docs/config.md; a link into the repository such as
   `../README.md` likewise); every `#anchor` (alone or after a .md file) names a heading of that
   file (GitHub's slugs). Web links (http, https, mailto) are not fetched.
2. Code fences: every fence has a language. `sh` blocks are run (below); `console` blocks are
   shown but not run, and each must be one of the few kinds listed in NOT_RUN with the reason
   (so a runnable command cannot hide there); `text` blocks are output or layouts, `json` blocks
   must parse, `python` blocks must compile (transformers is not in Debian, so they are not run).
   `bash`, `shell` or an unnamed fence are refused: say `sh` (run) or `console` (not run).
3. Commands: the `sh` blocks run in order, each with `bash -e -o pipefail` in one temporary
   folder (blocks share the folder and its files, not shell variables, as a reader who pastes a
   block at a time), with the build's traindeck-engine first on PATH, and HOME, XDG_CACHE_HOME,
   XDG_DATA_HOME and XDG_CONFIG_HOME inside the temporary folder (so the CPU calibration and the
   default store are the test's own). Each block must exit with status 0.
4. Output: a comment `<!-- expect: REGEX -->` after a `sh` block names a key line of its output
   (Python `re`, searched line by line in stdout + stderr); the block's output must have a matching
   line. When the guide shows the output in a `text` block right after the `sh` block, that text
   must have a matching line too, so what the reader sees and what the engine prints agree.

The guide's commands use Debian's fortunes corpus (/usr/share/games/fortunes, package fortunes,
which ./traindeck.sh installs) and short runs (`--set train.steps=...`) so that the whole test
takes well under 90 s on 2 cores. It prints each block's time.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

# Console blocks are commands a reader runs but this test cannot. Each kind: a pattern that
# the block's first command matches, and why it is not run here. A console block that matches
# none of them fails the test: put a runnable command in a `sh` block instead.
NOT_RUN = [
    (r"^sudo apt install \./traindeck_", "installs the .deb system-wide: needs root and the package file "
                                          "(tests/packaging builds, lints and runs the package)"),
    (r"^sudo apt remove traindeck", "removes the installed package: needs root"),
    (r"^git clone ", "fetches the repository from the network"),
    (r"^\./traindeck\.sh (run|test)", "installs Debian packages and builds the whole project (minutes); "
                                      "`run` then trains the demo for about 5 minutes"),
    (r"^(cmake|cpack) ", "builds the project or the package (minutes; tests/packaging builds the package)"),
    (r"^traindeck( |$)", "opens the desktop workbench, which needs a display (the GUI tests cover it)"),
    (r"^ssh(-keygen|-copy-id|-add)? ", "needs a real SSH node (tests/remote runs against a local sshd)"),
    (r"^(sinfo|squeue|sacct|scontrol|sbatch|scancel|srun) ", "needs a real Slurm cluster (tests/remote/test_slurm and "
                                                          "tests/gui/runs/test_slurm_target start one)"),
    (r"^\./traindeck\.sh image", "builds an OCI image with podman as root (tests/remote/test_container builds "
                                 "and runs it)"),
    (r"^podman ", "needs podman as root (tests/remote/test_container runs a training in a container)"),
    (r"^pip install ", "transformers is not in Debian: it needs the network (tests/engine/test_export "
                       "checks the export with an independent PyTorch reader)"),
]

FENCE = re.compile(r"^(`{3,}|~{3,})\s*([A-Za-z0-9_+-]*)\s*$")
EXPECT = re.compile(r"^<!--\s*expect:\s*(.*?)\s*-->\s*$")
LINK = re.compile(r"(!?)\[([^\]]*)\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


class Block:
    def __init__(self, lang, line):
        self.lang = lang
        self.line = line        # 1-based line of the opening fence
        self.text = ""
        self.expects = []       # regexes from <!-- expect: --> comments after the block
        self.shown = None       # the `text` block right after it (the output the reader sees)


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def parse(path):
    """The guide's fenced blocks, with expect comments and shown output attached."""
    lines = open(path, encoding="utf-8").read().split("\n")
    blocks, prose = [], []
    i = 0
    last = None  # the last block, while only blank lines and expect comments follow it
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m:
            fence, lang = m.group(1), m.group(2)
            b = Block(lang, i + 1)
            body = []
            i += 1
            close = re.compile("^" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}\s*$")
            while i < len(lines) and not close.match(lines[i]):
                body.append(lines[i])
                i += 1
            if i == len(lines):
                fail(f"{path}:{b.line}: the code fence is never closed")
            b.text = "\n".join(body) + "\n"
            if last is not None and last.lang == "sh" and lang == "text" and last.shown is None:
                last.shown = b
            blocks.append(b)
            last = b
            i += 1
            continue
        e = EXPECT.match(lines[i].strip())
        if e:
            target = next((b for b in reversed(blocks) if b.lang == "sh"), None)
            if last is None or target is None or (last is not target and last is not target.shown):
                fail(f"{path}:{i + 1}: an expect comment must follow a sh block (or its text output)")
            try:
                re.compile(e.group(1))
            except re.error as err:
                fail(f"{path}:{i + 1}: expect: not a regular expression: {err}")
            target.expects.append((e.group(1), i + 1))
        elif lines[i].strip():
            prose.append((i + 1, lines[i]))
            last = None
        i += 1
    return blocks, prose


def slug(heading):
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to '-'."""
    h = heading.strip().lower()
    return "".join("-" if ch == " " else ch for ch in h if ch in " -_" or ch.isalnum())


def anchors(md_path):
    result, seen = set(), {}
    in_fence = None
    for line in open(md_path, encoding="utf-8"):
        m = FENCE.match(line.rstrip("\n"))
        if m:
            in_fence = None if in_fence else m.group(1)[0]
            continue
        if in_fence:
            continue
        h = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if h:
            s = slug(h.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            result.add(s if n == 0 else f"{s}-{n}")
    return result


def check_links(guide, prose):
    base = os.path.dirname(os.path.abspath(guide))
    checked = 0
    # Paragraphs (consecutive prose lines joined), so that a link whose text wraps is found.
    paragraphs = []
    for lineno, line in prose:
        if paragraphs and paragraphs[-1][2] == lineno - 1:
            paragraphs[-1] = (paragraphs[-1][0], paragraphs[-1][1] + " " + line.strip(), lineno)
        else:
            paragraphs.append((lineno, line.strip(), lineno))
    for lineno, text, _last in paragraphs:
        for bang, _text, target in LINK.findall(re.sub(r"`[^`]*`", "", text)):
            if re.match(r"^[a-z]+:", target):
                continue  # http(s), mailto: not fetched
            path, _, frag = target.partition("#")
            full = os.path.normpath(os.path.join(base, path)) if path else os.path.abspath(guide)
            if not os.path.exists(full):
                what = "image" if bang else "link"
                hint = " (run tools/update-guide-images BUILD_DIR after the GUI tests)" if bang else ""
                fail(f"{guide}:{lineno}: the {what} '{target}' names {full}, which does not exist{hint}")
            if frag:
                if not full.endswith(".md"):
                    fail(f"{guide}:{lineno}: '{target}': an anchor into a file that is not Markdown")
                if frag not in anchors(full):
                    fail(f"{guide}:{lineno}: '{target}': {os.path.basename(full)} has no heading with the anchor "
                         f"'#{frag}' (anchors there: {', '.join(sorted(anchors(full)))})")
            checked += 1
    return checked


def check_blocks(guide, blocks):
    for b in blocks:
        where = f"{guide}:{b.line}"
        if b.lang in ("bash", "shell", ""):
            fail(f"{where}: a fence marked '{b.lang or '(none)'}': mark commands `sh` (this test runs them) or "
                 "`console` (shown, not run: only the kinds listed in NOT_RUN), output `text`")
        if b.lang == "console":
            first = next((l.strip() for l in b.text.split("\n") if l.strip() and not l.strip().startswith("#")), "")
            first = re.sub(r"^\$\s*", "", first)
            if not any(re.match(p, first) for p, _ in NOT_RUN):
                fail(f"{where}: the console block '{first}' is not one of the commands that cannot run in a test "
                     "(NOT_RUN in tests/docs/check_guide.py): make it a `sh` block so it is run")
        elif b.lang == "json":
            try:
                json.loads(b.text)
            except ValueError as err:
                fail(f"{where}: the json block does not parse: {err}")
        elif b.lang == "python":
            try:
                compile(b.text, where, "exec")
            except SyntaxError as err:
                fail(f"{where}: the python block does not compile: {err}")
        elif b.lang not in ("sh", "text", "console", "json", "python"):
            fail(f"{where}: unknown fence language '{b.lang}' (sh, console, text, json, python)")
        if b.lang == "sh":
            for rx, line in b.expects:
                if b.shown is not None and not any(re.search(rx, l) for l in b.shown.text.split("\n")):
                    fail(f"{guide}:{line}: the expected line /{rx}/ is not in the output the guide shows "
                         f"(the text block at line {b.shown.line}): update one of them")


def run_blocks(guide, blocks, engine, keep, verbose):
    if not os.access(engine, os.X_OK):
        fail(f"the engine {engine} is not an executable: build the target traindeck-engine first")
    if not os.path.isdir("/usr/share/games/fortunes"):
        fail("/usr/share/games/fortunes is missing: the guide's commands use Debian's fortunes corpus "
             "(sudo apt-get install fortunes; ./traindeck.sh installs it)")
    work = tempfile.mkdtemp(prefix="td-guide-")
    home = os.path.join(work, ".home")
    os.makedirs(home)
    env = dict(os.environ)
    env.update({
        "PATH": os.path.dirname(os.path.abspath(engine)) + os.pathsep + env.get("PATH", "/usr/bin:/bin"),
        "HOME": home,
        "XDG_CACHE_HOME": os.path.join(home, ".cache"),
        "XDG_DATA_HOME": os.path.join(home, ".local", "share"),
        "XDG_CONFIG_HOME": os.path.join(home, ".config"),
        "LC_ALL": "C.UTF-8",
        # OpenMP threads that sleep instead of spinning while they wait: on a CI machine whose
        # cores are shared by other jobs, spinning made the guide's 80-step run 5-10x slower
        # (25 s instead of 3.7 s at a load of 5 on 2 cores); the commands and results are the same.
        "OMP_WAIT_POLICY": "PASSIVE",
    })
    for k in ("TRAINDECK_DB", "OPENBLAS_CORETYPE"):
        env.pop(k, None)
    print(f"running the guide's sh blocks in {work} with {engine}", flush=True)
    total = 0.0
    ok = False
    try:
        for n, b in enumerate([b for b in blocks if b.lang == "sh"], 1):
            t0 = time.monotonic()
            p = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", b.text], cwd=work, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            dt = time.monotonic() - t0
            total += dt
            out = p.stdout.decode("utf-8", "replace")
            first = b.text.strip().split("\n")[0]
            print(f"block {n:2d} (line {b.line:3d}) {dt:6.1f} s  exit {p.returncode}  {first[:70]}", flush=True)
            if verbose:
                print(out.rstrip() + "\n", flush=True)
            if p.returncode != 0:
                tail = "\n".join(out.rstrip().split("\n")[-30:])
                fail(f"{guide}:{b.line}: the block exited with status {p.returncode}:\n{b.text}--- output (last 30 lines) ---\n{tail}")
            for rx, line in b.expects:
                if not any(re.search(rx, l) for l in out.split("\n")):
                    tail = "\n".join(out.rstrip().split("\n")[-30:])
                    fail(f"{guide}:{line}: no line of the output of the block at line {b.line} matches /{rx}/:\n"
                         f"--- output (last 30 lines) ---\n{tail}")
        ok = True
    finally:
        if keep or not ok:
            print(f"(kept {work})", flush=True)
        else:
            shutil.rmtree(work, ignore_errors=True)
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--guide", required=True)
    ap.add_argument("--engine", required=True)
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    ap.add_argument("--verbose", action="store_true", help="print each block's output (to update the guide's examples)")
    args = ap.parse_args()
    blocks, prose = parse(args.guide)
    links = check_links(args.guide, prose)
    check_blocks(args.guide, blocks)
    sh = [b for b in blocks if b.lang == "sh"]
    if not sh:
        fail(f"{args.guide} has no sh blocks")
    expects = sum(len(b.expects) for b in sh)
    print(f"{links} links and images resolve; {len(blocks)} code blocks: {len(sh)} sh (run), "
          f"{sum(b.lang == 'console' for b in blocks)} console (not run), {expects} expected output lines", flush=True)
    total = run_blocks(args.guide, blocks, args.engine, args.keep, args.verbose)
    print(f"PASS: {len(sh)} sh blocks in {total:.1f} s", flush=True)


if __name__ == "__main__":
    main()
