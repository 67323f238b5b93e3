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

On a GPU (issue 20's GPU figure: batch-1 latency with graph replay at most
half of PyTorch eager's, and no worse than PyTorch with CUDA graphs):

    python3 bench/minilm_bench.py --device cuda --brisk BIN/brisk_minilm_bench --model DIR [--batches 1,8]

times, per batch, every call from the sentences' text to normalized
embeddings on the CPU (tokenization, the copy of the ids to the device, the
encoder, pooling, the copy back, which waits for the device): PyTorch
"ST.encode" (SentenceTransformer.encode, as on the CPU), PyTorch "eager" (the
tokenizer, the transformers BertModel, mean pooling and normalization called
directly: the same steps as brisk's call), PyTorch "CUDA graph" (that
forward captured in one torch.cuda.CUDAGraph for the batch and length, with
static inputs that each call copies the tokenized batch into before
replay), brisk "eager" and brisk "graphs" (brisk_minilm_bench --device cuda
[--graphs]: one brisk::cuda::GraphRunner). It also checks brisk's embeddings
(both modes) and the PyTorch graph's against SentenceTransformer.encode's on
the GPU, on the bench sentences and on 16 varied ones of different lengths
(a padded batch): the minimum cosine similarity (> 0.9999 expected; the exit
status is 1 below that or when a run failed). tools/gpu/minilm_random.py
makes a model folder with the model's architecture and random weights where
the real one cannot be copied.
--cpu-check runs that flow on the CPU (PyTorch's graph skipped, brisk's
--graphs padding on the CPU), to check the script on a machine without a GPU.
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


# ---- --device cuda ------------------------------------------------------------------

# The accuracy check's second set: different words and lengths (so the batch
# is padded and the attention mask matters), where the bench sentences are
# rotations of one text and embed almost alike.
VARIED = [
    "A man is playing a guitar on the stage.",
    "The stock market fell sharply on Tuesday after the central bank raised interest rates again.",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "Where is the nearest train station?",
    "She baked a chocolate cake for her grandmother's ninetieth birthday, and the whole family came to celebrate.",
    "Quantum computers use qubits, which can represent zero and one at the same time.",
    "The café on the corner serves a naïve but charming crème brûlée.",
    "Rust and C++ both give the programmer control over memory layout.",
    "It rained all weekend, so we stayed inside and played board games.",
    "The patient was given antibiotics to treat the infection.",
    "Football fans celebrated in the streets until late at night.",
    "Mount Everest is the highest mountain above sea level.",
    "Please remember to submit your expense report by Friday.",
    "A neural network learns by adjusting its weights to reduce the loss.",
    "The old library downtown will close for renovation next spring, and its books will move to a temporary "
    "building near the river.",
    "Cats sleep for most of the day.",
]


def cosines(a, b):
    """(minimum row cosine similarity, max abs difference) of two (n, d) arrays."""
    import numpy as np
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return float(cos.min()), float(np.abs(a - b).max())


def torch_graph(hf, tokenize, pool, texts):
    """A call that embeds `texts` through one CUDA graph of the forward: the
    tokenized batch is copied into static device inputs, the graph replayed,
    its output copied to the CPU (a blocking copy)."""
    import torch
    enc = tokenize(texts)
    static_ids = enc["input_ids"].to("cuda")
    static_mask = enc["attention_mask"].to("cuda")

    def fwd():
        return pool(hf(input_ids=static_ids, attention_mask=static_mask).last_hidden_state, static_mask)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        # transformers drops the attention mask when nothing is padded, but
        # builds it while a stream is captured (it cannot read the values
        # then): one warm-up with a padded column runs what the capture runs
        last = static_mask[:, -1].clone()
        static_mask[:, -1] = 0
        fwd()
        static_mask[:, -1] = last
        for _ in range(2):
            fwd()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = fwd()
    torch.cuda.synchronize()

    def call():
        enc = tokenize(texts)
        static_ids.copy_(enc["input_ids"])
        static_mask.copy_(enc["attention_mask"])
        graph.replay()
        return static_out.cpu()

    return call


def gpu_runs(args, tok, sentences, sentence_file):
    """The GPU comparison (module docstring); prints its table, returns the exit status."""
    import numpy as np
    import torch
    import torch.nn.functional as F
    from sentence_transformers import SentenceTransformer

    dev = "cpu" if args.cpu_check else "cuda"
    use_cuda = dev == "cuda"
    if use_cuda and not torch.cuda.is_available():
        print("minilm_bench: --device cuda, but torch.cuda.is_available() is False", file=sys.stderr)
        return 1
    torch.set_num_threads(args.threads)
    batches = [int(b) for b in args.batches.split(",")]
    budget = 30 if args.quick else 100

    def calls_for(b):
        return max(10, min(budget, budget * 8 // b))

    st = SentenceTransformer(args.model, device=dev)
    st.eval()
    hf = st[0].model  # the transformers BertModel that SentenceTransformer runs
    max_length = st.max_seq_length or 512

    def tokenize(texts):
        return tok(texts, padding=True, truncation=True, max_length=max_length, return_tensors="pt")

    def pool(hidden, mask):  # sentence-transformers' mean pooling, then its Normalize
        m = mask.unsqueeze(-1).to(hidden.dtype)
        return F.normalize((hidden * m).sum(1) / torch.clamp(m.sum(1), min=1e-9), p=2, dim=1)

    res, cos, errors, notes = {}, {}, [], []

    def measure(key, b, call):
        """p50/p99 of calls_for(b) calls of `call`, after two untimed ones."""
        try:
            t0 = time.perf_counter()
            call()
            first = time.perf_counter() - t0
            call()
            ms = []
            for _ in range(calls_for(b)):
                a = time.perf_counter()
                call()
                ms.append((time.perf_counter() - a) * 1e3)
            res[key + (b,)] = {"p50_ms": pct(ms, 50), "p99_ms": pct(ms, 99),
                               "sentences_per_s": b * 1e3 / statistics.mean(ms), "first_call_s": first}
        except Exception as e:  # one failed measurement must not lose the others
            errors.append(f"{' '.join(key)} batch {b}: {type(e).__name__}: {e}")

    def rows(texts_of, b):
        return [i % len(texts_of) for i in range(b)]

    with torch.inference_mode():
        # the references: SentenceTransformer.encode on the device
        refs = {name: np.asarray(st.encode(texts, batch_size=len(texts), convert_to_numpy=True), dtype=np.float64)
                for name, texts in (("bench", sentences), ("varied", VARIED))}
        for b in batches:
            texts = [sentences[i] for i in rows(sentences, b)]
            measure(("PyTorch", "ST.encode"), b, lambda: st.encode(texts, batch_size=b, normalize_embeddings=False))

            def eager():
                enc = tokenize(texts)
                ids, mask = enc["input_ids"].to(dev), enc["attention_mask"].to(dev)
                return pool(hf(input_ids=ids, attention_mask=mask).last_hidden_state, mask).cpu()

            measure(("PyTorch", "eager"), b, eager)
            if not use_cuda:
                continue
            try:
                call = torch_graph(hf, tokenize, pool, texts)
                cos[("bench", "PyTorch CUDA graph", b)] = cosines(call().numpy(), refs["bench"][rows(sentences, b)])
            except Exception as e:
                errors.append(f"PyTorch CUDA graph batch {b}: {type(e).__name__}: {e}")
                continue
            measure(("PyTorch", "CUDA graph"), b, call)
            del call
        if use_cuda:
            try:
                call = torch_graph(hf, tokenize, pool, VARIED)
                cos[("varied", "PyTorch CUDA graph", len(VARIED))] = cosines(call().numpy(), refs["varied"])
                del call
            except Exception as e:
                errors.append(f"PyTorch CUDA graph, varied sentences: {type(e).__name__}: {e}")
        if use_cuda:
            torch.cuda.synchronize()

    # brisk: eager and --graphs per batch on the bench sentences (timed), then
    # both on the varied sentences (accuracy only); each run writes its last
    # call's embeddings (--dump)
    with tempfile.TemporaryDirectory() as tmp:
        varied_file = os.path.join(tmp, "varied.txt")
        with open(varied_file, "w", encoding="utf-8") as f:
            f.write("\n".join(VARIED) + "\n")
        runs = [("bench", mode, b, True) for mode in ("eager", "graphs") for b in batches]
        runs += [("varied", mode, len(VARIED), False) for mode in ("eager", "graphs")]
        for texts_name, mode, b, timed in runs:
            dump = os.path.join(tmp, f"{texts_name}-{mode}-{b}.f32")
            cmd = [args.brisk, "--model", args.model, "--sentences",
                   sentence_file if texts_name == "bench" else varied_file, "--batch", str(b),
                   "--threads", str(args.threads), "--calls", str(calls_for(b) if timed else 2), "--device", dev,
                   "--dump", dump] + (["--graphs"] if mode == "graphs" else [])
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.brisk_timeout)
                notes += [f"brisk {mode} batch {b} ({texts_name}): {line.strip()}" for line in p.stderr.splitlines()
                          if "GraphRunner" in line]
                if p.returncode != 0:
                    raise RuntimeError(f"exit status {p.returncode}: {p.stderr.strip()[-2000:]}")
                r = {}
                for line in p.stdout.splitlines():
                    parts = line.split()
                    if len(parts) == 2:
                        r[parts[0]] = float(parts[1])
                if timed:
                    if int(r.get("tokens", -1)) != args.tokens:
                        raise RuntimeError(f"brisk tokenized the bench sentence to {r.get('tokens')} tokens")
                    res[("brisk", mode, b)] = r
                out = np.fromfile(dump, dtype="<f4").astype(np.float64).reshape(b, -1)
                texts_of = sentences if texts_name == "bench" else VARIED
                cos[(texts_name, f"brisk {mode}", b)] = cosines(out, refs[texts_name][rows(texts_of, b)])
            except Exception as e:
                errors.append(f"brisk {mode} batch {b} ({texts_name}): {type(e).__name__}: {e}")

    import sentence_transformers
    import transformers
    device_name = torch.cuda.get_device_name() if use_cuda else "the CPU (--cpu-check)"
    print(f"all-MiniLM-L6-v2's architecture ({args.model}), {args.tokens} tokens per sentence, {device_name}, "
          f"PyTorch {torch.__version__}, transformers {transformers.__version__}, "
          f"sentence-transformers {sentence_transformers.__version__}\n")
    print("| library | mode | batch | p50 ms | p99 ms | sent/s | p50 / PyTorch eager | p50 / PyTorch CUDA graph |")
    print("|---|---|---|---|---|---|---|---|")
    for b in batches:
        for lib, mode in (("PyTorch", "ST.encode"), ("PyTorch", "eager"), ("PyTorch", "CUDA graph"),
                          ("brisk", "eager"), ("brisk", "graphs")):
            r = res.get((lib, mode, b))
            if r is None:
                continue
            rel = []
            for base in (("PyTorch", "eager", b), ("PyTorch", "CUDA graph", b)):
                t = res.get(base)
                rel.append(f"{r['p50_ms'] / t['p50_ms']:.2f}x" if t else "n/a")
            print(f"| {lib} | {mode} | {b} | {r['p50_ms']:.3f} | {r['p99_ms']:.3f} | {r['sentences_per_s']:.1f} | "
                  f"{rel[0]} | {rel[1]} |")
    print()
    g, e, cg = (res.get(k + (1,)) for k in (("brisk", "graphs"), ("PyTorch", "eager"), ("PyTorch", "CUDA graph")))
    if g and e:
        print(f"batch 1, brisk graphs / PyTorch eager: {g['p50_ms']:.3f} / {e['p50_ms']:.3f} ms = "
              f"{g['p50_ms'] / e['p50_ms']:.2f}x (goal <= 0.50x): {'met' if g['p50_ms'] <= 0.5 * e['p50_ms'] else 'NOT met'}")
    if g and cg:
        print(f"batch 1, brisk graphs / PyTorch CUDA graph: {g['p50_ms']:.3f} / {cg['p50_ms']:.3f} ms = "
              f"{g['p50_ms'] / cg['p50_ms']:.2f}x (goal <= 1.00x): {'met' if g['p50_ms'] <= cg['p50_ms'] else 'NOT met'}")
    status = 0
    if cos:
        v = refs["varied"]
        between = (v @ v.T) / np.outer(np.linalg.norm(v, axis=1), np.linalg.norm(v, axis=1))
        print(f"\naccuracy against SentenceTransformer.encode on {dev}: cosine similarity per sentence "
              f"(> 0.9999 expected; two different varied sentences: at most {between[~np.eye(len(v), dtype=bool)].max():.4f})")
        for (texts_name, what, b), (lo, diff) in sorted(cos.items()):
            print(f"  {texts_name} sentences, {what}, batch {b}: min cosine {lo:.7f}, max |difference| {diff:.2e}")
        lowest = min(lo for lo, _ in cos.values())
        print(f"  minimum: {lowest:.7f} ({'ok' if lowest > 0.9999 else 'TOO LOW'})")
        status = 0 if lowest > 0.9999 else 1
    for n in notes:
        print(n)
    for err in errors:
        print(f"FAILED: {err}")
    sys.stdout.flush()
    return 1 if errors else status


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brisk", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batches", default=None, help="default 1,8,32,128 (--device cuda: 1,8)")
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--quick", action="store_true", help="fewer calls per measurement")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile and brisk::compile")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                    help="cuda: PyTorch eager and CUDA graph against brisk eager and --graphs (batches default 1,8)")
    ap.add_argument("--cpu-check", action="store_true",
                    help="with --device cuda: run that flow on the CPU, to check the script without a GPU")
    ap.add_argument("--brisk-timeout", type=float, default=180, help="--device cuda: seconds per brisk run")
    args = ap.parse_args()
    if args.batches is None:
        args.batches = "1,8" if args.device == "cuda" else "1,8,32,128"
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
    if args.device == "cuda":
        try:
            return gpu_runs(args, tok, sentences, sentence_file)
        finally:
            os.unlink(sentence_file)
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
    sys.exit(main())
