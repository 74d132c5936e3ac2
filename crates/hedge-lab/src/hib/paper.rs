//! The published numbers of Oh et al. (ICLR 2019 and its arXiv v1 appendices) that hedge's
//! reproductions are compared with, typed: Tables 1 and 2 (main results), Table 5 (β = 0
//! against β = 1e-4, Appendix E), Tables 6 and 7 (Appendix G: plurality KNN and its
//! uncertainty correlation by gallery and probe) and Appendix D's number-line scores.

use serde::{Deserialize, Serialize};

/// A clean and a corrupt number.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CleanCorrupt {
    pub clean: f64,
    pub corrupt: f64,
}

const fn cc(clean: f64, corrupt: f64) -> CleanCorrupt {
    CleanCorrupt { clean, corrupt }
}

/// One model's column of Tables 1 and 2 (the τ rows exist for stochastic models only).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
// Fields in alphabetical order: summary.json keeps the key order it had as untyped JSON.
pub struct PaperModel {
    pub knn_accuracy: CleanCorrupt,
    pub tau_ap: Option<CleanCorrupt>,
    pub tau_knn: Option<CleanCorrupt>,
    pub verification_ap: CleanCorrupt,
}

/// Tables 1 and 2 for one (N, D).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PaperTable1 {
    pub point: PaperModel,
    pub mog1: PaperModel,
    pub mog2: PaperModel,
}

impl PaperTable1 {
    /// The column of `key` (`point`, `mog1`, `mog2`).
    pub fn model(&self, key: &str) -> Option<&PaperModel> {
        match key {
            "point" => Some(&self.point),
            "mog1" => Some(&self.mog1),
            "mog2" => Some(&self.mog2),
            _ => None,
        }
    }
}

/// Column of (N, D) in the paper's four-block tables.
fn block(digits: usize, dim: usize) -> Option<usize> {
    match (digits, dim) {
        (2, 2) => Some(0),
        (2, 3) => Some(1),
        (3, 2) => Some(2),
        (3, 3) => Some(3),
        _ => None,
    }
}

/// Tables 1 and 2 of the ICLR 2019 paper (identical in arXiv v1) for (N, D) ∈ {2, 3}².
pub fn table1(digits: usize, dim: usize) -> Option<PaperTable1> {
    let col = block(digits, dim)?;
    // Table 1 rows: AP clean, AP corrupt, KNN clean, KNN corrupt; per block point, MoG-1, MoG-2.
    const T1: [[f64; 12]; 4] = [
        [0.987, 0.989, 0.990, 0.996, 0.996, 0.996, 0.978, 0.981, 0.976, 0.987, 0.989, 0.991],
        [0.880, 0.907, 0.912, 0.913, 0.926, 0.932, 0.886, 0.899, 0.904, 0.901, 0.922, 0.925],
        [0.871, 0.879, 0.888, 0.942, 0.953, 0.939, 0.554, 0.591, 0.540, 0.795, 0.770, 0.766],
        [0.583, 0.760, 0.757, 0.874, 0.909, 0.885, 0.274, 0.350, 0.351, 0.522, 0.555, 0.598],
    ];
    // Table 2 rows: AP correlation clean, corrupt, KNN correlation clean, corrupt; MoG-1, MoG-2.
    const T2: [[f64; 8]; 4] = [
        [0.74, 0.43, 0.68, 0.48, 0.63, 0.28, 0.51, 0.39],
        [0.81, 0.79, 0.86, 0.87, 0.82, 0.76, 0.85, 0.79],
        [0.71, 0.57, 0.72, 0.47, 0.76, 0.29, 0.74, 0.54],
        [0.47, 0.43, 0.55, 0.52, 0.49, 0.50, 0.67, 0.34],
    ];
    let model = |m: usize| {
        let t1 = |row: usize| T1[row][3 * col + m];
        let t2 = |row: usize| T2[row][2 * col + m - 1];
        PaperModel {
            verification_ap: cc(t1(0), t1(1)),
            knn_accuracy: cc(t1(2), t1(3)),
            tau_ap: (m > 0).then(|| cc(t2(0), t2(1))),
            tau_knn: (m > 0).then(|| cc(t2(2), t2(3))),
        }
    };
    Some(PaperTable1 { point: model(0), mog1: model(1), mog2: model(2) })
}

