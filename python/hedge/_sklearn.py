"""scikit-learn's estimator API for hedge's estimators: with scikit-learn >= 1.6 installed they
*are* scikit-learn estimators (``BaseEstimator`` with the mixin of their kind, its input checks,
``NotFittedError``, tags), so pipelines, grid searches, ``cross_val_score`` and
``check_estimator`` take them; without it, a stand-in with the same conventions keeps
``import hedge.bayes`` working (``get_params``/``set_params``, ``score``, ``n_features_in_``).

The input checks are scikit-learn's own where it is installed (``validate_data``: its messages,
its refusal of sparse, complex and empty input) followed by hedge's (a finite value so large that
its square overflows is refused, naming where it is)."""

from __future__ import annotations

import inspect

import numpy as np

from ._arrays import _refuse_huge, matrix, vector


def _sklearn_version() -> tuple:
    try:
        import sklearn
    except ImportError:
        return ()
    return tuple(int(p) for p in sklearn.__version__.split(".")[:2] if p.isdigit())


#: scikit-learn's tags (``__sklearn_tags__``) and ``validate_data`` arrived in 1.6: an older
#: scikit-learn gets the stand-in, as no scikit-learn does.
HAVE_SKLEARN = _sklearn_version() >= (1, 6)

if HAVE_SKLEARN:
    from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, TransformerMixin
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import check_is_fitted, validate_data
else:

    class NotFittedError(ValueError, AttributeError):
        """An estimator used before ``fit`` (scikit-learn's class, where it is installed)."""

    class BaseEstimator:
        """scikit-learn's estimator conventions without it: the constructor's keyword arguments
        are the parameters (``get_params``/``set_params``), fitted state ends with ``_``."""

        def get_params(self, deep: bool = True) -> dict:
            names = [p for p in inspect.signature(type(self).__init__).parameters if p != "self"]
            return {n: getattr(self, n) for n in names}

        def set_params(self, **params):
            valid = self.get_params()
            for k, v in params.items():
                if k not in valid:
                    raise ValueError(f"{type(self).__name__} has no parameter `{k}`; it has {sorted(valid)}")
                setattr(self, k, v)
            return self

        def __repr__(self) -> str:
            args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
            return f"{type(self).__name__}({args})"

    class RegressorMixin:
        """``score``: the coefficient of determination R² of ``predict(X)``."""

        def score(self, X, y, sample_weight=None) -> float:
            y = np.asarray(y, dtype=np.float64)
            w = np.ones_like(y) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
            residual = (w * (y - self.predict(X)) ** 2).sum()
            total = (w * (y - np.average(y, weights=w)) ** 2).sum()
            return 1.0 - residual / total if total > 0 else (1.0 if residual == 0 else 0.0)

    class ClassifierMixin:
        """``score``: the accuracy of ``predict(X)``."""

        def score(self, X, y, sample_weight=None) -> float:
            return float(np.average(self.predict(X) == np.asarray(y), weights=sample_weight))

    class TransformerMixin:
        """``fit_transform``: ``fit(X, y).transform(X)``."""

        def fit_transform(self, X, y=None, **fit_params):
            return self.fit(X, y, **fit_params).transform(X)

    def check_classification_targets(y) -> None:
        if np.asarray(y).dtype.kind == "f" and not np.all(np.asarray(y) == np.round(y)):
            raise ValueError("Unknown label type: continuous. Maybe you are trying to fit a classifier on a regression target")


class NativeState:
    """Pickling for an estimator whose fitted state holds a Rust object, which pickle cannot
    write: the attribute ``_native`` names it, :meth:`_native_parts` says what the pickle keeps
    in its place (``None``: nothing beyond the fitted attributes), and :meth:`_rebuild_native`
    makes it again on load. scikit-learn's own ``__getstate__``/``__setstate__`` (its version
    stamp) still run around it."""

    _native = "posterior_"

    def _native_parts(self, native):
        return None

    def _rebuild_native(self, parts):
        raise NotImplementedError

    def __getstate__(self) -> dict:
        parent = getattr(super(), "__getstate__", None)
        state = parent() if parent is not None else None
        state = dict(state if state is not None else self.__dict__)
        native = state.pop(self._native, None)
        if native is not None:
            state["_native_parts"] = (self._native_parts(native),)
        return state

    def __setstate__(self, state: dict) -> None:
        state = dict(state)
        parts = state.pop("_native_parts", None)
        parent = getattr(super(), "__setstate__", None)
        if parent is not None:
            parent(state)
        else:
            self.__dict__.update(state)
        if parts is not None:
            setattr(self, self._native, self._rebuild_native(parts[0]))


