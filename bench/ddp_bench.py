"""all_reduce over loopback between 2 processes, brisk (Gloo through
brisk::distributed, brisk_ddp_bench under brisk-run) against PyTorch's
torch.distributed with its Gloo backend, 1 KiB to 256 MiB of float32, and
brisk's DDP training steps (docs/performance.md, "Distributed").

  python3 bench/ddp_bench.py --brisk build/release/bench/brisk_ddp_bench \
      --run build/release/tools/brisk-run
"""
import argparse
import os
import socket
import subprocess
import sys

import timing


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torch_rank(rank, world, port, sizes, out):
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    for nbytes in sizes:
        t = torch.ones(nbytes // 4)
        dist.barrier()
        ms = timing.time_ms(lambda: dist.all_reduce(t), 5, 2 if nbytes >= 1 << 24 else 20)
        if rank == 0:
            out[nbytes] = ms
    dist.destroy_process_group()


def run_torch(sizes, world=2):
    import torch
    import torch.multiprocessing as mp

    port = free_port()
    with mp.Manager() as m:
        out = m.dict()
        mp.spawn(torch_rank, args=(world, port, sizes, out), nprocs=world, join=True)
        return torch.__version__, dict(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brisk", required=True, help="brisk_ddp_bench")
    ap.add_argument("--run", required=True, help="brisk-run")
    a = ap.parse_args()
    env = dict(os.environ, OMP_NUM_THREADS="1")
    cmd = [a.run, "--nproc-per-node", "2", "--master-port", str(free_port()), a.brisk]
    lines = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout.splitlines()
    brisk = {}
    for line in lines:
        line = line.split("]: ", 1)[-1]
        parts = line.split()
        if len(parts) == 2:
            try:
                brisk[parts[0]] = float(parts[1])
            except ValueError:
                pass
    sizes = [1 << k for k in range(10, 29, 2)]
    version, torch_ms = run_torch(sizes)
    print(f"all_reduce of float32 over loopback, 2 processes, one thread each; PyTorch {version} (gloo)")
    print("| size | brisk ms | brisk GB/s | PyTorch ms | PyTorch GB/s | brisk / PyTorch time |")
    print("|---|---|---|---|---|---|")
    for n in sizes:
        b = brisk.get(f"allreduce_{n}_bytes_ms")
        t = torch_ms.get(n)
        if b is None or t is None:
            continue
        size = f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"
        print(f"| {size} | {b:.3f} | {n / b / 1e6:.2f} | {t:.3f} | {n / t / 1e6:.2f} | {b / t:.2f} |")
    for k in ("step_local_ms", "step_ddp_buckets_ms", "step_ddp_bucket_view_ms", "step_ddp_one_bucket_ms"):
        if k in brisk:
            print(f"{k} {brisk[k]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
