"""PyTorch reference for `hedge bench train`: the same network, batch, loss and optimiser.

Run with the torch wheel that scripts/setup-libtorch.sh installed:
    PYTHONPATH=.libtorch/site python3 benches/pytorch_reference.py [--bf16]
(needs typing_extensions, sympy, filelock, networkx, jinja2 and fsspec importable).
Prints training images/s for batch 256 images (128 pairs), K = 8, forward + backward + Adam.
"""
import sys
import time

import torch
import torch.nn.functional as F

bf16 = "--bf16" in sys.argv
torch.manual_seed(0)
conv1 = torch.nn.Conv2d(1, 32, 5, padding=2)
conv2 = torch.nn.Conv2d(32, 64, 5, padding=2)
head = torch.nn.Linear(64 * 7 * 14, 4)
a_raw = torch.nn.Parameter(torch.tensor(0.5413))
b = torch.nn.Parameter(torch.tensor(0.0))
params = list(conv1.parameters()) + list(conv2.parameters()) + list(head.parameters()) + [a_raw, b]
opt = torch.optim.Adam(params, lr=1e-3)
x = torch.rand(256, 1, 28, 56)
is_match = torch.arange(128) % 2 == 0


def step():
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        h = F.max_pool2d(F.relu(conv1(x)), 2)
        h = F.max_pool2d(F.relu(conv2(h)), 2)
    out = head(h.flatten(1).float()).view(256, 1, 2, 2)
    mean, var = out[:, :, 0], F.softplus(out[:, :, 1]) + 1e-6
    z = (mean.unsqueeze(2) + var.sqrt().unsqueeze(2) * torch.randn(256, 1, 8, 2)).view(256, 8, 2)
    z1, z2 = z[:128], z[128:]
    d = ((z1.unsqueeze(2) - z2.unsqueeze(1)).pow(2).sum(-1) + 1e-12).sqrt()
    logits = -F.softplus(a_raw) * d + b
    log_p = F.logsigmoid(logits).logsumexp((1, 2)) - torch.log(torch.tensor(64.0))
    log_q = F.logsigmoid(-logits).logsumexp((1, 2)) - torch.log(torch.tensor(64.0))
    pair = -torch.where(is_match, log_p, log_q).mean()
    kl = 0.5 * (var + mean.pow(2) - 1 - var.log()).sum((1, 2))
    loss = pair + 1e-4 * (kl[:128] + kl[128:]).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item()


for _ in range(5):
    step()
n = 40
t = time.perf_counter()
for _ in range(n):
    step()
dt = time.perf_counter() - t
print(f'{{"torch": "{torch.__version__}", "threads": {torch.get_num_threads()}, "bf16": {str(bf16).lower()}, "train_images_per_s": {256 * n / dt:.1f}}}')