def check_fitted(estimator, attribute: str) -> None:
    """``NotFittedError`` naming the estimator where ``fit`` has not run."""
    message = f"This {type(estimator).__name__} instance is not fitted yet. Call 'fit' with appropriate arguments before using this estimator."
    if HAVE_SKLEARN:
        check_is_fitted(estimator, attribute, msg=message)
    elif not hasattr(estimator, attribute):
        raise NotFittedError(message)


def check_features(estimator, X, *, reset: bool) -> np.ndarray:
    """``X`` as a C-contiguous finite float64 ``[n, d]`` array; ``reset`` (in ``fit``) records
    ``n_features_in_``, otherwise ``X`` must have that many columns."""
    if HAVE_SKLEARN:
        x = validate_data(estimator, X, reset=reset, dtype=np.float64, order="C")
        _refuse_huge(x, "X")
        return x
    x = matrix(X, n_features=None if reset else estimator.n_features_in_)
    if reset:
        estimator.n_features_in_ = x.shape[1]
    return x


def check_features_and_target(estimator, X, y, *, classifier: bool = False, min_samples: int = 1) -> tuple:
    """``X`` as in :func:`check_features` (recording ``n_features_in_``) and ``y`` as a 1-D array
    of one value per row: float64 for a regressor, the labels as given for a classifier. Fewer
    than ``min_samples`` rows are refused, saying how many there are."""
    if HAVE_SKLEARN:
        x, y = validate_data(
            estimator, X, y, dtype=np.float64, order="C", y_numeric=not classifier, ensure_min_samples=min_samples
        )
        _refuse_huge(x, "X")
        if not classifier:
            y = np.ascontiguousarray(y, dtype=np.float64)
            _refuse_huge(y, "y")
        return x, y
    if y is None:
        raise ValueError(f"{type(estimator).__name__} requires y to be passed, but the target y is None.")
    x = matrix(X)
    if x.shape[0] < min_samples:
        raise ValueError(f"Found {x.shape[0]} sample(s) while a minimum of {min_samples} is required by {type(estimator).__name__}.")
    estimator.n_features_in_ = x.shape[1]
    y = vector(y, x.shape[0]) if not classifier else np.asarray(y)
    if classifier and (y.ndim != 1 or y.shape[0] != x.shape[0]):
        raise ValueError(f"`y` must be 1-D with {x.shape[0]} labels (one per row of X); got shape {y.shape}")
    return x, y


def encode_labels(y, name: str = "y") -> tuple:
    """(the sorted distinct labels ``[k]``, each row's index into them ``[n]`` as int64): any
    labels, as scikit-learn's ``LabelEncoder`` reads them."""
    labels = np.asarray(y)
    if labels.ndim != 1:
        raise ValueError(f"`{name}` must be 1-D, one label per row; got shape {labels.shape}")
    classes, codes = np.unique(labels, return_inverse=True)
    return classes, np.ascontiguousarray(codes.reshape(-1), dtype=np.int64)


def codes_of(classes: np.ndarray, y, name: str) -> np.ndarray:
    """Each label of ``y`` as its index into the ``classes`` seen in ``fit``; an unseen label is
    refused by name."""
    labels = np.asarray(y)
    index = np.searchsorted(classes, labels)
    index = np.clip(index, 0, len(classes) - 1)
    unseen = classes[index] != labels
    if unseen.any():
        raise ValueError(
            f"`{name}` holds {labels[unseen][0]!r}, a label not seen in fit (it saw {classes.tolist()})"
        )
    return np.ascontiguousarray(index, dtype=np.int64)
