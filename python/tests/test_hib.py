"""HIB in the user's PyTorch code: hedge's losses equal the same formulas written in plain
PyTorch here (values and gradients, same random draws), and train a real model the same way."""

import math

import pytest
import torch

from hedge import hib

LN_2PI = math.log(2 * math.pi)


# --- The reference: Eqs. 3, 5, 8 and 9 of Oh et al. (2019), written independently of hedge. ---


def reference_sample(mean, variance, k):
    """Stratified reparameterised samples [B, k, D], drawn as hedge documents it."""
    if variance is None:
        return mean
    b, c, d = mean.shape
    eps = torch.randn(b, c, k // c, d)
    return (mean.unsqueeze(2) + variance.sqrt().unsqueeze(2) * eps).reshape(b, k, d)


def reference_log_match(a_raw, b, z1, z2):
    a = torch.nn.functional.softplus(a_raw)
    dist = ((z1.unsqueeze(2) - z2.unsqueeze(1)).pow(2).sum(-1) + 1e-12).sqrt()
    p = torch.sigmoid(-a * dist + b).mean(dim=(1, 2))
    return torch.log(p), torch.log1p(-p)


def reference_kl(mean, variance, z):
    if variance is None:
        return torch.zeros(mean.shape[0])
    if mean.shape[1] == 1:
        return 0.5 * (variance + mean.pow(2) - 1 - variance.log()).sum(dim=(1, 2))
    diff = z.unsqueeze(2) - mean.unsqueeze(1)
    var = variance.unsqueeze(1)
    log_components = -0.5 * (diff.pow(2) / var + var.log() + LN_2PI).sum(-1)
    log_p = torch.logsumexp(log_components, dim=2) - math.log(mean.shape[1])
    log_r = -0.5 * (z.pow(2) + LN_2PI).sum(-1)
    return (log_p - log_r).mean(dim=1)


def reference_vib(a_raw, b, m1, v1, m2, v2, is_match, k, beta):
    z1 = reference_sample(m1, v1, k)
    z2 = reference_sample(m2, v2, k)
    log_p, log_not_p = reference_log_match(a_raw, b, z1, z2)
    pair = -torch.where(is_match, log_p, log_not_p).mean()
    kl = (reference_kl(m1, v1, z1) + reference_kl(m2, v2, z2)).mean()
    return pair + beta * kl, pair, kl


def leaves(batch, components, dim, stochastic, seed):
    g = torch.Generator().manual_seed(seed)
    m1 = torch.randn(batch, components, dim, generator=g)
    m2 = torch.randn(batch, components, dim, generator=g)
    v1 = torch.rand(batch, components, dim, generator=g) + 0.2 if stochastic else None
    v2 = torch.rand(batch, components, dim, generator=g) + 0.2 if stochastic else None
    return [t.requires_grad_() if t is not None else None for t in (m1, v1, m2, v2)]


@pytest.mark.parametrize(
    "kind,components",
    [("point", 1), ("gaussian", 1), ("mixture", 2), ("mixture", 4)],
)
def test_vib_loss_and_gradients_equal_plain_pytorch(kind, components):
    stochastic = kind != "point"
    k, beta = 8, 0.01
    is_match = torch.tensor([True, False, True, False, False, True])
    m1, v1, m2, v2 = leaves(6, components, 3, stochastic, seed=1)
    head = hib.MatchHead(init_a=1.7, init_b=0.4)
    torch.manual_seed(123)
    got = hib.vib_loss(head, hib.Embedding(m1, v1), hib.Embedding(m2, v2), is_match, samples=k, beta=beta)
    got.total.backward()
    got_grads = [t.grad.clone() for t in (m1, v1, m2, v2, head.a_raw, head.b) if t is not None]

    r_leaves = [t.detach().clone().requires_grad_() if t is not None else None for t in (m1, v1, m2, v2)]
    a_raw = head.a_raw.detach().clone().requires_grad_()
    b = head.b.detach().clone().requires_grad_()
    torch.manual_seed(123)
    total, pair, kl = reference_vib(a_raw, b, *r_leaves, is_match, k, beta)
    total.backward()
    want_grads = [t.grad for t in (*r_leaves, a_raw, b) if t is not None]

    for g, w in zip((got.total, got.pair, got.kl), (total, pair, kl)):
        assert torch.allclose(g, w, rtol=1e-5, atol=1e-6), (g, w)
    assert len(got_grads) == len(want_grads)
    for g, w in zip(got_grads, want_grads):
        assert torch.allclose(g, w, rtol=1e-4, atol=1e-6), (g, w)
    if stochastic:
        assert got.kl.item() > 0


def reference_csd(m1, v1, m2, v2):
    """PCME++'s CSD (Chun, ICLR 2024), ||mu1 - mu2||^2 + sum(sigma1^2 + sigma2^2), written as the
    mean over component pairs of a mixture (each pair's own Gaussian CSD), not by moments."""
    diff = (m1.unsqueeze(2) - m2.unsqueeze(1)).pow(2).sum(-1)  # [B, C1, C2]
    if v1 is not None:
        diff = diff + v1.sum(-1).unsqueeze(2) + v2.sum(-1).unsqueeze(1)
    return diff.mean(dim=(1, 2))


@pytest.mark.parametrize(
    "kind,components",
    [("point", 1), ("gaussian", 1), ("mixture", 2), ("mixture", 4)],
)
def test_csd_loss_and_gradients_equal_plain_pytorch(kind, components):
    stochastic = kind != "point"
    is_match = torch.tensor([True, False, True, False, False, True])
    m1, v1, m2, v2 = leaves(6, components, 3, stochastic, seed=2)
    head = hib.MatchHead(init_a=0.7, init_b=1.2)
    e1, e2 = hib.Embedding(m1, v1), hib.Embedding(m2, v2)
    got = hib.csd_loss(head, e1, e2, is_match)
    got.mean().backward()
    got_grads = [t.grad.clone() for t in (m1, v1, m2, v2, head.a_raw, head.b) if t is not None]

    r_leaves = [t.detach().clone().requires_grad_() if t is not None else None for t in (m1, v1, m2, v2)]
    a_raw = head.a_raw.detach().clone().requires_grad_()
    b = head.b.detach().clone().requires_grad_()
    logit = -torch.nn.functional.softplus(a_raw) * reference_csd(*r_leaves) + b
    want = torch.nn.functional.binary_cross_entropy_with_logits(logit, is_match.float(), reduction="none")
    want.mean().backward()
    want_grads = [t.grad for t in (*r_leaves, a_raw, b) if t is not None]

    assert torch.allclose(got, want, rtol=1e-5, atol=1e-6), (got, want)
    assert len(got_grads) == len(want_grads)
    for g, w in zip(got_grads, want_grads):
        assert torch.allclose(g, w, rtol=1e-4, atol=1e-6), (g, w)
    with torch.no_grad():
        distance = hib.csd(e1, e2)
        assert torch.allclose(distance, reference_csd(m1, v1, m2, v2), rtol=1e-5, atol=1e-6)
        p = hib.csd_match_probability(head, e1, e2)
        assert torch.allclose(p, torch.sigmoid(logit.detach()), rtol=1e-5, atol=1e-7)


def reference_log_likelihood_kernel(m1, v1, m2, v2):
    """PFE's mutual likelihood score with its constants (Shi & Jain, ICCV 2019), log N(mu1; mu2,
    Sigma1 + Sigma2), for mixtures the log of the mean kernel over component pairs; written with
    torch.distributions, independently of hedge."""
    var = v1.unsqueeze(2) + v2.unsqueeze(1)  # [B, C1, C2, D]
    normal = torch.distributions.Normal(m2.unsqueeze(1), var.sqrt())
    log_k = normal.log_prob(m1.unsqueeze(2)).sum(-1)  # [B, C1, C2]
    return torch.logsumexp(log_k.flatten(1), dim=1) - math.log(log_k.shape[1] * log_k.shape[2])


@pytest.mark.parametrize("components", [1, 2])
def test_a_closed_form_by_name_equals_plain_pytorch_with_its_gradients(components):
    """Every registered closed form is reachable by name; PFE's (mls) is checked here: the match
    probability sigmoid(a log K + b) and its gradients, and eta = 1 - p(x, x)."""
    assert {"csd", "mls"} <= set(hib.closed_forms())
    m1, v1, m2, v2 = leaves(5, components, 3, True, seed=4)
    head = hib.MatchHead(init_a=0.6, init_b=0.4)
    e1, e2 = hib.Embedding(m1, v1), hib.Embedding(m2, v2)
    got = hib.closed_form_match_probability("mls", head, e1, e2)
    got.sum().backward()
    got_grads = [t.grad.clone() for t in (m1, v1, m2, v2, head.a_raw, head.b)]

    r = [t.detach().clone().requires_grad_() for t in (m1, v1, m2, v2)]
    a_raw = head.a_raw.detach().clone().requires_grad_()
    b = head.b.detach().clone().requires_grad_()
    want = torch.sigmoid(torch.nn.functional.softplus(a_raw) * reference_log_likelihood_kernel(*r) + b)
    want.sum().backward()
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-7), (got, want)
    for g, w in zip(got_grads, [*(t.grad for t in r), a_raw.grad, b.grad]):
        assert torch.allclose(g, w, rtol=1e-4, atol=1e-6), (g, w)
    with torch.no_grad():
        eta = hib.closed_form_self_mismatch("mls", head, e1)
        a = torch.nn.functional.softplus(head.a_raw)
        want_eta = 1 - torch.sigmoid(a * reference_log_likelihood_kernel(m1, v1, m1, v1) + head.b)
        assert torch.allclose(eta, want_eta, rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match="no such closed-form match probability"):
        hib.closed_form_match_probability("soft", head, e1, e2)
    with pytest.raises(ValueError, match="mls scores distributions: give every embedding its variance"):
        hib.closed_form_match_probability("mls", head, hib.Embedding(m1.detach()), e2)


