#!/usr/bin/python3
"""Static checks of the top-level Dockerfile (Docker cannot run here).

    check_dockerfile.py REPO DRAPED_BIN [DOCKERFILE]

  - every base image is pinned by a tag (not :latest, not untagged), for
    every FLAVOR (cpu, cuda); cuda builds on a -devel and runs on the matching
    -runtime image, cpu runs on a -slim Debian;
  - every COPY source from the build context exists in REPO and is not
    excluded by .dockerignore, and the build stage copies every folder the
    Makefile builds draped and drape from (its LAYERS, server/, tools/);
  - the ENTRYPOINT is the draped that the Makefile builds (`build/draped`,
    made in the build stage and copied to the ENTRYPOINT's path);
  - every flag in ENTRYPOINT/CMD and in the `docker run` examples, and every
    DRAPE_* variable set with ENV, is one `draped --help` lists;
  - the image runs as a non-root USER, has a HEALTHCHECK on /healthz at
    DRAPE_PORT, STOPSIGNAL SIGTERM, EXPOSEs DRAPE_PORT, and DRAPE_MODEL is the
    model the image carries.
Prints every problem and exits 1, or prints "dockerfile: ok (N checks)"."""
import fnmatch
import json
import os
import re
import shlex
import subprocess
import sys

REPO, DRAPED = sys.argv[1], sys.argv[2]
PATH = sys.argv[3] if len(sys.argv) > 3 else os.path.join(REPO, "Dockerfile")
FLAVORS = ("cpu", "cuda")
problems = []
checks = 0


def check(cond, msg):
    global checks
    checks += 1
    if not cond:
        problems.append(msg)
    return cond


def parse(path):
    """[(instruction, argument text, comment lines before it)]"""
    out, buf, comments = [], "", []
    with open(path) as f:
        for raw in f:
            line = raw.rstrip("\n")
            if not buf and line.lstrip().startswith("#"):
                comments.append(line.lstrip()[1:])
                continue
            if buf and line.lstrip().startswith("#"):
                continue  # a comment inside a continued instruction
            if line.endswith("\\"):
                buf += line[:-1] + " "
                continue
            buf += line
            if buf.strip():
                word, _, rest = buf.strip().partition(" ")
                out.append((word.upper(), rest.strip(), comments))
                comments = []
            buf = ""
    return out


def dockerignore_excludes(path):
    """Docker's rule: the last matching pattern wins; a pattern matches a
    path or any folder above it."""
    pats = []
    di = os.path.join(REPO, ".dockerignore")
    if os.path.exists(di):
        for line in open(di):
            line = line.strip()
            if line and not line.startswith("#"):
                pats.append(line)
    parts = path.strip("/").split("/")
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    excluded = False
    for p in pats:
        neg = p.startswith("!")
        pat = p[1:] if neg else p
        pat = pat.strip("/")
        hit = any(fnmatch.fnmatch(pre, pat) or (pat.startswith("**/") and fnmatch.fnmatch(pre, pat[3:]))
                  for pre in prefixes)
        if hit:
            excluded = not neg
    return excluded


def subst(text, env):
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: env.get(m.group(1) or m.group(2), m.group(0)), text)


def exec_form(arg):
    try:
        v = json.loads(arg)
        if isinstance(v, list):
            return v
    except ValueError:
        pass
    return None


ins = parse(PATH)
res = subprocess.run([DRAPED, "--help"], capture_output=True, text=True)
help_text = res.stdout + res.stderr
flags = set(re.findall(r"^\s+(--[a-z][a-z0-9-]*)\s", help_text, re.M))
envvars = set(re.findall(r"\b(DRAPE_[A-Z0-9_]+)\b", help_text))
check(len(flags) > 10 and len(envvars) > 10, f"could not read the flags from `{DRAPED} --help`")

# ---- stages and base images ----
global_args = {}
first_from = next(i for i, (w, _, _) in enumerate(ins) if w == "FROM")
for w, a, _ in ins[:first_from]:
    if w == "ARG":
        k, _, v = a.partition("=")
        global_args[k] = v
check("FLAVOR" in global_args, "no global ARG FLAVOR")
check(global_args.get("FLAVOR") == "cpu", "FLAVOR should default to cpu")

stages = []  # (name, image text, [instructions])
for w, a, c in ins[first_from:]:
    if w == "FROM":
        toks = [t for t in a.split() if not t.startswith("--")]
        name = toks[2] if len(toks) >= 3 and toks[1].upper() == "AS" else None
        stages.append({"name": name, "image": toks[0], "ins": []})
    else:
        stages[-1]["ins"].append((w, a, c))
names = {s["name"] for s in stages if s["name"]}


def image_of(stage, flavor, seen=()):
    """the external image a stage starts from, for one flavor"""
    img = subst(stage["image"], dict(global_args, FLAVOR=flavor))
    if img in names and img not in seen:
        return image_of(next(s for s in stages if s["name"] == img), flavor, seen + (img,))
    return img


for flavor in FLAVORS:
    for s in stages:
        img = image_of(s, flavor)
        check("$" not in img, f"FLAVOR={flavor}: stage {s['name']}: unresolved base image {img}")
        repo, _, tag = img.rpartition(":") if ":" in img.split("/")[-1] else (img, "", "")
        check(tag and tag != "latest", f"FLAVOR={flavor}: base image {img} is not pinned by a tag")
    build = next((s for s in stages if s["name"] == "build"), None)
    run = stages[-1]
    if check(build is not None, "no stage named build"):
        b, r = image_of(build, flavor), image_of(run, flavor)
        if flavor == "cuda":
            check(b.startswith("nvidia/cuda:") and b.endswith("-devel-ubuntu22.04"),
                  f"cuda build base {b}: expected nvidia/cuda:<tag>-devel-ubuntu22.04")
            check(r == b.replace("-devel-", "-runtime-"), f"cuda run base {r} does not match the build base {b}")
        else:
            check(b.startswith("debian:12"), f"cpu build base {b}: expected debian:12.x")
            check(r.startswith("debian:12") and r.endswith("-slim") and r.split(":")[1].startswith(b.split(":")[1]),
                  f"cpu run base {r}: expected the slim variant of {b}")

