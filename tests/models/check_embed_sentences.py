#!/usr/bin/env python3
"""Runs examples/embed_sentences on tests/models/sentences.txt and checks its
.npy output against sentence-transformers' embeddings
(tests/models/minilm_reference.txt): one row per input line, float32, unit
norm, cosine similarity >= MIN_COS with the reference for every line that
has no backslash escape (those lines are embedded as written, escapes and
all, while the reference decoded them).

    check_embed_sentences.py MIN_COS OUT.npy embed_sentences [options...]

The options are passed on; --input and --output are added. Pure Python (no
NumPy): the .npy header is parsed by hand.
"""
import ast
import math
import os
import struct
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))


def read_npy(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data[:6] == b"\x93NUMPY", "not a .npy file"
    major = data[6]
    if major == 1:
        hlen = struct.unpack("<H", data[8:10])[0]
        start = 10
    else:
        hlen = struct.unpack("<I", data[8:12])[0]
        start = 12
    header = ast.literal_eval(data[start:start + hlen].decode("latin1"))
    assert header["descr"] == "<f4" and not header["fortran_order"], header
    rows, cols = header["shape"]
    assert (start + hlen) % 64 == 0, "header not 64-byte aligned"
    body = data[start + hlen:]
    assert len(body) == rows * cols * 4, (len(body), rows, cols)
    flat = struct.unpack("<%df" % (rows * cols), body)
    return [flat[r * cols:(r + 1) * cols] for r in range(rows)]


def main():
    min_cos, out, binary, *opts = sys.argv[1:]
    # embed_sentences' default model folder: without the model the test
    # skips (CTest's SKIP_RETURN_CODE 77) and says how to get it
    model = os.environ.get("BRISK_MINILM_DIR") or os.path.join(here, "..", "..", ".cache", "models", "all-MiniLM-L6-v2")
    if not os.path.exists(os.path.join(model, "model.safetensors")):
        print(f"SKIP: no all-MiniLM-L6-v2 in {os.path.normpath(model)} (scripts/fetch-minilm.sh installs it)")
        sys.exit(77)
    sentences = os.path.join(here, "sentences.txt")
    subprocess.run([binary, *opts, "--input", sentences, "--output", out], check=True)
    got = read_npy(out)
    with open(sentences, encoding="utf-8", newline="\n") as f:
        lines = [l.rstrip("\n") for l in f]
    ref = []
    with open(os.path.join(here, "minilm_reference.txt"), encoding="utf-8") as f:
        for l in f:
            if l.startswith("emb "):
                ref.append([float(x) for x in l.split()[2:]])
    assert len(got) == len(lines) == len(ref), (len(got), len(lines), len(ref))
    worst, checked = 1.0, 0
    for i, (g, r, s) in enumerate(zip(got, ref, lines)):
        norm = math.sqrt(sum(x * x for x in g))
        assert abs(norm - 1) < 1e-4, f"row {i} has norm {norm}"
        if "\\" in s:
            continue
        cos = sum(a * b for a, b in zip(g, r)) / norm / math.sqrt(sum(x * x for x in r))
        assert cos >= float(min_cos), f"line {i + 1} ({s[:40]!r}): cosine {cos} < {min_cos}"
        worst = min(worst, cos)
        checked += 1
    print(f"{checked} of {len(lines)} lines checked against sentence-transformers: worst cosine {worst:.9f}")


if __name__ == "__main__":
    main()