def small_net():
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 8, 5, stride=2),
        torch.nn.ReLU(),
        torch.nn.Conv2d(8, 16, 5, stride=2),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(16 * 4 * 4, 2 * 2 * 2),  # mean and log-variance of a 2-component mixture in D = 2
    )


def split(out):
    mean, log_var = out.view(-1, 2, 2, 2).unbind(1)
    return mean.view(-1, 2, 2), torch.nn.functional.softplus(log_var).view(-1, 2, 2) + 1e-4


def train(images, labels, loss_fn, steps=40, batch=64):
    torch.manual_seed(0)
    net, head = small_net(), hib.MatchHead()
    opt = torch.optim.Adam([*net.parameters(), *head.parameters()], lr=3e-3)
    losses = []
    g = torch.Generator().manual_seed(5)
    for _ in range(steps):
        left = torch.randint(0, len(images), (batch,), generator=g)
        # Half the pairs share a label: a right partner drawn from the left image's class.
        same = torch.rand(batch, generator=g) < 0.5
        right = torch.randint(0, len(images), (batch,), generator=g)
        for i in torch.nonzero(same).flatten().tolist():
            pool = torch.nonzero(labels == labels[left[i]]).flatten()
            right[i] = pool[torch.randint(0, len(pool), (1,), generator=g)]
        is_match = labels[left] == labels[right]
        m1, v1 = split(net(images[left]))
        m2, v2 = split(net(images[right]))
        loss = loss_fn(head, m1, v1, m2, v2, is_match)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return net, head, losses


