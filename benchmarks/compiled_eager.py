"""PyTorch eager figures for compiled_bench's graphs, on this machine.

Run: /usr/bin/python3 benchmarks/compiled_eager.py   (2 threads, as EAGER_BASELINE.md)
Prints the median ms of each op compiled_bench times, out-of-place (fresh
outputs, as eager code is written) and, for the chains, with out= buffers.
"""
import statistics
import time

import torch

torch.set_num_threads(2)
N = 16_000_000


def median_ms(fn, warmup, reps):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def chain(x, k):
    for i in range(k):
        op = i % 4
        if op == 0:
            x = x + 0.5
        elif op == 1:
            x = x * 1.1
        elif op == 2:
            x = torch.tanh(x)
        else:
            x = torch.sigmoid(x)
    return x


def chain_out(x, k, a, b):
    src, dst = x, a
    for i in range(k):
        op = i % 4
        if op == 0:
            torch.add(src, 0.5, out=dst)
        elif op == 1:
            torch.mul(src, 1.1, out=dst)
        elif op == 2:
            torch.tanh(src, out=dst)
        else:
            torch.sigmoid(src, out=dst)
        src, dst = dst, (b if dst is a else a)
    return src


def addmul_chain(x, k):
    for i in range(k):
        x = x + 0.1 if i % 2 == 0 else x * 0.9
    return x


def main():
    print(f"torch {torch.__version__}, threads={torch.get_num_threads()}")
    x = torch.rand(N) * 4 - 2
    a, b = torch.empty(N), torch.empty(N)
    dst = torch.empty(N)
    dst.copy_(x)
    print(f"copy_ into preallocated 64 MB: {median_ms(lambda: dst.copy_(x), 3, 11):.3f} ms")
    print(f"add/mul chain K=8: {median_ms(lambda: addmul_chain(x, 8), 2, 7):.3f} ms")
    for k in (4, 8, 16):
        print(f"transcendental chain K={k}: {median_ms(lambda: chain(x, k), 2, 7):.3f} ms, "
              f"out=: {median_ms(lambda: chain_out(x, k, a, b), 2, 7):.3f} ms")
    m = torch.rand(4096, 4096)
    print(f"sum(-1) [4096,4096]: {median_ms(lambda: m.sum(-1), 2, 11):.3f} ms")
    print(f"softmax(-1) [4096,4096]: {median_ms(lambda: torch.softmax(m, -1), 2, 11):.3f} ms")
    ln = torch.nn.LayerNorm(1024)
    y = torch.rand(8192, 1024)
    with torch.no_grad():
        print(f"layer_norm [8192,1024]: {median_ms(lambda: ln(y), 2, 11):.3f} ms")


if __name__ == "__main__":
    main()