# ---- COPY sources ----
stage_workdir = {}
for s in stages:
    wd = "/"
    for w, a, _ in s["ins"]:
        if w == "WORKDIR":
            wd = os.path.join(wd, a)
        if w in ("COPY", "ADD"):
            toks = shlex.split(a)
            opts = [t for t in toks if t.startswith("--")]
            paths = [t for t in toks if not t.startswith("--")]
            check(len(paths) >= 2, f"{w} {a}: needs a source and a destination")
            if any(o.startswith("--from=") for o in opts):
                continue
            for src in paths[:-1]:
                check(os.path.exists(os.path.join(REPO, src)), f"COPY source {src} does not exist in the repository")
                check(not dockerignore_excludes(src), f"COPY source {src} is excluded by .dockerignore")
    stage_workdir[s["name"]] = wd

makefile = open(os.path.join(REPO, "Makefile")).read()
layers = re.search(r"^LAYERS\s*:=\s*(.+)$", makefile, re.M)
check(layers, "the Makefile has no LAYERS line")
build_copies = {shlex.split(a)[0].strip("/") for s in stages if s["name"] == "build"
                for w, a, _ in s["ins"] if w == "COPY" and not a.startswith("--")}
for folder in (layers.group(1).split() if layers else []) + ["server", "tools"]:
    check(folder in build_copies, f"the build stage does not copy {folder}/, which the Makefile builds from")

# ---- the binary ----
run = stages[-1]
rins = run["ins"]
last = lambda w: next((a for x, a, _ in reversed(rins) if x == w), None)  # noqa: E731
ep = exec_form(last("ENTRYPOINT") or "")
cmd = exec_form(last("CMD") or "[]")
check(ep is not None and len(ep) >= 1, "ENTRYPOINT must be in exec form (a JSON list): SIGTERM reaches draped")
check(re.search(r"^\$\(BUILD\)/draped:", makefile, re.M) and re.search(r"^BUILD\s*\?=\s*build$", makefile, re.M),
      "the Makefile has no build/draped target")
if ep:
    binary = ep[0]
    copied = False
    for w, a, _ in rins:
        toks = shlex.split(a) if w == "COPY" else []
        if "--from=build" in toks:
            paths = [t for t in toks if not t.startswith("--")]
            dest = paths[-1]
            for src in paths[:-1]:
                target = os.path.join(dest, os.path.basename(src)) if dest.endswith("/") else dest
                if target == binary and src == os.path.join(stage_workdir.get("build", "/"), "build/draped"):
                    copied = True
    check(copied, f"ENTRYPOINT {binary} is not the build stage's build/draped")
    build_runs = " ".join(a for s in stages if s["name"] == "build" for w, a, _ in s["ins"] if w == "RUN")
    check(re.search(r"\bmake\b[^&;]*\bbuild/draped\b", build_runs), "the build stage does not `make build/draped`")

# ---- flags and variables ----
used = [t for t in (ep or [])[1:] + (cmd or []) if t.startswith("--")]
all_comments = [c for _, _, cs in ins for c in cs]
for c in all_comments:
    m = re.search(r"docker run (.*)", c)
    if m:
        toks = m.group(1).split()
        img = next((i for i, t in enumerate(toks) if re.match(r"^drape:", t)), None)
        if img is not None:
            used += [t for t in toks[img + 1:] if t.startswith("--")]
        used_env = [t.split("=")[0] for i, t in enumerate(toks) if i > 0 and toks[i - 1] == "-e"]
        for v in used_env:
            check(v in envvars, f"`docker run -e {v}`: draped has no such variable")
for f in used:
    name = re.match(r"--[a-z][a-z0-9-]*", f).group(0)
    check(name in flags or (name == "--help" and "usage: draped" in help_text), f"flag {name} is not in `draped --help`")
env = {}
for w, a, _ in rins:
    if w == "ENV":
        for t in shlex.split(a):
            k, _, v = t.partition("=")
            env[k] = v
for k in env:
    if k.startswith("DRAPE_"):
        check(k in envvars, f"ENV {k}: draped has no such variable")

# ---- user, health, signal, port, model ----
user = last("USER")
check(user is not None, "no USER: the image would run as root")
if user:
    u = user.split(":")[0]
    check(u not in ("root", "0"), f"USER {user} is root")
hc = last("HEALTHCHECK")
check(hc is not None and "/healthz" in hc and "CMD" in hc, "no HEALTHCHECK on /healthz")
if hc:
    check("${DRAPE_PORT}" in hc or env.get("DRAPE_PORT", "8080") in hc, "HEALTHCHECK does not use DRAPE_PORT")
check((last("STOPSIGNAL") or "") == "SIGTERM", "STOPSIGNAL is not SIGTERM")
check(env.get("DRAPE_PORT") and env["DRAPE_PORT"] in (last("EXPOSE") or "").split(),
      "EXPOSE does not match DRAPE_PORT")
model_dests = [shlex.split(a)[-1] for w, a, _ in rins if w == "COPY" and "--from=model" in a]
check(env.get("DRAPE_MODEL") in model_dests, f"DRAPE_MODEL {env.get('DRAPE_MODEL')} is not the model the image carries")

if problems:
    for p in problems:
        print("dockerfile:", p)
    sys.exit(1)
print(f"dockerfile: ok ({checks} checks)")
