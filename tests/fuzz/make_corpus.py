#!/usr/bin/env python3
"""Rebuilds the generated part of tests/fuzz/corpus/ from the repository's
configs, so the fuzzers start from every config users and tests write:

  ex_*   configs/examples/*.yaml          (comment lines dropped)
  st_*   configs/studies/*.yaml           (plain configs; a sweep's base and first cases;
                                          global batch cut to 2 micro-batches per stage)
  td_*   tests/data/{bad,chakra}/*.yaml   (the bad-input tests' configs)
  hw_*   configs/hardware/*.yaml          inlined as cluster.gpu of a small graph config
  md_*   configs/models/*.yaml            inlined as workload.model of a small training
                                          and a small inference config
  res_*  `gcsim check` output of each of the above that loads: every key
         with its default, so mutations reach keys no seed writes

It also writes tests/fuzz/gcsim.dict, libFuzzer's dictionary (keys, units,
edge values). hand_* files are written by hand (fabrics, faults, packet model settings
no example uses) and are left alone. Paths to data files are rewritten to
bare names: the fuzz harness copies those files beside the config it loads.

  tests/fuzz/make_corpus.py [BUILD_DIR]     # default build/; needs python3-yaml
"""
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests/fuzz/corpus"
GCSIM = ROOT / (sys.argv[1] if len(sys.argv) > 1 else "build") / "gcsim"


def strip_comments(text):
    lines = [l for l in text.splitlines() if not l.lstrip().startswith("#")]
    return "\n".join(lines).strip() + "\n"


def bare_paths(text):
    # ../chakra/two_ranks -> two_ranks: data files sit beside the fuzzed config.
    return re.sub(r"(prefix|comm_groups|trace):\s*\S*/([^/\s]+)", r"\1: \2", text)


def indented(text, spaces):
    return "".join(" " * spaces + l + "\n" for l in strip_comments(text).splitlines())


def set_dotted(config, dotted, value):
    parts = dotted.split(".")
    node = config
    for p in parts[:-1]:
        node = node.setdefault(p, {})
    node[parts[-1]] = value


def small_batch(config):
    """A study's training config with its global batch cut to two micro-batches
    per pipeline stage and data-parallel replica: the same shape (every key
    kept), a fraction of the ops, so mutations of it load in milliseconds."""
    w = config.get("workload", {})
    if w.get("kind") != "training":
        return config
    c, par, batch = config["cluster"], w.get("parallelism", {}), w.get("batch", {})
    gpus = c.get("nodes", 1) * c.get("gpus_per_node", 8)
    dp = par.get("dp") or gpus // (par.get("tp", 1) * par.get("pp", 1) * par.get("cp", 1))
    smaller = dp * batch.get("micro", 1) * par.get("pp", 1) * 2
    if "global" in batch and smaller < batch["global"]:
        batch["global"] = smaller
    return config


def study_points(path):
    """A sweep study's base config and its first two cases, as plain configs."""
    study = yaml.safe_load(path.read_text())
    base = study["base"]
    if isinstance(base, str):
        base = yaml.safe_load((path.parent / base).read_text())
    points = [("base", base)]
    for i, case in enumerate(study.get("cases", [])[:2]):
        config = yaml.safe_load(yaml.safe_dump(base, sort_keys=False))
        for k, v in case.get("set", {}).items():
            set_dotted(config, k, v)
        points.append((f"case{i}", config))
    return points


def generated():
    out = {}
    for f in sorted((ROOT / "configs/examples").glob("*.yaml")):
        out[f"ex_{f.stem}"] = bare_paths(strip_comments(f.read_text()))
    for f in sorted((ROOT / "configs/studies").glob("*.yaml")):
        data = yaml.safe_load(f.read_text())
        if "base" in data:
            for name, config in study_points(f):
                out[f"st_{f.stem}_{name}"] = yaml.safe_dump(small_batch(config), sort_keys=False)
        else:
            out[f"st_{f.stem}"] = yaml.safe_dump(small_batch(data), sort_keys=False)
    for sub in ("bad", "chakra"):
        for f in sorted((ROOT / "tests/data" / sub).glob("*.yaml")):
            out[f"td_{sub}_{f.stem}"] = bare_paths(strip_comments(f.read_text()))
    for f in sorted((ROOT / "configs/hardware").glob("*.yaml")):
        out[f"hw_{f.stem}"] = (
            "cluster:\n  nodes: 1\n  gpus_per_node: 2\n  gpu:\n" + indented(f.read_text(), 4) +
            "workload:\n  kind: graph\n  ops:\n"
            "    - {name: g, rank: 0, op: gemm, m: 4096, n: 4096, k: 4096}\n"
            "    - {name: a, op: all_reduce, bytes: 64MiB, after: [g]}\n")
    for f in sorted((ROOT / "configs/models").glob("*.yaml")):
        model = indented(f.read_text(), 4)
        out[f"md_{f.stem}_training"] = (
            "cluster: {gpu: h100-sxm, nodes: 2, gpus_per_node: 8, "
            "scale_out: {topology: fat-tree, nic_bandwidth: 400Gbps}}\n"
            "network: {model: analytical}\n"
            "workload:\n  kind: training\n  model:\n" + model +
            "  batch: {global: 16, micro: 1}\n"
            "  parallelism: {tp: 8, pp: 2, dp: 1, schedule: 1f1b, layer_split: fewer_at_ends}\n"
            "  recompute: selective\n  optimizer: {kind: adam, zero_stage: 1}\n  precision: bf16\n")
        out[f"md_{f.stem}_inference"] = (
            "cluster: {gpu: h200-sxm, nodes: 1, gpus_per_node: 8, scale_out: {topology: none}}\n"
            "workload:\n  kind: inference\n  model:\n" + model +
            "  serving: {tp: 8}\n"
            "  requests: {count: 20, arrival: {kind: poisson, rate: 2}, prompt_len: 1024, "
            "output_len: 64}\n")
    return out


