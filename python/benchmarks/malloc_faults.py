"""PyTorch alone on the HIB network's shapes: ten training steps of the conv net on 256 images of
3-digit MNIST's size (28 x 84), one thread. Run it under `/usr/bin/time` with and without glibc's
malloc settings that the `hedge` command uses (results/bench/malloc-tunables.json, key
`pytorch_alone`):

    /usr/bin/time -f '%R minor faults, %S sys s, %U user s' python python/benchmarks/malloc_faults.py
    GLIBC_TUNABLES=glibc.malloc.mmap_threshold=1073741824:glibc.malloc.trim_threshold=4294967296:glibc.malloc.top_pad=67108864 \\
        /usr/bin/time -f '%R minor faults, %S sys s, %U user s' python python/benchmarks/malloc_faults.py
"""
import torch
import torch.nn as nn


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    net = nn.Sequential(
        nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 7 * 21, 3),
    )
    opt = torch.optim.Adam(net.parameters())
    x = torch.rand(256, 1, 28, 84)
    for _ in range(10):
        opt.zero_grad()
        net(x).square().mean().backward()
        opt.step()


if __name__ == "__main__":
    main()
