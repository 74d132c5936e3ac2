//! Metrics for hedge. Each metric is a pure function over plain slices, tested against
//! scikit-learn / SciPy / NumPy reference values or hand computations.

pub mod calibration;
pub mod correlation;
mod error;
pub mod grouped;
pub mod knn;
pub mod number_line;
pub mod quadrature;
pub mod ranking;
pub mod spread;

pub use calibration::{
    equal_count_bins, expected_calibration_error, risk_coverage, verification_decisions, ReliabilityAccumulator,
    ReliabilityBin, ReliabilityDiagram, RiskCoverage,
};
pub use correlation::kendall_tau_b;
pub use error::{EvalError, Result};
pub use grouped::MetricFrame;
pub use knn::{knn_accuracy, knn_correct, plurality_label, top_k, KnnRule};
pub use number_line::{centroid_order, ordering_score, CentroidOrder};
pub use quadrature::{gauss_hermite, gauss_legendre};
pub use ranking::{average_precision, error_detection, roc_auc, ErrorDetection};
pub use spread::{plus_minus, Mean, MeanSe, MeanStd, ONE_RUN_SPREAD};
