#!/usr/bin/env python3
"""Reference token ids and embeddings of all-MiniLM-L6-v2 for brisk's tests.

Runs sentence-transformers (on PyTorch 2.x) over tests/models/sentences.txt
(one sentence per line; backslash escapes \\t \\n \\r \\\\ decoded) and writes
tests/models/minilm_reference.txt: for each sentence, a line
`ids N id...` (the tokenizer's ids, truncated to 256 tokens) and a line
`emb 384 v...` (the normalized float32 embedding). Rerun it when the sentence
list changes:

    scripts/fetch-minilm.sh            # prints the model folder
    /work/venv-torch/bin/python tools/models/minilm_reference.py --model DIR
"""
import argparse
import os
import pathlib

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
import sentence_transformers  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402

root = pathlib.Path(__file__).resolve().parents[2]


def decode(line):
    out, i = [], 0
    while i < len(line):
        c = line[i]
        if c == "\\" and i + 1 < len(line):
            out.append({"t": "\t", "n": "\n", "r": "\r", "\\": "\\"}[line[i + 1]])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True, help="folder with model.safetensors (scripts/fetch-minilm.sh prints it)")
    ap.add_argument("--sentences", default=str(root / "tests/models/sentences.txt"))
    ap.add_argument("--out", default=str(root / "tests/models/minilm_reference.txt"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    with open(args.sentences, encoding="utf-8", newline="\n") as f:
        sentences = [decode(l.rstrip("\n")) for l in f]
    model = SentenceTransformer(args.model, device="cpu")
    assert model.max_seq_length == 256, model.max_seq_length
    tok = model.tokenizer
    emb = model.encode(sentences, batch_size=16, convert_to_numpy=True, normalize_embeddings=False)
    with open(args.out, "w", encoding="utf-8", newline="\n") as f:
        f.write(f"# all-MiniLM-L6-v2 reference: sentence-transformers {sentence_transformers.__version__}, "
                f"torch {torch.__version__}, tokenizer {type(tok).__name__}; written by tools/models/minilm_reference.py\n")
        for s, e in zip(sentences, emb):
            ids = tok(s, truncation=True, max_length=256)["input_ids"]
            f.write("ids %d %s\n" % (len(ids), " ".join(map(str, ids))))
            f.write("emb %d %s\n" % (len(e), " ".join("%.9g" % v for v in e)))
    print(f"wrote {len(sentences)} sentences to {args.out}")


if __name__ == "__main__":
    main()
