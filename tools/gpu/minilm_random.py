#!/usr/bin/env python3
"""Writes an all-MiniLM-L6-v2 model folder with seeded random weights, for a
lent GPU machine that the real 87 MB model.safetensors cannot travel to.

    python3 tools/gpu/minilm_random.py OUT_DIR [--seed 0] [--std 0.02]

OUT_DIR gets a model.safetensors with the same tensor names, shapes and
dtypes as sentence-transformers/all-MiniLM-L6-v2 (read from
tools/gpu/minilm/manifest.json, made from the real file), and copies of the
model package's small files (tools/gpu/minilm/: config.json, the tokenizer's
vocab.txt and tokenizer.json, sentence-transformers' module files), so that
sentence-transformers, transformers and brisk all load it as they load the
real model (bench/minilm_bench.py --device cuda runs on it).

The weights: matrices and embeddings normal * std (default 0.02, BERT's
initializer range), biases normal * std / 2, LayerNorm weight 1 and bias 0,
the position_ids buffer 0..511. (At 0.02 attention is almost uniform and
sentences with the same words embed almost alike, so an accuracy check on
this model is a weak one: --std 0.05 makes a 1.25x error in the attention
scale move the embeddings' cosine similarity by 1e-3 rather than 5e-6, while
float32 rounding stays below 1e-7.) The same seed gives the same file with the same
backend: numpy's Generator(PCG64) when numpy is there, else torch's CPU
generator (the two backends draw different numbers). The file is written
with the safetensors package when it is installed, else by the small
writer below (the format is an 8-byte header length, a JSON header, the
raw little-endian data).

The files in tools/gpu/minilm/ other than manifest.json are copied unchanged
from the sentence-transformers/all-MiniLM-L6-v2 model package, whose model
card (README.md) declares `license: apache-2.0` (Apache License 2.0); see
tools/gpu/minilm/README.md.
"""
import argparse
import json
import os
import shutil
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(HERE, "minilm")
SMALL_FILES = ["config.json", "vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
               "modules.json", "sentence_bert_config.json", "config_sentence_transformers.json",
               "1_Pooling/config.json"]
# the same WordPiece vocabulary as tests/models' (one copy in the tree)
SOURCES = {"vocab.txt": os.path.join(HERE, "..", "..", "tests", "models", "vocab.txt")}
DTYPES = {"F32": ("float32", 4), "I64": ("int64", 8)}


def kind(name, std=0.02):
    """How a tensor is initialized: 'arange', 'ones', 'zeros' or a standard deviation."""
    if name.endswith("position_ids"):
        return "arange"
    if "LayerNorm" in name:
        return "ones" if name.endswith(".weight") else "zeros"
    if name.endswith(".bias"):
        return std / 2
    return std


def numpy_tensors(manifest, seed, std):
    import numpy as np
    rng = np.random.default_rng(seed)
    out = {}
    for name, spec in manifest.items():
        dtype, shape, k = DTYPES[spec["dtype"]][0], tuple(spec["shape"]), kind(name, std)
        if k == "arange":
            a = np.broadcast_to(np.arange(shape[-1], dtype=dtype), shape)
        elif k == "ones":
            a = np.ones(shape, dtype=dtype)
        elif k == "zeros":
            a = np.zeros(shape, dtype=dtype)
        else:
            a = (rng.standard_normal(shape, dtype=np.float32) * np.float32(k)).astype(dtype)
        out[name] = np.ascontiguousarray(a)
    return out


def torch_tensors(manifest, seed, std):
    import torch
    g = torch.Generator().manual_seed(seed)
    dtypes = {"F32": torch.float32, "I64": torch.int64}
    out = {}
    for name, spec in manifest.items():
        dtype, shape, k = dtypes[spec["dtype"]], tuple(spec["shape"]), kind(name, std)
        if k == "arange":
            t = torch.arange(shape[-1], dtype=dtype).expand(shape)
        elif k == "ones":
            t = torch.ones(shape, dtype=dtype)
        elif k == "zeros":
            t = torch.zeros(shape, dtype=dtype)
        else:
            t = (torch.randn(shape, generator=g, dtype=torch.float32) * k).to(dtype)
        out[name] = t.contiguous()
    return out


def raw_bytes(t):
    """The little-endian bytes of a numpy array or a torch CPU tensor."""
    if hasattr(t, "tobytes"):  # numpy
        return t.astype(t.dtype.newbyteorder("<"), copy=False).tobytes()
    import ctypes
    t = t.contiguous()  # a CPU tensor (x86 and ARM hosts are little-endian)
    return ctypes.string_at(t.data_ptr(), t.numel() * t.element_size())


def write_builtin(path, tensors, manifest, metadata):
    header = {"__metadata__": metadata}
    offset = 0
    blobs = []
    for name, spec in manifest.items():
        data = raw_bytes(tensors[name])
        n = 1
        for d in spec["shape"]:
            n *= d
        assert len(data) == n * DTYPES[spec["dtype"]][1], name
        header[name] = {"dtype": spec["dtype"], "shape": spec["shape"], "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)  # the data starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="the model folder to write (created; its files are overwritten)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--std", type=float, default=0.02, help="of the matrices and embeddings (biases: half)")
    ap.add_argument("--backend", choices=["auto", "numpy", "torch"], default="auto",
                    help="what draws the numbers (auto: numpy if importable, else torch)")
    ap.add_argument("--writer", choices=["auto", "safetensors", "builtin"], default="auto",
                    help="what writes the file (auto: the safetensors package if importable)")
    args = ap.parse_args()

    with open(os.path.join(PACKAGE, "manifest.json")) as f:
        m = json.load(f)
    manifest, metadata = m["tensors"], m.get("metadata") or {"format": "pt"}
    for name, spec in manifest.items():
        if spec["dtype"] not in DTYPES:
            sys.exit(f"minilm_random: {name} has dtype {spec['dtype']}, which this script does not write")

    backend = args.backend
    if backend == "auto":
        try:
            import numpy  # noqa: F401
            backend = "numpy"
        except ImportError:
            backend = "torch"
            try:
                import torch  # noqa: F401
            except ImportError:
                sys.exit("minilm_random: needs numpy or torch")
    make = numpy_tensors if backend == "numpy" else torch_tensors
    tensors = make(manifest, args.seed, args.std)

    os.makedirs(os.path.join(args.out, "1_Pooling"), exist_ok=True)
    for rel in SMALL_FILES:
        shutil.copyfile(SOURCES.get(rel, os.path.join(PACKAGE, rel)), os.path.join(args.out, rel))
    path = os.path.join(args.out, "model.safetensors")
    writer = args.writer
    if writer in ("auto", "safetensors"):
        try:
            if backend == "numpy":
                from safetensors.numpy import save_file
            else:
                from safetensors.torch import save_file
            writer = "safetensors"
        except ImportError:
            if writer == "safetensors":
                raise
            writer = "builtin"
    if writer == "safetensors":
        save_file(tensors, path, metadata=metadata)
    else:
        write_builtin(path, tensors, manifest, metadata)
    size = os.path.getsize(path)
    print(f"minilm_random: wrote {len(tensors)} tensors ({size / 2**20:.1f} MiB, {backend} seed {args.seed} std {args.std}, "
          f"{writer} writer) and {len(SMALL_FILES)} small files to {args.out}")


if __name__ == "__main__":
    main()
