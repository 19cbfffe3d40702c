"""A prompt's prefill in PyTorch, the reference for BenchmarkPrefillDecode.

A Qwen3-0.6B-shaped decoder (random weights, no LoRA) in bfloat16 or
float32 runs one forward pass over an n-token prompt under inference mode,
causal attention written out (torch 1.13 has no fused kernel) and the
lm_head on the last position only, as a server prefilling before its first
draw does.
Usage: torch_prefill.py dtype n steps threads
Prints "tok/s <wall> tok/cpu-s <cpu>" (best pass after a warm-up).
"""
import sys
import time

import torch
import torch.nn.functional as F

dtype = {"bf16": torch.bfloat16, "f32": torch.float32}[sys.argv[1]]
n, steps, threads = (int(a) for a in sys.argv[2:5])
torch.set_num_threads(threads)
torch.manual_seed(0)
H, I, L, NH, KV, HD, V = 1024, 3072, 28, 16, 8, 128, 151936


def w(o, i):
    return (torch.randn(o, i) / i**0.5).to(dtype)


def rms(x, eps=1e-6):
    return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps).to(x.dtype)


def rope(x, cos, sin):
    a, b = x[..., : HD // 2], x[..., HD // 2 :]
    return torch.cat((a * cos - b * sin, b * cos + a * sin), -1)


layers = [dict(q=w(NH * HD, H), k=w(KV * HD, H), v=w(KV * HD, H), o=w(H, NH * HD),
               g=w(I, H), u=w(I, H), d=w(H, I)) for _ in range(L)]
embed = w(V, H)


def forward(toks):
    T = toks.shape[0]
    pos = torch.arange(T, dtype=torch.float32)[:, None]
    inv = 1e6 ** (-torch.arange(0, HD, 2, dtype=torch.float32) / HD)
    cos, sin = torch.cos(pos * inv).to(dtype), torch.sin(pos * inv).to(dtype)
    mask = torch.full((T, T), float("-inf")).triu(1).to(dtype)
    x = embed[toks]
    for p in layers:
        h = rms(x)
        q = rms(F.linear(h, p["q"]).view(T, NH, HD)).transpose(0, 1)
        k = rms(F.linear(h, p["k"]).view(T, KV, HD)).transpose(0, 1)
        v = F.linear(h, p["v"]).view(T, KV, HD).transpose(0, 1)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        k, v = k.repeat_interleave(NH // KV, 0), v.repeat_interleave(NH // KV, 0)
        o = ((q @ k.transpose(-1, -2)) / HD**0.5 + mask).softmax(-1) @ v
        x = x + F.linear(o.transpose(0, 1).reshape(T, NH * HD), p["o"])
        h = rms(x)
        x = x + F.linear(F.silu(F.linear(h, p["g"])) * F.linear(h, p["u"]), p["d"])
    return F.linear(rms(x[-1:]), embed)


toks = torch.randint(0, V, (n,))
best, best_cpu = float("inf"), float("inf")
with torch.inference_mode():
    for step in range(steps + 1):
        t0, c0 = time.perf_counter(), time.process_time()
        forward(toks)
        if step > 0:
            best = min(best, time.perf_counter() - t0)
            best_cpu = min(best_cpu, time.process_time() - c0)
print("tok/s", n / best, "tok/cpu-s", n / best_cpu)
