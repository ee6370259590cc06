"""Run a training recipe: one declarative file for the whole pipeline.

    /usr/bin/python3 train/recipe.py run  train/recipes/default.toml [--dir build/train] [--out OUT]
                                           [--drape build/drape] [--until STEP] [--only S1,S2] [--dry-run]
                                           [--set NAME=VALUE]
    /usr/bin/python3 train/recipe.py plan train/recipes/default.toml [--dir build/train] [--set NAME=VALUE]
    /usr/bin/python3 train/recipe.py show MODEL.safetensors      (the recipe a bundle was made by)
    /usr/bin/python3 train/recipe.py record RECIPE MODEL.safetensors   (write the recipe into a bundle its
                                                                    steps made before the runner existed)
        [--last STEP --why TEXT]   (its last step run by hand on the runner's bundle of the steps before it)

A recipe (TOML) is a list of steps, each `name`, `tool` and its inputs:

    tool      runs                                           output
    input     a copy of the bundle at `path`                 DIR/NAME.safetensors
    init      train.py init ARGS                             DIR/NAME.safetensors
    dataset   dataset.py --base FROM ARGS                    DIR/NAME/ (teacher sequences)
    fit       train.py fit --base FROM --data D1,D2 ARGS     DIR/NAME.safetensors
    arms, refine, graft, attach, teacher, input-range, physics
              edit_bundle.py TOOL --base FROM [--net-from N] ARGS

`[params]` names the recipe's parameters and their defaults (strings), and
`required = [...]` those without one; `--set NAME=VALUE` gives one, and
`{NAME}` in a step's `args` or `path` (and in `out`) is replaced by its
value before anything else (train/recipes/garment.toml: one recipe for any
bundle and garment). A `{...}` that names no parameter is refused.

`[defaults]` gives arguments every step of a tool gets before its own; `why`
says why a step exists (required of a step that trains on some garments
only: a garment's own stage must say why). A step may read only steps above
it.

Caching: each step has a key, the SHA-256 of its tool, its arguments, what
it reads (the bytes of a cached bundle step's output; a dataset's key, or
the key of a step not yet cached) and the code of its tool (the train/*.py
files it runs); an input step's is the SHA-256 of its file's bytes (not its
path). A step whose key matches DIR/NAME.key and whose output exists is
skipped; a changed step reruns, and so does everything that reads it unless
it wrote the same bytes again (the keys are made anew after each step). A fit
keeps a checkpoint (DIR/NAME.ckpt.pt) and resumes from it after an
interruption, but only under the same key. The last step's bundle is copied
to the recipe's `out` with the recipe's text, its SHA-256, the parameters'
values and every step's key in the bundle config's "recipe" (`show` prints it).

`--only S1,S2,...` runs just those steps (in the recipe's order) and writes
no final bundle; a step they read that is not among them must be cached.
Two runners with --only on the same --dir run independent branches side by
side (the default recipe's fits in two branches on 2 cores: the Makefile's
MODEL_PHASES);
a last plain `run` then finds them cached.
"""
import argparse
import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bundle import read_bundle, write_bundle  # noqa: E402

EDITS = ("arms", "refine", "graft", "attach", "teacher", "input-range", "physics")
TOOLS = ("init", "dataset", "fit") + EDITS + ("input",)
# the code each tool runs: a change to one of these files reruns its steps
CODE = {
    "input": [],
    "init": ["train.py", "make_bundle.py", "assets.py", "weld.py", "reference.py", "bundle.py"],
    "dataset": ["dataset.py", "motions.py", "assets.py", "weld.py", "bundle.py"],
    "fit": ["train.py", "reference.py", "physics.py", "bundle.py"],
}
for _e in EDITS:
    CODE[_e] = ["edit_bundle.py", "assets.py", "weld.py", "reference.py", "bundle.py"]
# the teacher's arithmetic (`drape sim garment`, repo-relative): a change
# to the cloth engine, the body's posing or the skinning it starts from
# remakes the datasets; other C changes leave them (TEACHER_VERSION in
# dataset.py is for a change these miss)
TEACHER_CODE = ["tools/sim_cmd.c", "runtime/body.c", "runtime/skin.c", "core/geom.c", "core/mesh.c",
                "core/kinematics.h"]
