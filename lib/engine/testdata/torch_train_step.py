"""The engine's benchmark training step in PyTorch, for BenchmarkTrainStep.

A Llama/Qwen3-shaped decoder with random float32 weights, frozen, and a
rank-r LoRA on every projection and the lm_head; one step is forward,
cross-entropy backward and AdamW over `seqs` sequences of `n` tokens.
Usage: torch_train_step.py '<config json>' seqs n steps threads
Prints "tok/s <tokens per second> tok/cpu-s <per CPU-second>" of the median
step after a warm-up, then the steps' range; with steps 0
it runs the warm-up step only and prints nothing (BenchmarkTrainMemory takes
its peak RSS from outside).
"""
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F

cfg = json.loads(sys.argv[1])
seqs, n, steps, threads = (int(a) for a in sys.argv[2:6])
torch.set_num_threads(threads)
torch.manual_seed(0)
H, I, L = cfg["Hidden"], cfg["Intermediate"], cfg["Layers"]
NH, KV, HD, V = cfg["Heads"], cfg["KVHeads"], cfg["HeadDim"], cfg["VocabSize"]
qwen = cfg["Family"] == "qwen3"
R = 32


class LoRALinear(torch.nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(o, i) / i**0.5, requires_grad=False)
        self.a = torch.nn.Parameter(torch.randn(R, i) / i**0.5)
        self.b = torch.nn.Parameter(torch.randn(o, R) * 0.01)

    def forward(self, x):
        return F.linear(x, self.w) + F.linear(F.linear(x, self.a), self.b)


def rms(x, w, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rope(x, cos, sin):
    a, b = x[..., : HD // 2], x[..., HD // 2 :]
    return torch.cat((a * cos - b * sin, b * cos + a * sin), -1)


class Layer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.q, self.k, self.v = LoRALinear(H, NH * HD), LoRALinear(H, KV * HD), LoRALinear(H, KV * HD)
        self.o = LoRALinear(NH * HD, H)
        self.g, self.u, self.d = LoRALinear(H, I), LoRALinear(H, I), LoRALinear(I, H)
        ones = lambda m: torch.nn.Parameter(torch.ones(m), requires_grad=False)
        self.n1, self.n2, self.qn, self.kn = ones(H), ones(H), ones(HD), ones(HD)

    def forward(self, x, cos, sin, mask):
        B, T, _ = x.shape
        h = rms(x, self.n1)
        q = self.q(h).view(B, T, NH, HD)
        k = self.k(h).view(B, T, KV, HD)
        v = self.v(h).view(B, T, KV, HD).transpose(1, 2)
        if qwen:
            q, k = rms(q, self.qn), rms(k, self.kn)
        q, k = rope(q.transpose(1, 2), cos, sin), rope(k.transpose(1, 2), cos, sin)
        k, v = k.repeat_interleave(NH // KV, 1), v.repeat_interleave(NH // KV, 1)
        att = (q @ k.transpose(-1, -2)) / HD**0.5 + mask
        o = (att.softmax(-1) @ v).transpose(1, 2).reshape(B, T, NH * HD)
        x = x + self.o(o)
        h = rms(x, self.n2)
        return x + self.d(F.silu(self.g(h)) * self.u(h))


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Parameter(torch.randn(V, H) * 0.02, requires_grad=False)
        self.layers = torch.nn.ModuleList(Layer() for _ in range(L))
        self.norm = torch.nn.Parameter(torch.ones(H), requires_grad=False)
        self.head_a = torch.nn.Parameter(torch.randn(R, H) / H**0.5)
        self.head_b = torch.nn.Parameter(torch.zeros(V, R))

    def forward(self, toks):
        T = toks.shape[1]
        pos = torch.arange(T, dtype=torch.float32)[:, None]
        inv = cfg["RopeTheta"] ** (-torch.arange(0, HD, 2, dtype=torch.float32) / HD)
        cos, sin = torch.cos(pos * inv), torch.sin(pos * inv)
        mask = torch.full((T, T), float("-inf")).triu(1)
        x = self.embed[toks]
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        x = rms(x, self.norm)
        return F.linear(x, self.embed) + F.linear(F.linear(x, self.head_a), self.head_b)


model = Model()
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
toks = torch.randint(0, min(V, 256), (seqs, n))
targets = torch.randint(0, min(V, 256), (seqs, n))
walls, cpus = [], []
for step in range(steps + 1):
    t0, c0 = time.perf_counter(), time.process_time()
    loss = F.cross_entropy(model(toks).reshape(-1, V), targets.reshape(-1), reduction="sum")
    loss.backward()
    opt.step()
    opt.zero_grad()
    if step > 0:
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
# CPU time as well as wall time: a loaded machine disturbs it far less.
if steps:
    wall, cpu = statistics.median(walls), statistics.median(cpus)
    print("tok/s", seqs * n / wall, "tok/cpu-s", seqs * n / cpu,
          "steps", steps, "s/step min", min(walls), "max", max(walls))
