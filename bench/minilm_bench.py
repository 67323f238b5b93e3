#!/usr/bin/env python3
"""Sentence embeddings with all-MiniLM-L6-v2: brisk against sentence-transformers
on PyTorch (issue 20), on the CPU.

    scripts/fetch-minilm.sh
    /work/venv-torch/bin/python bench/minilm_bench.py --brisk build/bench215/bench/brisk_minilm_bench \
        --model .cache/models/all-MiniLM-L6-v2 --threads 1 [--batches 1,8,32,128] [--quick] [--no-compile]

Each call embeds a batch of sentences of exactly --tokens tokens ([CLS] and
[SEP] included) from their text: tokenization, the encoder, mean pooling and
normalization (PyTorch: SentenceTransformer.encode with that batch size;
brisk: BertTokenizer.encode_batch, BertModel, mean_pool, l2_normalize).
Prints one markdown table row per (library, mode, batch): p50 and p99 call
latency, sentences per second, and brisk's speed against PyTorch's in the
same mode. "compile" is torch.compile of the transformer against
brisk::compile of the forward (their one-off compile times in the last
column). All runs use the same thread count.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

TEXT = ("The committee reviewed the proposal in detail before the vote, and several members raised questions "
        "about the budget, the schedule and the expected benefits for the community. After a long discussion "
        "they agreed to postpone the decision until the engineers had measured the costs again, because nobody "
        "wanted to approve a plan whose numbers might change. Meanwhile the city published its annual report "
        "on transport, housing, schools and parks, which showed that most residents were satisfied with the "
        "services but worried about rising prices and the lack of affordable apartments near the center.")


def make_sentences(tokenizer, tokens, count):
    """`count` different sentences of exactly `tokens` tokens each."""
    words = TEXT.split()
    out = []
    for k in range(count):
        rot = words[k % len(words):] + words[:k % len(words)]
        n = 1
        while True:
            s = " ".join((rot * 4)[:n])
            length = len(tokenizer(s)["input_ids"])
            if length == tokens:
                out.append(s)
                break
            if length > tokens:
                n -= 1
                rot = rot[1:] + rot[:1]  # a different cut of the words
                continue
            n += 1
    return out


def pct(ms, p):
    ms = sorted(ms)
    return ms[min(len(ms) - 1, int(p / 100 * (len(ms) - 1) + 0.5))]


def torch_runs(model_dir, sentences, batches, threads, calls_for, with_compile):
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(threads)
    model = SentenceTransformer(model_dir, device="cpu")
    model.eval()
    out = {}

    def measure(mode, b):
        texts = [sentences[i % len(sentences)] for i in range(b)]
        t0 = time.perf_counter()
        model.encode(texts, batch_size=b, normalize_embeddings=False)
        first = time.perf_counter() - t0
        model.encode(texts, batch_size=b)
        ms = []
        for _ in range(calls_for(b)):
            a = time.perf_counter()
            model.encode(texts, batch_size=b, normalize_embeddings=False)
            ms.append((time.perf_counter() - a) * 1e3)
        out[(mode, b)] = {"p50_ms": pct(ms, 50), "p99_ms": pct(ms, 99),
                          "sentences_per_s": b * 1e3 / statistics.mean(ms), "first_call_s": first}

    with torch.inference_mode():
        for b in batches:
            measure("eager", b)
    if with_compile:
        # (auto_model is a read-only property over .model in sentence-transformers 6:
        # assigning it would register an unused child and compile nothing)
        model[0].model = torch.compile(model[0].model)
        with torch.inference_mode():
            for b in batches:
                measure("compile", b)
    return out, torch.__version__


def brisk_run(binary, model_dir, sentence_file, b, threads, calls, compile_):
    cmd = [binary, "--model", model_dir, "--sentences", sentence_file, "--batch", str(b), "--threads", str(threads),
           "--calls", str(calls)]
    if compile_:
        cmd.append("--compile")
    r = {}
    for line in subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.splitlines():
        k, v = line.split()
        r[k] = float(v)
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brisk", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batches", default="1,8,32,128")
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--quick", action="store_true", help="fewer calls per measurement")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile and brisk::compile")
    args = ap.parse_args()
    batches = [int(b) for b in args.batches.split(",")]

    def calls_for(b):
        budget = 8 if args.quick else 24
        return max(3, min(budget, budget * 8 // b))

    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(args.model)
    sentences = make_sentences(tok, args.tokens, 16)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("\n".join(sentences) + "\n")
        sentence_file = f.name
    try:
        torch_res, torch_version = torch_runs(args.model, sentences, batches, args.threads, calls_for,
                                              not args.no_compile)
        modes = ["eager"] + ([] if args.no_compile else ["compile"])
        brisk_res = {(m, b): brisk_run(args.brisk, args.model, sentence_file, b, args.threads, calls_for(b),
                                       m == "compile")
                     for m in modes for b in batches}
    finally:
        os.unlink(sentence_file)
    for (m, b), r in brisk_res.items():
        assert int(r["tokens"]) == args.tokens, f"brisk tokenized the bench sentence to {r['tokens']} tokens"

    print(f"all-MiniLM-L6-v2, {args.tokens} tokens per sentence, {args.threads} thread(s), "
          f"PyTorch {torch_version} (sentence-transformers)\n")
    print("| mode | batch | PyTorch p50 ms | p99 ms | sent/s | brisk p50 ms | p99 ms | sent/s | brisk speed-up | "
          "compile s (torch / brisk) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for m in modes:
        for b in batches:
            t, k = torch_res[(m, b)], brisk_res[(m, b)]
            first = f"{t['first_call_s']:.1f} / {k['first_call_s']:.1f}" if m == "compile" else ""
            print(f"| {m} | {b} | {t['p50_ms']:.2f} | {t['p99_ms']:.2f} | {t['sentences_per_s']:.1f} | "
                  f"{k['p50_ms']:.2f} | {k['p99_ms']:.2f} | {k['sentences_per_s']:.1f} | "
                  f"{k['sentences_per_s'] / t['sentences_per_s']:.2f}x | {first} |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