def test_a_small_model_trains_on_mnist_with_hedges_loss_exactly_as_with_plain_pytorch(mnist_test):
    images, labels = mnist_test
    images, labels = torch.from_numpy(images[:2000]), torch.from_numpy(labels[:2000])

    def with_hedge(head, m1, v1, m2, v2, is_match):
        return hib.vib_loss(head, hib.Embedding(m1, v1), hib.Embedding(m2, v2), is_match, 8, 1e-4).total

    def by_hand(head, m1, v1, m2, v2, is_match):
        return reference_vib(head.a_raw, head.b, m1, v1, m2, v2, is_match, 8, 1e-4)[0]

    net_h, head_h, losses_h = train(images, labels, with_hedge)
    net_r, head_r, losses_r = train(images, labels, by_hand)
    # The same draws, the same arithmetic up to float rounding: 40 Adam steps later the two
    # models agree, and the loss fell (the model learnt which pairs match).
    assert losses_h == pytest.approx(losses_r, rel=2e-3, abs=1e-4)
    for p, q in zip(net_h.parameters(), net_r.parameters()):
        assert torch.allclose(p, q, rtol=1e-3, atol=1e-4)
    assert sum(losses_h[-10:]) / 10 < sum(losses_h[:10]) / 10 - 0.05, losses_h


