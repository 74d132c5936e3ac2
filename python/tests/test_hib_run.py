"""HIB end to end from Python -- train on arrays, embed, index, search -- against the command
line on the same run: the same embeddings and the same identification answers."""

import dataclasses
import json
import pathlib
import subprocess

import numpy as np
import pytest
import torch
from sklearn.metrics import average_precision_score, roc_auc_score

from hedge import hib

HEDGE = pathlib.Path(__file__).resolve().parents[2] / "target" / "release" / "hedge"


def cli(*args):
    if not HEDGE.is_file():
        pytest.fail(f"{HEDGE} is missing: build the command line (bash scripts/setup-python.sh does)")
    out = subprocess.run([str(HEDGE), *map(str, args)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return out


def digits(images, labels, classes, per_class, skip=0):
    rows = np.concatenate([np.flatnonzero(labels == c)[skip : skip + per_class] for c in classes])
    return (images[rows, 0] * 255).round().astype(np.uint8), labels[rows]


# Every test here trains or embeds with hedge's convolutions.
pytestmark = pytest.mark.conv_precision


@pytest.fixture(scope="module")
def trained(tmp_path_factory, mnist_test):
    images, labels = mnist_test
    x, y = digits(images, labels, range(6), 20)
    tmp = tmp_path_factory.mktemp("hib")
    calls = []
    run = hib.train(
        tmp / "run",
        data=(x, y),
        config={"model": "mog", "components": 2, "dim": 2, "steps": 40, "batch": "independent", "batch_pairs": 32},
        unseen_classes=2,
        progress=lambda step, planned, loss: calls.append((step, planned, loss)),
        progress_every=10,
    )
    return run, tmp, calls, (x, y)


def test_training_reports_progress_and_writes_a_run(trained):
    run, tmp, calls, _ = trained
    assert [c[0] for c in calls] == [10, 20, 30, 40] and all(c[1] == 40 for c in calls)
    assert all(np.isfinite(c[2]) for c in calls)
    assert (tmp / "run.images.npz").is_file()
    assert run.config["model"] == "mog" and run.config["components"] == 2 and run.input_shape == (1, 28, 28)
    head = run.match_head()
    assert head.a.item() > 0


def test_embedding_equals_the_command_lines(trained):
    run, tmp, _, (x, y) = trained
    cli("hib", "embed", "--run", run.path, "--split", "test_unseen", "--out", tmp / "unseen.npz")
    want = np.load(tmp / "unseen.npz")
    emb, labels = run.embed_split("test_unseen")
    np.testing.assert_array_equal(emb.mean.numpy(), want["mean"])
    np.testing.assert_array_equal(emb.variance.numpy(), want["variance"])
    np.testing.assert_array_equal(emb.eta.numpy(), want["eta"])
    np.testing.assert_allclose(emb.weights.numpy(), want["weights"])
    # The same images given as arrays: the unseen identities' images in the order of the data.
    split = json.loads((run.path / "data_split.json").read_text())
    unseen = np.isin(y, [int(c) for c in split["unseen_classes"]])
    from_arrays = run.embed(torch.from_numpy(x[unseen]))
    np.testing.assert_array_equal(from_arrays.mean.numpy(), want["mean"])
    np.testing.assert_array_equal(from_arrays.eta.numpy(), want["eta"])
    assert from_arrays.mean.shape == (unseen.sum(), 2, 2) and from_arrays.eta.shape == (unseen.sum(),)


def test_occluded_twins_and_other_weights_equal_the_command_lines(trained):
    from safetensors.torch import load_file, save_file

    run, tmp, _, _ = trained
    # Another weights file of the same model: the run's own, every tensor scaled, so that an
    # embedding that ignored the file would differ from the command line's.
    other = {k: v * 1.5 for k, v in load_file(run.path / "model.safetensors").items()}
    save_file(other, tmp / "other.safetensors")
    cli("hib", "embed", "--run", run.path, "--split", "test_unseen", "--variant", "corrupt",
        "--weights", tmp / "other.safetensors", "--out", tmp / "unseen-corrupt-other.npz")
    want = np.load(tmp / "unseen-corrupt-other.npz")
    emb, _ = run.embed_split("test_unseen", corrupt=True, weights=tmp / "other.safetensors")
    np.testing.assert_array_equal(emb.mean.numpy(), want["mean"])
    np.testing.assert_array_equal(emb.eta.numpy(), want["eta"])
    own, _ = run.embed_split("test_unseen", corrupt=True)
    assert not np.array_equal(own.mean.numpy(), emb.mean.numpy())
    clean, _ = run.embed_split("test_unseen")
    assert not np.array_equal(clean.mean.numpy(), own.mean.numpy())
    # A weights file that is not there is named in the error.
    with pytest.raises(ValueError, match="missing.safetensors"):
        run.embed_split("test_unseen", weights=tmp / "missing.safetensors")


def test_index_and_search_answer_as_the_command_line_does(trained, mnist_test):
    run, tmp, _, _ = trained
    images, labels = mnist_test
    # Identities the model never trained on (digits 6-9); probes add images of them it never saw.
    gallery = digits(images, labels, range(6, 10), 25)
    validation = digits(images, labels, range(6, 10), 10, skip=25)
    probes = digits(images, labels, range(6, 10), 8, skip=35)
    for name, (x, y) in [("gallery", gallery), ("validation", validation), ("probes", probes)]:
        np.savez(tmp / f"{name}.npz", images=x, labels=y)

    index = hib.Index.build(run, gallery[0], tmp / "py-index", gallery_labels=gallery[1], validation=validation[0],
                            validation_labels=validation[1], target_risk=0.3, candidates=20, top_k=3)
    results, summary = index.search(*probes)
    cli("hib", "index", "--run", run.path, "--gallery", tmp / "gallery.npz", "--validation", tmp / "validation.npz",
        "--target-risk", "0.3", "--candidates", "20", "--top-k", "3", "--out", tmp / "cli-index")
    cli("hib", "search", "--index", tmp / "cli-index", "--probe", tmp / "probes.npz", "--out", tmp / "cli-search")
    want_rows = [hib.ProbeResult.from_json(line) for line in (tmp / "cli-search" / "search.jsonl").read_text().splitlines()]
    want_summary = json.loads((tmp / "cli-search" / "summary.json").read_text())
    assert results == want_rows
    got = dataclasses.asdict(summary)
    for d in (got, want_summary):
        d.pop("probes_per_second")
    # summary.json leaves out a candidate recall it has not measured (a HIB model); Python reads it as None.
    assert got.pop("candidate_recall_at_10") is None and "candidate_recall_at_10" not in want_summary
    assert got == want_summary
    assert summary.probes == 32 and len(results) == 32 and results[0].matches
    assert index.manifest["calibration"]["target_risk"] == 0.3
    # Selective identification by eta and by margin: AURC in NumPy, error detection in scikit-learn.
    assert [q.score for q in summary.selective] == ["eta", "margin"]
    wrong = np.array([r.matches[0].identity != r.label for r in results])
    for q in summary.selective:
        u = np.array([r.eta if q.score == "eta" else 1.0 - r.margin for r in results])
        order = np.argsort(u, kind="stable")
        assert q.aurc == pytest.approx(np.mean(np.cumsum(wrong[order]) / np.arange(1, len(u) + 1)), abs=1e-12)
        if 0 < wrong.sum() < len(wrong):
            assert q.error_detection.auroc == pytest.approx(roc_auc_score(wrong, u), abs=1e-12)
            assert q.error_detection.auprc == pytest.approx(average_precision_score(wrong, u), abs=1e-12)
        else:
            assert q.error_detection is None


def test_bad_input_is_refused_with_the_fix(trained, tmp_path):
    run, _, _, (x, y) = trained
    with pytest.raises(ValueError, match=r"the run's network takes \[1, 28, 28\]"):
        run.embed(np.zeros((2, 1, 14, 14), np.float32))
    with pytest.raises(ValueError, match=r"must lie in \[0, 1\]"):
        run.embed(np.full((2, 1, 28, 28), 3.0, np.float32))
    with pytest.raises(ValueError, match="'device' = 'tpu': use cpu, cuda, cuda:N or auto"):
        run.embed(x[:2], device="tpu")
    with pytest.raises(ValueError, match=r"settings: unknown field `dimension`, expected one of .*`dim`, "):
        hib.train(tmp_path / "r", data=(x, y), config={"dimension": 2}, progress=False)
    with pytest.raises(FileExistsError, match="never replaces a file it did not write"):
        (tmp_path / "mine.images.npz").write_bytes(b"user data")
        hib.train(tmp_path / "mine", data=(x, y), progress=False)
    assert (tmp_path / "mine.images.npz").read_bytes() == b"user data"


# Its Python calls (hib.train, hib.Index.build, Index.search) are the other tests' here, with
# PCME++'s loss in place of the soft contrastive one after the same convolutions. 36 s with
# emulated bf16 on a 2-core Intel Xeon held to AVX2, the slowest test of that pass there.
@pytest.mark.slow_when_emulated
def test_csd_identification_returns_the_brute_force_csd_ranking(tmp_path, mnist_test):
    """A model trained with PCME++'s loss is indexed by CSD (its default) and searched: each
    probe's candidates are its 10 items of least CSD over the whole gallery (brute force,
    computed here in PyTorch from the run's own embeddings), and its identities and their
    probabilities those of sigma(-a * CSD + b) over them."""
    from conftest import gallery_images

    images, labels = mnist_test
    rows = np.concatenate([np.flatnonzero(labels == c)[900:920] for c in range(6)])
    run = hib.train(tmp_path / "run", data=((images[rows, 0] * 255).round().astype(np.uint8), labels[rows]),
                    config={"loss": "csd", "model": "gaussian", "dim": 2, "steps": 40, "batch": "independent",
                            "batch_pairs": 32}, unseen_classes=2, progress=False)
    (gallery, gallery_labels), validation, (probes, probe_labels) = gallery_images(mnist_test)
    # Graph searches that keep more candidates than the 600 items are exhaustive, hence exact.
    index = hib.Index.build(run, gallery, tmp_path / "index", gallery_labels=gallery_labels, validation=validation[0],
                            validation_labels=validation[1], candidates=10, top_k=3, ef_search=1024)
    assert index.manifest["search"]["space"] == "csd" and index.manifest["search"]["estimator"] == {"kind": "csd"}
    results, summary = index.search(probes, probe_labels)
    assert summary.ann_recall_at_10 == 1.0

    head = run.match_head()
    g, p = run.embed(gallery), run.embed(probes)
    with torch.no_grad():
        # One Gaussian each: CSD = ||mu_p - mu_g||^2 + sum(var_p) + sum(var_g).
        mp, mg = p.mean[:, 0].double(), g.mean[:, 0].double()
        sp, sg = p.variance[:, 0].double().sum(-1), g.variance[:, 0].double().sum(-1)
        pairs = ((mp[:, None] - mg[None]) ** 2).sum(-1) + sp[:, None] + sg[None]
        prob = torch.sigmoid(-head.a.double() * pairs + head.b.double()).numpy()
    csd = pairs.numpy()
    for i, r in enumerate(results):
        # The probe's 10 candidates are the 10 items of least CSD; its identities, best first,
        # are theirs, each with its best item.
        best = {}
        for j in np.argsort(csd[i], kind="stable")[:10]:
            best.setdefault(int(gallery_labels[j]), (prob[i, j], j))
        want = sorted(best.items(), key=lambda kv: (-kv[1][0], kv[0]))[:3]
        assert [m.identity for m in r.matches] == [str(k) for k, _ in want], i
        assert [m.gallery_item for m in r.matches] == [f"#{j}" for _, (_, j) in want], i
        np.testing.assert_allclose([m.probability for m in r.matches], [q for _, (q, _) in want], rtol=1e-5, atol=1e-7)
    # One candidate: each probe's answer is its item of least CSD. (How often that is not the
    # item of the nearest mean depends on the trained variances; the Rust test
    # `search_by_means_ignores_the_variances_that_an_exact_space_counts` shows the two searches differ.)
    one = hib.Index.build(run, gallery, tmp_path / "one", gallery_labels=gallery_labels, validation=validation[0],
                          validation_labels=validation[1], candidates=1, top_k=1, ef_search=1024)
    results, _ = one.search(probes, probe_labels)
    assert [r.matches[0].gallery_item for r in results] == [f"#{j}" for j in csd.argmin(1)]


def test_an_mls_model_trains_from_python_and_is_searched_by_its_closed_form(tmp_path, mnist_test):
    """PFE's mutual likelihood score (`mls`) trains from `hib.train`, is evaluated by its closed
    form, and is indexed by its means with the closed form's re-rank: with every gallery item a
    candidate, each probe's answer is its item of highest sigma(a log K + b) (brute force through
    `hib.closed_form_match_probability`), and the candidates hold all of the exact top 10."""
    from conftest import gallery_images

    images, labels = mnist_test
    rows = np.concatenate([np.flatnonzero(labels == c)[900:910] for c in range(6)])
    run = hib.train(tmp_path / "run", data=((images[rows, 0] * 255).round().astype(np.uint8), labels[rows]),
                    config={"loss": "mls", "model": "gaussian", "dim": 2, "steps": 20, "batch": "independent",
                            "batch_pairs": 16}, unseen_classes=2, progress=False)
    (gallery, gallery_labels), validation, (probes, probe_labels) = gallery_images(mnist_test)
    probes, probe_labels = probes[:40], probe_labels[:40]
    index = hib.Index.build(run, gallery, tmp_path / "index", gallery_labels=gallery_labels, validation=validation[0],
                            validation_labels=validation[1], candidates=len(gallery), top_k=1, ef_search=1024)
    assert index.manifest["search"]["space"] == "means" and index.manifest["search"]["estimator"] == {"kind": "mls"}
    results, summary = index.search(probes, probe_labels)
    assert summary.candidate_recall_at_10 == 1.0
    head = run.match_head()
    g, p = run.embed(gallery), run.embed(probes)
    with torch.no_grad():
        n, m = len(probes), len(gallery)
        left = hib.Embedding(p.mean.repeat_interleave(m, 0), p.variance.repeat_interleave(m, 0))
        right = hib.Embedding(g.mean.repeat(n, 1, 1), g.variance.repeat(n, 1, 1))
        prob = hib.closed_form_match_probability("mls", head, left, right).view(n, m).numpy()
    # The answer is the most probable item (up to float noise between the two embeddings' batches).
    chosen = [int(r.matches[0].gallery_item.lstrip("#")) for r in results]
    np.testing.assert_allclose(prob[np.arange(n), chosen], prob.max(1), rtol=1e-5, atol=1e-7)


def test_evaluate_gives_the_command_lines_report(trained):
    run, tmp, _, _ = trained
    report = run.evaluate(repeats=2, candidates=20)
    out = cli("hib", "eval", "--run", run.path, "--repeats", "2", "--candidates", "20", "--json")
    want = json.loads(out.stdout)
    got = dict(report.json)
    for d in (got, want):
        for volatile in ("eval_seconds", "command"):
            d.pop(volatile)
    assert got == want
    assert report.split == "test_unseen" and report.repeats == 2
    # The reliability diagram holds both variants' 5,000 + 5,000 pairs of each repeat, and its
    # ECE pools them; verification decisions are ranked by their confidence and by eta.
    assert sum(b.count for b in report.reliability.bins) == 2 * 2 * 10_000
    assert 0 <= report.reliability.ece <= 1
    assert report.verification_aurc.n == 2 and report.verification_aurc_eta.n == 2
    # The quadrature estimator: deterministic, one repeat whatever is asked.
    quadrature = run.evaluate(estimator="quadrature", repeats=3, candidates=20, metrics=["ece", "aurc"])
    assert quadrature.repeats == 1 and quadrature.match_estimator["kind"] == "quadrature"
    assert quadrature.knn_accuracy.clean is None and quadrature.reliability is not None
    with pytest.raises(ValueError, match="estimator"):
        run.evaluate(estimator="exact")
    # Its own weights named as a file score as the run does (as `--weights`); a validation
    # digit set that does not exist is refused by name.
    named = run.evaluate(estimator="quadrature", candidates=20, metrics=["ece", "aurc"],
                         weights=run.path / "model.safetensors")
    assert named.reliability.ece == quadrature.reliability.ece
    assert named.verification_aurc.mean == quadrature.verification_aurc.mean
    with pytest.raises(ValueError, match="validation_digits"):
        run.evaluate(split="validation", validation_digits="fresh")
