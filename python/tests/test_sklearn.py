"""hedge's estimators and transformers are scikit-learn estimators: scikit-learn's own
``check_estimator`` suite runs on each (one pytest case a check), they compose with pipelines,
cross-validation and grid searches without an explicit scorer, a pickled model predicts what the
fitted one did, and without scikit-learn the same classes still import and fit."""

import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import read_uci
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils import get_tags
from sklearn.utils.estimator_checks import parametrize_with_checks

from hedge import agnostic, bayes

#: Every estimator and transformer of the package, as a user constructs it. The GPs search their
#: hyper-parameters with fewer L-BFGS iterations than the default only to keep the ~50 checks quick;
#: the sparse GP takes 4 pseudo-inputs because the checks fit on as few as 10 rows, and a sparse
#: GP with more pseudo-inputs than rows is refused (the exact GP is the model there).
ESTIMATORS = [
    bayes.GaussianProcessRegressor(restarts=0, max_iters=50),
    bayes.SparseGPRegressor(inducing=4, max_iters=50),
    bayes.BayesianLinearRegression(),
    bayes.BayesianLinearRegression(noise_variance=None),
    bayes.BayesianProbitRegression(),
    agnostic.Leace(),
    agnostic.Eraser(),
]

#: The checks a hedge estimator is expected to fail, each with its reason. Listed by name so a
#: new failure fails the suite, and a check that starts passing does too (strict xfail).
EXPECTED_FAILURES = {
    # LEACE shrinks the concept-conditional covariance towards a scaled identity by the OAS rule,
    # whose shrinkage depends on the number of rows: k copies of a row are k rows there, where a
    # weight of k is one row of weight k. Both fits erase the concept; their maps differ.
    "Leace": {
        "check_sample_weight_equivalence_on_dense_data": "OAS shrinkage counts rows, not weights (the erasure holds either way)",
    },
    "Eraser": {
        "check_sample_weight_equivalence_on_dense_data": "OAS shrinkage counts rows, not weights (the erasure holds either way)",
    },
}


# Skipped by scikit-learn itself, not by hedge: `check_array_api_input` (one per estimator, 7 in
# all) runs only where SCIPY_ARRAY_API=1 is set; hedge's estimators take NumPy arrays and anything
# array-like converted to float64, not other array namespaces.


def expected_failures(estimator) -> dict:
    return EXPECTED_FAILURES.get(type(estimator).__name__, {})


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=expected_failures)
def test_scikit_learns_checks(estimator, check):
    check(estimator)


def boston(data_dir):
    x, y = read_uci(data_dir, "bostonHousing")
    return x[:200], y[:200]


def test_a_pipeline_cross_validates_and_grid_searches_without_a_scorer(data_dir):
    """`score` is R² (regressors) and accuracy (the classifier), so scikit-learn's model
    selection runs on hedge's estimators as on its own."""
    x, y = boston(data_dir)
    folds = KFold(3, shuffle=True, random_state=0)
    scores = cross_val_score(make_pipeline(StandardScaler(), bayes.GaussianProcessRegressor(restarts=0)), x, y, cv=folds)
    assert scores.shape == (3,) and scores.min() > 0.6, scores
    search = GridSearchCV(
        make_pipeline(StandardScaler(), bayes.BayesianLinearRegression(noise_variance=None)),
        {"bayesianlinearregression__prior_precision": [1e-2, 1.0, 1e2]},
        cv=folds,
    ).fit(x, y - y.mean())
    assert search.best_params_["bayesianlinearregression__prior_precision"] in (1e-2, 1.0, 1e2)
    assert search.best_score_ > 0.5, search.best_score_
    labels = np.where(y > np.median(y), "high", "low")
    accuracy = cross_val_score(make_pipeline(StandardScaler(), bayes.BayesianProbitRegression()), x, labels, cv=folds)
    assert accuracy.min() > 0.7, accuracy