def test_quadrature_agrees_with_monte_carlo_and_with_the_closed_form_for_points():
    head = hib.MatchHead(init_a=2.0, init_b=1.5)
    g = torch.Generator().manual_seed(2)
    mean1, mean2 = torch.randn(5, 2, 2, generator=g), torch.randn(5, 2, 2, generator=g)
    var1, var2 = torch.rand(5, 2, 2, generator=g) + 0.1, torch.rand(5, 2, 2, generator=g) + 0.1
    with torch.no_grad():
        e1, e2 = hib.Embedding(mean1, var1), hib.Embedding(mean2, var2)
        quad = hib.match_probability_quadrature(head, e1, e2, points=24)
        torch.manual_seed(0)
        mc = hib.match_probability(head, e1, e2, samples=2000)
        assert torch.allclose(quad, mc, atol=4e-3), (quad, mc)
        # Points: sigmoid(-a ||z1 - z2|| + b) exactly, whatever the estimator.
        z1, z2 = torch.tensor([[0.3, -0.4]]), torch.tensor([[0.0, 0.0]])
        exact = torch.sigmoid(torch.tensor(-2.0 * 0.5 + 1.5))
        for p in (
            hib.match_probability_quadrature(head, hib.Embedding(z1), hib.Embedding(z2), points=4),
            hib.match_probability(head, hib.Embedding(z1), hib.Embedding(z2), samples=8),
        ):
            assert p.item() == pytest.approx(exact.item(), abs=1e-5)


def test_self_mismatch_grows_with_the_variance_and_is_one_minus_sigmoid_b_for_a_point():
    head = hib.MatchHead(init_a=3.0, init_b=0.8)
    with torch.no_grad():
        point = hib.self_mismatch(head, hib.Embedding(torch.tensor([[0.2, 0.9]])))
        assert point.item() == pytest.approx(1 - 1 / (1 + math.exp(-0.8)), abs=1e-5)
        torch.manual_seed(0)
        means = torch.zeros(3, 1, 2)
        variances = torch.tensor([0.01, 0.3, 3.0]).view(3, 1, 1).expand(3, 1, 2).contiguous()
        eta = hib.self_mismatch(head, hib.Embedding(means, variances), samples=400)
    assert eta[0] < eta[1] < eta[2]


def test_bad_arguments_raise_errors_that_name_them():
    head = hib.MatchHead()
    mean = torch.zeros(4, 2, 3)
    with pytest.raises(ValueError, match=r"`samples` = 3 must be a positive multiple of"):
        hib.match_probability(head, hib.Embedding(mean, mean + 1), hib.Embedding(mean, mean + 1), samples=3)
    with pytest.raises(ValueError, match=r"float32 \(pass `mean1.float\(\)`\)"):
        hib.match_probability(head, hib.Embedding(mean.double()), hib.Embedding(mean))
    with pytest.raises(TypeError, match=r"`mean1` must be a torch.Tensor, not list"):
        hib.match_probability(head, hib.Embedding([[0.0]]), hib.Embedding(mean))
    with pytest.raises(ValueError, match=r"`is_match` must be a bool tensor of shape \[4\]"):
        hib.vib_loss(head, hib.Embedding(mean), hib.Embedding(mean), torch.ones(4))
    with pytest.raises(ValueError, match=r"`variance2` has shape"):
        hib.match_probability(head, hib.Embedding(mean), hib.Embedding(mean, torch.ones(4, 2, 2)))
    with pytest.raises(ValueError, match=r"quadrature nodes"):
        hib.match_probability_quadrature(head, hib.Embedding(torch.zeros(2, 16)), hib.Embedding(torch.zeros(2, 16)))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_tensors_stay_on_their_device():
    head = hib.MatchHead().cuda()
    mean = torch.randn(4, 1, 2, device="cuda", requires_grad=True)
    loss = hib.vib_loss(head, hib.Embedding(mean, torch.ones_like(mean)), hib.Embedding(mean), torch.ones(4, dtype=torch.bool, device="cuda"))
    loss.total.backward()
    assert loss.total.device.type == "cuda" and mean.grad.device.type == "cuda"