def data_dir():
    """A folder with the data files configs name, as the fuzz harness builds it."""
    d = pathlib.Path(tempfile.mkdtemp(prefix="gcsim-corpus-"))
    for sub in ("configs/examples", "tests/data/chakra", "tests/data/bad"):
        for f in (ROOT / sub).iterdir():
            if f.is_file() and f.suffix != ".yaml":
                shutil.copy(f, d / f.name)
    return d


def resolved(text, scratch):
    """`gcsim check`'s printout of a config, doc comments dropped; None if it does not load."""
    path = scratch / "config.yaml"
    path.write_text(text)
    r = subprocess.run([str(GCSIM), "check", str(path)], capture_output=True, text=True,
                       cwd=ROOT, timeout=120)
    if r.returncode != 0:
        return None
    lines = [re.sub(r"\s+# .*$", "", l) for l in r.stdout.splitlines()
             if not l.lstrip().startswith("#")]
    return "\n".join(lines) + "\n"


def keys_of(node, out):
    if isinstance(node, dict):
        for k, v in node.items():
            out.add(str(k))
            keys_of(v, out)
    elif isinstance(node, list):
        for v in node:
            keys_of(v, out)


def write_dictionary():
    """libFuzzer's dictionary (-dict=): every key in the corpus, every unit, edge values."""
    keys = set()
    for f in CORPUS.glob("*.yaml"):
        try:
            keys_of(yaml.safe_load(f.read_text()), keys)
        except yaml.YAMLError:
            pass
    units = ["B", "KiB", "MiB", "GiB", "TiB", "KB", "MB", "GB", "TB", "bps", "Gbps", "Tbps",
             "B/s", "GB/s", "TB/s", "GiB/s", "ps", "ns", "us", "ms", "s", "min", "h",
             "TF/s", "PF/s", "TFLOP/s"]
    edges = ["0", "-1", "1e308", "1e-300", "nan", ".inf", "9223372036854775807",
             "9223372036854775808", "2147483648", "4294967297", "/dev/zero", "106d"]
    lines = [f'"{k}: "' for k in sorted(keys) if k.isprintable() and '"' not in k and "\\" not in k]
    lines += [f'"{u}"' for u in units] + [f'"{e}"' for e in edges]
    lines += ['"- "', '"{"', '"}"', '"["', '"]"', '"&a "', '"*a"', '"!!str "', '"\\x0A  "']
    (ROOT / "tests/fuzz/gcsim.dict").write_text(
        "# libFuzzer dictionary, written by tests/fuzz/make_corpus.py\n" + "\n".join(lines) + "\n")


def main():
    CORPUS.mkdir(parents=True, exist_ok=True)
    for old in CORPUS.glob("*.yaml"):
        if not old.name.startswith("hand_"):
            old.unlink()
    configs = generated()
    for name, text in configs.items():
        (CORPUS / f"{name}.yaml").write_text(text)
    scratch = data_dir()
    for f in sorted(CORPUS.glob("*.yaml")):
        if f.stem.startswith("td_bad"):
            continue  # rejected by design
        text = resolved(f.read_text(), scratch)
        if text is not None:
            (CORPUS / f"res_{f.stem}.yaml").write_text(bare_paths(text))
    shutil.rmtree(scratch)
    write_dictionary()
    print(f"{len(list(CORPUS.glob('*.yaml')))} corpus files in {CORPUS}")


if __name__ == "__main__":
    main()