TEACHER_DIRS = ["sim"]
TEACHER_SKIP = ["sim/metrics.c", "sim/metrics.h"]  # in sim/, but judging code: drape sim garment never runs it
# these two read dataset plans (the teacher's flags; the frames the range is made of)
for _e in ("teacher", "input-range"):
    CODE[_e] += ["dataset.py", "motions.py"]
KEY_VERSION = 3


class RecipeError(ValueError):
    pass


def load(path):
    """The recipe at PATH, checked: (text, dict). Raises RecipeError naming the problem."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise RecipeError(f"{path}: {e.strerror}") from None
    try:
        r = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise RecipeError(f"{path}: not valid TOML: {e}") from None
    steps = r.get("step")
    if not isinstance(steps, list) or not steps:
        raise RecipeError(f"{path}: no [[step]]")
    defaults = r.get("defaults", {})
    for k, v in defaults.items():
        if k not in TOOLS or not isinstance(v, str):
            raise RecipeError(f"{path}: [defaults] {k}: expected a tool name ({', '.join(TOOLS)}) = \"args\"")
    seen = {}
    for i, s in enumerate(steps):
        where = f"{path}: step {i + 1}"
        name = s.get("name")
        if not isinstance(name, str) or not name.replace("_", "").isalnum():
            raise RecipeError(f"{where}: name {name!r}: expected letters, digits and _")
        where = f"{path}: step {name!r}"
        if name in seen:
            raise RecipeError(f"{where}: named twice")
        unknown = set(s) - {"name", "tool", "from", "data", "net_from", "args", "path", "why"}
        if unknown:
            raise RecipeError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        tool = s.get("tool")
        if tool not in TOOLS:
            raise RecipeError(f"{where}: tool {tool!r}: expected one of {', '.join(TOOLS)}")
        if not isinstance(s.get("args", ""), str):
            raise RecipeError(f"{where}: args must be a string")
        if (tool == "input") != isinstance(s.get("path"), str) or (tool == "input" and ("from" in s or "args" in s)):
            raise RecipeError(f"{where}: an input step has a path (and no from or args); only an input step has one")
        reads = [s.get("from")] if tool not in ("init", "input") else []
        if tool == "fit":
            if not isinstance(s.get("data"), list) or not s["data"]:
                raise RecipeError(f"{where}: a fit needs data = [dataset steps]")
            reads += s["data"]
        elif "data" in s:
            raise RecipeError(f"{where}: only a fit reads data")
        if tool == "graft":
            reads.append(s.get("net_from"))
        elif "net_from" in s:
            raise RecipeError(f"{where}: only a graft reads net_from")
        for d in reads:
            if d not in seen:
                raise RecipeError(f"{where}: reads {d!r}, which is not a step above it")
        kinds = [seen[s["from"]]] if tool not in ("init", "input") else []
        if tool == "fit":
            kinds += [seen[d] for d in s["data"]]
        if kinds and kinds[0] == "dataset":
            raise RecipeError(f"{where}: from = {s['from']!r} is a dataset, not a bundle")
        if tool == "fit" and any(k != "dataset" for k in kinds[1:]):
            raise RecipeError(f"{where}: data must name dataset steps")
        if tool == "fit" and "--garments" in shlex.split(s.get("args", "")) and not s.get("why"):
            raise RecipeError(f"{where}: a step that trains some garments only must say why (why = ...)")
        seen[name] = tool
    if seen[steps[-1]["name"]] == "dataset":
        raise RecipeError(f"{path}: the last step must make a bundle, not a dataset")
    params, required = r.get("params", {}), r.get("required", [])
    if not isinstance(params, dict) or any(not isinstance(v, str) for v in params.values()):
        raise RecipeError(f"{path}: [params]: expected NAME = \"default\" strings")
    if not isinstance(required, list) or any(not isinstance(v, str) or v in params for v in required):
        raise RecipeError(f"{path}: required: expected a list of parameter names, none of them in [params]")
    return raw.decode("utf-8"), r


_PARAM = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def resolve(path, r, sets):
    """The recipe with its parameters (`[params]`, `required`, --set
    NAME=VALUE) put into every step's args and path and into out; the values
    used go to r["params_used"]. Raises RecipeError naming the problem."""
    params, required = dict(r.get("params", {})), list(r.get("required", []))
    given = {}
    for kv in sets:
        k, eq, v = kv.partition("=")
        if not eq or (k not in params and k not in required):
            raise RecipeError(f"{path}: --set {kv!r}: expected NAME=VALUE with NAME one of "
                              f"{', '.join(sorted(required + list(params))) or '(no parameters)'}")
        if any(ord(c) < 32 for c in v):
            raise RecipeError(f"{path}: --set {k}: a control character in the value")
        given[k] = v
    missing = [k for k in required if k not in given]
    if missing:
        raise RecipeError(f"{path}: give {', '.join(f'--set {k}=...' for k in missing)}")
    values = {**params, **given}

    def sub(text, where):
        def one(m):
            if m.group(1) not in values:
                raise RecipeError(f"{path}: {where}: {{{m.group(1)}}} is not a parameter "
                                  f"({', '.join(sorted(values)) or 'the recipe has none'})")
            return values[m.group(1)]
        return _PARAM.sub(one, text)
    r = dict(r, step=[dict(s) for s in r["step"]], params_used=values)
    for s in r["step"]:
        for f in ("args", "path"):
            if f in s:
                s[f] = sub(s[f], f"step {s['name']!r}")
    if "out" in r:
        r["out"] = sub(r["out"], "out")
    r["defaults"] = {k: sub(v, f"[defaults] {k}") for k, v in r.get("defaults", {}).items()}
    return r


def _sha_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _args(r, s):
    return (r.get("defaults", {}).get(s["tool"], "") + " " + s.get("args", "")).strip()


def _reads(s):
    return [x for x in (s.get("from"), *s.get("data", []), s.get("net_from")) if x]


def teacher_code():
    """{repo-relative path: SHA-256} of the cloth engine's code (TEACHER_CODE,
    TEACHER_DIRS but TEACHER_SKIP): the dataset steps' key, and train/eval.py's for the
    served physics runs it keeps."""
    root = os.path.dirname(HERE)
    files = list(TEACHER_CODE) + sorted(os.path.join(d, f) for d in TEACHER_DIRS
                                        for f in os.listdir(os.path.join(root, d))
                                        if f.endswith((".c", ".h")) and os.path.join(d, f) not in TEACHER_SKIP)
    return {f: _sha_file(os.path.join(root, f)) for f in files}


def _device(r, s):
    """The device a fit step trains on, as train.py resolves --device auto:
    a fit on a GPU is not the same numbers as one on the CPU."""
    args = shlex.split(_args(r, s))
    dev = args[args.index("--device") + 1] if "--device" in args[:-1] else "auto"
    if dev != "auto":
        return dev
    import torch
    return "cuda" if torch.cuda.is_available() else "cpu"


def _runner_args(r, s):
    """The command the runner makes for s, with its paths as placeholders:
    the flags it adds (--resume, --replace-stale, ...) are part of the key."""
    cmd = _command(r, s, "<dir>", "<drape>")
    return [c.replace(HERE, "<train>") for c in cmd[1:]]


def keys(r, d=None):
    """Every step's key, in order: {name: sha256 hex}. A step keys on what it
    reads by content where it can: on a bundle step cached in folder d by the
    bytes of its output, so that a step made again (its code or arguments
    changed) that writes the same bytes leaves its readers cached; on a
    dataset, or a step not cached, by its key."""
    code = {f: _sha_file(os.path.join(HERE, f)) for t in CODE.values() for f in t}
    teacher = teacher_code() if any(s["tool"] == "dataset" for s in r["step"]) else {}
    out, read_as = {}, {}
    for s in r["step"]:
        if s["tool"] == "input":
            if not os.path.isfile(s["path"]):
                raise RecipeError(f"step {s['name']!r}: no file {s['path']!r}")
            doc = {"v": KEY_VERSION, "tool": "input", "sha256": _sha_file(s["path"])}
        else:
            doc = {"v": KEY_VERSION, "tool": s["tool"], "args": shlex.split(_args(r, s)),
                   "reads": [read_as[x] for x in _reads(s)], "code": {f: code[f] for f in CODE[s["tool"]]},
                   "cmd": _runner_args(r, s)}
            if s["tool"] == "dataset":
                doc["teacher"] = teacher
            if s["tool"] == "fit":
                doc["device"] = _device(r, s)
        key = out[s["name"]] = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()
        read_as[s["name"]] = ("sha256:" + _sha_file(_output(d, s))
                              if d and s["tool"] != "dataset" and _state(d, s, key) == "cached" else key)
    return out


def _output(d, s):
    return os.path.join(d, s["name"]) + ("" if s["tool"] == "dataset" else ".safetensors")


def _state(d, s, key):
    """'cached', or why the step must run."""
    kf = os.path.join(d, s["name"] + ".key")
    if not os.path.exists(_output(d, s)):
        return "no output yet"
    if not os.path.exists(kf):
        return "no key recorded"
    with open(kf) as f:
        return "cached" if f.read().strip() == key else "changed"


def _command(r, s, d, drape):
    py = [sys.executable]
    o = _output(d, s)
    args = shlex.split(_args(r, s))
    base = os.path.join(d, s["from"] + ".safetensors") if s["tool"] not in ("init", "input") else None
    if s["tool"] == "init":
        return py + [os.path.join(HERE, "train.py"), "init"] + args + ["--out", o]
    if s["tool"] == "dataset":
        return py + [os.path.join(HERE, "dataset.py"), "--base", base, "--out", o] + args + \
            ["--drape", drape, "--replace-stale"]
    if s["tool"] == "fit":
        data = ",".join(os.path.join(d, x) for x in s["data"])
        return py + [os.path.join(HERE, "train.py"), "fit", "--base", base, "--data", data, "--out", o,
                     "--ckpt", os.path.join(d, s["name"] + ".ckpt.pt"), "--resume"] + args
    extra = ["--net-from", os.path.join(d, s["net_from"] + ".safetensors")] if s["tool"] == "graft" else []
    return py + [os.path.join(HERE, "edit_bundle.py"), s["tool"], "--base", base] + extra + args + ["--out", o]


def _run_tool(cmd):
    """Runs a step's tool; its exit status. A SIGTERM to the runner (make's
    trap on Ctrl-C: `make model`'s runners run in the background, where the
    shell ignores SIGINT for them) stops the tool too, and the tool takes
    SIGINT again."""
    p = subprocess.Popen(cmd, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))

    def stop(signum, frame):
        p.terminate()
        p.wait()
        sys.exit(128 + signum)
    old = signal.signal(signal.SIGTERM, stop)
    try:
        return p.wait()
    finally:
        signal.signal(signal.SIGTERM, old)


def _lock(d, name):
    """An open file holding the step's lock, or None when another runner
    (a second `make model`, a branch of the same one) is running the step."""
    f = open(os.path.join(d, name + ".lock"), "w")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.close()
        return None
    return f


def cmd_plan(a):
    text, r = load(a.recipe)
    r = resolve(a.recipe, r, a.set)
    ks = keys(r, a.dir)
    stale = False
    for s in r["step"]:
        st = _state(a.dir, s, ks[s["name"]])
        reads = _reads(s)
        print(f"{s['name']:<18} {s['tool']:<8} {ks[s['name']][:12]}  {st}"
              + (f"  (reads {', '.join(reads)})" if reads else ""))
        stale = stale or st != "cached"
    print(f"recipe: {'everything cached' if not stale else 'steps to run above'}")
    if stale:
        print("recipe: (a step after one that runs is shown as changed; it stays cached if that one "
              "makes the same bytes again)")
    return 0


def cmd_run(a):
    text, r = load(a.recipe)
    r = resolve(a.recipe, r, a.set)
    os.makedirs(a.dir, exist_ok=True)
    ks = keys(r, a.dir)
    out = a.out or r.get("out")
    if not out:
        raise RecipeError(f"{a.recipe}: no out = ... and no --out")
    only = [x for x in a.only.split(",") if x]
    names = [s["name"] for s in r["step"]]
    if any(x not in names for x in only):
        raise RecipeError(f"--only {a.only!r}: no step {[x for x in only if x not in names][0]!r} "
                          f"(steps: {', '.join(names)})")
    t0 = time.time()
    ran = []
    for s in r["step"]:
        name, key = s["name"], ks[s["name"]]
        st = _state(a.dir, s, key)
        if only and name not in only:
            if st != "cached" and any(name in _reads(t) for t in r["step"] if t["name"] in only):
                raise RecipeError(f"--only: step {name!r} is read by one of {a.only!r} but is not cached ({st})")
            continue
        if st == "cached":
            print(f"recipe: {name}: cached ({key[:12]})", file=sys.stderr, flush=True)
        else:
            cmd = _command(r, s, a.dir, a.drape) if s["tool"] != "input" else ["cp", s["path"], _output(a.dir, s)]
            print(f"recipe: {name}: runs ({st}): {shlex.join(cmd)}", file=sys.stderr, flush=True)
            if a.dry_run:
                ran.append(name)
                continue
            lock = _lock(a.dir, name)
            if lock is None:
                raise RecipeError(f"step {name!r} is being run by another runner in {a.dir}")
            if _state(a.dir, s, key) == "cached":  # another runner finished it meanwhile
                lock.close()
                print(f"recipe: {name}: cached by another runner ({key[:12]})", file=sys.stderr, flush=True)
                ks = keys(r, a.dir)
                if a.until == name:
                    print(f"recipe: stopped after {name} (--until)", file=sys.stderr)
                    return 0
                continue
            kf = os.path.join(a.dir, name + ".key")
            if os.path.exists(kf):
                os.remove(kf)
            # a checkpoint resumes only the run it was written by, and a
            # dataset folder's sequences are kept only for the run that made
            # them (dataset.py skips a sequence already there: with another
            # plan, motion code or teacher it would keep the old ones)
            if s["tool"] in ("fit", "dataset"):
                fit = s["tool"] == "fit"
                partial = os.path.join(a.dir, name + ".ckpt.pt") if fit else _output(a.dir, s)
                ckk = os.path.join(a.dir, name + (".ckpt.key" if fit else ".run.key"))
                if not (os.path.exists(ckk) and open(ckk).read().strip() == key) and os.path.exists(partial):
                    if os.path.isdir(partial):
                        shutil.rmtree(partial)
                    else:
                        os.remove(partial)
                with open(ckk, "w") as f:
                    f.write(key + "\n")
            t1 = time.time()
            if s["tool"] == "input":  # a copy: later changes to the file do not reach this run
                shutil.copyfile(s["path"], _output(a.dir, s) + ".tmp")
                os.replace(_output(a.dir, s) + ".tmp", _output(a.dir, s))
                rc = 0
            else:
                rc = _run_tool(cmd)
            if rc != 0:
                lock.close()
                print(f"recipe: {name}: failed (exit {rc}); the steps above stay cached", file=sys.stderr)
                return rc
            with open(kf + ".tmp", "w") as f:
                f.write(key + "\n")
            os.replace(kf + ".tmp", kf)
            lock.close()
            ran.append(name)
            print(f"recipe: {name}: done in {(time.time() - t1) / 60:.1f} min", file=sys.stderr, flush=True)
            ks = keys(r, a.dir)  # its readers key on the bytes it made
        if a.until == name:
            print(f"recipe: stopped after {name} (--until)", file=sys.stderr)
            return 0
    if a.dry_run:
        print(f"recipe: would run {len(ran)} step(s): {', '.join(ran) or 'none'}", file=sys.stderr)
        return 0
    if only:
        print(f"recipe: ran {len(ran)} of --only's steps ({', '.join(ran) or 'none'}; "
              f"{(time.time() - t0) / 60:.1f} min); no final bundle", file=sys.stderr)
        return 0
    last = r["step"][-1]
    cfg, t = read_bundle(_output(a.dir, last))
    cfg = dict(cfg)
    # a recipe that starts from a given bundle keeps that bundle's record under "base"
    base = cfg.get("recipe") if any(s["tool"] == "input" for s in r["step"]) else None
    cfg["recipe"] = {"name": r.get("name", ""), "file": os.path.relpath(os.path.abspath(a.recipe)),
                     "sha256": hashlib.sha256(text.encode()).hexdigest(), "text": text, "keys": ks}
    if r.get("params_used"):
        cfg["recipe"]["params"] = r["params_used"]
    if base:
        cfg["recipe"]["base"] = base
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    write_bundle(out + ".tmp", cfg, t)
    os.replace(out + ".tmp", out)
    print(f"recipe: wrote {out} ({len(ran)} step(s) run: {', '.join(ran) or 'none'}; "
          f"{(time.time() - t0) / 60:.1f} min)", file=sys.stderr)
    return 0


def cmd_record(a):
    """The recipe's text into a bundle made by its steps by hand (the shipped
    model's were run one by one before this runner): no keys, since no step
    output of this runner exists for it; "recorded" says so. With --last STEP
    --why TEXT: the bundle is the runner's output of the recipe before STEP, its
    last step, with STEP then run by hand on it (edit_bundle.py); the record
    before keeps its keys under "base", and "recorded" says which step and why.
    With --steps S1,S2 --why TEXT: steps anywhere in the recipe were changed and
    run by hand, and their result edited into the bundle recorded before (a
    garment's network grafted into it), so that the other garments stay that
    bundle's rather than a remake's; the record is kept the same way."""
    text, r = load(a.recipe)
    cfg, t = read_bundle(a.model)
    cfg = dict(cfg)
    rec = {"name": r.get("name", ""), "file": os.path.relpath(os.path.abspath(a.recipe)),
           "sha256": hashlib.sha256(text.encode()).hexdigest(), "text": text, "keys": None,
           "recorded": "after the fact: the steps were run one by one before train/recipe.py"}
    if a.last and a.steps:
        raise RecipeError("record: give --last or --steps, not both")
    if a.last:
        if r["step"][-1]["name"] != a.last or not a.why:
            raise RecipeError(f"record --last {a.last}: it must be the recipe's last step, and --why given")
        rec["recorded"] = f"the step {a.last} run by hand on the bundle of the record under 'base': {a.why}"
        rec["base"] = cfg.get("recipe")
    elif a.steps:
        hand = [s for s in a.steps.split(",") if s]
        unknown = [s for s in hand if s not in {st["name"] for st in r["step"]}]
        if unknown or not hand or not a.why:
            raise RecipeError(f"record --steps {a.steps}: " + (f"no step {', '.join(unknown)} in {a.recipe}"
                              if unknown else "name the steps run by hand, and give --why"))
        rec["recorded"] = (f"the steps {', '.join(hand)} run by hand, their result edited into the bundle of the "
                           f"record under 'base': {a.why}")
        rec["base"] = cfg.get("recipe")
    cfg["recipe"] = rec
    write_bundle(a.model + ".tmp", cfg, t)
    os.replace(a.model + ".tmp", a.model)
    print(f"recipe: {a.model}: recorded {a.recipe}", file=sys.stderr)
    return 0


def cmd_show(a):
    cfg, _ = read_bundle(a.model)
    rec = cfg.get("recipe")
    if not rec:
        print(f"{a.model}: no recipe recorded (made before train/recipe.py, or by hand)", file=sys.stderr)
        return 1
    print(f"# {a.model}: made by {rec.get('file')} (sha256 {rec.get('sha256', '')[:16]}…)"
          + (f"; {rec['recorded']}" if rec.get("recorded") else ""))
    b = rec.get("base")
    while b:  # the bundles it started from
        print(f"# on a bundle made by {b.get('file')} (sha256 {b.get('sha256', '')[:16]}…)")
        b = b.get("base")
    if rec.get("params"):
        print("# with " + " ".join(shlex.quote(f"--set {k}={v}") for k, v in rec["params"].items()))
    print(rec.get("text", ""), end="")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("run", "plan"):
        p = sub.add_parser(name)
        p.add_argument("recipe")
        p.add_argument("--dir", default="build/train", help="where the steps' outputs and keys live")
        p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                       help="a parameter of the recipe ([params], required)")
        if name == "run":
            p.add_argument("--out", default="", help="the final bundle (default: the recipe's out)")
            p.add_argument("--drape", default="build/drape", help="the teacher's binary")
            p.add_argument("--until", default="", help="stop after this step")
            p.add_argument("--only", default="", metavar="S1,S2",
                           help="run only these steps; what they read must be cached")
            p.add_argument("--dry-run", action="store_true", help="print what would run")
    p = sub.add_parser("show")
    p.add_argument("model")
    p = sub.add_parser("record")
    p.add_argument("recipe")
    p.add_argument("model")
    p.add_argument("--last", default="", help="the recipe's last step, run by hand on the bundle recorded before")
    p.add_argument("--steps", default="", metavar="S1,S2",
                   help="steps run by hand, their result edited into the bundle recorded before")
    p.add_argument("--why", default="", help="with --last or --steps: why they were not run by the runner")
    a = ap.parse_args(argv)
    try:
        return {"run": cmd_run, "plan": cmd_plan, "show": cmd_show, "record": cmd_record}[a.cmd](a)
    except RecipeError as e:
        print(f"recipe: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