/// Table 5 (arXiv v1; Table 4 of the ICLR version): MoG-1 with β = 0 and with β = 1e-4,
/// reported for (N, D) = (2, 2) and (3, 3) only. Its β = 1e-4 column is a separate run from
/// Table 1's MoG-1 (e.g. KNN clean 0.891 here, 0.879 there).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PaperTable5 {
    pub beta0: PaperModel,
    pub beta1e4: PaperModel,
}

pub fn table5(digits: usize, dim: usize) -> Option<PaperTable5> {
    let m = |ap: [f64; 2], knn: [f64; 2], tap: [f64; 2], tknn: [f64; 2]| PaperModel {
        verification_ap: cc(ap[0], ap[1]),
        knn_accuracy: cc(knn[0], knn[1]),
        tau_ap: Some(cc(tap[0], tap[1])),
        tau_knn: Some(cc(tknn[0], tknn[1])),
    };
    match (digits, dim) {
        (2, 2) => Some(PaperTable5 {
            beta0: m([0.986, 0.900], [0.867, 0.729], [0.680, 0.864], [0.748, 0.636]),
            beta1e4: m([0.988, 0.906], [0.891, 0.781], [0.766, 0.836], [0.800, 0.609]),
        }),
        (3, 3) => Some(PaperTable5 {
            beta0: m([0.993, 0.932], [0.858, 0.685], [0.425, 0.677], [-0.080, 0.183]),
            beta1e4: m([0.992, 0.932], [0.861, 0.730], [0.630, 0.764], [0.685, 0.549]),
        }),
        _ => None,
    }
}

/// One row of Tables 6 and 7 (Appendix G of arXiv v1).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GalleryProbePaper {
    pub gallery: &'static str,
    pub probe: &'static str,
    /// Table 6: plurality KNN accuracy of point embeddings (the contrastive-loss ones).
    pub point_plurality: f64,
    /// Table 6: plurality KNN accuracy of MoG-1.
    pub mog1_plurality: f64,
    /// Table 7: −τ between η bin and KNN accuracy, MoG-1.
    pub mog1_tau_knn: f64,
}

/// Tables 6 and 7 for (N, D): rows (clean, clean), (clean, corrupt), (corrupt, clean) as
/// (gallery, probe).
pub fn tables6_7(digits: usize, dim: usize) -> Option<[GalleryProbePaper; 3]> {
    let col = block(digits, dim)?;
    const POINT: [[f64; 4]; 3] =
        [[0.882, 0.950, 0.658, 0.873], [0.435, 0.516, 0.293, 0.447], [0.762, 0.922, 0.495, 0.776]];
    // 0.318 is the paper's number, not an approximation of 1/π.
    #[allow(clippy::approx_constant)]
    const MOG1: [[f64; 4]; 3] =
        [[0.879, 0.952, 0.650, 0.873], [0.499, 0.578, 0.318, 0.499], [0.816, 0.943, 0.540, 0.812]];
    const TAU: [[f64; 4]; 3] = [[0.71, 0.61, 0.72, 0.60], [0.94, 0.89, 0.86, 0.90], [0.46, 0.52, 0.29, 0.45]];
    let names = [("clean", "clean"), ("clean", "corrupt"), ("corrupt", "clean")];
    Some(std::array::from_fn(|r| GalleryProbePaper {
        gallery: names[r].0,
        probe: names[r].1,
        point_plurality: POINT[r][col],
        mog1_plurality: MOG1[r][col],
        mog1_tau_knn: TAU[r][col],
    }))
}

/// Appendix D: 2-digit MNIST embedded on the number line (D = 1), a single Gaussian (MoG-1)
/// against point embeddings. The class centroids of the test set's embeddings are sorted and
/// the adjacent pairs that share a ones or tens digit counted (out of 99); a run is a series of
/// consecutive such pairs, its length counted in classes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PaperNumberLine {
    /// "each of the four trials".
    pub trials: usize,
    /// The most adjacent pairs there can be (100 classes − 1).
    pub out_of: usize,
    /// Lowest and highest count over the trials, HIB ("scores ranging from 76 to 80").
    pub hib_adjacent: (usize, usize),
    /// The same for point embeddings ("versus scores of 42 to 74").
    pub point_adjacent: (usize, usize),
    /// Classes in the average run, HIB (4.6) and point (3.0).
    pub hib_mean_run: f64,
    pub point_mean_run: f64,
}

