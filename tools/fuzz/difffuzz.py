#!/usr/bin/env python3
"""Differential fuzzer: random small programs run in brisk and in PyTorch.

  difffuzz.py --seed 1 --cases 3000                 # the CI sample
  difffuzz.py --seed 7 --minutes 30                 # a long run
  difffuzz.py --seed 1 --case 123                   # reproduce one case (C++ and Python source, both results)
  difffuzz.py --seed 1 --cases 500 --family views   # one family only

Each case is generated from (seed, case), run in torch while it is built,
then sent as one JSON line to brisk_fuzz_runner; the two results are
compared (fuzzlib/compare.py) and divergences grouped by signature
family:op:kind:dtypes. With --allowlist, the exit status is 1 only for
signatures the list does not name. See docs/design/fuzzing.md.
"""
import argparse
import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fuzzlib import gen  # noqa: E402  (imports torch)
from fuzzlib.builder import TORCH_VERSION  # noqa: E402
from fuzzlib.compare import compare, signature, Divergence  # noqa: E402
from fuzzlib.repro import cpp_source, python_source  # noqa: E402

import torch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def default_runner():
    for preset in ("dev", "release", "asan"):
        p = os.path.join(ROOT, "build", preset, "tools", "fuzz", "brisk_fuzz_runner")
        if os.path.exists(p):
            return p
    return None