def test_a_pickled_model_predicts_what_the_fitted_one_did(data_dir):
    x, y = boston(data_dir)
    x = StandardScaler().fit_transform(x)
    labels = (y > np.median(y)).astype(int)
    regressors = [
        bayes.GaussianProcessRegressor(restarts=0),
        bayes.SparseGPRegressor(inducing=20, method="vfe"),
        bayes.BayesianLinearRegression(),
        bayes.BayesianLinearRegression(noise_variance=None),
    ]
    for model in regressors:
        model.fit(x[:150], y[:150])
        again = pickle.loads(pickle.dumps(model))
        mean, std = model.predict(x[150:], return_std=True)
        mean2, std2 = again.predict(x[150:], return_std=True)
        np.testing.assert_array_equal(mean, mean2, err_msg=repr(model))
        np.testing.assert_array_equal(std, std2, err_msg=repr(model))
    probit = bayes.BayesianProbitRegression().fit(x[:150], labels[:150])
    np.testing.assert_array_equal(probit.predict_proba(x[150:]), pickle.loads(pickle.dumps(probit)).predict_proba(x[150:]))
    concept = (x[:, 0] > 0).astype(int)
    for eraser in (agnostic.Leace(), agnostic.Eraser("inlp", params={"iterations": 2})):
        eraser.fit(x[:150], concept[:150])
        np.testing.assert_array_equal(eraser.transform(x[150:]), pickle.loads(pickle.dumps(eraser)).transform(x[150:]))


def test_the_probit_model_is_a_binary_classifier_of_any_two_labels():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(80, 3))
    y = np.where(x @ [2.0, -1.0, 0.5] > 0, "yes", "no")
    model = bayes.BayesianProbitRegression().fit(x, y)
    assert get_tags(model).classifier_tags.multi_class is False
    assert model.classes_.tolist() == ["no", "yes"]
    assert set(model.predict(x)) <= {"no", "yes"} and model.score(x, y) > 0.9
    with pytest.raises(ValueError, match="Only binary classification is supported.*3 classes"):
        bayes.BayesianProbitRegression().fit(x, rng.integers(0, 3, size=80))


def test_used_before_fit_is_scikit_learns_not_fitted_error():
    from sklearn.exceptions import NotFittedError

    for estimator in ESTIMATORS:
        method = estimator.transform if hasattr(estimator, "transform") else estimator.predict
        with pytest.raises(NotFittedError, match="not fitted yet"):
            method(np.zeros((2, 3)))


def test_without_scikit_learn_the_estimators_import_fit_and_score():
    """A process where `import sklearn` fails: the stand-in keeps the API."""
    script = textwrap.dedent(
        """
        import sys

        class NoSklearn:
            def find_spec(self, name, path=None, target=None):
                if name == "sklearn" or name.startswith("sklearn."):
                    raise ImportError("scikit-learn is not installed here")

        sys.meta_path.insert(0, NoSklearn())
        import numpy as np
        from hedge import agnostic, bayes
        from hedge._sklearn import HAVE_SKLEARN, NotFittedError

        rng = np.random.default_rng(0)
        x = rng.normal(size=(60, 3))
        y = x @ [1.0, -2.0, 0.5] + 0.1 * rng.normal(size=60)
        model = bayes.BayesianLinearRegression().fit(x, y)
        try:
            bayes.GaussianProcessRegressor().predict(x)
        except NotFittedError as e:
            unfitted = isinstance(e, ValueError) and isinstance(e, AttributeError)
        try:
            model.predict(np.full((1, 3), np.nan))
        except ValueError as e:
            nan_named = "NaN" in str(e)
        erased = agnostic.Leace().fit_transform(x, (x[:, 0] > 0).astype(int))
        print(HAVE_SKLEARN, "sklearn" in sys.modules, round(model.score(x, y), 2), model.n_features_in_,
              unfitted, nan_named, erased.shape, model.get_params()["prior_precision"])
        """
    )
    env = dict(os.environ)
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False", "1.0", "3", "True", "True", "(60,", "3)", "1.0"], out.stdout