/// Appendix D's numbers (the same paragraph in the ICLR 2019 paper and arXiv v1), for N = 2,
/// D = 1 only.
pub fn appendix_d(digits: usize, dim: usize) -> Option<PaperNumberLine> {
    ((digits, dim) == (2, 1)).then_some(PaperNumberLine {
        trials: 4,
        out_of: 99,
        hib_adjacent: (76, 80),
        point_adjacent: (42, 74),
        hib_mean_run: 4.6,
        point_mean_run: 3.0,
    })
}

/// The paper's Table 1 value of a watched metric's row for a model column.
pub fn quick_metric_value(model: &PaperModel, metric: hedge_embed::monitor::QuickMetric) -> f64 {
    use hedge_embed::monitor::QuickMetric;
    match metric {
        QuickMetric::ApClean => model.verification_ap.clean,
        QuickMetric::ApCorrupt => model.verification_ap.corrupt,
        QuickMetric::KnnClean => model.knn_accuracy.clean,
        QuickMetric::KnnCorrupt => model.knn_accuracy.corrupt,
    }
}

/// The Table 1 models: their key in run names and how the tables name them.
pub(crate) const MODELS: [(&str, &str); 3] = [("point", "point"), ("mog1", "MoG-1"), ("mog2", "MoG-2")];

#[cfg(test)]
mod tests {
    use super::*;

    /// Spot checks against the paper's text (Section 4.3 quotes 0.880 / 0.907 / 0.912 AP and
    /// 0.583 / 0.760 / 0.757 KNN for N = 2, D = 2; Appendix E quotes 0.685 → 0.730 KNN and τ
    /// −0.080 / 0.183 vs 0.685 / 0.549 for N = 3, D = 3).
    #[test]
    fn values_quoted_in_the_text() {
        let t = table1(2, 2).unwrap();
        assert_eq!(
            [t.point.verification_ap.corrupt, t.mog1.verification_ap.corrupt, t.mog2.verification_ap.corrupt],
            [0.880, 0.907, 0.912]
        );
        assert_eq!(
            [t.point.knn_accuracy.corrupt, t.mog1.knn_accuracy.corrupt, t.mog2.knn_accuracy.corrupt],
            [0.583, 0.760, 0.757]
        );
        assert!(t.point.tau_ap.is_none());
        let t5 = table5(3, 3).unwrap();
        assert_eq!((t5.beta0.knn_accuracy.corrupt, t5.beta1e4.knn_accuracy.corrupt), (0.685, 0.730));
        assert_eq!(t5.beta0.tau_knn.unwrap(), cc(-0.080, 0.183));
        assert_eq!(t5.beta1e4.tau_knn.unwrap(), cc(0.685, 0.549));
        assert!(table5(2, 3).is_none());
        assert_eq!(table1(3, 3).unwrap().mog2.knn_accuracy.corrupt, 0.598);
        assert!(table1(2, 1).is_none());
    }

    /// "scores ranging from 76 to 80 versus scores of 42 to 74 … The average run contains 4.6
    /// classes … and only 3.0 for point embeddings".
    #[test]
    fn appendix_d_is_the_number_line_only() {
        let d = appendix_d(2, 1).unwrap();
        assert_eq!((d.hib_adjacent, d.point_adjacent, d.out_of, d.trials), ((76, 80), (42, 74), 99, 4));
        assert_eq!((d.hib_mean_run, d.point_mean_run), (4.6, 3.0));
        assert!(appendix_d(2, 2).is_none() && appendix_d(3, 1).is_none());
    }

    #[test]
    fn appendix_g_rows() {
        let rows = tables6_7(3, 2).unwrap();
        assert_eq!((rows[0].gallery, rows[0].probe), ("clean", "clean"));
        assert_eq!(rows[1].point_plurality, 0.293);
        assert_eq!(rows[2].mog1_plurality, 0.540);
        assert_eq!(rows[2].mog1_tau_knn, 0.29);
    }
}