class Runner:
    """The brisk runner process: one JSON line in, one out; restarted after a crash."""

    def __init__(self, path, timeout):
        self.path, self.timeout = path, timeout
        self.proc = None
        # O_APPEND, so that truncating it under the running child keeps its writes at the start.
        fd, path = tempfile.mkstemp(prefix="difffuzz-runner-")
        os.close(fd)
        self.err = open(path, "a+b")
        os.unlink(path)
        self.restarts = 0
        self.calls = 0

    def start(self):
        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
        self.proc = subprocess.Popen([self.path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err,
                                     env=env, bufsize=0)

    def stop(self):
        if self.proc:
            try:
                self.proc.kill()
            except OSError:
                pass
            self.proc.wait()
            self.proc = None

    def run(self, program):
        """The runner's result for one program, or {"crash": why}."""
        if self.proc is None:
            self.start()
        self.calls += 1
        if self.calls % 500 == 0:  # the runner's progress lines: only the last ones matter
            self.err.truncate(0)
        line = (json.dumps(program, separators=(",", ":"), allow_nan=False) + "\n").encode()
        try:
            self.proc.stdin.write(line)
            self.proc.stdin.flush()
        except BrokenPipeError:
            return self._died()
        out = b""
        deadline = time.time() + self.timeout
        fd = self.proc.stdout.fileno()
        while not out.endswith(b"\n"):
            left = deadline - time.time()
            if left <= 0:
                self.stop()
                self.restarts += 1
                return {"crash": "timeout after %ds" % self.timeout}
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return self._died()
            out += chunk
        return json.loads(out.decode())

    def _died(self):
        rc = self.proc.wait()
        self.proc = None
        self.restarts += 1
        why = ("signal %s" % signal.Signals(-rc).name) if rc < 0 else "exit status %d" % rc
        self.err.seek(0)
        lines = self.err.read().decode(errors="replace").strip().splitlines()
        self.err.seek(0)
        self.err.truncate()
        where = [ln for ln in lines if ln.startswith("@")][-1:]
        other = [ln for ln in lines if not ln.startswith("@")][-3:]
        return {"crash": why + (": " + " | ".join(other) if other else ""),
                "where": where[0].split(" ", 1)[1] if where else None}


# Nothing to compare with: old torch lacks many CPU kernels for the 16-bit
# floats, and an internal assert is a bug of torch.
REF_SKIP = re.compile(r"not implemented for '(Half|BFloat16)'|INTERNAL ASSERT FAILED")


def program_size(builder):
    n = sum(max(1, len(s["data"])) for s in builder.inputs)
    return len(builder.ops) * 100 + n


def run_case(runner, seed, case, family=None):
    """(builder, ref, got, divergences) for one case; builder None when the
    family filter drops it, ref None when torch cannot run it."""
    b, ref = gen.generate(seed, case)
    if family and b.family not in family:
        return None, None, None, []
    if ref is None:
        if not b.crash_only:
            return b, None, None, []
        got = runner.run(b.program(case))
        divs = crash_divergences(b, got)
        if not divs and got.get("status") == "exception":
            divs = [Divergence("non-brisk-exception", got.get("failed_op"), got.get("msg", ""))]
        return b, None, got, divs
    if ref.get("status") == "error" and REF_SKIP.search(ref.get("msg", "")):
        b.skip_reason = "torch cannot run it: " + ref["msg"]
        return b, None, None, []
    prog = b.program(case)
    got = runner.run(prog)
    return b, ref, got, crash_divergences(b, got) or compare(b, ref, got)


def crash_divergences(b, got):
    """A crash, blamed on the op the runner was in (its last progress line),
    or on the focus op for a crash in a backward pass."""
    if "crash" not in got:
        return []
    where = got.get("where") or ""
    if where.startswith("op "):
        return [Divergence("crash", int(where[3:]), got["crash"])]
    kind = {"bw": "grad-crash", "bw2": "grad2-crash"}.get(where, "crash")
    return [Divergence(kind, b.focus, got["crash"])]


def load_allowlist(path):
    entries = {}
    if not path:
        return entries
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            sig, _, reason = line.partition(" ")
            entries[sig] = reason.strip()
    return entries


def summarize(groups, allow, out=sys.stdout):
    new = {s: g for s, g in groups.items() if s not in allow}
    known = {s: g for s, g in groups.items() if s in allow}
    print("", file=out)
    for title, gs in (("NEW divergences", new), ("known divergences (allowlist)", known)):
        if not gs:
            continue
        print("%s: %d signature(s)" % (title, len(gs)), file=out)
        for sig, g in sorted(gs.items(), key=lambda kv: -kv[1]["count"]):
            print("  %5d  %-70s  --case %d  %s" % (g["count"], sig, g["case"], g["detail"][:150]), file=out)
    return new


def repro(runner, seed, case):
    b, ref, got, divs = run_case(runner, seed, case)
    print("# family %s, case %d (seed %d), torch %s" % (b.family, case, seed, torch.__version__))
    if ref is None and not b.crash_only:
        print("# skipped: %s" % getattr(b, "skip_reason", "?"))
        return 0
    if ref is None:
        print("# torch cannot run the last op (%s): brisk is only checked for crashes" % b.skip_reason)
    print("# ---- program (runner input) ----")
    print(json.dumps(b.program(case), allow_nan=False))
    print("# ---- C++ (brisk) ----")
    print(cpp_source(b))
    print("# ---- Python (torch) ----")
    print(python_source(b))
    print("# ---- torch result ----")
    print(json.dumps(ref, default=str)[:6000])
    print("# ---- brisk result ----")
    print(json.dumps(got)[:6000])
    print("# ---- divergences ----")
    if not divs:
        print("none")
    for d in divs:
        print("%s  %s" % (signature(b, d), d))
    return 1 if divs else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runner", default=None, help="brisk_fuzz_runner (default: build/<preset>/tools/fuzz/)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=None, help="number of cases (default 3000)")
    ap.add_argument("--start", type=int, default=0, help="first case index")
    ap.add_argument("--minutes", type=float, default=None, help="run for this long instead of --cases")
    ap.add_argument("--case", type=int, default=None, help="reproduce one case")
    ap.add_argument("--family", action="append", help="only these families (repeatable)")
    ap.add_argument("--allowlist", default=None, help="known divergences: exit 1 only on others")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per case before the runner is killed")
    ap.add_argument("--json", default=None, help="write every divergence as JSON lines here")
    ap.add_argument("--verbose", "-v", action="store_true", help="print each divergence as it happens")
    ap.add_argument("--print-new", action="store_true",
                    help="print the new signatures as allowlist lines (reason TODO) to triage")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--deadline", type=float, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()

    runner_path = args.runner or default_runner()
    if not runner_path or not os.path.exists(runner_path):
        sys.exit("difffuzz: brisk_fuzz_runner not found (build the target, or pass --runner)")
    args.runner = runner_path
    if args.case is None and not args.worker:
        return supervise(args)
    torch.set_num_threads(1)
    runner = Runner(runner_path, args.timeout)
    try:
        if args.case is not None:
            return repro(runner, args.seed, args.case)
        return work(runner, args)
    finally:
        runner.stop()


def work(runner, args):
    """The worker: runs cases from --start on and writes one JSON line per
    case to stdout (the supervisor aggregates them)."""
    case, stop = args.start, args.start + args.cases
    while case < stop and (args.deadline is None or time.time() < args.deadline):
        b, ref, got, divs = run_case(runner, args.seed, case, args.family)
        rec = {"case": case}
        if b is None:
            rec["filtered"] = True
        elif ref is None and not b.crash_only:
            rec["skipped"] = True
        else:
            rec.update(family=b.family, crash_only=ref is None,
                       ref_error=bool(ref and ref.get("status") == "error"))
            if divs:
                rec["divs"] = [[signature(b, d), str(d)] for d in divs]
                rec["size"] = program_size(b)
        print(json.dumps(rec), flush=True)
        case += 1
    print(json.dumps({"done": True, "restarts": runner.restarts}), flush=True)
    return 0


def supervise(args):
    """Runs the cases in a worker process, restarted after the case it dies
    in: torch itself crashes on a few programs (a SIGSEGV or SIGFPE in its
    kernels), which must not end a long run."""
    allow = load_allowlist(args.allowlist)
    t0 = time.time()
    deadline = t0 + args.minutes * 60 if args.minutes else None
    ncases = args.cases if args.cases is not None else (10 ** 12 if deadline else 3000)
    stop = args.start + ncases
    groups = {}
    stats = {"run": 0, "skipped": 0, "ref_error": 0, "divergent": 0, "crash_only": 0, "restarts": 0}
    fams = {}
    torch_crashes = []
    jf = open(args.json, "w") if args.json else None
    case = args.start
    last_report = t0
    while case < stop and (deadline is None or time.time() < deadline):
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--runner", args.runner, "--seed",
               str(args.seed), "--start", str(case), "--cases", str(stop - case), "--timeout", str(args.timeout)]
        if deadline:
            cmd += ["--deadline", str(deadline)]
        for f in args.family or []:
            cmd += ["--family", f]
        child = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        done = False
        for line in child.stdout:
            rec = json.loads(line)
            if rec.get("done"):
                stats["restarts"] += rec["restarts"]
                done = True
                continue
            case = rec["case"] + 1
            if rec.get("filtered"):
                continue
            if rec.get("skipped"):
                stats["skipped"] += 1
                continue
            stats["run"] += 1
            stats["crash_only"] += rec["crash_only"]
            stats["ref_error"] += rec["ref_error"]
            fams[rec["family"]] = fams.get(rec["family"], 0) + 1
            if "divs" in rec:
                stats["divergent"] += 1
                sig, detail = rec["divs"][0]
                g = groups.setdefault(sig, {"count": 0, "case": rec["case"], "size": rec["size"], "detail": detail})
                g["count"] += 1
                if rec["size"] < g["size"]:
                    g.update(case=rec["case"], size=rec["size"], detail=detail)
                if args.verbose:
                    print("case %d: %s  %s" % (rec["case"], sig, detail), flush=True)
                if jf:
                    jf.write(json.dumps({"seed": args.seed, "case": rec["case"], "signature": sig, "detail": detail,
                                         "all": [d for _, d in rec["divs"]]}) + "\n")
            if time.time() - last_report > 60:
                last_report = time.time()
                print("... %d cases, %d divergent, %d signatures, %.0fs" % (
                    stats["run"], stats["divergent"], len(groups), time.time() - t0), flush=True)
        rc = child.wait()
        if done:
            break
        if rc == 0 or case >= stop:
            break
        # The worker died in `case` (in torch: the brisk runner is a process of its own).
        torch_crashes.append((case, rc))
        case += 1
    elapsed = time.time() - t0
    print("difffuzz: seed %d, cases %d..%d, torch %s, %.1fs: %d run (%d where torch raises, %d that crash torch: "
          "brisk checked for crashes only), %d skipped (torch cannot run them), %d divergent, %d runner restarts" % (
              args.seed, args.start, case - 1, torch.__version__, elapsed, stats["run"], stats["ref_error"],
              stats["crash_only"], stats["skipped"], stats["divergent"], stats["restarts"]))
    print("families: " + ", ".join("%s %d" % kv for kv in sorted(fams.items())))
    if torch_crashes:
        print("torch itself crashed (not compared; repro with --case): " + ", ".join(
            "case %d (%s)" % (c, ("signal %s" % signal.Signals(-rc).name) if rc < 0 else "exit %d" % rc)
            for c, rc in torch_crashes))
    new = summarize(groups, allow)
    if allow:
        unseen = [s for s in allow if s not in groups]
        if unseen:
            print("\nallowlisted signatures not seen in this run (fixed, or not drawn by this sample): %d" % len(unseen))
    if jf:
        jf.close()
    if new and args.print_new:
        print("\n# allowlist lines for the new signatures (write the reasons):")
        for sig, g in sorted(new.items()):
            print("%s TODO (--seed %d --case %d: %s)" % (sig, args.seed, g["case"], g["detail"][:120]))
    if new:
        print("\ndifffuzz: %d NEW divergence signature(s); reproduce with: difffuzz.py --seed %d --case N" % (
            len(new), args.seed))
        return 1
    print("\ndifffuzz: no new divergences")
    return 0


if __name__ == "__main__":
    sys.exit(main())
